"""Document-topic inference, one document at a time and in batches: AnchorModel next to
LdaModel on the same documents.

``model[bow]`` in a loop over documents is how gensim's tutorials and much user code read
document topics; its cost per call must not grow with the vocabulary. Timed, after a warm-up
(compilation is not counted: ``bench_firstfit.py`` times first calls):

* ``per doc``: ``model[bow]`` for each of N documents, milliseconds per document;
* ``batch``: ``model.inference(docs)`` on the same N documents, milliseconds per document;

each the best of ``--repeat`` passes.

Corpora: a synthetic one (V = 50,000 words, K = 100 Dirichlet topics, 20,000 documents of 80 tokens;
always run) and, when ``../shared/data`` is there, KOS and 20 Newsgroups (K = 50; the
models are trained on the first 90% of the documents, the timed ones are the rest). Only
inference is compared, so LdaModel is trained for one pass and AnchorModel by its defaults;
the synthetic LdaModel gets the same topics as the AnchorModel (``to_ldamodel``).

Usage::

    python benchmarks/bench_inference.py [--corpora synthetic kos 20ng] [--docs 300] [--repeat 5]

Appends its table to ``benchmarks/results/bench_inference.log``.
"""
import argparse
import datetime
import sys
import time
from pathlib import Path

from gensim.models import LdaModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_dropin  # noqa: E402
from gensim_anchor import AnchorModel  # noqa: E402
from gensim_anchor.synthetic import random_topics, semi_synthetic_corpus  # noqa: E402

LOG = Path(__file__).resolve().parent / 'results' / 'bench_inference.log'


def synthetic(seed):
    topics = random_topics(50_000, 100, beta=0.05, random_state=seed)
    synth = semi_synthetic_corpus(topics, 20_000, doc_length=80, alpha=0.1, random_state=seed)
    corpus = list(synth.corpus)
    cut = int(0.9 * len(corpus))
    return corpus[:cut], corpus[cut:], synth.dictionary


def real(name, seed):
    corpus, dictionary = bench_dropin.load(name)
    train, heldout = bench_dropin.split(corpus, seed)
    return train, heldout, dictionary


def timed(model, docs, repeat=1):
    """Milliseconds per document, the best of ``repeat`` passes each way (a pass of a few hundred
    calls lasts a fraction of a second: one pass is at the mercy of the machine's noise)."""
    for doc in docs:  # warm-up: each padded shape compiles once (bench_firstfit.py times that)
        model[doc]
    model.inference(docs)
    per_doc, batch = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        for doc in docs:
            model[doc]
        per_doc.append((time.perf_counter() - start) * 1e3 / len(docs))
        start = time.perf_counter()
        model.inference(docs)
        batch.append((time.perf_counter() - start) * 1e3 / len(docs))
    return min(per_doc), min(batch)


def run(name, num_docs, seed, repeat=1):
    train, heldout, dictionary = synthetic(seed) if name == 'synthetic' else real(name, seed)
    K = 100 if name == 'synthetic' else 50
    # Most of the synthetic vocabulary is rare: candidates from 20 documents up.
    anchor = AnchorModel(train, num_topics=K, id2word=dictionary, random_state=seed,
                         anchor_min_df=20 if name == 'synthetic' else None)
    if name == 'synthetic':
        lda = anchor.to_ldamodel()
    else:
        lda = LdaModel(train, num_topics=K, id2word=dictionary, passes=1, random_state=seed,
                       eval_every=None)
    docs = [doc for doc in heldout if doc][:num_docs]
    rows = []
    for label, model in (('AnchorModel', anchor), ('LdaModel', lda)):
        per_doc, batch = timed(model, docs, repeat)
        rows.append((name, len(dictionary), K, len(docs), label, per_doc, batch))
        print("  %s %s: %.3f ms per model[bow], %.3f ms per document in a batch"
              % (name, label, per_doc, batch), flush=True)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--corpora', nargs='+', default=['synthetic', 'kos', '20ng'],
                        choices=['synthetic', 'kos', '20ng'])
    parser.add_argument('--docs', type=int, default=300)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--repeat', type=int, default=5,
                        help='passes per timing, the best kept')
    parser.add_argument('--label', default='', help='a note for the log header (e.g. a commit)')
    args = parser.parse_args(argv)
    names = [n for n in args.corpora if n == 'synthetic' or bench_dropin.DATA.is_dir()]
    rows = [row for name in names for row in run(name, args.docs, args.seed, args.repeat)]
    lines = ["%-10s %7s %4s %5s %-12s %12s %12s" % ('corpus', 'V', 'K', 'docs', 'model',
                                                     'ms/model[bow]', 'ms/doc batch')]
    lines += ["%-10s %7d %4d %5d %-12s %12.3f %12.3f" % row for row in rows]
    by = {(r[0], r[4]): r for r in rows}
    for name in names:
        a, b = by[(name, 'AnchorModel')], by[(name, 'LdaModel')]
        lines.append("%-10s AnchorModel / LdaModel: %.2f per model[bow], %.2f in a batch"
                     % (name, a[5] / b[5], a[6] / b[6]))
    text = "\n".join(lines)
    print("\n" + text)
    LOG.parent.mkdir(exist_ok=True)
    with LOG.open('a') as f:
        f.write("# %s  python benchmarks/bench_inference.py %s\n%s\n\n"
                % (datetime.datetime.now().isoformat(timespec='seconds'),
                   " ".join(argv if argv is not None else sys.argv[1:]), text))


if __name__ == '__main__':
    main()
