"""Reliability (issue 6): bad inputs, persistence and numerics.

Bad inputs either raise an error whose message names the problem (the parameter, the document,
the value and what to change) or give a documented result. Checks already tested elsewhere are
not repeated here:

* ``tests/test_cooccurrence.py``: empty corpus, no two-token document, ids outside the
  dictionary, negative / NaN / fractional counts, duplicate ids (summed), non-bag-of-words
  documents, all at the level of :func:`build_cooccurrence`;
* ``tests/test_anchormodel.py``: num_topics=1 / 2.5, loss, eps, max_iter=0, q_mode,
  anchor_min_df, chunksize, no corpus and no id2word, too few candidates with an explicit
  anchor_min_df, a smaller Dictionary, short documents, plain and ``.gz`` round trips of the
  topics, a newer format version, another object's file, update after load;
* ``tests/test_dropin.py``: empty documents and unknown word ids at inference time;
* ``tests/test_anchors.py``: candidates that span fewer than K directions.
"""
import copy
import logging
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from gensim.corpora import Dictionary
from gensim.test.utils import common_texts
from gensim.utils import SaveLoad

from gensim_anchor import AnchorModel
from gensim_anchor.anchormodel import FORMAT_VERSION
from gensim_anchor.cooccurrence import Cooccurrence, build_cooccurrence

from conftest import lda_corpus, separable_topics

#: Fixed prior: these tests are about the pipeline's inputs, not the alpha fit (which compiles
#: the likelihood estimator); tests that need alpha='auto' say so. Most models here have V = 12
#: and every word a candidate, shapes that test_properties.py compiles too.
FIXED = dict(alpha='symmetric', random_state=0)
V_SYN, K_SYN = 12, 3


@pytest.fixture(scope='module')
def tiny():
    dictionary = Dictionary(common_texts)
    return dictionary, [dictionary.doc2bow(t) for t in common_texts]


@pytest.fixture(scope='module')
def synthetic():
    """200 LDA documents of 40 tokens over 12 words, 3 separable topics."""
    rng = np.random.default_rng(6)
    A, _ = separable_topics(rng, V_SYN, K_SYN, anchor_mass=0.2)
    corpus = lda_corpus(rng, A, 0.3, 200, 40)
    return {i: 'w%d' % i for i in range(V_SYN)}, corpus


@pytest.fixture(scope='module')
def model(synthetic):
    """alpha='auto', fitted on a sample of 32 documents."""
    id2word, corpus = synthetic
    return AnchorModel(corpus, num_topics=K_SYN, id2word=id2word, random_state=3, alpha_sample=32)


def _short(docs, n=8):
    """At most 8 documents of at most 8 distinct words: one compiled inference shape."""
    return [doc[:8] for doc in docs[:n]]


# ----------------------------------------------------------------------------------------------
# Bad corpora
# ----------------------------------------------------------------------------------------------

BAD_CORPORA = [
    # (name, corpus, error, message)
    ('empty', [], ValueError, r"^the corpus is empty: no documents were read$"),
    ('all shorter than two tokens', [[(0, 1)], [], [(3, 1.0)]], ValueError,
     r"^no document in the corpus has two or more tokens \(3 documents read, 2 tokens\): "
     r"co-occurrence needs at least one document with two tokens$"),
    ('word id outside id2word', [[(0, 1), (1, 2)], [(2, 1), (99, 1)]], ValueError,
     r"^document #1 has word id 99 outside the dictionary \(valid ids are 0\.\.11\); "
     r"was the corpus made with a different Dictionary\?$"),
    ('negative word id', [[(0, 1), (-1, 2)]], ValueError, r"^document #0 has word id -1 outside"),
    ('fractional word id', [[(0, 1), (1.5, 2)]], ValueError,
     r"^document #0 has word id 1\.5; word ids must be integers$"),
    ('negative count', [[(0, 2)], [(1, -1), (2, 3)]], ValueError,
     r"^document #1 has count -1 for word id 1; counts must be finite and >= 0$"),
    ('NaN count', [[(0, 2)], [(1, 1), (2, float('nan'))]], ValueError,
     r"^document #1 has count (np\.float64\()?nan\)? for word id 2; counts must be finite and >= 0$"),
    ('infinite count', [[(0, float('inf')), (2, 1)]], ValueError,
     r"^document #0 has count (np\.float64\()?inf\)? for word id 0; counts must be finite"),
    ('non-integer count (TF-IDF)', [[(0, 1), (1, 2)], [(3, 0.25), (4, 1)]], ValueError,
     r"^document #1 has non-integer count 0\.25 for word id 3; Q needs raw word counts "
     r"\(a TF-IDF or otherwise weighted corpus cannot be used\)$"),
    ('texts instead of bags of words', [['human', 'interface'], ['computer']], TypeError,
     r"^document #0 is not a bag-of-words list of \(word_id, count\) pairs \(it starts \['human', "
     r"'interface'\]\); convert texts with Dictionary\.doc2bow first$"),
    ('a file name', 'corpus.mm', TypeError,
     r"^corpus must be an iterable of bag-of-words documents, got str \(a file name\? load it "
     r"with a gensim corpus class such as MmCorpus\)$"),
    ('not iterable', 42, TypeError, r"^corpus must be an iterable of bag-of-words documents, got int$"),
    # scipy's own "sparse array length is ambiguous", and rows of dense counts taken for pairs
    ('sparse document-term matrix', sp.csr_matrix(np.eye(12)), TypeError,
     r"^corpus is a csr_matrix document-term matrix, not an iterable of bag-of-words documents: "
     r"wrap it with gensim\.matutils\.Sparse2Corpus\(X, documents_columns=False\)"),
    ('dense document-term matrix', np.eye(12), TypeError,
     r"^corpus is a ndarray document-term matrix, .* gensim\.matutils\.Dense2Corpus\(X, "
     r"documents_columns=False\) \(documents as rows\)$"),
]


