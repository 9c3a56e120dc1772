"""AnchorPoints (Vivek et al., *Anchor Points: Benchmarking Models with Much Fewer Examples*, EACL 2024).

Items are clustered by K-Medoids on ``1 - corr``, the correlation of the source models' correctness
across items; the estimate is the cluster-size-weighted mean of the target's results on the medoids.
Two items every source answers alike correlate 1; one no medoid matches joins the medoid it agrees with
most often (else all would fall, by a tie, to the first medoid: on POPE most items are constant).
"""

from __future__ import annotations

import numba
import numpy as np

from .. import rng
from ..errors import ctrl_c_held
from ..kmedoids import identical_rows, k_medoids
from .base import EachBudget


def item_correlation(source: np.ndarray) -> np.ndarray:
    """Pearson correlation between items across source models; a constant item's is 0, or 1 with its like.

    Examples
    --------
    >>> np.round(item_correlation(np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])), 6).tolist()
    [[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0]]
    """
    centred = source - source.mean(axis=0)
    norm = np.sqrt((centred**2).sum(axis=0))
    corr = centred.T @ centred
    _normalise(corr, np.where(norm > 0, norm, 1.0), norm == 0, source[0])
    return corr


@ctrl_c_held()  # numba compiles on the first call and drops a Ctrl-C that lands then
@numba.njit(cache=True, nogil=True)
def _normalise(corr, safe, constant, first):
    # in place, one pass (a fresh items x items array costs seconds on POPE)
    n = corr.shape[0]
    for i in range(n):
        for j in range(n):
            if i == j:
                v = 1.0
            elif constant[i] or constant[j]:
                v = 1.0 if constant[i] and constant[j] and first[i] == first[j] else 0.0
            else:
                v = min(1.0, max(-1.0, corr[i, j] / (safe[i] * safe[j])))
            corr[i, j] = v


def anchor_weights(corr: np.ndarray, medoids: np.ndarray, source: np.ndarray) -> np.ndarray:
    """Share of items that join each medoid: the one they correlate with most (first on ties).

    Examples
    --------
    >>> source = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 1.0, 1.0], [0.0, 1.0, 1.0, 0.0]])
    >>> # item 2, solved by every source, joins item 1 (solved by 2 of 3 sources), not item 0 (1 of 3)
    >>> anchor_weights(item_correlation(source), np.array([0, 1]), source).tolist()
    [0.25, 0.75]
    """
    labels = np.argmax(corr[medoids], axis=0)
    constant = np.flatnonzero(source.std(axis=0) == 0)
    unmatched = constant[corr[np.ix_(medoids, constant)].max(axis=0) < 1]
    if len(unmatched):
        value = source[0, unmatched][:, None]
        solved = source[:, medoids].mean(axis=0)[None, :]  # share of sources that solve each medoid
        labels[unmatched] = np.argmax(value * solved + (1 - value) * (1 - solved), axis=1)
    return np.bincount(labels, minlength=len(medoids)) / corr.shape[0]


class AnchorPoints(EachBudget):
    """One clustering per budget and run (random start), shared by all targets."""

    name = "anchor_points"
    kind = "baseline"

    def prepare(self, source, budgets, **_) -> dict:
        corr = item_correlation(source)
        distances = 1.0 - corr
        return {"corr": corr, "distances": distances, "same_row": identical_rows(distances)}

    def estimate(self, prepared, source, oracle, key, budget):
        gen = rng.stream(key, rng.ANCHOR_POINTS, budget)
        medoids = k_medoids(prepared["distances"], budget, random_state=gen, same_row=prepared["same_row"]).medoids
        return oracle.ask(medoids) @ anchor_weights(prepared["corr"], medoids, source)
