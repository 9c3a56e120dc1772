"""Per-run work kept on disk, so that what one notebook computed the next one reads.

A simulation's costly part is choosing each target's probe (two K-Medoids per target
and budget), and for gp-IRT each run's anchors (KMeans). The same choices recur:
TailoredBench+ asks exactly TailoredBench's probe, the sequential mode runs both methods
on the same growing probes, ``beyond`` repeats the benchmark notebooks' gp-IRT runs, and
a rerun repeats every run. When ``$TAILOREDBENCH_RUN_CACHE`` names a folder, each run's
chosen items are stored there, keyed by a sha256 of

* the code: every module of this package, and the versions of Python, the machine, numpy,
  scipy, numba, scikit-learn and pandas;
* the data: the source models' results and the targets' (as the oracle holds them);
* the parameters: the run's random key and every option that shapes the probe.

A run found there is read instead of chosen again; anything else that depends on the
items (each item's cluster, the estimates) is recomputed from them, the clusters checked
against a digest kept with the items (:func:`tailoredbench.kmedoids.known_labels`), so a
cached run gives the same numbers as a fresh one, to the digit. Unset or empty, the
variable turns the cache off, as it is by default; ``tailoredbench reproduce`` sets it
for the notebooks it runs. Each entry carries its key, so that one moved or copied to
another's place is not trusted. An entry that is not a file, cannot be read, fails its
hash, holds another key or has other shapes than expected is named in a
:class:`~tailoredbench.errors.CacheWarning`, removed and computed again; a folder that
cannot be written is named once and the runs go on without storing to it
(:mod:`tailoredbench.cache`).
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from .cache import load_cached, store_cached
from .environment import versions

#: The environment variable naming the cache's folder.
ENV = "TAILOREDBENCH_RUN_CACHE"
PACKAGE = Path(__file__).resolve().parent


def folder() -> Path | None:
    """The cache's folder, or None when the cache is off.

    A method reads it where it is prepared, in the process that starts a simulation, and
    hands it to the runs with the rest of its preparation: worker processes started
    earlier, with another environment, cache where the simulation says.
    """
    value = os.environ.get(ENV, "")
    return Path(value) if value else None


@functools.cache
def code_digest() -> str:
    """A sha256 of every module of the package (by path and contents), and of the Python, machine,
    numeric library versions and instructions that compute the probes (:func:`tailoredbench.environment.versions`)."""
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
    """The path of the entry of ``kind`` for the key ``parts`` in the cache at ``root``, and its
    key (kept inside it); None when the cache is off."""
    if root is None:
        return None
    digest = hashlib.sha256(code_digest().encode())
    _update(digest, [kind, *parts])
    key = digest.hexdigest()
    return Path(root) / kind / f"{key[:32]}.npz", key


def load(root: Path | None, kind: str, parts, shapes: Mapping[str, tuple]) -> dict | None:
    """The entry of ``kind`` for the key ``parts`` in the cache at ``root`` (None: off), or None if there is none.

    ``shapes`` lists every array the entry must hold, and its shape.
    """
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
