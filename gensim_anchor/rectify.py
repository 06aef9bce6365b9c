"""Rectification of the co-occurrence matrix (Lee, Bindel & Mimno 2015).

`Robust Spectral Inference for Joint Stochastic Matrix Factorization
<https://papers.nips.cc/paper/5747-robust-spectral-inference-for-joint-stochastic-matrix-factorization>`_,
NIPS 2015 (the "Rectified Anchor Words" algorithm).

The population Q is a joint-stochastic matrix :math:`A R A^T` with A and R nonnegative: it is
symmetric positive semidefinite of rank at most K, entrywise nonnegative and sums to 1. The
estimate from a finite corpus is none of these but the last (it has negative eigenvalues and,
with few long documents, negative entries), which breaks the geometry the anchor words rely
on. Rectification replaces Q by a point near the intersection of the three sets, by
**alternating projection** (AP), from :math:`C_0 = Q`:

.. math::

    P_t = \\Pi_{\\mathrm{PSD}_K}(C_t), \\qquad
    N_t = P_t + \\frac{1 - \\mathbf 1^T P_t \\mathbf 1}{V^2}\\,\\mathbf 1 \\mathbf 1^T, \\qquad
    C_{t+1} = \\max(N_t, 0),

the projections onto the PSD matrices of rank <= K (the K largest eigenpairs, negative
eigenvalues clipped), onto the matrices that sum to 1, and onto the nonnegative matrices, in
this order, as in the authors' code (``rectifyC_AP.m`` of https://github.com/moontae/JSMF).
The result is normalised to sum to 1 (as theirs) and symmetrised.

Then the anchors and A are found on the rectified Q as usual, and R by the **diagonal
method** (the authors' ``diagonalRecovery`` in ``recoverA.m``): with anchors :math:`s_k`,
:math:`Q_{SS} = A_{S} R A_{S}^T` and :math:`A_S` is diagonal by separability, so

.. math::

    R = \\mathrm{Diag}(1/A_{s_k,k})\\, Q_{SS}\\, \\mathrm{Diag}(1/A_{s_k,k}),

nonnegative whenever Q is (:func:`~gensim_anchor.recovery.diagonal_topic_cooccurrence`;
the pseudo-inverse :math:`A^+ Q A^{+T}` has negative entries).

The projection onto :math:`\\mathrm{PSD}_K` needs the K largest eigenpairs of a V x V matrix;
a full ``eigh`` is :math:`O(V^3)`, every iteration.
Here they come from **warm-started subspace iteration** with Rayleigh-Ritz on a block of
:math:`b = K + p` vectors, :math:`p = \\max(10, K/2)`: 10 power steps on Q first, then, in each
AP iteration, one power step with the current iterate and the Ritz pairs of the next, the basis
carried over (the iterates change little from one iteration to the next). An iteration costs
two products :math:`C U` (:math:`O(V^2 b)`), the projection (:math:`O(V^2 K)`) and QRs of
V x b. The block holds the eigenvectors of the b largest eigenvalues in magnitude; the K
largest algebraic ones are kept, so the oversampling also leaves room for the large negative
eigenvalues of an unrectified Q. When :math:`V \\le b` the block is the whole space and the projection is exact.
The loop is one jitted ``lax.while_loop`` in float64 (``jax.enable_x64``, scoped), stopped when
the relative change of the iterate falls below ``tol`` or after ``max_iter`` iterations.

Measured on KOS (V = 6,906, K = 50; 2-core EPYC, ``benchmarks/results/rectify_kos.log``, from
a fit with ``rectify=True`` and this module's INFO log): the AP reaches a relative change of
1e-4 after 41 iterations, in 11.8 s with the compilation; the whole fit peaked at 2.2 GB RSS.
On 150 words the iterates agree with the AP with exact ``eigh`` projections to better than 2e-7
(relative, Frobenius; asserted by ``tests/test_rectify.py``).

The AP needs Q dense: :data:`MAX_BYTES` bounds its working memory (:func:`check_fits`).

Examples
--------
.. sourcecode:: pycon

    >>> import numpy as np
    >>> from gensim_anchor.rectify import rectify
    >>> rng = np.random.default_rng(0)
    >>> A = rng.dirichlet(np.ones(30), size=3).T  # 30 words, 3 topics
    >>> Q = A @ np.diag([0.5, 0.3, 0.2]) @ A.T + 1e-4 * rng.standard_normal((30, 30))
    >>> Q = (Q + Q.T) / 2
    >>> Q /= Q.sum()
    >>> bool(np.linalg.eigvalsh(Q).min() < 0)  # the noise makes Q indefinite
    True
    >>> result = rectify(Q, num_topics=3)
    >>> eigenvalues = np.linalg.eigvalsh(result.Q)
    >>> bool(result.Q.min() >= 0), round(float(result.Q.sum()), 12)
    (True, 1.0)
    >>> bool(np.abs(eigenvalues[:-3]).max() < 1e-6 * eigenvalues[-1])  # rank 3
    True

"""
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ._compile_cache import stored_jit
from ._defaults import RECTIFY_MAX_ITER, RECTIFY_TOL
from .cooccurrence import Cooccurrence

