"""AnchorModel: the anchor-words topic model of Arora et al. (2013) with gensim's model API.

`A Practical Algorithm for Topic Modeling with Provable Guarantees
<https://proceedings.mlr.press/v28/arora13.html>`_, ICML 2013.

Matrices (the paper's names):

=========  ===========  ========================================================
``Q``      V x V        word co-occurrence, sums to 1 (:mod:`.cooccurrence`)
``Q_bar``  V x V        Q with rows normalised, p(w2 | w1)
``A``      V x K        p(w | z), columns sum to 1; ``get_topics()`` is ``A.T``
``R``      K x K        topic-topic co-occurrence, :math:`A^+ Q A^{+T}`
``p_z``    K            p(z), the shape of the Dirichlet prior
=========  ===========  ========================================================

Algorithm: one pass over the corpus builds Q; FastAnchorWords finds one anchor word per topic
in a random projection of Q-bar (:mod:`.anchors`); every word's p(z | w) is recovered as a
convex combination of the anchor rows by exponentiated gradient, and Bayes' rule gives A
(:mod:`.recovery`).

Examples
--------
Train on a gensim corpus, look at the topics and their anchor words:

.. sourcecode:: pycon

    >>> from gensim.corpora import Dictionary
    >>> from gensim.test.utils import common_texts
    >>> from gensim_anchor import AnchorModel
    >>> dictionary = Dictionary(common_texts)
    >>> corpus = [dictionary.doc2bow(text) for text in common_texts]
    >>> model = AnchorModel(corpus, num_topics=2, id2word=dictionary, random_state=0)
    >>> len(model.anchor_words), model.get_topics().shape
    (2, (2, 12))

Save and load (numpy state only; JAX is not needed to load):

.. sourcecode:: pycon

    >>> from gensim.test.utils import get_tmpfile
    >>> fname = get_tmpfile("anchor.model")
    >>> model.save(fname)
    >>> loaded = AnchorModel.load(fname)
    >>> bool((loaded.get_topics() == model.get_topics()).all())
    True

Add documents: Q is additive, so the model is re-solved on all documents seen so far:

.. sourcecode:: pycon

    >>> model.update(corpus)
    >>> model.num_docs  # documents with two or more tokens, twice
    16

"""
import copy
import logging
import pickle
import time
import zlib
from collections import defaultdict

import numpy as np
from gensim import interfaces, matutils, utils
from gensim.models import basemodel

from . import _validation as check
from . import pipeline
from ._defaults import (ALPHA_SAMPLE, CAPPED_WARNING_SHARE, REFINE_TOL, DEFAULT_ETA,
                        DEFAULT_MAX_ITER, DEFAULT_OPTIMIZE_ALPHA, DEFAULT_PROJECTION_DIM,
                        DEFAULT_SAMPLER, DEFAULT_SUBSTEPS, DEFAULT_SWEEPS, DEFAULT_VB_PASSES,
                        FORMAT_VERSION, LOSSES, Q_MODES, RECTIFY_MAX_ITER, RECTIFY_METHODS,
                        REFINE_ALPHA_START, REFINE_METHODS, REFINE_OPTIONS, RECTIFY_TOL)
from ._bow import DocumentStore, UnknownWordError, read_documents
from ._sampling import Reservoir
from .distributed import DaskDocuments, is_dask_corpus

logger = logging.getLogger(__name__)


# LdaModel's constructor arguments that have no meaning for anchor words, with their defaults.
_LDA_ONLY = dict(distributed=False, passes=1, update_every=1, decay=0.5, offset=1.0, eval_every=10,
                 ns_conf=None)


class _DocumentTopicsCorpus(interfaces.TransformedCorpus):
    """``model[corpus]``: document topics inferred a chunk at a time (one vmapped call per chunk).

    Unlike gensim's TransformedCorpus it keeps its options to itself instead of setting them on
    the model, so ``model[corpus]`` never changes what ``model[bow]`` returns.
    """

    def __init__(self, model, corpus, chunksize, options):
        self.obj, self.corpus, self.chunksize, self.options = model, corpus, chunksize, options
        self.metadata = False

    def __iter__(self):
        for chunk in utils.grouper(self.corpus, self.chunksize):
            yield from self.obj._document_topics(list(chunk), **self.options)

    def __getitem__(self, docno):
        if not hasattr(self.corpus, '__getitem__'):
            raise RuntimeError("type %s does not support indexing" % type(self.corpus))
        return self.obj._document_topics([self.corpus[docno]], **self.options)[0]


#: Saved models pickle their document sample as ``gensim_anchor.anchormodel._Reservoir``.
_Reservoir = Reservoir


#: Every refinement option's default, whichever method takes it.
_REFINE_DEFAULTS = {name: value for options in REFINE_OPTIONS.values() for name, value in options.items()}


def _is_default(value, default):
    try:
        return value is default or (type(value) is type(default) and bool(value == default))
    except (TypeError, ValueError):
        return False


def _check_dask_refinement(method, options):
    """A refinement a Dask corpus can have, before anything is read."""
    if method == 'vb':
        raise ValueError("refine='vb' reads the documents on this machine (gensim's LdaModel); "
                         "a Dask corpus is refined by 'gibbs'")
    if options['sampler'] != 'collapsed':  # options completed (check_refine_options)
        raise ValueError("sampler=%r has no Dask form: a Dask corpus is refined by the collapsed "
                         "sampler (AD-LDA); use sampler='collapsed'" % options['sampler'])