@pytest.mark.parametrize('corpus, error, message', [c[1:] for c in BAD_CORPORA],
                         ids=[c[0] for c in BAD_CORPORA])
def test_bad_corpus_is_named(tiny, corpus, error, message):
    dictionary, _ = tiny
    with pytest.raises(error, match=message):
        AnchorModel(corpus, num_topics=2, id2word=dictionary, **FIXED)


def test_bad_corpus_from_a_generator_without_id2word():
    # the same checks on a one-shot stream, V inferred
    docs = ([(0, 1), (1, 1)] if i < 5 else [(2, float('nan')), (3, 1)] for i in range(10))
    with pytest.raises(ValueError, match=r"^document #5 has count (np\.float64\()?nan"):
        AnchorModel(docs, num_topics=2, **FIXED)


def test_empty_documents_mixed_in_are_skipped(tiny, caplog):
    dictionary, corpus = tiny
    noisy = [[], corpus[0], [], [(3, 1)]] + corpus[1:] + [[(5, 0)], []]
    with caplog.at_level(logging.INFO, logger='gensim_anchor'):
        model = AnchorModel(noisy, num_topics=2, id2word=dictionary, **FIXED)
    clean = AnchorModel(corpus, num_topics=2, id2word=dictionary, **FIXED)
    # common_texts has one one-token document of its own: 5 + 1 skipped
    assert "skipped 6 of %d documents with fewer than 2 tokens" % len(noisy) in caplog.text
    assert model.num_docs == clean.num_docs == 8
    np.testing.assert_array_equal(model.anchors, clean.anchors)
    np.testing.assert_allclose(model.get_topics(), clean.get_topics(), atol=1e-7)


def test_documents_that_are_one_shot_iterators(tiny):
    # The alpha sample kept the iterators that Q's pass then exhausted: "docs is empty".
    dictionary, corpus = tiny
    for stream in ((iter(doc) for doc in corpus), [(pair for pair in doc) for doc in corpus]):
        # alpha='auto' (the default): its grid scores the sampled documents
        model = AnchorModel(stream, num_topics=2, id2word=dictionary, random_state=0)
        clean = AnchorModel(corpus, num_topics=2, id2word=dictionary, random_state=0)
        np.testing.assert_array_equal(model.get_topics(), clean.get_topics())
        np.testing.assert_array_equal(model.alpha, clean.alpha)


def test_zero_counts_are_dropped(tiny):
    dictionary, corpus = tiny
    padded = [doc + [(11, 0)] for doc in corpus]  # word 11 listed everywhere with count 0
    model = AnchorModel(padded, num_topics=2, id2word=dictionary, **FIXED)
    clean = AnchorModel(corpus, num_topics=2, id2word=dictionary, **FIXED)
    np.testing.assert_array_equal(model.anchors, clean.anchors)
    np.testing.assert_allclose(model.get_topics(), clean.get_topics(), atol=1e-7)


