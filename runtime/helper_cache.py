"""Runtime helpers compiled once per signature and kept on disk, shared by every generated module.

Without this, each new generated module (a new function, a new transform, a
new argument type) makes Numba compile again every runtime helper it calls:
``rt.unbroadcast``, ``rt.unreduce``, ``rt.sum``… at 0.1–0.9 s each, most of a
cold gradient's time. The runtime's modules take ``overload`` and
``register_jitable`` from here: Numba's, with ``cache=True``, so a helper
compiled for one signature is loaded from disk by every later process.

Numba keys a cached function by its signature, its bytecode and its closure's
contents, and trusts it while its own file is unchanged. A helper's machine
code also holds the helpers it calls, from other files, so the runtime's
helpers are kept in a folder of their own, ``runtime-<digest>`` in s2s's cache
folder, where the digest covers every source file of the runtime: a changed
runtime never loads an old helper. A file there that cannot be read back (a
damaged or truncated one) is a warning and a compile, never an error: each
data file ends in the SHA-256 of its contents, checked before Numba reads it
(machine code read from a damaged file could abort the process inside LLVM),
and an index that cannot be read is written again. Saves
take a file lock: Numba names a new data file from the index it has read, so
two processes saving at once could otherwise give two signatures one file
(a load also checks the signature it gets). Where s2s's cache folder cannot be
written, helpers are kept for the process only. (Functions built from generated
source, which Numba cannot cache, use Numba's own decorators.)

    >>> import numba, numpy as np, s2s_runtime as rt
    >>> float(numba.njit(lambda g, x: rt.unbroadcast(g, x))(np.ones((2, 3)), 0.0))
    6.0
"""

import atexit
import functools
import hashlib
import os
import pickle
import shutil
import tempfile
import warnings
from pathlib import Path

from numba.core import caching
from numba.core.extending import overload as _numba_overload
from numba.core.extending import register_jitable as _numba_register_jitable

__all__ = ["cache_root", "disk_cache_off", "overload", "register_jitable", "RuntimeLocator", "INSTALLED"]

_PACKAGE = Path(__file__).resolve().parent


def cache_root() -> str:
    """s2s's cache folder (``s2s.cache.cache_dir``'s rule: the runtime does not import s2s)."""
    root = os.environ.get("S2S_CACHE_DIR")
    if root:
        return root
    try:
        import platformdirs
        return platformdirs.user_cache_dir("s2s")
    except ImportError:  # s2s_runtime alone, as an AOT-built module ships it
        return os.path.join(os.path.expanduser("~"), ".cache", "s2s")


def disk_cache_off() -> bool:
    """``S2S_DISK_CACHE=0``: nothing is kept on disk, the runtime's helpers and vector-math kernels included
    (they go to a folder of the process, removed at exit)."""
    return os.environ.get("S2S_DISK_CACHE", "1") == "0"


@functools.cache
def runtime_digest() -> str:
    """A digest of every source file of the runtime."""
    h = hashlib.sha256()
    for path in sorted(_PACKAGE.glob("*.py")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:20]


# Numba's cache internals (``CacheImpl`` was ``_CacheImpl`` before 0.60); without them helpers are not cached
_LOCATOR_BASE = getattr(caching, "_CacheLocator", None)
_CACHE_IMPL = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
try:
    import filelock
except ImportError:  # s2s_runtime alone: no lock for concurrent saves, so no cache
    filelock = None
_DATA_FILE = getattr(caching, "IndexDataCacheFile", None)
INSTALLED = _LOCATOR_BASE is not None and isinstance(getattr(_CACHE_IMPL, "_locator_classes", None), list) \
    and hasattr(caching.Cache, "load_overload") and hasattr(_DATA_FILE, "_load_data") \
    and hasattr(_DATA_FILE, "_save_data") and filelock is not None


class RuntimeLocator(_LOCATOR_BASE or object):
    """Numba's cache for functions defined in the runtime's files: one folder per runtime digest."""

    def __init__(self, py_func, py_file):
        self._lineno = py_func.__code__.co_firstlineno
        root = _process_folder() if disk_cache_off() else cache_root()
        self._path = os.path.join(root, f"runtime-{runtime_digest()}")
        _FOLDERS.add(self._path)

    def get_cache_path(self) -> str:
        return self._path

    def get_source_stamp(self) -> str:
        return runtime_digest()

    def get_disambiguator(self) -> str:
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        if Path(py_file).resolve().parent != _PACKAGE:
            return None
        locator = cls(py_func, py_file)
        try:
            locator.ensure_cache_path()
        except OSError:  # no writable cache folder: a folder of this process's own (not Numba's locators)
            locator._path = _process_folder()
            _FOLDERS.add(locator._path)
        return locator


