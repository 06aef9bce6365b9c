"""Gibbs refinement of a corpus held by a Dask cluster: the hybrid for corpora that outgrow one
machine.

:func:`gibbs_refine_dask` is :func:`gensim_anchor.hybrid.gibbs_refine` for a ``dask.bag`` of
bag-of-words documents (or a list of partitions). It is AD-LDA (Newman, Asuncion, Smyth &
Welling, "Distributed algorithms for topic models", JMLR 2009), whose approximation the
one-machine collapsed sampler already makes within a sweep. Each partition p keeps its tokens,
their topics :math:`z^{(p)}` and its document-topic counts :math:`n^{(p)}_{dk}` on its worker,
and a sweep is

.. math::

    z^{(p)},\\, n^{(p)}_{dk} \\leftarrow \\mathrm{sweep}\\big(z^{(p)}, n^{(p)}_{dk};\\ n_{kw}\\big)
    \\quad \\text{for every } p \\text{ in parallel}, \\qquad
    n_{kw} \\leftarrow n_{kw} + \\sum_p \\Delta^{(p)}_{kw},

every partition sampling against the topic-word counts of the previous sweep (and its own moves)
with the one-machine sampler's jitted sweep, ``substeps`` sub-steps inside the partition. The
client sums the partitions' count changes :math:`\\Delta^{(p)}`, updates alpha (Minka's fixed
point, one step per sweep, from per-partition sums of digammas) and applies the convergence rule
of :func:`~gensim_anchor.hybrid.gibbs_refine` (the log joint per token every 5 sweeps, its
document part summed over the partitions).

What travels in a sweep: :math:`n_{kw}` (K x V int32) to every worker once, and back from each
partition its :math:`\\Delta^{(p)}` (K x V, sent sparse when fewer than half its entries moved)
and K + 2 numbers. Documents never reach the client. A worker holds, per partition, 12 bytes per
token (document, word, topic) and 4 K bytes per document (padded by at most 1/8, so that
partitions of similar sizes share one compiled sweep); the partitions' documents, as Python
lists several times that size, are read two per worker at a time and dropped once parsed.

The same seed and the same partitioning give the same topics: partition p draws from the sweep's
key folded with p, and the counts are integers summed exactly, so neither the number of workers
nor which worker holds a partition changes the result.

Worker loss: a partition's sweep runs on the worker holding its state, and the client polls the
cluster while it waits. When that worker is gone (killed, out of memory, its machine lost), the
partition is rebuilt on a surviving worker: its documents are computed again from the bag's
graph (the Dask fit's lineage), its topics drawn from the current topics (the posterior mean of
the counts) and alpha, as the first assignments were drawn from the anchor topics; the
topic-word counts are then recounted from every partition's state, so that they match the
tokens' topics exactly, and the sampler goes on. The other partitions keep their chains. A run
with a loss is a valid chain, not the same numbers as an undisturbed run with the same seed. At
the end the counts are checked against a recount from all partitions.

Pointing it at a real cluster: as for the fit (:mod:`gensim_anchor.distributed`). Each worker
needs JAX; give each worker process its own cores (``--nthreads 1`` and several processes per
machine, or one process per machine with XLA's threads): a sweep is one XLA program.

Examples
--------
.. sourcecode:: pycon

    >>> import dask.bag as db
    >>> from distributed import Client, LocalCluster
    >>> from gensim.corpora import Dictionary
    >>> from gensim.test.utils import common_texts
    >>> from gensim_anchor import AnchorModel
    >>> dictionary = Dictionary(common_texts)
    >>> corpus = [dictionary.doc2bow(text) for text in common_texts]
    >>> with LocalCluster(n_workers=1, processes=False, dashboard_address=':0') as cluster, \\
    ...         Client(cluster) as client:
    ...     bag = db.from_sequence(corpus, npartitions=2)
    ...     model = AnchorModel(bag, num_topics=2, id2word=dictionary, anchor_min_df=1,
    ...                         alpha='symmetric', random_state=1, client=client)
    ...     _ = model.refine(bag, 'gibbs', num_sweeps=6, burn_in=3, client=client)
    >>> model.refinement['partitions'], model.get_topics().shape
    (2, (2, 12))

"""
import functools
import logging
import time
from typing import NamedTuple

import numpy as np

