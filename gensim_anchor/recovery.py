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
matrix :math:`\\bar Q_S\\bar Q_S^T` and its K-vector. All V problems are solved at once in a
pool of ``vmap``-ed lanes, by pairwise steps (:func:`pairwise_solve_l2`, sequential minimal
optimisation: O(K) per step) by default; the paper's exponentiated-gradient solver
(:func:`eg_solve`, :func:`eg_solve_l2`; O(K^2) per iteration) is kept and reaches the same
minimiser within its tolerance. RecoverKL uses a projected Newton method
(:func:`eg_solve_kl`). All stop by the paper's duality-gap test. The kernelised objective
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

from . import _threads
from . import _validation as check
from ._compile_cache import power_of_two, stored_jit
from ._defaults import DEFAULT_EPS, DEFAULT_MAX_ITER, EG_EPS, LOSSES, tuning
from .anchors import anchor_rows, as_groups, first_true, single_word_anchors

#: How :func:`recover` computes R: the pseudo-inverse, or the diagonal method (Lee et al. 2015).
R_METHODS = ('pinv', 'diagonal')

_ARMIJO_C1 = 1e-4
_MAX_FAILS = 4
# Refill the lane pool once 1/_REFILL_FRACTION of its lanes are idle.
_REFILL_FRACTION = 4
# eg_solve_l2 pads its problems to a multiple of this many.
_ROW_BUCKET = 64
# The pairwise solver pads its problems to a power of two, at least this many (solving only the
# real ones), and fewer anchors than _PAIR_MIN_TOPICS with coordinates that no step can enter:
# one compiled program serves word counts up to twice apart, and every K <= 8.
_PAIR_MIN_ROWS = 64
_PAIR_MIN_TOPICS = 8
# Words per part, at least, when the pairwise solver's words are split between threads
# (_threads.row_parts), with the same weights. On 2 cores 20 Newsgroups' 28,681 words solve 1.6
# to 1.9 times faster (python benchmarks/bench_recover_l2.py,
# benchmarks/results/bench_recover_l2.log, session 34). KOS's 6,856 are not split: in two parts
# they solved in 0.16 s instead of 0.28 s (the same log), but the default fit then peaked at
# 398 and 402 MB against 389 and 395 MB (medians; 403 MB at most), past issue 12's 400 MB
# (python benchmarks/bench_firstfit.py --against, benchmarks/results/bench_firstfit.log, the
# 2026-12-01T23:59Z entry).
_PAIR_SPLIT_ROWS = 4096
# A padding coordinate's linear term, relative to the largest entry of XX and XY: its gradient
# exceeds every real one by far, so it is never the best vertex, never a step's target and never
# the gap's minimum.
_PAIR_PAD_PULL = 1e30


def _pool():
    """Lane-pool settings of the current JAX backend (:data:`~gensim_anchor._defaults.BACKEND_TUNING`):
    lanes, and EG iterations between two checks of the pool."""
    row = tuning(jax.default_backend())
    return dict(lanes=row['eg_lanes'], steps=row['eg_steps'])


