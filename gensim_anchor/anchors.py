"""Stage 2 of the pipeline: FastAnchorWords (Arora et al. 2013, Algorithm 4).

The rows of the row-normalised co-occurrence matrix :math:`\\bar Q` lie (in expectation) in the
convex hull of the K anchor rows. FastAnchorWords

1. projects the rows of :math:`\\bar Q` of the anchor *candidates* (words frequent enough for
   their row to be well estimated) onto a random subspace of dimension d
   (:func:`project_rows`);
2. picks the point farthest from the origin, then K-1 times the point farthest from the span of
   those chosen so far (greedy phase);
3. **cleanup**: for i = 1..K, replaces the i-th anchor by the point farthest from the span of the
   other K-1 (the step that the authors' code and the public ports leave out).

Which words are candidates decides what the search can find: a rare word's row is mostly
sampling noise, which the farthest-point search mistakes for an extreme point.
:func:`select_candidates` applies a fixed document-frequency threshold; by default
:func:`choose_candidates` raises it where the anchors of a higher one replicate better on a
held-out half of the documents.

Seeded anchors (``seeds``) start the span in step 2 and are left alone by step 3: the user fixes
some topics by their anchor words and the others are found around them. A seed may be a group
of words, whose pseudo-row of Q-bar is :func:`combine_rows` of the words' rows (tandem anchors,
Lund et al. 2017); :func:`anchor_rows` builds the rows and :func:`project_rows` projects them
with the same random matrix as the words.

:func:`find_anchors` runs steps 2-3 as one jitted JAX function. It keeps an orthonormal basis U
of the span of the anchors and the coordinates C = Y U of every point in it; the residuals
:math:`Y - C U^T` stay implicit, and each point's squared distance from the span is updated
as the span changes (a new basis vector u takes :math:`(y^T u)^2` off it). Every step, of the
greedy phase and of the cleanup, is then one product of Y with a vector and O(N K) more, instead
of a fresh O(N d K) projection. The subtraction's rounding, about 1e-16 of the largest squared
norm, lies far inside the tie tolerance of the farthest-point choice (1e-12 of it); the chosen
point's distance, and with it the rank test, comes from its explicit residual (classical
Gram-Schmidt, twice).

Examples
--------
.. sourcecode:: pycon

    >>> import numpy as np
    >>> from gensim_anchor.anchors import find_anchors
    >>> vertices = np.eye(3)
    >>> inside = np.array([[0.2, 0.3, 0.5], [0.6, 0.2, 0.2]])
    >>> result = find_anchors(np.vstack([inside, vertices]), num_topics=3)
    >>> sorted(result.indices.tolist())
    [2, 3, 4]

"""
import functools
import math
import numbers
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from . import _validation as check
from ._compile_cache import power_of_two, stored_jit
from ._defaults import (CANDIDATE_LEVELS, CANDIDATE_SCORE_DIM, DEFAULT_MIN_DF, DEFAULT_MIN_DF_FRACTION,
                        DEFAULT_PROJECTION_DIM)
from .cooccurrence import implicit_block, projection_blocks, quarter_sums
# A squared residual below this fraction of the largest squared row norm is rounding, not a
# new direction (the rank test of find_anchors, on the device and in its error message).
_RANK_TOL = 1e-24
# The smallest searches are padded to this many rows and coordinates (zeros): small corpora and
# thin factors (LAW's N x K) share one compiled search per K, at a cost of microseconds.
_MIN_SHAPE = 64
# Squared distances within this fraction of the largest squared row norm are a tie, which goes to
# the lowest index: rows equal in exact arithmetic (words seen only together) differ by rounding,
# which a permutation of the documents or a padded shape changes.
_TIE_TOL = 1e-12
#: The adaptive rule's lowest threshold is 2 x MIN_HALF_DOCS documents (choose_candidates).
MIN_HALF_DOCS = 5


class AnchorResult(NamedTuple):
    """Outcome of :func:`find_anchors`.

    Attributes
    ----------
    indices : numpy.ndarray, shape (K,), int64
        Rows of the input chosen as anchors, in topic order.
    distances : numpy.ndarray, shape (K,), float64
        Distance of each anchor, when it was chosen, from the span of the anchors it was
        measured against: the other K-1 in the cleanup pass, the previous ones in the greedy
        phase (``cleanup=False``).
    greedy_indices : numpy.ndarray, shape (K,), int64
        The anchors chosen by the greedy phase, before cleanup.
    num_replaced : int
        How many anchors the cleanup pass replaced.

    """
    indices: np.ndarray
    distances: np.ndarray
    greedy_indices: np.ndarray
    num_replaced: int


