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
a fit with ``rectify=True``, then the AP, now ``'ap'``, and its INFO log): the AP reaches a
relative change of 1e-4 after 41 iterations, in 11.8 s with the compilation; the whole fit
peaked at 2.2 GB RSS.
On 150 words the iterates agree with the AP with exact ``eigh`` projections to better than 2e-7
(relative, Frobenius; asserted by ``tests/test_rectify.py``).

The AP needs Q dense: :data:`MAX_BYTES` bounds its working memory (:func:`check_fits`); it is
``rectify='ap'``.

**Compressed rectification** (``rectify=True`` or ``'enn'``; Lee, Cho, Dong, Mimno & Bindel,
"On-the-fly Rectification for Robust Large-Vocabulary Topic Inference", ICML 2021,
https://arxiv.org/abs/2111.06580) never forms Q: :func:`compress` finds
:math:`Q \\approx U\\Lambda U^T` (V x K) by a randomised range finder applied through
``cooc.matmul`` only (implicit, dense and Dask statistics alike; unshifted, where the authors
shift by :math:`\\lambda_{\\max}/10`, see :func:`compress`), and :func:`rectify_enn` makes :math:`Y Y^T`, from
:math:`Y = U\\Lambda_+^{1/2}`, sum to 1 and nonnegative in the rows and columns of the
:func:`large_count` words of largest norm (epsilon-nonnegative: the other entries are products
of two small norms). :class:`LowRankCooccurrence` then serves the anchors (the random projection
of every mode, or with ``projection_dim=0`` exact K coordinates,
:meth:`LowRankCooccurrence.coordinates`), the recovery and R from the V x K factor:
O(nnz + V K) memory beside a row block of the V x l product :math:`Y Y_L^T` during the
iterations (whose work :data:`ENN_BLOCK_ENTRIES` bounds unless the authors'
:math:`l = 5K\\ln K` needs more).
:func:`rectify_lowrank` runs the two steps.

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
from ._defaults import (RECTIFY_ENN_BLOCK_ENTRIES, RECTIFY_ENN_LARGE_FACTOR, RECTIFY_ENN_RELAXATION,
                        RECTIFY_ENN_TOL, RECTIFY_ENN_TOL_FLOOR,
                        RECTIFY_MAX_ITER, RECTIFY_TOL)
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
            "rectify='ap' needs Q as a dense matrix over the %d words that occur in a document of "
            "two or more tokens: about %s of working memory, more than the limit of %s "
            "(gensim_anchor.rectify.MAX_BYTES); prune the vocabulary to at most %d words, e.g. "
            "with Dictionary.filter_extremes(keep_n=%d), or use rectify=True (compressed, any "
            "vocabulary)"
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


# ----------------------------------------------------------------------------------------------
# Compressed rectification (Lee, Cho, Dong, Mimno & Bindel 2021): Q never formed.
# ----------------------------------------------------------------------------------------------

#: ENN stops once the negative mass in the rows and columns of the largest words (the result's
#: ``residual``) is at most this share of the rank-K truncation's, never below
#: :data:`ENN_TOL_FLOOR` (see :data:`gensim_anchor._defaults.RECTIFY_ENN_TOL`).
ENN_TOL = RECTIFY_ENN_TOL
ENN_TOL_FLOOR = RECTIFY_ENN_TOL_FLOOR
#: Power iterations of the randomised range finder of :func:`compress`. The authors use 2; the
#: spectrum of Q decays slowly past the topics, and 2 left the basis visibly too far from the
#: leading eigenvectors in development runs (not kept as a benchmark). Each costs one product
#: with Q. 40 (a basis closer to converged) was measured over ten seeds and not adopted: held-out
#: likelihood +0.0023 on NIPS but -0.0021 on 20NG-13k and unchanged on KOS, unique words within
#: the noise (+0.14, +0.03, -0.08), the raw 20 Newsgroups' rectification 5 s slower
#: (``python benchmarks/bench_rectify.py --corpora kos nips 20ng-13k --methods enn --seeds 0 1 2
#: 3 4 5 6 7 8 9 --power-iter 40`` and ``--corpora 20ng-raw --methods enn`` at 40 and 16,
#: benchmarks/results/bench_rectify.log, 2026-11-27T16:57Z, against the ENN rows of the same
#: seeds at 16 in the 06:02Z, 06:05Z, 06:53Z and 15:05Z entries).
_POWER_ITER = 16
#: ENN's l: RECTIFY_ENN_LARGE_FACTOR x K ln K within a V x l product of RECTIFY_ENN_BLOCK_ENTRIES
#: (see _defaults for the measurements behind them).
ENN_LARGE_FACTOR = RECTIFY_ENN_LARGE_FACTOR
ENN_BLOCK_ENTRIES = RECTIFY_ENN_BLOCK_ENTRIES
#: ENN's over-relaxation: each iteration adds this multiple of the correction E (2; the
#: authors' step is 1; see _defaults for the measurements behind it).
ENN_RELAXATION = RECTIFY_ENN_RELAXATION
#: Rows per block of the negative part of Y Y_L^T (float32 blocks of 8192 x l: 128 MB at l = 3,913).
_BLOCK_ROWS = 8192


class Compression(NamedTuple):
    """Outcome of :func:`compress`: :math:`Q \\approx U\\,\\mathrm{Diag}(\\lambda)\\,U^T`.

    Attributes
    ----------
    vectors : numpy.ndarray, shape (V, K)
        U, orthonormal columns (the approximate leading eigenvectors of Q).
    values : numpy.ndarray, shape (K,)
        :math:`\\lambda`, descending (the Ritz values; negative ones are kept here and clipped
        by :func:`rectify_enn`).
    shift : float
        The shift :math:`\\sigma` added to Q in the range finder (0 unless negative
        eigenvalues crowded the block: :func:`compress`).
    num_products : int
        Products of Q with a thin block (each costs O(nnz(H~) b) in implicit mode).
    """
    vectors: np.ndarray
    values: np.ndarray
    shift: float
    num_products: int


class ENNRectification(NamedTuple):
    """Outcome of :func:`rectify_enn`: the rectified Q as :math:`Y Y^T`.

    Attributes
    ----------
    Y : numpy.ndarray, shape (V, K)
        The factor; :math:`Y Y^T` sums to 1.
    n_iter : int
        ENN iterations run.
    change : float
        :math:`\\|Y_{t+1}Y_{t+1}^T - Y_tY_t^T\\|_F / \\|Y_{t+1}Y_{t+1}^T\\|_F` of the last iteration
        (inf when none ran).
    residual : float
        The negative mass left where it matters: minus the sum of the negative entries of
        :math:`Y Y^T` in the rows and columns of the ``num_large`` words of largest row norm
        (Q sums to 1, so it is a share of the whole).
    moved : float
        :math:`\\|YY^T - U\\Lambda_+U^T\\|_F / \\|U\\Lambda_+U^T\\|_F`, how far ENN moved the
        rank-K PSD compression.
    converged : bool
        ``residual`` fell below the tolerance within ``max_iter`` iterations.
    num_large : int
        l, the words of largest row norm whose rows and columns are kept nonnegative.
    compression : Compression
    tol : float
        The tolerance on ``residual``.
    start_residual : float
        ``residual`` of the rank-K truncation :math:`Y_0Y_0^T`, before any iteration.
    """
    Y: np.ndarray
    n_iter: int
    change: float
    residual: float
    moved: float
    converged: bool
    num_large: int
    compression: Compression
    tol: float
    start_residual: float = math.nan


def enn_tolerance(start_residual):
    """ENN's default tolerance: :data:`ENN_TOL` of the rank-K truncation's negative mass,
    at least :data:`ENN_TOL_FLOOR`."""
    return max(ENN_TOL * start_residual, ENN_TOL_FLOOR)


def compress(cooc, num_topics, *, oversample=None, power_iter=None, seed=0, active=None):
    """Randomised eigendecomposition of Q through products with thin blocks only.

    The range finder of Halko, Martinsson & Tropp (2011, Algorithm 4.4), then Rayleigh-Ritz:

    .. math::

        B = \\mathcal Q^T Q \\mathcal Q, \\qquad B = W \\Theta W^T, \\qquad
        U = \\mathcal Q W_{:, 1:K}, \\quad \\lambda = \\theta_{1:K}

    for the orthonormal basis :math:`\\mathcal Q` (V x b, b = K + oversample) of
    :math:`(Q + \\sigma I)^{q+1}\\Omega`, :math:`\\Omega` Gaussian, and :math:`\\sigma = 0`
    unless the spectrum asks for a shift. The unbiased estimator Q is indefinite: the range
    finder converges to the b eigenvalues of largest magnitude, and Rayleigh-Ritz keeps the K
    largest among them, so negative eigenvalues only cost room in the block. When more than
    half of the oversampling holds negative Ritz values at least the K-th positive one in
    magnitude (the block is crowded: the topic directions may be missing from it), the range
    finder runs again on :math:`Q + \\sigma I`, :math:`\\sigma = |\\theta_{\\min}|/2`, which
    puts every negative eigenvalue (down to the smallest Ritz value) below every positive one in
    magnitude.
    Lee et al. (2021, ``randEig_Bows.m``) shift always, by :math:`\\lambda_{\\max}/10`; but Q's
    largest eigenvalue (the direction of p(w)) is some 50 times its K-th, so that shift (5.4
    times the K-th on KOS) brings the convergence ratio of the K-th direction,
    :math:`(|\\lambda_{b+1}| + \\sigma)/(\\lambda_K + \\sigma)`, close to 1: after the 16 power steps the
    K-th Ritz value was 69% of the exact eigenvalue, the truncation :math:`U\\Lambda_+U^T` 6.5%
    (Frobenius) from the exact one and its negative mass twice the exact one's (7.1e-2 against
    3.6e-2), against 5.8e-5 and the exact mass unshifted (``python
    benchmarks/bench_enn_large.py compression kos 8 16``,
    ``benchmarks/results/bench_rectify.log``, 2026-12-07T06:41Z). No corpus of the benchmarks
    crowds the block (KOS 4 such negative eigenvalues, raw 20 Newsgroups 18, NIPS none, of the
    K = 50 spare vectors; ``compression nips 16 40`` and ``compression 20ng-raw 16 40``, the
    same entry).

    Parameters
    ----------
    cooc : Cooccurrence, DistributedCooccurrence, or anything with ``matmul`` and ``row_sums``
        Only ``cooc.matmul`` is used on Q: implicit, dense and distributed statistics alike.
    num_topics : int
        K.
    oversample : int, optional
        Extra probes (default K: the authors' 2K probes).
    power_iter : int, optional
        q, power iterations of the range finder (default :data:`_POWER_ITER`, read at the call).
    seed : int
    active : numpy.ndarray of bool, shape (V,), optional
        The words with co-occurrences, ``cooc.row_sums() > 0``, if the caller has them (on a
        cluster, a row sum is a pass over the partitions).

    Returns
    -------
    Compression

    Raises
    ------
    ValueError
        When fewer than K words occur in a document of two or more tokens, or Q has fewer than
        K positive eigenvalues (K topics cannot be told apart).

    Notes
    -----
    Cost: :math:`q + 2` products with Q of a V x b block (twice that with a shift) and QRs of
    V x b; memory O(V b) beside the statistics.
    """
    V = cooc.num_terms
    K = int(num_topics)
    active = cooc.row_sums() > 0 if active is None else np.asarray(active, dtype=bool)
    num_active = int(active.sum())
    if num_active < K:
        raise ValueError(
            "rectification needs at least num_topics=%d words that occur in a document of two or "
            "more tokens; the corpus has %d: lower num_topics or train on a larger corpus"
            % (K, num_active))
    b = min(num_active, K + (K if oversample is None else int(oversample)))
    steps = _POWER_ITER if power_iter is None else int(power_iter)
    theta, vectors = _range_finder(cooc, active, b, steps, 0.0, seed)
    shift, products = 0.0, steps + 2
    if _crowded(theta, K, b):
        shift = abs(float(theta[-1])) / 2
        theta, vectors = _range_finder(cooc, active, b, steps, shift, seed)
        products *= 2
    values, vectors = theta[:K], vectors[:, :K]
    positive = int(np.sum(values > 1e-12 * max(values[0], 1e-300)))
    if positive < K:
        # A model needs two topics, so below two the only remedy is more data.
        remedy = ("lower num_topics to at most %d or train on more documents" % positive
                  if positive >= 2 else "train on more (or more varied) documents")
        raise ValueError(
            "the co-occurrence matrix has only %d positive eigenvalues among its leading %d, so "
            "%d topics cannot be told apart (a corpus too small or too repetitive); %s"
            % (positive, K, K, remedy))
    return Compression(vectors, values, shift, products)


def _crowded(theta, num_topics, block):
    """Whether negative Ritz values, at least the K-th in magnitude, fill more than half of
    the block's spare vectors (``theta`` descending)."""
    if block <= num_topics:
        return False
    strong = int(np.sum(-theta >= max(theta[num_topics - 1], 0.0)))
    return strong > (block - num_topics) // 2


def _range_finder(cooc, active, block, steps, shift, seed):
    """Ritz pairs of Q (descending) on the range of :math:`(Q + \\sigma I)^{q+1}\\Omega`."""
    V = cooc.num_terms
    rng = np.random.default_rng(seed)
    # The shift only on the active words: the others have zero rows and stay out of the basis.
    mask = active[:, None].astype(np.float64)

    # Subspace iteration corrects the rounding of its earlier steps, so all but the last product
    # of the range finder are float32 (sparse products at about half the cost: _defaults.Q_COSTS;
    # H~ cast once); the last one and the Rayleigh-Ritz product are float64. (Dense Q would be cast anew
    # by each float32 product: it stays float64.)
    fast, fast_cooc = np.float64, cooc
    if isinstance(cooc, Cooccurrence) and cooc.mode == 'implicit':
        fast, fast_cooc = np.float32, cooc._replace(H_tilde=cooc.H_tilde.astype(np.float32))

    def shifted(X, last):
        out = cooc.matmul(X) if last else fast_cooc.matmul(X, fast)
        return out + shift * mask * X if shift else out

    # The block is orthonormalised after every second product only: the span, all that the
    # range finder keeps, is the same, and two steps leave it well enough conditioned for
    # Cholesky QR (the b leading magnitudes lie within a factor of about 100 of each other).
    X = shifted(rng.standard_normal((V, block)) * mask, last=steps == 0)
    for step in range(steps):
        if step % 2 == 0:
            X = _orthonormal(X)
        X = shifted(X, last=step == steps - 1)
    basis = _orthonormal(X)
    B = basis.T @ cooc.matmul(basis)
    theta, W = np.linalg.eigh((B + B.T) / 2)
    order = np.argsort(theta)[::-1]
    return theta[order], basis @ W[:, order]


def _orthonormal(X):
    """An orthonormal basis of the span of X's columns (V x b, full column rank).

    Cholesky QR, twice (Fukaya et al. 2014, "CholeskyQR2"): two V x b x b products and a b x b
    Cholesky per pass: 9.8 ms against numpy's Householder QR's 82.6 ms for a 6,906 x 75 block on
    2 cores, 3 to 4 times faster at 13,000 and 15,239 rows (``python benchmarks/bench_enn_large.py
    nystrom kos``, ``benchmarks/results/bench_rectify.log``, 2026-11-27T07:13Z; only the span
    matters to the subspace iterations, and it is the same). The first pass leaves an orthogonality error of about
    cond(X)^2 x eps, which the second removes while cond(X) < 1e8; a block worse than that
    goes to Householder QR: one whose Cholesky fails, or whose first factor has a diagonal
    spread by more than 1e-6 (which bounds cond(X) from below), a margin below that limit.
    """
    Q = X
    try:
        for step in range(2):
            L = np.linalg.cholesky(Q.T @ Q)
            d = np.diag(L)
            if step == 0 and not d.min() > 1e-6 * d.max():  # also false for NaN
                raise np.linalg.LinAlgError("too ill-conditioned for Cholesky QR")
            Q = Q @ np.linalg.inv(L).T
    except np.linalg.LinAlgError:
        return np.linalg.qr(X)[0]
    return Q


def _gram_distance(Y1, Y2):
    """:math:`\\|Y_1Y_1^T - Y_2Y_2^T\\|_F` from K x K products."""
    a = np.sum((Y1.T @ Y1) ** 2)
    b = np.sum((Y2.T @ Y2) ** 2)
    c = np.sum((Y1.T @ Y2) ** 2)
    return math.sqrt(max(a + b - 2 * c, 0.0)), math.sqrt(a)


def _correction_products(Y, large, basis, rows=_BLOCK_ROWS, buf=None):
    """:math:`E\\,B` and :math:`\\mathbf 1^TE\\mathbf 1` for ENN's correction E, never forming E.

    E is :math:`G = \\max(0, -Y Y_L^T)` (V x l) on the columns of the words L of largest norm,
    and its transpose on the rows L outside L x L. G is made and used by blocks of ``rows``
    rows in float32 (its entries shape a step, and the float32 products are twice as fast;
    sums and results are float64), so memory is ``rows`` x l whatever V; the sums ride along
    the products as one extra column of ones (the row sums of G), with no pass of their own.
    The words are taken in the order L first, then the others, so that the transposed part
    (rows L, columns outside L) is a product over the V - l other rows only.

    ``buf``, float32 of shape (rows, l), is the block's memory if given (its length then sets
    ``rows``): the caller's one allocation for all iterations, so that a block of up to 8192 x l
    is not allocated, and page-faulted, at every call.

    Returns
    -------
    (numpy.ndarray of shape (V, b), float)
    """
    V, b = basis.shape
    l = len(large)
    is_large = np.zeros(V, dtype=bool)
    is_large[large] = True
    order = np.concatenate([large, np.flatnonzero(~is_large)])
    Y32 = Y[order].astype(np.float32)
    Y_large = Y32[:l].T.copy()
    # G is kept with the sign of Y Y_L^T (<= 0): one pass fewer; the results are negated once.
    B32 = np.hstack([basis[order], np.ones((V, 1))]).astype(np.float32)
    B_large = B32[:l]
    out = np.empty((V, b + 1))
    to_large = np.zeros((l, b + 1))
    if buf is None or buf.shape[1] != l:
        buf = np.empty((min(rows, V), l), dtype=np.float32)
    rows = len(buf)
    for first, last in ((0, l), (l, V)):
        for lo in range(first, last, rows):
            hi = min(lo + rows, last)
            G = buf[:hi - lo]
            np.matmul(Y32[lo:hi], Y_large, out=G)
            np.minimum(G, 0.0, out=G)
            out[lo:hi] = G @ B_large
            if first:
                to_large += (B32[lo:hi].T @ G).T
    total = -(out[:, b].sum() + to_large[:, b].sum())
    out[:l] += to_large
    EB = np.empty((V, b))
    EB[order] = out[:, :b]
    return -EB, float(total)


def large_count(num_topics, num_terms, num_active):
    """l, the words of largest norm whose negative entries ENN removes.

    :math:`\\lceil 20 K \\ln K\\rceil` (:data:`ENN_LARGE_FACTOR`), lowered so that the V x l
    product of each iteration has at most :data:`ENN_BLOCK_ENTRIES` entries (its time; it is
    made by row blocks, so memory does not grow with l), but never below the authors'
    :math:`\\lceil 5K\\ln K\\rceil`; at most the N words with co-occurrences.

    Examples
    --------
    .. sourcecode:: pycon

        >>> from gensim_anchor.rectify import large_count
        >>> large_count(50, 6906, 6906), large_count(50, 111915, 111915)   # KOS; raw 20NG
        (3913, 1199)

    """
    per_k_ln_k = num_topics * math.log(max(num_topics, 2))
    wanted = math.ceil(ENN_LARGE_FACTOR * per_k_ln_k)
    floor = math.ceil(5 * per_k_ln_k)
    return int(min(num_active, max(floor, min(wanted, ENN_BLOCK_ENTRIES // max(num_terms, 1)))))


def rectify_enn(compression, active, *, max_iter=RECTIFY_MAX_ITER, tol=None, num_large=None,
                seed=0, relaxation=None):
    """Epsilon-nonnegative rectification of a compressed Q (Lee et al. 2021, section 4).

    From :math:`Y_0 = U \\Lambda_+^{1/2}`, each iteration builds the sparse correction E that
    cancels the negative entries of :math:`Y_tY_t^T` in the rows and columns of the l words of
    largest row norm L (the anchor candidates and the words the recovery leans on; the small
    rows' negative entries are at most the product of two small norms, the "epsilon"), the
    scalar weight w that makes the sum 1, and projects back onto the rank-K PSD matrices:

    .. math::

        E_{ij} = \\max(0, -y_i^T y_j)\\,[i \\in L \\lor j \\in L], \\qquad
        w = 1 - \\mathbf 1^T(Y_tY_t^T + \\omega E)\\mathbf 1, \\qquad
        Y_{t+1}Y_{t+1}^T = \\Pi_{\\mathrm{PSD}_K}\\Big(Y_tY_t^T + \\omega E + \\frac{w}{N^2}\\mathbf e\\mathbf e^T\\Big),

    with :math:`\\mathbf e` the indicator of the N words with co-occurrences,
    l from :func:`large_count` (four times the authors' :math:`\\lceil 5K\\ln K\\rceil` where the
    V x l product stays within :data:`ENN_BLOCK_ENTRIES`) and the relaxation
    :math:`\\omega` (:data:`ENN_RELAXATION`; 2 by default: at the authors' step of 1 the
    negative mass falls only about as 1/t and takes 2.4 times as many iterations to the
    tolerance on KOS, for the same quality within the seed-to-seed noise; see
    :mod:`gensim_anchor._defaults`). The operator is applied to thin
    blocks only: E through :func:`_correction_products`, by row blocks of
    :math:`\\max(0, -YY_L^T)` in float32.
    The projection is one step of warm-started subspace iteration with Rayleigh-Ritz on a
    block of K + max(10, K/2) vectors per iteration (the authors run ``eigs`` to convergence;
    the iterates change little from one iteration to the next, as in :func:`rectify`). The
    Ritz vectors lie in the previous block, so the part of a correction outside it shows one
    iteration later, and the negative mass falls every other iteration. Taking the factor from
    the new product instead (:math:`MBw_k\\theta_k^{-1/2}`, the one-step Nystrom estimate of the
    projection) removes that lag (at the authors' step of 1): 19 iterations instead of 24 on KOS
    (8 against 12 on NIPS, 13 against 18 on 20NG-13k), and a result closer to a near-exact
    projection's (YY^T within 0.6% against 1.1% on KOS). But its topics had fewer unique words
    in the means of three seeds on KOS (7.03 against 7.15) and 20NG-13k (8.11 against 8.27),
    more on NIPS (6.74 against 6.64), so the Ritz vectors stay (``python
    benchmarks/bench_enn_large.py nystrom kos 0 1 2``, and ``nips``, ``20ng-13k``;
    ``benchmarks/results/bench_rectify.log``, 2026-11-27T07:13Z).
    Stops when the negative mass :math:`\\mathbf 1^T E \\mathbf 1` (the ``residual``, a share of
    Q) falls below ``tol`` or after ``max_iter`` iterations; Y is scaled so that :math:`YY^T`
    sums to exactly 1 after every iteration. By default ``tol`` is relative: :data:`ENN_TOL`
    (3%) of the negative mass of the rank-K truncation :math:`Y_0Y_0^T` (at least
    :data:`ENN_TOL_FLOOR`), so that every corpus has the same share of its sampling noise's
    negative mass removed (KOS, short documents: 3.5e-2 at the start, 20 iterations; NIPS,
    long ones: 1.3e-2, 24 iterations); see
    :data:`gensim_anchor._defaults.RECTIFY_ENN_TOL` for the measurements and their commands.

    Parameters
    ----------
    compression : Compression
        From :func:`compress`.
    active : numpy.ndarray of bool, shape (V,)
        The words with co-occurrences (p(w) > 0): the sum-1 weight is spread over them only.
    max_iter, tol :
        Cap and absolute tolerance on the negative mass (default None: :data:`ENN_TOL` of the
        first iterate's, see above); ``converged`` is False at the cap.
    num_large : int, optional
        l (default :func:`large_count`, at most N).
    seed : int
        Seed of the oversampling columns of the first block.
    relaxation : float, optional
        :math:`\\omega` (default :data:`ENN_RELAXATION`); 1 is the authors' iteration.

    Returns
    -------
    ENNRectification

    Notes
    -----
    Cost per iteration: the V x l product (O(V l K)), two products of it with the block
    (O(V l b), the second over the V - l rows outside L only), an orthonormal basis of V x b
    (:func:`_orthonormal`): O(V l b) time and O(V b + 8192 l) memory, never V x V. On KOS
    (K = 50, l = 3,913) 0.115 s an iteration on 2 cores (``python benchmarks/bench_enn_large.py
    nystrom kos``, the same log entry).
    """
    relative = tol is None  # the default tolerance is a share of the first negative mass
    relaxation = ENN_RELAXATION if relaxation is None else float(relaxation)
    U, values = compression.vectors, compression.values
    V, K = U.shape
    e = np.asarray(active, dtype=np.float64)
    N = max(float(e.sum()), 1.0)
    l = large_count(K, V, int(N)) if num_large is None else int(min(N, num_large))
    b = min(int(N), K + max(_MIN_OVERSAMPLE, K // 2))
    Y0 = U * np.sqrt(np.maximum(values, 0.0))
    rng = np.random.default_rng(seed)
    basis = _orthonormal(np.hstack([U, rng.standard_normal((V, b - K)) * e[:, None]]))
    Y = Y0
    change, it = math.inf, 0
    buf = np.empty((min(_BLOCK_ROWS, V), l), dtype=np.float32)
    while True:
        norms = np.einsum('ik,ik->i', Y, Y)
        large = np.argsort(-norms, kind='stable')[:l]
        EB, residual = _correction_products(Y, large, basis, buf=buf)
        if it == 0:
            start_residual = residual
            if relative:
                tol = enn_tolerance(residual)
        if residual <= tol or it >= max_iter:
            break
        ones_Y = e @ Y
        # The correction over-relaxed (ENN_RELAXATION), and the weight that then restores the
        # sum to 1.
        w = 1.0 - float(ones_Y @ ones_Y) - relaxation * residual
        Z = Y @ (Y.T @ basis) + relaxation * EB
        Z += (w / N ** 2) * np.outer(e, e @ basis)
        T = basis.T @ Z
        theta, W = np.linalg.eigh((T + T.T) / 2)
        order = np.argsort(theta)[::-1][:K]
        Y_new = (basis @ W[:, order]) * np.sqrt(np.maximum(theta[order], 0.0))
        basis = _orthonormal(Z)
        distance, size = _gram_distance(Y_new, Y)
        change = distance / max(size, 1e-300)
        # The sum-1 weight keeps the sum near 1; the exact scale is fixed at the end.
        Y = Y_new / max(float(np.linalg.norm(e @ Y_new)), 1e-300)
        it += 1
    moved = _gram_distance(Y, Y0)[0] / max(_gram_distance(Y0, Y0)[1], 1e-300)
    Y = Y / max(float(np.linalg.norm(e @ Y)), 1e-300)
    return ENNRectification(Y, it, float(change), residual, float(moved), residual <= tol, l,
                            compression, float(tol), float(start_residual))


class LowRankCooccurrence(NamedTuple):
    """Co-occurrence statistics whose Q is the rectified :math:`Y Y^T`, kept as its factor.

    Duck-types :class:`~gensim_anchor.cooccurrence.Cooccurrence` for the stages after
    rectification (anchors, recovery, R): every product is thin, O(V K) memory.

    Attributes
    ----------
    num_terms, num_docs, num_short, num_tokens, doc_freq, term_counts :
        As the statistics it was made from.
    Y : numpy.ndarray, shape (V, K)
        :math:`Q = Y Y^T`, summing to 1.
    """
    num_terms: int
    num_docs: int
    num_short: int
    num_tokens: int
    doc_freq: np.ndarray
    term_counts: np.ndarray
    Y: np.ndarray

    mode = 'lowrank'
    H_tilde = None
    Q_sum = None

    @property
    def h_hat(self):
        return np.zeros(self.num_terms)

    def matmul(self, X, dtype=np.float64, *, normalise=True):
        """Q @ X = Y (Y^T X) for a thin X of shape (V, k) (or (V,))."""
        X = np.asarray(X, dtype=dtype)
        out = self.Y.astype(dtype, copy=False) @ (self.Y.T.astype(dtype, copy=False) @ X)
        return out if normalise else out * self.num_docs

    def rows(self, index, *, normalise=True):
        """Dense rows ``Q[index, :]``, shape (len(index), V), float64."""
        block = self.Y[np.asarray(index, dtype=np.int64)] @ self.Y.T
        return block if normalise else block * self.num_docs

    def row_sums(self, *, normalise=True):
        """p(w) = Y (Y^T 1), clipped at 0 (a word whose row of Y Y^T sums below 0 gets none)."""
        p = np.maximum(self.Y @ self.Y.sum(axis=0), 0.0)
        return p if normalise else p * self.num_docs

    def to_dense(self):
        """Q as a dense (V, V) array (small vocabularies only)."""
        return self.Y @ self.Y.T

    def coordinates(self, index, p_w):
        """Rows of Q-bar for the words ``index`` in K coordinates that keep their distances.

        :math:`\\bar Q_i = y_i^T Y^T / p_i`, and :math:`\\|uY^T\\|^2 = u (Y^TY) u^T`, so with
        :math:`Y^TY = L L^T` the rows :math:`y_i^T L / p_i` have the distances of the rows of
        :math:`\\bar Q` exactly (:func:`~gensim_anchor.anchors.project_rows` with
        ``projection_dim=0``).
        """
        index = np.asarray(index, dtype=np.int64)
        w, X = np.linalg.eigh(self.Y.T @ self.Y)
        L = X * np.sqrt(np.maximum(w, 0.0))
        return (self.Y[index] @ L) / p_w[index, None]


def rectify_lowrank(cooc, num_topics, *, max_iter=RECTIFY_MAX_ITER, tol=None, seed=0):
    """Compressed rectification (Lee et al. 2021): :func:`compress`, then :func:`rectify_enn`.

    Parameters
    ----------
    cooc : Cooccurrence or DistributedCooccurrence
        Statistics in any mode; only ``matmul`` and ``row_sums`` are used on Q.
    num_topics, max_iter, tol, seed :
        As for :func:`compress` and :func:`rectify_enn`.

    Returns
    -------
    (LowRankCooccurrence, ENNRectification)
        The statistics of the rectified Q (the per-word counts as in ``cooc``) and the outcome.
    """
    active = cooc.row_sums() > 0
    compression = compress(cooc, num_topics, seed=seed, active=active)
    result = rectify_enn(compression, active, max_iter=max_iter, tol=tol, seed=seed)
    # The words without co-occurrences keep zero rows: rectify_enn works on the active ones.
    rectified = LowRankCooccurrence(num_terms=cooc.num_terms, num_docs=cooc.num_docs,
                                    num_short=cooc.num_short, num_tokens=cooc.num_tokens,
                                    doc_freq=cooc.doc_freq, term_counts=cooc.term_counts, Y=result.Y)
    return rectified, result
