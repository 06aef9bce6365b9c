"""Early, precise checks of user input (scikit-learn's habit): name the parameter, the allowed
values and what was received."""
import numbers

import numpy as np

from ._defaults import DEFAULT_MIN_DF, DEFAULT_MIN_DF_FRACTION, REFINE_OPTIONS, SAMPLERS

_INT64 = np.iinfo(np.int64)


def check_int(name, value, *, minimum=None, allow_none=False):
    """An integer (not bool) >= minimum that fits in 64 bits (as every count, cap and size here
    is held: a larger one would surface as an OverflowError deep in numpy or JAX)."""
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError("%s must be an integer, got %r (%s)" % (name, value, type(value).__name__))
    if minimum is not None and value < minimum:
        raise ValueError("%s must be >= %d, got %d" % (name, minimum, value))
    if not _INT64.min <= value <= _INT64.max:
        raise ValueError("%s must fit in a 64-bit integer (at most 2**63 - 1), got %d" % (name, value))
    return int(value)


def check_index(name, value, size, what):
    """An integer index into ``size`` items (negative ones count from the end, as numpy's and
    LdaModel's do); out of range is an IndexError that names the valid ids, not numpy's."""
    value = check_int(name, value)
    if not -size <= value < size:
        raise IndexError("%s %d is out of range: the model has %d %s (ids 0..%d)"
                         % (name, value, size, what, size - 1))
    return value


def check_ids(name, ids, size, what='word ids'):
    """Integer ids in 0..size-1, as int64: an id out of range would index the wrong row (a
    negative one) or fail deep in numpy or JAX."""
    array = np.asarray(ids)
    if array.size and not np.issubdtype(array.dtype, np.integer) and not (
            np.issubdtype(array.dtype, np.floating) and np.all(np.isfinite(array))
            and np.all(array == np.round(array))):
        raise TypeError("%s must be integer %s, got dtype %s" % (name, what, array.dtype))
    array = array.astype(np.int64)
    if array.size and (array.min() < 0 or array.max() >= size):
        bad = array[(array < 0) | (array >= size)]
        raise ValueError("%s must be %s in 0..%d, got %d" % (name, what, size - 1, int(bad[0])))
    return array


def check_row_sums(p_w, num_terms, needed=None):
    """p(w), the row sums of Q, as float64 of shape (V,), finite and >= 0, and > 0 on the ids
    ``needed`` (they are divided by it)."""
    p = np.asarray(p_w, dtype=np.float64)
    if p.shape != (num_terms,):
        raise ValueError("p_w must have shape (%d,) (the row sums of Q, one per word), got shape %s"
                         % (num_terms, p.shape))
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError("p_w must be finite and >= 0")
    if needed is not None and len(needed) and not np.all(p[needed] > 0):
        raise ValueError("word %d has p_w = 0 (it never occurs in a document of two or more tokens), "
                         "so it has no row of Q-bar" % int(needed[np.argmin(p[needed] > 0)]))
    return p


def check_p_z(p_z, num_topics):
    """p(z), the topic proportions of the anchor fit: a distribution over the K topics
    (returned renormalised to sum 1 exactly)."""
    p = np.asarray(p_z, dtype=np.float64)
    if p.shape != (num_topics,):
        raise ValueError("p_z must have shape (%d,) (one probability per topic), got shape %s"
                         % (num_topics, p.shape))
    if not np.all(np.isfinite(p)):
        raise ValueError("p_z must be finite, got %r" % (p.tolist(),))
    if np.any(p < 0):
        k = int(np.argmax(p < 0))
        raise ValueError("p_z must be >= 0 (a distribution over topics); p_z[%d] = %.6g"
                         % (k, p[k]))
    if abs(p.sum() - 1.0) > 1e-5:
        raise ValueError("p_z must sum to 1 (a distribution over topics), it sums to %.6g"
                         % p.sum())
    return p / p.sum()


