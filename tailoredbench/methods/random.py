"""Random: a uniform sample of ``budget`` items; the estimate is the mean on them (e.g. tinyBenchmarks, ICML 2024)."""

from __future__ import annotations

import numpy as np

from .. import rng
from .base import Method, each_run


def random_items(key, budget: int, n_items: int) -> np.ndarray:
    """The run's random items at one budget (shared with random+regression: a paired comparison)."""
    return rng.stream(key, rng.RANDOM_ITEMS, budget).choice(n_items, budget, replace=False)


class Random(Method):
    name = "random"
    kind = "baseline"

    def prepare(self, source, budgets, **_) -> dict:
        return {}

    def run(self, prepared, source, oracles, keys, **_):
        """Each run draws one random subset per budget, shared by all targets."""
        return each_run(
            lambda run, key: {b: o.ask(random_items(key, b, o.n_items)).mean(axis=1) for b, o in run.items()},
            oracles,
            keys,
        )
