"""Random items + ridge regression from the source models (Zhang et al., 2025).

G. Zhang et al., *How Benchmark Prediction from Fewer Data Misses the Mark*, 2025:
random items, then a ridge regression (alpha 10) from the source models' results on
those items to their full-benchmark accuracy, applied to each target.
"""

from __future__ import annotations

import numpy as np

from .base import Method
from .random import random_items

ALPHA = 10.0


def ridge(X: np.ndarray, y: np.ndarray, alpha: float = ALPHA) -> tuple[np.ndarray, float]:
    """Ridge regression with an unpenalised intercept: ``(coef, intercept)``.

    Examples
    --------
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> coef, intercept = ridge(X, 2 * X[:, 0] + 1, alpha=0.0)
    >>> np.round(coef, 6).tolist(), round(intercept, 6)
    ([2.0], 1.0)
    """
    x_mean, y_mean = X.mean(axis=0), y.mean()
    Xc = X - x_mean
    coef = np.linalg.solve(Xc.T @ Xc + alpha * np.eye(X.shape[1]), Xc.T @ (y - y_mean))
    return coef, float(y_mean - x_mean @ coef)


class RandomRegression(Method):
    name = "random_regression"
    kind = "baseline"

    def prepare(self, source, budgets) -> dict:
        return {"accuracy": source.mean(axis=1)}

    def run(self, prepared, source, oracles, key) -> dict[int, np.ndarray]:
        """Same random items as :mod:`.random` in each run; estimates clipped to [0, 1]."""
        estimates = {}
        for budget, oracle in oracles.items():
            items = random_items(key, budget, oracle.n_items)
            coef, intercept = ridge(source[:, items], prepared["accuracy"])
            estimates[budget] = np.clip(oracle.ask(items) @ coef + intercept, 0.0, 1.0)
        return estimates