from . import _compile_cache
from ._defaults import (DEFAULT_ETA, DEFAULT_OPTIMIZE_ALPHA, DEFAULT_SAMPLER, DEFAULT_SUBSTEPS,
                        DEFAULT_SWEEPS, REFINE_AVERAGE, REFINE_CHECK_EVERY, REFINE_TOL)
from ._sampling import seed_of
from .distributed import _client, _partition_sources
from .hybrid import (_LOG_EVERY, _burn_in_ends, _check_arguments, _compiled_sweep, _flatten,
                     _posterior_mean, _start_chain, _start_topics)

logger = logging.getLogger(__name__)

#: Seconds between two looks at the cluster while a round of tasks runs: how soon a lost worker
#: is noticed (a look is one small request to the scheduler).
POLL_SECONDS = 0.5
#: Seconds a scatter of the counts to one worker may take before that worker counts as gone.
SCATTER_TIMEOUT = 60
#: Rounds of rebuilding in a row (a sweep's losses, then losses during the rebuild or the
#: recount) before the refinement gives up.
MAX_RECOVERIES = 5
#: Seconds to wait for a worker to join when every worker has been lost.
WORKER_WAIT_SECONDS = 60.0


class DaskGibbsResult(NamedTuple):
    """Topics and prior after a Dask refinement: :class:`~gensim_anchor.hybrid.GibbsResult`'s
    fields, and the cluster's side.

    Attributes
    ----------
    topics, alpha, num_tokens, num_sweeps, burn_in, converged, log_joint :
        As :class:`~gensim_anchor.hybrid.GibbsResult`.
    num_docs : int
        Documents read from the partitions.
    num_partitions : int
        Partitions sampled (partitions without tokens are dropped).
    num_workers : int
        Workers when the refinement started.
    recovered : tuple of (int, int)
        (sweep, partition) of every partition rebuilt after its worker was lost (sweep 0: while
        the partitions were read).
    sweep_seconds : numpy.ndarray, shape (num_sweeps,)
        Wall-clock seconds of each sweep on the client (the round trip, alpha and the rule).
    """
    topics: np.ndarray
    alpha: np.ndarray
    num_tokens: int
    num_sweeps: int
    burn_in: int
    converged: bool
    log_joint: np.ndarray
    num_docs: int
    num_partitions: int
    num_workers: int
    recovered: tuple
    sweep_seconds: np.ndarray


class StalePartitionError(RuntimeError):
    """A partition's state is not at the sweep the client expects: it was recomputed by Dask
    from its first state, or is a stale copy. The client rebuilds the partition."""


# ----------------------------------------------------------------------------------------------
# Tasks run on the workers (module-level functions, so that they pickle by reference)
# ----------------------------------------------------------------------------------------------

class _PartitionState:
    """One partition's sampler state on its worker; never sent to the client.

    The token arrays are the sampler's JAX arrays (a copy into JAX each sweep would cost as much
    as a tenth of the sweep); Dask pickles them as numpy if it spills them to disk. The sweep
    tasks update the object in place, and ``sweep`` counts the sweeps it has seen, so that a copy
    that missed one is detected (:class:`StalePartitionError`).
    """

    def __init__(self, index, num_docs, num_tokens, doc, word, z, n_dk, offsets, sweep):
        self.index, self.num_docs, self.num_tokens = index, num_docs, num_tokens
        self.doc, self.word, self.z, self.n_dk = doc, word, z, n_dk
        self.offsets, self.sweep = offsets, sweep

    @property
    def padded_docs(self):
        return None if self.n_dk is None else int(self.n_dk.shape[0])

    def __sizeof__(self):  # Dask's memory accounting (spilling, the dashboard)
        return 256 + sum(int(a.nbytes) for a in (self.doc, self.word, self.z, self.n_dk) if a is not None)


def _parse_partition(docs, index, num_terms, chunksize):
    """(document index, word id) per token of a partition's documents, checked
    (:func:`~gensim_anchor.hybrid._flatten`); and the number of documents."""
    try:
        return _flatten(docs, num_terms, chunksize)
    except (TypeError, ValueError) as err:
        raise type(err)("partition %d: %s" % (index, err)) from None


class _Documents:
    """A partition's documents as a ``dask.delayed`` object, computed by the task that starts
    the partition (opaque to Dask, which would otherwise pass the Delayed object itself)."""

    def __init__(self, delayed):
        self.delayed = delayed


