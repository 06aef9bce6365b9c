"""AnchorModel: gensim's model contract, persistence, update, logging and input checks."""
import logging
import unittest

import numpy as np
import pytest
from gensim.corpora import Dictionary
from gensim.models import CoherenceModel
from gensim.parsing.preprocessing import STOPWORDS
from gensim.test import basetmtests
from gensim.test.utils import common_texts, datapath
from gensim.utils import FakeDict, simple_preprocess

from gensim_anchor import AnchorModel
from gensim_anchor.anchormodel import FORMAT_VERSION
from gensim_anchor.cooccurrence import build_cooccurrence


def lee_corpus():
    with open(datapath('lee_background.cor'), encoding='utf-8') as f:
        texts = [[t for t in simple_preprocess(line) if t not in STOPWORDS] for line in f]
    dictionary = Dictionary(texts)
    dictionary.filter_extremes(no_below=3, no_above=0.5, keep_n=None)
    return dictionary, [dictionary.doc2bow(t) for t in texts]


@pytest.fixture(scope='module')
def lee():
    return lee_corpus()


@pytest.fixture(scope='module')
def lee_model(lee):
    dictionary, corpus = lee
    return AnchorModel(corpus, num_topics=8, id2word=dictionary, random_state=1)


class TestAnchorModelContract(unittest.TestCase, basetmtests.TestBaseTopicModel):
    """gensim's own topic-model test mixin, as test_nmf.py uses it."""

    def setUp(self):
        dictionary, corpus = lee_corpus()
        self.model = AnchorModel(corpus, num_topics=8, id2word=dictionary, random_state=0)


def test_is_a_gensim_transformation(lee_model):
    from gensim import interfaces, utils
    from gensim.models import basemodel
    assert isinstance(lee_model, interfaces.TransformationABC)
    assert isinstance(lee_model, basemodel.BaseTopicModel)
    assert isinstance(lee_model, utils.SaveLoad)


def test_topics_are_distributions_and_anchors_lead_them(lee_model, lee):
    dictionary, _ = lee
    topics = lee_model.get_topics()
    assert topics.shape == (8, len(dictionary))
    assert topics.dtype == np.float32  # LdaModel's default dtype
    np.testing.assert_allclose(topics.sum(axis=1, dtype=np.float64), 1.0, atol=1e-6)
    assert (topics >= 0).all()
    assert len(set(lee_model.anchors.tolist())) == 8
    assert lee_model.anchor_words == [dictionary[int(i)] for i in lee_model.anchors]
    # an anchor occurs only in its own topic (it is pinned there by recovery)
    for k, a in enumerate(lee_model.anchors):
        others = np.delete(topics[:, a], k)
        assert topics[k, a] > 0 and np.all(others == 0)
    np.testing.assert_allclose(lee_model.A, topics.T)
    np.testing.assert_allclose(lee_model.p_z.sum(), 1.0)
    assert lee_model.R.shape == (8, 8)
    np.testing.assert_allclose(lee_model.R, lee_model.R.T, atol=1e-12)


def test_topic_terms_match_topics(lee_model):
    topics = lee_model.get_topics()
    terms = lee_model.get_topic_terms(3, topn=7)
    ids = [i for i, _ in terms]
    # the 7 largest probabilities, in decreasing order, each with its own word id (ties may
    # come in either order, so ids are checked through their values)
    np.testing.assert_array_equal([p for _, p in terms], np.sort(topics[3])[::-1][:7])
    assert len(set(ids)) == 7 and all(topics[3][i] == p for i, p in terms)
    shown = lee_model.show_topic(3, topn=7)
    assert [w for w, _ in shown] == [lee_model.id2word[i] for i in ids]
    formatted = dict(lee_model.show_topics(num_topics=-1, num_words=7))
    assert set(formatted) == set(range(8))
    assert all(('"%s"' % w) in formatted[3] for w, _ in shown)
    # a subset is taken from both ends of p(z), as LdaModel does with alpha
    chosen = [k for k, _ in lee_model.show_topics(num_topics=4)]
    order = list(np.argsort(lee_model.p_z, kind='stable'))
    assert sorted(chosen) == sorted(order[:2] + order[-2:])


