"""Document-topic inference against a slow numpy reference and against gensim's LdaModel."""
import numpy as np
import pytest
from gensim.corpora import Dictionary
from gensim.models import LdaModel
from scipy.special import psi

from conftest import record_calls, wide_topics
from gensim_anchor.inference import TOPIC_FLOOR, infer, pad_documents


def reference_gamma(topics, alpha, doc, max_iter, tol):
    """The fixed point iteration written per document, with the same start and stopping rule."""
    beta = np.maximum(topics, TOPIC_FLOOR)
    doc = [(w, c) for w, c in doc if 0 <= w < topics.shape[1] and c > 0]
    if not doc:
        return alpha.copy(), 0
    ids = np.array([w for w, _ in doc])
    cts = np.array([c for _, c in doc], dtype=float)
    beta_d = beta[:, ids]
    gamma = alpha + cts.sum() / len(alpha)
    for it in range(1, max_iter + 1):
        e = np.exp(psi(gamma) - psi(gamma.sum()))
        new = alpha + e * (beta_d @ (cts / (e @ beta_d)))
        change = np.mean(np.abs(new - gamma))
        gamma = new
        if change < tol:
            return gamma, it
    return gamma, max_iter


@pytest.fixture(scope='module')
def model():
    rng = np.random.default_rng(0)
    K, V = 4, 30
    topics = rng.dirichlet(np.full(V, 0.2), size=K)
    alpha = rng.uniform(0.05, 1.0, size=K)
    docs = []
    for _ in range(25):
        n = rng.integers(1, 40)
        words = rng.choice(V, size=n, p=topics[rng.integers(K)])
        ids, counts = np.unique(words, return_counts=True)
        docs.append([(int(i), int(c)) for i, c in zip(ids, counts)])
    return topics, alpha, docs


def test_matches_per_document_reference(model):
    topics, alpha, docs = model
    result = infer(topics, alpha, docs, max_iter=200, tol=1e-9)
    for d, doc in enumerate(docs):
        gamma, it = reference_gamma(topics, alpha, doc, 200, 1e-9)
        np.testing.assert_allclose(result.gamma[d], gamma, rtol=1e-9, atol=1e-12)
        assert result.n_iter[d] == it


def test_reaches_gensims_fixed_point(model):
    """gensim's LdaModel.inference with the same topics and alpha converges to the same gamma
    (from its random start), so the two E-steps agree."""
    topics, alpha, docs = model
    lda = LdaModel(num_topics=topics.shape[0], id2word={i: str(i) for i in range(topics.shape[1])},
                   alpha=alpha, iterations=5000, gamma_threshold=1e-12, dtype=np.float64,
                   random_state=0)
    lda.expElogbeta = np.maximum(topics, TOPIC_FLOOR)
    gensim_gamma, _ = lda.inference(docs)
    ours = infer(topics, alpha, docs, max_iter=5000, tol=1e-12).gamma
    np.testing.assert_allclose(ours, gensim_gamma, rtol=1e-5, atol=1e-6)


def test_sufficient_statistics_count_the_tokens(model):
    topics, alpha, docs = model
    result = infer(topics, alpha, docs, collect_sstats=True)
    assert result.sstats.shape == topics.shape
    assert (result.sstats >= 0).all()
    np.testing.assert_allclose(result.sstats.sum(), sum(c for doc in docs for _, c in doc))
    # the statistics of one document are its word counts split over topics
    one = infer(topics, alpha, docs[:1], collect_sstats=True).sstats
    counts = np.zeros(topics.shape[1])
    for w, c in docs[0]:
        counts[w] += c
    np.testing.assert_allclose(one.sum(axis=0), counts, atol=1e-9)


def test_per_word_phi_matches_statistics(model):
    topics, alpha, docs = model
    result = infer(topics, alpha, docs[:5], collect_sstats=True, return_phi=True)
    plain = infer(topics, alpha, docs[:5], collect_sstats=True)
    np.testing.assert_allclose(result.sstats, plain.sstats, atol=1e-12)
    for d, doc in enumerate(docs[:5]):
        assert [w for w, _ in result.phi_ids[d]] == [w for w, _ in doc]
        np.testing.assert_allclose(result.phi[d].sum(axis=0), [c for _, c in doc])


def test_empty_and_unknown_documents_get_the_prior(model):
    topics, alpha, docs = model
    V = topics.shape[1]
    result = infer(topics, alpha, [[], [(V, 3), (V + 7, 1)], [(-1, 2)], docs[0]])
    for d in range(3):
        np.testing.assert_array_equal(result.gamma[d], alpha)
        assert result.n_iter[d] <= 1
    assert (result.gamma > 0).all() and np.isfinite(result.gamma).all()


def test_zero_topic_probabilities_never_give_nan():
    topics = np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
    gamma = infer(topics, np.array([0.1, 0.1]), [[(0, 2), (2, 1)], [(1, 5)]]).gamma
    assert np.isfinite(gamma).all() and (gamma > 0).all()
    theta = gamma / gamma.sum(axis=1, keepdims=True)
    assert theta[1, 0] > 0.95  # word 1 only occurs in topic 0


