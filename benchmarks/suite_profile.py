"""A pytest plugin that records each test's CPU time (its process and its children) and the XLA
compilation inside it (JAX's ``backend_compile_duration`` events), one JSON line per test.

Usage (from the repository root; one file per xdist worker under ``$SUITE_PROFILE_DIR``)::

    SUITE_PROFILE_DIR=/tmp/prof PYTHONPATH=benchmarks python -m pytest -p suite_profile -n 2
    python benchmarks/suite_profile.py /tmp/prof        # totals, and the 20 costliest files

With ``SUITE_PROFILE_PROGRAMS=1`` it also records each compiled program (function, argument
shapes, seconds; from JAX's ``jax_log_compiles`` lines), and the summary adds the costliest
functions.

It produced the per-test and per-function figures of ``benchmarks/results/test_suite_time.log``
(sessions 23 and 24).
"""
import collections
import json
import os
import resource
import sys
import time
from pathlib import Path

_compile = [0.0, 0]
_registered = []
_programs = []  # with SUITE_PROFILE_PROGRAMS=1: [name, argument shapes, compile seconds] per program


def _listener(name, secs, **kw):
    if name.endswith('backend_compile_duration'):
        _compile[0] += secs
        _compile[1] += 1


class _ProgramLog:
    """Pairs JAX's 'Compiling NAME with global shapes ...' and 'Finished XLA compilation of NAME in
    T sec' log lines (jax_log_compiles) into one record per compiled program."""
    level = 0

    def handle(self, record):
        msg = record.getMessage()
        if msg.startswith('Compiling '):
            name, _, rest = msg[len('Compiling '):].partition(' with global shapes and types ')
            _programs.append([name, rest.partition('. Argument mapping')[0], None])
        elif msg.startswith('Finished XLA compilation of ') and _programs:
            _programs[-1][2] = float(msg.rsplit(' in ', 1)[1].split()[0])


def _cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


try:
    import pytest

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item, nextitem):
        if not _registered:
            import jax.monitoring
            jax.monitoring.register_event_duration_secs_listener(_listener)
            if os.environ.get('SUITE_PROFILE_PROGRAMS'):
                import logging
                jax.config.update('jax_log_compiles', True)
                for name in ('jax._src.interpreters.pxla', 'jax._src.dispatch'):
                    logging.getLogger(name).addHandler(_ProgramLog())
            _registered.append(True)
        w0, (s0, c0), k0, n0 = time.time(), _cpu(), _compile[0], _compile[1]
        del _programs[:]
        yield
        w1, (s1, c1) = time.time(), _cpu()
        out = Path(os.environ.get('SUITE_PROFILE_DIR', '.'))
        out.mkdir(parents=True, exist_ok=True)
        with open(out / ('prof-%s.jsonl' % os.environ.get('PYTEST_XDIST_WORKER', 'main')), 'a') as f:
            f.write(json.dumps(dict(id=item.nodeid, wall=w1 - w0, cpu=s1 - s0, child=c1 - c0,
                                    compile=_compile[0] - k0, programs=_compile[1] - n0,
                                    compiled=[p for p in _programs if p[2] is not None])) + '\n')
except ImportError:  # pragma: no cover - the summary below needs no pytest
    pass


def summarise(directory):
    rows = [json.loads(line) for f in sorted(Path(directory).glob('prof-*.jsonl')) for line in open(f)]
    total = lambda key: sum(r[key] for r in rows)
    print('tests %d  wall %.0f s  cpu %.0f s  children %.0f s  compile %.0f s  programs %d'
          % (len(rows), total('wall'), total('cpu'), total('child'), total('compile'), total('programs')))
    files = collections.defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for r in rows:
        f = files[r['id'].split('::')[0]]
        f[0] += r['cpu']; f[1] += r['child']; f[2] += r['compile']; f[3] += r['programs']
    print('   cpu  child compile programs file')
    for name, (cpu, child, comp, n) in sorted(files.items(), key=lambda x: -(x[1][0] + x[1][1]))[:20]:
        print('%6.0f %6.0f %6.0f %4d %s' % (cpu, child, comp, n, name))
    functions = collections.defaultdict(lambda: [0.0, 0])
    for r in rows:
        for name, _, secs in r.get('compiled', ()):
            functions[name][0] += secs
            functions[name][1] += 1
    if functions:  # recorded with SUITE_PROFILE_PROGRAMS=1
        print('compile programs function')
        for name, (secs, n) in sorted(functions.items(), key=lambda x: -x[1][0])[:10]:
            print('%7.0f %8d %s' % (secs, n, name))


if __name__ == '__main__':
    summarise(sys.argv[1])