@functools.cache
def _process_folder() -> str:
    """A temporary folder for this process, removed at exit: helpers compiled here are not kept."""
    folder = tempfile.mkdtemp(prefix="s2s-runtime-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def overload(func, **kwargs):
    """Numba's ``overload``, the implementations it returns cached on disk."""
    return _numba_overload(func, jit_options={"cache": INSTALLED, **kwargs.pop("jit_options", {})}, **kwargs)


def register_jitable(*args, **kwargs):
    """Numba's ``register_jitable``, cached on disk (``@register_jitable`` or ``@register_jitable(...)``)."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return _numba_register_jitable(cache=INSTALLED)(args[0])
    return _numba_register_jitable(*args, **{"cache": INSTALLED, **kwargs})


_numba_load_overload = caching.Cache.load_overload
_numba_save_overload = caching.Cache.save_overload
_numba_load_data = getattr(_DATA_FILE, "_load_data", None)
_numba_save_data = getattr(_DATA_FILE, "_save_data", None)
_warned: set[str] = set()
_FOLDERS: set[str] = set()  # the folders of the runtime's caches
_DIGEST = 32  # bytes of SHA-256 at the end of each of their data files


class DamagedFile(Exception):
    """A runtime helper's data file whose contents do not match the digest it ends in."""


def _load_data(cache_file, name):
    """Numba's read of a data file; for the runtime's, its digest checked first."""
    if cache_file._cache_path not in _FOLDERS:
        return _numba_load_data(cache_file, name)
    with open(cache_file._data_path(name), "rb") as f:
        data = f.read()
    if len(data) < _DIGEST or hashlib.sha256(data[:-_DIGEST]).digest() != data[-_DIGEST:]:
        raise DamagedFile(name)
    return pickle.loads(data[:-_DIGEST])


def _save_data(cache_file, name, data):
    """Numba's write of a data file; for the runtime's, with the digest of its contents at the end."""
    if cache_file._cache_path not in _FOLDERS:
        return _numba_save_data(cache_file, name, data)
    data = cache_file._dump(data)
    with cache_file._open_for_write(cache_file._data_path(name)) as f:
        f.write(data + hashlib.sha256(data).digest())


def _ours(cache) -> bool:
    return isinstance(getattr(cache._impl, "locator", None), RuntimeLocator)


def _load_overload(cache, sig, target_context):
    """Numba's load of a cached function; for the runtime's, a damaged file or one holding another
    signature is a miss (then overwritten)."""
    if not _ours(cache):
        return _numba_load_overload(cache, sig, target_context)
    try:
        compiled = _numba_load_overload(cache, sig, target_context)
    except Exception as exc:  # noqa: BLE001 (unpickling random bytes raises anything)
        if cache._cache_path not in _warned:
            _warned.add(cache._cache_path)
            warnings.warn(f"s2s: compiled runtime helpers in {cache._cache_path} cannot be read "
                          f"({type(exc).__name__}); compiling them again", RuntimeWarning, stacklevel=2)
        return None
    if compiled is not None and tuple(compiled.signature.args) != tuple(getattr(sig, "args", sig)):
        return None
    return compiled


def _save_overload(cache, sig, data):
    """Numba's save, for the runtime's functions under a file lock: Numba picks the data file's name
    from the index it read, so two processes saving at once could give two signatures one file."""
    if not _ours(cache):
        return _numba_save_overload(cache, sig, data)
    with filelock.FileLock(os.path.join(cache._cache_path, ".lock")):
        try:
            cache._cache_file._load_index()
        except Exception:  # noqa: BLE001 (a damaged index: unpickling random bytes raises anything)
            os.remove(cache._cache_file._index_path)  # its functions compile again, once
        return _numba_save_overload(cache, sig, data)


if INSTALLED and RuntimeLocator not in _CACHE_IMPL._locator_classes:
    _CACHE_IMPL._locator_classes.insert(0, RuntimeLocator)
    caching.Cache.load_overload = _load_overload
    caching.Cache.save_overload = _save_overload
    _DATA_FILE._load_data = _load_data
    _DATA_FILE._save_data = _save_data
