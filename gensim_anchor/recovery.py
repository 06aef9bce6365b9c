"""Stage 3 of the pipeline: recover A (word-topic) and R (topic-topic) from Q and the anchors.

For every word i, RecoverKL and RecoverL2 (Arora et al. 2013, Algorithm 3 and section 4) find
the convex weights :math:`C_i = p(z \\mid w=i)` that best reconstruct row i of
:math:`\\bar Q` from the anchor rows :math:`\\bar Q_S`:

.. math::

    C_i = \\arg\\min_{x \\in \\Delta_K} d(\\bar Q_i, x^T \\bar Q_S),

with :math:`d` the KL divergence (``'KL'``) or the squared Euclidean distance (``'L2'``).
Bayes' rule then gives :math:`A_{ik} \\propto C_{ik}\\, p(w=i)` (columns normalised; the
normalisers are :math:`p(z)`) and :math:`R = A^+ Q A^{+T}`.

The L2 objective is *kernelised*: :math:`\\|\\bar Q_i - x^T\\bar Q_S\\|^2 = \\|\\bar Q_i\\|^2
- 2x^T(\\bar Q_S \\bar Q_i^T) + x^T(\\bar Q_S\\bar Q_S^T)x`, so each word needs only the K x K
matrix :math:`\\bar Q_S\\bar Q_S^T` and its K-vector; all V problems are solved at once by one
``vmap`` of the exponentiated-gradient solver :func:`eg_solve`. The kernelised objective
subtracts numbers of nearly equal size, so all solvers run in float64 (``jax.enable_x64``,
scoped to the call).

``'original'`` is the Recover of Arora, Ge and Moitra (2012): solve
:math:`Q_{S,S} z = Q_S 1`, :math:`A^T = (Q_{S,S}\\mathrm{Diag}(z))^{-1}Q_S`,
:math:`R = \\mathrm{Diag}(z) Q_{S,S} \\mathrm{Diag}(z)`, then project each column of A onto the
simplex.

Examples
--------
.. sourcecode:: pycon

    >>> import numpy as np
    >>> from gensim_anchor.recovery import eg_solve_l2
    >>> XX = np.array([[1.0, 0.2], [0.2, 1.0]])
    >>> target = 0.3 * XX[0] + 0.7 * XX[1]  # the kernel row of a word that mixes the anchors
    >>> result = eg_solve_l2(XX, target[None, :], eps=1e-14)
    >>> np.round(result.weights, 6).tolist(), bool(result.converged[0])
    ([[0.3, 0.7]], True)

"""
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import _validation as check
from ._compile_cache import stored_jit
from ._defaults import DEFAULT_EPS, DEFAULT_MAX_ITER, LOSSES, tuning
from .anchors import anchor_rows, as_groups, single_word_anchors

#: How :func:`recover` computes R: the pseudo-inverse, or the diagonal method (Lee et al. 2015).
R_METHODS = ('pinv', 'diagonal')

_ARMIJO_C1 = 1e-4
_MAX_FAILS = 4
# Refill the lane pool once 1/_REFILL_FRACTION of its lanes are idle.
_REFILL_FRACTION = 4
# eg_solve_l2 pads its problems to a multiple of this many.
_ROW_BUCKET = 64


def _pool():
    """Lane-pool settings of the current JAX backend (:data:`~gensim_anchor._defaults.BACKEND_TUNING`):
    lanes, and EG iterations between two checks of the pool."""
    row = tuning(jax.default_backend())
    return dict(lanes=row['eg_lanes'], steps=row['eg_steps'])


class RecoverResult(NamedTuple):
    """Per-word outcome of the exponentiated-gradient solver.

    Attributes
    ----------
    weights : numpy.ndarray, shape (V, K)
        :math:`C = p(z \\mid w)`, rows on the simplex.
    n_iter : numpy.ndarray, shape (V,), int
        EG iterations each word took.
    gap : numpy.ndarray, shape (V,)
        Final duality gap :math:`\\lambda^T x` (an upper bound on the suboptimality).
    converged : numpy.ndarray, shape (V,), bool
        ``gap < eps`` was reached before ``max_iter``.

    """
    weights: np.ndarray
    n_iter: np.ndarray
    gap: np.ndarray
    converged: np.ndarray


