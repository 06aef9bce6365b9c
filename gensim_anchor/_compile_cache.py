"""Compile once per machine: JAX's persistent compilation cache in a per-user directory.

A first fit spends most of its time compiling XLA programs (KOS, K = 50, 2 CPU cores: 7.33 s
for the fit of a process without the cache, against 3.16 s for one that finds it filled;
``python benchmarks/bench_firstfit.py --repeat 3``, ``benchmarks/results/bench_firstfit.log``).
JAX can keep compiled programs on disk and load them in a later
process, if it is given a cache directory; :func:`persistent_cache` gives it one the first time
a JAX stage of this package runs (never at import), unless the user configured one:

* where: ``$GENSIM_ANCHOR_CACHE_DIR`` if set, else the platform's per-user cache directory
  (``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux, ``~/Library/Caches`` on macOS,
  ``%LOCALAPPDATA%`` on Windows) plus ``gensim_anchor/jax-<jax version>``;
* off: ``GENSIM_ANCHOR_CACHE_DIR=""`` (empty) or ``=off``, or JAX's own switch
  (``jax_enable_compilation_cache=False``);
* size: at most ``$GENSIM_ANCHOR_CACHE_MAX_MB`` megabytes (default 512); above it, a process
  that configures the directory first removes the least recently used programs (:func:`prune`);
* the user's JAX configuration wins: a cache directory set with ``JAX_COMPILATION_CACHE_DIR``,
  ``jax.config.update('jax_compilation_cache_dir', ...)`` or
  ``jax.experimental.compilation_cache.compilation_cache.set_cache_dir`` is used as it is, and
  nothing else is changed.

The cache directory is process-wide JAX configuration (JAX has one cache per process), so once
set, the user's own programs that take more than JAX's threshold (1 s) to compile are cached
there too; this is the one global JAX setting the package makes. Our own programs are written
whatever their compile time: the threshold is lowered to 0 only around our calls (scoped, thread
local), because most of ours compile in less than that and together make the seconds a cached process
saves.

Two layers. JAX's own cache still traces and lowers every program in every process, so the
stages' jitted functions
are also wrapped in :class:`stored_jit`, which keeps their compiled executables whole
(``jax.experimental.serialize_executable``), keyed by everything they depend on; a later process
loads them without tracing. The stages pass numpy arrays to those programs (``jnp.asarray``
would compile a conversion program per argument), so a process with a filled cache compiles and
traces nothing in a default fit.

Only the compilation cache directory is set globally, and only when the user has not chosen one.
The write threshold (``jax_persistent_cache_min_compile_time_secs``, 1 s by default) is scoped
with JAX's thread-local config context (``jax._src.config``'s state objects are context
managers; there is no public way to scope it), and ``jax_persistent_cache_min_entry_size_bytes``
is already 0 by default, so it is left as it is.

Some programs also compile faster with XLA:CPU's loop emitters than with its default fusion
emitters, for the same results (:data:`LOOP_EMITTERS`): those ask for them as options of their
own compilation, which leaves XLA's defaults to every other program in the process.

Failures never fail a fit: a directory that cannot be created or written costs one
``RuntimeWarning`` and the process compiles as if there were no cache. An entry that cannot be
read back (truncated by a crash, overwritten) costs one ``RuntimeWarning`` per process; the
entry is removed, compiled again and rewritten. Entries are written to a temporary file and
renamed into place, so a process never reads another's half-written entry (two processes fitting
at once share the directory safely).

The cache is trusted code, as JAX's documentation warns: keep it in a directory only you can
write to (the default is).
"""
import contextlib
import functools
import logging
import os
import sys
import tempfile
import threading
import warnings
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)

#: The environment variable that moves the cache (or switches it off: empty or ``off``).
ENV_VAR = 'GENSIM_ANCHOR_CACHE_DIR'
#: The environment variable that sets the size, in megabytes, above which the cache directory is
#: pruned (default :data:`DEFAULT_MAX_MB`).
MAX_MB_VAR = 'GENSIM_ANCHOR_CACHE_MAX_MB'
#: Every new package version, JAX version or corpus shape adds its own programs, so the
#: directory is kept to this size.
DEFAULT_MAX_MB = 512
_OFF = ('', 'off', '0', 'false', 'no', 'none')

