"""Q on a Dask cluster (gensim_anchor.distributed): the same statistics, products and topics as
on one machine. One LocalCluster of two worker processes serves the whole module."""
import copy
import logging
import pickle

import numpy as np
import pytest

dask_bag = pytest.importorskip('dask.bag')
distributed = pytest.importorskip('distributed')

from conftest import lda_corpus, random_corpus, separable_topics  # noqa: E402
from gensim_anchor import AnchorModel  # noqa: E402
from gensim_anchor._sampling import Reservoir as _Reservoir  # noqa: E402
from gensim_anchor.cooccurrence import Cooccurrence, build_cooccurrence, quarter_sums  # noqa: E402
from gensim_anchor.distributed import (  # noqa: E402
    DistributedCooccurrence, build_cooccurrence_dask, combine_samples)


@pytest.fixture(scope='module')
def corpus():
    rng = np.random.default_rng(0)
    A, _ = separable_topics(rng, 300, 5)
    docs = lda_corpus(rng, A, 0.2, 1200, 40)
    docs[7] = [(3, 1)]  # one short document, in the first partition
    return docs


V = 300


def as_bag(docs, npartitions=4):
    return dask_bag.from_sequence(docs, npartitions=npartitions)


def fit(docs, **kwargs):
    kwargs = dict(dict(num_topics=5, id2word={i: str(i) for i in range(V)}, random_state=0,
                       q_mode='implicit', projection_dim=64), **kwargs)
    return AnchorModel(docs, **kwargs)


@pytest.fixture(scope='module')
def local_model(corpus):
    return fit(corpus)


def test_statistics_and_products_match_one_machine(client, corpus):
    local = build_cooccurrence(corpus, V)
    dist = build_cooccurrence_dask(as_bag(corpus), V, client=client)
    assert isinstance(dist, DistributedCooccurrence) and dist.mode == 'distributed'
    assert dist.num_partitions == 4
    assert (dist.num_terms, dist.num_docs, dist.num_short, dist.num_tokens) == (
        local.num_terms, local.num_docs, local.num_short, local.num_tokens)
    np.testing.assert_array_equal(dist.doc_freq, local.doc_freq)
    np.testing.assert_array_equal(dist.term_counts, local.term_counts)
    np.testing.assert_allclose(dist.h_hat, local.h_hat, rtol=1e-13)
    np.testing.assert_allclose(dist.row_sums(), local.row_sums(), rtol=1e-12, atol=1e-18)
    X = np.random.default_rng(1).standard_normal((V, 7))
    np.testing.assert_allclose(dist.matmul(X), local.matmul(X), rtol=1e-10, atol=1e-16)
    X32 = X.astype(np.float32)
    np.testing.assert_allclose(dist.matmul(X32, dtype=np.float32), local.matmul(X32, dtype=np.float32),
                               rtol=1e-4, atol=1e-9)
    index = [5, 0, 299, 5]
    np.testing.assert_allclose(dist.rows(index), local.rows(index), rtol=1e-12, atol=1e-18)
    np.testing.assert_allclose(dist.to_dense(), local.to_dense(), rtol=1e-12, atol=1e-18)
    # The quarters of the anchor-candidate rule: the same documents in each as on one machine.
    rows = np.array([0, 5, 299])
    for got, want in zip(dist.quarter_sums(rows, 32, 2), quarter_sums(local, rows, 32, 2)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-9)


def test_sequence_of_partitions_with_empty_and_short_ones_and_inferred_vocabulary(client):
    rng = np.random.default_rng(2)
    docs = random_corpus(rng, 60, 20, short_fraction=0.2)
    docs.append([(25, 1.0), (24, 2.0)])  # the largest id, in the last partition only
    partitions = [docs[:20], [], [[(1, 1.0)], []], docs[20:]]
    local = build_cooccurrence(docs)
    dist = build_cooccurrence_dask(partitions, client=client)
    assert dist.num_terms == local.num_terms == 26
    assert dist.num_partitions == 2  # the empty and the all-short partitions hold no H~
    assert (dist.num_docs, dist.num_short, dist.num_tokens) == (
        local.num_docs, local.num_short + 2, local.num_tokens + 1)
    np.testing.assert_allclose(dist.to_dense(), local.to_dense(), rtol=1e-12, atol=1e-18)
    # Delayed and Future partitions too.
    from dask import delayed
    mixed = [delayed(list)(docs[:20]), client.scatter([docs[20:40]])[0], docs[40:]]
    again = build_cooccurrence_dask(mixed, 26, client=client)
    np.testing.assert_allclose(again.to_dense(), local.to_dense(), rtol=1e-12, atol=1e-18)