def test_duplicate_ids_in_a_document_are_summed(synthetic):
    # training (Q is tested in test_cooccurrence) and inference
    id2word, corpus = synthetic
    split = [sum(([(w, 1)] * int(c) if c <= 3 else [(w, c - 1), (w, 1)] for w, c in doc), [])
             for doc in corpus]
    assert any(len(s) > len(d) for s, d in zip(split, corpus))
    model = AnchorModel(split, num_topics=K_SYN, id2word=id2word, **FIXED)
    summed = AnchorModel(corpus, num_topics=K_SYN, id2word=id2word, **FIXED)
    np.testing.assert_array_equal(model.anchors, summed.anchors)
    np.testing.assert_allclose(model.get_topics(), summed.get_topics(), atol=1e-7)
    doc = [(w, c) for w, c in corpus[0] if c > 1][:4]
    duplicated = [(w, 1) for w, _ in doc] + [(w, c - 1) for w, c in doc]
    theta = dict(summed.get_document_topics(duplicated, minimum_probability=0))
    expected = dict(summed.get_document_topics(doc, minimum_probability=0))
    np.testing.assert_allclose([theta[k] for k in range(K_SYN)], [expected[k] for k in range(K_SYN)],
                               rtol=1e-9)


# ----------------------------------------------------------------------------------------------
# num_topics and the vocabulary
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize('num_topics, error, message', [
    (0, ValueError, r"^num_topics must be >= 2, got 0$"),
    (-3, ValueError, r"^num_topics must be >= 2, got -3$"),
    (True, TypeError, r"^num_topics must be an integer, got True \(bool\)$"),
    ('5', TypeError, r"^num_topics must be an integer, got '5' \(str\)$"),
])
def test_num_topics_below_two_or_not_an_integer(tiny, num_topics, error, message):
    dictionary, corpus = tiny
    with pytest.raises(error, match=message):
        AnchorModel(corpus, num_topics=num_topics, id2word=dictionary, **FIXED)


def test_numpy_integer_num_topics_is_accepted(tiny):
    dictionary, corpus = tiny
    model = AnchorModel(corpus, num_topics=np.int64(2), id2word=dictionary, **FIXED)
    assert model.num_topics == 2 and type(model.num_topics) is int


def test_num_topics_larger_than_the_vocabulary_fails_before_reading(tiny):
    dictionary, _ = tiny

    def corpus():
        raise AssertionError("the corpus was read")
        yield

    with pytest.raises(ValueError, match=r"^num_topics=13 is larger than the vocabulary \(12 words\): "
                                         r"each topic needs its own anchor word$"):
        AnchorModel(corpus(), num_topics=13, id2word=dictionary, **FIXED)


@pytest.mark.parametrize('id2word', [{0: 'only'}, None])
def test_vocabulary_of_one_word(id2word):
    corpus = [[(0, 3)], [(0, 2)]]
    with pytest.raises(ValueError, match=r"^num_topics=2 is larger than the vocabulary \(1 word\)"):
        AnchorModel(corpus, num_topics=2, id2word=id2word, **FIXED)


def test_more_topics_than_candidates_under_the_default_min_df():
    # 100 documents: words 0..3 in every one, words 4..11 in one document each. The default
    # anchor_min_df is 5 documents (5%), so there are 4 candidates.
    corpus = [[(0, 1), (1, 1), (2, 2), (3, 1)] + ([(4 + d, 1)] if d < 8 else []) for d in range(100)]
    with pytest.raises(ValueError, match=(
            r"^only 4 words occur in at least anchor_min_df=5 documents \(the default: 5% of the 100 "
            r"documents, at most 100\) \(and in a document of two or more tokens\), fewer than "
            r"num_topics=5: lower anchor_min_df or num_topics$")):
        AnchorModel(corpus, num_topics=5, **FIXED)
    # the advice works
    model = AnchorModel(corpus, num_topics=5, anchor_min_df=1, **FIXED)
    assert len(set(model.anchors.tolist())) == 5


def test_words_that_never_occur_get_probability_zero(tiny):
    # Zero rows of Q: a Dictionary with words the corpus never uses, and a word that occurs
    # only in a one-token document (p(w) = 0 too). Documented in recovery.recover.
    dictionary, corpus = tiny
    larger = Dictionary(common_texts + [['never'], ['alone']])
    never, alone = larger.token2id['never'], larger.token2id['alone']
    model = AnchorModel(corpus + [[(alone, 1)]], num_topics=2, id2word=larger, **FIXED)
    topics = model.get_topics()
    assert topics.shape == (2, len(larger))
    assert np.all(topics[:, [never, alone]] == 0)
    np.testing.assert_allclose(topics.sum(axis=1), 1.0, atol=1e-6)
    assert not set(model.anchors.tolist()) & {never, alone}
    theta = [p for _, p in model.get_document_topics([(never, 3), (alone, 1)], minimum_probability=0)]
    assert np.all(np.isfinite(theta)) and abs(sum(theta) - 1) < 1e-6