def test_print_topics_logs_anchor_words(lee_model, caplog):
    with caplog.at_level(logging.INFO, logger='gensim_anchor'):
        lee_model.print_topics(num_topics=-1)
    anchored = [r.getMessage() for r in caplog.records if 'anchor' in r.getMessage()]
    assert len(anchored) == 8
    assert all(repr(w) in m for w, m in zip(lee_model.anchor_words, anchored))


def test_distributed_true_warns_that_the_cluster_is_dask(lee, caplog):
    """LdaModel's distributed=True asks for a cluster; without client= or a Bag the model
    trains here, and says so (the settings without meaning are only logged at INFO)."""
    dictionary, _ = lee
    with caplog.at_level(logging.INFO, logger='gensim_anchor'):
        AnchorModel(num_topics=8, id2word=dictionary, distributed=True)
        AnchorModel(num_topics=8, id2word=dictionary, passes=10)
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1 and 'distributed=True' in warned[0] and 'client=' in warned[0]


def test_str_and_stage_logging(lee, caplog):
    dictionary, corpus = lee
    with caplog.at_level(logging.INFO, logger='gensim_anchor'):
        model = AnchorModel(corpus, num_topics=8, id2word=dictionary, random_state=0, passes=10,
                            iterations=400)
    text = caplog.text
    assert str(model) == "AnchorModel<num_terms=%d, num_topics=8, loss=L2, num_docs=%d>" % (
        len(dictionary), model.num_docs)
    for stage in ('co-occurrence', 'FastAnchorWords', 'RecoverL2'):
        assert stage in text
    ignored = [r.getMessage() for r in caplog.records if 'ignoring LdaModel arguments' in r.getMessage()]
    assert len(ignored) == 1 and 'passes=10' in ignored[0]
    assert 'iterations' not in ignored[0]  # used by document-topic inference
    assert model.iterations == 400
    assert set(model.timings) == {'cooccurrence', 'anchors', 'recovery', 'dirichlet'}
    assert all(t > 0 for t in model.timings.values())


def test_same_seed_same_model_and_different_seed_runs(lee):
    dictionary, corpus = lee
    a = AnchorModel(corpus, num_topics=8, id2word=dictionary, random_state=3)
    b = AnchorModel(iter(corpus), num_topics=8, id2word=dictionary, random_state=3)
    np.testing.assert_array_equal(a.anchors, b.anchors)
    np.testing.assert_array_equal(a.get_topics(), b.get_topics())
    c = AnchorModel(corpus, num_topics=8, id2word=dictionary, random_state=np.random.RandomState(3))
    np.testing.assert_array_equal(a.anchors, c.anchors)


@pytest.mark.parametrize('loss', ['L2', 'KL', 'original'])
def test_each_loss_trains(lee, loss):
    dictionary, corpus = lee
    model = AnchorModel(corpus, num_topics=8, id2word=dictionary, random_state=0, loss=loss)
    topics = model.get_topics()
    np.testing.assert_allclose(topics.sum(axis=1, dtype=np.float64), 1.0, atol=1e-6)
    assert np.isfinite(topics).all() and (topics >= 0).all()
    assert model.loss == loss
    if loss == 'original':
        assert model.solver_n_iter is None
    else:
        assert model.solver_n_iter.shape == (len(dictionary),)
        assert model.solver_converged.mean() > 0.9


def test_implicit_and_dense_q_give_the_same_topics(lee):
    dictionary, corpus = lee
    a = AnchorModel(corpus, num_topics=8, id2word=dictionary, random_state=0, q_mode='implicit')
    b = AnchorModel(corpus, num_topics=8, id2word=dictionary, random_state=0, q_mode='dense')
    np.testing.assert_array_equal(a.anchors, b.anchors)
    np.testing.assert_allclose(a.get_topics(), b.get_topics(), atol=1e-6)


