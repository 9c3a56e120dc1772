"""Random items + ridge regression (alpha 10) from the source models' results on them to their accuracy.

G. Zhang et al., *How Benchmark Prediction from Fewer Data Misses the Mark*, 2025.
"""

from __future__ import annotations

from ..tailored import ridge
from .base import EachBudget
from .random import random_items


class RandomRegression(EachBudget):
    """Same random items as :mod:`.random` in each run; estimates clipped to [0, 1]."""

    name = "random_regression"
    kind = "baseline"

    def prepare(self, source, budgets, **_) -> dict:
        return {"accuracy": source.mean(axis=1)}

    def estimate(self, prepared, source, oracle, key, budget):
        items = random_items(key, budget, oracle.n_items)
        coef, intercept = ridge(source[:, items], prepared["accuracy"])
        return oracle.ask(items) @ coef + intercept
