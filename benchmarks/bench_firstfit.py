"""First fit of a process: each fit in a fresh Python process, with and without the compile cache.

Rows, in one run, side by side (issue 12, parts 3 and 4), on one corpus (``--corpus``, default
KOS; K = 50, the defaults):

* ``empty cache``: the first process ever (a fresh, empty cache directory);
* ``cache filled``: the second and third processes on that directory;
* ``cache disabled``: ``GENSIM_ANCHOR_CACHE_DIR=off`` (every process compiles, as before);
* with ``--refined``: the one-call refined model, ``AnchorModel(..., refine='gibbs')`` with the
  refinement's defaults, on the filled cache (twice) and on an empty one;
* ``LdaModel(passes=10)`` on the same documents, the reference.

``--refined-only`` keeps the two refined rows on a filled cache (the first fills it) and
LdaModel's: the ratio of issue 12, in a third of the time.

``--against DIR --pairs N`` compares this tree with another checkout of the package (a ``git
worktree`` of an earlier commit, say): each side fills a cache of its own in a first process,
then N cache-filled processes of each side run in alternation (this tree first in each pair),
so that a drift of the machine's speed falls on both sides alike; it prints every process,
the medians, and the paired differences (this tree minus the other, in the order run).

Each row gives the fit alone (``AnchorModel(...)``: it includes importing JAX, which the model
does on its first fit), the process total (interpreter start to exit, corpus loading included),
the CPU seconds of the fit, the stages (``model.timings``), the peak RSS of the process
(``ru_maxrss``) and a checksum of the topics (the cache must not change them). ``--repeat N``
runs the whole sequence N times and reports the median of each row.

KOS without ``--split`` is the whole corpus (the rows of the log below); with ``--split`` (and
always for NIPS and 20NG, pruned as in ``../shared/data/README.md``) the models are trained on the
seeded 90% of :mod:`bench_dropin` and, with ``--score``, scored after the timing on its held-out
10% (log-likelihood per token, UMass, unique top-20 words).

Usage::

    python benchmarks/bench_firstfit.py --repeat 3 | tee benchmarks/results/bench_firstfit.log
    python benchmarks/bench_firstfit.py --corpus 20ng --refined --score   # issue 12's refined rows
    python benchmarks/bench_firstfit.py --corpus 20ng --refined-only --score   # those rows alone
    python benchmarks/bench_firstfit.py --against ../base --pairs 6   # this tree against ../base
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import hashlib, json, resource, sys, time
start = time.perf_counter()
sys.path.insert(0, sys.argv[4])
import bench_dropin
name, kind, split, score = sys.argv[1], sys.argv[2], sys.argv[3] == 'split', sys.argv[5] == 'score'
corpus, id2word = bench_dropin.load(name)
if split:
    corpus, heldout = bench_dropin.split(corpus, 0)
cpu = lambda: sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
if kind == 'lda':
    from gensim.models import LdaModel
    t, c = time.perf_counter(), cpu()
    model = LdaModel(corpus, num_topics=50, id2word=id2word, passes=10, random_state=0)
    timings, topics, alpha = {}, model.get_topics(), model.alpha
else:
    from gensim_anchor import AnchorModel
    t, c = time.perf_counter(), cpu()
    model = AnchorModel(corpus, num_topics=50, id2word=id2word, random_state=0,
                        refine='gibbs' if kind == 'refined' else None)
    timings, topics, alpha = model.timings, model.get_topics(), model.alpha
fit, fit_cpu = time.perf_counter() - t, cpu() - c
row = dict(fit=fit, fit_cpu=fit_cpu, timings=timings, start=start,
           rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
           topics=hashlib.sha256(topics.tobytes()).hexdigest()[:12])
if kind == 'refined':
    row['sweeps'] = model.refinement['num_sweeps']
if score:
    quality = bench_dropin.score(kind, topics, alpha, model, corpus, heldout, 0)
    row.update(ll=quality['heldout_ll_per_token'], umass=quality['umass'], unique=quality['unique_top20'])
print(json.dumps(row))
"""


def run(corpus, kind, cache, split, score, root=ROOT):
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get('PYTHONPATH', ''))
    env.pop('JAX_COMPILATION_CACHE_DIR', None)
    env['GENSIM_ANCHOR_CACHE_DIR'] = cache
    t = time.perf_counter()
    out = subprocess.run([sys.executable, '-c', CHILD, corpus, kind, 'split' if split else 'all',
                          str(ROOT / 'benchmarks'), 'score' if score else 'no'],
                         env=env, cwd=str(root), capture_output=True, text=True)
    if out.returncode:
        sys.exit("child failed (%s, %s):\n%s" % (corpus, kind, out.stderr[-4000:]))
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row['total'] = time.perf_counter() - t
    return row


def _quality(row):
    if 'll' not in row:
        return ''
    return '  LL/token %.4f  UMass %.3f  unique20 %.2f' % (row['ll'], row['umass'], row['unique'])


def _row_line(name, row):
    return ("%-28s fit %6.2f s  cpu %6.2f s  total %6.2f s  peak RSS %4.0f MB  %s%s  %s%s"
            % (name, row['fit'], row['fit_cpu'], row['total'], row['rss_mb'], row['topics'],
               '  %d sweeps' % row['sweeps'] if 'sweeps' in row else '',
               {k: round(v, 2) for k, v in row['timings'].items()}, _quality(row)))


