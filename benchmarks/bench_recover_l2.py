"""RecoverL2's solvers side by side: the paper's exponentiated gradient (``eg_solve_l2``, eps
1e-7, the authors') and the pairwise solver (``pairwise_solve_l2``) at 1e-7 and at its default
1e-10, on the same kernelised problems; at 1e-10 also with its words in one program instead of
split between threads (``_threads``; the weights must be the same).

Per corpus: the anchors of a default L2 ``AnchorModel`` (random_state=0), then
:math:`XX = \\bar Q_S \\bar Q_S^T` and the rows :math:`\\bar Q_S \\bar Q_i^T` of every
non-anchor word with p(w) > 0, exactly as ``recover`` builds them. Each solver is called once to
compile, then timed over ``--repeat`` calls in the same process (median; the solve alone, the
corpus and Q are built once). Reported: iterations (EG) or pairwise steps per word, share of
words with gap < eps, the objective f - f_EG per word (f = x^T XX x - 2 xy^T x) and
max |x - x_EG|.

``--stability`` also fits Lee's corpus (ships with gensim) and KOS twice, with the implicit and
the dense Q (equal up to rounding), and reports the largest difference of the topics for each
solver: the gap tolerance bounds f, not x, so a solver stopped at a loose gap lets rounding move
the topics.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_recover_l2.py [--only kos,20ng] [--stability]

Writes benchmarks/results/bench_recover_l2.log as well as stdout.
"""
import argparse
import datetime
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # this checkout's package
sys.path.insert(0, str(HERE))
from gensim_anchor import AnchorModel, _threads, recovery  # noqa: E402
from gensim_anchor.anchors import anchor_rows  # noqa: E402
from gensim_anchor.cooccurrence import build_cooccurrence  # noqa: E402

LOG = HERE / 'results' / 'bench_recover_l2.log'


def one_thread(solve):
    """``solve`` with its words in one program (as before session 34), not split between threads."""
    def run(XX, XY, eps):
        saved = _threads.host_threads
        _threads.host_threads = lambda: 1
        try:
            return solve(XX, XY, eps)
        finally:
            _threads.host_threads = saved
    return run


SOLVERS = (('EG, eps 1e-7', recovery.eg_solve_l2, 1e-7),
           ('pairwise, eps 1e-7', recovery.pairwise_solve_l2, 1e-7),
           ('pairwise, eps 1e-10', recovery.pairwise_solve_l2, 1e-10),
           ('pairwise 1e-10, 1 thr', one_thread(recovery.pairwise_solve_l2), 1e-10))
_log_file = None


def say(msg):
    print(msg, flush=True)
    _log_file.write(msg + '\n')
    _log_file.flush()


def lee():
    from gensim import utils
    from gensim.corpora import Dictionary
    from gensim.test.utils import datapath
    texts = [utils.simple_preprocess(line) for line in open(datapath('lee_background.cor'))]
    dictionary = Dictionary(texts)
    dictionary.filter_extremes(no_below=2, no_above=0.5)
    return [dictionary.doc2bow(t) for t in texts], dictionary, 10


def kos():
    import bench_dropin
    corpus, dictionary = bench_dropin.load('kos')
    return corpus, dictionary, 50


def twenty_ng():
    import bench_dropin
    corpus, dictionary = bench_dropin.load('20ng')
    return corpus, dictionary, 50


CORPORA = {'lee': lee, 'kos': kos, '20ng': twenty_ng}


def problems(corpus, dictionary, K):
    model = AnchorModel(corpus, num_topics=K, id2word=dictionary, random_state=0)
    cooc = build_cooccurrence(corpus, num_terms=len(dictionary))
    p_w = cooc.row_sums()
    T = anchor_rows(cooc, p_w, model.anchor_groups)
    active = np.flatnonzero(p_w > 0)
    active = active[~np.isin(active, model.anchors)]
    return T @ T.T, cooc.matmul(T.T)[active] / p_w[active, None]


def compare(name, repeat):
    corpus, dictionary, K = CORPORA[name]()
    XX, XY = problems(corpus, dictionary, K)
    say("== %s: V=%d, K=%d, %d words to solve" % (name, len(dictionary), K, len(XY)))
    f = lambda x: np.einsum('ik,kl,il->i', x, XX, x) - 2.0 * np.einsum('ik,ik->i', XY, x)
    base = None
    for label, solve, eps in SOLVERS:
        solve(XX, XY, eps)  # compile (or load from the compile cache)
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            res = solve(XX, XY, eps)
            times.append(time.perf_counter() - start)
        it = res.n_iter
        line = ("%-20s %6.3f s (median of %d; %s)  per word mean %.1f p99 %d max %d; gap < eps %.4f%%"
                % (label, statistics.median(times), repeat, ' '.join('%.3f' % t for t in times),
                   it.mean(), np.percentile(it, 99), it.max(), 100 * res.converged.mean()))
        if base is None:
            base = res
        if label == 'pairwise, eps 1e-10':
            threaded = res
        elif 'thr' in label:
            line += "; the same weights as on %d threads: %s" % (
                _threads.host_threads(), np.array_equal(res.weights, threaded.weights))
        if res is not base:
            df = f(res.weights) - f(base.weights)
            line += ("; f - f_EG min %.2e max %.2e; max |x - x_EG| %.2e"
                     % (df.min(), df.max(), np.abs(res.weights - base.weights).max()))
        say(line)


def stability(name):
    corpus, dictionary, K = CORPORA[name]()
    saved = recovery.pairwise_solve_l2
    for label, solve, eps in SOLVERS:
        recovery.pairwise_solve_l2 = solve  # recover() calls it for RecoverL2
        try:
            fits = [AnchorModel(corpus, num_topics=K, id2word=dictionary, random_state=0, eps=eps,
                                q_mode=mode) for mode in ('implicit', 'dense')]
        finally:
            recovery.pairwise_solve_l2 = saved
        same = np.array_equal(fits[0].anchors, fits[1].anchors)
        say("%-5s %-20s implicit vs dense Q: anchors %s, topics max |difference| %.2e"
            % (name, label, 'equal' if same else 'DIFFER',
               np.abs(fits[0].get_topics() - fits[1].get_topics()).max()))


def main():
    global _log_file
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--only', default='kos,20ng')
    parser.add_argument('--repeat', type=int, default=3)
    parser.add_argument('--stability', action='store_true')
    args = parser.parse_args()
    LOG.parent.mkdir(exist_ok=True)
    _log_file = open(LOG, 'a')
    commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=HERE, capture_output=True,
                            text=True).stdout.strip()
    say("\n# %s, commit %s (+ working tree): python benchmarks/bench_recover_l2.py %s"
        % (datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ'), commit,
           ' '.join(sys.argv[1:])))
    for name in args.only.split(','):
        compare(name, args.repeat)
    if args.stability:
        for name in ('lee', 'kos'):
            stability(name)


if __name__ == '__main__':
    main()
