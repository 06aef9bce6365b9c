"""The Gibbs-refined fit of tests/test_structure.py, over chain seeds: its error against the true
topics, the bound that test holds a CPU to when it has no pinned chain for it.

The corpus and options are the test's (3,000 documents of 60 tokens from 8 random topics over 500
words, ``loss='L2'``, ``anchor_min_df=100``, ``refine(corpus, 'gibbs', num_sweeps=20,
burn_in=10, eta=0.01)``); only ``random_state`` changes. Prints, per seed, the mean L1 distance
to the true topics after matching (:func:`gensim_anchor.evaluation.topic_recovery_l1`, the
measure of the test's bound) of the anchor fit and of
the refined one, and the refined alpha's sum.

Usage::

    python benchmarks/bench_chain_error.py [--seeds 0 1 2 3]

Appends its lines to ``benchmarks/results/bench_chain_error.log``.
"""
import argparse
import platform
import time
from pathlib import Path

import numpy as np

from gensim_anchor import AnchorModel
from gensim_anchor.evaluation import topic_recovery_l1
from gensim_anchor.synthetic import random_topics, semi_synthetic_corpus

HERE = Path(__file__).resolve().parent
LOG = HERE / 'results' / 'bench_chain_error.log'


def _vector_isa():
    """AVX-512 or AVX2 (the rounding families of the test's pins), from /proc/cpuinfo."""
    try:
        flags = Path('/proc/cpuinfo').read_text().split()
    except OSError:
        return 'unknown'
    return 'AVX-512' if 'avx512f' in flags else 'AVX2' if 'avx2' in flags else 'other'


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2, 3])
    args = parser.parse_args()
    truth = random_topics(500, 8, beta=0.1, random_state=3)
    synth = semi_synthetic_corpus(truth, 3000, 60, alpha=0.1, random_state=4)
    lines = ['# %s  %s (%s)  $ python benchmarks/bench_chain_error.py --seeds %s'
             % (time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime()), platform.machine(), _vector_isa(),
                ' '.join(map(str, args.seeds)))]
    for seed in args.seeds:
        model = AnchorModel(synth.corpus, num_topics=8, id2word=synth.dictionary, loss='L2',
                            anchor_min_df=100, random_state=seed)
        anchor = topic_recovery_l1(truth.T, model).mean
        model.refine(synth.corpus, 'gibbs', num_sweeps=20, burn_in=10, eta=0.01)
        refined = topic_recovery_l1(truth.T, model).mean
        lines.append('seed %d  anchor fit L1 %.4f  refined L1 %.4f  alpha sum %.4f'
                     % (seed, anchor, refined, float(np.sum(model.alpha))))
        print(lines[-1], flush=True)
    with open(LOG, 'a') as log:
        log.write('\n'.join(lines) + '\n')


if __name__ == '__main__':
    main()
