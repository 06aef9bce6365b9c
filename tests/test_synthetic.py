"""gensim_anchor.synthetic: the paper's semi-synthetic corpora (section 5), the separability and
correlation experiments, and the infinite-data co-occurrence."""
import numpy as np
import pytest
from gensim.corpora import Dictionary
from gensim.models import LdaModel
from gensim.test.utils import common_texts

from gensim_anchor import AnchorModel
from gensim_anchor.anchors import find_anchors, project_rows
from gensim_anchor.evaluation import topic_recovery_l1
from gensim_anchor.recovery import recover
from gensim_anchor.synthetic import (BowCorpus, add_anchor_words, block_covariance,
                                     dirichlet_second_moment, infinite_data_cooccurrence,
                                     logistic_normal_second_moment, random_topics,
                                     semi_synthetic_corpus, topic_proportions)


@pytest.fixture(scope='module')
def topics():
    return random_topics(120, 5, beta=0.3, random_state=0)


def _counts(corpus):
    return corpus.to_csr().toarray()


# ----------------------------------------------------------------------------------------------
# The corpus
# ----------------------------------------------------------------------------------------------

def test_corpus_shapes_lengths_and_dictionary(topics):
    synth = semi_synthetic_corpus(topics, 400, 70, random_state=1)
    V, K = 120, 5
    assert synth.A.shape == (V, K) and len(synth.dictionary) == V and len(synth.corpus) == 400
    np.testing.assert_allclose(synth.A, topics.T, rtol=1e-12)
    np.testing.assert_allclose(synth.alpha, np.full(K, 0.03))
    assert synth.alpha.sum() == pytest.approx(0.03 * K)
    assert synth.covariance is None and synth.anchors is None
    docs = list(synth.corpus)
    assert all(sum(c for _, c in doc) == 70 for doc in docs)
    for doc in docs[:50]:
        ids = [w for w, _ in doc]
        assert ids == sorted(set(ids)) and all(isinstance(w, int) and 0 <= w < V for w in ids)
        assert all(isinstance(c, int) and c >= 1 for _, c in doc)
    assert synth.corpus[3] == docs[3] and synth.corpus[-1] == docs[-1]
    # The dictionary's statistics are this corpus's.
    counts = _counts(synth.corpus)
    assert synth.dictionary.num_docs == 400 and synth.dictionary.num_pos == 400 * 70
    assert synth.dictionary.num_nnz == int((counts > 0).sum())
    assert all(synth.dictionary.dfs.get(w, 0) == int((counts[:, w] > 0).sum()) for w in range(V))
    assert synth.dictionary.doc2bow([synth.dictionary[7]]) == [(7, 1)]


def test_same_seed_same_corpus(topics):
    first = semi_synthetic_corpus(topics, 50, 20, random_state=5)
    again = semi_synthetic_corpus(topics, 50, 20, random_state=np.random.default_rng(5))
    other = semi_synthetic_corpus(topics, 50, 20, random_state=6)
    assert list(first.corpus) == list(again.corpus)
    assert list(first.corpus) != list(other.corpus)


def test_word_frequencies_follow_the_model(topics):
    # E[word frequency] = A E[W] = A alpha / alpha_0, for any alpha.
    alpha = np.array([0.5, 0.1, 0.1, 0.2, 0.1])
    synth = semi_synthetic_corpus(topics, 4000, 50, alpha=alpha, random_state=2)
    freq = _counts(synth.corpus).sum(axis=0) / (4000 * 50)
    expected = synth.A @ (alpha / alpha.sum())
    assert np.abs(freq - expected).sum() < 0.06
    # Documents from a small alpha are nearly single-topic: far from the average distribution.
    per_doc = _counts(synth.corpus)[:200] / 50
    assert np.abs(per_doc - expected).sum(axis=1).mean() > 0.8


