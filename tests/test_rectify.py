"""Rectification of Q: by alternating projection (``rectify='ap'``, Lee, Bindel & Mimno 2015) and
compressed, epsilon-nonnegative (``rectify=True``/``'enn'``, Lee et al. 2021), and the diagonal
recovery of R: the properties of the rectified matrix, fixed points, and the effect on recovery."""
import logging

import numpy as np
import pytest

from conftest import dirichlet_second_moment, exact_cooccurrence, lda_corpus, matched_l1, separable_topics
from gensim_anchor import AnchorModel, rectify as rectify_module
from gensim_anchor.cooccurrence import Cooccurrence, build_cooccurrence
from gensim_anchor.rectify import (compress, rectify, rectify_cooccurrence,
                                    rectify_enn, rectify_lowrank)
from gensim_anchor.recovery import recover


@pytest.fixture(scope='module')
def noisy():
    """Short LDA documents (10 tokens) from a separable model: an indefinite, noisy Q."""
    rng = np.random.default_rng(0)
    V, K = 150, 5
    A, anchors = separable_topics(rng, V, K, anchor_mass=0.1, beta=0.3)
    docs = lda_corpus(rng, A, 0.3, 2000, 10)
    return dict(A=A, anchors=anchors, docs=docs, K=K, V=V, id2word={i: 'w%d' % i for i in range(V)})


@pytest.fixture(scope='module')
def population():
    """An exact population Q = A E[WW^T] A^T (rank K, PSD, nonnegative, sums to 1)."""
    rng = np.random.default_rng(1)
    V, K = 60, 4
    A, anchors = separable_topics(rng, V, K, anchor_mass=0.1)
    R = dirichlet_second_moment(np.full(K, 0.5))
    return dict(A=A, anchors=anchors[:, 0], R=R, Q=A @ R @ A.T, K=K)


def _exact_ap(Q, K, iterations):
    """The AP with exact eigh projections, as the authors' rectifyC_AP.m."""
    C = Q.copy()
    for _ in range(iterations):
        w, X = np.linalg.eigh(C)
        P = (X[:, -K:] * np.maximum(w[-K:], 0.0)) @ X[:, -K:].T
        C = np.maximum(P + (1.0 - P.sum()) / C.size, 0.0)
    return C / C.sum()


def test_rectified_matrix_is_joint_stochastic_psd_of_rank_k(noisy):
    Q = build_cooccurrence(noisy['docs'], noisy['V']).to_dense()
    K = noisy['K']
    assert np.linalg.eigvalsh(Q)[0] < -1e-4  # the empirical Q is indefinite
    result = rectify(Q, K, tol=1e-6, max_iter=200)
    C = result.Q
    assert result.converged and result.n_iter < 200
    np.testing.assert_array_equal(C, C.T)
    assert C.min() >= 0.0
    assert abs(C.sum() - 1.0) < 1e-12
    w = np.linalg.eigvalsh(C)
    assert np.abs(w[:-K]).max() < 1e-4 * w[-1]  # rank K up to the AP's convergence
    assert w[-K] > 100 * np.abs(w[:-K]).max()
    assert result.residual < 1e-3 and 0 < result.moved < 1


def test_subspace_iteration_follows_the_exact_alternating_projection(noisy):
    Q = build_cooccurrence(noisy['docs'], noisy['V']).to_dense()
    K = noisy['K']  # block K + 10 = 15 of 150 words: the subspace path
    result = rectify(Q, K, tol=0.0, max_iter=8)
    assert result.n_iter == 8 and not result.converged
    reference = _exact_ap(Q, K, 8)
    assert np.linalg.norm(result.Q - reference) < 2e-7 * np.linalg.norm(reference)  # measured 2.6e-8


def test_population_q_is_a_fixed_point(population):
    result = rectify(population['Q'], population['K'])
    assert result.n_iter == 1 and result.converged
    np.testing.assert_allclose(result.Q, population['Q'], rtol=0, atol=1e-10 * population['Q'].max())


