"""TailoredBench (Yuan et al., ACL 2025): a tailored probe set for each target model.

*Beyond One-Size-Fits-All: Tailored Benchmarks for Efficient Evaluation*, arXiv:2502.13576, in four steps:

1. :func:`g_set` -- K-Medoids on items embedded by the sources' correctness picks a global probe set (the G-set).
2. :func:`native_sources` -- every model answers the G-set; a target keeps the sources closest to it.
3. :func:`n_set` -- K-Medoids on items embedded by the target's native sources, the G-set held fixed,
   extends the probe to the full budget (the N-set).
4. :func:`calibrated_estimate` -- per cluster, the target's result on the medoid rescales the native
   sources' mean on every member item.

:class:`Probe` holds what one model is asked and how its answers are read.

TailoredBench+ (beyond the paper) combines single estimates of a target from its probe. Besides the
calibrated estimate: a ridge regression from the sources' results on the probe items to
their accuracy, each source weighted by its agreement with the target (Zhang et al., *How Benchmark
Prediction from Fewer Data Misses the Mark*, 2025, on tailored items); the accuracy of the sources that
agree most with the target (Nadaraya-Watson); and the uncalibrated estimate. ``"stacked"`` is their
convex combination (stacked generalisation: Wolpert 1992; Breiman 1996), its weights fitted on source
models only (:func:`tailoredbench.methods.tailored_plus.stack_weights`).
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .errors import TailoredBenchError, check_integer
from .kmedoids import BinaryPoints, binary_distances, binary_points, check_distance, k_medoids_binary, known_labels

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
    """The G-set, sorted: ``g_size`` medoid items of the source models' correctness.

    Items are embedded by the source models' results, each source's column z-scored across items;
    K-Medoids (FasterPAM) starts from medoids drawn with ``random_state``. ``points``: a precomputed
    ``binary_points(source.T, distance)``, computed once for all runs by a simulation.
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
    """Each target's native source models by agreement on the G-set: ``(n_native, neighbours)``.

    The threshold is the mean distance (:func:`g_set_distances`) over all pairs of models; ``n_native``
    is the floor of the mean, over targets, of the number of sources within it (``<=``), but at least
    :func:`min_native_sources` (chosen on the source models only), and each target keeps its ``n_native``
    nearest sources (``neighbours``, ties to the lower index). With a single target row (real use), the
    threshold comes from the sources and that target only; the minimum keeps a target that no source
    answers like from a native set of one or two sources, whose binary item embedding leaves K-Medoids
    two or four clusters and the calibrated estimate at 0 or 1.
    """
    n_native, order = ranked_sources(g_source, g_target, distance=distance)
    return n_native, order[:, :n_native]


def g_set_distances(
    g_source: np.ndarray, g_target: np.ndarray, *, distance: str = "manhattan"
) -> tuple[np.ndarray, float]:
    """Each target's distance to each source (targets x sources) and the mean over all pairs of models.

    All models are embedded by their G-set results, each G-set item z-scored across all models.
    """
    g_source = np.atleast_2d(np.asarray(g_source, dtype=float))
    g_target = np.atleast_2d(np.asarray(g_target, dtype=float))
    n_source = g_source.shape[0]
    D = binary_distances(np.vstack([g_source, g_target]), check_distance(distance))
    # the pairs above the diagonal, row by row (a mask: index arrays cost more than the distances)
    index = np.arange(D.shape[0])
    upper = index[:, None] < index[None, :]
    return D[n_source:, :n_source], float(D[upper].mean())


def ranked_sources(
    g_source: np.ndarray, g_target: np.ndarray, *, distance: str = "manhattan"
) -> tuple[int, np.ndarray]:
    """The adaptive native-source count and *every* source per target, most consistent first
    (:func:`native_sources` keeps the first ``n_native``; the studies take other counts or bands).

    Examples
    --------
    >>> g_source = np.array([[1, 1, 0], [0, 0, 1], [1, 0, 0], [0, 1, 1]], dtype=float)
    >>> n_native, order = ranked_sources(g_source, np.array([[1, 1, 0]], dtype=float))
    >>> n_native, order.tolist()
    (2, [[0, 2, 3, 1]])
    """
    to_sources, threshold = g_set_distances(g_source, g_target, distance=distance)
    counts = (to_sources <= threshold).sum(axis=1)
    n_native = max(int(np.floor(counts.mean())), min_native_sources(g_source, distance=distance))
    return n_native, np.argsort(to_sources, axis=1, kind="stable")


