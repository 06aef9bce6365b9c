"""Co-occurrence statistics of a corpus spread over a Dask cluster: Q without a single machine
ever holding the corpus.

Q is a sum over documents, so for a corpus in partitions p (:mod:`.cooccurrence` has the
notation)

.. math::

    QX = \\frac{1}{M}\\sum_p \\big(\\tilde H_p(\\tilde H_p^T X) - \\hat h_p \\circ X\\big), \\qquad
    Q_{S,:} = \\frac{1}{M}\\sum_p \\big(\\tilde H_{p,S}\\tilde H_p^T - \\mathrm{Diag}(\\hat h_p)_{S,:}\\big).

Each partition's statistics (a :class:`~gensim_anchor.cooccurrence.Cooccurrence` in implicit
mode: its sparse :math:`\\tilde H_p`, V x M_p) are built on a worker and stay there;
:class:`DistributedCooccurrence` has the interface the rest of the pipeline uses (``matmul``,
``rows``, ``row_sums``, the per-word statistics), and every product is a map over the partitions
followed by a sum done pairwise on the workers. Only thin matrices travel: X (V x k) to the
workers and one V x k (or ``len(S)`` x V) result to the client. The per-word statistics (V-vectors)
and a small uniform sample of each partition's documents come back once, when Q is built.

Pointing it at a real cluster
-----------------------------
Start a scheduler and workers (one thread each: the sparse products are single-threaded and
hold the GIL, so use several worker processes per machine rather than threads), with the same
versions of gensim_anchor and its dependencies installed everywhere::

    dask scheduler                                    # on one machine; prints tcp://HOST:8786
    dask worker tcp://HOST:8786 --nworkers 8 --nthreads 1 --memory-limit 8GB   # on each machine

and connect to it from the client::

    from dask.distributed import Client
    import dask.bag as db
    client = Client("tcp://HOST:8786")
    bag = db.read_text("s3://bucket/corpus-*.txt").map(lambda line: dictionary.doc2bow(line.split()))
    model = AnchorModel(bag, num_topics=100, id2word=dictionary)   # uses the default client

Each worker needs memory for its partitions' :math:`\\tilde H_p` (a float64 value and an
integer index per distinct word of each document) plus a few V x k matrices; the client needs O(V k) (k = 128 to 1000 for
the products, ``kl_block_size`` rows for RecoverKL).

Examples
--------
.. sourcecode:: pycon

    >>> from distributed import Client, LocalCluster
    >>> from gensim.corpora import Dictionary
    >>> from gensim.test.utils import common_texts
    >>> from gensim_anchor.distributed import build_cooccurrence_dask
    >>> from gensim_anchor.cooccurrence import build_cooccurrence
    >>> dictionary = Dictionary(common_texts)
    >>> corpus = [dictionary.doc2bow(text) for text in common_texts]
    >>> with LocalCluster(n_workers=1, processes=False, dashboard_address=':0') as cluster, \\
    ...         Client(cluster) as client:
    ...     cooc = build_cooccurrence_dask([corpus[:4], corpus[4:]], len(dictionary), client=client)
    ...     Q = cooc.to_dense()
    >>> cooc.num_partitions, cooc.num_docs
    (2, 8)
    >>> bool(abs(Q - build_cooccurrence(corpus, len(dictionary)).to_dense()).max() < 1e-15)
    True

"""
import logging
import numbers
import sys
import time

import numpy as np
import scipy.sparse as sp

from ._bow import DocumentStore, parse_chunk
from ._sampling import Reservoir, combine_samples
from ._validation import check_int, check_progress
from .cooccurrence import Cooccurrence, accumulate, quarter_sums

logger = logging.getLogger(__name__)


# ----------------------------------------------------------------------------------------------
# Tasks run on the workers (module-level functions, so that they pickle by reference).
# ----------------------------------------------------------------------------------------------

def _build_partition(docs, index, num_terms, chunksize, sample_size, seed):
    """One partition's implicit statistics and a uniform sample of its documents."""
    sample = Reservoir(sample_size, seed + index)
    try:
        acc = accumulate(sample.watch(docs) if sample_size else docs, num_terms, mode='implicit',
                         chunksize=chunksize, progress=False)
    except (TypeError, ValueError) as err:
        raise type(err)("partition %d: %s" % (index, err)) from None
    return acc.finish(), sample


