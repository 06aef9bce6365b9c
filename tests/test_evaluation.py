"""gensim_anchor.evaluation: matching L1 error, held-out probability, coherence (the paper's and
gensim's u_mass), unique words and topic diversity, each against a brute-force reference."""
import itertools

import numpy as np
import pytest
from gensim.corpora import Dictionary
from gensim.models import CoherenceModel, LdaModel
from gensim.test.utils import datapath
from gensim.utils import simple_preprocess

from conftest import random_corpus
from gensim_anchor.evaluation import (PAPER_EPSILON, coherence, document_frequencies,
                                      held_out_log_likelihood, log_likelihood_per_token, top_words,
                                      topic_diversity, topic_recovery_l1, umass_coherence,
                                      unique_words)


class _Topics:
    """The smallest 'gensim topic model': get_topics() and alpha."""

    def __init__(self, topics, alpha=None):
        self.topics, self.alpha = topics, alpha

    def get_topics(self):
        return self.topics


@pytest.fixture(scope='module')
def lee():
    with open(datapath('lee_background.cor'), encoding='utf-8') as f:
        texts = [simple_preprocess(line) for line in f]
    dictionary = Dictionary(texts)
    dictionary.filter_extremes(no_below=2, no_above=0.5)
    corpus = [dictionary.doc2bow(t) for t in texts]
    lda = LdaModel(corpus, num_topics=8, id2word=dictionary, random_state=0, passes=1)
    return corpus, dictionary, lda


def _random_A(rng, V, K):
    return rng.dirichlet(np.full(V, 0.3), size=K).T


# ----------------------------------------------------------------------------------------------
# topic_recovery_l1
# ----------------------------------------------------------------------------------------------

def test_l1_matching_is_the_optimal_permutation():
    rng = np.random.default_rng(0)
    V, K = 30, 5
    A, B = _random_A(rng, V, K), _random_A(rng, V, K)
    result = topic_recovery_l1(A, B)
    brute = min(np.mean([np.abs(A[:, k] - B[:, p[k]]).sum() for k in range(K)])
                for p in itertools.permutations(range(K)))
    np.testing.assert_allclose(result.mean, brute, rtol=1e-12)
    assert sorted(result.matching.tolist()) == list(range(K))
    np.testing.assert_allclose(result.per_topic, np.abs(A - B[:, result.matching]).sum(axis=0), rtol=1e-12)


def test_l1_of_permuted_topics_is_zero_and_finds_the_permutation():
    rng = np.random.default_rng(1)
    A = _random_A(rng, 40, 6)
    perm = rng.permutation(6)
    result = topic_recovery_l1(A, A[:, perm])
    assert result.mean == 0.0
    np.testing.assert_array_equal(perm[result.matching], np.arange(6))


def test_l1_accepts_models_and_more_learned_topics():
    rng = np.random.default_rng(2)
    A = _random_A(rng, 25, 3)
    extra = np.hstack([_random_A(rng, 25, 2), A[:, ::-1]])  # 5 learned topics, 3 of them true
    model = _Topics(extra.T.astype(np.float32))
    result = topic_recovery_l1(A, model)
    assert result.mean < 1e-6 and result.matching.tolist() == [4, 3, 2]


def test_l1_validates_its_input():
    rng = np.random.default_rng(3)
    A = _random_A(rng, 20, 4)
    # K x V topics (get_topics()'s orientation) are read as such where that is unambiguous ...
    assert topic_recovery_l1(A, A.T).mean == 0.0
    assert topic_recovery_l1(A.T, A).mean == 0.0
    # ... and a matrix that is a distribution in neither orientation says what is expected
    with pytest.raises(ValueError, match=r"A_hat must have columns p\(w \| z\) that sum to 1; column \d+ sums "
                                         r"to .*get_topics\(\) are K x V with rows that sum to 1"):
        topic_recovery_l1(A, 2 * A)
    with pytest.raises(ValueError, match="different vocabularies"):
        topic_recovery_l1(A, _random_A(rng, 21, 4))
    with pytest.raises(ValueError, match="fewer than the 4"):
        topic_recovery_l1(A, A[:, :3] / A[:, :3].sum(axis=0))
    with pytest.raises(ValueError, match=">= 0"):
        topic_recovery_l1(A, -A)


# ----------------------------------------------------------------------------------------------
# Held-out probability: a wrapper of the likelihood estimator
# ----------------------------------------------------------------------------------------------