class RecoverResult(NamedTuple):
    """Per-word outcome of a recovery solver.

    Attributes
    ----------
    weights : numpy.ndarray, shape (V, K)
        :math:`C = p(z \\mid w)`, rows on the simplex.
    n_iter : numpy.ndarray, shape (V,), int
        Iterations (pairwise steps for :func:`pairwise_solve_l2`) each word took.
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
        Per-word convergence of the solver (None for ``'original'``).
    eps : float or None
        The duality-gap tolerance used.
    solved : numpy.ndarray of int or None
        The words whose p(z | w) the solver solved (p(w) > 0, not a single-word anchor).

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
    vg = functools.partial(value_and_grad, params)
    finished = lambda st: (st.gap < eps) | (st.n_iter >= max_iter) | st.stalled

    def update(row, st):
        # The first iteration always runs; a problem that finishes during the later ones is
        # frozen, so a word's iterations do not depend on how many steps run between checks.
        st = eg_update(vg, row[0], st, quadratic=quadratic)

        def step(_, st):
            moved = eg_update(vg, row[0], st, quadratic=quadratic)
            return jax.tree_util.tree_map(lambda a, b: jnp.where(finished(st), a, b), st, moved)

        return jax.lax.fori_loop(1, steps, step, st)

    return _pool_solve(lambda row: eg_init(vg, row[0], num_topics), update, finished, (data,),
                       data.shape[0], lanes)


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
def _solve_kl_eg(T, B, eps, max_iter, lanes, steps):
    """The exponentiated-gradient RecoverKL solver that :func:`eg_solve_kl` used before its
    projected Newton method (kept for benchmarks/bench_recover_kl.py and the tests)."""
    return eg_solve(_kl_value_and_grad, T, B, T.shape[0], eps, max_iter, lanes, steps=steps)


# Compiled programs kept on disk for the next process (:mod:`._compile_cache`).
_solve_l2 = stored_jit(_solve_l2, ('lanes', 'steps'), loop_emitters=True)


def kl_block_size(num_words, num_terms):
    """Words per block of whole Q-bar rows in RecoverKL (at most 2^23 entries, 64 MB, on a
    CPU; 2^28 on an accelerator)."""
    entries = tuning(jax.default_backend())['kl_block_entries']
    return int(max(1, min(num_words, entries // max(num_terms, 1))))


def eg_solve_l2(XX, XY, eps=EG_EPS, max_iter=DEFAULT_MAX_ITER):
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
    return _solve_l2_rows(_solve_l2, XX, XY, eps, max_iter, **_pool())


def _solve_l2_rows(program, XX, XY, eps, max_iter, **pool):
    """Run a compiled RecoverL2 ``program`` on the rows of XY (numpy in and out)."""
    XY = np.asarray(XY, dtype=np.float64)
    n = XY.shape[0]
    if n == 0:
        return _empty_result(np.shape(XX)[0])
    # Zero rows up to a multiple of _ROW_BUCKET, solved last and dropped: one compilation serves
    # word counts that differ a little (each word's result does not depend on the others).
    XY = np.vstack([XY, np.zeros((-n % _ROW_BUCKET, XY.shape[1]))])
    with jax.enable_x64(True):
        # numpy in and out: no conversion or slicing programs to compile (_compile_cache).
        x, it, gap = program(np.asarray(XX, np.float64), XY, np.float64(eps), np.int64(max_iter),
                             **pool)
        return _result(*(np.asarray(a)[:n] for a in (x, it, gap)), eps)


def _eg_solve_kl_eg(T, B, eps=DEFAULT_EPS['KL'], max_iter=DEFAULT_MAX_ITER):
    """RecoverKL's problems by the exponentiated-gradient solver :func:`eg_solve` (the method
    before the projected Newton one of :func:`eg_solve_kl`; same inputs and outputs, and
    ``n_iter`` counts EG iterations)."""
    B = np.array(B, dtype=np.float64)
    B[:, np.sum(T, axis=0) <= 0] = 0.0  # columns no anchor row reaches, as eg_solve_kl drops them
    if B.shape[0] == 0:
        return _empty_result(np.shape(T)[0])
    with jax.enable_x64(True):
        x, it, gap = _solve_kl_eg(jnp.asarray(T, jnp.float64), jnp.asarray(B),
                                  jnp.asarray(eps, jnp.float64), jnp.asarray(max_iter, jnp.int64),
                                  **_pool())
        return _result(x, it, gap, eps)


# ----------------------------------------------------------------------------------------------
# The lane pool of every solver: a finished lane writes its result and takes the next word.
# ----------------------------------------------------------------------------------------------

# Lanes gathered at once by _repair (RecoverKL: the rest of a line search, _kl_line_search).
_REPAIR_GROUP = 8


def _repair(fallback, rows, st, failed):
    """``fallback`` on the ``failed`` lanes only, gathered in groups of
    :data:`_REPAIR_GROUP`: its cost follows the number of lanes that need it, not the pool."""
    lanes = failed.shape[0]
    group = min(_REPAIR_GROUP, lanes)
    order = jnp.argsort(~failed, stable=True)  # the failed lanes first
    take = lambda tree, sel: jax.tree_util.tree_map(lambda a: a[sel], tree)

    def body(c, st):
        at = c * group + jnp.arange(group)
        sel = order[jnp.minimum(at, lanes - 1)]
        new = jax.vmap(fallback)(take(rows, sel), take(st, sel))
        use = (at < lanes) & failed[sel]
        return jax.tree_util.tree_map(
            lambda a, b: a.at[jnp.where(use, sel, lanes)].set(b, mode='drop'), st, new)

    return jax.lax.fori_loop(0, -(-jnp.sum(failed) // group), body, st)


def _pool_solve(init, update, finished, data, n, lanes, fallback=None):
    """Run ``update`` on a fixed pool of ``lanes`` problems until each is ``finished``, a
    finished lane writing its result and taking the next problem (the lane pool of
    :func:`eg_solve`, for any state with fields x, n_iter and gap). ``data`` is a tuple of
    arrays whose rows are the problems; only the first ``n`` (dynamic) are solved, the rest of
    the outputs are 0. ``fallback`` (row, state) -> state, if given, runs after ``update`` on
    the lanes whose state has ``fails > 0``, and only in the iterations where some lane has:
    a rare repair need not cost every iteration (under ``vmap`` both branches of a per-lane
    ``where`` are computed)."""
    size = data[0].shape[0]
    first = jnp.minimum(jnp.arange(lanes), n)
    take = lambda word: tuple(a[jnp.minimum(word, n - 1)] for a in data)
    rows = take(first)
    st = jax.vmap(init)(rows)
    K = st.x.shape[1]
    out = (jnp.zeros((size, K), st.x.dtype), jnp.zeros(size, st.n_iter.dtype),
           jnp.zeros(size, st.gap.dtype))
    vupdate = jax.vmap(update)

    def cond(c):
        return jnp.any(c[0] < n) | (c[3] < n)

    def body(c):
        word, rows, st, nxt, out = c
        active = word < n
        moved = vupdate(rows, st)
        keep = lambda a, b: jnp.where(active.reshape((-1,) + (1,) * (a.ndim - 1)), b, a)
        st = jax.tree_util.tree_map(keep, st, moved)
        if fallback is not None:
            st = _repair(fallback, rows, st, active & (st.fails > 0))
        done = active & finished(st)
        slot = jnp.where(done, word, size)
        out = tuple(o.at[slot].set(v, mode='drop') for o, v in zip(out, (st.x, st.n_iter, st.gap)))
        word = jnp.where(done, n, word)
        idle = word >= n
        refill_now = (nxt < n) & ((jnp.sum(idle) * _REFILL_FRACTION >= lanes) | ~jnp.any(~idle))

        def load(args):
            word, rows, st, nxt = args
            new_word = nxt + jnp.cumsum(idle) - 1
            refill = idle & (new_word < n)
            word = jnp.where(refill, new_word, word)
            fresh_rows = take(word)
            fresh = jax.vmap(init)(fresh_rows)
            pick = lambda a, b: jnp.where(refill.reshape((-1,) + (1,) * (a.ndim - 1)), a, b)
            return (word, jax.tree_util.tree_map(pick, fresh_rows, rows),
                    jax.tree_util.tree_map(pick, fresh, st), jnp.minimum(nxt + jnp.sum(idle), n))

        word, rows, st, nxt = jax.lax.cond(refill_now, load, lambda a: a, (word, rows, st, nxt))
        return word, rows, st, nxt, out

    carry = (first, rows, st, jnp.minimum(lanes, n), out)
    return jax.lax.while_loop(cond, body, carry)[4]


# ----------------------------------------------------------------------------------------------
# RecoverL2 by pairwise steps (sequential minimal optimisation), the default L2 solver.
# ----------------------------------------------------------------------------------------------

class PairState(NamedTuple):
    """State of one RecoverL2 problem in the pairwise solver (batched: a lane axis in front)."""
    x: jax.Array        # (K,) current point on the simplex
    g: jax.Array        # (K,) gradient 2 (XX x - xy), updated by each step
    n_iter: jax.Array   # steps taken
    gap: jax.Array      # duality gap lambda^T x at x
    stalled: jax.Array  # the last step moved nothing (float64 cannot resolve a decrease)


def _l2_pairwise_init(XX, row):
    """State at the start ``x0`` of the problem ``row = (xy, x0, n_iter0)``."""
    xy, x0, it0 = row
    g = 2.0 * (XX @ x0 - xy)
    return PairState(x0, g, it0, _gap(x0, g), jnp.array(False))


def _first_argmax(v):
    """``jnp.argmax(v)`` of a vector without NaN (the first index of its largest value), by
    plain reductions (:func:`~.anchors.first_true`)."""
    return first_true(v == jnp.max(v))


def _l2_pairwise_update(XX, eps, max_iter, steps, row, st):
    """Up to ``steps`` pairwise steps on :math:`f(x) = x^T XX x - 2 xy^T x` over the simplex.

    Each step moves mass from the support coordinate i of largest gradient to the coordinate
    j that promises the largest decrease, :math:`(g_i - g_j)^2 / c_{ij}` with the curvature
    :math:`c_{ij} = XX_{ii} + XX_{jj} - 2XX_{ij}` along :math:`e_j - e_i` (the second-order
    working-set selection of LIBSVM, Fan, Chen & Lin 2005), by the exact minimiser
    :math:`t = (g_i - g_j) / 2c_{ij}` along that line, clipped to :math:`x_i`: a coordinate
    leaves the support exactly when the clip binds. A step costs O(K) (two rows of XX update
    the gradient), against O(K^2) for an EG iteration. A problem stops stepping once it is
    finished (gap below ``eps``, ``max_iter`` steps, or a step that changes nothing), so the
    number of steps between two checks of the pool does not change any result.
    """
    del row  # the linear term enters only through the gradient
    diag = jnp.diagonal(XX)

    def step(_, st):
        x, g = st.x, st.g
        go = (st.gap >= eps) & (st.n_iter < max_iter) & ~st.stalled
        i = _first_argmax(jnp.where(x > 0, g, -jnp.inf))
        drop = g[i] - g
        curv = jnp.maximum(diag[i] + diag - 2.0 * XX[i], 0.0)
        j = _first_argmax(jnp.where(drop > 0, drop * drop / jnp.maximum(curv, 1e-300), -1.0))
        # A flat direction (curvature 0) is linear and descending: all of x_i moves.
        t = jnp.clip(drop[j] / jnp.maximum(2.0 * curv[j], 1e-300), 0.0, x[i])
        t = jnp.where(go & (drop[j] > 0), t, 0.0)
        # x_i - t is exactly 0 when the clip binds; the maximum guards the rounding otherwise.
        x_new = jnp.maximum(x.at[i].add(-t).at[j].add(t), 0.0)
        g_new = g + (2.0 * t) * (XX[j] - XX[i])
        moved = jnp.any(x_new != x)
        return PairState(jnp.where(moved, x_new, x), jnp.where(moved, g_new, g),
                         st.n_iter + go, jnp.where(moved, _gap(x_new, g_new), st.gap),
                         st.stalled | (go & ~moved))

    return jax.lax.fori_loop(0, steps, step, st)


def _l2_exact_gap(XX, XY, x):
    g = 2.0 * (x @ XX - XY)
    return jnp.einsum('ik,ik->i', x, g - jnp.min(g, axis=1, keepdims=True))


@functools.partial(jax.jit, static_argnames=('lanes', 'steps'))
def _solve_l2_pairwise(XX, XY, count, eps, max_iter, lanes, steps):
    """Pairwise RecoverL2 for the first ``count`` rows of XY (the rest are padding, left at
    their start), from the best vertex of the simplex, in a lane pool. The gradient is carried
    from step to step, so the converged words are checked again with the gradient recomputed;
    the few that then miss eps (rounding) go on from there in a second pool."""
    n = XY.shape[0]
    real = jnp.arange(n) < count
    finished = lambda st: (st.gap < eps) | (st.n_iter >= max_iter) | st.stalled
    init = functools.partial(_l2_pairwise_init, XX)
    update = functools.partial(_l2_pairwise_update, XX, eps, max_iter, steps)
    vertex = jnp.argmin(jnp.diagonal(XX)[None, :] - 2.0 * XY, axis=1)
    X0 = jax.nn.one_hot(vertex, XX.shape[0], dtype=XY.dtype)

    def round_(state):
        # Two rounds of one pool (a loop, so the pool is compiled once, not twice): every word
        # from its vertex, then those whose recomputed gap misses eps, from where they stopped.
        r, x, it = state
        again = real & ((r == 0) | ((_l2_exact_gap(XX, XY, x) >= eps) & (it < max_iter)))
        order = jnp.argsort(~again, stable=True)  # the words to go on with, first
        x2, it2, _ = _pool_solve(init, update, finished, (XY[order], x[order], it[order]),
                                 jnp.sum(again), lanes)
        back = jnp.argsort(order)  # the inverse permutation
        redo = back < jnp.sum(again)
        return r + 1, jnp.where(redo[:, None], x2[back], x), jnp.where(redo, it2[back], it)

    _, x, it = jax.lax.while_loop(lambda state: state[0] < 2, round_, (0, X0, jnp.zeros(n, int)))
    x = x / jnp.sum(x, axis=1, keepdims=True)
    return x, it, _l2_exact_gap(XX, XY, x)


# Kept on disk for the next process, as the EG solver (:mod:`._compile_cache`).
_solve_l2_pairwise = stored_jit(_solve_l2_pairwise, ('lanes', 'steps'), loop_emitters=True)


def pairwise_solve_l2(XX, XY, eps=DEFAULT_EPS['L2'], max_iter=DEFAULT_MAX_ITER):
    """RecoverL2's problems for many words at once, by pairwise steps: the default solver.

    The same problems as :func:`eg_solve_l2`, :math:`\\min_x x^T XX x - 2 XY_i^T x` on the
    simplex, and the same stopping test (duality gap :math:`\\lambda^T x < \\epsilon`), solved
    by sequential minimal optimisation (:func:`_l2_pairwise_update`): from the best vertex,
    each step moves mass between two coordinates by the exact minimiser along that line. A
    step costs O(K) against O(K^2) for an EG iteration, and the support is found in a few
    dozen steps; the objective is strictly convex when the anchor rows are independent, so
    both solvers approach the same minimiser (within the gap tolerance). The returned gap is
    recomputed from the final weights, not carried.

    Parameters and result as :func:`eg_solve_l2`; ``max_iter`` caps the pairwise steps, which
    ``n_iter`` counts (0 for a word whose best vertex is optimal).

    Examples
    --------
    .. sourcecode:: pycon

        >>> import numpy as np
        >>> from gensim_anchor.recovery import pairwise_solve_l2
        >>> XX = np.array([[1.0, 0.2], [0.2, 1.0]])
        >>> target = 0.3 * XX[0] + 0.7 * XX[1]
        >>> result = pairwise_solve_l2(XX, target[None, :], eps=1e-14)
        >>> np.round(result.weights, 6).tolist(), bool(result.converged[0])
        ([[0.3, 0.7]], True)

    """
    XX = np.asarray(XX, dtype=np.float64)
    XY = np.asarray(XY, dtype=np.float64)
    n, K = XY.shape[0], XX.shape[0]
    if n == 0:
        return _empty_result(K)
    pull = -_PAIR_PAD_PULL * max(1.0, np.abs(XX).max(), np.abs(XY).max())
    # The words in parts solved at once on threads (_threads): the same weights, faster. Only
    # the programs run on the threads; the numpy arrays in and out are made on this one.
    ranges = _threads.row_parts(n, _PAIR_SPLIT_ROWS)
    problems = [_padded_rows(XX, XY[lo:hi], pull) for lo, hi in ranges]
    solved = _threads.run_all([functools.partial(_pairwise_program, XXp, XYp, hi - lo, eps, max_iter)
                               for (lo, hi), (XXp, XYp) in zip(ranges, problems)])
    x, it, gap = (np.concatenate([np.asarray(part[i])[:hi - lo]
                                  for (lo, hi), part in zip(ranges, solved)]) for i in range(3))
    return _result(x[:, :K], it, gap, eps)


def _padded_rows(XX, XY, pull):
    """XX and XY padded for the pairwise solver (see _PAIR_MIN_ROWS): rows solved by no one, and
    coordinates whose gradient stays 2 * |pull| (their rows and columns of XX are 0), so that no
    step moves mass there."""
    n, K = XY.shape[0], XX.shape[0]
    XXp, XYp = _padded_problems(n, K)
    XXp[:K, :K] = XX
    XYp[:, K:] = pull
    XYp[:n, :K] = XY
    return XXp, XYp


def _pairwise_program(XXp, XYp, n, eps, max_iter):
    """The stored pairwise solver on padded problems (a part of :func:`pairwise_solve_l2`)."""
    with jax.enable_x64(True):  # in this thread: JAX's configuration contexts are per thread
        # numpy in: no conversion programs to compile (_compile_cache).
        return _run_pairwise(_solve_l2_pairwise, XXp, XYp, n, eps, max_iter)


def _padded_problems(num_words, num_topics):
    """XX and XY of the pairwise solver padded (see :data:`_PAIR_MIN_ROWS`), zero (untouched
    memory until written)."""
    size, width = power_of_two(num_words, _PAIR_MIN_ROWS), max(num_topics, _PAIR_MIN_TOPICS)
    return np.zeros((width, width)), np.zeros((size, width))


def _run_pairwise(program, XXp, XYp, n, eps, max_iter):
    """``program`` (the stored solver, or its ``prefetch``) with the padded problems, the
    number of real ones and the backend's lane pool."""
    row = tuning(jax.default_backend())
    return program(XXp, XYp, np.int64(n), np.float64(eps), np.int64(max_iter), lanes=row['pair_lanes'],
                   steps=row['pair_steps'])


