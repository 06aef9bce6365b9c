"""Command line: train an :class:`~gensim_anchor.AnchorModel`, print its topics and their coherence.

Installed as the console script ``gensim-anchor``; ``python -m gensim_anchor`` runs the same.

Inputs (at most one; with none, gensim's bundled Lee background corpus is used):

* ``--text FILE``: plain text, one document per line (``.gz``/``.bz2`` are read transparently),
  tokenised with :func:`gensim.utils.simple_preprocess`, stopwords dropped, and the dictionary
  pruned with ``filter_extremes(no_below, no_above)``;
* ``--mm CORPUS.mm --dict DICT``: a Matrix Market corpus with a saved or text
  :class:`~gensim.corpora.Dictionary`;
* ``--uci DOCWORD VOCAB``: UCI bag-of-words files;
* ``--ldac FILE VOCAB``: Blei's LDA-C format.

Output: one line per topic (index, anchor word, top words), the UMass coherence of each topic and
their mean, the time the fit took, and where the model was saved: a pickle
(:meth:`AnchorModel.save`, the default) or, with ``--save-format portable``, a directory of JSON
and ``.npy`` files that loads without executing anything (:meth:`AnchorModel.save_portable`), the
format to share.

``--load MODEL`` prints the topics of a saved model instead of training one (a portable
directory, or a pickle file, which must come from a trusted source); with ``--output`` it is
saved again, e.g. converted to the portable format.

Examples
--------
.. sourcecode:: bash

    gensim-anchor --num-topics 10
    gensim-anchor --uci docword.kos.txt.gz vocab.kos.txt.gz --num-topics 50 --output kos.model
    python -m gensim_anchor --text news.txt.gz --loss KL --topn 15 --no-save
    gensim-anchor --num-topics 10 --save-format portable --output lee_model
    gensim-anchor --load kos.model --save-format portable --output kos_portable

"""
import argparse
import logging
import os
import pickle
import sys
import time

import numpy as np
from gensim import utils
from gensim.corpora import BleiCorpus, Dictionary, MmCorpus, UciCorpus
from gensim.models.coherencemodel import CoherenceModel
from gensim.parsing.preprocessing import STOPWORDS
from gensim.test.utils import datapath

from .anchormodel import AnchorModel
from ._defaults import (DEFAULT_MIN_DF, DEFAULT_MIN_DF_FRACTION, DEFAULT_PROJECTION_DIM, DEFAULT_SWEEPS,
                        LOSSES, REFINE_METHODS)

logger = logging.getLogger(__name__)

PROG = 'gensim-anchor'
DEFAULT_CORPUS = 'lee_background.cor'
DEFAULT_TOPICS_BUNDLED, DEFAULT_TOPICS = 10, 20
DEFAULT_OUTPUT = 'anchor.model'
SAVE_FORMATS = ('pickle', 'portable')


class CliError(Exception):
    """A user error: reported as one line on stderr, exit status 2."""


class _Parser(argparse.ArgumentParser):
    # argparse prints usage and calls sys.exit(2) on a bad argument; raise instead, so that
    # main() returns and every error reads the same.
    def error(self, message):
        raise CliError(message)


def _min_df(value):
    """An int (documents) or a float (fraction of documents), as AnchorModel's anchor_min_df."""
    try:
        return int(value)
    except ValueError:
        try:
            return float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(
                "expected an integer or a fraction, got %r" % value) from None


def _dim(value):
    """projection_dim: a non-negative int, or 'none' for the exact rows."""
    if value.lower() == 'none':
        return None
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError("expected an integer or 'none', got %r" % value) from None


