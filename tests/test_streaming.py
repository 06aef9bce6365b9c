"""Streaming the corpus: q_mode='auto' (the rule and each of its choices), the progress bar and
the throughput logging, and update() in every mode."""
import io
import logging
import re

import numpy as np
import pytest

from conftest import lda_corpus, random_corpus, separable_topics
from gensim_anchor import AnchorModel
from gensim_anchor import cooccurrence as cooccurrence_module
from gensim_anchor._defaults import DENSE_Q_BUDGET, Q_COSTS
from gensim_anchor.cooccurrence import build_cooccurrence, choose_mode, doc_pairs


def synthetic(seed, num_terms, num_docs, doc_length, num_topics=4):
    rng = np.random.default_rng(seed)
    A, _ = separable_topics(rng, num_terms, num_topics)
    return lda_corpus(rng, A, 0.3, num_docs, doc_length)


@pytest.fixture(scope='module')
def small_vocabulary():
    """V = 40 and 600 documents of 30 tokens: nnz(H~) is several times V^2, so 'auto' is dense."""
    return synthetic(0, 40, 600, 30)


@pytest.fixture(scope='module')
def large_vocabulary():
    """V = 400 and 300 documents of 20 tokens: nnz(H~) is far below V^2, so 'auto' is implicit."""
    return synthetic(1, 400, 300, 20)


# ----------------------------------------------------------------------------------------------
# The rule
# ----------------------------------------------------------------------------------------------

def test_choose_mode_follows_corpus_size_document_length_and_budget():
    V = 2000

    def corpus_of(num_docs, u):  # (nnz, pairs) of num_docs documents of u distinct words
        return num_docs * u, num_docs * u * u

    short = [choose_mode(V, *corpus_of(m, 10)) for m in (10 ** 3, 10 ** 4, 10 ** 5, 10 ** 6)]
    assert short[0] == 'implicit' and short[-1] == 'dense'  # many short documents: dense pays
    assert short == sorted(short, key=['implicit', 'dense'].index)  # and stays dense
    # Long documents (200 distinct words): forming Q densely never pays back for one L2 fit...
    assert {choose_mode(V, *corpus_of(m, 200)) for m in (10 ** 2, 10 ** 4, 10 ** 6)} == {'implicit'}
    # ... but does for RecoverKL, which forms rows of Q for every word either way.
    assert choose_mode(V, *corpus_of(10 ** 4, 200), loss='KL') == 'dense'
    # More topics and projection columns make each product with Q count for more.
    nnz, pairs = corpus_of(5 * 10 ** 4, 30)
    assert choose_mode(V, nnz, pairs, num_topics=10, projection_dim=100) == 'implicit'
    assert choose_mode(V, nnz, pairs, num_topics=200, projection_dim=1500) == 'dense'
    # Q over the budget is never dense; a larger budget allows it.
    largest = int(np.sqrt(DENSE_Q_BUDGET / 8))
    assert choose_mode(largest + 1, *corpus_of(10 ** 8, 10)) == 'implicit'
    assert choose_mode(largest, *corpus_of(10 ** 8, 10)) == 'dense'
    assert choose_mode(largest + 1, *corpus_of(10 ** 8, 10), budget=8 * (largest + 1) ** 2) == 'dense'
    # The costs decide: free dense work makes dense win, free sparse products implicit.
    assert choose_mode(V, 10, 10, costs=dict(pair=0.0, entry=0.0, dense32=0.0, dense64=0.0)) == 'dense'
    assert choose_mode(V, *corpus_of(10 ** 8, 2), costs=dict(sparse32=0.0, sparse64=0.0)) == 'implicit'
    assert set(Q_COSTS) == {'sparse32', 'sparse64', 'dense32', 'dense64', 'pair', 'entry'}


def test_doc_pairs_counts_distinct_words_per_document():
    corpus = [[(0, 3.0), (1, 1.0)], [(2, 1.0)], [(0, 1.0), (1, 1.0), (2, 1.0)], []]
    cooc = build_cooccurrence(corpus, 3)
    assert doc_pairs(cooc.H_tilde) == 2 ** 2 + 3 ** 2  # short documents have no column
    assert doc_pairs(cooc.H_tilde.tocsr()) == 13  # any sparse format


@pytest.mark.parametrize('num_terms_given', [True, False])
def test_auto_picks_dense_for_a_small_vocabulary_and_gives_the_same_q(small_vocabulary, num_terms_given):
    V = 40
    reference = build_cooccurrence(small_vocabulary, V, mode='implicit')
    assert choose_mode(V, reference.H_tilde.nnz, doc_pairs(reference.H_tilde)) == 'dense'
    auto = build_cooccurrence(small_vocabulary, V if num_terms_given else None, mode='auto', chunksize=64)
    assert auto.mode == 'dense' and auto.H_tilde is None
    np.testing.assert_allclose(auto.to_dense(), reference.to_dense(), rtol=1e-12, atol=1e-18)
    np.testing.assert_allclose(auto.row_sums(), reference.row_sums(), rtol=1e-12, atol=1e-18)
    assert (auto.num_docs, auto.num_short, auto.num_tokens) == (
        reference.num_docs, reference.num_short, reference.num_tokens)


