"""Stage 2: FastAnchorWords with the cleanup pass (Algorithm 4 of Arora et al. 2013)."""

import jax
import numpy as np
import pytest

from conftest import random_corpus
from gensim_anchor.anchors import (DEFAULT_MIN_DF, DEFAULT_MIN_DF_FRACTION, _held_out_log_volume,
                                   choose_candidates, find_anchors, project_rows, resolve_min_df,
                                   select_candidates)
from gensim_anchor.cooccurrence import Cooccurrence, build_cooccurrence, quarter_sums, split_quarters
from gensim_anchor.rectify import rectify_lowrank

# One point-set shape for most tests: find_anchors compiles once per (N, d, K, cleanup).
N, D, K = 40, 8, 5


# ----------------------------------------------------------------------------------------------
# Brute-force reference of Algorithm 4: every distance from a fresh least-squares projection.
# ----------------------------------------------------------------------------------------------

def distances_to_span(Y, rows):
    """Distance of every row of Y from span{Y[r] : r in rows} (the origin when rows is empty)."""
    if len(rows) == 0:
        return np.linalg.norm(Y, axis=1)
    B = Y[list(rows)].T  # d x k
    coef = np.linalg.lstsq(B, Y.T, rcond=None)[0]
    return np.linalg.norm(Y.T - B @ coef, axis=0)


def reference_anchors(Y, num_topics, candidates=None, cleanup=True):
    """Greedy farthest-from-span selection, then for i = 1..K: replace v_i by the candidate
    farthest from the span of the other K-1.

    Returns (indices, distances, greedy_indices, margins); margins[t] is how far the winner of
    step t beats the runner-up (a tie would make the comparison with the package meaningless).
    """
    mask = np.ones(len(Y), bool) if candidates is None else np.asarray(candidates, bool)
    S, dist, margins = [], [], []

    def pick(rows):
        d = np.where(mask, distances_to_span(Y, rows), -np.inf)
        j = int(np.argmax(d))
        margins.append(d[j] - np.max(np.delete(d, j)))
        return j, d[j]

    for _ in range(num_topics):
        j, dj = pick(S)
        S.append(j)
        dist.append(dj)
    greedy = list(S)
    if cleanup:
        for i in range(num_topics):
            S[i], dist[i] = pick(S[:i] + S[i + 1:])
    return np.array(S), np.array(dist), np.array(greedy), np.array(margins)


def check_against_reference(Y, num_topics, candidates=None, cleanup=True):
    ref_S, ref_dist, ref_greedy, margins = reference_anchors(Y, num_topics, candidates, cleanup)
    assert margins.min() > 1e-9, "test data has a near tie; choose another seed"
    result = find_anchors(Y, num_topics, candidates=candidates, cleanup=cleanup)
    np.testing.assert_array_equal(result.greedy_indices, ref_greedy)
    np.testing.assert_array_equal(result.indices, ref_S)
    np.testing.assert_allclose(result.distances, ref_dist, rtol=1e-9)
    assert result.num_replaced == int(np.sum(ref_S != ref_greedy))
    assert result.indices.dtype == np.int64 and result.indices.shape == (num_topics,)
    assert result.distances.shape == (num_topics,)
    return result, ref_S, ref_greedy


@pytest.mark.parametrize('seed', range(4))
@pytest.mark.parametrize('cleanup', [True, False])
def test_matches_bruteforce_reference(seed, cleanup):
    rng = np.random.default_rng(seed)
    Y = rng.standard_normal((N, D)) * rng.uniform(0.5, 2.0, size=(N, 1))
    check_against_reference(Y, K, cleanup=cleanup)


@pytest.mark.parametrize('seed', range(4))
@pytest.mark.parametrize('cleanup', [True, False])
def test_matches_bruteforce_reference_with_candidates(seed, cleanup):
    rng = np.random.default_rng(100 + seed)
    Y = rng.standard_normal((N, D)) * rng.uniform(0.5, 2.0, size=(N, 1))
    candidates = rng.random(N) < 0.5
    result, _, _ = check_against_reference(Y, K, candidates=candidates, cleanup=cleanup)
    assert candidates[result.indices].all()
    assert candidates[result.greedy_indices].all()
    # Excluding rows changes the answer: the unrestricted run picks a non-candidate here.
    unrestricted = find_anchors(Y, K, cleanup=cleanup)
    assert not candidates[unrestricted.indices].all()


