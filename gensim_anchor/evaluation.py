"""Evaluation of topic models as in Arora et al. (2013), section 5.1 ("Methodology").

* :func:`topic_recovery_l1`: the reconstruction error of known topics, the mean L1 distance
  between true and learned topics after the optimal one-to-one matching of topics;
* :func:`held_out_log_likelihood`: held-out probability per token, the estimate of
  :func:`gensim_anchor.likelihood.log_likelihood_per_token` (re-exported here);
* :func:`coherence`: the paper's coherence (Mimno et al. 2011), and :func:`umass_coherence`,
  gensim's ``CoherenceModel(coherence='u_mass')`` computed the same vectorised way;
* :func:`unique_words`: per topic, the top-N words that are in no other topic's top N (the
  paper's measure of inter-topic similarity), and :func:`topic_diversity` (Dieng et al. 2020).

Topics are accepted as any gensim topic model (anything with ``get_topics()``, rows p(w | z)) or
as an array of shape (num_topics, num_terms), gensim's orientation; :func:`topic_recovery_l1`
takes the paper's A (num_terms x num_topics, columns p(w | z)) or models.

Coherence and u_mass need document frequencies D(w) and co-document frequencies D(w1, w2) of the
top words in a reference corpus: :func:`document_frequencies` reads it once, a chunk at a time,
as a sparse binary document-word matrix X restricted to those words, and takes
:math:`D = X^T X` (no Python loop over documents).

Examples
--------
.. sourcecode:: pycon

    >>> import numpy as np
    >>> from gensim_anchor.evaluation import coherence, topic_recovery_l1, unique_words
    >>> A = np.array([[0.6, 0.0], [0.4, 0.1], [0.0, 0.9]])  # V=3 words, K=2 topics (columns)
    >>> error = topic_recovery_l1(A, A[:, ::-1])  # the same topics in the other order
    >>> float(error.mean), error.matching.tolist()
    (0.0, [1, 0])
    >>> topics = A.T  # gensim's orientation, (K, V)
    >>> unique_words(topics, topn=2).tolist()  # word 1 is in both topics' top 2
    [1, 1]
    >>> corpus = [[(0, 1), (1, 2)], [(1, 1), (2, 1)], [(2, 3)]]
    >>> # one pair per topic: log((D(1, 0) + 0.01) / D(0)) and log((D(1, 2) + 0.01) / D(2))
    >>> np.round(coherence(topics, corpus, topn=2), 3).tolist()
    [0.01, -0.683]

"""
import logging
import numbers
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from gensim import matutils, utils
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist

from ._bow import parse_chunk
from ._validation import check_int, check_topics
from .likelihood import log_likelihood_per_token

logger = logging.getLogger(__name__)

__all__ = ['TopicRecoveryError', 'DocumentFrequencies', 'topic_recovery_l1', 'held_out_log_likelihood',
           'log_likelihood_per_token', 'top_words', 'document_frequencies', 'coherence',
           'umass_coherence', 'unique_words', 'topic_diversity']

#: Epsilon of the paper's coherence (added to the co-document count; Stevens et al. 2012).
PAPER_EPSILON = 0.01
#: gensim's epsilon in u_mass (added to the co-document *probability*, i.e. count / num_docs).
UMASS_EPSILON = 1e-12
# Columns of the sums of A checked to be 1 within this tolerance (float32 topics: ~1e-6).
_SUM_TOL = 1e-3


class TopicRecoveryError(NamedTuple):
    """Outcome of :func:`topic_recovery_l1`.

    Attributes
    ----------
    mean : float
        Mean over the true topics of the L1 distance to their matched learned topic.
    per_topic : numpy.ndarray, shape (K,)
        ``per_topic[k] = ||A_true[:, k] - A_hat[:, matching[k]]||_1`` (between 0 and 2).
    matching : numpy.ndarray of int, shape (K,)
        The learned topic matched to each true topic.

    """
    mean: float
    per_topic: np.ndarray
    matching: np.ndarray


