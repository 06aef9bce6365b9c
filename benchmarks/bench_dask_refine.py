"""The Gibbs refinement on a Dask cluster against one machine (issue 16), side by side in one run.

A semi-synthetic corpus (``--docs`` documents of ``--doc-length`` tokens, drawn from K = 50
random Dirichlet(0.1) topics over V = 10,000 words plus one anchor word per topic, symmetric
Dirichlet(0.1) document topics) is streamed into a ``dask.bag``: each partition is generated on
the worker that reads it, from its own seed, so no machine ever holds the whole corpus. Then:

1. the anchor fit on the bag (a LocalCluster of the largest ``--workers``), whose topics and
   alpha start every refinement below;
2. the Dask refinement (:func:`gensim_anchor.distributed_hybrid.gibbs_refine_dask`, defaults:
   burn-in by the convergence rule, 200 sweeps at most) on a fresh LocalCluster of each
   ``--workers`` count, ``--threads-per-worker`` Dask threads per worker process, each worker
   process pinned to its own ``--cores-per-worker`` cores (so that XLA's thread pool in one
   worker does not run on the other's cores: 2 workers have twice the cores of 1);
3. the one-machine refinement (:func:`gensim_anchor.hybrid.gibbs_refine`) of the same documents
   (the same partitions generated again, here), in a fresh process pinned to
   ``--cores-per-worker`` cores.

Reported per run: seconds per sweep (mean over the sweeps after the first, which compiles),
sweeps and burn-in, held-out log-likelihood per token (``--heldout`` documents of the same model,
:func:`gensim_anchor.likelihood.log_likelihood_per_token`), L1 error against the true topics after
matching (:func:`gensim_anchor.evaluation.topic_recovery_l1`), peak RSS of each worker process
(VmHWM, asked of the workers with ``client.run``) or of the one-machine process; then the ratio of seconds per
sweep between the worker counts, and the Dask runs' quality against the one-machine run's.
Targets (issue 16, at 1,000,000 documents): 2 workers >= 1.6x as fast per sweep as 1; held-out
likelihood within 0.005 nats/token and L1 within 5% of the one-machine refinement.

Usage (JAX on the CPU, no network needed)::

    JAX_PLATFORMS=cpu python benchmarks/bench_dask_refine.py [--docs 1000000] [--workers 1 2]
        [--threads-per-worker 1] [--cores-per-worker N] [--partitions 32] [--num-sweeps 200]
        [--heldout 1000] [--skip-local] [--note TEXT] [--log PATH]

The issue's measurement, on a 16-core Linux machine (8 cores for each of the two workers; the
log is appended to ``benchmarks/results/bench_dask_refine.log``)::

    JAX_PLATFORMS=cpu python benchmarks/bench_dask_refine.py --docs 1000000 --workers 1 2 \
        --threads-per-worker 1 --cores-per-worker 8 --partitions 32

It runs the three refinements one after another, each to the convergence rule or the 200-sweep
cap: at the 3.7 s per sweep of 10^7 tokens on one busy core measured here, expect hours at
10^8 tokens (``--num-sweeps 100`` halves the worst case). Memory: each refinement holds 12
bytes per token plus 4 K bytes per document (1.4 GB for 10^7 tokens on one worker here,
JAX and compilation included); the one-machine process about as much again for parsing.
"""
import argparse
import concurrent.futures
import multiprocessing
import os
import platform
import resource
import sys
import time
from datetime import datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_core import machine  # noqa: E402

K, V, BETA, ALPHA = 50, 10000, 0.1, 0.1
SEED = 0


def log(out, line=""):
    print(line, flush=True)
    out.write(line + "\n")
    out.flush()


# ----------------------------------------------------------------------------------------------
# The corpus: each partition drawn from its own seed, wherever it is computed
# ----------------------------------------------------------------------------------------------