def build_parser():
    parser = _Parser(
        prog=PROG,
        description="Train an anchor-words topic model (Arora et al., ICML 2013) and print its "
                    "topics, their anchor words and their UMass coherence.",
        epilog="Without an input option the model is trained on gensim's bundled Lee background "
               "corpus (%s, 300 news articles, one per line), preprocessed as --text."
               % DEFAULT_CORPUS)
    inputs = parser.add_argument_group("input (at most one)").add_mutually_exclusive_group()
    inputs.add_argument('--text', metavar='FILE',
                        help="plain text, one document per line (.gz/.bz2 ok)")
    inputs.add_argument('--mm', metavar='CORPUS.mm',
                        help="Matrix Market corpus (MmCorpus); needs --dict")
    inputs.add_argument('--uci', nargs=2, metavar=('DOCWORD', 'VOCAB'),
                        help="UCI bag-of-words docword and vocab files (.gz ok)")
    inputs.add_argument('--ldac', nargs=2, metavar=('FILE', 'VOCAB'),
                        help="Blei LDA-C corpus and its vocab file (BleiCorpus)")
    parser.add_argument('--dict', metavar='DICT',
                        help="dictionary for --mm: saved with Dictionary.save, or with "
                             "save_as_text (read as text if it ends in .txt or cannot be "
                             "unpickled)")

    text = parser.add_argument_group("text preprocessing (--text and the default corpus)")
    text.add_argument('--no-below', type=int, default=5, metavar='N',
                      help="drop words in fewer than N documents (default: %(default)s)")
    text.add_argument('--no-above', type=float, default=0.5, metavar='FRACTION',
                      help="drop words in more than this fraction of documents "
                           "(default: %(default)s)")

    model = parser.add_argument_group("model")
    model.add_argument('-k', '--num-topics', type=int, metavar='K',
                       help="number of topics (default: %d on the bundled corpus, %d on any other)"
                            % (DEFAULT_TOPICS_BUNDLED, DEFAULT_TOPICS))
    model.add_argument('--loss', choices=LOSSES, default='L2',
                       help="recovery loss (default: %(default)s)")
    model.add_argument('--seed', type=int, default=0,
                       help="random state of the projection (default: %(default)s)")
    model.add_argument('--anchor-min-df', type=_min_df, metavar='DF',
                       help="anchor candidates occur in at least DF documents (int) or this "
                            "fraction of documents (float) (default: chosen per corpus, by held-out "
                            "anchor volume, from min(%d, %g%%%% of documents) up; that lowest one "
                            "with --refine gibbs)" % (DEFAULT_MIN_DF, 100 * DEFAULT_MIN_DF_FRACTION))
    # The model's own default: without it argparse's None would mean the exact rows.
    model.add_argument('--projection-dim', type=_dim, default=DEFAULT_PROJECTION_DIM, metavar='DIM',
                       help="random projection dimension for anchor finding; 'none' for exact "
                            "rows (default: %(default)s)")
    model.add_argument('--refine', choices=REFINE_METHODS,
                       help="refine the anchor fit: 'gibbs' (collapsed Gibbs sweeps until the log "
                            "joint settles; the most accurate topics) or 'vb' (gensim's online VB) "
                            "(default: the paper's algorithm alone)")
    model.add_argument('--sweeps', type=int, metavar='N',
                       help="with --refine gibbs: the cap on sweeps (default: %d)" % DEFAULT_SWEEPS)

    out = parser.add_argument_group("output")
    out.add_argument('--topn', type=int, default=10, metavar='N',
                     help="words shown per topic, also used for the coherence "
                          "(default: %(default)s)")
    out.add_argument('-o', '--output', metavar='PATH',
                     help="where to save the model: a file, or a directory with --save-format "
                          "portable (default: %s; with --load: not saved)" % DEFAULT_OUTPUT)
    out.add_argument('--no-save', action='store_true', help="do not save the model")
    out.add_argument('--save-format', choices=SAVE_FORMATS, default='pickle',
                     help="'pickle': one file (AnchorModel.save; load only files from a trusted "
                          "source); 'portable': a directory of JSON and .npy files that loads "
                          "without executing anything (AnchorModel.save_portable), for sharing "
                          "(default: %(default)s)")
    out.add_argument('--load', metavar='MODEL',
                     help="print the topics of a saved model instead of training one: a portable "
                          "directory, or a pickle file (only from a trusted source); saved again "
                          "only with --output (to convert it)")
    chatter = out.add_mutually_exclusive_group()
    chatter.add_argument('-v', '--verbose', action='store_true', help="log progress (INFO)")
    chatter.add_argument('-q', '--quiet', action='store_true',
                         help="print only the topics and coherence; log errors only")
    return parser


def check_args(args):
    """Checks argparse cannot express; raises CliError."""
    if args.dict is not None and args.mm is None:
        raise CliError("--dict goes with --mm")
    if args.mm is not None and args.dict is None:
        raise CliError("--mm needs --dict DICT")
    if args.topn < 1:
        raise CliError("--topn must be >= 1, got %d" % args.topn)
    if args.sweeps is not None and args.refine != 'gibbs':
        raise CliError("--sweeps goes with --refine gibbs")
    if args.sweeps is not None and args.sweeps < 2:
        raise CliError("--sweeps must be >= 2, got %d" % args.sweeps)
    if not 0 <= args.seed < 2 ** 32:  # numpy's own message does not name the option
        raise CliError("--seed must be in 0..2**32 - 1, got %d" % args.seed)
    if args.no_below < 0:
        raise CliError("--no-below must be >= 0, got %d" % args.no_below)
    if not 0 < args.no_above <= 1:
        raise CliError("--no-above must be in (0, 1], got %r" % args.no_above)
    for path in (args.text, args.mm, args.dict, *(args.uci or ()), *(args.ldac or ())):
        if path is not None and not os.path.isfile(path):
            raise CliError("no such file: %s" % path)
    if args.load is not None:
        if args.text or args.mm or args.uci or args.ldac:
            raise CliError("--load prints a saved model and reads no corpus: leave out --text, "
                           "--mm, --uci and --ldac")
        if not os.path.exists(args.load):
            raise CliError("no such model: %s" % args.load)
    if args.output is None:
        # A loaded model is saved again only when asked: it already is on disk.
        args.no_save = args.no_save or args.load is not None
        args.output = DEFAULT_OUTPUT
    if not args.no_save:
        folder = os.path.dirname(os.path.normpath(args.output)) or os.curdir
        if not os.path.isdir(folder):
            raise CliError("cannot save the model to %s: no such directory %s"
                           % (args.output, folder))
        portable = args.save_format == 'portable'
        if portable and os.path.exists(args.output) and not os.path.isdir(args.output):
            raise CliError("cannot save the portable model to %s: it is a file, and the portable "
                           "format is a directory" % args.output)
        if not portable and os.path.isdir(args.output):
            raise CliError("cannot save the model to %s: it is a directory (a portable model? "
                           "add --save-format portable)" % args.output)


