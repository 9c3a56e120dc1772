"""The arithmetic of an interval for every estimate, calibrated on source models only.

Split-conformal over models (Vovk et al., *Algorithmic Learning in a Random World*, 2005; Lei et al., JASA
2018), each source in turn playing the target (:mod:`tailoredbench.intervals`), with scores normalised
(Papadopoulos et al., 2008) by a target's :func:`difficulty`: the sampling error of its estimate plus its
:func:`unlikeness` to its nearest sources. Per budget, the conformal quantile ``q`` of ``|error| / difficulty``
gives the interval ``estimate +/- q * difficulty``, clipped to [0, 1]; of the :data:`NORMALISATIONS`
compared on left-out sources (``reports/beyond/``), this sum gave the narrowest intervals.

The sequential mode's stopping rule (:class:`StoppingRule`) asks rounds of items until a target's interval
is narrow enough; it sits below both its simulation (:mod:`tailoredbench.sequential`) and real use
(:mod:`tailoredbench.estimator`).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from . import rng
from .errors import TailoredBenchError, check_integer

LEVEL = 0.9
#: Closest sources that set a target's difficulty.
NEAREST = 5


def unlikeness(source: np.ndarray, items: np.ndarray, results: np.ndarray, nearest: int = NEAREST) -> float:
    """The mean share of ``items`` on which ``results`` differ from each of the ``nearest`` closest sources."""
    items = np.asarray(items, dtype=np.int64)
    if len(items) == 0:
        return 1.0
    disagreement = np.abs(source[:, items] - np.asarray(results, dtype=float)).mean(axis=1)
    return float(np.sort(disagreement)[: min(nearest, len(disagreement))].mean())


def sampling_error(estimate, n_items):
    """The standard error ``sqrt(e (1 - e) / n)`` of an accuracy ``e`` read from ``n`` items."""
    estimate = np.clip(np.asarray(estimate, dtype=float), 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.sqrt(estimate * (1 - estimate) / np.asarray(n_items, dtype=float))
    return float(value) if value.ndim == 0 else value


def difficulty(estimate, unlike, n_items):
    """How hard a target is to estimate: ``(sampling error + 1 / n) + (unlike + 1 / n)``, 1 where ``n`` is 0."""
    n_items = np.asarray(n_items, dtype=float)
    with np.errstate(divide="ignore"):
        value = sampling_error(estimate, n_items) + unlike + 2 / n_items
    value = np.where(n_items > 0, value, 1.0)
    return float(value) if value.ndim == 0 else value


#: The scales of ``(estimate, unlikeness, n_items)`` compared on source models; :func:`difficulty` is in use.
NORMALISATIONS = {
    "none": lambda estimate, unlike, n: np.ones_like(np.asarray(unlike, dtype=float)),
    "unlikeness": lambda estimate, unlike, n: unlike + 1 / n,
    "sampling error": lambda estimate, unlike, n: sampling_error(estimate, n) + 1 / n,
    "geometric mean": lambda estimate, unlike, n: np.sqrt((sampling_error(estimate, n) + 1 / n) * (unlike + 1 / n)),
    "sum": difficulty,
}
IN_USE = "sum"


@dataclass(frozen=True)
class PseudoTargets:
    """Source models estimated as targets, at one budget."""

    errors: np.ndarray  # absolute errors of the estimates
    estimates: np.ndarray
    unlike: np.ndarray  # see unlikeness()
    n_items: np.ndarray  # items asked of each

    def scale(self, normalisation: str = IN_USE) -> np.ndarray:
        """Their scale under one of :data:`NORMALISATIONS` (by default their :func:`difficulty`)."""
        return NORMALISATIONS[normalisation](self.estimates, self.unlike, self.n_items)

    @property
    def difficulty(self) -> np.ndarray:
        return self.scale()

    def quantile(self, normalisation: str = IN_USE, level: float = LEVEL) -> float:
        """The conformal quantile ``q`` of ``errors / scale``: a target's half-width is ``q`` times its scale."""
        return conformal_halfwidth(self.errors / self.scale(normalisation), level)

    def width(self, normalisation: str = IN_USE, level: float = LEVEL) -> float:
        """Mean width ``2 q mean(scale)`` (before clipping) of their intervals under one of :data:`NORMALISATIONS`."""
        return 2 * self.quantile(normalisation, level) * float(np.mean(self.scale(normalisation)))


def model_folds(n_models: int, folds: int, repeats: int, seed: int, stream: int = rng.INTERVAL_FOLDS):
    """Yield ``(index, kept, held_out)``: ``repeats`` seeded splits of the models into ``folds``.

    Examples
    --------
    >>> [(i, len(k), len(h)) for i, k, h in model_folds(5, 2, 1, seed=0)]
    [(0, 2, 3), (1, 3, 2)]
    """
    for repeat in range(repeats):
        order = rng.stream((seed, rng.PSEUDO_RUN), stream, repeat).permutation(n_models)
        for fold, held_out in enumerate(np.array_split(order, folds)):
            yield repeat * folds + fold, np.setdiff1d(order, held_out), held_out


def folds_by_kept(n_models: int, folds: int, repeats: int, seed: int, stream: int = rng.INTERVAL_FOLDS) -> list:
    """:func:`model_folds` grouped by the models they keep, ``[(kept, [(index, held_out), ...]), ...]``, so that
    work on the kept models is done once per group; :func:`in_fold_order` puts the results back in fold order.

    Examples
    --------
    >>> [(len(kept), [i for i, _ in held]) for kept, held in folds_by_kept(3, 3, 2, seed=0)]
    [(2, [0, 3]), (2, [1, 4]), (2, [2, 5])]
    """
    groups: dict[bytes, tuple[np.ndarray, list]] = {}
    for index, kept, held_out in model_folds(n_models, folds, repeats, seed, stream):
        groups.setdefault(kept.tobytes(), (kept, []))[1].append((index, held_out))
    return list(groups.values())


def in_fold_order(groups: list, results) -> list:
    """Results computed per group of :func:`folds_by_kept` (one per held-out fold) in fold order."""
    by_index = {
        index: result
        for (_, held), per_fold in zip(groups, results, strict=True)
        for (index, _), result in zip(held, per_fold, strict=True)
    }
    return [by_index[index] for index in sorted(by_index)]


def check_level(level) -> float:
    """An interval's level as a float in (0, 1), or a one-line error (a string, a bool or NaN is none)."""
    if isinstance(level, bool) or not isinstance(level, numbers.Real) or not 0 < float(level) < 1:
        raise TailoredBenchError(f"interval level must be a number between 0 and 1, got {level!r}")
    return float(level)


def conformal_halfwidth(errors: np.ndarray, level: float = LEVEL) -> float:
    """The split-conformal quantile ``q`` of absolute errors (or scores), ``P(|error| <= q) >= level``; with too
    few errors for the level, the largest."""
    level = check_level(level)
    errors = np.sort(np.asarray(errors, dtype=float))
    rank = min(int(np.ceil((len(errors) + 1) * level)), len(errors))
    return float(errors[rank - 1])


def interval(estimate, halfwidth) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)``: ``estimate -/+ halfwidth`` (one per estimate, or one for all) clipped to [0, 1].

    Examples
    --------
    >>> low, high = interval(np.array([0.5, 0.98]), 0.05)
    >>> np.round(low, 2).tolist(), np.round(high, 2).tolist()
    ([0.45, 0.93], [0.55, 1.0])
    """
    estimate = np.asarray(estimate, dtype=float)
    return np.clip(estimate - halfwidth, 0.0, 1.0), np.clip(estimate + halfwidth, 0.0, 1.0)


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
