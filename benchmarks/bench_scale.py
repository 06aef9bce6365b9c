"""Scale benchmark: memory on large vocabularies, streaming throughput, Dask, dense vs implicit Q.

Sections (``--only`` picks some; each configuration runs in a fresh subprocess, so that its peak
RSS, ``ru_maxrss`` = VmHWM, is its own):

``20ng``
    20 Newsgroups (18,846 documents) with its full raw vocabulary (111,915 words) and pruned as
    the data README says (``filter_extremes(no_below=5, no_above=0.5)``: 28,731 words); K=50 L2
    fit. Targets: peak RSS < 4 GB and < 2 GB.
``stream``
    A semi-synthetic corpus (LDA documents drawn from topics and alpha fitted on KOS, K=50,
    V=6,906; Poisson(``--doc-length``) tokens per document), written once as MatrixMarket shards
    (gensim ``MmCorpus``) under ``--workdir`` and streamed from disk. Reported: reading alone
    (gensim's reader), our accumulation alone (the first 100,000 documents already in memory,
    each q_mode), the Q-side pass from disk (implicit), and the full K=50 fit with
    q_mode='auto'. Target: Q-side >= 2M tokens/s per core (wall clock and CPU seconds).
``dask``
    The same shards as a ``dask.bag`` (one partition per shard) on a LocalCluster of 1 and of
    2 worker processes (1 thread each): time to build Q on the workers (reading included) and
    time of the products one L2 fit makes (8 projections of 128 float32 columns, 2 of K float64
    columns, K rows), and the worker processes' CPU seconds (on a loaded machine the busiest
    worker's CPU time shows the split that wall clock hides). Target: >= 1.6x with 2 workers
    on the products.
``kos``
    KOS with q_mode='dense' and 'implicit' side by side: same anchors and topics, cold and warm
    fit time, stage times and peak RSS.
``rule``
    The measurements behind q_mode='auto' (:func:`gensim_anchor.cooccurrence.choose_mode`): the
    Q-side work of one L2 fit (the pass, then the products) in both modes on synthetic corpora
    with V=1,500, documents of u = 10 to 100 distinct words and nnz(H~) / V^2 from 0.1 to 2,
    against the rule's choice. The costs in ``_defaults.Q_COSTS`` were measured on such products.

Timings are wall-clock on whatever machine runs this; on a shared machine they are noisy
(the load average is printed with each section). Generating the 1M-document corpus takes about
a minute and 1.1 GB of disk; the whole run about 5 minutes on an idle 2-core machine.

Usage::

    python benchmarks/bench_scale.py [--only 20ng,stream,dask,kos,rule] [--docs 1000000]
        [--doc-length 100] [--shard-docs 50000] [--dask-docs 200000] [--workdir DIR] [--json PATH]
"""
import argparse
import importlib
import itertools
import json
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_core import _current_rss_mb, _peak_rss_mb, machine  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.normpath(os.path.join(REPO, os.pardir, 'shared', 'data'))
NG20 = os.path.join(DATA, '20newsgroups', '20news-bydate.tokens.txt.gz')
KOS = os.path.join(DATA, 'uci_kos')
SECTIONS = ('20ng', 'stream', 'dask', 'kos', 'rule')
K = 50


# ----------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------

def load_20ng(prune):
    import gzip
    from gensim.corpora import Dictionary
    with gzip.open(NG20, 'rt', encoding='utf-8') as fin:
        dictionary = Dictionary(line.split() for line in fin)
    if prune:
        dictionary.filter_extremes(no_below=5, no_above=0.5, keep_n=None)
    with gzip.open(NG20, 'rt', encoding='utf-8') as fin:
        corpus = [dictionary.doc2bow(line.split()) for line in fin]
    return corpus, dictionary


def load_kos():
    from gensim.corpora import UciCorpus
    reader = UciCorpus(os.path.join(KOS, 'docword.kos.txt.gz'), os.path.join(KOS, 'vocab.kos.txt.gz'))
    return list(reader), reader.id2word