def test_auto_picks_implicit_for_a_large_vocabulary(large_vocabulary, caplog):
    with caplog.at_level(logging.INFO, logger='gensim_anchor.cooccurrence'):
        auto = build_cooccurrence(large_vocabulary, 400, mode='auto')
    assert auto.mode == 'implicit' and auto.Q_sum is None
    assert choose_mode(400, auto.H_tilde.nnz, doc_pairs(auto.H_tilde)) == 'implicit'
    assert any("q_mode='auto': Q kept implicit (V=400" in r.getMessage() for r in caplog.records)


def test_dense_accumulation_in_slabs_matches_one_product(monkeypatch):
    """Q_sum is added in row slabs; slabs of one row must give the same Q."""
    rng = np.random.default_rng(3)
    corpus = random_corpus(rng, 80, 25, short_fraction=0.1)
    whole = build_cooccurrence(corpus, 25, mode='dense')
    monkeypatch.setattr(cooccurrence_module, '_SLAB_ENTRIES', 1)
    monkeypatch.setattr(cooccurrence_module, '_DENSE_BLOCK_NNZ', 7)
    slabs = build_cooccurrence(corpus, 25, mode='dense', chunksize=9)
    late = build_cooccurrence(corpus, None, mode='dense', chunksize=9)  # formed from H~ at the end
    np.testing.assert_allclose(slabs.Q_sum, whole.Q_sum, rtol=1e-13, atol=1e-18)
    np.testing.assert_allclose(late.Q_sum, whole.Q_sum, rtol=1e-13, atol=1e-18)


def test_densify_keeps_q():
    rng = np.random.default_rng(4)
    corpus = random_corpus(rng, 60, 20)
    implicit = build_cooccurrence(corpus, 20, mode='implicit')
    dense = implicit.densify()
    assert dense.mode == 'dense' and dense.H_tilde is None
    assert dense.densify() is dense
    np.testing.assert_allclose(dense.to_dense(), implicit.to_dense(), rtol=1e-13, atol=1e-18)


# ----------------------------------------------------------------------------------------------
# AnchorModel(q_mode='auto')
# ----------------------------------------------------------------------------------------------

def fit(corpus, V, **kwargs):
    kwargs = dict(dict(num_topics=4, id2word={i: str(i) for i in range(V)}, random_state=0,
                       alpha='symmetric', projection_dim=None), **kwargs)
    return AnchorModel(corpus, **kwargs)


@pytest.mark.parametrize('which, V, expected', [('small_vocabulary', 40, 'dense'),
                                                ('large_vocabulary', 400, 'implicit')])
def test_anchor_model_auto_chooses_each_branch_with_the_same_topics(request, which, V, expected):
    corpus = request.getfixturevalue(which)
    auto = fit(corpus, V)
    assert auto.q_mode == 'auto'
    assert auto._cooccurrence.mode == expected
    other = fit(corpus, V, q_mode='implicit' if expected == 'dense' else 'dense')
    np.testing.assert_array_equal(auto.anchors, other.anchors)
    np.testing.assert_allclose(auto.get_topics(), other.get_topics(), atol=1e-6)


@pytest.mark.parametrize('q_mode', ['implicit', 'dense', 'auto'])
def test_update_equals_training_on_everything_in_every_mode(small_vocabulary, q_mode):
    whole = fit(small_vocabulary, 40, q_mode=q_mode)
    # 5 documents are too few for a dense Q to pay: the first fit is implicit; with the rest,
    # the merged statistics become dense.
    parts = fit(small_vocabulary[:5], 40, q_mode=q_mode)
    if q_mode == 'auto':
        assert parts._cooccurrence.mode == 'implicit'
    parts.update(small_vocabulary[5:])
    assert parts._cooccurrence.mode == whole._cooccurrence.mode == (
        'implicit' if q_mode == 'implicit' else 'dense')
    assert parts.num_docs == whole.num_docs
    np.testing.assert_array_equal(parts.anchors, whole.anchors)
    np.testing.assert_allclose(parts.get_topics(), whole.get_topics(), atol=1e-6)


