"""Response matrices: models x items of 0/1 correctness, with model and item ids."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DataError, TailoredBenchError


@dataclass(frozen=True)
class ResponseMatrix:
    """Per-item correctness of models: ``values[m, i]`` is 1 if model ``m`` got item ``i`` right.

    Parameters
    ----------
    values : array-like of shape (n_models, n_items)
        0/1 correctness; any other value, or NaN, is an error.
    models : sequence of str, optional
        Model ids; ``model_0``, ``model_1``, ... when omitted.
    items : sequence, optional
        Item ids (the benchmark's ``doc_id`` where known); ``0..n_items-1`` when omitted.
    source : str, default "array"
        Where the values came from, named in error messages.

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
        values = validate_binary(self.values, self.source)
        object.__setattr__(self, "values", values)
        n_models, n_items = values.shape
        models = tuple(str(m) for m in self.models) or tuple(f"model_{i}" for i in range(n_models))
        items = tuple(self.items) or tuple(range(n_items))
        if len(models) != n_models:
            raise DataError(f"{self.source}: {len(models)} model ids for {n_models} rows")
        if len(items) != n_items:
            raise DataError(f"{self.source}: {len(items)} item ids for {n_items} columns")
        if len(set(items)) != n_items:
            raise DataError(f"{self.source}: item ids are not unique")
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
        rows = np.sort(np.random.default_rng(seed).choice(self.n_models, max_models, replace=False))
        return self.take_models(rows)

    def drop_duplicate_models(self) -> tuple[ResponseMatrix, list[str]]:
        """Drop exact duplicate rows, keeping the first model of each; returns the dropped ids."""
        _, first = np.unique(self.values, axis=0, return_index=True)
        keep = np.sort(first)
        dropped = [m for i, m in enumerate(self.models) if i not in set(keep.tolist())]
        return self.take_models(keep), dropped


def validate_binary(values, source: str = "array") -> np.ndarray:
    """``values`` as a float64 2-D array of 0/1, or a :class:`DataError` naming ``source``."""
    raw = np.asarray(values)
    if np.iscomplexobj(raw):
        raise DataError(f"{source}: complex values; expected real 0/1 correctness")
    try:
        array = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise DataError(f"{source}: values are not numeric") from None
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
            f"{source}: non-binary value {array[row, col]!r} at row {row}, column {col}; expected 0/1 correctness"
        )
    return array


def load_matrix(path: str | Path) -> ResponseMatrix:
    """Read a user's own models x items 0/1 matrix.

    Parameters
    ----------
    path : str or Path
        ``.npy`` (a bare 2-D array) or ``.csv`` (a header row of item ids; the first
        column holds model ids).

    Returns
    -------
    ResponseMatrix

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "m.csv")
    >>> with open(path, "w") as handle:
    ...     _ = handle.write("model,q1,q2\\nm1,1,0\\nm2,0,0\\n")
    >>> load_matrix(path).items
    ('q1', 'q2')
    """
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".npy":
        try:
            values = np.load(path, allow_pickle=False)
        except (ValueError, OSError, EOFError) as err:
            raise DataError(f"{path}: not a readable .npy array ({err})") from None
        return ResponseMatrix(values, source=str(path))
    if suffix == ".csv":
        return _read_csv(path)
    raise DataError(f"{path}: unsupported format {suffix!r}; use .npy or .csv")


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
    # Read as written: pandas would rename a repeated id ("q1.1") and hide the repeat.
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
    try:
        values = np.array([[float(cell) for cell in row[1:]] for row in body])
    except ValueError as err:
        raise DataError(f"{path}: values are not numeric 0/1 ({err})") from None
    return ResponseMatrix(values, tuple(models), tuple(header), source=str(path))


def split_models(
    matrix: ResponseMatrix, how: str = "interleave", seed: int = 0
) -> tuple[ResponseMatrix, ResponseMatrix]:
    """Split models into source (full results known) and target (to be estimated).

    Parameters
    ----------
    matrix : ResponseMatrix
    how : {"interleave", "random"}
        ``interleave`` is the paper's accuracy-stratified scheme: sort models by
        accuracy (stable) and alternate target, source, target, ...; ``random`` is a
        seeded random half.
    seed : int
        Used by ``random`` only.

    Returns
    -------
    source, target : ResponseMatrix

    Examples
    --------
    >>> m = ResponseMatrix([[1, 1], [0, 0], [1, 0], [0, 1]])
    >>> source, target = split_models(m)
    >>> source.models, target.models
    (('model_2', 'model_0'), ('model_1', 'model_3'))
    """
    n = matrix.n_models
    if n < 4:
        raise TailoredBenchError(f"{matrix.source}: {n} models; a split needs at least 4 (2 source, 2 target)")
    if how == "interleave":
        order = np.argsort(matrix.accuracy(), kind="stable")
        target_rows, source_rows = order[0::2], order[1::2]
    elif how == "random":
        order = np.random.default_rng(seed).permutation(n)
        target_rows, source_rows = np.sort(order[: n // 2]), np.sort(order[n // 2 :])
    else:
        raise TailoredBenchError(f"unknown split {how!r}; use 'interleave' or 'random'")
    return matrix.take_models(source_rows), matrix.take_models(target_rows)