def _statistics(part):
    """What the client keeps of a partition: everything but H~, plus its raw row sums."""
    cooc, sample = part
    raw = cooc.row_sums(normalise=False) if cooc.num_docs else np.zeros(cooc.num_terms)
    return cooc._replace(H_tilde=None), raw, sample


def _pad(part, num_terms):
    """The partition's statistics over V = num_terms words (its own ids may stop short)."""
    cooc = part[0]
    V = cooc.num_terms
    if V == num_terms:
        return cooc
    grow = {name: np.concatenate([getattr(cooc, name), np.zeros(num_terms - V, getattr(cooc, name).dtype)])
            for name in ('doc_freq', 'term_counts', 'h_hat')}
    H = cooc.H_tilde.copy()
    H.resize((num_terms, H.shape[1]))
    return cooc._replace(num_terms=num_terms, H_tilde=H, **grow)


def _matmul_part(cooc, X, dtype):
    return cooc.matmul(X, dtype, normalise=False)


def _rows_part(cooc, index):
    return cooc.rows(index, normalise=False)


def _num_docs_part(cooc):
    return cooc.num_docs


def _quarter_sums_part(cooc, offset, rows, projection_dim, seed):
    return quarter_sums(cooc, rows, projection_dim, seed, offset)


def _add(a, b):
    return a + b


# ----------------------------------------------------------------------------------------------
# The client side
# ----------------------------------------------------------------------------------------------

def _client(client):
    if client is not None:
        return client
    from distributed import default_client
    try:
        return default_client()
    except ValueError:
        raise ValueError(
            "a Dask corpus needs a dask.distributed Client: pass client=Client(...) or create "
            "one first (Client() starts a local cluster; Client('tcp://HOST:8786') connects to a "
            "running scheduler)") from None


def _tree_sum(client, futures):
    """The sum of the futures' arrays, added pairwise on the workers; one array comes back."""
    futures = list(futures)
    while len(futures) > 1:
        pairs = [client.submit(_add, a, b, pure=False) for a, b in zip(futures[0::2], futures[1::2])]
        futures = pairs + futures[len(pairs) * 2:]
    return futures[0].result()


def _is_bag(obj):
    bag = sys.modules.get('dask.bag')  # never imports dask: an object of it means it is loaded
    return bag is not None and isinstance(obj, bag.Bag)


def _is_lazy(obj):
    delayed, client = sys.modules.get('dask.delayed'), sys.modules.get('distributed')
    return ((delayed is not None and isinstance(obj, delayed.Delayed))
            or (client is not None and isinstance(obj, client.Future)))


def _is_pair(obj):
    """An (id, count) entry of a bag-of-words document."""
    return (isinstance(obj, (tuple, list)) and len(obj) == 2
            and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in obj))


def is_dask_corpus(corpus, client=None):
    """Whether a corpus is trained on the cluster: a ``dask.bag.Bag`` (on the default client),
    or partitions (:func:`is_partitioned`) when a client is given."""
    return _is_bag(corpus) or (client is not None and is_partitioned(corpus))


def is_partitioned(corpus):
    """Whether ``corpus`` is a Dask corpus: a Bag, or a list or tuple of partitions (Delayed,
    Future, or lists of documents) rather than of documents."""
    if _is_bag(corpus):
        return True
    if not isinstance(corpus, (list, tuple)):
        return False
    for item in corpus:
        if _is_lazy(item):
            return True
        if isinstance(item, (str, bytes)) or not hasattr(item, '__iter__'):
            return False
        for entry in item:  # the first entry of the first non-empty item decides
            return not _is_pair(entry)
    return False


def _partition_sources(data):
    """The partitions of a Bag (its Delayed objects) or of a sequence of partitions (lists of
    documents, Delayed objects or Futures), checked, not computed."""
    from dask.delayed import Delayed
    from distributed import Future
    if _is_bag(data):
        return data.to_delayed()
    if isinstance(data, (str, bytes)) or not hasattr(data, '__iter__'):
        raise TypeError("expected a dask.bag.Bag of bag-of-words documents or a sequence of "
                        "partitions, got %s" % type(data).__name__)
    data = list(data)
    if not data:
        raise ValueError("the corpus is empty: no partitions were given")
    local = [i for i, part in enumerate(data) if not isinstance(part, (Future, Delayed))]
    if local:
        first = data[local[0]]
        if isinstance(first, (str, bytes)) or not hasattr(first, '__iter__'):
            raise TypeError("partition %d is a %s; each partition must be a list of bag-of-words "
                            "documents, a Delayed or a Future" % (local[0], type(first).__name__))
        head = next(iter(first), None)
        if _is_pair(head):
            raise TypeError("partition %d looks like a single document (its first element is %r): "
                            "pass a list of partitions, each a list of documents, or a dask Bag"
                            % (local[0], head))
    return data


