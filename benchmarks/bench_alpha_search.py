"""Where the alpha grid search starts, and how many points it takes (dirichlet.window_search).

For each corpus (KOS, NIPS, 20 Newsgroups; the 90% training split of :mod:`bench_dropin`), each
K of ``--topics`` and each seed of ``--seeds``: the default fit, then the whole grid of its alpha
search evaluated (``fit_alpha_scale(..., exhaustive=True)``) on exactly what the fit scored (its
topics, p(z), the alpha documents of its own sample, its seed and estimator settings). Printed per
fit: the alpha_0 the fit chose, the exhaustive grid's best, alpha_0 / K, whether the curve is
unimodal, and the points :func:`~gensim_anchor.dirichlet.window_search` evaluates on that curve
from :func:`~gensim_anchor.dirichlet.search_start` (the bracketing search it replaced made 12
evaluations of up to 10 distinct points for the default 16-point grid of K = 50: 6, then at
most 4 new ones padded to 6).

Usage::

    python benchmarks/bench_alpha_search.py [--corpora kos nips 20ng] [--topics 20 50 100]
                                            [--seeds 0 1]
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_dropin  # noqa: E402
from bench_core import machine  # noqa: E402
from gensim_anchor import AnchorModel  # noqa: E402
from gensim_anchor._defaults import ALPHA_MOVES, ALPHA_SAMPLES  # noqa: E402
from gensim_anchor._sampling import alpha_documents  # noqa: E402
from gensim_anchor.dirichlet import fit_alpha_scale, search_start, window_search  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--corpora', nargs='+', default=['kos', 'nips', '20ng'])
    parser.add_argument('--topics', nargs='+', type=int, default=[20, 50, 100])
    parser.add_argument('--seeds', nargs='+', type=int, default=[0, 1])
    args = parser.parse_args(argv)
    print("$ python benchmarks/bench_alpha_search.py " + " ".join(argv if argv is not None else sys.argv[1:]))
    print("# %s" % (machine(),))
    rows = []
    for name in args.corpora:
        corpus, id2word = bench_dropin.load(name)
        train, _ = bench_dropin.split(corpus, 0)
        for K in args.topics:
            for seed in args.seeds:
                t = time.perf_counter()
                model = AnchorModel(train, num_topics=K, id2word=id2word, random_state=seed)
                # What pipeline._alpha scored: the same documents, seed and settings.
                docs = alpha_documents(model._sample.docs, model._projection_seed)
                full = fit_alpha_scale(model.get_topics(), model.p_z, docs,
                                       random_state=model._projection_seed, num_samples=ALPHA_SAMPLES,
                                       num_moves=ALPHA_MOVES, exhaustive=True)
                curve, grid = full.log_likelihood, full.grid
                best = int(np.argmax(curve))
                steps = np.diff(curve)
                unimodal = bool(np.all(steps[:best] > 0) and np.all(steps[best:] < 0))
                calls = []
                window = window_search(lambda i: (calls.append(len(i)), curve[i])[1], len(grid),
                                       search_start(grid, K))
                row = dict(name=name, K=K, seed=seed, chosen=float(model.alpha.sum()),
                           best=float(grid[best]), window=float(grid[int(np.nanargmax(window))]),
                           points=sum(calls), unimodal=unimodal)
                rows.append(row)
                print("%-5s K=%3d seed %d  fit chose alpha_0 %.3g, exhaustive best %.3g (%.3f K), "
                      "window search %.3g from %d points %s, unimodal %s  (%.0f s)"
                      % (name, K, seed, row['chosen'], row['best'], row['best'] / K, row['window'],
                         row['points'], calls, unimodal, time.perf_counter() - t), flush=True)
    same = sum(abs(r['chosen'] - r['best']) < 1e-9 * r['best'] for r in rows)
    found = sum(abs(r['window'] - r['best']) < 1e-9 * r['best'] for r in rows)
    points = [r['points'] for r in rows]
    ratios = [r['best'] / r['K'] for r in rows]
    print("%d fits: the fit's alpha_0 is the exhaustive best in %d, the window search finds it in %d, "
          "from %d to %d points (mean %.1f); alpha_0 / K from %.3f to %.3f; %d curves unimodal"
          % (len(rows), same, found, min(points), max(points), np.mean(points), min(ratios),
             max(ratios), sum(r['unimodal'] for r in rows)))


if __name__ == '__main__':
    main()
