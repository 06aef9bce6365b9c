"""The refined model against tomotopy over several seeds, on one split (issue 12's likelihood target).

One fit's held-out likelihood varies from seed to seed by more than the refined model and
tomotopy differ on KOS (three one-call refined fits: -7.3992, -7.3934, -7.3992), so a single
run of each side cannot tell them apart. Here both sides are fitted once per seed on the same
90/10 split of :mod:`bench_dropin` (split seed 0) and scored by the same estimator (the
left-to-right estimator of :mod:`bench_beyond`, its seed 0); only the fit's seed changes:

* ``refined``: ``AnchorModel(train, 50, refine='gibbs', random_state=s)`` (the defaults: burn-in
  by the convergence rule, 200 sweeps at most); with ``--etas``, once per topic-word prior of
  the sampler (``refine_options={'eta': ...}``; ``default`` for the library's); with ``--eps``,
  once per duality-gap tolerance of the start's RecoverL2 (``eps=...``); with
  ``--sweeps``, once per fixed chain length instead of the rule (``num_sweeps=N,
  burn_in=N // 2``); ``--substeps`` sets the sampler's sub-steps; with ``--dedupe EXTRA:OVERLAP``,
  once per pair, from anchors without near-duplicate topics: the anchor fit at K + EXTRA topics
  (the fixed candidate threshold), its topics taken by decreasing p(z), each kept if it shares
  fewer than OVERLAP of its top-20 words with every topic kept before it, until K are kept (the
  largest of the rest fill up if fewer qualify), and those K anchors given as seeded anchors to
  the one-call refined model (``0:21`` is the default's anchors again, through the seeded path);
  with ``--start-power BETA``, once per value, from first assignments drawn from p(z | w)^BETA
  instead of p(z | w) (an experiment: :func:`gensim_anchor.hybrid._start_topics` patched for the
  fit; ``1`` is the default, ``0`` a uniformly random start, ``inf`` each word's most probable
  topic);
  with ``--alpha-start grid``, the refined model whose sampler starts alpha at the grid
  search's (the one-call model's before it skipped the grid): the same anchors (the fixed
  candidate threshold, given explicitly) and chain, as ``AnchorModel(train, 50,
  anchor_min_df=min(100, 5% of documents), random_state=s).refine(train, 'gibbs')``;
* ``vb``: ``AnchorModel(train, 50, refine='vb', random_state=s)`` (gensim's online variational
  Bayes, two passes, from the anchor solution and the grid search's alpha); with ``--alpha-start
  p_z``, the same refinement from alpha = p(z) at concentration 1 instead (the refined model's
  start, which skips the grid): the anchor fit, then ``model.alpha`` set, then
  ``model.refine(train, 'vb')``;
* ``tomotopy``: ``tomotopy.LDAModel(k=50, seed=s)``, 1000 iterations, one thread (as
  :func:`bench_beyond.tomotopy_fit`; ``pip install tomotopy``, not a dependency); with
  ``--etas``, once per topic-word prior (``default``: tomotopy's 0.01); with ``--iterations``,
  once per chain length (each a fit of its own from the start), for the curve of its scores
  against the refined model's ``--sweeps``.

Prints each fit (seconds, held-out log-likelihood per token, unique top-20 words, UMass; for the
refined model also the sweeps its chain ran, and whether the convergence rule had settled) and
the mean and standard deviation per method.

Usage::

    python benchmarks/bench_seeds.py [--corpus kos] [--seeds 0 1 2] [--methods refined vb tomotopy]
                                     [--etas default 0.02] [--sweeps 200 400] [--substeps 8]
                                     [--alpha-start default grid p_z] [--dedupe 10:8 0:21]
                                     [--start-power 1 inf 0] [--iterations 200 1000]
"""
import argparse
import contextlib
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_beyond  # noqa: E402
import bench_dropin  # noqa: E402
from bench_core import machine  # noqa: E402

K = 50


def distinct_anchors(train, dictionary, seed, extra, overlap):
    """The K anchors of ``--dedupe EXTRA:OVERLAP`` (the module docstring), as seeded anchors."""
    import numpy as np
    from gensim_anchor import AnchorModel
    from gensim_anchor.anchors import resolve_min_df
    from gensim_anchor.evaluation import top_words
    model = AnchorModel(train, num_topics=K + extra, id2word=dictionary, random_state=seed,
                        anchor_min_df=resolve_min_df(None, len(train)), alpha='symmetric')
    top = [set(row) for row in top_words(model.get_topics(), 20)]
    kept, rest = [], []
    for k in np.argsort(-np.asarray(model.p_z, dtype=np.float64), kind='stable'):
        if len(kept) < K and all(len(top[k] & top[j]) < overlap for j in kept):
            kept.append(k)
        else:
            rest.append(k)
    kept += rest[:K - len(kept)]
    return [[model.id2word[w] for w in model.anchor_groups[k]] for k in sorted(kept)]


