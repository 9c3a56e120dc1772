"""Random: a uniform sample of ``budget`` items; the estimate is the mean on them (e.g. tinyBenchmarks, ICML 2024)."""

from __future__ import annotations

import numpy as np

from .. import rng
from .base import EachBudget


def random_items(key, budget: int, n_items: int) -> np.ndarray:
    """The run's random items at one budget (shared with random+regression: a paired comparison)."""
    return rng.stream(key, rng.RANDOM_ITEMS, budget).choice(n_items, budget, replace=False)


class Random(EachBudget):
    """One random subset per run and budget, shared by all targets."""

    name = "random"
    kind = "baseline"

    def prepare(self, source, budgets, **_) -> dict:
        return {}

    def estimate(self, prepared, source, oracle, key, budget):
        return oracle.ask(random_items(key, budget, oracle.n_items)).mean(axis=1)