def test_gather_and_pickle_give_the_local_statistics(client, corpus):
    import pickle
    local = build_cooccurrence(corpus, V)
    dist = build_cooccurrence_dask(as_bag(corpus, 3), V, client=client)
    for gathered in (dist.gather(), pickle.loads(pickle.dumps(dist))):
        assert isinstance(gathered, Cooccurrence) and gathered.mode == 'implicit'
        assert (gathered.num_docs, gathered.num_short, gathered.num_tokens) == (
            local.num_docs, local.num_short, local.num_tokens)
        np.testing.assert_array_equal(gathered.doc_freq, local.doc_freq)
        np.testing.assert_allclose(gathered.to_dense(), local.to_dense(), rtol=1e-12, atol=1e-18)


def test_same_seed_same_topics_as_one_machine(client, corpus, local_model, caplog):
    import logging
    with caplog.at_level(logging.INFO, logger='gensim_anchor.pipeline'):
        model = fit(as_bag(corpus), client=client)
    # the adaptive candidate rule ran on the partitions, with the single machine's quarters
    assert "held-out anchor volume" in caplog.text
    assert model._cooccurrence.mode == 'distributed'
    assert model.num_docs == local_model.num_docs and model.num_tokens == local_model.num_tokens
    np.testing.assert_array_equal(model.anchors, local_model.anchors)
    np.testing.assert_allclose(model.get_topics(), local_model.get_topics(), rtol=0, atol=1e-6)
    np.testing.assert_allclose(model.p_z, local_model.p_z, rtol=1e-6)
    # alpha='auto' fits its scale on a sample drawn from the partitions: a full sample here.
    assert len(model._sample.docs) == min(model.alpha_sample, len(corpus))
    assert model._sample.seen == len(corpus)
    assert np.all(model.alpha > 0)


def test_compressed_rectification_runs_on_the_partitions_and_matches_one_machine(client, corpus):
    """rectify=True (Lee et al. 2021) uses only products of Q with thin blocks: on a Dask
    corpus they are maps over the partitions, and the rectified fit is the one-machine fit."""
    local = fit(corpus, rectify=True, alpha='symmetric')
    model = fit(as_bag(corpus), client=client, rectify=True, alpha='symmetric')
    assert model._cooccurrence.mode == 'distributed'
    assert model.timings['rectify'] > 0 and local.timings['rectify'] > 0
    np.testing.assert_array_equal(model.anchors, local.anchors)
    np.testing.assert_allclose(model.get_topics(), local.get_topics(), rtol=0, atol=1e-5)
    # and rectification changed the fit (it is not silently skipped on a cluster)
    plain = fit(as_bag(corpus), client=client, alpha='symmetric')
    assert np.abs(plain.get_topics() - model.get_topics()).max() > 1e-4


def test_bag_uses_the_default_client_and_needs_one(client, corpus, caplog):
    bag = as_bag(corpus[:300], 2)
    with pytest.raises(ValueError, match=r"needs a dask.distributed Client"):
        fit(bag, alpha='symmetric')
    with client.as_current(), caplog.at_level(logging.WARNING, logger='gensim_anchor'):
        model = fit(bag, alpha='symmetric', distributed=True)
    assert model._cooccurrence.mode == 'distributed' and model.num_docs == 299
    # LdaModel's distributed=True is served by the Bag's cluster: no warning that it is not
    assert not [r for r in caplog.records if 'distributed=True' in r.getMessage()]


def same_topics(model, reference):
    np.testing.assert_array_equal(model.anchors, reference.anchors)
    np.testing.assert_allclose(model.get_topics(), reference.get_topics(), rtol=0, atol=1e-6)


def test_update_with_dask_and_local_documents_equals_training_on_everything(client, corpus, local_model):
    model = fit(as_bag(corpus[:500], 2), client=client, alpha='symmetric')
    model.update(as_bag(corpus[500:900], 2))
    assert model._cooccurrence.num_partitions == 4
    model.update(corpus[900:])  # plain documents: read here, sent to a worker as a partition
    assert model._cooccurrence.num_partitions == 5
    assert model.num_docs == local_model.num_docs
    same_topics(model, local_model)
    # A list of partitions trains on the model's client too.
    parts = fit([corpus[:400], corpus[400:1000], corpus[1000:]], client=client, alpha='symmetric')
    assert parts._cooccurrence.num_partitions == 3
    same_topics(parts, local_model)
    local_first = fit(corpus[:700], alpha='symmetric')
    with client.as_current():
        local_first.update(as_bag(corpus[700:], 2))
    assert local_first._cooccurrence.mode == 'distributed'
    assert local_first._cooccurrence.num_partitions == 3
    same_topics(local_first, local_model)


def test_update_with_a_bag_of_short_documents_equals_training_on_everything(client, corpus):
    short = [[(3, 1.0)], [], [(5, 1.0)]]  # no pair of Q: not an error in an update
    model = fit(as_bag(corpus[:600], 2), client=client, alpha='symmetric')
    model.update(as_bag(short, 2))
    model.update(as_bag(corpus[600:], 2))
    whole = fit(corpus[:600] + short + corpus[600:], alpha='symmetric')
    assert model._cooccurrence.num_short == whole._cooccurrence.num_short == 4
    same_topics(model, whole)