# ----------------------------------------------------------------------------------------------
# id2word
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize('make_id2word, error, message', [
    (lambda d: list(d.values()), TypeError,
     r"^id2word must be a gensim Dictionary or a dict \{word_id: word\}, got list$"),
    (lambda d: {}, ValueError, r"^id2word is empty: the vocabulary must hold at least one word$"),
    (lambda d: d.token2id, TypeError,
     r"^id2word must map integer word ids to words; got keys such as 'computer' "
     r"\(pass dictionary\.id2token or the Dictionary itself, not token2id\)$"),
    (lambda d: {0: d[0], 11: d[11]}, ValueError,  # ids 1..10 of the corpus are missing
     r"^10 word ids of the corpus have no entry in id2word \(e\.g\. 1, 2, 3, 4, 5\); "
     r"was the corpus made with a different Dictionary\?$"),
], ids=['list', 'empty', 'token2id', 'gaps'])
def test_bad_id2word(tiny, make_id2word, error, message):
    dictionary, corpus = tiny
    id2word = make_id2word(dictionary)
    with pytest.raises(error, match=message):
        AnchorModel(corpus, num_topics=2, id2word=id2word, **FIXED)


def test_id2word_with_a_gap_that_the_corpus_does_not_use(tiny):
    # A plain dict without id 5: accepted, as LdaModel does, while no document uses id 5; the
    # word gets probability 0 (show_topic would fail on it, as LdaModel's, only if asked for
    # more words than have a probability > 0).
    dictionary, corpus = tiny
    gapped = {i: w for i, w in dictionary.items() if i != 5}
    corpus = [[(w, c) for w, c in doc if w != 5] for doc in corpus]
    model = AnchorModel(corpus, num_topics=2, id2word=gapped, **FIXED)
    assert model.num_terms == len(dictionary)
    assert 5 not in model.anchors and np.all(model.get_topics()[:, 5] == 0)
    assert len(model.show_topics(num_words=5)) == 2


# ----------------------------------------------------------------------------------------------
# Arguments: type and value errors name the parameter and the value
# ----------------------------------------------------------------------------------------------

BAD_ARGUMENTS = [
    (dict(loss='l2'), ValueError, r"^loss must be one of 'L2', 'KL', 'original', got 'l2'$"),
    (dict(loss=None), ValueError, r"^loss must be one of .*, got None$"),
    (dict(eps='1e-5'), TypeError, r"^eps must be a number > 0, got '1e-5' \(str\)$"),
    (dict(eps=0.0), ValueError, r"^eps must be a finite number > 0, got 0\.0$"),
    (dict(eps=float('inf')), ValueError, r"^eps must be a finite number > 0, got inf$"),
    (dict(eps=True), TypeError, r"^eps must be a number > 0, got True \(bool\)$"),
    (dict(max_iter=10.0), TypeError, r"^max_iter must be an integer, got 10\.0 \(float\)$"),
    (dict(max_iter=None), TypeError, r"^max_iter must be an integer, got None \(NoneType\)$"),
    (dict(max_iter=-5), ValueError, r"^max_iter must be >= 1, got -5$"),
    (dict(iterations=0), ValueError, r"^iterations must be >= 1, got 0$"),
    (dict(iterations=2.5), TypeError, r"^iterations must be an integer, got 2\.5 \(float\)$"),
    (dict(gamma_threshold=-1e-3), ValueError,
     r"^gamma_threshold must be a finite number > 0, got -0\.001$"),
    (dict(projection_dim=-1), ValueError, r"^projection_dim must be >= 0, got -1$"),
    (dict(projection_dim=100.0), TypeError, r"^projection_dim must be an integer, got 100\.0 \(float\)$"),
    (dict(alpha_sample=0), ValueError, r"^alpha_sample must be >= 1, got 0$"),
    (dict(chunksize=1.5), TypeError, r"^chunksize must be an integer, got 1\.5 \(float\)$"),
    (dict(dtype=np.int32), TypeError, r"^dtype must be a floating-point type such as numpy\.float32 or "
                                      r"numpy\.float64, got <class 'numpy\.int32'>$"),
    (dict(dtype='float'), None, None),  # numpy's name for float64: accepted
    (dict(dtype='fast'), TypeError, r"^dtype must be a floating-point type .*, got 'fast'$"),
    (dict(minimum_probability=-0.1), ValueError,
     r"^minimum_probability must be a finite number >= 0, got -0\.1$"),
    (dict(minimum_phi_value='x'), TypeError, r"^minimum_phi_value must be a number >= 0, got 'x' \(str\)$"),
    (dict(alpha='uniform'), ValueError, r"^alpha must be one of 'auto', 'symmetric', 'asymmetric', a positive "
                                        r"number or an array of positive numbers, got 'uniform'$"),
    (dict(alpha=[0.5, -0.5]), ValueError,
     r"^alpha must contain only finite numbers > 0, got \[0\.5, -0\.5\]$"),
    (dict(alpha=[0.5, 0.5, 0.5]), ValueError, r"^alpha must have shape \(2,\), got \(3,\)$"),
    (dict(eta=np.zeros(12)), ValueError, r"^eta must contain only finite numbers > 0"),
]


