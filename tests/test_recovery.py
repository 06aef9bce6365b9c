"""Stage 3: the simplex-constrained problems of RecoverL2 / RecoverKL (exponentiated gradient,
supplementary "Exponentiated gradient algorithm") and the projection onto the simplex.

Every solver result is compared with a slow float64 reference written here: an active-set
method that solves each face exactly (least squares for L2, Newton for KL) and stops at a KKT
point. Its optimality is certified, not assumed: for a convex f on the simplex,
f(x) - f* <= lambda^T x with lambda = grad f(x) - min_k grad f(x)_k, and the tests assert that
this duality gap of the reference is at rounding level.
"""
import itertools

import numpy as np
import pytest
import scipy.linalg
import scipy.optimize

from conftest import record_calls
from gensim_anchor._defaults import DEFAULT_MAX_ITER
from gensim_anchor.anchors import DEFAULT_PROJECTION_DIM, find_anchors, project_rows, resolve_min_df
from gensim_anchor.cooccurrence import build_cooccurrence
from gensim_anchor.recovery import (RecoverResult, eg_solve_kl, eg_solve_l2, pairwise_solve_l2,
                                     project_simplex)

TIGHT_EPS = 1e-12
BIG_MAX_ITER = 20000
#: RecoverL2's solvers: the paper's exponentiated gradient and the default pairwise one.
L2_SOLVERS = dict(eg=eg_solve_l2, pairwise=pairwise_solve_l2)


# ----------------------------------------------------------------------------------------------
# Objectives in their plain (not kernelised) form, float64 numpy
# ----------------------------------------------------------------------------------------------

def l2_objective(T, b, x):
    """||b - x^T T||^2 over all V columns."""
    r = b - x @ T
    return float(r @ r)


def l2_gradient(T, b, x):
    return -2.0 * (T @ (b - x @ T))


def kl_columns(T, b):
    """The columns where KL(b || x^T T) has a term: b_j > 0 (and, as recover() does, some
    anchor row reaches j; otherwise the term is +inf for every x, a constant)."""
    keep = (b > 0) & (T.sum(axis=0) > 0)
    return T[:, keep], b[keep]


def kl_objective(T, b, x):
    """KL(b || x^T T) = sum_j b_j log(b_j / (x^T T)_j) over the columns with b_j > 0."""
    Tk, bk = kl_columns(T, b)
    return float(np.sum(bk * (np.log(bk) - np.log(x @ Tk))))


def kl_gradient(T, b, x):
    Tk, bk = kl_columns(T, b)
    return -(Tk @ (bk / (x @ Tk)))


def duality_gap(grad, x):
    """lambda^T x with lambda = grad - min(grad) (supplementary, KKT test)."""
    return float(x @ (grad - grad.min()))


# ----------------------------------------------------------------------------------------------
# Reference solvers
# ----------------------------------------------------------------------------------------------

def _zero_sum_basis(k):
    """Orthonormal basis (k x (k-1)) of {z : sum z = 0}: moves that stay on the face's plane."""
    return scipy.linalg.null_space(np.ones((1, k)))


def l2_face_minimiser(T, b, support):
    """argmin ||b - x^T T||^2 over the affine hull {x : x_j = 0 off support, sum x = 1}, by
    least squares on the V x (k-1) matrix (no normal equations, so no squared condition)."""
    support = list(support)
    x = np.zeros(T.shape[0])
    k = len(support)
    x0 = np.full(k, 1.0 / k)
    if k > 1:
        N = _zero_sum_basis(k)
        z = np.linalg.lstsq(T[support].T @ N, b - x0 @ T[support], rcond=None)[0]
        x0 = x0 + N @ z
    x[support] = x0
    return x


def reference_l2(T, b):
    """Primal active-set method for min ||b - x^T T||^2 on the simplex (Nocedal & Wright,
    Algorithm 16.3): exact face minimisers, step to the first blocking bound, free the index
    with the most negative multiplier. Stops at a KKT point."""
    K = T.shape[0]
    x = np.full(K, 1.0 / K)
    support = list(range(K))
    for _ in range(50 * K):
        target = l2_face_minimiser(T, b, support)
        blocking = [j for j in support if target[j] < 0]
        if blocking:
            steps = {j: x[j] / (x[j] - target[j]) for j in blocking}
            j = min(steps, key=steps.get)
            x = x + steps[j] * (target - x)
            x[j] = 0.0
            support.remove(j)
            continue
        x = target
        g = l2_gradient(T, b, x)
        mu = g[support].mean()
        free = [j for j in range(K) if j not in support]
        if not free or g[free].min() >= mu:
            return x
        support.append(min(free, key=lambda j: g[j]))
    raise RuntimeError("reference_l2 did not terminate")


def reference_l2_by_enumeration(T, b):
    """Exact for small K: the minimiser lies in the relative interior of some face, where it is
    that face's affine minimiser; try every face and keep the best feasible one."""
    K = T.shape[0]
    best, best_f = None, np.inf
    for k in range(1, K + 1):
        for support in itertools.combinations(range(K), k):
            x = l2_face_minimiser(T, b, support)
            if x.min() >= 0:
                f = l2_objective(T, b, x)
                if f < best_f:
                    best, best_f = x, f
    return best


