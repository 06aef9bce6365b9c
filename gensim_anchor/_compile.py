"""Ahead-of-time compilation of the jitted stages, started early in a background thread.

XLA takes a few tenths of a second to compile each solver, which on a small corpus is as long as
the solve itself. The shapes every stage will need are known right after the co-occurrence pass,
so :class:`~gensim_anchor.AnchorModel` asks for all compilations then; they run in a worker
thread (XLA releases the GIL) while the random projection is computed, and each stage waits for
its executable only when it needs it. The executables are kept in a small LRU cache keyed by the
function and the abstract shapes, so a second fit with the same shapes compiles nothing.
"""
import collections
import threading
from concurrent.futures import ThreadPoolExecutor

import jax

_EXECUTOR = ThreadPoolExecutor(max_workers=2, thread_name_prefix='gensim_anchor_compile')
_CACHE = collections.OrderedDict()
_CACHE_SIZE = 32
_LOCK = threading.Lock()


def _compile(jitted, args, static):
    with jax.enable_x64(True):
        return jitted.lower(*args, **static).compile()


def compiled(jitted, *args, **static):
    """A future of ``jitted`` compiled for the shapes and dtypes of ``args`` (in float64 mode).

    ``args`` are arrays or :class:`jax.ShapeDtypeStruct`; ``static`` are the jit's static
    keyword arguments. The compilation starts at once in a background thread, or is found in the
    cache.
    """
    avals = tuple(jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args)
    key = (jitted, avals, tuple(sorted(static.items())))
    with _LOCK:
        future = _CACHE.get(key)
        if future is None:
            future = _EXECUTOR.submit(_compile, jitted, avals, static)
            _CACHE[key] = future
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
        else:
            _CACHE.move_to_end(key)
    return future