def _start_partition(docs, index, num_terms, start_t, key, sweep, substeps, chunksize):
    """A partition's state: its tokens, their first topics drawn from ``start_t`` (V x K,
    p(z | w) up to a constant per word) and its document-topic counts."""
    import jax
    import jax.numpy as jnp
    _compile_cache.enable()
    if isinstance(docs, _Documents):
        docs = docs.delayed.compute(scheduler='sync')
    doc, word, num_docs = _parse_partition(docs, index, num_terms, chunksize)
    if not len(doc):
        return _PartitionState(index, num_docs, 0, None, None, None, None, None, sweep)
    num_tokens = len(doc)
    # The partitions never update alpha (the client does, from their statistics).
    doc, word, z, n_dk, _, offsets, _ = _start_chain(
        jax.random.fold_in(jnp.asarray(key), index), start_t, doc, word, num_docs,
        substeps=substeps, optimize_alpha=False)
    return _PartitionState(index, num_docs, num_tokens, doc, word, z, n_dk, offsets, sweep)


def _report(state, num_terms, num_topics):
    """(documents, tokens, the partition's topic-word counts (K x V int32, None when empty))."""
    if not state.num_tokens:
        return state.num_docs, 0, None
    counts, _ = _compiled_sweep('collapsed', state.padded_docs, num_terms, num_topics, False, state.offsets)
    return state.num_docs, state.num_tokens, np.asarray(counts(state.doc, state.word, state.z)[1])


@functools.lru_cache(maxsize=2)
def _statistics_fn(log_joint):
    """Jitted per-partition sums for the client: Minka's numerator (K,) and denominator, and the
    documents' part of the log joint (Griffiths & Steyvers 2004), per document
    :math:`\\sum_k [\\log\\Gamma(n_{dk} + \\alpha_k) - \\log\\Gamma(\\alpha_k)] -
    [\\log\\Gamma(n_d + \\alpha_0) - \\log\\Gamma(\\alpha_0)]`. Padding rows are zero counts,
    whose terms are exactly zero."""
    import jax
    import jax.numpy as jnp
    from jax.scipy.special import digamma, gammaln

    def statistics(n_dk, alpha):
        n = n_dk.astype(alpha.dtype)
        n_d, a0 = n.sum(axis=1), alpha.sum()
        num = jnp.sum(digamma(n + alpha) - digamma(alpha), axis=0)
        den = jnp.sum(digamma(n_d + a0) - digamma(a0))
        if not log_joint:
            return num, den, jnp.zeros((), alpha.dtype)
        docs = jnp.sum(gammaln(n + alpha) - gammaln(alpha)) - jnp.sum(gammaln(n_d + a0) - gammaln(a0))
        return num, den, docs

    return jax.jit(statistics)


def _sweep_partition(state, n_kw, alpha, eta, key, sweep, statistics, log_joint):
    """One collapsed sweep of a partition against the counts ``n_kw`` (K x V int32): the state
    is updated in place; returns the change of the counts (dense, or (flat index, value) when
    sparser) and, with ``statistics``, the partition's sums for alpha and the log joint."""
    import jax
    import jax.numpy as jnp
    if state.sweep != sweep:
        raise StalePartitionError("partition %d holds sweep %d, the client is at sweep %d"
                                  % (state.index, state.sweep, sweep))
    num_topics, num_terms = n_kw.shape
    _, run = _compiled_sweep('collapsed', state.padded_docs, num_terms, num_topics, False, state.offsets)
    alpha = jnp.asarray(alpha, jnp.float32)
    z, n_dk, new, _, _ = run(jax.random.fold_in(jnp.asarray(key), state.index), state.doc, state.word,
                             state.z, state.n_dk, jnp.asarray(n_kw), alpha, jnp.float32(eta))
    delta = np.asarray(new) - n_kw
    moved = np.flatnonzero(delta)
    if 2 * moved.size < delta.size:  # an index and a value per entry: smaller when sparse
        delta = (moved.astype(np.int32 if delta.size < 2 ** 31 else np.int64), delta.ravel()[moved])
    sums = None
    if statistics:
        sums = tuple(np.asarray(v, dtype=np.float64) for v in _statistics_fn(bool(log_joint))(n_dk, alpha))
    state.z, state.n_dk, state.sweep = z, n_dk, sweep + 1
    return delta, sums


