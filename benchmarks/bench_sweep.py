"""Where a Gibbs sweep's time goes: the collapsed sweep of ``refine='gibbs'`` and its parts.

Issue 12 asks for the refined model at a third of ``LdaModel(passes=10)``'s time on 20
Newsgroups; most of that time is sweeps. This script times, in one process and on the same
sampler state, the sweep as one stored program (as :func:`gensim_anchor.hybrid.gibbs_refine`
runs it on an accelerator, and the Dask partitions everywhere), the same sweep as
:func:`~gensim_anchor.hybrid.gibbs_refine` runs it on a CPU (:class:`~gensim_anchor.hybrid._ThreadedSweep`:
separate programs, each sub-step's draw cut into parts that run on as many threads as there are
usable CPUs, at most 8) and the parts of the sweep, each jitted on its own:

* ``draw``: one sub-step's topics from the collapsed conditional
  (:func:`~gensim_anchor.hybrid._conditional` and :func:`~gensim_anchor.hybrid._draw_topics`),
  times the number of sub-steps;
* ``draw, own topic not taken out``: the same draw with every topic's weight from the counts as
  they stand (what the own-topic term costs);
* ``row gathers``: only the two (tokens x K) row gathers of the weights, summed;
* ``count updates``: :func:`~gensim_anchor.hybrid._move_counts` of a sub-step;
* ``Minka step`` and ``posterior mean topics``: the rest of a sweep;
* ``log joint``: the convergence check, run every ``REFINE_CHECK_EVERY`` sweeps (its share is
  per sweep);
* on a CPU with two or more threads, the threaded sweep's programs that run on one thread: the
  merge of a sub-step's parts (with the next draw's tables), the end of the sweep, and the tables
  alone against the variant that left the counts' transpose to XLA (before session 35).

and four variants measured and not adopted: the own topic's weight from its values picked out of
the gathered rows by a sum, or from three counts gathered per token (the weights before session
31), instead of computed for every topic from the rows and selected; the cumulative sum over
topics as a product with a triangular matrix (the draw before session 31) instead of written out
topic by topic; and count updates of the tokens that changed topic only.

The corpus is the 90% split of :mod:`bench_dropin` (``--corpus``, default 20ng, K = 50); the
state is that of the chain after ``--warmup`` sweeps from the default anchor fit's topics (by
then about a third of the tokens change topic in a sweep). Times are medians over ``--repeat``
calls, after one call that compiles; the whole sweeps (one program, on threads, and the variant
with the own topic's weight from three gathered counts) are timed in alternation. A part's time
alone can differ from its time inside the sweep, where XLA fuses and schedules the whole
program: the parts need not add up.

Usage::

    python benchmarks/bench_sweep.py [--corpus 20ng] [--warmup 80] [--repeat 20]
"""
import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
K = 50


def _interleaved_ms(fns, args, repeat):
    """Medians (ms) of programs timed in alternation on the same arguments (one call each first)."""
    import jax
    for fn in fns.values():
        jax.block_until_ready(fn(*args))
    times = {name: [] for name in fns}
    for i in range(repeat):
        for name in (list(fns) if i % 2 == 0 else list(fns)[::-1]):
            t = time.perf_counter()
            jax.block_until_ready(fns[name](*args))
            times[name].append(time.perf_counter() - t)
    return {name: 1e3 * statistics.median(ts) for name, ts in times.items()}


def _median_ms(fn, args, repeat):
    """Median (ms) of ``repeat`` calls of one program, after a call that compiles it."""
    return _interleaved_ms({'': fn}, args, repeat)['']


def _conditional_from_counts(n_dk, n_kw, alpha, eta):
    """The library's weights before session 31: the own topic's weight from three counts
    gathered per token, n_dk[d, z], n_kw[z, w] and n_k[z] (not adopted since)."""
    import jax
    import jax.numpy as jnp
    from gensim_anchor import hybrid
    phi_t, total, doc_alpha = hybrid._conditional_tables(n_dk, n_kw, alpha, eta)
    num_topics = n_kw.shape[0]

    def gathered(counts, rows, cols):
        flat = hybrid._flat_index(counts, rows, cols)
        return counts.reshape(-1).at[flat].get(mode='fill', fill_value=0).astype(jnp.float32)

    def weights(d, w, z_old):
        own = ((gathered(n_dk, d, z_old) - 1 + alpha[z_old]) * (gathered(n_kw, z_old, w) - 1 + eta)
               / (total[z_old] - 1))
        return jnp.where(jax.nn.one_hot(z_old, num_topics, dtype=bool), own[:, None],
                         doc_alpha[d] * phi_t[w])
    return weights


