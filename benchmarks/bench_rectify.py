"""Rectification at any vocabulary size (issue 14): plain vs compressed (ENN) vs dense (AP).

Each fit runs in a fresh subprocess (peak RSS is ``ru_maxrss`` of that process, corpus loading
included), on the 90/10 split of :mod:`bench_dropin`, at K=50, and is scored as
:mod:`bench_beyond` (held-out log-likelihood per token by the left-to-right estimator, unique
top-20 words per topic, UMass). Corpora: ``kos``, ``nips`` (pruned, V = 15,239), ``20ng``
(pruned, V = 28,731), ``20ng-raw`` (the tokenised 20 Newsgroups with no pruning,
V = 111,915) and ``20ng-13k`` (the pruned vocabulary cut to its 13,000 most frequent words,
where AP fits in 8 GiB). AP only runs where it fits (``rectify.max_terms()``).

On each corpus where both ENN and AP ran, it also reports how many of the ENN anchors are AP
anchors, and the anchors each has alone with their median document frequency;
``--methods ap enn-ap`` fits ENN again with the AP fit's anchors of the same seed (as seeded
anchors), which tells a difference of the anchors from one of the recovery; ``ap-exact`` and
``enn-exact`` are the AP and ENN fits with FastAnchorWords on the exact rows of Q-bar instead
of their random projection to ``projection_dim`` dimensions (for ENN, the exact K coordinates
of its rank-K rows), which tells the projection's part in a difference of the anchors. ``--seeds`` runs each fit once per
``random_state`` and prints the means: one fit's quality varies from seed to seed by more than
the methods differ (KOS: unique words by about 0.3, held-out likelihood by about 0.004), so
comparisons are of means. ``--refine N`` refines the plain and
the ENN fit by N collapsed Gibbs sweeps and prints the held-out likelihood every ``--every``
sweeps (each point a fresh refine from the same anchor fit, with the fit's ``random_state``, so
every point is an honest fit of that many sweeps; its seconds are the sweeps'; with several
seeds, the mean curve and the ENN-minus-plain differences paired by seed, with their standard
error).

Usage::

    python benchmarks/bench_rectify.py [--corpora kos nips 20ng 20ng-raw 20ng-13k]
        [--methods plain enn ap enn-ap ap-exact enn-exact] [--refine 0] [--every 25] [--ap-max-bytes 12e9] [--seeds 0 1 2]
        [--power-iter N] [--enn-tol 2e-3] [--enn-tol-relative 0.03] [--relaxation 2]
        [--large-fraction 1] [--bayes-counts]
"""
import argparse
import copy
import gzip
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
K = 50
VOCABULARY = {'nips': 15239, '20ng': 28731, '20ng-raw': 111915}  # the larger ones, for the AP's limit
# 'enn-ap': the compressed rectification with the dense (AP) fit's anchors of the same seed
# given as seeded anchors: whether a difference in quality comes from the anchors or from A.
# 'ap-exact', 'enn-exact': no random projection in the anchor search (projection_dim=0; for ENN
# the exact K coordinates of the rank-K Q's rows).
METHODS = {'plain': {}, 'enn': dict(rectify='enn'), 'ap': dict(rectify='ap'), 'enn-ap': dict(rectify='enn'),
           'ap-exact': dict(rectify='ap', projection_dim=0), 'enn-exact': dict(rectify='enn', projection_dim=0)}


def load(name):
    import bench_dropin
    from gensim.corpora import Dictionary
    if name in ('kos', 'nips', '20ng'):
        return bench_dropin.load(name)
    with gzip.open(bench_dropin.DATA / '20newsgroups/20news-bydate.tokens.txt.gz', 'rt',
                   encoding='utf-8') as f:
        docs = [line.split() for line in f]
    dictionary = Dictionary(docs)
    if name == '20ng-13k':
        dictionary.filter_extremes(no_below=5, no_above=0.5, keep_n=None)
        dictionary.filter_extremes(no_below=1, no_above=1.0, keep_n=13000)
    elif name != '20ng-raw':
        raise ValueError(name)
    return [dictionary.doc2bow(d) for d in docs], dictionary