def _raw_partitions(client, data):
    """Futures of the raw partitions of a Bag or a sequence of partitions (lists of documents,
    Delayed objects or Futures)."""
    from dask.delayed import Delayed
    from distributed import Future
    sources = _partition_sources(data)
    if _is_bag(data):
        return client.compute(sources)
    futures = [None] * len(sources)
    local = []
    for i, part in enumerate(sources):
        if isinstance(part, Future):
            futures[i] = part
        elif isinstance(part, Delayed):
            futures[i] = client.compute(part)
        else:
            local.append(i)
    if local:
        for i, future in zip(local, client.scatter([list(sources[i]) for i in local])):
            futures[i] = future
    return futures


def build_cooccurrence_dask(corpus, num_terms=None, client=None, *, chunksize=2000, progress=None,
                            sample_size=0, seed=0, require_pairs=True):
    """Co-occurrence statistics of a corpus held by a Dask cluster, partition by partition.

    Parameters
    ----------
    corpus : dask.bag.Bag or sequence
        A Bag of bag-of-words documents, or a sequence of partitions, each a list of documents,
        a ``dask.delayed`` object or a ``distributed.Future`` of one.
    num_terms : int, optional
        V. If None, the largest word id seen plus one.
    client : distributed.Client, optional
        Default: the current default client.
    chunksize : int
        Documents per sparse chunk within a partition.
    progress : bool, optional
        A progress bar of the partitions built; None (default): only when stderr is a terminal.
    sample_size : int
        Keep a uniform sample of this many documents (for the alpha fit of AnchorModel): each
        partition samples up to ``sample_size`` of its documents on its worker, and the client
        draws the final sample from them in proportion to the partitions' sizes.
    seed : int
        Seed of the sample.
    require_pairs : bool
        As :func:`~gensim_anchor.cooccurrence.build_cooccurrence`'s.

    Returns
    -------
    DistributedCooccurrence

    Raises
    ------
    ValueError, TypeError
        As :func:`~gensim_anchor.cooccurrence.build_cooccurrence`, naming the partition.

    """
    from distributed import as_completed
    from tqdm.auto import tqdm
    client = _client(client)
    num_terms = check_int('num_terms', num_terms, minimum=1, allow_none=True)
    chunksize = check_int('chunksize', chunksize, minimum=1)
    sample_size = check_int('sample_size', sample_size, minimum=0)
    check_progress(progress)
    start = time.perf_counter()
    raw = _raw_partitions(client, corpus)
    built = client.map(_build_partition, raw, range(len(raw)), num_terms=num_terms,
                       chunksize=chunksize, sample_size=sample_size, seed=int(seed), pure=False)
    del raw  # the documents themselves are released once their partition is built
    with tqdm(total=len(built), desc='co-occurrence (dask)', unit='partition',
              disable=None if progress is None else not progress) as bar:
        for _ in as_completed(built, loop=client.loop):
            bar.update(1)
    stats = client.gather(client.map(_statistics, built, pure=False))
    V = num_terms if num_terms is not None else max(c.num_terms for c, _, _ in stats)
    keep = [i for i, (c, _, _) in enumerate(stats) if c.num_docs]
    parts = client.map(_pad, [built[i] for i in keep], num_terms=V, pure=False)
    del built

    def total(vectors):  # over V words (a partition's own vectors stop at its largest id)
        return np.sum([np.pad(v, (0, V - len(v))) for v in vectors], axis=0)

    num_read = sum(c.num_docs + c.num_short for c, _, _ in stats)
    if require_pairs and num_read == 0:
        raise ValueError("the corpus is empty: no documents were read")
    cooc = DistributedCooccurrence(
        client, parts,
        num_terms=V,
        num_docs=sum(c.num_docs for c, _, _ in stats),
        num_short=sum(c.num_short for c, _, _ in stats),
        num_tokens=sum(c.num_tokens for c, _, _ in stats),
        doc_freq=total(c.doc_freq for c, _, _ in stats),
        term_counts=total(c.term_counts for c, _, _ in stats),
        h_hat=total(c.h_hat for c, _, _ in stats),
        raw_row_sums=total(r for _, r, _ in stats),
    )
    if require_pairs and cooc.num_docs == 0:
        raise ValueError(
            "no document in the corpus has two or more tokens (%d documents read, %d tokens): "
            "co-occurrence needs at least one document with two tokens" % (num_read, cooc.num_tokens))
    cooc.sample = combine_samples([s for _, _, s in stats], sample_size, seed) if sample_size else None
    elapsed = time.perf_counter() - start
    logger.info("co-occurrence (distributed, %d partitions on %d workers): %d documents, %d tokens, "
                "%d terms in %.2fs (%.0f documents/s, %.0f tokens/s)", len(parts),
                len(client.scheduler_info().get('workers', ())), num_read, cooc.num_tokens, V,
                elapsed, num_read / max(elapsed, 1e-9), cooc.num_tokens / max(elapsed, 1e-9))
    return cooc


