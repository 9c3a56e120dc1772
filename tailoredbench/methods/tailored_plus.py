"""TailoredBench+: the same tailored probe, a lower-error estimate from it.

Beyond the paper. The probe is exactly TailoredBench's (same G-set, native sources
and N-set, same random streams, hence the same budget); only the last step changes.
The calibrated estimate uses the target's result on each medoid for that medoid's
cluster alone. Three more estimates err in other ways:

* a ridge regression, fitted on the source models, from their results on the
  target's probe items to their full-benchmark accuracy (as in Zhang et al., *How
  Benchmark Prediction from Fewer Data Misses the Mark*, 2025, but on tailored rather
  than random items), each source weighted by its agreement with the target on those
  items (a locally weighted regression);
* the accuracy of the sources that agree most with the target on the probe
  (a kernel-weighted nearest-neighbour mean, Nadaraya-Watson);
* the target's own probe results weighted by cluster size (the uncalibrated
  estimate): nearly unbiased but noisy, where the others borrow strength from the
  sources and are biased towards them.

TailoredBench+ (``"stacked"``) is their convex combination (stacked generalisation,
Wolpert, *Neural Networks* 1992; Breiman, *Machine Learning* 1996), with weights
fitted by cross-validation on the *source* models only (split into pseudo-sources
and pseudo-targets; :func:`stack_weights`), per benchmark: no target result is used
to choose anything.

Variants (``variant=``) keep each ingredient measurable on its own:
``"calibrated"`` (TailoredBench's own estimate), ``"uncalibrated"``, ``"regression"``
(ridge, sources weighted equally), ``"local_regression"``, ``"neighbours"``,
``"soft_calibration"`` (calibration against a native mean weighting every source by
its agreement on the probe, instead of the hard top-n cut), ``"mix"`` and
``"local_mix"`` (the mean of the calibrated and the regression estimates) and
``"stacked"`` (the default).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from types import MappingProxyType

import numpy as np
from joblib import Parallel, delayed

from .. import rng, run_cache
from ..conformal import folds_by_kept, in_fold_order
from ..errors import TailoredBenchError
from ..oracle import Oracle
from ..tailored import Probe, calibrated_estimate, uncalibrated_estimate
from .base import Method
from .random_regression import ridge
from .tailoredbench import TailoredBenchMethod, probes_of_runs

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
#: Regression weights ``exp(-disagreements / (budget * BANDWIDTH))``: a source that
#: disagrees with the target on a fifth of the probe weighs 1/e as much as one that
#: agrees on all of it.
BANDWIDTH = 0.2
#: Neighbour weights ``exp(-2 * extra disagreements)``: close to the mean accuracy of
#: the sources that agree best with the target.
NEIGHBOUR_BANDWIDTH = 0.5
#: Cross-validation over source models that fits the stacking weights: folds, repeats.
STACK_FOLDS = 5
STACK_REPEATS = 2
#: Grid step of the stacking weights on the simplex.
STACK_STEP = 0.05


def agreement_weights(disagreements: np.ndarray, bandwidth: float) -> np.ndarray:
    """Each source's weight from ``d``, its disagreements with the target on the probe items.

    ``exp(-(d - min d) / bandwidth)``.

    Examples
    --------
    >>> np.round(agreement_weights(np.array([0.0, 2.0]), BANDWIDTH * 2), 4).tolist()
    [1.0, 0.0067]
    """
    return np.exp(-(disagreements - disagreements.min()) / bandwidth)


def weighted_ridge(X: np.ndarray, y: np.ndarray, weights: np.ndarray, alpha: float = ALPHA) -> tuple[np.ndarray, float]:
    """Ridge regression with sample weights (normalised to sum to the sample count).

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [2.0]])
    >>> coef, intercept = weighted_ridge(X, 3 * X[:, 0], np.ones(3), alpha=0.0)
    >>> round(float(coef[0]), 6), round(intercept, 6)
    (3.0, 0.0)
    """
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
) -> dict[str, float]:
    """Single estimates of one target from its probe results (see the module notes).

    Parameters
    ----------
    source : ndarray of shape (n_sources, n_items)
    accuracy : ndarray of shape (n_sources,)
        ``source.mean(axis=1)``.
    native_mean, probe, results
        As for :func:`~tailoredbench.tailored.calibrated_estimate`.
    names : sequence of str, default :data:`ESTIMATES`
        The estimates to compute (:func:`needed` gives those of some variants); the
        others are skipped, which changes none of these.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> source = (rng.random((12, 20)) < 0.5).astype(float)
    >>> probe = Probe([0], [], [5], np.repeat([0, 1], 10))
    >>> parts = components(source, source.mean(axis=1), source.mean(axis=0), probe, np.array([1.0, 0.0]))
    >>> parts["calibrated"] == calibrated_estimate(source.mean(axis=0), probe, np.array([1.0, 0.0]))
    True
    """
    X = source[:, probe.items]
    if {"local_regression", "neighbours", "soft_calibration"} & set(names):  # the estimates that weigh sources
        disagreements = np.abs(X - results).sum(axis=1)
        weights = agreement_weights(disagreements, BANDWIDTH * X.shape[1])
    parts = {}
    if "calibrated" in names:
        parts["calibrated"] = calibrated_estimate(native_mean, probe, results)
    if "uncalibrated" in names:
        parts["uncalibrated"] = uncalibrated_estimate(probe, results)
    if "regression" in names:
        coef, intercept = ridge(X, accuracy, ALPHA)
        parts["regression"] = float(np.clip(results @ coef + intercept, 0.0, 1.0))
    if "local_regression" in names:
        local_coef, local_intercept = weighted_ridge(X, accuracy, weights)
        parts["local_regression"] = float(np.clip(results @ local_coef + local_intercept, 0.0, 1.0))
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
    """The convex weights (a grid of ``step``) with the lowest mean absolute error; ties to the earlier grid point.

    Examples
    --------
    >>> truth = np.array([0.2, 0.4, 0.6])
    >>> simplex_weights(np.column_stack([truth, truth + 0.1]), truth).tolist()
    [1.0, 0.0]
    """
    n = estimates.shape[1]
    steps = round(1 / step)
    grid = np.array([c for c in itertools.product(range(steps + 1), repeat=n) if sum(c) == steps]) / steps
    errors = np.abs(estimates @ grid.T - truth[:, None]).mean(axis=0)
    return grid[int(np.argmin(errors))]


def stack_weights(
    source: np.ndarray,
    budgets: Sequence[int],
    *,
    g_size: int = 10,
    distance: str = "manhattan",
    seed: int = 0,
    grow: bool = False,
) -> np.ndarray:
    """Stacking weights over :data:`COMPONENTS`, fitted with source models as pseudo-targets.

    The sources are split into :data:`STACK_FOLDS` folds, :data:`STACK_REPEATS` times;
    each fold in turn plays the targets of the other folds at every budget, and
    :func:`simplex_weights` picks the convex weights with the lowest MAE over all of
    these pseudo-target estimates. With fewer than 3 sources the weights are equal.
    ``grow``: on the growing probe of the sequential mode, whose estimates they weigh.
    """
    if source.shape[0] < 3:  # no fold would leave two pseudo-sources: nothing to fit on
        return np.full(len(COMPONENTS), 1 / len(COMPONENTS))
    groups = folds_by_kept(source.shape[0], min(STACK_FOLDS, source.shape[0]), STACK_REPEATS, seed, rng.STACKING_FOLDS)
    cache = run_cache.folder()  # this process's, whatever the workers' environment
    # Folds that keep the same sources share one preparation. The groups run on the workers of
    # the caller's joblib configuration (a simulation's), each fold with its own random key,
    # and are read back in fold order.
    outputs = Parallel()(
        delayed(_stack_folds)(
            source[kept],
            [(source[held_out], (seed, rng.STACK_RUN + index)) for index, held_out in held],
            budgets,
            seed,
            cache,
            g_size=g_size,
            distance=distance,
            grow=grow,
        )
        for kept, held in groups
    )
    outputs = in_fold_order(groups, outputs)
    return simplex_weights(np.vstack([c for c, _ in outputs]), np.concatenate([t for _, t in outputs]))


def _stack_folds(pseudo_source, held, budgets, seed, cache, **options) -> list[tuple[np.ndarray, np.ndarray]]:
    """The folds that keep ``pseudo_source``, prepared once and run together: ``held`` is each one's
    (pseudo-targets, key).

    Per fold: its pseudo-targets' estimates by every component (a column each) at every budget, and their truth.
    """
    method = TailoredPlus()
    prepared = method.prepare_on_worker(
        pseudo_source, budgets, seed, cache, distance=options["distance"], variants=COMPONENTS
    )
    oracles = [{b: Oracle(pseudo_target, budget=b) for b in budgets} for pseudo_target, _ in held]
    keys = [key for _, key in held]
    out = []
    found_all = method.run_variants_many(prepared, pseudo_source, oracles, keys, COMPONENTS, **options)
    for (pseudo_target, _), found in zip(held, found_all, strict=True):
        columns = np.vstack([np.column_stack([found[c][b] for c in COMPONENTS]) for b in budgets])
        out.append((columns, np.tile(pseudo_target.mean(axis=1), len(budgets))))
    return out


class TailoredPlus(Method):
    """TailoredBench+ (beyond the paper): TailoredBench's probe, a stacked estimate from it.

    Options: ``g_size``, ``distance`` and ``variant`` as above; ``weights``, stacking
    weights already fitted on these sources (e.g. reused in an interval's folds),
    taken as they are instead of fitted again; ``grow``, TailoredBench's growing probe.
    """

    name = "tailored_plus"
    kind = "tailored"
    options = MappingProxyType(
        {"g_size": 10, "distance": "manhattan", "variant": DEFAULT_VARIANT, "weights": None, "grow": False}
    )
    variants = VARIANTS
    in_paper = False
    real_use = True
    seeded_prepare = True

    def prepare(
        self,
        source,
        budgets,
        *,
        distance="manhattan",
        g_size=10,
        variant=DEFAULT_VARIANT,
        weights=None,
        variants=None,
        grow=False,
        seed=0,
    ) -> dict:
        """TailoredBench's preparation, the sources' accuracies and, if ``"stacked"`` is run, its weights.

        ``variants``: every variant the runs will compute (by default ``variant``); ``seed``
        splits the sources into the stacking folds.
        """
        prepared = TailoredBenchMethod().prepare(source, budgets, distance=distance)
        prepared["accuracy"] = source.mean(axis=1)
        if weights is not None:
            prepared["weights"] = np.asarray(weights, dtype=float)
        elif "stacked" in (variants or (variant,)):
            prepared["weights"] = stack_weights(source, budgets, g_size=g_size, distance=distance, seed=seed, grow=grow)
        return prepared

    def run(self, prepared, source, oracles, key, *, variant=DEFAULT_VARIANT, **options) -> dict[int, np.ndarray]:
        """One repetition: TailoredBench's probes (same random streams), the ``variant`` estimate."""
        return self.run_variants(prepared, source, oracles, key, [variant], **options)[variant]

    def run_many(self, prepared, source, oracles, keys, *, variant=DEFAULT_VARIANT, **options):
        found = self.run_variants_many(prepared, source, oracles, keys, [variant], **options)
        return [estimates[variant] for estimates in found]

    def run_variants(self, prepared, source, oracles, key, variants, **options) -> dict[str, dict[int, np.ndarray]]:
        """Several variants from one pass over the probes (``weights`` took effect in :meth:`prepare`)."""
        return self.run_variants_many(prepared, source, [oracles], [key], variants, **options)[0]

    def run_variants_many(
        self, prepared, source, oracles, keys, variants, *, g_size=10, distance="manhattan", weights=None, grow=False
    ) -> list[dict[str, dict[int, np.ndarray]]]:
        """Several repetitions, their probes chosen together (:func:`.tailoredbench.probes_of_runs`)."""
        estimates = [{v: {b: np.empty(run[b].n_targets) for b in run} for v in variants} for run in oracles]
        names = needed(variants)
        options = {"g_size": g_size, "distance": distance, "grow": grow}
        for i, budget, a in probes_of_runs(prepared, source, oracles, keys, **options):
            parts = components(source, prepared["accuracy"], a.native_mean, a.probe, a.results, names)
            for v in variants:
                estimates[i][v][budget][a.target] = combine(parts, v, prepared.get("weights"))
        return estimates