def check_positive_float(name, value, *, allow_none=False, allow_zero=False):
    """A finite float > 0 (>= 0 with ``allow_zero``)."""
    if value is None and allow_none:
        return None
    bound = ">= 0" if allow_zero else "> 0"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError("%s must be a number %s, got %r (%s)" % (name, bound, value, type(value).__name__))
    if not np.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise ValueError("%s must be a finite number %s, got %r" % (name, bound, value))
    return float(value)


def check_float_dtype(name, value):
    """A numpy floating-point dtype (an integer dtype would silently round probabilities to 0)."""
    try:
        dtype = np.dtype(value)
    except TypeError:
        dtype = None
    if dtype is None or not np.issubdtype(dtype, np.floating):
        raise TypeError("%s must be a floating-point type such as numpy.float32 or numpy.float64, "
                        "got %r" % (name, value))
    return dtype


def check_option(name, value, options):
    """One of a fixed set of strings."""
    if not isinstance(value, str) or value not in options:
        raise ValueError("%s must be one of %s, got %r" % (name, ", ".join(repr(o) for o in options), value))
    return value


def check_rectify(rectify, methods):
    """rectify=: False (or None), True (the first method, the compressed one) or a method name;
    returns False or the method name."""
    if rectify is None or rectify is False or (isinstance(rectify, (bool, np.bool_)) and not rectify):
        return False
    if rectify is True or (isinstance(rectify, np.bool_) and rectify):
        return methods[0]
    if isinstance(rectify, str) and rectify in methods:
        return rectify
    raise ValueError("rectify must be False, True (= %r) or one of %s (%r: compressed, any vocabulary; "
                     "%r: dense alternating projection, V x V memory), got %r"
                     % (methods[0], ", ".join(repr(m) for m in methods), methods[0], methods[1], rectify))


def check_corpus(corpus):
    """An iterable of documents (a string is one too, but never a corpus: a file name?)."""
    if isinstance(corpus, (str, bytes)) or not hasattr(corpus, '__iter__'):
        raise TypeError("corpus must be an iterable of bag-of-words documents, got %s%s"
                        % (type(corpus).__name__, " (a file name? load it with a gensim corpus "
                           "class such as MmCorpus)" if isinstance(corpus, str) else ""))
    # A document-term matrix is not a stream of documents (scipy's fails on len(), numpy's rows
    # are dense counts): gensim's adapters make it one.
    if hasattr(corpus, 'tocsc') or (isinstance(corpus, np.ndarray) and corpus.ndim == 2
                                    and corpus.dtype != object):
        raise TypeError("corpus is a %s document-term matrix, not an iterable of bag-of-words "
                        "documents: wrap it with gensim.matutils.%s(X, documents_columns=False) "
                        "(documents as rows)" % (type(corpus).__name__, "Sparse2Corpus"
                                                 if hasattr(corpus, 'tocsc') else "Dense2Corpus"))
    return corpus


def num_terms_of(id2word):
    """V implied by a gensim Dictionary, a plain {id: word} dict or a FakeDict."""
    if id2word is None:
        return None
    if not hasattr(id2word, 'keys') or not hasattr(id2word, '__getitem__'):
        raise TypeError("id2word must be a gensim Dictionary or a dict {word_id: word}, got %s"
                        % type(id2word).__name__)
    if type(id2word).__name__ == 'FakeDict':
        return int(id2word.num_terms)
    keys = list(id2word.keys())
    if not keys:
        raise ValueError("id2word is empty: the vocabulary must hold at least one word")
    if not all(isinstance(k, numbers.Integral) and not isinstance(k, bool) for k in keys):
        raise TypeError("id2word must map integer word ids to words; got keys such as %r "
                        "(pass dictionary.id2token or the Dictionary itself, not token2id)"
                        % (next(k for k in keys if not isinstance(k, numbers.Integral)),))
    return 1 + int(max(keys))