_lock = threading.Lock()
_state = {'done': False, 'ours': None, 'checked': False}  # ours: the directory we configured
# While set (in this thread), our JAX cache misses and does not write: stored_jit's compilations,
# whose executables must be fresh (XLA:CPU cannot serialize again an executable it loaded from
# a cache: "Function ... not found" when the reloaded copy runs).
_fresh = threading.local()


def default_cache_dir():
    """The per-user cache directory of the platform, ``gensim_anchor/jax-<version>`` in it."""
    import jax
    if sys.platform == 'win32':
        base = os.environ.get('LOCALAPPDATA') or os.path.join(os.path.expanduser('~'), 'AppData', 'Local')
    elif sys.platform == 'darwin':
        base = os.path.join(os.path.expanduser('~'), 'Library', 'Caches')
    else:
        base = os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
    return os.path.join(base, 'gensim_anchor', 'jax-%s' % jax.__version__)


def enable():
    """Configure the cache (on the first call; cheap after): for entry points that compile
    programs big enough for JAX's own threshold and do not run inside :func:`persistent_cache`."""
    _configure()


def cache_dir():
    """The directory this process compiles into: ours, the user's JAX one, or None (off)."""
    import jax
    _configure()
    return jax.config.jax_compilation_cache_dir if jax.config.jax_enable_compilation_cache else None


@contextlib.contextmanager
def persistent_cache():
    """Context of the package's JAX calls: configures the cache on first use (idempotent, cheap
    after), and writes every program compiled inside to it when the cache is ours."""
    _configure()
    if _state['ours'] is None:
        yield
        return
    with _min_compile_time(0.0):
        yield


def _min_compile_time(seconds):
    """JAX's write threshold, scoped to the calling thread (global only if JAX cannot scope it)."""
    try:
        from jax._src import config as jax_config
        return jax_config.persistent_cache_min_compile_time_secs(seconds)
    except (ImportError, AttributeError, TypeError):  # pragma: no cover - other JAX versions
        return contextlib.nullcontext()


def _configure():
    if _state['done']:
        return
    with _lock:
        if _state['done']:
            return
        try:
            _state['ours'] = _choose()
        finally:
            _state['done'] = True


def _choose():
    import jax
    if jax.config.jax_compilation_cache_dir or not jax.config.jax_enable_compilation_cache:
        return None  # the user's choice (JAX reads JAX_COMPILATION_CACHE_DIR into the config)
    path = os.environ.get(ENV_VAR)
    if path is not None and path.strip().lower() in _OFF:
        return None
    path = os.path.abspath(os.path.expanduser(path)) if path else default_cache_dir()
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as err:
        warnings.warn("gensim_anchor: the JAX compilation cache directory %s is not usable (%s); "
                      "compiling without a persistent cache (set %s to move it, or to 'off')"
                      % (path, err, ENV_VAR), RuntimeWarning, stacklevel=4)
        return None
    jax.config.update('jax_compilation_cache_dir', path)
    _install_checked_cache(path)
    logger.debug("JAX compilation cache at %s", path)
    prune(path, _max_bytes())
    return path


def _max_bytes():
    value = os.environ.get(MAX_MB_VAR, '').strip()
    try:
        megabytes = float(value) if value else DEFAULT_MAX_MB
    except ValueError:
        warnings.warn("gensim_anchor: %s=%r is not a number of megabytes; using %d"
                      % (MAX_MB_VAR, value, DEFAULT_MAX_MB), RuntimeWarning, stacklevel=5)
        megabytes = DEFAULT_MAX_MB
    return int(max(megabytes, 0.0) * 2 ** 20)


