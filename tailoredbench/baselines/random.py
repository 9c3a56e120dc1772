"""Random: a uniform sample of ``budget`` items; the estimate is the mean on them.

The baseline of every benchmark-reduction paper, e.g. Polo et al., *tinyBenchmarks:
evaluating LLMs with fewer examples*, ICML 2024.
"""

from __future__ import annotations

import numpy as np

from . import rng_for


def prepare(source: np.ndarray, **_) -> dict:
    return {}


def run(prepared, source, oracles, key, **_) -> dict[int, np.ndarray]:
    """Each run draws one random subset per budget, shared by all targets."""
    estimates = {}
    for budget, oracle in oracles.items():
        items = rng_for(key, budget).choice(oracle.n_items, budget, replace=False)
        estimates[budget] = oracle.ask(items).mean(axis=1)
    return estimates
