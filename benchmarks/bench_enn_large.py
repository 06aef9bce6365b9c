"""ENN's l (the words whose negative entries it removes), measured two ways (issue 14).

``score``: for each multiple m of the authors' 5 K ln K (978 at K = 50), a rectified fit
``AnchorModel(train, 50, rectify='enn', random_state=0)`` with ``rectify_enn``'s ``num_large``
set to m x 978, scored as :mod:`bench_rectify` (90/10 split of :mod:`bench_dropin`).
``time``: Q compressed once, then ``rectify_enn`` alone for each m (seconds, iterations).

Usage::

    python benchmarks/bench_enn_large.py score nips 1 2 4
    taskset -c 0,1 python benchmarks/bench_enn_large.py time kos 1 4
"""
import functools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_dropin  # noqa: E402
import bench_rectify  # noqa: E402

AUTHORS_L = 978  # ceil(5 K ln K) at K = 50


def main(mode, name, *multiples):
    from gensim_anchor import AnchorModel, rectify as R
    from gensim_anchor.cooccurrence import build_cooccurrence
    corpus, dictionary = bench_rectify.load(name)
    train, heldout = bench_dropin.split(corpus, 0)
    if mode == 'time':
        cooc = build_cooccurrence(train, len(dictionary))
        start = time.perf_counter()
        compression = R.compress(cooc, 50)
        print('%s: compress %.1f s' % (name, time.perf_counter() - start))
        active = cooc.row_sums() > 0
    enn = R.rectify_enn
    for m in map(int, multiples):
        if mode == 'time':
            start = time.perf_counter()
            r = enn(compression, active, num_large=m * AUTHORS_L)
            print('l=%d: %.1f s, n_iter %d, residual %.2e, converged %s' % (
                r.num_large, time.perf_counter() - start, r.n_iter, r.residual, r.converged), flush=True)
            continue
        import bench_beyond
        R.rectify_enn = functools.partial(enn, num_large=m * AUTHORS_L)
        try:
            start = time.perf_counter()
            model = AnchorModel(train, num_topics=50, id2word=dictionary, random_state=0, rectify='enn')
            fit = time.perf_counter() - start
        finally:
            R.rectify_enn = enn
        s = bench_beyond.score(model.get_topics(), model.alpha, train, heldout, 0)
        print('%-9s l=%5d fit %6.1f s rectify %5.1f s  LL %.4f unique %.2f UMass %.3f' % (
            name, m * AUTHORS_L, fit, model.timings['rectify'], s['ll'], s['unique'], s['umass']), flush=True)


if __name__ == '__main__':
    main(*sys.argv[1:])