def prefetch(num_words, num_topics, loss='L2'):
    """Load the stored program that :func:`recover` will run for ``num_words`` solved words and
    ``num_topics`` anchors, without running it (:meth:`~._compile_cache.stored_jit.prefetch`:
    for a background thread while the anchors are searched). RecoverL2's only: RecoverKL and
    the original Recover load theirs when called."""
    if loss != 'L2' or num_words <= 0:
        return
    with jax.enable_x64(True):
        for size in sorted({hi - lo for lo, hi in _threads.row_parts(num_words, _PAIR_SPLIT_ROWS)}):
            _run_pairwise(_solve_l2_pairwise.prefetch, *_padded_problems(size, num_topics), size,
                          DEFAULT_EPS['L2'], DEFAULT_MAX_ITER)


# ----------------------------------------------------------------------------------------------
# RecoverKL by a projected Newton method (sequential quadratic programming on the simplex).
# ----------------------------------------------------------------------------------------------
#
# Word i's problem is min_{x in simplex} f(x) = -sum_{j: b_j > 0} b_j log p_j, p = x^T T
# (KL(b || x^T T) up to the constant sum b log b). Its derivatives are
#
#     g = -T (b / p),    H = T Diag(b / p^2) T^T    (K x K),
#
# and one iteration minimises the K-dimensional quadratic model
# g^T (y - x) + (y - x)^T H (y - x) / 2 over the simplex exactly, by a primal active-set
# method (:func:`_simplex_qp`; the mix-SQP of Kim, Carbonetto & Stephens 2020 on the simplex),
# then searches along d = y - x with the decrease f(x + a d) - f(x) = -sum b log1p(a q / p),
# q = d^T T, free of the cancellation between two nearly equal values of f. Newton's local
# quadratic convergence replaces EG's hundreds of iterations by a handful, from a start at
# the RecoverL2 solution of the same word. The stopping rule is EG's duality gap
# lambda^T x < eps. The Hessians of a pool of lanes are one product of their weights
# b / p^2 (lanes x V) with the V x K(K+1)/2 Khatri-Rao matrix of T's rows (T_kj T_mj, k <= m):
# a dense matrix product ran faster than per-word products over the words'
# supports (a third of V on KOS), even counting the columns where b = 0.

