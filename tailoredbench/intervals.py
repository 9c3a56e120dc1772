"""Intervals calibrated on source models: a method runs on sources playing targets, as it would on targets.

The conformal arithmetic is :mod:`tailoredbench.conformal`; this module collects the errors.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from joblib import Parallel, delayed

from . import cache as run_cache
from . import rng
from .conformal import LEVEL, PseudoTargets, difficulty, folds_by_kept, in_fold_order, unlikeness
from .errors import TailoredBenchError
from .methods import MethodSpec
from .oracle import Oracle

REPEATS = 1
#: Repetitions are added until there are at least this many pseudo-targets per budget.
MIN_ERRORS = 100


def revealed_unlikeness(source: np.ndarray, oracle: Oracle) -> tuple[np.ndarray, np.ndarray]:
    """Per target of ``oracle``: its :func:`unlikeness` on the items a method asked, and their number."""
    revealed = [oracle.revealed(t) for t in range(oracle.n_targets)]
    unlike = np.array([unlikeness(source, items, results) for items, results in revealed])
    return unlike, np.array([len(items) for items, _ in revealed])


def difficulties(source: np.ndarray, oracle: Oracle, estimates) -> np.ndarray:
    """:func:`difficulty` of every target of ``oracle``, given the method's estimates of them."""
    return difficulty(estimates, *revealed_unlikeness(source, oracle))


def pseudo_targets(
    method: str | MethodSpec,
    source: np.ndarray,
    budgets: Sequence[int],
    *,
    seed: int = 0,
    folds: int | None = None,
    repeats: int | None = None,
    **options,
) -> dict[int, PseudoTargets]:
    """``{budget: PseudoTargets}``: errors and difficulties of ``method`` on source models playing targets.

    ``method`` is a name from :data:`tailoredbench.methods.METHODS` (``base[variant]`` included), ``options``
    its options; ``seed`` seeds the fold splits and the method. ``folds`` over the sources default to the
    method's ``interval_folds``, else one per source; ``repeats`` (independent splits) to enough for
    :data:`MIN_ERRORS` pseudo-targets.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> source = (rng.random((20, 80)) < rng.random((20, 1))).astype(float)
    >>> pseudo = pseudo_targets("random", source, [10], folds=4, repeats=1)
    >>> pseudo[10].errors.shape, bool((pseudo[10].difficulty >= 0.1).all())
    ((20,), True)
    """
    spec = MethodSpec.parse(method, options)
    return pseudo_targets_of([spec], source, budgets, seed=seed, folds=folds, repeats=repeats)[spec.name]


def pseudo_targets_of(
    specs: Sequence[MethodSpec],
    source: np.ndarray,
    budgets: Sequence[int],
    *,
    seed: int = 0,
    folds: int | None = None,
    repeats: int | None = None,
) -> dict[str, dict[int, PseudoTargets]]:
    """:func:`pseudo_targets` of several variants of one method, which share their probes, from one pass over
    the folds, on the caller's joblib workers: the numbers of one variant at a time, for the cost of one."""
    if len({s.base for s in specs}) != 1:
        raise TailoredBenchError(
            f"pseudo-targets of one method's variants at a time, got {', '.join(s.name for s in specs)}"
        )
    budgets = sorted(int(b) for b in budgets)
    # folds that keep the same sources share one preparation; the run cache is this process's
    groups = fold_groups(specs[0], source.shape[0], seed=seed, folds=folds, repeats=repeats)
    cache = run_cache.folder()
    done = Parallel()(
        delayed(_folds)(
            specs, source[kept], [(source[held_out], index) for index, held_out in held], budgets, seed, cache
        )
        for kept, held in groups
    )
    parts = in_fold_order(groups, done)
    return {
        s.name: {
            b: PseudoTargets(*map(np.concatenate, zip(*[p[s.name][b] for p in parts], strict=True))) for b in budgets
        }
        for s in specs
    }


def fold_groups(
    spec: MethodSpec, n_sources: int, *, seed: int = 0, folds: int | None = None, repeats: int | None = None
) -> list:
    """The folds over ``n_sources`` source models that calibrate ``spec``'s intervals (defaults as
    :func:`pseudo_targets`), grouped by the sources they keep (:func:`~tailoredbench.conformal.folds_by_kept`)."""
    impl = spec.method
    if not impl.intervals:
        raise TailoredBenchError(f"method {spec.name} has no calibrated intervals")
    folds = min(folds or impl.interval_folds or n_sources, n_sources)
    if folds < 2 or n_sources - n_sources // folds < 2:
        raise TailoredBenchError(f"{n_sources} source models are too few to calibrate an interval")
    if repeats is None:
        repeats = max(REPEATS, -(-MIN_ERRORS // n_sources))
    return folds_by_kept(n_sources, folds, repeats, seed)


def _folds(specs, pseudo_source, held, budgets, seed, cache) -> list[dict]:
    """The folds that keep ``pseudo_source`` (``held``: each one's pseudo-targets and index), prepared once:
    per fold, method and budget, its pseudo-targets' (errors, estimates, unlikeness, item counts)."""
    impl, options, variants = specs[0].method, specs[0].options, [s.variant for s in specs]
    prepared = impl.prepare(pseudo_source, budgets, seed=seed, cache=cache, variants=variants, **options)
    oracles = [{b: Oracle(target, budget=b) for b in budgets} for target, _ in held]
    keys = [(seed, rng.PSEUDO_RUN + i) for _, i in held]
    found = impl.run(prepared, pseudo_source, oracles, keys, variants=variants, **options)
    parts = []
    for (target, _), fold_oracles, by_variant in zip(held, oracles, found, strict=True):
        truth = target.mean(axis=1)
        fold: dict[str, dict] = {s.name: {} for s in specs}
        for b in budgets:
            revealed = revealed_unlikeness(pseudo_source, fold_oracles[b])
            for s in specs:
                estimate = np.asarray(by_variant[s.variant][b], dtype=float)
                fold[s.name][b] = (np.abs(estimate - truth), estimate, *revealed)
        parts.append(fold)
    return parts


def scales(
    method: str | MethodSpec, source: np.ndarray, budgets: Sequence[int], level: float = LEVEL, **kwargs
) -> dict:
    """``{budget: q}`` for ``method`` on these sources (keywords as :func:`pseudo_targets`): a target's
    half-width is ``q * difficulty``."""
    pseudo = pseudo_targets(method, source, budgets, **kwargs)
    return {b: p.quantile(level=level) for b, p in pseudo.items()}
