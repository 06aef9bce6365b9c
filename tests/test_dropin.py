"""AnchorModel as a drop-in for gensim's LdaModel: the document-topic API with LdaModel's semantics,
and the gensim (and pyLDAvis) code that takes an LdaModel, given an AnchorModel instead.

The fitted models are module-scoped fixtures on the Lee background corpus (300 documents).
"""
import copy
import json
import logging
import numbers

import numpy as np
import pytest
from gensim import interfaces
from gensim.corpora import Dictionary
from gensim.models import CoherenceModel, EnsembleLda, LdaModel, LdaSeqModel
from gensim.parsing.preprocessing import STOPWORDS
from gensim.similarities import MatrixSimilarity
from gensim.test.utils import datapath
from gensim.utils import simple_preprocess

from gensim_anchor import AnchorModel

K = 8



def lee_texts():
    with open(datapath('lee_background.cor'), encoding='utf-8') as f:
        return [[t for t in simple_preprocess(line) if t not in STOPWORDS] for line in f]


def vocabulary_and_corpus(texts, no_below=3):
    dictionary = Dictionary(texts)
    dictionary.filter_extremes(no_below=no_below, no_above=0.5, keep_n=None)
    return dictionary, [dictionary.doc2bow(t) for t in texts]


@pytest.fixture(scope='module')
def lee():
    texts = lee_texts()
    dictionary, corpus = vocabulary_and_corpus(texts)
    return texts, dictionary, corpus


@pytest.fixture(scope='module')
def dictionary(lee):
    return lee[1]


@pytest.fixture(scope='module')
def corpus(lee):
    return lee[2]


@pytest.fixture(scope='module')
def anchor(corpus, dictionary):
    return AnchorModel(corpus, num_topics=K, id2word=dictionary, random_state=1, alpha='symmetric')


@pytest.fixture(scope='module')
def anchor_stream(corpus, dictionary):
    """The same model trained from a one-shot generator."""
    return AnchorModel((doc for doc in corpus), num_topics=K, id2word=dictionary, random_state=1,
                       alpha='symmetric')


@pytest.fixture(scope='module')
def lda(corpus, dictionary):
    return LdaModel(corpus, id2word=dictionary, num_topics=K, passes=1, iterations=10, random_state=0)


@pytest.fixture(scope='module')
def small():
    """60 documents, a 234-word vocabulary and 3 topics: small enough for LdaSeqModel."""
    texts = lee_texts()[:60]
    dictionary, corpus = vocabulary_and_corpus(texts, no_below=4)
    model = AnchorModel(corpus, num_topics=3, id2word=dictionary, random_state=0, alpha='symmetric',
                        anchor_min_df=2)
    return dictionary, corpus, model


@pytest.fixture(scope='module')
def anchor_auto(corpus, dictionary):
    """The default alpha ('auto')."""
    return AnchorModel(corpus, num_topics=K, id2word=dictionary, random_state=1)


def with_attributes(model, **attributes):
    """A shallow copy of a model with some attributes replaced (the fixture stays untouched)."""
    other = copy.copy(model)
    for name, value in attributes.items():
        setattr(other, name, value)
    return other


def known_tokens(doc, num_terms):
    return sum(c for w, c in doc if 0 <= w < num_terms)


# ----------------------------------------------------------------------------------------------
# 1. get_document_topics / model[bow] with LdaModel's semantics
# ----------------------------------------------------------------------------------------------

def test_document_topics_sum_to_one_over_all_topics(anchor, corpus):
    for doc in corpus[:25]:
        full = anchor.get_document_topics(doc, minimum_probability=0)
        assert [k for k, _ in full] == list(range(K))  # symmetric alpha: every theta_k > 1e-8
        probs = np.array([p for _, p in full])
        assert np.all((probs > 0) & (probs <= 1))
        np.testing.assert_allclose(probs.sum(), 1.0, atol=1e-6)
        # model[bow] is get_document_topics with the model's minimum_probability (0.01)
        assert anchor[doc] == [(k, p) for k, p in full if p >= anchor.minimum_probability]


@pytest.mark.parametrize('threshold', [0.001, 0.05, 0.3])
def test_topics_below_minimum_probability_are_dropped(anchor, corpus, threshold):
    dropped = 0
    for doc in corpus[:25]:
        full = anchor.get_document_topics(doc, minimum_probability=0)
        kept = anchor.get_document_topics(doc, minimum_probability=threshold)
        assert kept == [(k, p) for k, p in full if p >= threshold]
        dropped += len(full) - len(kept)
    assert dropped > 0


def test_minimum_probability_zero_is_floored_at_1e8(anchor, corpus):
    # With a tiny prior most topics of a document get theta < 1e-8: LdaModel (and so AnchorModel)
    # raises minimum_probability=0 to 1e-8, so those are left out even then.
    peaked = with_attributes(anchor, alpha=np.full(K, 1e-12))
    lengths = []
    for doc in corpus[:10]:
        topics = peaked.get_document_topics(doc, minimum_probability=0)
        assert all(p >= 1e-8 for _, p in topics)
        np.testing.assert_allclose(sum(p for _, p in topics), 1.0, atol=K * 1e-8)
        lengths.append(len(topics))
    assert min(lengths) < K


class CountingCorpus:
    """A list corpus that counts the documents its iterators have handed out."""

    def __init__(self, docs):
        self.docs, self.read = list(docs), 0

    def __len__(self):
        return len(self.docs)

    def __getitem__(self, i):
        return self.docs[i]

    def __iter__(self):
        for doc in self.docs:
            self.read += 1
            yield doc


