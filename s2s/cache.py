"""The disk cache: generated modules and Numba's compiled code, kept between processes.

Each entry is a folder ``<cache>/v1/<key[:2]>/<key>/`` holding the
generated ``module.py``, its constants (``constants.npz``), ``meta.json``
(the entry function, the line map, and a SHA-256 of each file) and Numba's
own cache of the compiled code in ``__pycache__`` (sealed by checksums in
``numba.json`` once compiled). The key covers everything that can change the
result (:meth:`s2s.build.Builder.key`).

* Writes are atomic: an entry is assembled in a temporary folder and
  renamed into place.
* Two processes building the same entry take a file lock; the second one
  waits and loads what the first one wrote.
* A damaged or truncated file is detected by its checksum: the entry (or
  Numba's part of it) is removed and rebuilt, with a warning, never used.
* ``S2S_CACHE_DIR`` chooses the folder (default: the user cache folder); if
  it cannot be written, s2s works without the disk cache and warns once.

    >>> import tempfile
    >>> cache = DiskCache(tempfile.mkdtemp())
    >>> cache.info()["entries"]
    0
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .generated import Module, compiler_digest

__all__ = ["DiskCache", "default_cache", "cache_dir", "module_key"]

_VERSION = "v1"
_warned: set[str] = set()


def cache_dir() -> str:
    """``$S2S_CACHE_DIR``, or the user cache folder of s2s."""
    configured = os.environ.get("S2S_CACHE_DIR")
    if configured:
        return configured
    import platformdirs

    return platformdirs.user_cache_dir("s2s")


def _warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class DiskCache:
    """Generated modules on disk, keyed by :meth:`s2s.build.Builder.key`."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root) / _VERSION

    def writable(self) -> bool:
        """Whether entries can be written (warns once if not)."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = tempfile.NamedTemporaryFile(dir=self.root, prefix=".probe-", delete=True)
            probe.close()
            return True
        except OSError as exc:
            _warn_once(f"s2s: the cache folder {self.root} cannot be written ({exc}); "
                       "working without the disk cache")
            return False

    def folder(self, key: str) -> Path:
        return self.root / key[:2] / key

    def lock(self, key: str):
        """A file lock held while an entry is built."""
        import filelock

        path = self.root / key[:2] / f"{key}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        return filelock.FileLock(str(path))

    def entry(self, key: str, make: Callable[[], Module], compile_: Callable[[Module], bool]) -> Module:
        """The module of ``key``: read from disk, or made by ``make()`` and stored; ``compile_`` run on it.

        Every transform's entries go through here, under the entry's lock, so
        that a second process building the same entry waits and loads it.
        ``compile_(module)`` loads the module and says whether it compiled it
        with Numba; Numba's files are then sealed (checked on the next load).

            >>> import tempfile
            >>> cache = DiskCache(tempfile.mkdtemp())
            >>> make = lambda: Module("def f(x):\\n    return x\\n", "f", {})
            >>> cache.entry("ab" * 32, make, lambda module: False).filename.endswith("module.py")
            True
            >>> cache.entry("ab" * 32, lambda: None, lambda module: False).entry  # read back, not made again
            'f'
        """
        with self.lock(key):
            module = self.load(key)
            if module is None:
                module = make()
                module.filename = str(self.store(key, module))
            if compile_(module):
                self.seal(key)
        return module

    # ------------------------------------------------------------------ read
    def load(self, key: str):
        """The cached :class:`~s2s.generated.Module` of ``key``, or None (missing or damaged, then removed)."""
        folder = self.folder(key)
        meta_path = folder / "meta.json"
        if not meta_path.exists():
            return None
        try:
            meta = json.loads(meta_path.read_text())
            module_path = folder / "module.py"
            if _sha(module_path) != meta["sha256"]["module.py"]:
                raise ValueError("module.py does not match its checksum")
            constants = {}
            if "constants.npz" in meta["sha256"]:
                npz = folder / "constants.npz"
                if _sha(npz) != meta["sha256"]["constants.npz"]:
                    raise ValueError("constants.npz does not match its checksum")
                with np.load(npz) as data:
                    constants = {k: data[k] for k in data.files}
            self._check_numba(folder)
            module = Module(module_path.read_text(), meta["entry"], {int(k): v for k, v in meta["lines"].items()},
                            constants, adjoint=meta.get("adjoint", ""))
            module.filename = str(module_path)
            return module
        except (OSError, ValueError, KeyError, TypeError) as exc:
            _warn_once(f"s2s: the cache entry {folder} is damaged ({exc}); rebuilding it")
            shutil.rmtree(folder, ignore_errors=True)
            return None

    def _check_numba(self, folder: Path) -> None:
        """Remove Numba's compiled files of ``folder`` unless they match their seal."""
        seal = folder / "numba.json"
        pycache = folder / "__pycache__"
        try:
            sums = json.loads(seal.read_text()) if seal.exists() else None
        except ValueError:
            sums = None
        files = sorted(pycache.glob("*")) if pycache.exists() else []
        if sums is not None and all(f.name in sums and _sha(f) == sums[f.name] for f in files) \
                and set(sums) == {f.name for f in files}:
            return
        if files:
            _warn_once(f"s2s: Numba's cache in {folder} is incomplete or damaged; recompiling")
        shutil.rmtree(pycache, ignore_errors=True)
        seal.unlink(missing_ok=True)

    # ----------------------------------------------------------------- write
    def store(self, key: str, module) -> Path:
        """Write ``module`` as the entry of ``key`` (atomically); return its module file."""
        folder = self.folder(key)
        folder.parent.mkdir(parents=True, exist_ok=True)
        self._sweep(folder.parent)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key[:12]}-", dir=folder.parent))
        try:
            (tmp / "module.py").write_text(module.source)
            sums = {"module.py": _sha(tmp / "module.py")}
            if module.constants:
                np.savez(tmp / "constants.npz", **module.constants)
                sums["constants.npz"] = _sha(tmp / "constants.npz")
            meta = {"entry": module.entry, "adjoint": module.adjoint, "lines": module.line_map, "sha256": sums}
            (tmp / "meta.json").write_text(json.dumps(meta))
            shutil.rmtree(folder, ignore_errors=True)
            os.replace(tmp, folder)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return folder / "module.py"

    def seal(self, key: str) -> None:
        """Record the checksums of Numba's compiled files of an entry (after compiling it)."""
        folder = self.folder(key)
        pycache = folder / "__pycache__"
        if not pycache.exists():
            return
        sums = {f.name: _sha(f) for f in sorted(pycache.glob("*")) if f.is_file()}
        tmp = folder / f".numba.json.{os.getpid()}"
        tmp.write_text(json.dumps(sums))
        os.replace(tmp, folder / "numba.json")

    # ------------------------------------------------------------- inspect
    def entries(self) -> list[Path]:
        """The complete entries (a temporary folder of an interrupted write is not one)."""
        if not self.root.exists():
            return []
        return sorted(p.parent for p in self.root.glob("*/*/meta.json") if not p.parent.name.startswith("."))

    def _sweep(self, folder: Path) -> None:
        """Remove temporary folders of writes that were interrupted over an hour ago."""
        import time

        for stale in folder.glob(".*-*"):
            try:
                if stale.is_dir() and time.time() - stale.stat().st_mtime > 3600:
                    shutil.rmtree(stale, ignore_errors=True)
            except OSError:
                pass

    def info(self) -> dict:
        """Where the cache is, how many entries it has and how many bytes they take."""
        entries = self.entries()
        size = sum(f.stat().st_size for e in entries for f in e.rglob("*") if f.is_file())
        return {"path": str(self.root), "entries": len(entries), "bytes": size}

    def clear(self) -> int:
        """Remove every entry (and any leftover of an interrupted write); return how many entries there were.

        The vector-math kernels' IR (``vmath`` beside the entries) and the
        compiled runtime helpers (``runtime-<digest>``) go too.
        """
        count = len(self.entries())
        for folder in (self.root, self.root.parent / "vmath", *self.root.parent.glob("runtime-*")):
            if folder.exists():
                shutil.rmtree(folder, ignore_errors=True)
        return count


def default_cache() -> DiskCache | None:
    """The cache in ``cache_dir()``, or None where it is turned off (``S2S_DISK_CACHE=0``) or cannot be written."""
    if os.environ.get("S2S_DISK_CACHE", "1") == "0":
        return None
    cache = DiskCache(cache_dir())
    return cache if cache.writable() else None


def module_key(module: Module) -> str:
    """The key of a module generated from modules already built (a ``vmap`` loop around its per-example code).

    Such a module is its own record: the key is a digest of the compiler,
    its source and its constants. (A user function's entry is keyed by
    :meth:`s2s.build.Builder.key`, before anything is generated.)

        >>> len(module_key(Module("def f(x):\\n    return x\\n", "f", {"C": np.ones(2)})))
        64
    """
    digest = hashlib.sha256("\x00".join([compiler_digest(), module.source, *sorted(module.constants)]).encode())
    for name in sorted(module.constants):
        digest.update(np.ascontiguousarray(module.constants[name]).tobytes())
    return digest.hexdigest()
