"""Response matrices: models x items of 0/1 correctness, with model and item ids."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import DataError, TailoredBenchError
from .readers import read_npy


@dataclass(frozen=True)
class ResponseMatrix:
    """Per-item correctness of models: ``values[m, i]`` is 1 if model ``m`` got item ``i`` right.

    ``values`` (models x items) are 0/1 numbers, as an array or a DataFrame whose index and columns give
    the ids. ``models`` and ``items`` are the ids, all different (by default ``model_0``, ... and
    ``0..n_items-1``; with a DataFrame, labels picked in that order). ``source`` names them in errors.

    Examples
    --------
    >>> m = ResponseMatrix([[1, 0, 1], [0, 0, 1]], models=["a", "b"])
    >>> m.shape, m.accuracy().tolist()
    ((2, 3), [0.6666666666666666, 0.3333333333333333])
    """

    values: np.ndarray
    models: tuple[str, ...] = field(default=())
    items: tuple = field(default=())
    source: str = "array"

    def __post_init__(self):
        values, models, items = self.values, tuple(self.models), tuple(self.items)
        if isinstance(values, pd.DataFrame):
            values, models, items = _by_label(values, models, items, self.source)
        values = validate_binary(values, self.source)
        object.__setattr__(self, "values", values)
        n_models, n_items = values.shape
        models = tuple(str(m) for m in models) or tuple(f"model_{i}" for i in range(n_models))
        items = items or tuple(range(n_items))
        if len(models) != n_models:
            raise DataError(f"{self.source}: {len(models)} model ids for {n_models} rows")
        if len(items) != n_items:
            raise DataError(f"{self.source}: {len(items)} item ids for {n_items} columns")
        _check_unique(models, "model", self.source)
        _check_unique(items, "item", self.source)
        object.__setattr__(self, "models", models)
        object.__setattr__(self, "items", items)

    @property
    def shape(self) -> tuple[int, int]:
        return self.values.shape

    @property
    def n_models(self) -> int:
        return self.values.shape[0]

    @property
    def n_items(self) -> int:
        return self.values.shape[1]

    def accuracy(self) -> np.ndarray:
        """Mean correctness of each model over all items."""
        return self.values.mean(axis=1)

    def take_models(self, rows: Sequence[int] | np.ndarray) -> ResponseMatrix:
        """The matrix restricted to the given model rows, in that order."""
        rows = np.asarray(rows, dtype=int)
        return ResponseMatrix(self.values[rows], tuple(self.models[r] for r in rows), self.items, self.source)

    def subsample_models(self, max_models: int | None, seed: int = 0) -> ResponseMatrix:
        """A seeded random subset of at most ``max_models`` models, in their original order."""
        if max_models is None or self.n_models <= max_models:
            return self
        return self.take_models(subsample_rows(self.n_models, max_models, seed))


def subsample_rows(n: int, max_models: int, seed: int) -> np.ndarray:
    """``max_models`` of ``n`` rows drawn with ``seed``, in their original order."""
    return np.sort(np.random.default_rng(seed).choice(n, max_models, replace=False))


def distinct_rows(values: np.ndarray) -> np.ndarray:
    """The rows to keep so that no two are equal: the first of each, in order."""
    _, first = np.unique(values, axis=0, return_index=True)
    return np.sort(first)


def _check_unique(ids: tuple, what: str, source: str) -> None:
    seen: set = set()
    for one in ids:
        if one in seen:
            raise DataError(f"{source}: {what} id {one!r} repeats; each {what} needs its own id")
        seen.add(one)


def _by_label(frame: pd.DataFrame, models: tuple, items: tuple, source: str) -> tuple:
    """A DataFrame's values and ids; ids given as well pick its rows and columns by label."""
    for labels, what in ((frame.index, "model"), (frame.columns, "item")):
        _check_unique(tuple(labels), what, source)
    for given, labels, what, axis in (
        (models, frame.index, "model", "index"),
        (items, frame.columns, "item", "columns"),
    ):
        if given and (len(given) != len(labels) or set(given) != set(labels)):
            raise DataError(f"{source}: the {what} ids given are not the DataFrame's {axis} labels")
    frame = frame.loc[list(models) if models else frame.index, list(items) if items else frame.columns]
    return frame, tuple(frame.index), tuple(frame.columns)


#: What a dtype kind holds, for the error on values that are not numbers.
_NOT_NUMBERS = {
    "O": "Python objects (an object array)",
    "U": "text",
    "S": "bytes",
    "M": "dates",
    "m": "time spans",
    "V": "records (a structured array)",
}


def numeric_values(values, source: str) -> np.ndarray:
    """``values`` (an array, nested lists or pandas data) as float64 if they are bool, int or float numbers,
    else (text '0'/'1' included) a one-line :class:`DataError` naming ``source``."""
    if isinstance(values, pd.Series | pd.DataFrame):
        frame = values.to_frame() if isinstance(values, pd.Series) else values
        for column, dtype in frame.dtypes.items():
            if pd.api.types.is_complex_dtype(dtype):
                raise DataError(f"{source}: complex values; expected real 0/1 correctness")
            if not pd.api.types.is_numeric_dtype(dtype):  # bool counts as numeric
                raise DataError(f"{source}: column {column!r} holds {dtype} values, not 0/1 numbers")
        return values.to_numpy(dtype=np.float64, na_value=np.nan)
    try:
        raw = np.asarray(values)
    except (TypeError, ValueError):  # ragged nested lists
        raise DataError(f"{source}: values are not numeric 0/1 (rows of different lengths?)") from None
    if raw.dtype.kind == "c":
        raise DataError(f"{source}: complex values; expected real 0/1 correctness")
    if raw.dtype.kind not in "biuf":
        what = _NOT_NUMBERS.get(raw.dtype.kind, f"{raw.dtype} values")
        raise DataError(f"{source}: the values are {what}, not 0/1 numbers")
    return raw.astype(np.float64, copy=False)