def test_diagonal_r_is_the_population_r_on_exact_data(population):
    cooc, _ = rectify_cooccurrence(exact_cooccurrence(population['Q']), population['K'])
    rec = recover(cooc, population['anchors'], 'L2', eps=1e-12, r_method='diagonal')
    np.testing.assert_allclose(rec.A, population['A'], atol=1e-6)
    np.testing.assert_allclose(rec.R, population['R'], rtol=1e-6, atol=1e-9)
    assert rec.R.min() >= 0


def test_rectification_gives_nonnegative_r_and_better_topics_on_short_documents(noisy):
    kw = dict(num_topics=noisy['K'], id2word=noisy['id2word'], random_state=0, alpha='symmetric',
              anchor_min_df=10)
    plain = AnchorModel(noisy['docs'], **kw)
    rectified = AnchorModel(noisy['docs'], rectify='ap', **kw)
    assert plain.R.min() < -0.05  # the pseudo-inverse R of the noisy Q is not a distribution
    assert rectified.R.min() >= 0.0
    error_plain = matched_l1(noisy['A'], plain.get_topics().T)[0].mean()
    error_rectified = matched_l1(noisy['A'], rectified.get_topics().T)[0].mean()
    # Measured: 0.65 -> 0.28 here (0.59-0.81 -> 0.23-0.34 over 4 seeds; V=300, K=8: 1.05 -> 0.5).
    assert error_rectified < 0.7 * error_plain
    assert rectified.timings['rectify'] > 0


def test_rectify_gives_the_same_topics_in_implicit_and_dense_mode(noisy):
    kw = dict(num_topics=noisy['K'], id2word=noisy['id2word'], random_state=0, alpha='symmetric',
              anchor_min_df=10, rectify='ap')
    implicit = AnchorModel(noisy['docs'], q_mode='implicit', **kw)
    dense = AnchorModel(noisy['docs'], q_mode='dense', **kw)
    assert implicit._cooccurrence.mode == 'implicit' and dense._cooccurrence.mode == 'dense'
    np.testing.assert_array_equal(implicit.anchors, dense.anchors)
    np.testing.assert_allclose(implicit.get_topics(), dense.get_topics(), atol=1e-6)
    np.testing.assert_allclose(implicit.R, dense.R, rtol=1e-6)


def test_model_keeps_the_unrectified_statistics_so_updates_add_up(noisy):
    kw = dict(num_topics=noisy['K'], id2word=noisy['id2word'], random_state=0, alpha='symmetric',
              anchor_min_df=10, rectify='ap', q_mode='dense')
    whole = AnchorModel(noisy['docs'], **kw)
    parts = AnchorModel(noisy['docs'][:1000], **kw)
    parts.update(noisy['docs'][1000:])
    assert whole._cooccurrence.h_hat.sum() > 0  # the raw statistics, not the rectified Q
    np.testing.assert_array_equal(parts.anchors, whole.anchors)
    np.testing.assert_allclose(parts.get_topics(), whole.get_topics(), atol=1e-6)


def test_words_without_pairs_stay_out_of_the_rectified_q():
    rng = np.random.default_rng(3)
    docs = [[(int(i), 1) for i in rng.choice(30, size=6, replace=False)] for _ in range(200)]
    docs.append([(30, 1)])  # word 30 only in a one-token document: p(w) = 0
    cooc = build_cooccurrence(docs, 31)
    rectified, result = rectify_cooccurrence(cooc, 3)
    Q = rectified.to_dense()
    assert result.Q.shape == (30, 30)
    assert np.all(Q[30] == 0) and np.all(Q[:, 30] == 0)
    assert abs(Q.sum() - 1.0) < 1e-12 and Q.min() >= 0
    assert np.all(rectified.h_hat == 0) and rectified.num_docs == cooc.num_docs


def test_oversize_vocabulary_names_the_size_memory_and_remedy(noisy, monkeypatch):
    monkeypatch.setattr(rectify_module, 'MAX_BYTES', 2 ** 20)  # 1 MiB: 147 words
    message = r"150 words .*about 1.03 MiB .*limit of 1 MiB.*at most 147 words.*filter_extremes"
    with pytest.raises(ValueError, match=message):
        AnchorModel(noisy['docs'], num_topics=noisy['K'], id2word=noisy['id2word'], rectify='ap',
                    q_mode='implicit')


