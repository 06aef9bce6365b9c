"""The algorithm in one function: co-occurrence statistics in, topics and prior out.

Arora et al. (2013), end to end, after the single pass of :mod:`.cooccurrence`:

1. (optional) rectify Q (:mod:`.rectify`: compressed, Lee et al. 2021, or by alternating
   projection, Lee, Bindel & Mimno 2015);
2. choose the anchor candidates and find one anchor per topic by FastAnchorWords in a random
   projection of Q-bar, around any seeded anchors (:mod:`.anchors`);
3. recover p(z | w) for every word by exponentiated gradient (RecoverL2 / RecoverKL) or the
   original Recover, and A, R, p(z) by Bayes' rule (:mod:`.recovery`);
4. alpha: p(z) gives its shape, the scale is chosen by likelihood (:mod:`.dirichlet`).

:func:`fit` is pure (statistics and options in, an :class:`AnchorFit` out: nothing is logged,
no input is changed); :class:`~gensim_anchor.AnchorModel` validates the user's arguments, reads
the corpus, calls it, stores the result and logs it. The stages talk through their result
objects (:class:`~.anchors.AnchorResult`, :class:`~.recovery.Recovery`,
:class:`~.rectify.Rectification`, :class:`~.dirichlet.DirichletFit`), kept in the fit.

Examples
--------
.. sourcecode:: pycon

    >>> from gensim.corpora import Dictionary
    >>> from gensim.test.utils import common_texts
    >>> from gensim_anchor.cooccurrence import build_cooccurrence
    >>> from gensim_anchor.pipeline import FitOptions, fit
    >>> dictionary = Dictionary(common_texts)
    >>> corpus = [dictionary.doc2bow(text) for text in common_texts]
    >>> result = fit(build_cooccurrence(corpus, len(dictionary)), FitOptions(num_topics=2),
    ...              documents=corpus)
    >>> result.topics.shape, len(result.anchors), sorted(result.timings)
    ((2, 12), 2, ['anchors', 'dirichlet', 'recovery'])

"""
import logging
import time
from typing import NamedTuple, Optional

import numpy as np
from threadpoolctl import threadpool_limits

from . import _validation as check
from . import distributed
from ._compile_cache import persistent_cache, prefetching
from ._defaults import (ALPHA_MOVES, ALPHA_SAMPLES, DEFAULT_MAX_ITER, DEFAULT_PROJECTION_DIM,
                        RECTIFY_MAX_ITER, REFINE_ALPHA_START)
from ._bow import DocumentStore
from ._sampling import Reservoir, alpha_documents, combine_samples
from .cooccurrence import apply_auto_mode, build_cooccurrence, pass_mode

logger = logging.getLogger(__name__)


class FitOptions(NamedTuple):
    """What :func:`fit` runs: the model's options of the algorithm, already validated.

    Attributes
    ----------
    num_topics : int
    loss : {'L2', 'KL', 'original'}
    eps : float or None
        Duality-gap tolerance (None: per loss).
    max_iter : int
    anchor_min_df : int, float or None
    projection_dim : int or None
    cleanup : bool
    rectify : {False, 'enn', 'ap'}
        No rectification, the compressed epsilon-nonnegative one (Lee et al. 2021,
        :func:`~.rectify.rectify_lowrank`) or the dense alternating projection (Lee, Bindel &
        Mimno 2015, :func:`~.rectify.rectify_cooccurrence`).
    rectify_max_iter : int
    seeds : list of list of (str or int), or None
        Seeded anchors as :func:`~gensim_anchor._validation.check_seeds` returns them.
    alpha : {'auto', 'symmetric', 'asymmetric', None} or numpy.ndarray
    dtype : numpy.dtype
        Precision of the topics.
    seed : int
        Seed of the projection, of the alpha sample and of its likelihood estimate.
    adaptive_candidates : bool
        With ``anchor_min_df=None``, choose the candidate threshold per corpus
        (:func:`~.anchors.choose_candidates`); False: the fixed rule's (the start of a Gibbs
        refinement, :class:`~gensim_anchor.AnchorModel`'s ``refine='gibbs'``).
    alpha_grid : bool
        With ``alpha='auto'``, choose alpha's scale by the grid search (:mod:`.dirichlet`);
        False: p(z) at the concentration :data:`~._defaults.REFINE_ALPHA_START`, the start of a
        Gibbs refinement that fits alpha itself.
    """
    num_topics: int
    loss: str = 'L2'
    eps: Optional[float] = None
    max_iter: int = DEFAULT_MAX_ITER
    anchor_min_df: object = None
    projection_dim: Optional[int] = DEFAULT_PROJECTION_DIM
    cleanup: bool = True
    rectify: object = False
    rectify_max_iter: int = RECTIFY_MAX_ITER
    seeds: object = None
    alpha: object = 'auto'
    dtype: object = np.float32
    seed: int = 0
    adaptive_candidates: bool = True
    alpha_grid: bool = True


