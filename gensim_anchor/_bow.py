"""The one bag-of-words parser: a chunk of documents to flat, checked arrays.

Every stage that reads documents (the co-occurrence pass, inference, the likelihood, the
sampler, the evaluation's document frequencies) parses them here, so a document is accepted
or refused, and the error names it, the same way everywhere.
"""
import itertools

import numpy as np

#: What the co-occurrence pass says of a fractional count.
RAW_COUNTS = "Q needs raw word counts (a TF-IDF or otherwise weighted corpus cannot be used)"


def parse_chunk(chunk, num_terms=None, doc_offset=0, *, unknown='raise', whole_counts=RAW_COUNTS):
    """Flatten a list of bag-of-words documents into (lengths, ids, counts), validating them.

    Parameters
    ----------
    chunk : list of list of (int, number)
        Documents; numbered from ``doc_offset`` in error messages.
    num_terms : int, optional
        V. With ``unknown='raise'`` ids must lie in [0, V) (no upper bound for None).
    unknown : {'raise', 'keep'}
        ``'keep'`` accepts any integer id (negative or >= V): a caller that ignores words
        outside the dictionary, as LdaModel does for new documents, drops them itself.
    whole_counts : str or None
        Counts must be whole numbers; the string says why in the error. None accepts
        fractional counts (a weighted corpus).

    Returns
    -------
    lengths : numpy.ndarray, shape (D,), int64
        Pairs per document.
    ids : numpy.ndarray, int64
    counts : numpy.ndarray, float64

    Raises
    ------
    TypeError
        A document that is not a list of (word_id, count) pairs (e.g. a list of tokens).
    ValueError
        A fractional or non-finite id, an id outside the dictionary (``unknown='raise'``), a
        negative or non-finite count, or a fractional one (``whole_counts``).
    """
    if not isinstance(chunk, list):
        chunk = list(chunk)
    # map(len) and np.fromiter iterate in C: the hot path has no Python loop per document or
    # pair (np.array of the list of pairs was slower and bounded streaming throughput).
    try:
        lengths = np.fromiter(map(len, chunk), dtype=np.int64, count=len(chunk))
    except TypeError:
        for i, doc in enumerate(chunk):  # only to name the culprit
            if not hasattr(doc, '__len__') and not hasattr(doc, '__iter__'):
                raise TypeError(
                    "document #%d is a %s, expected a bag-of-words list of (word_id, count) pairs"
                    % (doc_offset + i, type(doc).__name__)) from None
        chunk = [doc if hasattr(doc, '__len__') else list(doc) for doc in chunk]  # iterators
        lengths = np.fromiter(map(len, chunk), dtype=np.int64, count=len(chunk))
    entries = itertools.chain.from_iterable
    try:
        sizes = np.fromiter(map(len, entries(chunk)), dtype=np.int64, count=int(lengths.sum()))
        if sizes.size and (sizes.min() != 2 or sizes.max() != 2):
            raise ValueError("not pairs")
        # Tokens of two characters pass as pairs; bytes ones would even parse (b'ok' is 111,
        # 107), and so would numeric strings as ids or counts (('3', 1) as word 3). A corpus of
        # tokens, or of ids read from text without int(), has them everywhere, so the chunk's
        # first entry tells.
        first = next(entries(chunk), None)
        if isinstance(first, (str, bytes)) or (first is not None and any(
                isinstance(value, (str, bytes)) for value in first)):
            raise ValueError("tokens, not pairs")
        pairs = np.fromiter(entries(entries(chunk)), dtype=np.float64, count=2 * sizes.size)
    except (TypeError, ValueError):
        raise TypeError(_not_pairs(chunk, doc_offset)) from None
    pairs = pairs.reshape(-1, 2)
    ids, counts = pairs[:, 0], pairs[:, 1]

    def _where(bad):
        pos = int(np.flatnonzero(bad)[0])
        doc = int(np.searchsorted(np.cumsum(lengths), pos, side='right'))
        return doc_offset + doc, pairs[pos]

    bad = ~np.isfinite(ids) | (ids != np.round(ids))
    if bad.any():
        doc, pair = _where(bad)
        raise ValueError("document #%d has word id %s; word ids must be integers" % (doc, _num(pair[0])))
    if unknown == 'raise':
        bad = ids < 0
        if num_terms is not None:
            bad |= ids >= num_terms
        if bad.any():
            doc, pair = _where(bad)
            raise UnknownWordError(
                "document #%d has word id %s outside the dictionary (valid ids are 0..%s); "
                "was the corpus made with a different Dictionary?"
                % (doc, _num(pair[0]), num_terms - 1 if num_terms is not None else 'inf'))
    bad = ~np.isfinite(counts) | (counts < 0)
    if bad.any():
        doc, pair = _where(bad)
        raise ValueError("document #%d has count %s for word id %d; counts must be finite and >= 0"
                         % (doc, _num(pair[1]), int(pair[0])))
    if whole_counts:
        bad = counts != np.round(counts)
        if bad.any():
            doc, pair = _where(bad)
            raise ValueError("document #%d has non-integer count %s for word id %d; %s"
                             % (doc, _num(pair[1]), int(pair[0]), whole_counts))
    return lengths, ids.astype(np.int64), counts


