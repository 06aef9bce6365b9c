"""The ``gensim-anchor`` command line, run in-process through ``main(argv)``."""
import gzip
import inspect
import re
import subprocess
import sys

import numpy as np
import pytest
from gensim.corpora import Dictionary, MmCorpus
from gensim.parsing.preprocessing import STOPWORDS
from gensim.utils import SaveLoad

from gensim_anchor import AnchorModel
from gensim_anchor.cli import main

# Four themes with disjoint vocabularies: every word is an anchor of its theme.
GROUPS = {
    'sport': "football goal striker referee stadium league penalty midfield keeper tournament",
    'kitchen': "oven recipe flour butter baking simmer garlic saucepan pastry dough",
    'space': "rocket orbit astronaut telescope galaxy planet launch satellite comet nebula",
    'money': "stock bond dividend investor equity trading portfolio broker hedge currency",
}
GROUPS = {name: words.split() for name, words in GROUPS.items()}
GROUP_OF = {word: name for name, words in GROUPS.items() for word in words}
assert not STOPWORDS & set(GROUP_OF)

TOPIC_LINE = re.compile(r"^topic +(\d+)  \[anchor: (\S+)\]  (.+)$")
COHERENCE_LINE = re.compile(r"^coherence  topic +(\d+)  (-?\d+\.\d+|nan)$")
MEAN_LINE = re.compile(r"^coherence  mean +(-?\d+\.\d+)$")


def synthetic_texts(num_docs=200, length=25, seed=0):
    """Documents mostly (85%) about one theme, in turn, with some words of the others."""
    rng = np.random.default_rng(seed)
    names = sorted(GROUPS)
    texts = []
    for d in range(num_docs):
        main_theme = names[d % len(names)]
        words = []
        for _ in range(length):
            theme = main_theme if rng.random() < 0.85 else names[rng.integers(len(names))]
            words.append(GROUPS[theme][rng.integers(len(GROUPS[theme]))])
        texts.append(words)
    return texts


def parse(out):
    """(topics, coherences, mean) from the printed output; topics are (index, anchor, words)."""
    topics, coherences, mean = [], [], None
    for line in out.splitlines():
        if match := TOPIC_LINE.match(line):
            topics.append((int(match[1]), match[2], match[3].split(", ")))
        elif match := COHERENCE_LINE.match(line):
            coherences.append((int(match[1]), float(match[2])))
        elif match := MEAN_LINE.match(line):
            mean = float(match[1])
    return topics, coherences, mean


def check_output(out, num_topics, topn=10):
    topics, coherences, mean = parse(out)
    assert [t[0] for t in topics] == list(range(num_topics))
    for _, anchor, words in topics:
        assert len(words) == topn
        assert len(set(words)) == topn
    assert [c[0] for c in coherences] == list(range(num_topics))
    values = [value for _, value in coherences]
    assert all(np.isfinite(values)) and all(v <= 0 for v in values)  # UMass is a mean log ratio
    assert mean == pytest.approx(np.mean(values), abs=1e-4)
    return topics


def check_error(capsys, argv, message):
    assert main(argv) == 2
    out, err = capsys.readouterr()
    errors = [line for line in err.splitlines() if line.startswith("gensim-anchor: error: ")]
    assert len(errors) == 1, err
    assert message in errors[0]
    assert "Traceback" not in err and "Traceback" not in out


def assert_themes_separated(topics, top=5):
    """Each topic's top words come from one theme, and every theme has a topic."""
    themes = []
    for _, anchor, words in topics:
        theme = {GROUP_OF[word] for word in words[:top]}
        assert len(theme) == 1, (anchor, words)
        assert GROUP_OF[anchor] in theme
        themes.append(theme.pop())
    assert sorted(themes) == sorted(GROUPS)