def resolve_min_df(anchor_min_df, num_docs):
    """The document-frequency threshold for anchor candidates, as a count of documents.

    ``None`` means ``min(100, max(1, ceil(0.05 * num_docs)))``; an int is a count; a float in
    (0, 1] is a fraction of the documents.
    """
    anchor_min_df = check.check_min_df(anchor_min_df)
    if anchor_min_df is None:
        return min(DEFAULT_MIN_DF, max(1, math.ceil(DEFAULT_MIN_DF_FRACTION * num_docs)))
    if isinstance(anchor_min_df, numbers.Integral):
        return int(anchor_min_df)
    return int(math.ceil(anchor_min_df * num_docs))


def select_candidates(doc_freq, p_w, anchor_min_df, num_docs, num_topics, num_seeds=0):
    """The anchor candidates: words in at least ``anchor_min_df`` documents (resolved by
    :func:`resolve_min_df`) that occur in a document of two or more tokens (p(w) > 0).

    Returns
    -------
    (numpy.ndarray of int, int)
        The candidates' word ids, ascending, and the threshold in documents.

    Raises
    ------
    ValueError
        When fewer than ``num_topics - num_seeds`` words qualify, naming the counts and what to
        lower.
    """
    min_df = resolve_min_df(anchor_min_df, num_docs)
    candidates = np.flatnonzero((doc_freq >= min_df) & (p_w > 0))
    check.check_candidate_count(len(candidates), num_topics, num_seeds, min_df=min_df,
                                default=None if anchor_min_df is not None else num_docs)
    return candidates, min_df


class CandidateChoice(NamedTuple):
    """Outcome of :func:`choose_candidates`.

    Attributes
    ----------
    candidates : numpy.ndarray of int
        The chosen candidates' word ids, ascending.
    min_df : int
        The chosen threshold, in documents.
    levels : tuple of (int, int, float)
        (threshold in documents, candidates, held-out log-volume) of each threshold scored.

    """
    candidates: np.ndarray
    min_df: int
    levels: tuple


def _search_subset(Y, count, num_topics, cleanup):
    """:func:`find_anchors` on the first ``count`` rows of Y (padded there to a power of two:
    one compiled search for similar counts); None when they span fewer than K directions."""
    try:
        return find_anchors(Y[:count], num_topics, cleanup=cleanup).indices
    except ValueError:
        return None


def _held_out_log_volume(Y, noise, anchors):
    """Log-volume of the simplex of the rows ``Y[anchors]``, each squared Gram-Schmidt residual
    less the expected share of the rows' sampling noise, floored at 1e-12 of the largest; -inf
    when the rows are degenerate.

    ``noise`` is the expected squared norm of each row's noise. Isotropic noise (as a Gaussian
    projection makes it) keeps (d - j)/d of it in the residual of the j-th difference
    :math:`y_{s_j} - y_{s_0}` from the span of the j before it, in d dimensions.
    """
    P = Y[anchors]
    X = P[1:] - P[0]
    try:  # Cholesky of the Gram matrix: its squared diagonal holds the Gram-Schmidt residuals
        r2 = np.diag(np.linalg.cholesky(X @ X.T)) ** 2
    except np.linalg.LinAlgError:
        return -math.inf
    d = Y.shape[1]
    debiased = r2 - (noise[anchors[1:]] + noise[anchors[0]]) * (d - np.arange(len(X))) / d
    return 0.5 * float(np.sum(np.log(np.maximum(debiased, 1e-12 * r2.max()))))


def _halves(Y_parts, masses):
    """Rows of the two halves from the quarters' (a0, a1, b0, b1), and each half's sampling noise
    per row. Q is a sum over documents: a half's row is its quarters' rows weighted by their
    shares w of the word's pairs (``masses``: M p(w) per quarter); with the quarters' noise
    equal, :math:`\\mathrm{Var}(w_0 y_0 + w_1 y_1) = (w_0^2 + w_1^2)\\,E\\|y_0 - y_1\\|^2 / 2`."""
    rows, noise = [], []
    for i in (0, 2):
        total = masses[i] + masses[i + 1]
        w0, w1 = masses[i] / total, masses[i + 1] / total
        rows.append(Y_parts[i] * w0[:, None] + Y_parts[i + 1] * w1[:, None])
        noise.append((w0 ** 2 + w1 ** 2) * np.sum((Y_parts[i] - Y_parts[i + 1]) ** 2, axis=1) / 2)
    return rows, noise


def _thresholds(num_docs, levels=CANDIDATE_LEVELS):
    """The thresholds (in documents, descending) that :func:`choose_candidates` scores."""
    floor = max(2 * MIN_HALF_DOCS, resolve_min_df(None, num_docs))
    return sorted({floor} | {t for t in (resolve_min_df(level, num_docs) for level in levels)
                             if t >= floor}, reverse=True)


