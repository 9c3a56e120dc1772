"""TailoredBench+ (beyond the paper): TailoredBench's probe, a stacked estimate from it.

The probe is exactly TailoredBench's (same G-set, native sources, N-set and random
streams); the estimate is a convex combination of single estimates
(:mod:`tailoredbench.stacking`) whose weights are fitted by cross-validation on the
*source* models only (:func:`stack_weights`): no target result chooses anything.

Variants (``variant=``) keep each ingredient measurable on its own:
``"calibrated"`` (TailoredBench's own estimate), ``"uncalibrated"``, ``"regression"``,
``"local_regression"``, ``"neighbours"``, ``"soft_calibration"`` (calibration against a
native mean weighting every source by its agreement on the probe), ``"mix"`` and
``"local_mix"`` (means of two estimates) and ``"stacked"`` (the default).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

import numpy as np
from joblib import Parallel, delayed

from .. import rng, run_cache
from ..conformal import folds_by_kept, in_fold_order
from ..oracle import Oracle
from ..stacking import COMPONENTS, DEFAULT_VARIANT, VARIANTS, combine, components, needed, simplex_weights
from .base import Method
from .tailoredbench import TailoredBenchMethod, probes_of_runs

#: Cross-validation over source models that fits the stacking weights: folds, repeats.
STACK_FOLDS = 5
STACK_REPEATS = 2


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
    prepared = method.prepare(pseudo_source, budgets, seed=seed, cache=cache, variants=COMPONENTS, **options)
    oracles = [{b: Oracle(pseudo_target, budget=b) for b in budgets} for pseudo_target, _ in held]
    found_all = method.run(prepared, pseudo_source, oracles, [key for _, key in held], variants=COMPONENTS, **options)
    out = []
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

    def prepare(
        self,
        source,
        budgets,
        *,
        seed=0,
        cache=None,
        variants=(DEFAULT_VARIANT,),
        g_size=10,
        distance="manhattan",
        weights=None,
        grow=False,
        **_,
    ) -> dict:
        """TailoredBench's preparation, the sources' accuracies and, if ``"stacked"`` is run, its weights.

        ``seed`` splits the sources into the stacking folds.
        """
        prepared = TailoredBenchMethod().prepare(source, budgets, cache=cache, distance=distance)
        prepared["accuracy"] = source.mean(axis=1)
        if weights is not None:
            prepared["weights"] = np.asarray(weights, dtype=float)
        elif "stacked" in variants:
            prepared["weights"] = stack_weights(source, budgets, g_size=g_size, distance=distance, seed=seed, grow=grow)
        return prepared

    def run(
        self,
        prepared,
        source,
        oracles,
        keys,
        *,
        variants=(DEFAULT_VARIANT,),
        g_size=10,
        distance="manhattan",
        weights=None,
        grow=False,
    ):
        """Every variant from one pass over TailoredBench's probes (``weights`` took effect in :meth:`prepare`)."""
        estimates = [{v: {b: np.empty(run[b].n_targets) for b in run} for v in variants} for run in oracles]
        names = needed(variants)
        options = {"g_size": g_size, "distance": distance, "grow": grow}
        for i, budget, a in probes_of_runs(prepared, source, oracles, keys, **options):
            parts = components(source, prepared["accuracy"], a.native_mean, a.probe, a.results, names)
            for v in variants:
                estimates[i][v][budget][a.target] = combine(parts, v, prepared.get("weights"))
        return estimates
