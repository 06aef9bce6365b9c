"""The refined model in one call (``AnchorModel(..., refine='gibbs')``) and the sampler's
convergence rule (issue 12, parts 1 and 2)."""
import logging

import numpy as np
import pytest
from scipy.special import gammaln

from conftest import lda_corpus, matched_l1, separable_topics
from gensim_anchor import AnchorModel
from gensim_anchor._defaults import (REFINE_ALPHA_START, REFINE_AVERAGE, REFINE_CHECK_EVERY,
                                     REFINE_MIN_BURN_IN)
from gensim_anchor.cli import main
from gensim_anchor.hybrid import _burn_in_ends, _log_joint_fn, _settled, gibbs_refine

V, K = 60, 4
ID2WORD = {i: 'w%d' % i for i in range(V)}
FIT = dict(num_topics=K, id2word=ID2WORD, alpha='symmetric', anchor_min_df=5, random_state=0)


@pytest.fixture(scope='module')
def data():
    rng = np.random.default_rng(3)
    A, _ = separable_topics(rng, V, K, anchor_mass=0.05, beta=0.3)
    return A, lda_corpus(rng, A, np.full(K, 0.2), 1200, 12)


class Once:
    """A corpus that can be iterated once only (a stream)."""

    def __init__(self, docs):
        self.docs, self.reads = docs, 0

    def __iter__(self):
        self.reads += 1
        if self.reads > 1:
            raise AssertionError("the corpus was read twice")
        return iter(self.docs)


# ----------------------------------------------------------------------------------------------
# One call
# ----------------------------------------------------------------------------------------------

def test_one_call_equals_fit_then_refine_and_reads_the_corpus_once(data):
    _, corpus = data
    stream = Once(corpus)
    one = AnchorModel(stream, refine='gibbs', refine_options=dict(num_sweeps=40), **FIT)
    assert stream.reads == 1
    two = AnchorModel(corpus, **FIT).refine(corpus, 'gibbs', num_sweeps=40)
    np.testing.assert_array_equal(one.get_topics(), two.get_topics())
    np.testing.assert_array_equal(one.alpha, two.alpha)
    assert one.refinement['method'] == 'gibbs' and one.refinement['max_sweeps'] == 40
    assert set(one.timings) == {'cooccurrence', 'anchors', 'recovery', 'dirichlet', 'refine'}