def test_model_input_names_the_words():
    dictionary = Dictionary(common_texts)
    corpus = [dictionary.doc2bow(t) for t in common_texts]
    lda = LdaModel(corpus, num_topics=2, id2word=dictionary, random_state=0)
    synth = semi_synthetic_corpus(lda, 30, 10, add_anchors=True, random_state=0)
    V = len(dictionary)
    assert [synth.dictionary[i] for i in range(V)] == [dictionary[i] for i in range(V)]
    assert len(synth.dictionary) == V + 2 and synth.anchors.tolist() == [V, V + 1]
    assert len({synth.dictionary[i] for i in range(V + 2)}) == V + 2
    anchor_p = synth.A[synth.anchors, [0, 1]]  # m / (1 + m), m the topic's largest probability
    np.testing.assert_allclose(synth.A[:V] / (1 - anchor_p), lda.get_topics().T, rtol=1e-5)


def test_bow_corpus_to_csr_round_trip():
    rng = np.random.default_rng(3)
    dense = rng.integers(0, 3, size=(6, 9)) * (rng.random((6, 9)) < 0.4)
    rows, cols = np.nonzero(dense)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=6))])
    corpus = BowCorpus(indptr, cols, dense[rows, cols], 9)
    np.testing.assert_array_equal(corpus.to_csr().toarray(), dense)
    assert len(corpus) == 6 and [len(d) for d in corpus] == (dense > 0).sum(axis=1).tolist()
    with pytest.raises(IndexError):
        corpus[6]
    head = corpus[1:4]
    assert isinstance(head, BowCorpus) and list(head) == list(corpus)[1:4]
    np.testing.assert_array_equal(head.to_csr().toarray(), dense[1:4])
    assert len(corpus[5:2]) == 0 and list(corpus[-2:]) == list(corpus)[-2:]


def test_input_validation(topics):
    with pytest.raises(ValueError, match="alpha must be > 0"):
        semi_synthetic_corpus(topics, 10, 10, alpha=0.0)
    with pytest.raises(ValueError, match="rho must be a number in"):
        semi_synthetic_corpus(topics, 10, 10, rho=1.5)
    with pytest.raises(ValueError, match="doc_length must be >= 1"):
        semi_synthetic_corpus(topics, 10, 0)
    with pytest.raises(ValueError, match="shape"):
        semi_synthetic_corpus(topics[0], 10, 10)
    with pytest.raises(ValueError, match="exactly one of"):
        topic_proportions(3)


# ----------------------------------------------------------------------------------------------
# Separability: synthetic anchor words
# ----------------------------------------------------------------------------------------------

def test_add_anchor_words(topics):
    A = topics.T
    augmented, anchors = add_anchor_words(A)
    V, K = A.shape
    assert augmented.shape == (V + K, K) and anchors.tolist() == list(range(V, V + K))
    np.testing.assert_allclose(augmented.sum(axis=0), 1.0, rtol=1e-12)
    block = augmented[anchors]
    np.testing.assert_array_equal(block != 0, np.eye(K, dtype=bool))  # mass only in its own topic
    # Before renormalising, the anchor had the topic's largest probability; the rest is A rescaled.
    scale = 1.0 + A.max(axis=0)
    np.testing.assert_allclose(np.diag(block) * scale, A.max(axis=0), rtol=1e-12)
    np.testing.assert_allclose(augmented[:V] * scale, A, rtol=1e-12)
    assert np.all(np.diag(block) >= augmented[:V].max(axis=0) * (1 - 1e-12))


def test_topics_in_gensim_orientation_are_read_as_columns(topics):
    # random_topics (and get_topics) give K x V rows; A is V x K. Read as given, the K x V array
    # was 5 words in 120 "topics": a corpus of the wrong shape, without an error.
    augmented, anchors = add_anchor_words(topics)
    np.testing.assert_array_equal(augmented, add_anchor_words(topics.T)[0])
    assert augmented.shape == (120 + 5, 5) and anchors.tolist() == list(range(120, 125))
    moment = dirichlet_second_moment(np.full(5, 0.1))
    np.testing.assert_array_equal(infinite_data_cooccurrence(topics, moment).to_dense(),
                                  infinite_data_cooccurrence(topics.T, moment).to_dense())
    neither = topics.T * 2.0  # columns (and rows) that are not distributions
    with pytest.raises(ValueError, match=r"A must have columns p\(w \| z\) that sum to 1"):
        add_anchor_words(neither)
    with pytest.raises(ValueError, match=r"A must have columns p\(w \| z\) that sum to 1"):
        infinite_data_cooccurrence(neither, moment)
    with pytest.raises(ValueError, match=r"second_moment must have shape \(K, K\) = \(5, 5\)"):
        infinite_data_cooccurrence(topics, np.eye(4))