@pytest.mark.parametrize('q_mode', ['implicit', 'dense', 'auto'])
def test_update_with_only_short_or_no_documents(small_vocabulary, q_mode, caplog):
    # A batch of documents shorter than two tokens carries no pair of Q; an empty one, nothing.
    # Neither is an error once the model has documents: the result is that of one fit on all.
    short = [[(3, 1.0)], [], [(7, 0.0), (8, 1.0)]]
    whole = fit(small_vocabulary[:5] + short + small_vocabulary[5:], 40, q_mode=q_mode)
    parts = fit(small_vocabulary[:5], 40, q_mode=q_mode)
    parts.update(short)
    assert (parts.num_docs, parts._cooccurrence.num_short) == (5, 3)
    timings, topics = parts.timings, parts.get_topics()
    with caplog.at_level(logging.WARNING, logger='gensim_anchor'):
        parts.update(iter([]))
    assert "update() called with an empty corpus: the model is unchanged" in caplog.text
    assert parts.timings is timings  # not refitted
    np.testing.assert_array_equal(parts.get_topics(), topics)
    parts.update(small_vocabulary[5:])
    assert parts.num_docs == whole.num_docs
    assert parts._cooccurrence.num_short == whole._cooccurrence.num_short == 3
    np.testing.assert_array_equal(parts._cooccurrence.doc_freq, whole._cooccurrence.doc_freq)
    np.testing.assert_array_equal(parts.anchors, whole.anchors)
    np.testing.assert_allclose(parts.get_topics(), whole.get_topics(), atol=1e-6)
    # A first fit still needs a document of two tokens.
    with pytest.raises(ValueError, match="no document in the corpus has two or more tokens"):
        fit(short, 40, q_mode=q_mode)


def test_update_after_the_dictionary_grew_says_the_vocabulary_is_fixed(small_vocabulary):
    from gensim.corpora import Dictionary
    texts = [['w%d' % i for i, n in doc for _ in range(int(n))] for doc in small_vocabulary]
    dictionary = Dictionary(texts[:300])
    model = AnchorModel([dictionary.doc2bow(t) for t in texts[:300]], num_topics=4,
                        id2word=dictionary, random_state=0)
    trained = len(dictionary)
    new = [text + ['neologism'] for text in texts[300:]]
    dictionary.add_documents(new)  # the model's own id2word grows
    with pytest.raises(ValueError, match=r"outside the dictionary .* id2word now has %d words, but this "
                       r"model was trained on %d: its vocabulary is fixed" % (trained + 1, trained)):
        model.update([dictionary.doc2bow(t) for t in new])
    # Without growth, an unknown id is the plain error (a corpus of another Dictionary).
    other = AnchorModel([dictionary.doc2bow(t) for t in texts[:300]], num_topics=4,
                        id2word=dict(dictionary.items()), random_state=0)
    assert other.num_terms == trained + 1
    with pytest.raises(ValueError, match=r"was the corpus made with a different Dictionary\?$"):
        other.update([[(trained + 1, 1), (0, 1)]])


# ----------------------------------------------------------------------------------------------
# Progress bar and throughput logging
# ----------------------------------------------------------------------------------------------

class _Terminal(io.StringIO):
    def isatty(self):
        return True


TINY = [[(0, 1.0), (1, 2.0)], [(1, 1.0), (2, 1.0)], [(0, 3.0)]] * 5


def test_progress_bar_on_request_only(capsys):
    build_cooccurrence(TINY, 3, progress=True, chunksize=4)
    shown = capsys.readouterr().err
    assert 'co-occurrence' in shown and '15' in shown and 'tokens/s' in shown
    build_cooccurrence(TINY, 3, progress=False)
    build_cooccurrence(TINY, 3)  # None: stderr is captured here, not a terminal
    assert capsys.readouterr().err == ''


def test_progress_none_shows_the_bar_on_a_terminal(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr('sys.stderr', terminal)
    build_cooccurrence(TINY, 3)
    assert 'co-occurrence' in terminal.getvalue()


def test_anchor_model_passes_progress_on(capsys):
    corpus = synthetic(2, 30, 60, 10)
    AnchorModel(corpus, num_topics=3, id2word={i: str(i) for i in range(30)}, alpha='symmetric',
                random_state=0, progress=True)
    assert 'co-occurrence' in capsys.readouterr().err
    with pytest.raises(TypeError, match=r"progress must be None .* True or False, got 'yes'"):
        AnchorModel(corpus, num_topics=3, progress='yes')
    with pytest.raises(TypeError, match=r"progress must be"):
        build_cooccurrence(corpus, progress=1)


def test_throughput_is_logged(monkeypatch, caplog):
    monkeypatch.setattr(cooccurrence_module, '_LOG_INTERVAL', 0.0)  # a line after every chunk
    with caplog.at_level(logging.INFO, logger='gensim_anchor.cooccurrence'):
        build_cooccurrence(TINY, 3, chunksize=4)
    messages = [r.getMessage() for r in caplog.records]
    running = [m for m in messages if 'tokens read' in m]
    assert len(running) == 4  # ceil(15 / 4) chunks
    tokens = int(sum(count for doc in TINY[:4] for _, count in doc))
    assert re.match(r"co-occurrence: 4 documents, %d tokens read \(\d+ documents/s, \d+ tokens/s\)"
                    % tokens, running[0]), running[0]
    final = [m for m in messages if m.startswith('co-occurrence (implicit)')]
    assert len(final) == 1 and 'documents/s' in final[0] and 'tokens/s' in final[0]