def test_update_equals_training_on_everything(lee):
    dictionary, corpus = lee
    whole = AnchorModel(corpus, num_topics=8, id2word=dictionary, random_state=0)
    parts = AnchorModel(corpus[:120], num_topics=8, id2word=dictionary, random_state=0)
    assert parts.num_docs < whole.num_docs
    parts.update(corpus[120:])
    assert parts.num_docs == whole.num_docs
    np.testing.assert_array_equal(parts.anchors, whole.anchors)
    np.testing.assert_allclose(parts.get_topics(), whole.get_topics(), atol=1e-6)


def test_untrained_model_and_id2word_only(lee):
    dictionary, corpus = lee
    model = AnchorModel(id2word=dictionary, num_topics=8)
    assert model.num_terms == len(dictionary)
    with pytest.raises(RuntimeError, match='not been trained'):
        model.get_topics()
    model.update(corpus)
    assert model.get_topics().shape == (8, len(dictionary))


def test_missing_id2word_is_inferred_and_plain_dict_accepted(lee):
    dictionary, corpus = lee
    model = AnchorModel(corpus, num_topics=8, random_state=0)
    assert isinstance(model.id2word, FakeDict)
    assert model.num_terms == 1 + max(i for doc in corpus for i, _ in doc)
    id2word = {i: dictionary[i] for i in dictionary.keys()}
    plain = AnchorModel(corpus, num_topics=8, id2word=id2word, random_state=0)
    assert plain.num_terms == len(dictionary)
    assert plain.anchor_words == [dictionary[int(i)] for i in plain.anchors]


def test_coherence_model_accepts_anchor_model(lee_model, lee):
    dictionary, corpus = lee
    cm = CoherenceModel(model=lee_model, corpus=corpus, dictionary=dictionary, coherence='u_mass')
    per_topic = cm.get_coherence_per_topic()
    assert len(per_topic) == 8 and np.all(np.isfinite(per_topic))


# ----------------------------------------------------------------------------------------------
# Persistence
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize('suffix', ['', '.gz'])
def test_save_load_round_trip_is_exact(lee_model, tmp_path, suffix):
    fname = str(tmp_path / ('anchor.model' + suffix))
    lee_model.save(fname)
    loaded = AnchorModel.load(fname)
    np.testing.assert_array_equal(loaded.get_topics(), lee_model.get_topics())
    np.testing.assert_array_equal(loaded.anchors, lee_model.anchors)
    np.testing.assert_array_equal(loaded.R, lee_model.R)
    np.testing.assert_array_equal(loaded.p_z, lee_model.p_z)
    assert loaded.anchor_words == lee_model.anchor_words
    assert loaded.format_version == FORMAT_VERSION
    assert loaded._cooccurrence is None  # Q is not saved by default


def test_mmap_load_and_numpy_only_state(lee_model, tmp_path):
    fname = str(tmp_path / 'anchor.model')
    lee_model.save(fname, sep_limit=0)
    loaded = AnchorModel.load(fname, mmap='r')
    assert isinstance(loaded.topics, np.memmap)
    np.testing.assert_array_equal(np.asarray(loaded.topics), lee_model.get_topics())
    for name, value in vars(lee_model).items():
        assert 'jax' not in type(value).__module__, name


def test_saved_model_loads_without_jax(lee_model, tmp_path):
    import subprocess
    import sys
    fname = str(tmp_path / 'anchor.model')
    lee_model.save(fname)
    code = (
        "import sys; sys.modules['jax'] = None; sys.modules['jaxlib'] = None\n"
        "from gensim.utils import SaveLoad\n"
        "m = SaveLoad.load(%r)\n"
        "print(m.get_topics().shape, 'jax' in sys.modules and sys.modules['jax'] is not None)\n" % fname)
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(8, %d) False" % lee_model.num_terms