def choose_candidates(cooc, p_w, num_topics, projection_dim=CANDIDATE_SCORE_DIM, seed=0, *,
                      cleanup=True, levels=CANDIDATE_LEVELS):
    """The adaptive anchor-candidate rule: the threshold whose anchors replicate in held-out data.

    A rare word's row of Q-bar is mostly sampling noise, and noise makes a row look extreme:
    the farthest-point search picks exactly those rows when the threshold is too low; too high
    a threshold drops the true anchors. Which threshold is right depends on the corpus (the
    vocabulary, the documents' number and length, the topics). The rule measures it:

    1. the documents are cut in quarters (documents 0, 4, 8, ...; 2, 6, 10, ...; 1, 5, 9, ...;
       3, 7, 11, ...: :func:`~gensim_anchor.cooccurrence.split_quarters`), two of which make
       each half, and the candidates' rows of Q-bar are projected for each quarter with one
       Gaussian matrix (the fit's seed; the halves' rows are the quarters' rows weighted by
       their shares of each word's pairs). The difference of a half's two
       quarters estimates that half's sampling noise per row, :math:`\\sigma_w^2 = (w_0^2 +
       w_1^2)\\|\\bar q^{0}_w - \\bar q^{1}_w\\|^2/2`, independently of the other half (a noise
       estimate that involved the half the anchors are chosen on would carry their selection:
       they are picked partly for their noise);
    2. each threshold of ``levels`` (issue 13's fixed thresholds: 100 documents and 0.1%, 0.3%,
       1% and 3% of the documents) is scored by finding the anchors on one half and measuring
       on the other the log-volume of the simplex their held-out rows span, each squared
       Gram-Schmidt residual less the held-out noise it carries, and the other way round (the
       mean of the two). A noise pick does not replicate: its held-out row is an ordinary one,
       and the volume it seemed to add is gone. A true anchor that the threshold drops takes
       real volume with it. So the held-out volume peaks where the anchors are extreme in the
       population, not by chance;
    3. the threshold of largest held-out volume wins (ties: the higher threshold; the volume
       need not fall steadily on either side of its peak, so every threshold is scored), and
       the anchors are then found among its candidates on the whole corpus, as with a fixed
       threshold.

    The thresholds scored are the fixed default, min(100 documents, 5%)
    (:func:`select_candidates`), and those of ``levels`` above it: the rule raises the threshold
    where the default admits noise, never lowers it. On the semi-synthetic corpora of the
    benchmark below no best threshold lay under 100 documents, and on real collections lower
    thresholds admit rare words that do replicate across halves without making topics (an
    author's signature, a thread's vocabulary: on 20 Newsgroups the volume peaked at 51
    documents, whose topics had a held-out log-likelihood 0.10 nats per token under the
    default's). Thresholds are at least 10 documents (:data:`MIN_HALF_DOCS` per half); those
    with fewer than ``num_topics`` candidates are skipped, and with one candidate set left
    there is nothing to choose. The cost is two anchor searches per threshold, on its
    candidates, and the projection of the lowest threshold's rows, in ``projection_dim``
    (:data:`~gensim_anchor._defaults.CANDIDATE_SCORE_DIM`) dimensions.

    Measured on 13 semi-synthetic corpora with known topics (``python
    benchmarks/bench_candidates.py``, ``benchmarks/results/bench_candidates.log``).

    Parameters
    ----------
    cooc : :class:`~gensim_anchor.cooccurrence.Cooccurrence`
        Implicit-mode statistics.
    p_w : numpy.ndarray, shape (V,)
        Row sums of Q.
    num_topics : int
        K.
    projection_dim, seed :
        The scoring projection, as :func:`project_rows` (the fit's seed: its first columns).
    cleanup : bool
        As :func:`find_anchors`, for the searches that score the thresholds.
    levels : sequence of int or float
        The thresholds (as ``anchor_min_df``).

    Returns
    -------
    CandidateChoice or None
        None when the statistics cannot be split
        (:func:`~gensim_anchor.cooccurrence.split_quarters`) or fewer than two thresholds give
        distinct sets of ``num_topics`` candidates or more (seen in every quarter): the caller
        then uses the fixed rule (:func:`select_candidates`), with its errors.
    """
    # From the fixed default up (see above), and at least MIN_HALF_DOCS documents per half: a
    # quarters' difference estimates a row's noise only when each quarter's row averages a few
    # documents (from one, it is as large and as variable as the row, and means nothing).
    thresholds = _thresholds(cooc.num_docs, levels)
    sizes = [int(np.sum((cooc.doc_freq >= t) & (p_w > 0))) for t in thresholds]
    if len({n for n in sizes if n >= num_topics}) < 2:
        return None  # one candidate set at most: nothing to choose
    # The rows most frequent first: each threshold's candidates are then the first rows.
    words = np.flatnonzero((cooc.doc_freq >= thresholds[-1]) & (p_w > 0))
    order = words[np.argsort(-cooc.doc_freq[words], kind='stable')]
    # Sums over documents (a distributed corpus adds up its partitions', each with its offset),
    # in one pass over the documents' side.
    sums_of = getattr(cooc, 'quarter_sums', None) or functools.partial(quarter_sums, cooc)
    sums = sums_of(order, projection_dim, seed)
    if sums is None or (sums[0] < 1).any():
        return None
    docs, masses, raw = sums
    p_parts = np.maximum(masses, 0.0) / docs[:, None]
    seen = np.all(p_parts[:, order] > 0, axis=0)  # a row needs every quarter
    order, raw = order[seen], raw[:, seen]
    df = cooc.doc_freq[order]
    counts = {}
    for t in thresholds:  # nested sets: the same count is the same set, kept once
        count = int(np.sum(df >= t))
        if count >= num_topics and count not in counts.values():
            counts[t] = count
    if len(counts) < 2:
        return None
    Y_parts = [raw[i].astype(np.float64) / (docs[i] * p_parts[i][order, None]) for i in range(4)]
    halves_rows, noise = _halves(Y_parts, [masses[i][order] for i in range(4)])
    scored = []
    for t, count in counts.items():
        score = 0.0
        for fit, held in ((0, 1), (1, 0)):
            found = _search_subset(halves_rows[fit], count, num_topics, cleanup)
            if found is None:
                score = -math.inf
                break
            score += _held_out_log_volume(halves_rows[held], noise[held], found) / 2
        scored.append((t, count, score))
    best = max(scored, key=lambda level: level[2])  # ties: the first, the higher threshold
    if not math.isfinite(best[2]):
        return None
    return CandidateChoice(np.sort(order[:best[1]]), best[0], tuple(scored))