@pytest.fixture
def grid_calls(monkeypatch):
    """The alpha grid searches run (dirichlet.fit_alpha_scale, spied on)."""
    from gensim_anchor import dirichlet
    calls, real = [], dirichlet.fit_alpha_scale

    def spy(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    monkeypatch.setattr(dirichlet, 'fit_alpha_scale', spy)
    return calls


def test_a_sampler_that_fits_alpha_starts_it_at_p_z_without_the_grid(data, grid_calls, caplog):
    _, corpus = data
    options = dict(FIT, alpha='auto')
    with caplog.at_level(logging.INFO, logger='gensim_anchor'):
        one = AnchorModel(corpus, refine='gibbs', refine_options=dict(num_sweeps=30), **options)
    assert not grid_calls and 'dirichlet' in one.timings
    assert "alpha starts at 1 * p(z) for the Gibbs refinement" in caplog.text
    assert "chosen on a grid" not in caplog.text
    # The same chain from alpha = REFINE_ALPHA_START * p(z), given explicitly (p(z) of the same fit).
    plain = AnchorModel(corpus, **options)
    assert len(grid_calls) == 1  # the paper's fit, without refine=, still searches the grid
    start = REFINE_ALPHA_START * np.maximum(plain.p_z, 1e-8)
    two = AnchorModel(corpus, **dict(options, alpha=start)).refine(corpus, 'gibbs', num_sweeps=30)
    np.testing.assert_array_equal(one.get_topics(), two.get_topics())
    np.testing.assert_array_equal(one.alpha, two.alpha)
    assert not np.allclose(one.alpha, start)  # the sampler fitted it


@pytest.mark.parametrize('refine, options', [('gibbs', dict(optimize_alpha=False, num_sweeps=6)),
                                             ('vb', dict(passes=1))])
def test_a_refinement_that_does_not_fit_alpha_by_gibbs_keeps_the_grid(data, grid_calls, refine, options,
                                                                     caplog):
    _, corpus = data
    with caplog.at_level(logging.INFO, logger='gensim_anchor'):
        model = AnchorModel(corpus, refine=refine, refine_options=options, **dict(FIT, alpha='auto'))
    assert len(grid_calls) == 1
    assert "chosen on a grid" in caplog.text and "alpha starts at" not in caplog.text
    if refine == 'gibbs':  # a fixed alpha: the grid's, as the paper's fit chose it (in float32)
        plain = AnchorModel(corpus, **dict(FIT, alpha='auto'))
        np.testing.assert_allclose(model.alpha, plain.alpha, rtol=1e-6)


def test_update_of_a_refined_model_equals_training_on_everything(data):
    _, corpus = data
    whole = AnchorModel(corpus, refine='gibbs', refine_options=dict(num_sweeps=30), **FIT)
    part = AnchorModel(Once(corpus[:700]), refine='gibbs', refine_options=dict(num_sweeps=30), **FIT)
    part.update(Once(corpus[700:]))
    np.testing.assert_array_equal(whole.get_topics(), part.get_topics())
    assert part.num_docs == whole.num_docs and part.refinement['method'] == 'gibbs'


def test_update_after_a_manual_refine_says_the_refinement_is_replaced(data, caplog):
    _, corpus = data
    model = AnchorModel(corpus[:700], **FIT).refine(corpus[:700], num_sweeps=6, burn_in=3)
    with caplog.at_level(logging.WARNING, logger='gensim_anchor'):
        model.update(corpus[700:])
    assert "replacing the topics of the earlier refine('gibbs')" in caplog.text
    assert model.refinement is None  # the anchor solution of all the documents, as it says
    np.testing.assert_allclose(model.get_topics(), AnchorModel(corpus, **FIT).get_topics(), atol=1e-6)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger='gensim_anchor'):
        model.update(corpus[:10])  # nothing refined to replace: no warning
    assert "replacing" not in caplog.text


def test_vb_in_one_call_takes_a_stream(data):
    _, corpus = data
    stream = Once(corpus)
    model = AnchorModel(stream, refine='vb', refine_options=dict(passes=1), **FIT)
    assert stream.reads == 1 and model.refinement == dict(method='vb', passes=1,
                                                          seconds=model.refinement['seconds'])
    plain = AnchorModel(corpus, **FIT)
    assert not np.array_equal(model.get_topics(), plain.get_topics())


def test_vb_refine_reads_a_stream_once_and_equals_the_one_call(data):
    # refine(corpus, 'vb') holds the documents for its passes: a one-shot stream serves them
    # all (LdaModel.update counts a corpus without len() by reading it, then fails on a
    # generator), and the result is the one-call refinement's.
    _, corpus = data
    one = AnchorModel(corpus, refine='vb', refine_options=dict(passes=2), **FIT)
    stream = Once(corpus)
    two = AnchorModel(corpus, **FIT).refine(stream, 'vb', passes=2)
    assert stream.reads == 1 and two.refinement['passes'] == 2
    np.testing.assert_array_equal(one.get_topics(), two.get_topics())
    np.testing.assert_array_equal(one.alpha, two.alpha)


@pytest.mark.parametrize('method', ['gibbs', 'vb'])
@pytest.mark.parametrize('corpus, error, message', [
    ([[(0, -3), (1, 2)]], ValueError, r"^document #0 has count -3 for word id 0; counts must be "
                                      r"finite and >= 0$"),
    ([[(1, 1)], [(0, float('nan'))]], ValueError, r"^document #1 has count nan for word id 0"),
    ([[(1, 1)], [(V, 1)]], ValueError, r"^document #1 has word id %d outside the dictionary" % V),
    ([[(1, 1.5)]], ValueError, r"^document #0 has non-integer count 1\.5 for word id 1"),
    ([[]], ValueError, r"^the corpus has no tokens to (sample|refine on)$"),
    ('corpus.mm', TypeError, r"^corpus must be an iterable of bag-of-words documents, got str "
                             r"\(a file name\?"),
    ([['w1', 'w2']], TypeError, r"^document #0 is not a bag-of-words list"),
])
def test_refine_checks_its_corpus_and_leaves_the_model_as_it_was(data, method, corpus, error, message):
    # Before the check, 'vb' turned a negative or NaN count into NaN topics (a RuntimeWarning
    # of gensim's) and an unknown id into a bare IndexError.
    model = AnchorModel(data[1], **FIT)
    topics, alpha = model.get_topics().copy(), model.alpha.copy()
    with pytest.raises(error, match=message):
        model.refine(corpus, method)
    assert model.refinement is None
    np.testing.assert_array_equal(model.get_topics(), topics)
    np.testing.assert_array_equal(model.alpha, alpha)


