"""TailoredBench+'s arithmetic (beyond the paper): single estimates of a target from its probe, combined.

Besides the calibrated estimate: a ridge regression from the sources' results on the probe items to
their accuracy, each source weighted by its agreement with the target (Zhang et al., *How Benchmark
Prediction from Fewer Data Misses the Mark*, 2025, on tailored items); the accuracy of the sources that
agree most with the target (Nadaraya-Watson); and the uncalibrated estimate. ``"stacked"`` is their
convex combination (stacked generalisation: Wolpert 1992; Breiman 1996), its weights fitted on source
models only (:func:`tailoredbench.methods.tailored_plus.stack_weights`).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np

from .errors import TailoredBenchError
from .tailored import Probe, calibrated_estimate, uncalibrated_estimate

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
        return float(np.dot(weights, [parts[c] for c in COMPONENTS]))
    if variant in MIXES:
        first, second = MIXES[variant]
        return 0.5 * (parts[first] + parts[second])
    return parts[variant]


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
