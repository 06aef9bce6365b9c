"""Semi-synthetic corpora with known topics, as in Arora et al. (2013), section 5.

The paper trains a topic model on a real corpus, then draws new documents from that model, so
that the true topics A are known and the error of a learned :math:`\\hat A` can be measured
(:func:`gensim_anchor.evaluation.topic_recovery_l1`). :func:`semi_synthetic_corpus` does this:

* **topics**: any gensim topic model (its ``get_topics()`` and ``id2word``), an array of shape
  (K, V), or random ones (:func:`random_topics`);
* **documents** of a fixed length N: topic proportions :math:`W_d` from a symmetric
  Dirichlet(0.03) (the paper's setting), a topic :math:`z \\sim W_d` per token and the word
  :math:`w \\sim A_{:, z}`;
* **separability experiment** (``add_anchors=True``, section 5.4): one synthetic anchor word per
  topic, given the probability of the topic's most probable word, after which each topic is
  renormalised (:func:`add_anchor_words`);
* **correlated topics** (``rho``, section 5.5): proportions from a logistic normal
  :math:`W = \\mathrm{softmax}(\\eta)`, :math:`\\eta \\sim N(0, \\Sigma)`, with the topics split
  into 10 groups and covariance :math:`\\rho` between the topics of a group
  (:func:`block_covariance`; the paper uses :math:`\\rho = 0.05` and 0.1). The paper does not
  state the variances; the default :math:`\\Sigma_{kk} = 1` (``variance``) makes :math:`\\rho` also
  the correlation. With K = 50 such proportions are far more even than Dirichlet(0.03) ones
  (a larger ``variance`` makes them peakier).

Generation is vectorised over all tokens of a chunk of documents (topic counts per document by
one multinomial draw, words by inverse-CDF lookup in the cumulative topics, counts per
document by sorting), and the corpus is kept as three flat arrays (:class:`BowCorpus`), which
iterates as gensim bag-of-words documents.

The **"infinite data"** co-occurrence of the model, :math:`Q = A\\, E[WW^T] A^T`, is what Q
computed from a corpus converges to as the number of documents grows
(:func:`infinite_data_cooccurrence`). For Dirichlet(alpha) proportions
:math:`E[WW^T] = (\\mathrm{Diag}(\\alpha) + \\alpha\\alpha^T) / (\\alpha_0(\\alpha_0 + 1))`
(:func:`dirichlet_second_moment`); for the logistic normal it has no closed form and is
estimated by Monte Carlo (:func:`logistic_normal_second_moment`, 10^6 draws by default).

Examples
--------
.. sourcecode:: pycon

    >>> import numpy as np
    >>> from gensim_anchor.synthetic import random_topics, semi_synthetic_corpus
    >>> topics = random_topics(num_terms=50, num_topics=4, random_state=0)
    >>> synth = semi_synthetic_corpus(topics, num_docs=100, doc_length=30, add_anchors=True,
    ...                               random_state=0)
    >>> len(synth.dictionary), synth.A.shape, len(synth.corpus)  # 50 words + 4 anchor words
    (54, (54, 4), 100)
    >>> {sum(count for _, count in doc) for doc in synth.corpus}  # every document has 30 tokens
    {30}
    >>> round(float(synth.alpha.sum()), 12)  # Dirichlet(0.03) for each of the 4 topics
    0.12

The infinite-data Q runs through the pipeline like one computed from documents:

.. sourcecode:: pycon

    >>> from gensim_anchor.anchors import find_anchors, project_rows
    >>> from gensim_anchor.evaluation import topic_recovery_l1
    >>> from gensim_anchor.recovery import recover
    >>> from gensim_anchor.synthetic import infinite_data_cooccurrence
    >>> cooc = infinite_data_cooccurrence(synth.A, synth.second_moment)
    >>> p_w = cooc.row_sums()
    >>> anchors = find_anchors(project_rows(cooc, p_w, np.arange(54), None), 4).indices
    >>> sorted(anchors.tolist()) == sorted(synth.anchors.tolist())
    True
    >>> topic_recovery_l1(synth.A, recover(cooc, anchors, 'original').A).mean < 1e-9
    True

"""
import logging
import numbers
import time
from typing import NamedTuple, Optional

import numpy as np
import scipy.sparse as sp
from gensim import interfaces
from gensim.corpora import Dictionary
from threadpoolctl import threadpool_limits