def min_native_sources(g_source: np.ndarray, *, distance: str = "manhattan") -> int:
    """The fewest native sources a target keeps: half the count the paper's rule gives the sources, at least 1.

    Each source plays the target in turn (leave-one-out): with the sources alone embedded and their mean
    pairwise distance as threshold, its count is the number of other sources within it. The minimum is the
    floor of half the mean count, a function of the source models alone; with all targets evaluated together
    their mean count lies well above it on the paper's benchmarks.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> g_source = (rng.random((40, 10)) < 0.5).astype(float)  # SYNTHETIC: 40 sources' results on a G-set of 10
    >>> min_native_sources(g_source)
    8
    """
    g_source = np.atleast_2d(np.asarray(g_source, dtype=float))
    if g_source.shape[0] < 2:
        return 1
    D = binary_distances(g_source, check_distance(distance))
    index = np.arange(D.shape[0])
    threshold = D[index[:, None] < index[None, :]].mean()
    counts = ((D <= threshold) & (index[:, None] != index[None, :])).sum(axis=1)
    return max(int(np.floor(counts.mean() / 2)), 1)


@dataclass(frozen=True, eq=False)
class Probe:
    """One model's probe: the items it answers and how its answers are read. Immutable."""

    g_set: np.ndarray  # answered first by every model
    native_sources: np.ndarray  # rows of the sources, most consistent first
    n_set: np.ndarray  # the items the N-set adds
    labels: np.ndarray  # each benchmark item's cluster: the position of its medoid in `items`
    # sha256 of the source matrix planned on: native_sources are row numbers, meaningless in another matrix
    source_sha256: str = ""

    def __post_init__(self):
        for name in ("g_set", "native_sources", "n_set", "labels"):
            value = np.array(getattr(self, name), dtype=np.int64).reshape(-1)
            if name == "labels" and value.size:
                # an asked item reads its own answer, though the nearest-medoid rule gives an earlier medoid with
                # the same results on the sources the tie
                value[self.items] = np.arange(self.budget)
            value.flags.writeable = False
            object.__setattr__(self, name, value)

    @property
    def items(self) -> np.ndarray:
        """The probe's items, G-set then N-set: the medoids, in the order of :attr:`labels`."""
        return np.concatenate([self.g_set, self.n_set])

    @property
    def budget(self) -> int:
        """How many items the model answers in all."""
        return len(self.g_set) + len(self.n_set)


def matrix_sha256(source: np.ndarray) -> str:
    """The sha256 of a source matrix's shape and 0/1 values: another order of its models or items differs."""
    values = np.ascontiguousarray(source, dtype=np.float64)
    return hashlib.sha256(repr(values.shape).encode() + values.tobytes()).hexdigest()


def n_set(
    source: np.ndarray,
    native_sources: np.ndarray,
    g_set: np.ndarray,
    budget: int,
    *,
    distance: str = "manhattan",
    random_state=None,
    points: BinaryPoints | None = None,
    sample: int = 0,
    asked=(),
) -> Probe:
    """Extend the G-set to ``budget`` items (G-set included) by K-Medoids on the native sources' embedding.

    Items are embedded by the native sources' results (each column z-scored across items); the G-set
    medoids are held fixed and the N-set's chosen, starting from ``random_state``. Every item joins its
    nearest medoid, the G-set first on ties.

    ``points``: a precomputed ``binary_points(source[native_sources].T, distance)``, shared across budgets;
    ``sample`` > 0: CLARA on samples of that many items, for very large matrices; ``asked``: the N-set of a
    smaller probe of the target, held fixed after the G-set, so that the probe grows (the sequential mode).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> source = (rng.random((6, 40)) < 0.5).astype(float)
    >>> probe = n_set(source, np.arange(6), np.array([3, 17]), 6, random_state=0)
    >>> probe.items[:2].tolist(), len(probe.n_set), probe.budget
    ([3, 17], 4, 6)
    >>> grown = n_set(source, np.arange(6), np.array([3, 17]), 9, random_state=1, asked=probe.n_set)
    >>> grown.items[:6].tolist() == probe.items.tolist(), grown.budget
    (True, 9)
    """
    if points is None:
        points = binary_points(np.asarray(source, dtype=float)[native_sources].T, check_distance(distance))
    check_budget(budget, len(g_set), points.n_points)
    held = np.concatenate([np.asarray(g_set, dtype=np.int64), np.asarray(asked, dtype=np.int64).reshape(-1)])
    if len(held) >= budget:
        raise TailoredBenchError(f"budget {budget} must exceed the {len(held)} items already asked")
    result = k_medoids_binary(points, budget, fixed=held, random_state=random_state, max_iter=MAX_ITER, sample=sample)
    return Probe(g_set, native_sources, result.medoids[len(g_set) :], result.labels)


def chosen_probes(points: BinaryPoints, g_set: np.ndarray, native_sources: np.ndarray, chosen, digests) -> list[Probe]:
    """The :class:`Probe` of each set of items :func:`n_set` chose before (G-set first) on ``points``; their
    ``digests`` (:func:`~tailoredbench.kmedoids.label_digest`) spare the distances between all items."""
    labels = known_labels(points, chosen, digests)
    return [
        Probe(g_set, native_sources, items[len(g_set) :], found) for items, found in zip(chosen, labels, strict=True)
    ]


