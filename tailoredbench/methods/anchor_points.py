"""AnchorPoints (Vivek et al., EACL 2024): medoids of item-item correlation.

R. Vivek, K. Ethayarajh, D. Yang, D. Kiela. *Anchor Points: Benchmarking Models with
Much Fewer Examples*, EACL 2024. Items are clustered by K-Medoids on ``1 - corr``,
the correlation of the source models' correctness across items (NaN, from constant
items, counts as 0); every item joins the medoid it correlates with most; the
estimate is the cluster-size-weighted mean of the target's results on the medoids.
"""

from __future__ import annotations

import numpy as np

from .. import rng
from ..kmedoids import k_medoids
from .base import Method


def item_correlation(source: np.ndarray) -> np.ndarray:
    """Pearson correlation between items across source models, NaN set to 0.

    Examples
    --------
    >>> np.round(item_correlation(np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]])), 6).tolist()
    [[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    centred = source - source.mean(axis=0)
    norm = np.sqrt((centred**2).sum(axis=0))
    safe = np.where(norm > 0, norm, 1.0)
    corr = (centred.T @ centred) / np.outer(safe, safe)
    corr[norm == 0, :] = 0.0
    corr[:, norm == 0] = 0.0
    np.fill_diagonal(corr, 1.0)
    return np.clip(corr, -1.0, 1.0)


def anchor_weights(corr: np.ndarray, medoids: np.ndarray) -> np.ndarray:
    """Share of items that correlate most with each medoid (first medoid on ties)."""
    labels = np.argmax(corr[medoids], axis=0)
    return np.bincount(labels, minlength=len(medoids)) / corr.shape[0]


class AnchorPoints(Method):
    name = "anchor_points"
    kind = "baseline"

    def prepare(self, source, budgets) -> dict:
        corr = item_correlation(source)
        return {"corr": corr, "distances": 1.0 - corr}

    def run(self, prepared, source, oracles, key) -> dict[int, np.ndarray]:
        """One clustering per budget and run (random start), shared by all targets."""
        estimates = {}
        for budget, oracle in oracles.items():
            gen = rng.stream(key, rng.ANCHOR_POINTS, budget)
            medoids = k_medoids(prepared["distances"], budget, random_state=gen).medoids
            estimates[budget] = oracle.ask(medoids) @ anchor_weights(prepared["corr"], medoids)
        return estimates
