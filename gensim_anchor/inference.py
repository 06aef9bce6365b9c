"""Document-topic inference with the topics fixed: the variational E-step of LDA, in JAX.

For a document with word counts :math:`n_{w}` and fixed topics :math:`\\beta` (K x V), the
mean-field posterior :math:`q(\\theta) = \\mathrm{Dir}(\\gamma)` is the fixed point of

.. math::

    \\gamma_k = \\alpha_k + e^{E_q[\\log\\theta_k]} \\sum_w
        \\frac{n_w \\beta_{kw}}{\\sum_j e^{E_q[\\log\\theta_j]} \\beta_{jw}},
    \\qquad E_q[\\log\\theta_k] = \\psi(\\gamma_k) - \\psi(\\textstyle\\sum_j \\gamma_j)

(Blei, Ng & Jordan 2003; the phi-free form of Hoffman's online LDA, as in gensim's
``LdaModel.inference``). The iteration is ``vmap``-ed over the documents of a chunk, grouped by
length and each padded to its group's (a power of two, or three quarters of one for many
documents), in calls of a power of two documents, so few shapes are ever compiled.

Unlike ``LdaModel``, gamma starts deterministically at :math:`\\alpha + n_d / K`, so the same
document always gets the same topics. Topics are floored at :data:`TOPIC_FLOOR` so that no word
has probability zero under every topic.

Examples
--------
.. sourcecode:: pycon

    >>> import numpy as np
    >>> from gensim_anchor.inference import infer
    >>> topics = np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5]])
    >>> gamma = infer(topics, np.array([0.1, 0.1]), [[(0, 3), (1, 1)], []]).gamma
    >>> np.round(gamma / gamma.sum(axis=1, keepdims=True), 3).tolist()
    [[0.976, 0.024], [0.5, 0.5]]

"""
import functools
import logging
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import digamma

from ._bow import padded_positions, parse_chunk, segment_sums, split_documents
from ._compile_cache import power_of_two, stored_jit

logger = logging.getLogger(__name__)

#: Smallest probability of a word under a topic during inference (anchor words are exactly 0
#: under the other topics; a floor keeps every ratio finite).
TOPIC_FLOOR = 1e-12
_MIN_PAD = 8
# Documents a length group needs before it runs at three quarters of a power of two or in two
# calls (_pieces): below it, padding costs less than compiling one more program would. At 64
# rather than 256, a batch of 300 KOS documents ran 33% faster (7 calls instead of 5), 20
# Newsgroups' 14% (benchmarks/results/bench_inference.log, the 20:12Z and 20:15Z entries).
_MANY_DOCS = 64
# Columns of the topics sent per call: a power of two, at least this many (a few documents and
# small vocabularies share one program; 256 x K floats cost nothing to send).
_MIN_COLUMNS = 256


class InferenceResult(NamedTuple):
    """Variational posteriors of a chunk of documents.

    Attributes
    ----------
    gamma : numpy.ndarray, shape (D, K)
        Dirichlet parameters of q(theta), all > 0.
    n_iter : numpy.ndarray, shape (D,)
        Iterations each document took.
    sstats : numpy.ndarray, shape (K, V), or None
        :math:`\\sum_d n_{dw}\\phi_{dwk}`, the expected topic-word counts.
    phi : list of numpy.ndarray, shape (K, n_d), or None
        Per document, :math:`n_{dw}\\phi_{dwk}` for its known words (``return_phi``).
    phi_ids : list of list of (int, float), or None
        The (word id, count) pairs that ``phi``'s columns belong to.

    """
    gamma: np.ndarray
    n_iter: np.ndarray
    sstats: object = None
    phi: object = None
    phi_ids: object = None


def pad_documents(chunk, num_terms, doc_offset=0):
    """Bag-of-words documents as padded (ids, counts) arrays; unknown ids are dropped.

    Error messages number the documents from ``doc_offset``.

    Returns
    -------
    ids : numpy.ndarray, shape (D, L), int32
    counts : numpy.ndarray, shape (D, L), float64
        Zero in the padding. L is a power of two >= the longest document (at least 8).
    kept : list of numpy.ndarray, shape (n_d, 2)
        The (id, count) pairs kept for each document, in input order.

    Raises
    ------
    TypeError
        If a document is not a list of (word_id, count) pairs (e.g. a list of tokens).
    ValueError
        On a NaN or fractional word id, or a count that is negative or not finite.
    """
    lengths, flat_ids, flat_counts = parse_chunk(chunk, None, doc_offset, unknown='keep',
                                                 whole_counts=None)
    parsed = _Parsed(lengths, flat_ids, flat_counts, num_terms)
    L = power_of_two(lengths.max(initial=1), _MIN_PAD)
    ids, counts = parsed.padded(np.arange(len(lengths)), len(lengths), L)
    return ids, counts, parsed.pairs(np.arange(len(lengths)))


