"""The persistent compilation cache (gensim_anchor._compile_cache): where it is, that a second
process loads instead of compiling, that the user's settings win, and that a damaged or
unwritable cache costs one warning and never a result. Each case runs in fresh processes (the
cache is configured once per process)."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gensim_anchor import _compile_cache

ROOT = Path(__file__).resolve().parents[1]

# A small fit (no alpha search: fewer programs), printing what it compiled and what it warned.
CHILD = r"""
import hashlib, json, warnings
warnings.simplefilter('always')
import jax.monitoring
events = {'misses': 0, 'hits': 0}
def on_event(name, **kw):
    if name == '/jax/compilation_cache/cache_misses': events['misses'] += 1
    if name == '/jax/compilation_cache/cache_hits': events['hits'] += 1
jax.monitoring.register_event_listener(on_event)
traced = []
jax.monitoring.register_event_duration_secs_listener(
    lambda name, secs, **kw: traced.append(name) if name.endswith('jaxpr_trace_duration') else None)
from gensim.test.utils import common_corpus, common_dictionary
from gensim_anchor import AnchorModel, _compile_cache
with warnings.catch_warnings(record=True) as caught:
    model = AnchorModel(common_corpus, num_topics=2, id2word=common_dictionary, anchor_min_df=1,
                        alpha='symmetric', random_state=0)
print(json.dumps(dict(
    topics=hashlib.sha256(model.get_topics().tobytes()).hexdigest(), traces=len(traced), **events,
    warnings=[str(w.message) for w in caught if 'cache' in str(w.message)],
    cache_dir=_compile_cache.cache_dir(), jax_dir=jax.config.jax_compilation_cache_dir)))
