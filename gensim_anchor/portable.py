"""A model format that executes nothing on load: JSON and ``.npy`` files in one directory.

:meth:`AnchorModel.save <gensim_anchor.AnchorModel.save>` writes a pickle (gensim's
:class:`~gensim.utils.SaveLoad`), and unpickling runs whatever code the file carries: a pickled
model is only as safe as its source. A portable model holds data only, so it can be loaded from
anyone: the arrays are ``.npy`` files read with ``allow_pickle=False``, everything else is JSON,
and every value is checked before the model is returned.

Layout of a portable model directory:

==================  ============================================================================
``model.json``      ``format`` (``'gensim_anchor.portable'``), ``format_version``, ``class``;
                    ``options`` (the constructor's settings), ``state`` (counts, anchor groups,
                    timings, refinement record, lifecycle events), ``id2word`` (a Dictionary's
                    token2id / dfs / cfs and counts, a plain {id: word} map, or a FakeDict's
                    size), ``random_state`` (MT19937 position; its key is an array),
                    ``cooccurrence`` and ``sample`` (or null), and ``arrays``: a manifest
                    ``name -> {file, dtype, shape}``.
``<name>.npy``      One array per manifest entry: ``topics`` (K x V), ``alpha`` (K), ``eta``
                    (V or K x V), ``R`` (K x K), ``p_z`` (K), ``anchors`` (K), ``solver_*`` (V),
                    ``random_state_key`` (624 uint32); with ``save_cooccurrence=True`` also
                    ``cooc_*`` (Q's statistics) and ``sample_*`` (the alpha sample, CSR-like).
==================  ============================================================================

``model.json`` is written last: a save that was interrupted leaves a directory that does not
load, rather than one that loads half a model.

Examples
--------
.. sourcecode:: pycon

    >>> from gensim.corpora import Dictionary
    >>> from gensim.test.utils import common_texts, get_tmpfile
    >>> from gensim_anchor import AnchorModel
    >>> dictionary = Dictionary(common_texts)
    >>> corpus = [dictionary.doc2bow(text) for text in common_texts]
    >>> model = AnchorModel(corpus, num_topics=2, id2word=dictionary, random_state=0)
    >>> path = get_tmpfile("anchor_portable")
    >>> model.save_portable(path)
    >>> loaded = AnchorModel.load_portable(path, mmap='r')
    >>> bool((loaded.get_topics() == model.get_topics()).all()), loaded.anchor_words == model.anchor_words
    (True, True)

"""
import json
import logging
import math
import numbers
import os
import re

import numpy as np
import scipy.sparse as sp
from gensim import utils
from gensim.corpora import Dictionary

from . import _validation as check

logger = logging.getLogger(__name__)

#: Name written in ``model.json``'s ``format`` field.
FORMAT_NAME = 'gensim_anchor.portable'
#: Version of the portable format; a file with a larger version is refused.
PORTABLE_VERSION = 1
#: The JSON file of a portable model directory.
MODEL_FILE = 'model.json'

# Array file names: plain names inside the directory (no separators, no '..', no hidden files).
_FILE_NAME = re.compile(r'^[A-Za-z0-9_][A-Za-z0-9_.-]*\.npy$')
# Only plain numeric dtypes, never object or structured ones.
_DTYPES = ('float16', 'float32', 'float64', 'int32', 'int64', 'uint32', 'bool')

# The constructor's settings, as they are stored in ``options``.
_OPTIONS = ('num_topics', 'num_terms', 'chunksize', 'loss', 'eps', 'max_iter', 'projection_dim',
            'q_mode', 'progress', 'anchor_min_df', 'cleanup', 'rectify', 'rectify_max_iter',
            'seed_anchors', 'minimum_probability', 'minimum_phi_value', 'per_word_topics',
            'iterations', 'gamma_threshold', 'alpha_arg', 'eta_arg', 'alpha_sample', 'dtype',
            'projection_seed', 'refine_method', 'refine_options')

_OPTIONAL_ARRAYS = frozenset(
    ['alpha_arg', 'eta_arg', 'solver_n_iter', 'solver_gap', 'solver_converged', 'cooc_doc_freq',
     'cooc_term_counts', 'cooc_h_hat', 'cooc_Q_sum', 'cooc_H_data', 'cooc_H_indices',
     'cooc_H_indptr', 'sample_indptr', 'sample_ids', 'sample_counts', 'documents_lengths',
     'documents_ids', 'documents_counts'])


class PortableFormatError(ValueError):
    """A portable model directory that cannot be loaded: tampered with, truncated, or written by
    a newer gensim_anchor. The message names the file and the problem."""


# ----------------------------------------------------------------------------------------------
# Save
# ----------------------------------------------------------------------------------------------

def _jsonable(value):
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def _encode_id2word(id2word):
    if isinstance(id2word, Dictionary):
        return dict(type='Dictionary', token2id=[[t, int(i)] for t, i in id2word.token2id.items()],
                    dfs=[[int(i), int(n)] for i, n in id2word.dfs.items()],
                    cfs=[[int(i), int(n)] for i, n in id2word.cfs.items()],
                    num_docs=int(id2word.num_docs), num_pos=int(id2word.num_pos),
                    num_nnz=int(id2word.num_nnz))
    if isinstance(id2word, utils.FakeDict):
        return dict(type='FakeDict', num_terms=int(id2word.num_terms))
    items = [[int(i), w] for i, w in id2word.items()]
    bad = [w for _, w in items if not isinstance(w, str)]
    if bad:
        raise TypeError("id2word must map word ids to str for the portable format, got %r (%s); "
                        "decode the words or use a gensim Dictionary" % (bad[0], type(bad[0]).__name__))
    return dict(type='dict', items=items)


def _prior_arg(name, value, arrays):
    """alpha/eta constructor arguments: a string or None as is, an array as an array file."""
    if isinstance(value, np.ndarray):
        arrays[name] = value
        return {'array': name}
    return value