def _not_pairs(chunk, doc_offset):
    """The message for a chunk that is not all (id, count) pairs, naming the first bad document."""
    text = (str, bytes)
    for i, doc in enumerate(chunk):
        try:
            # A string is a sequence of scalars too: 'w1' as a pair, or 'a' as an id.
            shaped = all(not isinstance(pair, text) and len(pair) == 2 for pair in doc)
            # Numeric strings (ids read from text without int()) get their own message; words
            # ('a', 1) are tokens with counts, for doc2bow.
            found = [v for pair in doc for v in pair if isinstance(v, text)] if shaped else []
            strings = found if found and all(map(_numeric, found)) else []
            ok = shaped and not found and all(np.isscalar(v) or np.ndim(v) == 0
                                              for pair in doc for v in pair)
        except TypeError:
            ok = strings = False
        if strings:
            return ("document #%d has %r among its word ids and counts: they must be numbers, not "
                    "strings (it starts %.60r)" % (doc_offset + i, strings[0], doc))
        if not ok:
            return ("document #%d is not a bag-of-words list of (word_id, count) pairs (it starts "
                    "%.60r); convert texts with Dictionary.doc2bow first" % (doc_offset + i, doc))
    return ("documents #%d..#%d are not all bag-of-words lists of (word_id, count) pairs; convert "
            "texts with Dictionary.doc2bow first" % (doc_offset, doc_offset + len(chunk) - 1))


def _numeric(value):
    """Whether a str or bytes value reads as a number ('3', b'2.5')."""
    try:
        float(value)
    except ValueError:
        return False
    return True


def split_documents(lengths, *arrays):
    """Per-document views of flat arrays: a list of tuples, one per document."""
    bounds = np.cumsum(lengths)[:-1]
    return list(zip(*(np.split(a, bounds) for a in arrays))) if len(lengths) else []


def segment_sums(lengths, values):
    """The sum of each document's run of the flat ``values`` (``lengths[d]`` values for document
    d, one document after another), as int64, from a running total: no loop over the documents.

    Examples
    --------
    .. sourcecode:: pycon

        >>> import numpy as np
        >>> from gensim_anchor._bow import segment_sums
        >>> segment_sums(np.array([2, 0, 3]), np.array([1, 4, 2, 2, 5])).tolist()
        [5, 0, 9]

    """
    totals = np.concatenate([[0], np.cumsum(values, dtype=np.int64)])
    ends = np.cumsum(lengths)
    return totals[ends] - totals[ends - lengths]


def padded_positions(lengths, members):
    """Where the flat values of documents ``members`` go in a zero-padded block with one row per
    member: index arrays (row, position, source) such that ``block[row, position] =
    flat[source]``, for flat arrays that hold the documents one after another (``lengths[d]``
    values for document d). No loop over the documents."""
    lengths = np.asarray(lengths)
    starts = np.cumsum(lengths) - lengths
    width = lengths[members]
    row = np.repeat(np.arange(len(width)), width)
    position = np.arange(len(row)) - np.repeat(np.cumsum(width) - width, width)
    return row, position, starts[members][row] + position