# ----------------------------------------------------------------------------------------------
# Inputs: each returns (corpus as a list, Dictionary, description)
# ----------------------------------------------------------------------------------------------

def _tokenize(line):
    return [word for word in utils.simple_preprocess(line) if word not in STOPWORDS]


def load_text(path, no_below, no_above):
    """One document per line -> bag-of-words list and a pruned Dictionary."""
    with utils.open(path, 'r', encoding='utf-8') as fin:
        texts = [_tokenize(line) for line in fin]
    dictionary = Dictionary(texts)
    size = len(dictionary)
    if not size:
        raise CliError("%s has no words: tokenised as gensim's simple_preprocess does (tokens of 2 "
                       "to 15 letters) without stop words, none is left on any line" % path)
    dictionary.filter_extremes(no_below=no_below, no_above=no_above, keep_n=None)
    if not len(dictionary):
        raise CliError("none of the %d words in %s is left after filter_extremes(no_below=%d, "
                       "no_above=%g): lower --no-below or raise --no-above"
                       % (size, path, no_below, no_above))
    corpus = [dictionary.doc2bow(text) for text in texts]
    return corpus, dictionary, "%s (%d of %d words kept)" % (path, len(dictionary), size)


def load_dictionary(path):
    """A Dictionary saved with ``save``, or with ``save_as_text`` (a .txt name, or not a pickle)."""
    as_text = path.endswith(('.txt', '.txt.gz', '.txt.bz2'))
    if not as_text:
        try:
            loaded = Dictionary.load(path)
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError,
                IndexError) as err:
            pickled = err
            logger.info("%s is not a pickled Dictionary (%s); reading it as text", path, err)
        else:
            if not isinstance(loaded, Dictionary):
                raise CliError("%s holds a %s, not a gensim Dictionary"
                               % (path, type(loaded).__name__))
            return loaded
    try:
        return Dictionary.load_from_text(path)
    except (ValueError, KeyError, UnicodeDecodeError) as err:
        if as_text:
            raise CliError("cannot read text dictionary %s: %s" % (path, err)) from None
        raise CliError("cannot read dictionary %s: neither a saved Dictionary (%s) nor a text "
                       "dictionary (%s)" % (path, pickled, err)) from None


def _read(fname, what, read):
    """``read()``, with a reader's error on a malformed file (a bare "invalid literal for int()"
    or a UnicodeDecodeError) reported with the file and the format it was read as."""
    try:
        return read()
    except (ValueError, IndexError) as err:
        raise CliError("cannot read %s as %s: %s" % (fname, what, err)) from None


def load_input(args):
    if args.text is not None:
        return _read(args.text, "UTF-8 text",
                     lambda: load_text(args.text, args.no_below, args.no_above))
    if args.mm is not None:
        dictionary = load_dictionary(args.dict)
        corpus = _read(args.mm, "a Matrix Market corpus", lambda: list(MmCorpus(args.mm)))
        return corpus, dictionary, "%s with %s" % (args.mm, args.dict)
    if args.uci or args.ldac:
        fname, vocab = args.uci or args.ldac
        what = "%s with vocabulary %s" % ("a UCI docword file" if args.uci else "an LDA-C corpus",
                                          vocab)
        reader = _read(fname, what, lambda: (UciCorpus if args.uci else BleiCorpus)(fname, vocab))
        corpus = _read(fname, what, lambda: list(reader))
        # The readers' id2word hold raw (bytes) tokens; a Dictionary has document frequencies
        # and str tokens.
        dictionary = _read(vocab, "the vocabulary of %s" % fname,
                           lambda: Dictionary.from_corpus(corpus, id2word=reader.id2word))
        return corpus, dictionary, fname
    corpus, dictionary, _ = load_text(datapath(DEFAULT_CORPUS), args.no_below, args.no_above)
    return corpus, dictionary, "%s (bundled with gensim)" % DEFAULT_CORPUS