@pytest.mark.parametrize('kwargs, error, message', BAD_ARGUMENTS,
                         ids=['%s=%r' % next(iter(k.items())) for k, _, _ in BAD_ARGUMENTS])
def test_bad_arguments_are_named_before_the_corpus_is_read(tiny, kwargs, error, message):
    dictionary, corpus = tiny
    if error is None:
        assert AnchorModel(id2word=dictionary, num_topics=2, **kwargs).dtype == np.float64
        return

    def unread():
        raise AssertionError("the corpus was read before the arguments were checked")
        yield

    with pytest.raises(error, match=message):
        AnchorModel(unread(), id2word=dictionary, **{'num_topics': 2, 'random_state': 0, **kwargs})


# ----------------------------------------------------------------------------------------------
# Inference-time inputs
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize('doc, error, message', [
    ([(0, 1), (1, float('nan'))], ValueError, r"^document #0 has count nan for word id 1; counts must be "
                                              r"finite and >= 0$"),
    ([(0, -2)], ValueError, r"^document #0 has count -2 for word id 0; counts must be finite and >= 0$"),
    ([(0.5, 1)], ValueError, r"^document #0 has word id 0\.5; word ids must be integers$"),
    (['human', 'computer'], TypeError, r"^document #0 is not a bag-of-words list of \(word_id, count\) "
                                       r"pairs \(it starts \['human', 'computer'\]\); convert texts with "
                                       r"Dictionary\.doc2bow first$"),
    ([(0, 1, 2)], TypeError, r"^document #0 is not a bag-of-words list"),
])
def test_bad_documents_at_inference_time(model, doc, error, message):
    with pytest.raises(error, match=message):
        model.get_document_topics(doc)


def test_bad_document_in_a_corpus_is_numbered(model, synthetic):
    _, corpus = synthetic
    chunk = _short(corpus[:4]) + [[(1, -1)]] + _short(corpus[4:7])
    with pytest.raises(ValueError, match=r"^document #4 has count -1 for word id 1"):
        model.inference(chunk)


def test_negative_ids_at_inference_are_unknown_words(model, synthetic):
    # Unknown ids (>= V, tested in test_dropin) and negative ids are both ignored: LdaModel
    # would index from the end for a negative id; here it is simply not a word of the model.
    _, corpus = synthetic
    doc = corpus[0]
    assert model.get_document_topics(doc + [(-1, 3), (-50, 1)], minimum_probability=0) == \
        model.get_document_topics(doc, minimum_probability=0)


# ----------------------------------------------------------------------------------------------
# Nothing hangs: every iterative solver has a cap and reports it
# ----------------------------------------------------------------------------------------------

def test_recovery_iteration_cap_is_reported(synthetic, caplog):
    # (eg_solve itself, for both losses, is tested with max_iter=1 in test_recovery)
    id2word, corpus = synthetic
    with caplog.at_level(logging.WARNING, logger='gensim_anchor'):
        model = AnchorModel(corpus, num_topics=K_SYN, id2word=id2word, max_iter=2, eps=1e-12, **FIXED)
    capped = int((~model.solver_converged).sum())
    assert capped > 0 and model.solver_n_iter.max() <= 2
    assert "%d of %d words stopped before the duality gap fell below eps=1e-12 (max_iter=2" \
        % (capped, V_SYN - K_SYN) in caplog.text
    np.testing.assert_allclose(model.get_topics().sum(axis=1), 1.0, atol=1e-6)


def test_inference_iteration_cap_is_reported(model, synthetic, caplog):
    _, corpus = synthetic
    capped = copy.copy(model)
    capped.iterations, capped.gamma_threshold = 1, 1e-12
    with caplog.at_level(logging.DEBUG, logger='gensim_anchor'):
        gamma, _ = capped.inference(_short(corpus))
    assert "8 of 8 documents stopped at the iteration cap (1) before gamma changed by less than 1e-12" \
        in caplog.text
    assert np.all(np.isfinite(gamma)) and np.all(gamma > 0)