def test_update_after_load_needs_saved_cooccurrence(lee, tmp_path):
    dictionary, corpus = lee
    model = AnchorModel(corpus[:150], num_topics=8, id2word=dictionary, random_state=0)
    plain, full = str(tmp_path / 'plain.model'), str(tmp_path / 'full.model')
    model.save(plain)
    model.save(full, save_cooccurrence=True)
    with pytest.raises(RuntimeError, match='save_cooccurrence=True'):
        AnchorModel.load(plain).update(corpus[150:])
    resumed = AnchorModel.load(full)
    resumed.update(corpus[150:])
    whole = AnchorModel(corpus, num_topics=8, id2word=dictionary, random_state=0)
    np.testing.assert_allclose(resumed.get_topics(), whole.get_topics(), atol=1e-6)


def test_load_rejects_other_objects_and_newer_formats(lee_model, tmp_path):
    from gensim.utils import SaveLoad
    other = str(tmp_path / 'dict')
    Dictionary(common_texts).save(other)
    with pytest.raises(TypeError, match='not an AnchorModel'):
        AnchorModel.load(other)
    newer = str(tmp_path / 'newer.model')
    lee_model.format_version = FORMAT_VERSION + 1
    try:
        SaveLoad.save(lee_model, newer)
    finally:
        lee_model.format_version = FORMAT_VERSION
    with pytest.raises(ValueError, match='format %d' % (FORMAT_VERSION + 1)):
        AnchorModel.load(newer)


# ----------------------------------------------------------------------------------------------
# Input checks: precise messages
# ----------------------------------------------------------------------------------------------