class _Parsed:
    """A parsed chunk with LdaModel's semantics: words outside the dictionary (and zero counts)
    are ignored. Padded blocks of any subset of its documents, without a loop over them."""

    def __init__(self, lengths, ids, counts, num_terms):
        keep = (ids >= 0) & (ids < num_terms) & (counts > 0)
        self.ids, self.counts = ids[keep], counts[keep]
        # The distinct words, and each token's column among them (for a gathered beta).
        self.columns, self.local = np.unique(self.ids.astype(np.int64), return_inverse=True)
        self.sizes = segment_sums(lengths, keep)  # kept pairs per document
        self._per_doc = None

    def padded(self, members, rows, width, local=False):
        """(ids, counts) of the documents ``members``, shape (rows, width), zero-padded; with
        ``local``, ids are positions in ``columns``."""
        row, position, source = padded_positions(self.sizes, members)
        ids = np.zeros((rows, width), dtype=np.int32)
        counts = np.zeros((rows, width))
        ids[row, position] = (self.local if local else self.ids)[source]
        counts[row, position] = self.counts[source]
        return ids, counts

    def pairs(self, members):
        """The kept (id, count) pairs of each of ``members``, as float (n_d, 2) arrays (split
        once per chunk, whatever the number of groups asking)."""
        if self._per_doc is None:
            pairs = np.column_stack([self.ids.astype(np.float64), self.counts])
            self._per_doc = [p for (p,) in split_documents(self.sizes, pairs)]
        return [self._per_doc[d] for d in members]


