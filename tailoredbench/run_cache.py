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
for the notebooks it runs. An entry that cannot be read, fails its hash or has other
shapes than expected is named in a :class:`~tailoredbench.errors.CacheWarning`, removed
and computed again.
"""

from __future__ import annotations

import functools
import hashlib
import os
import warnings
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from .cache import load_cached, store_cached
from .environment import versions
from .errors import CacheWarning

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


def _path(root: Path | None, kind: str, parts) -> Path | None:
    if root is None:
        return None
    digest = hashlib.sha256(code_digest().encode())
    _update(digest, [kind, *parts])
    return Path(root) / kind / f"{digest.hexdigest()[:32]}.npz"


def load(root: Path | None, kind: str, parts, shapes: Mapping[str, tuple]) -> dict | None:
    """The entry of ``kind`` for the key ``parts`` in the cache at ``root`` (None: off), or None if there is none.

    ``shapes`` lists every array the entry must hold, and its shape.
    """
    path = _path(root, kind, parts)
    if path is None:
        return None
    arrays = load_cached(path)
    if arrays is None:
        return None
    if {name: arrays[name].shape for name in arrays} != {name: tuple(shape) for name, shape in shapes.items()}:
        message = f"{path}: cache entry of other shapes than expected; removed, computing it again"
        warnings.warn(message, CacheWarning, stacklevel=2)
        path.unlink(missing_ok=True)
        return None
    return arrays


def store(root: Path | None, kind: str, parts, **arrays) -> None:
    """Keep ``arrays`` as the entry of ``kind`` for the key ``parts`` in the cache at ``root`` (None: off)."""
    path = _path(root, kind, parts)
    if path is not None:
        store_cached(path, **arrays)
