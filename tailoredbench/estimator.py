"""TailoredBench for real use: fit on the source models once, then evaluate any number of new models.

Fitting learns from the source models only (the G-set and, on demand, TailoredBench+'s
stacking weights and the intervals' calibration, all functions of the sources). What
concerns one new model is never stored on the estimator: :meth:`TailoredBench.plan`
returns its :class:`~tailoredbench.tailored.Probe`, and :meth:`~TailoredBench.estimate`
and :meth:`~TailoredBench.interval` take that probe and the model's results. One fitted
estimator serves many models, in any order, and gives each the same answer as alone.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import rng
from .conformal import LEVEL, check_level, difficulty, interval, unlikeness
from .datasets.matrix import ResponseMatrix, numeric_values
from .distances import check_distance
from .errors import TailoredBenchError, check_integer
from .intervals import pseudo_targets, scales
from .methods.tailored_plus import stack_weights
from .methods.tailoredbench import TailoredBenchMethod
from .stacking import combine, components, needed
from .stopping import MAX_BUDGET, ROUND_SIZE, StoppingRule, check_precision, round_budgets
from .tailored import Probe, calibrated_estimate, check_budget, g_set, n_set, native_sources

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
        Seeds the G-set and the N-set. An int ``s`` (or ``(s, r)``) replays run 0
        (or ``r``) of a simulation with seed ``s``.
    estimator : {"calibrated", "plus"}, default "calibrated"
        The paper's calibrated estimate, or TailoredBench+'s
        (:mod:`tailoredbench.stacking`) from the same probe.

    Attributes
    ----------
    source_ : ndarray of shape (n_sources, n_items)
    items_ : tuple
        The item ids (a :class:`ResponseMatrix`'s, else 0..n_items-1): a pandas Series of
        results is read by these labels.
    g_set_ : ndarray of int
        The G-set.
    key_ : tuple of int
        The random key drawn from ``random_state`` at :meth:`fit`.

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
        """Check the parameters and choose the G-set from the source models' full results (n_sources x n_items).

        ``source``: a :class:`ResponseMatrix`, an array, or a pandas DataFrame (models x items, its
        columns the item ids by which a Series of results is read).
        """
        TailoredBenchMethod().check_options({"g_size": self.g_size, "distance": self.distance})
        check_distance(self.distance)
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
        # Functions of the sources alone, computed on first use per budget (and level), never per model.
        # (computing one twice, e.g. from two threads, gives the same value: no lock is needed)
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

        ``target_index`` only picks the random stream, so that target ``t`` of a
        simulation can be replayed exactly.
        """
        self._fitted()
        target_index = check_integer(target_index, "target_index", 0)
        g_results = self._answers(g_results, self.g_set_, "G-set").reshape(1, -1)
        check_budget(budget, len(self.g_set_), self.source_.shape[1])
        _, neighbours = native_sources(self.source_[:, self.g_set_], g_results, distance=self.distance)
        gen = rng.stream(self.key_, rng.N_SET, target_index, budget)
        return n_set(self.source_, neighbours[0], self.g_set_, budget, distance=self.distance, random_state=gen)

    def rounds(self, g_results, budgets, target_index: int = 0) -> list[Probe]:
        """The sequential mode's growing probe: one :class:`Probe` per budget, each holding the previous one's items.

        ``budgets`` are the probe's sizes after each round (a :class:`StoppingRule`'s
        ``budgets``). Which items come next depends only on the G-set results, so every
        round can be planned at once; when to stop depends on the answers
        (:meth:`precise`). The first round is :meth:`plan`'s probe of that budget.
        """
        self._fitted()
        target_index = check_integer(target_index, "target_index", 0)
        g_results = self._answers(g_results, self.g_set_, "G-set").reshape(1, -1)
        _, neighbours = native_sources(self.source_[:, self.g_set_], g_results, distance=self.distance)
        out: list[Probe] = []
        for budget in sorted(budgets):
            check_budget(budget, len(self.g_set_), self.source_.shape[1])
            gen = rng.stream(self.key_, rng.N_SET, target_index, budget)
            asked = out[-1].n_set if out else ()
            out.append(
                n_set(
                    self.source_,
                    neighbours[0],
                    self.g_set_,
                    budget,
                    distance=self.distance,
                    random_state=gen,
                    asked=asked,
                )
            )
        return out

    def stopping_rule(
        self, precision: float, max_budget: int = MAX_BUDGET, step: int = ROUND_SIZE, level: float = LEVEL
    ) -> StoppingRule:
        """The sequential mode's rule for ``precision`` (a half-width), calibrated on the source models alone.

        Source models, each in turn playing the new model, are asked the growing probe in
        rounds of ``step`` items up to ``max_budget``, and stopped by the rule; see
        :class:`~tailoredbench.stopping.StoppingRule`. Computed once per setting.
        """
        self._fitted()
        precision = check_precision(precision)
        level = check_level(level)
        budgets = round_budgets(len(self.g_set_), step, max_budget, self.source_.shape[1])
        for budget in budgets:
            check_budget(budget, len(self.g_set_), self.source_.shape[1])

        def calibrate():
            options = {"g_size": len(self.g_set_), "distance": self.distance, "grow": True}
            if self.estimator == "plus":
                options["weights"] = self._weights(budgets, grow=True)
            return pseudo_targets(self._method, self.source_, budgets, seed=self.key_[0], **options)

        pseudo = self._source_fit(("rounds", budgets, level), calibrate)
        return StoppingRule.calibrate(pseudo, precision, level)

    @property
    def _method(self) -> str:
        return "tailored_plus" if self.estimator == "plus" else "tailoredbench"

    def _weights(self, budgets: tuple, grow: bool = False) -> np.ndarray:
        """TailoredBench+'s stacking weights for these budgets, fitted on the sources."""
        return self._source_fit(
            ("stack", budgets, grow),
            lambda: stack_weights(
                self.source_,
                list(budgets),
                g_size=len(self.g_set_),
                distance=self.distance,
                seed=self.key_[0],
                grow=grow,
            ),
        )

    def _answers(self, values, items, what: str) -> np.ndarray:
        """A model's 0/1 results on ``items`` (positions): an array in that order, or a pandas
        Series indexed by item id, or a one-row DataFrame with item id columns (read by label, in any order)."""
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
        return self._answers(results, probe.items, "probe")

    def estimate(self, probe: Probe, results, *, rule: StoppingRule | None = None) -> float:
        """The estimated full-benchmark accuracy from the model's ``results`` on ``probe.items``.

        ``rule``: the probe is a round of the sequential mode (:meth:`rounds`), read as
        the rule's simulation reads it (for TailoredBench+, with weights fitted on its rounds).
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

        Calibrated on the source models alone, each in turn playing the new model,
        and scaled by this model's difficulty: the sampling error of its estimate
        and how unlike its nearest sources its results are
        (:mod:`tailoredbench.conformal`). With a ``rule`` (the sequential mode), the
        rule's interval after this round, at the rule's level.
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
            options = {"g_size": len(self.g_set_), "distance": self.distance}
            if self.estimator == "plus":
                options["weights"] = self._weights((probe.budget,))
            return scales(self._method, self.source_, [probe.budget], level, seed=self.key_[0], **options)[probe.budget]

        q = self._source_fit(("interval", probe.budget, level), calibrate)
        return value, q * hardness
