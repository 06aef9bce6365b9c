"""alpha = scale * p(z), the scale chosen by the estimated likelihood of documents (grid search).

On documents drawn from LDA with known topics and a known prior, the fit with the true topics
and the true p(z) must find the true concentration alpha_0 up to the grid's resolution (a factor
10^(1/4) = 1.78 between points) and the estimator's noise, and prefer it clearly to the ends of
the grid.
"""
import numpy as np
import pytest

from conftest import lda_corpus
from gensim_anchor.dirichlet import DirichletFit, default_grid, fit_alpha_scale

K, V = 4, 50
P_Z = np.array([0.4, 0.3, 0.2, 0.1])


@pytest.fixture(scope='module')
def topics():
    rng = np.random.default_rng(10)
    return rng.dirichlet(np.full(V, 0.1), size=K)                    # (K, V)


@pytest.mark.parametrize('alpha0', [0.4, 4.0])
def test_recovers_the_concentration(topics, alpha0):
    rng = np.random.default_rng(int(alpha0 * 10))
    docs = lda_corpus(rng, topics.T, alpha0 * P_Z, num_docs=400, doc_length=30)
    fit = fit_alpha_scale(topics, P_Z, docs, random_state=0, exhaustive=True)
    assert isinstance(fit, DirichletFit)
    np.testing.assert_allclose(fit.grid, default_grid(K))
    assert alpha0 / 2 <= fit.scale <= alpha0 * 2
    np.testing.assert_allclose(fit.alpha, fit.scale * P_Z)
    assert fit.log_likelihood.shape == fit.grid.shape
    assert fit.log_likelihood.max() == fit.log_likelihood[fit.grid == fit.scale][0]
    # Clearly better than the extremes (documents of one topic; every document alike).
    assert fit.log_likelihood.max() > fit.log_likelihood[0] + 20
    assert fit.log_likelihood.max() > fit.log_likelihood[-1] + 20
    # The default search: the same choice from fewer points, each the exhaustive one's value.
    quick = fit_alpha_scale(topics, P_Z, docs, random_state=0)
    assert quick.scale == fit.scale
    seen = ~np.isnan(quick.log_likelihood)
    assert 0 < seen.sum() < len(seen)
    np.testing.assert_allclose(quick.log_likelihood[seen], fit.log_likelihood[seen], rtol=1e-12)


def test_a_grid_in_any_order_gives_the_same_choice(topics):
    """The search runs along increasing alpha_0: a shuffled grid gives the same choice and
    the same value at each point it evaluates, reported in the grid's own order."""
    rng = np.random.default_rng(2)
    docs = lda_corpus(rng, topics.T, 1.0 * P_Z, num_docs=100, doc_length=20)
    grid = default_grid(K)
    shuffled = rng.permutation(grid)
    a = fit_alpha_scale(topics, P_Z, docs, grid=grid, random_state=5)
    b = fit_alpha_scale(topics, P_Z, docs, grid=shuffled, random_state=5)
    assert a.scale == b.scale
    np.testing.assert_array_equal(b.grid, shuffled)
    back = np.argsort(shuffled)
    np.testing.assert_allclose(b.log_likelihood[back], a.log_likelihood, rtol=1e-12)


@pytest.mark.parametrize('num_points', [1, 4, 5, 8, 12, 16, 25])
def test_window_search_finds_the_top_of_a_unimodal_curve(num_points):
    """Every position of the maximum from every start, ties at the top included: the first best
    point, each index evaluated once and in range, a first call of 4 points, later ones of 2."""
    from gensim_anchor.dirichlet import window_search
    rng = np.random.default_rng(num_points)
    for top in range(num_points):
        for start in range(num_points):
            steps = rng.random(num_points)
            curve = np.concatenate([np.cumsum(steps[:top + 1]),
                                    steps[:top + 1].sum() - np.cumsum(steps[top + 1:])])
            if rng.random() < 0.3 and top + 1 < num_points:
                curve[top + 1] = curve[top]                     # a tie at the top
            calls = []

            def evaluate(indices):
                indices = np.asarray(indices)
                assert indices.min() >= 0 and indices.max() < num_points
                calls.append(indices.tolist())
                return curve[indices]

            values = window_search(evaluate, num_points, start)
            assert int(np.nanargmax(values)) == int(np.argmax(curve))
            seen = ~np.isnan(values)
            np.testing.assert_array_equal(values[seen], curve[seen])
            flat = [i for call in calls for i in call]
            assert sorted(flat) == np.flatnonzero(seen).tolist()  # none twice
            assert len(calls[0]) == min(4, num_points) and all(len(c) <= 2 for c in calls[1:])
            # One run of evaluated points, from the first window to at most a step past the top.
            first, last = np.flatnonzero(seen)[[0, -1]]
            assert seen[first:last + 1].all()
            lo = min(max(start - 1, 0), max(num_points - 4, 0))
            assert first >= min(lo, top - 2) and last <= max(lo + 3, top + 2)


def test_window_search_starts_near_a_concentration_per_topic():
    from gensim_anchor.dirichlet import search_start
    grid = default_grid(50)
    assert grid[search_start(grid, 50)] == pytest.approx(10 ** 0.25)  # 1.78 <= 0.05 x 50 < 3.16
    assert search_start(grid, 1) == 0 and search_start(grid[6:], 50) == 0  # all above 2.5
    assert search_start(grid, 10 ** 6) == len(grid) - 1


def test_seeded(topics):
    rng = np.random.default_rng(1)
    docs = lda_corpus(rng, topics.T, 1.0 * P_Z, num_docs=30, doc_length=20)
    grid = default_grid(K)  # the other tests' grid: their compiled estimator serves
    a = fit_alpha_scale(topics, P_Z, docs, grid=grid, random_state=7)
    b = fit_alpha_scale(topics, P_Z, docs, grid=grid, random_state=7)
    np.testing.assert_array_equal(a.log_likelihood, b.log_likelihood)
    np.testing.assert_array_equal(a.grid, grid)


