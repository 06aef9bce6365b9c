"""The document likelihood estimator (left-to-right particle filter with Gibbs rejuvenation).

The reference is exact: on a model small enough to enumerate every topic assignment,

    p(w) = sum_z prod_n beta[z_n, w_n] * Polya(n(z) | alpha),
    Polya(n | alpha) = Gamma(a0) / Gamma(a0 + N) * prod_k Gamma(alpha_k + n_k) / Gamma(alpha_k),

the probability of the token sequence (no multinomial coefficient). For K = 2 the enumeration is
itself checked against a 1-D numerical integral over theta.
"""
import itertools

import numpy as np
import pytest
from scipy import integrate
from scipy.special import betaln, gammaln

from conftest import lda_corpus, record_calls, wide_topics
from gensim_anchor.likelihood import (LikelihoodResult, document_log_likelihood,
                                      log_likelihood_per_token)


def exact_log_likelihood(topics, alpha, doc):
    """log p(w | topics, alpha) of a bag-of-words document by enumerating all K^N assignments."""
    tokens = [int(w) for w, c in doc for _ in range(int(c)) if 0 <= w < topics.shape[1]]
    K, N = len(alpha), len(tokens)
    if N == 0:
        return 0.0
    terms = []
    for z in itertools.product(range(K), repeat=N):
        n = np.bincount(z, minlength=K)
        log_words = np.sum(np.log(topics[list(z), tokens]))
        log_polya = (gammaln(alpha.sum()) - gammaln(alpha.sum() + N)
                     + np.sum(gammaln(alpha + n) - gammaln(alpha)))
        terms.append(log_words + log_polya)
    return float(np.logaddexp.reduce(terms))


def quadrature_log_likelihood(topics, alpha, doc):
    """K = 2 only: log of the integral over theta_0 of prod_n p(w_n | theta) Beta(theta_0)."""
    tokens = np.array([w for w, c in doc for _ in range(int(c))])
    b0, b1 = topics[0, tokens], topics[1, tokens]
    log_norm = gammaln(alpha.sum()) - gammaln(alpha).sum()

    def integrand(t):
        return np.exp(np.sum(np.log(t * b0 + (1 - t) * b1)) + log_norm
                      + (alpha[0] - 1) * np.log(t) + (alpha[1] - 1) * np.log1p(-t))

    value, _ = integrate.quad(integrand, 0.0, 1.0, epsabs=0.0, epsrel=1e-11, limit=200)
    return float(np.log(value))


@pytest.fixture(scope='module')
def tiny():
    """K = 3 topics over V = 5 words and six documents of 1 to 6 tokens."""
    rng = np.random.default_rng(0)
    topics = rng.dirichlet(np.full(5, 0.5), size=3)
    docs = []
    for n in range(1, 7):
        ids, counts = np.unique(rng.integers(0, 5, size=n), return_counts=True)
        docs.append(list(zip(ids.tolist(), counts.tolist())))
    return topics, docs


def test_enumeration_matches_quadrature():
    """The reference itself: enumeration = integral over theta, for K = 2."""
    rng = np.random.default_rng(1)
    topics = rng.dirichlet(np.ones(4), size=2)
    for alpha in (np.array([0.3, 0.7]), np.array([2.0, 5.0])):
        for doc in ([(0, 1)], [(1, 2), (3, 1)], [(0, 1), (1, 1), (2, 2), (3, 1)]):
            assert exact_log_likelihood(topics, alpha, doc) == pytest.approx(
                quadrature_log_likelihood(topics, alpha, doc), abs=1e-9)


@pytest.mark.parametrize('alpha', [[0.1, 0.05, 0.2], [1.0, 0.5, 2.0], [5.0, 5.0, 5.0]])
def test_agrees_with_exact_enumeration(tiny, alpha):
    topics, docs = tiny
    alpha = np.array(alpha)
    exact = np.array([exact_log_likelihood(topics, alpha, d) for d in docs])
    result = document_log_likelihood(topics, alpha, docs, num_samples=100_000, random_state=0)
    np.testing.assert_array_equal(result.num_tokens, np.arange(1, 7))
    np.testing.assert_allclose(result.log_p, exact, rtol=0, atol=0.01)


def test_exact_for_a_single_token_and_for_separated_topics():
    """One token: p(w) = sum_k alpha_k / alpha_0 * beta_kw for every particle, so no noise."""
    topics = np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5]])
    alpha = np.array([0.3, 0.9])
    # (5 particles, as test_seeded_and_converging's few: one compiled filter for both)
    result = document_log_likelihood(topics, alpha, [[(1, 1)], [(2, 1)], [(0, 1), (3, 1)]],
                                     num_samples=5, random_state=0)
    # Two tokens of different topics: p = E[theta_0 theta_1] * 1/4 = a0 a1 / (A (A + 1)) / 4.
    expected = np.log([0.25 * 0.5, 0.75 * 0.5, 0.3 * 0.9 / (1.2 * 2.2) / 4])
    np.testing.assert_allclose(result.log_p, expected, rtol=1e-9)