@pytest.mark.parametrize('seed', range(3))
@pytest.mark.parametrize('cleanup', [True, False])
def test_matches_bruteforce_reference_when_rows_share_a_large_component(seed, cleanup):
    # As rows of Q-bar do: every row near one large common row, so that after the first anchor
    # the squared distances left are about 1e-7 of the squared norms. The search carries them
    # by subtraction from the norms; the rounding of that must not change a choice or a distance.
    rng = np.random.default_rng(200 + seed)
    Y = 100.0 * rng.standard_normal(D) + 0.01 * rng.standard_normal((N, D)) * rng.uniform(0.5, 2.0, size=(N, 1))
    result, _, _ = check_against_reference(Y, K, cleanup=cleanup)
    assert np.max(result.distances[1:]) ** 2 < 1e-5 * np.max(np.sum(Y * Y, axis=1))  # the premise


def test_candidates_mask_may_exclude_the_farthest_point():
    rng = np.random.default_rng(7)
    Y = rng.standard_normal((N, D))
    Y[11] *= 50.0  # by far the farthest from the origin
    assert find_anchors(Y, K, cleanup=False).greedy_indices[0] == 11
    mask = np.ones(N, bool)
    mask[11] = False
    result = find_anchors(Y, K, candidates=mask)
    assert 11 not in result.indices and 11 not in result.greedy_indices
    check_against_reference(Y, K, candidates=mask)


@pytest.mark.parametrize('seed', range(3))
@pytest.mark.parametrize('cleanup', [True, False])
def test_vertices_of_a_simplex_are_found(seed, cleanup):
    rng = np.random.default_rng(200 + seed)
    vertices = rng.standard_normal((K, D)) + 2.0  # linearly independent, away from the origin
    inside = rng.dirichlet(np.ones(K), size=N - K) @ vertices
    Y = np.vstack([vertices, inside])
    order = rng.permutation(N)
    Y = Y[order]
    vertex_rows = np.flatnonzero(order < K)
    result = find_anchors(Y, K, cleanup=cleanup)
    assert sorted(result.indices.tolist()) == sorted(vertex_rows.tolist())
    assert sorted(result.greedy_indices.tolist()) == sorted(vertex_rows.tolist())
    if cleanup:
        assert result.num_replaced == 0
    # Each vertex's distance from the span of the other K-1 (cleanup) or of those before it.
    for i, v in enumerate(result.indices):
        others = (np.delete(result.indices, i) if cleanup else result.indices[:i])
        expected = distances_to_span(Y[[v]], []) if len(others) == 0 else \
            np.linalg.norm(Y[v] - Y[others].T @ np.linalg.lstsq(Y[others].T, Y[v], rcond=None)[0])
        np.testing.assert_allclose(result.distances[i], expected, rtol=1e-9)


def test_cleanup_replaces_a_greedy_anchor():
    """Search seeds until Algorithm 4's cleanup pass changes the greedy choice, then check the
    cleaned anchors against the reference and that num_replaced counts the changes."""
    for seed in range(300):
        rng = np.random.default_rng(1000 + seed)
        Y = rng.standard_normal((N, D)) * rng.uniform(0.5, 2.0, size=(N, 1))
        ref_S, _, ref_greedy, margins = reference_anchors(Y, K)
        if np.any(ref_S != ref_greedy) and margins.min() > 1e-9:
            break
    else:
        pytest.fail("no seed in 300 where the cleanup pass changes an anchor")
    result, _, _ = check_against_reference(Y, K)
    assert result.num_replaced >= 1
    assert not np.array_equal(result.indices, result.greedy_indices)
    # The greedy phase alone returns the greedy anchors.
    np.testing.assert_array_equal(find_anchors(Y, K, cleanup=False).indices, ref_greedy)
    # Cleanup never moves an anchor closer to the span of the others (it picks the farthest).
    for i in range(K):
        others = np.delete(ref_S, i)
        d = distances_to_span(Y, others)
        assert d[ref_S[i]] >= d[ref_greedy[i]] - 1e-12