# ----------------------------------------------------------------------------------------------
# A failed update leaves the model as it was
# ----------------------------------------------------------------------------------------------

def test_failed_update_leaves_no_trace(synthetic):
    # alpha='auto' fits alpha on a sample of the documents read; a corpus rejected at document
    # #120 must not leave its first 120 documents in that sample (they were: the next update
    # then failed with "cannot convert float NaN to integer").
    id2word, corpus = synthetic
    bad = corpus[:120] + [[(0, float('nan')), (1, 1)]] + corpus[120:]
    model = AnchorModel(id2word=id2word, num_topics=K_SYN, random_state=3, alpha_sample=32)
    with pytest.raises(ValueError, match="document #120 has count nan"):
        model.update(bad)
    with pytest.raises(RuntimeError, match="not been trained"):
        model.get_topics()
    model.update(corpus)
    fresh = AnchorModel(corpus, num_topics=K_SYN, id2word=id2word, random_state=3, alpha_sample=32)
    np.testing.assert_array_equal(model.anchors, fresh.anchors)
    np.testing.assert_array_equal(model.get_topics(), fresh.get_topics())
    np.testing.assert_array_equal(model.alpha, fresh.alpha)
    # and on a trained model: nothing changes, the next update is as if the bad one never was
    with pytest.raises(ValueError, match="document #120 has count nan"):
        model.update(bad)
    np.testing.assert_array_equal(model.get_topics(), fresh.get_topics())
    assert model.num_docs == fresh.num_docs == len(corpus)


# ----------------------------------------------------------------------------------------------
# Persistence
# ----------------------------------------------------------------------------------------------

def _assert_same_state(loaded, model):
    """Every attribute equal, arrays bit for bit with the same dtype (Q and the sample, saved
    only on request, are compared where they are)."""
    assert set(vars(loaded)) == set(vars(model)), set(vars(loaded)) ^ set(vars(model))
    for name, value in vars(model).items():
        other = getattr(loaded, name)
        if name in ('_cooccurrence', '_sample'):
            continue
        if isinstance(value, np.ndarray):
            assert other.dtype == value.dtype and other.shape == value.shape, name
            assert np.array_equal(np.asarray(other), value, equal_nan=value.dtype.kind == 'f'), name
        elif isinstance(value, np.random.RandomState):
            a, b = value.get_state(), other.get_state()
            assert a[0] == b[0] and np.array_equal(a[1], b[1]) and a[2:] == b[2:], name
        elif name == 'id2word':
            assert dict(other.items()) == dict(value.items())
        elif name != 'lifecycle_events':
            assert other == value, name


@pytest.mark.parametrize('suffix, save_kwargs, load_kwargs', [
    ('', {}, {}),
    ('.gz', {}, {}),
    ('.bz2', {}, {}),
    ('', dict(sep_limit=0), dict(mmap='r')),
    ('', dict(sep_limit=0), {}),
])
def test_round_trip_is_bit_exact(model, tmp_path, suffix, save_kwargs, load_kwargs):
    fname = str(tmp_path / ('anchor.model' + suffix))
    model.save(fname, **save_kwargs)
    loaded = AnchorModel.load(fname, **load_kwargs)
    assert loaded.format_version == FORMAT_VERSION
    _assert_same_state(loaded, model)
    if load_kwargs.get('mmap'):
        assert isinstance(loaded.topics, np.memmap)
    # derived outputs too: the same topics shown and the same document topics
    assert loaded.show_topics(-1, formatted=True) == model.show_topics(-1, formatted=True)
    doc = [(0, 2), (5, 1), (11, 3)]
    assert loaded.get_document_topics(doc, minimum_probability=0) == \
        model.get_document_topics(doc, minimum_probability=0)


def test_round_trip_with_cooccurrence_is_bit_exact(model, tmp_path):
    fname = str(tmp_path / 'anchor.model')
    model.save(fname, save_cooccurrence=True)
    loaded = AnchorModel.load(fname, mmap='r')
    _assert_same_state(loaded, model)
    a, b = model._cooccurrence, loaded._cooccurrence
    for field in Cooccurrence._fields:
        x, y = getattr(a, field), getattr(b, field)
        if sp.issparse(x):
            assert (x != y).nnz == 0 and x.dtype == y.dtype
        elif isinstance(x, np.ndarray):
            assert np.array_equal(x, y) and x.dtype == y.dtype
        else:
            assert x == y
    assert loaded._sample.docs == model._sample.docs


