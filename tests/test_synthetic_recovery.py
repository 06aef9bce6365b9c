"""The whole pipeline on separable topic models with known truth.

(a) Exact, infinite-data co-occurrence Q = A R A^T with R = E[W W^T] for W ~ Dirichlet(alpha):
    the anchors are the true anchor words and every recovery method returns A (and R, p(z)).
(b) Semi-synthetic LDA corpora drawn from known topics: the error of AnchorModel's topics
    shrinks as the number of documents grows.
"""
import numpy as np
import pytest
from gensim.utils import FakeDict

from conftest import (dirichlet_second_moment, exact_cooccurrence, lda_corpus, matched_l1,
                      separable_topics)
from gensim_anchor import AnchorModel
from gensim_anchor.anchors import find_anchors, project_rows
from gensim_anchor.recovery import recover

V_EXACT, K_EXACT = 60, 5


@pytest.fixture(scope='module', params=[0, 1])
def exact_model(request):
    rng = np.random.default_rng(request.param)
    A, anchors = separable_topics(rng, V_EXACT, K_EXACT, anchor_mass=0.1, beta=1.0)
    alpha = 0.1 * rng.uniform(0.5, 2.0, size=K_EXACT)  # asymmetric prior: p(z) not uniform
    R = dirichlet_second_moment(alpha)
    Q = A @ R @ A.T
    return dict(A=A, anchors=anchors[:, 0], alpha=alpha, R=R, Q=Q, cooc=exact_cooccurrence(Q))


def test_dirichlet_second_moment_by_monte_carlo():
    rng = np.random.default_rng(0)
    alpha = np.array([0.3, 1.0, 2.5])
    W = rng.dirichlet(alpha, size=400_000)
    np.testing.assert_allclose(dirichlet_second_moment(alpha), W.T @ W / len(W), rtol=0, atol=2e-3)
    np.testing.assert_allclose(dirichlet_second_moment(alpha).sum(), 1.0, rtol=1e-14)


def test_exact_q_is_a_distribution(exact_model):
    Q, cooc = exact_model['Q'], exact_model['cooc']
    np.testing.assert_array_equal(cooc.to_dense(), Q)
    np.testing.assert_allclose(Q.sum(), 1.0, rtol=1e-13)
    np.testing.assert_allclose(cooc.row_sums(), exact_model['A'] @ (exact_model['alpha'] / exact_model['alpha'].sum()),
                               rtol=1e-12)


@pytest.mark.parametrize('cleanup', [True, False])
def test_exact_q_anchors_are_the_true_anchors(exact_model, cleanup):
    cooc = exact_model['cooc']
    p_w = cooc.row_sums()
    Y = project_rows(cooc, p_w, np.arange(V_EXACT), projection_dim=None)
    found = find_anchors(Y, K_EXACT, cleanup=cleanup)
    assert sorted(found.indices.tolist()) == sorted(exact_model['anchors'].tolist())
    if cleanup:
        assert found.num_replaced == 0  # the greedy phase is already exact on exact data


def _recover_exact(exact_model, loss, **kwargs):
    cooc = exact_model['cooc']
    p_w = cooc.row_sums()
    Y = project_rows(cooc, p_w, np.arange(V_EXACT), projection_dim=None)
    anchors = find_anchors(Y, K_EXACT).indices
    return anchors, recover(cooc, anchors, loss, **kwargs)


@pytest.mark.parametrize('loss', ['L2', 'KL'])
def test_exact_q_eg_recovery(exact_model, loss):
    A, anchors_true = exact_model['A'], exact_model['anchors']
    anchors, rec = _recover_exact(exact_model, loss, eps=1e-12, max_iter=5000)
    errors, perm = matched_l1(A, rec.A)
    assert errors.max() <= 1e-3, errors
    # Topic k of the model is the topic of its anchor word.
    true_topic_of_anchor = {int(a): k for k, a in enumerate(anchors_true)}
    np.testing.assert_array_equal(perm[[true_topic_of_anchor[int(a)] for a in anchors]], np.arange(K_EXACT))
    np.testing.assert_allclose(rec.A.sum(axis=0), 1.0, rtol=1e-12)
    assert np.all(rec.A >= 0)
    alpha = exact_model['alpha']
    inv = np.argsort(perm)
    np.testing.assert_allclose(rec.p_z, (alpha / alpha.sum())[inv], rtol=0, atol=1e-6)
    np.testing.assert_allclose(rec.R, exact_model['R'][np.ix_(inv, inv)], rtol=0, atol=1e-5 * exact_model['R'].max())
    # Anchors are pinned to their own topic; the solver's weights are p(z | w).
    C = rec.solver.weights
    np.testing.assert_array_equal(C[anchors], np.eye(K_EXACT))


