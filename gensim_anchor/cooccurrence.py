"""Stage 1 of the pipeline: the word co-occurrence matrix Q from a bag-of-words stream.

Arora et al. (2013), supplementary section "Generating Q matrix": for a document d with count
vector :math:`H_d` and length :math:`n_d \\ge 2`,

.. math::

    \\tilde H_d = \\frac{H_d}{\\sqrt{n_d(n_d-1)}}, \\qquad
    \\hat H_d = \\frac{\\mathrm{Diag}(H_d)}{n_d(n_d-1)}, \\qquad
    Q = \\frac{1}{M}\\Big(\\tilde H \\tilde H^T - \\sum_d \\hat H_d\\Big),

an unbiased estimator of the second moment :math:`A\\,\\mathbb{E}[WW^T]A^T`. Every document
contributes exactly 1 to the sum of :math:`\\tilde H_d \\tilde H_d^T - \\hat H_d`, so dividing by
the number M of documents with at least two tokens normalises Q to sum to 1.

Q is kept in one of two forms (:class:`Cooccurrence`):

* ``'implicit'``: the sparse V x M matrix :math:`\\tilde H` and the diagonal :math:`\\hat h`.
  Memory is O(nnz(H)); every product the pipeline needs is thin,
  :math:`QX = (\\tilde H(\\tilde H^T X) - \\hat h \\circ X)/M`, and whole rows of Q are formed
  only for the words asked for. :math:`\\tilde H` is stored by columns (documents, CSC): both
  products then read the large M x k intermediate in order and scatter into the small V x k
  side, which is faster than by rows once M x k leaves the cache.
* ``'dense'``: Q itself, V x V, accumulated chunk by chunk from sparse products. Memory is
  O(V^2), independent of the corpus size.
* ``'auto'``: the one of the two estimated faster for this corpus (:func:`choose_mode`).

The pass shows a progress bar (``progress``; by default only when stderr is a terminal) and
logs documents and tokens per second at INFO.

Examples
--------
.. sourcecode:: pycon

    >>> from gensim.corpora import Dictionary
    >>> from gensim.test.utils import common_texts
    >>> from gensim_anchor.cooccurrence import build_cooccurrence
    >>> dictionary = Dictionary(common_texts)
    >>> corpus = [dictionary.doc2bow(text) for text in common_texts]
    >>> cooc = build_cooccurrence(corpus, num_terms=len(dictionary))
    >>> cooc.num_docs, cooc.num_short  # common_texts has one 1-token document
    (8, 1)
    >>> round(float(cooc.to_dense().sum()), 12)
    1.0

"""
import logging
import math
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple, Optional

import numpy as np
import scipy.sparse as sp
from gensim import utils
from tqdm import TqdmWarning

with warnings.catch_warnings():
    # In Jupyter without ipywidgets, tqdm.auto warns when imported and falls back to the text
    # bar, which is fine there: `import gensim_anchor` should not print a warning.
    warnings.simplefilter('ignore', TqdmWarning)
    from tqdm.auto import tqdm

from ._bow import parse_chunk
from ._defaults import CANDIDATE_SCORE_DIM, DEFAULT_PROJECTION_DIM, DENSE_Q_BUDGET, Q_COSTS, Q_MODES
from ._validation import check_corpus, check_int, check_progress

logger = logging.getLogger(__name__)


