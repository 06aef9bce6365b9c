"""Compile time of three programs of a fit, each in a fresh process with the compilation caches
off, compiled twice (two fresh jit wrappers of the same function):

* ``filter``: the likelihood's particle filter (``likelihood._filter_batch``; K=10, 2,048 columns,
  64 rows of 64 tokens, the default particles and moves; before the filter's rows were documents
  at one alpha_0 each, 64 documents at 5 alphas);
* ``l2``: RecoverL2's pairwise solver (``recovery._solve_l2_pairwise``; K=10, 640 words);
* ``anchors``: FastAnchorWords (``anchors._fast_anchor_words``; 288 x 1000, K=8, with cleanup).

Usage::

    python benchmarks/bench_compile.py [--programs filter l2 anchors] [--repo PATH]
                                       [--xla-flags=FLAGS ...]

``--repo`` times another checkout's package (e.g. a ``git worktree`` of an earlier commit);
each ``--xla-flags=...`` is one setting of ``XLA_FLAGS`` (default: none), e.g.
``--xla-flags= --xla-flags=--xla_backend_optimization_level=1``. Appends to
``benchmarks/results/bench_compile.log`` (``bench_filter_compile.log`` holds the filter's
figures of the script this one replaced, the same child program).
"""
import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOG = HERE / 'results' / 'bench_compile.log'

CHILD = r"""
import sys, time, numpy as np, jax
from gensim_anchor import anchors, likelihood, recovery
rng = np.random.default_rng(0)
name = sys.argv[1]
if name == 'filter':
    raw, static = likelihood._filter_batch._jitted.__wrapped__, ('num_particles', 'num_moves')
    args = (np.full((10, 2048), 1 / 2048), np.full(10, 0.1), np.ones(5), np.zeros((64, 64), np.int32),
            np.ones((64, 64), np.int32), np.int64(0), np.zeros(64, np.uint32))
    if 'num_topics' in raw.__code__.co_varnames:  # since 2026-11-29: rows, each with its alpha_0
        args = args[:2] + (np.ones(64),) + args[3:] + (np.int32(10),)
    kwargs = dict(num_particles=likelihood.DEFAULT_NUM_SAMPLES, num_moves=likelihood.DEFAULT_NUM_MOVES)
elif name == 'l2':
    raw, static = recovery._solve_l2_pairwise._jitted.__wrapped__, ('lanes', 'steps')
    T = rng.dirichlet(np.full(200, 0.3), size=10)
    args = (T @ T.T, (rng.dirichlet(np.full(10, 0.5), size=640) @ T) @ T.T, np.float64(1e-10), np.int64(1000))
    if 'count' in raw.__code__.co_varnames:  # since 2026-11-29: padded rows, solved up to count
        args = args[:2] + (np.int64(640),) + args[2:]
    row = recovery.tuning(jax.default_backend())
    kwargs = dict(lanes=row['pair_lanes'], steps=row['pair_steps'])
else:
    raw, static = anchors._fast_anchor_words._jitted.__wrapped__, ('num_topics', 'cleanup')
    args = (rng.random((288, 1000)), np.ones(288, bool), np.zeros(8, np.int32), np.int32(0))
    kwargs = dict(num_topics=8, cleanup=True)
out = []
for _ in range(2):
    fresh = jax.jit(lambda *a, **k: raw(*a, **k), static_argnames=static)
    with jax.enable_x64(True):
        lowered = fresh.lower(*args, **kwargs)
        start = time.perf_counter()
        lowered.compile()
        out.append(time.perf_counter() - start)
print(' '.join('%.2f' % x for x in out))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--programs', nargs='+', default=['filter', 'l2', 'anchors'],
                        choices=['filter', 'l2', 'anchors'])
    parser.add_argument('--repo', default=str(HERE.parent))
    parser.add_argument('--xla-flags', action='append', dest='flags',
                        help="one XLA_FLAGS setting per use (default: one, empty)")
    args = parser.parse_args()
    settings = args.flags or ['']
    repo = Path(args.repo).resolve()
    commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=repo, capture_output=True,
                            text=True).stdout.strip()
    lines = ['# %s  commit %s  $ python benchmarks/bench_compile.py --programs %s%s%s'
             % (time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime()), commit, ' '.join(args.programs),
                '' if repo == HERE.parent else ' --repo <worktree of %s>' % commit,
                ''.join(' --xla-flags=%s' % f for f in args.flags or ()))]
    for flags in settings:
        env = dict(os.environ, GENSIM_ANCHOR_CACHE_DIR='off', PYTHONPATH=str(repo), XLA_FLAGS=flags)
        for name in args.programs:
            out = subprocess.run([sys.executable, '-c', CHILD, name], env=env, cwd=str(repo),
                                 capture_output=True, text=True, check=True)
            lines.append('%-8s %-40s compile s: %s' % (name, 'XLA_FLAGS=%r' % flags, out.stdout.strip()))
            print(lines[-1], flush=True)
    with open(LOG, 'a') as log:
        log.write('\n'.join(lines) + '\n')


if __name__ == '__main__':
    main()