# Lanes of the Newton solver's pool: _defaults.BACKEND_TUNING's kl_lanes.
# Ridge of the quadratic model relative to mean(diag H): keeps its Cholesky factor defined
# where T is rank-deficient on a word's support (a rare word), far below any step that matters.
_KL_RIDGE = 1e-12
# Trial steps of the line search: a0, a0/2, ..., a0/2^(n-1), with a0 = 1 after a decrease
# and 2^-n times the last a0 after a failure. Every lane tries a0 (Newton's full step is
# nearly always taken); the other trials, V-length work each, run only in the lanes where it
# fails (_kl_line_search; 20 Newsgroups in bench_recover_kl.log: 808 s before, 583 s). A failed
# search is followed, in the same iteration, by a pairwise step (_kl_pairwise_update);
# _MAX_FAILS iterations in a row where neither decreases f: stalled.
_KL_LINE_STEPS = 8
# The quadratic model's active-set method starts from x without its entries below this
# fraction of max(x) (a guess of the optimal face; the result does not depend on it).
_KL_FACE_GUESS = 1e-3
# Tolerance and iteration cap of the RecoverL2 solve that gives the start.
_KL_WARM_EPS = 1e-6
_KL_WARM_MAX_ITER = 200


# EM steps that improve each start before the Newton iterations (see _kl_newton_init).
_KL_EM_STEPS = 30