class Shards:
    """The shards of the synthetic corpus read one after another: a stream of documents."""

    def __init__(self, paths):
        self.paths = list(paths)

    def __iter__(self):
        from gensim.corpora import MmCorpus
        for path in self.paths:
            yield from MmCorpus(path)


def read_shard(path):
    from gensim.corpora import MmCorpus
    return list(MmCorpus(path))


def _write_shard(path, docs, words, counts, num_docs, num_terms):
    """MatrixMarket coordinate file, one line per (document, word): what MmCorpus reads."""
    with open(path, 'w') as fout:
        fout.write("%%%%MatrixMarket matrix coordinate real general\n%d %d %d\n"
                   % (num_docs, num_terms, len(docs)))
        for lo in range(0, len(docs), 1 << 20):
            block = zip((docs[lo:lo + (1 << 20)] + 1).tolist(), (words[lo:lo + (1 << 20)] + 1).tolist(),
                        counts[lo:lo + (1 << 20)].tolist())
            fout.write("".join("%d %d %d\n" % line for line in block))


def sample_documents(rng, cum_topics, alpha, lengths):
    """LDA documents, vectorised over tokens: (doc, word, count) triples sorted by doc, word.

    cum_topics: (K, V) cumulative p(w | z) per topic. Inverse-CDF sampling on offset
    cumulative arrays (row r shifted by r) does every document's and topic's draw in one
    ``searchsorted``.
    """
    n, (k, V) = len(lengths), cum_topics.shape
    theta = rng.dirichlet(alpha, size=n)
    cum = np.cumsum(theta, axis=1)
    cum /= cum[:, -1:]
    doc = np.repeat(np.arange(n), lengths)
    z = np.searchsorted((cum + np.arange(n)[:, None]).ravel(), rng.random(len(doc)) + doc) - doc * k
    z = np.minimum(z, k - 1)
    offsets = (cum_topics + np.arange(k)[:, None]).ravel()
    w = np.searchsorted(offsets, rng.random(len(doc)) + z) - z * V
    w = np.clip(w, 0, V - 1)
    keys, counts = np.unique(doc * V + w, return_counts=True)
    return keys // V, keys % V, counts


