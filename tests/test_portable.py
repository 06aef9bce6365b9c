"""The portable model format: exact round trips, mmap, update after load, loading without JAX,
and a clear error (never code execution, never a half-built model) for every kind of tampering."""
import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
from gensim.corpora import Dictionary
from gensim.test.utils import common_texts
from gensim.utils import FakeDict

from gensim_anchor import AnchorModel
from gensim_anchor.anchormodel import FORMAT_VERSION
from gensim_anchor.portable import MODEL_FILE, PORTABLE_VERSION, PortableFormatError

from test_anchormodel import lee_corpus


@pytest.fixture(scope='module')
def lee():
    return lee_corpus()


@pytest.fixture(scope='module')
def lee_model(lee):
    dictionary, corpus = lee
    return AnchorModel(corpus, num_topics=8, id2word=dictionary, random_state=1)


@pytest.fixture(scope='module')
def common():
    dictionary = Dictionary(common_texts)
    return dictionary, [dictionary.doc2bow(text) for text in common_texts]


def assert_same_model(loaded, model, docs):
    """Same topics bit for bit, same inference, same LdaModel, same display."""
    for name in ('topics', 'alpha', 'eta', 'R', 'p_z', 'anchors', 'solver_n_iter', 'solver_gap',
                 'solver_converged'):
        a, b = getattr(loaded, name), getattr(model, name)
        if b is None:
            assert a is None, name
        else:
            assert a.dtype == b.dtype, name
            np.testing.assert_array_equal(a, b, err_msg=name)
    for name in ('num_topics', 'num_terms', 'chunksize', 'loss', 'eps', 'max_iter', 'projection_dim',
                 'q_mode', 'progress', 'anchor_min_df', 'cleanup', 'rectify', 'rectify_max_iter',
                 'seed_anchors', 'minimum_probability', 'minimum_phi_value', 'per_word_topics',
                 'iterations', 'gamma_threshold', 'alpha_sample', 'dtype', '_projection_seed',
                 'num_docs', 'num_tokens', 'anchor_groups', 'timings', 'refinement',
                 'lifecycle_events'):
        assert getattr(loaded, name) == getattr(model, name), name
    assert loaded.format_version == FORMAT_VERSION
    assert loaded.anchor_words == model.anchor_words
    assert loaded.show_topics(-1, formatted=True) == model.show_topics(-1, formatted=True)
    assert loaded.show_topics(2, formatted=False) == model.show_topics(2, formatted=False)
    mine, theirs = loaded.random_state.get_state(), model.random_state.get_state()
    np.testing.assert_array_equal(mine[1], theirs[1])
    assert mine[0] == theirs[0] and mine[2:] == theirs[2:]
    assert [loaded[doc] for doc in docs] == [model[doc] for doc in docs]
    gamma, sstats = loaded.inference(docs, collect_sstats=True)
    gamma0, sstats0 = model.inference(docs, collect_sstats=True)
    np.testing.assert_array_equal(gamma, gamma0)
    np.testing.assert_array_equal(sstats, sstats0)
    np.testing.assert_array_equal(loaded.to_ldamodel().get_topics(), model.to_ldamodel().get_topics())


# ----------------------------------------------------------------------------------------------
# Round trips
# ----------------------------------------------------------------------------------------------

def test_round_trip_is_exact(lee_model, lee, tmp_path):
    dictionary, corpus = lee
    lee_model.save_portable(str(tmp_path / 'm'))
    loaded = AnchorModel.load_portable(str(tmp_path / 'm'))
    assert_same_model(loaded, lee_model, corpus[:20])
    assert isinstance(loaded.id2word, Dictionary)
    for name in ('token2id', 'dfs', 'cfs', 'num_docs', 'num_pos', 'num_nnz'):
        assert getattr(loaded.id2word, name) == getattr(dictionary, name), name
    assert loaded._cooccurrence is None and loaded._sample is None  # not saved by default
    assert loaded._client is None
    doc = json.loads((tmp_path / 'm' / MODEL_FILE).read_text())
    assert doc['format'] == 'gensim_anchor.portable' and doc['format_version'] == PORTABLE_VERSION
    assert sorted(os.listdir(tmp_path / 'm')) == sorted([MODEL_FILE] + [
        entry['file'] for entry in doc['arrays'].values()])