@pytest.mark.parametrize('method, kwargs, message', [
    ('vb', dict(num_sweeps=50), r"^num_sweeps=50 is not an option of refine\(method='vb'\), which "
                                r"takes optimize_alpha, passes$"),
    ('gibbs', dict(passes=3), r"^passes=3 is not an option of refine\(method='gibbs'\), which takes "
                              r"burn_in, eta, num_sweeps, optimize_alpha, sampler, substeps, tol$"),
    ('vb', dict(eta=0.1, sampler='blocked'), r"^eta=0.1, sampler='blocked' are not options of "
                                             r"refine\(method='vb'\)"),
])
def test_an_option_of_the_other_method_is_refused_not_dropped(data, method, kwargs, message):
    # refine(corpus, 'vb', num_sweeps=50) ran two VB passes and said nothing.
    model = AnchorModel(data[1], **FIT)
    with pytest.raises(ValueError, match=message):
        model.refine(data[1], method, **kwargs)
    assert model.refinement is None


def test_refine_without_a_corpus_uses_the_kept_documents(data):
    _, corpus = data
    model = AnchorModel(corpus, refine='gibbs', refine_options=dict(num_sweeps=20, burn_in=10), **FIT)
    first = model.get_topics().copy()
    model.refine(num_sweeps=20, burn_in=10)  # again from the refined topics, on the same tokens
    assert model.refinement['num_sweeps'] == 20 and not np.array_equal(first, model.get_topics())
    with pytest.raises(ValueError, match="needs the training corpus: this model kept no documents"):
        AnchorModel(corpus, **FIT).refine()


@pytest.mark.parametrize('kwargs, error, message', [
    (dict(refine='mcmc'), ValueError, "refine must be one of 'gibbs', 'vb'"),
    (dict(refine_options=dict(num_sweeps=10)), ValueError, "refine_options is given but refine is None"),
    (dict(refine='gibbs', refine_options=dict(sweeps=10)), ValueError,
     r"refine_options for 'gibbs' take .*num_sweeps.*; got unknown 'sweeps'"),
    (dict(refine='vb', refine_options=dict(num_sweeps=10)), ValueError, "got unknown 'num_sweeps'"),
    (dict(refine='gibbs', refine_options=dict(num_sweeps=10, burn_in=10)), ValueError,
     "burn_in=10 must be smaller than num_sweeps=10"),
    (dict(refine='gibbs', refine_options=dict(num_sweeps=2.5)), TypeError, "num_sweeps must be an integer"),
    (dict(refine='gibbs', refine_options=dict(substeps=2**63)), ValueError,
     "substeps must fit in a 64-bit integer"),
    (dict(refine='gibbs', refine_options=dict(sampler='slice')), ValueError, "sampler must be one of"),
    (dict(refine='gibbs', refine_options=[('num_sweeps', 3)]), TypeError, "refine_options must be a dict"),
    (dict(refine='gibbs', refine_options=dict(eta=0.0)), ValueError, "eta must be"),
    (dict(refine='gibbs', eta=[0.1, 0.2]), ValueError,
     r"takes one symmetric eta, and this model's eta varies \(an array from 0.1 to 0.2\)"),
])
def test_refine_arguments_are_checked_before_the_corpus_is_read(kwargs, error, message):
    def unread():
        raise AssertionError("the corpus was read before the arguments were checked")
        yield

    with pytest.raises(error, match=message):
        AnchorModel(unread(), num_topics=2, id2word={0: 'a', 1: 'b'}, **kwargs)