def _entries(path):
    """The cache's entry files: JAX's ``*-cache`` files and the stored executables."""
    path = Path(path)
    for file in list(path.glob('*' + _CheckedFileCache._SUFFIX)) + list(path.glob('executables/*')):
        if not file.name.startswith('.tmp-'):
            yield file


def prune(path, max_bytes):
    """Remove the least recently used entries of the cache directory ``path`` until its entries
    take at most 3/4 of ``max_bytes``, when they take more than ``max_bytes``.

    Called once per process, when the package configures its own directory (never a directory
    the user gave JAX). "Used" is the file's modification time, which a read refreshes
    (:func:`_touch`). An entry another process is reading stays readable (POSIX unlink), and a
    removed entry is a miss for the next process, which compiles and writes it again; errors
    are ignored (a cache is never worth a failed fit).

    Returns
    -------
    int
        Bytes removed.
    """
    stats = []
    for file in _entries(path):
        with contextlib.suppress(OSError):
            info = file.stat()
            stats.append((info.st_mtime, info.st_size, file))
    total = sum(size for _, size, _ in stats)
    if total <= max_bytes:
        return 0
    removed = 0
    for _, size, file in sorted(stats, key=lambda item: item[0]):
        if total - removed <= 0.75 * max_bytes:
            break
        with contextlib.suppress(OSError):
            file.unlink()
            removed += size
    logger.info("compilation cache %s: %.0f MB of least recently used programs removed (%.0f MB "
                "held, limit %.0f MB, %s)", path, removed / 2 ** 20, total / 2 ** 20,
                max_bytes / 2 ** 20, MAX_MB_VAR)
    return removed


def _touch(file):
    """Mark an entry as used now (for :func:`prune`)."""
    with contextlib.suppress(OSError):
        os.utime(file)


# ----------------------------------------------------------------------------------------------
# Entries written atomically, unreadable entries dropped (JAX's file cache writes in place and
# keeps an entry it cannot read: every later process would warn and recompile it).
# ----------------------------------------------------------------------------------------------

class _CheckedFileCache:
    """JAX's ``CacheInterface`` for one directory: ``<key>-cache`` files, as JAX's own."""

    _SUFFIX = '-cache'

    def __init__(self, path):
        self._path = Path(path)

    def get(self, key):
        from jax._src import compilation_cache as cc
        if getattr(_fresh, 'on', False):
            return None
        file = self._path / (key + self._SUFFIX)
        try:
            value = file.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as err:
            self._warn(key, err)
            return None
        try:  # JAX would fail on it after this returns, and warn in every later process
            data = cc.decompress_executable(value)
            if len(data) <= cc._TIME_BYTES:
                raise ValueError("entry of %d bytes" % len(value))
        except Exception as err:  # noqa: BLE001 - any unreadable entry is a miss
            self._warn(key, err)
            with contextlib.suppress(OSError):
                file.unlink()
            return None
        _touch(file)
        return value

    def put(self, key, value):
        if not getattr(_fresh, 'on', False):
            _write_atomic(self._path / (key + self._SUFFIX), value)

    def clear(self):  # pragma: no cover - JAX's interface
        pass

    def _warn(self, key, err):
        _warn_entry(self._path / (key + self._SUFFIX), err)


def _install_checked_cache(path):
    """Give JAX the checked cache for our directory, if this JAX version has the hook we use
    (a private one: without it, JAX's own file cache serves, with its own warnings)."""
    try:
        import jax
        from jax._src import compilation_cache as cc
        if jax.config.jax_compilation_cache_max_size != -1 or jax.config.jax_compilation_cache_check_contents:
            return  # JAX's eviction or verification asked for: its own cache does those
        with cc._cache_initialized_mutex:
            if cc._cache is not None or cc._cache_initialized:
                return  # JAX already opened a cache (a jitted call ran before ours)
            cc._cache = _CheckedFileCache(path)
            cc._cache_initialized = True
            _state['checked'] = True
    except (ImportError, AttributeError):  # pragma: no cover - other JAX versions
        pass