def calibrated_estimate(native_mean: np.ndarray, probe: Probe, results: np.ndarray) -> float:
    """The calibrated accuracy estimate of one target from its ``results`` on ``probe.items``.

    For item ``i`` in the cluster of medoid ``c``: ``min(1, (m_i + 0.5) * (y_c + 0.5) / (m_c + 0.5) - 0.5)``,
    with ``m`` the native sources' mean correctness (``native_mean``) and ``y_c`` the target's result on
    the medoid, as in the paper's code; the mean over all items is then kept in [0, 1].

    Examples
    --------
    >>> probe = Probe([0], [], [2], [0, 0, 1, 1])
    >>> round(calibrated_estimate(np.array([0.5, 0.5, 0.5, 0.0]), probe, np.array([1.0, 0.0])), 4)
    0.4375
    """
    m = np.asarray(native_mean, dtype=float)
    y = np.asarray(results, dtype=float)
    scale = (y + 0.5) / (m[probe.items] + 0.5)
    per_item = np.minimum(1.0, (m + 0.5) * scale[probe.labels] - 0.5)
    return float(np.clip(per_item.mean(), 0.0, 1.0))


def uncalibrated_estimate(probe: Probe, results: np.ndarray) -> float:
    """The target's medoid results weighted by cluster size: the paper's "calibration off" ablation.

    Examples
    --------
    >>> probe = Probe([0], [], [3], [0, 0, 0, 1])
    >>> uncalibrated_estimate(probe, np.array([1.0, 0.0]))
    0.75
    """
    y = np.asarray(results, dtype=float)
    return float(y[probe.labels].mean())


def check_budget(budget: int, g_size: int, n_items: int) -> None:
    budget = check_integer(budget, "budget")
    if budget <= g_size:
        raise TailoredBenchError(f"budget {budget} must exceed the G-set size {g_size}")
    if budget > n_items:
        raise TailoredBenchError(f"budget {budget} exceeds the item count {n_items}")


def native_rows(order: np.ndarray, count: int, offset: int = 0) -> np.ndarray:
    """Columns ``offset .. offset + count`` of :func:`ranked_sources`' order: a consistency band."""
    if count < 1 or offset < 0 or offset + count > order.shape[1]:
        raise TailoredBenchError(
            f"native sources {offset}..{offset + count} are out of range for {order.shape[1]} source models"
        )
    return order[:, offset : offset + count]


#: The estimates that ``"stacked"`` combines.
COMPONENTS = ("calibrated", "local_regression", "neighbours", "uncalibrated")
#: Every single estimate :func:`components` can return: a variant each.
ESTIMATES = ("calibrated", "uncalibrated", "regression", "local_regression", "neighbours", "soft_calibration")
#: The variants that are the mean of two single estimates.
MIXES = {"mix": ("calibrated", "regression"), "local_mix": ("calibrated", "local_regression")}
VARIANTS = (*ESTIMATES, *MIXES, "stacked")
DEFAULT_VARIANT = "stacked"
#: Ridge penalty on the probe items' coefficients (an intercept is not penalised).
ALPHA = 3.0
#: Regression weights ``exp(-disagreements / (budget * BANDWIDTH))``: 1/e for a fifth of the probe.
BANDWIDTH = 0.2
#: Neighbour weights ``exp(-2 * extra disagreements)``.
NEIGHBOUR_BANDWIDTH = 0.5
#: Grid step of the stacking weights on the simplex.
STACK_STEP = 0.05


def agreement_weights(disagreements: np.ndarray, bandwidth: float) -> np.ndarray:
    """Each source's weight ``exp(-(d - min d) / bandwidth)`` from ``d``, its disagreements with the target."""
    return np.exp(-(disagreements - disagreements.min()) / bandwidth)


def weighted_ridge(X: np.ndarray, y: np.ndarray, weights: np.ndarray, alpha: float = ALPHA) -> tuple[np.ndarray, float]:
    """Ridge regression with sample weights (normalised to sum to the sample count)."""
    w = weights * (len(y) / weights.sum())
    x_mean, y_mean = w @ X / len(y), w @ y / len(y)
    Xc = X - x_mean
    coef = np.linalg.solve(Xc.T @ (w[:, None] * Xc) + alpha * np.eye(X.shape[1]), Xc.T @ (w * (y - y_mean)))
    return coef, float(y_mean - x_mean @ coef)