@pytest.mark.parametrize('vocabulary', ['dict', 'FakeDict'])
def test_round_trip_other_id2word(common, tmp_path, vocabulary):
    dictionary, corpus = common
    id2word = dict(dictionary.items()) if vocabulary == 'dict' else None
    model = AnchorModel(corpus, num_topics=2, id2word=id2word, random_state=0,
                        alpha=np.array([0.3, 0.7]), eta=0.2, dtype=np.float64, anchor_min_df=0.1,
                        projection_dim=None)
    model.save_portable(tmp_path / 'm')  # a PathLike is fine
    loaded = AnchorModel.load_portable(tmp_path / 'm')
    assert type(loaded.id2word) is (dict if vocabulary == 'dict' else FakeDict)
    assert len(loaded.id2word) == len(model.id2word) == 12
    np.testing.assert_array_equal(loaded.alpha_arg, model.alpha_arg)
    np.testing.assert_array_equal(loaded.eta_arg, model.eta_arg)
    assert_same_model(loaded, model, corpus)


def test_original_loss_and_seeded_anchors(common, tmp_path):
    dictionary, corpus = common
    model = AnchorModel(corpus, num_topics=3, id2word=dictionary, random_state=0, loss='L2',
                        anchors=[['graph', 'trees']], anchor_min_df=1)
    model.save_portable(tmp_path / 'm')
    loaded = AnchorModel.load_portable(tmp_path / 'm')
    assert loaded.anchors[0] == -1 and len(loaded.anchor_groups[0]) == 2
    assert_same_model(loaded, model, corpus)


def test_refinement_record_survives(common, tmp_path):
    dictionary, corpus = common
    model = AnchorModel(corpus, num_topics=3, id2word=dictionary, random_state=0)
    model.refine(corpus, method='vb', passes=1)
    model.save_portable(tmp_path / 'm')
    loaded = AnchorModel.load_portable(tmp_path / 'm')
    assert loaded.refinement == model.refinement and loaded.refinement['method'] == 'vb'
    assert loaded.lifecycle_events[-1]['event'] == 'refined'
    assert_same_model(loaded, model, corpus)


def test_mmap(lee_model, tmp_path):
    lee_model.save_portable(tmp_path / 'm')
    loaded = AnchorModel.load_portable(tmp_path / 'm', mmap='r')
    for name in ('topics', 'eta', 'R', 'alpha'):
        assert isinstance(getattr(loaded, name), np.memmap), name
    np.testing.assert_array_equal(loaded.get_topics(), lee_model.get_topics())
    assert loaded.show_topics() == lee_model.show_topics()
    with pytest.raises(ValueError, match="mmap must be None"):
        AnchorModel.load_portable(tmp_path / 'm', mmap='w')


@pytest.mark.parametrize('q_mode', ['implicit', 'dense'])
def test_update_after_load_is_the_same_as_on_the_original(lee, tmp_path, q_mode):
    dictionary, corpus = lee
    original = AnchorModel(corpus[:150], num_topics=8, id2word=dictionary, random_state=0,
                           q_mode=q_mode)
    original.save_portable(tmp_path / 'plain')
    original.save_portable(tmp_path / 'full', save_cooccurrence=True)
    with pytest.raises(RuntimeError, match='save_cooccurrence=True'):
        AnchorModel.load_portable(tmp_path / 'plain').update(corpus[150:])
    original.save_portable(tmp_path / 'again', save_cooccurrence=True)
    original.save_portable(tmp_path / 'again')  # over it: no statistics left behind
    assert not [f for f in os.listdir(tmp_path / 'again') if f.startswith(('cooc_', 'sample_'))]
    resumed = AnchorModel.load_portable(tmp_path / 'full')
    assert resumed._cooccurrence.mode == q_mode
    assert resumed._sample.docs == original._sample.docs
    resumed.update(corpus[150:])
    original.update(corpus[150:])
    np.testing.assert_array_equal(resumed.get_topics(), original.get_topics())
    np.testing.assert_array_equal(resumed.alpha, original.alpha)
    assert resumed.num_docs == original.num_docs