class AnchorFit(NamedTuple):
    """Everything :func:`fit` found.

    Attributes
    ----------
    topics : numpy.ndarray, shape (K, V)
        p(w | z) in ``options.dtype``, rows sum to 1 (``A.T``).
    R : numpy.ndarray, shape (K, K)
    p_z : numpy.ndarray, shape (K,)
    alpha : numpy.ndarray, shape (K,)
    anchors : numpy.ndarray of int, shape (K,)
        The anchor word of each topic, -1 for a group.
    groups : list of list of int
        The anchor words of each topic.
    num_candidates, min_df, projection_dim : int
        The anchor candidates, their document-frequency threshold, the dimension searched.
    search : :class:`~gensim_anchor.anchors.AnchorResult`
    recovery : :class:`~gensim_anchor.recovery.Recovery`
        Its ``solver`` holds the per-word convergence (None for ``'original'``).
    rectification : :class:`~gensim_anchor.rectify.Rectification` or None
    alpha_fit : :class:`~gensim_anchor.dirichlet.DirichletFit` or None
        The grid search, for ``alpha='auto'``.
    num_alpha_docs : int
        Documents the grid search scored.
    timings : dict of str to float
        Seconds per stage: ``rectify`` (if run), ``anchors``, ``recovery``, ``dirichlet``.
    """
    topics: np.ndarray
    R: np.ndarray
    p_z: np.ndarray
    alpha: np.ndarray
    anchors: np.ndarray
    groups: list
    num_candidates: int
    min_df: int
    projection_dim: int
    search: object
    recovery: object
    rectification: object
    alpha_fit: object
    num_alpha_docs: int
    timings: dict


class Statistics(NamedTuple):
    """What the single pass leaves: Q's statistics, the document sample for alpha, and the
    parsed documents when a refinement will need their tokens (else None)."""
    cooc: object
    sample: object
    documents: object = None


def read(corpus, options, *, num_terms=None, old=None, sample=None, documents=None, keep_documents=False,
         q_mode='auto', chunksize=2000, progress=None, sample_size=1000, client=None):
    """Stage 1, the single pass: the statistics of everything seen so far, and the sample.

    Parameters
    ----------
    corpus : iterable of list of (int, number), or a Dask corpus
        The new documents: read here, or on the cluster when :func:`.distributed.is_dask_corpus`.
    options : FitOptions
        The fit the statistics are for (q_mode='auto' weighs its costs).
    num_terms : int, optional
    old : Cooccurrence or DistributedCooccurrence, optional
        Statistics of the documents seen before (Q is additive in its documents). With them,
        the new documents may be empty or all shorter than two tokens.
    sample : :class:`~gensim_anchor._sampling.Reservoir`, optional
        The sample of the documents seen before; not changed (a corpus rejected halfway must
        not leave its first documents in the caller's sample).
    documents : :class:`~gensim_anchor._bow.DocumentStore` or :class:`~.distributed.DaskDocuments`, optional
        The documents seen before (with ``keep_documents``); not changed either.
    keep_documents : bool
        Also keep the parsed documents (for a refinement); of a Dask corpus, its partitions
        (:class:`~.distributed.DaskDocuments`), which stay on the cluster.
    q_mode, chunksize, progress, sample_size, client :
        As :class:`~gensim_anchor.AnchorModel`'s.

    Returns
    -------
    Statistics
    """
    dask = distributed.is_dask_corpus(corpus, client)
    new_documents = None
    if keep_documents:
        # A Dask corpus stays on the cluster: kept are its partitions, read again on the workers
        # by the refinement (gensim_anchor.distributed_hybrid).
        new_documents = distributed.DaskDocuments.of(corpus, client) if dask else DocumentStore()
    if dask:
        cooc = distributed.build_cooccurrence_dask(
            corpus, num_terms, client, chunksize=chunksize, progress=progress,
            sample_size=sample_size, seed=options.seed, require_pairs=old is None)
        sample = combine_samples([sample, cooc.sample], sample_size, options.seed)
    else:
        sample = Reservoir(sample_size, options.seed) if sample is None else sample.copy()
        cooc = build_cooccurrence(corpus, num_terms, mode=pass_mode(q_mode, old), chunksize=chunksize,
                                  progress=progress, sample=sample, documents=new_documents,
                                  require_pairs=old is None)
    if old is not None:
        if cooc.mode == 'distributed' and old.mode != 'distributed':
            cooc = cooc.merge(old)
        else:
            cooc = old.merge(cooc)
    if q_mode == 'auto':  # decided on H~ of all the documents (once dense, dense)
        cooc = apply_auto_mode(cooc, projection_dim=options.projection_dim,
                               num_topics=options.num_topics, loss=options.loss)
    if keep_documents and documents is not None:
        if isinstance(new_documents, distributed.DaskDocuments) and not isinstance(
                documents, distributed.DaskDocuments):
            new_documents = distributed.DaskDocuments([], client).merge(documents).merge(new_documents)
        else:
            new_documents = documents.merge(new_documents)
    return Statistics(cooc, sample, new_documents)