def test_exact_q_original_recovery_is_exact(exact_model):
    A, R, alpha = exact_model['A'], exact_model['R'], exact_model['alpha']
    anchors, rec = _recover_exact(exact_model, 'original')
    assert rec.solver is None
    errors, perm = matched_l1(A, rec.A)
    inv = np.argsort(perm)
    np.testing.assert_allclose(rec.A, A[:, inv], rtol=0, atol=1e-10)
    np.testing.assert_allclose(rec.R, R[np.ix_(inv, inv)], rtol=1e-8, atol=1e-14)
    np.testing.assert_allclose(rec.p_z, (alpha / alpha.sum())[inv], rtol=1e-8)
    assert errors.max() <= 1e-8


# ----------------------------------------------------------------------------------------------
# Semi-synthetic LDA documents
# ----------------------------------------------------------------------------------------------

V_LDA, K_LDA, DOC_LENGTH = 400, 5, 100


@pytest.fixture(scope='module')
def lda_truth():
    rng = np.random.default_rng(42)
    A, anchors = separable_topics(rng, V_LDA, K_LDA, anchors_per_topic=3, anchor_mass=0.06, beta=0.5)
    return A, anchors


def test_lda_corpus_generator(lda_truth):
    A, _ = lda_truth
    corpus = lda_corpus(np.random.default_rng(0), A, 0.1, 300, DOC_LENGTH)
    assert len(corpus) == 300
    for doc in corpus[:50]:
        ids = [i for i, _ in doc]
        assert ids == sorted(set(ids)) and all(0 <= i < V_LDA for i in ids)
        assert sum(c for _, c in doc) == DOC_LENGTH and all(c >= 1 for _, c in doc)
    # Word frequencies follow A times the mean topic proportions (1/K each).
    freq = np.zeros(V_LDA)
    for doc in corpus:
        for i, c in doc:
            freq[i] += c
    freq /= freq.sum()
    assert np.abs(freq - A.mean(axis=1)).sum() < 0.25


def test_lda_recovery_error_shrinks_with_documents(lda_truth):
    A, anchors = lda_truth
    errors = {}
    for num_docs in (500, 5000, 50000):
        corpus = lda_corpus(np.random.default_rng(num_docs), A, 0.1, num_docs, DOC_LENGTH)
        model = AnchorModel(corpus, num_topics=K_LDA, id2word=FakeDict(V_LDA), random_state=0,
                            anchor_min_df=5, projection_dim=None)
        assert model.num_docs == num_docs
        topics = np.asarray(model.get_topics(), dtype=np.float64)
        assert topics.shape == (K_LDA, V_LDA)
        errors[num_docs] = matched_l1(A, topics.T)[0]
        if num_docs == 50000:
            found = model.anchors
    mean = {d: e.mean() for d, e in errors.items()}
    message = {d: np.round(e, 4).tolist() for d, e in errors.items()}
    # Roughly 1/sqrt(D): each tenfold increase should cut the error by well over 1.5x.
    assert mean[5000] < mean[500] / 1.5, message
    assert mean[50000] < mean[5000] / 1.5, message
    assert errors[50000].max() < 0.05, message
    # With enough documents every anchor found is a true anchor word, one per topic.
    topic_of = {int(w): k for k in range(K_LDA) for w in anchors[k]}
    assert all(int(a) in topic_of for a in found), found
    assert sorted(topic_of[int(a)] for a in found) == list(range(K_LDA))
