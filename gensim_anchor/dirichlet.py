"""The Dirichlet prior of the document-topic proportions: :math:`\\alpha = s\\, p(z)`.

Recovery (:mod:`.recovery`) gives the *shape* of the prior, :math:`p(z)`, the expected topic
proportions. Their concentration :math:`s = \\alpha_0 = \\sum_k \\alpha_k` (how mixed a document
is: :math:`\\alpha_0 \\to 0` puts each document in one topic, :math:`\\alpha_0 \\to \\infty` gives
every document the proportions :math:`p(z)`) is chosen as the paper does, by the likelihood of
training documents: a grid search over :math:`\\alpha_0` that maximises

.. math::

    \\sum_d \\log \\hat p(w_d \\mid \\beta, \\alpha_0\\, p(z)),

with :math:`\\hat p` the particle estimate of :func:`.likelihood.document_log_likelihood`. Every
grid point uses the same random numbers (common random numbers: document d gets the same key for
every :math:`\\alpha_0`), so the comparison between grid points is much less noisy than the
estimates themselves.

The default grid runs from :math:`\\alpha_0 = 0.1` (documents of essentially one topic) to
about :math:`10K` (:math:`\\alpha_k \\approx 10` for an average topic: every document has nearly the
proportions p(z)), 4 points per decade (steps of a factor 1.78). Both ends are near the two limits
of LDA (a mixture of unigrams and a single unigram model), and the common choices, 1/K to 50/K
per topic, lie well inside.

The search evaluates only a window of the grid (:func:`window_search`): 4 points around
:math:`\\alpha_0 = 0.05 K`, where the fits of KOS, NIPS and 20 Newsgroups at K = 20 to 100 chose it
(0.028 K to 0.089 K), then 2 more beyond whichever end holds the best point, until the best lies
inside, all calls of one compiled shape. It finds the grid's best point whenever the estimated
curve is unimodal (with common random numbers it is smooth: the KOS and Lee fits pinned in
``tests/test_structure.py`` choose the same :math:`\\alpha_0` as with every point, and the 18
fits' curves were all unimodal). On those 18 fits it took 4 points (6 on three;
``python benchmarks/bench_alpha_search.py``, ``benchmarks/results/bench_alpha_search.log``),
where the earlier search (every third point, then between the best one's neighbours) made 12
evaluations of up to 10 distinct points for K = 50. The same models, and the KOS fit's alpha
stage down from 0.60-0.78 s to 0.36-0.45 s with the compile cache filled (fit 1.94-2.62 s to
1.65-2.22 s on a 2-core AVX2 machine: ``python benchmarks/bench_firstfit.py --corpus kos --no-lda --repeat 2``, before and
after, the 2026-11-30T02:22Z entry of ``benchmarks/results/bench_firstfit.log``);
``exhaustive=True`` evaluates every point.

Cost: one evaluation of the estimator on ``docs`` per grid point evaluated, in vmapped calls:
:math:`O(G N R (J+1) K)` for N tokens in ``docs`` (G grid points, R particles, J Gibbs moves per
token). With the defaults (R = 20, J = 4) and K = 50, every one of the 16 points evaluated, 1,000 KOS
documents take 17.6 s on 2 CPU cores (19.3 s on the first call), 300 documents 5.8 s. On 300
KOS documents (50 anchor-word topics) the defaults chose the same :math:`\\alpha_0` (3.16) as
R = 50, J = 8: the estimator's bias (larger at small :math:`\\alpha_0`, see :mod:`.likelihood`)
moved the curve by at most 0.017 nats per token (``benchmarks/bench_likelihood.py``, log in
``benchmarks/results``).

Examples
--------
.. sourcecode:: pycon

    >>> import numpy as np
    >>> from gensim_anchor.dirichlet import fit_alpha_scale
    >>> topics = np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5]])
    >>> docs = [[(0, 3), (1, 2)], [(2, 4), (3, 1)], [(1, 2), (0, 3)]]  # one topic each
    >>> fit = fit_alpha_scale(topics, np.array([0.6, 0.4]), docs, grid=[0.1, 1.0, 10.0],
    ...                       random_state=0)
    >>> fit.scale, fit.alpha.round(3).tolist()
    (0.1, [0.06, 0.04])

"""
from typing import NamedTuple

import numpy as np

from . import likelihood as _lik
from ._defaults import (ALPHA_FIT_MOVES, ALPHA_FIT_SAMPLES, ALPHA_SEARCH_START, ALPHA_SEARCH_STEP,
                        ALPHA_SEARCH_WIDTH)