def components(
    source: np.ndarray,
    accuracy: np.ndarray,
    native_mean: np.ndarray,
    probe: Probe,
    results: np.ndarray,
    names: Sequence[str] = ESTIMATES,
    *,
    features: np.ndarray | None = None,
    evidence: np.ndarray | None = None,
) -> dict[str, float]:
    """The single estimates ``names`` (:func:`needed`) of one target from its probe ``results``.

    ``accuracy`` is ``source.mean(axis=1)``; the rest as for :func:`~tailoredbench.tailored.calibrated_estimate`.
    The regressions and the agreement weights read the sources' ``features`` and the target's ``evidence``,
    by default their results on the probe's items (a suite passes every benchmark's probe).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> source = (rng.random((12, 20)) < 0.5).astype(float)
    >>> probe = Probe([0], [], [5], np.repeat([0, 1], 10))
    >>> parts = components(source, source.mean(axis=1), source.mean(axis=0), probe, np.array([1.0, 0.0]))
    >>> parts["calibrated"] == calibrated_estimate(source.mean(axis=0), probe, np.array([1.0, 0.0]))
    True
    """
    X = source[:, probe.items] if features is None else features
    x = results if evidence is None else evidence
    if {"local_regression", "neighbours", "soft_calibration"} & set(names):  # the estimates that weigh sources
        disagreements = np.abs(X - x).sum(axis=1)
        weights = agreement_weights(disagreements, BANDWIDTH * X.shape[1])
    parts = {}
    if "calibrated" in names:
        parts["calibrated"] = calibrated_estimate(native_mean, probe, results)
    if "uncalibrated" in names:
        parts["uncalibrated"] = uncalibrated_estimate(probe, results)
    if "regression" in names:
        coef, intercept = ridge(X, accuracy, ALPHA)
        parts["regression"] = float(np.clip(x @ coef + intercept, 0.0, 1.0))
    if "local_regression" in names:
        local_coef, local_intercept = weighted_ridge(X, accuracy, weights)
        parts["local_regression"] = float(np.clip(x @ local_coef + local_intercept, 0.0, 1.0))
    if "neighbours" in names:
        near = agreement_weights(disagreements, NEIGHBOUR_BANDWIDTH)
        parts["neighbours"] = float(near @ accuracy / near.sum())
    if "soft_calibration" in names:
        parts["soft_calibration"] = calibrated_estimate(weights @ source / weights.sum(), probe, results)
    return parts


def needed(variants: Sequence[str]) -> tuple[str, ...]:
    """The :func:`components` that :func:`combine` reads for these variants, in :data:`ESTIMATES` order."""
    reads = {"stacked": COMPONENTS, **MIXES}
    wanted = {name for v in variants for name in reads.get(v, (v,))}
    return tuple(name for name in ESTIMATES if name in wanted)


def combine(parts: Mapping[str, float], variant: str, weights=None) -> float:
    """The ``variant`` estimate from :func:`components`; ``"stacked"`` needs ``weights`` over :data:`COMPONENTS`.

    Examples
    --------
    >>> parts = {"calibrated": 0.5, "regression": 0.7, "local_regression": 0.6, "neighbours": 0.4, "uncalibrated": 0.3}
    >>> combine(parts, "mix"), round(combine(parts, "stacked", [0.5, 0.5, 0.0, 0.0]), 6)
    (0.6, 0.55)
    """
    if variant == "stacked":
        if weights is None:
            raise TailoredBenchError("the stacked variant needs weights: prepare it with variant='stacked'")
        value = float(np.dot(weights, [parts[c] for c in COMPONENTS]))
    elif variant in MIXES:
        first, second = MIXES[variant]
        value = 0.5 * (parts[first] + parts[second])
    else:
        value = parts[variant]
    return min(max(value, 0.0), 1.0)  # an average of estimates in [0, 1] leaves it only by rounding


def simplex_weights(estimates: np.ndarray, truth: np.ndarray, step: float = STACK_STEP) -> np.ndarray:
    """The convex weights (a grid of ``step``) with the lowest mean absolute error; ties to the earlier grid point."""
    n = estimates.shape[1]
    steps = round(1 / step)
    grid = np.array([c for c in itertools.product(range(steps + 1), repeat=n) if sum(c) == steps]) / steps
    errors = np.abs(estimates @ grid.T - truth[:, None]).mean(axis=0)
    return grid[int(np.argmin(errors))]


RIDGE_ALPHA = 10.0  #: random+regression's penalty (Zhang et al., 2025)


def ridge(X: np.ndarray, y: np.ndarray, alpha: float = RIDGE_ALPHA) -> tuple[np.ndarray, float]:
    """Ridge regression with an unpenalised intercept: ``(coef, intercept)``."""
    x_mean, y_mean = X.mean(axis=0), y.mean()
    Xc = X - x_mean
    coef = np.linalg.solve(Xc.T @ Xc + alpha * np.eye(X.shape[1]), Xc.T @ (y - y_mean))
    return coef, float(y_mean - x_mean @ coef)