class Cooccurrence(NamedTuple):
    """Sufficient statistics of one pass over a corpus; Q is derived from them.

    Attributes
    ----------
    num_terms : int
        V, the vocabulary size (rows and columns of Q).
    num_docs : int
        M, the number of documents with at least two tokens (the ones that enter Q).
    num_short : int
        Documents with fewer than two tokens: they carry no co-occurrence and are skipped.
    num_tokens : int
        Tokens in all documents read, short ones included.
    doc_freq : numpy.ndarray, shape (V,), int64
        Number of documents (all documents read) that contain each word.
    term_counts : numpy.ndarray, shape (V,), float64
        Total count of each word over all documents read.
    h_hat : numpy.ndarray, shape (V,), float64
        The diagonal :math:`\\sum_d H_d / (n_d(n_d-1))`.
    H_tilde : scipy.sparse.csc_matrix, shape (V, M), or None
        Scaled word-document counts (``'implicit'`` mode).
    Q_sum : numpy.ndarray, shape (V, V), or None
        :math:`\\tilde H \\tilde H^T - \\mathrm{Diag}(\\hat h)`, not yet divided by M (``'dense'`` mode).

    """
    num_terms: int
    num_docs: int
    num_short: int
    num_tokens: int
    doc_freq: np.ndarray
    term_counts: np.ndarray
    h_hat: np.ndarray
    H_tilde: Optional[sp.csc_matrix] = None
    Q_sum: Optional[np.ndarray] = None

    @property
    def mode(self):
        return 'dense' if self.Q_sum is not None else 'implicit'

    def matmul(self, X, dtype=np.float64, *, normalise=True):
        """Q @ X for a thin X of shape (V, k), computed without forming Q in implicit mode.

        ``dtype`` is the precision of the sparse products (float32 halves their cost where the
        caller does not need float64, e.g. a random projection). ``normalise=False`` leaves out
        the division by M (the sum over documents, which partitions of a corpus add up).
        """
        X = np.asarray(X, dtype=dtype)
        if self.Q_sum is not None:
            out = self.Q_sum.astype(dtype, copy=False) @ X
        else:
            H = self.H_tilde.astype(dtype, copy=False)
            h = self.h_hat.astype(dtype, copy=False)
            out = H @ (H.T @ X)
            out -= h[:, None] * X if X.ndim == 2 else h * X
        return out / self.num_docs if normalise else out

    def rows(self, index, *, normalise=True):
        """Dense rows ``Q[index, :]``, shape (len(index), V), float64."""
        index = np.asarray(index, dtype=np.int64)
        if self.Q_sum is not None:
            block = self.Q_sum[index]
        else:
            block = (self.H_tilde[index] @ self.H_tilde.T).toarray()
            block[np.arange(len(index)), index] -= self.h_hat[index]
        if normalise:
            block /= self.num_docs
        return block

    def row_sums(self, *, normalise=True):
        """p(w) = Q @ 1, the marginal probability of each word as the first of a pair."""
        if self.Q_sum is not None:
            p = self.Q_sum.sum(axis=1)
        else:
            col = np.asarray(self.H_tilde.sum(axis=0)).ravel()
            p = self.H_tilde @ col - self.h_hat
        if not normalise:
            return p
        # Rounding can leave tiny negative values for words whose every pair cancels.
        return np.maximum(p / self.num_docs, 0.0)

    def to_dense(self):
        """Q as a dense (V, V) float64 array, normalised to sum to 1."""
        if self.Q_sum is not None:
            return self.Q_sum / self.num_docs
        return _dense_sum(self.H_tilde, self.h_hat) / self.num_docs

    def densify(self):
        """The same statistics in ``'dense'`` mode (Q_sum formed from H~, which is dropped)."""
        if self.Q_sum is not None:
            return self
        return self._replace(H_tilde=None, Q_sum=_dense_sum(self.H_tilde, self.h_hat))

    def merge(self, other):
        """Statistics of the concatenation of two corpora (Q is additive in its documents)."""
        if other.num_terms != self.num_terms or other.mode != self.mode:
            raise ValueError(
                "cannot merge co-occurrence statistics of %d terms (%s) with %d terms (%s)"
                % (self.num_terms, self.mode, other.num_terms, other.mode))
        kw = dict(
            num_terms=self.num_terms,
            num_docs=self.num_docs + other.num_docs,
            num_short=self.num_short + other.num_short,
            num_tokens=self.num_tokens + other.num_tokens,
            doc_freq=self.doc_freq + other.doc_freq,
            term_counts=self.term_counts + other.term_counts,
            h_hat=self.h_hat + other.h_hat,
        )
        if self.mode == 'dense':
            return Cooccurrence(Q_sum=self.Q_sum + other.Q_sum, **kw)
        return Cooccurrence(H_tilde=sp.hstack([self.H_tilde, other.H_tilde], format='csc'), **kw)


def _chunk_matrix(lengths, ids, counts, num_terms):
    """Sparse (V, n) count matrix of a chunk; duplicate ids within a document are summed."""
    indptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    H = sp.csc_matrix((counts, ids, indptr), shape=(num_terms, len(lengths)))
    H.sum_duplicates()
    H.eliminate_zeros()
    return H