def check_min_df(value):
    """anchor_min_df: None, an int >= 0 (documents) or a float in (0, 1] (fraction)."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError("anchor_min_df must be an int (documents) or a float in (0, 1] "
                        "(fraction of documents), got %r" % (value,))
    if isinstance(value, numbers.Integral):
        if value < 0:
            raise ValueError("anchor_min_df must be >= 0 documents, got %d" % value)
    elif not 0.0 < value <= 1.0:
        raise ValueError("anchor_min_df as a float is a fraction of documents and must lie in "
                         "(0, 1], got %r" % (value,))
    return value


def check_prior(name, value, size, options, topics=None):
    """A Dirichlet prior as LdaModel takes it: a named option, None, a number > 0, or ``size``
    numbers > 0 (also ``topics`` x ``size`` for eta). ``size`` None defers the shape check."""
    if value is None or (isinstance(value, str) and value in options):
        return value
    if isinstance(value, str):
        raise ValueError("%s must be one of %s, a positive number or an array of positive numbers, "
                         "got %r" % (name, ", ".join(repr(o) for o in options), value))
    array = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(array)) or np.any(array <= 0):
        raise ValueError("%s must contain only finite numbers > 0, got %r" % (name, value))
    if array.ndim == 0:
        return array if size is None else np.full(size, float(array))
    shapes = [(size,)] + ([(topics, size)] if topics is not None else [])
    if size is not None and array.shape not in shapes:
        raise ValueError("%s must have shape %s, got %s" % (name, " or ".join(map(str, shapes)), array.shape))
    return array


def check_progress(progress):
    """``progress`` is None (bar only on a terminal), True or False."""
    if progress is not None and not isinstance(progress, (bool, np.bool_)):
        raise TypeError("progress must be None (a bar only when stderr is a terminal), True or "
                        "False, got %r" % (progress,))
    return progress


def check_callbacks(callbacks):
    """``callbacks`` as a list of gensim metrics, or None for none (an empty list too, as
    LdaModel). Checked here, not at the first epoch: that comes after the whole fit."""
    if callbacks is None:
        return None
    from gensim.models import callbacks as gensim_callbacks
    kinds = ("gensim.models.callbacks.Metric objects (CoherenceMetric, PerplexityMetric, "
             "DiffMetric, ConvergenceMetric)")
    if isinstance(callbacks, (gensim_callbacks.Metric, str, bytes, dict)):
        raise TypeError("callbacks must be a list of %s, got one %s: pass [%s]"
                        % (kinds, type(callbacks).__name__, type(callbacks).__name__))
    try:
        metrics = list(callbacks)
    except TypeError:
        raise TypeError("callbacks must be a list of %s, got %r" % (kinds, callbacks)) from None
    wrong = [m for m in metrics if not isinstance(m, gensim_callbacks.Metric)]
    if wrong:
        raise TypeError("callbacks must be a list of %s; got %s" % (
            kinds, ", ".join(sorted({type(m).__name__ for m in wrong}))))
    if any(getattr(m, 'logger', None) == 'visdom' for m in metrics) \
            and not gensim_callbacks.VISDOM_INSTALLED:
        raise ImportError("a metric of callbacks has logger='visdom', which needs the visdom "
                          "package: pip install visdom, or use logger='shell'")
    return metrics or None


# ----------------------------------------------------------------------------------------------
# Topics and anchors: each rule once, whichever door (the model, a stage function) it guards
# ----------------------------------------------------------------------------------------------

def check_vocabulary(num_topics, num_terms):
    """Each topic needs its own anchor word: K <= V."""
    if num_topics > num_terms:
        raise ValueError("num_topics=%d is larger than the vocabulary (%d word%s): each topic needs "
                         "its own anchor word" % (num_topics, num_terms, "" if num_terms == 1 else "s"))


def check_seed_count(num_seeds, num_topics):
    """At most one seeded anchor per topic."""
    if num_seeds > num_topics:
        raise ValueError("%d seeded anchors for num_topics=%d: at most one per topic"
                         % (num_seeds, num_topics))


def check_groups_loss(loss, groups):
    """Groups of anchor words need an EG loss: the original Recover inverts Q on single words."""
    if loss == 'original' and any(len(g) > 1 for g in groups):
        raise ValueError("groups of anchor words need loss='L2' or 'KL' (the original Recover "
                         "inverts Q on one word per topic)")


def check_candidate_count(num_candidates, num_topics, num_seeds=0, *, min_df=None, default=None):
    """Enough anchor candidates for the topics without a seeded anchor. ``min_df`` and
    ``default`` (the number of documents, when the threshold was the default) explain where the
    candidates came from."""
    needed = num_topics - num_seeds
    if num_candidates >= needed:
        return
    wanted = ("the %d topics without a seeded anchor" % needed if num_seeds else
              "num_topics=%d" % num_topics)
    if min_df is None:
        raise ValueError("%d anchor candidates for %d topics" % (num_candidates, needed))
    raise ValueError(
        "only %d words occur in at least anchor_min_df=%d documents%s (and in a document of two or "
        "more tokens), fewer than %s: lower anchor_min_df or num_topics"
        % (num_candidates, min_df, "" if default is None else
           " (the default: %g%% of the %d documents, at most %d)"
           % (100 * DEFAULT_MIN_DF_FRACTION, default, DEFAULT_MIN_DF), wanted))


def token2id(id2word):
    """Words to ids: a Dictionary's token2id, or the inverse of a plain {id: word} dict."""
    mapping = getattr(id2word, 'token2id', None)
    return mapping if mapping is not None else {w: i for i, w in id2word.items()}


