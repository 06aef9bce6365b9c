"""Document likelihood :math:`p(w_d \\mid \\beta, \\alpha)` under LDA, estimated by sequential Monte
Carlo in JAX; held-out log-likelihood per token.

What is estimated
-----------------
For a document with tokens :math:`w_1 \\dots w_N` (the bag of words expanded into a sequence),
topics :math:`\\beta` (K x V, rows p(w | z)) and a Dirichlet prior :math:`\\alpha`,

.. math::

    p(w_d \\mid \\beta, \\alpha)
    = \\int \\prod_{n=1}^{N} \\Big(\\sum_k \\theta_k \\beta_{k w_n}\\Big)
        \\mathrm{Dir}(\\theta; \\alpha)\\, d\\theta
    = \\sum_{z} \\prod_n \\beta_{z_n w_n}\\,
        \\frac{\\Gamma(\\alpha_0)}{\\Gamma(\\alpha_0 + N)}
        \\prod_k \\frac{\\Gamma(\\alpha_k + n_k(z))}{\\Gamma(\\alpha_k)},

the probability of the token *sequence* (no multinomial coefficient :math:`N!/\\prod_w n_w!`, which
does not depend on the model; this is the usual held-out likelihood of topic-model papers).
It is the exact LDA marginal likelihood, not a variational bound.

Estimator: left-to-right sequential Monte Carlo with rejuvenation
-----------------------------------------------------------------
The chain rule :math:`p(w) = \\prod_n p(w_n \\mid w_{<n})` is computed with R particles, each a
topic assignment :math:`z_{<n}` of the tokens seen so far (Wallach et al. 2009's left-to-right
algorithm, made a proper particle filter; Del Moral, Doucet & Jasra 2006; Gilks & Berzuini 2001).
At token n every particle r is weighted by its predictive probability

.. math::

    W^r_n = p(w_n \\mid z^r_{<n}) = \\sum_k \\beta_{k w_n}\\,
        \\frac{n^r_k + \\alpha_k}{n - 1 + \\alpha_0},

the particles are resampled (systematic resampling, when the effective sample size falls below
R/2), :math:`z_n` is drawn from :math:`p(z_n \\mid z^r_{<n}, w_n) \\propto \\beta_{k w_n}(n^r_k +
\\alpha_k)`, and ``num_moves`` collapsed-Gibbs updates of earlier assignments (cycling over the
positions :math:`0 \\dots n`) rejuvenate each particle; they leave
:math:`p(z_{\\le n} \\mid w_{\\le n})` invariant and undo early, poorly informed choices. The
estimate is the mean final weight, :math:`\\hat p(w) = \\frac1R \\sum_r \\prod_n W^r_n` (with the
products carried through the resampling steps).

* :math:`\\hat p(w)` is **unbiased** for :math:`p(w)`, for any R, ``num_moves`` and token order.
  Its log, which is returned, is therefore biased **low**: :math:`E[\\log\\hat p] \\le \\log p`
  (Jensen), by about half the relative variance of :math:`\\hat p`, and
  :math:`\\Pr(\\log\\hat p > \\log p + t) \\le e^{-t}` (Markov): a stochastic lower bound. The bias
  shrinks as ``num_samples`` and ``num_moves`` grow.
* Tokens are processed most informative first: words sorted by :math:`\\max_k p(z=k \\mid w)` under
  the prior mean (anchor words, which name their topic, come first), taken round-robin (each
  distinct word once, then the repeats). The order changes only the variance.
* Why this estimator: measured in a one-off study (its script was not kept) on 40 KOS
  documents (149 tokens on average) with 50 anchor-word topics, against a reference from 20,000 particles (which agreed with 2,000 particles x 64
  moves to 0.03 nats per document), mean error in nats per document at
  :math:`\\alpha_0 = 1` / :math:`\\alpha_0 = 10`:

  ==============================================================  ===========  ============
  estimator                                                       alpha_0 = 1  alpha_0 = 10
  ==============================================================  ===========  ============
  importance sampling over theta from Dir(c gamma_d), 10^6 draws  -4.3         -2.2
  this filter, R = 50, no moves (plain left-to-right)             -5.6         -2.0
  R = 20, 4 moves (default of fit_alpha_scale)                    -3.3         -1.05
  R = 50, 8 moves (the default)                                   -1.27        -0.31
  R = 100, 16 moves                                               -0.42        -0.08
  ==============================================================  ===========  ============

  The default is off by -0.0085 and -0.0021 nats per token. Importance sampling over
  :math:`\\theta` fails because the mean-field Dirichlet has the wrong shape in 50 dimensions:
  even tempered, its median effective sample size was 20 to 80 out of 10^6 draws. Processing the
  tokens in the order of the bag of words (word id) instead of most-informative-first made the
  error about 4 times larger at :math:`\\alpha_0 = 1` in an earlier study (R = 50, 8 moves, 40
  KOS documents of 136 tokens: -6.3 against -1.4 nats per document).

Cost
----
:math:`O(N R (J + 1) K)` arithmetic per document of N tokens (R = ``num_samples``,
J = ``num_moves``), memory :math:`O(R (N + K))` per document. A resampling copies every
particle's assignments (R times the padded length), so it is done only on the steps where a
particle of the batch needs it: copied on every step, they made a long document's cost grow as
the square of its length (16,000 tokens: 5.5 s before, 1.0 s now; 100,000 and 1,000,000 tokens
now 6.4 and 62 s, the 61 to 64 us per token of a document of 1,000:
``benchmarks/bench_likelihood.py``, its log). Documents are sorted by length and cut into
batches of up to 64 (more when every document is short); a batch is one jitted
``lax.fori_loop`` over its longest document's tokens, ``vmap``-ed over its rows: a row is a
document at one value of alpha_0 (:func:`.dirichlet.fit_alpha_scale` scores several).
Arrays are padded to a power of 4 tokens (at least 16), so that few shapes are compiled (on
first use). 1,000 KOS documents (138k tokens, K = 50 random topics, defaults) take 6.1 s on 2
CPU cores, 11.0 s on the first call, with the compilation (``benchmarks/bench_likelihood.py``,
log in ``benchmarks/results``; measured before the rows of the previous sentence).

Randomness comes from ``random_state`` (an int or a ``numpy.random.RandomState``, as everywhere
in gensim): one draw seeds a JAX key, and document i of the corpus gets the key
``fold_in(key, i)``, so the result for a seed does not depend on the chunking, and every
:math:`\\alpha` evaluated with the same seed sees the same random numbers (common random numbers,
used by :func:`gensim_anchor.dirichlet.fit_alpha_scale`).

Examples
--------
.. sourcecode:: pycon

    >>> import numpy as np
    >>> from gensim_anchor.likelihood import document_log_likelihood
    >>> topics = np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5]])
    >>> alpha = np.array([0.5, 0.5])
    >>> result = document_log_likelihood(topics, alpha, [[(0, 1), (2, 1)], [], [(9, 2)]],
    ...                                  random_state=0)
    >>> # word 0 is topic 0's, word 2 topic 1's: p = E[theta_0 theta_1] * 0.5 * 0.5 = 1/8 * 1/4
    >>> bool(abs(result.log_p[0] - np.log(1 / 32)) < 0.01), result.num_tokens.tolist()
    (True, [2, 0, 0])
    >>> result.num_unknown.tolist()  # word 9 is outside the vocabulary
    [0, 0, 2]

"""
import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from gensim import utils
from jax.scipy.special import logsumexp

