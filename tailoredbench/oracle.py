"""Target models' hidden results, revealed only for the items a method asks about."""

from __future__ import annotations

import functools
import hashlib

import numpy as np

from .errors import TailoredBenchError


class Oracle:
    """Reveals target results (``values``, targets x items) item by item, refusing more than ``budget`` of one.

    Examples
    --------
    >>> oracle = Oracle(np.array([[1, 0, 1], [0, 0, 1]]), budget=2)
    >>> oracle.ask([0, 2]).tolist()
    [[1.0, 1.0], [0.0, 1.0]]
    >>> oracle.spent().tolist()
    [2, 2]
    >>> [a.tolist() for a in oracle.revealed(1)]
    [[0, 2], [0.0, 1.0]]
    """

    def __init__(self, values: np.ndarray, budget: int | None = None):
        self._values = np.asarray(values, dtype=np.float64)
        self.budget = budget
        self._asked = np.zeros(self._values.shape, dtype=bool)

    @property
    def n_targets(self) -> int:
        return self._values.shape[0]

    @property
    def n_items(self) -> int:
        return self._values.shape[1]

    @functools.cached_property
    def digest(self) -> str:
        """A sha256 of the hidden results (with their shape): it names them in a cache key, revealing none."""
        digest = hashlib.sha256(repr(self._values.shape).encode())
        digest.update(np.ascontiguousarray(self._values).tobytes())
        return digest.hexdigest()

    def ask(self, items, targets=None) -> np.ndarray:
        """Results of ``targets`` (all when ``None``) on ``items``."""
        items = np.asarray(items, dtype=np.int64)
        rows = np.arange(self.n_targets) if targets is None else np.asarray(targets, dtype=np.int64).reshape(-1)
        self._asked[np.ix_(rows, items)] = True
        if self.budget is not None:
            over = self._asked[rows].sum(axis=1) > self.budget
            if over.any():
                raise TailoredBenchError(
                    f"a method asked for more than its budget of {self.budget} items of target {rows[over][0]}"
                )
        return self._values[np.ix_(rows, items)]

    def ask_each(self, items) -> np.ndarray:
        """Results of every target on its own items (``items``: targets x k): shape (n_targets, k).

        Examples
        --------
        >>> Oracle(np.array([[1, 0, 1], [0, 0, 1]])).ask_each([[2], [0]]).tolist()
        [[1.0], [0.0]]
        """
        items = np.asarray(items, dtype=np.int64).reshape(self.n_targets, -1)
        rows = np.arange(self.n_targets)[:, None]
        self._asked[rows, items] = True
        if self.budget is not None:
            over = np.flatnonzero(self._asked.sum(axis=1) > self.budget)
            if len(over):
                raise TailoredBenchError(
                    f"a method asked for more than its budget of {self.budget} items of target {over[0]}"
                )
        return self._values[rows, items]

    def spent(self) -> np.ndarray:
        """Number of distinct items asked of each target."""
        return self._asked.sum(axis=1)

    def revealed(self, target: int) -> tuple[np.ndarray, np.ndarray]:
        """``(items, results)``: what has been asked of one target so far, items in increasing order."""
        items = np.flatnonzero(self._asked[target])
        return items, self._values[target, items]