def _is_word(value):
    return isinstance(value, str) or (isinstance(value, numbers.Integral) and not isinstance(value, bool))


def check_seeds(anchors, num_topics, id2word, loss):
    """The ``anchors=`` argument as a list of seeds, each a list of words (str or int)."""
    if anchors is None:
        return None
    if isinstance(anchors, np.ndarray) and anchors.ndim:  # as a seed's own words may be
        anchors = list(anchors)
    if isinstance(anchors, (str, bytes)) or not isinstance(anchors, (list, tuple)):
        raise TypeError("anchors must be a list of seeded anchors, each a word (str or int id) or a "
                        "list of words, e.g. ['gun', ['bush', 'kerry']]; got %r" % (anchors,))
    seeds = []
    for k, seed in enumerate(anchors):
        group = [seed] if _is_word(seed) else seed
        if not isinstance(group, (list, tuple, np.ndarray)) or not len(group) or \
                not all(_is_word(w) for w in np.asarray(group, dtype=object).ravel()):
            raise TypeError("anchors[%d] must be a word (str or int id) or a non-empty list of words, "
                            "got %r" % (k, seed))
        seeds.append([w if isinstance(w, str) else int(w) for w in group])
    check_seed_count(len(seeds), num_topics)
    if id2word is None and any(isinstance(w, str) for seed in seeds for w in seed):
        raise ValueError("anchors given as words need id2word to look them up; pass id2word or "
                         "give word ids")
    check_groups_loss(loss, seeds)
    return seeds