class DocumentFrequencies(NamedTuple):
    """Document statistics of some words in a reference corpus (:func:`document_frequencies`).

    Attributes
    ----------
    word_ids : numpy.ndarray of int, shape (R,)
        The words, sorted.
    df : numpy.ndarray of int64, shape (R,)
        D(w): documents that contain word ``word_ids[i]``.
    co_df : numpy.ndarray of int64, shape (R, R)
        D(w1, w2): documents that contain both (the diagonal is ``df``).
    num_docs : int
        Documents read (empty ones included, as gensim counts them).

    """
    word_ids: np.ndarray
    df: np.ndarray
    co_df: np.ndarray
    num_docs: int

    def index(self, ids):
        """Positions of word ids in ``word_ids`` (every id must be there)."""
        ids = np.asarray(ids)
        pos = np.searchsorted(self.word_ids, ids)
        if np.any(pos >= len(self.word_ids)) or np.any(self.word_ids[np.minimum(pos, len(self.word_ids) - 1)] != ids):
            raise ValueError("some word ids were not counted in these document frequencies")
        return pos


# ----------------------------------------------------------------------------------------------
# Input
# ----------------------------------------------------------------------------------------------

def _topics_of(topics, name='topics'):
    """(K, V) array from a gensim topic model or an array, in its own dtype (ranking ties as
    gensim's ``CoherenceModel`` sees them)."""
    return check_topics(topics, name, dtype=None, tol=np.inf)


def _word_topic_matrix(value, name):
    """The paper's A (V, K), float64, columns on the simplex, from a model or an array: A, or
    K x V topics (transposed, as ``get_topics()`` hands them out) where that is unambiguous."""
    return check_topics(value, name, orientation='VK', tol=_SUM_TOL)


def _check_topn(topn, num_terms):
    topn = check_int('topn', topn, minimum=1)
    if topn > num_terms:
        raise ValueError("topn must be <= the number of terms (%d), got %d" % (num_terms, topn))
    return topn


# ----------------------------------------------------------------------------------------------
# Known topics
# ----------------------------------------------------------------------------------------------

def topic_recovery_l1(A_true, A_hat):
    """L1 reconstruction error of topics after the optimal one-to-one matching.

    The paper's measure for semi-synthetic data: the learned topics are matched to the true ones
    by a minimum-cost assignment (Hungarian algorithm, :func:`scipy.optimize.linear_sum_assignment`,
    on the pairwise L1 distances; the paper solves the same problem as an LP), then the L1
    distance of each matched pair is reported.

    Parameters
    ----------
    A_true : numpy.ndarray of shape (V, K), or a gensim topic model
        The true topics, as columns p(w | z) (the paper's A).
    A_hat : numpy.ndarray of shape (V, K'), K' >= K, or a gensim topic model
        The learned topics, as columns (a model's ``get_topics()`` is transposed). Either
        argument may also be a K x V array of topics as ``get_topics()`` returns them: it is
        transposed where only its rows, not its columns, sum to 1.

    Returns
    -------
    TopicRecoveryError
        ``mean``, ``per_topic`` and ``matching``.

    Raises
    ------
    ValueError
        If the vocabularies differ, A_hat has fewer topics, or a column is not a distribution.

    Examples
    --------
    .. sourcecode:: pycon

        >>> import numpy as np
        >>> from gensim_anchor.evaluation import topic_recovery_l1
        >>> A = np.eye(3)
        >>> B = np.array([[0.0, 0.9, 0.0], [1.0, 0.1, 0.0], [0.0, 0.0, 1.0]])
        >>> error = topic_recovery_l1(A, B)
        >>> error.matching.tolist(), np.round(error.per_topic, 3).tolist()
        ([1, 0, 2], [0.2, 0.0, 0.0])

    """
    A = _word_topic_matrix(A_true, 'A_true')
    B = _word_topic_matrix(A_hat, 'A_hat')
    if A.shape[0] != B.shape[0]:
        raise ValueError("A_true and A_hat have different vocabularies (%d and %d terms)" % (A.shape[0], B.shape[0]))
    if B.shape[1] < A.shape[1]:
        raise ValueError("A_hat has %d topics, fewer than the %d of A_true" % (B.shape[1], A.shape[1]))
    cost = cdist(A.T, B.T, metric='cityblock')  # (K, K'), O(V K K') without a V x K x K' array
    rows, cols = linear_sum_assignment(cost)
    per_topic = cost[rows, cols]
    return TopicRecoveryError(float(per_topic.mean()), per_topic, cols.astype(np.int64))


