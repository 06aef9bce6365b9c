"""First fit of a process: KOS, K = 50, the defaults, each fit in a fresh Python process.

Rows, in one run, side by side (issue 12, parts 3 and 4):

* ``empty cache``: the first process ever (a fresh, empty cache directory);
* ``cache filled``: the second and third processes on that directory;
* ``cache disabled``: ``GENSIM_ANCHOR_CACHE_DIR=off`` (every process compiles, as before);
* ``LdaModel(passes=10)`` on the same corpus, the reference.

Each row gives the fit alone (``AnchorModel(...)``: it includes importing JAX, which the model
does on its first fit), the process total (interpreter start to exit, corpus loading included),
the CPU seconds of the fit, the stages (``model.timings``), the peak RSS of the process
(``ru_maxrss``) and a checksum of the topics (the cache must not change them). ``--repeat N``
runs the whole sequence N times and reports the median of each row.

Usage::

    python benchmarks/bench_firstfit.py --repeat 3 | tee benchmarks/results/bench_firstfit.log
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
DATA = ROOT.parent / 'shared' / 'data' / 'uci_kos'

CHILD = r"""
import hashlib, json, resource, sys, time
start = time.perf_counter()
from gensim.corpora import UciCorpus
data = sys.argv[1]
reader = UciCorpus(data + '/docword.kos.txt.gz', data + '/vocab.kos.txt.gz')
corpus = list(reader)
id2word = reader.create_dictionary()
cpu = lambda: sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
if sys.argv[2] == 'lda':
    from gensim.models import LdaModel
    t, c = time.perf_counter(), cpu()
    model = LdaModel(corpus, num_topics=50, id2word=id2word, passes=10, random_state=0)
    timings = {}
else:
    from gensim_anchor import AnchorModel
    t, c = time.perf_counter(), cpu()
    model = AnchorModel(corpus, num_topics=50, id2word=id2word, random_state=0)
    timings = model.timings
fit, fit_cpu = time.perf_counter() - t, cpu() - c
print(json.dumps(dict(fit=fit, fit_cpu=fit_cpu, timings=timings, start=start,
                      rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      topics=hashlib.sha256(model.get_topics().tobytes()).hexdigest()[:12])))
"""


def run(kind, cache):
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get('PYTHONPATH', ''))
    env.pop('JAX_COMPILATION_CACHE_DIR', None)
    env['GENSIM_ANCHOR_CACHE_DIR'] = cache
    t = time.perf_counter()
    out = subprocess.run([sys.executable, '-c', CHILD, str(DATA), kind], env=env, cwd=str(ROOT),
                         capture_output=True, text=True, check=True)
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row['total'] = time.perf_counter() - t
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeat', type=int, default=1)
    args = parser.parse_args()
    if not DATA.is_dir():
        sys.exit("KOS not found at %s" % DATA)
    import jax
    print("# bench_firstfit: KOS, K=50, defaults; jax %s, %d CPUs (os.cpu_count), load average "
          "%s at start" % (jax.__version__, os.cpu_count(), os.getloadavg()))
    rows = {}
    for rep in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix='bench-firstfit-') as cache:
            sequence = [('empty cache (1st process)', 'anchor', cache),
                        ('cache filled (2nd process)', 'anchor', cache),
                        ('cache filled (3rd process)', 'anchor', cache),
                        ('cache disabled', 'anchor', 'off'),
                        ('LdaModel(passes=10)', 'lda', 'off')]
            for name, kind, where in sequence:
                row = run(kind, where)
                rows.setdefault(name, []).append(row)
                print("# repeat %d: %-28s fit %6.2f s  cpu %6.2f s  total %6.2f s  peak RSS %4.0f MB  %s  %s"
                      % (rep, name, row['fit'], row['fit_cpu'], row['total'], row['rss_mb'], row['topics'],
                         {k: round(v, 2) for k, v in row['timings'].items()}), flush=True)
    print("\nmedians over %d repeat(s)" % args.repeat)
    print("%-28s %8s %8s %8s %9s  %s" % ('row', 'fit s', 'cpu s', 'total s', 'RSS MB', 'stages (s)'))
    for name, rs in rows.items():
        med = lambda key: statistics.median(r[key] for r in rs)
        stages = {k: round(statistics.median(r['timings'][k] for r in rs), 2) for k in rs[0]['timings']}
        print("%-28s %8.2f %8.2f %8.2f %9.0f  %s" % (name, med('fit'), med('fit_cpu'), med('total'),
                                                  med('rss_mb'), stages))
    print("# load average at end %s" % (os.getloadavg(),))


if __name__ == '__main__':
    main()