def test_loads_without_jax(lee_model, tmp_path):
    path = str(tmp_path / 'm')
    lee_model.save_portable(path)
    code = (
        "import sys; sys.modules['jax'] = None; sys.modules['jaxlib'] = None\n"
        "from gensim_anchor import AnchorModel\n"
        "m = AnchorModel.load_portable(%r, mmap='r')\n"
        "print(m.get_topics().shape, len(m.show_topics()), m.anchor_words[0])\n"
        "print(sys.modules['jax'] is None)\n" % path)
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["(8, %d) 8 %s" % (lee_model.num_terms, lee_model.anchor_words[0]),
                                          "True"]


def test_save_refusals(common, tmp_path):
    dictionary, corpus = common
    with pytest.raises(RuntimeError, match='not been trained'):
        AnchorModel(num_topics=2, id2word=dictionary).save_portable(tmp_path / 'untrained')
    model = AnchorModel(corpus, num_topics=2, id2word={i: w.encode() for i, w in dictionary.items()},
                        random_state=0)
    with pytest.raises(TypeError, match="map word ids to str"):
        model.save_portable(tmp_path / 'bytes')

    class Remote:  # stands for DistributedCooccurrence: only its mode matters here
        mode = 'distributed'
    model._cooccurrence = Remote()
    model.id2word = dictionary
    with pytest.raises(ValueError, match="on a Dask cluster"):
        model.save_portable(tmp_path / 'dask', save_cooccurrence=True)
    model.save_portable(tmp_path / 'dask')  # without the statistics it is fine


# ----------------------------------------------------------------------------------------------
# Tampering: each kind gives a PortableFormatError (a ValueError) naming file and problem
# ----------------------------------------------------------------------------------------------

def _touch(path):  # what a malicious pickle would run
    with open(path, 'w') as fout:
        fout.write('pwned')
    return 0.5


class _Payload:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (_touch, (self.path,))


@pytest.fixture
def saved(common, tmp_path_factory):
    """A freshly saved small model directory, with co-occurrence statistics (so every array kind
    is present), one per test: tests tamper with it."""
    path = tmp_path_factory.mktemp('portable') / 'm'
    _small_model(common).save_portable(path, save_cooccurrence=True)
    return path


_SMALL = {}


def _small_model(common):
    if 'model' not in _SMALL:
        dictionary, corpus = common
        _SMALL['model'] = AnchorModel(corpus, num_topics=3, id2word=dictionary, random_state=0,
                                      anchor_min_df=1)
    return _SMALL['model']


def edit_json(path, change):
    doc = json.loads((path / MODEL_FILE).read_text())
    change(doc)
    (path / MODEL_FILE).write_text(json.dumps(doc))


def replace_array(path, name, array, *, manifest=True):
    """Write ``array`` as the file of ``name``; update the manifest to match (or not)."""
    doc = json.loads((path / MODEL_FILE).read_text())
    entry = doc['arrays'][name]
    np.save(path / entry['file'], array, allow_pickle=True)
    if manifest:
        entry.update(dtype=array.dtype.name, shape=list(array.shape))
        (path / MODEL_FILE).write_text(json.dumps(doc))


def topics_of(path):
    return np.load(path / 'topics.npy')


def expect(path, match, error=PortableFormatError):
    with pytest.raises(error, match=match) as info:
        AnchorModel.load_portable(path)
    return info.value


def test_object_array_is_refused_and_never_unpickled(saved, tmp_path):
    marker = tmp_path / 'pwned'
    payload = np.array([_Payload(str(marker))] * 3, dtype=object)
    replace_array(saved, 'alpha', payload, manifest=False)
    expect(saved, r"alpha\.npy: holds object data; only plain numeric arrays")
    replace_array(saved, 'alpha', payload)  # the manifest says 'object' too
    expect(saved, r"'arrays\.alpha\.dtype' must be one of float16")
    assert not marker.exists()