# ----------------------------------------------------------------------------------------------
# Held-out probability
# ----------------------------------------------------------------------------------------------

def held_out_log_likelihood(model, corpus, *, alpha=None, **kwargs):
    """Held-out log-likelihood per token (nats) of a topic model on ``corpus``.

    The paper's "held-out probability": the LDA likelihood of unseen documents under the learned
    topics and Dirichlet prior, estimated by the left-to-right particle filter of
    :func:`gensim_anchor.likelihood.log_likelihood_per_token` (to which this delegates; see it for
    the estimator, its bias and cost). Every model is scored by the same estimator, so
    AnchorModel and LdaModel values are comparable (LdaModel's own ``log_perplexity`` is a
    variational bound, not comparable).

    Parameters
    ----------
    model : gensim topic model or numpy.ndarray of shape (K, V)
        Topics; a model's ``alpha`` attribute is its prior unless ``alpha`` is given.
    corpus : iterable of list of (int, number)
        Held-out bag-of-words documents (whole counts).
    alpha : numpy.ndarray of shape (K,), optional
        Dirichlet prior; required for an array.
    **kwargs
        ``chunksize``, ``random_state``, ``num_samples``, ``num_moves`` of
        :func:`~gensim_anchor.likelihood.log_likelihood_per_token`.

    Returns
    -------
    float
        Log-likelihood per token (higher is better).

    Examples
    --------
    .. sourcecode:: pycon

        >>> import numpy as np
        >>> from gensim_anchor.evaluation import held_out_log_likelihood
        >>> topics = np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5]])
        >>> value = held_out_log_likelihood(topics, [[(0, 5), (1, 5)]], alpha=np.array([0.01, 0.01]),
        ...                                 random_state=0)
        >>> bool(-0.8 < value < -0.69)  # about log 2 per token
        True

    """
    topics = _topics_of(model, 'model')
    if alpha is None:
        alpha = getattr(model, 'alpha', None)
        if alpha is None:
            raise ValueError("alpha is required when the topics are an array (or a model without alpha)")
    alpha = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (topics.shape[0],))
    # float32 topics (LdaModel, AnchorModel) are renormalised in float64 by the estimator.
    return log_likelihood_per_token(topics, alpha, corpus, **kwargs)


# ----------------------------------------------------------------------------------------------
# Top words, document frequencies, coherence
# ----------------------------------------------------------------------------------------------

def top_words(topics, topn=20):
    """Ids of the ``topn`` most probable words of each topic, most probable first.

    Ranked with :func:`gensim.matutils.argsort` on the topics in their own dtype, exactly as
    gensim's ``CoherenceModel`` ranks a model's topics (so ties fall the same way).

    Parameters
    ----------
    topics : gensim topic model or numpy.ndarray of shape (K, V)
    topn : int

    Returns
    -------
    numpy.ndarray of int64, shape (K, topn)
    """
    array = _topics_of(topics)
    topn = _check_topn(topn, array.shape[1])
    # A loop over topics (K), not words or documents.
    return np.array([matutils.argsort(row, topn=topn, reverse=True) for row in array], dtype=np.int64)