from ._validation import check_int, check_positive_float, check_topics
from .cooccurrence import Cooccurrence

logger = logging.getLogger(__name__)

#: The paper's symmetric Dirichlet hyperparameter of the document-topic proportions.
DEFAULT_ALPHA = 0.03
#: Groups of topics in the paper's block covariance.
DEFAULT_NUM_GROUPS = 10
#: Monte Carlo draws for E[W W^T] under the logistic normal.
DEFAULT_MC_SAMPLES = 10 ** 6
# Tokens generated per chunk (memory: a few arrays of this many int64).
_CHUNK_TOKENS = 1 << 20
# Monte Carlo draws per chunk.
_MC_CHUNK = 50_000
# Document frequency given to every word with p(w) > 0 in the infinite-data statistics: an
# infinite corpus has every such word in arbitrarily many documents (any anchor_min_df passes).
# 2**40, not near the int64 limit: merged statistics add their document frequencies.
_INFINITE_DF = 2 ** 40


class BowCorpus(interfaces.CorpusABC):
    """A bag-of-words corpus kept as flat arrays (CSR layout), iterating as gensim documents.

    Document d is ``list(zip(ids[indptr[d]:indptr[d + 1]], counts[...]))`` with Python ints, as
    ``Dictionary.doc2bow`` gives: 8 bytes per (word, count) entry instead of about 100 for a
    list of tuples. Supports ``len``, iteration, ``corpus[d]``, contiguous slices (``corpus[:1000]``,
    a BowCorpus sharing the arrays: documents are i.i.d., so a prefix of a large corpus is a
    smaller corpus of the same model) and :meth:`to_csr`.

    Parameters
    ----------
    indptr : numpy.ndarray of int, shape (D + 1,)
    ids : numpy.ndarray of int, shape (nnz,)
        Word ids, increasing within each document.
    counts : numpy.ndarray of int, shape (nnz,)
    num_terms : int
        V.
    """

    def __init__(self, indptr, ids, counts, num_terms):
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.ids = np.asarray(ids, dtype=np.int32)
        self.counts = np.asarray(counts, dtype=np.int32)
        self.num_terms = int(num_terms)

    def __len__(self):
        return len(self.indptr) - 1

    def __iter__(self):
        ids, counts, indptr = self.ids, self.counts, self.indptr.tolist()
        for lo, hi in zip(indptr[:-1], indptr[1:]):
            yield list(zip(ids[lo:hi].tolist(), counts[lo:hi].tolist()))

    def __getitem__(self, docno):
        if isinstance(docno, slice):
            start, stop, step = docno.indices(len(self))
            if step != 1:
                raise ValueError("BowCorpus slices must be contiguous (step 1), got step %d" % step)
            stop = max(start, stop)
            lo, hi = self.indptr[start], self.indptr[stop]
            return BowCorpus(self.indptr[start:stop + 1] - lo, self.ids[lo:hi], self.counts[lo:hi], self.num_terms)
        if not isinstance(docno, numbers.Integral):
            raise TypeError("BowCorpus indices must be integers or slices, got %s" % type(docno).__name__)
        d = range(len(self))[docno]  # negative indices and the IndexError, as a list
        lo, hi = self.indptr[d], self.indptr[d + 1]
        return list(zip(self.ids[lo:hi].tolist(), self.counts[lo:hi].tolist()))

    def to_csr(self):
        """The documents as a sparse (D, V) count matrix."""
        return sp.csr_matrix((self.counts, self.ids, self.indptr), shape=(len(self), self.num_terms))


class SyntheticCorpus(NamedTuple):
    """A semi-synthetic corpus and the model that generated it.

    Attributes
    ----------
    dictionary : gensim.corpora.Dictionary
        The V words (ids as in A), with document frequencies of this corpus.
    corpus : BowCorpus
        D documents of exactly ``doc_length`` tokens each.
    A : numpy.ndarray, shape (V, K)
        The true topics as columns p(w | z) (the paper's A), after any anchor words were added.
    alpha : numpy.ndarray of shape (K,), or None
        The Dirichlet prior of the proportions; None for logistic-normal proportions.
    covariance : numpy.ndarray of shape (K, K), or None
        The logistic normal's covariance; None for Dirichlet proportions.
    anchors : numpy.ndarray of int of shape (K,), or None
        The synthetic anchor word of each topic (``add_anchors=True``).
    second_moment : numpy.ndarray, shape (K, K)
        :math:`E[WW^T]` of the proportions (exact for the Dirichlet, Monte Carlo for the logistic
        normal), for :func:`infinite_data_cooccurrence`.

    """
    dictionary: Dictionary
    corpus: BowCorpus
    A: np.ndarray
    alpha: Optional[np.ndarray]
    covariance: Optional[np.ndarray]
    anchors: Optional[np.ndarray]
    second_moment: np.ndarray


