"""The interface every estimation method implements, and how a method's options are checked.

A method answers, inside a simulation, the questions a user answers with a real
model: which items to ask, and what the estimate is from the answers. It sees the
target models only through :class:`~tailoredbench.oracle.Oracle` objects, which reveal
the items asked and refuse more than the budget.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from ..errors import TailoredBenchError, check_integer
from ..oracle import Oracle

#: The kinds of method: TailoredBench's own probe, or a baseline it is compared with.
KINDS = ("tailored", "baseline")


def split_name(name: str) -> tuple[str, str | None]:
    """``"base[variant]"`` -> ``("base", "variant")``; a plain name has no variant.

    Examples
    --------
    >>> split_name("tailored_plus[mix]"), split_name("random")
    (('tailored_plus', 'mix'), ('random', None))
    """
    if name.endswith("]") and "[" in name:
        base, variant = name[:-1].split("[", 1)
        return base, variant
    return name, None


class Method(ABC):
    """An estimation method: ``prepare`` once on the source models, then ``run`` once per repetition.

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
    seeded_prepare : bool
        Its ``prepare`` draws random numbers, from the ``seed`` it is given (a simulation's).
    """

    name: ClassVar[str]
    kind: ClassVar[str]
    options: ClassVar[Mapping[str, Any]] = MappingProxyType({})
    variants: ClassVar[tuple[str, ...]] = ()
    in_paper: ClassVar[bool] = True
    intervals: ClassVar[bool] = True
    real_use: ClassVar[bool] = False
    interval_folds: ClassVar[int | None] = None
    seeded_prepare: ClassVar[bool] = False

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
            if isinstance(default, bool) and not isinstance(value, (bool, np.bool_)):
                raise TailoredBenchError(f"option {key} of method {self.name} must be true or false, got {value!r}")
            if isinstance(default, int) and not isinstance(default, bool):
                checked[key] = check_integer(value, f"option {key} of method {self.name}")
            if isinstance(default, str) and not isinstance(value, str):
                raise TailoredBenchError(f"option {key} of method {self.name} must be a string, got {value!r}")
        return checked

    @abstractmethod
    def prepare(self, source: np.ndarray, budgets: Sequence[int], **options) -> dict:
        """Work that depends only on the source models (distances, an IRT fit), shared by every run."""

    def prepare_seeded(self, source: np.ndarray, budgets: Sequence[int], seed: int, **options) -> dict:
        """:meth:`prepare`, given a simulation's ``seed`` if it draws random numbers (``seeded_prepare``)."""
        if self.seeded_prepare:
            options["seed"] = seed
        return self.prepare(source, budgets, **options)

    def prepare_on_worker(self, source: np.ndarray, budgets: Sequence[int], seed: int, cache, **options) -> dict:
        """:meth:`prepare_seeded` in a worker, caching runs in the caller's run-cache folder ``cache``.

        A worker keeps the environment it started with, so it is told the caller's folder
        rather than reading ``$TAILOREDBENCH_RUN_CACHE`` (:mod:`tailoredbench.run_cache`) itself.
        """
        return {**self.prepare_seeded(source, budgets, seed, **options), "run_cache": cache}

    @abstractmethod
    def run(
        self, prepared: Mapping, source: np.ndarray, oracles: Mapping[int, Oracle], key: Sequence[int], **options
    ) -> dict[int, np.ndarray]:
        """One repetition: ``{budget: estimates of every target}``; ``key`` = (seed, run) seeds every choice."""

    def run_variants(
        self,
        prepared: Mapping,
        source: np.ndarray,
        oracles: Mapping[int, Oracle],
        key: Sequence[int],
        variants: Sequence[str],
        **options,
    ) -> dict[str, dict[int, np.ndarray]]:
        """Several variants from one repetition: ``{variant: {budget: estimates}}``.

        A method whose variants share their probe overrides this to ask it once.
        """
        return {v: self.run(prepared, source, oracles, key, **{**options, "variant": v}) for v in variants}

    def run_many(
        self,
        prepared: Mapping,
        source: np.ndarray,
        oracles: Sequence[Mapping[int, Oracle]],
        keys: Sequence[Sequence[int]],
        **options,
    ) -> list[dict[int, np.ndarray]]:
        """:meth:`run` of several repetitions (the ``i``-th asks through ``oracles[i]``, seeded by ``keys[i]``).

        The same estimates as one by one; a method that can share work between repetitions overrides it.
        """
        return [self.run(prepared, source, run, key, **options) for run, key in zip(oracles, keys, strict=True)]

    def run_variants_many(
        self,
        prepared: Mapping,
        source: np.ndarray,
        oracles: Sequence[Mapping[int, Oracle]],
        keys: Sequence[Sequence[int]],
        variants: Sequence[str],
        **options,
    ) -> list[dict[str, dict[int, np.ndarray]]]:
        """:meth:`run_variants` of several repetitions, as :meth:`run_many`."""
        return [
            self.run_variants(prepared, source, run, key, variants, **options)
            for run, key in zip(oracles, keys, strict=True)
        ]