def check_topics(value, name='topics', *, orientation='KV', dtype=np.float64, tol=None):
    """Topics from a gensim topic model or an array, checked: finite, >= 0, distributions.

    Parameters
    ----------
    value : gensim topic model or array_like
        A model's ``get_topics()`` is K x V (rows p(w | z)); an array may be K x V or the
        paper's A, V x K (columns p(w | z)).
    orientation : {'KV', 'VK', 'any'}
        The shape returned. An array in the other orientation is transposed when that is the
        only reading under which it holds distributions (rows summing to 1 for K x V);
        ``'any'`` keeps the array as given, rows or columns.
    dtype : numpy dtype or None
        The dtype returned (None keeps the input's, as CoherenceModel ranks it).
    tol : float, optional
        Tolerance of the sums (default 1e-5, or 1e-3 for single precision, whose rows sum to 1
        only to about V times the float32 epsilon). ``tol=inf`` skips the sums.

    Returns
    -------
    numpy.ndarray
    """
    if hasattr(value, 'get_topics'):
        array = np.asarray(value.get_topics())
        if orientation == 'VK':
            array = array.T
    else:
        array = np.asarray(value)
    if array.ndim != 2 or 0 in array.shape:
        raise ValueError("%s must be a gensim topic model or a 2-D array of topics (num_topics, "
                         "num_terms)%s, got shape %s" % (name, " or A (num_terms, num_topics)"
                                                         if orientation != 'KV' else "", array.shape))
    if not np.issubdtype(array.dtype, np.floating) and not np.issubdtype(array.dtype, np.integer):
        raise ValueError("%s must hold floating-point probabilities, got dtype %s" % (name, array.dtype))
    if tol is None:
        tol = 1e-5 if array.dtype.itemsize >= 8 else 1e-3
    if dtype is not None:
        array = array.astype(dtype, copy=False)
    if not np.all(np.isfinite(array)) or np.any(array < 0):
        raise ValueError("%s must be finite and >= 0" % name)
    if not np.isfinite(tol) or orientation == 'any':
        return array
    axis = 1 if orientation == 'KV' else 0  # the axis that sums to 1
    sums = array.sum(axis=axis, dtype=np.float64)
    if np.all(np.abs(sums - 1.0) <= tol):
        return array
    other = array.sum(axis=1 - axis, dtype=np.float64)
    if not hasattr(value, 'get_topics') and np.all(np.abs(other - 1.0) <= tol):
        return array.T  # unambiguous: only the transpose holds distributions
    bad = int(np.argmax(np.abs(sums - 1.0)))
    raise ValueError("%s must have %s p(w | z) that sum to 1; %s %d sums to %r (topics from "
                     "get_topics() are K x V with rows that sum to 1, the paper's A is V x K)"
                     % (name, "rows" if axis == 1 else "columns", "row" if axis == 1 else "column",
                        bad, float(sums[bad])))


def check_refine_options(method, options):
    """The options of a refinement (``refine_options=``, or :meth:`AnchorModel.refine`'s
    keywords), checked and completed with the defaults: one place for both doors."""
    defaults = REFINE_OPTIONS[method]
    if not isinstance(options, dict):
        raise TypeError("refine_options must be a dict of the %r refinement's options (%s), got %s"
                        % (method, ", ".join(sorted(defaults)), type(options).__name__))
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise ValueError("refine_options for %r take %s; got unknown %s"
                         % (method, ", ".join(sorted(defaults)), ", ".join(map(repr, unknown))))
    out = dict(defaults, **options)
    out['optimize_alpha'] = bool(out['optimize_alpha'])
    if method == 'vb':
        out['passes'] = check_int('passes', out['passes'], minimum=1)
        return out
    out['num_sweeps'] = check_int('num_sweeps', out['num_sweeps'], minimum=1)
    out['burn_in'] = check_int('burn_in', out['burn_in'], minimum=0, allow_none=True)
    if out['burn_in'] is not None and out['burn_in'] >= out['num_sweeps']:
        raise ValueError("burn_in=%d must be smaller than num_sweeps=%d" % (out['burn_in'], out['num_sweeps']))
    if out['eta'] is not None:  # None: the model's eta (1/K unless given)
        out['eta'] = check_positive_float('eta', out['eta'])
    out['sampler'] = check_option('sampler', out['sampler'], SAMPLERS)
    out['substeps'] = check_int('substeps', out['substeps'], minimum=1)
    out['tol'] = check_positive_float('tol', out['tol'])
    return out
