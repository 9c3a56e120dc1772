"""Data: the registry of pinned upstream files, readers, response matrices and each benchmark's spec."""

from .benchmarks import BENCHMARKS, PAPER_BENCHMARKS, SPECS, Benchmark, BenchmarkSpec, benchmark_spec, load_benchmark
from .files import fetch, registry
from .matrix import ResponseMatrix, load_matrix, split_models

__all__ = [
    "BENCHMARKS",
    "PAPER_BENCHMARKS",
    "SPECS",
    "Benchmark",
    "BenchmarkSpec",
    "ResponseMatrix",
    "benchmark_spec",
    "fetch",
    "load_benchmark",
    "load_matrix",
    "registry",
    "split_models",
]