class Recovery(NamedTuple):
    """A, R and p(z) recovered from Q.

    Attributes
    ----------
    A : numpy.ndarray, shape (V, K)
        p(w | z): columns sum to 1.
    R : numpy.ndarray, shape (K, K)
        Topic-topic co-occurrence, :math:`A^+ Q A^{+T}`.
    p_z : numpy.ndarray, shape (K,)
        p(z), sums to 1: the shape of the Dirichlet prior.
    solver : RecoverResult or None
        Per-word convergence of EG (None for ``'original'``).
    eps : float or None
        The duality-gap tolerance used.
    solved : numpy.ndarray of int or None
        The words whose p(z | w) EG solved (p(w) > 0, not a single-word anchor).

    """
    A: np.ndarray
    R: np.ndarray
    p_z: np.ndarray
    solver: object = None
    eps: object = None
    solved: object = None


# ----------------------------------------------------------------------------------------------
# Exponentiated gradient on the simplex (Kivinen & Warmuth 1997; supplementary Algorithm 5).
# ----------------------------------------------------------------------------------------------

class EGState(NamedTuple):
    """State of one exponentiated-gradient problem (batched: every field gains a lane axis)."""
    x: jax.Array        # (K,) current point on the simplex
    f: jax.Array        # objective at x
    g: jax.Array        # (K,) gradient at x
    eta: jax.Array      # last accepted step size
    n_iter: jax.Array   # iterations taken
    gap: jax.Array      # duality gap lambda^T x at x
    stalled: jax.Array  # no decrease over a range of steps (float64 precision reached)
    fails: jax.Array    # consecutive iterations without a decrease


def _gap(x, g):
    return jnp.dot(x, g - jnp.min(g))


def eg_init(value_and_grad, data, num_topics):
    """EG state at the centre of the simplex for one problem with data ``data``."""
    x0 = jnp.full(num_topics, 1.0 / num_topics, dtype=jnp.result_type(float))
    f0, g0 = value_and_grad(data, x0)
    spread = jnp.max(g0) - jnp.min(g0)
    eta0 = 1.0 / jnp.where(spread > 0, spread, 1.0)
    return EGState(x0, f0, g0, eta0, jnp.array(0), _gap(x0, g0), jnp.array(False), jnp.array(0))


def eg_update(value_and_grad, data, state, quadratic=False):
    """One EG iteration with an Armijo line search over two trial step sizes.

    Step: :math:`x^+(\\eta) = x e^{-\\eta (g - \\min g)} / Z` (the shift keeps every exponent
    <= 0, so nothing overflows). The trials :math:`2\\eta_{prev}` and :math:`\\eta_{prev}` are
    evaluated together (no inner loop, which under ``vmap`` would run every lane as long as
    the slowest; one ``exp`` serves both, since :math:`e^{-2\\eta s} = (e^{-\\eta s})^2`) and the
    larger one that satisfies the Armijo condition
    :math:`f(x^+) - f(x) \\le c_1 g^T(x^+ - x) < 0` (c_1 = 1e-4, a strict decrease) is taken.
    Trying twice the last accepted step first lets the step grow back to the curvature (Wolfe)
    scale. If neither decreases f, x is kept and the next pair starts four times lower, so f
    never increases.

    ``quadratic=True`` (RecoverL2) measures the decrease as
    :math:`(x^+ - x)^T (g + g^+)/2`, exact for a quadratic and free of the cancellation of
    :math:`f(x^+) - f(x)` between two nearly equal numbers, so the solver keeps making
    progress down to gaps near the rounding level of the gradient. After
    :data:`_MAX_FAILS` consecutive iterations without a decrease (a step range of
    :math:`2^{-8}`) the problem is ``stalled``: float64 cannot resolve a further decrease.
    """
    x, f, g, eta = state.x, state.f, state.g, state.eta
    shifted = g - jnp.min(g)
    e_small = jnp.exp(-eta * shifted)
    x_small = x * e_small
    x_large = x_small * e_small
    x_small = x_small / jnp.sum(x_small)
    x_large = x_large / jnp.sum(x_large)

    def trial(x_new):
        f_new, g_new = value_and_grad(data, x_new)
        step = x_new - x
        decrease = 0.5 * jnp.dot(step, g + g_new) if quadratic else f_new - f
        ok = (decrease <= _ARMIJO_C1 * jnp.dot(step, g)) & (decrease < 0) & jnp.isfinite(f_new)
        return f_new, g_new, ok

    f_large, g_large, ok_large = trial(x_large)
    f_small, g_small, ok_small = trial(x_small)
    pick = lambda large, small, old: jnp.where(ok_large, large, jnp.where(ok_small, small, old))
    moved = ok_large | ok_small
    x = pick(x_large, x_small, x)
    g = pick(g_large, g_small, g)
    fails = jnp.where(moved, 0, state.fails + 1)
    return EGState(x, pick(f_large, f_small, f), g, pick(2.0 * eta, eta, 0.25 * eta),
                   state.n_iter + 1, _gap(x, g), fails >= _MAX_FAILS, fails)