def _rng_state(generator):
    state = generator.bit_generator.state
    if state['bit_generator'] != 'PCG64':
        raise TypeError("the alpha sample's random generator is %s; the portable format stores "
                        "PCG64 only" % state['bit_generator'])
    return state


def save_portable(model, path, *, save_cooccurrence=False):
    """Write ``model`` to the directory ``path`` in the portable format (created if needed).

    Parameters
    ----------
    model : AnchorModel
        A trained model.
    path : str or os.PathLike
        Directory; files of an earlier save there are overwritten.
    save_cooccurrence : bool
        Also store the co-occurrence statistics and the alpha sample, so that the loaded model
        can be :meth:`~gensim_anchor.AnchorModel.update`-d (as ``save(..., save_cooccurrence=True)``).

    Raises
    ------
    RuntimeError
        If the model is not trained.
    TypeError
        If ``id2word`` maps ids to something other than str.
    ValueError
        With ``save_cooccurrence=True`` for a model whose statistics are on a Dask cluster.
    """
    model._check_trained()
    path = os.fspath(path)
    arrays = {}
    cooc_json = sample_json = documents_json = None
    cooc, sample = getattr(model, '_cooccurrence', None), getattr(model, '_sample', None)
    if save_cooccurrence and cooc is not None:
        if cooc.mode == 'distributed':
            raise ValueError("the co-occurrence statistics of this model are on a Dask cluster; "
                             "the portable format stores local statistics only: save without "
                             "save_cooccurrence, or use save(..., save_cooccurrence=True), which "
                             "gathers them")
        cooc_json = dict(num_terms=int(cooc.num_terms), num_docs=int(cooc.num_docs),
                         num_short=int(cooc.num_short), num_tokens=int(cooc.num_tokens),
                         mode=cooc.mode)
        arrays.update(cooc_doc_freq=cooc.doc_freq, cooc_term_counts=cooc.term_counts,
                      cooc_h_hat=cooc.h_hat)
        if cooc.mode == 'dense':
            arrays['cooc_Q_sum'] = cooc.Q_sum
        else:
            H = cooc.H_tilde.tocsc()
            arrays.update(cooc_H_data=H.data, cooc_H_indices=H.indices, cooc_H_indptr=H.indptr)
    if save_cooccurrence and sample is not None:
        docs = sample.docs
        counts = [c for doc in docs for _, c in doc]
        sample_json = dict(size=int(sample.size), seen=int(sample.seen), rng=_rng_state(sample.rng),
                           int_counts=all(isinstance(c, numbers.Integral) for c in counts))
        arrays.update(
            sample_indptr=np.cumsum([0] + [len(doc) for doc in docs], dtype=np.int64),
            sample_ids=np.array([int(w) for doc in docs for w, _ in doc], dtype=np.int64),
            sample_counts=np.array(counts, dtype=np.float64))

    documents = getattr(model, '_documents', None)
    if save_cooccurrence and documents is not None:
        if hasattr(documents, 'gather'):  # a Dask corpus's partitions: its documents travel here
            documents = documents.gather()
        documents._flush()
        documents_json = dict(num_docs=int(documents.num_docs))
        arrays.update(documents_lengths=documents.lengths, documents_ids=documents.ids,
                      documents_counts=documents.counts)
    for name in ('topics', 'alpha', 'eta', 'R', 'p_z', 'anchors', 'solver_n_iter', 'solver_gap',
                 'solver_converged'):
        value = getattr(model, name)
        if value is not None:
            arrays[name] = np.asarray(value)
    name, key, pos, has_gauss, cached_gaussian = model.random_state.get_state()
    arrays['random_state_key'] = key

    options = {name: getattr(model, name, None) for name in _OPTIONS
               if name not in ('projection_seed', 'dtype', 'alpha_arg', 'eta_arg')}
    options.update(dtype=np.dtype(model.dtype).name, projection_seed=int(model._projection_seed),
                   alpha_arg=_prior_arg('alpha_arg', model.alpha_arg, arrays),
                   eta_arg=_prior_arg('eta_arg', model.eta_arg, arrays))
    for key_, value in options.items():
        if not _jsonable(value):
            raise TypeError("option %s=%r cannot be stored in the portable format" % (key_, value))
    events = getattr(model, 'lifecycle_events', None) or []
    if not _jsonable(events):
        logger.warning("lifecycle events of %s are not JSON-serialisable; not saved", model)
        events = []
    state = dict(num_docs=int(model.num_docs), num_tokens=int(model.num_tokens),
                 anchor_groups=[[int(i) for i in group] for group in model.anchor_groups],
                 timings={k: float(v) for k, v in model.timings.items()},
                 refinement=model.refinement if _jsonable(model.refinement) else None,
                 lifecycle_events=events)
    doc = dict(format=FORMAT_NAME, format_version=PORTABLE_VERSION, **{'class': type(model).__name__},
               options=options, state=state, id2word=_encode_id2word(model.id2word),
               random_state=dict(bit_generator=name, pos=int(pos), has_gauss=int(has_gauss),
                                 cached_gaussian=float(cached_gaussian)),
               cooccurrence=cooc_json, sample=sample_json, documents=documents_json, arrays={})

    os.makedirs(path, exist_ok=True)
    # Optional arrays of an earlier save here (say, with save_cooccurrence=True) would be left
    # beside a model.json that does not list them: remove the ones of our own names.
    for name in _OPTIONAL_ARRAYS - set(arrays):
        stale = os.path.join(path, name + '.npy')
        if os.path.isfile(stale) and not os.path.islink(stale):
            os.remove(stale)
    for name, value in arrays.items():
        # Saved in its own memory order (np.save keeps Fortran order): float32 sums over a
        # transposed copy round differently, and to_ldamodel() would not be bit for bit the same.
        value = np.asarray(value)
        fname = name + '.npy'
        np.save(os.path.join(path, fname), value, allow_pickle=False)
        doc['arrays'][name] = dict(file=fname, dtype=value.dtype.name, shape=list(value.shape))
    # Last, and by rename: a directory without a complete model.json does not load.
    tmp = os.path.join(path, MODEL_FILE + '.tmp')
    with open(tmp, 'w', encoding='utf-8') as fout:
        json.dump(doc, fout, allow_nan=False, ensure_ascii=False)
    os.replace(tmp, os.path.join(path, MODEL_FILE))
    logger.info("saved %s to %s in the portable format (%d arrays%s)", model, path, len(arrays),
                ", with co-occurrence statistics" if cooc_json else "")


