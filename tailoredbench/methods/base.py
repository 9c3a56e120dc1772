"""The interface every estimation method implements, and how a method's options are checked.

A method chooses the items to ask and estimates from the answers, seeing targets only through
:class:`Oracle` objects.
"""

from __future__ import annotations

import functools
import hashlib
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from ..errors import TailoredBenchError, check_integer

#: The kinds of method: TailoredBench's own probe, or a baseline it is compared with.
KINDS = ("tailored", "baseline")
#: A run's random key: (seed, run).
Key = tuple[int, int]
#: One run's estimates: ``{variant: {budget: estimate of every target}}``; "" names a method without variants.
RunEstimates = dict[str, dict[int, np.ndarray]]


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


class Method(ABC):
    """An estimation method: :meth:`prepare` once on the source models, then :meth:`run` on any number of runs.

    Class attributes declare what a method is and can do.
    """

    name: ClassVar[str]  # in the registry, the CLI and the reports
    kind: ClassVar[str]  # "tailored" (asks TailoredBench's probe: a budget exceeds the G-set) or "baseline"
    options: ClassVar[Mapping[str, Any]] = MappingProxyType({})  # every option it takes, with its default
    variants: ClassVar[tuple[str, ...]] = ()  # named variants, ``name[variant]`` (the option ``variant``)
    in_paper: ClassVar[bool] = True  # TailoredBench and its four baselines
    intervals: ClassVar[bool] = True  # its estimates get intervals calibrated on source models
    real_use: ClassVar[bool] = False  # has a real-use path for a new model (plan -> lm-eval -> estimate)
    # folds over source models that calibrate its intervals; None: one per source (a costly `prepare` sets one)
    interval_folds: ClassVar[int | None] = None

    def check_options(self, options: Mapping[str, Any]) -> dict:
        """The options with the defaults filled in; an unknown option or variant is a one-line error."""
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            valid = ", ".join(self.options) or "none"
            raise TailoredBenchError(f"method {self.name} has no option {unknown[0]!r}; its options: {valid}")
        checked = {**self.options, **options}
        if self.variants and checked["variant"] not in self.variants:
            raise TailoredBenchError(
                f"method {self.name} has no variant {checked['variant']!r}; choose one of {', '.join(self.variants)}"
            )
        for key, default in self.options.items():
            value = checked[key]
            if isinstance(default, bool) and not isinstance(value, bool | np.bool_):
                raise TailoredBenchError(f"option {key} of method {self.name} must be true or false, got {value!r}")
            if isinstance(default, int) and not isinstance(default, bool):
                checked[key] = check_integer(value, f"option {key} of method {self.name}")
            if isinstance(default, str) and not isinstance(value, str):
                raise TailoredBenchError(f"option {key} of method {self.name} must be a string, got {value!r}")
        return checked

    @abstractmethod
    def prepare(
        self,
        source: np.ndarray,
        budgets: Sequence[int],
        *,
        seed: int = 0,
        cache: Path | None = None,
        variants: Sequence[str] = ("",),
        **options,
    ) -> dict:
        """Work that depends only on the source models, shared by every run; ``cache`` is the run cache's
        folder (or None), ``variants`` those the runs will ask for."""

    @abstractmethod
    def run(
        self,
        prepared: Mapping,
        source: np.ndarray,
        oracles: Sequence[Mapping[int, Oracle]],
        keys: Sequence[Key],
        *,
        variants: Sequence[str] = ("",),
        **options,
    ) -> list[RunEstimates]:
        """Runs ``i = 0, 1, ...``, asking through ``oracles[i]`` (one per budget) and seeded by ``keys[i]``: one
        :data:`RunEstimates` per run, the same whichever runs and variants it is computed with."""


class EachBudget(Method):
    """A method without variants that estimates each run and budget alone: it defines :meth:`estimate`, and
    :meth:`run` keeps every estimate in [0, 1]."""

    def run(self, prepared, source, oracles, keys, **_) -> list[RunEstimates]:
        # a regression leaves [0, 1], and weights summing to 1 can add answers of 1.0 up to 1.0000000000000002
        return [
            {"": {b: np.clip(self.estimate(prepared, source, oracle, key, b), 0.0, 1.0) for b, oracle in run.items()}}
            for run, key in zip(oracles, keys, strict=True)
        ]

    @abstractmethod
    def estimate(self, prepared: Mapping, source: np.ndarray, oracle: Oracle, key: Key, budget: int) -> np.ndarray:
        """Every target's estimate at ``budget`` in the run seeded by ``key``, asking ``oracle``."""