def _sweep_from_counts(args, offsets, optimize_alpha):
    """The whole collapsed sweep compiled with :func:`_conditional_from_counts` in place of the
    library's weights (swapped only while it is traced)."""
    import functools
    import jax
    from gensim_anchor import hybrid
    saved, hybrid._conditional = hybrid._conditional, _conditional_from_counts
    try:
        return jax.jit(functools.partial(hybrid._sweep_impl, sampler='collapsed', optimize_alpha=optimize_alpha,
                                         offsets=tuple(int(o) for o in offsets))).lower(*args).compile()
    finally:
        hybrid._conditional = saved


def parts():
    """The jitted parts by name, each a function of (key, one sub-step's tokens, counts, alpha,
    eta; the update parts also of the sub-step's new topics)."""
    import jax
    import jax.numpy as jnp
    from gensim_anchor import hybrid

    def draw(key, d, w, z_old, n_dk, n_kw, alpha, eta):
        return hybrid._draw_topics(key, hybrid._conditional(n_dk, n_kw, alpha, eta), (d, w, z_old), K)

    def draw_plain(key, d, w, z_old, n_dk, n_kw, alpha, eta):
        phi_t, _, doc_alpha = hybrid._conditional_tables(n_dk, n_kw, alpha, eta)
        return hybrid._draw_topics(key, lambda d, w: doc_alpha[d] * phi_t[w], (d, w), K)

    def gathers(key, d, w, z_old, n_dk, n_kw, alpha, eta):
        phi_t, _, doc_alpha = hybrid._conditional_tables(n_dk, n_kw, alpha, eta)
        return jax.lax.map(lambda b: (doc_alpha[b[0]] * phi_t[b[1]]).sum(axis=1), hybrid._token_blocks((d, w)))

    def draw_own_from_rows(key, d, w, z_old, n_dk, n_kw, alpha, eta):
        # Not adopted: the own topic's n_dk + alpha and phi picked out of the gathered rows by a
        # sum, its n_kw + eta as phi * (n_k + V eta): XLA gathers the rows for every use. (The
        # library now computes the own weight for every topic elementwise and selects it.)
        phi_t, total, doc_alpha = hybrid._conditional_tables(n_dk, n_kw, alpha, eta)

        def weights(d, w, z_old):
            mine = jax.nn.one_hot(z_old, K, dtype=bool)
            da, ph = doc_alpha[d], phi_t[w]
            da_z = jnp.sum(jnp.where(mine, da, 0), axis=1)
            ph_z = jnp.sum(jnp.where(mine, ph, 0), axis=1)
            s_z = total[z_old]
            own = (da_z - 1) * (ph_z * s_z - 1) / (s_z - 1)
            return jnp.where(mine, own[:, None], da * ph)
        return hybrid._draw_topics(key, weights, (d, w, z_old), K)

    def draw_own_from_counts(key, d, w, z_old, n_dk, n_kw, alpha, eta):
        return hybrid._draw_topics(key, _conditional_from_counts(n_dk, n_kw, alpha, eta), (d, w, z_old), K)

    def draw_triangular(key, d, w, z_old, n_dk, n_kw, alpha, eta):
        # Not adopted since session 31 (the library's draw until then): the cumulative sum over
        # topics as a product with an upper-triangular matrix of ones, 2 K^2 flops a token.
        weights = hybrid._conditional(n_dk, n_kw, alpha, eta)
        blocks = hybrid._token_blocks((d, w, z_old))
        u = jax.random.uniform(key, blocks[0].shape, jnp.float32)
        upper = jnp.triu(jnp.ones((K, K), jnp.float32))

        def block(args):
            *arrays, u = args
            cdf = jnp.matmul(weights(*arrays), upper, precision=jax.lax.Precision.HIGHEST)
            return jnp.sum(cdf < (u * cdf[:, -1])[:, None], axis=-1)
        return jnp.minimum(jax.lax.map(block, (*blocks, u)).reshape(-1)[:d.shape[0]], K - 1)

    def updates(key, d, w, z_old, n_dk, n_kw, alpha, eta, z_new):
        return hybrid._move_counts(n_dk, n_kw, d, w, z_old, z_new)

    def updates_moved_only(key, d, w, z_old, n_dk, n_kw, alpha, eta, z_new):
        # Not adopted: the tokens that kept their topic sent out of bounds (dropped).
        moved = z_new != z_old
        return hybrid._move_counts(n_dk, n_kw, jnp.where(moved, d, n_dk.shape[0]),
                                   jnp.where(moved, w, n_kw.shape[1]), z_old, z_new)

    per_substep = [('draw', draw), ('draw, own topic not taken out', draw_plain),
                   ('row gathers', gathers), ('count updates', updates),
                   ('variant: own topic from the gathered rows', draw_own_from_rows),
                   ('variant: own topic from three gathered counts', draw_own_from_counts),
                   ('variant: cumulative sum by a triangular product', draw_triangular),
                   ('variant: updates of moved tokens only', updates_moved_only)]
    return {name: jax.jit(fn) for name, fn in per_substep}