# ----------------------------------------------------------------------------------------------
# Load: every value checked before the model exists
# ----------------------------------------------------------------------------------------------

_KINDS = {
    'int': lambda v: isinstance(v, int) and not isinstance(v, bool),
    'float': lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
    'str': lambda v: isinstance(v, str),
    'bool': lambda v: isinstance(v, bool),
    'null': lambda v: v is None,
    'list': lambda v: isinstance(v, list),
    'dict': lambda v: isinstance(v, dict),
}


class _Loader:
    """Reads and checks one portable directory; every failure names the file and the key."""

    def __init__(self, path, mmap):
        self.path = os.fspath(path)
        self.mmap = mmap
        self.json_file = os.path.join(self.path, MODEL_FILE)

    def fail(self, message, fname=None):
        raise PortableFormatError("%s: %s" % (fname or self.json_file, message))

    def get(self, obj, key, where, *kinds):
        """``obj[key]`` of one of ``kinds``; ``where`` is obj's dotted path in the JSON."""
        name = "%s.%s" % (where, key) if where else key
        if key not in obj:
            self.fail("missing key %r" % name)
        value = obj[key]
        if not any(_KINDS[k](value) for k in kinds):
            self.fail("%r must be %s, got %s %s" % (name, " or ".join(kinds), type(value).__name__,
                                                      _short(value)))
        return value

    def check(self, name, fn, *args, **kwargs):
        """A constructor check from :mod:`._validation`, its error tied to the JSON key."""
        try:
            return fn(*args, **kwargs)
        except (TypeError, ValueError) as err:
            self.fail("%r: %s" % (name, err))

    # -- files -------------------------------------------------------------------------------

    def read_json(self):
        if not os.path.isdir(self.path):
            if os.path.exists(self.path):
                raise PortableFormatError(
                    "%s is not a portable model directory (a file saved with AnchorModel.save? "
                    "load it with AnchorModel.load, only if it comes from a trusted source)" % self.path)
            raise FileNotFoundError(2, "no portable model directory %s" % self.path, self.path)
        if not os.path.isfile(self.json_file):
            raise FileNotFoundError(2, "%s is not a portable model directory: it has no %s (an "
                                    "interrupted save?)" % (self.path, MODEL_FILE), self.json_file)
        self.inside(MODEL_FILE)

        def no_constants(name):  # NaN and Infinity are not JSON, and no option takes them
            self.fail("non-finite number %s" % name)

        try:
            with open(self.json_file, 'rb') as fin:
                doc = json.loads(fin.read().decode('utf-8'), parse_constant=no_constants)
        except UnicodeDecodeError as err:
            self.fail("not UTF-8 text (%s)" % err)
        except json.JSONDecodeError as err:
            self.fail("truncated or not valid JSON (%s)" % err)
        if not isinstance(doc, dict):
            self.fail("must hold a JSON object, got %s" % type(doc).__name__)
        return doc

    def inside(self, fname):
        """The real path of ``fname``, refused unless it is a regular file in the directory."""
        full = os.path.join(self.path, fname)
        real, root = os.path.realpath(full), os.path.realpath(self.path)
        if os.path.dirname(real) != root:
            self.fail("%s points outside the model directory (to %s)" % (fname, real))
        return full

    def array(self, manifest, name, *, required=True):
        """The array ``name`` of the manifest, checked against the entry and the file's header."""
        if name not in manifest:
            if required:
                self.fail("missing key %r" % ('arrays.' + name))
            return None
        entry = self.get(manifest, name, 'arrays', 'dict')
        where = 'arrays.' + name
        fname = self.get(entry, 'file', where, 'str')
        dtype = self.get(entry, 'dtype', where, 'str')
        shape = self.get(entry, 'shape', where, 'list')
        if not _FILE_NAME.match(fname) or '..' in fname:
            self.fail("%r must be a plain .npy file name inside the model directory, got %r"
                      % (where + '.file', fname))
        if dtype not in _DTYPES:
            self.fail("%r must be one of %s, got %r" % (where + '.dtype', ", ".join(_DTYPES), dtype))
        if not all(_KINDS['int'](n) and n >= 0 for n in shape):
            self.fail("%r must be a list of non-negative ints, got %s" % (where + '.shape', _short(shape)))
        full = self.inside(fname)
        if not os.path.isfile(full):
            raise FileNotFoundError(2, "%s is incomplete: the array file %s listed in %s is missing"
                                    % (self.path, fname, MODEL_FILE), full)
        shape = tuple(shape)
        try:
            with open(full, 'rb') as fin:
                version = np.lib.format.read_magic(fin)
                read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0) else
                               np.lib.format.read_array_header_2_0)
                header_shape, fortran, header_dtype = read_header(fin)
                offset = fin.tell()
        except (ValueError, EOFError, OSError, SyntaxError) as err:
            self.fail("not a valid .npy file (%s)" % err, full)
        if header_dtype.hasobject or header_dtype.fields is not None:
            self.fail("holds %s data; only plain numeric arrays are allowed (an object array "
                      "would need pickle)" % header_dtype, full)
        if header_dtype.name != dtype or header_shape != shape:
            self.fail("holds %s %s, but %s lists %s %s" % (header_dtype.name, header_shape, MODEL_FILE,
                                                           dtype, shape), full)
        # Python ints: a crafted shape must not wrap an int64 product around to the file's size.
        count = math.prod(shape)
        expected = offset + count * header_dtype.itemsize
        size = os.path.getsize(full)
        if size != expected:
            self.fail("is %s: %d bytes, %d expected for %s %s"
                      % ("truncated" if size < expected else "longer than its header says",
                         size, expected, dtype, shape), full)
        mmap = self.mmap if count else None  # an empty array cannot be mapped
        try:
            return np.load(full, mmap_mode=mmap, allow_pickle=False)
        except (ValueError, EOFError, OSError) as err:
            self.fail("cannot be read (%s)" % err, full)


