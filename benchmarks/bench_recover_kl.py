"""RecoverKL before and after issue 13: the exponentiated-gradient solver (``_eg_solve_kl_eg``,
the method before) and the projected Newton solver (``eg_solve_kl``), side by side in one run
on the same Q-bar rows and anchors.

Per corpus: the anchors of an L2 AnchorModel (random_state=0), then both solvers on every
non-anchor word with p(w) > 0, by the blocks of ``recover`` (``_recover_kl_blocks``), with the
default eps and max_iter. Reported: wall time, iterations per word (EG iterations before,
Newton iterations after; the new solver also runs 30 float32 EM steps and a loose RecoverL2
solve per word for its start), share of words with gap < eps, the new gap recomputed here in
numpy, max |x_new - x_old| and the objective difference f_new - f_old per word (f = KL up to
a constant).

Usage::

    python benchmarks/bench_recover_kl.py [--only kos,synthetic,20ng] [--skip-old CORPORA]

Writes benchmarks/results/bench_recover_kl.log as well as stdout. 20NG's old solver is
skipped by default (4x the words of KOS, each 4x longer: over an hour on 2 cores).
"""
import argparse
import gzip
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package
from gensim_anchor import AnchorModel  # noqa: E402
from gensim_anchor.cooccurrence import build_cooccurrence  # noqa: E402
from gensim_anchor.anchors import anchor_rows  # noqa: E402
from gensim_anchor.recovery import _eg_solve_kl_eg, _recover_kl_blocks, eg_solve_kl  # noqa: E402
from gensim_anchor._defaults import DEFAULT_EPS, DEFAULT_MAX_ITER  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / 'shared' / 'data'
LOG = Path(__file__).resolve().parent / 'results' / 'bench_recover_kl.log'
_log_file = None


def say(msg):
    print(msg, flush=True)
    _log_file.write(msg + '\n')
    _log_file.flush()


def kos():
    from gensim.corpora import UciCorpus
    c = UciCorpus(str(DATA / 'uci_kos' / 'docword.kos.txt.gz'), str(DATA / 'uci_kos' / 'vocab.kos.txt.gz'))
    return list(c), c.id2word, 50


def synthetic():
    from gensim_anchor import synthetic as syn
    topics = syn.random_topics(3000, 20, beta=0.1, random_state=0)
    sc = syn.semi_synthetic_corpus(topics, 20000, doc_length=300, add_anchors=True, random_state=0)
    return list(sc.corpus), sc.dictionary, 20


def twenty_ng():
    from gensim.corpora import Dictionary
    with gzip.open(DATA / '20newsgroups' / '20news-bydate.tokens.txt.gz', 'rt', encoding='utf-8') as f:
        docs = [line.split() for line in f]
    d = Dictionary(docs)
    d.filter_extremes(no_below=5, no_above=0.5, keep_n=None)
    return [d.doc2bow(doc) for doc in docs], d, 50


CORPORA = dict(kos=kos, synthetic=synthetic, **{'20ng': twenty_ng})


def objectives(cooc, p_w, T, active, X):
    """f(x) = -sum_{b_j > 0, T_.j reached} b_j log (x^T T)_j and the duality gap, in numpy."""
    live = T.sum(axis=0) > 0
    f, gap = np.zeros(len(active)), np.zeros(len(active))
    for lo in range(0, len(active), 1000):
        words = active[lo:lo + 1000]
        B = np.maximum(cooc.rows(words) / p_w[words, None], 0.0) * live
        P = X[lo:lo + 1000] @ T
        safe = np.where(B > 0, P, 1.0)
        f[lo:lo + 1000] = -np.sum(np.where(B > 0, B * np.log(safe), 0.0), axis=1)
        G = -(np.where(B > 0, B / safe, 0.0) @ T.T)
        gap[lo:lo + 1000] = np.sum(X[lo:lo + 1000] * (G - G.min(axis=1, keepdims=True)), axis=1)
    return f, gap


def run(name, with_old):
    start = time.perf_counter()
    corpus, id2word, K = CORPORA[name]()
    model = AnchorModel(corpus, num_topics=K, id2word=id2word, loss='L2', random_state=0)
    cooc = build_cooccurrence(corpus, num_terms=len(id2word))
    p_w = cooc.row_sums()
    T = anchor_rows(cooc, p_w, model.anchor_groups)
    active = np.flatnonzero(p_w > 0)
    active = active[~np.isin(active, model.anchors)]
    eps = DEFAULT_EPS['KL']
    say("== %s: %d documents, V=%d, K=%d, %d words to solve, eps=%g, max_iter=%d (setup %.0f s)"
        % (name, len(corpus), len(id2word), K, len(active), eps, DEFAULT_MAX_ITER,
           time.perf_counter() - start))
    results = {}
    for label, solve in (('before (EG)', _eg_solve_kl_eg), ('after (Newton)', eg_solve_kl)):
        if label.startswith('before') and not with_old:
            say("%-15s skipped" % label)
            continue
        t = time.perf_counter()
        res = _recover_kl_blocks(cooc, p_w, T, active, eps, DEFAULT_MAX_ITER, solve=solve)
        elapsed = time.perf_counter() - t
        f, gap = objectives(cooc, p_w, T, active, res.weights)
        results[label] = (res, f)
        it = res.n_iter
        say("%-15s %7.1f s  iterations/word mean %.1f median %d p99 %d max %d; converged %.4f%% "
            "(%d of %d); numpy gap max %.3g, share < eps %.4f%%"
            % (label, elapsed, it.mean(), np.median(it), np.percentile(it, 99), it.max(),
               100 * res.converged.mean(), res.converged.sum(), len(it), gap.max(),
               100 * (gap < eps).mean()))
        hist = np.bincount(np.minimum(it, 20) if label.startswith('after') else it // 100)
        say("%-15s histogram of iterations (%s): %s" % ('', 'count per n, last bin >= 20'
            if label.startswith('after') else 'per 100', hist.tolist()))
    if len(results) == 2:
        (old, f_old), (new, f_new) = results['before (EG)'], results['after (Newton)']
        df = f_new - f_old
        say("%-15s max |x_new - x_old| %.3g (median %.3g); f_new - f_old: min %.3g, max %.3g "
            "(words where new is worse by more than eps: %d)"
            % ('difference', np.abs(new.weights - old.weights).max(),
               np.median(np.abs(new.weights - old.weights).max(axis=1)), df.min(), df.max(),
               int((df > eps).sum())))


def main():
    global _log_file
    parser = argparse.ArgumentParser()
    parser.add_argument('--only', default='kos,synthetic,20ng')
    parser.add_argument('--skip-old', default='20ng')
    args = parser.parse_args()
    if not DATA.is_dir():
        sys.exit("shared data not found at %s" % DATA)
    LOG.parent.mkdir(exist_ok=True)
    _log_file = open(LOG, 'a')
    say("# bench_recover_kl.py %s (%s)" % (' '.join(sys.argv[1:]), time.strftime('%Y-%m-%d %H:%M')))
    skip = set(args.skip_old.split(',')) if args.skip_old else set()
    for name in args.only.split(','):
        run(name, name not in skip)


if __name__ == '__main__':
    main()