def test_held_out_log_likelihood_delegates_to_the_estimator(lee, monkeypatch):
    # The estimator itself is tested in test_likelihood.py (and run by this function's doctest);
    # here: what the wrapper hands it.
    import gensim_anchor.evaluation as evaluation
    import gensim_anchor.likelihood as likelihood
    assert log_likelihood_per_token is likelihood.log_likelihood_per_token  # re-exported, not copied
    corpus, _, lda = lee
    calls = []
    monkeypatch.setattr(evaluation, 'log_likelihood_per_token',
                        lambda topics, alpha, chunk, **kw: calls.append((topics, alpha, chunk, kw)) or -7.5)
    assert held_out_log_likelihood(lda, corpus[:5], random_state=3, num_samples=10) == -7.5
    topics, alpha, chunk, kw = calls[-1]
    # The float32 topics are handed on as they are; the estimator renormalises them in float64.
    checked = likelihood.prepare_topics(topics)
    assert checked.dtype == np.float64 and np.abs(checked.sum(axis=1) - 1).max() < 1e-14
    np.testing.assert_allclose(topics, lda.get_topics(), rtol=1e-5)
    np.testing.assert_array_equal(alpha, lda.alpha)
    assert chunk == corpus[:5] and kw == dict(random_state=3, num_samples=10)
    # An explicit alpha wins over the model's; an array needs one.
    held_out_log_likelihood(lda.get_topics(), corpus[:5], alpha=0.5)
    np.testing.assert_array_equal(calls[-1][1], np.full(lda.num_topics, 0.5))
    with pytest.raises(ValueError, match="alpha is required"):
        held_out_log_likelihood(lda.get_topics(), corpus[:5])


# ----------------------------------------------------------------------------------------------
# Document frequencies and coherence
# ----------------------------------------------------------------------------------------------

def _doc_sets(corpus):
    return [{int(w) for w, c in doc if c > 0} for doc in corpus]


def test_document_frequencies_brute_force():
    rng = np.random.default_rng(4)
    corpus = random_corpus(rng, 300, 50, max_len=15, short_fraction=0.1)
    corpus.append([(7, 1.0), (7, 2.0), (3, 0.0), (999, 1.0)])  # repeated id, zero count, unknown id
    words = [3, 7, 11, 20, 49, 999]
    freq = document_frequencies(corpus, words, chunksize=37)
    sets = _doc_sets(corpus)
    assert freq.num_docs == len(corpus) and freq.word_ids.tolist() == sorted(words)
    for i, a in enumerate(freq.word_ids):
        assert freq.df[i] == sum(a in s for s in sets)
        for j, b in enumerate(freq.word_ids):
            assert freq.co_df[i, j] == sum(a in s and b in s for s in sets)


@pytest.mark.parametrize('bad, match', [
    ((1.7, 1), r"^document #40 has word id 1\.7; word ids must be integers"),  # was truncated to 1
    ((-2, 1), r"^document #40 has word id -2 outside the dictionary"),
    ((3, float('nan')), r"^document #40 has count nan for word id 3"),
])
def test_document_frequencies_rejects_bad_entries_naming_the_document(bad, match):
    corpus = [[(1, 1), (3, 2)]] * 40 + [[(3, 1), bad]]
    with pytest.raises(ValueError, match=match):
        document_frequencies(corpus, [1, 3], chunksize=16)


def _brute_coherence(topics, corpus, topn, epsilon):
    sets = _doc_sets(corpus)
    out = []
    for row in topics:
        top = list(np.argsort(-row, kind='stable')[:topn])
        total = 0.0
        for i in range(1, topn):
            for j in range(i):
                d_j = sum(top[j] in s for s in sets)
                d_ij = sum(top[i] in s and top[j] in s for s in sets)
                total += np.log((d_ij + epsilon) / d_j) if d_j else 0.0
        out.append(total)
    return np.array(out)


@pytest.mark.parametrize('epsilon', [PAPER_EPSILON, 1.0])
def test_paper_coherence_matches_brute_force(epsilon):
    rng = np.random.default_rng(5)
    V, K, topn = 40, 6, 8
    corpus = random_corpus(rng, 200, V, max_len=10)
    # Distinct values: no ties in the ranking, so the brute force ranks the same way.
    topics = rng.permutation(np.linspace(1, 2, K * V)).reshape(K, V) ** 8
    topics /= topics.sum(axis=1, keepdims=True)
    expected = _brute_coherence(topics, corpus, topn, epsilon)
    np.testing.assert_allclose(coherence(topics, corpus, topn, epsilon=epsilon), expected, rtol=1e-12)
    # Precomputed frequencies give the same values; a model gives the same as its array.
    freq = document_frequencies(corpus, top_words(topics, topn))
    np.testing.assert_allclose(coherence(_Topics(topics), topn=topn, epsilon=epsilon, frequencies=freq),
                               expected, rtol=1e-12)