def _short(value, limit=60):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + '...'


def _check_distributions(loader, name, topics, num_topics, num_terms):
    if topics.shape != (num_topics, num_terms):
        loader.fail("%r has shape %s, but options say num_topics=%d, num_terms=%d"
                    % ('arrays.' + name, topics.shape, num_topics, num_terms))
    if not np.issubdtype(topics.dtype, np.floating):
        loader.fail("%r must be floating-point, got %s" % ('arrays.' + name, topics.dtype))
    # One float64 pass over the (possibly mapped) array, a row block at a time.
    eps = np.finfo(topics.dtype).eps
    tol = 8 * eps * max(16, num_terms) ** 0.5
    for lo in range(0, num_topics, 256):
        block = np.asarray(topics[lo:lo + 256], dtype=np.float64)
        if not np.all(np.isfinite(block)):
            loader.fail("%r holds non-finite values (topic %d)"
                        % ('arrays.' + name, lo + int(np.flatnonzero(~np.isfinite(block).all(axis=1))[0])))
        if np.any(block < 0):
            loader.fail("%r holds negative probabilities (topic %d)"
                        % ('arrays.' + name, lo + int(np.flatnonzero((block < 0).any(axis=1))[0])))
        sums = block.sum(axis=1)
        bad = np.flatnonzero(np.abs(sums - 1.0) > tol)
        if bad.size:
            loader.fail("%r: topic %d sums to %.9g, not 1 (tolerance %.2g)"
                        % ('arrays.' + name, lo + bad[0], sums[bad[0]], tol))


def _check_positive(loader, name, array, shapes):
    if array.shape not in shapes:
        loader.fail("%r has shape %s, expected %s" % ('arrays.' + name, array.shape,
                                                      " or ".join(map(str, shapes))))
    values = np.asarray(array, dtype=np.float64)
    if not np.all(np.isfinite(values)) or np.any(values <= 0):
        loader.fail("%r must hold finite numbers > 0" % ('arrays.' + name))


def _check_shape(loader, name, array, shape, kind=None):
    if array.shape != shape:
        loader.fail("%r has shape %s, expected %s" % ('arrays.' + name, array.shape, shape))
    if kind is not None and array.dtype.kind not in kind:
        loader.fail("%r has dtype %s" % ('arrays.' + name, array.dtype))
    if array.dtype.kind == 'f' and not np.all(np.isfinite(array)):
        loader.fail("%r holds non-finite values" % ('arrays.' + name))


def _decode_id2word(loader, spec, num_terms):
    kind = loader.get(spec, 'type', 'id2word', 'str')
    if kind == 'FakeDict':
        n = loader.get(spec, 'num_terms', 'id2word', 'int')
        id2word = utils.FakeDict(n)
    elif kind == 'dict':
        items = loader.get(spec, 'items', 'id2word', 'list')
        if not all(isinstance(p, list) and len(p) == 2 and _KINDS['int'](p[0]) and p[0] >= 0
                   and isinstance(p[1], str) for p in items):
            loader.fail("'id2word.items' must be a list of [int >= 0, str] pairs")
        id2word = {i: w for i, w in items}
        if len(id2word) != len(items):
            loader.fail("'id2word.items' repeats a word id")
    elif kind == 'Dictionary':
        pairs = loader.get(spec, 'token2id', 'id2word', 'list')
        if not all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
                   and _KINDS['int'](p[1]) and p[1] >= 0 for p in pairs):
            loader.fail("'id2word.token2id' must be a list of [str, int >= 0] pairs")
        id2word = Dictionary()
        id2word.token2id = {t: i for t, i in pairs}
        if len(id2word.token2id) != len(pairs) or len(set(id2word.token2id.values())) != len(pairs):
            loader.fail("'id2word.token2id' repeats a word or a word id")
        for key in ('dfs', 'cfs'):
            counts = loader.get(spec, key, 'id2word', 'list')
            if not all(isinstance(p, list) and len(p) == 2 and all(_KINDS['int'](x) and x >= 0 for x in p)
                       for p in counts):
                loader.fail("%r must be a list of [int >= 0, int >= 0] pairs" % ('id2word.' + key))
            setattr(id2word, key, {i: n for i, n in counts})
        for key in ('num_docs', 'num_pos', 'num_nnz'):
            value = loader.get(spec, key, 'id2word', 'int')
            if value < 0:
                loader.fail("%r must be >= 0, got %d" % ('id2word.' + key, value))
            setattr(id2word, key, value)
    else:
        loader.fail("'id2word.type' must be 'Dictionary', 'dict' or 'FakeDict', got %r" % kind)
    if not len(id2word) and kind != 'FakeDict':
        loader.fail("'id2word' is empty")
    implied = check.num_terms_of(id2word)
    if implied != num_terms:
        loader.fail("'id2word' covers %d word ids, but 'options.num_terms' is %d" % (implied, num_terms))
    return id2word