# ----------------------------------------------------------------------------------------------
# Building blocks
# ----------------------------------------------------------------------------------------------

def _generator(random_state):
    """A numpy Generator from an int, None, a Generator or gensim's RandomState."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2 ** 31 - 1))
    if random_state is not None:
        check_int('random_state', random_state, minimum=0)
    return np.random.default_rng(random_state)


def _topics_array(topics):
    """(K, V) float64 rows on the simplex, and the model's id2word if it has one."""
    id2word = getattr(topics, 'id2word', None)
    array = check_topics(topics, 'topics', tol=np.inf)
    sums = array.sum(axis=1)
    if np.any(sums <= 0):
        raise ValueError("topic %d has no probability mass" % int(np.argmin(sums)))
    # Rows of float32 models sum to 1 only to ~1e-6.
    return array / sums[:, None], id2word


def random_topics(num_terms, num_topics, *, beta=0.1, random_state=None):
    """K random topics over V words, each drawn from a symmetric Dirichlet(beta).

    Returns
    -------
    numpy.ndarray, shape (K, V)
        Rows p(w | z) (gensim's orientation, as ``get_topics()``).
    """
    V = check_int('num_terms', num_terms, minimum=2)
    K = check_int('num_topics', num_topics, minimum=1)
    beta = check_positive_float('beta', beta)
    rng = _generator(random_state)
    # Normalised gamma draws, in logs: G(b) = G(b + 1) U^(1/b) is exact for every b > 0, and
    # plain draws underflow to 0 for small beta (a row could be all zeros).
    log_g = np.log(rng.standard_gamma(beta + 1.0, size=(K, V))) + np.log(rng.random((K, V))) / beta
    g = np.exp(log_g - log_g.max(axis=1, keepdims=True))
    return g / g.sum(axis=1, keepdims=True)


def add_anchor_words(A):
    """The paper's separability experiment: one new anchor word per topic.

    Word V + k gets, in topic k only, the probability of topic k's most probable word; each
    column is then renormalised (divided by 1 + that probability).

    Parameters
    ----------
    A : numpy.ndarray, shape (V, K), or a gensim topic model
        Topics as columns (a K x V array whose rows are the distributions, as
        :func:`random_topics` returns, is read as its transpose; an array that is neither is
        refused).

    Returns
    -------
    A : numpy.ndarray, shape (V + K, K)
    anchors : numpy.ndarray of int, shape (K,)
        ``V, V + 1, ..., V + K - 1``.
    """
    A = check_topics(A, 'A', orientation='VK')
    V, K = A.shape
    top = A.max(axis=0)
    augmented = np.vstack([A, np.diag(top)])
    return augmented / augmented.sum(axis=0), np.arange(V, V + K)


def block_covariance(num_topics, rho, num_groups=DEFAULT_NUM_GROUPS, variance=1.0):
    """The paper's block covariance: ``variance`` on the diagonal, ``rho`` between topics of the
    same group, 0 between groups.

    The K topics are split into ``num_groups`` consecutive groups of (nearly) equal size
    (:func:`numpy.array_split`). ``0 <= rho < variance`` keeps it positive definite.

    Returns
    -------
    numpy.ndarray, shape (K, K)
    """
    K = check_int('num_topics', num_topics, minimum=1)
    groups = check_int('num_groups', num_groups, minimum=1)
    variance = check_positive_float('variance', variance)
    if isinstance(rho, bool) or not isinstance(rho, numbers.Real) or not 0.0 <= rho < variance:
        raise ValueError("rho must be a number in [0, variance=%g) (a positive definite covariance), got %r"
                         % (variance, rho))
    label = np.repeat(np.arange(groups), [len(g) for g in np.array_split(np.arange(K), groups)])
    same = label[:, None] == label[None, :]
    return np.where(same, float(rho), 0.0) + (variance - float(rho)) * np.eye(K)