def resolve_seeds(seeds, id2word, p_w):
    """The seeded anchors as sorted lists of word ids; words that are not in the vocabulary or
    occur in no document of two or more tokens (p(w) = 0) are left out with a warning.

    ``seeds`` is the checked ``anchors=`` argument of the model
    (:func:`~gensim_anchor._validation.check_seeds`): lists of words (str, looked up in
    ``id2word``) or word ids.
    """
    if not seeds:
        return []
    token2id = check.token2id(id2word) if any(isinstance(w, str) for s in seeds for w in s) else {}
    groups = []
    for seed in seeds:
        ids = [token2id.get(w) if isinstance(w, str) else w for w in seed]
        known = [i is not None and 0 <= i < len(p_w) and p_w[i] > 0 for i in ids]
        unknown = [w for w, ok in zip(seed, known) if not ok]
        if not any(known):
            raise ValueError("seeded anchor %r: none of its words is in the vocabulary and occurs in a "
                             "document of two or more tokens" % (seed if len(seed) > 1 else seed[0],))
        if unknown:
            warnings.warn("seeded anchor %r: left out %s, not in the vocabulary or in no document of "
                          "two or more tokens" % (seed, ", ".join(map(repr, unknown))),
                          UserWarning, stacklevel=5)
        groups.append(sorted({int(i) for i, ok in zip(ids, known) if ok}))
    seen = {}
    for k, group in enumerate(groups):
        if tuple(group) in seen:
            raise ValueError("seeded anchors #%d and #%d are the same words %r: each topic needs its own"
                             % (seen[tuple(group)], k, seeds[k]))
        seen[tuple(group)] = k
    return groups