def test_a_call_sends_only_the_columns_of_its_words_and_no_padding_documents(monkeypatch):
    """model[bow] converted and sent all of (K, V) and ran _MIN_PAD documents for one: 37 ms per
    call at V = 50,000, K = 100 (benchmarks/results/bench_inference.log). The topics sent are
    the chunk's columns (their number padded to a power of two, at least _MIN_COLUMNS), a lone
    document runs alone, and the answers are those of the full matrix (reference_gamma reads all
    of it)."""
    import gensim_anchor.inference as inference
    rng, topics, alpha = wide_topics(4)
    K, V = topics.shape
    calls = record_calls(monkeypatch, inference, '_infer_chunk',
                         lambda beta, alpha_, ids, *_: (beta.shape, ids.shape))
    doc = [(4321, 2), (17, 1), (2500, 3)]
    gamma = infer(topics, alpha, [doc]).gamma[0]
    assert calls == [((K, inference._MIN_COLUMNS), (1, 8))] and inference._MIN_COLUMNS < V
    np.testing.assert_allclose(gamma, reference_gamma(topics, alpha, doc, 50, 1e-3)[0], rtol=1e-10)
    calls.clear()
    docs = [[(int(w), 1) for w in rng.choice(V, 12, replace=False)] for _ in range(3)]
    result = infer(topics, alpha, docs, collect_sstats=True)
    distinct = len({w for d in docs for w, _ in d})
    assert calls == [((K, max(inference._MIN_COLUMNS, 1 << (distinct - 1).bit_length())), (8, 16))]
    for d, doc_ in enumerate(docs):
        np.testing.assert_allclose(result.gamma[d], reference_gamma(topics, alpha, doc_, 50, 1e-3)[0],
                                   rtol=1e-10)
    # The statistics land in the words' own columns of the (K, V) matrix.
    assert result.sstats.shape == (K, V)
    np.testing.assert_allclose(result.sstats.sum(axis=0)[[w for d in docs for w, _ in d]], 1.0)
    assert result.sstats.sum() == pytest.approx(36.0)


def test_a_chunk_runs_in_calls_of_little_padding(monkeypatch):
    """A call's rows all cost as much as its longest and slowest document: 270 documents of 40
    words ran as 512 rows of 64 positions. Now a group of at least _MANY_DOCS documents runs at
    three quarters of a power of two where they fit it, and in two calls (the largest power of
    two below and the rest) when one would be more than a quarter padding; a small group as
    before (one program fewer to compile); the same gammas as the per-document reference."""
    import gensim_anchor.inference as inference
    rng = np.random.default_rng(3)
    K, V = 3, 400
    topics = rng.dirichlet(np.full(V, 0.3), size=K)
    alpha = np.full(K, 0.2)
    docs = [[(int(w), 1) for w in rng.choice(V, n, replace=False)] for n in [40] * 270 + [20] * 10]
    calls = record_calls(monkeypatch, inference, '_infer_chunk', lambda beta, alpha_, ids, *_: ids.shape)
    gamma = infer(topics, alpha, docs).gamma
    assert sorted(calls) == [(16, 32), (16, 48), (256, 48)]
    for d in rng.choice(len(docs), 8, replace=False).tolist() + [279]:
        np.testing.assert_allclose(gamma[d], reference_gamma(topics, alpha, docs[d], 50, 1e-3)[0],
                                   rtol=1e-10)


def test_a_lone_document_runs_as_the_grouping_would_run_it(monkeypatch):
    """model[bow] skips the grouping's numpy work (_calls' shortcut for one document): the call
    it makes has the width the grouping gives that document in a chunk (here, with a copy of
    it), whatever its length (unknown ids count, as in the grouping), and the gamma is the
    reference's."""
    import gensim_anchor.inference as inference
    rng = np.random.default_rng(4)
    K, V = 3, 400
    topics = rng.dirichlet(np.full(V, 0.3), size=K)
    alpha = np.full(K, 0.2)
    calls = record_calls(monkeypatch, inference, '_infer_chunk', lambda beta, alpha_, ids, *_: ids.shape)
    for n in (0, 1, 7, 8, 9, 40, 130):
        doc = [(int(w), 1) for w in rng.choice(V, n, replace=False)] + [(V + 5, 2)] * (n == 8)
        calls.clear()
        gamma = infer(topics, alpha, [doc]).gamma
        ((grouped_width, _, _),) = inference._calls(np.array([len(doc)] * 2))
        assert calls == [(1, grouped_width)] == [(1, max(8, 1 << (len(doc) - 1).bit_length()))], n
        known = [(w, c) for w, c in doc if w < V]
        np.testing.assert_allclose(gamma[0], reference_gamma(topics, alpha, known, 50, 1e-3)[0],
                                   rtol=1e-10)