def test_seeded_and_converging(tiny):
    topics, docs = tiny
    alpha = np.array([0.1, 0.05, 0.2])
    exact = np.array([exact_log_likelihood(topics, alpha, d) for d in docs])

    def run(seed, samples):
        return document_log_likelihood(topics, alpha, docs, num_samples=samples,
                                       random_state=seed).log_p

    np.testing.assert_array_equal(run(3, 5), run(3, 5))
    np.testing.assert_array_equal(run(np.random.RandomState(3), 5), run(3, 5))
    a, b = run(3, 5), run(4, 5)
    assert np.any(a != b)
    assert np.max(np.abs(a - b)) < 1.0
    error = {samples: np.mean([np.abs(run(seed, samples) - exact).mean() for seed in range(4)])
             for samples in (5, 2000)}
    assert error[2000] < error[5] / 5
    assert error[2000] < 0.01


def test_unknown_and_empty_documents(tiny):
    topics, docs = tiny
    alpha = np.array([1.0, 0.5, 2.0])
    doc = docs[3]
    chunk = [[], [(99, 2), (-1, 1)], doc + [(5, 4)], [(0, 0.0)]]
    result = document_log_likelihood(topics, alpha, chunk, random_state=0)
    assert isinstance(result, LikelihoodResult)
    np.testing.assert_array_equal(result.num_tokens, [0, 0, 4, 0])
    np.testing.assert_array_equal(result.num_unknown, [0, 3, 4, 0])
    assert result.log_p[0] == 0.0 and result.log_p[1] == 0.0 and result.log_p[3] == 0.0
    # The unknown word is ignored: the same document (at the same position) scores the same.
    plain = document_log_likelihood(topics, alpha, [[], [], doc], random_state=0)
    assert result.log_p[2] == plain.log_p[2]
    assert abs(result.log_p[2] - exact_log_likelihood(topics, alpha, doc)) < 0.1
    empty = document_log_likelihood(topics, alpha, [], random_state=0)
    assert empty.log_p.shape == empty.num_tokens.shape == (0,)


def test_parsed_documents_are_each_documents_known_pairs_flat():
    # Against a loop over the documents: the kept pairs (known ids, counts > 0) one document
    # after another, with per-document pair counts, tokens and unknown tokens.
    from gensim_anchor.likelihood import parse_documents
    rng = np.random.default_rng(0)
    V = 7
    chunk = [[(int(w), int(c)) for w, c in zip(rng.integers(-2, V + 2, n), rng.integers(0, 4, n))]
             for n in rng.integers(0, 6, 40)]
    docs, num_tokens, num_unknown = parse_documents(chunk, V)
    kept = [[(w, c) for w, c in doc if 0 <= w < V and c > 0] for doc in chunk]
    assert len(docs) == len(chunk)
    np.testing.assert_array_equal(docs.sizes, [len(k) for k in kept])
    np.testing.assert_array_equal(docs.ids, [w for k in kept for w, _ in k])
    np.testing.assert_array_equal(docs.counts, [c for k in kept for _, c in k])
    np.testing.assert_array_equal(docs.lengths, [sum(c for _, c in k) for k in kept])
    np.testing.assert_array_equal(num_tokens, docs.lengths)
    np.testing.assert_array_equal(num_unknown, [sum(c for w, c in doc if not 0 <= w < V) for doc in chunk])
    empty, tokens, unknown = parse_documents([], V)
    assert len(empty) == 0 and empty.lengths.shape == tokens.shape == unknown.shape == (0,)


def test_input_validation(tiny):
    topics, docs = tiny
    alpha = np.ones(3)
    with pytest.raises(ValueError, match="whole, non-negative word counts"):
        document_log_likelihood(topics, alpha, [[(0, 1.5)]])
    with pytest.raises(ValueError, match="document #1 has count nan"):
        document_log_likelihood(topics, alpha, [[(0, 1)], [(0, float('nan'))]])
    with pytest.raises(TypeError, match="not a bag-of-words list"):
        document_log_likelihood(topics, alpha, [["a", "b"]])
    with pytest.raises(ValueError, match="row 1 sums to"):
        document_log_likelihood(topics * np.array([[1.0], [1.1], [1.0]]), alpha, docs)
    with pytest.raises(ValueError, match=r"alpha must have shape \(3,\)"):
        document_log_likelihood(topics, np.ones(2), docs)
    with pytest.raises(ValueError, match="alpha must be finite, >= 0"):
        document_log_likelihood(topics, np.array([1.0, -1.0, 1.0]), docs)
    with pytest.raises(ValueError, match="num_samples must be >= 1"):
        document_log_likelihood(topics, alpha, docs, num_samples=0)
    with pytest.raises(ValueError, match="no tokens"):
        log_likelihood_per_token(topics, alpha, [[], [(7, 1)]])


