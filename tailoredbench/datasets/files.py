"""The registry of pinned upstream data files, and hash-checked access to them.

Every data file is named by GitHub repository, commit, path and sha256 in ``data/registry.tsv``.
:func:`fetch` looks for it in ``$TAILOREDBENCH_DATA/<owner>/<repo>/<path>`` (a mirror laid out like
upstream), then the user cache, then downloads it there. The sha256 is checked wherever the file comes
from; a mismatch is an error naming the file, never a silent fall-back to other data.
"""

from __future__ import annotations

import csv
import hashlib
import logging
import os
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from ..cache import cache_dir
from ..errors import DataError

#: Where pinned files are downloaded from; ``$TAILOREDBENCH_BASE_URL`` overrides it
#: (the tests serve the local mirror over loopback to exercise the download path).
DEFAULT_BASE_URL = "https://raw.githubusercontent.com"


@dataclass(frozen=True)
class DataFile:
    """One pinned upstream file."""

    repo: str
    commit: str
    path: str
    sha256: str
    bytes: int
    licence: str

    @property
    def relpath(self) -> str:
        """Location inside a mirror or cache: ``<owner>/<repo>/<path>``."""
        return f"{self.repo}/{self.path}"

    def url(self, base_url: str | None = None) -> str:
        base = base_url or os.environ.get("TAILOREDBENCH_BASE_URL") or DEFAULT_BASE_URL
        return f"{base.rstrip('/')}/{self.repo}/{self.commit}/{self.path}"


def _registry_text() -> str:
    # A wheel carries the registry inside the package; a source checkout has it in data/.
    packaged = resources.files("tailoredbench.datasets").joinpath("registry.tsv")
    if packaged.is_file():
        return packaged.read_text()
    return (Path(__file__).resolve().parents[2] / "data" / "registry.tsv").read_text()


@cache
def registry() -> dict[str, DataFile]:
    """All registered files, keyed by ``<owner>/<repo>/<path>``."""
    lines = [ln for ln in _registry_text().splitlines() if ln and not ln.startswith("#")]
    entries = {}
    for row in csv.DictReader(lines, delimiter="\t"):
        entry = DataFile(row["repo"], row["commit"], row["path"], row["sha256"], int(row["bytes"]), row["licence"])
        entries[entry.relpath] = entry
    return entries


def lookup(repo: str, path: str) -> DataFile:
    """The registry entry of ``path`` in ``repo`` (``owner/name``)."""
    try:
        return registry()[f"{repo}/{path}"]
    except KeyError:
        raise DataError(f"{repo}/{path} is not in the data registry") from None


def pin_data_dir() -> None:
    """Make a relative ``$TAILOREDBENCH_DATA`` absolute where a command starts, for kernels started elsewhere."""
    mirror = os.environ.get("TAILOREDBENCH_DATA")
    if mirror:
        os.environ["TAILOREDBENCH_DATA"] = str(Path(mirror).resolve())


def sha256sum(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


# (path, size, mtime) -> verified; hashing a file once per process is enough.
_verified: set[tuple[str, int, int]] = set()


def _check(entry: DataFile, path: Path) -> Path:
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key in _verified:
        return path
    actual = sha256sum(path)
    if actual != entry.sha256:
        raise DataError(
            f"{path}: sha256 mismatch for {entry.relpath} "
            f"(expected {entry.sha256[:12]}..., got {actual[:12]}...); the file is corrupt or not the pinned version"
        )
    _verified.add(key)
    return path


def fetch(repo: str, path: str, *, download: bool = True) -> Path:
    """Local path of the registered file ``path`` in GitHub repository ``repo``, its sha256 checked.

    ``download``: fetch the pinned file when neither the mirror nor the cache has it. A :class:`DataError`
    when the file is not registered, fails its hash check, or cannot be found or downloaded."""
    entry = lookup(repo, path)
    mirror = os.environ.get("TAILOREDBENCH_DATA")
    if mirror:
        candidate = Path(mirror) / entry.relpath
        if candidate.is_file():
            return _check(entry, candidate)
    cached = cache_dir() / entry.relpath
    if cached.is_file():
        return _check(entry, cached)
    if not download:
        raise DataError(f"{entry.relpath}: not found in $TAILOREDBENCH_DATA or the cache")
    return _download(entry, cached)


def _one_line(err: Exception) -> str:
    return " ".join(str(err).split())


def _download(entry: DataFile, target: Path) -> Path:
    import pooch

    target.parent.mkdir(parents=True, exist_ok=True)
    logger = pooch.get_logger()
    level = logger.level
    # pooch announces each download on stderr: a failed one would print that line besides the error's
    logger.setLevel(logging.WARNING)
    try:
        pooch.retrieve(
            entry.url(),
            known_hash=f"sha256:{entry.sha256}",
            fname=target.name,
            path=target.parent,
            progressbar=False,
        )
    except ValueError as err:  # pooch's hash mismatch
        raise DataError(f"{entry.relpath}: downloaded file fails its sha256 check ({_one_line(err)})") from None
    except Exception as err:
        raise DataError(
            f"{entry.relpath}: not in $TAILOREDBENCH_DATA or the cache, and download failed "
            f"({type(err).__name__}: {_one_line(err)})"
        ) from None
    finally:
        logger.setLevel(level)
    return _check(entry, target)
