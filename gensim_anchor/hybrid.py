"""Hybrid refinement: likelihood-based sweeps that start from the anchor solution.

The anchor solution is fast and coherent but, measured on real corpora, has a lower held-out
likelihood and fewer distinct words per topic than a sampler. Arora et al. (2013) report that no
hybrid with MCMC beat either method; this module gives one that is cheap enough to run by
default: Gibbs sampling for LDA, initialised from the anchor topics, with every sweep one
vectorised pass over all tokens (jitted once; no Python loop over tokens or documents).

Two samplers (``sampler=``):

``'collapsed'`` (default)
    Every token is drawn from the collapsed conditional of LDA given the current topics of all
    other tokens,

    .. math::

        p(z_{dn} = k) \\propto (n_{dk}^{-dn} + \\alpha_k)
        \\frac{n_{kw}^{-dn} + \\eta}{n_k^{-dn} + V\\eta},

    many tokens at once: a sweep has ``substeps`` sub-steps (default 2), the n-th token of
    every document is drawn in sub-step n mod ``substeps``, and the counts are brought up to
    date between sub-steps. This is AD-LDA (Newman et al., "Distributed algorithms for topic
    models", JMLR 2009) taken to one processor per token of a sub-step: each draw is exact given
    the other tokens, but the tokens of a sub-step move together rather than one after another,
    so the chain approximates the sequential collapsed Gibbs sampler (as AD-LDA does) and is
    not an exact one. With ``substeps`` at least the longest document it is AD-LDA with one
    processor per document. Moving a whole short document at once overestimates alpha (its
    tokens do not see each other's moves); sub-steps reduce that: on 12-token documents drawn
    with alpha = 0.2 the fitted alpha averages 0.34 with 1 sub-step, 0.30 with 2 and 0.23 with
    12 (at eta = 0.01; ``tests/test_hybrid.py``). On the real corpora of the benchmark 2
    sub-steps gave the best balance of held-out likelihood and coherence.
    Measured against tomotopy's sequential sampler: see ``benchmarks/bench_beyond.py``.
    On a CPU the sweep runs on every usable core (at most 8): each sub-step's draw is cut into
    parts that run at once on threads, with the same chain bit for bit
    (:class:`_ThreadedSweep`; 1.2 to 1.9 times faster on 2 cores: ``python benchmarks/bench_sweep.py``,
    ``benchmarks/results/bench_sweep.log``, session 34).

``'blocked'``
    An exact (uncollapsed) Gibbs sampler:

    .. math::

        \\theta_d \\sim \\mathrm{Dir}(\\alpha + n_{d\\cdot}), \\qquad
        \\phi_k \\sim \\mathrm{Dir}(\\eta + n_{k\\cdot}), \\qquad
        z_{dn} \\sim \\mathrm{Cat}(\\theta_d \\circ \\phi_{\\cdot w_{dn}}).

    It mixes more slowly: after 200 sweeps on 20 Newsgroups (K = 50) its held-out likelihood is
    0.064 nats/token below the collapsed sampler's (``benchmarks/results/bench_beyond.log``).

The first assignments are drawn from the anchor solution,
:math:`p(z \\mid w) \\propto p(z) A_{wz}`. After the burn-in the topic estimate is the average
of the posterior means :math:`(n_{kw} + \\eta) / (n_k + V\\eta)` over the remaining sweeps; with
``optimize_alpha`` an asymmetric alpha is updated by Minka's fixed point from the
document-topic counts every sweep. By default the burn-in ends when the chain has settled: the
log joint likelihood :math:`\\log p(w, z \\mid \\alpha, \\eta)` of the training tokens, computed
from the counts every few sweeps, has stopped rising (by less than ``tol`` nats per token per
sweep); the topics are then averaged over as many sweeps again, and ``num_sweeps`` is only a
cap. ``AnchorModel(corpus, ..., refine='gibbs')`` runs all of it in one call.

For the variational alternative, ``AnchorModel.to_ldamodel()`` followed by
``LdaModel.update(corpus, passes=2)`` continues gensim's online variational Bayes from the
anchor topics.

Examples
--------
.. sourcecode:: pycon

    >>> from gensim.corpora import Dictionary
    >>> from gensim.test.utils import common_texts
    >>> from gensim_anchor import AnchorModel
    >>> dictionary = Dictionary(common_texts)
    >>> corpus = [dictionary.doc2bow(text) for text in common_texts]
    >>> model = AnchorModel(corpus, num_topics=2, id2word=dictionary, anchor_min_df=1,
    ...                     alpha='symmetric', random_state=1)
    >>> refined = model.refine(corpus, num_sweeps=20, burn_in=10, random_state=1)
    >>> refined.get_topics().shape
    (2, 12)

"""
import contextlib
import functools
import logging
import time
from typing import NamedTuple

import numpy as np

from . import _compile_cache, _threads
from . import _validation as check
from ._bow import DocumentStore, read_documents
from ._compile_cache import bucket
from ._defaults import (DEFAULT_ETA, DEFAULT_OPTIMIZE_ALPHA, DEFAULT_SAMPLER, DEFAULT_SUBSTEPS,
                        DEFAULT_SWEEPS, REFINE_AVERAGE, REFINE_CHECK_EVERY, REFINE_MIN_BURN_IN,
                        REFINE_TOL, SAMPLERS, tuning)
from ._sampling import seed_of

logger = logging.getLogger(__name__)

# Tokens per block of the assignment step: _defaults.BACKEND_TUNING's gibbs_token_block. On a
# CPU the (block x K) probabilities stay in cache (8,192 tokens: 1.2x faster than 65,536 on
# KOS); an accelerator wants fewer, larger blocks.
# Seconds between progress lines (INFO) during the sweeps.
_LOG_EVERY = 10.0