from ._sampling import seed_of
from ._validation import check_int, check_p_z

#: Default particles per document for the fit: the grid compares estimates made with common
#: random numbers, so fewer are needed than for reporting a likelihood.
DEFAULT_NUM_SAMPLES = ALPHA_FIT_SAMPLES
#: Default Gibbs rejuvenation moves per token for the fit.
DEFAULT_NUM_MOVES = ALPHA_FIT_MOVES
#: Grid points per decade of alpha_0.
GRID_PER_DECADE = 4


class DirichletFit(NamedTuple):
    """The prior chosen by :func:`fit_alpha_scale`.

    Attributes
    ----------
    alpha : numpy.ndarray, shape (K,)
        ``scale * p_z``.
    scale : float
        The chosen concentration :math:`\\alpha_0 = \\sum_k \\alpha_k` (a grid point).
    grid : numpy.ndarray, shape (G,)
        The concentrations tried.
    log_likelihood : numpy.ndarray, shape (G,)
        Estimated log-likelihood of the documents, summed, at each grid point; NaN at the points
        the search did not need (:func:`window_search`).

    """
    alpha: np.ndarray
    scale: float
    grid: np.ndarray
    log_likelihood: np.ndarray


def default_grid(num_topics):
    """alpha_0 = 10^(i / 4) from 0.1 up to the first value >= 10 K (4 = :data:`GRID_PER_DECADE`).

    Examples
    --------
    .. sourcecode:: pycon

        >>> from gensim_anchor.dirichlet import default_grid
        >>> default_grid(4).round(2).tolist()
        [0.1, 0.18, 0.32, 0.56, 1.0, 1.78, 3.16, 5.62, 10.0, 17.78, 31.62, 56.23]
        >>> len(default_grid(50)), round(float(default_grid(50)[-1]), 1)
        (16, 562.3)

    """
    top = int(np.ceil(GRID_PER_DECADE * np.log10(10.0 * num_topics) - 1e-9))
    return 10.0 ** (np.arange(-GRID_PER_DECADE, top + 1) / GRID_PER_DECADE)


def window_search(evaluate, num_points, start, width=ALPHA_SEARCH_WIDTH, step=ALPHA_SEARCH_STEP):
    """The best of ``num_points`` grid points of a unimodal curve, from a window around a guess.

    ``evaluate(indices)`` returns the values at the grid indices it is given (values are
    maximised). First the ``width`` points from ``start - 1`` on (moved inside the grid); then,
    while the best point evaluated is at an end of the evaluated run, the next ``step`` points
    beyond that end. A best point inside the run is the curve's maximum when the curve rises
    to it and then falls: a higher point further out would make the curve fall and rise again.
    Grids of at most ``width`` points are evaluated whole.

    Returns
    -------
    numpy.ndarray, shape (num_points,)
        The values, NaN where not evaluated.

    Examples
    --------
    .. sourcecode:: pycon

        >>> import numpy as np
        >>> from gensim_anchor.dirichlet import window_search
        >>> curve = -(np.arange(16) - 10.0) ** 2
        >>> values = window_search(lambda i: curve[i], 16, start=5)
        >>> int(np.nanargmax(values)), np.flatnonzero(~np.isnan(values)).tolist()
        (10, [4, 5, 6, 7, 8, 9, 10, 11])

    """
    out = np.full(num_points, np.nan)
    lo = int(np.clip(start - 1, 0, max(num_points - width, 0)))
    hi = min(lo + width, num_points) - 1
    new = np.arange(lo, hi + 1)
    while len(new):
        out[new] = evaluate(new)
        best = int(np.nanargmax(out))
        if best == lo and lo > 0:
            new = np.arange(max(lo - step, 0), lo)
            lo = int(new[0])
        elif best == hi and hi < num_points - 1:
            new = np.arange(hi + 1, min(hi + step, num_points - 1) + 1)
            hi = int(new[-1])
        else:
            new = ()
    return out


def search_start(grid, num_topics):
    """Where :func:`window_search` starts on an ascending grid: the index of the last point at or
    below :data:`~._defaults.ALPHA_SEARCH_START` x K (0 when all are above it)."""
    target = ALPHA_SEARCH_START * num_topics
    return max(int(np.searchsorted(grid, target, side='right')) - 1, 0)