def build_cooccurrence(corpus, num_terms=None, *, mode='implicit', chunksize=2000, progress=None,
                       sample=None, documents=None, require_pairs=True):
    """One pass over a bag-of-words stream to the co-occurrence statistics of Q.

    Parameters
    ----------
    corpus : iterable of list of (int, number)
        Any iterable of bag-of-words documents, read exactly once (a list, a gensim corpus or a
        one-shot generator). ``len()`` is never called.
    num_terms : int, optional
        V. If None, it is the largest word id seen plus one.
    mode : {'implicit', 'dense', 'auto'}
        Keep the sparse :math:`\\tilde H` (memory O(nnz)) or accumulate Q densely (O(V^2)).
        ``'auto'`` keeps H~ during the pass and decides at its end (:func:`choose_mode`, for a
        fit with the default projection and K = 100); if dense, Q is formed from H~.
    chunksize : int
        Documents per sparse chunk.
    progress : bool, optional
        Show a progress bar (tqdm, on stderr) of the documents read; None (default) shows it
        only when stderr is a terminal. Throughput is logged at INFO either way.
    sample : :class:`~gensim_anchor._sampling.Reservoir`, optional
        Also draws a uniform sample of the documents during the same pass.
    documents : :class:`~gensim_anchor._bow.DocumentStore`, optional
        Also keeps every parsed document (for a refinement that needs the tokens).
    require_pairs : bool
        Refuse a corpus with no document of two tokens (the default). False returns such
        statistics (``num_docs == 0``) for :meth:`Cooccurrence.merge` with earlier ones, as
        :meth:`~gensim_anchor.AnchorModel.update` does with a batch of short documents.

    Returns
    -------
    Cooccurrence
        The statistics; ``to_dense()`` gives Q normalised to sum 1.

    Raises
    ------
    ValueError
        On ids outside ``[0, num_terms)``, negative, NaN or fractional counts, or (with
        ``require_pairs``) a corpus in which no document has two tokens.
    TypeError
        When the corpus is not an iterable (or is a string), or a document is not a list of
        (id, count) pairs.

    Notes
    -----
    Documents with fewer than two tokens carry no pair and are skipped (counted in
    ``num_short``). Duplicate ids within a document are summed; zero counts are dropped.
    Cost: O(nnz(H)) to read plus, in dense mode, O(sum_d u_d^2) for u_d distinct words of d.

    """
    if mode not in Q_MODES:
        raise ValueError("mode must be one of %s, got %r" % (Q_MODES, mode))
    if isinstance(chunksize, bool) or not isinstance(chunksize, (int, np.integer)) or chunksize < 1:
        raise ValueError("chunksize must be a positive integer, got %r" % (chunksize,))
    check_int('num_terms', num_terms, minimum=1, allow_none=True)
    check_progress(progress)
    check_corpus(corpus)
    start = time.perf_counter()
    acc = accumulate(corpus if sample is None else sample.watch(corpus), num_terms,
                     mode=pass_mode(mode), chunksize=chunksize, progress=progress, documents=documents)
    if require_pairs and acc.num_docs_read == 0:
        raise ValueError("the corpus is empty: no documents were read")
    if require_pairs and acc.num_docs == 0:
        raise ValueError(
            "no document in the corpus has two or more tokens (%d documents read, %d tokens): "
            "co-occurrence needs at least one document with two tokens"
            % (acc.num_docs_read, acc.num_tokens))
    cooc = acc.finish()
    if mode == 'auto':
        cooc = apply_auto_mode(cooc)
    elapsed = time.perf_counter() - start
    if cooc.num_short:
        logger.info("skipped %d of %d documents with fewer than 2 tokens",
                    cooc.num_short, acc.num_docs_read)
    logger.info(
        "co-occurrence (%s%s): %d documents, %d tokens, %d terms in %.2fs (%.0f documents/s, "
        "%.0f tokens/s)", cooc.mode, ", chosen by q_mode='auto'" if mode == 'auto' else "",
        acc.num_docs_read, cooc.num_tokens, cooc.num_terms, elapsed,
        acc.num_docs_read / max(elapsed, 1e-9), cooc.num_tokens / max(elapsed, 1e-9))
    return cooc