def _decode_random_state(loader, spec, key):
    name = loader.get(spec, 'bit_generator', 'random_state', 'str')
    pos = loader.get(spec, 'pos', 'random_state', 'int')
    has_gauss = loader.get(spec, 'has_gauss', 'random_state', 'int')
    cached = loader.get(spec, 'cached_gaussian', 'random_state', 'float')
    if name != 'MT19937':
        loader.fail("'random_state.bit_generator' must be 'MT19937', got %r" % name)
    if not 0 <= pos <= 624 or has_gauss not in (0, 1):  # numpy itself does not check pos
        loader.fail("'random_state' is not a valid MT19937 state (pos %d, has_gauss %d)" % (pos, has_gauss))
    _check_shape(loader, 'random_state_key', key, (624,), 'u')
    rs = np.random.RandomState()
    try:
        rs.set_state((name, np.array(key, dtype=np.uint32), pos, has_gauss, cached))
    except (ValueError, TypeError, OverflowError) as err:
        loader.fail("'random_state' is not a valid MT19937 state (%s)" % err)
    return rs


def _decode_prior(loader, options, name, arrays):
    value = loader.get(options, name, 'options', 'str', 'null', 'float', 'dict')
    if isinstance(value, dict):
        ref = loader.get(value, 'array', 'options.' + name, 'str')
        if ref != name:
            loader.fail("%r must be %r, got %r" % ('options.%s.array' % name, name, ref))
        return np.array(loader.array(arrays, name), dtype=np.float64)
    return value


def _decode_cooccurrence(loader, spec, arrays, num_terms):
    from .cooccurrence import Cooccurrence
    ints = {}
    for key in ('num_terms', 'num_docs', 'num_short', 'num_tokens'):
        ints[key] = loader.get(spec, key, 'cooccurrence', 'int')
        if ints[key] < 0:
            loader.fail("%r must be >= 0, got %d" % ('cooccurrence.' + key, ints[key]))
    mode = loader.get(spec, 'mode', 'cooccurrence', 'str')
    if mode not in ('implicit', 'dense'):
        loader.fail("'cooccurrence.mode' must be 'implicit' or 'dense', got %r" % mode)
    V, M = ints['num_terms'], ints['num_docs']
    if V != num_terms:
        loader.fail("'cooccurrence.num_terms' is %d, but 'options.num_terms' is %d" % (V, num_terms))
    vectors = {}
    for key, kind in (('doc_freq', 'i'), ('term_counts', 'f'), ('h_hat', 'f')):
        vectors[key] = loader.array(arrays, 'cooc_' + key)
        _check_shape(loader, 'cooc_' + key, vectors[key], (V,), kind)
        if np.any(vectors[key] < 0):  # counts and sums of counts
            loader.fail("%r holds negative values" % ('arrays.cooc_' + key))
    vectors['doc_freq'] = vectors['doc_freq'].astype(np.int64, copy=False)
    # The counts describe one corpus: no word in more documents than were read, a word in some
    # document exactly when it has a count, and the counts add up to the tokens read.
    read = M + ints['num_short']
    if np.any(vectors['doc_freq'] > read):
        loader.fail("'arrays.cooc_doc_freq' has word %d in %d documents, more than the %d read"
                    % (int(np.argmax(vectors['doc_freq'])), int(vectors['doc_freq'].max()), read))
    if np.any((vectors['doc_freq'] > 0) != (vectors['term_counts'] > 0)):
        loader.fail("'arrays.cooc_doc_freq' and 'arrays.cooc_term_counts' disagree on which words "
                    "occur (word %d)" % int(np.argmax((vectors['doc_freq'] > 0) != (vectors['term_counts'] > 0))))
    total = float(np.sum(vectors['term_counts']))
    if abs(total - ints['num_tokens']) > 1e-9 * max(total, 1.0):
        loader.fail("'arrays.cooc_term_counts' adds up to %.17g tokens, but 'cooccurrence.num_tokens' "
                    "is %d" % (total, ints['num_tokens']))
    if mode == 'dense':
        Q_sum = loader.array(arrays, 'cooc_Q_sum')
        _check_shape(loader, 'cooc_Q_sum', Q_sum, (V, V), 'f')
        return _check_row_sums(loader, Cooccurrence(Q_sum=Q_sum, **ints, **vectors))
    data, indices, indptr = (loader.array(arrays, 'cooc_H_' + k) for k in ('data', 'indices', 'indptr'))
    _check_shape(loader, 'cooc_H_indptr', indptr, (M + 1,), 'i')
    _check_shape(loader, 'cooc_H_data', data, data.shape, 'f')
    if np.any(data < 0):
        loader.fail("'arrays.cooc_H_data' holds negative values (H~ holds scaled word counts)")
    if data.ndim != 1 or indices.shape != data.shape or indices.dtype.kind != 'i':
        loader.fail("'arrays.cooc_H_data' and 'arrays.cooc_H_indices' must be 1-d integer / float "
                    "arrays of the same length, got %s %s and %s %s"
                    % (data.dtype, data.shape, indices.dtype, indices.shape))
    try:
        H = sp.csc_matrix((data, indices, indptr), shape=(V, M))
        H.check_format(full_check=True)
    except ValueError as err:
        loader.fail("the arrays cooc_H_* are not a valid %d x %d sparse matrix (%s)" % (V, M, err))
    return _check_row_sums(loader, Cooccurrence(H_tilde=H, **ints, **vectors))


def _check_row_sums(loader, cooc):
    """Q's row sums, p(w) up to scale, are finite and >= 0 for statistics of any corpus (each is
    a sum over documents of c_dw / n_d); arrays that are each well formed but do not belong
    together (a scaled h_hat, say) fail here instead of at the next fit, as a wrong answer or a
    misleading error."""
    with np.errstate(over='ignore', invalid='ignore'):
        p = np.asarray(cooc.row_sums(normalise=False), dtype=np.float64)
    scale = np.max(np.abs(p)) if p.size and np.all(np.isfinite(p)) else np.inf
    if not np.isfinite(scale) or np.any(p < -1e-6 * scale):
        loader.fail("the co-occurrence arrays are inconsistent: the row sums of Q they give are not "
                    "all finite and >= 0 (word %d), as the statistics of any corpus are"
                    % int(np.argmax(~np.isfinite(p) | (p < -1e-6 * scale))))
    return cooc