def document_frequencies(corpus, word_ids, *, chunksize=2000):
    """D(w) and D(w1, w2) of the given words in a reference corpus, in one pass.

    Each chunk of documents becomes a sparse binary document-word matrix X (documents x the
    given words; a word is in a document when its count is > 0); the counts are
    :math:`\\sum X` and :math:`\\sum X^T X` over the chunks.

    Parameters
    ----------
    corpus : iterable of list of (int, number)
        Bag-of-words documents, read once. Ids not among ``word_ids`` are ignored.
    word_ids : array_like of int
        The words to count (e.g. the union of the topics' top words).
    chunksize : int
        Documents per chunk.

    Returns
    -------
    DocumentFrequencies

    Notes
    -----
    Memory O(R^2) for R distinct words (R <= K * topn) plus one chunk.
    """
    words = np.unique(np.asarray(word_ids, dtype=np.int64).ravel())
    if words.size == 0 or words[0] < 0:
        raise ValueError("word_ids must be non-empty word ids >= 0")
    chunksize = check_int('chunksize', chunksize, minimum=1)
    R = len(words)
    column = np.full(int(words[-1]) + 1, -1, dtype=np.int64)
    column[words] = np.arange(R)
    co_df = np.zeros((R, R), dtype=np.int64)
    num_docs = 0
    for chunk in utils.grouper(corpus, chunksize):
        # The co-occurrence pass's parser and checks; weighted counts are fine (presence only).
        lengths, ids, counts = parse_chunk(chunk, None, num_docs, whole_counts=None)
        doc = np.repeat(np.arange(len(chunk)), lengths)
        known = (ids < len(column)) & (counts > 0)
        doc, ids = doc[known], ids[known]
        col = column[ids]
        keep = col >= 0
        X = sp.csr_matrix((np.ones(int(keep.sum()), dtype=np.int64), (doc[keep], col[keep])),
                          shape=(len(chunk), R))
        X.data[:] = 1  # a word repeated in a document's list (summed by csr) counts once
        co_df += (X.T @ X).toarray()
        num_docs += len(chunk)
    if num_docs == 0:
        raise ValueError("the reference corpus is empty")
    return DocumentFrequencies(words, np.diag(co_df).copy(), co_df, num_docs)


def _pair_statistics(topics, corpus, topn, frequencies):
    """Top words (K, N); for each topic the pairs (i > j) of ranks: D(w_i, w_j), D(w_j)."""
    top = top_words(topics, topn)
    if frequencies is None and corpus is None:
        raise ValueError("a reference corpus (or precomputed frequencies) is required")
    if frequencies is None:
        frequencies = document_frequencies(corpus, top)
    elif corpus is not None:
        raise ValueError("give either a reference corpus or precomputed frequencies, not both")
    pos = frequencies.index(top)
    later, earlier = np.tril_indices(topn, k=-1)  # i > j: w_i ranks below w_j
    co = frequencies.co_df[pos[:, later], pos[:, earlier]].astype(np.float64)
    df = frequencies.df[pos[:, earlier]].astype(np.float64)
    return co, df, frequencies.num_docs