def test_a_document_given_as_an_iterator_is_read_whole(anchor, corpus):
    """gensim's is_corpus peeks at the first element of an iterator (and puts it back in what it
    returns): a document given as an iterator of pairs must keep its first word. (LdaModel
    refuses one: len() of an iterator.)"""
    for doc in corpus[:5]:
        assert anchor[iter(doc)] == anchor[doc]
        assert anchor[(pair for pair in doc)] == anchor[doc]
        assert anchor.get_document_topics(iter(doc), per_word_topics=True) == \
            anchor.get_document_topics(doc, per_word_topics=True)
    assert anchor[iter([])] == anchor[[]]


def test_model_of_corpus_is_a_lazy_transformed_corpus(anchor, corpus):
    docs = CountingCorpus(corpus[:30])
    transformed = anchor[docs]
    assert isinstance(transformed, interfaces.TransformedCorpus)
    assert docs.read <= 1  # utils.is_corpus peeks at the first document; nothing is inferred yet
    assert len(transformed) == 30
    assert transformed[7] == anchor[corpus[7]]
    assert transformed[0] == anchor[corpus[0]]
    before = docs.read
    result = list(transformed)
    assert docs.read - before == 30
    assert len(result) == 30
    assert result == [anchor[doc] for doc in corpus[:30]]
    # the same with explicit options, through get_document_topics
    full = anchor.get_document_topics(corpus[:30], minimum_probability=0)
    assert isinstance(full, interfaces.TransformedCorpus)
    assert full[3] == anchor.get_document_topics(corpus[3], minimum_probability=0)
    # model[corpus] does not change what model[bow] returns
    assert anchor[corpus[3]] == [(k, p) for k, p in full[3] if p >= anchor.minimum_probability]


def check_per_word_structure(result, bow):
    """The nesting and types of LdaModel.get_document_topics(..., per_word_topics=True)."""
    assert isinstance(result, tuple) and len(result) == 3
    doc_topics, word_topics, word_phis = result
    assert isinstance(doc_topics, list)
    for pair in doc_topics:
        assert isinstance(pair, tuple) and len(pair) == 2
        assert isinstance(pair[0], int) and isinstance(pair[1], numbers.Real)
    ids = [w for w, _ in bow]
    assert isinstance(word_topics, list) and isinstance(word_phis, list)
    assert [w for w, _ in word_topics] == ids
    assert [w for w, _ in word_phis] == ids
    for (w, topics), (_, phis) in zip(word_topics, word_phis):
        assert isinstance(w, numbers.Integral)
        assert isinstance(topics, list) and all(isinstance(k, int) for k in topics)
        assert isinstance(phis, list)
        for pair in phis:
            assert isinstance(pair, tuple) and len(pair) == 2
            assert isinstance(pair[0], int) and isinstance(pair[1], numbers.Real)
        # phis in topic order; topics by decreasing phi; the same topics in both
        assert [k for k, _ in phis] == sorted(k for k, _ in phis)
        phi = dict(phis)
        assert sorted(topics) == sorted(phi)
        assert [phi[k] for k in topics] == sorted(phi.values(), reverse=True)
    return doc_topics, word_topics, word_phis


def assert_phis_close(actual, expected, rtol=1e-12):
    assert [w for w, _ in actual] == [w for w, _ in expected]
    for (_, a), (_, b) in zip(actual, expected):
        assert [k for k, _ in a] == [k for k, _ in b]
        np.testing.assert_allclose([p for _, p in a], [p for _, p in b], rtol=rtol)


def test_per_word_topics_have_ldamodel_structure(anchor, lda, corpus):
    for doc in corpus[:5]:
        options = dict(minimum_probability=0, minimum_phi_value=0.01, per_word_topics=True)
        check_per_word_structure(lda.get_document_topics(doc, **options), doc)  # the reference
        doc_topics, _, _ = check_per_word_structure(anchor.get_document_topics(doc, **options), doc)
        assert doc_topics == anchor.get_document_topics(doc, minimum_probability=0)
    # model[bow] and model[corpus] with per_word_topics set on the model, as LdaModel's
    per_word = with_attributes(anchor, per_word_topics=True)
    check_per_word_structure(per_word[corpus[0]], corpus[0])
    for doc, result in zip(corpus[:4], per_word[corpus[:4]]):
        check_per_word_structure(result, doc)
        single = per_word[doc]
        assert result[0] == single[0] and result[1] == single[1]
        # phis of a corpus pass differ from single calls in the last bits (seen: 3e-16; the
        # documents of a chunk are padded to a common length): equal to 1e-12
        assert_phis_close(result[2], single[2])


def test_per_word_topics_list_a_zero_count_word_as_ldamodel(anchor, lda, corpus):
    # PACKAGE DIVERGENCE (reported, minor): LdaModel lists every (id, count) pair of the bow in
    # word_topics and word_phis, a zero-count word as (id, []); AnchorModel leaves zero-count words
    # out (inference.pad_documents drops counts <= 0), so the word ids no longer match the bow's.
    # doc2bow never gives a zero count; a hand-made or re-weighted bow can.
    doc = corpus[0][:3] + [(corpus[0][3][0], 0)]
    options = dict(minimum_probability=0, minimum_phi_value=0.01, per_word_topics=True)
    expected = lda.get_document_topics(doc, **options)
    assert expected[1][-1] == (doc[-1][0], [])  # the reference
    check_per_word_structure(anchor.get_document_topics(doc, **options), doc)


def test_phis_sum_to_word_counts_and_minimum_phi_value_filters(anchor, corpus):
    ids = {w for w, _ in corpus[0]}
    doc = [(w, 3 * c) for w, c in corpus[0]] + [(w, c) for w, c in corpus[1] if w not in ids][:5]
    _, _, phis = anchor.get_document_topics(doc, minimum_probability=0, minimum_phi_value=0,
                                            per_word_topics=True)
    counts = dict(doc)
    for w, pairs in phis:
        # minimum_phi_value=0 is raised to 1e-8: at most K values of 1e-8 are left out
        np.testing.assert_allclose(sum(p for _, p in pairs), counts[w], rtol=1e-6, atol=K * 1e-8)
    for threshold in (0.01, 0.5, 2.0):
        _, word_topics, filtered = anchor.get_document_topics(
            doc, minimum_probability=0, minimum_phi_value=threshold, per_word_topics=True)
        for (w, full), (w2, kept), (w3, topics) in zip(phis, filtered, word_topics):
            assert w == w2 == w3
            assert kept == [(k, p) for k, p in full if p >= threshold]
            assert topics == [k for k, _ in sorted(kept, key=lambda kp: -kp[1])]
    assert any(len(kept) == 0 for _, kept in filtered)  # a count-1 word has no phi >= 2


