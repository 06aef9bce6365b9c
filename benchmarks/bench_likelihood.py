"""Time of the likelihood estimator (``gensim_anchor.likelihood``) and of the alpha grid search
(``gensim_anchor.dirichlet.fit_alpha_scale``), first and second call.

1,000 KOS training documents (the 90/10 split of :mod:`bench_dropin`, seed 0). The estimator:
K = 50 random topics (Dirichlet(0.1) over the vocabulary), alpha = 0.1, its defaults. The grid
search: on 1,000 and on 300 of those documents with the topics and p(z) of an L2 AnchorModel
(K = 50) trained on the split, its defaults (R = 20, J = 4), and on the 300 with R = 50, J = 8 for
the scale it picks. First calls include the JAX compilation of the shapes they meet.

Then single documents of 1,000 to 1,000,000 tokens (drawn from the KOS word frequencies) with
the same random topics: the estimator's cost per token should not grow with the length (it did,
as the length times the padded length, until the particles' assignments were copied only on
the steps that resample).

Usage::

    python benchmarks/bench_likelihood.py [--long-only | --short-only]

``--short-only`` skips the long documents; with ``PYTHONPATH=<worktree of an earlier commit>``
it times that commit's package with this script.
"""
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_dropin  # noqa: E402
from gensim_anchor import AnchorModel  # noqa: E402
from gensim_anchor.dirichlet import fit_alpha_scale  # noqa: E402
from gensim_anchor.likelihood import document_log_likelihood, log_likelihood_per_token  # noqa: E402

LONG = (1000, 16000, 100000, 1000000)


def main():
    if not bench_dropin.DATA.is_dir():
        sys.exit("shared data not found at %s" % bench_dropin.DATA)
    corpus, dictionary = bench_dropin.load('kos')
    docs = bench_dropin.split(corpus, 0)[0][:1000]
    topics = np.random.default_rng(0).dirichlet(np.full(len(dictionary), 0.1), size=50)
    if '--long-only' not in sys.argv:
        short_documents(corpus, dictionary, docs, topics)
    if '--short-only' not in sys.argv:
        long_documents(corpus, topics)


def long_documents(corpus, topics):
    V = topics.shape[1]
    freq = np.zeros(V)
    for doc in corpus:
        for word, count in doc:
            freq[word] += count
    rng = np.random.default_rng(0)
    for length in LONG:
        words, counts = np.unique(rng.choice(V, length, p=freq / freq.sum()), return_counts=True)
        doc = list(zip(words.tolist(), counts.tolist()))
        for call in ('first', 'second'):
            start = time.perf_counter()
            log_p = document_log_likelihood(topics, np.full(50, 0.1), [doc], random_state=0).log_p[0]
            seconds = time.perf_counter() - start
            print("one document of %d tokens (%d distinct), %s call: %.2f s, %.1f us/token "
                  "(%.4f nats/token)" % (length, len(doc), call, seconds, 1e6 * seconds / length,
                                         log_p / length))


def short_documents(corpus, dictionary, docs, topics):
    print("%d KOS documents, %d tokens, K = 50" % (len(docs), sum(c for d in docs for _, c in d)))
    for call in ('first', 'second'):
        start = time.perf_counter()
        value = log_likelihood_per_token(topics, np.full(50, 0.1), docs, random_state=0)
        print("%s call: %.1f s (%.4f nats/token)" % (call, time.perf_counter() - start, value))
    train = bench_dropin.split(corpus, 0)[0]
    model = AnchorModel(train, num_topics=50, id2word=dictionary, random_state=0)
    curves = {}
    for n, kw, calls in ((1000, {}, ('first', 'second')), (300, {}, ('second',)),
                         (300, dict(num_samples=50, num_moves=8), ('first',))):
        for call in calls:
            start = time.perf_counter()
            fit = fit_alpha_scale(model.get_topics(), model.p_z, train[:n], random_state=0, **kw)
            print("fit_alpha_scale, %d documents, %s, %s call: %.1f s, alpha_0 = %.3g"
                  % (n, kw or 'defaults', call, time.perf_counter() - start, fit.scale))
        if n == 300:
            curves[bool(kw)] = fit.log_likelihood
    tokens = sum(c for d in train[:300] for _, c in d)
    # NaN marks the grid points the coarse-to-fine search did not evaluate.
    print("300 documents: largest difference of the two curves %.4f nats/token"
          % (np.nanmax(np.abs(curves[True] - curves[False])) / tokens))


if __name__ == '__main__':
    main()
