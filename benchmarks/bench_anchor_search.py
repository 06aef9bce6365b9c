"""FastAnchorWords on the device: the stored search against the earlier one, on real rows.

The greedy search and its cleanup pass (:func:`gensim_anchor.anchors.find_anchors`) keep the
rows' residuals from the span of the anchors implicit (Y = Xr + C U^T, with each row's squared
residual updated as the span grows), so that a step reads Y once. Until session 32 a step
rewrote the N x d residuals and summed their squares again, and the cleanup pass rotated the
coordinates by a K x K product; that search is kept here as the variant measured against.

For each corpus (``--corpora``; the whole corpus, pruned as in ``../shared/data/README.md``,
K = 50): the fixed rule's anchor candidates (min(100 documents, 5%)), their rows of Q-bar
projected to 1000 dimensions (the fit's final search) and to 256 (the adaptive candidate rule's
scoring searches), and for each shape, with and without the cleanup pass: the median time of each
search over ``--repeat`` calls timed in alternation in one process (after one call that
compiles; the package's stored program, and the earlier search with the same XLA options), whether
both find the same anchors, and the largest relative difference of the anchors' distances.

With ``--projection``: the projection of those candidates' rows to 1000 dimensions
(:func:`gensim_anchor.anchors.project_rows`), as stored (blocks of 128 columns, the next drawn
on a second thread while the caller multiplies by this one) against the same blocks drawn in turn,
as until session 32 (kept here): medians over ``--repeat`` alternating calls, and whether the rows are equal.

Usage::

    python benchmarks/bench_anchor_search.py [--corpora kos nips 20ng] [--repeat 7] [--projection]
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
K = 50


def _row_rewriting_search(Y, mask, seeds, num_seeds, num_topics, cleanup):
    """The search of sessions 1 to 31, for comparison: the residuals Xr (N x d) rewritten every
    step, their squared norms summed again, the coordinates rotated by a K x K product."""
    import jax
    import jax.numpy as jnp
    from gensim_anchor.anchors import _RANK_TOL, _TIE_TOL, _first_max
    N, d = Y.shape
    penalty = jnp.where(mask, 0.0, -jnp.inf)
    scale = jnp.max(jnp.sum(Y * Y, axis=1))
    tiny, tie = _RANK_TOL * scale, _TIE_TOL * scale

    def householder_to_last(q):
        v = q - jnp.zeros(num_topics, q.dtype).at[-1].set(1.0)
        vv = v @ v
        safe = jnp.where(vv > 1e-30, vv, 1.0)
        return jnp.eye(num_topics, dtype=q.dtype) - jnp.where(vv > 1e-30, 2.0 / safe, 0.0) * jnp.outer(v, v)

    def greedy(k, carry):
        Xr, U, C, S, dist = carry
        r2 = jnp.sum(Xr * Xr, axis=1)
        j = jnp.where(k < num_seeds, seeds[k], _first_max(r2 + penalty, tie))
        nrm = jnp.sqrt(jnp.maximum(r2[j], 0.0))
        u = Xr[j] / jnp.where(nrm > 0, nrm, 1.0)
        c = Xr @ u
        Xr = Xr - jnp.outer(c, u)
        return Xr, U.at[:, k].set(u), C.at[:, k].set(c), S.at[k].set(j.astype(S.dtype)), dist.at[k].set(nrm)

    init = (Y, jnp.zeros((d, num_topics), Y.dtype), jnp.zeros((N, num_topics), Y.dtype),
            jnp.zeros(num_topics, jnp.int32), jnp.zeros(num_topics, Y.dtype))
    Xr, U, C, S, dist = jax.lax.fori_loop(0, num_topics, greedy, init)
    greedy_S = S
    ok = jnp.min(dist) ** 2 > tiny

    def clean(i, carry):
        Xr, U, C, S, dist = carry
        G = C[S].T
        a = jnp.linalg.solve(G.T, jnp.zeros(num_topics, Y.dtype).at[i].set(1.0))
        q = a / jnp.linalg.norm(a)
        t = C @ q
        score = jnp.sum(Xr * Xr, axis=1) + t * t + penalty
        j = _first_max(score, tie)
        H = householder_to_last(q)
        U, C = U @ H, C @ H
        u_i = U[:, -1]
        xr = Xr[j]
        nrm = jnp.sqrt(jnp.maximum(score[j], 0.0))
        u_new = (t[j] * u_i + xr) / nrm
        c_new = (t * t[j] + Xr @ xr) / nrm
        Xr = Xr + jnp.outer(t, u_i) - jnp.outer(c_new, u_new)
        return Xr, U.at[:, -1].set(u_new), C.at[:, -1].set(c_new), S.at[i].set(j.astype(S.dtype)), dist.at[i].set(nrm)

    if cleanup:
        Xr, U, C, S, dist = jax.lax.cond(
            ok, lambda c: jax.lax.fori_loop(num_seeds, num_topics, clean, c), lambda c: c, (Xr, U, C, S, dist))
    return S, dist, greedy_S, ok


def _blocks_in_turn(num_terms, projection_dim, seed):
    """The projection's blocks as drawn until session 32: 128 columns at a time, each drawn
    when the caller asks for it."""
    import math
    rng = np.random.default_rng(seed)
    scale = np.float32(1.0 / math.sqrt(projection_dim))
    for lo in range(0, projection_dim, 128):
        P = rng.standard_normal((num_terms, min(128, projection_dim - lo)), dtype=np.float32)
        P *= scale
        yield lo, P


def compare_projection(cooc, p_w, rows, repeat):
    """(s stored, s earlier, equal rows) of project_rows to 1000 dimensions."""
    from gensim_anchor import anchors
    stored = anchors.projection_blocks
    times, out = {'stored': [], 'earlier': []}, {}
    for i in range(repeat + 1):
        for name in (['stored', 'earlier'] if i % 2 == 0 else ['earlier', 'stored']):
            anchors.projection_blocks = stored if name == 'stored' else _blocks_in_turn
            try:
                t = time.perf_counter()
                out[name] = anchors.project_rows(cooc, p_w, rows, 1000, seed=0)
                if i:  # the first round warms up
                    times[name].append(time.perf_counter() - t)
            finally:
                anchors.projection_blocks = stored
    return (statistics.median(times['stored']), statistics.median(times['earlier']),
            bool(np.array_equal(out['stored'], out['earlier'])))


def compare(Y, cleanup, repeat):
    """(ms of the stored search, ms of the earlier one, same anchors, largest relative difference
    of the anchors' distances)."""
    import jax
    from gensim_anchor import anchors
    from gensim_anchor._compile_cache import LOOP_EMITTERS
    options = LOOP_EMITTERS if jax.default_backend() == 'cpu' else {}
    programs = {'stored': anchors._fast_anchor_words,
                'earlier': jax.jit(_row_rewriting_search, static_argnames=('num_topics', 'cleanup'),
                                   compiler_options=options)}
    args = anchors._search_arguments(Y, np.ones(len(Y), dtype=bool), np.zeros(0, np.int64), K)
    with jax.enable_x64(True):
        out = {name: [np.asarray(a) for a in fn(*args, num_topics=K, cleanup=cleanup)] for name, fn in programs.items()}
        times = {name: [] for name in programs}
        for i in range(repeat):
            for name in (list(programs) if i % 2 == 0 else list(programs)[::-1]):
                t = time.perf_counter()
                jax.block_until_ready(programs[name](*args, num_topics=K, cleanup=cleanup))
                times[name].append(time.perf_counter() - t)
    (S1, d1, _, _), (S0, d0, _, _) = out['stored'], out['earlier']
    return (1e3 * statistics.median(times['stored']), 1e3 * statistics.median(times['earlier']),
            bool(np.array_equal(S1, S0)), float(np.max(np.abs(d1 - d0) / np.abs(d0))))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--corpora', nargs='+', default=['kos', 'nips', '20ng'])
    parser.add_argument('--repeat', type=int, default=7)
    parser.add_argument('--projection', action='store_true',
                        help="time the projection of the candidates' rows instead of the search")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    import bench_dropin
    if not bench_dropin.DATA.is_dir():
        sys.exit("shared data not found at %s" % bench_dropin.DATA)
    from bench_core import machine
    from gensim_anchor.anchors import project_rows, select_candidates
    from gensim_anchor.cooccurrence import build_cooccurrence
    print("# bench_anchor_search: K=%d, medians of %d alternating calls; %s" % (K, args.repeat, machine()))
    if args.projection:
        print("%-6s %6s %6s %10s %10s %7s %6s" % ('corpus', 'V', 'rows', 'stored s', 'earlier s', 'ratio', 'equal'))
    else:
        print("%-6s %6s %5s %8s %10s %10s %7s %6s %9s" % ('corpus', 'rows', 'dims', 'cleanup', 'stored ms',
                                                      'earlier ms', 'ratio', 'same', 'dist diff'))
    for name in args.corpora:
        corpus, dictionary = bench_dropin.load(name)
        cooc = build_cooccurrence(corpus, num_terms=len(dictionary))
        p_w = cooc.row_sums()
        candidates, _ = select_candidates(cooc.doc_freq, p_w, None, cooc.num_docs, K)
        if args.projection:
            new, old, equal = compare_projection(cooc, p_w, candidates, args.repeat)
            print("%-6s %6d %6d %10.3f %10.3f %6.2fx %6s" % (name, cooc.num_terms, len(candidates), new, old,
                                                            old / new, equal), flush=True)
            continue
        for dims in (1000, 256):
            Y = project_rows(cooc, p_w, candidates, dims, seed=0)
            for cleanup in (True, False):
                new, old, same, diff = compare(Y, cleanup, args.repeat)
                print("%-6s %6d %5d %8s %10.1f %10.1f %6.1fx %6s %9.1e" % (
                    name, len(candidates), dims, cleanup, new, old, old / new, same, diff), flush=True)


if __name__ == '__main__':
    main()