def choose_mode(num_terms, nnz, pairs, *, projection_dim=DEFAULT_PROJECTION_DIM, num_topics=100,
                loss='L2', budget=DENSE_Q_BUDGET, costs=None):
    """How q_mode='auto' keeps Q: ``'dense'`` or ``'implicit'``, whichever fits and is faster.

    Dense when Q takes at most ``budget`` bytes (8 V^2; 1 GiB, V <= 11,585, by default) and
    the Q-side work of the fit is estimated smaller that way. With d the projection dimension
    (0 when V <= d: the exact rows are used) and k = 2K thin columns (recovery and R):

    * implicit: ``nnz (d sparse32 + k sparse64)``, plus ``pairs * pair`` when V <= d or for
      RecoverKL (both form rows of Q for most words);
    * dense: ``pairs * pair + V^2 entry`` to form Q from H~, plus ``V^2 (d dense32 + k dense64)``;

    with the costs of :data:`~gensim_anchor._defaults.Q_COSTS` (a sparse product costs about
    10x a dense one per entry and column there). The estimate is rough: on the six corpora of
    ``benchmarks/bench_scale.py --only rule`` it picked the faster mode in 5
    (``benchmarks/results/bench_scale.log``, last run).
    ``pairs`` is :math:`\\sum_d u_d^2` for u_d distinct words in document d: long documents make
    the dense Q expensive to form, so it pays for many short documents over a small
    vocabulary. On KOS (146 pairs per nonzero) the implicit estimate is about 16x smaller, and
    the implicit fit is measured faster (``benchmarks/bench_scale.py``, sections kos and rule).
    The choice is made once, at the end of the pass.

    Examples
    --------
    .. sourcecode:: pycon

        >>> from gensim_anchor.cooccurrence import choose_mode
        >>> choose_mode(6906, 353160, 51609888)  # KOS
        'implicit'
        >>> choose_mode(2000, 4 * 10 ** 6, 40 * 10 ** 6)  # 400,000 documents of 10 words
        'dense'
        >>> choose_mode(50000, 10 ** 9, 10 ** 10)  # Q would take 20 GB
        'implicit'

    """
    costs = dict(Q_COSTS, **(costs or {}))
    V, nnz, pairs = int(num_terms), float(nnz), float(pairs)
    if 8 * V * V > budget:
        return 'implicit'
    d = projection_dim if projection_dim and projection_dim < V else 0
    k = 2 * num_topics
    form_rows = pairs * costs['pair']
    implicit = nnz * (d * costs['sparse32'] + k * costs['sparse64'])
    if not d or loss == 'KL':
        implicit += form_rows
    dense = form_rows + float(V) * V * (costs['entry'] + d * costs['dense32'] + k * costs['dense64'])
    return 'dense' if dense < implicit else 'implicit'


def doc_pairs(H_tilde):
    """:math:`\\sum_d u_d^2`, for u_d the distinct words of document d (columns of H~)."""
    u = np.diff(H_tilde.tocsc().indptr)  # tocsc() is free for H~, which is kept CSC
    return int(np.dot(u.astype(np.int64), u))


def apply_auto_mode(cooc, **fit):
    """``cooc`` in the mode :func:`choose_mode` picks for it (``fit``: its keyword arguments
    projection_dim, num_topics, loss); dense statistics stay dense."""
    if cooc.mode != 'implicit':
        return cooc
    pairs = doc_pairs(cooc.H_tilde)
    mode = choose_mode(cooc.num_terms, cooc.H_tilde.nnz, pairs, **fit)
    logger.info("q_mode='auto': Q kept %s (V=%d, nnz(H~)=%d, %.1f pairs per nonzero)", mode,
                cooc.num_terms, cooc.H_tilde.nnz, pairs / max(cooc.H_tilde.nnz, 1))
    return cooc.densify() if mode == 'dense' else cooc


def pass_mode(q_mode, old=None):
    """The mode the pass accumulates in: ``'auto'`` keeps H~ and decides at the end of the
    pass (:func:`apply_auto_mode`), except that statistics already dense (``old``, from earlier
    documents) stay dense. The one place where q_mode='auto' is resolved for a pass."""
    if q_mode != 'auto':
        return q_mode
    return 'dense' if old is not None and old.mode == 'dense' else 'implicit'