def validate_binary(values, source: str = "array") -> np.ndarray:
    """``values`` as a float64 2-D array of 0/1, or a :class:`DataError` naming ``source``."""
    array = numeric_values(values, source)
    if array.ndim != 2:
        raise DataError(f"{source}: expected a 2-D models x items matrix, got shape {array.shape}")
    if array.shape[0] == 0 or array.shape[1] == 0:
        raise DataError(f"{source}: empty matrix of shape {array.shape}")
    n_nan = int(np.isnan(array).sum())
    if n_nan:
        raise DataError(f"{source}: {n_nan} NaN values; the matrix must be complete 0/1 correctness")
    bad = (array != 0) & (array != 1)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise DataError(
            f"{source}: non-binary value {float(array[row, col]):g} at row {row}, column {col} (0-based); "
            "expected 0/1 correctness"
        )
    return array


def load_matrix(path: str | Path) -> ResponseMatrix:
    """Read a user's own models x items 0/1 matrix: ``.npy`` (a bare 2-D array) or ``.csv`` (a header
    row of item ids; the first column holds model ids).
    """
    path = Path(path)
    if path.is_dir():
        raise DataError(f"{path}: a folder; give a matrix file (.npy or .csv)")
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".npy":
        return ResponseMatrix(read_npy(path), source=str(path))
    if suffix == ".csv":
        return _read_csv(path)
    raise DataError(f"{path}: unsupported format {suffix!r}; use .npy or .csv")


#: A CSV cell that is a number: ASCII digits only, for float() also reads "0_1" as 1 and other scripts' digits.
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(nan|inf|infinity)", re.ASCII | re.IGNORECASE)


def _read_csv(path: Path) -> ResponseMatrix:
    """A CSV matrix: a header row of item ids (first cell free), then one row per model."""
    import csv

    try:
        with open(path, newline="", encoding="utf-8") as handle:
            rows = [row for row in csv.reader(handle) if row]
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise DataError(f"{path}: not a readable CSV ({err})") from None
    if len(rows) < 2:
        raise DataError(f"{path}: needs a header row of item ids and at least one model row")
    header, body = rows[0][1:], rows[1:]
    if not header:
        raise DataError(f"{path}: the header row names no items")
    blank = next((column for column, item in enumerate(header, start=2) if not item.strip()), None)
    if blank is not None:
        trailing = " (a trailing comma?)" if blank == len(header) + 1 else ""
        raise DataError(f"{path}: column {blank} of the header has an empty item id{trailing}; every item needs an id")
    # read as written: pandas would rename a repeated id ("q1.1") and hide the repeat
    repeated = sorted({item for item in header if header.count(item) > 1})
    if repeated:
        looks_like_data = all(cell.strip() in ("0", "1", "0.0", "1.0") for cell in header)
        hint = "; the first row must be a header of item ids, it looks like data" if looks_like_data else ""
        raise DataError(f"{path}: item id {repeated[0]!r} repeats in the header{hint}")
    ragged = next((i for i, row in enumerate(body, start=2) if len(row) != len(header) + 1), None)
    if ragged is not None:
        raise DataError(f"{path}: line {ragged} has {len(body[ragged - 2])} cells, the header {len(header) + 1}")
    models = [row[0] for row in body]
    twice = sorted({m for m in models if models.count(m) > 1})
    if twice:
        raise DataError(f"{path}: model id {twice[0]!r} appears on more than one row")
    for line, row in enumerate(body, start=2):
        bad = next((cell for cell in row[1:] if not _NUMBER.fullmatch(cell.strip())), None)
        if bad is not None:
            raise DataError(f"{path}: values are not numeric 0/1 (line {line}: {bad!r})")
        # named by line and item id, as the file is read (validate_binary only knows 0-based positions)
        other = next(((item, c) for item, c in zip(header, row[1:], strict=True) if float(c) not in (0.0, 1.0)), None)
        if other is not None:
            item, cell = other
            raise DataError(f"{path}: line {line}, item {item!r}: value {cell.strip()} is not 0 or 1 (correctness)")
    values = np.array([[float(cell) for cell in row[1:]] for row in body])
    return ResponseMatrix(values, tuple(models), tuple(header), source=str(path))


def split_rows(accuracy: np.ndarray, how: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Source and target rows: ``"interleave"`` sorts models by ``accuracy`` (stable) and takes them alternately
    as target and source; ``"random"`` is a random half seeded by ``seed``."""
    n = len(accuracy)
    if how == "interleave":
        order = np.argsort(accuracy, kind="stable")
        return order[1::2], order[0::2]
    if how == "random":
        order = np.random.default_rng(seed).permutation(n)
        return np.sort(order[n // 2 :]), np.sort(order[: n // 2])
    raise TailoredBenchError(f"unknown split {how!r}; use 'interleave' or 'random'")


def split_models(
    matrix: ResponseMatrix, how: str = "interleave", seed: int = 0
) -> tuple[ResponseMatrix, ResponseMatrix]:
    """Split models into source (full results known) and target (to be estimated).

    ``how="interleave"`` is the paper's accuracy-stratified scheme: models sorted by accuracy
    (stable), alternately target and source; ``"random"`` is a random half seeded by ``seed``.
    """
    if matrix.n_models < 4:
        raise TailoredBenchError(
            f"{matrix.source}: {matrix.n_models} models; a split needs at least 4 (2 source, 2 target)"
        )
    source_rows, target_rows = split_rows(matrix.accuracy(), how, seed)
    return matrix.take_models(source_rows), matrix.take_models(target_rows)