def test_iteration_cap_is_reported(noisy, caplog):
    Q = build_cooccurrence(noisy['docs'], noisy['V']).to_dense()
    result = rectify(Q, noisy['K'], max_iter=2, tol=1e-12)
    assert result.n_iter == 2 and not result.converged
    # The stage returns its counts; the model logs them once, with a WARNING at the cap.
    with caplog.at_level(logging.INFO, logger='gensim_anchor'):
        AnchorModel(noisy['docs'], num_topics=noisy['K'], rectify='ap', rectify_max_iter=2,
                    random_state=0, alpha='symmetric')
    messages = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert any(level == logging.WARNING and 'rectify_max_iter=2' in text for level, text in messages)
    assert any(level == logging.INFO and '2 iterations' in text for level, text in messages)


@pytest.mark.parametrize('value, error', [(0, ValueError), (1.5, TypeError), (True, TypeError)])
def test_rectify_max_iter_is_validated(value, error):
    with pytest.raises(error, match='rectify_max_iter'):
        AnchorModel(num_topics=2, id2word={0: 'a', 1: 'b'}, rectify=True, rectify_max_iter=value)


def test_rectify_rejects_bad_shapes():
    with pytest.raises(ValueError, match='square'):
        rectify(np.ones((3, 4)), 2)
    with pytest.raises(ValueError, match='num_topics'):
        rectify(np.eye(3) / 3, 4)


# ----------------------------------------------------------------------------------------------
# Compressed rectification (rectify=True / 'enn').
# ----------------------------------------------------------------------------------------------

def test_compression_finds_the_leading_eigenpairs_of_q(noisy):
    cooc = build_cooccurrence(noisy['docs'], noisy['V'])
    K = noisy['K']
    result = compress(cooc, K, power_iter=6)
    w, X = np.linalg.eigh(cooc.to_dense())
    np.testing.assert_allclose(result.values, w[::-1][:K], rtol=1e-6)
    # The subspaces agree: the cosines of the principal angles are all near 1.
    cosines = np.linalg.svd(X[:, -K:].T @ result.vectors, compute_uv=False)
    assert cosines.min() > 1 - 1e-6
    # No shift: the first block's product, the 6 power steps and Rayleigh-Ritz's.
    assert result.shift == 0.0 and result.num_products == 1 + 6 + 1


def _spectrum(values, V=200, seed=0):
    X = np.linalg.qr(np.random.default_rng(seed).standard_normal((V, V)))[0]
    Q = (X * values) @ X.T
    return Cooccurrence(V, 1, 0, 0, np.ones(V, np.int64), np.ones(V), np.zeros(V), Q_sum=(Q + Q.T) / 2)


def test_compression_shifts_only_when_negative_eigenvalues_crowd_the_block():
    # K = 5, a block of 10: six negative eigenvalues of magnitude 8 outrank the 5th topic's 6,
    # so unshifted the 10 largest magnitudes leave it out; the shift |theta_min| / 2 brings it in.
    V, K = 200, 5
    noise = np.random.default_rng(1).uniform(-0.5, 0.5, V - 11)
    crowded = _spectrum(np.concatenate([[10, 9, 8, 7, 6], [-8] * 6, noise]))
    active = np.ones(V, dtype=bool)
    result = compress(crowded, K, power_iter=30, active=active)
    np.testing.assert_allclose(result.values, [10, 9, 8, 7, 6], rtol=1e-6)
    assert result.shift == pytest.approx(4.0, rel=1e-6) and result.num_products == 2 * (30 + 2)
    # Unshifted, the same block misses the 5th topic: the fallback is what finds it.
    theta, _ = rectify_module._range_finder(crowded, active, 2 * K, 30, 0.0, 0)
    assert rectify_module._crowded(theta, K, 2 * K) and theta[K - 1] < 6 - 1e-3
    # Two strong negative eigenvalues leave room: no shift, and the topics are exact.
    roomy = _spectrum(np.concatenate([[10, 9, 8, 7, 6], [-8] * 2, np.zeros(4), noise]))
    result = compress(roomy, K, power_iter=30, active=active)
    assert result.shift == 0.0
    np.testing.assert_allclose(result.values, [10, 9, 8, 7, 6], rtol=1e-6)


