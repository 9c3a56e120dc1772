"""Per-run work kept on disk, so that what one notebook computed the next one reads.

When ``$TAILOREDBENCH_RUN_CACHE`` names a folder (``tailoredbench reproduce`` sets it), each run's chosen
items are stored there, keyed by a sha256 of the code, numeric versions, data and parameters. What depends on
the items is recomputed from them, so a cached run gives the same numbers as a fresh one.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from .cache import cache_dir, load_cached, store_cached
from .environment import versions

#: The environment variable naming the cache's folder.
ENV = "TAILOREDBENCH_RUN_CACHE"
PACKAGE = Path(__file__).resolve().parent


def folder() -> Path | None:
    """The cache's folder, or None when the cache is off (read where a method is prepared, then handed on)."""
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