def _softmax_rows(eta):
    eta = eta - eta.max(axis=1, keepdims=True)
    np.exp(eta, out=eta)
    return eta / eta.sum(axis=1, keepdims=True)


def topic_proportions(num_docs, *, alpha=None, covariance=None, random_state=None):
    """Document-topic proportions W, one row per document.

    Exactly one of ``alpha`` (Dirichlet(alpha)) and ``covariance`` (logistic normal with mean 0:
    :math:`W = \\mathrm{softmax}(\\eta)`, :math:`\\eta \\sim N(0, \\Sigma)`) is given.

    Returns
    -------
    numpy.ndarray, shape (num_docs, K)
    """
    n = check_int('num_docs', num_docs, minimum=0)
    rng = _generator(random_state)
    if (alpha is None) == (covariance is None):
        raise ValueError("give exactly one of alpha (Dirichlet) and covariance (logistic normal)")
    if alpha is not None:
        return rng.dirichlet(np.asarray(alpha, dtype=np.float64), size=n)
    chol = np.linalg.cholesky(np.asarray(covariance, dtype=np.float64))
    return _softmax_rows(rng.standard_normal((n, chol.shape[0])) @ chol.T)


def dirichlet_second_moment(alpha):
    """:math:`E[WW^T] = (\\mathrm{Diag}(\\alpha) + \\alpha\\alpha^T) / (\\alpha_0(\\alpha_0 + 1))` for
    W ~ Dirichlet(alpha), shape (K, K); its entries sum to 1."""
    alpha = np.asarray(alpha, dtype=np.float64)
    total = alpha.sum()
    return (np.outer(alpha, alpha) + np.diag(alpha)) / (total * (total + 1.0))


def logistic_normal_second_moment(covariance, num_samples=DEFAULT_MC_SAMPLES, *, random_state=None):
    """Monte Carlo estimate of :math:`E[WW^T]` for W = softmax(eta), eta ~ N(0, covariance).

    The mean of :math:`W_i W_i^T` over ``num_samples`` draws (in chunks of 50,000). It is itself
    the exact second moment of the empirical distribution of the draws, so it is symmetric,
    positive semi-definite and sums to 1 exactly, like the true one; its Monte Carlo error
    falls as 1/sqrt(num_samples) (``tests/test_synthetic.py`` checks it against an independent
    Monte Carlo estimate from :func:`topic_proportions`).

    Returns
    -------
    numpy.ndarray, shape (K, K)
    """
    n = check_int('num_samples', num_samples, minimum=1)
    rng = _generator(random_state)
    chol = np.linalg.cholesky(np.asarray(covariance, dtype=np.float64)).astype(np.float32)
    K = chol.shape[0]
    total = np.zeros((K, K))
    # float32 draws and exponentials (the Monte Carlo error is far above float32 rounding),
    # float64 sums; one BLAS thread for these thin products.
    with threadpool_limits(limits=1, user_api='blas'):
        for lo in range(0, n, _MC_CHUNK):
            eta = rng.standard_normal((min(_MC_CHUNK, n - lo), K), dtype=np.float32) @ chol.T
            W = _softmax_rows(eta).astype(np.float64)
            W /= W.sum(axis=1, keepdims=True)  # rows on the simplex to float64 precision
            total += W.T @ W
    total /= n
    return (total + total.T) / 2.0


