"""Hybrid refinement: Gibbs sweeps (collapsed and blocked; and gensim's VB) from the anchor solution."""
import numpy as np
import pytest

from conftest import lda_corpus, matched_l1, separable_topics
from gensim_anchor import AnchorModel
from gensim_anchor import hybrid
from gensim_anchor._compile_cache import bucket
from gensim_anchor._defaults import tuning
from gensim_anchor.hybrid import _minka_alpha, gibbs_refine
from gensim_anchor.likelihood import log_likelihood_per_token

V, K = 60, 4


@pytest.fixture(scope='module')
def semi_synthetic():
    """Short documents from a known LDA model: the anchor solution is noisy there."""
    rng = np.random.default_rng(3)
    A, _ = separable_topics(rng, V, K, anchor_mass=0.05, beta=0.3)
    alpha = np.full(K, 0.2)
    train = lda_corpus(rng, A, alpha, 1500, 12)
    heldout = lda_corpus(rng, A, alpha, 300, 12)
    model = AnchorModel(train, num_topics=K, id2word={i: str(i) for i in range(V)},
                        alpha='symmetric', anchor_min_df=5, random_state=0)
    return A, alpha, train, heldout, model


@pytest.mark.parametrize('sampler', hybrid.SAMPLERS)
def test_gibbs_refinement_moves_towards_the_true_topics(semi_synthetic, sampler):
    A, alpha, train, heldout, model = semi_synthetic
    before = matched_l1(A, model.get_topics().T.astype(np.float64))[0].mean()
    result = gibbs_refine(model.get_topics(), model.alpha, train, p_z=model.p_z, num_sweeps=60,
                          burn_in=30, sampler=sampler, random_state=0)
    after = matched_l1(A, result.topics.T)[0].mean()
    assert after < before
    np.testing.assert_allclose(result.topics.sum(axis=1), 1.0, atol=1e-12)
    assert result.num_tokens == sum(c for doc in train for _, c in doc)
    ll_before = log_likelihood_per_token(model.get_topics(), model.alpha, heldout, random_state=0)
    ll_after = log_likelihood_per_token(result.topics, result.alpha, heldout, random_state=0)
    assert ll_after > ll_before


@pytest.mark.parametrize('sampler', hybrid.SAMPLERS)
def test_gibbs_refinement_is_seeded(semi_synthetic, sampler):
    _, _, train, _, model = semi_synthetic
    run = lambda seed: gibbs_refine(model.get_topics(), model.alpha, train, num_sweeps=6,
                                    burn_in=3, sampler=sampler, random_state=seed)
    first, again, other = run(5), run(5), run(6)
    np.testing.assert_array_equal(first.topics, again.topics)
    np.testing.assert_array_equal(first.alpha, again.alpha)
    assert not np.array_equal(first.topics, other.topics)


def test_minka_fixed_point_recovers_a_known_dirichlet():
    import jax.numpy as jnp
    rng = np.random.default_rng(0)
    alpha_true = np.array([0.1, 0.3, 0.6, 1.2])
    theta = rng.dirichlet(alpha_true, size=4000)
    n_dk = np.stack([rng.multinomial(400, t) for t in theta]).astype(np.float32)
    alpha = jnp.ones(4, jnp.float32)
    for _ in range(40):
        alpha = _minka_alpha(alpha, jnp.asarray(n_dk))
    np.testing.assert_allclose(np.asarray(alpha), alpha_true, rtol=0.15)