def _triu_map(K):
    """K x K positions of the symmetric matrix in its row-major upper triangle."""
    i, j = np.triu_indices(K)
    pos = np.zeros((K, K), dtype=np.int32)
    pos[i, j] = pos[j, i] = np.arange(len(i))
    return pos


class KLState(NamedTuple):
    """State of one Newton problem (batched: every field gains a lane axis)."""
    x: jax.Array        # (K,) current point on the simplex
    g: jax.Array        # (K,) gradient at x
    n_iter: jax.Array   # Newton iterations taken
    gap: jax.Array      # duality gap lambda^T x at x
    step: jax.Array     # largest trial step of the next line search
    fails: jax.Array    # consecutive line searches without a decrease
    stalled: jax.Array  # no step decreases f (float64 precision reached)
    d: jax.Array        # (K,) the last Newton direction (for the rest of its line search)


def _kl_grad(T, b, x):
    pos = b > 0
    p = x @ T
    safe = jnp.where(pos, p, 1.0)
    return safe, -(T @ jnp.where(pos, b / safe, 0.0))


def _kl_newton_init(T, TT, row):
    """The start x0 of row, improved by :data:`_KL_EM_STEPS` EM steps
    :math:`x_k \\leftarrow x_k (-g_k) / \\sum_j b_j` (multiplicative, on the simplex): they
    grow the weights that x0 leaves near 0 and KL needs (p_j > 0 wherever b_j > 0) by
    large factors at the cost of a gradient, where Newton's method would double them once
    per iteration."""
    b, x = row
    total = jnp.sum(b)
    T32, b32 = T.astype(jnp.float32), b.astype(jnp.float32)

    def em(_, x):  # in float32: it only improves the start
        _, g = _kl_grad(T32, b32, x)
        x = x * jnp.where(total > 0, -g / total.astype(jnp.float32), 1.0)
        return x / jnp.sum(x)

    x32 = jax.lax.fori_loop(0, _KL_EM_STEPS, em, x.astype(jnp.float32))
    x = jnp.where(jnp.all(jnp.isfinite(x32)), x32.astype(x.dtype), x)
    # A little of the centre, so that float32 underflow leaves no p_j = 0 where b_j > 0.
    x = (1.0 - 1e-6) * x / jnp.sum(x) + 1e-6 / x.shape[0]
    _, g = _kl_grad(T, b, x)
    return KLState(x, g, jnp.array(0), _gap(x, g), jnp.array(1.0, x.dtype), jnp.array(0),
                   jnp.array(False), jnp.zeros_like(x))