def child(spec):
    """One fit, scored; prints one JSON line."""
    import bench_beyond
    import bench_dropin
    from gensim_anchor import AnchorModel
    from gensim_anchor import rectify
    if spec.get('ap_max_bytes'):
        rectify.MAX_BYTES = int(spec['ap_max_bytes'])
    if spec.get('power_iter'):
        rectify._POWER_ITER = spec['power_iter']
    if spec.get('enn_tol'):  # an absolute tolerance on the negative mass, for every fit
        plain_enn = rectify.rectify_enn
        rectify.rectify_enn = lambda *a, tol=None, **kw: plain_enn(*a, tol=spec['enn_tol'], **kw)
    if spec.get('enn_tol_relative'):
        rectify.ENN_TOL = spec['enn_tol_relative']
    if spec.get('relaxation'):
        rectify.ENN_RELAXATION = spec['relaxation']
    if spec.get('large_fraction'):
        # l at least this fraction of the words with co-occurrences (1: every word's negative
        # entries removed, as the dense AP does); V x l products, so its time grows with it.
        default_count, share = rectify.large_count, spec['large_fraction']
        rectify.large_count = lambda K, V, N: int(min(N, max(default_count(K, V, N), share * N)))
    if spec.get('bayes_counts'):
        # An experiment: Bayes' rule A = Diag(p(w)) C with p(w) the corpus's word frequencies
        # (the statistics' term counts) instead of the rectified Q's row sums.
        import numpy as np
        from gensim_anchor import recovery
        plain_recover, plain_bayes = recovery.recover, recovery._bayes

        def counted_recover(cooc, anchors, *a, **kw):
            p = np.asarray(cooc.term_counts, dtype=np.float64)
            recovery._bayes = lambda C, p_w: plain_bayes(C, p / p.sum())
            try:
                return plain_recover(cooc, anchors, *a, **kw)
            finally:
                recovery._bayes = plain_bayes
        recovery.recover = counted_recover
    enn_runs, traced_enn = [], rectify.rectify_enn  # ENN's iterations and residual, for the row

    def tracing_enn(*a, **kw):
        enn_runs.append(traced_enn(*a, **kw))
        return enn_runs[-1]
    rectify.rectify_enn = tracing_enn
    corpus, dictionary = load(spec['corpus'])
    train, heldout = bench_dropin.split(corpus, 0)
    start = time.perf_counter()
    seeded = [dictionary[i] for i in spec['anchors']] if spec.get('anchors') else None
    model = AnchorModel(train, num_topics=K, id2word=dictionary, random_state=spec.get('seed', 0),
                        anchors=seeded, **METHODS[spec['method']])
    fit = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20  # GiB (Linux: KiB)
    row = dict(spec, V=len(dictionary), fit_s=fit, rss_gib=rss, timings=model.timings,
               anchors=[int(a) for a in model.anchors],
               anchor_words=[dictionary[int(a)] for a in model.anchors],
               anchor_df=[int(dictionary.dfs.get(int(a), 0)) for a in model.anchors],
               enn=[dict(n_iter=r.n_iter, residual=r.residual, tol=r.tol, start=r.start_residual)
                    for r in enn_runs],
               **bench_beyond.score(model.get_topics(), model.alpha, train, heldout, 0))
    curve = []
    for sweeps in range(spec.get('every', 25), spec.get('refine', 0) + 1, spec.get('every', 25)):
        refined = copy.deepcopy(model)
        t = time.perf_counter()
        refined.refine(train, 'gibbs', num_sweeps=sweeps, burn_in=sweeps // 2,
                       random_state=spec.get('seed', 0))
        seconds = time.perf_counter() - t  # the sweeps only, not the held-out scoring
        curve.append(dict(sweeps=sweeps, seconds=seconds,
                          **bench_beyond.score(refined.get_topics(), refined.alpha, train, heldout, 0)))
    row['refine'] = curve
    print('RESULT ' + json.dumps(row), flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--corpora', nargs='+', default=['kos', 'nips', '20ng', '20ng-13k', '20ng-raw'])
    parser.add_argument('--methods', nargs='+', default=['plain', 'enn', 'ap'], choices=list(METHODS),
                        help="'enn-ap': ENN with the anchors of the 'ap' fit of the same seed (list it after 'ap')")
    parser.add_argument('--refine', type=int, default=0)
    parser.add_argument('--every', type=int, default=25)
    parser.add_argument('--ap-max-bytes', type=float, default=0,
                        help='raise rectify.MAX_BYTES (the AP on a larger vocabulary, e.g. NIPS: 12e9)')
    parser.add_argument('--seeds', nargs='+', type=int, default=[0],
                        help="random_state of each fit; with several, the means per method too "
                             "(one fit's unique words vary by about 0.3 and its likelihood by "
                             "about 0.004 from seed to seed on KOS)")
    parser.add_argument('--power-iter', type=int, default=0,
                        help="power iterations of ENN's range finder (default: rectify._POWER_ITER)")
    parser.add_argument('--enn-tol', type=float, default=0,
                        help="ENN's tolerance on the negative mass, absolute (a share of Q) "
                             "instead of the default relative one")
    parser.add_argument('--enn-tol-relative', type=float, default=0,
                        help="ENN's tolerance as a share of the first iterate's negative mass "
                             "(default: rectify.ENN_TOL)")
    parser.add_argument('--bayes-counts', action='store_true',
                        help="an experiment: Bayes' rule with the corpus's word frequencies as "
                             "p(w) instead of the rectified Q's row sums")
    parser.add_argument('--relaxation', type=float, default=0,
                        help="ENN's over-relaxation omega (default: rectify.ENN_RELAXATION)")
    parser.add_argument('--large-fraction', type=float, default=0,
                        help="ENN's l at least this fraction of the words (default: large_count's)")
    parser.add_argument('--child', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(json.loads(args.child))
    from gensim_anchor import rectify
    print("$ python benchmarks/bench_rectify.py " + " ".join(argv if argv is not None else sys.argv[1:]))
    rows = []
    for name in args.corpora:
        for method in args.methods:
            limit = int(args.ap_max_bytes) or None
            dense = METHODS[method].get('rectify') == 'ap'  # 'ap' and 'ap-exact': V x V memory, no refine
            if dense and VOCABULARY.get(name, 0) > rectify.max_terms(limit):
                print("  %-9s %-5s skipped: V exceeds rectify.max_terms() = %d" % (name, method,
                                                                                  rectify.max_terms(limit)))
                continue
            runs = []
            for seed in args.seeds:
                spec = dict(corpus=name, method=method, seed=seed,
                            refine=0 if dense else args.refine,
                            every=args.every, ap_max_bytes=limit, power_iter=args.power_iter,
                            enn_tol=args.enn_tol, enn_tol_relative=args.enn_tol_relative,
                            bayes_counts=args.bayes_counts, relaxation=args.relaxation, large_fraction=args.large_fraction)
                if method == 'enn-ap':
                    ap = [r for r in rows if r['corpus'] == name and r['method'] == 'ap' and r['seed'] == seed]
                    if not ap:
                        print("  %-9s %-6s seed %d skipped: needs the 'ap' fit first (--methods ap enn-ap)"
                              % (name, method, seed))
                        continue
                    spec['anchors'] = ap[0]['anchors']
                row = run_child(spec)
                if row is not None:
                    runs.append(row)
            rows += runs
            if len(runs) > 1:
                print("  %-9s %-5s mean of %d seeds: fit %6.1f s  LL/token %.4f  unique %.2f  "
                      "UMass %.3f" % (name, method, len(runs),
                                      *(sum(r[k] for r in runs) / len(runs)
                                        for k in ('fit_s', 'll', 'unique', 'umass'))), flush=True)
                for i, point in enumerate(runs[0]['refine']):
                    print("      mean refine %4d sweeps: LL/token %.4f  unique %.2f"
                          % (point['sweeps'], *(sum(r['refine'][i][k] for r in runs) / len(runs)
                                                for k in ('ll', 'unique'))), flush=True)
        print_refine_pairs(name, [r for r in rows if r['corpus'] == name])
        for seed in args.seeds:
            by = {r['method']: r for r in rows if r['corpus'] == name and r['seed'] == seed}
            if 'enn' in by and 'ap' in by:
                same = len(set(by['enn']['anchors']) & set(by['ap']['anchors']))
                print("  %-9s anchors (seed %d): %d of %d ENN anchors are AP anchors"
                      % (name, seed, same, K), flush=True)
                for one, other in (('enn', 'ap'), ('ap', 'enn')):
                    theirs = set(by[other]['anchors'])
                    own = [(w, df) for a, w, df in zip(by[one]['anchors'], by[one]['anchor_words'],
                                                       by[one]['anchor_df']) if a not in theirs]
                    if own:
                        print("  %-9s   %s only (median document frequency %d): %s"
                              % (name, one.upper(), statistics.median(df for _, df in own),
                                 ", ".join(w for w, _ in sorted(own))), flush=True)


def print_refine_pairs(name, rows):
    """The refine curves from ENN and plain anchors of the same seeds, paired: ENN minus plain
    per seed, and the mean difference with its standard error, at every point."""
    plain = {r['seed']: r['refine'] for r in rows if r['method'] == 'plain' and r['refine']}
    enn = {r['seed']: r['refine'] for r in rows if r['method'] == 'enn' and r['refine']}
    seeds = sorted(set(plain) & set(enn))
    if len(seeds) < 2:
        return
    for i, point in enumerate(plain[seeds[0]]):
        diff = {k: [enn[s][i][k] - plain[s][i][k] for s in seeds] for k in ('ll', 'unique')}
        print("  %-9s enn - plain, refine %4d sweeps, %d seeds: LL/token %+.4f (s.e. %.4f)  "
              "unique %+.2f (s.e. %.2f)  per seed LL %s"
              % (name, point['sweeps'], len(seeds),
                 *(v for k in ('ll', 'unique') for v in (statistics.mean(diff[k]),
                                                         statistics.stdev(diff[k]) / len(seeds) ** 0.5)),
                 " ".join("%+.4f" % d for d in diff['ll'])), flush=True)


def run_child(spec):
    """One fit in a fresh process; prints its row and returns it (None if it failed)."""
    out = subprocess.run([sys.executable, __file__, '--child', json.dumps(spec)],
                         capture_output=True, text=True)
    name, method = spec['corpus'], spec['method']
    lines = [l for l in out.stdout.splitlines() if l.startswith('RESULT ')]
    if out.returncode or not lines:
        print("  %-9s %-5s FAILED: %s" % (name, method, out.stderr[-2000:]), flush=True)
        return None
    row = json.loads(lines[0][7:])
    print("  %-9s %-5s seed %d V=%6d fit %6.1f s (rectify %5.1f s)  peak RSS %.2f GiB  LL/token %.4f  "
          "unique %.2f  UMass %.3f" % (name, method, spec['seed'], row['V'], row['fit_s'],
                                       row['timings'].get('rectify', 0.0), row['rss_gib'],
                                       row['ll'], row['unique'], row['umass']), flush=True)
    for enn in row.get('enn', []):
        print("      ENN: %d iterations, negative mass %.2e at the start, %.2e left (tolerance %.2e)"
              % (enn['n_iter'], enn['start'], enn['residual'], enn['tol']), flush=True)
    for point in row['refine']:
        print("      refine %4d sweeps (%5.1f s): LL/token %.4f  unique %.2f"
              % (point['sweeps'], point['seconds'], point['ll'], point['unique']), flush=True)
    return row


if __name__ == '__main__':
    main()
