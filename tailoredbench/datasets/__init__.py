"""Data: the registry of pinned upstream files, readers, and response matrices."""

from .benchmarks import BENCHMARKS, Benchmark, load_benchmark
from .files import fetch, registry
from .matrix import ResponseMatrix, load_matrix, split_models

__all__ = [
    "BENCHMARKS",
    "Benchmark",
    "ResponseMatrix",
    "fetch",
    "load_benchmark",
    "load_matrix",
    "registry",
    "split_models",
]