def _simplex_qp(H, h, y0):
    """min_y y^T H y / 2 + h^T y on the simplex, by a primal active-set method from the feasible
    point y0 (Nocedal & Wright, Algorithm 16.3): each face's equality-constrained minimiser by
    a Cholesky solve (bordered by the constraint sum y = 1), a step to the first blocking
    bound, and at a face minimiser the release of the most negative multiplier. Every
    iterate is feasible and lowers the model, so the result is a descent step even when
    the iteration cap stops it early."""
    K = H.shape[0]
    diag = jnp.diagonal(H)
    ridge = _KL_RIDGE * jnp.maximum(jnp.mean(diag), 1e-300)
    tol = 1e-13 * (1.0 + jnp.max(jnp.abs(h)) + jnp.max(jnp.abs(diag)))

    def face(bound):
        free = ~bound
        both = free[:, None] & free[None, :]
        M = jnp.where(both, H, 0.0) + jnp.diag(jnp.where(free, ridge, 1.0))
        L = jax.scipy.linalg.cho_factor(M, lower=True)
        a = jax.scipy.linalg.cho_solve(L, jnp.where(free, -h, 0.0))
        u = jax.scipy.linalg.cho_solve(L, free.astype(H.dtype))
        nu = (1.0 - jnp.sum(a)) / jnp.sum(u)
        return jnp.where(free, a + nu * u, 0.0), nu

    def body(c):
        y, bound, done, it = c
        z, nu = face(bound)
        step = z - y
        shrink = ~bound & (step < 0)
        ratios = jnp.where(shrink, y / jnp.where(shrink, -step, 1.0), jnp.inf)
        k = jnp.argmin(ratios)
        blocked = ratios[k] < 1.0
        y_block = jnp.maximum((y + ratios[k] * step).at[k].set(0.0), 0.0)
        mu = jnp.where(bound, H @ z + h - nu, jnp.inf)
        j = jnp.argmin(mu)
        release = ~blocked & (mu[j] < -tol)
        y_new = jnp.where(blocked, y_block, jnp.maximum(z, 0.0))
        bound_new = jnp.where(blocked, bound.at[k].set(True),
                              jnp.where(release, bound.at[j].set(False), bound))
        ok = jnp.all(jnp.isfinite(z)) & ~done
        return (jnp.where(ok, y_new, y), jnp.where(ok, bound_new, bound),
                done | ~ok | (~blocked & ~release), it + 1)

    cond = lambda c: ~c[2] & (c[3] < 3 * K + 10)
    y, _, _, _ = jax.lax.while_loop(cond, body, (y0, y0 <= 0, jnp.array(False), jnp.array(0)))
    return y / jnp.sum(y)


def _armijo(b, pos, rq, alphas, slope):
    """Which trial steps ``alphas`` of the line search along d decrease f enough (Armijo), with
    the decrease :math:`-\\sum_j b_j \\log(1 + a q_j / p_j)` (``rq`` = q / p on the support)."""
    z = alphas[:, None] * rq[None, :]
    feasible = jnp.all(z > -1.0, axis=1)
    decrease = -jnp.sum(jnp.where(pos, b, 0.0) * jnp.log1p(jnp.where(feasible[:, None], z, 0.0)),
                        axis=1)
    return feasible & (decrease <= _ARMIJO_C1 * alphas * slope) & (decrease < 0) & (slope < 0)


def _accept(T, b, moved, x_new, x, g):
    """(x_new, its gradient) where ``moved``, else (x, g)."""
    _, g_new = _kl_grad(T, b, x_new)
    return jnp.where(moved, x_new, x), jnp.where(moved, g_new, g)


def _kl_newton_update(T, TT, row, st):
    """One projected Newton iteration (see the comments above :func:`_kl_lanes`). Only the first
    trial step of the line search is tried here; a lane where it fails (``fails > 0``) goes on
    in :func:`_kl_line_search`, in the few iterations and lanes that need it."""
    b, _ = row
    K = T.shape[0]
    pos = b > 0
    x, g = st.x, st.g
    safe = jnp.where(pos, x @ T, 1.0)
    # H's upper triangle, in float32: it shapes the step, not the certificate.
    weights = jnp.where(pos, b / (safe * safe), 0.0)
    upper = (weights.astype(TT.dtype) @ TT).astype(x.dtype)
    H = upper[_triu_map(K)]
    guess = jnp.where(x >= _KL_FACE_GUESS * jnp.max(x), x, 0.0)
    y = _simplex_qp(H, g - H @ x, guess / jnp.sum(guess))
    d = y - x
    rq = jnp.where(pos, (d @ T) / safe, 0.0)                        # q / p on the support
    moved = _armijo(b, pos, rq, st.step[None], jnp.dot(g, d))[0]
    x_new = jnp.where(st.step == 1.0, y, jnp.maximum(x + st.step * d, 0.0))
    x_new, g_new = _accept(T, b, moved, x_new / jnp.sum(x_new), x, g)
    fails = jnp.where(moved, 0, st.fails + 1)
    return KLState(x_new, g_new, st.n_iter + 1, _gap(x_new, g_new), jnp.where(moved, 1.0, st.step),
                   fails, fails >= _MAX_FAILS, d)