def eg_solve(value_and_grad, params, data, num_topics, eps, max_iter, lanes, quadratic=False,
             steps=1):
    """Solve many simplex-constrained problems by exponentiated gradient (Algorithm 5).

    Problem i is :math:`\\min_{x \\in \\Delta_K} f(x; \\text{params}, \\text{data}_i)`.
    The EG iteration (:func:`eg_update`) is ``vmap``-ed over a fixed pool of ``lanes``
    problems inside one ``lax.while_loop``; a lane whose problem has converged (duality gap
    :math:`\\lambda^T x < \\epsilon`, with :math:`\\lambda = \\nabla f - \\min_k \\nabla f_k`), hit
    ``max_iter`` or stalled writes its result and takes the next problem. The work is then
    proportional to the total number of iterations, not to n times the slowest problem,
    and one compilation serves every call with the same shapes.

    For convex f, :math:`f(x) - f^* \\le \\lambda^T x`: the stopping rule is the KKT /
    duality-gap test of the paper's supplementary material.

    ``steps`` EG iterations run between two checks of the pool (finished lanes are frozen in
    between, so the result does not depend on it): on an accelerator each check and write
    costs a round trip, which more steps amortise.

    Returns
    -------
    (x, n_iter, gap) : jax.Array, shapes (n, K), (n,), (n,)
    """
    n = data.shape[0]
    vg = functools.partial(value_and_grad, params)
    init = jax.vmap(lambda row: eg_init(vg, row, num_topics))
    update = jax.vmap(lambda row, st: eg_update(vg, row, st, quadratic=quadratic))
    first = jnp.minimum(jnp.arange(lanes), n)  # lane -> problem; n means "empty"
    rows = data[jnp.minimum(first, n - 1)]
    st = init(rows)
    K = st.x.shape[1]
    out_x = jnp.zeros((n, K), st.x.dtype)
    out_it = jnp.zeros(n, st.n_iter.dtype)
    out_gap = jnp.zeros(n, st.gap.dtype)
    finished = lambda st: (st.gap < eps) | (st.n_iter >= max_iter) | st.stalled

    def cond(c):
        word, nxt = c[0], c[3]
        return jnp.any(word < n) | (nxt < n)

    def body(c):
        word, rows, st, nxt, out_x, out_it, out_gap = c

        def step(_, args):
            # A lane that has finished is frozen, so a word's iterations do not depend on how
            # many steps run between two checks.
            st, frozen = args
            moved = update(rows, st)
            keep = lambda a, b: jnp.where(frozen.reshape((-1,) + (1,) * (a.ndim - 1)), a, b)
            st = jax.tree_util.tree_map(keep, st, moved)
            return st, frozen | finished(st)

        active = word < n
        if steps == 1:
            st = update(rows, st)
        else:
            st, _ = jax.lax.fori_loop(0, steps, step, (st, ~active))
        done = active & finished(st)
        # Lanes that go on write out of bounds, and the write is dropped: no two writes
        # collide (colliding scatters serialise on a GPU).
        slot = jnp.where(done, word, n)
        out_x = out_x.at[slot].set(st.x, mode='drop')
        out_it = out_it.at[slot].set(st.n_iter, mode='drop')
        out_gap = out_gap.at[slot].set(st.gap, mode='drop')
        word = jnp.where(done, n, word)
        idle = word >= n
        # Refilling costs one more gradient for the whole pool, so it waits until a quarter of
        # the lanes are idle (or all are, at the end).
        refill_now = (nxt < n) & ((jnp.sum(idle) * _REFILL_FRACTION >= lanes) | ~jnp.any(~idle))

        def load(args):
            word, rows, st, nxt = args
            new_word = nxt + jnp.cumsum(idle) - 1
            refill = idle & (new_word < n)
            word = jnp.where(refill, new_word, word)
            fresh_rows = data[jnp.minimum(word, n - 1)]
            fresh = init(fresh_rows)
            pick = lambda a, b: jnp.where(refill.reshape((-1,) + (1,) * (a.ndim - 1)), a, b)
            return (word, pick(fresh_rows, rows), jax.tree_util.tree_map(pick, fresh, st),
                    jnp.minimum(nxt + jnp.sum(idle), n))

        word, rows, st, nxt = jax.lax.cond(refill_now, load, lambda a: a, (word, rows, st, nxt))
        return word, rows, st, nxt, out_x, out_it, out_gap

    carry = (first, rows, st, jnp.minimum(lanes, n), out_x, out_it, out_gap)
    _, _, _, _, out_x, out_it, out_gap = jax.lax.while_loop(cond, body, carry)
    return out_x, out_it, out_gap


