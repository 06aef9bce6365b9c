"""Independent programs run at once on host threads.

XLA:CPU runs a program's loops (the lane pools of the recovery solvers, the blocks of a Gibbs
draw) one step after another, so a program keeps about one core busy however many the machine
has. Independent programs called from several threads run at once: an executable releases the
GIL while it runs. So the stages whose work splits into independent parts (the words of a
recovery, the blocks of a sub-step's draw) run a part per thread, with the results they would
have had in one call: every word's solution and every token's draw depends on its own data
alone. Not RecoverKL's blocks: two of its programs (whose Newton steps call LAPACK) run at once
stalled, both threads waiting and the CPU idle (``benchmarks/results/bench_recover_kl.log``,
session 34).
"""
import functools
import os
from concurrent.futures import ThreadPoolExecutor, wait

#: The most threads a stage is split for (only 2 cores were measured: the logs quoted where the
#: stages use them).
MAX_THREADS = 8


def host_threads():
    """Threads a stage is split for: the usable CPUs (at most :data:`MAX_THREADS`) on a CPU
    backend, one elsewhere (an accelerator runs one program at a time anyway)."""
    import jax
    if jax.default_backend() != 'cpu':
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_THREADS))


def row_parts(num_rows, minimum, threads=None):
    """Contiguous ``(lo, hi)`` ranges that split ``num_rows`` rows for ``threads`` threads
    (default :func:`host_threads`), each at least ``minimum`` rows long: one range if there are
    too few rows to split."""
    threads = host_threads() if threads is None else threads
    parts = max(1, min(threads, num_rows // max(minimum, 1)))
    bounds = [round(i * num_rows / parts) for i in range(parts + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def run_all(calls, pool=None):
    """The results of the functions ``calls`` (no arguments), run at once: the first on the
    calling thread, the others on ``pool`` (a :class:`~concurrent.futures.ThreadPoolExecutor`
    with a thread for each; default: one made for this call and shut down after it). JAX arrays
    in a result are waited for on the thread that made them, where the work runs. An exception
    is raised once every call has ended: the first call's, or else the first of the others'."""
    calls = [functools.partial(_finished, call) for call in calls]
    if len(calls) == 1:
        return [calls[0]()]
    if pool is None:
        with ThreadPoolExecutor(len(calls) - 1, thread_name_prefix='gensim_anchor') as own:
            return _run_all(calls, own)
    return _run_all(calls, pool)


def _run_all(calls, pool):
    later = [pool.submit(call) for call in calls[1:]]
    try:
        first = calls[0]()
    finally:
        wait(later)  # none outlives the call, whichever fails
    return [first] + [f.result() for f in later]


def _finished(call):
    """``call()``, its JAX arrays waited for (other values pass through)."""
    import jax
    return jax.block_until_ready(call())