def _kl_line_search(T, row, st, pairwise=True):
    """The rest of a line search whose first trial failed: the steps a0/2, ..., a0/2^(n-1)
    along the same direction ``st.d``, the largest that satisfies Armijo; if none does, a0
    drops by 2^-n and the pairwise step (:func:`_kl_pairwise_update`) is tried instead
    (``pairwise=False``, for the tests: not)."""
    b, _ = row
    pos = b > 0
    x, g, d = st.x, st.g, st.d
    safe = jnp.where(pos, x @ T, 1.0)
    rq = jnp.where(pos, (d @ T) / safe, 0.0)
    alphas = st.step * 0.5 ** jnp.arange(1, _KL_LINE_STEPS, dtype=x.dtype)
    ok = _armijo(b, pos, rq, alphas, jnp.dot(g, d))
    moved = jnp.any(ok)
    x_new = jnp.maximum(x + alphas[jnp.argmax(ok)] * d, 0.0)
    x_new, g_new = _accept(T, b, moved, x_new / jnp.sum(x_new), x, g)
    searched = st._replace(x=x_new, g=g_new, gap=_gap(x_new, g_new),
                           step=jnp.where(moved, 1.0, st.step * 0.5 ** _KL_LINE_STEPS),
                           fails=jnp.where(moved, 0, st.fails), stalled=st.stalled & ~moved)
    paired = _kl_pairwise_update(T, row, searched) if pairwise else searched
    return jax.tree_util.tree_map(lambda a, b: jnp.where(moved, a, b), searched, paired)


def _kl_pairwise_update(T, row, st):
    """The fallback of a Newton iteration that no line-search step accepted (``st.fails > 0``):
    move mass from the support coordinate of largest gradient j to the coordinate of smallest
    gradient i, by the one-dimensional Newton step along :math:`e_i - e_j`, halved until the
    Armijo condition holds.

    Newton's step fails where a coordinate's curvature is enormous (a column with b > 0 and
    p near 0, so that b / p^2 is huge): the step that closes the duality gap there can be far
    below the rounding of the renormalised full step, and the active-set solve of so
    ill-conditioned a model can even point uphill (both seen on 20 Newsgroups, where 1.6% of
    the words stalled before this fallback). This step changes two coordinates only, exactly (it sums to zero: no
    renormalisation), so steps that small still count, and its curvature
    :math:`\\sum_j (b_j / p_j^2)(T_{ij} - T_{jj'})^2` is computed here in float64.
    """
    b, _ = row
    pos = b > 0
    x, g = st.x, st.g
    safe = jnp.where(pos, x @ T, 1.0)
    lam = g - jnp.min(g)
    i = jnp.argmin(g)
    j = jnp.argmax(jnp.where(x > 0, lam, -jnp.inf))
    diff = jnp.where(pos, T[i] - T[j], 0.0)
    curvature = jnp.sum(jnp.where(pos, b / (safe * safe), 0.0) * diff * diff)
    delta = jnp.minimum(x[j], lam[j] / jnp.maximum(curvature, jnp.finfo(x.dtype).tiny))
    alphas = 0.5 ** jnp.arange(_KL_LINE_STEPS, dtype=x.dtype)
    ok = _armijo(b, pos, delta * diff / safe, alphas, -delta * lam[j])
    moved = jnp.any(ok) & (i != j)
    a = alphas[jnp.argmax(ok)] * delta
    # x[j] - a >= 0 by construction (a <= x[j]); the maximum only guards its rounding.
    x_new, g_new = _accept(T, b, moved, x.at[i].add(a).at[j].set(jnp.maximum(x[j] - a, 0.0)), x, g)
    return st._replace(x=x_new, g=g_new, gap=_gap(x_new, g_new),
                       step=jnp.where(moved, 1.0, st.step), fails=jnp.where(moved, 0, st.fails),
                       stalled=st.stalled & ~moved)


@functools.partial(jax.jit, static_argnames=('lanes',))
def _solve_kl(T, B, X0, n, eps, max_iter, lanes):
    """Projected Newton for the first n rows of B from the starts X0 (rows K-vectors)."""
    K = T.shape[0]
    iu = np.triu_indices(K)
    TT = (T[iu[0]] * T[iu[1]]).T.astype(jnp.float32)                # V x K(K+1)/2
    finished = lambda st: (st.gap < eps) | (st.n_iter >= max_iter) | st.stalled
    return _pool_solve(functools.partial(_kl_newton_init, T, TT),
                       functools.partial(_kl_newton_update, T, TT), finished, (B, X0),
                       n, lanes, fallback=functools.partial(_kl_line_search, T))