class AnchorModel(interfaces.TransformationABC, basemodel.BaseTopicModel):
    """Anchor-words topic model (Arora et al. 2013), a drop-in for :class:`~gensim.models.LdaModel`.

    Parameters
    ----------
    corpus : iterable of list of (int, number), optional
        Bag-of-words documents, read once (or a Dask corpus, see ``client``). If given, the
        model is trained at once.
    num_topics : int
        K, the number of topics (and of anchor words), >= 2.
    id2word : {:class:`~gensim.corpora.Dictionary`, dict of (int, str)}, optional
        Word ids to words. If None, V is the largest id in the corpus plus one.
    chunksize : int
        Documents per chunk when reading the corpus and when inferring document topics.
    alpha : {'auto', 'symmetric', 'asymmetric', float, array of K floats}
        Dirichlet prior on document topics. ``'auto'`` (default) is the paper's: p(z) from the
        recovery gives the shape and the scale is the grid point that maximises the estimated
        likelihood of a sample of training documents (:mod:`.dirichlet`); with
        ``refine='gibbs'``, whose sampler fits alpha (``optimize_alpha``, the default), the grid
        is skipped and the sampler starts from p(z) at concentration
        :data:`~gensim_anchor._defaults.REFINE_ALPHA_START`. The others (and None, which means
        'symmetric') are LdaModel's fixed priors, the refinement's start where one is given.
    eta : {None, 'symmetric', 'auto', float, array}
        LdaModel's topic-word prior, symmetric 1/K by default (``'auto'`` means the same here).
        The anchor topics are point estimates and do not use it; :meth:`state`,
        :meth:`to_ldamodel` and the refinements do (the Gibbs sampler takes one number: an array
        that varies needs ``refine_options={'eta': ...}``).
    iterations, gamma_threshold : int, float
        Iteration cap and tolerance of document-topic inference, as for LdaModel.
    minimum_probability, minimum_phi_value, per_word_topics, dtype :
        As for :class:`~gensim.models.LdaModel`. ``dtype`` is the precision of the stored topics
        (the solvers run in float64).
    random_state : {int, numpy.random.RandomState}, optional
        Seed of the random projection, of the document sample for alpha and of the likelihood
        estimates. The same seed gives the same model.
    distributed, passes, update_every, decay, offset, eval_every, ns_conf :
        LdaModel's arguments without a meaning for anchor words: accepted, logged and ignored
        (``distributed=True`` with a warning: the cluster here is Dask's, see ``client``).
    callbacks : list of :class:`gensim.models.callbacks.Metric`, optional
        Metrics evaluated at the end of each training stage, as LdaModel evaluates them after
        each pass: epoch 0 is the anchor fit, epoch 1 the refinement of ``refine=``, and each
        later :meth:`refine` one more epoch. The values are in ``metrics``, which each
        :meth:`update` starts afresh (as LdaModel's). ``DiffMetric`` and ``ConvergenceMetric``
        compare a stage with the one before it: with the model as it was before this
        :meth:`update`, and at the first fit, which has no earlier state, with itself (0).
        The callbacks are not saved with the model (they hold corpora); ``metrics`` is saved by
        :meth:`save`, not by :meth:`save_portable`.
    loss : {'L2', 'KL', 'original'}
        RecoverL2 (kernelised squared loss, fast), RecoverKL (KL divergence over whole rows of
        Q-bar) or the original matrix-inversion Recover of Arora, Ge & Moitra (2012).
    eps : float, optional
        Duality-gap tolerance of each word's recovery (default 1e-10 for RecoverL2, whose pairwise
        solver gets there cheaply, and 1e-7, the authors', for RecoverKL).
    max_iter : int
        Iteration (or pairwise step) cap of the solver per word; words that hit it are counted
        in a log line (a WARNING once they are at least 1% of the words solved, else INFO).
    anchor_min_df : {int, float}, optional
        Anchor candidates must occur in at least this many documents (int) or this fraction of
        documents (float). Default: chosen per corpus from ``min(100, ceil(0.05 * documents))``
        up (100 documents and 0.1%, 0.3%, 1% and 3% of the documents above it), as the
        threshold whose anchors, found on one half of the documents, span the largest simplex
        on the other half (:func:`~gensim_anchor.anchors.choose_candidates`; the INFO log names
        the choice). Where Q is dense or rectified (no documents' side), and as the start of
        ``refine='gibbs'``, it is the lowest one: rarer anchors, more specific topics, from
        which the sampler climbs faster (20 Newsgroups, K=50: held-out log-likelihood -8.0695
        after 100 sweeps against -8.0948 from the chosen 508 documents; README, implementation
        notes, "Anchor candidates").
    projection_dim : int, optional
        Dimension of the random projection of Q-bar for anchor finding (default 1000); None, 0
        or a value >= V uses the exact rows.
    cleanup : bool
        Run the cleanup pass of FastAnchorWords.
    q_mode : {'auto', 'implicit', 'dense'}
        Keep Q as the sparse scaled word-document matrix (memory O(nnz)) or as a dense V x V
        array. ``'auto'`` (default) keeps it dense only where that fits in 1 GiB and the fit is
        estimated faster (:func:`~gensim_anchor.cooccurrence.choose_mode`: many short documents
        over a small vocabulary), decided at the end of the pass from V, nnz and the pairs of
        distinct words per document, and again after each :meth:`update` (once dense, Q stays
        dense). Both modes give the same topics. Not used for a Dask corpus (Q stays on the
        workers).
    alpha_sample : int
        Training documents kept (a uniform reservoir sample, taken during the single pass) to
        choose the scale of alpha. For a Dask corpus each partition samples on its worker and
        the client draws from those samples in proportion to the partitions' sizes
        (:func:`~gensim_anchor.distributed.combine_samples`).
    client : distributed.Client, optional
        Train on a Dask cluster (:mod:`gensim_anchor.distributed`) when ``corpus`` (here and in
        :meth:`update`) is a ``dask.bag.Bag`` of bag-of-words documents or a list of partitions
        (lists of documents, Delayed or Futures). A Bag is trained on the default client even
        without this argument; plain documents are read here (and, when the model's Q is on
        the cluster, sent to a worker as one more partition). The document side of Q stays on
        the workers; the same seed gives the same topics as on one machine, up to float
        rounding. The client is not saved with the model.
    progress : bool, optional
        A progress bar (tqdm) while the corpus is read; None (default): only when stderr is a
        terminal. Throughput is logged at INFO either way.
    rectify : {False, True, 'enn', 'ap'}
        Rectify Q before finding the anchors, then R by the diagonal method (nonnegative).
        ``True`` or ``'enn'``: the compressed rectification of Lee, Cho, Dong, Mimno & Bindel
        (2021, :func:`gensim_anchor.rectify.rectify_lowrank`): a randomised eigendecomposition
        of Q from thin products (never V x V, also on a Dask cluster), then epsilon-nonnegative
        iterations on the V x K factor Y, :math:`Q \approx YY^T`, until the negative mass in
        the rows and columns of the 20K ln K words of largest norm (fewer for a vocabulary so large
        that an iteration's V x l product would pass 2^27 entries;
        :func:`gensim_anchor.rectify.large_count`) falls to 3% of the rank-K truncation's; the anchors
        and recovery then run on Y (O(V K) memory). ``'ap'``: alternating projection onto the
        rank-K PSD, sum-1 and nonnegative matrices (Lee, Bindel & Mimno 2015): Q dense over the
        words with co-occurrences; a ValueError names the memory needed when it exceeds
        :data:`gensim_anchor.rectify.MAX_BYTES` (8 GiB, about 13,000 words).
        A model saved before ``'enn'`` existed with ``rectify=True`` loads as ``'ap'``, the
        method it was trained with (used when it is updated).
    rectify_max_iter : int
        Cap on the rectification iterations (default 50); a WARNING naming the residual is
        logged when the cap is reached first.
    anchors : list, optional
        Seeded anchors (Lund et al. 2017, "Tandem Anchoring"): the user fixes the anchors of
        the first ``len(anchors)`` topics, each a word (a str looked up in ``id2word``, or an
        int id) or a list of words, e.g. ``['gun', ['bush', 'kerry']]``. A group stands for
        one topic through the element-wise harmonic mean of its words' rows of Q-bar
        (:func:`~gensim_anchor.anchors.combine_rows`). The remaining topics' anchors are found
        around the seeded ones (FastAnchorWords starts with them in its span; its cleanup
        pass leaves them alone). A seeded word need not pass ``anchor_min_df`` but must occur
        in a document of two or more tokens; words that do not, or are not in the
        vocabulary, are left out with a warning, and a ValueError is raised when none of a
        seed's words is left. Groups need ``loss='L2'`` or ``'KL'``.
    refine : {None, 'gibbs', 'vb'}
        After the anchor fit, refine its topics and alpha by a likelihood-based method started
        from it (:meth:`refine`): ``'gibbs'``, collapsed Gibbs sweeps that stop when the log
        joint likelihood of the training tokens has settled (the most accurate topics of the
        README's benchmarks), or ``'vb'``, gensim's online variational Bayes. None (default)
        is exactly the paper's algorithm. The corpus is still read once: the pass keeps the
        parsed documents (12 bytes per distinct word of a document) for the refinement.
        :meth:`update` adds the new documents to Q and to the kept documents, re-solves the
        anchor fit on everything seen so far and refines it again, so a model updated with
        part of a corpus equals one trained on all of it (with ``save_cooccurrence=True`` a
        loaded model keeps its documents and can be updated too). A Dask corpus is refined on
        its cluster by ``'gibbs'`` (collapsed sampler): the model keeps references to its
        partitions, which the workers read again for the sweeps, and no document reaches this
        machine (:mod:`gensim_anchor.distributed_hybrid`).
    refine_options : dict, optional
        The refinement's options (:meth:`refine`'s keywords: for ``'gibbs'`` ``num_sweeps``
        (the cap, default 200), ``burn_in`` (default None: by the convergence rule), ``eta``
        (default: the model's ``eta``, 1/K unless given), ``optimize_alpha``,
        ``sampler``, ``substeps``, ``tol``; for ``'vb'`` ``passes``, ``optimize_alpha``),
        checked here.

    Attributes
    ----------
    anchors : numpy.ndarray of int, shape (K,)
        The anchor word id of each topic; -1 for a topic whose seeded anchor is a group.
    anchor_groups : list of list of int
        The anchor word ids of each topic (one id for a single-word anchor).
    anchor_words : list of str
        The anchor word of each topic; a group as its words joined by '+', e.g. 'bush+kerry'.
    R : numpy.ndarray, shape (K, K)
    p_z : numpy.ndarray, shape (K,)
    num_docs : int
        Documents with >= 2 tokens seen so far.
    solver_n_iter, solver_gap, solver_converged : numpy.ndarray, shape (V,)
        Per-word convergence of the exponentiated-gradient solver (None for 'original').
    metrics : dict of (str, list)
        With ``callbacks`` only: each metric's value at each epoch of the last :meth:`update`
        and the refinements since, as LdaModel's.
    refinement : dict or None
        What :meth:`refine` (or ``refine=``) ran: method, seconds, and for ``'gibbs'`` the
        sweeps used (``num_sweeps``) within the cap (``max_sweeps``), the burn-in and whether
        the convergence rule was met (``converged``) and the prior ``eta``; on a Dask cluster
        also the ``partitions``, ``workers`` and the partitions rebuilt after a lost worker
        (``recovered``).

    """

    #: What :meth:`save` may leave out (``ignore=``): the rest is the model's own state.
    IGNORABLE = frozenset({'id2word', 'R', 'timings', 'lifecycle_events', 'random_state',
                           'solver_n_iter', 'solver_gap', 'solver_converged', '_cooccurrence',
                           '_sample', '_documents', '_client', 'callbacks', 'metrics'})

    def __init__(self, corpus=None, num_topics=100, id2word=None, distributed=False, chunksize=2000,
                 passes=1, update_every=1, alpha='auto', eta=None, decay=0.5, offset=1.0,
                 eval_every=10, iterations=50, gamma_threshold=0.001, minimum_probability=0.01,
                 random_state=None, ns_conf=None, minimum_phi_value=0.01, per_word_topics=False,
                 callbacks=None, dtype=np.float32, *, loss='L2', eps=None, max_iter=DEFAULT_MAX_ITER,
                 anchor_min_df=None, projection_dim=DEFAULT_PROJECTION_DIM, cleanup=True,
                 q_mode='auto', alpha_sample=ALPHA_SAMPLE, client=None, progress=None, rectify=False,
                 rectify_max_iter=RECTIFY_MAX_ITER, anchors=None, refine=None, refine_options=None):
        self.num_topics = check.check_int('num_topics', num_topics, minimum=2)
        self.id2word = id2word
        self.num_terms = check.num_terms_of(id2word)
        if corpus is None and id2word is None:
            raise ValueError("at least one of corpus/id2word must be given, to establish the "
                             "vocabulary size")
        if self.num_terms is not None:
            check.check_vocabulary(self.num_topics, self.num_terms)
        self.chunksize = check.check_int('chunksize', chunksize, minimum=1)
        self.loss = check.check_option('loss', loss, LOSSES)
        self.eps = check.check_positive_float('eps', eps, allow_none=True)
        self.max_iter = check.check_int('max_iter', max_iter, minimum=1)
        self.projection_dim = check.check_int('projection_dim', projection_dim, minimum=0,
                                              allow_none=True)
        self.q_mode = check.check_option('q_mode', q_mode, Q_MODES)
        self.progress = check.check_progress(progress)
        self._client = client
        check.check_min_df(anchor_min_df)
        self.anchor_min_df = anchor_min_df
        self.cleanup = bool(cleanup)
        self.rectify = check.check_rectify(rectify, RECTIFY_METHODS)
        self.rectify_max_iter = check.check_int('rectify_max_iter', rectify_max_iter, minimum=1)
        self.seed_anchors = check.check_seeds(anchors, self.num_topics, self.id2word, self.loss)
        self.refine_method = None if refine is None else check.check_option('refine', refine, REFINE_METHODS)
        if refine_options is not None and refine is None:
            raise ValueError("refine_options is given but refine is None: name the refinement, "
                             "refine='gibbs' or 'vb'")
        self.refine_options = (check.check_refine_options(self.refine_method, refine_options or {})
                               if refine is not None else None)
        self.minimum_probability = check.check_positive_float('minimum_probability', minimum_probability,
                                                              allow_zero=True)
        self.minimum_phi_value = check.check_positive_float('minimum_phi_value', minimum_phi_value,
                                                            allow_zero=True)
        self.per_word_topics = per_word_topics
        self.iterations = check.check_int('iterations', iterations, minimum=1)
        self.gamma_threshold = check.check_positive_float('gamma_threshold', gamma_threshold)
        self.alpha_arg = check.check_prior('alpha', alpha, self.num_topics,
                                           ('auto', 'symmetric', 'asymmetric'))
        self.eta_arg = check.check_prior('eta', eta, self.num_terms, ('auto', 'symmetric'),
                                         topics=self.num_topics)
        if self.refine_method == 'gibbs' and self.refine_options['eta'] is None:
            self._gibbs_eta(self.refine_options)  # an eta the sampler cannot take fails before the fit
        self.alpha_sample = check.check_int('alpha_sample', alpha_sample, minimum=1)
        self.dtype = check.check_float_dtype('dtype', dtype)
        self.random_state = utils.get_random_state(random_state)
        # One seed drawn up front: every fit of this model projects with the same matrix.
        self._projection_seed = int(self.random_state.randint(2 ** 31 - 1))
        self.callbacks = check.check_callbacks(callbacks)
        given = {k: v for k, v in dict(
            distributed=distributed, passes=passes, update_every=update_every, decay=decay,
            offset=offset, eval_every=eval_every, ns_conf=ns_conf).items()
            if not _is_default(v, _LDA_ONLY[k])}
        if given:
            logger.info("ignoring LdaModel arguments without meaning for anchor words: %s",
                        ", ".join("%s=%r" % kv for kv in sorted(given.items())))
        if distributed and client is None and not (corpus is not None and is_dask_corpus(corpus, None)):
            # Not a setting without meaning but a request this model serves another way: say so.
            logger.warning("distributed=True is LdaModel's Pyro4 cluster, which AnchorModel does not "
                           "use: it trains on a Dask cluster when given client= (a "
                           "dask.distributed.Client) or a dask.bag corpus, and on this machine "
                           "otherwise")
        self.format_version = FORMAT_VERSION
        self.num_docs = 0
        self.anchors = self.anchor_groups = None
        self.topics = None
        self.R = self.p_z = None
        self.alpha = self.eta = None
        self.num_tokens = 0
        self.solver_n_iter = self.solver_gap = self.solver_converged = None
        self.timings = {}
        self.refinement = None  # set by refine()
        self._cooccurrence = None
        self._sample = None  # a uniform sample of the training documents, for the alpha fit
        self._documents = None  # the parsed training documents, kept for refine=
        if corpus is not None:
            self.update(corpus)

    def __getstate__(self):
        """The state that pickling keeps: all but the Dask client, a connection of this process
        (a pickled model, sent to Dask workers by ``bag.map(model.get_document_topics)`` or saved,
        arrives without one); statistics held on the cluster are gathered, as :meth:`save`
        gathers them."""
        return dict(vars(self), _client=None)

    def __copy__(self):
        """A shallow copy, the client included (pickling leaves it out)."""
        copied = type(self).__new__(type(self))
        vars(copied).update(vars(self))
        return copied

    def __deepcopy__(self, memo):
        """A deep copy that shares the Dask client (a connection, which cannot be copied); the
        statistics and documents on its cluster are gathered into the copy, as :meth:`save`
        gathers them."""
        copied = type(self).__new__(type(self))
        memo[id(self)] = copied
        client = vars(self).get('_client')
        if client is not None:
            memo[id(client)] = client
        for name, value in vars(self).items():
            setattr(copied, name, copy.deepcopy(value, memo))
        return copied

    def __str__(self):
        return "%s<num_terms=%s, num_topics=%s, loss=%s, num_docs=%s>" % (
            self.__class__.__name__, self.num_terms, self.num_topics, self.loss, self.num_docs)

    # ------------------------------------------------------------------------------------------
    # Training
    # ------------------------------------------------------------------------------------------

    def update(self, corpus, chunksize=None):
        """Add documents and re-solve on everything seen so far.

        Q is a sum over documents, so training on part of a corpus and updating with the rest
        gives the same model as training on all of it at once, whatever the parts hold: a batch
        of documents shorter than two tokens adds none of Q's pairs (only their counts), and an
        empty batch logs a warning and leaves the model unchanged, as ``LdaModel.update`` does.
        A model trained with ``refine=`` is refined again on every document seen; one refined
        by a call to :meth:`refine` returns to the anchor solution, with a warning (it kept no
        documents to refine on).

        Parameters
        ----------
        corpus : iterable of list of (int, number)
            Bag-of-words documents, read once (or a Dask corpus, see ``client``).
        chunksize : int, optional
            Documents per chunk (default: the constructor's).

        """
        chunksize = self.chunksize if chunksize is None else check.check_int('chunksize', chunksize,
                                                                              minimum=1)
        if self._cooccurrence is None and self.num_docs:
            raise RuntimeError(
                "this model was saved without its co-occurrence statistics, so new documents "
                "cannot be added to the old ones; save it with save_cooccurrence=True to update "
                "it after loading")
        options = self._fit_options()
        start = time.perf_counter()
        keep = self.refine_method is not None
        if keep and self.num_docs and self._documents is None:
            raise RuntimeError("this refined model was saved without its documents, so new documents "
                               "cannot be added; save it with save_cooccurrence=True to update it "
                               "after loading")
        if keep and is_dask_corpus(corpus, self._client):
            _check_dask_refinement(self.refine_method, self.refine_options)
        try:
            cooc, sample, documents = pipeline.read(
                corpus, options, num_terms=self.num_terms, old=self._cooccurrence, sample=self._sample,
                documents=self._documents, keep_documents=keep, q_mode=self.q_mode, chunksize=chunksize,
                progress=self.progress, sample_size=self.alpha_sample, client=self._client)
        except UnknownWordError as error:
            if not (self.num_terms and self.id2word is not None and len(self.id2word) > self.num_terms):
                raise
            raise UnknownWordError(
                "%s -- id2word now has %d words, but this model was trained on %d: its vocabulary is "
                "fixed at training, as LdaModel's, so words added to the Dictionary since (e.g. by "
                "add_documents) cannot enter an update; train a new model on the grown Dictionary, or "
                "make the new documents with a copy of the training one (doc2bow drops unknown words)"
                % (error, len(self.id2word), self.num_terms)) from None
        read_seconds = time.perf_counter() - start
        seen = self._cooccurrence
        if seen is not None and cooc.num_docs + cooc.num_short == seen.num_docs + seen.num_short:
            # As LdaModel.update: nothing was read, so nothing changes (no refit).
            logger.warning("update() called with an empty corpus: the model is unchanged")
            return
        self._check_id2word_covers(cooc)
        callback = self._start_epochs(new=True)
        if self.refinement is not None and not keep:
            # Only refine= keeps the documents a refinement of the whole corpus needs.
            logger.warning("update() refits the anchor solution on all the documents, replacing the "
                           "topics of the earlier refine(%r); call refine() again with the whole corpus, "
                           "or train with refine=%r to refine after every update",
                           self.refinement['method'], self.refinement['method'])
        result = pipeline.fit(cooc, options, id2word=self.id2word, documents=sample.docs)
        self._store(result, cooc, sample)
        self._documents = documents
        self.timings = dict(cooccurrence=read_seconds, **result.timings)
        self._log_fit(result)
        self._end_epoch(callback)
        if keep:  # the anchor solution starts the refinement, on every document seen so far
            self._refine(documents, self.refine_method, self.refine_options)
            self.timings['refine'] = self.refinement['seconds']
            self._end_epoch(callback)
        self.add_lifecycle_event(
            "created" if self.num_docs == cooc.num_docs else "updated",
            msg="trained %s in %.2fs" % (self, sum(self.timings.values())))

    def _fit_options(self):
        return pipeline.FitOptions(
            num_topics=self.num_topics, loss=self.loss, eps=self.eps, max_iter=self.max_iter,
            anchor_min_df=self.anchor_min_df, projection_dim=self.projection_dim,
            cleanup=self.cleanup, rectify=self.rectify, rectify_max_iter=self.rectify_max_iter,
            seeds=self.seed_anchors, alpha=self.alpha_arg, dtype=self.dtype,
            seed=self._projection_seed, adaptive_candidates=self.refine_method != 'gibbs',
            alpha_grid=not self._sampler_fits_alpha)

    @property
    def _sampler_fits_alpha(self):
        """Whether the one-call refinement is a sampler that fits alpha itself: it needs only a
        start from the fit (REFINE_ALPHA_START * p(z)), not the grid search.

        Not 'vb': gensim's damped update_alpha moves alpha too little in its two passes, and
        from that start the model ends 0.028 nats/token lower on KOS (held-out -7.4664 against
        -7.4383 from the grid, means of 5 seeds; python benchmarks/bench_seeds.py --corpus kos
        --seeds 0 1 2 3 4 --methods vb --alpha-start default p_z, benchmarks/results/
        bench_seeds.log, the entry of 2026-11-29T23:59Z; NIPS 0.0055 lower)."""
        return self.refine_method == 'gibbs' and self.refine_options['optimize_alpha']

    def _store(self, result, cooc, sample):
        """Keep what the fit found (numpy only, so that the model saves and loads without JAX)."""
        rec = result.recovery
        self.topics, self.R, self.p_z, self.alpha = result.topics, result.R, result.p_z, result.alpha
        self.anchors, self.anchor_groups = result.anchors, result.groups
        if rec.solver is not None:
            self.solver_n_iter, self.solver_gap, self.solver_converged = rec.solver[1:]
        else:
            self.solver_n_iter = self.solver_gap = self.solver_converged = None
        self.refinement = None
        if self.num_terms is None:
            self.num_terms = cooc.num_terms
            self.id2word = utils.FakeDict(self.num_terms)
        self.eta = self._eta()
        self.num_docs, self.num_tokens = cooc.num_docs, cooc.num_tokens
        self._cooccurrence, self._sample = cooc, sample

    def _log_fit(self, result):
        """One line per stage of the fit (the stages return their counts and log nothing)."""
        K, timings = self.num_topics, result.timings
        rect = result.rectification
        if rect is not None and self.rectify == 'ap':
            logger.info("rectification (alternating projection, K=%d, V=%d): %d iterations in %.2fs, "
                        "last relative change %.3g, distance from rank-K PSD <= %.3g, moved Q by %.3g "
                        "(relative)", K, len(rect.Q), rect.n_iter, timings['rectify'], rect.change,
                        rect.residual, rect.moved)
            if not rect.converged:
                logger.warning("rectification stopped at rectify_max_iter=%d before the relative change "
                               "fell below %g (last %.3g, residual %.3g); the rectified Q is "
                               "approximate: raise rectify_max_iter", self.rectify_max_iter,
                               RECTIFY_TOL, rect.change, rect.residual)
        elif rect is not None:
            logger.info("rectification (compressed, epsilon-nonnegative, K=%d, V=%d): %d products with "
                        "Q, %d iterations in %.2fs, negative mass in the rows of the %d largest "
                        "words %.3g (%.3g in the rank-K compression), moved the compression by %.3g "
                        "(relative)", K, len(rect.Y), rect.compression.num_products, rect.n_iter,
                        timings['rectify'], rect.num_large, rect.residual, rect.start_residual,
                        rect.moved)
            if not rect.converged:
                logger.warning("rectification stopped at rectify_max_iter=%d before the negative mass "
                               "fell below %g (residual %.3g, last relative change %.3g); the "
                               "rectified Q is approximate: raise rectify_max_iter",
                               self.rectify_max_iter, rect.tol, rect.residual, rect.change)
        logger.info("FastAnchorWords: %d anchors from %d candidates (df >= %d) in %d dimensions, "
                    "cleanup replaced %d, in %.2fs", K, result.num_candidates, result.min_df,
                    result.projection_dim, result.search.num_replaced, timings['anchors'])
        rec = result.recovery
        if rec.solver is None:
            logger.info("Recover (original): K=%d in %.2fs", K, timings['recovery'])
        else:
            n_iter = rec.solver.n_iter[rec.solved]
            logger.info("Recover%s: %d words, K=%d, eps=%g, median %d / max %d %s iterations in %.2fs",
                        self.loss, len(n_iter), K, rec.eps, int(np.median(n_iter)) if len(n_iter) else 0,
                        int(n_iter.max()) if len(n_iter) else 0,
                        'Newton' if self.loss == 'KL' else 'pairwise', timings['recovery'])
            capped = int((~rec.solver.converged).sum())
            if capped:
                # A handful of near-ties is no news; a real share of the vocabulary is.
                level = logging.WARNING if capped >= CAPPED_WARNING_SHARE * len(n_iter) else logging.INFO
                logger.log(level, "%d of %d words stopped before the duality gap fell below eps=%g "
                           "(max_iter=%d or float64 precision); largest gap %.3g: raise max_iter, or "
                           "eps if that gap is small enough", capped, len(n_iter), rec.eps,
                           self.max_iter, float(rec.solver.gap.max()))
        fit = result.alpha_fit
        if fit is not None:
            logger.info("alpha = %.4g * p(z), chosen on a grid of %d concentrations (%d evaluated) by "
                        "the estimated likelihood of %d sampled training documents (%.2fs)", fit.scale,
                        len(fit.grid), int(np.isfinite(fit.log_likelihood).sum()),
                        result.num_alpha_docs, timings['dirichlet'])
            if len(fit.grid) > 1 and fit.scale in (fit.grid.min(), fit.grid.max()):
                logger.warning("alpha_0 = %.4g is at the end of the grid [%.4g, %.4g]; the likelihood "
                               "may keep increasing beyond it", fit.scale, fit.grid.min(), fit.grid.max())
        elif isinstance(self.alpha_arg, str) and self.alpha_arg == 'auto' and self._sampler_fits_alpha:
            logger.info("alpha starts at %.3g * p(z) for the Gibbs refinement, which fits it (no grid "
                        "search)", REFINE_ALPHA_START)

    # ------------------------------------------------------------------------------------------
    # Topics
    # ------------------------------------------------------------------------------------------

    @property
    def A(self):
        """p(w | z) as a (V, K) array, the paper's A."""
        return self.get_topics().T

    @property
    def anchor_words(self):
        """The anchor word of each topic, in topic order ('w1+w2' for a group of words)."""
        self._check_trained()
        groups = self.anchor_groups
        return ['+'.join(str(self.id2word[int(i)]) for i in group) for group in groups]

    def _check_id2word_covers(self, cooc):
        """Every word of the corpus has an entry in id2word (which may have gaps, as a
        Dictionary after filter_tokens without compactify)."""
        if self.id2word is None or len(self.id2word) >= self.num_terms:
            return  # no gaps (ids 0..V-1 all present), or V still to be inferred
        keys = np.fromiter(self.id2word.keys(), dtype=np.int64, count=len(self.id2word))
        missing = np.setdiff1d(np.flatnonzero(cooc.term_counts > 0), keys)
        if missing.size:
            raise ValueError(
                "%d word ids of the corpus have no entry in id2word (e.g. %s); was the corpus made "
                "with a different Dictionary?" % (missing.size, ", ".join(map(str, missing[:5]))))

    def _check_trained(self):
        if self.topics is None:
            raise RuntimeError("this AnchorModel has not been trained yet: pass a corpus to the "
                               "constructor or call update(corpus)")

    def get_topics(self):
        """The topic-word matrix, shape (num_topics, num_terms); each row sums to 1."""
        self._check_trained()
        return self.topics

    def get_topic_terms(self, topicid, topn=10):
        """The ``topn`` most probable words of a topic as (word_id, probability) pairs."""
        topics = self.get_topics()
        topic = topics[check.check_index('topicid', topicid, len(topics), 'topics')]
        best = matutils.argsort(topic, check.check_int('topn', topn, allow_none=True), reverse=True)
        return [(int(i), topic[i]) for i in best]

    def show_topic(self, topicid, topn=10):
        """The ``topn`` most probable words of a topic as (word, probability) pairs."""
        return [(self.id2word[i], p) for i, p in self.get_topic_terms(topicid, topn)]

    def show_topics(self, num_topics=10, num_words=10, log=False, formatted=True):
        """A representation of the topics, as :meth:`LdaModel.show_topics`.

        Parameters
        ----------
        num_topics : int
            How many topics; -1 or >= K for all. Fewer are chosen from both ends of p(z) (the
            largest and the smallest topics), as LdaModel does with alpha; of the refined alpha
            for a refined model.
        num_words : int
            Words per topic.
        log : bool
            Also log each topic at INFO, with its anchor word.
        formatted : bool
            Strings like ``0.031*"word" + ...`` instead of (word, probability) lists.

        Returns
        -------
        list of (int, str) or list of (int, list of (str, float))
        """
        self._check_trained()
        if num_topics < 0 or num_topics >= self.num_topics:
            chosen = range(self.num_topics)
        else:
            # Topic sizes: p(z) of the anchor fit, or the refined alpha's shape after refine().
            sizes = self.p_z if self.refinement is None else self.alpha / self.alpha.sum()
            order = list(np.argsort(sizes, kind='stable'))
            chosen = order[:num_topics // 2] + order[len(order) - (num_topics - num_topics // 2):]
        shown = []
        for i in chosen:
            topic = self.show_topic(int(i), num_words)
            if formatted:
                topic = ' + '.join('%.3f*"%s"' % (p, w) for w, p in topic)
            shown.append((int(i), topic))
            if log:
                if self.refinement is None:
                    logger.info("topic #%i (p(z)=%.3f, anchor %r): %s", i, self.p_z[i],
                                self.anchor_words[i], topic)
                else:
                    logger.info("topic #%i (alpha=%.3f, %s-refined from anchor %r): %s", i,
                                self.alpha[i], self.refinement['method'], self.anchor_words[i], topic)
        return shown

    def _gibbs_eta(self, options):
        """The Gibbs refinement's topic-word prior: ``options['eta']`` when given, else the
        model's :meth:`_eta`, which the sampler takes only as one number."""
        if options['eta'] is not None:
            return float(options['eta'])
        eta = self._eta()
        if np.ptp(eta) > 0:
            raise ValueError("the Gibbs refinement takes one symmetric eta, and this model's eta "
                             "varies (an array from %.3g to %.3g): give the sampler its own, e.g. "
                             "refine_options={'eta': %.3g}" % (eta.min(), eta.max(), 1.0 / self.num_topics))
        return float(eta.flat[0])

    def _eta(self):
        """eta from the constructor's argument, LdaModel's: 1/K per word unless given (used by
        state(), to_ldamodel() and the Gibbs refinement; one number while num_terms is unknown)."""
        if isinstance(self.eta_arg, np.ndarray):  # LdaModel's eta: per word, or per topic and word
            return check.check_prior('eta', self.eta_arg, self.num_terms, (), topics=self.num_topics)
        return np.full(() if self.num_terms is None else self.num_terms, 1.0 / self.num_topics)

    # ------------------------------------------------------------------------------------------
    # Documents
    # ------------------------------------------------------------------------------------------

    @property
    def expElogbeta(self):
        """The topics as inference uses them, floored at :data:`.inference.TOPIC_FLOOR`
        (LdaModel's name: there it is exp(E[log beta]); here the topics are point estimates)."""
        from .inference import TOPIC_FLOOR
        return np.maximum(self.get_topics(), TOPIC_FLOOR)

    @property
    def state(self):
        """An :class:`~gensim.models.ldamodel.LdaState` whose ``sstats`` are the expected topic-word
        counts of the training corpus (``num_tokens * p(z) * p(w | z)``); ``get_lambda()`` is
        ``eta + sstats``, as LdaModel's."""
        from gensim.models.ldamodel import LdaState
        self._check_trained()
        state = LdaState(self.eta, (self.num_topics, self.num_terms), dtype=self.dtype)
        sstats = self.num_tokens * self.p_z[:, None] * self.get_topics()
        state.sstats = sstats.astype(self.dtype)
        state.numdocs = self.num_docs
        return state

    def inference(self, chunk, collect_sstats=False):
        """Variational posteriors of documents with the topics fixed, as ``LdaModel.inference``.

        Parameters
        ----------
        chunk : iterable of list of (int, number)
            Documents (read into memory once).
        collect_sstats : bool
            Also return the expected topic-word counts of the chunk, shape (K, V).

        Returns
        -------
        (numpy.ndarray, numpy.ndarray or None)
            gamma, shape (len(chunk), K), strictly positive; and the statistics or None.
            Deterministic: the same document always gets the same gamma.
        """
        from .inference import infer
        self._check_trained()
        result = infer(self.get_topics(), self.alpha, list(chunk), max_iter=self.iterations,
                       tol=self.gamma_threshold, collect_sstats=collect_sstats)
        return result.gamma.astype(self.dtype), result.sstats

    def __getitem__(self, bow, eps=None):
        """Topic distribution of a document, or a lazily transformed corpus (``model[corpus]``)."""
        return self.get_document_topics(bow, eps, self.minimum_phi_value, self.per_word_topics)

    def get_document_topics(self, bow, minimum_probability=None, minimum_phi_value=None,
                            per_word_topics=False):
        """Topic distribution of a document, with LdaModel's semantics.

        Parameters
        ----------
        bow : list of (int, number) or corpus
            A document, or a corpus (then a :class:`~gensim.interfaces.TransformedCorpus` is
            returned, inferred ``chunksize`` documents at a time).
        minimum_probability : float, optional
            Topics below it are left out (default: the model's; never below 1e-8).
        minimum_phi_value : float, optional
            With ``per_word_topics``, per-word topic values below it are left out.
        per_word_topics : bool
            Also return, for each word, its topics by relevance and its phi values.

        Returns
        -------
        list of (int, float), or (that, word_topics, word_phis) with ``per_word_topics``.
        """
        minimum_probability = max(self.minimum_probability if minimum_probability is None
                                  else minimum_probability, 1e-8)
        minimum_phi_value = max(self.minimum_phi_value if minimum_phi_value is None
                                else minimum_phi_value, 1e-8)
        kwargs = dict(minimum_probability=minimum_probability, minimum_phi_value=minimum_phi_value,
                      per_word_topics=per_word_topics)
        # is_corpus peeks at the first element and puts it back in what it returns: an iterator
        # given as ``bow`` has lost it, so the returned object is the one to read (and a one-shot
        # document is read once, into a list: per_word_topics reads it twice).
        is_corpus, bow = utils.is_corpus(bow)
        if is_corpus:
            return _DocumentTopicsCorpus(self, bow, self.chunksize, kwargs)
        if hasattr(bow, '__next__'):
            bow = list(bow)
        return self._document_topics([bow], **kwargs)[0]

    def _document_topics(self, docs, minimum_probability, minimum_phi_value, per_word_topics):
        from .inference import infer
        self._check_trained()
        result = infer(self.get_topics(), self.alpha, docs, max_iter=self.iterations,
                       tol=self.gamma_threshold, return_phi=per_word_topics)
        theta = result.gamma / result.gamma.sum(axis=1, keepdims=True)
        out = []
        for d, doc in enumerate(docs):
            topics = [(k, float(p)) for k, p in enumerate(theta[d]) if p >= minimum_probability]
            if not per_word_topics:
                out.append(topics)
                continue
            phis = {word: result.phi[d][:, position] for position, (word, _) in enumerate(result.phi_ids[d])}
            word_topic, word_phi = [], []
            for word, _ in doc:  # every word of the input, as LdaModel (unknown or 0-count: [])
                phi = phis.get(int(word))
                kept = [] if phi is None else [(int(k), float(phi[k])) for k in np.argsort(-phi, kind='stable')
                                               if phi[k] >= minimum_phi_value]
                word_phi.append((int(word), sorted(kept)))
                word_topic.append((int(word), [k for k, _ in kept]))
            out.append((topics, word_topic, word_phi))
        return out

    def bound(self, corpus, gamma=None, subsample_ratio=1.0):
        """Estimated log-likelihood of a corpus, in nats: :math:`\\sum_d \\log p(w_d | A, \\alpha)`.

        Unlike :meth:`LdaModel.bound`, this is **not** a variational lower bound: it is the
        estimate of :func:`gensim_anchor.likelihood.document_log_likelihood` (seeded, so the
        same corpus always gets the same value). ``gamma`` is accepted for compatibility and
        unused; the total is multiplied by ``subsample_ratio``.
        """
        from .likelihood import document_log_likelihood
        self._check_trained()
        # One call: every document gets its own random numbers (keys are per document index).
        result = document_log_likelihood(self.get_topics(), self.alpha, list(corpus),
                                         random_state=self._projection_seed)
        return float(result.log_p.sum()) * subsample_ratio

    def log_perplexity(self, chunk, total_docs=None):
        """Estimated held-out log-likelihood per token (nats) of ``chunk``.

        As :meth:`LdaModel.log_perplexity` it returns a per-word log-likelihood (perplexity is
        ``exp(-value)``); unlike it, the value is an estimate of the true likelihood, not a
        variational bound, so it is comparable across models. ``total_docs`` is accepted for
        compatibility and unused (the per-token value does not depend on it).
        """
        from .likelihood import log_likelihood_per_token
        self._check_trained()
        value = float(log_likelihood_per_token(self.get_topics(), self.alpha, list(chunk),
                                               chunksize=self.chunksize,
                                               random_state=self._projection_seed))
        logger.info("%.3f per-word log-likelihood (estimate), perplexity %.1f", value, np.exp(-value))
        return value

    def get_term_topics(self, word_id, minimum_probability=None):
        """The topics of a word (id or string) with p(w | z) >= minimum_probability."""
        minimum_probability = max(self.minimum_probability if minimum_probability is None
                                  else minimum_probability, 1e-8)
        if isinstance(word_id, str):
            token2id = check.token2id(self.id2word)
            if word_id not in token2id:
                raise KeyError("word %r is not in the vocabulary" % word_id)
            word_id = token2id[word_id]
        topics = self.get_topics()
        column = topics[:, check.check_index('word_id', word_id, topics.shape[1], 'words')]
        return [(k, column[k]) for k in range(self.num_topics) if column[k] >= minimum_probability]

    def top_topics(self, corpus=None, texts=None, dictionary=None, window_size=None,
                   coherence='u_mass', topn=20, processes=-1):
        """Topics sorted by coherence, as :meth:`LdaModel.top_topics`."""
        from gensim.models import LdaModel
        return LdaModel.top_topics(self, corpus=corpus, texts=texts, dictionary=dictionary,
                                   window_size=window_size, coherence=coherence, topn=topn,
                                   processes=processes)

    def diff(self, other, distance='kullback_leibler', num_words=100, n_ann_terms=10,
             diagonal=False, annotation=True, normed=True):
        """Pairwise distances between these topics and another model's (any gensim topic model
        with ``get_topics()`` over the same vocabulary), as :meth:`LdaModel.diff`."""
        from ._compat import topic_diff
        return topic_diff(self, other, distance, num_words, n_ann_terms, diagonal, annotation, normed)

    def to_ldamodel(self):
        """A real :class:`~gensim.models.LdaModel` that carries these topics.

        Its state holds the expected topic-word counts of the training corpus, so
        ``lda.update(corpus)`` continues training from the anchor solution (its ``num_updates`` is
        the number of training documents, so LdaModel's learning rate blends the new statistics
        with these instead of replacing them); its ``expElogbeta`` is derived from that state as
        LdaModel does (``sync_state``). LdaModel adds ``eta`` to its statistics, so its topics
        are the anchor topics smoothed by the prior.
        """
        from gensim.models import LdaModel
        self._check_trained()
        lda = LdaModel(num_topics=self.num_topics, id2word=self.id2word, chunksize=self.chunksize,
                       alpha=self.alpha.astype(self.dtype), eta=self.eta.astype(self.dtype),
                       iterations=self.iterations, gamma_threshold=self.gamma_threshold,
                       minimum_probability=self.minimum_probability,
                       minimum_phi_value=self.minimum_phi_value,
                       per_word_topics=self.per_word_topics, random_state=self._projection_seed,
                       dtype=self.dtype)
        lda.state = self.state
        lda.sync_state()
        # As if LdaModel had seen the training documents: its learning rate for the next update,
        # (offset + num_updates / chunksize)^-decay, then keeps weight on the anchor solution
        # instead of replacing it (with num_updates = 0 the first update would discard it).
        lda.num_updates = self.num_docs
        return lda

    def refine(self, corpus=None, method='gibbs', *, num_sweeps=DEFAULT_SWEEPS, burn_in=None,
               passes=DEFAULT_VB_PASSES, eta=DEFAULT_ETA, optimize_alpha=DEFAULT_OPTIMIZE_ALPHA,
               sampler=DEFAULT_SAMPLER, substeps=DEFAULT_SUBSTEPS, tol=REFINE_TOL, random_state=None,
               client=None):
        """Refine the topics with a likelihood-based method started from the anchor solution.

        The anchor topics and alpha are replaced by the refined ones (in place; ``anchors``,
        ``R`` and ``p_z`` keep describing the anchor solution that started it, and
        ``refinement`` records what was run). See :mod:`gensim_anchor.hybrid`. The one-call form
        is the constructor's ``refine=`` argument.

        Parameters
        ----------
        corpus : iterable of list of (int, int), or a Dask corpus, optional
            The training documents, read once and checked as the constructor's corpus is
            (``'vb'`` holds them in memory for its passes, 12 bytes per distinct pair of
            document and word).
            None: the documents a model trained with ``refine=`` kept from its single pass.
            A ``dask.bag.Bag`` (or a list of partitions, with ``client``) is refined on the
            cluster, each partition's tokens staying on its worker
            (:func:`~gensim_anchor.distributed_hybrid.gibbs_refine_dask`; ``'gibbs'`` with the
            collapsed sampler only).
        method : {'gibbs', 'vb'}
            ``'gibbs'``: Gibbs sweeps for LDA from the anchor topics
            (:func:`~gensim_anchor.hybrid.gibbs_refine`); ``'vb'``: gensim's online variational
            Bayes, ``to_ldamodel().update(corpus, passes=passes)``.
        num_sweeps : int
            The cap on Gibbs sweeps.
        burn_in : int, optional
            Sweeps before the topic estimates are averaged; None (default): until the log joint
            likelihood of the training tokens has settled (``tol``), and the sampler stops
            early (:func:`~gensim_anchor.hybrid.gibbs_refine` states the rule). An int runs
            exactly ``num_sweeps``.
        eta : float, optional
            The sampler's symmetric topic-word prior. None (default): the model's ``eta``,
            1/K (LdaModel's default) unless the constructor was given another; see
            :data:`~gensim_anchor._defaults.DEFAULT_ETA` for the measurements.
        optimize_alpha, sampler, substeps, tol : see
            :func:`~gensim_anchor.hybrid.gibbs_refine` (``sampler`` ``'collapsed'``, AD-LDA's
            parallel collapsed sweeps, or ``'blocked'``, exact and slower to mix). For ``'vb'``,
            ``optimize_alpha`` turns on LdaModel's alpha updates; an option of the other method
            given a value of its own is refused (it would not be used).
        passes : int
            Passes of ``'vb'``.
        random_state : {int, numpy.random.RandomState}, optional
            Seed of the sampler (default: the model's own).
        client : distributed.Client, optional
            The cluster of a Dask corpus (default: the model's ``client``, else the default
            client).

        Returns
        -------
        AnchorModel
            self, refined.

        Examples
        --------
        On a Dask cluster (the same seed and partitioning give the same topics):

        .. sourcecode:: pycon

            >>> import dask.bag as db
            >>> from distributed import Client, LocalCluster
            >>> from gensim.corpora import Dictionary
            >>> from gensim.test.utils import common_texts
            >>> dictionary = Dictionary(common_texts)
            >>> corpus = [dictionary.doc2bow(text) for text in common_texts]
            >>> model = AnchorModel(corpus, num_topics=2, id2word=dictionary, anchor_min_df=1,
            ...                     alpha='symmetric', random_state=1)
            >>> with LocalCluster(n_workers=1, processes=False, dashboard_address=':0') as cluster, \\
            ...         Client(cluster) as client:
            ...     bag = db.from_sequence(corpus, npartitions=3)
            ...     _ = model.refine(bag, 'gibbs', num_sweeps=6, burn_in=3, client=client)
            >>> model.refinement['partitions'], model.refinement['recovered']
            (3, 0)
        """
        self._check_trained()
        method = check.check_option('method', method, REFINE_METHODS)
        if corpus is None:
            if self._documents is None:
                raise ValueError("refine() needs the training corpus: this model kept no documents "
                                 "(only a model trained with refine=... keeps them)")
            corpus = self._documents
        given = dict(num_sweeps=num_sweeps, burn_in=burn_in, eta=eta, optimize_alpha=optimize_alpha,
                     sampler=sampler, substeps=substeps, tol=tol, passes=passes)
        unused = sorted(name for name, value in given.items() if name not in REFINE_OPTIONS[method]
                        and not _is_default(value, _REFINE_DEFAULTS[name]))
        if unused:
            raise ValueError("%s %s of refine(method=%r), which takes %s"
                             % (", ".join("%s=%r" % (name, given[name]) for name in unused),
                                "is not an option" if len(unused) == 1 else "are not options", method,
                                ", ".join(sorted(REFINE_OPTIONS[method]))))
        options = {name: given[name] for name in REFINE_OPTIONS[method]}
        callback = self._start_epochs(new=False)
        self._refine(corpus, method, check.check_refine_options(method, options), random_state, client)
        self._end_epoch(callback)
        return self

    # ------------------------------------------------------------------------------------------
    # Metric callbacks (LdaModel's epochs are passes; here they are the training stages)
    # ------------------------------------------------------------------------------------------

    def _start_epochs(self, new):
        """gensim's Callback over ``callbacks`` for one training call (None without them), with
        the model as it is now as the previous state of DiffMetric and ConvergenceMetric.
        ``new``: a fresh ``metrics`` (:meth:`update`, as LdaModel's); else more epochs on it."""
        if not self.callbacks:
            return None
        from gensim.models.callbacks import Callback
        if new or getattr(self, 'metrics', None) is None:
            self.metrics = defaultdict(list)
        callback = Callback(self.callbacks)
        if self.topics is not None:
            callback.set_model(self._metric_view())
        return callback

    def _end_epoch(self, callback):
        """Evaluate the metrics on the model as it is now, as the next epoch."""
        if callback is None:
            return
        view = self._metric_view()
        if not hasattr(callback, 'model'):  # the first fit: no earlier state, itself is the previous
            callback.set_model(view)
        callback.model = view
        epoch = max((len(values) for values in self.metrics.values()), default=0)
        for metric, value in callback.on_epoch_end(epoch).items():
            self.metrics[metric].append(value)

    def _metric_view(self):
        """This model without its training statistics, documents, client and metrics (its
        arrays shared, not copied): what the metrics score, and what DiffMetric and
        ConvergenceMetric deep-copy as the previous state at every epoch (a deep copy of the
        whole model would hold a second corpus, and gather the statistics of a cluster)."""
        view = copy.copy(self)
        view._cooccurrence = view._sample = view._documents = view._client = None
        view.callbacks = None
        vars(view).pop('metrics', None)
        return view

    def _refine(self, corpus, method, options, random_state=None, client=None):
        start = time.perf_counter()
        client = self._client if client is None else client
        dask = isinstance(corpus, DaskDocuments) or is_dask_corpus(corpus, client)
        if dask:
            _check_dask_refinement(method, options)
        elif not isinstance(corpus, DocumentStore):
            check.check_corpus(corpus)
        if method == 'gibbs':
            seed = self._projection_seed if random_state is None else random_state
            options = dict(options, eta=self._gibbs_eta(options))
            if dask:
                # JAX is imported inside: a saved model loads without it.
                from .distributed_hybrid import gibbs_refine_dask
                if isinstance(corpus, DaskDocuments):
                    client = corpus.client if client is None else client
                    corpus = corpus.partitions
                result = gibbs_refine_dask(self.get_topics(), self.alpha, corpus, client=client,
                                           p_z=self.p_z, random_state=seed, **options)
            else:
                from .hybrid import gibbs_refine
                result = gibbs_refine(self.get_topics(), self.alpha, corpus, p_z=self.p_z,
                                      random_state=seed, **options)
            topics, alpha = result.topics, result.alpha
            settings = dict(num_sweeps=result.num_sweeps, burn_in=result.burn_in,
                            sampler=options['sampler'], max_sweeps=options['num_sweeps'],
                            converged=bool(result.converged), eta=options['eta'])
            if options['sampler'] == 'collapsed':
                settings['substeps'] = options['substeps']
            if dask:
                settings.update(partitions=result.num_partitions, workers=result.num_workers,
                                recovered=len(result.recovered))
        else:
            if not isinstance(corpus, DocumentStore):
                # Checked as the sampler's corpus is (LdaModel.update takes a negative count
                # into NaN topics and fails on an unknown id with a bare IndexError), and read
                # once, so that a one-shot generator serves every pass.
                corpus = read_documents(corpus, self.num_terms)
            if not corpus.num_tokens:
                raise ValueError("the corpus has no tokens to refine on")
            lda = self.to_ldamodel()
            lda.optimize_alpha = bool(options['optimize_alpha'])
            lda.update(corpus, passes=options['passes'])
            topics, alpha = lda.get_topics(), lda.alpha
            settings = dict(passes=options['passes'])
        self.topics = pipeline.as_distributions(np.asarray(topics, dtype=np.float64), self.dtype)
        self.alpha = np.asarray(alpha, dtype=np.float64)
        self.refinement = dict(method=method, seconds=time.perf_counter() - start, **settings)
        self.add_lifecycle_event("refined", msg="%s refinement %s" % (method, settings))

    # ------------------------------------------------------------------------------------------
    # Persistence
    # ------------------------------------------------------------------------------------------

    def save(self, fname, *args, save_cooccurrence=False, ignore=(), **kwargs):
        """Save the model (numpy arrays only; large ones in separate files that can be mmap-ed).

        Parameters
        ----------
        fname : str
            Path; a ``.gz`` or ``.bz2`` suffix compresses.
        save_cooccurrence : bool
            Also save the co-occurrence statistics, so that a loaded model can be ``update``-d.
            Off by default: they grow with the corpus.
        ignore : iterable of str
            Attributes not to save, as for :meth:`gensim.utils.SaveLoad.save`, among those a
            loaded model can do without (:attr:`IGNORABLE`: diagnostics, the statistics, and
            ``id2word``, which loads as word ids, as LdaModel's default id2word). Names the
            model does not have are skipped, as gensim does (``ignore=('state',
            'dispatcher')`` written for LdaModel still saves).

        Raises
        ------
        ValueError
            If ``ignore`` names the model's own state (``topics``, ``alpha``...), without
            which it would load broken.
        """
        ignore = set([ignore] if isinstance(ignore, str) else ignore)
        attributes = set(vars(self))
        needed = sorted(name for name in ignore & attributes if name not in self.IGNORABLE)
        if needed:
            raise ValueError("ignore=%r: %s the model's own state, which it cannot load without; "
                             "these may be left out: %s" % (
                                 tuple(sorted(ignore)), ", ".join(map(repr, needed)) + (
                                     " are" if len(needed) > 1 else " is"),
                                 ", ".join(map(repr, sorted(self.IGNORABLE)))))
        ignore |= {'_client', 'callbacks'}  # a connection, and metrics that hold corpora: not state
        if not save_cooccurrence:
            ignore |= {'_cooccurrence', '_sample', '_documents'}
        # SaveLoad deletes each ignored name it finds, and a property (state, expElogbeta)
        # cannot be deleted; it is not saved anyway.
        super().save(fname, *args, ignore=frozenset(ignore & attributes), **kwargs)

    @classmethod
    def load(cls, fname, *args, **kwargs):
        """Load a model saved with :meth:`save` (``mmap='r'`` maps the large arrays).

        .. warning::
            :meth:`save` writes a pickle, and loading a pickle runs whatever code the file
            carries: load only files from a trusted source. Models meant to be shared are safer
            in the portable format (:meth:`save_portable`, :meth:`load_portable`), which loads
            without executing anything.

        Raises
        ------
        FileNotFoundError
            If ``fname`` or one of the array files saved beside it (``fname.*.npy``) is missing.
        ValueError
            If the file is corrupted or truncated, is not a saved gensim object, or was saved in
            a newer model format.
        TypeError
            If the file holds another gensim object.
        """
        try:
            model = super().load(fname, *args, **kwargs)
        except FileNotFoundError as err:
            if err.filename is None or str(err.filename) == str(fname):
                raise
            raise FileNotFoundError(
                err.errno, "%s is incomplete: the array file %s saved beside it is missing (copy "
                "all the files %s.*)" % (fname, err.filename, fname), err.filename) from None
        except (pickle.UnpicklingError, EOFError, ValueError, AttributeError, ImportError,
                IndexError, KeyError, zlib.error, OSError) as err:
            if isinstance(err, OSError) and err.errno is not None:
                raise  # permissions and the like; bad gzip / bz2 data has no errno
            raise ValueError("%s cannot be read as an %s: the file is corrupted or truncated, or "
                             "is not a model saved with %s.save (%s: %s)"
                             % (fname, cls.__name__, cls.__name__, type(err).__name__, err)) from err
        if not isinstance(model, cls):
            raise TypeError("%s holds a %s, not an %s" % (fname, type(model).__name__, cls.__name__))
        version = getattr(model, 'format_version', None)
        if version is None:
            raise ValueError("%s holds an %s without a format version; it was not saved by "
                             "%s.save" % (fname, cls.__name__, cls.__name__))
        if version > FORMAT_VERSION:
            raise ValueError("%s was saved in model format %s, which this version of gensim_anchor "
                             "(format %d) cannot read; upgrade gensim_anchor"
                             % (fname, version, FORMAT_VERSION))
        # Attributes that models saved by earlier versions (or without them: _client is never
        # saved) lack, set once here so that the methods need no fallbacks.
        if getattr(model, 'id2word', None) is None and getattr(model, 'num_terms', None):
            model.id2word = utils.FakeDict(model.num_terms)  # saved with ignore='id2word'
        if getattr(model, 'timings', None) is None:
            model.timings = {}
        defaults = dict(_cooccurrence=None, _sample=None, refinement=None, _client=None,
                        progress=None, rectify=False, rectify_max_iter=50, seed_anchors=None,
                        refine_method=None, refine_options=None, _documents=None, callbacks=None)
        for name, value in defaults.items():
            if not hasattr(model, name):
                setattr(model, name, value)
        if model.rectify is True:  # saved before rectify='enn': True meant the alternating projection
            model.rectify = 'ap'
        if getattr(model, 'anchor_groups', None) is None and model.anchors is not None:
            model.anchor_groups = [[int(i)] for i in model.anchors]  # saved before seeded anchors
        return model

    def save_portable(self, path, *, save_cooccurrence=False):
        """Save the model as a directory of JSON and ``.npy`` files that loads without
        unpickling anything (:mod:`gensim_anchor.portable`): safe to share.

        Parameters
        ----------
        path : str
            Directory (created if needed).
        save_cooccurrence : bool
            Also save the co-occurrence statistics and the alpha sample, so that a loaded model
            can be ``update``-d.
        """
        from .portable import save_portable
        save_portable(self, path, save_cooccurrence=save_cooccurrence)

    @classmethod
    def load_portable(cls, path, mmap=None):
        """Load a model saved with :meth:`save_portable`; nothing in the files is executed, and
        every value is checked before the model is returned (``mmap='r'`` maps the arrays).

        Raises
        ------
        FileNotFoundError
            If ``path``, its ``model.json`` or an array file it lists is missing.
        gensim_anchor.portable.PortableFormatError
            (a ValueError) If a file was tampered with, truncated or written in a newer format;
            the message names the file and the problem.
        """
        from .portable import load_portable
        return load_portable(path, mmap=mmap, cls=cls)
