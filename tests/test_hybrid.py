"""Hybrid refinement: blocked Gibbs sweeps (and gensim's VB) started from the anchor solution."""
import numpy as np
import pytest

from conftest import lda_corpus, matched_l1, separable_topics
from gensim_anchor import AnchorModel
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


def test_gibbs_refinement_moves_towards_the_true_topics(semi_synthetic):
    A, alpha, train, heldout, model = semi_synthetic
    before = matched_l1(A, model.get_topics().T.astype(np.float64))[0].mean()
    result = gibbs_refine(model.get_topics(), model.alpha, train, p_z=model.p_z, num_sweeps=60,
                          burn_in=30, random_state=0)
    after = matched_l1(A, result.topics.T)[0].mean()
    assert after < before
    np.testing.assert_allclose(result.topics.sum(axis=1), 1.0, atol=1e-12)
    assert result.num_tokens == sum(c for doc in train for _, c in doc)
    ll_before = log_likelihood_per_token(model.get_topics(), model.alpha, heldout, random_state=0)
    ll_after = log_likelihood_per_token(result.topics, result.alpha, heldout, random_state=0)
    assert ll_after > ll_before


def test_gibbs_refinement_is_seeded(semi_synthetic):
    _, _, train, _, model = semi_synthetic
    run = lambda seed: gibbs_refine(model.get_topics(), model.alpha, train, num_sweeps=6,
                                    burn_in=3, random_state=seed)
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
    assert refined.refinement == dict(method='gibbs', num_sweeps=4, burn_in=2,
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
    ({}, [[(0, 1.5)]], 'document #0 has non-integer count 1.5 for word id 0'),
    ({}, [[(0, 1)], [(99, 1)]], 'document #1 has word id 99 outside'),
    ({}, [[], [(0, 0)]], 'no tokens to sample'),
])
def test_gibbs_refine_rejects_bad_input(kwargs, corpus, match):
    topics = np.full((2, 3), 1.0 / 3)
    with pytest.raises(ValueError, match=match):
        gibbs_refine(topics, [0.5, 0.5], corpus, **kwargs)


def test_refine_rejects_an_unknown_method(semi_synthetic):
    with pytest.raises(ValueError, match="method"):
        semi_synthetic[-1].refine([], method='mcmc')