@pytest.fixture(scope='module')
def bow_files(tmp_path_factory):
    """The synthetic corpus as Matrix Market, UCI (gzipped) and LDA-C files, one id order."""
    path = tmp_path_factory.mktemp('bow')
    texts = synthetic_texts()
    dictionary = Dictionary(texts)
    corpus = [dictionary.doc2bow(text) for text in texts]
    vocab = [dictionary[i] for i in range(len(dictionary))]

    MmCorpus.serialize(str(path / 'corpus.mm'), corpus)
    dictionary.save(str(path / 'dict.pkl'))
    dictionary.save_as_text(str(path / 'dict.txt'))
    dictionary.save_as_text(str(path / 'dict_text_no_ext'))
    SaveLoad().save(str(path / 'other.pkl'))  # a gensim object, but no Dictionary

    (path / 'vocab.txt').write_text("\n".join(vocab) + "\n")
    nnz = sum(len(doc) for doc in corpus)
    with gzip.open(path / 'docword.txt.gz', 'wt') as fout:
        fout.write("%d\n%d\n%d\n" % (len(corpus), len(vocab), nnz))
        for d, doc in enumerate(corpus, start=1):
            for word_id, count in doc:
                fout.write("%d %d %d\n" % (d, word_id + 1, count))
    with open(path / 'corpus.ldac', 'w') as fout:
        for doc in corpus:
            fout.write("%d %s\n" % (len(doc), " ".join("%d:%d" % pair for pair in doc)))
    return path