def true_topics():
    """(K, V + K) topics: random Dirichlet(BETA) ones with one anchor word each (the paper's
    separability setting), as semi_synthetic_corpus(add_anchors=True) builds them."""
    from gensim_anchor.synthetic import add_anchor_words, random_topics
    A, _ = add_anchor_words(random_topics(V, K, beta=BETA, random_state=SEED).T)
    return A.T


def partition(topics, index, num_docs, doc_length):
    """Documents of partition ``index`` (a list of bag-of-words lists)."""
    from gensim_anchor.synthetic import semi_synthetic_corpus
    rng = np.random.default_rng([SEED, 1, index])
    return list(semi_synthetic_corpus(topics, num_docs, doc_length, alpha=ALPHA, random_state=rng).corpus)


def partition_sizes(docs, partitions):
    return [docs // partitions + (i < docs % partitions) for i in range(partitions)]


def heldout_documents(topics, num_docs, doc_length):
    from gensim_anchor.synthetic import semi_synthetic_corpus
    rng = np.random.default_rng([SEED, 2])
    return list(semi_synthetic_corpus(topics, num_docs, doc_length, alpha=ALPHA, random_state=rng).corpus)


def make_bag(topics, args):
    import dask
    import dask.bag as db
    shared = dask.delayed(topics)  # one copy in the graph, not one per partition
    return db.from_delayed([dask.delayed(partition)(shared, i, n, args.doc_length)
                            for i, n in enumerate(partition_sizes(args.docs, args.partitions))])


# ----------------------------------------------------------------------------------------------
# Worker processes
# ----------------------------------------------------------------------------------------------

def pin(cores):
    """Run on a worker before JAX starts there: every thread of the process on ``cores`` (XLA
    sizes its thread pool from the affinity when it starts)."""
    for tid in os.listdir('/proc/self/task'):
        try:
            os.sched_setaffinity(int(tid), cores)
        except OSError:
            pass
    return sorted(os.sched_getaffinity(0))


def peak_rss_mb():
    """This process's peak resident memory (VmHWM). Not ``ru_maxrss``: Linux carries it over
    exec from the forking process, so a worker spawned by a large client would report the
    client's size (750 MB on a fresh worker in a first run of this script)."""
    try:
        with open('/proc/self/status') as fin:
            return next(int(line.split()[1]) for line in fin if line.startswith('VmHWM')) / 1024.0
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def cluster(workers, args):
    from distributed import Client, LocalCluster
    cl = LocalCluster(n_workers=workers, threads_per_worker=args.threads_per_worker, processes=True,
                      dashboard_address=':0', memory_limit=0)
    client = Client(cl, set_as_default=False)
    cores = sorted(os.sched_getaffinity(0))
    for i, address in enumerate(sorted(client.nthreads())):
        mine = [cores[(i * args.cores_per_worker + j) % len(cores)] for j in range(args.cores_per_worker)]
        client.run(pin, mine, workers=[address])
    return cl, client


# ----------------------------------------------------------------------------------------------
# The runs
# ----------------------------------------------------------------------------------------------

def anchor_fit(topics, args):
    from gensim_anchor import AnchorModel
    cl, client = cluster(max(args.workers), args)
    try:
        start = time.perf_counter()
        model = AnchorModel(make_bag(topics, args), num_topics=K, id2word={i: str(i) for i in range(V + K)},
                            random_state=SEED, client=client, progress=False)
        seconds = time.perf_counter() - start
    finally:
        client.close()
        cl.close()
    return dict(topics=model.get_topics().astype(np.float64), alpha=np.asarray(model.alpha),
                p_z=np.asarray(model.p_z), seconds=seconds)


def dask_refine(start, topics, workers, args):
    from gensim_anchor.distributed_hybrid import gibbs_refine_dask
    cl, client = cluster(workers, args)
    try:
        affinity = client.run(lambda: sorted(os.sched_getaffinity(0)))
        before = client.run(peak_rss_mb)
        began = time.perf_counter()
        result = gibbs_refine_dask(start['topics'], start['alpha'], make_bag(topics, args), client=client,
                                   p_z=start['p_z'], random_state=SEED, num_sweeps=args.num_sweeps)
        seconds = time.perf_counter() - began
        rss = client.run(peak_rss_mb)
    finally:
        client.close()
        cl.close()
    return dict(topics=result.topics, alpha=result.alpha, sweeps=result.num_sweeps, burn_in=result.burn_in,
                converged=result.converged, seconds=seconds, per_sweep=float(np.mean(result.sweep_seconds[1:])),
                first_sweep=float(result.sweep_seconds[0]), partitions=result.num_partitions,
                tokens=result.num_tokens, rss_mb=[rss[w] for w in sorted(rss)],
                rss_before_mb=[before[w] for w in sorted(before)],
                cores=[affinity[w] for w in sorted(affinity)], recovered=len(result.recovered))


def local_refine(start, topics, args, cores):
    """In a fresh process (run through a spawn pool): its own cores and its own peak RSS."""
    os.sched_setaffinity(0, cores)  # before JAX starts here
    import itertools
    from gensim_anchor.hybrid import gibbs_refine
    corpus = itertools.chain.from_iterable(partition(topics, i, n, args.doc_length)
                                           for i, n in enumerate(partition_sizes(args.docs, args.partitions)))
    stamps = []
    began = time.perf_counter()
    result = gibbs_refine(start['topics'], start['alpha'], corpus, p_z=start['p_z'], random_state=SEED,
                          num_sweeps=args.num_sweeps,
                          callback=lambda sweep, state: stamps.append((state['alpha'].block_until_ready(),
                                                                       time.perf_counter())[1]))
    seconds = time.perf_counter() - began
    per_sweep = np.diff(stamps)
    return dict(topics=result.topics, alpha=result.alpha, sweeps=result.num_sweeps, burn_in=result.burn_in,
                converged=result.converged, seconds=seconds, per_sweep=float(np.mean(per_sweep)),
                first_sweep=float(stamps[0] - began), tokens=result.num_tokens, rss_mb=[peak_rss_mb()],
                cores=[sorted(os.sched_getaffinity(0))])


def quality(run, A, heldout):
    from gensim_anchor.evaluation import topic_recovery_l1
    from gensim_anchor.likelihood import log_likelihood_per_token
    run['l1'] = topic_recovery_l1(A.T, run['topics']).mean
    run['heldout'] = log_likelihood_per_token(run['topics'], run['alpha'], heldout, random_state=SEED)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument('--docs', type=int, default=1000000)
    parser.add_argument('--doc-length', type=int, default=100)
    parser.add_argument('--partitions', type=int, default=32)
    parser.add_argument('--workers', type=int, nargs='+', default=[1, 2])
    parser.add_argument('--threads-per-worker', type=int, default=1)
    parser.add_argument('--cores-per-worker', type=int, default=None,
                        help="cores pinned to each worker process (default: usable cores // max workers)")
    parser.add_argument('--num-sweeps', type=int, default=200, help="the cap (burn-in by the convergence rule)")
    parser.add_argument('--heldout', type=int, default=1000)
    parser.add_argument('--skip-local', action='store_true', help="no one-machine refinement")
    parser.add_argument('--note', default='', help="a line for the log (e.g. that the machine was loaded)")
    parser.add_argument('--log', default=str(Path(__file__).resolve().parent / 'results' / 'bench_dask_refine.log'))
    args = parser.parse_args()
    usable = len(os.sched_getaffinity(0))
    if args.cores_per_worker is None:
        args.cores_per_worker = max(1, usable // max(args.workers))
    Path(args.log).parent.mkdir(parents=True, exist_ok=True)
    with open(args.log, 'a') as out:
        log(out, "=" * 100)
        log(out, "%s  python %s" % (datetime.now().isoformat(timespec='seconds'), " ".join(sys.argv)))
        log(out, "machine: %s" % machine())
        log(out, "load average at start: %s (%d usable cores)" % (os.getloadavg(), usable))
        if args.note:
            log(out, "note: %s" % args.note)
        log(out, "corpus: %d documents x %d tokens, K=%d, V=%d (+%d anchor words), %d partitions; "
            "workers %s, %d Dask threads and %d pinned cores per worker"
            % (args.docs, args.doc_length, K, V, K, args.partitions, args.workers, args.threads_per_worker,
               args.cores_per_worker))
        topics = true_topics()
        heldout = heldout_documents(topics, args.heldout, args.doc_length)
        start = anchor_fit(topics, args)
        log(out, "anchor fit on the bag (%d workers): %.1f s" % (max(args.workers), start['seconds']))
        runs = {'anchor fit': dict(start)}
        for workers in args.workers:
            began = time.perf_counter()
            runs['dask, %d worker%s' % (workers, 's' if workers > 1 else '')] = run = dask_refine(
                start, topics, workers, args)
            log(out, "dask %d workers: %d sweeps (burn-in %d, %s) in %.1f s, %.3f s per sweep, worker "
                "cores %s, peak RSS per worker %s MB (before: %s), %d partitions rebuilt [%.0f s]"
                % (workers, run['sweeps'], run['burn_in'], 'settled' if run['converged'] else 'cap',
                   run['seconds'], run['per_sweep'], run['cores'], ["%.0f" % r for r in run['rss_mb']],
                   ["%.0f" % r for r in run['rss_before_mb']], run['recovered'], time.perf_counter() - began))
        if not args.skip_local:
            began = time.perf_counter()
            cores = sorted(os.sched_getaffinity(0))[:args.cores_per_worker]
            with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context('spawn')) as pool:
                runs['one machine'] = run = pool.submit(local_refine, start, topics, args, cores).result()
            log(out, "one machine: %d sweeps (burn-in %d, %s) in %.1f s, %.3f s per sweep, cores %s, peak "
                "RSS %.0f MB [%.0f s]" % (run['sweeps'], run['burn_in'], 'settled' if run['converged'] else 'cap',
                                         run['seconds'], run['per_sweep'], run['cores'][0], run['rss_mb'][0],
                                         time.perf_counter() - began))
        for run in runs.values():
            quality(run, topics, heldout)
        log(out, "")
        log(out, "%-18s %10s %8s %9s %10s %12s %9s  %s" % ('run', 's/sweep', 'sweeps', 'burn-in', 'total s',
                                                          'held-out LL', 'L1', 'peak RSS per process (MB)'))
        for name, run in runs.items():
            if name == 'anchor fit':
                log(out, "%-18s %10s %8s %9s %10.1f %12.4f %9.4f" % (name, '-', '-', '-', run['seconds'],
                                                                   run['heldout'], run['l1']))
                continue
            log(out, "%-18s %10.3f %8d %9d %10.1f %12.4f %9.4f  %s" % (
                name, run['per_sweep'], run['sweeps'], run['burn_in'], run['seconds'], run['heldout'], run['l1'],
                " ".join("%.0f" % r for r in run['rss_mb'])))
        dask_runs = [(w, runs['dask, %d worker%s' % (w, 's' if w > 1 else '')]) for w in args.workers]
        log(out, "")
        base_w, base = dask_runs[0]
        for w, run in dask_runs[1:]:
            log(out, "speed-up per sweep, %d -> %d workers: %.2fx (target >= 1.6x for 1 -> 2)"
                % (base_w, w, base['per_sweep'] / run['per_sweep']))
            log(out, "topics of the %d- and %d-worker runs identical: %s"
                % (base_w, w, bool(np.array_equal(base['topics'], run['topics']))))
        if 'one machine' in runs:
            local = runs['one machine']
            for w, run in dask_runs:
                log(out, "dask %d vs one machine: held-out %+.4f nats/token (target within 0.005; positive: "
                    "dask better), L1 %+.1f%% (target within 5%%; negative: dask better)"
                    % (w, run['heldout'] - local['heldout'], 100 * (run['l1'] - local['l1']) / local['l1']))
        log(out, "load average at end: %s; platform %s" % (os.getloadavg(), platform.platform()))


if __name__ == '__main__':
    main()