def infinite_data_cooccurrence(A, second_moment):
    """The exact co-occurrence :math:`Q = A\\, E[WW^T] A^T` of a model, as a dense
    :class:`~gensim_anchor.cooccurrence.Cooccurrence` that the pipeline accepts.

    Q computed from D documents of the model converges to it as D grows: it is the paper's
    "infinite data" setting. Use it with :func:`gensim_anchor.anchors.project_rows` /
    :func:`~gensim_anchor.anchors.find_anchors` and :func:`gensim_anchor.recovery.recover`
    (see the module example); ``AnchorModel`` itself trains from documents only.

    Parameters
    ----------
    A : numpy.ndarray, shape (V, K), or a gensim topic model
        Topics as columns (read as :func:`add_anchor_words` reads it).
    second_moment : numpy.ndarray, shape (K, K)
        :math:`E[WW^T]` of the topic proportions (:func:`dirichlet_second_moment`,
        :func:`logistic_normal_second_moment`, or ``SyntheticCorpus.second_moment``).

    Returns
    -------
    Cooccurrence
        Dense mode with ``num_docs = 1`` (so ``to_dense()`` is Q), ``term_counts`` = p(w), and
        every word with p(w) > 0 given an unbounded document frequency (so any
        ``anchor_min_df`` admits it).
    """
    A = check_topics(A, 'A', orientation='VK')
    R = np.asarray(second_moment, dtype=np.float64)
    if R.shape != (A.shape[1], A.shape[1]):
        raise ValueError("second_moment must have shape (K, K) = %s for A of shape %s"
                         % ((A.shape[1],) * 2, A.shape))
    Q = A @ R @ A.T
    Q = (Q + Q.T) / 2.0
    p_w = Q.sum(axis=1)
    V = A.shape[0]
    doc_freq = np.where(p_w > 0, _INFINITE_DF, 0).astype(np.int64)
    return Cooccurrence(num_terms=V, num_docs=1, num_short=0, num_tokens=0, doc_freq=doc_freq,
                        term_counts=p_w, h_hat=np.zeros(V), Q_sum=Q)


# ----------------------------------------------------------------------------------------------
# Documents
# ----------------------------------------------------------------------------------------------

def _cumulative_table(topics):
    """Row k of the (K, V) CDFs shifted by k, flattened: one sorted array for every topic, so
    one ``searchsorted`` of ``k + u`` (u uniform in [0, 1)) draws a word of topic k."""
    cdf = np.cumsum(topics, axis=1)
    cdf /= cdf[:, -1:]
    cdf[:, -1] = 1.0
    return (cdf + np.arange(topics.shape[0])[:, None]).ravel()