def test_save_gathers_the_statistics_and_not_the_client(client, corpus, local_model, tmp_path):
    model = fit(as_bag(corpus[:700], 2), client=client, alpha='symmetric')
    fname = str(tmp_path / 'anchor.model')
    model.save(fname, save_cooccurrence=True)
    loaded = AnchorModel.load(fname)
    assert getattr(loaded, '_client', None) is None
    assert isinstance(loaded._cooccurrence, Cooccurrence) and loaded._cooccurrence.mode == 'implicit'
    loaded.update(corpus[700:])
    same_topics(loaded, local_model)


def test_combine_samples_is_uniform_over_the_union():
    a, b = _Reservoir(5, 0), _Reservoir(5, 1)
    list(a.watch([('a', i) for i in range(10)]))
    list(b.watch([('b', i) for i in range(30)]))
    combined = combine_samples([a, None, b], 4, seed=2)
    assert combined.seen == 40 and len(combined.docs) == 4
    assert all(doc in a.docs or doc in b.docs for doc in combined.docs)
    # One document drawn from the union of 10 + 30: from b with probability 3/4.
    from_b = np.mean([combine_samples([a, b], 1, seed).docs[0][0] == 'b' for seed in range(2000)])
    assert abs(from_b - 0.75) < 4 * np.sqrt(0.75 * 0.25 / 2000)


def test_bad_input_is_reported(client, corpus):
    bad = [corpus[:10], corpus[10:20] + [[(3, -1.0), (4, 1.0)]]]
    with pytest.raises(ValueError, match=r"partition 1: document #10 has count -1"):
        build_cooccurrence_dask(bad, V, client=client)
    with pytest.raises(ValueError, match=r"outside the dictionary"):
        build_cooccurrence_dask([corpus[:10]], 5, client=client)
    with pytest.raises(TypeError, match=r"partition 0 looks like a single document"):
        build_cooccurrence_dask(corpus[:10], V, client=client)
    with pytest.raises(TypeError, match=r"dask.bag.Bag .* or a sequence of partitions, got int"):
        build_cooccurrence_dask(5, V, client=client)
    with pytest.raises(ValueError, match=r"no document in the corpus has two or more tokens"):
        build_cooccurrence_dask([[[(1, 1.0)]], [[]]], V, client=client)
    with pytest.raises(ValueError, match=r"the corpus is empty"):
        build_cooccurrence_dask([], V, client=client)


def test_metric_callbacks_score_a_cluster_model_without_copying_its_client(client, corpus):
    # DiffMetric and ConvergenceMetric deep-copy the model at every epoch: a Client cannot be
    # copied, nor should the statistics on the cluster be; they score the model's local state.
    from gensim.models.callbacks import ConvergenceMetric, DiffMetric
    callbacks = [DiffMetric(distance='jaccard', diagonal=True), ConvergenceMetric(distance='jaccard')]
    model = fit(as_bag(corpus[:600], 2), client=client, alpha='symmetric', callbacks=callbacks)
    assert model.metrics['Convergence'] == [0.0]
    before = copy.copy(model)  # its topics: update() replaces the array, not its values
    model.update(as_bag(corpus[600:], 2))
    assert model._client is client
    expected = np.sum(model.diff(before, 'jaccard', 100, 10, True, False, True)[0])
    assert model.metrics['Convergence'][0] > 0.1
    np.testing.assert_allclose(model.metrics['Convergence'], [expected], rtol=1e-6)


def test_a_deep_copy_shares_the_client_and_gathers_the_statistics(client, corpus, local_model):
    model = fit(as_bag(corpus[:700], 2), client=client)
    twin = copy.deepcopy(model)
    assert twin._client is client and model._client is client
    assert isinstance(model._cooccurrence, DistributedCooccurrence)
    assert isinstance(twin._cooccurrence, Cooccurrence)
    assert twin._cooccurrence.num_docs == model._cooccurrence.num_docs == 699  # one short document
    np.testing.assert_array_equal(twin.get_topics(), model.get_topics())
    assert twin.get_topics() is not model.get_topics()
    twin.update(corpus[700:])  # the copy trains on, as one trained on this machine
    same_topics(twin, local_model)


def test_a_model_with_a_client_pickles_without_it_and_infers_on_the_workers(client, corpus):
    # Dask pickles what a task calls: bag.map(model.get_document_topics) sends the model itself.
    model = fit(as_bag(corpus[:600], 2), client=client, alpha='symmetric')
    clone = pickle.loads(pickle.dumps(model))
    assert clone._client is None and model._client is client
    assert isinstance(clone._cooccurrence, Cooccurrence)  # gathered, as save() gathers it
    np.testing.assert_array_equal(clone.get_topics(), model.get_topics())
    assert copy.copy(model)._client is client  # a shallow copy keeps it
    docs = corpus[600:640]
    on_workers = client.compute(as_bag(docs, 2).map(model.get_document_topics)).result()
    assert on_workers == [model.get_document_topics(doc) for doc in docs]
