"""Shared fixtures and helpers: synthetic separable topic models, LDA corpora, topic matching,
and the location of the shared real-data directory."""
import os
from pathlib import Path

# Single-threaded BLAS for the test process, set before numpy is first imported (pytest loads
# this file before any test module). On small machines OpenBLAS's threads make the
# tall-and-thin products of the slow references very slow: on 2 cores, a 6906 x 19 Gram
# product took 0.2 s with 2 BLAS threads and 0.14 ms with one. An explicit setting wins.
os.environ.setdefault('OPENBLAS_NUM_THREADS', '1')
# The suite runs in several processes (README: pytest -n 2): on a GPU, JAX's default of taking
# 75% of the device's memory in each process leaves the second at most a quarter (not tried on a
# device: none was lent); allocating as needed lets them share it.
os.environ.setdefault('XLA_PYTHON_CLIENT_PREALLOCATE', 'false')
# The tests compile into a cache of their own, never the user's (gensim_anchor._compile_cache):
# a fresh directory per session, so that every session also runs the compile-and-write path.
# Set here in pytest's first process, it is shared by the worker processes of pytest -n.
if 'GENSIM_ANCHOR_CACHE_DIR' not in os.environ:
    import atexit
    import shutil
    import tempfile
    os.environ['GENSIM_ANCHOR_CACHE_DIR'] = tempfile.mkdtemp(prefix='gensim-anchor-test-cache-')
    atexit.register(shutil.rmtree, os.environ['GENSIM_ANCHOR_CACHE_DIR'], ignore_errors=True)

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from scipy.optimize import linear_sum_assignment  # noqa: E402

from gensim_anchor import synthetic  # noqa: E402

# E[W W^T] of Dirichlet proportions: the package's (checked by Monte Carlo in test_synthetic.py).
dirichlet_second_moment = synthetic.dirichlet_second_moment


def pytest_collection_modifyitems(config, items):
    """The tutorials' notebooks first (some 35 s each, in a kernel of their own): last in the
    collection, they ran at the end, one worker on a notebook while the other had nothing left.
    pytest-xdist hands out the rest as workers finish, so long tests early are evened out by the
    short ones after them. The other tests keep their order (module fixtures are set up once)."""
    items.sort(key=lambda item: not item.nodeid.startswith('tests/test_tutorials.py'))


@pytest.fixture(scope='module')
def client():
    """A LocalCluster of two worker processes for one test module (a module may kill one of
    its workers), and a Client that is not the default one: tests that rely on a default client
    say so (``client.as_current()``)."""
    distributed = pytest.importorskip('distributed')
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                       dashboard_address=':0')
    client = distributed.Client(cluster, set_as_default=False)
    yield client
    client.close()
    cluster.close()


#: ../shared/data relative to the repository root; tests that need it skip when it is absent.
DATA_DIR = Path(__file__).resolve().parents[2] / 'shared' / 'data'


@pytest.fixture(scope='session')
def data_dir():
    """The shared real-data directory, or a skip when this checkout does not have it."""
    if not DATA_DIR.is_dir():
        pytest.skip("shared data directory %s is absent" % DATA_DIR)
    return DATA_DIR


@pytest.fixture(scope='session')
def kos_corpus(data_dir):
    """The UCI KOS corpus as a list of bag-of-words documents (3,430 documents, 6,906 terms)."""
    docword = data_dir / 'uci_kos' / 'docword.kos.txt.gz'
    vocab = data_dir / 'uci_kos' / 'vocab.kos.txt.gz'
    if not (docword.is_file() and vocab.is_file()):
        pytest.skip("KOS files are absent from %s" % data_dir)
    from gensim.corpora import UciCorpus
    return list(UciCorpus(str(docword), str(vocab)))


# ----------------------------------------------------------------------------------------------
# Synthetic separable topic models
# ----------------------------------------------------------------------------------------------