from ._bow import padded_positions, parse_chunk, segment_sums
from ._compile_cache import power_of_two, stored_jit
from ._defaults import LIKELIHOOD_MOVES, LIKELIHOOD_SAMPLES
from ._sampling import seed_of as _seed_of
from ._validation import check_int, check_topics
from .inference import TOPIC_FLOOR

#: Default number of particles R.
DEFAULT_NUM_SAMPLES = LIKELIHOOD_SAMPLES
#: Default number of collapsed-Gibbs rejuvenation updates per token.
DEFAULT_NUM_MOVES = LIKELIHOOD_MOVES
#: Why the estimator refuses fractional counts.
_WHOLE = "the likelihood of a document needs whole, non-negative word counts (a token sequence)"
#: Resample when the effective sample size falls below this fraction of the particles.
_ESS_FRACTION = 0.5
# Documents are padded to a power of 4 tokens, at least this many: the loop stops at the batch's
# longest document, so padding costs memory only, and coarse lengths mean few compilations.
_MIN_PAD = 16
# Rows per jitted call are capped so that the particle states (rows x particles x (padded
# length + K)) stay below this many elements (2^24: 128 MB in float64).
_BATCH_ELEMENTS = 1 << 24
# The columns sent are padded to a power of two, at least this many: a few documents' words and a
# small vocabulary's share one program (the padding columns cost K x 4096 floats per call).
_MIN_COLUMNS = 4096
# Rows (a document at one alpha_0) per call: at most this many padded tokens' worth, and at most
# _MAX_BATCH unless the longest document is short and the call has more rows. The rows of a
# batch (sorted by length) all take as many steps as its longest, so few rows waste less on the
# long tail of lengths (on KOS documents, batches of 256 rows were slower than of 64); short
# documents (the alpha grid's, cut to 64 tokens) have no such tail, and larger batches take
# fewer, larger steps.
_BATCH_TOKENS = 1 << 13
_MAX_BATCH = 64
# Fewer topics are padded to this many with empty ones (beta 0, alpha 0: never drawn, no
# weight): models of K = 1 to 8 topics share one program.
_MIN_TOPICS = 8