def fit(cooc, options, *, id2word=None, documents=()):
    """Run the algorithm on co-occurrence statistics.

    Parameters
    ----------
    cooc : :class:`~gensim_anchor.cooccurrence.Cooccurrence` or DistributedCooccurrence
    options : FitOptions
    id2word : mapping, optional
        Looks up seeded anchors given as words.
    documents : list of list of (int, int)
        A sample of the training documents, for ``alpha='auto'``.

    Returns
    -------
    AnchorFit
    """
    with persistent_cache():  # compiled programs kept on disk for the next process
        return _fit(cooc, options, id2word, documents)


def _fit(cooc, options, id2word, documents):
    K, V = options.num_topics, cooc.num_terms
    check.check_vocabulary(K, V)
    timings, rectification = {}, None
    if options.rectify:
        from .rectify import rectify_cooccurrence, rectify_lowrank
        start = time.perf_counter()
        # Only the fit sees the rectified Q; the caller keeps the additive statistics.
        method = rectify_cooccurrence if options.rectify == 'ap' else rectify_lowrank
        cooc, rectification = method(cooc, K, max_iter=options.rectify_max_iter, seed=options.seed)
        timings['rectify'] = time.perf_counter() - start
    # Rectification above is numpy's large products, on every BLAS thread; the stages below are
    # JAX's, beside which numpy's products are small (K x V), and BLAS threads would only fight
    # with XLA's for the cores (seen: 10x slower Gram products). Scoped, restored on exit.
    with threadpool_limits(limits=1, user_api='blas'):
        return _fit_stages(cooc, options, id2word, documents, timings, rectification)


def _fit_stages(cooc, options, id2word, documents, timings, rectification):
    """Anchors, recovery and alpha on (possibly rectified) statistics."""
    # The JAX stages are imported here, not at module level: a saved model loads without JAX.
    from .anchors import (anchor_rows, choose_candidates, find_anchors, project_rows, resolve_seeds,
                          select_candidates, single_word_anchors)
    from .recovery import recover

    K = options.num_topics
    start = time.perf_counter()
    p_w = cooc.row_sums()
    seeds = resolve_seeds(options.seeds, id2word, p_w)
    grid = _alpha_by_grid(options)
    alpha_docs = alpha_documents(documents, options.seed) if grid else ()
    # The stages' programs are loaded on a second thread while the anchors are searched.
    with prefetching(*_loaders(cooc, p_w, seeds, options, alpha_docs)):
        choice = None
        if options.anchor_min_df is None and options.adaptive_candidates:  # where Q can be split
            choice = choose_candidates(cooc, p_w, K, seed=options.seed, cleanup=options.cleanup)
        if choice is None:
            candidates, min_df = select_candidates(cooc.doc_freq, p_w, options.anchor_min_df,
                                                   cooc.num_docs, K, len(seeds))
        else:
            candidates, min_df = choice.candidates, choice.min_df
            logger.info("anchor candidates: %d words in >= %d documents, the threshold of largest "
                        "held-out anchor volume among (documents, candidates, log-volume) %s",
                        len(candidates), min_df, ", ".join("(%d, %d, %.2f)" % level for level in choice.levels))
        Y = project_rows(cooc, p_w, candidates, options.projection_dim, options.seed,
                         extra=anchor_rows(cooc, p_w, seeds))
        search = find_anchors(Y, K, candidates=np.arange(len(Y)) < len(candidates),
                              cleanup=options.cleanup, seeds=len(candidates) + np.arange(len(seeds)))
        groups = seeds + [[int(candidates[i])] for i in search.indices[len(seeds):]]
        timings['anchors'] = time.perf_counter() - start

        start = time.perf_counter()
        recovery = recover(cooc, groups, options.loss, eps=options.eps, max_iter=options.max_iter,
                           p_w=p_w, r_method='diagonal' if options.rectify else 'pinv')
        timings['recovery'] = time.perf_counter() - start
        topics = as_distributions(recovery.A.T, options.dtype)

        start = time.perf_counter()
        alpha, alpha_fit = _alpha(options, topics, recovery.p_z, alpha_docs)
        timings['dirichlet'] = time.perf_counter() - start
    return AnchorFit(topics, recovery.R, recovery.p_z, alpha, single_word_anchors(groups), groups,
                     len(candidates), min_df, Y.shape[1], search, recovery, rectification,
                     alpha_fit, len(alpha_docs), timings)