def test_refine_replaces_topics_and_records_it(semi_synthetic, tmp_path):
    _, _, train, _, model = semi_synthetic
    anchors = model.anchors.copy()
    refined = AnchorModel.load(_saved(model, tmp_path / 'a.model'))
    assert refined.refinement is None
    out = refined.refine(train, 'vb', passes=1)
    assert out is refined and refined.refinement['method'] == 'vb'
    assert not np.allclose(refined.get_topics(), model.get_topics())
    np.testing.assert_allclose(refined.get_topics().sum(axis=1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(refined.anchors, anchors)
    refined.refine(train, num_sweeps=4, burn_in=2)
    assert refined.refinement == dict(method='gibbs', num_sweeps=4, burn_in=2, sampler='collapsed',
                                      substeps=2, max_sweeps=4, converged=True, eta=1.0 / model.num_topics,
                                      seconds=refined.refinement['seconds'])
    loaded = AnchorModel.load(_saved(refined, tmp_path / 'b.model'))
    assert loaded.refinement['method'] == 'gibbs'
    np.testing.assert_array_equal(loaded.get_topics(), refined.get_topics())
    np.testing.assert_array_equal(loaded.alpha, refined.alpha)


def _saved(model, path):
    model.save(str(path))
    return str(path)


@pytest.mark.parametrize('kwargs, corpus, match', [
    (dict(num_sweeps=5, burn_in=5), [[(0, 2)]], 'burn_in=5 must be smaller than num_sweeps=5'),
    (dict(num_sweeps=0), [[(0, 2)]], 'num_sweeps must be >= 1'),
    (dict(eta=0.0), [[(0, 2)]], 'eta'),
    (dict(sampler='metropolis'), [[(0, 2)]], "sampler must be one of"),
    (dict(substeps=0), [[(0, 2)]], "substeps must be >= 1"),
    ({}, [[(0, 1.5)]], 'document #0 has non-integer count 1.5 for word id 0'),
    ({}, [[(0, 1)], [(99, 1)]], 'document #1 has word id 99 outside'),
    ({}, [[], [(0, 0)]], 'no tokens to sample'),
    # These two ran: p_z and rows that are not distributions weighed the first topics wrongly.
    (dict(p_z=[1.0, 1.0]), [[(0, 2)]], r'p_z must sum to 1 \(a distribution over topics\), it sums to 2'),
    (dict(topics=np.full((2, 3), 2.0 / 3)), [[(0, 2)]], r'topics must have rows p\(w \| z\) that sum to 1'),
    (dict(p_z=[1.0]), [[(0, 2)]], r'p_z must have shape \(2,\)'),  # was numpy's broadcast error
])
def test_gibbs_refine_rejects_bad_input(kwargs, corpus, match):
    kwargs = dict(dict(topics=np.full((2, 3), 1.0 / 3)), **kwargs)
    with pytest.raises(ValueError, match=match):
        gibbs_refine(alpha=[0.5, 0.5], corpus=corpus, **kwargs)


def test_gibbs_refine_reads_the_papers_orientation_as_get_topics():
    # A (V x K) whose columns are the distributions, as everywhere else in the package.
    topics = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    corpus = [[(0, 3), (1, 1)], [(2, 4)], [(0, 1), (2, 2)]]
    kwargs = dict(num_sweeps=4, burn_in=2, random_state=0)
    np.testing.assert_array_equal(gibbs_refine(topics.T, [0.5, 0.5], corpus, **kwargs).topics,
                                  gibbs_refine(topics, [0.5, 0.5], corpus, **kwargs).topics)


def test_refine_rejects_an_unknown_method(semi_synthetic):
    with pytest.raises(ValueError, match="method"):
        semi_synthetic[-1].refine([], method='mcmc')


# -- the sampling steps against slow references ------------------------------------------------

def test_log_gamma_matches_scipy_for_small_and_large_shapes():
    """The Marsaglia-Tsang sampler (boosted below 1) against scipy's log-gamma distribution."""
    import jax
    import jax.numpy as jnp
    from scipy import stats
    shapes = [0.01, 0.3, 1.0, 2.5, 40.0, 3000.0]
    draws = np.asarray(jax.jit(hybrid._log_gamma)(
        jax.random.PRNGKey(0), jnp.repeat(jnp.asarray(shapes, jnp.float32), 20000)))
    assert np.all(np.isfinite(draws))  # Gamma(0.01) underflows as a plain variate, not in logs
    for shape, x in zip(shapes, draws.reshape(len(shapes), -1)):
        assert stats.kstest(x, stats.loggamma(shape).cdf).pvalue > 1e-3, shape


def _frequencies(z, K):
    return np.stack([np.bincount(row, minlength=K) for row in z.T]) / z.shape[0]


def test_topic_draws_follow_their_weights_across_blocks(monkeypatch):
    """Inverse-CDF draws over padded blocks: frequencies match the weights of each token."""
    import jax
    import jax.numpy as jnp
    monkeypatch.setitem(tuning(jax.default_backend()), "gibbs_token_block", 7)  # 3 blocks, padded
    weights = np.array([[1, 0, 3, 0, 6], [0, 0, 0, 0, 2], [5, 5, 0, 1e-3, 0], [1, 1, 1, 1, 1]] * 4
                       + [[2, 0, 0, 0, 1]], np.float32)
    draw = jax.jit(jax.vmap(lambda key: hybrid._draw_topics(
        key, lambda t: jnp.asarray(weights)[t], (jnp.arange(len(weights)),), 5)))
    z = np.asarray(draw(jax.random.split(jax.random.PRNGKey(1), 4000)))
    expected = weights / weights.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(_frequencies(z, 5), expected, atol=0.03)
    assert not np.any(_frequencies(z, 5)[expected == 0])  # zero weight: never drawn


@pytest.mark.parametrize('num_topics', [1, 5, 64, 300])
def test_topic_draws_are_the_inverse_cdf_of_their_uniforms(monkeypatch, num_topics):
    """Token by token, the topic drawn is the one whose cumulative weight first reaches u times
    the total, u = 1 - the draw's own uniform in [0, 1), as a float64 numpy cumulative sum gives
    it (integer weights: the sums are exact, so the topics must be equal). With u in (0, 1] the
    target is never 0, so a topic of zero weight (topic 0 here) cannot be drawn; u in [0, 1)
    fails the equality."""
    import jax
    import jax.numpy as jnp
    monkeypatch.setitem(tuning(jax.default_backend()), "gibbs_token_block", 7)  # 3 blocks, padded
    rng = np.random.default_rng(num_topics)
    weights = np.ones((19, 1), np.float32)
    if num_topics > 1:
        weights = rng.integers(0, 4, (19, num_topics)).astype(np.float32)
        weights[:, 0] = 0                  # never drawn, not even for the smallest uniform
        weights[np.arange(19), rng.integers(1, num_topics, 19)] += 1   # a positive total
    key = jax.random.PRNGKey(num_topics)
    z = np.asarray(jax.jit(lambda key: hybrid._draw_topics(
        key, lambda t: jnp.asarray(weights)[t], (jnp.arange(19),), num_topics))(key))
    u = 1 - np.asarray(jax.random.uniform(key, (3, 7), jnp.float32)).reshape(-1)[:19]
    cdf = np.cumsum(weights.astype(np.float64), axis=1)
    target = (u * cdf[:, -1].astype(np.float32)).astype(np.float64)   # the float32 product
    expected = np.sum(cdf[:, :-1] < target[:, None], axis=1)
    np.testing.assert_array_equal(z, expected)
    assert np.all(weights[np.arange(19), z] > 0)


def test_collapsed_sweep_draws_every_token_from_its_collapsed_conditional():
    """One collapsed sweep, many times from the same state, against the textbook conditional
    p(z_n = k | z_-n) computed token by token in numpy."""
    import jax
    import jax.numpy as jnp
    rng = np.random.default_rng(0)
    num_docs, num_terms, num_topics, eta = 3, 5, 3, 0.3
    doc = np.repeat(np.arange(num_docs), [4, 6, 5]).astype(np.int32)
    word = rng.integers(0, num_terms, len(doc)).astype(np.int32)
    z_old = rng.integers(0, num_topics, len(doc)).astype(np.int32)
    alpha = np.array([0.2, 0.5, 1.0], np.float32)
    expected = np.empty((len(doc), num_topics))
    for n in range(len(doc)):
        others = np.arange(len(doc)) != n
        n_dk = np.bincount(z_old[others & (doc == doc[n])], minlength=num_topics)
        n_kw = np.bincount(z_old[others & (word == word[n])], minlength=num_topics)
        n_k = np.bincount(z_old[others], minlength=num_topics)
        p = (n_dk + alpha) * (n_kw + eta) / (n_k + num_terms * eta)
        expected[n] = p / p.sum()
    counts, sweep = hybrid._compiled_sweep('collapsed', num_docs, num_terms, num_topics, False,
                                           (0, len(doc)))
    doc_j, word_j, z_j = jnp.asarray(doc), jnp.asarray(word), jnp.asarray(z_old)
    n_dk, n_kw = counts(doc_j, word_j, z_j)
    draws = jax.jit(jax.vmap(lambda key: sweep(key, doc_j, word_j, z_j, n_dk, n_kw,
                                               jnp.asarray(alpha), jnp.float32(eta))[0]))
    z = np.asarray(draws(jax.random.split(jax.random.PRNGKey(2), 6000)))
    np.testing.assert_allclose(_frequencies(z, num_topics), expected, atol=0.025)


def test_conditional_weights_take_the_token_out_of_its_own_topic():
    """The unnormalised collapsed conditional of each token, (n_dk + alpha)(n_kw + eta) /
    (n_k + V eta) with the token's own assignment removed from all three counts, against numpy
    in float64, for counts from 1 to thousands (the own topic's weight comes from the phi row
    times n_k + V eta, so large counts are where rounding could show)."""
    import jax.numpy as jnp
    rng = np.random.default_rng(5)
    num_docs, num_terms, num_topics, eta = 4, 7, 6, 0.05
    doc = rng.integers(0, num_docs, 40000).astype(np.int32)
    word = np.minimum(rng.geometric(0.4, 40000) - 1, num_terms - 1).astype(np.int32)
    z = rng.integers(0, num_topics, 40000).astype(np.int32)
    alpha = rng.uniform(0.01, 1.0, num_topics).astype(np.float32)
    n_dk, n_kw = hybrid._counts_impl(jnp.asarray(doc), jnp.asarray(word), jnp.asarray(z),
                                     num_docs=num_docs, num_terms=num_terms, num_topics=num_topics)
    weights = hybrid._conditional(n_dk, n_kw, jnp.asarray(alpha), jnp.float32(eta))
    got = np.asarray(weights(jnp.asarray(doc), jnp.asarray(word), jnp.asarray(z)))
    ndk, nkw = np.asarray(n_dk, np.float64), np.asarray(n_kw, np.float64)
    mine = np.eye(num_topics)[z]                      # the token's own assignment, taken out
    expected = ((ndk[doc] - mine + alpha) * (nkw[:, word].T - mine + eta)
                / (nkw.sum(axis=1) - mine + num_terms * eta))
    assert nkw.max() > 1000
    np.testing.assert_allclose(got, expected, rtol=2e-5)


def test_count_updates_by_flat_index_drop_the_padding():
    """The sweep's scatter by flat index: an index one past the rows or the columns (a padding
    token's document or word) touches nothing, where a flat index row * columns + column of
    column = columns would land on the next row."""
    import jax.numpy as jnp
    counts = jnp.arange(12, dtype=jnp.int32).reshape(3, 4)
    rows, cols = jnp.array([0, 2, 3, 1, 0]), jnp.array([1, 3, 0, 4, 1])
    expected = np.arange(12).reshape(3, 4)
    expected[0, 1] += 2
    expected[2, 3] += 1
    np.testing.assert_array_equal(hybrid._add_at(counts, rows, cols, 1), expected)


def test_collapsed_substeps_update_each_slice_and_keep_the_counts_consistent():
    """With sub-steps, the n-th token of a document moves in sub-step n mod S, and the counts
    carried between sub-steps and sweeps are those of the topics drawn."""
    import jax
    import jax.numpy as jnp
    doc = np.repeat(np.arange(4), [1, 5, 2, 7]).astype(np.int32)
    order, offsets = hybrid._substep_order(doc, 4, 3)
    step = np.concatenate([np.arange(n) % 3 for n in [1, 5, 2, 7]])
    assert offsets == (0, 7, 12, 15)
    np.testing.assert_array_equal(step[order], np.repeat([0, 1, 2], [7, 5, 3]))
    assert np.all(np.diff(order[:7]) > 0)  # stable: document order within a sub-step
    rng = np.random.default_rng(1)
    doc, word = jnp.asarray(doc[order]), jnp.asarray(rng.integers(0, 6, 15).astype(np.int32))
    counts, sweep = hybrid._compiled_sweep('collapsed', 4, 6, 3, True, offsets)
    z = jnp.zeros(15, jnp.int32)
    n_dk, n_kw = counts(doc, word, z)
    alpha = jnp.full(3, 0.5, jnp.float32)
    for i in range(5):
        z, n_dk, n_kw, alpha, _ = sweep(jax.random.PRNGKey(i), doc, word, z, n_dk, n_kw, alpha,
                                        jnp.float32(0.1))
        expected_dk, expected_kw = counts(doc, word, z)
        np.testing.assert_array_equal(n_dk, expected_dk)
        np.testing.assert_array_equal(n_kw, expected_kw)
    assert len(np.unique(np.asarray(z))) > 1


def test_conditional_tables_are_the_plain_formula_bit_for_bit():
    """The tables transpose the counts on their own (an optimisation barrier, for XLA:CPU's
    fusion): the values of the plain formula, (n_kw^T + eta) / (n_k + V eta) and n_dk + alpha,
    computed in one fused program, exactly."""
    import jax
    import jax.numpy as jnp
    rng = np.random.default_rng(4)
    n_kw = jnp.asarray(rng.poisson(3.0, (7, 301)).astype(np.int32))
    n_dk = jnp.asarray(rng.poisson(2.0, (45, 7)).astype(np.int32))
    alpha, eta = jnp.asarray(rng.random(7).astype(np.float32) + 0.01), jnp.float32(0.03)

    def plain(n_dk, n_kw, alpha, eta):
        total = n_kw.sum(axis=1).astype(alpha.dtype) + n_kw.shape[1] * eta
        return (n_kw.T.astype(alpha.dtype) + eta) / total, total, n_dk.astype(alpha.dtype) + alpha
    got = jax.jit(hybrid._conditional_tables)(n_dk, n_kw, alpha, eta)
    for a, b in zip(got, jax.jit(plain)(n_dk, n_kw, alpha, eta)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    phi_t, total, _ = got
    np.testing.assert_allclose(np.asarray(phi_t).sum(axis=0), 1.0, rtol=1e-5)  # each topic's words
    assert phi_t.shape == (301, 7) and total.shape == (7,)


@pytest.fixture(scope='module')
def long_chain():
    """Token arrays long enough for the threaded sweep: 2 sub-steps of 9 whole blocks of the
    CPU's draw (8,192 tokens each), and a first state of a chain."""
    import jax
    rng = np.random.default_rng(0)
    num_docs, num_terms, num_topics = 1500, 400, 6
    lengths = rng.integers(40, 140, num_docs)
    doc = np.repeat(np.arange(num_docs), lengths).astype(np.int32)
    word = rng.integers(0, num_terms, len(doc)).astype(np.int32)
    start_t = rng.random((num_terms, num_topics)).astype(np.float32)
    chain = hybrid._start_chain(jax.random.PRNGKey(1), start_t, doc, word, num_docs, substeps=2,
                                optimize_alpha=True)
    return doc, word, num_docs, chain


@pytest.mark.parametrize('threads', [2, 3])
def test_threaded_sweep_is_the_fused_sweep_bit_for_bit(long_chain, threads):
    """The sweep cut into separate programs, each sub-step's draw in parts on threads, gives the
    fused program's topics, counts, alpha and posterior means exactly, sweep after sweep. With 2
    threads the 9 blocks of a sub-step make two parts of 5 that overlap in block 4 (the last part
    ends with the slice); with 3, three parts of 3."""
    import jax
    import jax.numpy as jnp
    _, _, _, (doc, word, z, n_dk, n_kw, offsets, fused) = long_chain
    size = tuning('cpu')['gibbs_token_block']
    assert jax.default_backend() == 'cpu' and offsets == (0, 9 * size, 18 * size)
    fused_state = threaded_state = (z, n_dk, n_kw, jnp.full(6, 0.3, jnp.float32))
    eta = jnp.float32(0.05)
    with hybrid._threaded_sweep(offsets, threads, True) as threaded:
        assert threaded.starts == {2: (0, 4), 3: (0, 3, 6)}[threads]
        for i in range(3):
            key = jax.random.PRNGKey(10 + i)
            *fused_state, fused_mean = fused(key, doc, word, *fused_state, eta)
            *threaded_state, threaded_mean = threaded(key, doc, word, *threaded_state, eta)
            for a, b in zip(fused_state + [fused_mean], threaded_state + [threaded_mean]):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert np.mean(np.asarray(fused_state[0]) != np.asarray(z)) > 0.3  # the chain moved


def test_threaded_sweep_only_where_a_sub_step_has_two_whole_blocks():
    size = tuning('cpu')['gibbs_token_block']
    assert hybrid._threaded_sweep((0, size, 2 * size), 2, False) is None  # one block
    assert hybrid._threaded_sweep((0, 2 * size, 4 * size), 1, False) is None  # one thread
    ragged = 2 * size + 512  # a bucketed length below 65,536 tokens need not be whole blocks
    assert hybrid._threaded_sweep((0, ragged, 2 * ragged), 2, False) is None
    with hybrid._threaded_sweep((0, 2 * size, 4 * size), 8, False) as threaded:
        assert threaded.starts == (0, 1)  # no more parts than blocks


def test_gibbs_refine_draws_on_threads_that_end_with_it(long_chain, monkeypatch):
    """gibbs_refine on a CPU with two threads gives the result of the fused sweep, and the
    pool's threads live only while it runs."""
    import threading
    doc, word, num_docs, _ = long_chain
    corpus = [list(zip(*np.unique(word[doc == d], return_counts=True))) for d in range(num_docs)]
    rng = np.random.default_rng(2)
    topics = rng.dirichlet(np.ones(400), 6)
    alive = []

    def run(threads):
        monkeypatch.setattr(hybrid._threads, 'host_threads', lambda: threads)
        return gibbs_refine(topics, np.full(6, 0.3), corpus, num_sweeps=4, burn_in=2, random_state=3,
                            callback=lambda *_: alive.append(sweep_threads()))

    def sweep_threads():
        return sum(t.name.startswith('gensim_anchor-sweep') for t in threading.enumerate())

    one, two = run(1), run(2)
    assert alive[:4] == [0] * 4 and alive[4:] == [1] * 4 and sweep_threads() == 0
    np.testing.assert_array_equal(one.topics, two.topics)
    np.testing.assert_array_equal(one.alpha, two.alpha)


def test_collapsed_substeps_reduce_the_alpha_bias_on_short_documents(semi_synthetic):
    """12-token documents, alpha 0.2: moving all tokens of a document at once overestimates
    alpha; one sub-step per token (12) is the sequential sampler within each document (at eta
    0.01: the default 1/K = 0.25 here smooths 4 topics of 60 words so much that alpha falls
    below the truth for a reason of its own)."""
    _, alpha, train, _, model = semi_synthetic
    fitted = {s: gibbs_refine(model.get_topics(), model.alpha, train, p_z=model.p_z, num_sweeps=60,
                              burn_in=30, substeps=s, eta=0.01, random_state=0).alpha.mean()
              for s in (1, 12)}
    assert fitted[1] > fitted[12] > alpha.mean()
    assert abs(fitted[12] - alpha.mean()) < 0.5 * abs(fitted[1] - alpha.mean())


def test_gibbs_refine_logs_its_progress(semi_synthetic, monkeypatch, caplog):
    _, _, train, _, model = semi_synthetic
    monkeypatch.setattr(hybrid, '_LOG_EVERY', 0.0)
    with caplog.at_level('INFO', logger='gensim_anchor.hybrid'):
        gibbs_refine(model.get_topics(), model.alpha, train, num_sweeps=3, burn_in=1,
                     random_state=0)
    lines = [r.getMessage() for r in caplog.records]
    assert [line.split(' (')[0] for line in lines[:3]] == [
        'Gibbs sweep 1/3', 'Gibbs sweep 2/3', 'Gibbs sweep 3/3']
    assert lines[-1].startswith('Gibbs refinement (collapsed): 3 sweeps (1 burn-in) over %d tokens'
                                % sum(c for doc in train for _, c in doc))


def test_layout_gives_corpora_of_about_the_same_size_the_same_shapes():
    """Bucketed shapes: the token slices and the document count rounded up by at most 1/8, the
    padding out of bounds (one past the last document and word)."""
    rng = np.random.default_rng(0)
    shapes = []
    for num_docs in (1060, 1090):  # both round up to 1152 documents, 5632 tokens per sub-step
        lengths = np.full(num_docs, 10)
        doc = np.repeat(np.arange(num_docs), lengths).astype(np.int32)
        word = rng.integers(0, V, len(doc)).astype(np.int32)
        pad_doc, pad_word, num_padded, offsets = hybrid._layout(doc, word, num_docs, V, 2)
        shapes.append((len(pad_doc), num_padded, offsets))
        real = pad_doc < num_padded
        assert real.sum() == len(doc) and np.all(pad_word[real] < V) and np.all(pad_word[~real] == V)
        _, offsets_real = hybrid._substep_order(doc, num_docs, 2)
        largest = max(np.diff(offsets_real))
        assert num_docs <= num_padded <= 1.125 * num_docs
        assert len(pad_doc) == 2 * bucket(largest) and bucket(largest) <= 1.125 * largest
        # Every real token is kept once, each document's tokens with it.
        np.testing.assert_array_equal(np.bincount(pad_doc[real], minlength=num_docs), lengths)
    assert shapes[0] == shapes[1]


def test_gibbs_refinement_of_corpora_of_about_the_same_size_shares_one_sweep_program(
        semi_synthetic, monkeypatch):
    """Two corpora 3% apart in size (1,030 and 1,060 documents of 12 tokens) ask for the same
    compiled sweep, and the padding never reaches the counts: n_kw holds each real token once in
    every sweep, and the padding rows of n_dk stay empty."""
    _, _, train, _, model = semi_synthetic
    asked = []
    compiled = hybrid._compiled_sweep
    monkeypatch.setattr(hybrid, '_compiled_sweep', lambda *a: asked.append(a) or compiled(*a))

    def sweeps_asked_for(corpora, num_sweeps):
        del asked[:]
        for corpus in corpora:
            totals = []
            gibbs_refine(model.get_topics(), model.alpha, corpus, num_sweeps=num_sweeps, burn_in=1,
                         random_state=0, callback=lambda sweep, state: totals.append(
                             (int(state['n_kw'].sum()), int(state['n_dk'][len(corpus):].sum()))))
            assert totals == [(sum(c for d in corpus for _, c in d), 0)] * num_sweeps
        return list(asked)

    first, second = sweeps_asked_for((train[:1030], train[:1060]), 3)
    assert first == second
    # Tiny corpora (3 and 10 documents of 2 to 5 tokens) are padded to at least _MIN_SLICE tokens
    # per slice and _MIN_DOCS documents: one sweep for both.
    tiny = [[[(w, 1) for w, _ in d[:2 + i % 4]] for i, d in enumerate(train[:n])] for n in (3, 10)]
    first, second = sweeps_asked_for(tiny, 2)
    assert first == second