# ----------------------------------------------------------------------------------------------
# 2. Determinism
# ----------------------------------------------------------------------------------------------

def test_repeated_calls_are_identical(anchor, corpus):
    for doc in corpus[:5]:
        first = anchor.get_document_topics(doc, minimum_probability=0, per_word_topics=True)
        for _ in range(3):
            assert anchor.get_document_topics(doc, minimum_probability=0, per_word_topics=True) == first
    gamma, _ = anchor.inference(corpus[:20])
    np.testing.assert_array_equal(anchor.inference(corpus[:20])[0], gamma)


def test_corpus_pass_equals_single_calls(anchor, corpus):
    docs = corpus[:40] + [[]]
    single = [anchor.get_document_topics(doc, minimum_probability=0) for doc in docs]
    assert list(anchor.get_document_topics(docs, minimum_probability=0)) == single
    # the chunking (and so the padding of documents) does not matter
    chunked = with_attributes(anchor, chunksize=7)
    assert list(chunked.get_document_topics(docs, minimum_probability=0)) == single
    gamma, _ = anchor.inference(docs)
    for lo in range(0, len(docs), 9):
        np.testing.assert_array_equal(anchor.inference(docs[lo:lo + 9])[0], gamma[lo:lo + 9])


# ----------------------------------------------------------------------------------------------
# 3. Empty and unknown documents, inference()
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize('prior', ['symmetric', 'asymmetric'])
def test_empty_and_unknown_documents_get_the_prior(anchor, corpus, prior):
    V = anchor.num_terms
    alpha = np.full(K, 1.0 / K) if prior == 'symmetric' else np.linspace(0.05, 0.5, K)
    model = with_attributes(anchor, alpha=alpha)
    expected = alpha / alpha.sum()
    for doc in ([], [(V, 1)], [(V + 100, 3), (V + 7, 1)]):
        topics = model.get_document_topics(doc, minimum_probability=0)
        assert [k for k, _ in topics] == list(range(K))
        np.testing.assert_allclose([p for _, p in topics], expected, rtol=1e-6)
        gamma, _ = model.inference([doc])
        np.testing.assert_allclose(gamma[0], alpha, rtol=1e-6)
    # unknown ids next to known ones are ignored
    doc = corpus[2]
    assert model.get_document_topics(doc + [(V + 1, 5)], minimum_probability=0) == \
        model.get_document_topics(doc, minimum_probability=0)
    # in a corpus too
    empty_first = list(model.get_document_topics([[], doc, [(V + 2, 1)]], minimum_probability=0))
    np.testing.assert_allclose([p for _, p in empty_first[0]], expected, rtol=1e-6)
    assert empty_first[1] == model.get_document_topics(doc, minimum_probability=0)
    np.testing.assert_allclose([p for _, p in empty_first[2]], expected, rtol=1e-6)


def test_inference_gamma_positive_and_sstats_count_known_tokens(anchor, corpus):
    V = anchor.num_terms
    chunk = corpus[:30] + [[], [(V + 1, 2)], [(0, 1.0), (V + 3, 4.0), (5, 2.0)]]
    gamma, sstats = anchor.inference(chunk, collect_sstats=True)
    assert gamma.shape == (len(chunk), K)
    assert np.all(np.isfinite(gamma)) and np.all(gamma > 0)
    assert sstats.shape == (K, V)
    assert np.all(sstats >= 0)
    total = sum(known_tokens(doc, V) for doc in chunk)
    np.testing.assert_allclose(sstats.sum(), total, rtol=1e-6)
    # per word: the expected counts of a word over the topics are its count in the chunk
    per_word = np.zeros(V)
    for doc in chunk:
        for w, c in doc:
            if w < V:
                per_word[w] += c
    np.testing.assert_allclose(sstats.sum(axis=0), per_word, rtol=1e-6, atol=1e-9)
    gamma2, none = anchor.inference(chunk)
    assert none is None
    np.testing.assert_array_equal(gamma2, gamma)


# ----------------------------------------------------------------------------------------------
# 4. get_term_topics
# ----------------------------------------------------------------------------------------------

def test_get_term_topics_by_id_and_by_string(anchor, dictionary):
    topics = anchor.get_topics()
    # an anchor word is in its own topic only
    word = anchor.anchor_words[3]
    word_id = dictionary.token2id[word]
    by_id = anchor.get_term_topics(word_id, minimum_probability=1e-6)
    assert by_id == anchor.get_term_topics(word, minimum_probability=1e-6)
    assert [k for k, _ in by_id] == [3]
    assert by_id[0][1] == topics[3, word_id]
    # a common word, in several topics: minimum_probability filters as LdaModel's
    common = max(dictionary.dfs, key=dictionary.dfs.get)
    column = topics[:, common]
    all_topics = anchor.get_term_topics(dictionary[common], minimum_probability=0)
    assert all_topics == [(k, column[k]) for k in range(K) if column[k] >= 1e-8]
    threshold = float(np.median(column))
    assert anchor.get_term_topics(common, minimum_probability=threshold) == \
        [(k, column[k]) for k in range(K) if column[k] >= threshold]
    with pytest.raises(KeyError):
        anchor.get_term_topics('no-such-word-in-lee')