def test_coherence_pair_with_unseen_word_counts_zero():
    topics = np.array([[0.5, 0.3, 0.2, 0.0]])  # word 0 ranks first and is in no document
    corpus = [[(1, 1), (2, 1)], [(1, 2)]]
    # Pairs (1, 0) and (2, 0) contribute 0; pair (2, 1): log((1 + eps) / 2).
    np.testing.assert_allclose(coherence(topics, corpus, topn=3), [np.log(1.01 / 2)], rtol=1e-12)
    np.testing.assert_allclose(umass_coherence(topics, corpus, topn=3), [np.log((0.5 + 1e-12) / 1.0) / 3],
                               rtol=1e-12)
    with pytest.raises(ValueError, match="reference corpus"):
        coherence(topics, topn=3)
    with pytest.raises(ValueError, match="topn must be <="):
        coherence(topics, corpus, topn=5)


@pytest.mark.parametrize('topn', [5, 20])
def test_umass_equals_gensim_coherence_model(lee, topn):
    corpus, dictionary, lda = lee
    gensim_values = CoherenceModel(model=lda, corpus=corpus, dictionary=dictionary, coherence='u_mass',
                                   topn=topn).get_coherence_per_topic()
    np.testing.assert_allclose(umass_coherence(lda, corpus, topn), gensim_values, rtol=1e-10, atol=1e-12)
    # An array of topics, given to gensim as lists of word ids.
    topics = lda.get_topics()[::-1]
    ids = [list(t) for t in top_words(topics, topn)]
    cm = CoherenceModel(topics=ids, corpus=corpus, dictionary=dictionary, coherence='u_mass', topn=topn)
    np.testing.assert_allclose(umass_coherence(topics, corpus, topn), cm.get_coherence_per_topic(),
                               rtol=1e-10, atol=1e-12)


def test_paper_coherence_is_about_pairs_times_umass(lee):
    corpus, _, lda = lee
    topn = 10
    paper = coherence(lda, corpus, topn)
    umass = umass_coherence(lda, corpus, topn)
    freq = document_frequencies(corpus, top_words(lda, topn))
    pos = freq.index(top_words(lda, topn))
    all_pairs_seen = np.array([np.all(freq.co_df[np.ix_(p, p)] > 0) for p in pos])
    assert all_pairs_seen.any()
    # Where every pair co-occurs the two differ only by the epsilons: log(1 + 0.01 / D(wi, wj)).
    pairs = topn * (topn - 1) / 2
    np.testing.assert_allclose(paper[all_pairs_seen], pairs * umass[all_pairs_seen], rtol=0, atol=pairs * 0.01)
    assert np.all(paper[all_pairs_seen] >= pairs * umass[all_pairs_seen])


# ----------------------------------------------------------------------------------------------
# Unique words and diversity
# ----------------------------------------------------------------------------------------------

def test_unique_words_brute_force():
    rng = np.random.default_rng(6)
    V, K, topn = 30, 7, 6
    topics = rng.permutation(np.linspace(1, 2, K * V)).reshape(K, V) ** 20
    top = [set(np.argsort(-row)[:topn].tolist()) for row in topics]
    expected = [len(top[k] - set().union(*(top[j] for j in range(K) if j != k))) for k in range(K)]
    assert unique_words(topics, topn).tolist() == expected
    assert 0 < sum(expected) < K * topn  # the example has both shared and unique words
    assert topic_diversity(topics, topn) == len(set().union(*top)) / (K * topn)


def test_diversity_extremes():
    same = np.tile(np.linspace(1, 2, 12), (4, 1))
    same /= same.sum(axis=1, keepdims=True)
    assert topic_diversity(same, 3) == pytest.approx(1 / 4)
    assert unique_words(same, 3).tolist() == [0, 0, 0, 0]
    disjoint = np.kron(np.eye(4), np.ones(3)) / 3
    assert topic_diversity(disjoint, 3) == 1.0
    assert unique_words(disjoint, 3).tolist() == [3, 3, 3, 3]
