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

The search evaluates a third of the grid and then only around the best point
(:func:`bracket_search`): every third point, both ends included, then the points between the
best one's two neighbours, in two vmapped calls of one compiled shape. It finds the grid's best
point whenever the estimated curve is unimodal (with common random numbers it is smooth: the
KOS and Lee fits pinned in ``tests/test_structure.py`` chose the same :math:`\\alpha_0` as with
every point). For K = 50 the default 16 points cost two calls of 6 (at most 10 distinct points,
12 evaluations instead of 16; the model's alpha stage on KOS went from 0.67 to 0.49 s with the
compile cache filled: ``python benchmarks/bench_firstfit.py --repeat 3``, medians of the
2026-11-27T00:03Z and 03:16Z entries of ``benchmarks/results/bench_firstfit.log``);
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
from ._defaults import ALPHA_FIT_MOVES, ALPHA_FIT_SAMPLES
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
        the search did not need (:func:`bracket_search`).

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


def bracket_search(evaluate, num_points):
    """The best of ``num_points`` grid points from about a third of them, for a unimodal curve.

    ``evaluate(indices)`` returns the values at the grid indices it is given, always as many
    indices as the first call's (one shape, one compilation); values are maximised. First every
    third point, both ends included (C points); then, of the points between the best one's two
    neighbours, those not yet evaluated (at most 4, padded to C with evaluated ones, whose values
    are already known). If the curve rises to its maximum and then falls, the maximum lies
    between those neighbours: any evaluated point beyond them would otherwise be higher than
    the best. Grids of fewer than 8 points are evaluated whole.

    Returns
    -------
    numpy.ndarray, shape (num_points,)
        The values, NaN where not evaluated.

    Examples
    --------
    .. sourcecode:: pycon

        >>> import numpy as np
        >>> from gensim_anchor.dirichlet import bracket_search
        >>> curve = -(np.arange(16) - 10.0) ** 2
        >>> values = bracket_search(lambda i: curve[i], 16)
        >>> int(np.nanargmax(values)), np.flatnonzero(np.isnan(values)).tolist()
        (10, [1, 2, 4, 5, 13, 14])

    """
    out = np.full(num_points, np.nan)
    if num_points < 8:
        out[:] = evaluate(np.arange(num_points))
        return out
    coarse = np.unique(np.round(np.linspace(0, num_points - 1, -(-(num_points - 1) // 3) + 1))
                       .astype(int))
    out[coarse] = evaluate(coarse)
    j = int(np.argmax(out[coarse]))
    lo, hi = coarse[max(j - 1, 0)], coarse[min(j + 1, len(coarse) - 1)]
    fine = np.array([i for i in range(lo + 1, hi) if np.isnan(out[i])], dtype=int)
    if len(fine):
        padded = np.concatenate([fine, np.full(len(coarse) - len(fine), coarse[j])])
        out[fine] = evaluate(padded)[:len(fine)]
    return out


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
        Evaluate every grid point, not only those :func:`bracket_search` needs (the same choice
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

    def evaluate(indices):
        # The same seed for every call: document d sees the same random numbers at every
        # alpha_0, so values from the two calls compare as those of one.
        return _lik.estimate(beta, shape, g[indices], parsed, seed, 0, R, J).sum(axis=1)

    if exhaustive:
        total = evaluate(np.arange(len(g)))
    else:  # bracketed along increasing alpha_0, whatever the order of a given grid
        order = np.argsort(g, kind='stable')
        total = np.empty(len(g))
        total[order] = bracket_search(lambda i: evaluate(order[i]), len(g))
    scale = float(g[int(np.nanargmax(total))])
    return DirichletFit(scale * shape, scale, g, total)