def test_topic_and_word_ids_out_of_range_are_named(anchor):
    V = anchor.get_topics().shape[1]
    # in range, negative ids count from the end as numpy's (and so LdaModel's) do
    assert anchor.get_topic_terms(-1, topn=5) == anchor.get_topic_terms(K - 1, topn=5)
    assert anchor.get_term_topics(-1) == anchor.get_term_topics(V - 1)
    with pytest.raises(IndexError, match=r"topicid %d is out of range: the model has %d topics "
                       r"\(ids 0..%d\)" % (K, K, K - 1)):
        anchor.get_topic_terms(K)
    with pytest.raises(IndexError, match=r"topicid -%d is out of range" % (K + 1)):
        anchor.show_topic(-K - 1)
    with pytest.raises(IndexError, match=r"word_id %d is out of range: the model has %d words" % (V, V)):
        anchor.get_term_topics(V)
    with pytest.raises(TypeError, match=r"topicid must be an integer, got 1.0"):
        anchor.get_topic_terms(1.0)
    with pytest.raises(TypeError, match=r"topn must be an integer, got 2.5"):
        anchor.show_topic(0, topn=2.5)
    assert anchor.show_topic(0, topn=0) == []  # as LdaModel's (matutils.argsort)


def test_get_term_topics_with_plain_dict_id2word(anchor, dictionary):
    dictionary[0]  # builds dictionary.id2token
    plain = with_attributes(anchor, id2word=dict(dictionary.id2token))
    word = anchor.anchor_words[0]
    assert plain.get_term_topics(word, minimum_probability=1e-6) == \
        anchor.get_term_topics(dictionary.token2id[word], minimum_probability=1e-6)


# ----------------------------------------------------------------------------------------------
# 5. Coherence
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize('coherence', ['u_mass', 'c_v', 'c_uci', 'c_npmi'])
def test_coherence_model_on_anchor_model(anchor, lee, coherence):
    texts, dictionary, corpus = lee
    data = dict(corpus=corpus) if coherence == 'u_mass' else dict(texts=texts)
    cm = CoherenceModel(model=anchor, dictionary=dictionary, coherence=coherence, topn=10, **data)
    per_topic = cm.get_coherence_per_topic()
    assert len(per_topic) == K
    assert np.all(np.isfinite(per_topic))
    assert np.isfinite(cm.get_coherence())
    # the model's top words are what was scored
    words = [[dictionary[i] for i, _ in anchor.get_topic_terms(k, topn=10)] for k in range(K)]
    explicit = CoherenceModel(topics=words, dictionary=dictionary, coherence=coherence, topn=10,
                              **data)
    np.testing.assert_allclose(explicit.get_coherence_per_topic(), per_topic)


@pytest.mark.parametrize('built_on', ['anchor', 'lda'])
def test_coherence_compare_models(anchor, lda, lee, built_on):
    texts, dictionary, _ = lee
    cm = CoherenceModel(model=anchor if built_on == 'anchor' else lda, texts=texts,
                        dictionary=dictionary, coherence='c_v', topn=10)
    result = cm.compare_models([anchor, lda])
    assert len(result) == 2
    for per_topic, average in result:
        assert len(per_topic) == K
        assert np.all(np.isfinite(per_topic)) and np.isfinite(average)
    assert not np.allclose(result[0][0], result[1][0])  # two different models were scored


def test_top_topics_sorted_by_coherence(anchor, lee):
    _, dictionary, corpus = lee
    top = anchor.top_topics(corpus=corpus, topn=10)
    assert len(top) == K
    scores = [score for _, score in top]
    assert np.all(np.isfinite(scores))
    assert scores == sorted(scores, reverse=True)
    cm = CoherenceModel(model=anchor, corpus=corpus, dictionary=dictionary, coherence='u_mass',
                        topn=10)
    np.testing.assert_allclose(sorted(scores), sorted(cm.get_coherence_per_topic()))
    shown = [[w for w, _ in anchor.show_topic(k, topn=10)] for k in range(K)]
    for words, _ in top:
        assert len(words) == 10
        assert [w for _, w in words] in shown


# ----------------------------------------------------------------------------------------------
# 6. Similarity index
# ----------------------------------------------------------------------------------------------

def test_matrix_similarity_finds_the_document_itself(anchor, corpus):
    docs = corpus[:120]
    index = MatrixSimilarity(anchor[docs], num_features=K)
    assert index.index.shape == (len(docs), K)
    sims = index[anchor[docs]]  # a corpus query: all against all
    assert sims.shape == (len(docs), len(docs))
    np.testing.assert_allclose(np.diag(sims), 1.0, atol=1e-5)
    assert np.all(np.diag(sims) >= sims.max(axis=1) - 1e-5)
    for i in range(0, len(docs), 17):
        one = index[anchor[docs[i]]]
        np.testing.assert_allclose(one, sims[i], atol=1e-6)
        assert one[i] >= one.max() - 1e-5


# ----------------------------------------------------------------------------------------------
# 7. EnsembleLda
# ----------------------------------------------------------------------------------------------

def test_ensemble_lda_add_anchor_model(anchor, corpus, dictionary):
    # topic_model_class='lda': LdaMulticore would start worker processes.
    ensemble = EnsembleLda(topic_model_class='lda', corpus=corpus, id2word=dictionary,
                           num_topics=K, num_models=2, passes=1, iterations=10, random_state=0)
    rows, models = len(ensemble.ttda), ensemble.num_models
    assert rows == 2 * K
    ensemble.add_model(anchor)
    assert ensemble.ttda.shape == (rows + K, len(dictionary))
    np.testing.assert_allclose(ensemble.ttda[-K:], anchor.get_topics())
    assert ensemble.num_models == models + 1
    ensemble.recluster()
    stable = ensemble.get_topics()
    assert stable.ndim == 2 and stable.shape[1] == len(dictionary)
    assert np.all(np.isfinite(stable))