# ----------------------------------------------------------------------------------------------
# Run
# ----------------------------------------------------------------------------------------------

def load_model(path):
    """A saved model: a portable directory (checked, nothing executed) or a pickle file."""
    if os.path.isdir(path):
        return AnchorModel.load_portable(path), "portable format"
    logger.info("%s is a pickle: loading it runs any code it carries; it must come from a trusted "
                "source", path)
    return AnchorModel.load(path), "pickle"


def print_topics(model, topn, out):
    width = max(2, len(str(model.num_topics - 1)))
    for topic, anchor in enumerate(model.anchor_words):
        words = [word for word, _ in model.show_topic(topic, topn=topn)]
        print("topic %*d  [anchor: %s]  %s" % (width, topic, anchor, ", ".join(words)), file=out)
    print(file=out)
    return width


def save_model(model, args, say):
    if args.save_format == 'portable':
        model.save_portable(args.output)
        say("model saved to %s (portable format: load with "
            "gensim_anchor.AnchorModel.load_portable)" % args.output)
    else:
        model.save(args.output)
        say("model saved to %s (load with gensim_anchor.AnchorModel.load)" % args.output)


def run(args, out):
    """Load, fit, print, save; ``args`` have passed :func:`check_args`. Raises on error."""
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, file=out))
    if args.load is not None:
        model, fmt = load_model(args.load)
        say("model: %s (%s): %d topics, %d terms, trained on %d documents"
            % (args.load, fmt, model.num_topics, model.num_terms, model.num_docs))
        say()
        print_topics(model, args.topn, out)
        if not args.no_save:
            save_model(model, args, say)
        return
    bundled = not (args.text or args.mm or args.uci or args.ldac)
    num_topics = args.num_topics
    if num_topics is None:
        num_topics = DEFAULT_TOPICS_BUNDLED if bundled else DEFAULT_TOPICS

    corpus, dictionary, description = load_input(args)
    num_tokens = int(sum(count for doc in corpus for _, count in doc))
    say("corpus: %s: %d documents, %d terms, %d tokens"
        % (description, len(corpus), len(dictionary), num_tokens))

    start = time.perf_counter()
    model = AnchorModel(corpus, num_topics=num_topics, id2word=dictionary,
                        random_state=args.seed, loss=args.loss,
                        anchor_min_df=args.anchor_min_df, projection_dim=args.projection_dim,
                        refine=args.refine,
                        refine_options=None if args.sweeps is None else dict(num_sweeps=args.sweeps))
    elapsed = time.perf_counter() - start
    say("fit: %d topics, loss %s, in %.2fs (%s)" % (
        num_topics, args.loss, elapsed,
        ", ".join("%s %.2fs" % kv for kv in model.timings.items())))
    if model.refinement is not None:
        r = model.refinement
        say("refined (%s): %s" % (r['method'], "%d sweeps (burn-in %d, %s)" % (
            r['num_sweeps'], r['burn_in'], "settled" if r['converged'] else "the cap")
            if r['method'] == 'gibbs' else "%d passes" % r['passes']))
    say()

    width = print_topics(model, args.topn, out)

    if args.topn < 2:
        print("coherence: skipped, UMass needs --topn >= 2", file=out)
    else:
        cm = CoherenceModel(model=model, corpus=corpus, dictionary=dictionary,
                            coherence='u_mass', topn=args.topn)
        per_topic = cm.get_coherence_per_topic()
        print("UMass coherence of the top %d words (higher, closer to 0, is better):" % args.topn,
              file=out)
        for topic, value in enumerate(per_topic):
            print("coherence  topic %*d  %.4f" % (width, topic, value), file=out)
        print("coherence  mean %s  %.4f" % (" " * width, float(np.mean(per_topic))), file=out)

    if not args.no_save:
        say()
        save_model(model, args, say)


def main(argv=None):
    """Entry point of ``gensim-anchor``; returns the exit status (0, or 2 on any error)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        check_args(args)
    except SystemExit as exit_:  # --help
        return exit_.code
    except CliError as err:
        print("%s: error: %s (see %s --help)" % (PROG, err, PROG), file=sys.stderr)
        return 2

    level = logging.INFO if args.verbose else logging.ERROR if args.quiet else logging.WARNING
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(level)
    try:
        run(args, sys.stdout)
    except (CliError, OSError, ValueError, TypeError, RuntimeError) as err:
        message = str(err) or type(err).__name__
        if isinstance(err, OSError) and err.filename and str(err.filename) not in message:
            message = "%s: %s" % (err.filename, message)
        print("%s: error: %s" % (PROG, " ".join(message.split())), file=sys.stderr)
        return 2
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
    return 0