def project_rows(cooc, p_w, rows, projection_dim=DEFAULT_PROJECTION_DIM, seed=0, *, extra=None):
    """Random projection of the rows of Q-bar for the given words, without forming Q.

    Parameters
    ----------
    cooc : :class:`~gensim_anchor.cooccurrence.Cooccurrence`
        Statistics of Q.
    p_w : numpy.ndarray, shape (V,)
        Row sums of Q (all > 0 on ``rows``).
    rows : numpy.ndarray of int, shape (N,)
        Word ids to project (the anchor candidates).
    projection_dim : int or None
        d. ``None``, 0, or d >= V give the exact rows (no projection).
    seed : int
        Seed of the Gaussian projection matrix.
    extra : array_like, shape (n, V), optional
        Further rows in V-space (e.g. the pseudo-rows of tandem anchors,
        :func:`anchor_rows`), projected with the same matrix and appended.

    Returns
    -------
    numpy.ndarray, shape (N + n, d) or (N + n, V), float64

    Notes
    -----
    :math:`\\bar Q_S P = \\mathrm{Diag}(1/p_S)(\\tilde H_S (\\tilde H^T P) - \\hat h_S P_S)/M` costs
    O(nnz(H) d) in float32; the V x d Gaussian P is scaled by :math:`1/\\sqrt d` so that
    distances are preserved in expectation (Johnson-Lindenstrauss).
    """
    V = cooc.num_terms
    rows = check.check_ids('rows', rows, V)
    p_w = check.check_row_sums(p_w, V, rows)
    extra = np.zeros((0, V)) if extra is None else np.asarray(extra, dtype=np.float64).reshape(-1, V)
    exact = not projection_dim or projection_dim >= V
    if exact and cooc.mode == 'lowrank' and not len(extra):
        # A rank-K Q: the exact rows' geometry in K coordinates, never the V-wide rows.
        return cooc.coordinates(rows, p_w)
    if exact:
        return np.vstack([cooc.rows(rows) / p_w[rows, None], extra])
    H = cooc.H_tilde.astype(np.float32) if cooc.mode == 'implicit' else None
    H_rows = H[rows] if H is not None else None
    # Dense Q: only the candidate rows enter the products, cast to float32 once.
    Q_rows = cooc.Q_sum[rows].astype(np.float32) if cooc.mode == 'dense' else None
    # A rank-K Q (Y Y^T): the candidates' rows of Y and the thin Y^T P.
    Y, Y_rows = (cooc.Y.astype(np.float32), cooc.Y[rows].astype(np.float32)) if cooc.mode == 'lowrank' else (None, None)
    extra32 = extra.astype(np.float32)
    QP = np.empty((len(rows) + len(extra), projection_dim), dtype=np.float32)
    N = len(rows)
    for lo, P in projection_blocks(V, projection_dim, seed):
        width = P.shape[1]
        if H is not None:
            block = implicit_block(H, H_rows, cooc.h_hat[rows], rows, P)
            QP[:N, lo:lo + width] = block / np.float32(cooc.num_docs)
        elif Q_rows is not None:
            QP[:N, lo:lo + width] = (Q_rows @ P) / np.float32(cooc.num_docs)
        elif Y is not None:
            QP[:N, lo:lo + width] = Y_rows @ (Y.T @ P)
        else:  # distributed: a map over the partitions
            QP[:N, lo:lo + width] = cooc.matmul(P, dtype=np.float32)[rows]
        # The same block of P for the extra rows: one projection for words and pseudo-words.
        QP[N:, lo:lo + width] = extra32 @ P
    out = QP.astype(np.float64)
    out[:N] /= p_w[rows, None]
    return out


def combine_rows(rows):
    """The element-wise harmonic mean of rows of Q-bar, renormalised to sum 1.

    The pseudo-word of a tandem anchor (Lund et al. 2017, "Tandem Anchoring: a Multiword Anchor
    Approach for Interactive Topic Modeling", ACL): of the combiners they compare, the harmonic
    mean gave the most interpretable topics and the best downstream accuracy. It is small
    wherever one word of the group is, so the pseudo-word co-occurs with what all its words
    co-occur with. A column where some word has 0 gets 0 (the limit of the mean as that entry
    goes to 0). Renormalised, the pseudo-row is a distribution like the
    rows it stands beside, which RecoverL2/KL combine convexly.

    Examples
    --------
    .. sourcecode:: pycon

        >>> import numpy as np
        >>> from gensim_anchor.anchors import combine_rows
        >>> combine_rows(np.array([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25]])).round(4).tolist()
        [0.4, 0.6, 0.0]

    """
    # scipy's hmean gives 0 for a column with a 0; it refuses negatives (Q-bar rounding).
    mean = stats.hmean(np.maximum(np.asarray(rows, dtype=np.float64), 0.0), axis=0)
    total = mean.sum()
    return mean / total if total > 0 else mean


def anchor_rows(cooc, p_w, groups):
    """The anchor rows :math:`\\bar Q_S` (K x V): a word's row of Q-bar for a single-word
    anchor, the :func:`combine_rows` pseudo-row of its words for a group.

    Parameters
    ----------
    cooc : :class:`~gensim_anchor.cooccurrence.Cooccurrence`
    p_w : numpy.ndarray, shape (V,)
        Row sums of Q, > 0 for every word of ``groups``.
    groups : sequence of sequence of int
        The words of each anchor.

    Returns
    -------
    numpy.ndarray, shape (len(groups), V)
    """
    groups = as_groups(groups)
    if not groups:
        return np.zeros((0, cooc.num_terms))
    words, where = np.unique(np.concatenate(groups), return_inverse=True)
    bar = cooc.rows(words) / p_w[words, None]
    bounds = np.cumsum([0] + [len(g) for g in groups])
    return np.vstack([bar[where[lo]] if hi - lo == 1 else combine_rows(bar[where[lo:hi]])
                      for lo, hi in zip(bounds[:-1], bounds[1:])])