def _statistics_of(state, alpha, log_joint):
    """The sums of :func:`_sweep_partition` for a partition's current state (a rebuilt one)."""
    import jax.numpy as jnp
    fn = _statistics_fn(bool(log_joint))
    return tuple(np.asarray(v, dtype=np.float64) for v in fn(state.n_dk, jnp.asarray(alpha, jnp.float32)))


# ----------------------------------------------------------------------------------------------
# The client side
# ----------------------------------------------------------------------------------------------

def _log_joint_words(n_kw, eta):
    """The topics' part of log p(w, z | alpha, eta) (Griffiths & Steyvers 2004, eq. 2)."""
    from scipy.special import gammaln
    K, V = n_kw.shape
    n = n_kw.astype(np.float64)
    return float(K * (gammaln(V * eta) - V * gammaln(eta)) + gammaln(n + eta).sum()
                 - gammaln(n.sum(axis=1) + V * eta).sum())


class _Partitions:
    """The client's handle on the partitions: where each one's state lives, how to read it
    again, and rounds of tasks that notice a lost worker instead of waiting for it."""

    def __init__(self, client, sources, num_terms, num_topics, substeps, chunksize):
        self.client, self.sources = client, list(sources)
        self.num_terms, self.num_topics = num_terms, num_topics
        self.substeps, self.chunksize = substeps, chunksize
        self.state, self.where = {}, {}
        self.active = list(range(len(self.sources)))
        self.num_docs = self.num_tokens = 0
        self.recovered = []

    # -- placement -------------------------------------------------------------------------
    def _alive(self):
        return set(self.client.nthreads())

    def _workers(self):
        """The workers now, sorted; waits for one when all have been lost."""
        workers = sorted(self._alive())
        if not workers:
            logger.warning("every Dask worker has been lost; waiting up to %.0f s for one",
                           WORKER_WAIT_SECONDS)
            try:
                self.client.wait_for_workers(1, timeout=WORKER_WAIT_SECONDS)
            except TimeoutError:
                raise RuntimeError("every Dask worker was lost during the refinement and none "
                                   "joined within %.0f s" % WORKER_WAIT_SECONDS) from None
            workers = sorted(self._alive())
        return workers

    def _least_loaded(self, workers):
        load = {w: 0 for w in workers}
        for p in self.active:
            if self.where.get(p) in load:
                load[self.where[p]] += 1
        return min(workers, key=lambda w: (load[w], w))

    def _raw(self, p, worker):
        """Partition p's documents for a start task on ``worker``: a future, or a
        :class:`_Documents` that the task computes itself."""
        from dask.delayed import Delayed
        from distributed import Future, futures_of
        source = self.sources[p]
        if isinstance(source, Future):
            return source
        if isinstance(source, Delayed):
            if futures_of(source):  # built on data already on the cluster: Dask computes it
                return self.client.compute(source)
            # Computed inside the start task, on its worker: the documents never become Dask
            # data (no copy between workers, none kept after parsing), and no task key outlives
            # the start (a bag's keys are deterministic, and a key computed for a worker since
            # lost kept that worker as its restriction: a rebuild waited for it forever).
            return _Documents(source)
        return self.client.scatter([list(source)], workers=[worker], hash=False)[0]

    # -- rounds ----------------------------------------------------------------------------
    def _collect(self, futures, fetch=True):
        """Wait for one future per partition; (results, lost partitions). A partition is lost
        when its worker is gone or its state is not the expected one; a task's own error is
        raised. Results are fetched as their tasks finish, while the others still run (fetched
        after the last one, they added half a sweep on one core)."""
        from concurrent.futures import CancelledError
        from distributed import wait
        results, lost, pending = {}, set(), dict(futures)
        while pending:
            with self.client.as_current():
                try:
                    wait(list(pending.values()), timeout=POLL_SECONDS, return_when='FIRST_COMPLETED')
                except (TimeoutError, CancelledError):  # cancelled: its input was lost
                    pass
            alive = self._alive()
            for p, future in sorted(pending.items()):
                state = self.state.get(p)
                gone = (self.where[p] not in alive
                        or (state is not None and state is not future
                            and state.status in ('lost', 'error', 'cancelled')))
                if future.status == 'finished' and not gone:
                    if fetch:
                        try:
                            results[p] = future.result(timeout=10 * POLL_SECONDS)
                        except (TimeoutError, CancelledError, OSError):
                            continue  # its worker went away meanwhile: looked at on the next turn
                    del pending[p]
                elif future.status == 'error' and isinstance(future.exception(), StalePartitionError):
                    lost.add(p)
                    del pending[p]
                elif future.status == 'error' and not gone:
                    future.result()  # the task's own error, with the worker's traceback
                elif gone or future.status == 'cancelled':
                    lost.add(p)
                    future.cancel()
                    del pending[p]
        return results, lost

    def _scatter(self, data, workers):
        """``data`` on each of ``workers``: {worker: future}, without the workers that went away.

        One scatter per worker rather than a broadcast: a broadcast replicates until every
        worker holds a copy, and waited forever on a worker killed meanwhile."""
        shared = {}
        for worker in sorted(set(workers)):
            try:
                # A bounded wait: a scatter to a worker that dies during it must not block.
                shared[worker] = self.client.scatter(data, workers=[worker], hash=False,
                                                     timeout=SCATTER_TIMEOUT)
            except (OSError, TimeoutError, KeyError, ValueError) as err:  # the worker is gone
                logger.debug("scatter to %s failed (%s: %s)", worker, type(err).__name__, err)
        return shared

    def _run(self, function, parts, *args, shared=None):
        """``function(state, [shared copy on its worker,] *args)`` on each partition's worker:
        (results, lost). ``shared``: {worker: future}, from :meth:`_scatter`."""
        futures, missing = {}, set()
        for p in parts:
            head = ()
            if shared is not None:
                if self.where[p] not in shared:
                    missing.add(p)
                    continue
                head = (shared[self.where[p]],)
            futures[p] = self.client.submit(function, self.state[p], *head, *args, workers=[self.where[p]],
                                            allow_other_workers=False, pure=False)
        results, lost = self._collect(futures)
        return results, lost | missing

    def start(self, parts, start_t, key, sweep):
        """Read partitions and draw their first topics on their workers; partitions lost
        meanwhile are started again elsewhere."""
        for attempt in range(MAX_RECOVERIES + 1):
            workers = self._workers()
            futures = {}
            for i, p in enumerate(sorted(parts)):
                old = self.state.pop(p, None)
                if old is not None:
                    old.cancel()
                # A first placement spreads the partitions in turn; a rebuilt one goes to the
                # least loaded worker (the restarted one, once it is back).
                self.where[p] = (workers[i % len(workers)] if sweep == 0 and attempt == 0
                                 else self._least_loaded(workers))
            shared = self._scatter(start_t, [self.where[p] for p in parts])
            lost = {p for p in parts if self.where[p] not in shared}
            todo = sorted(set(parts) - lost)
            # In waves of two partitions per worker: the documents of a partition, as Python
            # lists, take several times its state, and read all at once a worker held every
            # partition's documents before starting one (5 x 10^7 tokens: 5.8 GB on one worker).
            wave = 2 * max(len(shared), 1)
            for lo in range(0, len(todo), wave):
                batch = {}
                for p in todo[lo:lo + wave]:
                    worker = self.where[p]
                    try:
                        raw = self._raw(p, worker)
                    except (OSError, TimeoutError, KeyError, ValueError):  # scattered to a lost worker
                        lost.add(p)
                        continue
                    batch[p] = self.client.submit(
                        _start_partition, raw, p, self.num_terms, shared[worker], key, sweep,
                        self.substeps, self.chunksize, workers=[worker], allow_other_workers=False,
                        pure=False)
                lost |= self._collect(batch, fetch=False)[1]
                futures.update(batch)
            for p in parts:
                if p not in lost:
                    self.state[p] = futures[p]
            if not lost:
                return
            self._note_lost(lost, sweep)
            parts = lost
        raise RuntimeError("partitions %s could not be started: their workers were lost %d times"
                           % (sorted(parts), MAX_RECOVERIES + 1))

    def report(self):
        """The topic-word counts summed over the partitions (K x V int32) and their lost ones;
        drops the partitions without tokens on the first call."""
        results, lost = self._run(_report, self.active, self.num_terms, self.num_topics)
        total = np.zeros((self.num_topics, self.num_terms), np.int32)
        for p in sorted(results):
            if results[p][2] is not None:
                total += results[p][2]
        return total, results, lost

    def _note_lost(self, lost, sweep):
        for p in sorted(lost):
            logger.warning("partition %d lost its worker %s during sweep %d: rebuilt from its "
                           "documents and the current topics", p, self.where.get(p), sweep)
            self.recovered.append((sweep, p))

    def recover(self, lost, start_topics, key, sweep):
        """Rebuild ``lost`` partitions from ``start_topics()`` and recount the counts from every
        partition: (n_kw, the rebuilt partitions)."""
        rebuilt = set()
        for _ in range(MAX_RECOVERIES):
            self._note_lost(lost, sweep)
            self.start(lost, start_topics(), key, sweep)
            rebuilt |= set(lost)
            n_kw, _, lost = self.report()
            if not lost:
                return n_kw, rebuilt
        raise RuntimeError("the refinement lost workers %d times in a row at sweep %d; giving up"
                           % (MAX_RECOVERIES, sweep))

    def sweep(self, sweep, n_kw, alpha, eta, key, statistics, log_joint):
        """One sweep of every partition: (summed count changes or None when lost partitions
        must be rebuilt, {partition: sums}, lost partitions)."""
        shared = self._scatter(n_kw, [self.where[p] for p in self.active])
        results, lost = self._run(_sweep_partition, self.active, alpha, eta, key, sweep, statistics,
                                  log_joint, shared=shared)
        sums = {p: r[1] for p, r in results.items()}
        if lost:
            return None, sums, lost
        delta = np.zeros(n_kw.size, np.int32)
        for p in sorted(results):
            change = results[p][0]
            if isinstance(change, tuple):
                delta[change[0]] += change[1]  # flat indices are unique
            else:
                delta += change.ravel()
        return delta.reshape(n_kw.shape), sums, lost

    def statistics(self, parts, alpha, log_joint):
        """The sums of partitions' current states (rebuilt ones): (results, lost)."""
        return self._run(_statistics_of, sorted(parts), alpha, log_joint)

    def release(self):
        for future in self.state.values():
            future.release()
        self.state = {}


