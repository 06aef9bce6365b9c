"""The Gibbs refinement on a Dask cluster (gensim_anchor.distributed_hybrid, issue 16): seeded,
as good as on one machine, robust to a killed worker, and refusing bad input before a sweep.
One LocalCluster of two worker processes serves the module; the worker-loss test runs last."""
import faulthandler
import os
import signal
import threading

import numpy as np
import pytest

dask_bag = pytest.importorskip('dask.bag')
distributed = pytest.importorskip('distributed')

from gensim_anchor import AnchorModel  # noqa: E402
from gensim_anchor._bow import DocumentStore  # noqa: E402
from gensim_anchor.distributed_hybrid import (  # noqa: E402
    _report, _start_partition, _sweep_partition, gibbs_refine_dask)
from gensim_anchor.evaluation import topic_recovery_l1  # noqa: E402
from gensim_anchor._compile_cache import bucket  # noqa: E402
from gensim_anchor.hybrid import gibbs_refine  # noqa: E402
from gensim_anchor.likelihood import log_likelihood_per_token  # noqa: E402
from gensim_anchor.synthetic import random_topics, semi_synthetic_corpus  # noqa: E402

V, K = 200, 5
FIXED = dict(num_sweeps=8, burn_in=4)


@pytest.fixture(scope='module')
def data():
    """A semi-synthetic corpus (2,000 training documents of 50 tokens, 200 held out), its true
    topics, and the anchor fit that starts every refinement."""
    synth = semi_synthetic_corpus(random_topics(V, K, beta=0.1, random_state=0), 2200, 50, alpha=0.1,
                                  random_state=1)
    docs = list(synth.corpus)
    train, heldout = docs[:2000], docs[2000:]
    model = AnchorModel(train, num_topics=K, id2word={i: str(i) for i in range(V)}, alpha='symmetric',
                        random_state=0)
    return synth.A, train, heldout, model


def bag(docs, npartitions=4):
    return dask_bag.from_sequence(docs, npartitions=npartitions)


def refine(model, corpus, client, **kwargs):
    return gibbs_refine_dask(model.get_topics(), model.alpha, corpus, client=client, p_z=model.p_z,
                             **dict(dict(random_state=0), **kwargs))


# ----------------------------------------------------------------------------------------------
# The partition's sweep on its own (no cluster)
# ----------------------------------------------------------------------------------------------

def test_padded_partition_sweeps_only_its_own_tokens(data):
    # Padding tokens point outside the count arrays; the sweep must drop them: every count
    # change sums to zero, and the counts after the sweep are those of the tokens' topics.
    _, train, _, model = data
    assert [bucket(n) for n in (1, 15, 16, 17, 1000, 1025)] == [1, 15, 16, 18, 1024, 1152]
    start_t = (model.get_topics().T + 1e-3).astype(np.float32)
    state = _start_partition(train[:301], 0, V, start_t, np.array([0, 7], np.uint32), 0, 2, 100)
    assert state.num_docs == 301 and state.num_tokens == 301 * 50
    assert state.padded_docs > 301 and state.doc.shape[0] > state.num_tokens  # padded
    _, _, n_kw = _report(state, V, K)
    assert n_kw.sum() == state.num_tokens and int(state.n_dk.sum()) == state.num_tokens
    others = np.random.default_rng(0).integers(0, 50, size=(K, V)).astype(np.int32)
    delta, sums = _sweep_partition(state, n_kw + others, np.full(K, 0.1, np.float32), 0.01,
                                   np.array([0, 8], np.uint32), 0, True, True)
    if isinstance(delta, tuple):
        dense = np.zeros(K * V, np.int32)
        dense[delta[0]] = delta[1]
        delta = dense.reshape(K, V)
    assert delta.sum() == 0 and np.any(delta != 0)
    np.testing.assert_array_equal(_report(state, V, K)[2], n_kw + delta)
    assert state.sweep == 1 and sums[0].shape == (K,) and np.isfinite(sums[2])
    with pytest.raises(RuntimeError, match="partition 0 holds sweep 1, the client is at sweep 0"):
        _sweep_partition(state, n_kw, np.full(K, 0.1, np.float32), 0.01, np.array([0, 8], np.uint32), 0,
                         False, False)


# ----------------------------------------------------------------------------------------------
# On the cluster
# ----------------------------------------------------------------------------------------------

def test_same_seed_and_partitioning_give_the_same_topics(client, data):
    _, train, _, model = data
    first = refine(model, bag(train), client, **FIXED)
    # The same partitions as a list of Delayed objects: the same partitioning, the same topics.
    again = refine(model, bag(train).to_delayed(), client, **FIXED)
    np.testing.assert_array_equal(first.topics, again.topics)
    np.testing.assert_array_equal(first.alpha, again.alpha)
    assert (first.num_partitions, first.num_workers, first.num_tokens, first.recovered) == (4, 2, 100000, ())
    assert len(first.sweep_seconds) == first.num_sweeps == 8
    other = refine(model, bag(train), client, random_state=1, num_sweeps=2, burn_in=1)
    shorter = refine(model, bag(train), client, num_sweeps=2, burn_in=1)
    assert not np.array_equal(shorter.topics, other.topics)


def test_a_cap_below_the_first_check_still_averages(client, data):
    # No check before sweep REFINE_CHECK_EVERY: burn-in ends at half the cap, as on one machine.
    _, train, _, model = data
    result = refine(model, bag(train), client, num_sweeps=4)
    assert (result.burn_in, result.num_sweeps, result.converged) == (2, 4, False)
    assert np.all(np.isfinite(result.topics)) and np.allclose(result.topics.sum(axis=1), 1)