def as_groups(anchors):
    """Each topic's anchor as an int64 array of word ids (one id for a single word): the form
    in which the anchors pass from this stage to recovery."""
    if isinstance(anchors, np.ndarray) and anchors.ndim == 1:
        return [anchors[k:k + 1].astype(np.int64) for k in range(len(anchors))]
    groups = [np.atleast_1d(np.asarray(a, dtype=np.int64)) for a in anchors]
    if any(g.ndim != 1 or g.size == 0 for g in groups):
        raise ValueError("each anchor must be a word id or a non-empty list of word ids")
    return groups


def single_word_anchors(groups):
    """The anchor word id of each topic, -1 for a topic anchored by a group of words."""
    return np.array([g[0] if len(g) == 1 else -1 for g in groups], dtype=np.int64)


def find_anchors(Y, num_topics, *, candidates=None, cleanup=True, seeds=None):
    """Greedy farthest-from-span selection of K rows of Y, then the cleanup pass.

    Parameters
    ----------
    Y : array_like, shape (N, d)
        The points (projected rows of Q-bar).
    num_topics : int
        K.
    candidates : array_like of bool, shape (N,), optional
        Rows allowed as anchors (all by default).
    cleanup : bool
        Run the cleanup pass of Algorithm 4.
    seeds : array_like of int, optional
        Rows of Y fixed as the first anchors (seeded anchors; candidates or not): they are in
        the span from the start, the greedy phase adds the K - len(seeds) rows farthest from
        it, and the cleanup pass re-optimises only those.

    Returns
    -------
    AnchorResult
        ``indices`` starts with ``seeds``, in their order.

    Raises
    ------
    ValueError
        If fewer than K - len(seeds) candidates exist, if the seeded rows are linearly
        dependent, or the candidates span fewer than K dimensions with them (then no K anchors
        are linearly independent and the topics would not be identifiable).

    Notes
    -----
    Computed in float64 (scoped with ``jax.enable_x64``). Deterministic: ties go to the lowest
    index, and squared distances within 1e-12 of the largest squared row norm are ties (rows
    equal in exact arithmetic, such as words that occur only together, differ by rounding, which
    the order of the documents changes). Only K and ``cleanup`` are static under jit: one
    compilation per shape of Y, whatever the number of seeds; Y's rows are padded (masked zero
    rows) to a power of two, so row counts up to twice apart share it, and a Y smaller than
    64 x 64 is padded with zeros to at least that. Cost: O(K N d) for each phase, one pass
    over Y per step (see the module's notes).

    Examples
    --------
    .. sourcecode:: pycon

        >>> import numpy as np
        >>> from gensim_anchor.anchors import find_anchors
        >>> Y = np.vstack([np.eye(3), [[0.2, 0.3, 0.5]]])
        >>> find_anchors(Y, 3, seeds=[3]).indices.tolist()  # row 3 is fixed, two more are found
        [3, 0, 1]

    """
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim != 2 or 0 in Y.shape:
        raise ValueError("Y must be a 2-D array of points (N rows, d coordinates), got shape %s" % (Y.shape,))
    if not np.all(np.isfinite(Y)):
        raise ValueError("Y must be finite (row %d is not)" % int(np.argmin(np.isfinite(Y).all(axis=1))))
    N = Y.shape[0]
    num_topics = check.check_int('num_topics', num_topics, minimum=1)
    mask = np.ones(N, dtype=bool) if candidates is None else _candidate_mask(candidates, N)
    seeds = np.zeros(0, dtype=np.int64) if seeds is None else np.asarray(seeds).ravel()
    num_seeds = len(seeds)
    check.check_seed_count(num_seeds, num_topics)
    if num_seeds:
        seeds = check.check_ids('seeds', seeds, N, 'rows of Y')
    check.check_candidate_count(int(mask.sum()), num_topics, num_seeds)
    with jax.enable_x64(True):
        # numpy in: jnp.asarray would compile a conversion program per argument (each one a
        # compilation, or a cache load, in every process).
        S, dist, S0, ok = _fast_anchor_words(*_search_arguments(Y, mask, seeds, num_topics),
                                             num_topics=num_topics, cleanup=bool(cleanup))
        S, dist, S0, ok = (np.asarray(S, dtype=np.int64), np.asarray(dist), np.asarray(S0, dtype=np.int64),
                           bool(ok))
    if not ok:
        dependent = dist[:num_seeds] ** 2 <= _RANK_TOL * np.max(np.sum(Y * Y, axis=1))
        if dependent.any():
            raise ValueError("the seeded anchors are linearly dependent (seed #%d lies in the span of "
                             "the ones before it): each must stand for its own topic"
                             % int(np.argmax(dependent)))
        raise ValueError(
            "the anchor candidates span fewer than %d linearly independent directions, so %d "
            "topics cannot be told apart; lower num_topics or admit more candidates "
            "(anchor_min_df)" % (num_topics, num_topics))
    return AnchorResult(S, dist, S0, int(np.sum(S != S0)))