def test_ensemble_of_anchor_models_finds_their_topics(anchor, anchor_stream, dictionary):
    ensemble = EnsembleLda(topic_model_class='lda', id2word=dictionary, num_topics=K, num_models=0)
    ensemble.add_model([anchor, anchor_stream])
    assert ensemble.ttda.shape == (2 * K, len(dictionary)) and ensemble.num_models == 2
    ensemble.recluster()
    stable = ensemble.get_topics()
    # the two models agree, so every topic is stable and is (up to order) an anchor topic
    assert stable.shape == (K, len(dictionary))
    l1 = np.abs(stable[:, None, :] - anchor.get_topics()[None, :, :]).sum(axis=2)
    assert sorted(l1.argmin(axis=1).tolist()) == list(range(K))
    assert l1.min(axis=1).max() < 1e-4
    lda = ensemble.generate_gensim_representation()
    assert lda.num_topics == K


# ----------------------------------------------------------------------------------------------
# 8. LdaSeqModel initialised from an AnchorModel
# ----------------------------------------------------------------------------------------------

# gensim's own: LdaSeqModel's first EM iteration divides by its previous bound, 0.
@pytest.mark.filterwarnings('ignore:divide by zero encountered in scalar divide:RuntimeWarning:gensim.models.ldaseqmodel')
def test_ldaseq_model_from_anchor_model(small):
    dictionary, corpus, model = small
    lda = model.to_ldamodel()
    seq = LdaSeqModel(corpus=corpus, id2word=dictionary, time_slice=[30, 30], num_topics=3,
                      initialize='ldamodel', lda_model=lda, passes=1, em_min_iter=1, em_max_iter=1,
                      chain_variance=0.005)
    for time in (0, 1):
        topics = seq.print_topics(time=time, top_terms=10)
        assert len(topics) == 3
        for k, topic in enumerate(topics):
            assert len(topic) == 10
            assert all(w in dictionary.token2id for w, _ in topic)
            assert all(np.isfinite(p) and 0 < p < 1 for _, p in topic)
        doc_topic, topic_term, doc_lengths, _, vocab = seq.dtm_vis(time, corpus)
        assert topic_term.shape == (3, len(dictionary)) and doc_topic.shape == (len(corpus), 3)
        np.testing.assert_allclose(np.sum(topic_term, axis=1), 1.0, atol=1e-6)
        np.testing.assert_allclose(np.sum(doc_topic, axis=1), 1.0, atol=1e-6)
        # each dynamic topic started from an anchor topic and is still nearest to it
        # (seen: L1 0.43-0.65 to its own, 0.57-0.82 to the others)
        l1 = np.abs(np.asarray(topic_term)[:, None, :] - model.get_topics()[None, :, :]).sum(axis=2)
        assert l1.argmin(axis=1).tolist() == [0, 1, 2]
    doc_topics = seq.doc_topics(0)
    assert doc_topics.shape == (3,)
    np.testing.assert_allclose(doc_topics.sum(), 1.0, atol=1e-6)


# ----------------------------------------------------------------------------------------------
# 9. to_ldamodel and diff
# ----------------------------------------------------------------------------------------------

def test_to_ldamodel_carries_the_topics(anchor, corpus):
    lda = anchor.to_ldamodel()
    assert type(lda) is LdaModel
    assert lda.num_topics == K and lda.num_terms == anchor.num_terms
    l1 = np.abs(lda.get_topics().astype(np.float64) - anchor.get_topics()).sum(axis=1)
    print("to_ldamodel: per-topic L1 to the anchor topics", np.round(l1, 3))
    assert l1.max() < 0.25  # the difference is LdaModel's eta smoothing of lambda
    np.testing.assert_allclose(lda.alpha, anchor.alpha, rtol=1e-6)
    agree = 0
    for doc in corpus[:40]:
        topics = lda.get_document_topics(doc, minimum_probability=0)
        assert [k for k, _ in topics] == list(range(K))
        np.testing.assert_allclose(sum(p for _, p in topics), 1.0, atol=1e-5)
        assert lda[doc]  # model[bow] works too
        mine = anchor.get_document_topics(doc, minimum_probability=0)
        agree += max(topics, key=lambda kp: kp[1])[0] == max(mine, key=lambda kp: kp[1])[0]
    assert agree >= 30  # the same dominant topic for most documents


def test_to_ldamodel_update_continues_training(anchor, corpus):
    lda = anchor.to_ldamodel()
    before = lda.get_topics().copy()
    lda.update(corpus)
    after = lda.get_topics()
    change = np.abs(after - before).sum(axis=1)
    print("to_ldamodel().update(corpus): per-topic L1 change", np.round(change, 3))
    assert change.min() > 1e-3  # it trained
    # modestly: every topic stays nearest to the anchor topic it started from
    l1 = np.abs(after[:, None, :] - anchor.get_topics()[None, :, :]).sum(axis=2)
    assert l1.argmin(axis=1).tolist() == list(range(K))
    assert change.max() < 1.0
    assert lda[corpus[0]]


def test_diff_with_its_ldamodel(anchor):
    lda = anchor.to_ldamodel()
    z, annotation = anchor.diff(lda)
    assert z.shape == (K, K) and annotation.shape == (K, K)
    assert np.all(np.isfinite(z))
    assert np.all(np.diag(z) == z.min(axis=1))  # each topic is nearest its own copy
    z, annotation = anchor.diff(lda, annotation=False)
    assert annotation is None


def test_diff_between_anchor_models_hellinger(anchor, anchor_stream):
    z, _ = anchor.diff(anchor_stream, distance='hellinger')
    assert z.shape == (K, K)
    assert np.all(np.isfinite(z))
    np.testing.assert_allclose(np.diag(z), 0.0, atol=1e-6)
    assert np.all(z[~np.eye(K, dtype=bool)] > 0.05)


