"""SYNTHETIC response matrices for measuring speed and memory at any size: never reported as results.

Models answer under a 2PL item-response model (Birnbaum 1968), ``P(correct) = 1 / (1 + exp(-a_i (theta_m - b_i)))``,
with abilities ``theta``, difficulties ``b`` and discriminations ``a`` drawn at random.
"""

from __future__ import annotations

import numpy as np

from ..errors import check_integer
from .benchmarks import Benchmark
from .matrix import ResponseMatrix, split_models


def synthetic_2pl(n_models: int, n_items: int, seed: int = 0) -> Benchmark:
    """A SYNTHETIC benchmark of ``n_models`` models (half sources, half targets) by ``n_items`` items.

    Examples
    --------
    >>> bench = synthetic_2pl(20, 50)
    >>> bench.source.shape, bench.target.shape, bench.provenance["synthetic"]
    ((10, 50), (10, 50), True)
    """
    n_models = check_integer(n_models, "n_models", 4)
    n_items = check_integer(n_items, "n_items", 2)
    gen = np.random.default_rng(seed)
    ability = gen.normal(size=n_models)
    difficulty = gen.normal(size=n_items)
    discrimination = gen.lognormal(0.0, 0.3, size=n_items)
    p = 1.0 / (1.0 + np.exp(-discrimination * (ability[:, None] - difficulty)))
    values = (gen.random((n_models, n_items)) < p).astype(np.float64)
    matrix = ResponseMatrix(values, source="synthetic 2PL")
    source, target = split_models(matrix)
    info = {"synthetic": True, "description": f"SYNTHETIC 2PL responses, seed {seed}: for speed, not results"}
    return Benchmark(f"synthetic_{n_models}x{n_items}", source, target, info)