@contextlib.contextmanager
def start_power(power):
    """The sampler's first assignments drawn from p(z | w)^power (``--start-power``): the
    library's start weights (each word's row scaled to a maximum of 1) raised to ``power``;
    ``inf`` puts all of a word's weight on its most probable topic, ``0`` spreads it evenly."""
    import numpy as np
    from gensim_anchor import hybrid
    plain = hybrid._start_topics

    def powered(topics, weights):
        start_t = plain(topics, weights).astype(np.float64)
        if math.isinf(power):
            start_t = np.eye(start_t.shape[1])[np.argmax(start_t, axis=1)]
        else:
            start_t = start_t ** power
        return start_t.astype(np.float32)

    hybrid._start_topics = plain if power is None else powered
    try:
        yield
    finally:
        hybrid._start_topics = plain


def fit(method, train, dictionary, seed, eta=None, sweeps=None, substeps=None, alpha_start='default',
        eps=None, dedupe=None, power=None, iterations=1000):
    start = time.perf_counter()
    if method == 'refined':
        from gensim_anchor import AnchorModel
        options = {} if eta is None else dict(eta=eta)
        if sweeps is not None:  # a fixed chain: the topics averaged over its second half
            options.update(num_sweeps=sweeps, burn_in=sweeps // 2)
        if substeps is not None:
            options.update(substeps=substeps)
        extra = {} if eps is None else dict(eps=eps)
        if dedupe is not None:
            extra['anchors'] = distinct_anchors(train, dictionary, seed, *dedupe)
        with start_power(power):
            if alpha_start == 'grid':
                from gensim_anchor.anchors import resolve_min_df
                model = AnchorModel(train, num_topics=K, id2word=dictionary, random_state=seed,
                                    anchor_min_df=resolve_min_df(None, len(train)), **extra)
                model.refine(train, 'gibbs', **options)
            else:
                model = AnchorModel(train, num_topics=K, id2word=dictionary, refine='gibbs',
                                    random_state=seed, refine_options=options or None, **extra)
        chain = model.refinement
        note = '  sweeps %d%s' % (chain['num_sweeps'], '' if chain['converged'] else ' (unsettled)')
        return model.get_topics(), model.alpha, time.perf_counter() - start, note
    if method == 'vb':
        from gensim_anchor import AnchorModel
        if alpha_start == 'p_z':  # the anchor fit, then alpha as refine='gibbs' starts it, then refine
            from gensim_anchor.pipeline import refinement_alpha_start
            model = AnchorModel(train, num_topics=K, id2word=dictionary, random_state=seed)
            model.alpha = refinement_alpha_start(model.p_z)
            model.refine(train, 'vb')
        else:
            model = AnchorModel(train, num_topics=K, id2word=dictionary, refine='vb', random_state=seed)
        return model.get_topics(), model.alpha, time.perf_counter() - start, ''
    topics, alpha = bench_beyond.tomotopy_fit(train, len(dictionary), seed, iterations,
                                              **({} if eta is None else dict(eta=eta)))
    return topics, alpha, time.perf_counter() - start, ''


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--corpus', default='kos', choices=['kos', 'nips', '20ng'])
    parser.add_argument('--seeds', nargs='+', type=int, default=[0, 1, 2])
    parser.add_argument('--methods', nargs='+', default=['refined', 'tomotopy'],
                        choices=['refined', 'vb', 'tomotopy'])
    parser.add_argument('--etas', nargs='+', default=['default'],
                        help="the topic-word priors to run the refined model and tomotopy with "
                             "('default': each one's own)")
    parser.add_argument('--sweeps', nargs='+', type=int, default=[None],
                        help="the refined model's chain length (burn-in half of it) instead of "
                             "the convergence rule; one row per length")
    parser.add_argument('--alpha-start', nargs='+', default=['default'], choices=['default', 'grid', 'p_z'],
                        help="where the refinement starts alpha: the library's default, the grid "
                             "search's scale ('refined'), or p(z) at concentration 1 ('vb'); one "
                             "row per choice")
    parser.add_argument('--eps', nargs='+', default=['default'],
                        help="the duality-gap tolerance of the refined model's start (its "
                             "RecoverL2; 'default': the library's); one row per value")
    parser.add_argument('--dedupe', nargs='+', default=['default'],
                        help="EXTRA:OVERLAP pairs: the refined model from anchors without "
                             "near-duplicate topics (the module docstring); one row per pair")
    parser.add_argument('--start-power', nargs='+', default=['default'],
                        help="the refined model's first assignments from p(z | w) to this power "
                             "(1: the library's; 0: uniform; inf: each word's most probable "
                             "topic); one row per value")
    parser.add_argument('--iterations', nargs='+', type=int, default=[1000],
                        help="tomotopy's iterations (default 1000); one row per count, each a fit "
                             "from the start")
    parser.add_argument('--substeps', type=int, default=None,
                        help="the sampler's sub-steps per sweep (default: the library's)")
    args = parser.parse_args(argv)
    for power in args.start_power:
        try:
            valid = power == 'default' or float(power) >= 0
        except ValueError:
            valid = False
        if not valid:
            parser.error("--start-power %s: a power must be a number, 0 or more (or inf)" % power)
    if min(args.iterations) < 1:
        parser.error("--iterations: each count must be 1 or more")
    starts = dict(refined={'default', 'grid'}, vb={'default', 'p_z'})
    for method in set(args.methods) & set(starts):
        if not set(args.alpha_start) & starts[method]:
            parser.error("--alpha-start %s: none applies to %s (%s)"
                         % (' '.join(args.alpha_start), method, ', '.join(sorted(starts[method]))))
    print("$ python benchmarks/bench_seeds.py " + " ".join(argv if argv is not None else sys.argv[1:]))
    print("# %s" % machine(), flush=True)
    corpus, dictionary = bench_dropin.load(args.corpus)
    train, heldout = bench_dropin.split(corpus, 0)
    runs = [(m, eta, n, a, e, d, b) for m in args.methods
            for eta in (args.etas if m in ('refined', 'tomotopy') else ['default'])
            for n in (args.sweeps if m == 'refined' else args.iterations if m == 'tomotopy' else [None])
            for a in ([a for a in args.alpha_start if a in starts[m]] if m in starts else ['default'])
            for e in (args.eps if m == 'refined' else ['default'])
            for d in (args.dedupe if m == 'refined' else ['default'])
            for b in (args.start_power if m == 'refined' else ['default'])]
    for method, eta, sweeps, alpha_start, eps, dedupe, power in runs:
        label = method if eta == 'default' else '%s eta=%s' % (method, eta)
        if eps != 'default':
            label += ' eps=%s' % eps
        if dedupe != 'default':
            label += ' dedupe=%s' % dedupe
        if power != 'default':
            label += ' start^%s' % power
        if sweeps is not None and method == 'refined':
            label += ' %d sweeps' % sweeps
        elif sweeps is not None and method == 'tomotopy' and sweeps != 1000:
            label += ' %d its' % sweeps
        if alpha_start != 'default':
            label += ' alpha from %s' % dict(grid='the grid', p_z='p(z)')[alpha_start]
        if method == 'refined' and args.substeps is not None:
            label += ' substeps=%d' % args.substeps
        rows = []
        for seed in args.seeds:
            topics, alpha, seconds, chain = fit(method, train, dictionary, seed,
                                         None if eta == 'default' else float(eta),
                                         sweeps if method == 'refined' else None,
                                         args.substeps if method == 'refined' else None, alpha_start,
                                         None if eps == 'default' else float(eps),
                                         None if dedupe == 'default' else tuple(map(int, dedupe.split(':'))),
                                         None if power == 'default' else float(power),
                                         sweeps if method == 'tomotopy' else 1000)
            s = bench_beyond.score(topics, alpha, train, heldout, 0)
            rows.append(s)
            print("  %-4s %-9s seed %d  fit %6.1f s  LL/token %.4f  unique %.2f  UMass %.3f%s"
                  % (args.corpus, label, seed, seconds, s['ll'], s['unique'], s['umass'], chain),
                  flush=True)
        ll = [r['ll'] for r in rows]
        print("  %-4s %-9s mean of %d: LL/token %.4f (sd %.4f)  unique %.2f  UMass %.3f"
              % (args.corpus, label, len(rows), statistics.mean(ll),
                 statistics.stdev(ll) if len(ll) > 1 else 0.0,
                 statistics.mean(r['unique'] for r in rows),
                 statistics.mean(r['umass'] for r in rows)), flush=True)


if __name__ == '__main__':
    main()