# Kept on disk for the next process, as RecoverL2's (:mod:`._compile_cache`). With XLA's
# default emitters: KOS's K = 20 recovery took 22.7 s and 23.3 s with the loop emitters, against
# 15.1 s and 16.4 s (benchmarks/results/bench_emitters.log, 19:08Z).
_solve_kl = stored_jit(_solve_kl, ('lanes',))


def _kl_lanes():
    return tuning(jax.default_backend())['kl_lanes']


def _kl_start(T, B):
    """Starts of the Newton solver: each word's RecoverL2 weights (loosely solved), mixed with
    a little of the simplex's centre so that every column some anchor reaches has p > 0."""
    K = T.shape[0]
    warm = pairwise_solve_l2(T @ T.T, B @ T.T, _KL_WARM_EPS, _KL_WARM_MAX_ITER).weights
    return 0.9 * warm + 0.1 / K


def eg_solve_kl(T, B, eps=DEFAULT_EPS['KL'], max_iter=DEFAULT_MAX_ITER):
    """RecoverKL's problems for many words at once: min KL(B_i || x^T T) on the simplex.

    Solved by a projected Newton method (see the comments above :func:`_kl_lanes`): each
    iteration minimises the K-dimensional quadratic model of KL on the simplex exactly by
    an active-set method and searches along the step; it starts from the word's RecoverL2
    weights and stops by the exponentiated-gradient method's duality-gap test
    :math:`\\lambda^T x < \\epsilon`. Where no step of the line search decreases f (a column
    with :math:`p_j` near 0 makes the curvature enormous), a pairwise step between the
    coordinates of smallest and largest gradient takes over (:func:`_kl_pairwise_update`).
    Columns that no anchor row reaches are left out (their term is +inf for every x).

    Parameters
    ----------
    T : array_like, shape (K, V)
        The anchor rows of Q-bar.
    B : array_like, shape (n, V)
        Rows of Q-bar to reconstruct.
    eps, max_iter : float, int
        Duality-gap tolerance and cap on Newton iterations per word.

    Returns
    -------
    RecoverResult
        ``n_iter`` counts Newton iterations.
    """
    T = np.asarray(T, dtype=np.float64)
    B = np.array(B, dtype=np.float64)
    K = T.shape[0]
    n = B.shape[0]
    if n == 0:
        return _empty_result(K)
    B[:, T.sum(axis=0) <= 0] = 0.0
    # Zero rows up to a multiple of _ROW_BUCKET (as eg_solve_l2; _recover_kl_blocks pads its last
    # block to the others' size, so a corpus compiles one shape); the Newton solver skips them.
    B = np.vstack([B, np.zeros((-n % _ROW_BUCKET, B.shape[1]))])
    X0 = _kl_start(T, B)
    with jax.enable_x64(True):
        # numpy in and out: no conversion or slicing programs to compile (_compile_cache).
        x, it, gap = _solve_kl(T, B, np.asarray(X0, np.float64), np.int64(n), np.float64(eps),
                               np.int64(max_iter), lanes=_kl_lanes())
        return _result(*(np.asarray(a)[:n] for a in (x, it, gap)), eps)


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
    V = cooc.num_terms
    groups = [check.check_ids('anchors', g, V) for g in as_groups(anchors)]
    single = np.array([len(g) == 1 for g in groups], dtype=bool)
    anchors = single_word_anchors(groups)
    if len(np.unique(anchors[single])) < single.sum():
        raise ValueError("anchors must be distinct: word %d anchors two topics, which would be the same "
                         "topic" % int(next(a for a in anchors[single] if np.sum(anchors[single] == a) > 1)))
    eps = check.check_positive_float('eps', eps, allow_none=True)
    max_iter = check.check_int('max_iter', max_iter, minimum=1)
    p_w = cooc.row_sums() if p_w is None else p_w
    p_w = check.check_row_sums(p_w, V, np.concatenate(groups) if groups else None)
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
        solved = pairwise_solve_l2(XX, XY, eps, max_iter)
    else:
        solved = _recover_kl_blocks(cooc, p_w, Q_S_bar, active, eps, max_iter)
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


def _recover_kl_blocks(cooc, p_w, T, active, eps, max_iter, solve=None):
    """RecoverKL over blocks of whole Q-bar rows: form a block, solve it, discard it.
    ``solve`` (default :func:`eg_solve_kl`) is replaceable for benchmarks/bench_recover_kl.py."""
    solve = eg_solve_kl if solve is None else solve
    V = cooc.num_terms
    block = kl_block_size(len(active), V)
    parts = []
    # One block at a time: two blocks solved at once on threads stalled for minutes on KOS
    # (both threads waiting on their programs, the CPU idle; the Newton steps' Cholesky is a LAPACK
    # call), where one at a time took 43.7 s (benchmarks/results/bench_recover_kl.log, session 34).
    for lo in range(0, len(active), block):
        words = active[lo:lo + block]
        B = np.maximum(cooc.rows(words) / p_w[words, None], 0.0)  # rounding can leave -0
        if len(words) < block:  # one compiled shape per block (eg_solve_kl drops dead columns)
            B = np.vstack([B, np.zeros((block - len(words), V))])
        res = solve(T, B, eps, max_iter)
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
    Q_SS = cooc.rows(words)[:, words]
    if cooc.mode == 'lowrank':
        # The compressed rectification is nonnegative only up to its epsilon, and only on the
        # rows of largest norm: clip what is left (the dense AP's Q is nonnegative as it is).
        Q_SS = np.maximum(Q_SS, 0.0)
    Q_SS = G.T @ Q_SS @ G
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