def test_diff_between_anchor_models_default_distance(anchor, anchor_stream):
    # PACKAGE BUG (reported): with the default distance='kullback_leibler' the off-diagonal entries
    # are NaN. Anchor topics have exact zeros (each anchor word is pinned to its own topic), so
    # KL(topic_i || topic_j) = inf for i != j, and normed=True divides by max(z) = inf:
    # inf / inf = NaN (and, under this project's filterwarnings, a RuntimeWarning error from
    # gensim_anchor._compat). LdaModel never has zeros in its topics, so LdaModel.diff is finite.
    z, _ = anchor.diff(anchor_stream)
    assert z.shape == (K, K)
    assert np.all(np.isfinite(z))
    np.testing.assert_allclose(np.diag(z), 0.0, atol=1e-6)


def test_diff_with_another_vocabulary_raises(anchor, small):
    _, _, other = small
    with pytest.raises(ValueError):
        anchor.diff(other)
    with pytest.raises(ValueError):
        anchor.diff(other.to_ldamodel())


# ----------------------------------------------------------------------------------------------
# 10. Persistence, as gensim's LdaModel tests
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize('name, save_kwargs, load_kwargs', [
    ('anchor.model', {}, {}),
    ('anchor.model.gz', {}, {}),
    ('anchor.model', {'sep_limit': 0}, {'mmap': 'r'}),
], ids=['plain', 'gz', 'mmap'])
def test_save_load_infers_the_same(anchor, corpus, tmp_path, name, save_kwargs, load_kwargs):
    fname = str(tmp_path / name)
    anchor.save(fname, **save_kwargs)
    loaded = AnchorModel.load(fname, **load_kwargs)
    np.testing.assert_array_equal(loaded.get_topics(), anchor.get_topics())
    np.testing.assert_array_equal(loaded.anchors, anchor.anchors)
    np.testing.assert_array_equal(loaded.alpha, anchor.alpha)
    if 'mmap' in load_kwargs:
        assert isinstance(loaded.get_topics(), np.memmap)
        assert not loaded.get_topics().flags.writeable
    docs = corpus[:10] + [[], [(anchor.num_terms + 1, 1)]]
    for doc in docs:
        assert loaded.get_document_topics(doc, minimum_probability=0, per_word_topics=True) == \
            anchor.get_document_topics(doc, minimum_probability=0, per_word_topics=True)
    assert list(loaded[docs]) == list(anchor[docs])


def test_save_with_ignore(anchor, corpus, tmp_path):
    fname = str(tmp_path / 'anchor.model')
    anchor.save(fname, ignore=('R',))
    assert anchor.R is not None  # SaveLoad puts ignored attributes back on the saved object
    loaded = AnchorModel.load(fname)
    assert loaded.R is None  # SaveLoad.load sets ignored attributes to None
    np.testing.assert_array_equal(loaded.get_topics(), anchor.get_topics())
    for doc in corpus[:5]:
        assert loaded[doc] == anchor[doc]
    anchor.save(fname, ignore='R')  # a single name, as SaveLoad takes it
    assert AnchorModel.load(fname).R is None


def test_save_ignores_what_the_model_can_do_without_and_refuses_its_state(anchor, corpus, tmp_path):
    fname = str(tmp_path / 'anchor.model')
    # LdaModel's own ignore= (its defaults): 'state' is a property here, which SaveLoad could not
    # delete (AttributeError), and not saved anyway.
    anchor.save(fname, ignore=('state', 'dispatcher'))
    np.testing.assert_array_equal(AnchorModel.load(fname).get_topics(), anchor.get_topics())
    # Without id2word the words are shown as their ids, as LdaModel shows them without one.
    anchor.save(fname, ignore=('id2word', 'timings'))
    loaded = AnchorModel.load(fname)
    assert loaded.show_topic(0, topn=3) == [(str(i), p) for i, p in anchor.get_topic_terms(0, topn=3)]
    assert loaded.timings == {} and loaded[corpus[0]] == anchor[corpus[0]]
    # The model's state: it loaded broken before ('not trained', an IndexError, a TypeError).
    for names in ('topics', ('alpha', 'R'), ('p_z', 'refinement')):
        with pytest.raises(ValueError, match=r"the model's own state, which it cannot load without; "
                                             r"these may be left out: 'R', "):
            anchor.save(fname, ignore=names)


# ----------------------------------------------------------------------------------------------
# 11. The gensim LDA tutorial, with AnchorModel swapped in
# ----------------------------------------------------------------------------------------------

def test_lda_tutorial_pattern(corpus, dictionary):
    temp = dictionary[0]  # noqa: F841  (this is only to "load" the dictionary)
    id2word = dictionary.id2token
    assert type(id2word) is dict
    model = AnchorModel(
        corpus=corpus,
        id2word=id2word,
        chunksize=2000,
        alpha='auto',
        eta='auto',
        iterations=400,
        num_topics=K,
        passes=20,
        eval_every=None,
    )
    top_topics = model.top_topics(corpus)
    assert len(top_topics) == K
    scores = [t[1] for t in top_topics]
    assert scores == sorted(scores, reverse=True)
    avg_topic_coherence = sum(scores) / K
    assert np.isfinite(avg_topic_coherence)
    for words, _ in top_topics:
        assert len(words) == 20 and all(w in dictionary.token2id for _, w in words)
    printed = model.print_topics()
    assert len(printed) == K
    assert all(isinstance(k, int) and '*"' in text for k, text in printed)
    assert np.all(model.alpha > 0) and model.alpha.shape == (K,)
    theta = model.get_document_topics(corpus[0], minimum_probability=0)
    np.testing.assert_allclose(sum(p for _, p in theta), 1.0, atol=1e-6)


# ----------------------------------------------------------------------------------------------
# 12. A one-shot generator as the training corpus
# ----------------------------------------------------------------------------------------------