def test_anchor_words_in_generated_documents(topics):
    synth = semi_synthetic_corpus(topics, 3000, 40, add_anchors=True, random_state=4)
    counts = _counts(synth.corpus)
    # Anchor k has probability A[anchor_k, k] in topic k only: frequency A[anchor_k, k] / K.
    freq = counts[:, synth.anchors].sum(axis=0) / counts.sum()
    np.testing.assert_allclose(freq, synth.A[synth.anchors, np.arange(5)] / 5, rtol=0.15)
    # Under Dirichlet(0.03) documents are nearly single-topic, so two anchors share fewer
    # documents than if words were independent.
    present = (counts[:, synth.anchors] > 0).astype(int)
    both = present.T @ present
    independent = np.outer(present.sum(axis=0), present.sum(axis=0)) / len(counts)
    off = ~np.eye(5, dtype=bool)
    assert np.all(both[off] < 0.7 * independent[off])


# ----------------------------------------------------------------------------------------------
# Correlated topics
# ----------------------------------------------------------------------------------------------

def test_block_covariance_structure():
    cov = block_covariance(10, 0.1, num_groups=3)  # groups of 4, 3, 3
    group = np.repeat([0, 1, 2], [4, 3, 3])
    same = group[:, None] == group[None, :]
    np.testing.assert_array_equal(np.diag(cov), np.ones(10))
    assert np.all(cov[same & ~np.eye(10, dtype=bool)] == 0.1) and np.all(cov[~same] == 0.0)
    np.testing.assert_array_equal(block_covariance(10, 0.0), np.eye(10))
    assert np.linalg.eigvalsh(block_covariance(100, 0.1)).min() > 0
    scaled = block_covariance(10, 0.5, num_groups=3, variance=4.0)
    np.testing.assert_array_equal(np.diag(scaled), np.full(10, 4.0))
    assert np.all(scaled[same & ~np.eye(10, dtype=bool)] == 0.5) and np.all(scaled[~same] == 0.0)
    with pytest.raises(ValueError, match="rho must be a number in"):
        block_covariance(10, 1.0)