#: Working memory the AP may take, in bytes (about :data:`_WORK_COPIES` V x V float64 arrays).
#: 8 GiB admits V <= 13,377 words.
MAX_BYTES = 8 * 2 ** 30
#: V x V float64 arrays alive at once: Q on the host and on the device, the iterate, the
#: projection and the next iterate, and one for the fused elementwise steps.
_WORK_COPIES = 6
#: Default cap on AP iterations, and tolerance on the relative change of the iterate (1e-4 stops
#: KOS after 41 iterations, see the measurement above).
DEFAULT_MAX_ITER = RECTIFY_MAX_ITER
DEFAULT_TOL = RECTIFY_TOL
#: Subspace iteration: power steps on Q before the first projection, and the oversampling p of
#: the block (b = K + p).
_WARMUP = 10
_MIN_OVERSAMPLE = 10


class Rectification(NamedTuple):
    """Outcome of :func:`rectify`.

    Attributes
    ----------
    Q : numpy.ndarray, shape (V, V)
        The rectified co-occurrence: symmetric, nonnegative, sums to 1, and (to the AP's
        convergence) PSD of rank <= K.
    n_iter : int
        AP iterations run.
    change : float
        :math:`\\|C_{t+1} - C_t\\|_F / \\|C_{t+1}\\|_F` of the last iteration.
    residual : float
        :math:`\\|C - P\\|_F / \\|C\\|_F` for the result C and the rank-K PSD projection P it
        was made from: an upper bound on the relative distance of C from the PSD matrices
        of rank <= K.
    moved : float
        :math:`\\|C - Q\\|_F / \\|Q\\|_F`, how far rectification moved Q.
    converged : bool
        ``change`` fell below the tolerance before ``max_iter``.

    """
    Q: np.ndarray
    n_iter: int
    change: float
    residual: float
    moved: float
    converged: bool


def working_bytes(num_terms):
    """Estimated memory of the AP on a V x V matrix, in bytes."""
    return _WORK_COPIES * 8 * int(num_terms) ** 2