def _pieces(n):
    """Sizes of the calls that infer a group of ``n`` documents: powers of two (at least
    :data:`_MIN_PAD`; 1 for a lone document, ``model[bow]``). One call, unless the group has
    :data:`_MANY_DOCS` documents and one call would be more than a quarter padding: then two,
    the largest power of two below ``n`` and the rest (at most a fifth padding). The vmapped
    loop costs a padded row as much as a real one, and one document at the iteration cap makes
    every row of its call run to the cap (``python benchmarks/bench_inference.py``,
    ``benchmarks/results/bench_inference.log``)."""
    if n == 1:
        return [1]
    size = power_of_two(n, _MIN_PAD)
    if n < _MANY_DOCS or size - n <= size // 4:
        return [size]
    return [size // 2, power_of_two(n - size // 2, _MIN_PAD)]


def _calls(lengths):
    """(width, members, rows) of each call that infers documents of these lengths. Documents
    are grouped by padded length (a power of two) so that short documents are not padded to the
    longest one; each group is run in pieces whose sizes are powers of two too (:func:`_pieces`),
    so a few shapes are compiled whatever the chunk. A lone document (``model[bow]``) is one
    call without the grouping's numpy work (two ``np.unique`` among others: a share of such a
    call, ``benchmarks/results/bench_inference.log``, session 27)."""
    if len(lengths) == 1:
        return [(power_of_two(lengths[0], _MIN_PAD), np.zeros(1, np.int64), 1)]
    pads = power_of_two(lengths, _MIN_PAD)
    # Three quarters of a power of two for the documents that fit, where enough of them share
    # it: every row of a call pays for its width, and a new width is a new program to compile.
    fine = np.where((pads >= 16) & (lengths <= pads * 3 // 4), pads * 3 // 4, pads)
    _, inverse, sizes = np.unique(fine, return_inverse=True, return_counts=True)
    pads = np.where(sizes[inverse] >= _MANY_DOCS, fine, pads)
    calls = []
    for width in np.unique(pads):
        members, start = np.flatnonzero(pads == width), 0
        for size in _pieces(len(members)):
            calls.append((int(width), members[start:start + size], size))
            start += size
    return calls


def _infer_document(beta, alpha, ids, counts, max_iter, tol):
    beta_d = beta[:, ids]  # (K, L); padding has counts 0
    gamma = alpha + jnp.sum(counts) / alpha.shape[0]

    def exp_elog(gamma):
        return jnp.exp(digamma(gamma) - digamma(jnp.sum(gamma)))

    def step(gamma):
        e = exp_elog(gamma)
        phinorm = e @ beta_d
        return alpha + e * (beta_d @ (counts / phinorm))

    def cond(state):
        gamma, it, change = state
        return (it < max_iter) & (change >= tol)

    def body(state):
        gamma, it, _ = state
        new = step(gamma)
        return new, it + 1, jnp.mean(jnp.abs(new - gamma))

    gamma, it, _ = jax.lax.while_loop(cond, body, (gamma, jnp.array(0), jnp.array(jnp.inf)))
    e = exp_elog(gamma)
    # n_w phi_wk for every (padded) position: the document's share of the sufficient statistics.
    contrib = e[:, None] * beta_d * (counts / (e @ beta_d))[None, :]
    return gamma, it, contrib


@functools.partial(jax.jit, static_argnames=('collect_sstats', 'return_phi'))
def _infer_chunk(beta, alpha, ids, counts, max_iter, tol, collect_sstats, return_phi):
    gamma, it, contrib = jax.vmap(_infer_document, in_axes=(None, None, 0, 0, None, None))(
        beta, alpha, ids, counts, max_iter, tol)
    if return_phi:
        return gamma, it, contrib
    if not collect_sstats:
        return gamma, it, None
    K = beta.shape[0]
    flat = jnp.transpose(contrib, (1, 0, 2)).reshape(K, -1)
    sstats = jnp.zeros_like(beta).at[:, ids.reshape(-1)].add(flat)
    return gamma, it, sstats


_infer_chunk = stored_jit(_infer_chunk, ('collect_sstats', 'return_phi'), loop_emitters=True)


def infer(topics, alpha, chunk, *, max_iter=50, tol=1e-3, collect_sstats=False, return_phi=False):
    """Variational inference of q(theta) = Dir(gamma) for bag-of-words documents.

    Parameters
    ----------
    topics : numpy.ndarray, shape (K, V)
        p(w | z), rows summing to 1 (floored at :data:`TOPIC_FLOOR`).
    alpha : numpy.ndarray, shape (K,)
        Dirichlet prior, all > 0.
    chunk : list of list of (int, number)
        Documents; empty documents and ids outside the vocabulary are allowed (an empty or
        all-unknown document gets gamma = alpha, the prior).
    max_iter : int
        Iteration cap per document (LdaModel's ``iterations``).
    tol : float
        Stop when the mean absolute change of gamma falls below it (``gamma_threshold``).
    collect_sstats : bool
        Also return the expected topic-word counts (K x V).
    return_phi : bool
        Also return each document's :math:`n_{dw}\\phi_{dwk}` (for per-word topics).

    Returns
    -------
    InferenceResult

    Raises
    ------
    TypeError, ValueError
        On a document that is not a list of (id, count) pairs, a NaN or fractional id, or a
        negative or infinite count (see :func:`pad_documents`). Documents that reach
        ``max_iter`` are counted in a DEBUG log (as in ``LdaModel``: ``model[bow]`` infers one
        document per call).
    """
    topics = np.asarray(topics)
    if topics.ndim != 2 or 0 in topics.shape:
        raise ValueError("topics must be a 2-D array (num_topics, num_terms), got shape %s" % (topics.shape,))
    K, V = topics.shape
    alpha = np.asarray(alpha, dtype=np.float64)
    if alpha.shape != (K,):
        raise ValueError("alpha must have shape (%d,) (one value per topic), got shape %s"
                         % (K, alpha.shape))
    if not np.all(np.isfinite(alpha)) or np.any(alpha <= 0):  # digamma(0) is -inf: NaN gammas
        raise ValueError("alpha must be finite and > 0, got %r" % (alpha.tolist(),))
    lengths, flat_ids, flat_counts = parse_chunk(chunk, None, unknown='keep', whole_counts=None)
    parsed = _Parsed(lengths, flat_ids, flat_counts, V)
    # Only the columns of the words in the chunk, not all of (K, V): converting and sending the
    # whole matrix cost 45 ms per model[bow] call at V = 50,000, K = 100. Their number is padded
    # to a power of two (a few compiled shapes), with columns no document points to.
    used = parsed.columns
    num_columns = power_of_two(len(used), _MIN_COLUMNS)
    beta = np.full((K, num_columns), TOPIC_FLOOR)
    beta[:, :len(used)] = np.maximum(topics[:, used].astype(np.float64), TOPIC_FLOOR)
    D = len(lengths)
    gamma = np.zeros((D, K))
    n_iter = np.zeros(D, dtype=np.int64)
    sstats = np.zeros((K, V)) if collect_sstats else None
    phi = [None] * D if return_phi else None
    phi_ids = [None] * D if return_phi else None
    calls = _calls(lengths)
    with jax.enable_x64(True):
        # numpy scalars and arrays, not jnp.asarray: no conversion programs to compile. beta is
        # sent once for several calls; a lone call takes it as numpy (device_put's Python
        # costs a model[bow] call more than the program's own transfer).
        beta_j = jax.device_put(beta) if len(calls) > 1 else beta
        alpha_j, max_iter_j, tol_j = np.asarray(alpha, np.float64), np.int64(max_iter), np.float64(tol)
        for width, members, size in calls:
            ids, counts = parsed.padded(members, size, width, local=True)
            g, it, extra = _infer_chunk(beta_j, alpha_j, ids, counts, max_iter_j, tol_j,
                                        collect_sstats and not return_phi, return_phi)
            n = len(members)
            gamma[members], n_iter[members] = np.asarray(g)[:n], np.asarray(it)[:n]
            if extra is None:
                continue
            extra = np.asarray(extra)
            if not return_phi:
                sstats[:, used] += extra[:, :len(used)]  # padding contributes nothing (counts 0)
                continue
            for j, (d, kept) in enumerate(zip(members, parsed.pairs(members))):
                phi[d] = extra[j][:, :len(kept)]
                phi_ids[d] = [(int(w), float(c)) for w, c in kept]
                if collect_sstats:
                    np.add.at(sstats, (slice(None), kept[:, 0].astype(np.int64)), phi[d])
    capped = int(np.sum(n_iter >= max_iter))
    if capped:  # DEBUG, as LdaModel's convergence count: model[bow] calls this per document
        logger.debug("%d of %d documents stopped at the iteration cap (%d) before gamma changed by "
                    "less than %g", capped, D, max_iter, tol)
    return InferenceResult(gamma, n_iter, sstats, phi, phi_ids)