def _draw_chunk(table, num_terms, proportions, doc_length, rng):
    """Bag-of-words of a chunk of documents: (nnz per document, word ids, counts)."""
    n, K = proportions.shape
    V = num_terms
    topic_counts = rng.multinomial(doc_length, proportions)  # (n, K), rows sum to doc_length
    z = np.repeat(np.tile(np.arange(K), n), topic_counts.ravel())  # token topics, by document
    x = z + rng.random(z.size)
    # k + u can round up to k + 1 (the next topic's range) when u is within 2^-53 k of 1.
    np.minimum(x, np.nextafter(z + 1.0, 0.0), out=x)
    words = np.searchsorted(table, x, side='right') - z * V
    keys = np.repeat(np.arange(n, dtype=np.int64), doc_length) * V + words
    keys, counts = np.unique(keys, return_counts=True)
    return np.bincount(keys // V, minlength=n), (keys % V).astype(np.int32), counts.astype(np.int32)


def _generate(topics, proportions_of, num_docs, doc_length, rng):
    """All documents, a chunk at a time; ``proportions_of(n)`` draws the proportions of n."""
    K, V = topics.shape
    table = _cumulative_table(topics)
    per_chunk = max(1, _CHUNK_TOKENS // doc_length)
    nnz, ids, counts = [], [], []
    for lo in range(0, num_docs, per_chunk):
        c_nnz, c_ids, c_counts = _draw_chunk(table, V, proportions_of(min(per_chunk, num_docs - lo)),
                                             doc_length, rng)
        nnz.append(c_nnz)
        ids.append(c_ids)
        counts.append(c_counts)
    indptr = np.zeros(num_docs + 1, dtype=np.int64)
    if num_docs:
        np.cumsum(np.concatenate(nnz), out=indptr[1:])
    cat = lambda parts, dtype: np.concatenate(parts) if parts else np.zeros(0, dtype)  # noqa: E731
    return BowCorpus(indptr, cat(ids, np.int32), cat(counts, np.int32), V)


def _dictionary(words, corpus):
    """A Dictionary over ``words`` (ids in order) with this corpus's frequencies."""
    dictionary = Dictionary()
    dictionary.token2id = {word: i for i, word in enumerate(words)}
    V = len(words)
    dfs = np.bincount(corpus.ids, minlength=V)
    cfs = np.bincount(corpus.ids, weights=corpus.counts, minlength=V).astype(np.int64)
    seen = np.flatnonzero(dfs)
    dictionary.dfs = dict(zip(seen.tolist(), dfs[seen].tolist()))
    dictionary.cfs = dict(zip(seen.tolist(), cfs[seen].tolist()))
    dictionary.num_docs = len(corpus)
    dictionary.num_nnz = int(len(corpus.ids))
    dictionary.num_pos = int(cfs.sum())
    return dictionary


def _words(id2word, V, K_anchors):
    """Words 0..V-1 from id2word (or '0', '1', ...), then K_anchors new unique anchor tokens."""
    words = [str(id2word[i]) if id2word is not None else str(i) for i in range(V)]
    taken = set(words)
    if len(taken) != V:
        raise ValueError("id2word maps two word ids to the same word")
    anchors = []
    for k in range(K_anchors):
        token = 'anchor_%d' % k
        while token in taken:
            token = '_' + token
        anchors.append(token)
    return words + anchors


def semi_synthetic_corpus(topics, num_docs, doc_length=300, *, alpha=DEFAULT_ALPHA, rho=None,
                          num_groups=DEFAULT_NUM_GROUPS, variance=1.0, add_anchors=False, id2word=None,
                          random_state=None, mc_samples=DEFAULT_MC_SAMPLES):
    """Draw a semi-synthetic corpus from known topics (the paper's section 5 setup).

    Parameters
    ----------
    topics : gensim topic model or numpy.ndarray of shape (K, V)
        The true topics (rows p(w | z); :func:`random_topics` for random ones). A model's
        ``id2word`` names the words.
    num_docs : int
        D.
    doc_length : int
        Tokens per document (the paper: 300 for NY Times, 70 for NIPS).
    alpha : float or array of K floats
        Dirichlet prior of the proportions (the paper: symmetric 0.03). Ignored with ``rho``.
    rho : float, optional
        Correlated topics: logistic-normal proportions with :func:`block_covariance`
        (``num_groups`` groups, covariance ``rho`` within a group; the paper: 0.05 and 0.1).
    num_groups : int
        Groups of the block covariance.
    variance : float
        Diagonal of the block covariance (not stated in the paper; 1 by default).
    add_anchors : bool
        Add one synthetic anchor word per topic first (:func:`add_anchor_words`).
    id2word : mapping, optional
        Names of the V words (default: the model's, else ``'0'``, ``'1'``, ...).
    random_state : {int, numpy.random.Generator, numpy.random.RandomState, None}
        Seed: the same seed gives the same corpus.
    mc_samples : int
        Monte Carlo draws for the logistic normal's second moment.

    Returns
    -------
    SyntheticCorpus

    Notes
    -----
    Cost O(D N log(K V)) for the words (one binary search per token) plus a sort of each chunk's
    tokens; memory O(nnz) for the corpus.
    """
    start = time.perf_counter()
    matrix, model_id2word = _topics_array(topics)
    K = matrix.shape[0]
    D = check_int('num_docs', num_docs, minimum=0)
    N = check_int('doc_length', doc_length, minimum=1)
    rng = _generator(random_state)
    A = matrix.T
    anchors = None
    if add_anchors:
        A, anchors = add_anchor_words(A)
    if rho is None:
        alpha_vec = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (K,)).copy()
        if not np.all(np.isfinite(alpha_vec)) or np.any(alpha_vec <= 0):
            raise ValueError("alpha must be > 0 (a number or K numbers), got %r" % (alpha,))
        covariance, second_moment = None, dirichlet_second_moment(alpha_vec)
        draw = lambda n: topic_proportions(n, alpha=alpha_vec, random_state=rng)  # noqa: E731
    else:
        alpha_vec, covariance = None, block_covariance(K, rho, num_groups, variance)
        second_moment = logistic_normal_second_moment(covariance, mc_samples, random_state=rng)
        draw = lambda n: topic_proportions(n, covariance=covariance, random_state=rng)  # noqa: E731
    with threadpool_limits(limits=1, user_api='blas'):
        corpus = _generate(A.T, draw, D, N, rng)
    names = id2word if id2word is not None else model_id2word
    dictionary = _dictionary(_words(names, matrix.shape[1], 0 if anchors is None else K), corpus)
    logger.info("semi-synthetic corpus: %d documents of %d tokens, V=%d, K=%d (%s%s) in %.2fs",
                D, N, A.shape[0], K, 'Dirichlet(%.3g)' % alpha_vec.mean() if rho is None
                else 'logistic normal, rho=%g' % rho, ', anchors added' if add_anchors else '',
                time.perf_counter() - start)
    return SyntheticCorpus(dictionary, corpus, A, alpha_vec, covariance, anchors, second_moment)
