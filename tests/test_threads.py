"""Host threads for independent programs (gensim_anchor._threads)."""
import threading
import time

import pytest

from gensim_anchor import _threads


def test_row_parts_cover_the_rows_in_order_and_respect_the_minimum():
    assert _threads.row_parts(10, 4, threads=2) == [(0, 5), (5, 10)]
    assert _threads.row_parts(10, 4, threads=8) == [(0, 5), (5, 10)]  # at least 4 rows each
    assert _threads.row_parts(7, 4, threads=8) == [(0, 7)]  # too few to split
    assert _threads.row_parts(0, 4, threads=2) == [(0, 0)]
    parts = _threads.row_parts(10_001, 1000, threads=3)
    assert [lo for lo, _ in parts[1:]] == [hi for _, hi in parts[:-1]]
    assert parts[0][0] == 0 and parts[-1][1] == 10_001 and len(parts) == 3
    assert max(hi - lo for lo, hi in parts) - min(hi - lo for lo, hi in parts) <= 1


def test_host_threads_is_the_usable_cpus_at_most_the_cap(monkeypatch):
    import jax
    assert jax.default_backend() == 'cpu'  # the suite's backend
    monkeypatch.setattr(_threads.os, 'sched_getaffinity', lambda pid: set(range(64)), raising=False)
    assert _threads.host_threads() == _threads.MAX_THREADS
    monkeypatch.setattr(_threads.os, 'sched_getaffinity', lambda pid: {3}, raising=False)
    assert _threads.host_threads() == 1
    monkeypatch.setattr(jax, 'default_backend', lambda: 'gpu')
    assert _threads.host_threads() == 1


def test_run_all_runs_the_calls_at_once_and_returns_their_results_in_order():
    barrier = threading.Barrier(3, timeout=10)  # passes only if all three run at the same time
    main = threading.current_thread()

    def call(i):
        barrier.wait()
        return i, threading.current_thread() is main

    results = _threads.run_all([lambda i=i: call(i) for i in range(3)])
    assert results == [(0, True), (1, False), (2, False)]  # the first on the calling thread
    assert _threads.run_all([lambda: 'alone']) == ['alone']
    assert not [t for t in threading.enumerate() if t.name.startswith('gensim_anchor')]


def test_run_all_raises_only_once_every_call_has_ended():
    ended = []

    def slow():
        time.sleep(0.2)
        ended.append('slow')
        return 1

    def failing():
        raise ValueError("part 0 failed")

    with pytest.raises(ValueError, match="part 0 failed"):
        _threads.run_all([failing, slow])
    assert ended == ['slow']
    with pytest.raises(KeyError):
        _threads.run_all([slow, lambda: {}['missing']])
    assert ended == ['slow', 'slow']