@pytest.mark.parametrize('change, match', [
    (lambda d: d['options'].__setitem__('num_topics', '3'),
     r"'options\.num_topics' must be int, got str '3'"),
    (lambda d: d['options'].__setitem__('num_topics', True), r"'options\.num_topics' must be int, got bool"),
    (lambda d: d['options'].__setitem__('loss', 'L1'), r"'options\.loss': loss must be one of"),
    (lambda d: d['options'].__setitem__('chunksize', 0), r"'options\.chunksize': chunksize must be >= 1"),
    (lambda d: d['options'].__setitem__('dtype', 'object'), r"'options\.dtype' must be 'float16'"),
    (lambda d: d['options'].__setitem__('surprise', 1), r"unknown keys in 'options': surprise"),
    (lambda d: d['state'].pop('anchor_groups'), r"missing key 'state\.anchor_groups'"),
    (lambda d: d['state'].__setitem__('anchor_groups', [[0], [1], [99]]),
     r"'state\.anchor_groups' must be 3 non-empty lists of word ids in 0\.\.11"),
    (lambda d: d.pop('options'), r"missing key 'options'"),
    (lambda d: d.__setitem__('arrays', []), r"'arrays' must be dict, got list"),
    (lambda d: d['arrays'].pop('topics'), r"missing key 'arrays\.topics'"),
    (lambda d: d['arrays']['topics'].pop('shape'), r"missing key 'arrays\.topics\.shape'"),
    (lambda d: d['id2word'].__setitem__('token2id', [["graph", "0"]]),
     r"'id2word\.token2id' must be a list of \[str, int >= 0\] pairs"),
    (lambda d: d['id2word'].__setitem__('type', 'pickle'), r"'id2word\.type' must be 'Dictionary'"),
    (lambda d: d['id2word']['token2id'].pop(),
     r"'id2word' covers 11 word ids, but 'options\.num_terms' is 12"),
    (lambda d: d['random_state'].__setitem__('pos', 10 ** 6), r"'random_state' is not a valid MT19937 state"),
    (lambda d: d['sample']['rng'].__setitem__('bit_generator', 'MT19937'),
     r"'sample\.rng' is not a valid PCG64 state"),
    (lambda d: d['cooccurrence'].__setitem__('mode', 'distributed'),
     r"'cooccurrence\.mode' must be 'implicit' or 'dense'"),
    (lambda d: d.__setitem__('format', 'something else'), r"'format' must be 'gensim_anchor\.portable'"),
    (lambda d: d.__setitem__('class', 'LdaModel'), r"holds a LdaModel, not an AnchorModel"),
])
def test_json_with_wrong_types_or_missing_keys(saved, change, match):
    edit_json(saved, change)
    expect(saved, r"model\.json: " + match)


def test_json_that_is_not_an_object_or_has_nan(saved):
    (saved / MODEL_FILE).write_text("[1, 2]")
    expect(saved, r"model\.json: must hold a JSON object, got list")
    (saved / MODEL_FILE).write_text('{"format": NaN}')
    expect(saved, r"model\.json: non-finite number NaN")