class DistributedCooccurrence:
    """Co-occurrence statistics whose document side (the partitions' :math:`\\tilde H_p`) stays
    on Dask workers; duck-types :class:`~gensim_anchor.cooccurrence.Cooccurrence`.

    Made by :func:`build_cooccurrence_dask`. Pickling it (e.g. ``AnchorModel.save(...,
    save_cooccurrence=True)``) gathers the partitions into one local Cooccurrence.

    Attributes
    ----------
    num_terms, num_docs, num_short, num_tokens, doc_freq, term_counts, h_hat :
        As :class:`~gensim_anchor.cooccurrence.Cooccurrence`, over all partitions.
    parts : list of distributed.Future
        One local Cooccurrence per partition (with documents of two or more tokens), on the
        workers.
    sample : :class:`~gensim_anchor._sampling.Reservoir` or None
        A uniform sample of the documents (see ``sample_size``).
    """

    mode = 'distributed'
    H_tilde = None
    Q_sum = None

    def __init__(self, client, parts, *, num_terms, num_docs, num_short, num_tokens, doc_freq,
                 term_counts, h_hat, raw_row_sums):
        self.client, self.parts = client, list(parts)
        self.num_terms, self.num_docs, self.num_short, self.num_tokens = (
            num_terms, num_docs, num_short, num_tokens)
        self.doc_freq, self.term_counts, self.h_hat = doc_freq, term_counts, h_hat
        self._raw_row_sums = raw_row_sums
        self.sample = None
        self._offsets = None  # of each partition's documents in the corpus (quarter_sums)

    def __repr__(self):
        return "%s<num_terms=%d, num_docs=%d, %d partitions>" % (
            type(self).__name__, self.num_terms, self.num_docs, len(self.parts))

    @property
    def num_partitions(self):
        return len(self.parts)

    def matmul(self, X, dtype=np.float64):
        """Q @ X for a thin X of shape (V, k): X is broadcast, each partition multiplies, the
        results are summed on the workers."""
        X = np.asarray(X, dtype=dtype)
        shared = self.client.scatter(X, broadcast=True, hash=False)
        out = _tree_sum(self.client, self.client.map(_matmul_part, self.parts, X=shared,
                                                     dtype=dtype, pure=False))
        return out / self.num_docs

    def rows(self, index):
        """Dense rows ``Q[index, :]``, shape (len(index), V), float64."""
        index = np.asarray(index, dtype=np.int64)
        out = _tree_sum(self.client, self.client.map(_rows_part, self.parts, index=index, pure=False))
        return out / self.num_docs

    def quarter_sums(self, rows, projection_dim, seed):
        """:func:`~gensim_anchor.cooccurrence.quarter_sums` of the whole corpus: each partition's,
        its documents numbered on from the partition's offset (their place in the concatenation
        that :meth:`gather` makes, so the quarters are the single machine's), added up; None when
        a partition's statistics cannot be split."""
        if self._offsets is None:
            sizes = self.client.gather(self.client.map(_num_docs_part, self.parts, pure=False))
            self._offsets = [int(o) for o in np.cumsum([0] + list(sizes))[:-1]]
        parts = self.client.gather(self.client.map(
            _quarter_sums_part, self.parts, self._offsets, rows=rows, projection_dim=projection_dim,
            seed=seed, pure=False))
        if any(part is None for part in parts):
            return None
        return tuple(sum(part[i] for part in parts) for i in range(3))

    def row_sums(self):
        """p(w) = Q @ 1 (summed from the partitions when Q was built)."""
        return np.maximum(self._raw_row_sums / self.num_docs, 0.0)

    def to_dense(self):
        """Q as a dense (V, V) float64 array (V x V travels: for small vocabularies)."""
        return self.rows(np.arange(self.num_terms))

    def gather(self):
        """The statistics as one local :class:`~gensim_anchor.cooccurrence.Cooccurrence` (the
        partitions' H~ are copied to the client)."""
        parts = self.client.gather(self.parts)
        # The totals are this object's own (they also count the documents of fewer than two
        # tokens, which have no partition); H~ is one concatenation, Q one sum.
        totals = dict(num_terms=self.num_terms, num_docs=self.num_docs, num_short=self.num_short,
                      num_tokens=self.num_tokens, doc_freq=self.doc_freq,
                      term_counts=self.term_counts, h_hat=self.h_hat)
        if any(p.mode == 'dense' for p in parts):
            return Cooccurrence(Q_sum=sum(p.densify().Q_sum for p in parts), **totals)
        return Cooccurrence(H_tilde=sp.hstack([p.H_tilde for p in parts], format='csc'), **totals)

    def __reduce__(self):
        return Cooccurrence, tuple(self.gather())

    def merge(self, other):
        """Statistics of the union of two corpora: the partitions of both (a local
        Cooccurrence is sent to a worker as one more partition)."""
        if other.num_terms != self.num_terms:
            raise ValueError("cannot merge co-occurrence statistics of %d terms (%s) with %d terms (%s)"
                             % (self.num_terms, self.mode, other.num_terms, other.mode))
        if isinstance(other, DistributedCooccurrence):
            parts, raw = other.parts, other._raw_row_sums
        else:
            parts = [self.client.scatter(other)] if other.num_docs else []
            raw = other.row_sums(normalise=False)
        merged = DistributedCooccurrence(
            self.client, self.parts + parts, num_terms=self.num_terms,
            num_docs=self.num_docs + other.num_docs, num_short=self.num_short + other.num_short,
            num_tokens=self.num_tokens + other.num_tokens, doc_freq=self.doc_freq + other.doc_freq,
            term_counts=self.term_counts + other.term_counts, h_hat=self.h_hat + other.h_hat,
            raw_row_sums=self._raw_row_sums + raw)
        return merged


