"""Drop-in benchmark: AnchorModel next to gensim's LdaModel, all scored the same way.

For each corpus (KOS and 20 Newsgroups from ../shared/data) the documents are split 90/10
(seeded); every model is trained on the 90% and scored on the same held-out 10% with the same
estimator (:func:`gensim_anchor.likelihood.log_likelihood_per_token`, with each model's own
topics and alpha), plus UMass coherence (gensim's ``u_mass``, by
:func:`gensim_anchor.evaluation.umass_coherence`; top 20 words, training corpus) and the number
of top-20 words per topic that are in no other topic's top 20. Also
timed: the alpha grid search of AnchorModel and document-topic inference per 1,000 documents.

Usage::

    python benchmarks/bench_dropin.py [--corpora kos 20ng] [--num-topics 50] [--with-kl]
        [--lda-passes 10] [--json PATH]
"""
import argparse
import gzip
import json
import logging
import sys
import time
from pathlib import Path

import numpy as np
from gensim.corpora import Dictionary, UciCorpus
from gensim.models import LdaModel

from gensim_anchor import AnchorModel
from gensim_anchor.evaluation import umass_coherence, unique_words
from gensim_anchor.likelihood import log_likelihood_per_token

DATA = Path(__file__).resolve().parents[2] / 'shared' / 'data'


def load(name):
    if name == 'kos':
        c = UciCorpus(str(DATA / 'uci_kos' / 'docword.kos.txt.gz'), str(DATA / 'uci_kos' / 'vocab.kos.txt.gz'))
        corpus = list(c)
        return corpus, Dictionary.from_corpus(corpus, id2word=c.id2word)
    tokens = {'20ng': '20newsgroups/20news-bydate.tokens.txt.gz',
              'nips': 'nips_roweis/nips12raw.tokens.txt.gz'}
    if name in tokens:
        # The pruning of ../shared/data/README.md: 20NG V = 28,731, NIPS V = 15,239.
        with gzip.open(DATA / tokens[name], 'rt', encoding='utf-8') as f:
            docs = [line.split() for line in f]
        dictionary = Dictionary(docs)
        dictionary.filter_extremes(no_below=5, no_above=0.5, keep_n=None)
        return [dictionary.doc2bow(d) for d in docs], dictionary
    raise ValueError(name)


def split(corpus, seed):
    """Seeded 90/10 split; held-out documents of fewer than 2 tokens are dropped."""
    order = np.random.default_rng(seed).permutation(len(corpus))
    cut = int(0.9 * len(corpus))
    train = [corpus[i] for i in order[:cut]]
    heldout = [corpus[i] for i in order[cut:] if sum(c for _, c in corpus[i]) >= 2]
    return train, heldout


def score(name, topics, alpha, model, train, heldout, seed):
    start = time.perf_counter()
    ll = log_likelihood_per_token(topics, alpha, heldout, random_state=seed)
    ll_time = time.perf_counter() - start
    umass = umass_coherence(topics, train, 20).mean()  # = CoherenceModel(coherence='u_mass')
    times = []
    for _ in range(2):  # first call includes JIT compilation for AnchorModel
        start = time.perf_counter()
        model.inference(heldout[:1000])
        times.append((time.perf_counter() - start) * 1000.0 / min(1000, len(heldout)))
    return dict(method=name, heldout_ll_per_token=float(ll), umass=float(umass),
                unique_top20=float(unique_words(topics, 20).mean()), infer_s_per_1000_docs=times[1],
                infer_first_call_s_per_1000_docs=times[0], score_s=ll_time)


def run(corpus_name, K, with_kl, lda_passes, seed):
    corpus, dictionary = load(corpus_name)
    train, heldout = split(corpus, seed)
    print("%s: %d training, %d held-out documents, %d terms, K=%d"
          % (corpus_name, len(train), len(heldout), len(dictionary), K), flush=True)
    rows = []
    for loss in ['L2'] + (['KL'] if with_kl else []):
        start = time.perf_counter()
        model = AnchorModel(train, num_topics=K, id2word=dictionary, loss=loss, random_state=seed)
        fit = time.perf_counter() - start
        row = score('AnchorModel %s' % loss, model.get_topics(), model.alpha, model, train, heldout,
                    seed)
        row.update(fit_s=fit, alpha_grid_s=model.timings['dirichlet'], alpha_sum=float(model.alpha.sum()))
        rows.append(row)
        print("  %s done in %.1f s" % (row['method'], fit), flush=True)
    if lda_passes:
        start = time.perf_counter()
        lda = LdaModel(train, num_topics=K, id2word=dictionary, passes=lda_passes, random_state=seed,
                       eval_every=None, alpha='auto')
        fit = time.perf_counter() - start
        row = score('LdaModel passes=%d' % lda_passes, lda.get_topics(), lda.alpha, lda, train,
                    heldout, seed)
        row.update(fit_s=fit, alpha_grid_s=float('nan'), alpha_sum=float(np.sum(lda.alpha)))
        rows.append(row)
        print("  %s done in %.1f s" % (row['method'], fit), flush=True)
    return dict(corpus=corpus_name, K=K, train_docs=len(train), heldout_docs=len(heldout), rows=rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--corpora', nargs='+', default=['kos', '20ng'], choices=['kos', '20ng'])
    parser.add_argument('--num-topics', type=int, default=50)
    parser.add_argument('--with-kl', action='store_true', help='also RecoverKL (slow: minutes)')
    parser.add_argument('--lda-passes', type=int, default=10, help='0 skips LdaModel')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--json', metavar='PATH')
    args = parser.parse_args(argv)
    if not DATA.is_dir():
        sys.exit("shared data not found at %s" % DATA)
    logging.basicConfig(level=logging.WARNING)
    results = [run(name, args.num_topics, args.with_kl, args.lda_passes, args.seed) for name in args.corpora]
    for res in results:
        print("\n%s (K=%d, %d train / %d held-out docs)" % (res['corpus'], res['K'], res['train_docs'],
                                                          res['heldout_docs']))
        print("%-22s %8s %8s %9s %8s %9s %9s %10s %10s" % (
            'method', 'fit s', 'alpha s', 'LL/token', 'UMass', 'unique20', 'alpha0', 'inf s/1k',
            '1st call'))
        for r in res['rows']:
            print("%-22s %8.2f %8.2f %9.4f %8.3f %9.2f %9.3f %10.3f %10.3f" % (
                r['method'], r['fit_s'], r['alpha_grid_s'], r['heldout_ll_per_token'], r['umass'],
                r['unique_top20'], r['alpha_sum'], r['infer_s_per_1000_docs'],
                r['infer_first_call_s_per_1000_docs']))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == '__main__':
    main()
