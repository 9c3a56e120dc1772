"""The interface every estimation method implements, and how a method's options are checked.

A method chooses the items to ask and estimates from the answers, seeing targets only through
:class:`~tailoredbench.oracle.Oracle` objects.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from ..errors import TailoredBenchError, check_integer
from ..oracle import Oracle

#: The kinds of method: TailoredBench's own probe, or a baseline it is compared with.
KINDS = ("tailored", "baseline")
#: A run's random key: (seed, run).
Key = tuple[int, int]
#: One run's estimates: ``{variant: {budget: estimate of every target}}``; "" names a method without variants.
RunEstimates = dict[str, dict[int, np.ndarray]]


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