class DaskDocuments:
    """The training documents of a Dask corpus, kept for a refinement
    (``AnchorModel(bag, ..., refine='gibbs')``): the partitions' sources (a Bag's Delayed
    objects, Futures, or lists of documents read here), never the documents themselves.

    The refinement reads each partition again on a worker
    (:func:`~gensim_anchor.distributed_hybrid.gibbs_refine_dask`). Pickling it (saving a model
    with ``save_cooccurrence=True``) gathers the documents into one local
    :class:`~gensim_anchor._bow.DocumentStore`, as :class:`DistributedCooccurrence` gathers Q.
    """

    def __init__(self, partitions, client=None):
        self.partitions, self.client = list(partitions), client

    @classmethod
    def of(cls, corpus, client=None):
        """The documents of a Bag or of a sequence of partitions (checked, not computed)."""
        return cls(_partition_sources(corpus), client)

    def __repr__(self):
        return "%s<%d partitions>" % (type(self).__name__, len(self.partitions))

    def merge(self, other):
        """The documents of both, ``self``'s first (a new object): ``other`` is DaskDocuments or a
        DocumentStore (documents read here, one more partition, sent to a worker when refining)."""
        if isinstance(other, DaskDocuments):
            return DaskDocuments(self.partitions + other.partitions, self.client or other.client)
        return DaskDocuments(self.partitions + ([other] if other is not None and other.num_docs else []),
                             self.client)

    def gather(self):
        """The documents as one local :class:`~gensim_anchor._bow.DocumentStore` (they travel to
        this machine)."""
        client = _client(self.client)
        store, offset = DocumentStore(), 0
        for part in self.partitions:
            if isinstance(part, DocumentStore):
                store = store.merge(part)
                continue
            docs = client.compute(part).result() if hasattr(part, 'dask') else (
                part.result() if hasattr(part, 'result') else part)
            docs = list(docs)
            lengths, ids, counts = parse_chunk(docs, None, offset)
            store.add(lengths, ids, counts, offset)
            offset += len(docs)
        return store._flush()

    def __reduce__(self):
        return _document_store, (self.gather().__getstate__(),)


def _document_store(state):
    store = DocumentStore()
    store.__dict__.update(state)
    return store
