"""Random items + ridge regression (alpha 10) from the source models' results on them to their accuracy.

G. Zhang et al., *How Benchmark Prediction from Fewer Data Misses the Mark*, 2025.
"""

from __future__ import annotations

import numpy as np

from ..tailored import ridge
from .base import Method, each_run
from .random import random_items


class RandomRegression(Method):
    name = "random_regression"
    kind = "baseline"

    def prepare(self, source, budgets, **_) -> dict:
        return {"accuracy": source.mean(axis=1)}

    def run(self, prepared, source, oracles, keys, **_):
        return each_run(lambda run, key: self._run(prepared, source, run, key), oracles, keys)

    def _run(self, prepared, source, oracles, key) -> dict[int, np.ndarray]:
        """Same random items as :mod:`.random` in each run; estimates clipped to [0, 1]."""
        estimates = {}
        for budget, oracle in oracles.items():
            items = random_items(key, budget, oracle.n_items)
            coef, intercept = ridge(source[:, items], prepared["accuracy"])
            estimates[budget] = np.clip(oracle.ask(items) @ coef + intercept, 0.0, 1.0)
        return estimates
