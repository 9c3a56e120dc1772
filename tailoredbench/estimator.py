"""TailoredBench for real use: fit on the source models once, then evaluate any number of new models.

The estimator stores functions of the sources only; what concerns one new model travels in its
:class:`~tailoredbench.tailored.Probe`, so each model gets the same answer in any order or alone.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from . import rng
from .datasets.matrix import ResponseMatrix, numeric_values
from .errors import TailoredBenchError, check_integer
from .intervals import LEVEL, check_level, difficulty, interval, pseudo_targets, scales, unlikeness
from .methods.tailored_plus import stack_weights
from .methods.tailoredbench import TailoredBenchMethod
from .stopping import MAX_BUDGET, ROUND_SIZE, StoppingRule, check_precision, round_budgets
from .tailored import (
    Probe,
    calibrated_estimate,
    check_budget,
    combine,
    components,
    g_set,
    matrix_sha256,
    n_set,
    native_sources,
    needed,
)

#: The estimates :class:`TailoredBench` can give from one probe.
ESTIMATORS = ("calibrated", "plus")


class TailoredBench:
    """Fit on source models, then plan and estimate new models, one :class:`Probe` each.

    Parameters
    ----------
    g_size : int, default 10
        Size of the G-set (the first items every model answers).
    distance : {"manhattan", "euclidean", "cosine", "correlation"}
    random_state : int, sequence of int, Generator or None, default 0
        Seeds the G-set and the N-set: an int ``s`` (or ``(s, r)``) replays run 0 (or ``r``) of a simulation.
    estimator : {"calibrated", "plus"}, default "calibrated"
        The paper's calibrated estimate, or TailoredBench+'s (:mod:`tailoredbench.tailored`).

    Fitting sets ``source_``, ``items_`` (the item ids a pandas Series of results is read by), ``g_set_``
    and ``key_`` (the random key drawn from ``random_state``).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> source = (rng.random((20, 60)) < 0.6).astype(float)  # SYNTHETIC data
    >>> model = (rng.random(60) < 0.6).astype(float)
    >>> tb = TailoredBench(g_size=5, random_state=0).fit(source)
    >>> probe = tb.plan(model[tb.g_set_], budget=12)  # ask the model probe.n_set next
    >>> probe.budget, len(probe.n_set)
    (12, 7)
    >>> estimate = tb.estimate(probe, model[probe.items])
    >>> low, high = tb.interval(probe, model[probe.items], 0.9)
    >>> bool(0.0 <= low <= estimate <= high <= 1.0)
    True
    """

    def __init__(self, g_size: int = 10, distance: str = "manhattan", random_state=0, estimator: str = "calibrated"):
        self.g_size = g_size
        self.distance = distance
        self.random_state = random_state
        self.estimator = estimator

    def get_params(self, deep: bool = True) -> dict:
        """The constructor's parameters, as scikit-learn estimators give them."""
        return {k: getattr(self, k) for k in ("g_size", "distance", "random_state", "estimator")}

    def set_params(self, **params) -> TailoredBench:
        """Set constructor parameters (refit afterwards); an unknown one is an error."""
        for key, value in params.items():
            if key not in self.get_params():
                raise TailoredBenchError(f"TailoredBench has no parameter {key!r}")
            setattr(self, key, value)
        return self

    def fit(self, source) -> TailoredBench:
        """Choose the G-set from the source models' full results: a :class:`ResponseMatrix`, an array or a
        DataFrame (models x items, its columns the item ids)."""
        TailoredBenchMethod().check_options({"g_size": self.g_size, "distance": self.distance})
        if self.estimator not in ESTIMATORS:
            raise TailoredBenchError(f"unknown estimator {self.estimator!r}; choose calibrated or plus")
        matrix = source if isinstance(source, ResponseMatrix) else ResponseMatrix(source, source="source models")
        if matrix.n_models < 2:
            raise TailoredBenchError("at least 2 source models are needed")
        self.key_ = rng.as_key(self.random_state)
        self.source_ = matrix.values
        self.items_ = matrix.items
        self.g_set_ = g_set(
            self.source_, self.g_size, distance=self.distance, random_state=rng.stream(self.key_, rng.G_SET)
        )
        # functions of the sources alone, computed on first use (twice from two threads: the same value)
        self._source_fits: dict[tuple, object] = {}
        return self

    def _fitted(self) -> None:
        if not hasattr(self, "g_set_"):
            raise TailoredBenchError("this TailoredBench is not fitted yet: call fit(source) first")

    def _source_fit(self, key: tuple, compute):
        if key not in self._source_fits:
            self._source_fits[key] = compute()
        return self._source_fits[key]

    def plan(self, g_results, budget: int, target_index: int = 0) -> Probe:
        """A new model's probe, from its results on :attr:`g_set_`: ask it ``probe.n_set`` next.

        ``target_index`` only picks the random stream: target ``t`` of a simulation is replayed exactly.
        """
        return self.rounds(g_results, [budget], target_index)[0]

    def rounds(self, g_results, budgets, target_index: int = 0) -> list[Probe]:
        """The sequential mode's growing probe: one :class:`Probe` per budget, each holding the previous one's items.

        ``budgets``: the probe's sizes after each round (a :class:`StoppingRule`'s). The items depend only
        on the G-set results, so every round is planned at once; :meth:`precise` says when to stop.
        """
        self._fitted()
        target_index = check_integer(target_index, "target_index", 0)
        g_results = self._answers(g_results, self.g_set_, "G-set").reshape(1, -1)
        _, neighbours = native_sources(self.source_[:, self.g_set_], g_results, distance=self.distance)
        native = neighbours[0]  # the model's native sources
        out: list[Probe] = []
        for budget in sorted(budgets):
            check_budget(budget, len(self.g_set_), self.source_.shape[1])
            gen = rng.stream(self.key_, rng.N_SET, target_index, budget)
            asked = out[-1].n_set if out else ()
            out.append(
                n_set(self.source_, native, self.g_set_, budget, distance=self.distance, random_state=gen, asked=asked)
            )
        planned_on = self._source_sha256()
        return [replace(probe, source_sha256=planned_on) for probe in out]

    def _source_sha256(self) -> str:
        return self._source_fit(("sha256",), lambda: matrix_sha256(self.source_))

    def stopping_rule(
        self, precision: float, max_budget: int = MAX_BUDGET, step: int = ROUND_SIZE, level: float = LEVEL
    ) -> StoppingRule:
        """The sequential mode's :class:`~tailoredbench.stopping.StoppingRule` for ``precision`` (a half-width),
        calibrated on source models playing the new model, in rounds of ``step`` items up to ``max_budget``."""
        self._fitted()
        precision = check_precision(precision)
        level = check_level(level)
        budgets = round_budgets(len(self.g_set_), step, max_budget, self.source_.shape[1])
        for budget in budgets:
            check_budget(budget, len(self.g_set_), self.source_.shape[1])

        def calibrate():
            return pseudo_targets(
                self._method, self.source_, budgets, seed=self.key_[0], **self._options(budgets, True)
            )

        pseudo = self._source_fit(("rounds", budgets, level), calibrate)
        return StoppingRule.calibrate(pseudo, precision, level)

    @property
    def _method(self) -> str:
        return "tailored_plus" if self.estimator == "plus" else "tailoredbench"

    def _options(self, budgets: tuple, grow: bool = False) -> dict:
        """The method options that replay this estimator's probes (and weights) on source models."""
        options = {"g_size": len(self.g_set_), "distance": self.distance, **({"grow": True} if grow else {})}
        if self.estimator == "plus":
            options["weights"] = self._weights(budgets, grow)
        return options

    def _weights(self, budgets: tuple, grow: bool = False) -> np.ndarray:
        """TailoredBench+'s stacking weights for these budgets, fitted on the sources."""
        options: dict = {"g_size": len(self.g_set_), "distance": self.distance, "seed": self.key_[0], "grow": grow}
        return self._source_fit(("stack", budgets, grow), lambda: stack_weights(self.source_, list(budgets), **options))

    def _answers(self, values, items, what: str) -> np.ndarray:
        """A model's 0/1 results on ``items`` (positions): an array in that order, or a Series or one-row
        DataFrame read by item id."""
        items = np.asarray(items)
        if isinstance(values, pd.DataFrame):
            if len(values) != 1:
                raise TailoredBenchError(f"the {what} results are a DataFrame of {len(values)} rows; give one row")
        if isinstance(values, pd.Series | pd.DataFrame):  # align by item id, never by position
            labels = values.index if isinstance(values, pd.Series) else values.columns
            ids = [self.items_[i] for i in items]
            if not labels.is_unique:
                raise TailoredBenchError(f"the {what} results repeat an item id")
            missing = [i for i in ids if i not in labels]
            if missing:
                raise TailoredBenchError(f"the {what} results lack item {missing[0]!r} (of {len(ids)})")
            values = values.reindex(ids) if isinstance(values, pd.Series) else values.reindex(columns=ids)
        array = numeric_values(values, f"the {what} results").reshape(-1)
        if len(array) != len(items):
            raise TailoredBenchError(f"expected {len(items)} {what} results, got {len(array)}")
        bad = ~np.isin(array, (0.0, 1.0))
        if bad.any():
            raise TailoredBenchError(f"{what} result {array[bad][0]!r} at position {int(np.argmax(bad))} is not 0/1")
        return array

    def _results(self, probe: Probe, results) -> np.ndarray:
        self._fitted()
        if not np.array_equal(probe.g_set, self.g_set_):
            raise TailoredBenchError("this probe was planned by an estimator with another G-set")
        if probe.source_sha256 != self._source_sha256():
            raise TailoredBenchError(
                "this probe was planned on other source models (or another order of them): plan it with this estimator"
            )
        return self._answers(results, probe.items, "probe")

    def estimate(self, probe: Probe, results, *, rule: StoppingRule | None = None) -> float:
        """The estimated full-benchmark accuracy from the model's ``results`` on ``probe.items``.

        ``rule``: the probe is a round of the sequential mode (:meth:`rounds`), read as the rule's was.
        """
        return self._estimate(probe, self._results(probe, results), rule)

    def _every_item_asked(self, probe: Probe) -> bool:
        return len(np.unique(probe.items)) == self.source_.shape[1]

    def _estimate(self, probe: Probe, y: np.ndarray, rule: StoppingRule | None = None) -> float:
        if self._every_item_asked(probe):  # nothing left to estimate
            return float(y.mean())
        native_mean = self.source_[probe.native_sources].mean(axis=0)
        if self.estimator == "calibrated":
            return calibrated_estimate(native_mean, probe, y)
        weights = self._weights((probe.budget,)) if rule is None else self._weights(rule.budgets, grow=True)
        parts = components(self.source_, self.source_.mean(axis=1), native_mean, probe, y, needed(["stacked"]))
        return combine(parts, "stacked", weights)

    def interval(
        self, probe: Probe, results, level: float = LEVEL, *, rule: StoppingRule | None = None
    ) -> tuple[float, float]:
        """An interval around :meth:`estimate` that holds the true accuracy with ``level`` probability.

        Calibrated on source models playing the new model and scaled by this model's difficulty
        (:mod:`tailoredbench.intervals`); with a ``rule``, the rule's interval after this round.
        """
        level = check_level(level)
        value, halfwidth = self._halfwidth(probe, self._results(probe, results), level, rule)
        low, high = interval(value, halfwidth)
        return float(low), float(high)

    def precise(self, probe: Probe, results, rule: StoppingRule) -> bool:
        """Whether the sequential mode stops after this round: its half-width is at most ``rule.precision``."""
        return self._halfwidth(probe, self._results(probe, results), rule.level, rule)[1] <= rule.precision

    def _halfwidth(self, probe: Probe, y: np.ndarray, level: float, rule: StoppingRule | None) -> tuple[float, float]:
        """The estimate and its interval's half-width (before clipping to [0, 1])."""
        value = self._estimate(probe, y, rule)
        if self._every_item_asked(probe):
            return value, 0.0
        hardness = difficulty(value, unlikeness(self.source_, probe.items, y), probe.budget)
        if rule is not None:
            return value, rule.halfwidth(probe.budget, hardness)

        def calibrate():
            options = self._options((probe.budget,))
            return scales(self._method, self.source_, [probe.budget], level, seed=self.key_[0], **options)[probe.budget]

        q = self._source_fit(("interval", probe.budget, level), calibrate)
        return value, q * hardness