class LikelihoodResult(NamedTuple):
    """Estimated log-likelihoods of a chunk of documents.

    Attributes
    ----------
    log_p : numpy.ndarray, shape (D,)
        Estimate of :math:`\\log p(w_d \\mid \\beta, \\alpha)`, the log probability of the
        document's token sequence (no multinomial coefficient). 0 for a document without known
        tokens. An estimate (log of an unbiased estimate, so biased low), not a bound.
    num_tokens : numpy.ndarray of int, shape (D,)
        Tokens scored (sum of the counts of in-vocabulary words).
    num_unknown : numpy.ndarray of int, shape (D,)
        Tokens ignored because their word id is outside ``[0, V)``.

    """
    log_p: np.ndarray
    num_tokens: np.ndarray
    num_unknown: np.ndarray


# ----------------------------------------------------------------------------------------------
# Input
# ----------------------------------------------------------------------------------------------

def prepare_topics(topics):
    """Topics as float64 (K, V) (:func:`~gensim_anchor._validation.check_topics`), renormalised
    in float64 and floored at TOPIC_FLOOR."""
    beta = check_topics(topics, 'topics')
    return np.maximum(beta / beta.sum(axis=1)[:, None], TOPIC_FLOOR)


def _check_alpha(alpha, num_topics, name='alpha'):
    """alpha as float64 (K,), finite, >= 0 with a positive sum (a zero entry: a topic no
    document uses)."""
    a = np.asarray(alpha, dtype=np.float64)
    if a.shape != (num_topics,):
        raise ValueError("%s must have shape (%d,) (one value per topic), got shape %s"
                         % (name, num_topics, a.shape))
    if not np.all(np.isfinite(a)) or np.any(a < 0) or not a.sum() > 0:
        raise ValueError("%s must be finite, >= 0 and not all 0, got %r" % (name, a.tolist()))
    return a


@dataclasses.dataclass(frozen=True, eq=False)
class Documents:
    """A chunk's known words, flat: the kept (id, count) pairs of document d are the ``sizes[d]``
    after those of the documents before it (what :func:`estimate` lays out in batches)."""
    sizes: np.ndarray
    ids: np.ndarray
    counts: np.ndarray

    def __len__(self):
        return len(self.sizes)

    @property
    def lengths(self):
        """Tokens per document, shape (D,)."""
        return segment_sums(self.sizes, self.counts)