def test_per_token_is_sum_over_tokens_whatever_the_chunking(tiny):
    topics, _ = tiny
    alpha = np.array([0.5, 0.5, 0.5])
    rng = np.random.default_rng(2)
    corpus = [[(int(w), int(c)) for w, c in zip(*np.unique(rng.integers(0, 5, size=n),
                                                           return_counts=True))]
              for n in rng.integers(1, 9, size=24)]
    result = document_log_likelihood(topics, alpha, corpus, random_state=5)
    expected = result.log_p.sum() / result.num_tokens.sum()
    for chunksize in (1000, 8):
        value = log_likelihood_per_token(topics, alpha, iter(corpus), chunksize=chunksize,
                                         random_state=5)
        assert value == pytest.approx(expected, rel=1e-12)


def test_errors_name_the_document_across_chunks(tiny):
    topics, docs = tiny
    corpus = docs * 5 + [[(0, 1.5)]]  # document #30, in the fourth chunk of 8
    with pytest.raises(ValueError, match=r"document #30 has non-integer count 1\.5"):
        log_likelihood_per_token(topics, np.full(3, 0.5), corpus, chunksize=8)


def two_word_log_likelihood(topics, alpha, n0, n1):
    """K = 2, V = 2, a document of n0 tokens of word 0 and n1 of word 1, any length: expand
    (t b_00 + (1 - t) b_10)^n0 (t b_01 + (1 - t) b_11)^n1 binomially (all terms positive) and
    integrate each term against Beta(alpha) in closed form."""
    j, i = np.arange(n0 + 1)[:, None], np.arange(n1 + 1)[None, :]
    b = np.log(topics)
    terms = (gammaln(n0 + 1) - gammaln(j + 1) - gammaln(n0 - j + 1) + j * b[0, 0] + (n0 - j) * b[1, 0]
             + gammaln(n1 + 1) - gammaln(i + 1) - gammaln(n1 - i + 1) + i * b[0, 1] + (n1 - i) * b[1, 1]
             + betaln(alpha[0] + j + i, alpha[1] + n0 + n1 - j - i) - betaln(*alpha))
    return float(np.logaddexp.reduce(terms.ravel()))


def test_a_long_document_against_the_closed_form():
    topics, alpha = np.array([[0.7, 0.3], [0.2, 0.8]]), np.array([0.3, 0.6])
    assert two_word_log_likelihood(topics, alpha, 3, 2) == pytest.approx(
        exact_log_likelihood(topics, alpha, [(0, 3), (1, 2)]), abs=1e-10)
    exact = two_word_log_likelihood(topics, alpha, 1200, 800)
    estimate = document_log_likelihood(topics, alpha, [[(0, 1200), (1, 800)]], random_state=0).log_p[0]
    # Biased low (the log of an unbiased estimate), by a few nats over 2,000 tokens.
    assert -0.02 < (estimate - exact) / 2000 < 0.001


def test_a_document_scores_the_same_alone_and_in_a_batch():
    # The particles' assignments are copied only on the steps where a particle of the batch
    # resamples: a document alone is copied less often than in a batch, with the same estimate
    # to the bit (a copy skipped when one was due would change it).
    rng = np.random.default_rng(4)
    K, V = 3, 30
    topics = rng.dirichlet(np.full(V, 0.3), size=K)
    alpha = np.array([0.2, 0.5, 0.1])
    corpus = [[(int(w), int(c)) for w, c in zip(*np.unique(rng.integers(0, V, size=n),
                                                           return_counts=True))]
              for n in (3, 200, 17, 250, 8, 150, 2, 60)]
    batched = document_log_likelihood(topics, alpha, corpus, random_state=1).log_p
    # Documents of one padded length (256) as the batch's: one compiled program for the test,
    # test_dropin's log_perplexity's.
    for index in (1, 3, 5):  # empty documents before it keep its index, hence its random numbers
        alone = document_log_likelihood(topics, alpha, [[]] * index + [corpus[index]],
                                        random_state=1).log_p[index]
        assert alone == batched[index]