def test_saved_model_loads_and_shows_topics_without_jax(model, tmp_path):
    # JAX is blocked by a meta-path hook: importing it, or anything under it, raises. Plain,
    # compressed and memory-mapped files are all loaded with AnchorModel.load.
    files = []
    for suffix, kwargs in (('', {}), ('.gz', {}), ('.mmap', dict(sep_limit=0))):
        fname = str(tmp_path / ('anchor' + suffix))
        model.save(fname, **kwargs)
        files.append((fname, 'r' if suffix == '.mmap' else None))
    expected = model.show_topics(-1, num_words=5, formatted=True)
    code = "\n".join([
        "import sys",
        "class Block:",
        "    def find_spec(self, name, path=None, target=None):",
        "        if name.split('.')[0] in ('jax', 'jaxlib'):",
        "            raise ImportError('JAX is blocked in this test: ' + name)",
        "sys.meta_path.insert(0, Block())",
        "from gensim_anchor import AnchorModel",
        "for fname, mmap in %r:" % (files,),
        "    m = AnchorModel.load(fname, mmap=mmap)",
        "    assert m.get_topics().shape == (%d, %d)" % (K_SYN, V_SYN),
        "    print(repr(m.show_topics(-1, num_words=5, formatted=True)))",
        "    print(m.anchor_words, len(m.get_term_topics('w0', minimum_probability=0)))",
        "print(sorted(n for n in sys.modules if n.split('.')[0] in ('jax', 'jaxlib')))",
    ])
    env = dict(os.environ, JAX_PLATFORMS='cpu')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[-1] == '[]'
    assert lines[:-1] == [repr(expected), "%s %d" % (model.anchor_words, K_SYN)] * 3


def _write_saved_model(model, tmp_path, name, **kwargs):
    fname = str(tmp_path / name)
    model.save(fname, **kwargs)
    return fname


def _truncate(path, keep=0.5):
    data = open(path, 'rb').read()
    with open(path, 'wb') as f:
        f.write(data[:int(len(data) * keep)])