def coherence(topics, corpus=None, topn=20, *, epsilon=PAPER_EPSILON, frequencies=None):
    """The paper's topic coherence (Mimno et al. 2011), one value per topic.

    For the top words :math:`w_1, \\dots, w_N` of a topic, most probable first,

    .. math::

        C = \\sum_{i=2}^{N} \\sum_{j=1}^{i-1} \\log \\frac{D(w_i, w_j) + \\epsilon}{D(w_j)},

    with D(w) the number of documents of the reference corpus that contain w and
    :math:`D(w_i, w_j)` the number that contain both. The paper uses :math:`\\epsilon = 0.01`
    (Stevens et al. 2012; the default); Mimno et al. used 1. Higher (closer to 0) is better.

    Difference from gensim's ``u_mass`` (:func:`umass_coherence`): both take the same
    :math:`N(N-1)/2` ordered pairs (gensim's ``s_one_pre`` segmentation: each word with every
    more probable word, the more probable one in the denominator), but

    * gensim **averages** over the pairs where the paper **sums**: u_mass is on a per-pair scale,
      the paper's coherence is :math:`N(N-1)/2` times larger in magnitude (190 times for N = 20);
    * gensim adds its epsilon, :math:`10^{-12}`, to the co-document *probability*
      :math:`D(w_i, w_j)/M` (M documents), i.e. :math:`10^{-12} M` to the count, where the paper
      adds 0.01 (or Mimno's 1) to the count. For pairs that co-occur the two differ only by
      :math:`\\log(1 + \\epsilon / D(w_i, w_j))`; a pair that never co-occurs costs
      :math:`\\log(\\epsilon / D(w_j))` here (about -4.6 - log D(w_j)) and
      :math:`\\log(10^{-12} M / D(w_j))` in gensim (about -27.6 + log(M / D(w_j))).

    So with all pairs co-occurring, ``coherence`` is about :math:`N(N-1)/2` times ``u_mass``.
    As in gensim, a pair whose more probable word is in no document contributes 0.

    Parameters
    ----------
    topics : gensim topic model or numpy.ndarray of shape (K, V)
    corpus : iterable of list of (int, number), optional
        Reference corpus (the paper: the training corpus). Not needed with ``frequencies``.
    topn : int
        N, the number of top words per topic.
    epsilon : float
        Added to each co-document count.
    frequencies : DocumentFrequencies, optional
        Counts from :func:`document_frequencies` covering the top words (to score several models
        or measures with one pass over the corpus).

    Returns
    -------
    numpy.ndarray, shape (K,)
    """
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real) or not epsilon > 0:
        raise ValueError("epsilon must be a number > 0, got %r" % (epsilon,))
    co, df, _ = _pair_statistics(topics, corpus, topn, frequencies)
    seen = df > 0
    terms = np.where(seen, np.log(co + epsilon) - np.log(np.where(seen, df, 1.0)), 0.0)
    return terms.sum(axis=1)


def umass_coherence(topics, corpus=None, topn=20, *, frequencies=None):
    """gensim's u_mass coherence per topic, vectorised.

    The same value as ``CoherenceModel(model=..., corpus=corpus, coherence='u_mass', topn=topn)
    .get_coherence_per_topic()`` (its mean over topics is ``get_coherence()``): for the top words
    :math:`w_1, \\dots, w_N`, the mean over the pairs i > j of
    :math:`\\log\\big((D(w_i, w_j)/M + 10^{-12}) / (D(w_j)/M)\\big)`, M the number of documents of
    the reference corpus; a pair whose more probable word is in no document contributes 0.
    See :func:`coherence` for how it differs from the paper's coherence.

    Parameters
    ----------
    topics : gensim topic model or numpy.ndarray of shape (K, V)
    corpus : iterable of list of (int, number), optional
        Reference corpus. Not needed with ``frequencies``.
    topn : int
    frequencies : DocumentFrequencies, optional

    Returns
    -------
    numpy.ndarray, shape (K,)
    """
    co, df, num_docs = _pair_statistics(topics, corpus, topn, frequencies)
    if co.shape[1] == 0:
        return np.zeros(co.shape[0])
    m = float(num_docs)
    seen = df > 0
    # gensim's own arithmetic (probabilities, then the ratio), so the values agree to rounding.
    terms = np.where(seen, np.log((co / m + UMASS_EPSILON) / np.where(seen, df / m, 1.0)), 0.0)
    return terms.mean(axis=1)


# ----------------------------------------------------------------------------------------------
# Redundancy between topics
# ----------------------------------------------------------------------------------------------

def unique_words(topics, topn=20):
    """Per topic, how many of its ``topn`` most probable words are in no other topic's top ``topn``.

    The paper's measure of inter-topic similarity ("unique words"; higher is better, at most
    ``topn``).

    Returns
    -------
    numpy.ndarray of int64, shape (K,)
    """
    top = top_words(topics, topn)
    # A word is at most once in a topic's top list, so a count of 1 means "this topic only".
    counts = np.bincount(top.ravel())
    return (counts[top] == 1).sum(axis=1).astype(np.int64)


def topic_diversity(topics, topn=25):
    """Fraction of distinct words among the top ``topn`` words of all topics (Dieng, Ruiz & Blei
    2020): 1 when no two topics share a top word, 1/K when all topics have the same top words.

    Returns
    -------
    float
    """
    top = top_words(topics, topn)
    return float(len(np.unique(top)) / top.size)