def _num(value):
    """A number as a user wrote it: 5 for 5.0, 0.5, nan."""
    value = float(value)
    return str(int(value)) if np.isfinite(value) and value == int(value) else repr(value)


class UnknownWordError(ValueError):
    """A word id outside the dictionary: a ValueError of its own, so that a caller who knows
    why (a Dictionary grown since training) can say so."""


class DocumentStore:
    """Parsed documents kept in flat arrays: what the single pass hands to a refinement that
    needs the tokens (``AnchorModel(..., refine='gibbs')``), so the corpus is still read once.

    Memory: 12 bytes per distinct (document, word) pair (int32 id and count, plus one int32
    length per document), about as much as the co-occurrence statistics' H~.
    """
    #: The integer type of the stored lengths, ids and counts.
    DTYPE = np.int32

    def __init__(self):
        self._chunks = []
        self.lengths = np.zeros(0, self.DTYPE)
        self.ids = np.zeros(0, self.DTYPE)
        self.counts = np.zeros(0, self.DTYPE)

    def add(self, lengths, ids, counts, doc_offset=0):
        """A parsed chunk (:func:`parse_chunk`'s arrays, whole counts; its documents numbered
        from ``doc_offset`` in errors). A count beyond :attr:`DTYPE` is refused, not wrapped."""
        limit = np.iinfo(self.DTYPE).max
        big = np.flatnonzero(counts > limit)
        if big.size:
            doc = doc_offset + int(np.searchsorted(np.cumsum(lengths), big[0], side='right'))
            raise ValueError("document #%d has count %d for word id %d; a refinement keeps at most "
                             "%d tokens of one word in one document"
                             % (doc, counts[big[0]], ids[big[0]], limit))
        self._chunks.append(tuple(a.astype(self.DTYPE) for a in (lengths, ids, counts)))

    def _flush(self):
        if self._chunks:
            parts = [(self.lengths, self.ids, self.counts)] + self._chunks
            self.lengths, self.ids, self.counts = (np.concatenate(a) for a in zip(*parts))
            self._chunks = []
        return self

    @property
    def num_docs(self):
        return len(self._flush().lengths)

    @property
    def num_tokens(self):
        return int(self._flush().counts.sum(dtype=np.int64))

    def merge(self, other):
        """The documents of both, ``self``'s first (a new store; neither is changed)."""
        out = DocumentStore()
        for store in (self, other):
            store._flush()
            out.add(store.lengths, store.ids, store.counts)
        return out._flush()

    def tokens(self):
        """One (document index, word id) pair per token, in document order."""
        self._flush()
        doc = np.repeat(np.arange(len(self.lengths), dtype=np.int32), self.lengths)
        return np.repeat(doc, self.counts), np.repeat(self.ids, self.counts)

    def __getstate__(self):
        return self._flush().__dict__

    def __iter__(self):
        """The documents as bag-of-words lists (a re-iterable corpus)."""
        self._flush()
        bounds = np.concatenate([[0], np.cumsum(self.lengths, dtype=np.int64)])
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            yield list(zip(self.ids[lo:hi].tolist(), self.counts[lo:hi].tolist()))

    def __len__(self):
        return self.num_docs


def read_documents(corpus, num_terms, chunksize=10000):
    """A bag-of-words corpus read once into a :class:`DocumentStore`, parsed and checked a
    chunk at a time by :func:`parse_chunk` (whole counts, ids in [0, num_terms))."""
    store, num_docs, stream = DocumentStore(), 0, iter(corpus)
    while chunk := list(itertools.islice(stream, chunksize)):
        lengths, ids, counts = parse_chunk(chunk, num_terms, num_docs)
        store.add(lengths, ids, counts, num_docs)
        num_docs += len(chunk)
    return store._flush()
