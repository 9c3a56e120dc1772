"""TailoredBench (Yuan et al., ACL 2025): a tailored probe set for each target model.

*Beyond One-Size-Fits-All: Tailored Benchmarks for Efficient Evaluation*,
arXiv:2502.13576. Four steps, each a function here:

1. :func:`g_set` -- K-Medoids on items embedded by z-scored source correctness picks a
   small global probe set (the G-set).
2. :func:`native_sources` -- every model answers the G-set; a target keeps the source
   models closest to it, their number set by the mean pairwise distance.
3. :func:`n_set` -- K-Medoids on items embedded by the target's native sources, with
   the G-set held fixed, extends the probe to the full budget (the N-set).
4. :func:`calibrated_estimate` -- per cluster, the target's result on the medoid
   rescales the native sources' mean on every member item.

:class:`TailoredBench` strings them together for one new model (the real workflow);
:func:`run` does the same for many targets at once inside a simulation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .errors import TailoredBenchError
from .kmedoids import BinaryPoints, binary_distances, binary_points, check_distance, k_medoids_binary
from .oracle import Oracle

#: K-Medoids passes; FasterPAM converges in a handful on these data.
MAX_ITER = 100


def g_set(
    source: np.ndarray,
    g_size: int = 10,
    *,
    distance: str = "manhattan",
    random_state=None,
    points: BinaryPoints | None = None,
) -> np.ndarray:
    """The G-set: ``g_size`` medoid items of the source models' correctness.

    Items are embedded by the source models' results, each source model's column
    z-scored across items; K-Medoids (FasterPAM, random start) picks the medoids.

    Parameters
    ----------
    source : ndarray of shape (n_sources, n_items)
        Source models' 0/1 results.
    g_size : int, default 10
    distance : {"manhattan", "euclidean", "cosine", "correlation"}
    random_state : int, sequence of int or Generator, optional
        Seeds the initial medoids.
    points : BinaryPoints, optional
        Precomputed ``binary_points(source.T, distance)``; it depends only on the
        source models, so a simulation computes it once for all runs.

    Returns
    -------
    ndarray of int
        Sorted item indices.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> source = (rng.random((8, 30)) < 0.5).astype(float)
    >>> g_set(source, 4, random_state=0).shape
    (4,)
    """
    if points is None:
        points = binary_points(np.asarray(source, dtype=float).T, check_distance(distance))
    if not 0 < g_size < points.n_points:
        raise TailoredBenchError(f"g_size={g_size} must be between 1 and the item count - 1")
    result = k_medoids_binary(points, g_size, random_state=random_state, max_iter=MAX_ITER)
    return np.sort(result.medoids)


def native_sources(
    g_source: np.ndarray, g_target: np.ndarray, *, distance: str = "manhattan"
) -> tuple[int, np.ndarray]:
    """Each target's native source models, by agreement on the G-set.

    All models (sources and targets) are embedded by their G-set results, each G-set
    item z-scored across all models. The threshold is the mean distance over all
    pairs of models; ``n_native`` is the floor of the mean, over targets, of the
    number of sources within the threshold (``<=``), and each target keeps its
    ``n_native`` nearest sources (ties to the lower index).

    Called with a single target row this is the *single-target mode* for real use:
    the threshold then comes from the sources and that one target only.

    Parameters
    ----------
    g_source : ndarray of shape (n_sources, g_size)
    g_target : ndarray of shape (n_targets, g_size)
    distance : {"manhattan", "euclidean", "cosine", "correlation"}

    Returns
    -------
    n_native : int
        At least 1.
    neighbours : ndarray of shape (n_targets, n_native)
        Source indices, nearest first.

    Examples
    --------
    >>> g_source = np.array([[1, 1, 0], [0, 0, 1], [1, 0, 0], [0, 1, 1]], dtype=float)
    >>> n_native, neighbours = native_sources(g_source, np.array([[1, 1, 0]], dtype=float))
    >>> n_native, neighbours.tolist()
    (2, [[0, 2]])
    """
    n_native, order = ranked_sources(g_source, g_target, distance=distance)
    return n_native, order[:, :n_native]


def ranked_sources(
    g_source: np.ndarray, g_target: np.ndarray, *, distance: str = "manhattan"
) -> tuple[int, np.ndarray]:
    """The adaptive native-source count and *every* source per target, most consistent first.

    :func:`native_sources` keeps the first ``n_native`` columns; the native-source
    studies take other counts or bands of the same order.

    Examples
    --------
    >>> g_source = np.array([[1, 1, 0], [0, 0, 1], [1, 0, 0], [0, 1, 1]], dtype=float)
    >>> n_native, order = ranked_sources(g_source, np.array([[1, 1, 0]], dtype=float))
    >>> n_native, order.tolist()
    (2, [[0, 2, 3, 1]])
    """
    g_source = np.atleast_2d(np.asarray(g_source, dtype=float))
    g_target = np.atleast_2d(np.asarray(g_target, dtype=float))
    n_source = g_source.shape[0]
    D = binary_distances(np.vstack([g_source, g_target]), check_distance(distance))
    upper = np.triu_indices(D.shape[0], k=1)
    threshold = D[upper].mean()
    to_sources = D[n_source:, :n_source]
    counts = (to_sources <= threshold).sum(axis=1)
    n_native = max(int(np.floor(counts.mean())), 1)
    return n_native, np.argsort(to_sources, axis=1, kind="stable")


@dataclass(frozen=True)
class NSet:
    """A target's probe: medoids (G-set first, then the free ones) and each item's cluster."""

    medoids: np.ndarray
    labels: np.ndarray


def n_set(
    native: np.ndarray,
    g_items: np.ndarray,
    budget: int,
    *,
    distance: str = "manhattan",
    random_state=None,
    points: BinaryPoints | None = None,
) -> NSet:
    """Extend the G-set to ``budget`` items by K-Medoids on the native sources' embedding.

    Items are embedded by the native sources' results (each column z-scored across
    items); the G-set medoids are held fixed and ``budget - len(g_items)`` free
    medoids are chosen. Every item joins its nearest medoid, the G-set first on ties.

    Parameters
    ----------
    native : ndarray of shape (n_native, n_items)
        The native source models' 0/1 results.
    g_items : ndarray of int
        The G-set.
    budget : int
        Total items the target answers, G-set included.
    distance : {"manhattan", "euclidean", "cosine", "correlation"}
    random_state : int, sequence of int or Generator, optional
        Seeds the initial free medoids.
    points : BinaryPoints, optional
        Precomputed ``binary_points(native.T, distance)``, shared across budgets.

    Returns
    -------
    NSet

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> native = (rng.random((6, 40)) < 0.5).astype(float)
    >>> probe = n_set(native, np.array([3, 17]), 6, random_state=0)
    >>> probe.medoids[:2].tolist(), len(probe.medoids)
    ([3, 17], 6)
    """
    if points is None:
        points = binary_points(np.asarray(native, dtype=float).T, check_distance(distance))
    check_budget(budget, len(g_items), points.n_points)
    result = k_medoids_binary(points, budget, fixed=g_items, random_state=random_state, max_iter=MAX_ITER)
    return NSet(result.medoids, result.labels)


def calibrated_estimate(native_mean: np.ndarray, probe: NSet, medoid_results: np.ndarray) -> float:
    """The calibrated accuracy estimate of one target.

    For item ``i`` in the cluster of medoid ``c``:
    ``min(1, (m_i + 0.5) * (y_c + 0.5) / (m_c + 0.5) - 0.5)``, with ``m`` the native
    sources' mean correctness and ``y_c`` the target's result on the medoid; the
    estimate is the mean over all items. (The 0.5 offsets keep the ratio finite, as in
    the paper's code; only the upper bound is clipped, as there.)

    Parameters
    ----------
    native_mean : ndarray of shape (n_items,)
    probe : NSet
    medoid_results : ndarray of shape (len(probe.medoids),)
        The target's 0/1 results on the medoids, in ``probe.medoids`` order.

    Examples
    --------
    >>> probe = NSet(np.array([0, 2]), np.array([0, 0, 1, 1]))
    >>> round(calibrated_estimate(np.array([0.5, 0.5, 0.5, 0.0]), probe, np.array([1.0, 0.0])), 4)
    0.4375
    """
    m = np.asarray(native_mean, dtype=float)
    y = np.asarray(medoid_results, dtype=float)
    scale = (y + 0.5) / (m[probe.medoids] + 0.5)
    per_item = np.minimum(1.0, (m + 0.5) * scale[probe.labels] - 0.5)
    return float(per_item.mean())


def check_budget(budget: int, g_size: int, n_items: int) -> None:
    if budget <= g_size:
        raise TailoredBenchError(f"budget {budget} must exceed the G-set size {g_size}")
    if budget > n_items:
        raise TailoredBenchError(f"budget {budget} exceeds the item count {n_items}")


def _rng(key: Sequence[int], *tail: int) -> np.random.Generator:
    # One explicit stream per (seed, run, step, target, budget): results do not depend
    # on the order in which work is done, hence not on the number of workers.
    return np.random.default_rng([*key, *tail])


_G_STREAM, _N_STREAM = 0, 1


# ---------------------------------------------------------------------------
# Simulation interface: prepare (run-independent) and run (one repetition).


def prepare(source: np.ndarray, *, distance: str = "manhattan", **_) -> dict:
    """Work shared by all runs: the items as points under the full source embedding."""
    return {"points": binary_points(source.T, check_distance(distance))}


def uncalibrated_estimate(probe: NSet, medoid_results: np.ndarray) -> float:
    """The AnchorPoints-style estimate: the target's medoid results weighted by cluster size.

    The "calibration off" arm of the paper's ablation: the native sources choose the
    items but do not rescale them.

    Examples
    --------
    >>> probe = NSet(np.array([0, 2]), np.array([0, 0, 0, 1]))
    >>> uncalibrated_estimate(probe, np.array([1.0, 0.0]))
    0.75
    """
    y = np.asarray(medoid_results, dtype=float)
    return float(y[probe.labels].mean())


def native_rows(order: np.ndarray, count: int, offset: int = 0) -> np.ndarray:
    """Columns ``offset .. offset + count`` of :func:`ranked_sources`' order: a consistency band.

    ``offset=0`` keeps the ``count`` most consistent sources, as the method does.
    """
    if count < 1 or offset < 0 or offset + count > order.shape[1]:
        raise TailoredBenchError(
            f"native sources {offset}..{offset + count} are out of range for {order.shape[1]} source models"
        )
    return order[:, offset : offset + count]


@dataclass(frozen=True)
class TargetProbe:
    """Everything one target's estimate is computed from at one budget."""

    target: int
    budget: int
    native: np.ndarray  # source indices, most consistent first
    native_mean: np.ndarray
    probe: NSet
    results: np.ndarray  # the target's results on probe.medoids


def probes(
    prepared: Mapping,
    source: np.ndarray,
    oracles: Mapping[int, Oracle],
    key: Sequence[int],
    *,
    g_size: int = 10,
    distance: str = "manhattan",
    n_native: int | None = None,
    native_offset: int = 0,
    **_,
):
    """Steps 1-3 of one repetition: yield a :class:`TargetProbe` per target and budget.

    The G-set, the native sources and the native item embedding are computed once
    per target and serve every budget. ``n_native`` and ``native_offset`` override
    the adaptive native-source rule (see :func:`native_rows`).
    """
    budgets = sorted(oracles)
    any_oracle = oracles[budgets[0]]
    for budget in budgets:
        check_budget(budget, g_size, source.shape[1])
    g_items = g_set(source, g_size, random_state=_rng(key, _G_STREAM), points=prepared["points"])
    g_target = any_oracle.ask(g_items)
    for budget in budgets[1:]:
        oracles[budget].ask(g_items)
    adaptive, order = ranked_sources(source[:, g_items], g_target, distance=distance)
    neighbours = native_rows(order, adaptive if n_native is None else n_native, native_offset)
    for t, rows in enumerate(neighbours):
        native = source[rows]
        points = binary_points(native.T, distance)
        native_mean = native.mean(axis=0)
        for budget in budgets:
            probe = n_set(native, g_items, budget, random_state=_rng(key, _N_STREAM, t, budget), points=points)
            y = oracles[budget].ask(probe.medoids, targets=[t])[0]
            yield TargetProbe(t, budget, rows, native_mean, probe, y)


def run(
    prepared: Mapping,
    source: np.ndarray,
    oracles: Mapping[int, Oracle],
    key: Sequence[int],
    *,
    calibrate: bool = True,
    **options,
) -> dict[int, np.ndarray]:
    """One repetition for all targets and budgets; returns ``{budget: estimates}``.

    ``calibrate=False`` is the ablation's uncalibrated arm; the other options go to
    :func:`probes`.
    """
    estimates = {b: np.empty(oracles[b].n_targets) for b in oracles}
    for p in probes(prepared, source, oracles, key, **options):
        estimates[p.budget][p.target] = (
            calibrated_estimate(p.native_mean, p.probe, p.results)
            if calibrate
            else uncalibrated_estimate(p.probe, p.results)
        )
    return estimates


# ---------------------------------------------------------------------------
# Stateful API for one new model.


class TailoredBench:
    """TailoredBench for real use: fit on source models, then probe one new model.

    Parameters
    ----------
    g_size : int, default 10
        Size of the G-set (the first probe).
    distance : {"manhattan", "euclidean", "cosine", "correlation"}
    random_state : int or sequence of int, default 0
        Seeds the G-set and the N-set; ``(seed, run)`` reproduces run ``run`` of a
        simulation with seed ``seed``.
    estimator : {"calibrated", "plus"}, default "calibrated"
        The paper's calibrated estimate, or TailoredBench+'s
        (:mod:`tailoredbench.tailored_plus`) from the same probe.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> source = (rng.random((20, 60)) < 0.6).astype(float)
    >>> model = (rng.random(60) < 0.6).astype(float)
    >>> tb = TailoredBench(g_size=5, random_state=0).fit(source)
    >>> probe = tb.probe_items()
    >>> rest = tb.native_items(model[probe], budget=12)
    >>> len(probe) + len(rest)
    12
    >>> 0.0 <= tb.estimate(model[rest]) <= 1.0
    True
    >>> low, high = tb.interval(0.9)
    >>> bool(low <= tb.estimate_ <= high)
    True
    """

    def __init__(self, g_size: int = 10, distance: str = "manhattan", random_state=0, estimator: str = "calibrated"):
        self.g_size = g_size
        self.distance = check_distance(distance)
        self.random_state = random_state
        if estimator not in ("calibrated", "plus"):
            raise TailoredBenchError(f"unknown estimator {estimator!r}; choose calibrated or plus")
        self.estimator = estimator

    #: What one new model's probe leaves behind; a refit forgets it with the sources' other values.
    _MODEL_STATE = ("g_results_", "native_sources_", "probe_", "native_mean_", "probe_results_", "estimate_")

    def _require(self, attribute: str, step: str, action: str) -> None:
        # the steps run in order (fit, native_items, estimate, interval): say which one is missing
        if not hasattr(self, attribute):
            raise TailoredBenchError(f"call {step}() before {action}()")

    @property
    def _key(self) -> tuple[int, ...]:
        rs = self.random_state
        return (int(rs), 0) if np.isscalar(rs) else tuple(int(v) for v in rs)

    def fit(self, source) -> TailoredBench:
        """Choose the G-set from the source models' full results (n_sources x n_items)."""
        from .datasets.matrix import validate_binary

        self.source_ = validate_binary(getattr(source, "values", source), "source models")
        if self.source_.shape[0] < 2:
            raise TailoredBenchError("at least 2 source models are needed")
        self.g_items_ = g_set(
            self.source_, self.g_size, distance=self.distance, random_state=_rng(self._key, _G_STREAM)
        )
        # fitted on the sources, per budget (and level): a refit must not reuse the old sources' values
        self.stack_weights_ = {}
        self.interval_scales_ = {}
        for name in self._MODEL_STATE:
            self.__dict__.pop(name, None)
        return self

    def probe_items(self) -> np.ndarray:
        """The G-set: the items every new model answers first."""
        self._require("g_items_", "fit", "probe_items")
        return self.g_items_.copy()

    def native_items(self, g_results, budget: int, target_index: int = 0) -> np.ndarray:
        """Given the model's G-set results, the remaining items of its N-set.

        ``target_index`` only picks the random stream, so that target ``t`` of a
        simulation can be replayed exactly.
        """
        self._require("g_items_", "fit", "native_items")
        g_results = np.asarray(g_results, dtype=float).reshape(1, -1)
        if g_results.shape[1] != len(self.g_items_):
            raise TailoredBenchError(f"expected {len(self.g_items_)} G-set results, got {g_results.shape[1]}")
        check_budget(budget, self.g_size, self.source_.shape[1])
        # checked before any state changes, so that a refused call leaves the last model's probe whole
        self.g_results_ = g_results[0]
        for name in ("probe_results_", "estimate_"):  # a new model: the last one's estimate is not its own
            self.__dict__.pop(name, None)
        _, neighbours = native_sources(self.source_[:, self.g_items_], g_results, distance=self.distance)
        self.native_sources_ = neighbours[0]
        native = self.source_[self.native_sources_]
        self.probe_ = n_set(
            native,
            self.g_items_,
            budget,
            distance=self.distance,
            random_state=_rng(self._key, _N_STREAM, target_index, budget),
        )
        self.native_mean_ = native.mean(axis=0)
        return self.probe_.medoids[self.g_size :].copy()

    def estimate(self, n_results) -> float:
        """Given the results on :meth:`native_items`, the estimated full-benchmark accuracy."""
        self._require("probe_", "native_items", "estimate")
        n_results = np.asarray(n_results, dtype=float).reshape(-1)
        y = np.concatenate([self.g_results_, n_results])
        if len(y) != len(self.probe_.medoids):
            raise TailoredBenchError(
                f"expected {len(self.probe_.medoids) - self.g_size} N-set results, got {len(n_results)}"
            )
        self.probe_results_ = y
        if self.estimator == "plus":
            from .tailored_plus import combine, components, stack_weights

            source, budget = self.source_, len(self.probe_.medoids)
            # TailoredBench+'s stacking weights, fitted on the source models at this budget
            weights = self.stack_weights_
            if budget not in weights:
                weights[budget] = stack_weights(
                    source, [budget], g_size=self.g_size, distance=self.distance, seed=self._key[0]
                )
            parts = components(source, source.mean(axis=1), self.native_mean_, self.probe_, y)
            self.estimate_ = combine(parts, "stacked", weights[budget])
        else:
            self.estimate_ = calibrated_estimate(self.native_mean_, self.probe_, y)
        return self.estimate_

    def interval(self, level: float = 0.9) -> tuple[float, float]:
        """An interval around :meth:`estimate`'s value that holds the true accuracy with ``level`` probability.

        Calibrated on the source models alone, each of them in turn playing the new
        model, and scaled by the new model's difficulty: the sampling error of its
        estimate and how closely its probe results match its nearest sources
        (:mod:`tailoredbench.intervals`). The calibration runs once
        per budget and level and is kept in ``interval_scales_``.
        """
        from .intervals import difficulty, interval, scales, unlikeness

        self._require("estimate_", "estimate", "interval")
        budget = len(self.probe_.medoids)
        if (budget, level) not in self.interval_scales_:
            method = "tailored_plus" if self.estimator == "plus" else "tailoredbench"
            options = {"g_size": self.g_size, "distance": self.distance}
            if self.estimator == "plus":
                options["weights"] = self.stack_weights_[budget]
            q = scales(method, self.source_, [budget], level, seed=self._key[0], **options)[budget]
            self.interval_scales_[budget, level] = q
        unlike = unlikeness(self.source_, self.probe_.medoids, self.probe_results_)
        hardness = difficulty(self.estimate_, unlike, len(self.probe_.medoids))
        low, high = interval(self.estimate_, self.interval_scales_[budget, level] * hardness)
        return float(low), float(high)