def _decode_sample(loader, spec, arrays, num_terms):
    from ._sampling import Reservoir as _Reservoir
    size = loader.get(spec, 'size', 'sample', 'int')
    seen = loader.get(spec, 'seen', 'sample', 'int')
    int_counts = loader.get(spec, 'int_counts', 'sample', 'bool')
    rng_state = loader.get(spec, 'rng', 'sample', 'dict')
    indptr = loader.array(arrays, 'sample_indptr')
    ids = loader.array(arrays, 'sample_ids')
    counts = loader.array(arrays, 'sample_counts')
    num_docs = len(indptr) - 1
    if size < 1 or seen < 0 or num_docs < 0 or num_docs > min(size, seen):
        loader.fail("'sample' holds %d documents of a sample of size %d after %d documents"
                    % (max(num_docs, 0), size, seen))
    _check_shape(loader, 'sample_ids', ids, ids.shape, 'i')
    _check_shape(loader, 'sample_counts', counts, ids.shape, 'f')
    if (indptr.dtype.kind != 'i' or indptr.ndim != 1 or indptr[0] != 0 or indptr[-1] != len(ids)
            or np.any(np.diff(indptr) < 0)):
        loader.fail("'arrays.sample_indptr' must rise from 0 to %d" % len(ids))
    if ids.size and (ids.min() < 0 or ids.max() >= num_terms):
        loader.fail("'arrays.sample_ids' holds word ids outside 0..%d" % (num_terms - 1))
    if np.any(counts < 0):
        loader.fail("'arrays.sample_counts' holds negative counts")
    if int_counts and np.any(counts != np.round(counts)):
        loader.fail("'sample.int_counts' is true, but 'arrays.sample_counts' holds fractions")
    rng = np.random.default_rng()
    try:
        if rng_state.get('bit_generator') != 'PCG64':
            raise ValueError("bit_generator must be 'PCG64'")
        rng.bit_generator.state = rng_state
    except (ValueError, TypeError, KeyError, OverflowError) as err:
        loader.fail("'sample.rng' is not a valid PCG64 state (%s)" % err)
    ids_list = ids.tolist()
    counts_list = counts.astype(np.int64).tolist() if int_counts else counts.tolist()
    bounds = indptr.tolist()
    sample = _Reservoir.__new__(_Reservoir)
    sample.size, sample.seen, sample.rng = size, seen, rng
    sample.docs = [list(zip(ids_list[a:b], counts_list[a:b])) for a, b in zip(bounds, bounds[1:])]
    return sample


def _decode_documents(loader, spec, arrays, num_terms, cooc):
    """The documents a model trained with refine= keeps (``save_cooccurrence=True``)."""
    from ._bow import DocumentStore
    num_docs = loader.get(spec, 'num_docs', 'documents', 'int')
    lengths = loader.array(arrays, 'documents_lengths')
    ids = loader.array(arrays, 'documents_ids')
    counts = loader.array(arrays, 'documents_counts')
    _check_shape(loader, 'documents_lengths', lengths, (num_docs,), 'i')
    # The store's int32 (DocumentStore.DTYPE), checked before the sum: no value may wrap on the
    # way in, and an int64 sum of fewer than 2**31 values below 2**31 cannot wrap.
    limit = np.iinfo(DocumentStore.DTYPE).max
    if num_docs > limit:
        loader.fail("'documents.num_docs' must be at most %d, got %d" % (limit, num_docs))
    for name, values in (('documents_lengths', lengths), ('documents_counts', counts)):
        if values.size and (values.min() < 0 or values.max() > limit):
            loader.fail("'arrays.%s' must lie in 0..%d" % (name, limit))
    _check_shape(loader, 'documents_ids', ids, (int(np.sum(lengths, dtype=np.int64)),), 'i')
    _check_shape(loader, 'documents_counts', counts, ids.shape, 'i')
    if np.any((ids < 0) | (ids >= num_terms)):
        loader.fail("'arrays.documents_ids' holds word ids outside 0..%d" % (num_terms - 1))
    if cooc is not None and num_docs != cooc.num_docs + cooc.num_short:
        loader.fail("'documents' holds %d documents, 'cooccurrence' counts %d"
                    % (num_docs, cooc.num_docs + cooc.num_short))
    store = DocumentStore()
    store.add(np.asarray(lengths), np.asarray(ids), np.asarray(counts))
    return store._flush()