def _l2_value_and_grad(XX, xy, x):
    XXx = XX @ x
    return jnp.dot(x, XXx) - 2.0 * jnp.dot(xy, x), 2.0 * (XXx - xy)


def _kl_value_and_grad(T, b, x):
    # KL(b || x^T T) up to the constant sum b log b; only columns with b_j > 0 contribute.
    p = x @ T
    safe = jnp.where(b > 0, jnp.maximum(p, 1e-300), 1.0)
    ratio = jnp.where(b > 0, b / safe, 0.0)
    return -jnp.sum(jnp.where(b > 0, b * jnp.log(safe), 0.0)), -(T @ ratio)


@functools.partial(jax.jit, static_argnames=('lanes', 'steps'))
def _solve_l2(XX, XY, eps, max_iter, lanes, steps):
    return eg_solve(_l2_value_and_grad, XX, XY, XX.shape[0], eps, max_iter, lanes, quadratic=True,
                    steps=steps)


@functools.partial(jax.jit, static_argnames=('lanes', 'steps'))
def _solve_kl(T, B, eps, max_iter, lanes, steps):
    return eg_solve(_kl_value_and_grad, T, B, T.shape[0], eps, max_iter, lanes, steps=steps)


# Compiled programs kept on disk for the next process (:mod:`._compile_cache`).
_solve_l2, _solve_kl = (stored_jit(f, ('lanes', 'steps')) for f in (_solve_l2, _solve_kl))