def _check_grid(grid, num_topics):
    if grid is None:
        return default_grid(num_topics)
    g = np.asarray(grid, dtype=np.float64).reshape(-1)
    if g.size == 0:
        raise ValueError("grid must hold at least one concentration alpha_0 > 0, got none")
    if not np.all(np.isfinite(g)) or np.any(g <= 0):
        raise ValueError("grid values are concentrations alpha_0 and must be finite and > 0, "
                         "got %r" % (g.tolist(),))
    return g


def prefetch(docs, num_topics, num_terms, num_samples=DEFAULT_NUM_SAMPLES,
             num_moves=DEFAULT_NUM_MOVES):
    """Load the stored programs that :func:`fit_alpha_scale` will run on ``docs`` with the
    default grid, without running them (:meth:`~._compile_cache.stored_jit.prefetch`: for a
    background thread while the anchors and the recovery run; the topics are not needed, only
    K and V). The search's calls score its window first, then ``ALPHA_SEARCH_STEP`` points
    or fewer at a time, all in batches of the first call's size."""
    parsed = _lik.parse_documents(list(docs), num_terms)[0]
    first = min(ALPHA_SEARCH_WIDTH, len(default_grid(num_topics)))
    _lik.prefetch_estimate(parsed, num_topics, sorted({first, min(ALPHA_SEARCH_STEP, first), 1}),
                           num_samples, num_moves, batch_scales=first)


def fit_alpha_scale(topics, p_z, docs, *, grid=None, random_state=None,
                    num_samples=DEFAULT_NUM_SAMPLES, num_moves=DEFAULT_NUM_MOVES, exhaustive=False):
    """Choose :math:`\\alpha = s\\, p(z)` by the estimated likelihood of ``docs`` over a grid of s.

    Parameters
    ----------
    topics : numpy.ndarray, shape (K, V)
        p(w | z), rows summing to 1.
    p_z : numpy.ndarray, shape (K,)
        The shape of the prior, >= 0 and summing to 1 (recovery's p(z)).
    docs : list of list of (int, number)
        Documents (e.g. a sample of the training corpus) with whole word counts.
    grid : sequence of float, optional
        Concentrations :math:`\\alpha_0 = s` to try; default :func:`default_grid` (0.1 to 10 K).
    random_state : {int, numpy.random.RandomState, None}
        Seed; the same random numbers serve every grid point.
    num_samples, num_moves : int
        Particles and Gibbs moves per token of the likelihood estimator
        (:func:`.likelihood.document_log_likelihood`).
    exhaustive : bool
        Evaluate every grid point, not only those :func:`window_search` needs (the same choice
        when the estimated curve is unimodal; ``log_likelihood`` then has no NaN).

    Returns
    -------
    DirichletFit

    Raises
    ------
    ValueError
        If p_z is not a distribution over the K topics, the grid holds a value <= 0, or the
        documents hold no known word.
    """
    beta = _lik.prepare_topics(topics)
    K = beta.shape[0]
    shape = check_p_z(p_z, K)
    g = _check_grid(grid, K)
    R = check_int('num_samples', num_samples, minimum=1)
    J = check_int('num_moves', num_moves, minimum=0)
    docs = list(docs)
    if not docs:
        raise ValueError("docs is empty: fitting the scale of alpha needs documents")
    parsed, num_tokens, _ = _lik.parse_documents(docs, beta.shape[1])
    if num_tokens.sum() == 0:
        raise ValueError("none of the %d documents has a word id in [0, %d): nothing to fit "
                         "alpha to" % (len(docs), beta.shape[1]))
    seed = seed_of(random_state)

    # Every call of a search is laid out in batches of one size, that of its first and largest
    # call (one compiled program, however few points a later call adds).
    first_call = len(g) if exhaustive else min(ALPHA_SEARCH_WIDTH, len(g))

    def evaluate(indices):
        # The same seed for every call: document d sees the same random numbers at every
        # alpha_0, so values from different calls compare as those of one.
        return _lik.estimate(beta, shape, g[indices], parsed, seed, 0, R, J,
                             batch_scales=first_call).sum(axis=1)

    if exhaustive:
        total = evaluate(np.arange(len(g)))
    else:  # along increasing alpha_0, whatever the order of a given grid
        order = np.argsort(g, kind='stable')
        total = np.empty(len(g))
        total[order] = window_search(lambda i: evaluate(order[i]), len(g), search_start(g[order], K))
    scale = float(g[int(np.nanargmax(total))])
    return DirichletFit(scale * shape, scale, g, total)
