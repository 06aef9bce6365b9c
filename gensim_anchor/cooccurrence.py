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
  only for the words asked for.
* ``'dense'``: Q itself, V x V, accumulated chunk by chunk from sparse products. Memory is
  O(V^2), independent of the corpus size.

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
import itertools
import logging
import time
from typing import NamedTuple, Optional

import numpy as np
import scipy.sparse as sp

from ._defaults import Q_MODES

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
    H_tilde : scipy.sparse.csr_matrix, shape (V, M), or None
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
    H_tilde: Optional[sp.csr_matrix] = None
    Q_sum: Optional[np.ndarray] = None

    @property
    def mode(self):
        return 'dense' if self.Q_sum is not None else 'implicit'

    def matmul(self, X, dtype=np.float64):
        """Q @ X for a thin X of shape (V, k), computed without forming Q in implicit mode.

        ``dtype`` is the precision of the sparse products (float32 halves their cost where the
        caller does not need float64, e.g. a random projection).
        """
        X = np.asarray(X, dtype=dtype)
        if self.Q_sum is not None:
            return (self.Q_sum.astype(dtype, copy=False) @ X) / self.num_docs
        H = self.H_tilde.astype(dtype, copy=False)
        h = self.h_hat.astype(dtype, copy=False)
        out = H @ (H.T @ X)
        out -= h[:, None] * X if X.ndim == 2 else h * X
        return out / self.num_docs

    def rows(self, index):
        """Dense rows ``Q[index, :]``, shape (len(index), V), float64."""
        index = np.asarray(index, dtype=np.int64)
        if self.Q_sum is not None:
            return self.Q_sum[index] / self.num_docs
        block = (self.H_tilde[index] @ self.H_tilde.T).toarray()
        block[np.arange(len(index)), index] -= self.h_hat[index]
        block /= self.num_docs
        return block

    def row_sums(self):
        """p(w) = Q @ 1, the marginal probability of each word as the first of a pair."""
        if self.Q_sum is not None:
            p = self.Q_sum.sum(axis=1) / self.num_docs
        else:
            col = np.asarray(self.H_tilde.sum(axis=0)).ravel()
            p = (self.H_tilde @ col - self.h_hat) / self.num_docs
        # Rounding can leave tiny negative values for words whose every pair cancels.
        return np.maximum(p, 0.0)

    def to_dense(self):
        """Q as a dense (V, V) float64 array, normalised to sum to 1."""
        if self.Q_sum is not None:
            return self.Q_sum / self.num_docs
        Q = (self.H_tilde @ self.H_tilde.T).toarray()
        Q[np.diag_indices_from(Q)] -= self.h_hat
        Q /= self.num_docs
        return Q

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
        return Cooccurrence(H_tilde=sp.hstack([self.H_tilde, other.H_tilde], format='csr'), **kw)


def _chunk_arrays(chunk, num_terms, doc_offset):
    """Flatten a list of bag-of-words documents into (lengths, ids, counts), validating them."""
    lengths = np.empty(len(chunk), dtype=np.int64)
    for i, doc in enumerate(chunk):
        try:
            lengths[i] = len(doc)
        except TypeError:
            raise TypeError(
                "document #%d is a %s, expected a bag-of-words list of (word_id, count) pairs"
                % (doc_offset + i, type(doc).__name__)) from None
    try:
        pairs = np.array(list(itertools.chain.from_iterable(chunk)), dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            "documents #%d..#%d are not all bag-of-words lists of (word_id, count) pairs; "
            "convert texts with Dictionary.doc2bow first" % (doc_offset, doc_offset + len(chunk) - 1)
        ) from None
    if pairs.size == 0:
        pairs = pairs.reshape(0, 2)
    if pairs.ndim != 2 or pairs.shape[1] != 2:
        raise TypeError(
            "documents #%d..#%d are not all bag-of-words lists of (word_id, count) pairs"
            % (doc_offset, doc_offset + len(chunk) - 1))
    ids, counts = pairs[:, 0], pairs[:, 1]

    def _where(bad):
        pos = int(np.flatnonzero(bad)[0])
        doc = int(np.searchsorted(np.cumsum(lengths), pos, side='right'))
        return doc_offset + doc, pairs[pos]

    bad = ~np.isfinite(ids) | (ids != np.round(ids)) | (ids < 0)
    if num_terms is not None:
        bad |= ids >= num_terms
    if bad.any():
        doc, pair = _where(bad)
        raise ValueError(
            "document #%d has word id %s outside the dictionary (valid ids are 0..%s); "
            "was the corpus made with a different Dictionary?"
            % (doc, _num(pair[0]), num_terms - 1 if num_terms is not None else 'inf'))
    bad = ~np.isfinite(counts) | (counts < 0)
    if bad.any():
        doc, pair = _where(bad)
        raise ValueError("document #%d has count %s for word id %d; counts must be finite and >= 0"
                         % (doc, _num(pair[1]), int(pair[0])))
    bad = counts != np.round(counts)
    if bad.any():
        doc, pair = _where(bad)
        raise ValueError(
            "document #%d has non-integer count %s for word id %d; Q needs raw word counts "
            "(a TF-IDF or otherwise weighted corpus cannot be used)" % (doc, _num(pair[1]), int(pair[0])))
    return lengths, ids.astype(np.int64), counts