def _sum_statistics(sums, num_topics):
    num, den, docs = np.zeros(num_topics), 0.0, 0.0
    for p in sorted(sums):
        num += sums[p][0]
        den += float(sums[p][1])
        docs += float(sums[p][2])
    return num, den, docs


def gibbs_refine_dask(topics, alpha, corpus, *, client=None, p_z=None, num_sweeps=DEFAULT_SWEEPS,
                      burn_in=None, eta=DEFAULT_ETA, optimize_alpha=DEFAULT_OPTIMIZE_ALPHA,
                      sampler=DEFAULT_SAMPLER, substeps=DEFAULT_SUBSTEPS, tol=REFINE_TOL,
                      random_state=None, callback=None, chunksize=2000):
    """Refine topics by collapsed Gibbs sampling for LDA on a Dask cluster, starting from them.

    The one-machine sampler (:func:`~gensim_anchor.hybrid.gibbs_refine`, same options and
    convergence rule) with each partition's tokens kept on its worker (AD-LDA; see the module
    docstring for what travels and how a lost worker is handled).

    Parameters
    ----------
    topics : array_like, shape (K, V)
        Starting p(w | z) (rows sum to 1), e.g. ``AnchorModel.get_topics()``.
    alpha : array_like, shape (K,)
        Starting Dirichlet prior on document topics.
    corpus : dask.bag.Bag or sequence
        Bag-of-words documents: a Bag, or a sequence of partitions (lists of documents,
        ``dask.delayed`` objects or ``distributed.Future`` s), as for
        :func:`~gensim_anchor.distributed.build_cooccurrence_dask`. Each partition is read on
        its worker; word ids must lie in [0, V).
    client : distributed.Client, optional
        Default: the current default client.
    p_z, num_sweeps, burn_in, eta, optimize_alpha, substeps, tol, random_state :
        As :func:`~gensim_anchor.hybrid.gibbs_refine`. The log joint of a check uses the alpha
        of that sweep (the one-machine sampler's, after the sweep's alpha step: one Minka step
        apart).
    sampler : {'collapsed'}
        Only the collapsed sampler has a Dask form.
    callback : callable, optional
        ``callback(sweep, state)`` after every sweep (1-based), with ``state`` a dict of the
        summed counts ``n_kw`` (numpy), ``alpha`` and the running ``average`` of the topic
        estimates (None during burn-in); ``n_dk`` is None (it stays on the workers).
    chunksize : int
        Documents parsed at a time on a worker.

    Returns
    -------
    DaskGibbsResult

    Raises
    ------
    ValueError
        Before any sweep: a client without workers, ``sampler='blocked'``, a partition whose
        documents do not fit the topics (a word id >= V, named with its partition and
        document), a corpus without tokens.
    RuntimeError
        When workers are lost over and over (:data:`MAX_RECOVERIES` rounds in a row) or none
        is left.

    Examples
    --------
    .. sourcecode:: pycon

        >>> import dask.bag as db
        >>> import numpy as np
        >>> from distributed import Client, LocalCluster
        >>> from gensim_anchor.distributed_hybrid import gibbs_refine_dask
        >>> docs = [[(0, 3), (1, 2)], [(2, 4), (3, 1)]] * 10
        >>> topics = np.array([[0.4, 0.4, 0.1, 0.1], [0.1, 0.1, 0.4, 0.4]])
        >>> with LocalCluster(n_workers=1, processes=False, dashboard_address=':0') as cluster, \\
        ...         Client(cluster) as client:
        ...     result = gibbs_refine_dask(topics, [0.5, 0.5], db.from_sequence(docs, npartitions=2),
        ...                                client=client, num_sweeps=10, burn_in=5, random_state=0)
        >>> result.topics.shape, result.num_partitions, result.num_tokens
        ((2, 4), 2, 100)
    """
    import jax
    _compile_cache.enable()
    topics, alpha, weights, num_sweeps, burn_in, tol, eta, sampler, substeps = _check_arguments(
        topics, alpha, p_z, num_sweeps, burn_in, tol, eta, sampler, substeps)
    if sampler != 'collapsed':
        raise ValueError("sampler=%r has no Dask form: on a cluster the refinement runs the "
                         "collapsed sampler (AD-LDA); use sampler='collapsed'" % sampler)
    client = _client(client)
    num_workers = len(client.nthreads())
    if not num_workers:
        raise ValueError("the Dask client has no workers: start some (e.g. `dask worker %s`) or "
                         "wait for them with client.wait_for_workers(n) before refining"
                         % client.scheduler.address)
    sources = _partition_sources(corpus)
    K, V = topics.shape
    seed = seed_of(random_state)
    start = time.perf_counter()
    key = jax.random.PRNGKey(seed)
    key, k0 = jax.random.split(key)
    parts = _Partitions(client, sources, V, K, substeps, chunksize)
    try:
        parts.start(range(len(sources)), _start_topics(topics, weights), np.asarray(k0), 0)
        n_kw, reports, lost = parts.report()
        if lost:
            n_kw, _ = parts.recover(lost, lambda: _start_topics(topics, weights), np.asarray(k0), 0)
            _, reports, _ = parts.report()
        parts.num_docs = sum(r[0] for r in reports.values())
        parts.num_tokens = num_tokens = sum(r[1] for r in reports.values())
        empty = [p for p in parts.active if not reports[p][1]]
        parts.active = [p for p in parts.active if reports[p][1]]
        for p in empty:
            parts.state.pop(p).release()
        if not num_tokens:
            raise ValueError("the corpus has no tokens to sample")
        logger.info("Dask Gibbs refinement: %d partitions with tokens (of %d) on %d workers, %d "
                    "documents, %d tokens, K=%d, V=%d; started in %.2fs", len(parts.active),
                    len(sources), num_workers, parts.num_docs, num_tokens, K, V,
                    time.perf_counter() - start)
        result = _sample(parts, n_kw, alpha, key, num_sweeps=num_sweeps, burn_in=burn_in, eta=eta,
                         optimize_alpha=optimize_alpha, tol=tol, callback=callback, start=start)
    finally:
        parts.release()
    return result._replace(num_workers=num_workers)