def _loaders(cooc, p_w, seeds, options, alpha_docs):
    """What :func:`~._compile_cache.prefetching` loads for the stages after the statistics, in
    the order they run: their shapes are known before the anchors are (the searches' up to a
    few candidates), and a load releases the GIL."""
    from . import anchors, dirichlet, recovery
    K = options.num_topics
    solved = int(np.count_nonzero(p_w > 0)) - (K - sum(len(group) > 1 for group in seeds))
    loaders = [lambda: anchors.prefetch(cooc, p_w, K, anchor_min_df=options.anchor_min_df,
                                        adaptive=options.adaptive_candidates, num_seeds=len(seeds),
                                        projection_dim=options.projection_dim, cleanup=options.cleanup),
               lambda: recovery.prefetch(solved, K, options.loss)]  # all but single-word anchors
    if len(alpha_docs):
        loaders.append(lambda: dirichlet.prefetch(alpha_docs, K, cooc.num_terms, ALPHA_SAMPLES, ALPHA_MOVES))
    return loaders


def refinement_alpha_start(p_z):
    """alpha where a refinement that fits alpha starts instead of the grid search's: p(z) at the
    concentration :data:`~._defaults.REFINE_ALPHA_START` (floored: no alpha_k of 0)."""
    return REFINE_ALPHA_START * np.maximum(p_z, 1e-8)


def _alpha_by_grid(options):
    """Whether alpha is the paper's, chosen by the grid search (:mod:`.dirichlet`)."""
    return (not isinstance(options.alpha, np.ndarray) and options.alpha == 'auto'
            and options.alpha_grid)


def _alpha(options, topics, p_z, docs):
    """alpha from the option: 'auto' is the paper's (shape p(z), scale by likelihood, on the
    sample ``docs`` of :func:`~._sampling.alpha_documents`), the others LdaModel's fixed
    priors; and the grid search's :class:`~.dirichlet.DirichletFit` (or None)."""
    K = options.num_topics
    if _alpha_by_grid(options):
        from .dirichlet import fit_alpha_scale
        result = fit_alpha_scale(topics, p_z, docs, random_state=options.seed, num_samples=ALPHA_SAMPLES,
                                 num_moves=ALPHA_MOVES)
        # p(z) can hold exact zeros (the original Recover clips R); a zero alpha_k would make
        # inference take digamma(0).
        return np.maximum(result.alpha, 1e-8 * result.scale), result
    if isinstance(options.alpha, np.ndarray):
        return options.alpha, None
    if options.alpha in ('symmetric', None):  # None as LdaModel: symmetric
        return np.full(K, 1.0 / K), None
    if options.alpha == 'asymmetric':  # LdaModel's formula
        alpha = 1.0 / (np.arange(K) + np.sqrt(K))
        return alpha / alpha.sum(), None
    # 'auto' without the grid, a start only: the sampler fits alpha (Minka's fixed point).
    return refinement_alpha_start(p_z), None


def as_distributions(rows, dtype):
    """Rows cast to ``dtype`` that still sum to 1 to the precision of ``dtype``.

    Casting to float32 leaves row sums off by up to ~1e-6; the residual, computed in float64, is
    put on the largest entry of each row, where it is smallest relative to the value.
    """
    out = (rows / rows.sum(axis=1, keepdims=True)).astype(dtype)
    residual = 1.0 - out.sum(axis=1, dtype=np.float64)
    top = out.argmax(axis=1)
    out[np.arange(len(out)), top] += residual.astype(dtype)
    return out