class GibbsResult(NamedTuple):
    """Topics and prior after refinement.

    Attributes
    ----------
    topics : numpy.ndarray, shape (K, V)
        Posterior-mean p(w | z), averaged over the sweeps after burn-in; rows sum to 1.
    alpha : numpy.ndarray, shape (K,)
        The Dirichlet prior on document topics (updated if ``optimize_alpha``).
    num_tokens : int
        Tokens sampled per sweep.
    num_sweeps : int
        Sweeps run (at most the ``num_sweeps`` cap).
    burn_in : int
        Sweeps before the topics were averaged (chosen by the convergence rule when
        ``burn_in=None``).
    converged : bool
        The log joint settled before the cap (always True with a fixed ``burn_in``).
    log_joint : numpy.ndarray, shape (C, 2)
        (sweep, log p(w, z) per token) at each convergence check (empty with a fixed
        ``burn_in``).
    """
    topics: np.ndarray
    alpha: np.ndarray
    num_tokens: int
    num_sweeps: int = 0
    burn_in: int = 0
    converged: bool = True
    log_joint: np.ndarray = np.zeros((0, 2))


def _flatten(corpus, num_terms, chunksize=10000):
    """Token arrays (document index, word id; int32) and the number of documents of a
    bag-of-words corpus, read by :func:`~gensim_anchor._bow.read_documents` (the common parser,
    a chunk at a time). Empty is allowed (a Dask partition may be)."""
    store = read_documents(corpus, num_terms, chunksize)
    return (*store.tokens(), store.num_docs)


def _tokens(corpus, num_terms, chunksize=10000):
    """Flatten a bag-of-words corpus into token arrays (document index, word id), by
    :func:`_flatten`; a :class:`~gensim_anchor._bow.DocumentStore` (kept by the co-occurrence
    pass) is already parsed. A corpus without tokens is an error."""
    if isinstance(corpus, DocumentStore):
        doc, word = corpus.tokens()
        num_docs = corpus.num_docs
        if len(doc) and word.max() >= num_terms:
            raise ValueError("the documents hold word id %d, outside the topics' %d terms"
                             % (int(word.max()), num_terms))
    else:
        doc, word, num_docs = _flatten(corpus, num_terms, chunksize)
    if not len(doc):
        raise ValueError("the corpus has no tokens to sample")
    return doc, word, num_docs


def _start_topics(topics, weights):
    """V x K float32: p(z | w) up to a constant per word, from topics (K x V) and p(z), the first
    assignments' weights (each token's topic drawn from its word's row)."""
    start_t = topics.T * weights[None, :]
    start_t /= np.maximum(start_t.max(axis=1, keepdims=True), 1e-300)
    return start_t.astype(np.float32)


def _minka_alpha(alpha, n_dk, iterations=5):
    """Minka's (2000) fixed point for an asymmetric Dirichlet from counts (D, K)."""
    import jax.numpy as jnp
    from jax.scipy.special import digamma
    n_d = n_dk.sum(axis=1)
    for _ in range(iterations):
        a0 = alpha.sum()
        num = jnp.sum(digamma(n_dk + alpha) - digamma(alpha), axis=0)
        den = jnp.sum(digamma(n_d + a0) - digamma(a0))
        alpha = jnp.maximum(alpha * num / jnp.maximum(den, 1e-30), 1e-6)
    return alpha


def _log_gamma(key, shape):
    """log of Gamma(shape, 1) variates, exact, for any positive ``shape`` (array).

    Marsaglia & Tsang's (2000) rejection sampler, one candidate per element per round, rounds
    repeated only while some element is still rejected (acceptance >= 0.95, so about
    log(n) / 3 rounds for n elements). Shapes below 1 are boosted: G(a) = G(a + 1) U^(1/a),
    taken in logs because Dir(0.01) components underflow as plain variates. Several times
    faster on a CPU than ``jax.random.loggamma``, whose per-element loop dominated a sweep.
    """
    import jax
    import jax.numpy as jnp
    dtype = shape.dtype
    tiny = jnp.finfo(dtype).tiny
    boost = shape < 1
    d = jnp.where(boost, shape + 1, shape) - 1.0 / 3.0
    c = jax.lax.rsqrt(9.0 * d)
    k_boost, k_loop = jax.random.split(key)

    def round_(state):
        key, value, done = state
        key, kx, ku = jax.random.split(key, 3)
        x = jax.random.normal(kx, shape.shape, dtype)
        log_u = jnp.log(jax.random.uniform(ku, shape.shape, dtype, minval=tiny))
        v = 1.0 + c * x
        positive = v > 0
        log_v = 3.0 * jnp.log(jnp.where(positive, v, 1.0))
        accept = positive & (log_u < 0.5 * x * x + d - d * jnp.exp(log_v) + d * log_v)
        return key, jnp.where(done | ~accept, value, jnp.log(d) + log_v), done | accept

    init = (k_loop, jnp.zeros_like(shape), jnp.zeros(shape.shape, bool))
    _, value, _ = jax.lax.while_loop(lambda s: ~jnp.all(s[2]), round_, init)
    log_u = jnp.log(jax.random.uniform(k_boost, shape.shape, dtype, minval=tiny))
    return jnp.where(boost, value + log_u / shape, value)


def _token_blocks(tokens):
    """Each per-token array in ``tokens`` zero-padded and reshaped to (blocks, block size), the
    blocks of :func:`_draw_topics` (``gibbs_token_block`` tokens, fewer for a short slice)."""
    import jax.numpy as jnp
    T = tokens[0].shape[0]
    size = min(_block_size(), T)
    return tuple(jnp.pad(a, (0, (-T) % size)).reshape(-1, size) for a in tokens)


def _block_size():
    """Tokens per block of the draw on this backend (``gibbs_token_block``)."""
    import jax
    return tuning(jax.default_backend())['gibbs_token_block']


def _uniforms(key, shape):
    """The draw's uniforms, one per token, in (0, 1]: a topic of zero weight is never drawn, the
    first one included."""
    import jax
    import jax.numpy as jnp
    return 1.0 - jax.random.uniform(key, shape, jnp.float32)