@pytest.mark.parametrize('name, make, match', [
    ('topics', lambda t: t[:, :-1] / t[:, :-1].sum(axis=1, keepdims=True),
     r"'arrays\.topics' has shape \(3, 11\), but options say num_topics=3, num_terms=12"),
    ('topics', lambda t: np.vstack([t, t[:1]]), r"'arrays\.topics' has shape \(4, 12\)"),
    ('alpha', lambda t: np.ones(4), r"'arrays\.alpha' has shape \(4,\), expected \(3,\)"),
    ('R', lambda t: np.eye(2), r"'arrays\.R' has shape \(2, 2\), expected \(3, 3\)"),
    ('anchors', lambda t: np.array([0, 1, 2]), r"'arrays\.anchors' disagrees with 'state\.anchor_groups'"),
    ('solver_gap', lambda t: np.zeros(5), r"'arrays\.solver_gap' has shape \(5,\), expected \(12,\)"),
    ('cooc_h_hat', lambda t: np.zeros(13), r"'arrays\.cooc_h_hat' has shape \(13,\), expected \(12,\)"),
    ('cooc_H_indptr', lambda t: np.arange(3), r"'arrays\.cooc_H_indptr' has shape \(3,\), expected \(9,\)"),
    ('sample_ids', lambda t: np.full(27, 1), r"'arrays\.sample_counts' has shape \(28,\), expected \(27,\)"),
    ('sample_ids', lambda t: np.full(28, 40), r"'arrays\.sample_ids' holds word ids outside 0\.\.11"),
])
def test_arrays_whose_shapes_disagree(saved, name, make, match):
    replace_array(saved, name, make(topics_of(saved)))
    expect(saved, r"model\.json: " + match)


def test_array_that_disagrees_with_its_manifest(saved):
    replace_array(saved, 'p_z', np.ones(4), manifest=False)
    expect(saved, r"p_z\.npy: holds float64 \(4,\), but model\.json lists float64 \(3,\)")
    edit_json(saved, lambda d: d['options'].__setitem__('num_topics', 2))  # JSON against JSON
    expect(saved, r"'state\.anchor_groups' must be 2 non-empty lists of word ids")


@pytest.mark.parametrize('value, match', [
    (np.nan, r"holds non-finite values \(topic 1\)"),
    (np.inf, r"holds non-finite values \(topic 1\)"),
    (-0.01, r"holds negative probabilities \(topic 1\)"),
])
def test_topics_that_are_not_probabilities(saved, value, match):
    topics = topics_of(saved)
    topics[1, 4] = value
    replace_array(saved, 'topics', topics)
    expect(saved, r"model\.json: 'arrays\.topics' " + match)


def test_topic_rows_that_do_not_sum_to_one(saved):
    topics = topics_of(saved)
    topics[2] *= np.float32(0.999)
    replace_array(saved, 'topics', topics)
    expect(saved, r"'arrays\.topics': topic 2 sums to 0\.999\d*, not 1")


@pytest.mark.parametrize('name, value, match', [
    ('alpha', np.array([0.1, 0.0, 0.2]), r"'arrays\.alpha' must hold finite numbers > 0"),
    ('eta', np.full(12, np.nan), r"'arrays\.eta' must hold finite numbers > 0"),
    ('R', np.full((3, 3), np.inf), r"'arrays\.R' holds non-finite values"),
    ('topics', np.full((3, 12), 1 / 12, dtype=np.float64), r"'arrays\.topics' has dtype float64, but "
                                                            r"'options\.dtype' is float32"),
])
def test_other_bad_values(saved, name, value, match):
    replace_array(saved, name, value)
    expect(saved, match)


@pytest.mark.parametrize('name, change, match', [
    ('cooc_h_hat', lambda a: a * 1e300, r"the co-occurrence arrays are inconsistent: the row sums of Q "
                                        r"they give are not all finite and >= 0"),
    ('cooc_H_data', lambda a: a * 1e300, r"the co-occurrence arrays are inconsistent"),
    ('cooc_H_data', lambda a: -a, r"'arrays\.cooc_H_data' holds negative values"),
    ('cooc_term_counts', lambda a: a - a.max() - 1, r"'arrays\.cooc_term_counts' holds negative values"),
    ('cooc_doc_freq', lambda a: a - a.max() - 1, r"'arrays\.cooc_doc_freq' holds negative values"),
    ('cooc_doc_freq', lambda a: a + 10 ** 6, r"'arrays\.cooc_doc_freq' has word \d+ in 10000\d\d documents, "
                                             r"more than the \d+ read"),
    ('cooc_doc_freq', np.zeros_like, r"'arrays\.cooc_doc_freq' and 'arrays\.cooc_term_counts' disagree"),
    ('cooc_term_counts', lambda a: a * 2, r"'arrays\.cooc_term_counts' adds up to \d+ tokens, but "
                                          r"'cooccurrence\.num_tokens' is \d+"),
    ('p_z', lambda a: -a, r"'arrays\.p_z' must be a distribution over the topics"),
    ('p_z', lambda a: a * 3, r"'arrays\.p_z' must be a distribution over the topics"),
])
def test_statistics_that_no_corpus_gives_are_refused_at_load(saved, name, change, match):
    # Each array alone is well formed; a scaled h_hat loaded, then the next update() failed with
    # "only 0 words occur in at least anchor_min_df=... documents" (and a scaled H~ with
    # "p_w must be finite"); doc_freq, term_counts and p_z that no corpus gives loaded as they were
    # (the candidates, show_topics' order and refine()'s start are read from them).
    replace_array(saved, name, change(np.load(saved / (name + '.npy'))))
    expect(saved, match)