def test_default_corpus(tmp_path, capsys):
    fname = tmp_path / 'lee.model'
    assert main(['--num-topics', '5', '--output', str(fname)]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    topics = check_output(out, 5)
    assert "lee_background.cor" in out and "300 documents" in out
    assert re.search(r"^fit: 5 topics, loss L2, in \d+\.\d\ds \(cooccurrence", out, re.M)
    assert "model saved to %s" % fname in out

    model = AnchorModel.load(str(fname))
    assert model.num_topics == 5 and model.get_topics().shape[0] == 5
    # Options not given on the command line are the model's own defaults (the projection was
    # once None, the exact rows, against the help's "default: 1000").
    defaults = inspect.signature(AnchorModel).parameters
    for option in ('loss', 'anchor_min_df', 'projection_dim'):
        assert getattr(model, option) == defaults[option].default, option
    assert model.refine_method is None and defaults['refine'].default is None
    assert [anchor for _, anchor, _ in topics] == model.anchor_words
    for topic, anchor, words in topics:
        assert words == [word for word, _ in model.show_topic(topic, topn=10)]


def test_text_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    fname = tmp_path / 'docs.txt'
    fname.write_text("\n".join(" ".join(text).upper() + "." for text in synthetic_texts()) + "\n")
    argv = ['--text', str(fname), '-k', '4', '--topn', '6', '--no-save', '--loss', 'KL']
    assert main(argv) == 0
    out, _ = capsys.readouterr()
    assert "200 documents, 40 terms" in out
    assert_themes_separated(check_output(out, 4, topn=6))
    assert [p.name for p in tmp_path.iterdir()] == ['docs.txt']  # --no-save


def test_text_file_filtered_away(tmp_path, capsys):
    fname = tmp_path / 'tiny.txt'
    fname.write_text("rocket orbit\ncomet galaxy\n")
    check_error(capsys, ['--text', str(fname), '--no-save'], "lower --no-below")


@pytest.mark.parametrize('dict_name', ['dict.pkl', 'dict.txt', 'dict_text_no_ext'])
def test_formats_agree(bow_files, tmp_path, capsys, dict_name):
    """The same corpus as MM (each dictionary format), UCI and LDA-C gives the same model."""
    common = ['-k', '4', '--seed', '3']
    runs = {
        'mm': ['--mm', str(bow_files / 'corpus.mm'), '--dict', str(bow_files / dict_name)],
        'uci': ['--uci', str(bow_files / 'docword.txt.gz'), str(bow_files / 'vocab.txt')],
        'ldac': ['--ldac', str(bow_files / 'corpus.ldac'), str(bow_files / 'vocab.txt')],
    }
    printed = {}
    for name, argv in runs.items():
        fname = tmp_path / (name + '.model')
        assert main(argv + common + ['-o', str(fname)]) == 0, name
        out, _ = capsys.readouterr()
        assert "200 documents, 40 terms" in out
        topics = check_output(out, 4)
        assert_themes_separated(topics)
        assert AnchorModel.load(str(fname)).anchor_words == [anchor for _, anchor, _ in topics]
        printed[name] = [line for line in out.splitlines()
                         if line.startswith(('topic', 'coherence'))]
    assert printed['mm'] == printed['uci'] == printed['ldac']


def test_quiet(bow_files, capsys):
    argv = ['--ldac', str(bow_files / 'corpus.ldac'), str(bow_files / 'vocab.txt'),
            '-k', '4', '-q', '--no-save']
    assert main(argv) == 0
    out, err = capsys.readouterr()
    check_output(out, 4)
    assert "corpus:" not in out and "fit:" not in out and "saved" not in out
    assert err == ""


@pytest.mark.parametrize('argv, message', [
    (['--text', '{tmp}/missing.txt'], "no such file: {tmp}/missing.txt"),
    (['--uci', '{tmp}/missing.txt', '{bow}/vocab.txt'], "no such file: {tmp}/missing.txt"),
    (['--mm', '{bow}/corpus.mm'], "--mm needs --dict"),
    (['--dict', '{bow}/dict.pkl'], "--dict goes with --mm"),
    (['--text', '{bow}/vocab.txt', '--uci', '{bow}/docword.txt.gz', '{bow}/vocab.txt'],
     "not allowed with argument"),
    (['--loss', 'L1'], "invalid choice: 'L1'"),
    (['--topn', '0'], "--topn must be >= 1"),
    (['--seed', '-1'], "--seed must be in 0..2**32 - 1, got -1"),  # was numpy's 'Seed must be...'
    (['--text', '{tmp}/letters.txt'], "{tmp}/letters.txt has no words: tokenised as gensim's"),
    (['--text', '{tmp}/rare.txt'], "none of the 2 words in {tmp}/rare.txt is left after filter_extremes"),
    (['-o', '{tmp}/no/such/dir/m'], "no such directory"),
    (['--mm', '{bow}/corpus.mm', '--dict', '{bow}/corpus.mm'],
     "cannot read dictionary {bow}/corpus.mm: neither a saved Dictionary"),
    (['--mm', '{bow}/corpus.mm', '--dict', '{bow}/vocab.txt'], "cannot read text dictionary"),
    (['--mm', '{bow}/corpus.mm', '--dict', '{bow}/other.pkl'], "holds a SaveLoad, not a gensim"),
    # Raised by AnchorModel: reported the same way.
    (['--num-topics', '1'], "num_topics must be >= 2"),
    (['--ldac', '{bow}/corpus.ldac', '{bow}/vocab.txt', '-k', '41'],
     "num_topics=41 is larger than the vocabulary (40 words)"),
])
def test_errors(bow_files, tmp_path, capsys, argv, message):
    fill = dict(tmp=tmp_path, bow=bow_files)
    (tmp_path / 'letters.txt').write_text("a b c\n\nd e f\n")  # one-letter tokens only
    (tmp_path / 'rare.txt').write_text("alpha beta\n")  # 2 words, in fewer than 5 documents
    argv = [arg.format(**fill) for arg in argv] + ([] if '-o' in argv else ['--no-save'])
    check_error(capsys, argv, message.format(**fill))


def test_word_id_outside_vocabulary(tmp_path, capsys):
    """A UCI file whose ids exceed its vocab: AnchorModel's ValueError, one line, status 2."""
    (tmp_path / 'vocab.txt').write_text("alpha\nbeta\ngamma\n")
    (tmp_path / 'docword.txt').write_text("2\n3\n4\n1 1 2\n1 4 1\n2 2 1\n2 3 3\n")
    argv = ['--uci', str(tmp_path / 'docword.txt'), str(tmp_path / 'vocab.txt'), '-k', '2',
            '--no-save']
    check_error(capsys, argv, "outside the dictionary")


@pytest.mark.parametrize('argv, message', [
    (['--text', '{tmp}/latin1.txt'], "cannot read {tmp}/latin1.txt as UTF-8 text: 'utf-8' codec"),
    (['--uci', '{tmp}/words.txt', '{bow}/vocab.txt'],
     "cannot read {tmp}/words.txt as a UCI docword file with vocabulary {bow}/vocab.txt: "
     "invalid literal for int()"),
    (['--uci', '{tmp}/short_line.txt', '{bow}/vocab.txt'],
     "cannot read {tmp}/short_line.txt as a UCI docword file"),
    (['--uci', '{bow}/docword.txt.gz', '{tmp}/latin1.txt'],
     "cannot read {tmp}/latin1.txt as the vocabulary of {bow}/docword.txt.gz: 'utf-8' codec"),
    (['--ldac', '{tmp}/words.txt', '{bow}/vocab.txt'],
     "cannot read {tmp}/words.txt as an LDA-C corpus with vocabulary {bow}/vocab.txt: "
     "invalid literal for int()"),
    (['--mm', '{tmp}/words.txt', '--dict', '{bow}/dict.pkl'],
     "cannot read {tmp}/words.txt as a Matrix Market corpus: "),
])
def test_malformed_input_files_are_named(bow_files, tmp_path, capsys, argv, message):
    # The corpus readers' own errors do not say which file, or which format it was read as.
    (tmp_path / 'latin1.txt').write_bytes("caf\xe9 cr\xe8me br\xfbl\xe9e\n".encode('latin-1'))
    (tmp_path / 'words.txt').write_text("rocket orbit comet\ngalaxy nebula\n")
    (tmp_path / 'short_line.txt').write_text("2\n3\n4\n1 1\n")
    fill = dict(tmp=tmp_path, bow=bow_files)
    check_error(capsys, [arg.format(**fill) for arg in argv] + ['-k', '2', '--no-save'],
                message.format(**fill))


def test_help_module():
    result = subprocess.run([sys.executable, '-m', 'gensim_anchor', '--help'],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: gensim-anchor")
    for option in ('--text', '--mm', '--uci', '--ldac', '--num-topics', '--loss', '--no-save',
                   '--save-format', '--load'):
        assert option in result.stdout
    assert "10 on the bundled corpus, 20 on any other" in " ".join(result.stdout.split())


# ----------------------------------------------------------------------------------------------
# Saved models: the portable format, --load
# ----------------------------------------------------------------------------------------------

def topic_lines(out):
    return [line for line in out.splitlines() if line.startswith('topic')]


def test_portable_save_and_load(bow_files, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    corpus = ['--ldac', str(bow_files / 'corpus.ldac'), str(bow_files / 'vocab.txt'), '-k', '4']
    portable = tmp_path / 'portable_model'
    assert main(corpus + ['--save-format', 'portable', '-o', str(portable)]) == 0
    out, _ = capsys.readouterr()
    topics = check_output(out, 4)
    assert "model saved to %s (portable format" % portable in out
    assert (portable / 'model.json').is_file()
    model = AnchorModel.load_portable(str(portable))
    assert model.anchor_words == [anchor for _, anchor, _ in topics]

    # --load reads it back (no corpus, no fit, nothing saved) and prints the same topics.
    assert main(['--load', str(portable)]) == 0
    again, err = capsys.readouterr()
    assert "Traceback" not in err
    assert "model: %s (portable format): 4 topics, 40 terms, trained on 200 documents" % portable in again
    assert topic_lines(again) == topic_lines(out)
    assert "fit:" not in again and "saved" not in again
    assert sorted(p.name for p in tmp_path.iterdir()) == ['portable_model']

    # A pickle converted to the portable format: the same model.
    pickled, converted = tmp_path / 'pickled.model', tmp_path / 'converted'
    assert main(corpus + ['-q', '-o', str(pickled)]) == 0
    assert main(['--load', str(pickled), '--save-format', 'portable', '-o', str(converted)]) == 0
    out, _ = capsys.readouterr()
    assert "(pickle)" in out and "model saved to %s (portable format" % converted in out
    np.testing.assert_array_equal(AnchorModel.load_portable(str(converted)).get_topics(),
                                  AnchorModel.load(str(pickled)).get_topics())


def test_load_errors(bow_files, tmp_path, capsys):
    portable = tmp_path / 'm'
    assert main(['--ldac', str(bow_files / 'corpus.ldac'), str(bow_files / 'vocab.txt'), '-k', '4',
                 '-q', '--save-format', 'portable', '-o', str(portable)]) == 0
    capsys.readouterr()
    check_error(capsys, ['--load', str(tmp_path / 'missing')], "no such model: %s" % (tmp_path / 'missing'))
    check_error(capsys, ['--load', str(portable), '--text', str(bow_files / 'vocab.txt')],
                "--load prints a saved model and reads no corpus")
    check_error(capsys, ['--load', str(portable), '-o', str(tmp_path)],
                "it is a directory (a portable model? add --save-format portable)")
    check_error(capsys, ['--load', str(portable), '--save-format', 'portable',
                         '-o', str(bow_files / 'vocab.txt')], "the portable format is a directory")
    check_error(capsys, ['--save-format', 'zip'], "invalid choice: 'zip'")
    # A tampered portable model: the loader's message, one line, status 2.
    topics = np.load(portable / 'topics.npy')
    topics[0, 0] = np.nan
    np.save(portable / 'topics.npy', topics)
    check_error(capsys, ['--load', str(portable)], "'arrays.topics' holds non-finite values (topic 0)")
