"""Hashed caches: ``.npz`` entries, each with a sha256 of its contents and, optionally, a key; and the run cache.

A cache never stops a computation nor changes a number: a bad entry is named in a
:class:`~tailoredbench.errors.CacheWarning`, removed and computed again; a folder that cannot be
written is named once and not written again by this process.

The run cache keeps per-run work on disk, so that what one notebook computed the next one reads: when
``$TAILOREDBENCH_RUN_CACHE`` names a folder (``tailoredbench reproduce`` sets it), each run's chosen items
are stored there, keyed by a sha256 of the code, numeric versions, data and parameters. What depends on
the items is recomputed from them, so a cached run gives the same numbers as a fresh one.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import shutil
import stat
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from . import atomic
from .environment import versions
from .errors import CacheWarning

#: Cache folders that refused an entry: this process writes no more to them.
_unwritable: set[Path] = set()


def cache_dir() -> Path:
    """The user cache: ``$TAILOREDBENCH_CACHE`` or the platform's cache folder."""
    env = os.environ.get("TAILOREDBENCH_CACHE")
    if env:
        return Path(env)
    import pooch

    return Path(pooch.os_cache("tailoredbench"))


def _arrays_digest(arrays: dict) -> str:
    digest = hashlib.sha256()
    for name in sorted(arrays):
        array = np.asarray(arrays[name])
        digest.update(f"{name}:{array.dtype.str}:{array.shape}".encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def _remove(path: Path) -> str | None:
    """Remove whatever is at ``path`` (a folder with its contents); None when done, else why not."""
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    except OSError as err:
        return str(err)
    return None


def _drop(path: Path, reason: str) -> None:
    failed = _remove(path)
    outcome = "removed" if failed is None else f"cannot remove it ({failed})"
    warnings.warn(f"{path}: {reason}; {outcome}, computing it again", CacheWarning, stacklevel=3)


def store_cached(
    path: str | Path, *, key: str | None = None, folder: str | Path | None = None, **arrays
) -> Path | None:
    """Write arrays to a cache entry (``.npz``) with a sha256 of its contents, atomically; its path, or None.

    ``key``, a hash of what the arrays were computed on, is kept for :func:`load_cached` to check. A cache
    ``folder`` (by default the entry's) that cannot be written is named once and left alone from then on.
    """
    path = Path(path)
    folder = Path(folder) if folder is not None else path.parent
    if folder in _unwritable:
        return None
    if key is not None:
        arrays["_key"] = np.str_(key)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays, _sha256=_arrays_digest(arrays))
    if os.path.lexists(path) and not path.is_file() and _remove(path) is not None:
        return None  # not a file, and there to stay: load_cached named it
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return atomic.write_bytes(path, buffer.getvalue())
    except OSError as err:
        _unwritable.add(folder)
        message = f"{folder}: the cache cannot be written ({err}); running without storing to it"
        warnings.warn(message, CacheWarning, stacklevel=2)
        return None


def load_cached(
    path: str | Path, *, key: str | None = None, check: Callable[[dict], object] | None = None
) -> dict | None:
    """A cache entry's arrays, or None when there is none or it is not a sound file of this ``key`` that
    passes ``check`` (raising ValueError, KeyError, TypeError or IndexError): then it is named and removed."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
    except OSError:  # none there (or none that can be reached): computed, and stored if it can be
        return None
    if not stat.S_ISREG(mode):  # a folder, a pipe...: never read, or the run would fail or hang
        _drop(path, "not a file")
        return None
    try:
        with np.load(io.BytesIO(path.read_bytes()), allow_pickle=False) as stored:
            arrays = {name: stored[name] for name in stored.files if name != "_sha256"}
            recorded = str(stored["_sha256"])
        if recorded != _arrays_digest(arrays):
            raise ValueError("sha256 mismatch")
    except Exception as err:  # any damage at all: it is only a cache
        _drop(path, f"damaged cache entry ({err})")
        return None
    found = str(arrays.pop("_key")) if "_key" in arrays else None
    if key is not None and found != key:
        held = "no key" if found is None else f"key {found[:16]}..."
        _drop(path, f"cache entry computed on other data or settings ({held}, not {key[:16]}...)")
        return None
    if check is not None:
        try:
            check(arrays)
        except (ValueError, KeyError, TypeError, IndexError) as err:
            _drop(path, f"cache entry unfit for its use ({err})")
            return None
    return arrays


#: The environment variable naming the run cache's folder.
ENV = "TAILOREDBENCH_RUN_CACHE"
PACKAGE = Path(__file__).resolve().parent


def folder() -> Path | None:
    """The run cache's folder, or None when it is off (read where a method is prepared, then handed on)."""
    value = os.environ.get(ENV, "")
    return Path(value) if value else None


def default_folder() -> Path:
    """Where ``tailoredbench reproduce`` keeps the runs when ``$TAILOREDBENCH_RUN_CACHE`` names none."""
    return cache_dir() / "runs"


@functools.cache
def code_digest() -> str:
    """A sha256 of every module of the package and of :func:`tailoredbench.environment.versions`."""
    digest = hashlib.sha256(repr(sorted(versions().items())).encode())
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(path.relative_to(PACKAGE).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _update(digest, part) -> None:
    if isinstance(part, np.generic):  # numpy's 5 is Python's 5
        part = part.item()
    if isinstance(part, np.ndarray):
        digest.update(f"array:{part.dtype.str}:{part.shape}".encode())
        digest.update(np.ascontiguousarray(part).tobytes())
    elif isinstance(part, list | tuple):
        digest.update(f"seq:{len(part)}".encode())
        for item in part:
            _update(digest, item)
    else:  # ints, floats, strings, None, bools: their repr tells them apart
        digest.update(f"{type(part).__name__}:{part!r}".encode())


def _entry(root: Path | None, kind: str, parts) -> tuple[Path, str] | None:
    """The path and key of the entry of ``kind`` for ``parts`` in the cache at ``root``; None when off."""
    if root is None:
        return None
    digest = hashlib.sha256(code_digest().encode())
    _update(digest, [kind, *parts])
    key = digest.hexdigest()
    return Path(root) / kind / f"{key[:32]}.npz", key


def load(root: Path | None, kind: str, parts, shapes: Mapping[str, tuple]) -> dict | None:
    """The entry of ``kind`` for ``parts`` in the cache at ``root`` (None: off) if its arrays have ``shapes``."""
    entry = _entry(root, kind, parts)
    if entry is None:
        return None
    path, key = entry
    expected = {name: tuple(shape) for name, shape in shapes.items()}

    def check(arrays: dict) -> None:
        found = {name: array.shape for name, array in arrays.items()}
        if found != expected:
            raise ValueError(f"other shapes than expected: {found}, not {expected}")

    return load_cached(path, key=key, check=check)


def store(root: Path | None, kind: str, parts, **arrays) -> None:
    """Keep ``arrays`` as the entry of ``kind`` for the key ``parts`` in the cache at ``root`` (None: off)."""
    entry = _entry(root, kind, parts)
    if entry is not None:
        store_cached(entry[0], key=entry[1], folder=root, **arrays)