def max_terms(limit=None):
    """The largest vocabulary the AP fits in ``limit`` bytes (default :data:`MAX_BYTES`)."""
    limit = MAX_BYTES if limit is None else limit
    return int(math.isqrt(int(limit) // (_WORK_COPIES * 8)))


def check_fits(num_terms, limit=None):
    """Raise a ValueError naming the remedy when the AP on V words would exceed ``limit``."""
    limit = MAX_BYTES if limit is None else limit
    need = working_bytes(num_terms)
    if need > limit:
        raise ValueError(
            "rectify=True needs Q as a dense matrix over the %d words that occur in a document of "
            "two or more tokens: about %s of working memory, more than the limit of %s "
            "(gensim_anchor.rectify.MAX_BYTES); prune the vocabulary to at most %d words, e.g. "
            "with Dictionary.filter_extremes(keep_n=%d), or train without rectify"
            % (num_terms, _size(need), _size(limit), max_terms(limit), max_terms(limit)))


def _size(num_bytes):
    return "%.3g GiB" % (num_bytes / 2 ** 30) if num_bytes >= 2 ** 30 else "%.3g MiB" % (num_bytes / 2 ** 20)


def _block_size(num_terms, num_topics):
    return min(num_terms, num_topics + max(_MIN_OVERSAMPLE, num_topics // 2))


def _ritz_projection(C, U, num_topics):
    """The rank-K PSD projection of C from the Ritz pairs in span(CU), and the next basis."""
    # One power step with C itself first: Ritz pairs from the basis of the previous iterate lag
    # one iteration behind it, and that lag kept the relative change of the iterate from
    # falling; with the step the AP follows the one with exact eigenpairs
    # (tests/test_rectify.py compares them).
    U = jnp.linalg.qr(C @ U)[0]
    Z = C @ U
    T = U.T @ Z
    theta, W = jnp.linalg.eigh((T + T.T) / 2)  # ascending
    X = U @ W[:, ::-1][:, :num_topics]
    lam = jnp.maximum(theta[::-1][:num_topics], 0.0)
    P = (X * lam) @ X.T
    return P, jnp.linalg.qr(Z)[0]


def _rectify_impl(Q, U0, max_iter, tol, warmup, num_topics):
    V = Q.shape[0]
    U = jax.lax.fori_loop(0, warmup, lambda _, U: jnp.linalg.qr(Q @ U)[0], U0)

    def body(state):
        C, U, it, _, _ = state
        P, U = _ritz_projection(C, U, num_topics)
        C_new = jnp.maximum(P + (1.0 - jnp.sum(P)) / (V * V), 0.0)
        size = jnp.linalg.norm(C_new)
        change = jnp.linalg.norm(C_new - C) / size
        residual = jnp.linalg.norm(C_new - P) / size
        return C_new, U, it + 1, change, residual

    def cond(state):
        return (state[2] < max_iter) & (state[3] > tol)

    inf = jnp.asarray(jnp.inf, Q.dtype)
    C, _, it, change, residual = jax.lax.while_loop(cond, body, (Q, U, 0, inf, inf))
    C = C / jnp.sum(C)
    return (C + C.T) / 2, it, change, residual


_rectify = stored_jit(jax.jit(_rectify_impl, static_argnames=('num_topics',)), ('num_topics',))


def rectify(Q, num_topics, *, max_iter=DEFAULT_MAX_ITER, tol=DEFAULT_TOL, seed=0):
    """Rectify a co-occurrence matrix by alternating projection (Lee, Bindel & Mimno 2015).

    Parameters
    ----------
    Q : array_like, shape (V, V)
        A symmetric co-occurrence matrix (the empirical Q, normalised to sum to 1).
    num_topics : int
        K, the rank of the PSD projection.
    max_iter : int
        Cap on AP iterations; ``converged`` is False when it is reached first (the model
        logs a WARNING naming the residual).
    tol : float
        Stop when the relative Frobenius change of the iterate falls below it.
    seed : int
        Seed of the random starting block of the subspace iteration.

    Returns
    -------
    Rectification

    """
    Q = np.asarray(Q, dtype=np.float64)
    V = Q.shape[0]
    if Q.ndim != 2 or Q.shape[1] != V:
        raise ValueError("Q must be a square matrix, got shape %s" % (Q.shape,))
    if not 1 <= num_topics <= V:
        raise ValueError("num_topics must lie in 1..%d (the size of Q), got %d" % (V, num_topics))
    b = _block_size(V, num_topics)
    # A block of the whole space is exact at once: the identity, no power steps.
    U0 = np.eye(V) if b == V else np.random.default_rng(seed).standard_normal((V, b))
    with jax.enable_x64(True):
        C, it, change, residual = _rectify(jnp.asarray(Q), jnp.asarray(U0), jnp.asarray(max_iter),
                                           jnp.asarray(tol, jnp.float64), 0 if b == V else _WARMUP,
                                           num_topics=int(num_topics))
        C = np.array(C)
    it, change, residual = int(it), float(change), float(residual)
    moved = float(np.linalg.norm(C - Q) / max(np.linalg.norm(Q), 1e-300))
    converged = change <= tol
    return Rectification(C, it, change, residual, moved, converged)


def rectify_cooccurrence(cooc, num_topics, *, max_iter=DEFAULT_MAX_ITER, tol=DEFAULT_TOL, seed=0,
                         limit=None):
    """Dense co-occurrence statistics of the rectified Q, for the rest of the pipeline.

    Only the words that occur in a document of two or more tokens (p(w) > 0) enter the AP;
    the others keep zero rows (the projection onto sum-1 matrices would give them mass).

    Parameters
    ----------
    cooc : :class:`~gensim_anchor.cooccurrence.Cooccurrence`
        Statistics in any mode; in implicit mode Q is formed (only) over those words.
    num_topics, max_iter, tol, seed :
        As for :func:`rectify`.
    limit : int, optional
        Memory limit in bytes (default :data:`MAX_BYTES`).

    Returns
    -------
    (Cooccurrence, Rectification)
        Dense statistics with ``Q_sum`` the rectified Q times ``num_docs`` and ``h_hat`` zero
        (the other fields as in ``cooc``), and the AP's outcome (its Q over the active words).

    Raises
    ------
    ValueError
        When the dense Q would not fit in ``limit`` (:func:`check_fits`).

    """
    active = np.flatnonzero(cooc.row_sums() > 0)
    check_fits(len(active), limit)
    V = cooc.num_terms
    Q_active = cooc.to_dense() if len(active) == V else cooc.rows(active)[:, active]
    result = rectify(Q_active, min(num_topics, len(active)), max_iter=max_iter, tol=tol, seed=seed)
    Q_sum = np.zeros((V, V))
    Q_sum[np.ix_(active, active)] = result.Q * cooc.num_docs
    rectified = Cooccurrence(num_terms=V, num_docs=cooc.num_docs, num_short=cooc.num_short,
                             num_tokens=cooc.num_tokens, doc_freq=cooc.doc_freq,
                             term_counts=cooc.term_counts, h_hat=np.zeros(V), Q_sum=Q_sum)
    return rectified, result