#: Seconds between INFO lines on the throughput of a long pass.
_LOG_INTERVAL = 10.0


def accumulate(corpus, num_terms, *, mode='implicit', chunksize=2000, progress=False, documents=None):
    """The pass of :func:`build_cooccurrence` without its checks on the result: an
    :class:`_Accumulator` (``finish()`` gives the Cooccurrence) that may hold no document (a
    partition of a corpus may be empty). ``mode`` is ``'implicit'`` or ``'dense'``
    (:func:`pass_mode`)."""
    acc = _Accumulator(num_terms, mode)
    start = last_log = time.perf_counter()
    disable = None if progress is None else not progress  # None: tqdm's own "only on a terminal"
    with tqdm(desc='co-occurrence', unit='doc', unit_scale=True, disable=disable) as bar:
        for chunk in utils.grouper(corpus, chunksize):
            lengths, ids, counts = parse_chunk(chunk, num_terms, acc.num_docs_read)
            if documents is not None:
                documents.add(lengths, ids, counts, acc.num_docs_read)
            acc.add(_chunk_matrix(lengths, ids, counts, acc.width(ids)))
            now = time.perf_counter()
            rate = acc.num_tokens / max(now - start, 1e-9)
            bar.set_postfix_str("%.3g tokens/s" % rate, refresh=False)
            bar.update(len(chunk))
            if now - last_log >= _LOG_INTERVAL:
                last_log = now
                logger.info("co-occurrence: %d documents, %d tokens read (%.0f documents/s, "
                            "%.0f tokens/s)", acc.num_docs_read, acc.num_tokens,
                            acc.num_docs_read / (now - start), rate)
    return acc


#: Q_sum is accumulated from sparse products in row slabs of at most this many entries (32 MB):
#: neither a dense nor a sparse V x V temporary is made.
_SLAB_ENTRIES = 2 ** 22
#: Nonzeros of H~ per sparse product when Q is formed densely (about 50 MB): the V^2 additions
#: into Q are made once per block, so a block should hold many pairs of words.
_DENSE_BLOCK_NNZ = 2 ** 22