def parse_documents(chunk, num_terms, doc_offset=0):
    """Known word ids and integer counts of each document (:func:`~gensim_anchor._bow.parse_chunk`;
    ids outside [0, V) are ignored, and counted).

    Returns
    -------
    docs : Documents
        The kept pairs (known ids, counts > 0), flat, int32.
    num_tokens, num_unknown : numpy.ndarray of int64, shape (D,)
    """
    lengths, ids, counts = parse_chunk(chunk, None, doc_offset, unknown='keep', whole_counts=_WHOLE)
    counts = counts.astype(np.int64)
    known = (ids >= 0) & (ids < num_terms)
    keep = known & (counts > 0)
    num_unknown = segment_sums(lengths, np.where(known, 0, counts))
    docs = Documents(segment_sums(lengths, keep), ids[keep].astype(np.int32),
                     counts[keep].astype(np.int32))
    return docs, docs.lengths, num_unknown


def _padded_length(n):
    bits = max(0, int(n) - 1).bit_length()
    return max(_MIN_PAD, 1 << (bits + (bits & 1)))


# ----------------------------------------------------------------------------------------------
# The particle filter (JAX)
# ----------------------------------------------------------------------------------------------

def _token_order(share, ids, counts, length):
    """The token sequence of one document, most informative words first, round-robin.

    ``share[w]`` is :math:`\\max_k p(z=k \\mid w)` for the document's words (U,); ``counts`` (U,)
    is 0 in the padding. Returns word ids, shape (length,), -1 after the last token.
    """
    U = ids.shape[0]
    rank = jnp.argsort(jnp.where(counts > 0, -share, jnp.inf), stable=True)
    ids, counts = ids[rank], counts[rank]
    ends = jnp.cumsum(counts)
    j = jnp.arange(length)
    word = jnp.minimum(jnp.searchsorted(ends, j, side='right'), U - 1)
    occurrence = j - (ends[word] - counts[word])
    valid = j < ends[-1]
    # Each distinct word once (most informative first), then second occurrences, ...
    order = jnp.argsort(jnp.where(valid, occurrence * U + word, length * U + j), stable=True)
    return jnp.where(valid[order], ids[word[order]], -1)


