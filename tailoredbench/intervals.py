"""A 90% interval for every estimate, calibrated on source models only.

Split-conformal over models (Vovk et al., *Algorithmic Learning in a Random World*,
2005; Lei et al., "Distribution-free predictive inference for regression", JASA
2018), with source models standing in for targets: the sources are split into
``folds``; each fold in turn plays the targets while the other folds are the
sources, and the method estimates the fold's accuracies exactly as it would a
target's. The absolute errors of these pseudo-targets, per budget, give the
half-width ``q``: their conformal quantile ``ceil((n + 1) * level) / n``. A target's
interval is ``estimate +/- q``, clipped to [0, 1].

No target result is read. The pseudo-targets are estimated from fewer sources than
the real targets (``1 - 1/folds`` of them), so the intervals err on the wide side.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .errors import TailoredBenchError
from .methods import get_method, method_options
from .oracle import Oracle

LEVEL = 0.9
FOLDS = 10
REPEATS = 1
#: With few sources, fold splits are repeated until there are at least this many errors.
MIN_ERRORS = 50
#: Key offset of the pseudo-target runs: their random streams never coincide with a
#: simulation's own runs (which use (seed, run) with run < this).
_PSEUDO_RUN = 1_000_000


def pseudo_target_errors(
    method: str,
    source: np.ndarray,
    budgets: Sequence[int],
    *,
    seed: int = 0,
    folds: int = FOLDS,
    repeats: int | None = None,
    **options,
) -> dict[int, np.ndarray]:
    """Absolute errors of ``method`` on source models treated as targets, per budget.

    Parameters
    ----------
    method : str
        A name from :data:`tailoredbench.methods.METHODS`.
    source : ndarray of shape (n_sources, n_items)
    budgets : sequence of int
    seed : int
        Seeds the fold splits and the method's random choices.
    folds : int
        Cross-validation folds over the source models (at most their number).
    repeats : int, optional
        Independent fold splits; each source is a pseudo-target ``repeats`` times.
        By default :data:`REPEATS`, or more when there are fewer than
        :data:`MIN_ERRORS` sources.
    **options
        Passed to the method (``g_size``, ``distance``, ...).

    Returns
    -------
    dict
        ``{budget: errors}``, ``repeats * n_sources`` errors each.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> source = (rng.random((20, 80)) < rng.random((20, 1))).astype(float)
    >>> errors = pseudo_target_errors("random", source, [10], folds=4, repeats=1)
    >>> errors[10].shape
    (20,)
    """
    n_sources = source.shape[0]
    folds = min(folds, n_sources)
    if folds < 2 or n_sources - n_sources // folds < 2:
        raise TailoredBenchError(f"{n_sources} source models are too few to calibrate an interval")
    impl = get_method(method)
    if repeats is None:
        repeats = max(REPEATS, -(-MIN_ERRORS // n_sources))
    budgets = sorted(int(b) for b in budgets)
    options = {**options, **method_options(method), "budgets": budgets}
    errors = {b: [] for b in budgets}
    for index, kept, held_out in model_folds(n_sources, folds, repeats, seed):
        pseudo_source, pseudo_target = source[kept], source[held_out]
        prepared = impl.prepare(pseudo_source, **options)
        oracles = {b: Oracle(pseudo_target, budget=b) for b in budgets}
        estimates = impl.run(prepared, pseudo_source, oracles, (seed, _PSEUDO_RUN + index), **options)
        truth = pseudo_target.mean(axis=1)
        for b in budgets:
            errors[b].append(np.abs(np.asarray(estimates[b]) - truth))
    return {b: np.concatenate(errors[b]) for b in budgets}


def model_folds(n_models: int, folds: int, repeats: int, seed: int, stream: int = 0):
    """Yield ``(index, kept, held_out)``: ``repeats`` seeded splits of the models into ``folds``.

    Examples
    --------
    >>> [(i, len(k), len(h)) for i, k, h in model_folds(5, 2, 1, seed=0)]
    [(0, 2, 3), (1, 3, 2)]
    """
    for repeat in range(repeats):
        order = np.random.default_rng([seed, _PSEUDO_RUN, stream, repeat]).permutation(n_models)
        for fold, held_out in enumerate(np.array_split(order, folds)):
            yield repeat * folds + fold, np.setdiff1d(order, held_out), held_out


def conformal_halfwidth(errors: np.ndarray, level: float = LEVEL) -> float:
    """The split-conformal quantile of absolute errors: ``q`` with ``P(|error| <= q) >= level``.

    With too few errors for the level (``ceil((n + 1) * level) > n``) the largest
    error is used.

    Examples
    --------
    >>> conformal_halfwidth(np.arange(1, 20) / 100, level=0.9)
    0.18
    """
    if not 0 < level < 1:
        raise TailoredBenchError(f"interval level must be between 0 and 1, got {level}")
    errors = np.sort(np.asarray(errors, dtype=float))
    rank = min(int(np.ceil((len(errors) + 1) * level)), len(errors))
    return float(errors[rank - 1])


def halfwidths(method: str, source: np.ndarray, budgets: Sequence[int], level: float = LEVEL, **kwargs) -> dict:
    """``{budget: q}`` for ``method`` on these sources (see :func:`pseudo_target_errors`)."""
    errors = pseudo_target_errors(method, source, budgets, **kwargs)
    return {b: conformal_halfwidth(e, level) for b, e in errors.items()}


def interval(estimate, halfwidth: float) -> tuple[np.ndarray, np.ndarray]:
    """``(low, high)``: ``estimate -/+ halfwidth`` clipped to [0, 1].

    Examples
    --------
    >>> low, high = interval(np.array([0.5, 0.98]), 0.05)
    >>> np.round(low, 2).tolist(), np.round(high, 2).tolist()
    ([0.45, 0.93], [0.55, 1.0])
    """
    estimate = np.asarray(estimate, dtype=float)
    return np.clip(estimate - halfwidth, 0.0, 1.0), np.clip(estimate + halfwidth, 0.0, 1.0)
