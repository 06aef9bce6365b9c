"""ENN's l (the words whose negative entries it removes), measured two ways (issue 14).

``score``: for each multiple m of the authors' 5 K ln K (978 at K = 50), a rectified fit
``AnchorModel(train, 50, rectify='enn', random_state=0)`` with ``rectify_enn``'s ``num_large``
set to m x 978, scored as :mod:`bench_rectify` (90/10 split of :mod:`bench_dropin`).
``time``: Q compressed once, then ``rectify_enn`` alone for each m (seconds, iterations).
``relax``: as ``score`` at the default l, for each over-relaxation omega given instead of m
(``rectify_enn``'s ``relaxation``); ``relax-time``: as ``time`` for each omega.
``nystrom``: the projection step of ``rectify_enn`` against two variants of it, on one
compression of the corpus: the lag-free one-step (Nystrom) factor :math:`MBw_k\theta_k^{-1/2}`
(see the ``rectify_enn`` docstring) and a near-exact projection (four products with the
iteration's matrix per iteration); iterations, seconds, and each result's relative Frobenius
distance to the near-exact one's :math:`YY^T`; then, for each seed given, a rectified fit with
the library's step and with the Nystrom factor, scored as ``score``, and the means. It also times
``numpy.linalg.qr`` against ``rectify._orthonormal`` on the compression's V x 75 block.
``compression``: the range finder of ``rectify.compress`` (K = 50, a block of 100, seed 0)
against the exact rank-K truncation of Q (``numpy.linalg.eigh`` of the dense Q: small
vocabularies only), unshifted (the library's) and shifted by the authors' lambda_max / 10, at
each number of power steps given (default 8 and 16): the K-th Ritz value over the K-th
eigenvalue, the relative Frobenius distance of :math:`U\Lambda_+U^T` to the exact truncation,
the negative mass of each (minus the sum of their negative entries), and how many negative
eigenvalues of Q are at least the K-th in magnitude (those that take room in the block). Past
10,000 words only the unshifted Ritz values are printed (their K-th at each q shows the
convergence) with that count among them.

Usage::

    python benchmarks/bench_enn_large.py score nips 1 2 4
    taskset -c 0,1 python benchmarks/bench_enn_large.py time kos 1 4
    python benchmarks/bench_enn_large.py relax kos 1 1.5 2
    python benchmarks/bench_enn_large.py nystrom kos 0 1 2
    python benchmarks/bench_enn_large.py compression kos 8 16
    python benchmarks/bench_enn_large.py compression 20ng-raw 16 40
"""
import functools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_dropin  # noqa: E402
import bench_rectify  # noqa: E402

AUTHORS_L = 978  # ceil(5 K ln K) at K = 50