def test_quality_matches_the_one_machine_refinement(client, data):
    A, train, heldout, model = data
    local = gibbs_refine(model.get_topics(), model.alpha, train, p_z=model.p_z, random_state=0)
    dask = refine(model, bag(train), client)  # the convergence rule decides the sweeps
    assert dask.converged and dask.num_sweeps <= 2 * local.num_sweeps

    def quality(result):
        return (topic_recovery_l1(A, result.topics).mean,
                log_likelihood_per_token(result.topics, result.alpha, heldout, random_state=0))

    (l1_local, ll_local), (l1_dask, ll_dask) = quality(local), quality(dask)
    l1_anchor = topic_recovery_l1(A, model.get_topics()).mean
    assert l1_dask < 0.8 * l1_anchor  # the refinement improved on the anchor topics ...
    assert l1_dask < 1.05 * l1_local  # ... as much as on one machine (L1 within 5%)
    assert abs(ll_dask - ll_local) < 0.005  # nats per token
    np.testing.assert_allclose(dask.alpha, local.alpha, rtol=0.1)


def test_one_call_form_keeps_the_partitions_and_refines_on_the_cluster(client, data, tmp_path):
    _, train, _, _ = data
    fit = dict(num_topics=K, id2word={i: str(i) for i in range(V)}, alpha='symmetric', random_state=0,
               client=client)
    one = AnchorModel(bag(train), refine='gibbs', refine_options=dict(FIXED), **fit)
    two = AnchorModel(bag(train), **fit).refine(bag(train), 'gibbs', **FIXED)
    np.testing.assert_array_equal(one.get_topics(), two.get_topics())
    assert one.refinement['partitions'] == 4 and one.refinement['workers'] == 2
    assert one.refinement['recovered'] == 0 and one.refinement['num_sweeps'] == 8
    before = one.get_topics()
    one.refine(num_sweeps=4, burn_in=2)  # again, from the kept partitions
    assert one.refinement['partitions'] == 4 and not np.array_equal(before, one.get_topics())
    # Saving gathers the documents: the loaded model refines on this machine.
    fname = str(tmp_path / 'refined.model')
    one.save(fname, save_cooccurrence=True)
    loaded = AnchorModel.load(fname)
    assert isinstance(loaded._documents, DocumentStore) and loaded._documents.num_tokens == 100000
    loaded.refine(num_sweeps=4, burn_in=2)
    assert 'partitions' not in loaded.refinement


def test_bad_input_is_refused_before_any_sweep(client, data):
    _, train, _, model = data
    sweeps = []
    bad = train[:200] + [[(3, 1), (V + 3, 2)]] + train[200:400]
    with pytest.raises(ValueError, match=r"partition 1: document #\d+ has word id 203 outside the "
                                         r"dictionary \(valid ids are 0\.\.199\)"):
        refine(model, bag(bad, 2), client, callback=lambda *a: sweeps.append(a), **FIXED)
    assert sweeps == []
    with pytest.raises(ValueError, match="sampler='blocked' has no Dask form"):
        refine(model, bag(train), client, sampler='blocked', **FIXED)
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=':0') as empty, \
            distributed.Client(empty, set_as_default=False) as idle:
        with pytest.raises(ValueError, match="the Dask client has no workers"):
            refine(model, bag(train), idle, **FIXED)
    with pytest.raises(ValueError, match="the corpus has no tokens to sample"):
        refine(model, bag([[], [(1, 0)]], 2), client, **FIXED)


def test_a_worker_killed_mid_refinement_does_not_fail_it_or_corrupt_the_counts(client, data):
    A, train, _, model = data
    pids = client.run(os.getpid)
    victims, totals = [], []

    def kill_workers(sweep, state):
        totals.append(int(state['n_kw'].sum()))
        if sweep == 3:  # between two sweeps
            victims.append(min(pids))
            os.kill(pids[victims[-1]], signal.SIGKILL)
        elif sweep == 7:  # most likely during the next sweep; a worker that holds partitions
            client.wait_for_workers(2, timeout=60)  # the first victim's restart has registered
            now = client.run(os.getpid)
            held = client.has_what()
            victims.append(next(w for w in sorted(now) if any('_start_partition' in k for k in held[w])))
            threading.Timer(0.02, os.kill, (now[victims[-1]], signal.SIGKILL)).start()

    # Should this ever hang (it once did, under load, not reproduced), the tracebacks of every
    # thread go to stderr after 5 minutes, so the CI log says where.
    faulthandler.dump_traceback_later(300)
    try:
        result = refine(model, bag(train), client, num_sweeps=20, burn_in=10, callback=kill_workers)
    finally:
        faulthandler.cancel_dump_traceback_later()
    client.wait_for_workers(2, timeout=60)  # the nannies restart the killed workers
    assert len(victims) == 2 and result.num_sweeps == 20
    sweeps = {sweep for sweep, _ in result.recovered}
    assert 4 in sweeps and len(sweeps) == 2  # each loss rebuilt, at the sweep it hit
    assert totals == [100000] * 20  # every sweep's counts hold each token once
    # The chain went on: the topics improved on the anchor fit as an undisturbed one does.
    assert topic_recovery_l1(A, result.topics).mean < 0.8 * topic_recovery_l1(A, model.get_topics()).mean