def _flip_bytes(path):
    # The first byte too: flips that land only in an array's payload load without an error (a
    # pickle has no checksum), and where they land moved from run to run under pytest -n 2.
    data = bytearray(open(path, 'rb').read())
    for position in (0, len(data) // 3, len(data) // 2, 2 * len(data) // 3):
        data[position] ^= 0xFF
    with open(path, 'wb') as f:
        f.write(bytes(data))


CORRUPT = r"cannot be read as an AnchorModel: the file is corrupted or truncated, or is not a model " \
          r"saved with AnchorModel\.save \(%s"


@pytest.mark.parametrize('damage, load_kwargs, message', [
    ('truncated', {}, CORRUPT % 'UnpicklingError: pickle data was truncated'),
    ('empty', {}, CORRUPT % 'EOFError'),
    ('bytes flipped', {}, CORRUPT % ''),
    ('truncated .gz', {}, CORRUPT % 'EOFError: Compressed file ended'),
    ('not gzip', {}, CORRUPT % 'BadGzipFile'),
    ('text file', {}, CORRUPT % 'UnpicklingError'),
    ('another pickle', {}, CORRUPT % "AttributeError: 'dict' object has no attribute"),
    ('truncated array', {}, CORRUPT % 'ValueError: Failed to read all data'),
    ('truncated array', dict(mmap='r'), CORRUPT % 'ValueError: mmap length is greater than file size'),
])
def test_damaged_file_gives_a_clear_error(model, tmp_path, damage, load_kwargs, message):
    import pickle
    if damage in ('truncated', 'empty', 'bytes flipped'):
        fname = _write_saved_model(model, tmp_path, 'm')
        _truncate(fname, keep=0.0) if damage == 'empty' else \
            _flip_bytes(fname) if damage == 'bytes flipped' else _truncate(fname)
    elif damage == 'truncated .gz':
        fname = _write_saved_model(model, tmp_path, 'm.gz')
        _truncate(fname)
    elif damage == 'not gzip':
        fname = str(tmp_path / 'm.gz')
        pickle.dump(model.topics, open(fname, 'wb'))
    elif damage == 'text file':
        fname = str(tmp_path / 'm.txt')
        with open(fname, 'w') as f:
            f.write("this is not a model\n" * 20)
    elif damage == 'another pickle':
        fname = str(tmp_path / 'm.pkl')
        pickle.dump({'topics': model.topics}, open(fname, 'wb'))
    else:
        fname = _write_saved_model(model, tmp_path, 'm', sep_limit=0)
        _truncate(fname + '.topics.npy', keep=0.9)
    with pytest.raises(ValueError, match=message):
        AnchorModel.load(fname, **load_kwargs)


def test_missing_array_file_is_named(model, tmp_path):
    fname = _write_saved_model(model, tmp_path, 'm', sep_limit=0)
    os.remove(fname + '.topics.npy')
    with pytest.raises(FileNotFoundError, match=r"m is incomplete: the array file .*m\.topics\.npy saved "
                                                r"beside it is missing \(copy all the files .*m\.\*\)"):
        AnchorModel.load(fname)
    with pytest.raises(FileNotFoundError):
        AnchorModel.load(str(tmp_path / 'absent'))


def test_model_without_format_version(model, tmp_path):
    # A newer version is tested in test_anchormodel; an object that never had one:
    fname = str(tmp_path / 'm')
    model.format_version, version = None, model.format_version
    try:
        SaveLoad.save(model, fname)
    finally:
        model.format_version = version
    with pytest.raises(ValueError, match=r"holds an AnchorModel without a format version; it was not "
                                         r"saved by AnchorModel\.save$"):
        AnchorModel.load(fname)


# ----------------------------------------------------------------------------------------------
# Numerics on a real corpus
# ----------------------------------------------------------------------------------------------

KOS_K = 20


@pytest.fixture(scope='module')
def kos(kos_corpus):
    return kos_corpus


def test_kos_fit_emits_no_warnings(kos):
    # Every warning, whoever emits it: numpy's RuntimeWarnings, JAX's dtype warnings, gensim's.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        model = AnchorModel(kos, num_topics=KOS_K, random_state=0)
    assert not caught, [(w.category.__name__, str(w.message), w.filename) for w in caught]
    # The solver's own report (a logged WARNING) may name a few words at the iteration cap.
    assert model.solver_converged.mean() > 0.99
    assert np.all(np.isfinite(model.get_topics())) and np.all(np.isfinite(model.alpha))


def test_kos_float32_projection_against_float64(kos):
    """anchors.project_rows computes the projection in float32; against the same Gaussian
    matrix applied in float64, the projected rows agree to ~1e-6 and give the same anchors."""
    from gensim_anchor.anchors import find_anchors, project_rows, resolve_min_df
    V = 1 + max(w for doc in kos for w, _ in doc)
    cooc = build_cooccurrence(kos, V)
    p_w = cooc.row_sums()
    candidates = np.flatnonzero((cooc.doc_freq >= resolve_min_df(None, cooc.num_docs)) & (p_w > 0))
    d, seed = 1000, 7
    Y32 = project_rows(cooc, p_w, candidates, d, seed)
    # The projection matrix itself: project the rows of the identity (Q = I, exact in float32).
    identity = Cooccurrence(V, 1, 0, 0, np.ones(V, np.int64), np.ones(V), np.zeros(V),
                            H_tilde=sp.identity(V, format='csr'))
    P = project_rows(identity, np.ones(V), np.arange(V), d, seed)
    Y64 = (cooc.rows(candidates) / p_w[candidates, None]) @ P
    error = np.linalg.norm(Y32 - Y64, axis=1) / np.linalg.norm(Y64, axis=1)
    assert error.max() < 1e-5, error.max()
    a32, a64 = (find_anchors(Y, KOS_K).indices for Y in (Y32, Y64))
    np.testing.assert_array_equal(a32, a64)


def test_kos_stored_precision_and_exact_rows(kos):
    """Topics are stored in float32 by default: against dtype=float64 the anchors are the same
    and the topics agree to float32 rounding. Exact rows (projection_dim=None) instead of the
    1000-dimensional projection change a few anchors (the projection preserves distances only
    approximately, whatever the precision): most anchors are shared and the topics of the
    shared anchors stay close."""
    fast = AnchorModel(kos, num_topics=KOS_K, **FIXED)
    ref = AnchorModel(kos, num_topics=KOS_K, dtype=np.float64, **FIXED)
    exact = AnchorModel(kos, num_topics=KOS_K, dtype=np.float64, projection_dim=None, **FIXED)
    assert fast.get_topics().dtype == np.float32 and ref.get_topics().dtype == np.float64
    np.testing.assert_array_equal(fast.anchors, ref.anchors)
    np.testing.assert_allclose(fast.get_topics(), ref.get_topics(), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(fast.get_topics().sum(axis=1, dtype=np.float64), 1.0, atol=1e-6)
    shared = np.intersect1d(ref.anchors, exact.anchors)
    assert len(shared) >= 0.75 * KOS_K, (ref.anchors, exact.anchors)
    rows = lambda m: m.get_topics()[[int(np.flatnonzero(m.anchors == a)[0]) for a in shared]]
    l1 = np.abs(rows(ref) - rows(exact)).sum(axis=1)
    assert np.median(l1) < 0.2, l1