def enn_variant(compression, active, *, steps, nystrom, tol=None, max_iter=50, seed=0, **_):
    """``rectify.rectify_enn`` (omega = 1) with ``steps`` products per iteration and the factor
    from the last product (``nystrom``) or from the Ritz vectors (the library's, at steps=1)."""
    import numpy as np
    from gensim_anchor import rectify as R
    relative = tol is None  # the library's default: a share of the first negative mass
    U, values = compression.vectors, compression.values
    V, K = U.shape
    e = np.asarray(active, dtype=np.float64)
    N = e.sum()
    l = R.large_count(K, V, int(N))
    b = min(int(N), K + max(10, K // 2))
    rng = np.random.default_rng(seed)
    basis = R._orthonormal(np.hstack([U, rng.standard_normal((V, b - K)) * e[:, None]]))
    Y, it = U * np.sqrt(np.maximum(values, 0.0)), 0
    while True:
        large = np.argsort(-np.einsum('ik,ik->i', Y, Y), kind='stable')[:l]
        EB, residual = R._correction_products(Y, large, basis)
        if it == 0:
            start_residual = residual
            if relative:
                tol = R.enn_tolerance(residual)
        if residual <= tol or it >= max_iter:
            break
        ones_Y = e @ Y
        w = 1.0 - float(ones_Y @ ones_Y) - residual

        def M(B, EB):
            return Y @ (Y.T @ B) + EB + (w / N ** 2) * np.outer(e, e @ B)

        Z = M(basis, EB)
        for _ in range(steps - 1):
            basis = R._orthonormal(Z)
            Z = M(basis, R._correction_products(Y, large, basis)[0])
        T = basis.T @ Z
        theta, W = np.linalg.eigh((T + T.T) / 2)
        order = np.argsort(theta)[::-1][:K]
        if nystrom:
            Y_new = (Z @ W[:, order]) / np.sqrt(np.maximum(theta[order], 1e-300))
        else:
            Y_new = (basis @ W[:, order]) * np.sqrt(np.maximum(theta[order], 0.0))
        basis = R._orthonormal(Z)
        Y = Y_new / max(float(np.linalg.norm(e @ Y_new)), 1e-300)
        it += 1
    Y = Y / max(float(np.linalg.norm(e @ Y)), 1e-300)
    return R.ENNRectification(Y, it, 0.0, residual, 0.0, residual <= tol, l, compression, tol,
                              start_residual)


def nystrom(name, seeds):
    import statistics
    import numpy as np
    import bench_beyond
    from gensim_anchor import AnchorModel, rectify as R
    from gensim_anchor.cooccurrence import build_cooccurrence
    corpus, dictionary = bench_rectify.load(name)
    train, heldout = bench_dropin.split(corpus, 0)
    cooc = build_cooccurrence(train, len(dictionary))
    compression = R.compress(cooc, 50)
    active = cooc.row_sums() > 0
    block = np.random.default_rng(0).standard_normal((len(dictionary), 75))
    for label, f in (('numpy.linalg.qr', lambda: np.linalg.qr(block)[0]),
                     ('rectify._orthonormal', lambda: R._orthonormal(block))):
        f()
        start = time.perf_counter()
        for _ in range(10):
            f()
        print('%s: %s of a %d x 75 block %.1f ms' % (name, label, len(dictionary),
                                                     (time.perf_counter() - start) * 100), flush=True)
    results = {}
    for label, run in (('library (Ritz)', lambda: R.rectify_enn(compression, active)),
                       ('Nystrom factor', lambda: enn_variant(compression, active, steps=1, nystrom=True)),
                       ('near-exact (4 products)', lambda: enn_variant(compression, active, steps=4,
                                                                       nystrom=False))):
        start = time.perf_counter()
        r = run()
        results[label] = (r, time.perf_counter() - start)
    exact = results['near-exact (4 products)'][0].Y
    G0 = exact @ exact.T
    for label, (r, seconds) in results.items():
        distance = np.linalg.norm(r.Y @ r.Y.T - G0) / np.linalg.norm(G0)
        print('%s: %-24s %2d iterations %5.2f s (%.3f s each)  residual %.2e  |YY^T - exact| / |exact| %.4f'
              % (name, label, r.n_iter, seconds, seconds / max(r.n_iter, 1), r.residual, distance),
              flush=True)
    enn = R.rectify_enn
    for label, patch in (('library (Ritz)', None),
                         ('Nystrom factor', lambda c, a, **kw: enn_variant(c, a, steps=1, nystrom=True,
                                                                            **kw))):
        rows = []
        for seed in seeds:
            R.rectify_enn = patch or enn
            try:
                model = AnchorModel(train, num_topics=50, id2word=dictionary, random_state=seed,
                                    rectify='enn')
            finally:
                R.rectify_enn = enn
            s = bench_beyond.score(model.get_topics(), model.alpha, train, heldout, 0)
            rows.append(s)
            print('%-9s %-15s seed %d  LL %.4f unique %.2f UMass %.3f'
                  % (name, label, seed, s['ll'], s['unique'], s['umass']), flush=True)
        print('%-9s %-15s mean of %d  LL %.4f unique %.2f UMass %.3f'
              % (name, label, len(rows), statistics.mean(r['ll'] for r in rows),
                 statistics.mean(r['unique'] for r in rows),
                 statistics.mean(r['umass'] for r in rows)), flush=True)


def compression_accuracy(name, steps):
    import numpy as np
    from gensim_anchor import rectify as R
    from gensim_anchor.cooccurrence import build_cooccurrence
    K = 50
    corpus, dictionary = bench_rectify.load(name)
    train, _ = bench_dropin.split(corpus, 0)
    cooc = build_cooccurrence(train, len(dictionary))
    active = cooc.row_sums() > 0
    if len(dictionary) > 10000:  # no dense eigh: the unshifted Ritz values, and their convergence
        for q in steps:
            theta, _ = R._range_finder(cooc, active, 2 * K, q, 0.0, 0)
            print('%s: V=%d, unshifted q=%2d: Ritz values largest %.3e, K-th %.6e, smallest %.3e; '
                  '%d negative ones at least the K-th in magnitude (crowded: %s)' % (
                      name, len(dictionary), q, theta[0], theta[K - 1], theta[-1],
                      int(np.sum(-theta >= theta[K - 1])), R._crowded(theta, K, 2 * K)), flush=True)
        return
    Q = cooc.to_dense()
    w, X = np.linalg.eigh(Q)
    top = np.argsort(w)[::-1][:K]
    exact = (X[:, top] * np.maximum(w[top], 0.0)) @ X[:, top].T
    strong = int(np.sum(-w >= w[top[-1]]))
    print('%s: V=%d, eigenvalues: largest %.3e, K-th %.3e, smallest %.3e; %d negative ones at '
          'least the K-th in magnitude; exact truncation: negative mass %.3e'
          % (name, len(w), w[top[0]], w[top[-1]], w.min(), strong, -exact[exact < 0].sum()), flush=True)
    for shift_label, shift in (('unshifted (library)', 0.0), ("authors' lambda_max/10", w[top[0]] / 10)):
        for q in steps:
            start = time.perf_counter()
            theta, U = R._range_finder(cooc, active, 2 * K, q, shift, 0)
            seconds = time.perf_counter() - start
            C = (U[:, :K] * np.maximum(theta[:K], 0.0)) @ U[:, :K].T
            print('%s: %-22s q=%2d  %.2f s  K-th Ritz value / eigenvalue %.4f  |ULU^T - exact| / '
                  '|exact| %.2e  negative mass %.3e' % (
                      name, shift_label, q, seconds, theta[K - 1] / w[top[-1]],
                      np.linalg.norm(C - exact) / np.linalg.norm(exact), -C[C < 0].sum()), flush=True)


def main(mode, name, *multiples):
    from gensim_anchor import AnchorModel, rectify as R
    if mode == 'nystrom':
        return nystrom(name, [int(m) for m in multiples])
    if mode == 'compression':
        return compression_accuracy(name, [int(m) for m in multiples] or [8, 16])
    from gensim_anchor.cooccurrence import build_cooccurrence
    corpus, dictionary = bench_rectify.load(name)
    train, heldout = bench_dropin.split(corpus, 0)
    relax = mode.startswith('relax')
    if relax:
        mode = 'time' if mode == 'relax-time' else 'score'
    if mode == 'time':
        cooc = build_cooccurrence(train, len(dictionary))
        start = time.perf_counter()
        compression = R.compress(cooc, 50)
        print('%s: compress %.1f s' % (name, time.perf_counter() - start))
        active = cooc.row_sums() > 0
    enn = R.rectify_enn
    for m in map(float if relax else int, multiples):
        option = dict(relaxation=m) if relax else dict(num_large=m * AUTHORS_L)
        label = 'omega=%g' % m if relax else 'l=%5d' % (m * AUTHORS_L)
        if mode == 'time':
            start = time.perf_counter()
            r = enn(compression, active, **option)
            print('%s l=%d: %.1f s, n_iter %d, residual %.2e, converged %s' % (
                label, r.num_large, time.perf_counter() - start, r.n_iter, r.residual, r.converged),
                flush=True)
            continue
        import bench_beyond
        R.rectify_enn = functools.partial(enn, **option)
        try:
            start = time.perf_counter()
            model = AnchorModel(train, num_topics=50, id2word=dictionary, random_state=0, rectify='enn')
            fit = time.perf_counter() - start
        finally:
            R.rectify_enn = enn
        s = bench_beyond.score(model.get_topics(), model.alpha, train, heldout, 0)
        print('%-9s %s fit %6.1f s rectify %5.1f s  LL %.6f unique %.2f UMass %.3f' % (
            name, label, fit, model.timings['rectify'], s['ll'], s['unique'], s['umass']), flush=True)


if __name__ == '__main__':
    main(*sys.argv[1:])