def test_result_does_not_mutate_input():
    rng = np.random.default_rng(9)
    Y = rng.standard_normal((N, D))
    mask = rng.random(N) < 0.7
    Y0, mask0 = Y.copy(), mask.copy()
    find_anchors(Y, K, candidates=mask)
    np.testing.assert_array_equal(Y, Y0)
    np.testing.assert_array_equal(mask, mask0)


def test_rank_deficient_points_raise():
    rng = np.random.default_rng(10)
    Y = rng.standard_normal((N, 2)) @ rng.standard_normal((2, D))  # rank 2
    with pytest.raises(ValueError, match=r"the anchor candidates span fewer than 3 linearly "
                                         r"independent directions, so 3 topics cannot be told apart"):
        find_anchors(Y, 3)
    # Rank 2 is enough for 2 topics.
    assert len(set(find_anchors(Y, 2).indices.tolist())) == 2


def test_rank_deficient_candidates_raise():
    rng = np.random.default_rng(11)
    Y = rng.standard_normal((N, D))  # full rank overall
    mask = np.zeros(N, bool)
    mask[:10] = True
    Y[:10] = rng.standard_normal((10, 2)) @ rng.standard_normal((2, D))  # candidates: rank 2
    with pytest.raises(ValueError, match=r"span fewer than 3 linearly independent directions"):
        find_anchors(Y, 3, candidates=mask)
    with pytest.raises(ValueError, match=r"span fewer than 3"):
        find_anchors(Y, 3, candidates=mask, cleanup=False)


def test_too_few_candidates_raise():
    rng = np.random.default_rng(12)
    Y = rng.standard_normal((N, D))
    mask = np.zeros(N, bool)
    mask[[3, 17]] = True
    with pytest.raises(ValueError, match=r"^2 anchor candidates for 3 topics$"):
        find_anchors(Y, 3, candidates=mask)
    with pytest.raises(ValueError, match=r"^4 anchor candidates for 5 topics$"):
        find_anchors(Y[:4], 5)


def test_bad_points_and_masks_are_refused_by_name():
    rng = np.random.default_rng(12)
    Y = rng.standard_normal((N, D))
    with pytest.raises(ValueError, match=r"Y must be a 2-D array of points .* got shape \(40,\)"):
        find_anchors(Y[:, 0], 3)
    bad = Y.copy()
    bad[7, 2] = np.nan
    with pytest.raises(ValueError, match=r"Y must be finite \(row 7 is not\)"):
        find_anchors(bad, 3)
    with pytest.raises(ValueError, match=r"num_topics must be >= 1, got 0"):
        find_anchors(Y, 0)
    # Row ids are not a mask: cast to bool, [0, 5, 9] admitted rows 1 and 2 (then failed to
    # broadcast, or chose among the wrong rows).
    with pytest.raises(ValueError, match=r"candidates must be a boolean mask over the 40 rows of Y "
                                         r"\(shape \(40,\)\), got int64 of shape \(3,\); for row ids"):
        find_anchors(Y, 3, candidates=np.array([0, 5, 9]))
    mask = np.zeros(N, int)
    mask[[0, 5, 9, 11]] = 1  # 0/1 of the right length is a mask
    assert set(find_anchors(Y, 3, candidates=mask).indices.tolist()) <= {0, 5, 9, 11}
    with pytest.raises(ValueError, match=r"candidates must be a boolean mask"):
        find_anchors(Y, 3, candidates=mask * 2)
    with pytest.raises(ValueError, match=r"seeds must be rows of Y in 0..39, got 40"):
        find_anchors(Y, 3, seeds=[40])
    with pytest.raises(TypeError, match=r"seeds must be integer rows of Y, got dtype float64"):
        find_anchors(Y, 3, seeds=[1.5])


