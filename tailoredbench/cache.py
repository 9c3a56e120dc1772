"""The user cache: a folder of ``.npz`` entries, each with a sha256 of its contents.

Generic, below the data layer: the data registry downloads into :func:`cache_dir`, and
gp-IRT's fits and the run cache (:mod:`tailoredbench.run_cache`) keep their entries here.
"""

from __future__ import annotations

import hashlib
import io
import os
import warnings
from pathlib import Path

import numpy as np

from . import atomic
from .errors import CacheWarning


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


def store_cached(path: str | Path, **arrays) -> Path:
    """Write arrays to a cache entry (``.npz``) with a sha256 of its contents, atomically."""
    path = Path(path)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays, _sha256=_arrays_digest(arrays))
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic.write_bytes(path, buffer.getvalue())


def load_cached(path: str | Path) -> dict | None:
    """A cache entry's arrays, or None when there is none.

    An entry that cannot be read or fails its hash is named in a :class:`CacheWarning`
    and removed, so that the caller computes it afresh and stores a sound one.
    """
    path = Path(path)
    if not path.is_file():
        return None
    try:
        with np.load(io.BytesIO(path.read_bytes()), allow_pickle=False) as stored:
            arrays = {name: stored[name] for name in stored.files if name != "_sha256"}
            recorded = str(stored["_sha256"])
        if recorded != _arrays_digest(arrays):
            raise ValueError("sha256 mismatch")
    except Exception as err:  # any damage at all: it is only a cache
        warnings.warn(f"{path}: damaged cache entry ({err}); removed, computing it again", CacheWarning, stacklevel=2)
        path.unlink(missing_ok=True)
        return None
    return arrays