def test_compression_uses_only_products_so_dense_and_implicit_agree(noisy):
    implicit = build_cooccurrence(noisy['docs'], noisy['V'])
    a = compress(implicit, noisy['K'])
    b = compress(implicit.densify(), noisy['K'])
    np.testing.assert_allclose(a.values, b.values, rtol=1e-10)


def test_enn_is_nonnegative_where_it_matters_and_sums_to_one(noisy):
    cooc = build_cooccurrence(noisy['docs'], noisy['V'])
    K = noisy['K']
    active = cooc.row_sums() > 0
    result = rectify_enn(compress(cooc, K), active, tol=1e-5, max_iter=200, num_large=40)
    assert result.converged and result.residual <= 1e-5
    C = result.Y @ result.Y.T
    assert abs(C.sum() - 1.0) < 1e-12
    large = np.argsort(-np.sum(result.Y ** 2, axis=1))[:40]
    # The rows of largest norm: their negative entries (and transposes) hold at most 1e-5 of Q.
    assert -np.minimum(C[large], 0.0).sum() <= 1e-5
    start = rectify_enn(compress(cooc, K), active, max_iter=0, tol=1e-9, num_large=40)  # truncation
    assert start.n_iter == 0 and not start.converged and start.residual > 1e-5 >= result.residual


def test_enn_default_tolerance_is_a_share_of_the_first_negative_mass(noisy):
    cooc = build_cooccurrence(noisy['docs'], noisy['V'])
    active = cooc.row_sums() > 0
    compression = compress(cooc, noisy['K'])
    first = rectify_enn(compression, active, max_iter=0, num_large=40).residual  # Y_0's
    result = rectify_enn(compression, active, max_iter=200, num_large=40)
    assert result.start_residual == first
    assert result.tol == pytest.approx(max(rectify_module.ENN_TOL * first, rectify_module.ENN_TOL_FLOOR))
    assert result.tol < first and result.converged and result.residual <= result.tol
    # It stops at the first iteration below the tolerance, not later.
    before = rectify_enn(compression, active, max_iter=result.n_iter - 1, num_large=40)
    assert before.residual > result.tol and not before.converged
    # A tolerance given is absolute, as before.
    assert rectify_enn(compression, active, tol=1e-3, max_iter=200, num_large=40).tol == 1e-3


def test_low_rank_statistics_match_their_dense_q(noisy):
    cooc, _ = rectify_lowrank(build_cooccurrence(noisy['docs'], noisy['V']), noisy['K'])
    assert cooc.mode == 'lowrank'
    Q = cooc.to_dense()
    X = np.random.default_rng(0).standard_normal((noisy['V'], 3))
    np.testing.assert_allclose(cooc.matmul(X), Q @ X, atol=1e-15)
    np.testing.assert_allclose(cooc.rows([3, 7]), Q[[3, 7]], atol=1e-15)
    p = cooc.row_sums()
    np.testing.assert_allclose(p, np.maximum(Q.sum(axis=1), 0), atol=1e-15)
    # K coordinates with the distances of the rows of Q-bar.
    words = np.flatnonzero(p > 0)[:20]
    Y = cooc.coordinates(words, p)
    bar = Q[words] / p[words, None]
    d_exact = np.linalg.norm(bar[:, None] - bar[None], axis=2)
    d_coord = np.linalg.norm(Y[:, None] - Y[None], axis=2)
    np.testing.assert_allclose(d_coord, d_exact, atol=1e-12 * d_exact.max())


def test_compressed_rectification_recovers_topics_as_well_as_the_alternating_projection(noisy):
    kw = dict(num_topics=noisy['K'], id2word=noisy['id2word'], random_state=0, alpha='symmetric',
              anchor_min_df=10)
    plain = AnchorModel(noisy['docs'], **kw)
    enn = AnchorModel(noisy['docs'], rectify=True, **kw)
    ap = AnchorModel(noisy['docs'], rectify='ap', **kw)
    assert enn.rectify == 'enn' and enn.R.min() >= 0.0
    errors = [matched_l1(noisy['A'], m.get_topics().T)[0].mean() for m in (plain, enn, ap)]
    # Measured: plain 0.65, ENN 0.28, AP 0.28.
    assert errors[1] < 0.7 * errors[0] and errors[1] < 1.2 * errors[2]