def test_input_validation(topics):
    docs = [[(0, 2), (3, 1)]]
    with pytest.raises(ValueError, match=r"p_z must be >= 0 .*p_z\[1\] = -0.1"):
        fit_alpha_scale(topics, np.array([0.6, -0.1, 0.3, 0.2]), docs)
    with pytest.raises(ValueError, match="p_z must sum to 1.*it sums to 0.5"):
        fit_alpha_scale(topics, P_Z / 2, docs)
    with pytest.raises(ValueError, match=r"p_z must have shape \(4,\)"):
        fit_alpha_scale(topics, np.ones(3) / 3, docs)
    with pytest.raises(ValueError, match="docs is empty"):
        fit_alpha_scale(topics, P_Z, [])
    with pytest.raises(ValueError, match="none of the 2 documents has a word id in"):
        fit_alpha_scale(topics, P_Z, [[], [(V + 3, 1)]])
    with pytest.raises(ValueError, match="grid values are concentrations"):
        fit_alpha_scale(topics, P_Z, docs, grid=[1.0, 0.0])
    with pytest.raises(ValueError, match="grid must hold at least one"):
        fit_alpha_scale(topics, P_Z, docs, grid=[])


@pytest.mark.parametrize('long_share', [0.9, 0.1, 0.0])
def test_the_documents_scored_for_alpha(long_share):
    """The model scores up to ALPHA_DOCS documents, each a subsample of at most ALPHA_TOKENS
    tokens of one of the first documents of the sample: the long ones (more than ALPHA_TOKENS / 2
    tokens) where at least a quarter of ALPHA_DOCS are, else any of at least 2 tokens."""
    from gensim_anchor._defaults import ALPHA_DOCS, ALPHA_TOKENS
    from gensim_anchor._sampling import alpha_documents
    rng = np.random.default_rng(3)
    lengths = np.where(rng.random(600) < long_share, rng.integers(40, 300, 600),
                       rng.integers(0, 20, 600))
    docs = [sorted(zip(*np.unique(rng.integers(0, V, n), return_counts=True))) for n in lengths]
    long_docs = [d for d, n in zip(docs, lengths) if n > ALPHA_TOKENS // 2]
    expected = long_docs if len(long_docs) >= ALPHA_DOCS // 4 else \
        [d for d, n in zip(docs, lengths) if n >= 2]
    expected = expected[:ALPHA_DOCS]
    out = alpha_documents(docs, 0)
    assert len(out) == len(expected) > 0
    for got, doc in zip(out, expected):
        words = dict(doc)
        size = sum(c for _, c in got)
        assert size == min(sum(words.values()), ALPHA_TOKENS)
        # a subsample of the document's tokens: no word more often than in the document
        assert all(w in words and c <= words[w] for w, c in got)
    assert out == alpha_documents(docs, 0)   # seeded


def test_a_document_of_billions_of_tokens_is_subsampled_without_listing_them():
    """The subsample of a long document is the one rng.choice draws from its token list (as
    the reference below lists them), found without the list: a count of 4e10 once asked for
    298 GiB. Each token is equally likely to be kept: the words' shares match their counts."""
    from gensim_anchor._defaults import ALPHA_TOKENS
    from gensim_anchor._sampling import alpha_documents
    rng = np.random.default_rng(5)
    docs = [[(int(w), int(c)) for w, c in zip(rng.choice(V, 6, replace=False), rng.integers(0, 90, 6))]
            for _ in range(30)]
    for doc in docs:
        tokens = np.repeat([w for w, _ in doc], [c for _, c in doc])
        draw = np.random.default_rng(0)
        if len(tokens) > ALPHA_TOKENS:
            tokens = draw.choice(tokens, ALPHA_TOKENS, replace=False)
        ids, counts = np.unique(tokens, return_counts=True)
        assert alpha_documents([doc], 0) == [list(zip(ids.tolist(), counts.tolist()))]
    huge = [(0, 10 ** 10), (1, 0), (2, 3 * 10 ** 10), (3, 1)]
    kept = np.zeros(4)
    for seed in range(200):
        (got,) = alpha_documents([huge], seed)
        assert sum(c for _, c in got) == ALPHA_TOKENS
        for w, c in got:
            kept[w] += c
    share = kept / kept.sum()
    assert kept[1] == 0  # a zero count is never drawn
    assert share[0] == pytest.approx(0.25, abs=0.02) and share[2] == pytest.approx(0.75, abs=0.02)


def test_the_calls_of_a_search_share_one_program(topics, monkeypatch):
    """A search's later calls score fewer concentrations than its first; with few documents that
    would choose a smaller batch (a second program, seconds to compile): every call is laid out
    as the first."""
    import gensim_anchor.likelihood as likelihood
    from conftest import record_calls
    rng = np.random.default_rng(3)
    docs = lda_corpus(rng, topics.T, 30.0 * P_Z, num_docs=30, doc_length=20)
    shapes = record_calls(monkeypatch, likelihood, '_filter_batch',
                          lambda beta, shape, scales, ids, *_: (len(scales),) + ids.shape)
    fit = fit_alpha_scale(topics, P_Z, docs, grid=default_grid(K), random_state=1)
    # alpha_0 = 30 is far above the start (0.05 K = 0.2): the window moved up, 2 points a call.
    assert fit.scale >= 10 and (~np.isnan(fit.log_likelihood)).sum() > 4
    assert len(shapes) > 1 and len(set(shapes)) == 1, shapes