def _sample_index(weights, u, last):
    """Inverse-CDF draws from unnormalised ``weights`` (R, K), one per row, with ``u`` (R,) in
    (0, 1]; never above topic ``last`` (the columns after it are padding).

    Two stages, a block of about :math:`\\sqrt K` topics and then a topic in it: XLA's CPU
    cumulative sum costs :math:`O(K^2)` per row (a reduce-window), so this is 2 to 2.5 times
    faster than one cumulative sum for K = 50 to 100, with the same draws up to rounding.
    """
    R, K = weights.shape
    size = 1 << max(0, round(np.log2(np.sqrt(K))))
    blocks = -(-K // size)
    rows = jnp.arange(R)
    w = jnp.pad(weights, ((0, 0), (0, blocks * size - K))).reshape(R, blocks, size)
    block_mass = jnp.sum(w, axis=2)                                       # (R, blocks)
    block_cdf = jnp.cumsum(block_mass, axis=1)
    target = u * block_cdf[:, -1]
    b = jnp.minimum(jnp.sum(block_cdf < target[:, None], axis=1), blocks - 1)
    target = target - (block_cdf[rows, b] - block_mass[rows, b])
    inner_cdf = jnp.cumsum(w[rows, b], axis=1)                           # (R, size)
    i = jnp.minimum(jnp.sum(inner_cdf < target[:, None], axis=1), size - 1)
    return jnp.minimum(b * size + i, last).astype(jnp.int32)


def _assignment_dtype(num_topics):
    """The smallest integer type for topic indices: the particles' assignments are copied at
    every resampling, so their size matters."""
    return jnp.int8 if num_topics <= 127 else jnp.int16 if num_topics <= 32767 else jnp.int32


def _weigh(beta_tok, alpha, key, num_tokens, conc, logw, n, num_moves):
    """Token n of one document, first half: weight each particle by its predictive probability
    of the token and pick the ancestors (themselves unless the weights have degenerated).

    ``beta_tok`` (L, K): :math:`\\beta_{k w_m}` for each position m; ``conc`` (R, K) counts +
    alpha; ``logw`` (R,) log-weights. Past the document's last token (n >= num_tokens) the
    weights are frozen. Returns (uniforms, ancestors (R,), resampled?, log-weights after the
    resampling, the unnormalised p(z_n | z_<n, w_n) (R, K), of the ancestors).
    """
    R, K = conc.shape
    particles = jnp.arange(R)
    u = 1.0 - jax.random.uniform(jax.random.fold_in(key, n), (num_moves + 2, R))
    unnorm = beta_tok[n] * conc                                          # (R, K)
    new_logw = logw + jnp.log(jnp.sum(unnorm, axis=1) / (n + jnp.sum(alpha)))
    new_logw = jnp.where(n < num_tokens, new_logw, logw)
    total = logsumexp(new_logw)
    w = jnp.exp(new_logw - total)
    resample = 1.0 / jnp.sum(w * w) < _ESS_FRACTION * R
    # Systematic resampling: one uniform shared by the R strata.
    ancestors = jnp.searchsorted(jnp.cumsum(w), (particles + 1.0 - u[0, 0]) / R)
    ancestors = jnp.where(resample, jnp.minimum(ancestors, R - 1), particles)
    logw = jnp.where(resample, total - jnp.log(R), new_logw)
    return u, ancestors, resample, logw, unnorm[ancestors]


def _move(beta_tok, u, z, conc, pointer, unnorm, n, last, num_moves):
    """Token n, second half: draw z_n ~ p(z_n | z_<n, w_n) and rejuvenate.

    ``z`` (R, L) and ``conc`` (R, K) are the ancestors' already. ``num_moves`` collapsed Gibbs
    updates of positions pointer, pointer+1, ... (mod n+1). What happens to z past the last
    token does not matter (the weights are frozen).
    """
    K = conc.shape[1]
    k = _sample_index(unnorm, u[1], last)
    z = z.at[:, n].set(k.astype(z.dtype))
    conc = conc + jax.nn.one_hot(k, K, dtype=conc.dtype)

    def gibbs(j, zc):
        z, conc = zc
        m = (pointer + j) % (n + 1)
        conc = conc - jax.nn.one_hot(z[:, m], K, dtype=conc.dtype)
        k = _sample_index(beta_tok[m] * conc, u[2 + j], last)
        return z.at[:, m].set(k.astype(z.dtype)), conc + jax.nn.one_hot(k, K, dtype=conc.dtype)

    z, conc = jax.lax.fori_loop(0, num_moves, gibbs, (z, conc))
    return z, conc, (pointer + num_moves) % (n + 1)


@functools.partial(jax.jit, static_argnames=('num_particles', 'num_moves'))
def _filter_batch(beta, shape, scales, ids, counts, seed, doc_index, num_topics, num_particles,
                  num_moves):
    """log p-hat for every row, shape (B,): a row is a document at one concentration.

    ``beta`` (K, V) floored, its rows from ``num_topics`` on padding (zeros); ``shape`` (K,) the
    prior's shape (sums to 1, 0 in the padding); ``scales`` (B,) each row's concentration
    alpha_0 (alpha = scale * shape); ``ids``/``counts`` (B, L) the rows' words (counts 0 in the
    padding, L >= every row's token count); ``seed`` the key's seed (the key is
    ``jax.random.PRNGKey(seed)``); ``doc_index`` (B,) each row's document's index in the corpus,
    which picks its random numbers (the same at every alpha_0). The program depends on (K, V, B,
    L) only: not on how many concentrations a call scores, nor on the real number of topics.
    """
    (B, L), K, R = ids.shape, beta.shape[0], num_particles
    key = jax.random.PRNGKey(seed)
    share = beta * shape[:, None]
    share = jnp.max(share, axis=0) / jnp.sum(share, axis=0)          # (V,) max_k p(z=k | w)
    tokens = jax.vmap(_token_order, (0, 0, 0, None))(share[ids], ids, counts, L)
    beta_tok = jnp.transpose(beta[:, jnp.maximum(tokens, 0)], (1, 2, 0))  # (B, L, K)
    keys = jax.vmap(jax.random.fold_in, (None, 0))(key, doc_index)
    num_tokens = jnp.sum(counts, axis=1)
    alphas = scales[:, None] * shape                                  # (B, K)
    last = num_topics - 1
    # Each half of a step vmapped over the rows.
    weigh = jax.vmap(_weigh, (0, 0, 0, 0, 0, 0, None, None))
    move = jax.vmap(_move, (0, 0, 0, 0, 0, 0, None, None, None))
    take = jax.vmap(lambda a, index: a[index])                       # (B, R, ...) by (B, R)

    def body(n, state):
        z, conc, logw, pointer = state
        u, ancestors, resample, logw, unnorm = weigh(beta_tok, alphas, keys, num_tokens, conc,
                                                     logw, n, num_moves)
        # Copying the assignments costs R x L per step, the one cost that grows with the
        # document's length: skipped when no particle of the batch is resampled (the
        # ancestors are then the particles themselves).
        z = jax.lax.cond(jnp.any(resample), take, lambda z, _: z, z, ancestors)
        z, conc, pointer = move(beta_tok, u, z, take(conc, ancestors), pointer, unnorm, n, last,
                                num_moves)
        return z, conc, logw, pointer

    state = (jnp.zeros((B, R, L), _assignment_dtype(K)),
             jnp.broadcast_to(alphas[:, None, :], (B, R, K)),
             jnp.zeros((B, R), alphas.dtype), jnp.zeros((B,), jnp.int32))
    # A loop as long as the batch's longest document (not a shape: no recompilation).
    _, _, logw, _ = jax.lax.fori_loop(0, jnp.max(num_tokens), body, state)
    return logsumexp(logw, axis=1) - jnp.log(R)


_filter_batch = stored_jit(_filter_batch, ('num_particles', 'num_moves'), loop_emitters=True)


def estimate(beta, shape, scales, docs, seed, offset, num_particles, num_moves, batch_scales=None):
    """log p-hat, shape (G, D), for the documents of :func:`parse_documents` (a :class:`Documents`).

    A row is a document at one concentration. Rows are sorted by their document's length (the G
    concentrations of a document side by side) and cut into batches of one size (a power of two:
    see :data:`_BATCH_TOKENS`), each padded to a power-of-4 length: few shapes are compiled
    (about 2 s each on a CPU), the same whatever the number of concentrations, and the loop of a
    batch, as long as its longest document, wastes little on the shorter ones. The program sees
    only the columns of beta that the documents use, their number padded to a power of two (at
    least :data:`_MIN_COLUMNS`), and at least :data:`_MIN_TOPICS` topics: it depends on that,
    not on V, so corpora of different vocabularies and small models share it, and a call on a
    few documents does not send all of (K, V). ``batch_scales``: the number of concentrations the
    batch size is chosen for (default: this call's), so that the calls of a search, which score
    different numbers of them, share one program.
    """
    G, D, K = len(scales), len(docs), beta.shape[0]
    out = np.zeros((G, D))
    layout = _layout(docs, G, K, num_particles, batch_scales)
    if layout is None:
        return out
    used, size, row_doc, row_scale = layout.used, layout.size, layout.row_doc, layout.row_scale
    # Each column's values are those of beta, so every estimate is as with the whole matrix;
    # the padding columns (floored, finite) are never read, the padding topics never drawn.
    local = np.zeros(layout.beta_shape)
    local[:K] = TOPIC_FLOOR
    local[:K, :len(used)] = beta[:, used]
    shape_j = np.zeros(layout.beta_shape[0])
    shape_j[:K] = shape
    scales = np.asarray(scales, np.float64)
    # Every document's words once, flat (positions in local): a batch's arrays are filled by one
    # fancy index (padded_positions), not a loop over its rows.
    flat_ids = np.searchsorted(used, docs.ids).astype(np.int32)
    with jax.enable_x64(True):
        # Transfers, not jnp.asarray: no conversion programs to compile (_compile_cache); the
        # key is made inside the program from the seed, the same bits as jax.random.PRNGKey.
        beta_j = jax.device_put(local)
        for lo, L in zip(range(0, len(row_doc), size), layout.batch_lengths):
            rows = slice(lo, lo + size)
            batch, n = row_doc[rows], len(row_doc[rows])
            row_scales, ids, counts, index = _batch_arrays(size, L)
            row, position, source = padded_positions(docs.sizes, batch)
            ids[row, position] = flat_ids[source]
            counts[row, position] = docs.counts[source]
            index[:n] = (batch + offset) % (1 << 32)
            row_scales[:n] = scales[row_scale[rows]]
            logp = _filter_batch(beta_j, shape_j, row_scales, ids, counts, np.int64(seed), index,
                                 np.int32(K), num_particles, num_moves)
            out[row_scale[rows], batch] = np.asarray(logp)[:n]
    return out


class _Layout(NamedTuple):
    """How :func:`estimate` lays out its rows: the columns of beta used, the program's beta
    shape (topics, columns, both padded), the batch size, each row's document and
    concentration, and each batch's padded length."""
    used: np.ndarray
    beta_shape: tuple
    size: int
    row_doc: np.ndarray
    row_scale: np.ndarray
    batch_lengths: list


def _layout(docs, G, K, num_particles, batch_scales=None):
    """The :class:`_Layout` of :func:`estimate`'s call on ``G`` concentrations (None: no
    document has a token)."""
    lengths = docs.lengths
    order = np.argsort(lengths, kind='stable')
    order = order[lengths[order] > 0]
    if len(order) == 0:
        return None
    used = np.unique(docs.ids)
    padded_k = max(K, _MIN_TOPICS)
    longest = _padded_length(lengths.max())
    cap = min(_BATCH_ELEMENTS // (num_particles * (longest + padded_k)),
              max(_MAX_BATCH, _BATCH_TOKENS // longest))
    # Full batches of _MAX_BATCH rows even for a few rows: one program per (K, length) however
    # many documents and concentrations a call scores (an empty row costs as much arithmetic as
    # a full one, and memory). More rows only for calls that fill them.
    cap = min(cap, max(_MAX_BATCH, power_of_two((batch_scales or G) * len(order))))
    size = 1 << max(0, int(cap).bit_length() - 1)
    row_doc = np.repeat(order, G)                     # the G concentrations of a document together
    row_scale = np.tile(np.arange(G), len(order))
    batch_lengths = [_padded_length(lengths[row_doc[lo:lo + size]].max())
                     for lo in range(0, len(row_doc), size)]
    return _Layout(used, (padded_k, power_of_two(len(used), _MIN_COLUMNS)), size, row_doc,
                   row_scale, batch_lengths)


def prefetch_estimate(docs, num_topics, call_sizes, num_particles, num_moves, batch_scales=None):
    """Load the stored programs of :func:`estimate`'s calls on ``docs`` (a :class:`Documents`)
    with each of ``call_sizes`` concentrations, without running them
    (:meth:`~._compile_cache.stored_jit.prefetch`: for a background thread)."""
    programs = set()
    for G in call_sizes:
        layout = _layout(docs, G, num_topics, num_particles, batch_scales)
        if layout is not None:
            programs.update((layout.beta_shape, layout.size, L) for L in layout.batch_lengths)
    with jax.enable_x64(True):
        for beta_shape, size, L in sorted(programs):
            row_scales, ids, counts, index = _batch_arrays(size, L)
            _filter_batch.prefetch(np.zeros(beta_shape), np.zeros(beta_shape[0]), row_scales, ids, counts,
                                   np.int64(0), index, np.int32(num_topics), num_particles, num_moves)


def _batch_arrays(size, L):
    """A batch's arrays as :func:`estimate` fills them: each row's concentration (1 for the
    padding rows), word columns and counts (padding: column 0, count 0) and document index."""
    return (np.ones(size), np.zeros((size, L), dtype=np.int32), np.zeros((size, L), dtype=np.int32),
            np.zeros(size, dtype=np.uint32))


# ----------------------------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------------------------

def document_log_likelihood(topics, alpha, chunk, *, num_samples=DEFAULT_NUM_SAMPLES,
                            num_moves=DEFAULT_NUM_MOVES, random_state=None):
    """Estimate :math:`\\log p(w_d \\mid \\beta, \\alpha)` for each document of a chunk.

    The LDA marginal likelihood of the document's token sequence (no multinomial coefficient),
    by the left-to-right particle filter with Gibbs rejuvenation described in the module
    docstring. It is an *estimate* (the log of an unbiased estimate of p, hence biased low by
    an amount that shrinks with ``num_samples`` and ``num_moves``), not a variational bound.

    Parameters
    ----------
    topics : numpy.ndarray, shape (K, V)
        p(w | z), rows summing to 1; floored at :data:`.inference.TOPIC_FLOOR`.
    alpha : numpy.ndarray, shape (K,)
        Dirichlet prior, > 0 (an entry 0 is allowed: that topic is never used).
    chunk : list of list of (int, number)
        Bag-of-words documents with whole counts. Ids outside ``[0, V)`` are ignored and
        counted in ``num_unknown``; an empty document has ``log_p = 0`` and 0 tokens.
    num_samples : int
        Particles R per document.
    num_moves : int
        Collapsed-Gibbs rejuvenation updates per token (0: a plain particle filter).
    random_state : {int, numpy.random.RandomState, None}
        Seed; the same seed gives the same estimates.

    Returns
    -------
    LikelihoodResult
        ``log_p``, ``num_tokens`` and ``num_unknown``, each of shape (D,).

    Notes
    -----
    Cost :math:`O(N R (J + 1) K)` per document of N tokens, J = ``num_moves``.
    """
    beta = prepare_topics(topics)
    a = _check_alpha(alpha, beta.shape[0])
    R = check_int('num_samples', num_samples, minimum=1)
    J = check_int('num_moves', num_moves, minimum=0)
    docs, num_tokens, num_unknown = parse_documents(chunk, beta.shape[1])
    seed = _seed_of(random_state)
    log_p = estimate(beta, a / a.sum(), [a.sum()], docs, seed, 0, R, J)[0]
    return LikelihoodResult(log_p, num_tokens, num_unknown)


def log_likelihood_per_token(topics, alpha, corpus, *, chunksize=1000, random_state=None, **kw):
    """Held-out log-likelihood per token: :math:`\\sum_d \\log\\hat p(w_d) / \\sum_d N_d`.

    The estimate of :func:`document_log_likelihood` summed over the corpus and divided by the
    number of in-vocabulary tokens (nats per token; higher is better). Not a variational bound:
    the log of unbiased per-document estimates, so slightly biased low.

    Parameters
    ----------
    topics : numpy.ndarray, shape (K, V)
    alpha : numpy.ndarray, shape (K,)
    corpus : iterable of list of (int, number)
        Streamed ``chunksize`` documents at a time.
    chunksize : int
        Documents per call of :func:`document_log_likelihood`.
    random_state : {int, numpy.random.RandomState, None}
        Seed. Document i of the corpus gets the same random numbers whatever the chunking.
    **kw
        ``num_samples``, ``num_moves``: as for :func:`document_log_likelihood`.

    Returns
    -------
    float

    Examples
    --------
    .. sourcecode:: pycon

        >>> import numpy as np
        >>> from gensim_anchor.likelihood import log_likelihood_per_token
        >>> topics = np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5]])
        >>> # each document is from one topic: with a small alpha a token costs about log 2
        >>> value = log_likelihood_per_token(topics, np.array([0.01, 0.01]),
        ...                                  [[(0, 5), (1, 5)], [(2, 4), (3, 6)]], random_state=0)
        >>> round(value, 2)
        -0.77

    """
    beta = prepare_topics(topics)
    a = _check_alpha(alpha, beta.shape[0])
    chunksize = check_int('chunksize', chunksize, minimum=1)
    R = check_int('num_samples', kw.pop('num_samples', DEFAULT_NUM_SAMPLES), minimum=1)
    J = check_int('num_moves', kw.pop('num_moves', DEFAULT_NUM_MOVES), minimum=0)
    if kw:
        raise TypeError("unexpected keyword arguments: %s" % ", ".join(sorted(kw)))
    seed = _seed_of(random_state)
    total, tokens, offset = 0.0, 0, 0
    for chunk in utils.grouper(corpus, chunksize):
        docs, num_tokens, _ = parse_documents(chunk, beta.shape[1], offset)
        total += float(estimate(beta, a / a.sum(), [a.sum()], docs, seed, offset, R, J).sum())
        tokens += int(num_tokens.sum())
        offset += len(chunk)
    if tokens == 0:
        raise ValueError("the corpus has no tokens with word ids in [0, %d)" % beta.shape[1])
    return total / tokens
