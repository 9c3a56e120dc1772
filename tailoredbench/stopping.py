"""The sequential mode's stopping rule: rounds of items until a target's interval is narrow enough.

Below both its simulation (:mod:`tailoredbench.sequential`) and real use (:mod:`tailoredbench.estimator`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import TailoredBenchError, check_integer
from .intervals import LEVEL, conformal_halfwidth

#: The sequential mode's defaults (not tuned): items added per round, and the most items a target is asked.
ROUND_SIZE = 5
MAX_BUDGET = 120
#: Grid step and largest value of the stopping rule's factor (:meth:`StoppingRule.calibrate`).
FACTOR_STEP = 0.01
MAX_FACTOR = 100.0


def round_budgets(g_size: int, step: int, max_budget: int, n_items: int | None = None) -> tuple[int, ...]:
    """The probe's size after each round of the sequential mode: ``g_size + step``, ``+ 2 step``, ... ``max_budget``.

    ``n_items``, the benchmark's item count, if known: ``max_budget`` may not exceed it.
    """
    g_size, step = check_integer(g_size, "g_size", 1), check_integer(step, "round size", 1)
    max_budget = check_integer(max_budget, "max budget")
    if max_budget <= g_size:
        raise TailoredBenchError(f"the maximum budget {max_budget} must exceed the G-set size {g_size}")
    if n_items is not None and max_budget > n_items:
        raise TailoredBenchError(f"the maximum budget {max_budget} exceeds the item count {n_items}")
    return (*range(g_size + step, max_budget, step), max_budget)


def check_precision(precision) -> float:
    """A requested precision (the interval's half-width), or a one-line error."""
    if isinstance(precision, bool) or not isinstance(precision, (int, float, np.integer, np.floating)):
        raise TailoredBenchError(f"the precision must be a number, got {precision!r}")
    if not 0 < precision < 1:
        raise TailoredBenchError(f"the precision must be between 0 and 1 (a half-width), got {precision}")
    return float(precision)


def stopping_round(halfwidths: np.ndarray, precision: float) -> np.ndarray:
    """Per row of ``halfwidths`` (targets x rounds): the first round at most ``precision``, else the last."""
    met = np.asarray(halfwidths) <= precision
    return np.where(met.any(axis=1), met.argmax(axis=1), met.shape[1] - 1)


@dataclass(frozen=True)
class StoppingRule:
    """When the sequential mode stops, and the interval it then reports, calibrated on source models.

    After round ``r`` (``budgets[r]`` items) a target's interval is ``estimate +/- factor * q[r] * difficulty``,
    ``q[r]`` the fixed-budget conformal quantile. Stopping when an interval first looks narrow favours
    intervals too narrow by chance (optional stopping), so ``factor`` is the smallest (on a grid of
    :data:`FACTOR_STEP`) whose intervals cover, at their stopping rounds, a ``level`` share (the conformal
    rank) of source models playing targets.
    """

    budgets: tuple[int, ...]  # the probe's size after each round
    q: tuple[float, ...]
    factor: float
    precision: float
    level: float = LEVEL

    @classmethod
    def calibrate(cls, pseudo: dict, precision: float, level: float = LEVEL) -> StoppingRule:
        """The rule from ``{budget: PseudoTargets}`` of the growing probe (the same pseudo-targets at every budget)."""
        precision = check_precision(precision)
        budgets = tuple(sorted(pseudo))
        q = np.array([pseudo[b].quantile(level=level) for b in budgets])
        errors = np.column_stack([pseudo[b].errors for b in budgets])
        scales = q * np.column_stack([pseudo[b].difficulty for b in budgets])
        rank = min(int(np.ceil((len(errors) + 1) * level)), len(errors))
        rows = np.arange(len(errors))
        # beyond the cap all stop at the last round and coverage only grows with the factor
        with np.errstate(divide="ignore", invalid="ignore"):
            last = errors[:, -1] / scales[:, -1]
            # exact at the last round (every item asked) gives 0 / 0 for every pseudo-target, not a warning
            cap = max(precision / scales.min(), float(np.max(last, initial=0.0, where=~np.isnan(last))))
        cap = min(cap, MAX_FACTOR) + FACTOR_STEP
        for factor in np.arange(1, int(np.ceil(cap / FACTOR_STEP)) + 1) * FACTOR_STEP:
            halfwidths = factor * scales
            stop = stopping_round(halfwidths, precision)
            if (errors[rows, stop] <= halfwidths[rows, stop]).sum() >= rank:
                break
        return cls(budgets, tuple(float(v) for v in q), round(float(factor), 10), float(precision), float(level))

    def halfwidths(self, difficulty: np.ndarray) -> np.ndarray:
        """Half-widths of the intervals after every round, from the difficulties (targets x rounds)."""
        return self.factor * np.asarray(self.q) * np.asarray(difficulty, dtype=float)

    def halfwidth(self, budget: int, difficulty: float) -> float:
        """The half-width of one target's interval after the round of ``budget`` items."""
        if budget not in self.budgets:
            raise TailoredBenchError(
                f"{budget} items is not a round of this rule ({', '.join(map(str, self.budgets))})"
            )
        return self.factor * self.q[self.budgets.index(budget)] * float(difficulty)


#: Grid step and largest value of the ability rule's threshold on the posterior standard error.
THRESHOLD_STEP = 0.005
MAX_THRESHOLD = 1.0


@dataclass(frozen=True)
class AbilityRule:
    """ATLAS's stopping rule (Li et al. 2025, arXiv 2511.04689): stop at the first round whose ability's posterior
    standard error is at most ``threshold``; the interval is then ``estimate +/- halfwidth``.

    :meth:`calibrate` chooses the threshold on source models playing targets: on a grid of :data:`THRESHOLD_STEP`,
    the largest (fewest items) whose conformal quantile of the errors at the stopping rounds, ``halfwidth``, is
    at most the precision, as is every smaller one's; with none, the smallest. A threshold given is used as it is.
    """

    budgets: tuple[int, ...]  # the items asked after each round
    threshold: float
    halfwidth: float
    precision: float
    level: float = LEVEL

    @classmethod
    def calibrate(
        cls,
        budgets,
        errors: np.ndarray,
        se: np.ndarray,
        precision: float,
        level: float = LEVEL,
        threshold: float | None = None,
    ) -> AbilityRule:
        """The rule from pseudo-targets' absolute errors and standard errors after every round (targets x rounds)."""
        precision = check_precision(precision)
        errors, se = np.asarray(errors, dtype=float), np.asarray(se, dtype=float)
        rows = np.arange(len(errors))

        def halfwidth(tau: float) -> float:
            return conformal_halfwidth(errors[rows, stopping_round(se, tau)], level)

        if threshold is None:
            grid = np.arange(1, round(MAX_THRESHOLD / THRESHOLD_STEP) + 1) * THRESHOLD_STEP
            # up to the first that fails: the largest that passes, not chosen among chance passes above a failure
            passing = [halfwidth(t) <= precision for t in grid]
            threshold = float(grid[max(passing.index(False) if False in passing else len(grid), 1) - 1])
        elif isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.number)) or not threshold > 0:
            raise TailoredBenchError(f"the standard-error threshold must be a positive number, got {threshold!r}")
        threshold = round(float(threshold), 10)
        return cls(tuple(int(b) for b in budgets), threshold, halfwidth(threshold), precision, float(level))

    def stopping_rounds(self, se: np.ndarray) -> np.ndarray:
        """Per target (rows of ``se``, targets x rounds): the round it stops at."""
        return stopping_round(se, self.threshold)