def test_true_topics_score_higher_than_scrambled():
    """Held-out documents from LDA: the generating topics beat a scrambled copy of them."""
    rng = np.random.default_rng(3)
    K, V = 4, 40
    A = rng.dirichlet(np.full(V, 0.2), size=K).T                    # (V, K)
    alpha = np.full(K, 0.5)
    # Documents of 12 tokens (padded to 16), as test_hybrid's held-out set: one compiled filter.
    heldout = lda_corpus(rng, A, alpha, num_docs=200, doc_length=12)
    scrambled = A[rng.permutation(V)]
    true_ll = log_likelihood_per_token(A.T, alpha, heldout, random_state=0)
    scrambled_ll = log_likelihood_per_token(scrambled.T, alpha, heldout, random_state=0)
    assert true_ll > scrambled_ll + 0.1
    # And a per-token likelihood is a (negative) log probability: no better than the entropy
    # bound of the true word distribution would allow, no worse than uniform over V by far.
    assert -np.log(V) - 1.0 < true_ll < 0.0


def test_the_estimator_is_sent_only_the_columns_of_the_documents_words(monkeypatch):
    """The particle filter was sent all of (K, V), so its compiled program depended on V and a
    call on a few documents converted the whole matrix. It is sent the documents' columns (their
    number padded to a power of two, at least _MIN_COLUMNS), one document in a full batch (one
    program whatever the number of documents), and the estimates are those of the whole matrix:
    one token is exact (p(w) = sum_k alpha_k / alpha_0 beta_kw), and three against the
    enumeration."""
    import gensim_anchor.likelihood as likelihood
    rng, topics, alpha = wide_topics(2, num_terms=20_000)
    K, V = topics.shape
    shapes = record_calls(monkeypatch, likelihood, '_filter_batch',
                          lambda beta, shape, scales, ids, *_: beta.shape + ids.shape[:1])
    docs = [[(4321, 1)], [(17, 1), (4999, 2)]] + [[(int(w), 1) for w in rng.choice(V, 16, replace=False)]]
    result = document_log_likelihood(topics, alpha, docs, num_samples=100_000, random_state=0)
    distinct = len({w for d in docs for w, _ in d})
    # (100,000 particles and at most 16 tokens, as test_agrees_with_exact_enumeration: one program
    # for both; the batch is the memory cap's, 4 documents)
    columns = max(likelihood._MIN_COLUMNS, 1 << (distinct - 1).bit_length())
    assert {shape[:2] for shape in shapes} == {(likelihood._MIN_TOPICS, columns)}  # K=2, padded
    assert likelihood._MIN_COLUMNS < V
    assert result.log_p[0] == pytest.approx(np.log(alpha @ topics[:, 4321] / alpha.sum()), rel=1e-12)
    assert result.log_p[1] == pytest.approx(exact_log_likelihood(topics, alpha, docs[1]), abs=0.01)
    assert np.isfinite(result.log_p[2])
    shapes.clear()
    document_log_likelihood(topics, alpha, docs[:1], num_samples=5, random_state=0)
    assert shapes == [(likelihood._MIN_TOPICS, likelihood._MIN_COLUMNS, likelihood._MAX_BATCH)]


def test_one_program_for_any_number_of_concentrations_and_any_small_k(monkeypatch):
    """The filter's rows are documents at one alpha_0 each, and fewer than _MIN_TOPICS topics are
    padded with empty ones: the alpha grid's calls (a third of the grid, then the best point's
    neighbours) and models of 3 and 6 topics share one program (calls of at most _MAX_BATCH
    rows here). Each document at each alpha_0 gets the estimate it gets alone, to the bit: the
    rows are put back where they belong, and the padding topics are never drawn and weigh
    nothing (test_agrees_with_exact_enumeration checks K=3 against the enumeration through the
    same padding)."""
    import gensim_anchor.likelihood as likelihood
    rng = np.random.default_rng(11)
    shapes = record_calls(monkeypatch, likelihood, '_filter_batch',
                          lambda beta, shape, scales, ids, *_: beta.shape + ids.shape)
    for K, G in ((3, 5), (6, 2)):
        V = 40
        beta = likelihood.prepare_topics(rng.dirichlet(np.full(V, 0.2), size=K))
        shape = rng.dirichlet(np.ones(K))
        corpus = lda_corpus(rng, beta.T, np.full(K, 0.3), num_docs=12, doc_length=12)
        docs, _, _ = likelihood.parse_documents(corpus, V)
        scales = np.geomspace(0.3, 30, G)
        together = likelihood.estimate(beta, shape, scales, docs, 5, 0, 10, 2)
        assert together.shape == (G, len(docs))
        for g in range(G):
            alone = likelihood.estimate(beta, shape, scales[g:g + 1], docs, 5, 0, 10, 2)[0]
            np.testing.assert_array_equal(together[g], alone)
        assert len(set(together[0])) == len(docs)  # documents differ: no row was copied over
    assert len(shapes) == (1 + 5) + (1 + 2) and len(set(shapes)) == 1, shapes
