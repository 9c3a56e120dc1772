import os
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ["TAILOREDBENCH_DATA"])  # set by the top-level conftest.py


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def synthetic_matrix(n_models: int, n_items: int, seed: int = 0) -> np.ndarray:
    """SYNTHETIC 0/1 data from a one-dimensional logistic model (for unit tests only)."""
    gen = np.random.default_rng(seed)
    ability = gen.normal(size=n_models)
    difficulty = gen.normal(size=n_items)
    p = 1 / (1 + np.exp(-(ability[:, None] - difficulty[None, :]) * 1.7))
    return (gen.random((n_models, n_items)) < p).astype(float)


@pytest.fixture(scope="session")
def gsm8k():
    from tailoredbench import load_benchmark

    return load_benchmark("gsm8k")
