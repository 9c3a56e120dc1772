"""Every estimate's interval, calibrated on source models only.

Split-conformal over models (Vovk et al., *Algorithmic Learning in a Random World*, 2005; Lei et al., JASA
2018): each source in turn plays the target (:func:`pseudo_targets`), a method runs on it as it would on a
target, and its errors are scored (Papadopoulos et al., 2008) by the target's :func:`difficulty`: the sampling
error of its estimate plus its :func:`unlikeness` to its nearest sources. Per budget, the conformal quantile
``q`` of ``|error| / difficulty`` gives the interval ``estimate +/- q * difficulty``, clipped to [0, 1]; of the
:data:`NORMALISATIONS` compared on left-out sources (``reports/beyond/``), this sum gave the narrowest intervals.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed

from . import cache as run_cache
from . import rng
from .errors import TailoredBenchError
from .methods import MethodSpec, Oracle

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


#: Independent splits of the sources into folds, at the least.
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
    parts = rng.in_fold_order(groups, done)
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
    :func:`pseudo_targets`), grouped by the sources they keep (:func:`~tailoredbench.rng.folds_by_kept`)."""
    impl = spec.method
    if not impl.intervals:
        raise TailoredBenchError(f"method {spec.name} has no calibrated intervals")
    folds = min(folds or impl.interval_folds or n_sources, n_sources)
    if folds < 2 or n_sources - n_sources // folds < 2:
        raise TailoredBenchError(f"{n_sources} source models are too few to calibrate an interval")
    if repeats is None:
        repeats = max(REPEATS, -(-MIN_ERRORS // n_sources))
    return rng.folds_by_kept(n_sources, folds, repeats, seed)


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
