"""Stage 1: the co-occurrence estimator Q (supplementary section "Generating Q matrix")."""
import math
import re

import numpy as np
import pytest

from conftest import random_corpus
from gensim_anchor.cooccurrence import Cooccurrence, build_cooccurrence, projection_blocks

MODES = ('implicit', 'dense')


# ----------------------------------------------------------------------------------------------
# Slow references: one Python loop over documents, dense V x V arithmetic.
# ----------------------------------------------------------------------------------------------

def count_vector(doc, V):
    """H_d, with duplicate ids summed."""
    H = np.zeros(V)
    for word_id, count in doc:
        H[int(word_id)] += count
    return H


def reference_q(corpus, V):
    """Q = mean over documents with n_d >= 2 of (H_d H_d^T - Diag(H_d)) / (n_d (n_d - 1))."""
    total = np.zeros((V, V))
    used = 0
    for doc in corpus:
        H = count_vector(doc, V)
        n = H.sum()
        if n < 2:
            continue
        total += (np.outer(H, H) - np.diag(H)) / (n * (n - 1))
        used += 1
    return total / used, used


def reference_stats(corpus, V):
    """(doc_freq, term_counts, num_tokens, num_short) over all documents read."""
    doc_freq = np.zeros(V, dtype=np.int64)
    term_counts = np.zeros(V)
    num_tokens = num_short = 0
    for doc in corpus:
        H = count_vector(doc, V)
        doc_freq += H > 0
        term_counts += H
        num_tokens += int(H.sum())
        num_short += int(H.sum() < 2)
    return doc_freq, term_counts, num_tokens, num_short


# A hand-made corpus over V = 6 words: repeated words, a doc with one word twice, short docs.
TINY_CORPUS = [
    [(0, 1.0), (1, 2.0), (3, 1.0)],
    [(2, 3.0)],                      # one word, three tokens: contributes only to Q[2, 2]
    [(0, 1.0), (5, 1.0)],
    [],                              # empty: skipped
    [(4, 1.0)],                      # one token: skipped
    [(1, 1.0), (2, 1.0), (3, 4.0), (5, 2.0)],
]
TINY_V = 6


