"""A pytest plugin that records each test's CPU time (its process and its children) and the XLA
compilation inside it (JAX's ``backend_compile_duration`` events), one JSON line per test.

Usage (from the repository root; one file per xdist worker under ``$SUITE_PROFILE_DIR``)::

    SUITE_PROFILE_DIR=/tmp/prof PYTHONPATH=benchmarks python -m pytest -p suite_profile -n 2
    python benchmarks/suite_profile.py /tmp/prof        # totals, and the 20 costliest files

It produced the per-test figures of ``benchmarks/results/test_suite_time.log`` (session 23).
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


def _listener(name, secs, **kw):
    if name.endswith('backend_compile_duration'):
        _compile[0] += secs
        _compile[1] += 1


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
            _registered.append(True)
        w0, (s0, c0), k0, n0 = time.time(), _cpu(), _compile[0], _compile[1]
        yield
        w1, (s1, c1) = time.time(), _cpu()
        out = Path(os.environ.get('SUITE_PROFILE_DIR', '.'))
        out.mkdir(parents=True, exist_ok=True)
        with open(out / ('prof-%s.jsonl' % os.environ.get('PYTEST_XDIST_WORKER', 'main')), 'a') as f:
            f.write(json.dumps(dict(id=item.nodeid, wall=w1 - w0, cpu=s1 - s0, child=c1 - c0,
                                    compile=_compile[0] - k0, programs=_compile[1] - n0)) + '\n')
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


if __name__ == '__main__':
    summarise(sys.argv[1])