def _sample(parts, n_kw, alpha, key, *, num_sweeps, burn_in, eta, optimize_alpha, tol, callback,
            start):
    """The sweeps, alpha and the convergence rule (the loop of
    :func:`~gensim_anchor.hybrid.gibbs_refine`, with the partitions' sums)."""
    import jax
    K, V = n_kw.shape
    alpha_f = alpha.astype(np.float32)
    total = np.zeros((K, V))
    adaptive, converged, checks = burn_in is None, burn_in is not None, []
    end = num_sweeps
    seconds = []
    last_log = time.perf_counter()
    for i in range(num_sweeps):
        tick = time.perf_counter()
        key, k = jax.random.split(key)
        check = burn_in is None and (i + 1) % REFINE_CHECK_EVERY == 0
        delta, sums, lost = parts.sweep(i, n_kw, alpha_f, eta, np.asarray(k), optimize_alpha or check, check)
        if lost:
            def current_topics(n_kw=n_kw, alpha_f=alpha_f):
                return _start_topics(_posterior_mean(n_kw, eta, np.float64), alpha_f / alpha_f.sum())

            rebuild_key = np.asarray(jax.random.fold_in(k, 1))
            n_kw, rebuilt = parts.recover(lost, current_topics, rebuild_key, i + 1)
            for _ in range(MAX_RECOVERIES):  # the rebuilt partitions' sums, for alpha and the rule
                if not (optimize_alpha or check):
                    break
                more, lost = parts.statistics(rebuilt, alpha_f, check)
                sums.update(more)
                if not lost:
                    break
                n_kw, again = parts.recover(lost, current_topics, rebuild_key, i + 1)
                rebuilt = set(lost) | again
            else:
                raise RuntimeError("the refinement lost workers %d times in a row at sweep %d"
                                   % (MAX_RECOVERIES, i + 1))
        else:
            n_kw = n_kw + delta
        if optimize_alpha or check:
            num, den, docs = _sum_statistics(sums, K)
        if check:
            joint = (_log_joint_words(n_kw, eta) + docs) / parts.num_tokens
            checks.append((i + 1, joint))
        if burn_in is None:
            ends, settled = _burn_in_ends(i + 1, num_sweeps, checks, tol)
            if ends:
                burn_in, converged = i + 1, settled
                end = min(num_sweeps, burn_in + max(REFINE_AVERAGE, burn_in))
        if optimize_alpha:
            # Minka's fixed point, one step per sweep as on one machine, in float32 as there.
            alpha_f = np.maximum(alpha_f * (num / max(den, 1e-30)).astype(np.float32),
                                 np.float32(1e-6)).astype(np.float32)
        if burn_in is not None and i >= burn_in:
            total += _posterior_mean(n_kw, eta, np.float64)
        seconds.append(time.perf_counter() - tick)
        if callback is not None:
            average = None if burn_in is None or i < burn_in else total / (i + 1 - burn_in)
            callback(i + 1, dict(n_kw=n_kw, n_dk=None, alpha=alpha_f, average=average))
        if time.perf_counter() - last_log > _LOG_EVERY:
            last_log = time.perf_counter()
            logger.info("Dask Gibbs sweep %d/%d (%s burn-in), %.1f s, alpha sum %.3g", i + 1, end,
                        burn_in if burn_in is not None else 'adaptive', last_log - start,
                        float(alpha_f.sum()))
        if i + 1 >= end:
            break
    counted, _, lost = parts.report()
    if lost:
        logger.warning("a worker was lost after the last sweep; the counts were not checked")
    elif not np.array_equal(counted, n_kw):
        raise RuntimeError("the summed topic-word counts disagree with the partitions' own (%d "
                           "entries differ): a bug, please report it" % int((counted != n_kw).sum()))
    result = total / total.sum(axis=1, keepdims=True)
    logger.info("Dask Gibbs refinement: %d sweeps (%d burn-in%s) over %d tokens in %d partitions, "
                "K=%d, in %.2fs (%.3f s per sweep)%s", i + 1, burn_in,
                "" if not adaptive else ", settled" if converged else ", not settled: the cap",
                parts.num_tokens, len(parts.active), K, time.perf_counter() - start,
                float(np.mean(seconds)),
                "; %d partitions rebuilt after lost workers" % len(parts.recovered)
                if parts.recovered else "")
    return DaskGibbsResult(result, alpha_f.astype(np.float64), parts.num_tokens, i + 1, burn_in,
                           converged, np.array(checks, dtype=np.float64).reshape(-1, 2),
                           parts.num_docs, len(parts.active), 0, tuple(parts.recovered),
                           np.array(seconds))
