"""One small reader per file format (of an upstream file whose hash was checked, or a user's own .npy),
and the provenance of registered files."""

from __future__ import annotations

import io
import math
import os
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import DataError
from .files import lookup


def file_records(*pairs: tuple[str, str]) -> list[dict]:
    """Each registered ``(repo, path)``'s provenance: repo, commit, path, sha256 and licence."""
    entries = [lookup(repo, path) for repo, path in pairs]
    return [
        {"repo": e.repo, "commit": e.commit, "path": e.path, "sha256": e.sha256, "licence": e.licence} for e in entries
    ]


def read_npy(path: Path) -> np.ndarray:
    """A bare ``.npy`` array of numbers (no pickles), its header checked against the file before loading."""
    try:
        handle = open(path, "rb")
    except OSError as err:
        raise DataError(f"{path}: cannot be read ({err.strerror})") from None
    with handle:
        if handle.read(2) == b"\x1f\x8b":
            raise DataError(f"{path}: a compressed (gzip) file; decompress it first (gunzip), then give the .npy")
        handle.seek(0)
        try:
            header = _npy_header(handle)
        except (ValueError, OSError, EOFError) as err:
            raise DataError(f"{path}: not a readable .npy array ({err})") from None
        if header is None:
            raise DataError(f"{path}: a .npy of format 3.0, which only records need; expected 0/1 numbers")
        shape, _, dtype = header
        data_bytes = os.fstat(handle.fileno()).st_size - handle.tell()
    if dtype.hasobject:
        raise DataError(f"{path}: holds Python objects (pickled data), not 0/1 numbers")
    if dtype.kind not in "biufc":  # complex gets its own message from the matrix check
        what = "records (a structured array)" if dtype.kind == "V" else f"{dtype} values"
        raise DataError(f"{path}: holds {what}, not 0/1 numbers")
    # exact integers: a header may claim any shape, and numpy would try to allocate it
    needed = math.prod(int(n) for n in shape) * dtype.itemsize
    if needed > data_bytes:
        raise DataError(
            f"{path}: the header claims shape {tuple(shape)} ({needed} bytes) but the file holds {data_bytes} bytes "
            "of data (truncated or damaged)"
        )
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise DataError(f"{path}: not a readable .npy array ({err})") from None


def _npy_header(handle) -> tuple | None:
    """``(shape, fortran_order, dtype)`` from a .npy header (formats 1.0 and 2.0; None for 3.0)."""
    version = np.lib.format.read_magic(handle)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(handle)
    if version == (2, 0):
        return np.lib.format.read_array_header_2_0(handle)
    if version == (3, 0):
        return None
    raise ValueError(f"unknown .npy format {version}")


def read_joblib(path: Path):
    """A joblib pickle; only ever called on a file whose sha256 matched the registry."""
    import joblib

    try:
        return joblib.load(path)
    except Exception as err:
        raise DataError(f"{path}: not a readable joblib file ({err})") from None


def read_zip_csv(path: Path, member: str) -> pd.DataFrame:
    """A CSV inside a zip archive, with model ids as its index column."""
    try:
        with zipfile.ZipFile(path) as archive, archive.open(member) as handle:
            return pd.read_csv(io.TextIOWrapper(handle), index_col=0)
    except (KeyError, zipfile.BadZipFile, pd.errors.ParserError) as err:
        raise DataError(f"{path}: cannot read {member} ({err})") from None


def read_csv_block(path: Path, columns: slice) -> np.ndarray:
    """A column block of a header-less numeric CSV."""
    try:
        values = pd.read_csv(path, header=None).to_numpy(dtype=np.float64)
    except (ValueError, pd.errors.ParserError) as err:
        raise DataError(f"{path}: not a numeric CSV ({err})") from None
    return values[:, columns]