def against(args, split):
    """``--against``: paired cache-filled processes of this tree and of ``args.against``."""
    other = Path(args.against).resolve()
    if not (other / 'gensim_anchor').is_dir():
        sys.exit("--against %s: no gensim_anchor package there" % other)
    kind = 'refined' if args.refined or args.refined_only else 'anchor'
    sides = {'this tree': ROOT, str(other): other}
    rows = {name: [] for name in sides}
    with tempfile.TemporaryDirectory(prefix='bench-firstfit-') as a, \
            tempfile.TemporaryDirectory(prefix='bench-firstfit-') as b:
        caches = dict(zip(sides, (a, b)))
        for name, root in sides.items():  # each side fills its own cache
            print("# %-26s %s" % ('fills its cache:', _row_line(name, run(args.corpus, kind, caches[name],
                                                                       split, False, root))), flush=True)
        for pair in range(args.pairs):
            for name, root in sides.items():
                row = run(args.corpus, kind, caches[name], split, False, root)
                rows[name].append(row)
                print("# pair %d: %s" % (pair, _row_line(name, row)), flush=True)
    print("\nmedians over %d pairs" % args.pairs)
    for name, rs in rows.items():
        stages = {k: round(statistics.median(r['timings'][k] for r in rs), 3) for k in rs[0]['timings']}
        print("%-28s fit %6.3f s  cpu %6.3f s  peak RSS %4.0f MB  %s" % (
            name, statistics.median(r['fit'] for r in rs), statistics.median(r['fit_cpu'] for r in rs),
            statistics.median(r['rss_mb'] for r in rs), stages))
    mine, theirs = rows.values()
    diff = [x['fit'] - y['fit'] for x, y in zip(mine, theirs)]
    print("this tree minus the other, per pair: fit %s s (median %+.3f; %d of %d faster); peak RSS "
          "%s MB" % (' '.join('%+.3f' % d for d in diff), statistics.median(diff),
                     sum(d < 0 for d in diff), len(diff),
                     ' '.join('%+.0f' % (x['rss_mb'] - y['rss_mb']) for x, y in zip(mine, theirs))))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeat', type=int, default=1)
    parser.add_argument('--corpus', default='kos', choices=['kos', 'nips', '20ng'])
    parser.add_argument('--refined', action='store_true', help="add the rows of refine='gibbs'")
    parser.add_argument('--split', action='store_true', help='train on the 90%% split (always for '
                        'NIPS and 20NG)')
    parser.add_argument('--score', action='store_true', help='score each model on the held-out 10%%')
    parser.add_argument('--no-lda', action='store_true')
    parser.add_argument('--refined-only', action='store_true',
                        help="only the refined rows on a filled cache (and LdaModel): the ratio")
    parser.add_argument('--against', metavar='DIR',
                        help="another checkout: paired cache-filled fits of both trees, alternating")
    parser.add_argument('--pairs', type=int, default=6, help="pairs of processes for --against")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / 'benchmarks'))
    import bench_dropin
    if not bench_dropin.DATA.is_dir():
        sys.exit("shared data not found at %s" % bench_dropin.DATA)
    split = args.split or args.score or args.corpus != 'kos'
    import jax
    print("# bench_firstfit: %s%s, K=50, defaults; jax %s, backend %s, %d CPUs (os.cpu_count), "
          "load average %s at start" % (args.corpus, ' (90% split)' if split else '', jax.__version__,
                                        jax.default_backend(), os.cpu_count(), os.getloadavg()),
          flush=True)
    if args.against:
        against(args, split)
        print("# load average at end %s" % (os.getloadavg(),))
        return
    rows = {}
    for rep in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix='bench-firstfit-') as cache, \
                tempfile.TemporaryDirectory(prefix='bench-firstfit-') as empty:
            sequence = [('empty cache (1st process)', 'anchor', cache),
                        ('cache filled (2nd process)', 'anchor', cache),
                        ('cache filled (3rd process)', 'anchor', cache)]
            if args.refined_only:
                sequence = [('refined, cache filled (1st)', 'refined', cache),
                            ('refined, cache filled (2nd)', 'refined', cache)]
            elif args.refined:
                sequence += [('refined, cache filled (1st)', 'refined', cache),
                             ('refined, cache filled (2nd)', 'refined', cache),
                             ('refined, empty cache', 'refined', empty)]
            if not args.refined_only:
                sequence += [('cache disabled', 'anchor', 'off')]
            if not args.no_lda:
                sequence += [('LdaModel(passes=10)', 'lda', 'off')]
            for name, kind, where in sequence:
                row = run(args.corpus, kind, where, split, args.score)
                rows.setdefault(name, []).append(row)
                print("# repeat %d: %s" % (rep, _row_line(name, row)), flush=True)
    print("\nmedians over %d repeat(s)" % args.repeat)
    print("%-28s %8s %8s %8s %9s  %s" % ('row', 'fit s', 'cpu s', 'total s', 'RSS MB', 'stages (s)'))
    for name, rs in rows.items():
        med = lambda key: statistics.median(r[key] for r in rs)
        stages = {k: round(statistics.median(r['timings'][k] for r in rs), 2) for k in rs[0]['timings']}
        print("%-28s %8.2f %8.2f %8.2f %9.0f  %s" % (name, med('fit'), med('fit_cpu'), med('total'),
                                                  med('rss_mb'), stages))
    if 'LdaModel(passes=10)' in rows and (args.refined or args.refined_only):
        lda = statistics.median(r['fit'] for r in rows['LdaModel(passes=10)'])
        refined = statistics.median(r['fit'] for r in rows['refined, cache filled (2nd)'])
        print("refined (cache filled) / LdaModel(passes=10): %.3f" % (refined / lda))
    print("# load average at end %s" % (os.getloadavg(),))


if __name__ == '__main__':
    main()