def test_generator_corpus_gives_the_same_model(anchor, anchor_stream, corpus):
    np.testing.assert_array_equal(anchor_stream.anchors, anchor.anchors)
    np.testing.assert_array_equal(anchor_stream.get_topics(), anchor.get_topics())
    np.testing.assert_array_equal(anchor_stream.p_z, anchor.p_z)
    assert anchor_stream.num_docs == anchor.num_docs
    for doc in corpus[:5]:
        assert anchor_stream[doc] == anchor[doc]


def test_generator_corpus_gives_the_same_auto_alpha(anchor_auto, corpus, dictionary):
    stream = AnchorModel((doc for doc in corpus), num_topics=K, id2word=dictionary, random_state=1)
    np.testing.assert_array_equal(stream.get_topics(), anchor_auto.get_topics())
    np.testing.assert_allclose(stream.alpha, anchor_auto.alpha, rtol=1e-12)


# ----------------------------------------------------------------------------------------------
# The default alpha ('auto'), once gensim_anchor/dirichlet.py exists
# ----------------------------------------------------------------------------------------------

def test_default_alpha_model_is_a_drop_in(anchor_auto, corpus, tmp_path):
    model = anchor_auto
    assert model.alpha.shape == (K,)
    assert np.all(np.isfinite(model.alpha)) and np.all(model.alpha > 0)
    expected = model.alpha / model.alpha.sum()
    for doc in ([], [(model.num_terms + 4, 2)]):
        np.testing.assert_allclose([p for _, p in model.get_document_topics(doc, minimum_probability=0)],
                                   expected, rtol=1e-6)
    for doc in corpus[:10]:
        topics = model.get_document_topics(doc, minimum_probability=0)
        np.testing.assert_allclose(sum(p for _, p in topics), 1.0, atol=K * 1e-8)
    gamma, sstats = model.inference(corpus[:10], collect_sstats=True)
    assert np.all(gamma > 0)
    np.testing.assert_allclose(sstats.sum(), sum(known_tokens(d, model.num_terms) for d in corpus[:10]),
                               rtol=1e-6)
    fname = str(tmp_path / 'auto.model')
    model.save(fname)
    loaded = AnchorModel.load(fname)
    np.testing.assert_array_equal(loaded.alpha, model.alpha)
    assert loaded[corpus[3]] == model[corpus[3]]
    lda = model.to_ldamodel()
    np.testing.assert_allclose(lda.alpha, model.alpha, rtol=1e-6)
    assert lda[corpus[3]]


# ----------------------------------------------------------------------------------------------
# 13. pyLDAvis
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize('which', ['symmetric', 'auto'])
def test_pyldavis_prepare(request, lee, which):
    gensim_models = pytest.importorskip('pyLDAvis.gensim_models')
    import pyLDAvis
    _, dictionary, corpus = lee
    model = request.getfixturevalue('anchor' if which == 'symmetric' else 'anchor_auto')
    # An empty document, and a document of words the dictionary does not know, appended. The
    # latter is what doc2bow gives for it: also empty. Ids beyond the vocabulary cannot be given to
    # pyLDAvis with any model: gensim's corpus2csc(corpus, num_terms=V) keeps them unchecked in
    # the csc matrix, and scipy's sum over it then crashes the process (segmentation fault).
    unknown = dictionary.doc2bow(['qqqnotaword', 'zzznotaword'])
    assert unknown == []
    data = gensim_models.prepare(model, corpus + [[], unknown], dictionary, n_jobs=1)
    assert isinstance(data, pyLDAvis.PreparedData)
    assert {'Term', 'Freq', 'Total', 'Category', 'logprob', 'loglift'} <= set(data.topic_info.columns)
    for frame in (data.topic_info, data.topic_coordinates, data.token_table):
        numeric = frame.select_dtypes(include=[np.number])
        assert not numeric.isna().any().any()
        assert np.all(np.isfinite(numeric.to_numpy(dtype=np.float64)))
    assert len(data.topic_coordinates) == K
    # topic proportions, in percent
    np.testing.assert_allclose(data.topic_coordinates['Freq'].sum(), 100.0, rtol=1e-6)
    assert set(data.topic_info.Category) == {'Default'} | {'Topic%d' % k for k in range(1, K + 1)}
    assert set(data.topic_info.Term) <= set(dictionary.token2id)
    json.loads(data.to_json())


def test_log_perplexity_and_bound_are_likelihood_estimates(anchor_auto, corpus):
    """log_perplexity is the estimator's per-token log-likelihood and bound its sum; both are
    seeded (repeatable), and the trained topics beat the same topics with their words shuffled."""
    from gensim_anchor.likelihood import document_log_likelihood, log_likelihood_per_token
    heldout = corpus[-40:]
    per_token = anchor_auto.log_perplexity(heldout)
    assert per_token == anchor_auto.log_perplexity(heldout)
    expected = log_likelihood_per_token(anchor_auto.get_topics(), anchor_auto.alpha, heldout,
                                        random_state=anchor_auto._projection_seed)
    assert per_token == pytest.approx(expected, rel=1e-12)
    total = anchor_auto.bound(heldout)
    direct = document_log_likelihood(anchor_auto.get_topics(), anchor_auto.alpha, heldout,
                                     random_state=anchor_auto._projection_seed).log_p.sum()
    assert total == pytest.approx(direct, rel=1e-12)
    tokens = sum(c for doc in heldout for _, c in doc)
    assert total / tokens == pytest.approx(per_token, rel=1e-9)
    assert anchor_auto.bound(heldout, subsample_ratio=2.0) == pytest.approx(2 * total)
    shuffled = anchor_auto.get_topics()[:, np.random.default_rng(0).permutation(anchor_auto.num_terms)]
    worse = log_likelihood_per_token(shuffled, anchor_auto.alpha, heldout, random_state=0)
    assert per_token > worse + 0.5


# ----------------------------------------------------------------------------------------------
# 14. Metric callbacks: LdaModel evaluates them after each pass, AnchorModel after each stage
# ----------------------------------------------------------------------------------------------

