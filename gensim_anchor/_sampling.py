"""Document samples taken during the single pass: the reservoir, combining the samples of
several streams (Dask partitions, earlier updates), and the documents the alpha search scores.

Below both the model and :mod:`.distributed`, so that neither imports the other.
"""
import numpy as np
from gensim import utils

from ._defaults import ALPHA_DOCS, ALPHA_TOKENS


class Reservoir:
    """A uniform sample of at most ``size`` documents of a stream (Vitter's algorithm R), taken
    while the stream is read for Q, so the corpus is still read only once."""

    def __init__(self, size, seed):
        self.size, self.seen, self.docs = size, 0, []
        self.rng = np.random.default_rng(seed)

    def watch(self, corpus):
        for doc in corpus:
            if not hasattr(doc, '__len__'):  # a one-shot iterator: Q's pass would exhaust the kept one
                doc = list(doc)
            if len(self.docs) < self.size:
                self.docs.append(doc)
            else:
                j = self.rng.integers(0, self.seen + 1)
                if j < self.size:
                    self.docs[j] = doc
            self.seen += 1
            yield doc

    def copy(self):
        """An independent copy (documents are replaced, never mutated, so the list is enough)."""
        other = type(self).__new__(type(self))
        other.size, other.seen, other.docs = self.size, self.seen, list(self.docs)
        other.rng = np.random.default_rng()
        other.rng.bit_generator.state = self.rng.bit_generator.state
        return other


def combine_samples(samples, size, seed):
    """One uniform sample of at most ``size`` documents of the union of several streams, from
    uniform samples of each (:class:`Reservoir`, with ``seen``).

    How many documents come from each stream is multivariate hypergeometric in the streams'
    sizes (as for a uniform sample of the union); a uniform subset of a uniform sample is uniform.
    """
    samples = [s for s in samples if s is not None and s.seen]
    rng = np.random.default_rng(seed)
    out = Reservoir(size, seed)
    out.seen = sum(s.seen for s in samples)
    if not samples:
        return out
    counts = rng.multivariate_hypergeometric([s.seen for s in samples], min(size, out.seen))
    for s, n in zip(samples, counts):
        chosen = np.sort(rng.choice(len(s.docs), size=min(int(n), len(s.docs)), replace=False))
        out.docs.extend(s.docs[i] for i in chosen)
    out.rng = rng
    return out


def alpha_documents(docs, seed, max_docs=ALPHA_DOCS, max_tokens=ALPHA_TOKENS):
    """The documents the alpha grid search scores: up to ``max_docs`` of ``docs``, each cut to
    at most ``max_tokens`` tokens by a seeded subsample (itself an LDA document), all longer
    than ``max_tokens / 2`` where enough are (one padded length: one compilation)."""
    rng = np.random.default_rng(seed)
    # The first max_docs long documents; the lengths of the rest are needed only if too few are.
    long_docs, lengths = [], []
    for doc in docs:
        lengths.append(sum(int(c) for _, c in doc))
        if lengths[-1] > max_tokens // 2:
            long_docs.append(doc)
            if len(long_docs) == max_docs:
                break
    if len(long_docs) >= max_docs // 4:
        chosen = long_docs
    else:
        chosen = [d for d, n in zip(docs, lengths) if n >= 2]
    out = []
    for doc in chosen[:max_docs]:
        words = np.array([int(w) for w, _ in doc], dtype=np.int64)
        ends = np.cumsum([int(c) for _, c in doc], dtype=np.int64)  # each word's last position + 1
        total = int(ends[-1]) if len(ends) else 0
        if total > max_tokens:
            # The positions rng.choice(tokens, ...) would draw, mapped to their words without
            # listing the tokens: a document's counts may run into the billions.
            tokens = words[np.searchsorted(ends, rng.choice(total, max_tokens, replace=False), side='right')]
        else:
            tokens = np.repeat(words, np.diff(ends, prepend=0))
        ids, counts = np.unique(tokens, return_counts=True)
        out.append(list(zip(ids.tolist(), counts.tolist())))
    return out


def seed_of(random_state):
    """A JAX key seed drawn from an int / RandomState / None, gensim's way."""
    return int(utils.get_random_state(random_state).randint(2 ** 31 - 1))
