"""tailoredbench: estimate a model's full-benchmark accuracy from 20-40 items.

A fast, seeded implementation of TailoredBench (Yuan et al., ACL 2025, arXiv:2502.13576),
its baselines, and the notebooks that regenerate the paper's tables and figures.
"""

from ._version import __version__
from .batch import reproduce
from .datasets import (
    BENCHMARKS,
    SPECS,
    Benchmark,
    BenchmarkSpec,
    ResponseMatrix,
    load_benchmark,
    load_matrix,
    paper,  # the paper's numbers, which the study notebooks quote
    split_models,
)
from .errors import DataError, TailoredBenchError
from .estimator import TailoredBench
from .kmedoids import k_medoids
from .simulate import Simulation, simulate
from .tailored import Probe, calibrated_estimate, g_set, n_set, native_sources

__all__ = [
    "BENCHMARKS",
    "SPECS",
    "Benchmark",
    "BenchmarkSpec",
    "DataError",
    "Probe",
    "ResponseMatrix",
    "Simulation",
    "TailoredBench",
    "TailoredBenchError",
    "__version__",
    "calibrated_estimate",
    "g_set",
    "k_medoids",
    "load_benchmark",
    "load_matrix",
    "n_set",
    "native_sources",
    "paper",
    "reproduce",
    "simulate",
    "split_models",
]
