"""The interface every estimation method implements, and how a method's options are checked.

A method answers, inside a simulation, the questions a user answers with a real
model: which items to ask, and what the estimate is from the answers. It sees the
target models only through :class:`~tailoredbench.oracle.Oracle` objects, which reveal
the items asked and refuse more than the budget.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
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

    Class attributes declare what a method is and can do; nothing is found by its
    name's spelling or by ``hasattr``.

    Attributes
    ----------
    name : str
        Its name in the registry, the CLI and the reports.
    kind : {"tailored", "baseline"}
        ``"tailored"``: it asks TailoredBench's probe (G-set, then N-set), so a budget
        must exceed the G-set size.
    options : mapping of str to default
        Every option it takes, with its default; any other is refused, naming these.
    variants : tuple of str
        Named variants (``name[variant]``), the option ``variant``; empty if none.
    in_paper : bool
        One of the paper's methods (TailoredBench and its four baselines).
    intervals : bool
        Its estimates get intervals calibrated on source models (:mod:`tailoredbench.intervals`).
    real_use : bool
        Has a real-use path for a new model (plan -> lm-eval -> estimate).
    interval_folds : int or None
        Folds over source models that calibrate its intervals; ``None`` leaves one
        source out at a time (a method whose ``prepare`` is costly sets a number).
    """

    name: ClassVar[str]
    kind: ClassVar[str]
    options: ClassVar[Mapping[str, Any]] = MappingProxyType({})
    variants: ClassVar[tuple[str, ...]] = ()
    in_paper: ClassVar[bool] = True
    intervals: ClassVar[bool] = True
    real_use: ClassVar[bool] = False
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
        """Work that depends only on the source models (distances, an IRT fit), shared by every run.

        ``seed`` seeds any random choice made here; ``cache`` is the run cache's folder
        (:mod:`tailoredbench.run_cache`), or None; ``variants`` are those the runs will ask for.
        """

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
        """Runs ``i = 0, 1, ...``, asking through ``oracles[i]`` (one per budget) and seeded by ``keys[i]``.

        Returns one :data:`RunEstimates` per run, holding each of ``variants``: a run's
        numbers are the same whichever runs and variants it is computed with.
        """


def each_run(
    one_run: Callable[[Mapping[int, Oracle], Key], dict[int, np.ndarray]], oracles, keys
) -> list[RunEstimates]:
    """:meth:`Method.run` of a method without variants that treats each run alone."""
    return [{"": one_run(run, key)} for run, key in zip(oracles, keys, strict=True)]