def kl_block_size(num_words, num_terms):
    """Words per block of whole Q-bar rows in RecoverKL (at most 2^23 entries, 64 MB, on a
    CPU; 2^28 on an accelerator)."""
    entries = tuning(jax.default_backend())['kl_block_entries']
    return int(max(1, min(num_words, entries // max(num_terms, 1))))


def eg_solve_l2(XX, XY, eps=DEFAULT_EPS['L2'], max_iter=DEFAULT_MAX_ITER):
    """RecoverL2's problems for many words at once: min x^T XX x - 2 XY_i^T x on the simplex.

    Parameters
    ----------
    XX : array_like, shape (K, K)
        :math:`\\bar Q_S \\bar Q_S^T`.
    XY : array_like, shape (n, K)
        Row i is :math:`\\bar Q_S \\bar Q_i^T`.
    eps, max_iter : float, int
        See :func:`eg_solve`.

    Returns
    -------
    RecoverResult
    """
    XY = np.asarray(XY, dtype=np.float64)
    n = XY.shape[0]
    if n == 0:
        return _empty_result(np.shape(XX)[0])
    # Zero rows up to a multiple of _ROW_BUCKET, solved last and dropped: one compilation serves
    # word counts that differ a little (each word's result does not depend on the others).
    XY = np.vstack([XY, np.zeros((-n % _ROW_BUCKET, XY.shape[1]))])
    with jax.enable_x64(True):
        # numpy in and out: no conversion or slicing programs to compile (_compile_cache).
        x, it, gap = _solve_l2(np.asarray(XX, np.float64), XY, np.float64(eps), np.int64(max_iter),
                               **_pool())
        return _result(*(np.asarray(a)[:n] for a in (x, it, gap)), eps)


def eg_solve_kl(T, B, eps=DEFAULT_EPS['KL'], max_iter=DEFAULT_MAX_ITER):
    """RecoverKL's problems for many words at once: min KL(B_i || x^T T) on the simplex.

    Parameters
    ----------
    T : array_like, shape (K, V)
        The anchor rows of Q-bar.
    B : array_like, shape (n, V)
        Rows of Q-bar to reconstruct.

    Returns
    -------
    RecoverResult
    """
    B = np.asarray(B, dtype=np.float64)
    if B.shape[0] == 0:
        return _empty_result(np.shape(T)[0])
    with jax.enable_x64(True):
        x, it, gap = _solve_kl(np.asarray(T, np.float64), B, np.float64(eps), np.int64(max_iter),
                               **_pool())
        return _result(x, it, gap, eps)


def _empty_result(K):
    return RecoverResult(np.zeros((0, K)), np.zeros(0, np.int64), np.zeros(0), np.zeros(0, bool))


def _result(x, it, gap, eps):
    gap = np.asarray(gap)
    return RecoverResult(np.asarray(x), np.asarray(it), gap, gap < eps)


# ----------------------------------------------------------------------------------------------
# The three recovery methods on a Cooccurrence.
# ----------------------------------------------------------------------------------------------

def recover(cooc, anchors, loss='L2', *, eps=None, max_iter=DEFAULT_MAX_ITER, p_w=None,
            r_method='pinv'):
    """Recover A, R and p(z) from co-occurrence statistics and anchor word ids.

    Parameters
    ----------
    cooc : :class:`~gensim_anchor.cooccurrence.Cooccurrence`
    anchors : array_like of int, shape (K,), or sequence of (int or sequence of int)
        The anchor of each topic: a word id, or a group of word ids (a tandem anchor, whose
        row of Q-bar is the pseudo-row :func:`~gensim_anchor.anchors.combine_rows` of its
        words'; not with ``loss='original'``).
    loss : {'L2', 'KL', 'original'}
    eps : float, optional
        Duality-gap tolerance (default per loss, :data:`DEFAULT_EPS`).
    max_iter : int
        EG iteration cap per word.
    p_w : numpy.ndarray, optional
        Row sums of Q, if already computed.
    r_method : {'pinv', 'diagonal'}
        R as :math:`A^+ Q A^{+T}` (Arora et al.), or by the diagonal method of Lee et al.
        (2015), nonnegative when Q is (:func:`diagonal_topic_cooccurrence`, for a rectified Q).

    Returns
    -------
    Recovery

    Notes
    -----
    Single-word anchors are pinned to their own topic (:math:`C_{s_k} = e_k`); the words of a
    group are solved like any other word. Words that never occur in a document of two or more
    tokens have p(w) = 0 and get probability 0 in every topic.
    """
    if loss not in LOSSES:
        raise ValueError("loss must be one of %s, got %r" % (LOSSES, loss))
    if r_method not in R_METHODS:
        raise ValueError("r_method must be one of %s, got %r" % (R_METHODS, r_method))
    groups = as_groups(anchors)
    single = np.array([len(g) == 1 for g in groups], dtype=bool)
    anchors = single_word_anchors(groups)
    if p_w is None:
        p_w = cooc.row_sums()
    if loss == 'original':
        check.check_groups_loss(loss, groups)
        return _recover_original(cooc, anchors)
    eps = DEFAULT_EPS[loss] if eps is None else eps
    K = len(anchors)
    Q_S_bar = anchor_rows(cooc, p_w, groups)
    active = np.flatnonzero(p_w > 0)
    active = active[~np.isin(active, anchors[single])]
    if loss == 'L2':
        XX = Q_S_bar @ Q_S_bar.T
        XY = cooc.matmul(Q_S_bar.T)[active] / p_w[active, None]
        solved = eg_solve_l2(XX, XY, eps, max_iter)
    else:
        solved = _recover_kl_blocks(cooc, p_w, Q_S_bar, active, eps, max_iter)
    V = cooc.num_terms
    C = np.zeros((V, K))
    C[:] = 1.0 / K  # p(w) = 0 words: any point of the simplex; they vanish in A
    C[active] = solved.weights
    C[anchors[single]] = np.eye(K)[single]
    n_iter = np.zeros(V, dtype=np.int64)
    gap = np.zeros(V)
    n_iter[active], gap[active] = solved.n_iter, solved.gap
    converged = np.ones(V, dtype=bool)
    converged[active] = solved.converged
    solver = RecoverResult(C, n_iter, gap, converged)
    A, p_z = _bayes(C, p_w)
    R = _topic_cooccurrence(cooc, A) if r_method == 'pinv' else diagonal_topic_cooccurrence(cooc, A, groups)
    return Recovery(A, R, p_z, solver, eps, active)


def _recover_kl_blocks(cooc, p_w, T, active, eps, max_iter):
    """RecoverKL over blocks of whole Q-bar rows: form a block, solve it, discard it."""
    V = cooc.num_terms
    # Columns no anchor row reaches add a constant (+inf) to every x: drop them from the data.
    dead = T.sum(axis=0) <= 0
    block = kl_block_size(len(active), V)
    parts = []
    for lo in range(0, len(active), block):
        words = active[lo:lo + block]
        B = cooc.rows(words) / p_w[words, None]
        B[:, dead] = 0.0
        B = np.maximum(B, 0.0)  # the unbiased estimator can leave -0 after rounding
        if len(words) < block:  # pad: one compiled shape for every block
            B = np.vstack([B, np.zeros((block - len(words), V))])
        res = eg_solve_kl(T, B, eps, max_iter)
        parts.append(RecoverResult(*(a[:len(words)] for a in res)))
    if not parts:
        return _empty_result(T.shape[0])
    return RecoverResult(*(np.concatenate(a) for a in zip(*parts)))


def _bayes(C, p_w):
    """A = column-normalised Diag(p_w) C, and p(z) = its column sums."""
    A = C * p_w[:, None]
    p_z = A.sum(axis=0)
    if np.any(p_z <= 0):
        raise ValueError("a topic received no probability mass (p(z) = 0); the anchors are "
                         "degenerate: lower num_topics")
    return A / p_z, p_z / p_z.sum()


def _topic_cooccurrence(cooc, A):
    """R = A^+ Q A^+T from thin products.

    With G = A^T A (K x K), A^+ = G^+ A^T, so R = G^+ (A^T (Q A)) G^+: one thin product with Q
    and K x K algebra, instead of the SVD of the V x K matrix A.
    """
    G_pinv = np.linalg.pinv(A.T @ A, hermitian=True)
    R = G_pinv @ (A.T @ cooc.matmul(A)) @ G_pinv
    return (R + R.T) / 2


def diagonal_topic_cooccurrence(cooc, A, groups):
    """R by the diagonal method of Lee, Bindel & Mimno (2015), nonnegative when Q is.

    Separability makes :math:`A_S` (the anchor rows of A) diagonal, so
    :math:`Q_{SS} = A_S R A_S^T` gives
    :math:`R_{kl} = Q_{s_k s_l} / (A_{s_k k} A_{s_l l})` (``diagonalRecovery`` in the authors'
    ``recoverA.m``, https://github.com/moontae/JSMF). A group of anchor words :math:`G_k` enters
    with its sums, :math:`R_{kl} = \\sum_{i \\in G_k, j \\in G_l} Q_{ij} / (a_k a_l)`,
    :math:`a_k = \\sum_{i \\in G_k} A_{ik}`: exact when every word of :math:`G_k` is an anchor of
    topic k.

    Parameters
    ----------
    cooc : :class:`~gensim_anchor.cooccurrence.Cooccurrence`
    A : numpy.ndarray, shape (V, K)
        p(w | z).
    groups : sequence of sequence of int
        The anchor word ids of each topic (one id for a single-word anchor).

    Returns
    -------
    numpy.ndarray, shape (K, K)

    Examples
    --------
    .. sourcecode:: pycon

        >>> import numpy as np
        >>> from gensim_anchor.cooccurrence import Cooccurrence
        >>> from gensim_anchor.recovery import diagonal_topic_cooccurrence
        >>> A = np.array([[0.5, 0.0], [0.0, 0.25], [0.5, 0.75]])  # words 0 and 1 are anchors
        >>> R = np.array([[0.3, 0.1], [0.1, 0.5]])
        >>> Q = A @ R @ A.T
        >>> cooc = Cooccurrence(3, 1, 0, 0, np.ones(3, np.int64), np.ones(3), np.zeros(3), Q_sum=Q)
        >>> diagonal_topic_cooccurrence(cooc, A, [[0], [1]]).round(12).tolist()
        [[0.3, 0.1], [0.1, 0.5]]

    """
    groups = as_groups(groups)
    words = np.concatenate(groups)
    owner = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
    G = np.zeros((len(words), len(groups)))  # word -> topic indicator
    G[np.arange(len(words)), owner] = 1.0
    Q_SS = G.T @ cooc.rows(words)[:, words] @ G
    a = G.T @ A[words, owner]
    a = np.where(a > 0, a, np.inf)  # an anchor without mass in its own topic: its R row is 0
    R = Q_SS / np.outer(a, a)
    return (R + R.T) / 2


def project_simplex(Y, axis=0):
    """Euclidean projection of each column (axis=0) of Y onto the probability simplex.

    Duchi et al. (2008): sort, find the threshold, clip. Vectorised over columns.
    """
    Y = np.moveaxis(np.asarray(Y, dtype=np.float64), axis, -1)
    U = -np.sort(-Y, axis=-1)
    css = np.cumsum(U, axis=-1) - 1.0
    idx = np.arange(1, Y.shape[-1] + 1)
    rho = np.count_nonzero(U - css / idx > 0, axis=-1)
    theta = np.take_along_axis(css, (rho - 1)[..., None], axis=-1) / rho[..., None]
    return np.moveaxis(np.maximum(Y - theta, 0.0), -1, axis)


def _recover_original(cooc, anchors):
    """Recover (Arora, Ge & Moitra 2012) by matrix inversion, then projection to the simplex."""
    Q_S = cooc.rows(anchors)  # K x V
    Q_SS = Q_S[:, anchors]
    try:
        z = np.linalg.solve(Q_SS, Q_S.sum(axis=1))
        A_T = np.linalg.solve(Q_SS * z[None, :], Q_S)
    except np.linalg.LinAlgError:
        raise ValueError("Q restricted to the anchors is singular: the original Recover cannot "
                         "invert it; use loss='L2' or 'KL'") from None
    A = project_simplex(A_T.T, axis=0)
    R = z[:, None] * Q_SS * z[None, :]
    p_z = np.maximum(R.sum(axis=1), 0.0)
    p_z = p_z / p_z.sum() if p_z.sum() > 0 else np.full(len(anchors), 1.0 / len(anchors))
    return Recovery(A, R, p_z, None)