def load_portable(path, mmap=None, cls=None):
    """Load a model written by :func:`save_portable`; nothing in the files is executed.

    Parameters
    ----------
    path : str or os.PathLike
        The model directory.
    mmap : {None, 'r', 'r+', 'c'}
        Map the array files instead of reading them (as ``load(mmap='r')``).
    cls : type
        The model class, :class:`~gensim_anchor.AnchorModel` (whose ``load_portable`` passes
        itself: this module sits below the model and does not import it).

    Returns
    -------
    AnchorModel
        The model, checked in full: topics finite, non-negative, rows summing to 1; every shape
        consistent with ``num_topics`` and ``num_terms``.

    Raises
    ------
    FileNotFoundError
        If ``path``, its ``model.json`` or an array file listed there is missing.
    PortableFormatError
        (a ValueError) If a file is truncated, holds object arrays, wrong types, missing keys or
        inconsistent shapes or values, names a file outside the directory, or was written in a
        newer format version. The message names the file and the key.
    """
    if cls is None:
        raise TypeError("load_portable needs the model class: call AnchorModel.load_portable(path)")
    if mmap not in (None, 'r', 'r+', 'c'):
        raise ValueError("mmap must be None, 'r', 'r+' or 'c', got %r" % (mmap,))
    loader = _Loader(path, mmap)
    doc = loader.read_json()
    fmt = loader.get(doc, 'format', '', 'str')
    if fmt != FORMAT_NAME:
        loader.fail("'format' must be %r, got %r" % (FORMAT_NAME, fmt))
    version = loader.get(doc, 'format_version', '', 'int')
    if version > PORTABLE_VERSION or version < 1:
        loader.fail("was written in portable format version %d, which this version of gensim_anchor "
                    "(portable format %d) cannot read%s" % (version, PORTABLE_VERSION,
                                                            "; upgrade gensim_anchor" if version > 1 else ""))
    name = loader.get(doc, 'class', '', 'str')
    if name != cls.__name__:
        loader.fail("holds a %s, not an %s" % (name, cls.__name__))
    options = loader.get(doc, 'options', '', 'dict')
    state = loader.get(doc, 'state', '', 'dict')
    arrays = loader.get(doc, 'arrays', '', 'dict')

    o = {}
    K = o['num_topics'] = loader.check('options.num_topics', check.check_int, 'num_topics',
                                       loader.get(options, 'num_topics', 'options', 'int'), minimum=2)
    V = o['num_terms'] = loader.check('options.num_terms', check.check_int, 'num_terms',
                                      loader.get(options, 'num_terms', 'options', 'int'), minimum=K)
    for key, minimum in (('chunksize', 1), ('max_iter', 1), ('rectify_max_iter', 1),
                         ('iterations', 1), ('alpha_sample', 1)):
        o[key] = loader.check('options.' + key, check.check_int, key,
                              loader.get(options, key, 'options', 'int'), minimum=minimum)
    o['projection_seed'] = loader.check('options.projection_seed', check.check_int, 'projection_seed',
                                        loader.get(options, 'projection_seed', 'options', 'int'), minimum=0)
    o['projection_dim'] = loader.check('options.projection_dim', check.check_int, 'projection_dim',
                                       loader.get(options, 'projection_dim', 'options', 'int', 'null'),
                                       minimum=0, allow_none=True)
    from ._defaults import LOSSES, Q_MODES
    o['loss'] = loader.check('options.loss', check.check_option, 'loss',
                             loader.get(options, 'loss', 'options', 'str'), LOSSES)
    o['q_mode'] = loader.check('options.q_mode', check.check_option, 'q_mode',
                               loader.get(options, 'q_mode', 'options', 'str'), Q_MODES)
    o['eps'] = loader.check('options.eps', check.check_positive_float, 'eps',
                            loader.get(options, 'eps', 'options', 'float', 'null'), allow_none=True)
    o['gamma_threshold'] = loader.check('options.gamma_threshold', check.check_positive_float,
                                        'gamma_threshold',
                                        loader.get(options, 'gamma_threshold', 'options', 'float'))
    for key in ('minimum_probability', 'minimum_phi_value'):
        o[key] = loader.check('options.' + key, check.check_positive_float, key,
                              loader.get(options, key, 'options', 'float'), allow_zero=True)
    for key in ('cleanup', 'per_word_topics'):
        o[key] = loader.get(options, key, 'options', 'bool')
    from ._defaults import RECTIFY_METHODS
    # False, or the method's name ('enn', 'ap'); True from a file of the first portable version
    # meant the dense alternating projection, the only method then.
    rectify = loader.get(options, 'rectify', 'options', 'bool', 'str')
    o['rectify'] = 'ap' if rectify is True else loader.check(
        'options.rectify', check.check_rectify, rectify, RECTIFY_METHODS)
    o['progress'] = loader.get(options, 'progress', 'options', 'bool', 'null')
    o['anchor_min_df'] = loader.check('options.anchor_min_df', check.check_min_df,
                                      loader.get(options, 'anchor_min_df', 'options', 'int', 'float', 'null'))
    dtype = loader.get(options, 'dtype', 'options', 'str')
    if dtype not in ('float16', 'float32', 'float64'):
        loader.fail("'options.dtype' must be 'float16', 'float32' or 'float64', got %r" % dtype)
    o['dtype'] = np.dtype(dtype)
    seeds = loader.get(options, 'seed_anchors', 'options', 'list', 'null')
    if seeds is not None and not all(
            isinstance(s, list) and s and all(isinstance(w, str) or _KINDS['int'](w) for w in s)
            for s in seeds):
        loader.fail("'options.seed_anchors' must be a list of non-empty lists of words (str or int)")
    o['seed_anchors'] = seeds  # checked as the constructor checks it, once id2word is read
    o['alpha_arg'] = _decode_prior(loader, options, 'alpha_arg', arrays)
    o['eta_arg'] = _decode_prior(loader, options, 'eta_arg', arrays)
    o['alpha_arg'] = loader.check('options.alpha_arg', check.check_prior, 'alpha', o['alpha_arg'], K,
                                  ('auto', 'symmetric', 'asymmetric'))
    o['eta_arg'] = loader.check('options.eta_arg', check.check_prior, 'eta', o['eta_arg'], V,
                                ('auto', 'symmetric'), topics=K)
    o['refine_method'] = loader.get(options, 'refine_method', 'options', 'str', 'null') \
        if 'refine_method' in options else None
    if o['refine_method'] is not None:
        from ._defaults import REFINE_METHODS
        loader.check('options.refine_method', check.check_option, 'refine', o['refine_method'],
                     REFINE_METHODS)
    refine_options = loader.get(options, 'refine_options', 'options', 'dict', 'null') \
        if 'refine_options' in options else None
    if (refine_options is None) != (o['refine_method'] is None):
        loader.fail("'options.refine_options' must be given exactly when 'options.refine_method' is")
    if refine_options is not None:
        if not all(_jsonable(v) and not isinstance(v, (list, dict)) for v in refine_options.values()):
            loader.fail("'options.refine_options' must map names to numbers, strings, booleans or null")
        refine_options = loader.check('options.refine_options', check.check_refine_options,
                                      o['refine_method'], refine_options)
    o['refine_options'] = refine_options
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        loader.fail("unknown keys in 'options': %s" % ", ".join(unknown))

    # State.
    s = {}
    for key in ('num_docs', 'num_tokens'):
        s[key] = loader.get(state, key, 'state', 'int')
        if s[key] < 1:
            loader.fail("%r must be >= 1 for a trained model, got %d" % ('state.' + key, s[key]))
    groups = loader.get(state, 'anchor_groups', 'state', 'list')
    if len(groups) != K or not all(
            isinstance(g, list) and g and all(_KINDS['int'](i) and 0 <= i < V for i in g) for g in groups):
        loader.fail("'state.anchor_groups' must be %d non-empty lists of word ids in 0..%d" % (K, V - 1))
    timings = loader.get(state, 'timings', 'state', 'dict')
    if not all(_KINDS['float'](v) for v in timings.values()):
        loader.fail("'state.timings' must map stages to seconds")
    refinement = loader.get(state, 'refinement', 'state', 'dict', 'null')
    if refinement is not None:
        loader.get(refinement, 'method', 'state.refinement', 'str')
    events = loader.get(state, 'lifecycle_events', 'state', 'list')
    if not all(isinstance(e, dict) for e in events):
        loader.fail("'state.lifecycle_events' must be a list of objects")

    id2word = _decode_id2word(loader, loader.get(doc, 'id2word', '', 'dict'), V)
    o['seed_anchors'] = loader.check('options.seed_anchors', check.check_seeds, seeds, K, id2word,
                                     o['loss'])
    loader.check('state.anchor_groups', check.check_groups_loss, o['loss'], groups)
    random_state = _decode_random_state(loader, loader.get(doc, 'random_state', '', 'dict'),
                                        loader.array(arrays, 'random_state_key'))

    # Arrays, each against the options and the others.
    topics = loader.array(arrays, 'topics')
    if topics.dtype != o['dtype']:
        loader.fail("'arrays.topics' has dtype %s, but 'options.dtype' is %s" % (topics.dtype, dtype))
    _check_distributions(loader, 'topics', topics, K, V)
    alpha = loader.array(arrays, 'alpha')
    _check_positive(loader, 'alpha', alpha, [(K,)])
    eta = loader.array(arrays, 'eta')
    _check_positive(loader, 'eta', eta, [(V,), (K, V)])
    R = loader.array(arrays, 'R')
    _check_shape(loader, 'R', R, (K, K), 'f')
    p_z = loader.array(arrays, 'p_z')
    _check_shape(loader, 'p_z', p_z, (K,), 'f')
    if np.any(p_z < 0) or abs(float(np.sum(p_z)) - 1.0) > 1e-6:  # show_topics and refine() weigh by it
        loader.fail("'arrays.p_z' must be a distribution over the topics (>= 0, summing to 1), got %s"
                    % _short(p_z.tolist()))
    anchors = loader.array(arrays, 'anchors')
    _check_shape(loader, 'anchors', anchors, (K,), 'i')
    if np.any((anchors < -1) | (anchors >= V)):
        loader.fail("'arrays.anchors' holds word ids outside -1..%d" % (V - 1))
    expected = [g[0] if len(g) == 1 else -1 for g in groups]
    if anchors.tolist() != expected:
        loader.fail("'arrays.anchors' disagrees with 'state.anchor_groups'")
    solver = [loader.array(arrays, 'solver_' + k, required=False) for k in ('n_iter', 'gap', 'converged')]
    if any(a is not None for a in solver):
        if any(a is None for a in solver):
            loader.fail("'arrays' must list all of solver_n_iter, solver_gap, solver_converged or none")
        for key, a, kind in zip(('n_iter', 'gap', 'converged'), solver, ('i', 'f', 'b')):
            _check_shape(loader, 'solver_' + key, a, (V,), kind)

    cooc_spec = loader.get(doc, 'cooccurrence', '', 'dict', 'null')
    cooc = None if cooc_spec is None else _decode_cooccurrence(loader, cooc_spec, arrays, V)
    if cooc is not None and (cooc.num_docs, cooc.num_tokens) != (s['num_docs'], s['num_tokens']):
        loader.fail("'cooccurrence' counts %d documents and %d tokens, 'state' %d and %d"
                    % (cooc.num_docs, cooc.num_tokens, s['num_docs'], s['num_tokens']))
    sample_spec = loader.get(doc, 'sample', '', 'dict', 'null')
    sample = None if sample_spec is None else _decode_sample(loader, sample_spec, arrays, V)
    documents_spec = loader.get(doc, 'documents', '', 'dict', 'null') if 'documents' in doc else None
    documents = None if documents_spec is None else _decode_documents(loader, documents_spec, arrays, V, cooc)

    # Everything checked: only now does the model exist.
    model = cls.__new__(cls)
    projection_seed = o.pop('projection_seed')
    vars(model).update(o)
    model.id2word = id2word
    model._client = model.callbacks = None
    model.random_state = random_state
    model._projection_seed = projection_seed
    model.format_version = _pickle_format_version()
    model.num_docs, model.num_tokens = s['num_docs'], s['num_tokens']
    model.anchors, model.anchor_groups = np.asarray(anchors, dtype=np.int64), groups
    model.topics, model.R, model.p_z, model.alpha, model.eta = topics, R, p_z, alpha, eta
    model.solver_n_iter, model.solver_gap, model.solver_converged = solver
    model.timings, model.refinement = timings, refinement
    model.lifecycle_events = events
    model._cooccurrence, model._sample, model._documents = cooc, sample, documents
    logger.info("loaded %s from %s (portable format %d)", model, loader.path, version)
    return model


def _pickle_format_version():
    from ._defaults import FORMAT_VERSION
    return FORMAT_VERSION