def reference_kl(T, b, max_steps=500):
    """Active-set Newton method for min KL(b || x^T T) on the simplex: Newton steps within the
    current face (damped to stay feasible and to decrease f; near the optimum, where f can no
    longer resolve the decrease, the full Newton step), drop an index that reaches 0, and at a
    face optimum free the index with the most negative multiplier."""
    Tk, bk = kl_columns(T, b)
    K = Tk.shape[0]

    def f(x):
        return float(np.sum(bk * (np.log(bk) - np.log(x @ Tk))))

    x = np.full(K, 1.0 / K)
    support = list(range(K))
    fx = f(x)
    for _ in range(max_steps):
        p = x @ Tk
        g = -(Tk @ (bk / p))
        d = np.zeros(K)
        if len(support) > 1:
            W = Tk[support] * np.sqrt(bk) / p
            N = _zero_sum_basis(len(support))
            H = N.T @ (W @ W.T) @ N
            d[support] = N @ np.linalg.solve(H, -N.T @ g[support])
        decrement = -float(g @ d)
        moved = False
        if decrement > 1e-30:
            shrinking = [j for j in support if d[j] < 0]
            limits = [x[j] / -d[j] for j in shrinking]
            a_max = min([1.0] + limits)
            a = a_max
            while a > 1e-16 and not moved:
                xn = x + a * d
                if a == a_max < 1.0:
                    xn[shrinking[int(np.argmin(limits))]] = 0.0
                xn = np.maximum(xn, 0.0)
                if np.all(xn @ Tk > 0) and f(xn) < fx:
                    moved = True
                else:
                    a /= 2
            if not moved and decrement < 1e-12 and a_max == 1.0 and np.abs(d).max() > 1e-17:
                xn, moved = x + d, True
            if moved:
                x = xn / xn.sum()
                fx = f(x)
                support = [j for j in support if x[j] > 0]
                continue
        mu = g[support].mean()
        free = [j for j in range(K) if j not in support]
        if not free or g[free].min() >= mu:
            return x
        support = sorted(support + [min(free, key=lambda j: g[j])])
    raise RuntimeError("reference_kl did not terminate")


# ----------------------------------------------------------------------------------------------
# Random well-conditioned problems
# ----------------------------------------------------------------------------------------------

def random_problems(seed, num_words=24, K=5, V=60):
    """K anchor rows (distributions over V words) and num_words rows to reconstruct: sparse
    mixtures of the anchors (some weights exactly 0 at the optimum) plus off-hull noise, so
    that the optimum is unique, sometimes on a face, and has f* > 0."""
    rng = np.random.default_rng(seed)
    T = rng.dirichlet(np.ones(V), size=K)
    mix = rng.dirichlet(np.full(K, 0.4), size=num_words)
    B = 0.8 * mix @ T + 0.2 * rng.dirichlet(np.ones(V), size=num_words)
    return T, B


@pytest.fixture(scope='module', params=[0, 1])
def problems(request):
    return random_problems(request.param)


def check_reference_certificate(grad, x, scale, tol):
    assert np.all(x >= 0) and abs(x.sum() - 1.0) < 1e-12
    gap = duality_gap(grad, x)
    assert gap <= tol * scale, "reference not optimal: gap %.3g" % gap


# ----------------------------------------------------------------------------------------------
# The references themselves
# ----------------------------------------------------------------------------------------------

def test_reference_l2_is_exact(problems):
    T, B = problems
    for b in B:
        x = reference_l2(T, b)
        check_reference_certificate(l2_gradient(T, b, x), x, l2_objective(T, b, x), 1e-12)
        np.testing.assert_allclose(x, reference_l2_by_enumeration(T, b), rtol=0, atol=1e-12)


def test_reference_kl_is_optimal(problems):
    T, B = problems
    for b in B[:8]:
        x = reference_kl(T, b)
        check_reference_certificate(kl_gradient(T, b, x), x, 1.0, 1e-13)
        # An independent general-purpose solver agrees (to its own, lower, precision).
        slsqp = scipy.optimize.minimize(
            lambda y: kl_objective(T, b, y), np.full(len(x), 1.0 / len(x)),
            jac=lambda y: kl_gradient(T, b, y), method='SLSQP', bounds=[(1e-15, 1)] * len(x),
            constraints=[{'type': 'eq', 'fun': lambda y: y.sum() - 1.0, 'jac': lambda y: np.ones_like(y)}],
            options={'ftol': 1e-15, 'maxiter': 1000})
        assert kl_objective(T, b, x) <= slsqp.fun + 1e-12
        np.testing.assert_allclose(x, slsqp.x, atol=1e-4)


# ----------------------------------------------------------------------------------------------
# eg_solve_l2 and eg_solve_kl against the references
# ----------------------------------------------------------------------------------------------

def compare_l2(T, B, result, words=None):
    """Per word: (relative objective excess, max weight error, objective excess, solver gap)."""
    rows = []
    for i, b in enumerate(B):
        x_ref = reference_l2(T, b)
        f_ref = l2_objective(T, b, x_ref)
        check_reference_certificate(l2_gradient(T, b, x_ref), x_ref, f_ref, 1e-10)
        x = result.weights[i]
        f = l2_objective(T, b, x)
        rows.append(((f - f_ref) / f_ref, np.abs(x - x_ref).max(), f - f_ref, result.gap[i]))
    return np.array(rows)


def compare_kl(T, B, result):
    rows = []
    for i, b in enumerate(B):
        x_ref = reference_kl(T, b)
        f_ref = kl_objective(T, b, x_ref)
        check_reference_certificate(kl_gradient(T, b, x_ref), x_ref, 1.0, 1e-12)
        x = result.weights[i]
        f = kl_objective(T, b, x)
        rows.append(((f - f_ref) / f_ref, np.abs(x - x_ref).max(), f - f_ref, result.gap[i]))
    return np.array(rows)


