"""Compile time of the likelihood's particle filter (``likelihood._filter_batch``: K=10, 2,048
columns, 5 alphas, 64 documents of 64 tokens, the default particles and moves), each XLA setting
in a fresh process with the compilation caches off, compiled twice (two fresh jit wrappers).

Usage::

    python benchmarks/bench_filter_compile.py

Appends to ``benchmarks/results/bench_filter_compile.log``.
"""
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOG = HERE / 'results' / 'bench_filter_compile.log'
FLAGS = ['', '--xla_cpu_use_fusion_emitters=false', '--xla_backend_optimization_level=1']

CHILD = r"""
import time, numpy as np, jax
from gensim_anchor import likelihood as L
raw = L._filter_batch._jitted.__wrapped__
out = []
for _ in range(2):
    def g(beta, shape, scales, ids, counts, seed, doc_index, num_particles, num_moves):
        return raw(beta, shape, scales, ids, counts, seed, doc_index, num_particles, num_moves)
    f = jax.jit(g, static_argnames=('num_particles', 'num_moves'))
    with jax.enable_x64(True):
        args = (np.full((10, 2048), 1 / 2048), np.full(10, 0.1), np.ones(5), np.zeros((64, 64), np.int32),
                np.ones((64, 64), np.int32), np.int64(0), np.zeros(64, np.uint32))
        lowered = f.lower(*args, num_particles=L.DEFAULT_NUM_SAMPLES, num_moves=L.DEFAULT_NUM_MOVES)
        t = time.perf_counter(); lowered.compile(); out.append(time.perf_counter() - t)
print(' '.join('%.2f' % x for x in out))
"""


def main():
    lines = ['# %s  $ python benchmarks/bench_filter_compile.py' % time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())]
    for flags in FLAGS:
        env = dict(os.environ, XLA_FLAGS=flags, GENSIM_ANCHOR_CACHE_DIR='off')
        out = subprocess.run([sys.executable, '-c', CHILD], env=env, capture_output=True, text=True, check=True)
        lines.append('XLA_FLAGS=%-40r compile s: %s' % (flags, out.stdout.strip()))
        print(lines[-1], flush=True)
    with open(LOG, 'a') as log:
        log.write('\n'.join(lines) + '\n')


if __name__ == '__main__':
    main()