def test_every_door_of_a_refinement_has_the_same_defaults():
    """``AnchorModel.refine``'s keywords, :func:`gibbs_refine` and :func:`gibbs_refine_dask`
    default to what the one-call form completes ``refine_options`` with (a keyword of
    ``refine()`` held a copy of the eta default once)."""
    import inspect

    from gensim_anchor._validation import check_refine_options
    from gensim_anchor.distributed_hybrid import gibbs_refine_dask
    gibbs, vb = check_refine_options('gibbs', {}), check_refine_options('vb', {})
    assert gibbs['sampler'] == 'collapsed' and gibbs['optimize_alpha'] is True and vb['passes'] >= 1
    for door, completed in ((AnchorModel.refine, dict(vb, **gibbs)), (gibbs_refine, gibbs),
                            (gibbs_refine_dask, gibbs)):
        params = inspect.signature(door).parameters
        assert {name: params[name].default for name in completed} == completed, door.__name__


def test_the_sampler_takes_the_models_eta(data):
    """The Gibbs refinement samples under the model's eta: LdaModel's 1/K unless the constructor
    was given another ('symmetric' and 'auto' are 1/K); refine_options' eta wins."""
    _, corpus = data
    options = dict(num_sweeps=20, burn_in=10)

    def refined(**kwargs):
        return AnchorModel(corpus, refine='gibbs', refine_options=options, **FIT, **kwargs)

    default = refined()
    assert default.refinement['eta'] == 1.0 / K
    np.testing.assert_array_equal(default.get_topics(), refined(eta=1.0 / K).get_topics())
    given = refined(eta=0.03)
    assert given.refinement['eta'] == 0.03
    np.testing.assert_array_equal(given.get_topics(),
                                  AnchorModel(corpus, refine='gibbs', **FIT,
                                              refine_options=dict(options, eta=0.03)).get_topics())
    assert not np.allclose(given.get_topics(), default.get_topics(), atol=1e-3)
    assert refined(eta='symmetric').refinement['eta'] == refined(eta='auto').refinement['eta'] == 1.0 / K
    assert refined(eta=np.full(V, 0.2)).refinement['eta'] == 0.2
    # refine_options' eta over the model's; refine() takes the model's too, and gibbs_refine
    # alone defaults to 1/K as well
    both = AnchorModel(corpus, refine='gibbs', eta=0.3, **FIT, refine_options=dict(options, eta=0.03))
    assert both.refinement['eta'] == 0.03
    later = AnchorModel(corpus, eta=0.03, **FIT).refine(corpus, 'gibbs', **options)
    np.testing.assert_array_equal(later.get_topics(), given.get_topics())
    plain = AnchorModel(corpus, **FIT)
    alone = gibbs_refine(plain.get_topics(), plain.alpha, corpus, p_z=plain.p_z,
                         random_state=plain._projection_seed, **options)
    np.testing.assert_allclose(alone.topics, default.get_topics(), rtol=1e-6)


@pytest.mark.parametrize('refine, options, message', [
    ('vb', None, "refine='vb' reads the documents on this machine"),
    ('gibbs', dict(sampler='blocked'), "sampler='blocked' has no Dask form"),
])
def test_a_dask_corpus_is_refused_a_refinement_it_cannot_have_before_it_is_read(refine, options, message):
    # The Dask refinement itself is tested in test_distributed_refine.py, on a cluster.
    db = pytest.importorskip('dask.bag')
    bag = db.from_sequence([[(0, 1), (1, 1)]] * 4, npartitions=2)
    with pytest.raises(ValueError, match=message):
        AnchorModel(bag, num_topics=2, id2word={0: 'a', 1: 'b'}, refine=refine, refine_options=options)