def check_result_shape(result, n, K, max_iter, eps, min_iter=1):
    assert isinstance(result, RecoverResult)
    assert result.weights.shape == (n, K) and result.weights.dtype == np.float64
    assert result.n_iter.shape == result.gap.shape == result.converged.shape == (n,)
    assert np.all(result.weights >= 0)
    np.testing.assert_allclose(result.weights.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert np.all((result.n_iter >= min_iter) & (result.n_iter <= max_iter))
    assert result.converged.dtype == bool
    np.testing.assert_array_equal(result.converged, result.gap < eps)
    assert np.all(result.gap >= 0)


@pytest.mark.parametrize('solver', sorted(L2_SOLVERS))
def test_l2_solvers_match_reference(problems, solver):
    T, B = problems
    result = L2_SOLVERS[solver](T @ T.T, B @ T.T, eps=TIGHT_EPS, max_iter=BIG_MAX_ITER)
    check_result_shape(result, len(B), T.shape[0], BIG_MAX_ITER, TIGHT_EPS, min_iter=0)
    # EG stalls at rounding level above a gap of 1e-12; the pairwise steps get there.
    assert solver == 'eg' or result.converged.all()
    stats = compare_l2(T, B, result)
    rel, dx = stats[:, 0], stats[:, 1]
    assert rel.max() <= 1e-6, "worst relative objective excess %.3g" % rel.max()
    assert dx.max() <= 1e-4, "worst weight error %.3g" % dx.max()


def test_eg_solve_kl_matches_reference(problems):
    T, B = problems
    result = eg_solve_kl(T, B, eps=TIGHT_EPS, max_iter=BIG_MAX_ITER)
    check_result_shape(result, len(B), T.shape[0], BIG_MAX_ITER, TIGHT_EPS)
    stats = compare_kl(T, B, result)
    rel, dx = stats[:, 0], stats[:, 1]
    assert rel.max() <= 1e-6, "worst relative objective excess %.3g" % rel.max()
    assert dx.max() <= 1e-4, "worst weight error %.3g" % dx.max()


@pytest.mark.parametrize('loss', ['L2', 'L2-pairwise', 'KL'])
@pytest.mark.parametrize('max_iter', [3, 30, 300])
def test_gap_bounds_suboptimality(problems, loss, max_iter):
    """The returned gap is lambda^T x at the returned x (recomputed here) and bounds
    f(x) - f* from above, also when the solver is stopped early."""
    T, B = problems
    eps = 1e-9
    if loss.startswith('L2'):
        solve = L2_SOLVERS['pairwise' if loss == 'L2-pairwise' else 'eg']
        result = solve(T @ T.T, B @ T.T, eps=eps, max_iter=max_iter)
        stats = compare_l2(T, B, result)
        grads = [l2_gradient(T, b, x) for b, x in zip(B, result.weights)]
        scale = np.array([b @ b for b in B])
    else:
        result = eg_solve_kl(T, B, eps=eps, max_iter=max_iter)
        stats = compare_kl(T, B, result)
        grads = [kl_gradient(T, b, x) for b, x in zip(B, result.weights)]
        scale = np.ones(len(B))
    check_result_shape(result, len(B), T.shape[0], max_iter, eps, min_iter=int(loss != 'L2-pairwise'))
    recomputed = np.array([duality_gap(g, x) for g, x in zip(grads, result.weights)])
    np.testing.assert_allclose(result.gap, recomputed, rtol=1e-6, atol=1e-14 * scale.max())
    excess = stats[:, 2]
    assert np.all(excess <= result.gap + 1e-14 * scale), (excess - result.gap).max()
    assert np.all(excess >= -1e-14 * scale)


@pytest.mark.parametrize('loss', ['L2', 'KL'])
def test_one_iteration_is_not_converged(problems, loss):
    T, B = problems
    if loss == 'L2':
        result = eg_solve_l2(T @ T.T, B @ T.T, eps=TIGHT_EPS, max_iter=1)
    else:
        result = eg_solve_kl(T, B, eps=TIGHT_EPS, max_iter=1)
    np.testing.assert_array_equal(result.n_iter, 1)
    assert not result.converged.any()
    assert np.all(result.gap >= TIGHT_EPS)


@pytest.mark.parametrize('solver', sorted(L2_SOLVERS))
def test_loose_eps_converges_quickly(problems, solver):
    T, B = problems
    result = L2_SOLVERS[solver](T @ T.T, B @ T.T, eps=1e-6, max_iter=BIG_MAX_ITER)
    assert result.converged.all()
    assert result.n_iter.max() < BIG_MAX_ITER
    assert np.all(result.gap < 1e-6)


def test_empty_batch():
    T, _ = random_problems(0)
    for result in (eg_solve_l2(T @ T.T, np.zeros((0, 5))), pairwise_solve_l2(T @ T.T, np.zeros((0, 5))),
                   eg_solve_kl(T, np.zeros((0, 60)))):
        assert result.weights.shape == (0, 5)
        assert result.n_iter.shape == result.gap.shape == result.converged.shape == (0,)


@pytest.mark.parametrize('loss', ['L2', 'L2-pairwise', 'KL'])
def test_result_does_not_depend_on_batch_order(problems, loss):
    T, B = problems
    perm = np.random.default_rng(0).permutation(len(B))
    if loss.startswith('L2'):
        l2 = L2_SOLVERS['pairwise' if loss == 'L2-pairwise' else 'eg']
        solve = lambda rows: l2(T @ T.T, rows @ T.T, eps=TIGHT_EPS, max_iter=2000)
    else:
        solve = lambda rows: eg_solve_kl(T, rows, eps=TIGHT_EPS, max_iter=2000)
    together = solve(B)
    permuted = solve(B[perm])
    np.testing.assert_array_equal(permuted.weights, together.weights[perm])
    np.testing.assert_array_equal(permuted.n_iter, together.n_iter[perm])


@pytest.mark.parametrize('loss', ['L2', 'KL'])
def test_result_does_not_depend_on_batch_composition(loss):
    """A word's weights must not depend on which other words are solved with it: one word at a
    time and all words together agree. The lane pool has a fixed width, so only the rounding of
    XLA's matrix product may differ with a row's position in it (up to ~1e-8 here, for words
    still iterating at the tight eps); a dependence on the batch would show far above that."""
    T, B = random_problems(3, num_words=12)
    if loss == 'L2':
        solve = lambda rows: eg_solve_l2(T @ T.T, rows @ T.T, eps=TIGHT_EPS, max_iter=2000)
    else:
        solve = lambda rows: eg_solve_kl(T, rows, eps=TIGHT_EPS, max_iter=2000)
    together = solve(B)
    alone = [solve(B[i:i + 1]) for i in range(len(B))]
    halves = [solve(B[:5]), solve(B[5:])]
    for name, parts in (('one at a time', alone), ('two batches', halves)):
        weights = np.vstack([r.weights for r in parts])
        gap = np.concatenate([r.gap for r in parts])
        np.testing.assert_allclose(weights, together.weights, rtol=0, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(gap, together.gap, rtol=0.5, atol=1e-9, err_msg=name)


@pytest.mark.parametrize('solver', sorted(L2_SOLVERS))
def test_l2_stops_when_float64_precision_is_exhausted(solver):
    """Both solvers' contract: when no step changes x any more, the problem is "stalled" and
    the lane stops. With an unreachable eps, a problem solved to rounding level must stop well
    before max_iter rather than spin until it."""
    XX = np.array([[1.0, 0.2], [0.2, 1.0]])
    XY = (0.3 * XX[0] + 0.7 * XX[1])[None, :]
    result = L2_SOLVERS[solver](XX, XY, eps=0.0, max_iter=50000)
    np.testing.assert_allclose(result.weights, [[0.3, 0.7]], atol=1e-7)
    assert result.n_iter[0] < 50000, "ran to max_iter with gap %.3g" % result.gap[0]


def test_pairwise_l2_result_does_not_depend_on_the_pool(problems, monkeypatch):
    """The pairwise solver's steps are elementwise and start from a vertex, whose gradient is a
    row of XX exactly: a word's weights, steps and gap are the same bits whatever the pool's
    width, the steps between two checks, the words solved with it and their order."""
    import jax
    from gensim_anchor import recovery
    T, B = problems
    XX, XY = T @ T.T, B @ T.T
    base = pairwise_solve_l2(XX, XY, eps=TIGHT_EPS)
    row = recovery.tuning(jax.default_backend())
    for lanes, steps in ((8, 1), (128, 7), (1, 3)):
        monkeypatch.setitem(row, 'pair_lanes', lanes)
        monkeypatch.setitem(row, 'pair_steps', steps)
        for index in (np.arange(len(B)), np.arange(len(B))[::-1], np.arange(3)):
            other = pairwise_solve_l2(XX, XY[index], eps=TIGHT_EPS)
            np.testing.assert_array_equal(other.weights, base.weights[index])
            np.testing.assert_array_equal(other.n_iter, base.n_iter[index])
            np.testing.assert_array_equal(other.gap, base.gap[index])


def test_pairwise_l2_step_cap_and_vertices(problems):
    """max_iter caps the steps exactly; a word whose row is an anchor's is solved at that
    vertex with no step; a word stopped by the cap reports the gap at its weights."""
    T, B = problems
    XX = T @ T.T
    rows = np.vstack([B, T[2]])
    capped = pairwise_solve_l2(XX, rows @ T.T, eps=TIGHT_EPS, max_iter=3)
    assert np.all(capped.n_iter <= 3)
    assert np.all(capped.n_iter[~capped.converged] == 3)
    grads = [l2_gradient(T, b, x) for b, x in zip(rows, capped.weights)]
    np.testing.assert_allclose(capped.gap, [duality_gap(g, x) for g, x in zip(grads, capped.weights)],
                               rtol=1e-6, atol=1e-15)
    assert capped.n_iter[-1] == 0 and capped.converged[-1]
    np.testing.assert_array_equal(capped.weights[-1], np.eye(len(T))[2])


def test_pairwise_l2_with_a_repeated_anchor_row():
    """Two identical anchor rows make XX singular and the direction between them flat
    (curvature 0): the solver must neither divide by zero nor stall short of the optimum, and
    the two copies together carry the weight the single row carries without the copy."""
    T, B = random_problems(4, num_words=10, K=4)
    twin = np.vstack([T, T[1]])
    single = pairwise_solve_l2(T @ T.T, B @ T.T, eps=TIGHT_EPS)
    double = pairwise_solve_l2(twin @ twin.T, B @ twin.T, eps=TIGHT_EPS)
    assert double.converged.all() and np.all(np.isfinite(double.weights))
    merged = double.weights[:, :4].copy()
    merged[:, 1] += double.weights[:, 4]
    np.testing.assert_allclose(merged, single.weights, rtol=0, atol=1e-5)
    for b, x in zip(B, double.weights):
        assert l2_objective(twin, b, x) <= l2_objective(T, b, reference_l2(T, b)) + 1e-12


def test_pairwise_l2_shares_one_program_for_small_k_and_similar_word_counts(monkeypatch):
    """The pairwise solver pads its words to a power of two (solving only the real ones) and
    fewer than 8 anchors with coordinates no step can enter: 3 or 6 anchors, 70 or 100 words,
    one compiled program. The padding changes nothing: each word's weights are the reference's
    (this module's other pairwise tests run through it too, at K = 4 to 6)."""
    from gensim_anchor import recovery
    shapes = record_calls(monkeypatch, recovery, '_solve_l2_pairwise',
                          lambda XX, XY, *_, **__: XX.shape + XY.shape)
    for seed, K, num_words in ((5, 3, 70), (6, 6, 100)):
        T, B = random_problems(seed, num_words=num_words, K=K)
        result = pairwise_solve_l2(T @ T.T, B @ T.T, eps=TIGHT_EPS)
        check_result_shape(result, num_words, K, DEFAULT_MAX_ITER, TIGHT_EPS, min_iter=0)
        assert result.converged.all()
        stats = compare_l2(T, B, result)
        assert stats[:, 0].max() <= 1e-9 and stats[:, 1].max() <= 1e-6, stats[:, :2].max(axis=0)
    assert shapes == [(8, 8, 128, 8)] * 2


@pytest.mark.parametrize('threads', [2, 3])
def test_pairwise_l2_splits_its_words_between_threads_with_the_same_results(monkeypatch, threads):
    """Enough words (at least _PAIR_SPLIT_ROWS per part) are solved in parts at once, one per
    thread, each a program of its own padded size: the weights, steps and gaps of one program,
    bit for bit; and prefetch loads exactly the programs of those parts."""
    import threading
    from gensim_anchor import _threads, recovery
    T, B = random_problems(7, num_words=2 * recovery._PAIR_SPLIT_ROWS + 500, K=5)
    XX, XY = T @ T.T, B @ T.T
    monkeypatch.setattr(_threads, 'host_threads', lambda: 1)
    whole = pairwise_solve_l2(XX, XY, eps=TIGHT_EPS)
    monkeypatch.setattr(_threads, 'host_threads', lambda: threads)
    runs = record_calls(monkeypatch, recovery, '_run_pairwise', lambda program, XXp, XYp, n, *_: (
        'prefetch' if getattr(program, '__name__', '') == 'prefetch' else 'solve', XYp.shape, int(n),
        threading.current_thread().name))
    split = pairwise_solve_l2(XX, XY, eps=TIGHT_EPS)
    for a, b in zip(whole, split):
        np.testing.assert_array_equal(a, b)
    parts = _threads.row_parts(len(XY), recovery._PAIR_SPLIT_ROWS)
    assert len(parts) == min(threads, 2)  # 8,692 words: at most two parts of at least 4,096
    solves = [r for r in runs if r[0] == 'solve']
    assert sorted(r[2] for r in solves) == sorted(hi - lo for lo, hi in parts)
    assert len({r[3] for r in solves}) == len(parts)  # each on a thread of its own
    del runs[:]
    recovery.prefetch(len(XY), 5)
    assert {r[1:3] for r in runs if r[0] == 'prefetch'} == {r[1:3] for r in solves}


# ----------------------------------------------------------------------------------------------
# project_simplex
# ----------------------------------------------------------------------------------------------

def reference_projection(y):
    """Euclidean projection of one vector onto the simplex: x = max(y - theta, 0) with theta
    the root of sum(max(y - theta, 0)) = 1, found by bisection (the sum is monotone in theta)."""
    lo, hi = y.min() - 1.0, y.max()
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.maximum(y - mid, 0.0).sum() > 1.0:
            lo = mid
        else:
            hi = mid
    return np.maximum(y - 0.5 * (lo + hi), 0.0)


@pytest.mark.parametrize('seed', range(3))
def test_project_simplex_matches_reference(seed):
    rng = np.random.default_rng(seed)
    Y = rng.standard_normal((7, 25)) * rng.choice([0.01, 1.0, 30.0], size=25)
    X = project_simplex(Y, axis=0)
    assert X.shape == Y.shape
    for j in range(Y.shape[1]):
        np.testing.assert_allclose(X[:, j], reference_projection(Y[:, j]), rtol=0, atol=1e-12)
    # axis=1 projects rows; the result is the transpose.
    np.testing.assert_allclose(project_simplex(Y.T, axis=1), X.T, rtol=0, atol=0)


def test_project_simplex_properties():
    rng = np.random.default_rng(5)
    Y = rng.standard_normal((6, 40)) * 3
    X = project_simplex(Y)
    assert np.all(X >= 0)
    np.testing.assert_allclose(X.sum(axis=0), 1.0, rtol=0, atol=1e-12)
    # Idempotent: points of the simplex are their own projections.
    np.testing.assert_allclose(project_simplex(X), X, rtol=0, atol=1e-15)
    P = rng.dirichlet(np.ones(6), size=10).T
    np.testing.assert_allclose(project_simplex(P), P, rtol=0, atol=1e-15)
    # The projection is the closest simplex point: no random simplex point is closer.
    Z = rng.dirichlet(np.ones(6), size=(200,)).T
    for j in range(Y.shape[1]):
        d_proj = np.linalg.norm(Y[:, j] - X[:, j])
        assert np.all(np.linalg.norm(Y[:, [j]] - Z, axis=0) >= d_proj - 1e-12)
    # Shift invariance: adding a constant to a column does not change its projection.
    np.testing.assert_allclose(project_simplex(Y + 5.0), X, rtol=0, atol=1e-12)
    # Edge cases: equal entries give the centre; a dominant entry gives a vertex.
    np.testing.assert_allclose(project_simplex(np.full((4, 1), 7.0)), np.full((4, 1), 0.25), atol=1e-15)
    np.testing.assert_allclose(project_simplex(np.array([[10.0], [0.0], [-1.0]])), [[1.0], [0.0], [0.0]])


def test_project_simplex_does_not_mutate_input():
    Y = np.random.default_rng(6).standard_normal((5, 4))
    Y0 = Y.copy()
    project_simplex(Y)
    project_simplex(Y, axis=1)
    np.testing.assert_array_equal(Y, Y0)


# ----------------------------------------------------------------------------------------------
# The key test: real KOS rows, the solver against the slow references
# ----------------------------------------------------------------------------------------------

KOS_K = 20


@pytest.fixture(scope='module')
def kos_problem(kos_corpus):
    """Q of KOS, K = 20 anchors found as AnchorModel finds them, and the rows of Q-bar of the
    anchors (T) and of a seeded sample of 40 other words (B)."""
    cooc = build_cooccurrence(kos_corpus, num_terms=6906)
    p_w = cooc.row_sums()
    min_df = resolve_min_df(None, cooc.num_docs)
    candidates = np.flatnonzero((cooc.doc_freq >= min_df) & (p_w > 0))
    Y = project_rows(cooc, p_w, candidates, DEFAULT_PROJECTION_DIM, seed=0)
    anchors = candidates[find_anchors(Y, KOS_K).indices]
    rng = np.random.default_rng(2013)
    pool = np.setdiff1d(np.flatnonzero(p_w > 0), anchors)
    words = rng.choice(pool, 40, replace=False)
    T = cooc.rows(anchors) / p_w[anchors, None]
    B = cooc.rows(words) / p_w[words, None]
    return dict(T=T, B=B, words=words, anchors=anchors)


def _report(stats, words):
    worst = np.argsort(-stats[:, 0])[:3]
    return "; ".join("word %d: rel %.3g, |dx| %.3g, gap %.3g" % (words[i], stats[i, 0], stats[i, 1], stats[i, 3])
                     for i in worst)


@pytest.mark.parametrize('solver', sorted(L2_SOLVERS))
def test_kos_l2_matches_reference(kos_problem, solver):
    """RecoverL2 on KOS rows: the vmapped kernelised solver reaches the optimum of the full
    V-dimensional objective ||Q-bar_i - x^T Q-bar_S||^2 (float64 least-squares reference)."""
    T, B, words = kos_problem['T'], kos_problem['B'], kos_problem['words']
    result = L2_SOLVERS[solver](T @ T.T, B @ T.T, eps=TIGHT_EPS, max_iter=BIG_MAX_ITER)
    check_result_shape(result, len(B), KOS_K, BIG_MAX_ITER, TIGHT_EPS, min_iter=0)
    stats = compare_l2(T, B, result)
    assert np.all(stats[:, 2] <= stats[:, 3] + 1e-15), "gap is not an upper bound"
    assert stats[:, 0].max() <= 1e-6, _report(stats, words)
    assert stats[:, 1].max() <= 1e-4, _report(stats, words)


def test_kos_kl_matches_reference(kos_problem):
    """RecoverKL on KOS rows: KL(Q-bar_i || x^T Q-bar_S) over the columns where Q-bar_i > 0.

    Input as recover() prepares it (columns no anchor reaches are zeroed: their term is +inf
    for every x). 32 of the 40 words (one pool of 32 lanes), max_iter 2000: each iteration
    costs O(K V) per lane here, and the solver stalls or reaches the tolerances below long
    before 2000 iterations on these words."""
    T, B, words = kos_problem['T'], kos_problem['B'][:32], kos_problem['words'][:32]
    dead = T.sum(axis=0) <= 0
    B = np.maximum(B, 0.0)
    B[:, dead] = 0.0
    max_iter = 2000
    result = eg_solve_kl(T, B, eps=TIGHT_EPS, max_iter=max_iter)
    check_result_shape(result, len(B), KOS_K, max_iter, TIGHT_EPS)
    stats = compare_kl(T, B, result)
    assert np.all(stats[:, 2] <= stats[:, 3] + 1e-13), "gap is not an upper bound"
    assert stats[:, 0].max() <= 1e-6, _report(stats, words)
    assert stats[:, 1].max() <= 1e-4, _report(stats, words)


def test_eg_pool_settings_do_not_change_results():
    """The steps between two checks of the lane pool (an accelerator setting) change only the
    schedule: every word gets the same iterations and weights. Another pool width changes the
    shapes of the batched products, hence their rounding: the solutions agree to the tolerance."""
    import jax
    import jax.numpy as jnp
    from gensim_anchor.recovery import _solve_kl_eg, _solve_l2
    T, B = random_problems(0)
    with jax.enable_x64(True):
        args = (jnp.asarray(1e-10), jnp.asarray(BIG_MAX_ITER, jnp.int64))
        for solve, data in ((_solve_l2, (jnp.asarray(T @ T.T), jnp.asarray(B @ T.T))),
                            (_solve_kl_eg, (jnp.asarray(T), jnp.asarray(B)))):
            # Both run on the same pool (_pool_solve): the width is compared on one of them.
            for lanes in ((128, 8) if solve is _solve_l2 else (8,)):
                base = [np.asarray(a) for a in solve(*data, *args, lanes=lanes, steps=1)]
                other = [np.asarray(a) for a in solve(*data, *args, lanes=lanes, steps=7)]
                np.testing.assert_array_equal(other[1], base[1])
                np.testing.assert_allclose(other[0], base[0], rtol=0, atol=1e-12)
                if lanes == 128:
                    wide = base
            if solve is _solve_l2:
                np.testing.assert_allclose(base[0], wide[0], rtol=0, atol=1e-4)


def test_newton_kl_pool_width_does_not_change_results(problems, monkeypatch):
    """The Newton solver's lane pool: another width changes the schedule and the shapes of the
    batched products only; every word's certificate holds and the solutions agree."""
    import jax
    from gensim_anchor import recovery
    T, B = problems
    results = {}
    for lanes in (64, 8):
        monkeypatch.setitem(recovery.tuning(jax.default_backend()), 'kl_lanes', lanes)
        results[lanes] = recovery.eg_solve_kl(T, B, eps=1e-10)
        assert results[lanes].converged.all()
    np.testing.assert_allclose(results[8].weights, results[64].weights, rtol=0, atol=1e-4)


# ----------------------------------------------------------------------------------------------
# RecoverKL's projected Newton solver (issue 13): the EG solver it replaced, a semi-synthetic
# corpus, honest certificates
# ----------------------------------------------------------------------------------------------

def test_old_eg_kl_solver_matches_reference(problems):
    """The exponentiated-gradient KL solver, kept for the benchmark, still reaches the optimum."""
    from gensim_anchor.recovery import _eg_solve_kl_eg
    T, B = problems
    result = _eg_solve_kl_eg(T, B, eps=TIGHT_EPS, max_iter=BIG_MAX_ITER)
    check_result_shape(result, len(B), T.shape[0], BIG_MAX_ITER, TIGHT_EPS)
    stats = compare_kl(T, B, result)
    assert stats[:, 0].max() <= 1e-6 and stats[:, 1].max() <= 1e-4


def test_newton_kl_agrees_with_eg_and_slsqp(problems):
    """Newton and EG, both to a tight eps, give the same weights and objective; SLSQP (an
    independent general-purpose method) is never better than Newton."""
    from gensim_anchor.recovery import _eg_solve_kl_eg
    T, B = problems
    new = eg_solve_kl(T, B, eps=1e-9, max_iter=100)
    old = _eg_solve_kl_eg(T, B, eps=1e-9, max_iter=BIG_MAX_ITER)
    # Before the pairwise fallback, a few interior optima stalled (no line-search step decreased
    # f) with gaps above 1e-9.
    assert new.converged.all(), new.gap
    assert new.n_iter.max() <= 10, new.n_iter
    for b, x_new, x_old in zip(B, new.weights, old.weights):
        f_new, f_old = kl_objective(T, b, x_new), kl_objective(T, b, x_old)
        assert abs(f_new - f_old) <= 1e-9
        np.testing.assert_allclose(x_new, x_old, rtol=0, atol=1e-4)
    for b, x in zip(B[:6], new.weights):
        slsqp = scipy.optimize.minimize(
            lambda y: kl_objective(T, b, y), np.full(len(x), 1.0 / len(x)),
            jac=lambda y: kl_gradient(T, b, y), method='SLSQP', bounds=[(1e-15, 1)] * len(x),
            constraints=[{'type': 'eq', 'fun': lambda y: y.sum() - 1.0,
                          'jac': lambda y: np.ones_like(y)}],
            options={'ftol': 1e-15, 'maxiter': 1000})
        assert kl_objective(T, b, x) <= slsqp.fun + 1e-12


def test_newton_kl_handles_rank_deficient_supports():
    """A word whose support is smaller than K (T rank-deficient there: many optima) and a word
    with an empty support converge with an honest gap."""
    T, B = random_problems(4, num_words=6, K=8, V=40)
    B = B.copy()
    B[0, 5:] = 0.0          # 5 columns < K = 8
    B[1, :] = 0.0           # nothing to fit: f = 0 everywhere
    B[2, :] = T[3]          # exactly an anchor row
    result = eg_solve_kl(T, B, eps=1e-7, max_iter=200)
    assert result.converged.all()
    recomputed = [duality_gap(kl_gradient(T, b, x), x) if b.any() else 0.0
                  for b, x in zip(B, result.weights)]
    np.testing.assert_allclose(result.gap, recomputed, rtol=1e-6, atol=1e-14)
    assert kl_objective(T, B[2], result.weights[2]) <= 1e-7


def steep_problems(seed=23, K=6, V=60):
    """Problems whose optimum puts a tiny weight on a topic that alone reaches a few columns,
    with a tiny entry there: the curvature b_j / p_j^2 of those columns reaches 1e10 and more
    (as on 20 Newsgroups, where such words stalled Newton's method)."""
    rng = np.random.RandomState(seed)
    T = rng.dirichlet(np.full(V, 0.3), size=K)
    m = rng.randint(1, 4)
    for c in range(m):
        T[:, c] = 0.0
        T[rng.randint(K), c] = 10 ** rng.uniform(-12, -6)
    T /= T.sum(axis=1, keepdims=True)
    B = []
    for _ in range(8):
        x = rng.dirichlet(np.full(K, 0.5))
        x[rng.randint(K)] = 0.0
        b = x / x.sum() @ T
        b[:m] = 10 ** rng.uniform(-14, -8, size=m)
        B.append(b / b.sum())
    return T, np.array(B)


def test_newton_kl_pairwise_fallback_closes_gaps_newton_cannot():
    """Where no step of Newton's line search decreases f (the step that closes the gap lies below
    the rounding of the full renormalised step), the pairwise fallback still converges: every
    word meets eps with the gap recomputed here, where the solver without the fallback leaves
    a word short of it. Both start from the same points: RecoverL2's weights loosely solved by
    EG, the start that stalled Newton on 20 Newsgroups (from the pairwise L2 solver's start,
    eg_solve_kl's own, these problems no longer stall; its result is checked too)."""
    import functools
    import jax
    from gensim_anchor import recovery
    T, B = steep_problems()
    eps = 1e-7
    result = eg_solve_kl(T, B, eps=eps)
    gaps = [duality_gap(kl_gradient(T, b, x), x) for b, x in zip(B, result.weights)]
    assert result.converged.all() and max(gaps) < eps * (1 + 1e-6), gaps
    np.testing.assert_allclose(result.gap, gaps, rtol=1e-6, atol=1e-14)

    # eg_solve_kl's solve (rows padded as there, the same lanes: the batched float32 Hessian
    # products depend on the shapes) from the EG start, with and without the pairwise step.
    padded = np.vstack([B, np.zeros((-len(B) % recovery._ROW_BUCKET, B.shape[1]))])
    X0 = 0.9 * eg_solve_l2(T @ T.T, padded @ T.T, 1e-6, 200).weights + 0.1 / T.shape[0]

    @functools.partial(jax.jit, static_argnames='lanes')
    def without_fallback(T, B, X0, n, lanes):
        iu = np.triu_indices(T.shape[0])
        TT = (T[iu[0]] * T[iu[1]]).T.astype(np.float32)
        finished = lambda st: (st.gap < eps) | (st.n_iter >= 1000) | st.stalled
        return recovery._pool_solve(functools.partial(recovery._kl_newton_init, T, TT),
                                    functools.partial(recovery._kl_newton_update, T, TT), finished,
                                    (B, X0), n, lanes,
                                    fallback=functools.partial(recovery._kl_line_search, T,
                                                               pairwise=False))

    with jax.enable_x64(True):
        n, lanes = np.int64(len(B)), recovery._kl_lanes()
        x, _, _ = recovery._solve_kl(T, padded, X0, n, np.float64(eps), np.int64(1000), lanes=lanes)
        _, _, old_gap = without_fallback(T, padded, X0, n, lanes=lanes)
    gaps = [duality_gap(kl_gradient(T, b, w), w) for b, w in zip(B, np.asarray(x))]
    assert max(gaps) < eps * (1 + 1e-6), gaps
    if np.max(np.asarray(old_gap)[:len(B)]) < eps:
        # Whether Newton alone stalls here depends on the CPU's float32 rounding of the batched
        # Hessian products (it stalls with AVX2, not with AVX-512): without the stall, the
        # comparison shows nothing, though the solver's own result above was checked.
        pytest.skip("Newton without the fallback did not stall on this CPU (max gap %.3g)"
                    % np.max(np.asarray(old_gap)[:len(B)]))


def test_recover_kl_semi_synthetic_converges_with_honest_gaps():
    """RecoverKL through recover() on a small semi-synthetic corpus: >= 99.9% of the words meet
    the default tolerance within a few Newton iterations, and every reported gap equals
    lambda^T x recomputed here in numpy from the rows of Q-bar (so it bounds f(x) - f*)."""
    from gensim_anchor import synthetic
    from gensim_anchor.recovery import recover
    topics = synthetic.random_topics(400, 8, beta=0.1, random_state=1)
    sc = synthetic.semi_synthetic_corpus(topics, 2000, doc_length=100, add_anchors=True,
                                         random_state=1)
    cooc = build_cooccurrence(list(sc.corpus), num_terms=len(sc.dictionary))
    p_w = cooc.row_sums()
    Y = project_rows(cooc, p_w, np.flatnonzero(p_w > 0), projection_dim=None)
    anchors = np.flatnonzero(p_w > 0)[find_anchors(Y, 8).indices]
    rec = recover(cooc, anchors, 'KL', p_w=p_w)
    solver = rec.solver
    active = np.setdiff1d(np.flatnonzero(p_w > 0), anchors)
    eps = 1e-7
    assert solver.converged[active].mean() >= 0.999
    assert solver.n_iter[active].max() <= 20, np.bincount(solver.n_iter[active])
    T = cooc.rows(anchors) / p_w[anchors, None]
    B = np.maximum(cooc.rows(active) / p_w[active, None], 0.0)
    gaps = np.array([duality_gap(kl_gradient(T, b, x), x) for b, x in zip(B, solver.weights[active])])
    np.testing.assert_allclose(solver.gap[active], gaps, rtol=1e-5, atol=1e-13)
    assert np.all(gaps[solver.converged[active]] < eps * (1 + 1e-5))


def test_recover_refuses_anchors_and_options_that_give_no_answer():
    from gensim_anchor import synthetic
    from gensim_anchor.recovery import recover
    topics = synthetic.random_topics(60, 3, beta=0.1, random_state=2)
    sc = synthetic.semi_synthetic_corpus(topics, 300, doc_length=30, add_anchors=True, random_state=2)
    cooc = build_cooccurrence(list(sc.corpus), num_terms=len(sc.dictionary))
    anchors, V = sc.anchors, cooc.num_terms
    assert recover(cooc, anchors).A.shape == (V, 3)  # the same call, well formed
    with pytest.raises(ValueError, match=r"anchors must be word ids in 0..%d, got %d" % (V - 1, V)):
        recover(cooc, [anchors[0], anchors[1], V])
    with pytest.raises(ValueError, match=r"anchors must be word ids in 0..%d, got -1" % (V - 1)):
        recover(cooc, [anchors[0], -1])  # numpy would anchor a topic on the last word
    with pytest.raises(ValueError, match=r"anchors must be distinct: word %d anchors two topics"
                       % anchors[0]):
        recover(cooc, [anchors[0], anchors[0], anchors[1]])
    with pytest.raises(ValueError, match=r"p_w must have shape \(%d,\)" % V):
        recover(cooc, anchors, p_w=np.ones(3))
    with pytest.raises(ValueError, match=r"eps must be a finite number > 0, got -1"):
        recover(cooc, anchors, eps=-1)
    # max_iter=0 returned all-zero topics for every word that is not an anchor.
    with pytest.raises(ValueError, match=r"max_iter must be >= 1, got 0"):
        recover(cooc, anchors, max_iter=0)
