"""Rectification of Q by alternating projection and the diagonal recovery of R (Lee, Bindel &
Mimno 2015): the properties of the rectified matrix, fixed points, and the effect on recovery."""
import logging

import numpy as np
import pytest

from conftest import dirichlet_second_moment, exact_cooccurrence, lda_corpus, matched_l1, separable_topics
from gensim_anchor import AnchorModel, rectify as rectify_module
from gensim_anchor.cooccurrence import build_cooccurrence
from gensim_anchor.rectify import rectify, rectify_cooccurrence
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
    rectified = AnchorModel(noisy['docs'], rectify=True, **kw)
    assert plain.R.min() < -0.05  # the pseudo-inverse R of the noisy Q is not a distribution
    assert rectified.R.min() >= 0.0
    error_plain = matched_l1(noisy['A'], plain.get_topics().T)[0].mean()
    error_rectified = matched_l1(noisy['A'], rectified.get_topics().T)[0].mean()
    # Measured: 0.65 -> 0.28 here (0.59-0.81 -> 0.23-0.34 over 4 seeds; V=300, K=8: 1.05 -> 0.5).
    assert error_rectified < 0.7 * error_plain
    assert rectified.timings['rectify'] > 0


def test_rectify_gives_the_same_topics_in_implicit_and_dense_mode(noisy):
    kw = dict(num_topics=noisy['K'], id2word=noisy['id2word'], random_state=0, alpha='symmetric',
              anchor_min_df=10, rectify=True)
    implicit = AnchorModel(noisy['docs'], q_mode='implicit', **kw)
    dense = AnchorModel(noisy['docs'], q_mode='dense', **kw)
    assert implicit._cooccurrence.mode == 'implicit' and dense._cooccurrence.mode == 'dense'
    np.testing.assert_array_equal(implicit.anchors, dense.anchors)
    np.testing.assert_allclose(implicit.get_topics(), dense.get_topics(), atol=1e-6)
    np.testing.assert_allclose(implicit.R, dense.R, rtol=1e-6)


def test_model_keeps_the_unrectified_statistics_so_updates_add_up(noisy):
    kw = dict(num_topics=noisy['K'], id2word=noisy['id2word'], random_state=0, alpha='symmetric',
              anchor_min_df=10, rectify=True, q_mode='dense')
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
        AnchorModel(noisy['docs'], num_topics=noisy['K'], id2word=noisy['id2word'], rectify=True,
                    q_mode='implicit')


def test_iteration_cap_is_reported(noisy, caplog):
    Q = build_cooccurrence(noisy['docs'], noisy['V']).to_dense()
    result = rectify(Q, noisy['K'], max_iter=2, tol=1e-12)
    assert result.n_iter == 2 and not result.converged
    # The stage returns its counts; the model logs them once, with a WARNING at the cap.
    with caplog.at_level(logging.INFO, logger='gensim_anchor'):
        AnchorModel(noisy['docs'], num_topics=noisy['K'], rectify=True, rectify_max_iter=2,
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
