"""One small reader per upstream file format. Each takes a hash-checked local path."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import DataError


def read_npy(path: Path) -> np.ndarray:
    """A bare ``.npy`` array (no pickles)."""
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError) as err:
        raise DataError(f"{path}: not a readable .npy array ({err})") from None


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