def _draw_blocks(u, weights, blocks, num_topics):
    """One topic per token by inverse CDF, a block of tokens at a time: ``blocks`` are per-token
    arrays of shape (blocks, block size), ``u`` the tokens' uniforms (:func:`_uniforms`) of that
    shape, and ``weights(*block)`` maps a block of each array to the unnormalised (block x K)
    topic weights of those tokens; the probabilities never exist for all tokens at once. Returns
    the topics, flat."""
    import jax
    import jax.numpy as jnp

    def block(args):
        *arrays, u = args
        weights_ = weights(*arrays)
        # The cumulative sum over topics written out topic by topic: XLA fuses the chain and
        # the comparisons into one pass over each token's weights. A product with a triangular
        # matrix (2 K^2 flops a token) made the draw 1.5 to 2.3 times slower (20 Newsgroups,
        # NIPS, KOS; python benchmarks/bench_sweep.py, bench_sweep.log, 2026-11-30T04:30Z);
        # jnp.cumsum, a reduce-window on the CPU, slower still (bench_sweep.log, 2026-11-29T23:20Z).
        running = [weights_[:, 0]]
        for k in range(1, num_topics):
            running.append(running[-1] + weights_[:, k])
        target = u * running[-1]
        return sum(((c < target).astype(jnp.int32) for c in running[:-1]),
                   jnp.zeros(target.shape, jnp.int32))

    return jax.lax.map(block, (*blocks, u)).reshape(-1)


def _draw_topics(key, weights, tokens, num_topics):
    """One topic per token (:func:`_draw_blocks`), the per-token arrays ``tokens`` cut into the
    blocks of :func:`_token_blocks`. One uniform per token (Gumbel-max would need K uniforms and
    logarithms)."""
    T = tokens[0].shape[0]
    blocks = _token_blocks(tokens)
    return _draw_blocks(_uniforms(key, blocks[0].shape), weights, blocks, num_topics)[:T]


def _flat_index(counts, rows, cols):
    """Flat indices of ``counts[rows, cols]``, one past the end where ``rows`` or ``cols`` are out
    of range (the padding tokens of :func:`_layout`: a plain ``row * columns + column`` would
    land on the next row); None where int32 indices would overflow.

    The count updates of a sweep go through flat indices because XLA's CPU scatter into a 2-D
    array is the slower one."""
    import jax.numpy as jnp
    if counts.size >= 2 ** 31:
        return None
    n_rows, n_cols = counts.shape
    return jnp.where((rows < n_rows) & (cols < n_cols), rows * n_cols + cols, counts.size)


def _add_at(counts, rows, cols, value):
    """``counts[rows, cols] += value``, the updates at out-of-range indices dropped."""
    flat = _flat_index(counts, rows, cols)
    if flat is None:
        return counts.at[rows, cols].add(value, mode='drop')
    return counts.reshape(-1).at[flat].add(value, mode='drop').reshape(counts.shape)


def _counts_impl(doc, word, z, *, num_docs, num_terms, num_topics):
    """The count matrices n_dk and n_kw of the topic assignments ``z``."""
    import jax.numpy as jnp
    n_dk = _add_at(jnp.zeros((num_docs, num_topics), jnp.int32), doc, z, 1)
    n_kw = _add_at(jnp.zeros((num_topics, num_terms), jnp.int32), z, word, 1)
    return n_dk, n_kw


def _conditional_tables(n_dk, n_kw, alpha, eta):
    """The tables the conditional's weights are gathered from: the topics' word probabilities as
    they stand, transposed (V, K), their denominators n_k + V eta (K,), and n_dk + alpha (D, K)."""
    return _topic_tables(n_kw, eta, alpha.dtype) + (_doc_table(n_dk, alpha),)


def _topic_tables(n_kw, eta, dtype):
    """:func:`_conditional_tables`' first two, which do not depend on alpha or the documents."""
    import jax
    total = n_kw.sum(axis=1).astype(dtype) + n_kw.shape[1] * eta
    # The counts transposed first, on their own: where XLA:CPU fused the transpose into the
    # division instead, the tables took twice as long, for the same values (20 Newsgroups:
    # 7.07 against 3.53 ms a call; python benchmarks/bench_sweep.py --corpus 20ng,
    # benchmarks/results/bench_sweep.log, session 35).
    n_wk = jax.lax.optimization_barrier(n_kw.T)
    return (n_wk.astype(dtype) + eta) / total, total


def _doc_table(n_dk, alpha):
    """:func:`_conditional_tables`' last, n_dk + alpha."""
    return n_dk.astype(alpha.dtype) + alpha


def _conditional(n_dk, n_kw, alpha, eta):
    """The collapsed conditional of a sub-step's tokens given the counts as they stand:
    ``weights(d, w, z_old)``, the unnormalised (tokens x K) weights of :func:`_draw_topics`.

    Every topic but the token's own from the counts (one division per (word, topic) here rather
    than per (token, topic)); the own topic's weight, with the token taken out, from the same two
    gathered rows: with :math:`S_k = n_k + V\\eta`, the row of phi holds :math:`(n_{kw} + \\eta) /
    S_k`, so :math:`(n_{dk} - 1 + \\alpha_k)(n_{kw} - 1 + \\eta) / (S_k - 1)` is
    ``(doc_alpha - 1) * (phi * S - 1) / (S - 1)``. It is computed for every topic and selected
    at the token's own, elementwise, so that XLA fuses it into the draw's single pass over the rows;
    three counts gathered per token instead made the draw 1.2 to 1.3 times slower, and the own
    topic's values picked out of the rows by a sum 4 to 5 times slower (XLA gathered the rows
    again for every use; ``python benchmarks/bench_sweep.py``,
    ``benchmarks/results/bench_sweep.log``, 2026-11-30T05:03Z).
    """
    return _weights(*_conditional_tables(n_dk, n_kw, alpha, eta))