def test_compressed_rectification_runs_in_implicit_dense_and_any_size(noisy):
    kw = dict(num_topics=noisy['K'], id2word=noisy['id2word'], random_state=0, alpha='symmetric',
              anchor_min_df=10, rectify=True)
    implicit = AnchorModel(noisy['docs'], q_mode='implicit', **kw)
    dense = AnchorModel(noisy['docs'], q_mode='dense', **kw)
    np.testing.assert_array_equal(implicit.anchors, dense.anchors)
    np.testing.assert_allclose(implicit.get_topics(), dense.get_topics(), atol=1e-5)
    assert implicit._cooccurrence.mode == 'implicit'  # the model keeps the additive statistics


def test_tiny_corpus_gets_a_clear_error():
    docs = [[(0, 1), (1, 1)], [(1, 1), (2, 2)], [(3, 1)]]  # 3 words with co-occurrences
    with pytest.raises(ValueError, match=r"at least num_topics=4 words .* the corpus has 3"):
        AnchorModel(docs, num_topics=4, id2word={i: str(i) for i in range(6)}, rectify=True,
                    anchor_min_df=1)


def test_rank_deficient_q_gets_a_clear_error():
    # Two blocks of words that never meet: Q has two positive eigenvalues, fewer than K = 4.
    docs = [[(0, 1), (1, 1)]] * 50 + [[(2, 1), (3, 1)], [(3, 1), (4, 1)]]
    cooc = build_cooccurrence(docs, 5)
    with pytest.raises(ValueError, match=r"only 2 positive eigenvalues .* lower num_topics"):
        compress(cooc, 4)


def test_rank_one_q_does_not_suggest_a_single_topic():
    # One block of words: Q has rank one, and num_topics=1 is no model, so the error asks for data.
    docs = [[(0, 1), (1, 1)], [(0, 2), (1, 2)], [(0, 1), (1, 1)]] * 20
    cooc = build_cooccurrence(docs, 2)
    with pytest.raises(ValueError, match=r"only 1 positive eigenvalues .* train on more") as info:
        compress(cooc, 2)
    assert 'lower num_topics' not in str(info.value)


def test_enn_iteration_cap_is_reported_with_the_residual(noisy, caplog, monkeypatch):
    monkeypatch.setattr(rectify_module, 'ENN_TOL', 1e-12)
    with caplog.at_level(logging.INFO, logger='gensim_anchor'):
        AnchorModel(noisy['docs'], num_topics=noisy['K'], rectify=True, rectify_max_iter=1,
                    random_state=0, alpha='symmetric')
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any('rectify_max_iter=1' in m and 'residual' in m for m in warnings)
    assert any('compressed' in r.getMessage() and '1 iterations' in r.getMessage()
               for r in caplog.records if r.levelno == logging.INFO)


@pytest.mark.parametrize('value', ['dense', 1, 'AP'])
def test_rectify_option_is_validated(value):
    with pytest.raises(ValueError, match=r"rectify must be False, True \(= 'enn'\) or one of 'enn', 'ap'"):
        AnchorModel(num_topics=2, id2word={0: 'a', 1: 'b'}, rectify=value)


@pytest.mark.parametrize('value, stored', [(True, 'enn'), ('enn', 'enn'), ('ap', 'ap'), (False, False),
                                           (None, False)])
def test_rectify_option_is_stored_resolved(value, stored):
    assert AnchorModel(num_topics=2, id2word={0: 'a', 1: 'b'}, rectify=value).rectify == stored


def test_a_model_saved_with_the_old_rectify_true_loads_as_ap(noisy, tmp_path):
    model = AnchorModel(noisy['docs'][:200], num_topics=noisy['K'], id2word=noisy['id2word'],
                        alpha='symmetric')  # no alpha search: only the saved flag matters here
    model.rectify = True  # what rectify=True stored before 'enn' existed: the AP
    model.save(str(tmp_path / 'old'))
    assert AnchorModel.load(str(tmp_path / 'old')).rectify == 'ap'