@pytest.mark.parametrize('portable', [False, True])
def test_a_saved_refined_model_keeps_its_options_and_updates(data, tmp_path, portable):
    _, corpus = data
    model = AnchorModel(corpus[:600], refine='gibbs', refine_options=dict(num_sweeps=20), **FIT)
    path = str(tmp_path / 'refined')
    if portable:
        model.save_portable(path, save_cooccurrence=True)
        loaded = AnchorModel.load_portable(path)
        model.save_portable(path + '-bare')
        bare = AnchorModel.load_portable(path + '-bare')
    else:
        model.save(path, save_cooccurrence=True)
        loaded = AnchorModel.load(path)
        model.save(path + '-bare')
        bare = AnchorModel.load(path + '-bare')
    np.testing.assert_array_equal(loaded.get_topics(), model.get_topics())
    assert loaded.refine_method == 'gibbs' and loaded.refine_options == model.refine_options
    assert loaded.refinement == model.refinement
    model.update(corpus[600:])
    loaded.update(corpus[600:])
    np.testing.assert_array_equal(loaded.get_topics(), model.get_topics())
    with pytest.raises(RuntimeError, match="saved without its"):
        bare.update(corpus[600:])


def test_show_topics_of_a_refined_model_follows_its_alpha(data, caplog):
    _, corpus = data
    model = AnchorModel(corpus, refine='gibbs', refine_options=dict(num_sweeps=20), **FIT)
    largest = int(np.argmax(model.alpha))
    with caplog.at_level(logging.INFO, logger='gensim_anchor'):
        shown = model.show_topics(num_topics=1, log=True)
    assert [k for k, _ in shown] == [largest]
    assert 'gibbs-refined from anchor' in caplog.text


def test_cli_refines(tmp_path, capsys):
    assert main(['--num-topics', '4', '--refine', 'gibbs', '--sweeps', '20', '--no-save']) == 0
    out = capsys.readouterr().out
    assert "refined (gibbs): " in out and "sweeps (burn-in" in out
    assert main(['--num-topics', '4', '--sweeps', '20', '--no-save']) == 2
    assert "--sweeps goes with --refine gibbs" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------------
# The convergence rule
# ----------------------------------------------------------------------------------------------

def log_joint_reference(n_dk, n_kw, alpha, eta):
    """log p(w, z | alpha, eta) / tokens, Griffiths & Steyvers (2004) eq. 2-3, in float64."""
    n_dk, n_kw = n_dk.astype(np.float64), n_kw.astype(np.float64)
    Kt, Vt = n_kw.shape
    words = (Kt * (gammaln(Vt * eta) - Vt * gammaln(eta)) + gammaln(n_kw + eta).sum()
             - gammaln(n_kw.sum(axis=1) + Vt * eta).sum())
    docs = (len(n_dk) * (gammaln(alpha.sum()) - gammaln(alpha).sum()) + gammaln(n_dk + alpha).sum()
            - gammaln(n_dk.sum(axis=1) + alpha.sum()).sum())
    return (words + docs) / n_kw.sum()


def test_log_joint_matches_the_textbook_formula():
    rng = np.random.default_rng(0)
    n_dk = rng.integers(0, 6, size=(30, K)).astype(np.int32)
    n_kw = rng.integers(0, 4, size=(K, V)).astype(np.int32)
    alpha = np.array([0.1, 0.5, 1.0, 2.0], np.float32)
    got = float(_log_joint_fn()(n_dk, n_kw, alpha, np.float32(0.01)))
    assert got == pytest.approx(log_joint_reference(n_dk, n_kw, alpha.astype(np.float64), 0.01), rel=1e-5)


def test_the_rule_compares_the_rise_per_sweep_with_tol():
    assert _settled([(5, -8.0), (10, -7.9)], 1e-3) is False       # rising 0.02 per sweep
    assert _settled([(5, -8.0), (10, -7.996)], 1e-3) is True      # 0.0008 per sweep
    assert _settled([(5, -8.0), (10, -8.01)], 1e-3) is True       # falling: noise at the top