def test_newer_format_version(saved):
    edit_json(saved, lambda d: d.__setitem__('format_version', PORTABLE_VERSION + 1))
    expect(saved, r"written in portable format version %d, which this version of gensim_anchor "
                  r"\(portable format %d\) cannot read; upgrade" % (PORTABLE_VERSION + 1, PORTABLE_VERSION))
    edit_json(saved, lambda d: d.__setitem__('format_version', 0))
    expect(saved, r"portable format version 0")


def test_truncated_files(saved):
    data = (saved / 'topics.npy').read_bytes()
    (saved / 'topics.npy').write_bytes(data[:-7])
    expect(saved, r"topics\.npy: is truncated: %d bytes, %d expected" % (len(data) - 7, len(data)))
    (saved / 'topics.npy').write_bytes(data[:20])  # inside the header
    expect(saved, r"topics\.npy: not a valid \.npy file")
    (saved / 'topics.npy').write_bytes(data + b'\0' * 8)
    expect(saved, r"topics\.npy: is longer than its header says")
    (saved / 'topics.npy').write_bytes(data)
    with pytest.raises(PortableFormatError, match=r"topics\.npy: is truncated"):
        (saved / 'topics.npy').write_bytes(data[:-7])
        AnchorModel.load_portable(saved, mmap='r')
    text = (saved / MODEL_FILE).read_text()
    (saved / MODEL_FILE).write_text(text[:len(text) // 2])
    expect(saved, r"model\.json: truncated or not valid JSON")


@pytest.mark.parametrize('shape', [[2**62, 4], [2**64, 1]])
def test_shape_whose_size_does_not_fit_64_bits(saved, shape):
    # A header-only file: as an int64, 2**62 x 4 elements wrap around to 0 bytes of data, which
    # is what the file holds; 2**64 does not convert to an int64 at all.
    fname = saved / 'solver_gap.npy'
    with open(fname, 'wb') as fout:
        np.lib.format.write_array_header_1_0(
            fout, {'descr': '<f8', 'fortran_order': False, 'shape': tuple(shape)})
    header = fname.stat().st_size
    edit_json(saved, lambda d: d['arrays']['solver_gap'].__setitem__('shape', shape))
    expect(saved, r"solver_gap\.npy: is truncated: %d bytes, %d expected"
           % (header, header + 8 * shape[0] * shape[1]))


@pytest.fixture
def saved_refined(common, tmp_path_factory):
    """A refined model's directory: it keeps the training documents for update()."""
    dictionary, corpus = common
    path = tmp_path_factory.mktemp('portable') / 'm'
    AnchorModel(corpus, num_topics=2, id2word=dictionary, random_state=0, anchor_min_df=1,
                refine='gibbs', refine_options=dict(num_sweeps=2)).save_portable(path, save_cooccurrence=True)
    return path


def test_kept_documents_are_checked(saved_refined):
    AnchorModel.load_portable(saved_refined)  # as saved, it loads
    lengths = np.load(saved_refined / 'documents_lengths.npy')
    # Eight lengths of 2**61 sum, as int64, to 0, which would match empty word arrays: a store
    # of wrapped int32 lengths instead of an error.
    wrapped = np.zeros(len(lengths), np.int64)
    wrapped[:8] = 2**61
    assert len(lengths) >= 8 and wrapped.sum() == 0
    replace_array(saved_refined, 'documents_lengths', wrapped)
    replace_array(saved_refined, 'documents_ids', np.zeros(0, np.int64))
    replace_array(saved_refined, 'documents_counts', np.zeros(0, np.int64))
    expect(saved_refined, r"'arrays\.documents_lengths' must lie in 0\.\.2147483647")
    bad = lengths.astype(np.int64)
    bad[:2] = [-1, bad[0] + bad[1] + 1]  # the same sum
    replace_array(saved_refined, 'documents_lengths', bad)
    expect(saved_refined, r"'arrays\.documents_lengths' must lie in 0\.\.2147483647")


def test_kept_counts_must_fit_the_store(saved_refined):
    counts = np.load(saved_refined / 'documents_counts.npy').astype(np.int64)
    counts[0] = 2**32 + 1  # 1 as an int32
    replace_array(saved_refined, 'documents_counts', counts)
    expect(saved_refined, r"'arrays\.documents_counts' must lie in 0\.\.2147483647")


@pytest.mark.parametrize('fname', ['../outside.npy', '/tmp/outside.npy', 'sub/topics.npy',
                                   '.hidden.npy', 'topics.pkl', 'a\\b.npy'])
def test_file_names_outside_the_directory(saved, fname):
    np.save(saved.parent / 'outside.npy', topics_of(saved))
    edit_json(saved, lambda d: d['arrays']['topics'].__setitem__('file', fname))
    expect(saved, r"'arrays\.topics\.file' must be a plain \.npy file name inside the model directory")


def test_symlink_outside_the_directory(saved, tmp_path):
    outside = tmp_path / 'elsewhere.npy'
    np.save(outside, topics_of(saved))
    os.remove(saved / 'topics.npy')
    os.symlink(outside, saved / 'topics.npy')
    expect(saved, r"topics\.npy points outside the model directory")
    os.remove(saved / 'topics.npy')
    expect(saved, r"is incomplete: the array file topics\.npy listed in model\.json is missing",
           FileNotFoundError)


def test_not_a_portable_directory(lee_model, tmp_path):
    with pytest.raises(FileNotFoundError, match="no portable model directory"):
        AnchorModel.load_portable(tmp_path / 'missing')
    (tmp_path / 'empty').mkdir()
    with pytest.raises(FileNotFoundError, match="it has no model.json"):
        AnchorModel.load_portable(tmp_path / 'empty')
    lee_model.save(str(tmp_path / 'pickled'))
    with pytest.raises(PortableFormatError, match="is not a portable model directory .*AnchorModel.load"):
        AnchorModel.load_portable(tmp_path / 'pickled')


def test_pickled_json_is_never_unpickled(saved, tmp_path):
    """model.json replaced by a pickle: refused as text, the payload never runs."""
    marker = tmp_path / 'pwned'
    (saved / MODEL_FILE).write_bytes(pickle.dumps(_Payload(str(marker))))
    expect(saved, r"model\.json: (not UTF-8 text|truncated or not valid JSON)")
    assert not marker.exists()


def test_seeds_and_anchor_groups_are_checked_as_the_constructor_checks_them(saved):
    # A tampered file that no constructor would have accepted: groups with the original Recover.
    def groups_with_original(doc):
        doc['options']['loss'] = 'original'
        doc['state']['anchor_groups'][0] = doc['state']['anchor_groups'][0] + [
            (doc['state']['anchor_groups'][0][0] + 1) % doc['options']['num_terms']]
    edit_json(saved, groups_with_original)
    expect(saved, r"'state\.anchor_groups': groups of anchor words need loss='L2' or 'KL'")


def test_seeded_words_need_the_vocabulary_they_name(saved):
    edit_json(saved, lambda d: d['options'].__setitem__('seed_anchors', [['a'], ['b'], ['c'], ['d']]))
    expect(saved, r"'options\.seed_anchors': 4 seeded anchors for num_topics=3")