def test_correction_products_by_row_blocks_match_the_dense_correction():
    """E @ B and sum(E) for ENN's correction, made by row blocks in float32, against E formed
    densely from its definition: max(0, -y_i^T y_j) where i or j is among the large words."""
    rng = np.random.default_rng(3)
    V, l = 50, 6
    Y = rng.standard_normal((V, 4))
    large = np.array([7, 3, 40, 11, 0, 29])
    basis = rng.standard_normal((V, 5))
    C = Y @ Y.T
    in_large = np.zeros(V, dtype=bool)
    in_large[large] = True
    E = np.where(in_large[:, None] | in_large[None, :], np.maximum(-C, 0.0), 0.0)
    assert (E > 0).sum() > 50 and (E[~in_large][:, ~in_large] == 0).all()
    for rows in (7, 50, 64):
        EB, total = rectify_module._correction_products(Y, large, basis, rows=rows)
        np.testing.assert_allclose(EB, E @ basis, rtol=1e-5, atol=1e-5 * np.abs(E @ basis).max())
        assert total == pytest.approx(E.sum(), rel=1e-6)
    # The caller's block memory, reused across calls and holding the last call's values, sets
    # the block size and changes nothing else.
    buf = np.full((9, l), np.nan, dtype=np.float32)
    for _ in range(2):
        EB, total = rectify_module._correction_products(Y, large, basis, buf=buf)
        np.testing.assert_allclose(EB, E @ basis, rtol=1e-5, atol=1e-5 * np.abs(E @ basis).max())
        assert total == pytest.approx(E.sum(), rel=1e-6)


@pytest.mark.parametrize('case, householder', [('random', False), ('graded', False),
                                               ('margin', True), ('ill-conditioned', True),
                                               ('rank-deficient', True)])
def test_orthonormal_basis_spans_the_block(case, householder, monkeypatch):
    """Cholesky QR twice, with its fallback to Householder QR: an orthonormal basis of the same
    span as numpy's QR, on blocks from well to badly conditioned, and the fallback taken exactly
    past the margin (Cholesky itself would still pass a condition number of 1e7)."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((400, 12))
    mix = np.linalg.qr(rng.standard_normal((12, 12)))[0]
    if case == 'graded':  # condition number 1e5, in mixed directions: CholeskyQR2's own range
        X = np.linalg.qr(X)[0] * np.logspace(0, -5, 12) @ mix
    elif case == 'margin':  # 1e7: within CholeskyQR2's limit, past the margin
        X = np.linalg.qr(X)[0] * np.logspace(0, -7, 12) @ mix
    elif case == 'ill-conditioned':  # 1e10: past it, so the fallback
        X = np.linalg.qr(X)[0] * np.logspace(0, -10, 12) @ mix
    elif case == 'rank-deficient':
        X[:, 3] = X[:, 0] + X[:, 1]
    calls = []
    qr = np.linalg.qr
    monkeypatch.setattr(np.linalg, 'qr', lambda A, *a, **k: calls.append(1) or qr(A, *a, **k))
    B = rectify_module._orthonormal(X)
    monkeypatch.undo()
    assert bool(calls) == householder
    assert B.shape == X.shape and np.all(np.isfinite(B))
    np.testing.assert_allclose(B.T @ B, np.eye(12), atol=1e-12)
    if case != 'rank-deficient':
        Q = np.linalg.qr(X)[0]
        # The same span: the cosines of the principal angles are all 1.
        np.testing.assert_allclose(np.linalg.svd(Q.T @ B, compute_uv=False), 1.0, atol=1e-9)
    else:  # the span of X is within that of B
        np.testing.assert_allclose(B @ (B.T @ X), X, atol=1e-10)


def test_over_relaxed_enn_reaches_the_tolerance_sooner_where_the_authors_step_does(noisy):
    cooc = build_cooccurrence(noisy['docs'], noisy['V'])
    active = cooc.row_sums() > 0
    compression = compress(cooc, noisy['K'])
    runs = {w: rectify_enn(compression, active, tol=1e-6, max_iter=200, num_large=40, relaxation=w)
            for w in (1.0, 2.0)}
    assert all(r.converged and r.residual <= 1e-6 for r in runs.values())
    assert runs[2.0].n_iter < runs[1.0].n_iter
    # Both end near each other: the relaxation changes the path, not where it leads.
    distance, size = rectify_module._gram_distance(runs[1.0].Y, runs[2.0].Y)
    assert distance < 0.05 * size