def test_the_sampler_stops_when_the_log_joint_has_settled(data):
    A, corpus = data
    model = AnchorModel(corpus, **FIT)
    result = gibbs_refine(model.get_topics(), model.alpha, corpus, p_z=model.p_z, num_sweeps=400,
                          random_state=0)
    assert result.converged
    assert result.burn_in >= REFINE_MIN_BURN_IN and result.burn_in % REFINE_CHECK_EVERY == 0
    assert result.num_sweeps == result.burn_in + max(REFINE_AVERAGE, result.burn_in) < 400
    sweeps, joint = result.log_joint.T
    assert sweeps[-1] == result.burn_in and np.all(np.diff(sweeps) == REFINE_CHECK_EVERY)
    assert joint[-1] > joint[0]  # the chain climbed from the anchor start
    # As good as a long fixed run (the true topics as the judge).
    fixed = gibbs_refine(model.get_topics(), model.alpha, corpus, p_z=model.p_z, num_sweeps=200,
                         burn_in=100, random_state=0)
    early, late = (matched_l1(A, r.topics.T)[0].mean() for r in (result, fixed))
    start = matched_l1(A, model.get_topics().T.astype(np.float64))[0].mean()
    assert early < start and early <= 1.1 * late


def test_a_chain_that_never_settles_stops_at_the_cap(data):
    _, corpus = data
    model = AnchorModel(corpus, **FIT)
    result = gibbs_refine(model.get_topics(), model.alpha, corpus, num_sweeps=20, tol=1e-9,
                          random_state=0)
    assert not result.converged and result.burn_in == 10 and result.num_sweeps == 20
    fixed = gibbs_refine(model.get_topics(), model.alpha, corpus, num_sweeps=20, burn_in=7,
                         random_state=0)
    assert fixed.converged and fixed.num_sweeps == 20 and len(fixed.log_joint) == 0


def test_burn_in_ends_at_a_settled_check_or_at_half_the_cap():
    flat = [(5, -8.0), (10, -8.0)]
    assert _burn_in_ends(10, 400, flat, 1e-3) == (True, True)
    assert _burn_in_ends(11, 400, flat, 1e-3) == (False, False)  # the check was at sweep 10
    assert _burn_in_ends(5, 400, flat[:1], 1e-3) == (False, False)  # one check: nothing to compare
    rising = [(5, -8.0), (10, -7.0)]
    assert _burn_in_ends(10, 400, rising, 1e-3) == (False, False)
    assert _burn_in_ends(10, 20, rising, 1e-3) == (True, False)  # half the cap
    assert _burn_in_ends(1, 2, [], 1e-3) == (True, False)  # a cap with no check at all
    assert _burn_in_ends(4, 9, [], 1e-3) == (True, False)  # a half between checks


@pytest.mark.parametrize('cap', [2, 4, 9, 13])
def test_a_cap_with_few_or_no_checks_ends_burn_in_at_its_half(data, cap):
    # Below REFINE_CHECK_EVERY sweeps no check is made: the half-cap rule must still end burn-in
    # (it did only at a check, so the average was empty: NaN topics). Between checks it ends at
    # the half itself, as documented, not at the next check.
    _, corpus = data
    model = AnchorModel(corpus, **FIT)
    result = gibbs_refine(model.get_topics(), model.alpha, corpus, num_sweeps=cap, tol=1e-9,
                          random_state=0)
    assert not result.converged and result.burn_in == cap // 2 and result.num_sweeps == cap
    assert np.all(np.isfinite(result.topics)) and np.allclose(result.topics.sum(axis=1), 1)
    assert len(result.log_joint) == (cap // 2) // REFINE_CHECK_EVERY  # checks stop with burn-in


def test_a_count_beyond_the_kept_documents_int32_is_refused_not_wrapped():
    # The one-call refinement keeps the documents as int32 (DocumentStore): 2**32 + 1 would
    # have become a count of 1. Refused in the corpus pass, naming the document.
    docs = [[(0, 2), (1, 1)], [(1, 3), (2, 2**32 + 1)], [(0, 1), (2, 2)]]
    with pytest.raises(ValueError, match=r"^document #1 has count 4294967297 for word id 2; a "
                                         r"refinement keeps at most 2147483647 tokens"):
        AnchorModel(docs, num_topics=2, id2word={0: 'a', 1: 'b', 2: 'c'}, anchor_min_df=1,
                    refine='gibbs', chunksize=1)
