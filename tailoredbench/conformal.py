"""The arithmetic of an interval for every estimate, calibrated on source models only.

Split-conformal over models (Vovk et al., *Algorithmic Learning in a Random World*, 2005; Lei et al., JASA
2018), each source in turn playing the target (:mod:`tailoredbench.intervals`), with scores normalised
(Papadopoulos et al., 2008) by a target's :func:`difficulty`: the sampling error of its estimate plus its
:func:`unlikeness` to its nearest sources. Per budget, the conformal quantile ``q`` of ``|error| / difficulty``
gives the interval ``estimate +/- q * difficulty``, clipped to [0, 1]; of the :data:`NORMALISATIONS`
compared on left-out sources (``reports/beyond/``), this sum gave the narrowest intervals.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from . import rng
from .errors import TailoredBenchError

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


def model_folds(n_models: int, folds: int, repeats: int, seed: int, stream: int = rng.INTERVAL_FOLDS):
    """Yield ``(index, kept, held_out)``: ``repeats`` seeded splits of the models into ``folds``.

    Examples
    --------
    >>> [(i, len(k), len(h)) for i, k, h in model_folds(5, 2, 1, seed=0)]
    [(0, 2, 3), (1, 3, 2)]
    """
    for repeat in range(repeats):
        order = rng.stream((seed, rng.PSEUDO_RUN), stream, repeat).permutation(n_models)
        for fold, held_out in enumerate(np.array_split(order, folds)):
            yield repeat * folds + fold, np.setdiff1d(order, held_out), held_out


def folds_by_kept(n_models: int, folds: int, repeats: int, seed: int, stream: int = rng.INTERVAL_FOLDS) -> list:
    """:func:`model_folds` grouped by the models they keep, ``[(kept, [(index, held_out), ...]), ...]``, so that
    work on the kept models is done once per group; :func:`in_fold_order` puts the results back in fold order.

    Examples
    --------
    >>> [(len(kept), [i for i, _ in held]) for kept, held in folds_by_kept(3, 3, 2, seed=0)]
    [(2, [0, 3]), (2, [1, 4]), (2, [2, 5])]
    """
    groups: dict[bytes, tuple[np.ndarray, list]] = {}
    for index, kept, held_out in model_folds(n_models, folds, repeats, seed, stream):
        groups.setdefault(kept.tobytes(), (kept, []))[1].append((index, held_out))
    return list(groups.values())


def in_fold_order(groups: list, results) -> list:
    """Results computed per group of :func:`folds_by_kept` (one per held-out fold) in fold order."""
    by_index = {
        index: result
        for (_, held), per_fold in zip(groups, results, strict=True)
        for (index, _), result in zip(held, per_fold, strict=True)
    }
    return [by_index[index] for index in sorted(by_index)]


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