def _weights(phi_t, total, doc_alpha):
    """:func:`_conditional`'s ``weights(d, w, z_old)`` from its tables (:func:`_conditional_tables`)."""
    import jax.numpy as jnp
    num_topics = phi_t.shape[1]
    # Only the own topic's entry is used, and there n_k >= 1 (the token itself): the others
    # may divide by zero, harmlessly (jnp.where selects).
    rest = 1 / (total - 1)

    def weights(d, w, z_old):
        doc_row, word_row = doc_alpha[d], phi_t[w]
        own = (doc_row - 1) * (word_row * total - 1) * rest
        mine = z_old[:, None] == jnp.arange(num_topics)
        return jnp.where(mine, own, doc_row * word_row)
    return weights


def _move_counts(n_dk, n_kw, d, w, z_old, z_new):
    """The counts after tokens (``d``, ``w``) moved from topics ``z_old`` to ``z_new``."""
    n_dk = _add_at(_add_at(n_dk, d, z_old, -1), d, z_new, 1)
    n_kw = _add_at(_add_at(n_kw, z_old, w, -1), z_new, w, 1)
    return n_dk, n_kw


def _sweep_impl(key, doc, word, z, n_dk, n_kw, alpha, eta, *, sampler, optimize_alpha, offsets):
    """One sweep of a sampler: new topics, counts, alpha and the posterior-mean topics.

    ``offsets`` (static): the collapsed sampler's sub-steps, as boundaries of contiguous slices
    of the token arrays, each sub-step one slice (tokens are ordered by sub-step).
    """
    import jax
    import jax.numpy as jnp
    num_docs = n_dk.shape[0]
    num_topics, num_terms = n_kw.shape

    def blocked(key, doc, word, z, n_dk, n_kw, alpha, eta):
        k_theta, k_phi, k_z = jax.random.split(key, 3)
        # theta_d and phi_k from log-gamma draws, each kept only up to a constant per row of
        # the (token x topic) product: theta scaled to max 1 per document, p(w | z) normalised
        # per topic and then scaled to max 1 per word, so that no token's weights underflow
        # to all zeros.
        log_theta = _log_gamma(k_theta, alpha + n_dk.astype(alpha.dtype))
        theta = jnp.exp(log_theta - log_theta.max(axis=1, keepdims=True))
        log_phi = _log_gamma(k_phi, eta + n_kw.astype(alpha.dtype))
        log_phi = log_phi - jax.nn.logsumexp(log_phi, axis=1, keepdims=True)
        phi_t = jnp.exp(log_phi - log_phi.max(axis=0, keepdims=True)).T
        z = _draw_topics(k_z, lambda d, w: theta[d] * phi_t[w], (doc, word), num_topics)
        return (z,) + _counts_impl(doc, word, z, num_docs=num_docs, num_terms=num_terms,
                                   num_topics=num_topics)

    def collapsed(key, doc, word, z, n_dk, n_kw, alpha, eta):
        # Each token from the collapsed conditional given every other token's current topic;
        # the tokens of one sub-step at once (AD-LDA, Newman et al. 2009, with one processor
        # per token), the counts brought up to date between sub-steps.
        keys = jax.random.split(key, len(offsets) - 1)
        for key, lo, hi in zip(keys, offsets[:-1], offsets[1:]):
            if hi == lo:
                continue
            d, w, z_old = doc[lo:hi], word[lo:hi], z[lo:hi]
            weights = _conditional(n_dk, n_kw, alpha, eta)
            z_new = _draw_topics(key, weights, (d, w, z_old), num_topics)
            n_dk, n_kw = _move_counts(n_dk, n_kw, d, w, z_old, z_new)
            z = z.at[lo:hi].set(z_new)
        return z, n_dk, n_kw

    draw = dict(blocked=blocked, collapsed=collapsed)[sampler]
    z, n_dk, n_kw = draw(key, doc, word, z, n_dk, n_kw, alpha, eta)
    return (z, n_dk, n_kw) + _end_of_sweep(n_dk, n_kw, alpha, eta, optimize_alpha)


def _end_of_sweep(n_dk, n_kw, alpha, eta, optimize_alpha):
    """(alpha, posterior-mean topics) after a sweep's draws."""
    if optimize_alpha:
        # One fixed-point step per sweep: alpha is carried from sweep to sweep, so the
        # steps accumulate (five per sweep took 15% of a 20 Newsgroups sweep).
        alpha = _minka_alpha(alpha, n_dk.astype(alpha.dtype), iterations=1)
    return alpha, _posterior_mean(n_kw, eta, alpha.dtype)


def _posterior_mean(n_kw, eta, dtype):
    """The posterior mean topics of the counts, (n_kw + eta) / (n_k + V eta), (K, V), in
    ``dtype``: jax arrays in the sweep, numpy ones (float64) on the Dask client."""
    n_kw = n_kw.astype(dtype)
    return (n_kw + eta) / (n_kw.sum(axis=1, keepdims=True) + n_kw.shape[1] * eta)


# ----------------------------------------------------------------------------------------------
# The collapsed sweep on several CPU cores: the programs of _sweep_impl, cut where it waits
# ----------------------------------------------------------------------------------------------
# On a CPU XLA runs the blocks of a draw one after another, and a sweep kept 1.6 of 2 cores busy
# (20 Newsgroups). The same sweep as separate programs, each sub-step's draw cut into parts that
# run at once on threads (:mod:`._threads`), gives the same chain bit for bit.