def _add_gram(Q, Ht):
    """Q += Ht Ht^T for a sparse (V, n) block, one slab of rows of Q at a time."""
    left = Ht.tocsr()
    right = Ht.T.tocsr()  # free when Ht is CSC (its transpose is CSR)
    step = max(1, _SLAB_ENTRIES // Q.shape[1])
    buffer = np.empty((min(step, Q.shape[0]), Q.shape[1]))  # one allocation (page faults) per call
    for lo in range(0, Q.shape[0], step):
        S = left[lo:lo + step] @ right
        if S.nnz:
            Q[lo:lo + step] += S.toarray(out=buffer[:S.shape[0]])


def _dense_sum(H, h_hat):
    """:math:`\\tilde H \\tilde H^T - \\mathrm{Diag}(\\hat h)`, dense, from blocks of documents."""
    V = H.shape[0]
    Q = np.zeros((V, V))
    H = H.tocsc()
    bounds = np.searchsorted(H.indptr, np.arange(0, H.nnz, _DENSE_BLOCK_NNZ), side='right') - 1
    for lo, hi in zip(bounds, list(bounds[1:]) + [H.shape[1]]):
        if hi > lo:
            _add_gram(Q, H[:, lo:hi])
    Q[np.diag_indices(V)] -= h_hat
    return Q


class _Accumulator:
    """Running sums of one pass; grows with the largest id when num_terms is not given."""

    def __init__(self, num_terms, mode='implicit'):
        if mode not in ('implicit', 'dense'):
            raise ValueError("the pass accumulates in mode 'implicit' or 'dense' (see pass_mode), got %r"
                             % (mode,))
        self.num_terms = num_terms
        self.mode = mode
        self.size = num_terms or 0
        self.num_docs_read = self.num_docs = self.num_tokens = 0
        self.doc_freq = np.zeros(self.size, dtype=np.int64)
        self.term_counts = np.zeros(self.size)
        self.h_hat = np.zeros(self.size)
        self.blocks = []
        self.pending, self.pending_nnz = [], 0  # dense mode: blocks not yet added to Q_sum
        self.Q_sum = None  # without the diagonal h_hat until finish()

    def width(self, ids):
        if self.num_terms is not None:
            return self.num_terms
        return max(self.size, int(ids.max()) + 1 if ids.size else 0)

    def _grow(self, size):
        if size > self.size:
            for name in ('doc_freq', 'term_counts', 'h_hat'):
                old = getattr(self, name)
                new = np.zeros(size, dtype=old.dtype)
                new[:self.size] = old
                setattr(self, name, new)
            self.size = size

    def _add_dense(self, Ht, flush=False):
        if Ht is not None:
            self.pending.append(Ht)
            self.pending_nnz += Ht.nnz
        if self.pending and (flush or self.pending_nnz >= _DENSE_BLOCK_NNZ):
            if self.Q_sum is None:
                self.Q_sum = np.zeros((self.num_terms, self.num_terms))
            _add_gram(self.Q_sum, sp.hstack(self.pending, format='csc'))
            self.pending, self.pending_nnz = [], 0

    def add(self, H):
        self._grow(H.shape[0])
        rows = H.shape[0]
        n = np.asarray(H.sum(axis=0)).ravel()
        self.num_docs_read += H.shape[1]
        self.num_tokens += int(n.sum())
        self.doc_freq[:rows] += np.bincount(H.indices, minlength=rows)
        self.term_counts[:rows] += np.asarray(H.sum(axis=1)).ravel()
        keep = np.flatnonzero(n >= 2)
        if not keep.size:
            return
        self.num_docs += keep.size
        H, n = H[:, keep], n[keep]
        norm = n * (n - 1)
        Ht = (H @ sp.diags(1.0 / np.sqrt(norm))).tocsc()
        self.h_hat[:rows] += H @ (1.0 / norm)
        if self.mode == 'dense' and self.num_terms is not None:
            self._add_dense(Ht)  # streaming: only Q_sum (V x V) lives between chunks
        else:
            self.blocks.append(Ht)

    def finish(self):
        V, mode = self.size, self.mode
        self._add_dense(None, flush=True)
        blocks = []
        for Ht in self.blocks:
            if Ht.shape[0] != V:
                Ht = Ht.copy()
                Ht.resize((V, Ht.shape[1]))
            blocks.append(Ht)
        self.blocks = []
        common = (V, self.num_docs, self.num_docs_read - self.num_docs, self.num_tokens,
                  self.doc_freq, self.term_counts, self.h_hat)
        H_tilde = sp.hstack(blocks, format='csc') if blocks else None  # a concatenation
        del blocks
        if mode == 'implicit':  # with no document of two tokens, V x 0 (merged with earlier ones)
            cooc = Cooccurrence(*common, H_tilde=sp.csc_matrix((V, 0)) if H_tilde is None else H_tilde)
        elif H_tilde is not None:  # V was only known at the end
            cooc = Cooccurrence(*common, H_tilde=H_tilde).densify()
        else:
            Q_sum = self.Q_sum if self.Q_sum is not None else np.zeros((V, V))
            Q_sum[np.diag_indices(V)] -= self.h_hat
            cooc = Cooccurrence(*common, Q_sum=Q_sum)
        return cooc


# ----------------------------------------------------------------------------------------------
# Random projections of rows of Q, and the corpus in quarters (the anchor-candidate rule)
# ----------------------------------------------------------------------------------------------

#: Columns of the random projection generated at a time.
_PROJECTION_BLOCK = 128


def projection_blocks(num_terms, projection_dim, seed):
    """Column blocks (offset, block) of the V x d Gaussian projection, scaled by
    :math:`1/\\sqrt d`: the same matrix for every caller with the same seed, never whole in
    memory (O(V * block)).

    The next block is drawn on a second thread while the caller multiplies by this one (numpy
    draws without the GIL; the caller's sparse products keep one core busy): the projection of
    the fixed rule's candidates took 0.26 s instead of 0.32 s on KOS, 0.81 s instead of 0.99 s on
    NIPS and 1.45 s instead of 1.96 s on 20 Newsgroups, the same rows (python
    benchmarks/bench_anchor_search.py --projection, benchmarks/results/bench_anchor_search.log).
    """
    rng = np.random.default_rng(seed)
    scale = np.float32(1.0 / math.sqrt(projection_dim))

    def draw(lo):  # one call at a time, in column order: the generator's stream is the matrix
        P = rng.standard_normal((num_terms, min(_PROJECTION_BLOCK, projection_dim - lo)), dtype=np.float32)
        P *= scale
        return P

    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(draw, 0)
        for lo in range(0, projection_dim, _PROJECTION_BLOCK):
            P = pending.result()
            if lo + _PROJECTION_BLOCK < projection_dim:
                pending = pool.submit(draw, lo + _PROJECTION_BLOCK)
            yield lo, P


def implicit_block(H, H_rows, h_hat_rows, rows, P):
    """:math:`(\\tilde H_S \\tilde H^T - \\hat h_S) P`, the unnormalised rows S of Q times P."""
    block = H_rows @ (H.T @ P)
    block -= h_hat_rows[:, None].astype(np.float32) * P[rows]
    return block


def split_quarters(cooc, offset=0):
    """The statistics of the four quarters of the documents of implicit-mode ``cooc``: the
    documents whose index (``offset`` plus their column in :math:`\\tilde H`) is 0, 2, 1 and 3
    modulo 4, in this order (the first two make the even-numbered half, the last two the odd);
    None when ``cooc`` keeps no :math:`\\tilde H` (dense or rectified statistics).

    Column d of :math:`\\tilde H` is :math:`h_d / \\sqrt{n_d(n_d-1)}`, so its sum s gives the
    length :math:`n_d = s^2/(s^2-1)` (an integer, recovered by rounding) and with it the
    document's share :math:`h_d / (n_d(n_d-1))` of :math:`\\hat h`. The quarters' shares must add
    up to ``cooc.h_hat``; where rounding of long documents in a low-precision H~ breaks that,
    None is returned.
    """
    H = getattr(cooc, 'H_tilde', None)
    if H is None or getattr(cooc, 'Q_sum', None) is not None:
        return None
    H = H.tocsc().astype(np.float64)
    s2 = np.asarray(H.sum(axis=0)).ravel() ** 2
    n = np.rint(s2 / np.maximum(s2 - 1.0, 1e-300))
    share = 1.0 / np.sqrt(np.maximum(n * (n - 1.0), 1.0))
    index = (offset + np.arange(H.shape[1])) % 4
    quarters = []
    for q in (0, 2, 1, 3):
        columns = np.flatnonzero(index == q)
        Hq = H[:, columns]
        quarters.append(cooc._replace(num_docs=len(columns), H_tilde=Hq, h_hat=Hq @ share[columns]))
    if not np.allclose(sum(q.h_hat for q in quarters), cooc.h_hat, rtol=1e-6, atol=0.0):
        return None
    return quarters


def quarter_sums(cooc, rows, projection_dim=CANDIDATE_SCORE_DIM, seed=0, offset=0):
    """What :func:`~gensim_anchor.anchors.choose_candidates` needs of the quarters of
    :func:`split_quarters`, as sums over documents (so that the partitions of a distributed
    corpus add theirs up): the number of documents (4,), the unnormalised row sums of Q, M p(w)
    (4, V), and the unnormalised projected rows M Q[rows] P (4, len(rows), d; exact rows when
    d >= V); None when the statistics cannot be split."""
    quarters = split_quarters(cooc, offset)
    if quarters is None:
        return None
    docs = np.array([q.num_docs for q in quarters], dtype=np.float64)
    sums = np.array([q.row_sums(normalise=False) if q.num_docs else np.zeros(q.num_terms) for q in quarters])
    rows = np.asarray(rows, dtype=np.int64)
    V = cooc.num_terms
    if not projection_dim or projection_dim >= V:
        return docs, sums, np.array([q.rows(rows, normalise=False) for q in quarters])
    H = [q.H_tilde.astype(np.float32) for q in quarters]
    H_rows = [Hq[rows] for Hq in H]
    out = np.empty((4, len(rows), projection_dim), dtype=np.float32)
    for lo, P in projection_blocks(V, projection_dim, seed):
        for o, q, Hq, Hr in zip(out, quarters, H, H_rows):
            o[:, lo:lo + P.shape[1]] = implicit_block(Hq, Hr, q.h_hat[rows], rows, P)
    return docs, sums, out