def test_correlated_proportions_are_correlated_within_groups():
    K, groups = 20, 4
    group = np.repeat(np.arange(groups), K // groups)
    within = (group[:, None] == group[None, :]) & ~np.eye(K, dtype=bool)
    across = group[:, None] != group[None, :]
    gaps = {}
    for rho in (0.0, 0.5):
        W = topic_proportions(20000, covariance=block_covariance(K, rho, groups), random_state=7)
        np.testing.assert_allclose(W.sum(axis=1), 1.0, rtol=1e-12)
        corr = np.corrcoef(W.T)
        gaps[rho] = corr[within].mean() - corr[across].mean()
        # log-ratios recover eta up to a shift: their covariance is the block structure
        clr = np.log(W) - np.log(W).mean(axis=1, keepdims=True)
        cov = np.cov(clr.T)
        assert abs(cov[within].mean() - cov[across].mean() - rho) < 0.03
    assert abs(gaps[0.0]) < 0.02 and gaps[0.5] > 0.1, gaps


def test_correlated_corpus_and_its_second_moment(topics):
    synth = semi_synthetic_corpus(topics, 200, 30, rho=0.1, num_groups=2, random_state=8,
                                  mc_samples=100_000)
    assert synth.alpha is None and synth.covariance.shape == (5, 5)
    np.testing.assert_array_equal(synth.covariance, block_covariance(5, 0.1, 2))
    R = synth.second_moment
    assert R.sum() == pytest.approx(1.0, abs=1e-12) and np.allclose(R, R.T)
    assert np.linalg.eigvalsh(R).min() > 0
    # Against an independent Monte Carlo estimate from the proportions themselves.
    W = topic_proportions(100_000, covariance=synth.covariance, random_state=9)
    np.testing.assert_allclose(R, W.T @ W / len(W), rtol=0.03)
    direct = logistic_normal_second_moment(synth.covariance, 100_000, random_state=9)
    np.testing.assert_array_equal(direct, logistic_normal_second_moment(synth.covariance, 100_000, random_state=9))
    np.testing.assert_allclose(direct, W.T @ W / len(W), rtol=0.03)


def test_random_topics_with_a_tiny_beta_are_spread_distributions():
    """Dirichlet(1e-5) rows: plain gamma draws underflow to 0 (a quarter of these rows would be
    all zeros); the rows must still be distributions with their mass on a random word."""
    topics = random_topics(200, 80, beta=1e-5, random_state=3)
    assert np.all(np.isfinite(topics)) and np.allclose(topics.sum(axis=1), 1.0)
    top = topics.argmax(axis=1)
    assert len(np.unique(top)) > 50 and np.sum(top == 0) <= 4  # not piled on word 0
    assert np.median(topics.max(axis=1)) > 0.99  # nearly one word each, as Dirichlet(1e-5) is


def test_dirichlet_second_moment_matches_monte_carlo():
    alpha = np.array([0.03, 0.3, 1.0, 2.0])
    W = topic_proportions(400_000, alpha=alpha, random_state=10)
    np.testing.assert_allclose(dirichlet_second_moment(alpha), W.T @ W / len(W), rtol=0, atol=2e-3)
    assert dirichlet_second_moment(alpha).sum() == pytest.approx(1.0, rel=1e-14)


# ----------------------------------------------------------------------------------------------
# Recovery on semi-synthetic data
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize('rho', [None, 0.1])
def test_infinite_data_with_anchors_recovers_the_topics(topics, rho):
    synth = semi_synthetic_corpus(topics, 0, 10, add_anchors=True, rho=rho, num_groups=2,
                                  random_state=11, mc_samples=20_000)
    cooc = infinite_data_cooccurrence(synth.A, synth.second_moment)
    Q = cooc.to_dense()
    np.testing.assert_allclose(Q, synth.A @ synth.second_moment @ synth.A.T, rtol=1e-12)
    assert Q.sum() == pytest.approx(1.0, abs=1e-12)
    p_w = cooc.row_sums()
    anchors = find_anchors(project_rows(cooc, p_w, np.arange(len(p_w)), None), 5).indices
    assert sorted(anchors.tolist()) == synth.anchors.tolist()
    # Recover is exact; RecoverL2/KL stop at the duality-gap tolerance (the paper: "close to 0").
    assert topic_recovery_l1(synth.A, recover(cooc, anchors, 'original').A).mean < 1e-9
    for loss in ('L2', 'KL'):
        assert topic_recovery_l1(synth.A, recover(cooc, anchors, loss).A).mean < 1e-2
    # ... and a tighter tolerance takes RecoverL2 closer still.
    tight = recover(cooc, anchors, 'L2', eps=1e-12, max_iter=20000)
    assert topic_recovery_l1(synth.A, tight.A).mean < 1e-4


def test_anchor_model_error_shrinks_with_documents():
    truth = random_topics(200, 6, beta=1.0, random_state=12)
    errors = {}
    for num_docs in (1000, 5000, 25000):
        synth = semi_synthetic_corpus(truth, num_docs, 100, add_anchors=True, random_state=num_docs)
        model = AnchorModel(synth.corpus, num_topics=6, id2word=synth.dictionary, loss='L2',
                            alpha='symmetric', random_state=0)
        errors[num_docs] = topic_recovery_l1(synth.A, model).mean
        if num_docs == 25000:
            assert sorted(model.anchors.tolist()) == synth.anchors.tolist()
    # About 1/sqrt(D): a fivefold increase should cut the error by well over 1.5x.
    assert errors[5000] < errors[1000] / 1.5 and errors[25000] < errors[5000] / 1.5, errors
    assert errors[25000] < 0.03, errors