def power_of_two(n, minimum=1):
    """The smallest power of two >= ``n``, and at least ``minimum``: padded sizes (inference's
    columns, document lengths and documents per call; the likelihood estimator's columns and
    rows; the rows of FastAnchorWords and of the pairwise RecoverL2 solver), so that one program
    serves many calls. ``n`` an integer array: elementwise, an int64 array (exact below 2^53).

    Examples
    --------
    .. sourcecode:: pycon

        >>> import numpy as np
        >>> from gensim_anchor._compile_cache import power_of_two
        >>> power_of_two(5), power_of_two(0), power_of_two(3, minimum=8)
        (8, 1, 8)
        >>> power_of_two(np.array([0, 1, 2, 3, 4, 5, 1000]), minimum=2).tolist()
        [2, 2, 2, 4, 4, 8, 1024]

    """
    if np.ndim(n):
        # frexp's exponent of n - 1 is its bit length, as int.bit_length below.
        _, bits = np.frexp(np.maximum(np.asarray(n, np.int64) - 1, 0).astype(np.float64))
        return np.maximum(int(minimum), np.left_shift(np.int64(1), bits.astype(np.int64)))
    return max(int(minimum), 1 << max(int(n) - 1, 0).bit_length())


def bucket(n):
    """``n`` rounded up by at most 1/8 to a number with 4 significant bits: inputs of similar
    sizes (the Gibbs sampler's corpora and Dask partitions) padded to it share one compiled
    program."""
    n = max(int(n), 1)
    step = 1 << max(n.bit_length() - 4, 0)
    return -(-n // step) * step


# ----------------------------------------------------------------------------------------------
# Compiled programs kept whole: a later process skips tracing and lowering too.
# ----------------------------------------------------------------------------------------------

#: XLA options of the programs that ask for them (``stored_jit(..., loop_emitters=True)``) on a
#: CPU: XLA:CPU's loop emitters, which its fusion emitters replaced as the default. They compile
#: FastAnchorWords, RecoverL2, the likelihood's particle filter and inference 12 to 45% faster,
#: and run them as fast or faster; not the Gibbs sweep and RecoverKL, which they run slower
#: (``python benchmarks/bench_emitters.py``, ``benchmarks/results/bench_emitters.log``). Options of
#: one program's compilation, not a global flag: the user's programs keep XLA's defaults.
LOOP_EMITTERS = {'xla_cpu_use_fusion_emitters': False}


def _refuses_options(err, options):
    """Whether ``err`` is this XLA refusing ``options`` (a version without them), or a JAX whose
    ``jax.jit`` takes no ``compiler_options``."""
    message = str(err)
    refused = 'compile option' in message.lower() and any(repr(name) in message for name in options)
    old_jax = isinstance(err, TypeError) and 'compiler_options' in message
    return bool(options) and (refused or old_jax)


def _drop_options(err, options):
    """The options are dropped for the rest of the process (one DEBUG line): the program, and
    every later one, is compiled without them."""
    _state['no_options'] = True
    logger.debug("XLA does not take the compile options %s (%s); compiling without them",
                 options, err)


class stored_jit:
    """A jitted function whose compiled programs are kept in the cache directory as
    executables (``jax.experimental.serialize_executable``), so that a later process loads one
    without tracing and lowering the function again (JAX's own cache still needs both).

    The file name is a hash of everything the program depends on: the package's source, the
    function, its static arguments, the abstract values of the others (shape, dtype, weak type),
    the JAX and jaxlib versions, the device and CPU, and JAX's trace-time configuration (x64,
    matmul precision, ...). A program never comes from a key that differs in any of them; a
    file that fails its checksum or does not load is a miss (one warning, removed, compiled
    again). Without our cache directory (off, or the user's JAX one), or under a transformation
    (tracers), it is the plain jitted function.

    ``loop_emitters=True`` compiles the program with :data:`LOOP_EMITTERS` on a CPU (for
    programs whose compile time they cut and whose runs they do not slow); they are part of the
    key.
    """

    def __init__(self, jitted, static_argnames=(), loop_emitters=False):
        import inspect
        functools.update_wrapper(self, jitted)
        self._jitted = jitted
        self._loop_emitters = loop_emitters
        self._tuned = None  # the jitted function with the compiler options (built on first call)
        self._signature = inspect.signature(jitted)
        params = self._signature.parameters.values()
        plain = all(p.kind == p.POSITIONAL_OR_KEYWORD for p in params)
        self._positional = tuple(p.name for p in params) if plain else None
        self._static = frozenset(static_argnames)
        self._loaded, self._by_key = {}, {}
        self._lock = threading.Lock()

    def __call__(self, *args, **kwargs):
        import jax
        _configure()
        if not self._storing():
            return self._plain(*args, **kwargs)
        named, dynamic, leaves, treedef = self._arguments(args, kwargs)
        if any(isinstance(leaf, jax.core.Tracer) for leaf in leaves):
            return self._jitted(*args, **kwargs)  # inside the caller's program: its options
        return self._program(named, leaves, treedef)(**dynamic)

    def prefetch(self, *args, **kwargs):
        """Load the stored program for arguments of these shapes and dtypes (the values are not
        read: ``numpy.empty`` specimens will do), without running it, and never compile it.

        For a background thread (:func:`prefetching`): loading an executable releases the GIL, so
        it overlaps the caller's work, and a later call with such arguments finds it loaded
        (or waits for the load in flight instead of loading it again). Arguments that the
        caller then does not pass only cost the load. Returns whether the program is loaded.
        """
        _configure()
        if not self._storing():
            return False
        named, _, leaves, treedef = self._arguments(args, kwargs)
        return self._program(named, leaves, treedef, compile=False) is not None

    def _storing(self):
        """Whether calls go through our stored executables: our cache directory, and the
        default device (not when the user picked another one)."""
        import jax
        return _state['checked'] and _environment() is not None and jax.config.jax_default_device is None

    def _arguments(self, args, kwargs):
        """The arguments by name, the dynamic ones, and their flattened leaves and tree."""
        import jax
        if self._positional is not None and not kwargs and len(args) == len(self._positional):
            named = dict(zip(self._positional, args))  # every argument given in order: no bind
        else:
            bound = self._signature.bind(*args, **kwargs)
            bound.apply_defaults()
            named = bound.arguments
        dynamic = {k: v for k, v in named.items() if k not in self._static}
        leaves, treedef = jax.tree_util.tree_flatten(dynamic)
        return named, dynamic, leaves, treedef

    def _program(self, named, leaves, treedef, compile=True):
        """The executable for these arguments: loaded before, loaded from the directory, or
        (``compile``) compiled and stored; None if it is in none of those and not to compile."""
        import jax
        static = tuple(sorted((k, repr(v)) for k, v in named.items() if k in self._static))
        # Looked up by a cheap key (numpy arguments by shape and dtype; JAX's own trace context,
        # hashable): the stored file's key, a string per argument, is built only on a miss
        # (per call it was a large part of a model[bow] call's Python).
        quick = (static, tuple(map(_quick_aval, leaves)), treedef, _context_key())
        compiled = self._loaded.get(quick)
        if compiled is None:
            with self._lock:  # threads that call a new shape at once load or compile it once
                compiled = self._loaded.get(quick)
                if compiled is None:
                    avals = tuple(str(jax.typeof(leaf)) for leaf in leaves)
                    local = (static, avals, str(treedef), _trace_context())
                    # Several quick keys can name one program (int32 and int64 arrays without
                    # x64): loaded once.
                    compiled = self._by_key.get(local)
                    if compiled is None:
                        file = self._file(local)
                        compiled = self._load(file)
                        if compiled is None:
                            if not compile:
                                return None
                            compiled = self._compile(file, named)
                        self._by_key[local] = compiled
                    self._loaded[quick] = compiled
        return compiled

    def _options(self):
        """XLA's options for this program: :data:`LOOP_EMITTERS` if it asked for them and runs
        on a CPU (whose XLA knows them), else none."""
        if not self._loop_emitters or _state.get('no_options'):
            return {}
        import jax
        return dict(LOOP_EMITTERS) if jax.default_backend() == 'cpu' else {}

    def _plain(self, *args, **kwargs):
        """The jitted function, with this program's options (compiled by JAX, without our
        stored executables: the cache is off, or the device is the user's). Under a trace it is
        part of the caller's program, whose options are the caller's (JAX refuses options on a
        nested jit)."""
        import jax
        options = self._options()
        if not options or any(isinstance(leaf, jax.core.Tracer)
                              for leaf in jax.tree_util.tree_leaves((args, kwargs))):
            return self._jitted(*args, **kwargs)
        try:
            if self._tuned is None:
                self._tuned = jax.jit(self._jitted.__wrapped__, static_argnames=tuple(self._static),
                                      compiler_options=options)
            return self._tuned(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - see _refuses_options
            if not _refuses_options(err, options):
                raise
            _drop_options(err, options)
            return self._jitted(*args, **kwargs)

    def _file(self, local):
        """The stored file of the program with this key."""
        import hashlib
        name = '%s.%s' % (self.__module__, self.__qualname__)
        key = hashlib.sha256(repr((name, local, _environment(), sorted(self._options().items()))).encode()).hexdigest()
        return Path(_state['ours']) / 'executables' / ('%s-%s' % (self.__name__, key))

    def _load(self, file):
        """The executable stored in ``file``, or None: missing, or unreadable (a miss: one
        warning, and the file is removed)."""
        import hashlib
        import pickle
        from jax.experimental import serialize_executable as se
        try:
            blob = file.read_bytes()
        except OSError:
            return None
        try:
            digest, body = blob[:32], blob[32:]
            if hashlib.sha256(body).digest() != digest:
                raise ValueError("checksum mismatch")
            _initialize_handlers()
            import jax
            loaded = se.deserialize_and_load(*pickle.loads(body), execution_devices=jax.devices()[:1])
            _touch(file)
            return loaded
        except Exception as err:  # noqa: BLE001 - any unreadable entry is a miss
            _warn_entry(file, err)
            with contextlib.suppress(OSError):
                file.unlink()
            return None

    def _compile(self, file, named):
        """Compile the program for these arguments and store it in ``file``."""
        import hashlib
        import pickle
        from jax.experimental import serialize_executable as se
        options = self._options()
        # Compiled fresh, and not written to JAX's cache too: an infinite threshold spares JAX
        # serialising and compressing an executable that the entry below already keeps.
        _fresh.on = True
        try:
            with _min_compile_time(float('inf')):
                lowered = self._jitted.lower(**named)
                try:
                    compiled = lowered.compile(compiler_options=options or None)
                except Exception as err:  # noqa: BLE001 - see _refuses_options
                    if not _refuses_options(err, options):
                        raise
                    _drop_options(err, options)
                    compiled = lowered.compile()
        finally:
            _fresh.on = False
        try:
            body = pickle.dumps(se.serialize(compiled), protocol=pickle.HIGHEST_PROTOCOL)
            _write_atomic(file, hashlib.sha256(body).digest() + body)
        except Exception as err:  # noqa: BLE001 - a cache that cannot be written is no cache
            _warn_entry(file, err, writing=True)
        return compiled


@contextlib.contextmanager
def prefetching(*loaders):
    """Run ``loaders`` (callables that call :meth:`stored_jit.prefetch`) in order on one
    background thread while the body runs; the thread is joined on exit, so it never outlives
    the body. Nothing runs when this process runs no stored programs.

    A stage whose shapes are known before an earlier stage has finished loads its programs
    there, overlapped with that stage: loading an executable releases the GIL. Prefetching only
    saves time, so a loader that fails is logged at DEBUG and skipped; the stage then loads or
    compiles its program when it calls it, as without it.
    """
    _configure()
    if not _state['checked']:
        yield
        return

    def run():
        for load in loaders:
            try:
                load()
            except Exception as err:  # noqa: BLE001 - see the docstring
                logger.debug("prefetching a stored program failed (%s: %s)", type(err).__name__, err)

    thread = threading.Thread(target=run, name='gensim_anchor-prefetch', daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()


_warned_entry = []


def _warn_entry(file, err, writing=False):
    """One warning per process for the cache's entries, whatever their number (a damaged
    directory usually has many); each at DEBUG."""
    if not _warned_entry:
        _warned_entry.append(True)
        warnings.warn("gensim_anchor: the compilation cache entry %s could not be %s (%s: %s); "
                      "compiling instead" % (file, 'written' if writing else 'read, removed it',
                                             type(err).__name__, err), RuntimeWarning, stacklevel=4)
    logger.debug("compilation cache entry %s: %s", file, err)


def _write_atomic(file, data):
    file.parent.mkdir(parents=True, exist_ok=True)
    if file.exists():
        return
    fd, tmp = tempfile.mkstemp(dir=file.parent, prefix='.tmp-')
    try:
        with os.fdopen(fd, 'wb') as out:
            out.write(data)
        os.replace(tmp, file)  # atomic: a reader sees the whole entry or none
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@functools.lru_cache(maxsize=1)
def _environment():
    """What every compiled program depends on besides its own arguments."""
    import hashlib
    import platform
    import jax
    import jaxlib
    source = hashlib.sha256()
    files = sorted(Path(__file__).parent.glob('*.py'))
    if not files:  # no source to key on (an install without .py files): nothing stored
        return None
    for path in files:
        source.update(path.name.encode() + b'\0' + path.read_bytes())
    cpu = ''
    with contextlib.suppress(OSError):
        with open('/proc/cpuinfo') as info:  # the instruction sets XLA compiled for
            cpu = next((line for line in info if line.startswith(('flags', 'Features'))), '')
    device = jax.devices()[0]
    backend = device.client
    return (jax.__version__, jaxlib.__version__, source.hexdigest(), backend.platform,
            backend.platform_version, device.device_kind, jax.device_count(), platform.machine(),
            platform.processor(), hashlib.sha256(cpu.encode()).hexdigest(),
            os.environ.get('XLA_FLAGS', ''))


def _quick_aval(leaf):
    """What an argument's abstract value depends on, given the trace context: a numpy array's
    shape and dtype (never weak-typed), read directly; anything else by ``jax.typeof``."""
    if type(leaf) is np.ndarray or isinstance(leaf, np.generic):
        return leaf.shape, leaf.dtype.str
    import jax
    return str(jax.typeof(leaf))


def _context_key():
    """JAX's trace-time configuration as JAX's own jit cache keys on it (hashable, cheap);
    :func:`_trace_context` is its stable form, for the stored file's name."""
    try:
        from jax._src import config as jax_config
        return jax_config.trace_context()
    except (ImportError, AttributeError):  # pragma: no cover - other JAX versions
        return _trace_context()


def _trace_context():
    """JAX's trace-time configuration (x64, matmul precision, ...: what its own jit cache keys
    on), as plain values."""
    import jax
    try:
        from jax._src import config as jax_config
        values = jax_config.trace_context()
    except (ImportError, AttributeError):  # pragma: no cover - other JAX versions
        return (bool(jax.config.jax_enable_x64), str(jax.config.jax_default_matmul_precision))
    return tuple(v if isinstance(v, (bool, int, float, str, type(None))) else
                 getattr(v, 'name', type(v).__name__) for v in values)


def _initialize_handlers():
    """The custom-call handlers a program may call, set up as lowering would have (LAPACK on a
    CPU: ``jnp.linalg.solve`` in FastAnchorWords; without it the loaded program crashes).
    ``jax.export`` does the same before it runs a deserialized program."""
    from jax._src.lax import linalg
    linalg.initialize_lapack()