def _num(value):
    """A number as a user wrote it: 5 for 5.0, 0.5, nan."""
    value = float(value)
    return str(int(value)) if np.isfinite(value) and value == int(value) else repr(value)


def _chunk_matrix(lengths, ids, counts, num_terms):
    """Sparse (V, n) count matrix of a chunk; duplicate ids within a document are summed."""
    indptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=indptr[1:])
    H = sp.csc_matrix((counts, ids, indptr), shape=(num_terms, len(lengths)))
    H.sum_duplicates()
    H.eliminate_zeros()
    return H


def build_cooccurrence(corpus, num_terms=None, *, mode='implicit', chunksize=2000):
    """One pass over a bag-of-words stream to the co-occurrence statistics of Q.

    Parameters
    ----------
    corpus : iterable of list of (int, number)
        Any iterable of bag-of-words documents, read exactly once (a list, a gensim corpus or a
        one-shot generator). ``len()`` is never called.
    num_terms : int, optional
        V. If None, it is the largest word id seen plus one.
    mode : {'implicit', 'dense'}
        Keep the sparse :math:`\\tilde H` (memory O(nnz)) or accumulate Q densely (O(V^2)).
    chunksize : int
        Documents per sparse chunk.

    Returns
    -------
    Cooccurrence
        The statistics; ``to_dense()`` gives Q normalised to sum 1.

    Raises
    ------
    ValueError
        On ids outside ``[0, num_terms)``, negative, NaN or fractional counts, or a corpus in
        which no document has two tokens.
    TypeError
        When a document is not a list of (id, count) pairs.

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
    start = time.perf_counter()
    acc = _Accumulator(num_terms)
    iterator = iter(corpus)
    while True:
        chunk = list(itertools.islice(iterator, chunksize))
        if not chunk:
            break
        lengths, ids, counts = _chunk_arrays(chunk, num_terms, acc.num_docs_read)
        acc.add(_chunk_matrix(lengths, ids, counts, acc.width(ids)), dense=(mode == 'dense'))
    if acc.num_docs_read == 0:
        raise ValueError("the corpus is empty: no documents were read")
    if acc.num_docs == 0:
        raise ValueError(
            "no document in the corpus has two or more tokens (%d documents read, %d tokens): "
            "co-occurrence needs at least one document with two tokens"
            % (acc.num_docs_read, acc.num_tokens))
    cooc = acc.finish(mode)
    elapsed = time.perf_counter() - start
    if cooc.num_short:
        logger.info("skipped %d of %d documents with fewer than 2 tokens",
                    cooc.num_short, acc.num_docs_read)
    logger.info(
        "co-occurrence (%s): %d documents, %d tokens, %d terms in %.2fs (%.0f tokens/s)",
        mode, cooc.num_docs, cooc.num_tokens, cooc.num_terms, elapsed,
        cooc.num_tokens / max(elapsed, 1e-9))
    return cooc


class _Accumulator:
    """Running sums of one pass; grows with the largest id when num_terms is not given."""

    def __init__(self, num_terms):
        self.num_terms = num_terms
        self.size = num_terms or 0
        self.num_docs_read = self.num_docs = self.num_tokens = 0
        self.doc_freq = np.zeros(self.size, dtype=np.int64)
        self.term_counts = np.zeros(self.size)
        self.h_hat = np.zeros(self.size)
        self.blocks = []
        self.Q_sum = None

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

    def add(self, H, dense):
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
        hh = H @ (1.0 / norm)
        self.h_hat[:rows] += hh
        if dense and self.num_terms is not None:
            # Streaming: only Q_sum (V x V) lives between chunks.
            if self.Q_sum is None:
                self.Q_sum = np.zeros((self.num_terms, self.num_terms))
            self.Q_sum += (Ht @ Ht.T).toarray()
            self.Q_sum[np.diag_indices(self.num_terms)] -= hh
        else:
            self.blocks.append(Ht)

    def finish(self, mode):
        V = self.size
        blocks = []
        for Ht in self.blocks:
            if Ht.shape[0] != V:
                Ht = Ht.copy()
                Ht.resize((V, Ht.shape[1]))
            blocks.append(Ht)
        common = (V, self.num_docs, self.num_docs_read - self.num_docs, self.num_tokens,
                  self.doc_freq, self.term_counts, self.h_hat)
        H_tilde = sp.hstack(blocks, format='csr') if blocks else None
        if mode == 'implicit':
            return Cooccurrence(*common, H_tilde=H_tilde)
        Q_sum = self.Q_sum
        if H_tilde is not None:  # V was only known at the end
            Q_sum = (H_tilde @ H_tilde.T).toarray()
            Q_sum[np.diag_indices(V)] -= self.h_hat
        return Cooccurrence(*common, Q_sum=Q_sum)