def _draw_part_impl(key, doc, word, z, phi_t, total, doc_alpha, step, start, owned, *,
                    num_substeps, size, count):
    """The topics that :func:`_sweep_impl` (collapsed) draws for blocks ``start`` to ``start +
    count`` of sub-step ``step`` (blocks of ``size`` tokens; each sub-step a slice of equal
    length, a whole number of blocks), from the tables of the counts as they stand: the same
    key, the same uniforms (the slice's, cut), the same weights, so the same topics. Also the
    changes of the counts that the part's tokens from its ``owned``-th on make (the tokens before
    are another part's): they are added up after all parts (:func:`_merge_impl`).

    Returns
    -------
    (topics, n_dk change, n_kw change)
    """
    import jax
    import jax.numpy as jnp
    length = doc.shape[0] // num_substeps
    key = jax.random.split(key, num_substeps)[step]
    u = jax.lax.dynamic_slice(_uniforms(key, (length // size, size)), (start, 0), (count, size))
    lo = step * length + start * size
    d, w, z_old = (jax.lax.dynamic_slice(a, (lo,), (count * size,)) for a in (doc, word, z))
    blocks = tuple(a.reshape(count, size) for a in (d, w, z_old))
    z_new = _draw_blocks(u, _weights(phi_t, total, doc_alpha), blocks, phi_t.shape[1])
    # Tokens that are not the part's own are sent out of bounds: their updates are dropped.
    mine = jnp.arange(count * size) >= owned
    (num_docs, num_topics), num_terms = doc_alpha.shape, phi_t.shape[0]
    changes = _move_counts(jnp.zeros((num_docs, num_topics), jnp.int32),
                           jnp.zeros((num_topics, num_terms), jnp.int32),
                           jnp.where(mine, d, num_docs), jnp.where(mine, w, num_terms), z_old, z_new)
    return (z_new,) + changes


def _merge_impl(z, n_dk, n_kw, parts, step, alpha, eta, *, num_substeps, size, starts):
    """Sub-step ``step``'s parts (:func:`_draw_part_impl`, drawn at the blocks ``starts``; parts
    may overlap, with the same topics) merged: the topics set into ``z``, the count changes
    added; and the tables of the counts after it (the next sub-step's draw)."""
    import jax
    length = z.shape[0] // num_substeps
    z_new = jax.lax.dynamic_slice(z, (step * length,), (length,))
    for (topics, d_dk, d_kw), start in zip(parts, starts):
        z_new = jax.lax.dynamic_update_slice(z_new, topics, (start * size,))
        n_dk, n_kw = n_dk + d_dk, n_kw + d_kw
    z = jax.lax.dynamic_update_slice(z, z_new, (step * length,))
    return (z, n_dk, n_kw) + _conditional_tables(n_dk, n_kw, alpha, eta)


def _finish_impl(n_dk, n_kw, alpha, eta, *, optimize_alpha):
    """:func:`_end_of_sweep`, and the next sweep's first draw's table of the documents (those
    of the topics are the last sub-step's: the counts are the same)."""
    alpha, mean = _end_of_sweep(n_dk, n_kw, alpha, eta, optimize_alpha)
    return alpha, mean, _doc_table(n_dk, alpha)


class _ThreadedSweep:
    """The collapsed sweep of :func:`_sweep_impl`, as a function of the same arguments with the
    same results bit for bit, run as separate programs: per sub-step, the draw and its count
    changes cut into ``threads`` parts of whole blocks that run at once (one on the calling
    thread; :func:`~._threads.run_all`), then :func:`_merge_impl`; per sweep,
    :func:`_finish_impl`. The tables a program leaves for the next draw are kept, and used when
    the next call passes the counts this one returned.

    Use it as a context manager: it holds the threads' pool.
    """

    def __init__(self, offsets, size, threads, optimize_alpha):
        from concurrent.futures import ThreadPoolExecutor
        programs = _programs()
        self.num_substeps = len(offsets) - 1
        num_blocks = (offsets[1] - offsets[0]) // size
        count = -(-num_blocks // threads)
        # The last part ends with the slice; it may overlap the one before by a few blocks,
        # whose tokens it draws but does not count.
        self.starts = tuple(min(p * count, num_blocks - count) for p in range(threads))
        self._owned = tuple(np.int32((p * count - start) * size) for p, start in enumerate(self.starts))
        static = dict(num_substeps=self.num_substeps, size=size)
        self._draw = functools.partial(programs['draw_part'], count=count, **static)
        self._merge = functools.partial(programs['merge'], starts=self.starts, **static)
        self._finish = functools.partial(programs['finish'], optimize_alpha=optimize_alpha)
        self._tables = programs['tables']
        self._pool = ThreadPoolExecutor(threads - 1, thread_name_prefix='gensim_anchor-sweep')
        self._kept = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._pool.shutdown()

    def __call__(self, key, doc, word, z, n_dk, n_kw, alpha, eta):
        kept = self._kept
        if kept is not None and kept[0] is n_dk and kept[1] is n_kw and kept[2] is alpha:
            tables = kept[3]
        else:
            tables = self._tables(n_dk, n_kw, alpha, eta)
        for step in map(np.int32, range(self.num_substeps)):
            args = (key, doc, word, z) + tuple(tables) + (step,)
            parts = tuple(_threads.run_all([functools.partial(self._draw, *args, np.int32(s), owned)
                                            for s, owned in zip(self.starts, self._owned)], self._pool))
            z, n_dk, n_kw, *tables = self._merge(z, n_dk, n_kw, parts, step, alpha, eta)
        alpha, mean, doc_alpha = self._finish(n_dk, n_kw, alpha, eta)
        tables = (*tables[:2], doc_alpha)
        self._kept = (n_dk, n_kw, alpha, tables)
        return z, n_dk, n_kw, alpha, mean


def _threaded_sweep(offsets, threads, optimize_alpha):
    """A :class:`_ThreadedSweep` of a chain's sub-steps (``offsets``) on ``threads`` threads, or
    None where it does not apply: one thread, or sub-steps that are not at least two whole
    blocks of the draw (small corpora, whose sweeps are short anyway)."""
    length, size = offsets[1] - offsets[0], _block_size()
    threads = min(threads, length // size)
    if threads < 2 or length % size:
        return None
    return _ThreadedSweep(offsets, size, threads, optimize_alpha)


_COUNTS_STATIC = ('num_docs', 'num_terms', 'num_topics')
_SWEEP_STATIC = ('sampler', 'optimize_alpha', 'offsets')


@functools.lru_cache(maxsize=1)
def _programs():
    """The sampler's jitted programs, kept as executables in the compile cache
    (:class:`~._compile_cache.stored_jit`): a later process refining the same corpus loads them
    instead of tracing and compiling (seconds on a CPU, most of a refinement on a GPU)."""
    import jax
    stored = _compile_cache.stored_jit
    split = ('num_substeps', 'size')
    return dict(counts=stored(jax.jit(_counts_impl, static_argnames=_COUNTS_STATIC), _COUNTS_STATIC),
                sweep=stored(jax.jit(_sweep_impl, static_argnames=_SWEEP_STATIC), _SWEEP_STATIC),
                tables=stored(jax.jit(_conditional_tables)),
                draw_part=stored(jax.jit(_draw_part_impl, static_argnames=split + ('count',)),
                                 split + ('count',)),
                merge=stored(jax.jit(_merge_impl, static_argnames=split + ('starts',)), split + ('starts',)),
                finish=stored(jax.jit(_finish_impl, static_argnames=('optimize_alpha',)),
                              ('optimize_alpha',)),
                log_joint=stored(jax.jit(_log_joint_impl)),
                first_topics=stored(jax.jit(_first_topics_impl)))


def _log_joint_impl(n_dk, n_kw, alpha, eta):
    """log p(w, z | alpha, eta) per token of the sampler's state (collapsed over theta and phi;
    Griffiths & Steyvers 2004, eq. 2-3), from the counts alone."""
    import jax.numpy as jnp
    from jax.scipy.special import gammaln
    K, V = n_kw.shape
    n_kw, n_dk = n_kw.astype(jnp.float32), n_dk.astype(jnp.float32)
    words = (K * (gammaln(V * eta) - V * gammaln(eta)) + gammaln(n_kw + eta).sum()
             - gammaln(n_kw.sum(axis=1) + V * eta).sum())
    docs = (n_dk.shape[0] * (gammaln(alpha.sum()) - gammaln(alpha).sum())
            + gammaln(n_dk + alpha).sum() - gammaln(n_dk.sum(axis=1) + alpha.sum()).sum())
    return (words + docs) / n_kw.sum()


def _log_joint_fn():
    """The jitted :func:`_log_joint_impl` (stored in the compile cache)."""
    return _programs()['log_joint']


def _settled(checks, tol):
    """The convergence rule: the log joint per token rose by less than ``tol`` per sweep
    between the last two checks."""
    (s0, l0), (s1, l1) = checks[-2], checks[-1]
    return (l1 - l0) / (s1 - s0) < tol


def _burn_in_ends(sweep, num_sweeps, checks, tol):
    """(ends, settled) after ``sweep`` sweeps (1-based) of an adaptive burn-in: it ends at a check
    made at this sweep where the chain has settled (:func:`_settled`, after REFINE_MIN_BURN_IN
    sweeps), or at half the cap (rounded down) on any sweep: that half falls between checks
    unless it is a multiple of REFINE_CHECK_EVERY, and a cap below REFINE_CHECK_EVERY has no
    check at all."""
    settled = (len(checks) > 1 and checks[-1][0] == sweep and sweep >= REFINE_MIN_BURN_IN
               and _settled(checks, tol))
    return settled or sweep >= num_sweeps // 2, settled


def _substep_order(doc, num_docs, substeps):
    """Token order and sub-step boundaries: the n-th token of a document goes to sub-step
    n mod ``substeps``, so each sub-step holds 1/substeps of every document."""
    if substeps == 1:  # one slice, in document order: nothing to sort
        return np.arange(len(doc)), (0, len(doc))
    starts = np.searchsorted(doc, np.arange(num_docs))
    step = (np.arange(len(doc)) - starts[doc]) % substeps
    order = np.argsort(step, kind='stable')
    offsets = np.concatenate([[0], np.cumsum(np.bincount(step, minlength=substeps))])
    return order, tuple(int(o) for o in offsets)


# Tiny corpora (examples, tests) share one sweep per K: slices of at least this many tokens,
# and at least this many document rows.
_MIN_SLICE = 64
_MIN_DOCS = 16


def _layout(doc, word, num_docs, num_terms, substeps):
    """The tokens in sub-step order (:func:`_substep_order`), every sub-step a slice of one
    bucketed length L (:func:`~gensim_anchor._compile_cache.bucket`, at least :data:`_MIN_SLICE`),
    and the documents' count padded to a bucket (at least :data:`_MIN_DOCS`): the shapes, and
    with them the compiled sweep, are shared by every corpus of about the same size (within 1/8),
    in this process and, through the compile cache, in the next.

    Padding tokens point one past the last document row and the last word column: XLA drops
    scatter updates at indices out of bounds (and clamps gathers), so they never reach the
    counts (padding rows of n_dk stay zero, and add exactly nothing to alpha's update or the
    log joint) and the sweep is the sweep of the real tokens.

    Returns
    -------
    (doc, word, num_padded_docs, offsets)
    """
    order, offsets = _substep_order(doc, num_docs, substeps)
    doc, word = doc[order], word[order]
    sizes = np.diff(offsets)
    length = max(bucket(sizes.max()), _MIN_SLICE)
    num_padded = max(bucket(num_docs), _MIN_DOCS)
    pad_doc = np.full((substeps, length), num_padded, np.int32)
    pad_word = np.full((substeps, length), num_terms, np.int32)
    for s in range(substeps):
        pad_doc[s, :sizes[s]] = doc[offsets[s]:offsets[s + 1]]
        pad_word[s, :sizes[s]] = word[offsets[s]:offsets[s + 1]]
    return pad_doc.ravel(), pad_word.ravel(), num_padded, tuple(range(0, substeps * length + 1, length))


def _first_topics_impl(key, start_t, word):
    """First assignments: each token's topic drawn from its word's row of ``start_t``."""
    return _draw_topics(key, lambda w: start_t[w], (word,), start_t.shape[1])


def _first_topics(key, start_t, word):
    return _programs()['first_topics'](key, start_t, word)


def _compiled_sweep(sampler, num_docs, num_terms, num_topics, optimize_alpha, offsets):
    """(counts, sweep) of one sampler and corpus shape, as functions of the arrays alone."""
    programs = _programs()
    counts = functools.partial(programs['counts'], num_docs=num_docs, num_terms=num_terms,
                               num_topics=num_topics)
    sweep = functools.partial(programs['sweep'], sampler=sampler, optimize_alpha=optimize_alpha,
                              offsets=offsets)
    return counts, sweep


def _start_chain(key, start_t, doc, word, num_docs, *, substeps, optimize_alpha,
                 sampler=DEFAULT_SAMPLER):
    """A chain's first state: the tokens laid out (:func:`_layout`), each token's first topic
    drawn from its word's row of ``start_t`` (V x K, :func:`_start_topics`), the counts, and the
    compiled sweep of this shape (one start for :func:`gibbs_refine` and the Dask partitions).
    The blocked sampler draws all tokens at once: one sub-step, whatever ``substeps``.

    Returns
    -------
    (doc, word, z, n_dk, n_kw, offsets, sweep)
        The token arrays, topics and counts as JAX arrays; the sub-steps' offsets; the sweep.
    """
    import jax.numpy as jnp
    num_terms, num_topics = start_t.shape
    doc, word, num_padded, offsets = _layout(doc, word, num_docs, num_terms,
                                             substeps if sampler == 'collapsed' else 1)
    counts, sweep = _compiled_sweep(sampler, num_padded, num_terms, num_topics, optimize_alpha, offsets)
    doc, word = jnp.asarray(doc), jnp.asarray(word)
    z = _first_topics(key, jnp.asarray(start_t), word)
    n_dk, n_kw = counts(doc, word, z)
    return doc, word, z, n_dk, n_kw, offsets, sweep


def _check_arguments(topics, alpha, p_z, num_sweeps, burn_in, tol, eta, sampler, substeps):
    """The sampler's arguments, checked and normalised (one place for the one-machine and the
    Dask refinement, :mod:`gensim_anchor.distributed_hybrid`); p_z is returned as the weights of
    the first topics (alpha's shape without it)."""
    # Rows that are not distributions would weigh the first topics wrongly, without an error.
    topics = check.check_topics(topics, 'topics')
    K = topics.shape[0]
    alpha = np.asarray(alpha, dtype=np.float64).reshape(-1)
    if alpha.shape != (K,) or not np.all(np.isfinite(alpha)) or np.any(alpha <= 0):
        raise ValueError("alpha must be %d positive finite numbers, got %r" % (K, alpha))
    num_sweeps = check.check_int('num_sweeps', num_sweeps, minimum=1)
    burn_in = check.check_int('burn_in', burn_in, minimum=0, allow_none=True)
    if burn_in is not None and burn_in >= num_sweeps:
        raise ValueError("burn_in=%d must be smaller than num_sweeps=%d" % (burn_in, num_sweeps))
    if burn_in is None and num_sweeps < 2:
        raise ValueError("num_sweeps must be >= 2 with burn_in=None (a burn-in and an average)")
    tol = check.check_positive_float('tol', tol)
    eta = 1.0 / K if eta is None else check.check_positive_float('eta', eta)
    sampler = check.check_option('sampler', sampler, SAMPLERS)
    substeps = check.check_int('substeps', substeps, minimum=1)
    if p_z is None:
        weights = alpha / alpha.sum()
    else:  # checked, but used as given: renormalising would move the chains by a rounding
        check.check_p_z(p_z, K)
        weights = np.asarray(p_z, dtype=np.float64)
    return topics, alpha, weights, num_sweeps, burn_in, tol, eta, sampler, substeps


def gibbs_refine(topics, alpha, corpus, *, p_z=None, num_sweeps=DEFAULT_SWEEPS, burn_in=None,
                 eta=DEFAULT_ETA, optimize_alpha=DEFAULT_OPTIMIZE_ALPHA, sampler=DEFAULT_SAMPLER,
                 substeps=DEFAULT_SUBSTEPS, tol=REFINE_TOL, random_state=None, callback=None):
    """Refine topics by Gibbs sampling for LDA, starting from them.

    Parameters
    ----------
    topics : array_like, shape (K, V), or a gensim topic model
        Starting p(w | z) (rows sum to 1), e.g. ``AnchorModel.get_topics()``; the paper's A
        (V x K, columns summing to 1) is read as its transpose.
    alpha : array_like, shape (K,)
        Starting Dirichlet prior on document topics.
    corpus : iterable of list of (int, int), or :class:`~gensim_anchor._bow.DocumentStore`
        The training documents (read once; tokens are held in memory: 12 bytes each, with
        their topics).
    p_z : array_like, shape (K,), optional
        Topic weights for the first assignments, a distribution (default: ``alpha``
        normalised).
    num_sweeps : int
        The cap on sweeps.
    burn_in : int, optional
        Sweeps before the topic estimates are averaged (``burn_in < num_sweeps``; then exactly
        ``num_sweeps`` are run). None (default): chosen by the convergence rule below, and the
        sampler stops early.
    tol : float
        The convergence rule (``burn_in=None``): every :data:`~gensim_anchor._defaults.REFINE_CHECK_EVERY`
        sweeps the log joint likelihood of the training tokens and their topics,
        :math:`\\log p(w, z \\mid \\alpha, \\eta)` per token (held-in data only), is computed
        from the counts; burn-in ends at the first check, after at least
        :data:`~gensim_anchor._defaults.REFINE_MIN_BURN_IN` sweeps, where it rose by less
        than ``tol`` nats per token per sweep since the previous check. The topics are then
        averaged over ``max(REFINE_AVERAGE, burn_in)`` more sweeps, within the cap. If it
        never settles, burn-in ends at half the cap, rounded down (``converged`` is False).
    eta : float, optional
        Symmetric topic-word prior; None (default): 1/K, LdaModel's default
        (:data:`~gensim_anchor._defaults.DEFAULT_ETA` gives the measurements behind it).
    optimize_alpha : bool
        Update an asymmetric alpha by Minka's fixed point every sweep.
    sampler : {'collapsed', 'blocked'}
        ``'collapsed'``: every token drawn from its collapsed conditional given the other
        tokens' topics of the previous sweep (AD-LDA with one processor per token; converges in
        far fewer sweeps). ``'blocked'``: theta and phi drawn, then every token given them (an
        exact Gibbs sampler, slower to mix). See the module docstring.
    substeps : int
        Sub-steps of a collapsed sweep: the n-th token of every document is updated in sub-step
        n mod ``substeps``, the counts brought up to date between sub-steps. 1 updates all
        tokens at once; more follow the sequential sampler more closely (on short documents
        the simultaneous update overestimates alpha). Unused by ``'blocked'``.
    random_state : {int, numpy.random.RandomState}, optional
        Seed; the same seed gives the same result.
    callback : callable, optional
        ``callback(sweep, state)`` after every sweep (1-based), with ``state`` a dict of the
        counts ``n_dk``, ``n_kw``, ``alpha`` and the running ``average`` of the topic
        estimates (None during burn-in), as JAX arrays: for monitoring, e.g. the curves of
        ``benchmarks/bench_refine.py``.

    Returns
    -------
    GibbsResult

    Notes
    -----
    Why the log joint: it is the quantity the collapsed sampler's moves raise on average, it
    needs only the counts (no held-out data, no extra pass), and it flattens when the chain
    has reached its stationary regime, which is when averaging the posterior means starts to
    pay (the held-out likelihood curves of ``benchmarks/results/bench_refine.log``).
    """
    import jax
    import jax.numpy as jnp
    _compile_cache.enable()  # the sweeps compile for seconds: kept for the next process

    topics, alpha, weights, num_sweeps, burn_in, tol, eta, sampler, substeps = _check_arguments(
        topics, alpha, p_z, num_sweeps, burn_in, tol, eta, sampler, substeps)
    K, V = topics.shape
    doc, word, num_docs = _tokens(corpus, V)
    num_tokens = len(doc)
    start = time.perf_counter()
    key = jax.random.PRNGKey(seed_of(random_state))
    key, k0 = jax.random.split(key)
    # First assignments from the anchor solution: p(z | w) proportional to p(z) p(w | z).
    doc_j, word_j, z, n_dk, n_kw, offsets, sweep = _start_chain(
        k0, _start_topics(topics, weights), doc, word, num_docs, sampler=sampler,
        substeps=substeps, optimize_alpha=bool(optimize_alpha))
    alpha_j = jnp.asarray(alpha, jnp.float32)
    total = jnp.zeros((K, V), jnp.float32)
    eta_j = jnp.float32(eta)
    adaptive, converged, checks = burn_in is None, burn_in is not None, []
    end = num_sweeps
    last_log = time.perf_counter()
    # On a CPU, the same sweep with its draws on several threads (None where it does not apply).
    threaded = (_threaded_sweep(offsets, _threads.host_threads(), bool(optimize_alpha))
                if sampler == 'collapsed' else None)
    with threaded or contextlib.nullcontext(sweep) as sweep:
        for i in range(num_sweeps):  # a few jitted calls per sweep; the sweep itself has no loop
            key, k = jax.random.split(key)
            z, n_dk, n_kw, alpha_j, mean_phi = sweep(k, doc_j, word_j, z, n_dk, n_kw, alpha_j, eta_j)
            if burn_in is not None and i >= burn_in:
                total = total + mean_phi
            elif adaptive:
                if (i + 1) % REFINE_CHECK_EVERY == 0:
                    checks.append((i + 1, float(_log_joint_fn()(n_dk, n_kw, alpha_j, eta_j))))
                ends, settled = _burn_in_ends(i + 1, num_sweeps, checks, tol)
                if ends:
                    burn_in, converged = i + 1, settled
                    end = min(num_sweeps, burn_in + max(REFINE_AVERAGE, burn_in))
            if callback is not None:
                averaging = burn_in is not None and i >= burn_in
                callback(i + 1, dict(n_dk=n_dk, n_kw=n_kw, alpha=alpha_j,
                                     average=total / (i + 1 - burn_in) if averaging else None))
            if time.perf_counter() - last_log > _LOG_EVERY:
                alpha_j.block_until_ready()  # sweeps run asynchronously: time the finished ones
                last_log = time.perf_counter()
                logger.info("Gibbs sweep %d/%d (%s burn-in), %.1f s, alpha sum %.3g",
                            i + 1, end, burn_in if burn_in is not None else 'adaptive',
                            last_log - start, float(alpha_j.sum()))
            if i + 1 >= end:
                break
    result = np.asarray(total, dtype=np.float64)
    result /= result.sum(axis=1, keepdims=True)
    logger.info("Gibbs refinement (%s): %d sweeps (%d burn-in%s) over %d tokens of %d documents, "
                "K=%d, in %.2fs", sampler, i + 1, burn_in,
                "" if not adaptive else ", settled" if converged else ", not settled: the cap",
                num_tokens, num_docs, K, time.perf_counter() - start)
    return GibbsResult(result, np.asarray(alpha_j, dtype=np.float64), num_tokens, i + 1, burn_in,
                       converged, np.array(checks, dtype=np.float64).reshape(-1, 2))