def test_power_of_two_of_an_array_is_the_scalar_rule_elementwise():
    # _calls pads every document's length by the array form: the same rule as model[bow]'s scalar.
    from gensim_anchor._compile_cache import power_of_two
    n = np.concatenate([np.arange(0, 5000), [2 ** 31 - 1, 2 ** 31, 2 ** 31 + 1, 2 ** 52, 2 ** 52 + 1]])
    for minimum in (1, 8):
        got = power_of_two(n, minimum)
        assert got.dtype == np.int64
        assert got.tolist() == [power_of_two(int(v), minimum) for v in n]


def test_pieces_split_only_large_groups_into_two_powers_of_two_with_little_padding():
    from gensim_anchor._compile_cache import power_of_two
    from gensim_anchor.inference import _MANY_DOCS, _MIN_PAD, _pieces
    assert _pieces(1) == [1]  # model[bow]: a lone document runs alone
    for n in range(2, _MANY_DOCS):  # small groups: one program, as before
        assert _pieces(n) == [power_of_two(n, _MIN_PAD)], n
    for n in list(range(_MANY_DOCS, 3 * _MANY_DOCS)) + [1000, 2000, 4097, 6500]:
        sizes = _pieces(n)
        assert len(sizes) <= 2 and sum(sizes[:-1]) < n <= sum(sizes), n  # the last one padded
        assert all(s & (s - 1) == 0 for s in sizes) and sizes == sorted(sizes, reverse=True), n
        padding = sum(sizes) - n
        assert padding <= (sizes[0] // 4 if len(sizes) == 1 else n // 5), n


def test_padded_positions_fill_any_subset_of_documents_as_a_loop_would():
    """The one fancy index that fills inference's and the likelihood estimator's padded blocks
    (_bow.padded_positions), against a loop over the documents: any members, in any order,
    empty documents included."""
    from gensim_anchor._bow import padded_positions
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 6, size=30)
    flat = rng.integers(1, 100, size=lengths.sum())
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    for members in (np.arange(30), rng.permutation(30)[:11], np.array([4]), np.array([], int)):
        width = max(int(lengths.max()), 1)
        block = np.zeros((len(members), width), int)
        row, position, source = padded_positions(lengths, members)
        block[row, position] = flat[source]
        expected = np.zeros_like(block)
        for r, d in enumerate(members):
            expected[r, :lengths[d]] = flat[starts[d]:starts[d] + lengths[d]]
        np.testing.assert_array_equal(block, expected)


def test_alpha_that_is_not_a_prior_is_refused(model):
    topics, alpha, docs = model
    with pytest.raises(ValueError, match=r"alpha must have shape \(4,\) \(one value per topic\), got "
                                         r"shape \(3,\)"):
        infer(topics, alpha[:3], docs[:2])
    for bad in (np.zeros(4), np.array([0.1, -0.1, 0.1, 0.1]), np.array([0.1, np.inf, 0.1, 0.1])):
        # alpha = 0 gave NaN gammas (digamma(0) = -inf)
        with pytest.raises(ValueError, match=r"alpha must be finite and > 0"):
            infer(topics, bad, docs[:2])
    with pytest.raises(ValueError, match=r"topics must be a 2-D array"):
        infer(topics[0], alpha, docs[:2])


def test_deterministic_and_independent_of_batch(model):
    topics, alpha, docs = model
    together = infer(topics, alpha, docs).gamma
    again = infer(topics, alpha, docs).gamma
    np.testing.assert_array_equal(together, again)
    alone = np.vstack([infer(topics, alpha, [doc]).gamma for doc in docs])
    np.testing.assert_allclose(alone, together, rtol=1e-12, atol=1e-12)


def test_iteration_cap(model):
    topics, alpha, docs = model
    result = infer(topics, alpha, docs, max_iter=2, tol=0.0)
    assert (result.n_iter[[i for i, d in enumerate(docs) if d]] == 2).all()


def test_padding_is_a_power_of_two_and_drops_unknown_ids():
    ids, counts, kept = pad_documents([[(0, 1), (9, 2), (3, 1)], [(1, 4)] * 1], num_terms=5)
    assert ids.shape == (2, 8) and counts.shape == (2, 8)
    assert kept[0].tolist() == [[0, 1], [3, 1]]
    assert counts[0].sum() == 2 and counts[1].sum() == 4
    ids, _, _ = pad_documents([[(i, 1) for i in range(9)]], num_terms=20)
    assert ids.shape == (1, 16)


def test_dictionary_corpus_round_trip():
    """Inference on a gensim corpus built with doc2bow (ids are ints, counts ints)."""
    texts = [['a', 'b', 'a'], ['c', 'd'], ['a', 'c']]
    dictionary = Dictionary(texts)
    corpus = [dictionary.doc2bow(t) for t in texts]
    topics = np.full((2, len(dictionary)), 1.0 / len(dictionary))
    result = infer(topics, np.array([0.5, 0.5]), corpus)
    np.testing.assert_allclose(result.gamma, 0.5 + np.array([[1.5, 1.5], [1.0, 1.0], [1.0, 1.0]]))
