"""TailoredBench+ (beyond the paper): TailoredBench's probe, a stacked estimate from it.

The probe is exactly TailoredBench's; the estimate is a convex combination of single estimates
(:mod:`tailoredbench.tailored`) weighted by cross-validation on the *source* models only
(:func:`stack_weights`). Each single estimate, and the means ``"mix"`` and ``"local_mix"``, is a variant.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

import numpy as np
from joblib import Parallel, delayed

from .. import cache as run_cache
from .. import rng
from ..tailored import COMPONENTS, DEFAULT_VARIANT, VARIANTS, combine, components, needed, simplex_weights
from .base import Method, Oracle
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

    Each of :data:`STACK_FOLDS` folds (:data:`STACK_REPEATS` splits) plays the targets of the others at
    every budget; :func:`simplex_weights` picks the weights of lowest MAE. Equal with fewer than 3 sources.
    """
    if source.shape[0] < 3:  # no fold would leave two pseudo-sources: nothing to fit on
        return np.full(len(COMPONENTS), 1 / len(COMPONENTS))
    groups = rng.folds_by_kept(
        source.shape[0], min(STACK_FOLDS, source.shape[0]), STACK_REPEATS, seed, rng.STACKING_FOLDS
    )
    cache = run_cache.folder()  # this process's, whatever the workers' environment
    # folds that keep the same sources share one preparation, on the caller's joblib workers
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
    outputs = rng.in_fold_order(groups, outputs)
    return simplex_weights(np.vstack([c for c, _ in outputs]), np.concatenate([t for _, t in outputs]))


def _stack_folds(pseudo_source, held, budgets, seed, cache, **options) -> list[tuple[np.ndarray, np.ndarray]]:
    """The folds that keep ``pseudo_source`` (``held``: each one's pseudo-targets and key), prepared once:
    per fold, its pseudo-targets' estimates by every component (a column each) at every budget, and truth."""
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
    """TailoredBench+: options ``g_size``, ``distance``, ``variant``, ``grow`` and ``weights`` (stacking
    weights already fitted on these sources, e.g. reused in an interval's folds)."""

    name = "tailored_plus"
    kind = "tailored"
    options = MappingProxyType(
        {"g_size": 10, "distance": "manhattan", "variant": DEFAULT_VARIANT, "weights": None, "grow": False}
    )
    variants = VARIANTS
    in_paper = False
    real_use = True

    def _probe_options(self, options) -> dict:
        """The options of TailoredBench's probe among ``options``, defaults filled in."""
        return {key: options.get(key, self.options[key]) for key in ("g_size", "distance", "grow")}

    def prepare(
        self, source, budgets, *, seed=0, cache=None, variants=(DEFAULT_VARIANT,), weights=None, **options
    ) -> dict:
        """TailoredBench's preparation, the sources' accuracies and, if ``"stacked"`` is run, its weights."""
        options = self._probe_options(options)
        prepared = TailoredBenchMethod().prepare(source, budgets, cache=cache, distance=options["distance"])
        prepared["accuracy"] = source.mean(axis=1)
        if weights is not None:
            prepared["weights"] = np.asarray(weights, dtype=float)
        elif "stacked" in variants:
            prepared["weights"] = stack_weights(source, budgets, seed=seed, **options)
        return prepared

    def run(self, prepared, source, oracles, keys, *, variants=(DEFAULT_VARIANT,), weights=None, **options):
        """Every variant from one pass over TailoredBench's probes (``weights`` took effect in :meth:`prepare`)."""
        for key in options.keys() - {"g_size", "distance", "grow"}:  # a misspelt option must not pass unseen
            raise TypeError(f"TailoredPlus.run() got an unexpected keyword argument {key!r}")
        estimates = [{v: {b: np.empty(run[b].n_targets) for b in run} for v in variants} for run in oracles]
        names = needed(variants)
        for i, budget, a in probes_of_runs(prepared, source, oracles, keys, **self._probe_options(options)):
            parts = components(source, prepared["accuracy"], a.native_mean, a.probe, a.results, names)
            for v in variants:
                estimates[i][v][budget][a.target] = combine(parts, v, prepared.get("weights"))
        return estimates