def _fused_tables(n_dk, n_kw, alpha, eta):
    """The library's tables before session 35: the counts' transpose left to XLA, which fused it
    into the division (the same values; not adopted since)."""
    total = n_kw.sum(axis=1).astype(alpha.dtype) + n_kw.shape[1] * eta
    return (n_kw.T.astype(alpha.dtype) + eta) / total, total, n_dk.astype(alpha.dtype) + alpha


def _serial_rows(threaded, sweep_args, tables, repeat):
    """The threaded sweep's programs that run on one thread, between and after the draws: the
    merge of a sub-step's parts, the end of the sweep, and the tables alone against the variant
    of :func:`_fused_tables` (timed in alternation)."""
    import functools
    import jax
    import numpy as np
    from gensim_anchor import _threads
    key, doc, word, z, n_dk, n_kw, alpha, eta = sweep_args
    step = np.int32(0)
    draw_args = (key, doc, word, z) + tuple(tables) + (step,)
    parts = tuple(_threads.run_all([functools.partial(threaded._draw, *draw_args, np.int32(s), owned)
                                    for s, owned in zip(threaded.starts, threaded._owned)], threaded._pool))
    merge = functools.partial(threaded._merge, z, n_dk, n_kw, parts, step, alpha, eta)
    steps = threaded.num_substeps
    timed = _interleaved_ms({'tables': threaded._tables, 'fused': jax.jit(_fused_tables)},
                            (n_dk, n_kw, alpha, eta), repeat)
    return [('merge of the parts and the next tables (x%d sub-steps)' % steps,
             steps * _median_ms(merge, (), repeat)),
            ('end of the sweep (Minka, posterior mean, documents\' table)',
             _median_ms(threaded._finish, (n_dk, n_kw, alpha, eta), repeat)),
            ('tables (x%d merges)' % steps, steps * timed['tables']),
            ('variant: tables, transpose fused into the division (x%d)' % steps, steps * timed['fused'])]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--corpus', default='20ng', choices=['kos', 'nips', '20ng'])
    parser.add_argument('--warmup', type=int, default=80)
    parser.add_argument('--repeat', type=int, default=20)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    import bench_dropin
    if not bench_dropin.DATA.is_dir():
        sys.exit("shared data not found at %s" % bench_dropin.DATA)
    import jax
    import jax.numpy as jnp
    from gensim_anchor import AnchorModel, _threads, hybrid
    from gensim_anchor._defaults import REFINE_CHECK_EVERY
    from gensim_anchor._validation import check_refine_options

    corpus, dictionary = bench_dropin.load(args.corpus)
    train, _ = bench_dropin.split(corpus, 0)
    model = AnchorModel(train, num_topics=K, id2word=dictionary, random_state=0)
    # The options of model.refine(train, 'gibbs'), its defaults completed as that call does.
    options = check_refine_options('gibbs', {})
    V, substeps = len(dictionary), options['substeps']
    doc, word, num_docs = hybrid._tokens(train, V)
    num_tokens = len(doc)
    key = jax.random.PRNGKey(0)
    # The start and eta of model.refine(train, 'gibbs'): p(z) weights the first topics, and eta
    # is the model's own unless the defaults give one.
    start_t = hybrid._start_topics(model.get_topics(), model.p_z)
    doc_j, word_j, z, n_dk, n_kw, offsets, sweep = hybrid._start_chain(
        key, start_t, doc, word, num_docs, substeps=substeps, optimize_alpha=options['optimize_alpha'])
    alpha, eta = jnp.asarray(model.alpha, jnp.float32), jnp.float32(model._gibbs_eta(options))
    for i in range(args.warmup):
        z_before = z
        z, n_dk, n_kw, alpha, _ = sweep(jax.random.fold_in(key, i), doc_j, word_j, z, n_dk, n_kw, alpha, eta)
    real = doc_j < n_dk.shape[0]  # not the padding of the bucketed layout (one past the last row)
    moved = float(jnp.sum((z != z_before) & real)) / num_tokens if args.warmup else float('nan')

    out = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=HERE, capture_output=True, text=True)
    print("# bench_sweep: %s (90%% split), K=%d, %d tokens (%d padded) in %d sub-steps, %d documents, "
          "V=%d; state after %d sweeps (%.1f%% of the tokens moved in the last); jax %s, %d CPUs, "
          "commit %s, load average %s" % (args.corpus, K, num_tokens,
                                          len(doc_j), substeps, num_docs, V, args.warmup, 100 * moved,
                                          jax.__version__, os.cpu_count(), out.stdout.strip(),
                                          os.getloadavg()), flush=True)
    sweep_args = (key, doc_j, word_j, z, n_dk, n_kw, alpha, eta)
    programs = {'stored': sweep,
                'variant': _sweep_from_counts(sweep_args, offsets, options['optimize_alpha'])}
    threaded = hybrid._threaded_sweep(offsets, _threads.host_threads(), options['optimize_alpha'])
    if threaded is not None:
        # As in a chain, where each call finds the tables that the last one left (a call with
        # other counts would first compute them).
        kept = (n_dk, n_kw, alpha, threaded._tables(n_dk, n_kw, alpha, eta))

        def in_chain(*a):
            threaded._kept = kept
            return threaded(*a)
        programs['threaded'] = in_chain
    with threaded or contextlib.nullcontext():
        timed = _interleaved_ms(programs, sweep_args, args.repeat)
        serial = [] if threaded is None else _serial_rows(threaded, sweep_args, kept[3], args.repeat)
    whole = timed['stored']
    rows = [('sweep (the stored program: GPU, Dask, small corpora)', whole)]
    if threaded is not None:
        rows.append(('sweep on %d threads (gibbs_refine on a CPU)' % len(threaded.starts), timed['threaded']))
    rows.append(('variant: sweep, own topic from three gathered counts', timed['variant']))
    lo, hi = offsets[0], offsets[1]
    step = (key, doc_j[lo:hi], word_j[lo:hi], z[lo:hi], n_dk, n_kw, alpha, eta)
    programs = parts()
    z_new = programs['draw'](*step)
    for name, fn in programs.items():
        extra = (z_new,) if 'update' in name else ()
        rows.append((name + ' (x%d sub-steps)' % substeps, substeps * _median_ms(fn, step + extra, args.repeat)))
    rows += serial
    rows.append(('Minka step', _median_ms(jax.jit(lambda n, a: hybrid._minka_alpha(a, n.astype(a.dtype), 1)),
                                          (n_dk, alpha), args.repeat)))
    rows.append(('posterior mean topics', _median_ms(
        jax.jit(lambda n: hybrid._posterior_mean(n, eta, jnp.float32)), (n_kw,), args.repeat)))
    rows.append(('log joint (per sweep: one check every %d)' % REFINE_CHECK_EVERY,
                 _median_ms(hybrid._log_joint_fn(), (n_dk, n_kw, alpha, eta), args.repeat) / REFINE_CHECK_EVERY))
    print("%-64s %9s %9s %14s" % ('part', 'ms/sweep', 'of sweep', 'ns/token'))
    for name, ms in rows:
        print("%-64s %9.2f %8.0f%% %14.1f" % (name, ms, 100 * ms / whole, 1e6 * ms / num_tokens))


if __name__ == '__main__':
    main()
