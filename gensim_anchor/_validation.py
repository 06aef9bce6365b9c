"""Early, precise checks of user input (scikit-learn's habit): name the parameter, the allowed
values and what was received."""
import numbers

import numpy as np


def check_int(name, value, *, minimum=None, allow_none=False):
    """An integer (not bool) >= minimum."""
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError("%s must be an integer, got %r (%s)" % (name, value, type(value).__name__))
    if minimum is not None and value < minimum:
        raise ValueError("%s must be >= %d, got %d" % (name, minimum, value))
    return int(value)


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


def check_corpus(corpus):
    """An iterable of documents (a string is one too, but never a corpus: a file name?)."""
    if isinstance(corpus, (str, bytes)) or not hasattr(corpus, '__iter__'):
        raise TypeError("corpus must be an iterable of bag-of-words documents, got %s%s"
                        % (type(corpus).__name__, " (a file name? load it with a gensim corpus "
                           "class such as MmCorpus)" if isinstance(corpus, str) else ""))
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