def generate(workdir, num_docs, doc_length, shard_docs, seed=0):
    """Write the semi-synthetic corpus once (skipped when its shards exist); returns their paths."""
    tag = "lda_kos_d%d_l%d_s%d" % (num_docs, doc_length, shard_docs)
    folder = os.path.join(workdir, tag)
    paths = [os.path.join(folder, "shard%04d.mm" % i) for i in range(-(-num_docs // shard_docs))]
    if all(os.path.isfile(p) for p in paths):
        return paths
    os.makedirs(folder, exist_ok=True)
    topics_file = os.path.join(workdir, 'kos_topics_k%d.npz' % K)
    if not os.path.isfile(topics_file):
        from gensim_anchor import AnchorModel
        corpus, id2word = load_kos()
        model = AnchorModel(corpus, num_topics=K, id2word=id2word, random_state=0)
        np.savez(topics_file, topics=model.get_topics().astype(np.float64), alpha=model.alpha)
    saved = np.load(topics_file)
    topics, alpha = saved['topics'], saved['alpha']
    cum_topics = np.cumsum(topics / topics.sum(axis=1, keepdims=True), axis=1)
    cum_topics[:, -1] = 1.0
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    for i, path in enumerate(paths):
        n = min(shard_docs, num_docs - i * shard_docs)
        lengths = np.maximum(rng.poisson(doc_length, size=n), 2)
        parts = [sample_documents(rng, cum_topics, alpha, lengths[lo:lo + 5000]) for lo in range(0, n, 5000)]
        docs = np.concatenate([d + lo for (d, _, _), lo in zip(parts, range(0, n, 5000))])
        words = np.concatenate([w for _, w, _ in parts])
        counts = np.concatenate([c for _, _, c in parts])
        _write_shard(path + '.tmp', docs, words, counts, n, topics.shape[1])
        os.replace(path + '.tmp', path)
        print("  wrote %s (%d documents, %d tokens, %.0f s so far)"
              % (path, n, counts.sum(), time.perf_counter() - start), file=sys.stderr, flush=True)
    return paths


# ----------------------------------------------------------------------------------------------
# Workers (one configuration per fresh process; each prints one JSON line)
# ----------------------------------------------------------------------------------------------

def _warm_up_imports():
    start = time.perf_counter()
    for name in ('gensim_anchor.anchors', 'gensim_anchor.recovery'):  # the JAX stages: not timed
        importlib.import_module(name)
    return time.perf_counter() - start


def worker_20ng(prune):
    from gensim_anchor import AnchorModel
    import_s = _warm_up_imports()
    start = time.perf_counter()
    corpus, dictionary = load_20ng(prune)
    result = dict(num_docs=len(corpus), num_terms=len(dictionary),
                  nnz=sum(len(d) for d in corpus), tokens=int(sum(c for d in corpus for _, c in d)),
                  load_s=time.perf_counter() - start, import_s=import_s,
                  rss_loaded_mb=_current_rss_mb(), peak_loaded_mb=_peak_rss_mb())
    start = time.perf_counter()
    model = AnchorModel(corpus, num_topics=K, id2word=dictionary, random_state=0, loss='L2')
    result.update(fit_s=time.perf_counter() - start, stages=model.timings,
                  q_mode=model._cooccurrence.mode, peak_rss_mb=_peak_rss_mb())
    return result


def worker_read(paths):
    """gensim's MmCorpus reader alone (the loop does nothing else: no per-pair Python work)."""
    start, cpu = time.perf_counter(), time.process_time()
    docs = nnz = 0
    for doc in Shards(paths):
        docs += 1
        nnz += len(doc)
    return dict(seconds=time.perf_counter() - start, cpu_s=time.process_time() - cpu, docs=docs,
                nnz=nnz, peak_rss_mb=_peak_rss_mb())


def worker_accumulate(paths, num_docs):
    """Our accumulation alone: the first num_docs documents already in memory, in each mode."""
    from gensim_anchor.cooccurrence import build_cooccurrence
    corpus = list(itertools.islice(Shards(paths), num_docs))
    tokens = int(sum(c for d in corpus for _, c in d))
    out = dict(docs=len(corpus), tokens=tokens)
    for mode in ('implicit', 'dense'):
        start, cpu = time.perf_counter(), time.process_time()
        build_cooccurrence(corpus, 6906, mode=mode)
        out[mode + '_s'], out[mode + '_cpu_s'] = time.perf_counter() - start, time.process_time() - cpu
    # Where the implicit pass goes: Python lists -> arrays, sparse chunk, statistics.
    from gensim_anchor import cooccurrence as cm
    chunks = [corpus[lo:lo + 2000] for lo in range(0, len(corpus), 2000)]
    start = time.perf_counter()
    from gensim_anchor._bow import parse_chunk
    arrays = [parse_chunk(c, 6906, 0) for c in chunks]
    out['to_arrays_s'] = time.perf_counter() - start
    start = time.perf_counter()
    matrices = [cm._chunk_matrix(*a, 6906) for a in arrays]
    out['chunk_matrix_s'] = time.perf_counter() - start
    acc = cm._Accumulator(6906, 'implicit')
    start = time.perf_counter()
    for H in matrices:
        acc.add(H)
    out['statistics_s'] = time.perf_counter() - start
    return out


def worker_stream(paths, mode, fit):
    """The Q-side pass from disk (reading + accumulation) and, with ``fit``, the K=50 fit."""
    from gensim.utils import FakeDict
    from gensim_anchor import AnchorModel
    from gensim_anchor.cooccurrence import build_cooccurrence
    import_s = _warm_up_imports() if fit else 0.0
    result = dict(mode=mode, import_s=import_s, rss_start_mb=_current_rss_mb())
    start, cpu = time.perf_counter(), time.process_time()
    if fit:
        model = AnchorModel(Shards(paths), num_topics=K, id2word=FakeDict(6906), random_state=0,
                            q_mode=mode, progress=False)
        result.update(stages=model.timings, chosen=model._cooccurrence.mode,
                      tokens=int(model.num_tokens))
    else:
        cooc = build_cooccurrence(Shards(paths), 6906, mode=mode, progress=False)
        result.update(chosen=cooc.mode, tokens=int(cooc.num_tokens),
                      nnz=int(cooc.H_tilde.nnz) if cooc.H_tilde is not None else None)
    result.update(seconds=time.perf_counter() - start, cpu_s=time.process_time() - cpu,
                  peak_rss_mb=_peak_rss_mb())
    return result


def _fit_products(cooc, num_topics=K, seed=0):
    """The products with Q of one L2 fit with d=1000: 8 x 128 float32 columns (the projection),
    K rows (the anchors), 2 x K float64 columns (recovery and R)."""
    rng = np.random.default_rng(seed)
    V = cooc.num_terms
    start = time.perf_counter()
    for _ in range(8):
        cooc.matmul(rng.standard_normal((V, 128), dtype=np.float32), dtype=np.float32)
    cooc.rows(np.arange(num_topics))
    for _ in range(2):
        cooc.matmul(rng.random((V, num_topics)))
    return time.perf_counter() - start


def worker_dask(paths, workers):
    import dask
    import dask.bag as db
    from distributed import Client, LocalCluster
    from gensim_anchor.distributed import build_cooccurrence_dask
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=':0') as cluster, Client(cluster) as client:
        client.run(lambda: __import__('gensim_anchor.cooccurrence'))  # imports not timed

        def worker_cpu():  # CPU seconds of each worker process so far
            return sorted(client.run(time.process_time).values())

        bag = db.from_delayed([dask.delayed(read_shard)(p) for p in paths])
        cpu0, start = worker_cpu(), time.perf_counter()
        cooc = build_cooccurrence_dask(bag, 6906, client=client, progress=False)
        build_s, cpu1 = time.perf_counter() - start, worker_cpu()
        products_s, cpu2 = _fit_products(cooc), worker_cpu()
        return dict(workers=workers, partitions=cooc.num_partitions, tokens=int(cooc.num_tokens),
                    build_s=build_s, products_s=products_s,
                    build_cpu_s=[b - a for a, b in zip(cpu0, cpu1)],
                    products_cpu_s=[b - a for a, b in zip(cpu1, cpu2)])


def worker_local_products(paths):
    """The same products on one machine (implicit Q in this process), for reference."""
    from gensim_anchor.cooccurrence import build_cooccurrence
    cooc = build_cooccurrence(Shards(paths), 6906, mode='implicit', progress=False)
    return dict(products_s=_fit_products(cooc), nnz=int(cooc.H_tilde.nnz))


def worker_kos(mode):
    from gensim_anchor import AnchorModel
    import_s = _warm_up_imports()
    corpus, id2word = load_kos()
    result = dict(mode=mode, import_s=import_s, rss_loaded_mb=_current_rss_mb())
    fits = []
    for _ in range(2):  # cold (JIT compilation), then warm
        start = time.perf_counter()
        model = AnchorModel(corpus, num_topics=K, id2word=id2word, random_state=0, q_mode=mode,
                            alpha='symmetric')
        fits.append((time.perf_counter() - start, dict(model.timings)))
        if not fits[1:]:
            result['peak_cold_mb'] = _peak_rss_mb()
    result.update(cold_s=fits[0][0], warm_s=fits[1][0], warm_stages=fits[1][1],
                  peak_rss_mb=_peak_rss_mb(), anchors=model.anchors.tolist(),
                  topics=model.get_topics().astype(float).tolist())
    return result


def worker_rule():
    """Q-side work of one fit (pass + products, as in _fit_products with K=20) in both modes."""
    from gensim_anchor.cooccurrence import build_cooccurrence, choose_mode, doc_pairs
    V, k = 1500, 20
    rng = np.random.default_rng(0)
    weights = 1.0 / np.arange(1, V + 1) ** 0.8
    weights /= weights.sum()
    rows = []
    for u, fill in ((10, 0.1), (10, 0.5), (10, 2.0), (40, 0.5), (40, 2.0), (100, 2.0)):
        docs = int(fill * V * V / u)
        ids = np.sort(rng.choice(V, size=(docs, u), p=weights), axis=1)
        corpus = [list(zip(*np.unique(r, return_counts=True))) for r in ids]
        row = dict(u=u, docs=docs)
        for mode in ('implicit', 'dense'):
            start = time.perf_counter()
            cooc = build_cooccurrence(corpus, V)  # 'auto' keeps H~ in the pass, then densifies
            if mode == 'dense':
                cooc = cooc.densify()
            else:
                row.update(nnz=cooc.H_tilde.nnz, pairs=doc_pairs(cooc.H_tilde))
            row[mode + '_pass_s'] = time.perf_counter() - start
            row[mode + '_products_s'] = _fit_products(cooc, num_topics=k)
        row['predicted'] = choose_mode(V, row['nnz'], row['pairs'], num_topics=k)
        rows.append(row)
        del corpus, cooc
    return dict(V=V, K=k, rows=rows)


WORKERS = dict(ng20=worker_20ng, read=worker_read, accumulate=worker_accumulate,
               stream=worker_stream, dask=worker_dask, local_products=worker_local_products,
               kos=worker_kos, rule=worker_rule)


def run(name, **kwargs):
    """``WORKERS[name](**kwargs)`` in a fresh process; its JSON result, with the process time."""
    command = [sys.executable, os.path.abspath(__file__), '--worker', name, '--kwargs', json.dumps(kwargs)]
    print("  running %s(%s) in a fresh process ..."
          % (name, ", ".join("%s=%s" % (k, v if k != 'paths' else '%d shards' % len(v))
                             for k, v in kwargs.items())), file=sys.stderr, flush=True)
    start = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit("%s failed (exit status %d):\n%s" % (name, proc.returncode, proc.stderr[-5000:]))
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result['process_s'] = time.perf_counter() - start
    return result


def load():
    return "load average %.2f %.2f %.2f" % os.getloadavg()


# ----------------------------------------------------------------------------------------------
# Sections
# ----------------------------------------------------------------------------------------------

def section_20ng(args):
    print("\n== 20 Newsgroups, K=%d, L2 (%s)" % (K, load()))
    out = {}
    for name, prune, target in (('raw', False, 4096), ('pruned', True, 2048)):
        r = out[name] = run('ng20', prune=prune)
        print("  %-6s V=%6d  docs=%d  nnz=%d  tokens=%d  Q=%s  load %.1f s  fit %.1f s "
              "(cooccurrence %.2f, anchors %.2f, recovery %.2f, dirichlet %.2f)"
              % (name, r['num_terms'], r['num_docs'], r['nnz'], r['tokens'], r['q_mode'], r['load_s'],
                 r['fit_s'], r['stages']['cooccurrence'], r['stages']['anchors'],
                 r['stages']['recovery'], r['stages'].get('dirichlet', 0.0)))
        print("         RSS after load %.0f MB, peak %.0f MB  [%s: peak < %d MB]"
              % (r['rss_loaded_mb'], r['peak_rss_mb'], 'PASS' if r['peak_rss_mb'] < target else 'FAIL',
                 target))
    return out


def section_stream(args, paths):
    print("\n== Streaming from disk: %d documents in %d MmCorpus shards (%s)"
          % (args.docs, len(paths), load()))
    out = dict(read=run('read', paths=paths))
    r = out['read']
    s = out['pass_implicit'] = run('stream', paths=paths, mode='implicit', fit=False)
    r['tokens'] = tokens = s['tokens']
    print("  reading alone (gensim MmCorpus):  %.1f s  %.0f docs/s  %.2fM tokens/s  (%.2fM per CPU "
          "second; nnz %d, tokens %d)" % (r['seconds'], r['docs'] / r['seconds'], tokens / r['seconds'] / 1e6,
                                         tokens / r['cpu_s'] / 1e6, r['nnz'], tokens))
    a = out['accumulate'] = run('accumulate', paths=paths, num_docs=min(args.docs, 100000))
    print("  accumulation alone, %d docs in memory: implicit %.2fM tokens/s (%.2fM per CPU second), "
          "dense %.2fM tokens/s (%.2fM per CPU second)"
          % (a['docs'], a['tokens'] / a['implicit_s'] / 1e6, a['tokens'] / a['implicit_cpu_s'] / 1e6,
             a['tokens'] / a['dense_s'] / 1e6, a['tokens'] / a['dense_cpu_s'] / 1e6))
    print("    implicit pass: lists -> arrays %.2f s, sparse chunks %.2f s, statistics %.2f s"
          % (a['to_arrays_s'], a['chunk_matrix_s'], a['statistics_s']))
    rate, per_cpu = s['tokens'] / s['seconds'], s['tokens'] / s['cpu_s']
    ours = s['cpu_s'] - r['cpu_s']
    print("  Q-side pass from disk (implicit): %.1f s  %.2fM tokens/s; %.1f CPU s, %.2fM tokens per "
          "CPU second, of which reading %.1f, ours %.1f CPU s (%.2fM tokens per CPU second); peak "
          "RSS %.0f MB" % (s['seconds'], rate / 1e6, s['cpu_s'], per_cpu / 1e6, r['cpu_s'], ours,
                           s['tokens'] / max(ours, 1e-9) / 1e6, s['peak_rss_mb']))
    print("    [%s: our accumulation >= 2M tokens/s per core]  [%s: whole pass from disk >= 2M tokens/s "
          "per core]" % ('PASS' if s['tokens'] / max(ours, 1e-9) >= 2e6 else 'FAIL',
                         'PASS' if per_cpu >= 2e6 else 'FAIL'))
    f = out['fit'] = run('stream', paths=paths, mode='auto', fit=True)
    st = f['stages']
    print("  full fit, q_mode=auto (-> %s), K=%d: %.1f s (cooccurrence %.1f: the pass, then forming "
          "Q; anchors %.2f, recovery %.2f, dirichlet %.2f), peak RSS %.0f MB"
          % (f['chosen'], K, f['seconds'], st['cooccurrence'], st['anchors'], st['recovery'],
             st.get('dirichlet', 0.0), f['peak_rss_mb']))
    return out


def section_dask(args, paths):
    print("\n== Dask: %d documents in %d partitions, LocalCluster of 1 and 2 worker processes (%s)"
          % (args.dask_docs, len(paths), load()))
    out = {w: run('dask', paths=paths, workers=w) for w in (1, 2)}
    out['local'] = run('local_products', paths=paths)
    for w in (1, 2):
        r = out[w]
        print("  %d worker(s): build Q (reading included) %.1f s, %.2fM tokens/s, worker CPU s %s; "
              "fit products %.2f s, worker CPU s %s"
              % (w, r['build_s'], r['tokens'] / r['build_s'] / 1e6,
                 "/".join("%.1f" % c for c in r['build_cpu_s']), r['products_s'],
                 "/".join("%.1f" % c for c in r['products_cpu_s'])))
    speed_build = out[1]['build_s'] / out[2]['build_s']
    speed_products = out[1]['products_s'] / out[2]['products_s']
    print("  speed-up with 2 workers (wall clock): build %.2fx, products %.2fx  [%s: >= 1.6x on the "
          "products]" % (speed_build, speed_products, 'PASS' if speed_products >= 1.6 else 'FAIL'))
    # On a loaded machine wall clock hides the split: the busiest worker's CPU time is what
    # the 2-worker run would take with a core per worker.
    for part in ('build', 'products'):
        print("  %s: 1-worker CPU %.1f s vs busiest of 2 workers %.1f s -> %.2fx with a free core each"
              % (part, sum(out[1][part + '_cpu_s']), max(out[2][part + '_cpu_s']),
                 sum(out[1][part + '_cpu_s']) / max(max(out[2][part + '_cpu_s']), 1e-9)))
    print("  same products in one process (implicit Q, no Dask): %.2f s (nnz %d)"
          % (out['local']['products_s'], out['local']['nnz']))
    return {str(k): v for k, v in out.items()}


def section_kos(args):
    print("\n== KOS, K=%d, L2: q_mode dense vs implicit (%s)" % (K, load()))
    out = {mode: run('kos', mode=mode) for mode in ('implicit', 'dense')}
    for mode, r in out.items():
        st = r['warm_stages']
        print("  %-8s cold %.2f s  warm %.2f s (cooccurrence %.3f, anchors %.3f, recovery %.3f)  "
              "peak RSS %.0f MB" % (mode, r['cold_s'], r['warm_s'], st['cooccurrence'], st['anchors'],
                                     st['recovery'], r['peak_rss_mb']))
    same = out['implicit']['anchors'] == out['dense']['anchors']
    diff = float(np.abs(np.array(out['implicit']['topics']) - np.array(out['dense']['topics'])).max())
    print("  same anchors: %s; largest topic difference %.2g" % (same, diff))
    for r in out.values():
        del r['topics']
    out['same_anchors'], out['max_topic_diff'] = same, diff
    return out


def section_rule(args):
    print("\n== q_mode='auto' rule: Q-side work of one L2 fit (K=20, d=1000), V=1500 (%s)" % load())
    out = run('rule')
    agree = close = 0
    for r in out['rows']:
        implicit = r['implicit_pass_s'] + r['implicit_products_s']
        dense = r['dense_pass_s'] + r['dense_products_s']
        faster = 'dense' if dense < implicit else 'implicit'
        agree += faster == r['predicted']
        close += faster != r['predicted'] and max(implicit, dense) <= 1.1 * min(implicit, dense)
        print("  u=%3d  nnz/V^2=%5.2f  pairs/nnz=%5.1f (%6d docs): implicit %.2f s (pass %.2f), "
              "dense %.2f s (pass %.2f) -> %s faster; choose_mode: %s"
              % (r['u'], r['nnz'] / out['V'] ** 2, r['pairs'] / r['nnz'], r['docs'], implicit,
                 r['implicit_pass_s'], dense, r['dense_pass_s'], faster, r['predicted']))
    print("  the rule picked the faster mode in %d of %d cases; %d more within 10%% (ties)"
          % (agree, len(out['rows']), close))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument('--only', default=','.join(SECTIONS), help="comma-separated sections")
    parser.add_argument('--docs', type=int, default=1000000, help="synthetic corpus size")
    parser.add_argument('--doc-length', type=int, default=100, help="mean tokens per document")
    parser.add_argument('--shard-docs', type=int, default=50000, help="documents per shard file")
    parser.add_argument('--dask-docs', type=int, default=200000,
                        help="documents (whole shards, from the start) for the Dask section")
    parser.add_argument('--workdir', default='/tmp/gensim_anchor_scale')
    parser.add_argument('--json', metavar='PATH', help="also write the results as JSON")
    parser.add_argument('--worker', help=argparse.SUPPRESS)
    parser.add_argument('--kwargs', help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(WORKERS[args.worker](**json.loads(args.kwargs))))
        return 0
    sections = [s for s in args.only.split(',') if s]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        parser.error("unknown sections %s; choose from %s" % (sorted(unknown), SECTIONS))
    info = machine()
    print("code %s; %s, %s usable CPU(s); python %s, numpy %s, jax %s, gensim %s; %s"
          % (info['git'], info['cpu'], info['cpus_usable'], info['python'], info['numpy'],
             info['jax'], info['gensim'], load()))
    results = dict(machine=info)
    paths = None
    if 'stream' in sections or 'dask' in sections:
        print("\nsemi-synthetic corpus under %s ..." % args.workdir, file=sys.stderr)
        paths = generate(args.workdir, args.docs, args.doc_length, args.shard_docs)
    for name in sections:
        if name == 'stream':
            results[name] = section_stream(args, paths)
        elif name == 'dask':
            shards = paths[:max(1, args.dask_docs // args.shard_docs)]
            results[name] = section_dask(args, shards)
        else:
            results[name] = globals()['section_' + name](args)
    if args.json:
        with open(args.json, 'w') as fout:
            json.dump(results, fout, indent=2)
        print("\nresults written to %s" % args.json)
    return 0

if __name__ == '__main__':
    sys.exit(main())