def separable_topics(rng, num_terms, num_topics, *, anchors_per_topic=1, anchor_mass=0.1, beta=1.0):
    """A separable word-topic matrix A (V x K): columns sum to 1.

    Topic k owns ``anchors_per_topic`` anchor words that have probability only in topic k
    (together ``anchor_mass``); every other word has positive probability in every topic,
    drawn from Dirichlet(beta), so that no non-anchor row of Q-bar is a vertex.

    Returns
    -------
    A : numpy.ndarray, shape (V, K)
    anchors : numpy.ndarray of int, shape (K, anchors_per_topic)
        The anchor words of each topic.
    """
    V, K = num_terms, num_topics
    perm = rng.permutation(V)
    anchors = perm[:K * anchors_per_topic].reshape(K, anchors_per_topic)
    rest = perm[K * anchors_per_topic:]
    A = np.zeros((V, K))
    for k in range(K):
        A[anchors[k], k] = anchor_mass / anchors_per_topic
        A[rest, k] = (1.0 - anchor_mass) * rng.dirichlet(np.full(len(rest), beta))
    return A, anchors


def exact_cooccurrence(Q):
    """A dense-mode Cooccurrence whose ``to_dense()`` is exactly Q (num_docs = 1)."""
    from gensim_anchor.cooccurrence import Cooccurrence
    V = Q.shape[0]
    return Cooccurrence(num_terms=V, num_docs=1, num_short=0, num_tokens=0,
                        doc_freq=np.full(V, 10 ** 6, dtype=np.int64), term_counts=Q.sum(axis=1),
                        h_hat=np.zeros(V), Q_sum=np.array(Q, dtype=np.float64))


def lda_corpus(rng, A, alpha, num_docs, doc_length, chunk=5000):
    """Bag-of-words documents drawn from LDA with topics A (V x K) and a Dirichlet(alpha) prior.

    Counts are drawn vectorised (one multinomial per document, a chunk of documents at a time).
    Ids and counts are Python ints, as a gensim ``doc2bow`` gives.
    """
    V, K = A.shape
    alpha = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (K,))
    docs = []
    for lo in range(0, num_docs, chunk):
        n = min(chunk, num_docs - lo)
        theta = rng.dirichlet(alpha, size=n)
        P = theta @ A.T
        P /= P.sum(axis=1, keepdims=True)
        counts = rng.multinomial(doc_length, P)
        rows, cols = np.nonzero(counts)
        split = np.cumsum(np.bincount(rows, minlength=n))[:-1]
        for ids, cs in zip(np.split(cols, split), np.split(counts[rows, cols], split)):
            docs.append(list(zip(ids.tolist(), cs.tolist())))
    return docs


def random_corpus(rng, num_docs, num_terms, *, max_len=12, max_count=3, short_fraction=0.0):
    """Small random bag-of-words corpus: distinct ids per document, integer counts as floats
    (as gensim readers give); about ``short_fraction`` of the documents are empty or 1 token."""
    docs = []
    for _ in range(num_docs):
        if rng.random() < short_fraction:
            docs.append([] if rng.random() < 0.5 else [(int(rng.integers(num_terms)), 1.0)])
            continue
        n = int(rng.integers(1, max_len + 1))
        ids = np.sort(rng.choice(num_terms, size=min(n, num_terms), replace=False))
        docs.append([(int(i), float(rng.integers(1, max_count + 1))) for i in ids])
    return docs


def matched_l1(A_true, A_est):
    """Per-topic L1 distance between the columns of A_true and A_est after the optimal
    one-to-one matching of topics (Hungarian algorithm on the pairwise L1 distances).

    Returns
    -------
    errors : numpy.ndarray, shape (K,)
        errors[k] = ||A_true[:, k] - A_est[:, perm[k]]||_1.
    perm : numpy.ndarray of int, shape (K,)
    """
    cost = np.abs(A_true[:, :, None] - A_est[:, None, :]).sum(axis=0)
    rows, cols = linear_sum_assignment(cost)
    perm = np.empty(A_true.shape[1], dtype=np.int64)
    perm[rows] = cols
    return cost[rows, cols], perm


def wide_topics(seed, num_terms=5000):
    """Three random topics over a wide vocabulary and an asymmetric alpha, for the tests that
    check a stage sends its program only the columns of the documents' words; also the generator,
    for the documents."""
    rng = np.random.default_rng(seed)
    topics = rng.dirichlet(np.full(num_terms, 0.3), size=3)
    return rng, topics, np.array([0.2, 0.5, 0.3])


def record_calls(monkeypatch, module, name, record):
    """Replace ``module.name`` by a spy that appends ``record(*args, **kwargs)`` to the returned
    list on each call, then calls the function."""
    calls, real = [], getattr(module, name)

    def spy(*args, **kwargs):
        calls.append(record(*args, **kwargs))
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return calls