def prefetch(cooc, p_w, num_topics, *, anchor_min_df=None, adaptive=True, num_seeds=0,
             projection_dim=DEFAULT_PROJECTION_DIM, cleanup=True):
    """Load the stored searches that a fit's anchor stage is likely to run, without running
    them (:meth:`~._compile_cache.stored_jit.prefetch`: for a background thread while the rows
    are projected): :func:`find_anchors` on each candidate set of the fixed thresholds, in the
    scoring dimension of :func:`choose_candidates` (``adaptive``) and in ``projection_dim``.
    A set's rows are known here up to the few words that :func:`choose_candidates` drops (not
    seen in every quarter), within the power of two of one program."""
    V = cooc.num_terms
    scored = anchor_min_df is None and adaptive and cooc.mode in ('implicit', 'distributed')
    levels = {resolve_min_df(anchor_min_df, cooc.num_docs)}  # the fixed rule's, if not scored
    if scored:
        levels.update(_thresholds(cooc.num_docs))
    sizes = {int(np.sum((cooc.doc_freq >= t) & (p_w > 0))) for t in levels}
    sizes = [n for n in sizes if n >= num_topics]
    exact = not projection_dim or projection_dim >= V
    final = V if exact else projection_dim
    if exact and cooc.mode == 'lowrank' and not num_seeds:  # project_rows' exact K coordinates
        final = num_topics
    shapes = {(n + num_seeds, final) for n in sizes}
    if scored and len(sizes) > 1:  # the thresholds' searches, where Q can be split
        shapes |= {(n, min(CANDIDATE_SCORE_DIM, V)) for n in sizes}
    with jax.enable_x64(True):
        for rows, dim in sorted(shapes):  # one load for the shapes that pad alike
            _fast_anchor_words.prefetch(*_padded_search(rows, dim, num_topics), num_topics=num_topics,
                                        cleanup=bool(cleanup))


def _search_arguments(Y, mask, seeds, num_topics):
    """The positional arguments of the compiled search: Y and its mask padded, the seeds padded
    to K, their number.

    Masked zero rows up to a power of two: one compiled search serves row counts up to twice
    apart (the adaptive threshold's subsets, fits on other corpora), for at most twice the
    search's O(K N d), a small part of a fit. A zero row is never chosen and moves no other
    row's distances beyond rounding; nor do zero coordinates (small Y only)."""
    N = Y.shape[0]
    Z, Z_mask, padded, _ = _padded_search(N, Y.shape[1], num_topics)
    Z[:N, :Y.shape[1]], Z_mask[:N] = Y, mask
    padded[:len(seeds)] = seeds
    return Z, Z_mask, padded, np.int32(len(seeds))


def _padded_search(num_rows, dim, num_topics):
    """:func:`_search_arguments` for ``num_rows`` rows of ``dim`` coordinates and no seeds, all
    zero (untouched memory until written): the program's shapes and dtypes, for
    :func:`prefetch` too."""
    size, width = power_of_two(num_rows, _MIN_SHAPE), max(_MIN_SHAPE, dim)
    return (np.zeros((size, width)), np.zeros(size, dtype=bool), np.zeros(num_topics, dtype=np.int32),
            np.int32(0))


def _candidate_mask(candidates, num_rows):
    """``candidates`` as a bool mask over the rows of Y. Row ids are refused, not cast: as a
    mask, [0, 1, 7] would admit rows 1 and 2 of a 3-row Y."""
    mask = np.asarray(candidates)
    if mask.shape != (num_rows,) or not (mask.dtype == bool or np.all((mask == 0) | (mask == 1))):
        raise ValueError("candidates must be a boolean mask over the %d rows of Y (shape (%d,)), got "
                         "%s of shape %s; for row ids use np.isin(np.arange(%d), ids)"
                         % (num_rows, num_rows, mask.dtype, mask.shape, num_rows))
    return mask.astype(bool)


