"""The refinement's convergence rule: held-out quality against Gibbs sweeps, and where the rule stops.

For each corpus (KOS, NIPS, 20 Newsgroups; the 90/10 seeded split and the held-out estimator of
:mod:`bench_dropin`, K=50) one anchor fit (defaults), then:

* **the curve**: one collapsed Gibbs chain of ``--sweeps`` sweeps (default 200) from the anchor
  solution, recording every 5 sweeps the log joint likelihood per token of the training tokens
  (the rule's measure, held-in) and the running sums of the posterior-mean topics; for each
  checkpoint c, the held-out log-likelihood per token of the topics averaged over sweeps
  (c/2, c] (what ``refine(num_sweeps=c, burn_in=c/2)`` returns) with the chain's alpha at c;
* **the rule**: ``refine(corpus, 'gibbs')`` with the defaults (burn-in by the convergence rule,
  200 sweeps at most): sweeps used, seconds, held-out log-likelihood, UMass, unique words;
* with ``--window W [W ...]``: from the same chain, for each W the topics averaged over (a, W]
  for a = W/6, W/3, W/2 and 3W/4 (what ``refine(num_sweeps=W, burn_in=a)`` returns), and with
  ``--starts A [A ...]`` for those a instead: where, for a fixed number of sweeps, the average
  should start.

The reference is tomotopy's collapsed Gibbs sampler, 1000 iterations, scored the same way
(``benchmarks/results/bench_beyond.log``: KOS -7.3949, NIPS -7.8579, 20NG -8.0726 with one
thread; -7.3942, -7.8533, -8.0701 with two).

Usage::

    python benchmarks/bench_refine.py [--corpora kos nips 20ng] [--sweeps 200] [--window W ...]
                                      [--starts A ...] [--seed S] [--log PATH]
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
from gensim_anchor._defaults import DEFAULT_ETA, REFINE_CHECK_EVERY  # noqa: E402
from gensim_anchor.evaluation import umass_coherence, unique_words  # noqa: E402
from gensim_anchor.hybrid import _log_joint_fn, gibbs_refine  # noqa: E402
from gensim_anchor.likelihood import log_likelihood_per_token  # noqa: E402

K, SEED = 50, 0
TOMOTOPY = dict(kos=-7.3949, nips=-7.8579, ng20=-8.0726)
CHECKPOINTS = (10, 20, 30, 40, 60, 80, 100, 150, 200)


def window_starts(window, starts=None):
    if starts:
        return sorted(a for a in set(starts) if a < window)
    return sorted({window // 6, window // 3, window // 2, 3 * window // 4})


def score_topics(sums, alpha, train, heldout):
    topics = sums / sums.sum(axis=1, keepdims=True)
    return (log_likelihood_per_token(topics, alpha, heldout, random_state=SEED),
            unique_words(topics, 20).mean(), umass_coherence(topics, train, 20).mean())


def curve(model, train, heldout, sweeps, windows=(), starts=None, seed=SEED):
    """Log joint every 5 sweeps and held-out LL at each checkpoint (topics averaged over the
    second half of the sweeps so far)."""
    V = model.num_terms
    # The sampler's eta: the model's (1/K unless given), as refine() passes it.
    eta = np.float32(model._gibbs_eta(dict(eta=DEFAULT_ETA)))
    wanted = {c for c in CHECKPOINTS if c <= sweeps} | {c // 2 for c in CHECKPOINTS if c <= sweeps}
    for window in windows:
        wanted |= {window, *window_starts(window, starts)}
    prefix, alphas, joint = {0: np.zeros((K, V))}, {}, []
    running = np.zeros((K, V))

    def callback(sweep, state):
        nonlocal running
        n_kw = np.asarray(state['n_kw'], dtype=np.float64)
        running = running + (n_kw + eta) / (n_kw.sum(axis=1, keepdims=True) + V * eta)
        if sweep in wanted:
            prefix[sweep] = running.copy()
            alphas[sweep] = np.asarray(state['alpha'], dtype=np.float64)
        if sweep % REFINE_CHECK_EVERY == 0:
            joint.append((sweep, float(_log_joint_fn()(state['n_dk'], state['n_kw'], state['alpha'], eta))))

    start = time.perf_counter()
    gibbs_refine(model.get_topics(), model.alpha, train, p_z=model.p_z, num_sweeps=sweeps,
                 burn_in=sweeps - 1, eta=float(eta), random_state=seed, callback=callback)
    seconds = time.perf_counter() - start
    points = []
    for c in CHECKPOINTS:
        if c > sweeps:
            continue
        topics = (prefix[c] - prefix[c // 2]) / (c - c // 2)
        topics /= topics.sum(axis=1, keepdims=True)
        points.append((c, log_likelihood_per_token(topics, alphas[c], heldout, random_state=SEED)))
    scored = [(window, a) + score_topics(prefix[window] - prefix[a], alphas[window], train, heldout)
              for window in windows for a in window_starts(window, starts)]
    return joint, points, seconds, scored


def run(name, sweeps, out, windows=(), starts=None, seed=SEED, anchor_min_df=None):
    corpus, dictionary = bench_dropin.load(name)
    train, heldout = bench_dropin.split(corpus, SEED)
    model = AnchorModel(train, num_topics=K, id2word=dictionary, random_state=SEED,
                        anchor_min_df=anchor_min_df)
    anchor_ll = log_likelihood_per_token(model.get_topics(), model.alpha, heldout, random_state=SEED)
    joint, points, seconds, scored = curve(model, train, heldout, sweeps, windows, starts, seed)
    start = time.perf_counter()
    model.refine(train, 'gibbs', random_state=seed)
    rule_seconds = time.perf_counter() - start
    topics = model.get_topics().astype(np.float64)
    rule_ll = log_likelihood_per_token(topics, model.alpha, heldout, random_state=SEED)
    ref = TOMOTOPY['ng20' if name == '20ng' else name]
    out("## %s (K=%d, %d train / %d held-out documents, V=%d)" % (name, K, len(train), len(heldout),
                                                                   model.num_terms))
    out("anchor fit alone: held-out LL/token %.4f; tomotopy (1000 iterations, 1 thread) %.4f" % (anchor_ll, ref))
    out("log joint per token of the training tokens (the rule's measure), every %d sweeps:" % REFINE_CHECK_EVERY)
    out("  " + "  ".join("%d:%.4f" % (s, v) for s, v in joint))
    out("held-out LL/token, topics averaged over sweeps (c/2, c] (chain of %d sweeps, %.1f s):" % (sweeps, seconds))
    for c, ll in points:
        out("  c=%3d  %.4f  (%+.4f vs tomotopy)" % (c, ll, ll - ref))
    if scored:
        out("the same chain, topics averaged over (a, W]:")
    for window, a, ll, unique, umass in scored:
        out("  W=%3d a=%3d  LL/token %.4f  (%+.4f vs tomotopy)  unique top-20 %.2f  UMass %.3f"
            % (window, a, ll, ll - ref, unique, umass))
    r = model.refinement
    out("the rule (defaults): stopped after %d sweeps (burn-in %d, %s) in %.1f s: LL/token %.4f (%+.4f vs "
        "tomotopy), UMass %.3f, unique top-20 %.2f" % (
            r['num_sweeps'], r['burn_in'], 'settled' if r['converged'] else 'not settled: the cap',
            rule_seconds, rule_ll, rule_ll - ref, umass_coherence(topics, train, 20).mean(),
            unique_words(topics, 20).mean()))
    out("")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--corpora', nargs='+', default=['kos', 'nips', '20ng'])
    parser.add_argument('--sweeps', type=int, default=200)
    parser.add_argument('--window', type=int, nargs='+', default=[],
                        help="also score averages over (a, W] of the same chain, a = W/6 ... 3W/4")
    parser.add_argument('--starts', type=int, nargs='+', default=None,
                        help="the a of --window (default W/6, W/3, W/2, 3W/4)")
    parser.add_argument('--seed', type=int, default=SEED, help="the sampler's seed (the fit's is 0)")
    parser.add_argument('--anchor-min-df', type=int, default=None,
                        help="the anchor fit's candidate threshold (default: the adaptive rule)")
    parser.add_argument('--log', default=str(Path(__file__).resolve().parent / 'results' / 'bench_refine.log'))
    args = parser.parse_args(argv)
    if any(w > args.sweeps for w in args.window):
        parser.error("--window must be at most --sweeps")
    lines = []

    def out(line):
        print(line, flush=True)
        lines.append(line)

    out("$ python benchmarks/bench_refine.py " + " ".join(argv if argv is not None else sys.argv[1:]))
    out(str(machine()))
    for name in args.corpora:
        run(name, args.sweeps, out, args.window, args.starts, args.seed, args.anchor_min_df)
    with open(args.log, 'a') as f:
        f.write("\n".join(lines) + "\n\n")


if __name__ == '__main__':
    main()