@pytest.mark.parametrize('mode', MODES)
def test_tiny_corpus_matches_per_document_loop(mode):
    Q_ref, used = reference_q(TINY_CORPUS, TINY_V)
    cooc = build_cooccurrence(TINY_CORPUS, num_terms=TINY_V, mode=mode)
    assert cooc.mode == mode
    assert cooc.num_terms == TINY_V
    assert cooc.num_docs == used == 4
    assert cooc.num_short == 2
    Q = cooc.to_dense()
    np.testing.assert_allclose(Q, Q_ref, rtol=1e-13, atol=1e-16)
    assert math.isclose(Q.sum(), 1.0, rel_tol=1e-13)
    np.testing.assert_allclose(Q, Q.T, rtol=0, atol=1e-16)
    np.testing.assert_allclose(cooc.row_sums(), Q_ref.sum(axis=1), rtol=1e-13, atol=1e-16)
    for idx in ([3], [0, 5, 2], [4, 4, 1], list(range(TINY_V))):
        np.testing.assert_allclose(cooc.rows(idx), Q_ref[idx], rtol=1e-13, atol=1e-16)
    X = np.random.default_rng(0).standard_normal((TINY_V, 3))
    np.testing.assert_allclose(cooc.matmul(X), Q_ref @ X, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(cooc.matmul(X[:, 0]), Q_ref @ X[:, 0], rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize('mode', MODES)
def test_random_corpus_matches_reference(mode):
    rng = np.random.default_rng(1)
    V = 40
    corpus = random_corpus(rng, 120, V, short_fraction=0.15)
    Q_ref, used = reference_q(corpus, V)
    cooc = build_cooccurrence(corpus, num_terms=V, mode=mode, chunksize=17)
    assert cooc.num_docs == used
    np.testing.assert_allclose(cooc.to_dense(), Q_ref, rtol=1e-12, atol=1e-17)
    np.testing.assert_allclose(cooc.row_sums(), Q_ref.sum(axis=1), rtol=1e-12, atol=1e-17)
    idx = rng.choice(V, 7, replace=False)
    np.testing.assert_allclose(cooc.rows(idx), Q_ref[idx], rtol=1e-12, atol=1e-17)
    X = rng.standard_normal((V, 4))
    np.testing.assert_allclose(cooc.matmul(X), Q_ref @ X, rtol=1e-11, atol=1e-15)


@pytest.mark.parametrize('mode', MODES)
def test_short_documents_are_skipped_and_counted(mode):
    corpus = [
        [],                    # 0 tokens
        [(3, 1.0)],            # 1 token
        [(1, 0.0), (2, 1.0)],  # 1 token: a zero count adds no token
        [(3, 2.0)],            # 2 tokens of the same word: DOES count
    ]
    cooc = build_cooccurrence(corpus, num_terms=5, mode=mode)
    assert cooc.num_short == 3
    assert cooc.num_docs == 1
    assert cooc.num_tokens == 0 + 1 + 1 + 2
    # The only pair is (3, 3): H = 2 e_3, (H H^T - Diag H) / (2 * 1) = e_3 e_3^T.
    expected = np.zeros((5, 5))
    expected[3, 3] = 1.0
    np.testing.assert_allclose(cooc.to_dense(), expected, rtol=0, atol=1e-15)
    # doc_freq and term_counts cover every document read, short ones included; a zero count
    # is not an occurrence.
    np.testing.assert_array_equal(cooc.doc_freq, [0, 0, 1, 2, 0])
    np.testing.assert_array_equal(cooc.term_counts, [0.0, 0.0, 1.0, 3.0, 0.0])


@pytest.mark.parametrize('mode', MODES)
def test_doc_freq_and_term_counts(mode):
    rng = np.random.default_rng(2)
    V = 30
    corpus = random_corpus(rng, 80, V, short_fraction=0.2)
    doc_freq, term_counts, num_tokens, num_short = reference_stats(corpus, V)
    cooc = build_cooccurrence(corpus, num_terms=V, mode=mode, chunksize=9)
    np.testing.assert_array_equal(cooc.doc_freq, doc_freq)
    assert cooc.doc_freq.dtype == np.int64
    np.testing.assert_array_equal(cooc.term_counts, term_counts)
    assert cooc.num_tokens == num_tokens
    assert cooc.num_short == num_short
    assert cooc.num_docs == len(corpus) - num_short


@pytest.mark.parametrize('mode', MODES)
def test_duplicate_ids_in_a_document_are_summed(mode):
    """Documented behaviour: a document listing an id twice counts it once per listing, as if
    the counts had been summed; its document frequency counts the document once."""
    with_duplicates = [[(1, 1.0), (2, 1.0), (1, 2.0)], [(0, 1.0), (0, 1.0)]]
    summed = [[(1, 3.0), (2, 1.0)], [(0, 2.0)]]
    a = build_cooccurrence(with_duplicates, num_terms=3, mode=mode)
    b = build_cooccurrence(summed, num_terms=3, mode=mode)
    # (atol: a word seen once has Q_ii = (1/sqrt(n(n-1)))^2 - 1/(n(n-1)), zero up to rounding)
    np.testing.assert_allclose(a.to_dense(), b.to_dense(), rtol=1e-15, atol=1e-16)
    np.testing.assert_allclose(a.to_dense(), reference_q(summed, 3)[0], rtol=1e-13, atol=1e-16)
    np.testing.assert_array_equal(a.doc_freq, [1, 1, 1])
    np.testing.assert_array_equal(a.term_counts, [2.0, 3.0, 1.0])
    assert a.num_docs == 2 and a.num_short == 0


@pytest.mark.parametrize('mode', MODES)
def test_generator_and_inferred_num_terms(mode):
    rng = np.random.default_rng(3)
    corpus = random_corpus(rng, 60, 25, short_fraction=0.1)
    V = 1 + max(i for doc in corpus for i, _ in doc)
    from_list = build_cooccurrence(corpus, num_terms=V, mode=mode, chunksize=7)
    one_shot = build_cooccurrence((doc for doc in corpus), num_terms=V, mode=mode, chunksize=7)
    inferred = build_cooccurrence(iter(corpus), num_terms=None, mode=mode, chunksize=7)
    assert inferred.num_terms == V
    assert inferred.mode == mode
    np.testing.assert_array_equal(one_shot.to_dense(), from_list.to_dense())
    # With V unknown until the end, dense mode forms Q from the stacked blocks in one product
    # instead of accumulating it per chunk: equal up to the order of summation.
    np.testing.assert_allclose(inferred.to_dense(), from_list.to_dense(), rtol=1e-13, atol=1e-18)
    for cooc in (one_shot, inferred):
        np.testing.assert_array_equal(cooc.doc_freq, from_list.doc_freq)
        np.testing.assert_array_equal(cooc.term_counts, from_list.term_counts)
        assert (cooc.num_docs, cooc.num_short, cooc.num_tokens) == (
            from_list.num_docs, from_list.num_short, from_list.num_tokens)
    np.testing.assert_allclose(from_list.to_dense(), reference_q(corpus, V)[0], rtol=1e-12, atol=1e-17)


def test_inferred_num_terms_grows_across_chunks():
    # The largest id only appears in the last chunk; earlier chunks must be padded to it.
    corpus = [[(0, 1.0), (1, 1.0)], [(1, 2.0)], [(2, 1.0), (7, 1.0)]]
    for mode in MODES:
        cooc = build_cooccurrence(corpus, mode=mode, chunksize=1)
        assert cooc.num_terms == 8
        np.testing.assert_allclose(cooc.to_dense(), reference_q(corpus, 8)[0], rtol=1e-14, atol=1e-16)
        np.testing.assert_array_equal(cooc.doc_freq, [1, 2, 1, 0, 0, 0, 0, 1])


@pytest.mark.parametrize('mode', MODES)
def test_chunksize_does_not_change_q(mode):
    rng = np.random.default_rng(4)
    V = 30
    corpus = random_corpus(rng, 50, V, short_fraction=0.2)
    small = build_cooccurrence(corpus, num_terms=V, mode=mode, chunksize=1)
    large = build_cooccurrence(corpus, num_terms=V, mode=mode, chunksize=10_000)
    # Identical up to the order of floating-point summation over chunks.
    np.testing.assert_allclose(small.to_dense(), large.to_dense(), rtol=1e-14, atol=1e-18)
    np.testing.assert_allclose(small.h_hat, large.h_hat, rtol=1e-14, atol=0)
    np.testing.assert_array_equal(small.doc_freq, large.doc_freq)
    np.testing.assert_array_equal(small.term_counts, large.term_counts)
    assert (small.num_docs, small.num_short, small.num_tokens) == (
        large.num_docs, large.num_short, large.num_tokens)


@pytest.mark.parametrize('mode', MODES)
def test_merge_of_halves_equals_whole(mode):
    rng = np.random.default_rng(5)
    V = 35
    corpus = random_corpus(rng, 90, V, short_fraction=0.1)
    whole = build_cooccurrence(corpus, num_terms=V, mode=mode)
    first = build_cooccurrence(corpus[:37], num_terms=V, mode=mode)
    second = build_cooccurrence(corpus[37:], num_terms=V, mode=mode)
    merged = first.merge(second)
    assert merged.mode == mode
    assert (merged.num_terms, merged.num_docs, merged.num_short, merged.num_tokens) == (
        whole.num_terms, whole.num_docs, whole.num_short, whole.num_tokens)
    np.testing.assert_allclose(merged.to_dense(), whole.to_dense(), rtol=1e-13, atol=1e-18)
    np.testing.assert_allclose(merged.row_sums(), whole.row_sums(), rtol=1e-13, atol=1e-18)
    np.testing.assert_array_equal(merged.doc_freq, whole.doc_freq)
    np.testing.assert_array_equal(merged.term_counts, whole.term_counts)
    np.testing.assert_allclose(merged.h_hat, whole.h_hat, rtol=1e-14, atol=0)
    # Merging does not divide by the halves' own document counts: the merged Q is the
    # document-weighted mean of the two, not their plain mean.
    Q1, Q2 = first.to_dense(), second.to_dense()
    weighted = (first.num_docs * Q1 + second.num_docs * Q2) / (first.num_docs + second.num_docs)
    np.testing.assert_allclose(merged.to_dense(), weighted, rtol=1e-12, atol=1e-18)


def test_merge_refuses_mismatched_statistics():
    corpus = [[(0, 1.0), (1, 1.0)], [(1, 1.0), (2, 2.0)]]
    a = build_cooccurrence(corpus, num_terms=3)
    with pytest.raises(ValueError, match=r"cannot merge .* of 3 terms \(implicit\) with 4 terms \(implicit\)"):
        a.merge(build_cooccurrence(corpus, num_terms=4))
    with pytest.raises(ValueError, match=r"3 terms \(implicit\) with 3 terms \(dense\)"):
        a.merge(build_cooccurrence(corpus, num_terms=3, mode='dense'))


def test_dense_and_implicit_modes_agree():
    rng = np.random.default_rng(6)
    corpus = random_corpus(rng, 70, 28, short_fraction=0.1)
    implicit = build_cooccurrence(corpus, num_terms=28, mode='implicit', chunksize=8)
    dense = build_cooccurrence(corpus, num_terms=28, mode='dense', chunksize=8)
    assert implicit.H_tilde is not None and implicit.Q_sum is None
    assert dense.Q_sum is not None and dense.H_tilde is None
    np.testing.assert_allclose(implicit.to_dense(), dense.to_dense(), rtol=1e-13, atol=1e-18)
    np.testing.assert_allclose(implicit.row_sums(), dense.row_sums(), rtol=1e-13, atol=1e-18)


# ----------------------------------------------------------------------------------------------
# Errors: precise, early, naming the document.
# ----------------------------------------------------------------------------------------------

def num(value):
    """Regex for a number as an error message prints it. It also admits numpy 2's scalar repr
    (``np.float64(5.0)``), so that the tests below check the rest of each message; the plain
    printing of numbers is checked once, in test_error_messages_print_plain_numbers."""
    plain = r'%s(?:\.0)?' % int(value) if float(value).is_integer() else str(value).replace('.', r'\.')
    return r'(?:np\.float64\()?%s\)?' % plain


def test_empty_corpus_raises():
    with pytest.raises(ValueError, match=r"the corpus is empty: no documents were read"):
        build_cooccurrence([], num_terms=3)
    with pytest.raises(ValueError, match=r"the corpus is empty"):
        build_cooccurrence(iter(()), num_terms=None)


def test_corpus_without_two_token_documents_raises():
    corpus = [[], [(0, 1.0)], [(2, 1.0)], [(1, 0.0), (0, 1.0)]]
    with pytest.raises(ValueError, match=r"no document in the corpus has two or more tokens "
                                         r"\(4 documents read, 3 tokens\)"):
        build_cooccurrence(corpus, num_terms=3)


@pytest.mark.parametrize('mode', ['implicit', 'dense'])
def test_statistics_without_pairs_merge_when_allowed(mode):
    # AnchorModel.update's batch may hold no document of two tokens: its statistics are empty of
    # pairs (H~ is V x 0), but its counts still add up.
    corpus = [[(0, 1.0), (1, 2.0)], [(1, 1.0), (2, 1.0)]]
    short = [[], [(0, 1.0)], [(2, 1.0)], [(1, 0.0), (0, 1.0)]]
    first = build_cooccurrence(corpus, num_terms=3, mode=mode)
    for batch, read in [(short, 4), ([], 0)]:
        alone = build_cooccurrence(batch, num_terms=3, mode=mode, require_pairs=False)
        assert (alone.num_docs, alone.num_short, alone.num_tokens) == (0, read, 3 if read else 0)
        merged = first.merge(alone)
        whole = build_cooccurrence(corpus + batch, num_terms=3, mode=mode)
        assert (merged.num_docs, merged.num_short) == (whole.num_docs, whole.num_short)
        np.testing.assert_array_equal(merged.doc_freq, whole.doc_freq)
        np.testing.assert_array_equal(merged.to_dense(), whole.to_dense())


@pytest.mark.parametrize('chunksize', [1, 2, 100])
def test_word_id_outside_dictionary_raises_naming_the_document(chunksize):
    corpus = [[(0, 1.0), (1, 1.0)], [], [(2, 1.0)], [(1, 1.0), (5, 1.0), (2, 1.0)]]
    with pytest.raises(ValueError, match=r"document #3 has word id " + num(5) + r" outside the dictionary "
                                         r"\(valid ids are 0\.\.4\); was the corpus made with a "
                                         r"different Dictionary\?"):
        build_cooccurrence(corpus, num_terms=5, chunksize=chunksize)


def test_negative_word_id_raises():
    with pytest.raises(ValueError, match=r"document #1 has word id " + num(-1) + " outside the dictionary"):
        build_cooccurrence([[(0, 1.0), (1, 1.0)], [(-1, 2.0)]], num_terms=3)
    with pytest.raises(ValueError, match=r"document #0 has word id " + num(-2) + r" outside the dictionary "
                                         r"\(valid ids are 0\.\.inf\)"):
        build_cooccurrence([[(-2, 2.0)]], num_terms=None)


def test_negative_count_raises():
    with pytest.raises(ValueError, match=r"document #1 has count " + num(-1) + r" for word id 2; counts must "
                                         r"be finite and >= 0"):
        build_cooccurrence([[(0, 2.0)], [(1, 3.0), (2, -1.0)]], num_terms=3)


def test_nan_count_raises():
    with pytest.raises(ValueError, match=r"document #0 has count (?:np\.float64\()?nan\)? for word id 1; counts must be "
                                         r"finite"):
        build_cooccurrence([[(0, 1.0), (1, float('nan'))]], num_terms=3)


def test_fractional_count_raises_mentioning_tfidf():
    with pytest.raises(ValueError, match=r"document #2 has non-integer count " + num(0.5) + r" for word id 0; "
                                         r"Q needs raw word counts \(a TF-IDF"):
        build_cooccurrence([[(0, 1.0), (1, 1.0)], [], [(0, 0.5), (1, 2.0)]], num_terms=3)


def test_string_document_raises_type_error():
    # A text instead of a bag of words: a common mistake (doc2bow forgotten).
    with pytest.raises(TypeError, match=r"^document #0 is not a bag-of-words list of \(word_id, count\) "
                                        r"pairs \(it starts 'human interface computer'\); convert texts "
                                        r"with Dictionary\.doc2bow first$"):
        build_cooccurrence(["human interface computer"], num_terms=3)
    with pytest.raises(TypeError, match=r"is not a bag-of-words list of \(word_id, count\) pairs"):
        build_cooccurrence([["human", "interface"]], num_terms=3)


@pytest.mark.parametrize('tokens', [[['ok', 'hi']], [[], [b'ok', b'hi']], [[('a', 1)]]])
def test_two_character_tokens_are_not_taken_for_pairs(tokens):
    # 'ok' and b'ok' have length 2 like a pair; b'ok' even parsed, as word 111 counted 107 times.
    with pytest.raises(TypeError, match=r"^document #%d is not a bag-of-words list of \(word_id, "
                                        r"count\) pairs \(it starts %s\)" % (
                                            len(tokens) - 1, re.escape(repr(tokens[-1])))):
        build_cooccurrence(tokens, num_terms=200)


@pytest.mark.parametrize('docs', [[[('3', 1), ('4', 2)]], [[], [(b'3', 1)]], [[(3, '1'), (4, '2')]]])
def test_numeric_strings_are_not_taken_for_ids_or_counts(docs):
    # float('3') is 3.0: ids read from a text file without int() parsed as word 3, silently.
    strings = [v for pair in docs[-1] for v in pair if isinstance(v, (str, bytes))]
    with pytest.raises(TypeError, match=r"^document #%d has %s among its word ids and counts: they "
                                        r"must be numbers, not strings \(it starts %s\)$" % (
                                            len(docs) - 1, re.escape(repr(strings[0])),
                                            re.escape(repr(docs[-1])))):
        build_cooccurrence(docs, num_terms=200)


def test_non_sequence_document_raises_type_error():
    with pytest.raises(TypeError, match=r"document #1 is a int, expected a bag-of-words list of "
                                        r"\(word_id, count\) pairs"):
        build_cooccurrence([[(0, 1.0), (1, 1.0)], 7], num_terms=3)


@pytest.mark.parametrize('bad', [0, -1, 1.5, True, None])
def test_bad_chunksize_raises(bad):
    with pytest.raises(ValueError, match=r"chunksize must be a positive integer"):
        build_cooccurrence([[(0, 1.0), (1, 1.0)]], num_terms=2, chunksize=bad)


def test_bad_num_terms_raises():
    # num_terms=0 reported "valid ids are 0..-1" for the first word.
    with pytest.raises(ValueError, match=r"num_terms must be >= 1, got 0"):
        build_cooccurrence([[(0, 1.0), (1, 1.0)]], num_terms=0)
    with pytest.raises(TypeError, match=r"num_terms must be an integer, got 2.0"):
        build_cooccurrence([[(0, 1.0), (1, 1.0)]], num_terms=2.0)


def test_bad_mode_raises():
    with pytest.raises(ValueError, match=r"mode must be one of .*'implicit'.*'dense'.*got 'sparse'"):
        build_cooccurrence([[(0, 1.0), (1, 1.0)]], num_terms=2, mode='sparse')


def test_cooccurrence_constructed_directly_in_dense_mode():
    # The synthetic tests build Q exactly this way (num_docs = 1 so that to_dense() is Q_sum).
    rng = np.random.default_rng(7)
    Q = rng.random((5, 5))
    Q = (Q + Q.T) / (Q + Q.T).sum()
    cooc = Cooccurrence(num_terms=5, num_docs=1, num_short=0, num_tokens=0,
                        doc_freq=np.full(5, 10), term_counts=np.ones(5), h_hat=np.zeros(5), Q_sum=Q)
    assert cooc.mode == 'dense'
    np.testing.assert_array_equal(cooc.to_dense(), Q)
    np.testing.assert_allclose(cooc.row_sums(), Q.sum(axis=1), rtol=1e-15)
    np.testing.assert_allclose(cooc.rows([4, 0]), Q[[4, 0]], rtol=0)


def test_error_messages_print_plain_numbers():
    """User-facing messages print ids and counts as numbers ("5", "0.5"), not as numpy reprs
    ("np.float64(5.0)", numpy >= 2)."""
    with pytest.raises(ValueError) as bad_id:
        build_cooccurrence([[(0, 1.0), (5, 1.0)]], num_terms=3)
    with pytest.raises(ValueError) as bad_count:
        build_cooccurrence([[(0, 0.5), (1, 2.0)]], num_terms=3)
    for info in (bad_id, bad_count):
        assert 'np.' not in str(info.value), str(info.value)
    assert re.search(r"word id 5(\.0)? outside", str(bad_id.value))
    assert re.search(r"non-integer count 0\.5 for word id 0", str(bad_count.value))


def test_projection_blocks_are_the_seeded_draws_in_column_order():
    # The next block is drawn on a second thread: the matrix must still be the generator's
    # stream, block by block in column order (so every caller with the seed gets the same one).
    import threading
    rng = np.random.default_rng(7)
    draws = [rng.standard_normal((300, min(128, 1000 - lo)), dtype=np.float32) for lo in range(0, 1000, 128)]
    expected = np.hstack(draws) * np.float32(1 / math.sqrt(1000))
    threads = threading.active_count()
    blocks = list(projection_blocks(300, 1000, 7))
    assert [lo for lo, _ in blocks] == list(range(0, 1000, 128))
    np.testing.assert_array_equal(np.hstack([P for _, P in blocks]), expected)
    partial = projection_blocks(300, 1000, 7)
    lo, P = next(partial)
    np.testing.assert_array_equal(P, expected[:, :128])
    partial.close()  # a caller that stops early leaves no thread behind
    assert threading.active_count() == threads