"""

# CHILD, then inference (model[bow] and model.inference): the traces it adds, counted apart.
CHILD_INFERENCE = CHILD.replace("traces=len(traced)", "traces=fit_traces").replace(
    "print(json.dumps(dict(",
    "fit_traces = len(traced)\nlist(model[common_corpus])\ngamma = model.inference(common_corpus)[0]\n"
    "print(json.dumps(dict(inference_traces=len(traced) - fit_traces, ")


def run_child(env_update, code=CHILD):
    env = {k: v for k, v in os.environ.items()
           if k not in ('GENSIM_ANCHOR_CACHE_DIR', 'JAX_COMPILATION_CACHE_DIR', 'XDG_CACHE_HOME')}
    env.update(env_update)
    env['PYTHONPATH'] = str(ROOT) + os.pathsep + env.get('PYTHONPATH', '')
    out = subprocess.run([sys.executable, '-c', code], env=env, cwd=str(ROOT), capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def entries(path):
    return sorted(p for p in Path(path).rglob('*') if p.is_file() and not p.name.startswith('.'))


@pytest.fixture(scope='module')
def filled(tmp_path_factory):
    """A first process's CHILD output and the cache it filled: each cold run costs a full
    compilation, so the tests that start from a filled cache share one (and copy it)."""
    cache = tmp_path_factory.mktemp('filled') / 'cache'
    return run_child({'GENSIM_ANCHOR_CACHE_DIR': str(cache)}, CHILD_INFERENCE), cache


def filled_copy(filled, tmp_path):
    """(the first process's output, a copy of the cache it filled, for this test to change)."""
    first, cache = filled
    return first, Path(shutil.copytree(cache, tmp_path / 'cache'))


def test_importing_the_package_compiles_nothing():
    code = "import sys, gensim_anchor; print('jax' in sys.modules)"
    out = subprocess.run([sys.executable, '-c', code], cwd=str(ROOT), capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.stdout.strip() == 'False', out.stderr


def test_a_second_process_loads_what_the_first_compiled(filled, tmp_path):
    assert filled[0]['cache_dir'] == str(filled[1])
    first, cache = filled_copy(filled, tmp_path)
    assert first['traces'] > 0 and not first['warnings']
    assert any(p.parent.name == 'executables' for p in entries(cache))
    second = run_child({'GENSIM_ANCHOR_CACHE_DIR': str(cache)})
    assert second['misses'] == 0 and not second['warnings']
    assert second['traces'] == 0  # the stages' programs are loaded whole, nothing is traced
    assert second['topics'] == first['topics']


def test_the_default_directory_is_the_platform_cache(tmp_path):
    out = run_child({'XDG_CACHE_HOME': str(tmp_path)},
                    "import sys; from gensim_anchor import _compile_cache as c; import json; "
                    "print(json.dumps(dict(cache_dir=c.cache_dir())))")
    if sys.platform.startswith('linux'):
        import jax
        assert out['cache_dir'] == str(tmp_path / 'gensim_anchor' / ('jax-' + jax.__version__))


# Both layers of the cache (a stored_jit program, and a plain jitted one under persistent_cache),
# without a whole fit: the switch is read once per process, before anything compiles.
SMALL = r"""
import json
import jax
import numpy as np
from gensim_anchor import _compile_cache
stored = _compile_cache.stored_jit(jax.jit(lambda x: x + 1))
with _compile_cache.persistent_cache():
    stored(np.ones(3))
    jax.jit(lambda x: x * 2)(np.ones(3))
print(json.dumps(dict(cache_dir=_compile_cache.cache_dir(), jax_dir=jax.config.jax_compilation_cache_dir)))
"""


@pytest.mark.parametrize('value', ['', 'off', None])
def test_the_environment_variable_switches_it_off(tmp_path, value):
    env = {'XDG_CACHE_HOME': str(tmp_path)}
    if value is not None:
        env['GENSIM_ANCHOR_CACHE_DIR'] = value
    out = run_child(env, SMALL)
    if value is None:  # the control: the same process, cache on, writes both kinds of entry
        written = entries(tmp_path)
        assert out['cache_dir'] == out['jax_dir'] and out['cache_dir'].startswith(str(tmp_path))
        assert any(p.parent.name == 'executables' for p in written)
        assert any(p.parent.name != 'executables' for p in written)
    else:
        assert out['cache_dir'] is None and out['jax_dir'] is None
        assert not entries(tmp_path)


def test_a_cache_directory_configured_for_jax_is_left_alone(tmp_path):
    theirs, ours = tmp_path / 'theirs', tmp_path / 'ours'
    out = run_child({'JAX_COMPILATION_CACHE_DIR': str(theirs), 'GENSIM_ANCHOR_CACHE_DIR': str(ours)})
    assert out['jax_dir'] == str(theirs) == out['cache_dir']
    assert not ours.exists()


def test_an_unwritable_cache_directory_costs_one_warning(filled, tmp_path):
    reference = filled[0]  # the same fit (a cache changes where programs come from, not results)
    blocker = tmp_path / 'a-file'
    blocker.write_text('not a directory')
    out = run_child({'GENSIM_ANCHOR_CACHE_DIR': str(blocker / 'cache')})
    assert len(out['warnings']) == 1 and 'not usable' in out['warnings'][0]
    assert out['cache_dir'] is None and out['topics'] == reference['topics']


def test_damaged_entries_cost_one_warning_and_are_replaced(filled, tmp_path):
    first, cache = filled_copy(filled, tmp_path)
    files = entries(cache)
    assert files
    for i, path in enumerate(files):  # truncated, emptied, or overwritten with garbage
        data = path.read_bytes()
        path.write_bytes([data[:len(data) // 2], b'', b'\x00garbage' * 10][i % 3])
    damaged = run_child({'GENSIM_ANCHOR_CACHE_DIR': str(cache)})
    assert len(damaged['warnings']) == 1 and 'could not be read' in damaged['warnings'][0]
    assert damaged['topics'] == first['topics']
    healed = run_child({'GENSIM_ANCHOR_CACHE_DIR': str(cache)})
    assert not healed['warnings'] and healed['misses'] == 0 and healed['topics'] == first['topics']


def test_two_processes_fitting_at_once_both_succeed(tmp_path):
    cache = tmp_path / 'cache'
    env = {k: v for k, v in os.environ.items() if k != 'JAX_COMPILATION_CACHE_DIR'}
    env.update(GENSIM_ANCHOR_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, '-c', CHILD], env=env, cwd=str(ROOT),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    results = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr[-3000:]
        results.append(json.loads(stdout.strip().splitlines()[-1]))
    assert results[0]['topics'] == results[1]['topics']
    assert not results[0]['warnings'] and not results[1]['warnings']
    assert run_child({'GENSIM_ANCHOR_CACHE_DIR': str(cache)})['topics'] == results[0]['topics']


def test_the_cache_serves_after_the_users_own_jax_code(filled, tmp_path):
    first, cache = filled_copy(filled, tmp_path)
    before = "import jax, jax.numpy as jnp\nprint(float(jax.jit(lambda x: x + 1)(jnp.ones(3)).sum()))\n"
    after = run_child({'GENSIM_ANCHOR_CACHE_DIR': str(cache)}, before + CHILD)
    assert after['cache_dir'] == str(cache)
    assert after['traces'] == 0 and after['misses'] == 0  # JAX already ran: still all loaded
    assert after['topics'] == first['topics'] and not after['warnings']


def test_inference_in_a_second_process_compiles_nothing(filled, tmp_path):
    first, cache = filled_copy(filled, tmp_path)
    assert first['inference_traces'] > 0  # the first process compiled inference's programs
    second = run_child({'GENSIM_ANCHOR_CACHE_DIR': str(cache)}, CHILD_INFERENCE)
    assert second['traces'] == 0 and second['inference_traces'] == 0


def test_stored_programs_match_plain_jit_for_every_dtype_weak_type_and_x64_mode():
    """A stored program is looked up by a cheap key (numpy arguments by shape and dtype, JAX's
    trace context as it is): each call must still get the program plain jit would run, whatever
    the dtype, the weak type of a Python scalar, or the x64 mode in force. (In this process: the
    tests' own cache directory is on, see conftest.)"""
    import jax
    import numpy as np

    def f(x):
        return x + np.float16(1)

    stored = _compile_cache.stored_jit(jax.jit(f))
    calls = [(False, np.ones(3)), (True, np.ones(3)), (False, np.ones(3, np.int32)),
             (False, np.ones(3, np.int64)), (True, np.ones(3, np.int64)), (False, 1.0),
             (False, np.float32(1.0)), (True, np.float64(1.0)), (False, np.ones(3))]
    got, expected = [], []
    for x64, arg in calls:
        with jax.enable_x64(x64):
            got.append(str(stored(arg).dtype))
            expected.append(str(jax.jit(f)(arg).dtype))
    assert stored._loaded  # the stored path ran, not the plain jit fallback
    assert got == expected
    # Eight argument types, seven programs: int32 and int64 arrays are both int32 without x64,
    # and one program serves both.
    assert len(stored._loaded) == 8 and len(stored._by_key) == 7
    assert len(set(expected)) == 3  # the calls do differ: float16, float32, float64


def _spy_compiles(monkeypatch):
    """The compiler options of every stored program's compilation (Lowered.compile) and of every
    plain jax.jit built (the options given, or None)."""
    import jax
    seen = {'compile': [], 'jit': []}
    real_compile, real_jit = jax.stages.Lowered.compile, jax.jit

    def compile(self, compiler_options=None):
        seen['compile'].append(compiler_options)
        return real_compile(self, compiler_options=compiler_options)

    def jit(fun, **kwargs):
        seen['jit'].append(kwargs.get('compiler_options'))
        return real_jit(fun, **kwargs)

    monkeypatch.setattr(jax.stages.Lowered, 'compile', compile)
    monkeypatch.setattr(jax, 'jit', jit)
    return seen


def test_loop_emitters_are_the_options_of_the_programs_that_ask_for_them_only(monkeypatch):
    """``stored_jit(..., loop_emitters=True)`` compiles that program, and no other, with
    LOOP_EMITTERS on a CPU, stored or plain (cache off), with the same results; the options
    are part of the stored key."""
    import jax
    import numpy as np

    def f(x):
        return jax.numpy.sin(x) * 2 + jax.numpy.cumsum(x)

    x = np.linspace(0.0, 1.0, 7)
    expected = np.asarray(jax.jit(f)(x))
    seen = _spy_compiles(monkeypatch)
    tuned = _compile_cache.stored_jit(jax.jit(f), loop_emitters=True)
    default = _compile_cache.stored_jit(jax.jit(f))
    np.testing.assert_array_equal(tuned(x), expected)
    np.testing.assert_array_equal(default(x), expected)
    assert jax.default_backend() == 'cpu'  # the suite's backend; LOOP_EMITTERS are for a CPU
    # Two compilations: the same function and arguments, stored under two keys.
    assert seen['compile'] == [_compile_cache.LOOP_EMITTERS, None]
    # Inside the caller's program (JAX refuses options on a nested jit), on either path.
    np.testing.assert_array_equal(jax.jit(lambda y: tuned(y) + 1)(x), expected + 1)
    # The plain path (no stored executables: here, our cache reported unusable).
    monkeypatch.setitem(_compile_cache._state, 'checked', False)
    np.testing.assert_array_equal(tuned(x + 1), np.asarray(jax.jit(f)(x + 1)))
    assert _compile_cache.LOOP_EMITTERS in seen['jit']
    np.testing.assert_allclose(jax.vmap(tuned)(np.stack([x, x + 1])), np.stack([expected, tuned(x + 1)]))
    assert not _compile_cache._state.get('no_options')  # no call was refused its options


def test_options_this_xla_does_not_know_are_dropped_with_a_debug_line(monkeypatch, caplog):
    """An XLA without the options (another version) compiles the program with its defaults: the
    right result, a DEBUG line, and no options for the rest of the process."""
    import logging
    import jax
    import numpy as np
    monkeypatch.setattr(_compile_cache, 'LOOP_EMITTERS', {'xla_no_such_option_in_any_xla': True})
    monkeypatch.setitem(_compile_cache._state, 'no_options', False)

    def g(x):
        return x * 3 - 1

    stored = _compile_cache.stored_jit(jax.jit(g), loop_emitters=True)
    with caplog.at_level(logging.DEBUG, logger='gensim_anchor._compile_cache'):
        np.testing.assert_array_equal(stored(np.arange(4.0)), np.arange(4.0) * 3 - 1)
    assert _compile_cache._state['no_options']
    assert any('does not take the compile options' in r.getMessage() for r in caplog.records)
    # Later programs ask for nothing, stored or plain.
    assert stored._options() == {}
    monkeypatch.setitem(_compile_cache._state, 'checked', False)
    np.testing.assert_array_equal(stored(np.arange(3.0)), np.arange(3.0) * 3 - 1)


def test_telling_a_refused_option_from_another_error_changes_nothing(monkeypatch):
    """The predicate only reads the error: dropping the options is the caller's decision."""
    monkeypatch.setitem(_compile_cache._state, 'no_options', False)
    options = {'xla_some_option': False}
    refused = ValueError("INVALID_ARGUMENT: No such compile option: 'xla_some_option'")
    assert _compile_cache._refuses_options(refused, options)
    assert _compile_cache._refuses_options(
        TypeError("jit() got an unexpected keyword argument 'compiler_options'"), options)
    assert not _compile_cache._refuses_options(refused, {})  # nothing was asked for
    assert not _compile_cache._refuses_options(ValueError("compile option 'xla_other' unknown"), options)
    assert not _compile_cache._refuses_options(RuntimeError("RESOURCE_EXHAUSTED: out of memory"), options)
    assert not _compile_cache._state['no_options']


def test_threads_that_call_a_new_program_at_once_compile_it_once(monkeypatch):
    """A model used from several threads (a server's model[bow], say) calls one stored program
    from all of them: the first call of a shape compiles (or loads) it once, and every thread
    gets the right result."""
    import threading
    import time
    import jax
    import jax.numpy as jnp
    import numpy as np
    _compile_cache._configure()
    if not _compile_cache._state['checked'] or _compile_cache._environment() is None:
        pytest.skip("the stored programs need the package's cache directory")

    def h(x):
        return jnp.sin(x) * 2 + 1

    stored = _compile_cache.stored_jit(jax.jit(h))
    real, compiles = stored._load, []

    def slow(*args):  # long enough that every thread misses before the first one is done
        compiles.append(args)
        time.sleep(0.5)
        return real(*args)

    monkeypatch.setattr(stored, '_load', slow)
    start, results = threading.Barrier(4, timeout=20), {}

    def call(i):
        start.wait()
        results[i] = np.asarray(stored(np.arange(5.0) + 0.25))

    workers = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert len(compiles) == 1 and sorted(results) == [0, 1, 2, 3]
    for value in results.values():
        np.testing.assert_allclose(value, np.sin(np.arange(5.0) + 0.25) * 2 + 1, rtol=1e-6)


def test_pruning_removes_the_least_recently_used_entries_above_the_limit(tmp_path):
    import time
    (tmp_path / 'executables').mkdir()
    now = time.time()
    files = []
    for age, name in enumerate(['executables/a', 'b-cache', 'executables/c', 'd-cache']):
        file = tmp_path / name
        file.write_bytes(b'x' * 1000)
        os.utime(file, (now - 1000 * age, now - 1000 * age))  # a is the newest, d the oldest
        files.append(file)
    other = tmp_path / 'notes.txt'  # not an entry: never touched
    other.write_bytes(b'y' * 5000)
    assert _compile_cache.prune(tmp_path, 4000) == 0  # at the limit: nothing to do
    assert all(f.exists() for f in files)
    # Above the limit: down to 3/4 of it, oldest first.
    assert _compile_cache.prune(tmp_path, 3500) == 2000
    assert [f.exists() for f in files] == [True, True, False, False] and other.exists()


def test_a_loaded_entry_counts_as_used_and_the_limit_comes_from_the_environment(filled, tmp_path, monkeypatch):
    _, cache = filled_copy(filled, tmp_path)
    stored = [p for p in entries(cache) if p.parent.name == 'executables']
    assert stored
    for p in stored:
        os.utime(p, (1, 1))  # as if last used in 1970
    second = run_child({'GENSIM_ANCHOR_CACHE_DIR': str(cache)}, CHILD_INFERENCE)
    assert second['traces'] == 0 and second['inference_traces'] == 0  # all loaded ...
    assert all(p.stat().st_mtime > 1 for p in stored)  # ... and the loads refreshed them
    # The limit: megabytes from the environment; 0 empties the cache at the next start.
    monkeypatch.setenv(_compile_cache.MAX_MB_VAR, '0.5')
    assert _compile_cache._max_bytes() == 2 ** 19
    monkeypatch.setenv(_compile_cache.MAX_MB_VAR, 'lots')
    with pytest.warns(RuntimeWarning, match="GENSIM_ANCHOR_CACHE_MAX_MB='lots' is not a number"):
        assert _compile_cache._max_bytes() == _compile_cache.DEFAULT_MAX_MB * 2 ** 20
    # A process that only configures the cache (cache_dir()) prunes it: nothing is left.
    run_child({'GENSIM_ANCHOR_CACHE_DIR': str(cache), _compile_cache.MAX_MB_VAR: '0'},
              "from gensim_anchor import _compile_cache; import json; "
              "print(json.dumps(dict(cache_dir=_compile_cache.cache_dir())))")
    assert stored and not list(_compile_cache._entries(cache))


# ----------------------------------------------------------------------------------------------
# Prefetching: a stage's programs loaded on a second thread before the stage runs.
# ----------------------------------------------------------------------------------------------

def test_prefetch_loads_a_stored_program_and_never_compiles_one(monkeypatch, caplog):
    import logging
    import threading
    import jax
    import jax.numpy as jnp
    import numpy as np
    _compile_cache._configure()
    if not _compile_cache._state['checked'] or _compile_cache._environment() is None:
        pytest.skip("the stored programs need the package's cache directory")

    def h(x):
        return jnp.cos(x) * 3 - 1

    def spied(stored):
        calls = {'_load': 0, '_compile': 0}
        for name in calls:
            real = getattr(stored, name)

            def spy(*args, _real=real, _name=name):
                calls[_name] += 1
                return _real(*args)
            monkeypatch.setattr(stored, name, spy)
        return calls

    first = _compile_cache.stored_jit(jax.jit(h))
    calls = spied(first)
    assert first.prefetch(np.empty(7)) is False  # nothing stored yet: nothing compiled either
    assert calls == {'_load': 1, '_compile': 0}
    np.testing.assert_allclose(first(np.arange(7.0)), np.cos(np.arange(7.0)) * 3 - 1, rtol=1e-6)
    assert calls['_compile'] == 1

    second = _compile_cache.stored_jit(jax.jit(h))  # a later process: nothing loaded yet
    calls = spied(second)
    threads = []
    with caplog.at_level(logging.DEBUG, logger='gensim_anchor._compile_cache'):
        with _compile_cache.prefetching(lambda: 1 / 0,  # a failing loader is skipped
                                        lambda: threads.append(threading.current_thread()),
                                        lambda: second.prefetch(np.empty(7))):
            pass
    assert threads[0] is not threading.main_thread() and not threads[0].is_alive()  # joined
    assert calls == {'_load': 1, '_compile': 0}
    assert "ZeroDivisionError" in caplog.text
    # The call finds the prefetched program: values are read now, not at the prefetch.
    np.testing.assert_allclose(second(np.arange(7.0) + 1), np.cos(np.arange(7.0) + 1) * 3 - 1, rtol=1e-6)
    assert calls == {'_load': 1, '_compile': 0}
    assert second.prefetch(np.empty((2, 3))) is False  # another shape: a miss, not compiled
    assert calls['_compile'] == 0


@pytest.mark.parametrize('options', [{}, dict(rectify=True)], ids=['default', 'rectified'])
def test_a_fit_prefetches_every_program_it_runs(monkeypatch, options):
    """The fit's loader thread predicts the shapes of every stored program the fit then calls:
    the adaptive candidates' searches, the final search (in K coordinates for a rectified Q),
    RecoverL2 and the alpha search (a prediction that missed would load on the fit's own thread,
    as before)."""
    import threading
    import jax
    import numpy as np
    from conftest import lda_corpus, separable_topics
    from gensim_anchor import AnchorModel, anchors
    _compile_cache._configure()
    if not _compile_cache._state['checked'] or _compile_cache._environment() is None:
        pytest.skip("the stored programs need the package's cache directory")
    stored = _compile_cache.stored_jit
    record = {'prefetch': set(), 'call': set()}
    prefetch_threads = set()

    def key(self, args, kwargs):
        named, _, leaves, _ = self._arguments(args, kwargs)
        static = tuple(sorted((k, repr(v)) for k, v in named.items() if k in self._static))
        return (self.__name__, static, bool(jax.config.jax_enable_x64),
                tuple((np.shape(leaf), np.dtype(leaf.dtype).str) for leaf in leaves))

    def spy(kind, real):
        def method(self, *args, **kwargs):
            record[kind].add(key(self, args, kwargs))
            if kind == 'prefetch':  # asserted below: an assertion in the loader thread is logged only
                prefetch_threads.add(threading.current_thread())
            return real(self, *args, **kwargs)
        return method

    monkeypatch.setattr(stored, 'prefetch', spy('prefetch', stored.prefetch))
    monkeypatch.setattr(stored, '__call__', spy('call', stored.__call__))
    scored = []
    real_choose = anchors.choose_candidates
    monkeypatch.setattr(anchors, 'choose_candidates',
                        lambda *a, **k: scored.append(real_choose(*a, **k)) or scored[-1])
    rng = np.random.default_rng(3)
    A, _ = separable_topics(rng, 300, 5)
    corpus = lda_corpus(rng, A, 0.3, 1000, 40)
    model = AnchorModel(corpus, num_topics=5, random_state=0, **options)
    if not options:
        assert len(scored[0].levels) >= 2  # the thresholds were scored: their searches ran
    else:  # a rank-K Q cannot be split: the fixed threshold, searched in K coordinates
        assert scored == [None] and model.rectify == 'enn'
        assert any(k[3][0][0][1] == 64 for k in record['call'] if k[0] == '_fast_anchor_words_impl')
    names = {k[0] for k in record['call']}
    assert names == {'_fast_anchor_words_impl', '_solve_l2_pairwise', '_filter_batch'}
    assert record['call'] <= record['prefetch'], record['call'] - record['prefetch']
    assert len(prefetch_threads) == 1 and threading.main_thread() not in prefetch_threads