def test_bad_parameters_are_named(lee):
    dictionary, corpus = lee
    cases = [
        (dict(num_topics=1), ValueError, 'num_topics must be >= 2'),
        (dict(num_topics=2.5), TypeError, 'num_topics must be an integer'),
        (dict(loss='l1'), ValueError, "loss must be one of 'L2', 'KL', 'original'"),
        (dict(eps=-1.0), ValueError, 'eps must be a finite number > 0'),
        (dict(eps=float('nan')), ValueError, 'eps must be a finite number > 0'),
        (dict(max_iter=0), ValueError, 'max_iter must be >= 1'),
        (dict(q_mode='sparse'), ValueError, 'q_mode must be one of'),
        (dict(anchor_min_df=1.5), ValueError, 'anchor_min_df as a float'),
        (dict(anchor_min_df='many'), TypeError, 'anchor_min_df must be an int'),
        (dict(chunksize=0), ValueError, 'chunksize must be >= 1'),
        # beyond 64 bits: numpy and JAX would raise a bare OverflowError naming no parameter
        (dict(iterations=2**63), ValueError, r'iterations must fit in a 64-bit integer'),
        (dict(max_iter=2**63), ValueError, r'max_iter must fit in a 64-bit integer'),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            AnchorModel(corpus, id2word=dictionary, **{'num_topics': 3, **kwargs})


def test_no_corpus_and_no_id2word():
    with pytest.raises(ValueError, match='at least one of corpus/id2word'):
        AnchorModel(num_topics=3)


def test_too_many_topics_names_the_candidates(lee):
    dictionary, corpus = lee
    with pytest.raises(ValueError, match=r'only \d+ words occur in at least anchor_min_df=200'):
        AnchorModel(corpus, num_topics=5, id2word=dictionary, anchor_min_df=200)
    with pytest.raises(ValueError, match='larger than the vocabulary'):
        AnchorModel(corpus, num_topics=len(dictionary) + 1, id2word=dictionary)


def test_corpus_that_does_not_match_the_dictionary(lee):
    dictionary, corpus = lee
    small = Dictionary(common_texts)
    with pytest.raises(ValueError, match='outside the dictionary'):
        AnchorModel(corpus, num_topics=3, id2word=small)


def test_short_documents_are_skipped_and_counted(lee, caplog):
    dictionary, corpus = lee
    noisy = [[]] + corpus[:100] + [[(0, 1)], []] + corpus[100:]
    with caplog.at_level(logging.INFO, logger='gensim_anchor'):
        model = AnchorModel(noisy, num_topics=8, id2word=dictionary, random_state=0)
    clean = AnchorModel(corpus, num_topics=8, id2word=dictionary, random_state=0)
    assert 'skipped 3 of %d documents with fewer than 2 tokens' % len(noisy) in caplog.text
    np.testing.assert_array_equal(model.anchors, clean.anchors)
    np.testing.assert_allclose(model.get_topics(), clean.get_topics(), atol=1e-6)


def test_cooccurrence_not_saved_grows_with_corpus(lee):
    # the implicit statistics hold nnz(H) entries, not V x V
    dictionary, corpus = lee
    cooc = build_cooccurrence(corpus, len(dictionary))
    assert cooc.H_tilde.nnz == sum(len(d) for d in corpus if sum(c for _, c in d) >= 2)


def test_a_few_capped_words_are_info_a_real_share_a_warning(lee, caplog, monkeypatch):
    # A handful of words stopped by max_iter just above the duality-gap tolerance: news for
    # INFO, not a WARNING; the same count as a real share is a WARNING. The cap is set just below
    # the steps of the default fit's slowest words (each word's steps do not depend on the cap).
    import gensim_anchor.anchormodel as anchormodel
    dictionary, corpus = lee
    steps = AnchorModel(corpus, num_topics=8, id2word=dictionary, random_state=0).solver_n_iter
    max_iter = int(np.sort(steps)[-3])
    with caplog.at_level(logging.INFO, logger='gensim_anchor'):
        model = AnchorModel(corpus, num_topics=8, id2word=dictionary, random_state=0,
                            max_iter=max_iter)
    capped = int((~model.solver_converged).sum())
    solved = int((model.solver_n_iter > 0).sum())  # at most the words solved (some take 0 steps)
    records = [r for r in caplog.records if 'stopped before the duality gap' in r.getMessage()]
    assert 0 < capped < 0.01 * solved  # the case the rule is for
    assert [r.levelno for r in records] == [logging.INFO]
    assert 'raise max_iter' in records[0].getMessage()
    caplog.clear()
    monkeypatch.setattr(anchormodel, 'CAPPED_WARNING_SHARE', capped / len(dictionary))
    with caplog.at_level(logging.INFO, logger='gensim_anchor'):
        AnchorModel(corpus, num_topics=8, id2word=dictionary, random_state=0, max_iter=max_iter)
    records = [r for r in caplog.records if 'stopped before the duality gap' in r.getMessage()]
    assert [r.levelno for r in records] == [logging.WARNING]


def test_the_docstring_states_the_defaults_the_code_uses():
    """The numbers the constructor's docstring gives as defaults are the ones it applies (the
    command line's help once said 'default: 1000' while passing None, the exact rows)."""
    import inspect
    import re

    from gensim_anchor._defaults import DEFAULT_EPS, REFINE_OPTIONS
    doc = inspect.getdoc(AnchorModel)
    params = inspect.signature(AnchorModel).parameters

    def stated(name, pattern):
        section = re.search(r"^%s :.*?(?=^\S)" % name, doc, re.M | re.S)
        assert section, name
        found = re.search(pattern, section.group(0))
        assert found, name
        return float(found.group(1))

    assert params['eps'].default is None
    assert stated('eps', r"\(default (\S+) for RecoverL2") == DEFAULT_EPS['L2']
    assert stated('eps', r"and (\S+), the authors', for RecoverKL") == DEFAULT_EPS['KL']
    assert stated('projection_dim', r"\(default (\d+)\)") == params['projection_dim'].default
    assert stated('rectify_max_iter', r"\(default (\d+)\)") == params['rectify_max_iter'].default
    assert (stated('refine_options', r"\(the cap, default (\d+)\)")
            == REFINE_OPTIONS['gibbs']['num_sweeps'])