def metric_callbacks(corpus, dictionary, **coherence):
    from gensim.models.callbacks import (CoherenceMetric, ConvergenceMetric, DiffMetric,
                                         PerplexityMetric)
    return [CoherenceMetric(corpus=corpus, dictionary=dictionary, coherence='u_mass', topn=10,
                            **coherence),
            PerplexityMetric(corpus=corpus[:30]), DiffMetric(distance='jaccard', diagonal=True),
            ConvergenceMetric(distance='jaccard')]


def stage_values(model, corpus, dictionary, previous):
    """What each metric must be for ``model`` after a stage that started from ``previous``,
    computed without the callbacks."""
    words = sum(c for doc in corpus[:30] for _, c in doc)
    diff = model.diff(previous, 'jaccard', 100, 10, True, True, True)[0]
    return dict(Coherence=CoherenceModel(model=model, corpus=corpus, dictionary=dictionary,
                                         coherence='u_mass', topn=10).get_coherence(),
                Perplexity=np.exp2(-model.bound(corpus[:30]) / words), Diff=diff,
                Convergence=np.sum(model.diff(previous, 'jaccard', 100, 10, True, False, True)[0]))


def assert_epoch(model, epoch, expected):
    assert set(model.metrics) == set(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(model.metrics[name][epoch], value, rtol=1e-9, atol=1e-12,
                                   err_msg=name)


def test_callbacks_score_the_fit_then_each_refinement(corpus, dictionary, caplog):
    callbacks = metric_callbacks(corpus, dictionary, logger='shell')
    with caplog.at_level(logging.INFO, logger='gensim.models.ldamodel'):
        model = AnchorModel(corpus, num_topics=K, id2word=dictionary, random_state=1, callbacks=callbacks,
                            refine='gibbs', refine_options=dict(num_sweeps=6, burn_in=3))
    # Epoch 0 is the anchor fit (whose topics the refinement replaced), epoch 1 the refinement.
    assert [len(v) for v in model.metrics.values()] == [2] * 4
    assert model.metrics['Convergence'][0] == 0.0  # the first fit has no earlier state
    assert np.all(model.metrics['Diff'][0] == 0.0)
    assert model.metrics['Convergence'][1] > 0.5  # the sweeps moved the topics
    assert np.all(np.asarray(model.metrics['Diff'][1]) >= 0)
    expected = stage_values(model, corpus, dictionary, previous=model)
    assert_epoch(model, 1, dict(expected, Diff=model.metrics['Diff'][1],
                                Convergence=model.metrics['Convergence'][1]))
    # gensim's shell logger (the coherence metric's): one line per epoch
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith('Epoch ')]
    assert [line.split(' estimate: ')[0] for line in lines] == ['Epoch 0: Coherence', 'Epoch 1: Coherence']
    assert float(lines[1].split(' estimate: ')[1]) == model.metrics['Coherence'][1]
    # A refine() call is one more epoch, compared with the model before it.
    before = copy.deepcopy(model)
    model.refine(num_sweeps=4, burn_in=2, random_state=5)
    assert [len(v) for v in model.metrics.values()] == [3] * 4
    assert_epoch(model, 2, stage_values(model, corpus, dictionary, previous=before))


def test_update_starts_the_metrics_afresh_from_the_model_before_it(corpus, dictionary):
    model = AnchorModel(corpus[:150], num_topics=K, id2word=dictionary, random_state=1, alpha='symmetric',
                        callbacks=metric_callbacks(corpus, dictionary))
    assert_epoch(model, 0, stage_values(model, corpus, dictionary, previous=model))
    before = copy.deepcopy(model)
    model.update(corpus[150:])
    # As LdaModel.update: the metrics of this call only; its previous state is the model before.
    assert [len(v) for v in model.metrics.values()] == [1] * 4
    assert_epoch(model, 0, stage_values(model, corpus, dictionary, previous=before))
    assert model.metrics['Convergence'][0] > 0.5
    model.update([])  # nothing read: nothing trained, nothing evaluated
    assert [len(v) for v in model.metrics.values()] == [1] * 4


def test_callbacks_are_not_saved_and_metrics_are(corpus, dictionary, tmp_path):
    callbacks = metric_callbacks(corpus, dictionary)
    model = AnchorModel(corpus, num_topics=K, id2word=dictionary, random_state=1, alpha='symmetric',
                        callbacks=callbacks)
    fname = str(tmp_path / 'anchor.model')
    model.save(fname)
    assert model.callbacks == callbacks  # put back on the saved model
    loaded = AnchorModel.load(fname)
    assert loaded.callbacks is None
    assert {k: np.asarray(v).tolist() for k, v in loaded.metrics.items()} == \
        {k: np.asarray(v).tolist() for k, v in model.metrics.items()}
    model.save_portable(str(tmp_path / 'portable'))
    portable = AnchorModel.load_portable(str(tmp_path / 'portable'))
    assert portable.callbacks is None and not hasattr(portable, 'metrics')
    portable.refine(corpus, num_sweeps=2, burn_in=1)  # no callbacks: nothing evaluated
    assert not hasattr(portable, 'metrics')


@pytest.mark.parametrize('callbacks, message', [
    ('coherence', "got one str"),
    (None, None),
    ([object()], "got object"),
    (5, "got 5"),
], ids=['str', 'bare-metric', 'not-a-metric', 'not-a-list'])
def test_callbacks_that_are_not_metrics_are_refused_before_the_fit(corpus, dictionary, callbacks, message):
    from gensim.models.callbacks import PerplexityMetric
    if callbacks is None:
        callbacks, message = PerplexityMetric(corpus=corpus[:5]), r"got one PerplexityMetric: pass \[PerplexityMetric\]"
    with pytest.raises(TypeError, match=message) as info:
        AnchorModel(corpus, num_topics=K, id2word=dictionary, callbacks=callbacks)
    assert 'gensim.models.callbacks.Metric' in str(info.value)