def test_project_rows_refuses_rows_it_cannot_project(small_cooc):
    cooc = small_cooc['implicit']
    p_w = cooc.row_sums()
    with pytest.raises(ValueError, match=r"rows must be word ids in 0..299, got 300"):
        project_rows(cooc, p_w, np.array([0, 300]), 16)
    with pytest.raises(ValueError, match=r"rows must be word ids in 0..299, got -1"):
        project_rows(cooc, p_w, np.array([-1]), 16)  # numpy would take the last word
    with pytest.raises(ValueError, match=r"p_w must have shape \(300,\)"):
        project_rows(cooc, p_w[:10], np.array([0, 1]), 16)
    zero = p_w.copy()
    zero[4] = 0.0  # a row of Q-bar is a row of Q over p(w): 0/0
    with pytest.raises(ValueError, match=r"word 4 has p_w = 0"):
        project_rows(cooc, zero, np.array([3, 4]), 16)


# ----------------------------------------------------------------------------------------------
# resolve_min_df
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize('num_docs', [0, 1, 10, 19, 20, 21, 999, 1000, 1999, 2000, 2001, 10 ** 6])
def test_resolve_min_df_default(num_docs):
    # min(100, max(1, ceil(0.05 * num_docs))), computed independently with integers.
    expected = min(100, max(1, -(-5 * num_docs // 100)))
    assert resolve_min_df(None, num_docs) == expected
    assert (DEFAULT_MIN_DF, DEFAULT_MIN_DF_FRACTION) == (100, 0.05)


@pytest.mark.parametrize('value, num_docs, expected', [
    (0, 50, 0), (1, 50, 1), (7, 50, 7), (500, 50, 500), (np.int64(3), 50, 3),
    (0.5, 10, 5), (0.25, 10, 3), (1.0, 10, 10), (0.01, 250, 3), (1e-9, 10, 1),
    (np.float32(0.5), 7, 4),
])
def test_resolve_min_df_counts_and_fractions(value, num_docs, expected):
    result = resolve_min_df(value, num_docs)
    assert result == expected
    assert type(result) is int


@pytest.mark.parametrize('value, error, message', [
    (-1, ValueError, r"anchor_min_df must be >= 0 documents, got -1"),
    (0.0, ValueError, r"must lie in \(0, 1\], got 0\.0"),
    (1.5, ValueError, r"must lie in \(0, 1\], got 1\.5"),
    (-0.2, ValueError, r"must lie in \(0, 1\]"),
    (float('nan'), ValueError, r"must lie in \(0, 1\]"),
    (True, TypeError, r"anchor_min_df must be an int \(documents\) or a float in \(0, 1\]"),
    ('5', TypeError, r"anchor_min_df must be an int .* got '5'"),
    ([5], TypeError, r"anchor_min_df must be an int"),
])
def test_resolve_min_df_rejects_bad_values(value, error, message):
    with pytest.raises(error, match=message):
        resolve_min_df(value, 100)


# ----------------------------------------------------------------------------------------------
# project_rows
# ----------------------------------------------------------------------------------------------

@pytest.fixture(scope='module')
def small_cooc():
    rng = np.random.default_rng(13)
    corpus = random_corpus(rng, 400, 300, max_len=40, max_count=3)
    return {mode: build_cooccurrence(corpus, num_terms=300, mode=mode) for mode in ('implicit', 'dense')}


@pytest.mark.parametrize('mode', ['implicit', 'dense'])
@pytest.mark.parametrize('projection_dim', [None, 0, 300, 1000])
def test_project_rows_exact_without_projection(small_cooc, mode, projection_dim):
    cooc = small_cooc[mode]
    Q = cooc.to_dense()
    p_w = Q.sum(axis=1)
    rows = np.flatnonzero(p_w > 0)[::3]
    Q_bar = Q[rows] / p_w[rows, None]
    Y = project_rows(cooc, p_w, rows, projection_dim=projection_dim)
    assert Y.shape == (len(rows), cooc.num_terms) and Y.dtype == np.float64
    np.testing.assert_allclose(Y, Q_bar, rtol=1e-12, atol=1e-17)
    np.testing.assert_allclose(Y.sum(axis=1), 1.0, rtol=1e-12)


def test_project_rows_is_a_seeded_linear_map(small_cooc):
    cooc = small_cooc['implicit']
    p_w = cooc.row_sums()
    rows = np.flatnonzero(p_w > 0)
    d = 64
    Y = project_rows(cooc, p_w, rows, projection_dim=d, seed=3)
    assert Y.shape == (len(rows), d) and Y.dtype == np.float64
    np.testing.assert_array_equal(project_rows(cooc, p_w, rows, projection_dim=d, seed=3), Y)
    assert not np.allclose(project_rows(cooc, p_w, rows, projection_dim=d, seed=4), Y)
    # Projecting a subset gives the same rows (one projection matrix per seed).
    subset = rows[[5, 0, 17, 3]]
    np.testing.assert_allclose(project_rows(cooc, p_w, subset, projection_dim=d, seed=3),
                               Y[[5, 0, 17, 3]], rtol=1e-5, atol=1e-9)
    # Both storage modes of Q give the same projection (float32 products).
    dense = small_cooc['dense']
    np.testing.assert_allclose(project_rows(dense, dense.row_sums(), rows, projection_dim=d, seed=3),
                               Y, rtol=1e-4, atol=1e-6)


def test_project_rows_of_a_low_rank_q_are_those_of_its_dense_q(small_cooc):
    """A rectified (rank-K) Q is projected like any other (the same P for the same seed), and
    without a projection its rows come in exact K coordinates, with the distances of Q-bar."""
    cooc, _ = rectify_lowrank(small_cooc['implicit'], 5)
    dense = Cooccurrence(cooc.num_terms, 1, 0, 0, cooc.doc_freq, cooc.term_counts,
                         np.zeros(cooc.num_terms), Q_sum=cooc.to_dense())
    p_w = cooc.row_sums()
    rows = np.flatnonzero(p_w > 0)[::3]
    projected = project_rows(cooc, p_w, rows, projection_dim=64, seed=3)
    assert projected.shape == (len(rows), 64)
    np.testing.assert_allclose(projected, project_rows(dense, p_w, rows, projection_dim=64, seed=3),
                               rtol=1e-4, atol=1e-6 * np.abs(projected).max())
    exact = project_rows(cooc, p_w, rows, projection_dim=0)
    assert exact.shape == (len(rows), 5)
    bar = cooc.rows(rows) / p_w[rows, None]
    np.testing.assert_allclose(np.linalg.norm(exact[:, None] - exact[None], axis=2),
                               np.linalg.norm(bar[:, None] - bar[None], axis=2), rtol=1e-9, atol=1e-15)


def test_project_rows_roughly_preserves_distances(small_cooc):
    """Johnson-Lindenstrauss: with P scaled by 1/sqrt(d), pairwise distances between rows of
    Q-bar are preserved up to a factor close to 1 (loose bounds; d = 200, 30 rows)."""
    cooc = small_cooc['implicit']
    p_w = cooc.row_sums()
    rows = np.flatnonzero(p_w > 0)[:30]
    exact = project_rows(cooc, p_w, rows, projection_dim=None)
    projected = project_rows(cooc, p_w, rows, projection_dim=200, seed=0)
    iu = np.triu_indices(len(rows), 1)
    d_exact = np.linalg.norm(exact[:, None] - exact[None], axis=-1)[iu]
    d_proj = np.linalg.norm(projected[:, None] - projected[None], axis=-1)[iu]
    ratio = d_proj / d_exact
    assert 0.6 < ratio.min() and ratio.max() < 1.4, (ratio.min(), ratio.max())
    assert abs(np.median(ratio) - 1.0) < 0.1
    norms = np.linalg.norm(projected, axis=1) / np.linalg.norm(exact, axis=1)
    assert 0.6 < norms.min() and norms.max() < 1.4


def test_projection_keeps_anchors_of_a_clear_simplex():
    """Rows of an exact Q-bar: the projected rows give the same anchors as the exact ones."""
    from conftest import dirichlet_second_moment, exact_cooccurrence, separable_topics
    rng = np.random.default_rng(14)
    V, k = 300, 4
    A, anchors = separable_topics(rng, V, k, anchor_mass=0.2, beta=0.3)
    cooc = exact_cooccurrence(A @ dirichlet_second_moment(np.full(k, 0.1)) @ A.T)
    p_w = cooc.row_sums()
    rows = np.arange(V)
    exact = find_anchors(project_rows(cooc, p_w, rows, None), k)
    projected = find_anchors(project_rows(cooc, p_w, rows, 100, seed=1), k)
    assert sorted(exact.indices.tolist()) == sorted(anchors.ravel().tolist())
    assert sorted(projected.indices.tolist()) == sorted(anchors.ravel().tolist())


# ----------------------------------------------------------------------------------------------
# The adaptive candidate rule (choose_candidates): held-out anchor volume over two halves.
# ----------------------------------------------------------------------------------------------

def _documents_of_lengths(rng, lengths, num_terms):
    return [[(int(w), float(c)) for w, c in zip(*np.unique(rng.integers(num_terms, size=n), return_counts=True))]
            for n in lengths]


@pytest.mark.parametrize('offset', [0, 3])
def test_split_quarters_are_the_statistics_of_their_documents(offset):
    rng = np.random.default_rng(3)
    # Documents of 0 to 3,000 tokens: the quarters are of the documents with two or more tokens
    # (the columns of H~), and long ones test the recovery of n_d from H~ alone.
    lengths = [0, 1, 2, 3, 3000, 5, 1, 40, 2, 700, 12, 9, 2500, 4, 2, 1, 60, 7, 3]
    docs = _documents_of_lengths(rng, lengths, 50)
    cooc = build_cooccurrence(docs, num_terms=50)
    kept = [d for d, n in zip(docs, lengths) if n >= 2]
    quarters = split_quarters(cooc, offset)
    for quarter, q in zip(quarters, (0, 2, 1, 3)):
        direct = build_cooccurrence([d for i, d in enumerate(kept) if (offset + i) % 4 == q], num_terms=50)
        assert quarter.num_docs == direct.num_docs
        np.testing.assert_allclose(quarter.h_hat, direct.h_hat, rtol=1e-12)
        np.testing.assert_allclose(quarter.to_dense(), direct.to_dense(), rtol=1e-10, atol=1e-15)
    # quarter_sums: sums over documents, which the quarters of two parts add up
    rows = np.array([3, 17, 42])
    docs4, sums, Y = quarter_sums(cooc, rows, 20, seed=1, offset=offset)
    np.testing.assert_array_equal(docs4, [q.num_docs for q in quarters])
    np.testing.assert_allclose(sums.sum(axis=0), cooc.row_sums(normalise=False), rtol=1e-10)
    np.testing.assert_allclose(Y.sum(axis=0) / cooc.num_docs, project_rows(cooc, cooc.row_sums(), rows, 20, seed=1)
                               * cooc.row_sums()[rows, None], rtol=1e-4, atol=1e-7)


def test_split_quarters_needs_the_documents_side():
    docs = random_corpus(np.random.default_rng(4), 60, 30, max_len=10)
    assert split_quarters(build_cooccurrence(docs, num_terms=30, mode='dense')) is None
    assert quarter_sums(build_cooccurrence(docs, num_terms=30, mode='dense'), [0, 1]) is None


def test_held_out_log_volume_matches_gram_schmidt():
    rng = np.random.default_rng(5)
    Y = rng.random((30, 12))
    noise = 0.002 * rng.random(30)
    anchors = np.array([7, 2, 19, 11, 25])
    P = Y[anchors]
    total, basis = 0.0, []
    for k in range(1, len(anchors)):  # residuals of P[k] - P[0] from the span of the earlier ones
        r = P[k] - P[0]
        for b in basis:
            r = r - (r @ b) * b
        basis.append(r / np.linalg.norm(r))
        # isotropic noise in 12 dimensions: the k - 1 earlier directions take their share of it
        debiased = r @ r - (noise[anchors[k]] + noise[anchors[0]]) * (12 - (k - 1)) / 12
        assert debiased > 0  # no floor in play
        total += 0.5 * np.log(debiased)
    assert _held_out_log_volume(Y, noise, anchors) == pytest.approx(total, rel=1e-10)
    noise[anchors[3]] = 10.0  # a residual all noise: floored, far below
    assert _held_out_log_volume(Y, noise, anchors) < total - 5


@pytest.fixture(scope='module')
def sparse_topics():
    """Semi-synthetic: 4,000 documents of 50 tokens from 10 sparse random topics over 1,000 words,
    where the fixed thresholds give L1 errors from 0.14 to 0.29."""
    from gensim_anchor.synthetic import random_topics, semi_synthetic_corpus
    synth = semi_synthetic_corpus(random_topics(1000, 10, beta=0.1, random_state=0), 4000, 50, random_state=1)
    return synth, build_cooccurrence(synth.corpus, num_terms=1000)


def test_adaptive_rule_recovers_known_topics_as_well_as_the_best_fixed_threshold(sparse_topics):
    from gensim_anchor.evaluation import topic_recovery_l1
    from gensim_anchor.recovery import recover
    synth, cooc = sparse_topics
    K, levels = 10, (10, 0.01, 0.03, 0.1)
    p_w = cooc.row_sums()

    def l1(candidates, Y):
        anchors = candidates[find_anchors(Y, K).indices]
        A = recover(cooc, [[int(a)] for a in anchors], 'L2', p_w=p_w).A
        return topic_recovery_l1(synth.A, A / A.sum(axis=0)).mean

    fixed = {}
    for level in levels:
        candidates, min_df = select_candidates(cooc.doc_freq, p_w, level, cooc.num_docs, K)
        fixed[min_df] = l1(candidates, project_rows(cooc, p_w, candidates, 100))
    assert fixed[10] > 1.5 * min(fixed.values())  # the premise: the lowest threshold is far off
    choice = choose_candidates(cooc, p_w, K, 100, levels=levels)
    assert l1(choice.candidates, project_rows(cooc, p_w, choice.candidates, 100)) <= 1.05 * min(fixed.values())
    scanned = [t for t, _, _ in choice.levels]
    # from the highest threshold down to the fixed default (100 documents), never below it
    assert scanned == [400, 120, 100] and choice.min_df in scanned
    assert list(choice.candidates) == list(np.flatnonzero(cooc.doc_freq >= choice.min_df))
    assert choose_candidates(cooc, p_w, K, 100, levels=(10, 0.01)) is None  # only the default left


def test_adaptive_rule_gives_way_to_the_fixed_rule():
    docs = random_corpus(np.random.default_rng(6), 200, 40, max_len=10)
    dense = build_cooccurrence(docs, num_terms=40, mode='dense')
    assert choose_candidates(dense, dense.row_sums(), 3) is None
    implicit = build_cooccurrence(docs, num_terms=40)
    # 39 topics: no threshold has as many candidates seen in both halves.
    assert choose_candidates(implicit, implicit.row_sums(), 39, levels=(100, 0.5)) is None


def test_default_model_uses_the_adaptive_rule(sparse_topics, caplog):
    import logging
    from gensim_anchor import AnchorModel
    synth, cooc = sparse_topics
    # alpha='symmetric': no alpha search, which comes after the anchors this test is about.
    options = dict(num_topics=10, id2word={i: str(i) for i in range(1000)}, random_state=0,
                   alpha='symmetric')
    with caplog.at_level(logging.INFO, logger='gensim_anchor.pipeline'):
        model = AnchorModel(synth.corpus, q_mode='implicit', **options)
    line = [r.getMessage() for r in caplog.records if 'held-out anchor volume' in r.getMessage()]
    assert len(line) == 1
    min_df = int(line[0].split('>= ')[1].split()[0])
    assert min_df >= 100 and (cooc.doc_freq[model.anchors] >= min_df).all()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger='gensim_anchor.pipeline'):
        dense = AnchorModel(synth.corpus, q_mode='dense', **options)  # no documents' side:
    assert 'held-out anchor volume' not in caplog.text                # the fixed rule
    fixed = AnchorModel(synth.corpus, q_mode='dense', anchor_min_df=100, **options)
    np.testing.assert_array_equal(dense.anchors, fixed.anchors)


def test_gibbs_refined_model_starts_from_the_fixed_rule(sparse_topics, caplog):
    """refine='gibbs' starts from the fixed threshold's anchors (a better start for the sampler,
    README "Anchor candidates"), where the same model unrefined chooses another threshold."""
    import logging
    from gensim_anchor import AnchorModel
    synth, _ = sparse_topics
    options = dict(num_topics=10, id2word={i: str(i) for i in range(1000)}, random_state=0,
                   q_mode='implicit', alpha='symmetric')
    with caplog.at_level(logging.INFO, logger='gensim_anchor.pipeline'):
        refined = AnchorModel(synth.corpus, refine='gibbs', refine_options=dict(num_sweeps=4, burn_in=2),
                              **options)
    assert 'held-out anchor volume' not in caplog.text
    fixed = AnchorModel(synth.corpus, anchor_min_df=100, **options)
    np.testing.assert_array_equal(refined.anchors, fixed.anchors)
    adaptive = AnchorModel(synth.corpus, **options)
    assert sorted(adaptive.anchors) != sorted(fixed.anchors)  # the premise: the rule chose otherwise


def test_similar_row_counts_share_one_program_and_padding_changes_nothing(monkeypatch):
    """find_anchors pads Y with masked zero rows to a power of two, so 70, 100 and 101 rows run
    one compiled search; the anchors and greedy anchors are those of the unpadded rows (the
    program called directly on them), seeded or not, and the distances the same to rounding (the
    products over more rows round differently: 1 ulp here)."""
    import gensim_anchor.anchors as anchors
    from conftest import record_calls
    rng = np.random.default_rng(0)
    Y = rng.dirichlet(np.full(6, 0.5), size=101) @ rng.random((6, 40))
    direct = anchors._fast_anchor_words
    shapes = record_calls(monkeypatch, anchors, '_fast_anchor_words', lambda Z, *_, **__: Z.shape)
    for rows, seeds in ((70, None), (100, None), (101, None), (101, [7])):
        got = find_anchors(Y[:rows], 6, seeds=seeds)
        padded = np.zeros(6, dtype=np.int32)
        padded[:len(seeds or [])] = seeds or []
        with jax.enable_x64(True):
            S, dist, S0, ok = direct(Y[:rows], np.ones(rows, dtype=bool), padded, np.int32(len(seeds or [])),
                                     num_topics=6, cleanup=True)
        assert bool(ok)
        np.testing.assert_array_equal(got.indices, np.asarray(S))
        np.testing.assert_array_equal(got.greedy_indices, np.asarray(S0))
        np.testing.assert_allclose(got.distances, np.asarray(dist), rtol=1e-13, atol=0)
    assert len(set(shapes)) == 1 and shapes[0][0] > 101


def test_small_inputs_share_one_program_per_k_and_rounding_does_not_break_ties(monkeypatch):
    """A Y smaller than 64 x 64 is padded with zeros (the rows masked) to 64 x 64: one compiled
    search per K for every small input, with the anchors of the unpadded program. Squared
    distances within 1e-12 of the largest squared row norm tie, and a tie goes to the lowest
    index whichever of the tied rows rounding made larger (a permutation of the documents
    changes that rounding: test_properties' document-order property)."""
    import gensim_anchor.anchors as anchors
    from conftest import record_calls
    rng = np.random.default_rng(1)
    direct = anchors._fast_anchor_words
    shapes = record_calls(monkeypatch, anchors, '_fast_anchor_words', lambda Z, *_, **__: Z.shape)
    for rows, dim in ((12, 12), (40, 8), (30, 50)):
        Y = rng.dirichlet(np.full(4, 0.5), size=rows) @ rng.random((4, dim))
        with jax.enable_x64(True):
            S = direct(Y, np.ones(rows, dtype=bool), np.zeros(4, dtype=np.int32), np.int32(0),
                       num_topics=4, cleanup=True)[0]
        np.testing.assert_array_equal(find_anchors(Y, 4).indices, np.asarray(S))
    assert set(shapes) == {(64, 64)}
    # Rows 1 and 2 are one point in exact arithmetic; rounding made row 2 the farther (by 4 ulps).
    Y = np.array([[1.0, 0, 0], [0, 0, 2 * (1 - 1e-15)], [0, 0, 2], [0, 1, 0]])
    assert np.sum(Y[2] ** 2) > np.sum(Y[1] ** 2)
    result = find_anchors(Y, 2)
    assert result.indices.tolist() == result.greedy_indices.tolist() == [1, 0]