def _residual(Y, U, C, j):
    """Row j of the residual ``Y - C U^T`` (its part outside the span of U's columns), projected
    out twice (classical Gram-Schmidt with one reorthogonalisation keeps it orthogonal to U to
    rounding)."""
    x = Y[j] - U @ C[j]
    return x - U @ (U.T @ x)


def first_true(mask):
    """``jnp.argmax(mask)`` of a boolean vector (its first True index, 0 if none), as one min
    over the indices: a plain reduction, which XLA:CPU vectorises, where argmax is a reduction
    of (value, index) pairs, a scalar loop: RecoverL2's default solve became 1.27 times faster on
    KOS and 20 Newsgroups, with the same steps (``python benchmarks/bench_recover_l2.py``,
    ``benchmarks/results/bench_recover_l2.log``, session 33's entries)."""
    n = mask.shape[0]
    first = jnp.min(jnp.where(mask, jnp.arange(n), n))
    return jnp.where(first == n, 0, first)


def _first_max(score, tie):
    """The lowest index whose score is within ``tie`` of the largest."""
    return first_true(score >= jnp.max(score) - tie)


def _fast_anchor_words_impl(Y, mask, seeds, num_seeds, num_topics, cleanup):
    # Y = Xr + C U^T with the residuals Xr implicit and their squared norms r2 carried (the
    # module's notes). A step reads Y once instead of rewriting the N x d residuals and summing
    # their squares, as the search did until session 32: the same anchors on KOS, NIPS and 20
    # Newsgroups, 2.5 to 9.7 times faster in two runs (python benchmarks/bench_anchor_search.py,
    # benchmarks/results/bench_anchor_search.log).
    N, d = Y.shape
    K = num_topics
    penalty = jnp.where(mask, 0.0, -jnp.inf)
    norms2 = jnp.sum(Y * Y, axis=1)
    scale = jnp.max(norms2)
    tiny = _RANK_TOL * scale
    tie = _TIE_TOL * scale

    def greedy(k, carry):
        U, C, r2, S, dist = carry
        # The first num_seeds steps take the seeded rows: the span starts with them.
        j = jnp.where(k < num_seeds, seeds[k], _first_max(r2 + penalty, tie))
        x = _residual(Y, U, C, j)
        nrm = jnp.sqrt(x @ x)
        u = x / jnp.where(nrm > 0, nrm, 1.0)
        c = Y @ u  # = Xr @ u, since u is orthogonal to the current span
        return (U.at[:, k].set(u), C.at[:, k].set(c), r2 - c * c, S.at[k].set(j.astype(S.dtype)),
                dist.at[k].set(nrm))

    init = (jnp.zeros((d, K), Y.dtype), jnp.zeros((N, K), Y.dtype), norms2,
            jnp.zeros(K, jnp.int32), jnp.zeros(K, Y.dtype))
    U, C, r2, S, dist = jax.lax.fori_loop(0, K, greedy, init)
    greedy_S = S
    ok = jnp.min(dist) ** 2 > tiny

    def clean(i, carry):
        U, C, r2, S, dist = carry
        G = C[S].T  # coordinates of the anchors in the basis U (K x K)
        a = jnp.linalg.solve(G.T, jnp.zeros(K, Y.dtype).at[i].set(1.0))
        q = a / jnp.linalg.norm(a)  # direction of span(S) orthogonal to every anchor but i
        t = C @ q
        score = r2 + t * t  # squared residuals from the span of the other anchors
        j = _first_max(score + penalty, tie)
        x = _residual(Y, U, C, j)
        nrm = jnp.sqrt(x @ x + t[j] * t[j])
        u_i = U @ q
        u_new = (t[j] * u_i + x) / nrm  # row j's residual from the span of the other anchors
        c_new = (t * t[j] + Y @ x) / nrm  # x is orthogonal to U (to rounding): Y x = Xr x
        # The direction u_i = U q of the span replaced by u_new, which is orthogonal to the rest
        # of it: U (I - q q^T) + u_new q^T is orthonormal, and the coordinates change alike.
        U = U - jnp.outer(u_i - u_new, q)
        C = C - jnp.outer(t - c_new, q)
        return U, C, score - c_new * c_new, S.at[i].set(j.astype(S.dtype)), dist.at[i].set(nrm)

    if cleanup:  # the seeded anchors stay: only the ones found are re-optimised
        U, C, r2, S, dist = jax.lax.cond(
            ok, lambda c: jax.lax.fori_loop(num_seeds, K, clean, c), lambda c: c, (U, C, r2, S, dist))
    return S, dist, greedy_S, ok


_fast_anchor_words = stored_jit(jax.jit(_fast_anchor_words_impl, static_argnames=('num_topics', 'cleanup')),
                                ('num_topics', 'cleanup'), loop_emitters=True)

