"""tailoredbench: estimate a model's full-benchmark accuracy from 20-40 items.

A fast, seeded implementation of TailoredBench (Yuan et al., ACL 2025, arXiv:2502.13576),
its baselines, and the notebooks that regenerate the paper's tables and figures.

The names below load their modules when first used, so that the ``tailoredbench``
command starts, and answers Ctrl-C in one line, before numpy, pandas and numba load.
"""

import importlib
import sys
import types

from ._version import __version__

#: Each public name and the module that defines it.
_HOME = {
    "reproduce": "batch",
    "BENCHMARKS": "datasets",
    "SPECS": "datasets",
    "Benchmark": "datasets",
    "BenchmarkSpec": "datasets",
    "ResponseMatrix": "datasets",
    "load_benchmark": "datasets",
    "load_matrix": "datasets",
    "split_models": "datasets",
    "paper": "datasets",  # the paper's numbers, which the study notebooks quote
    "DataError": "errors",
    "TailoredBenchError": "errors",
    "TailoredBench": "estimator",
    "k_medoids": "kmedoids",
    "Simulation": "simulate",
    "simulate": "simulate",
    "Probe": "tailored",
    "calibrated_estimate": "tailored",
    "g_set": "tailored",
    "n_set": "tailored",
    "native_sources": "tailored",
}

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


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_HOME[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value) -> None:
        # importing the module simulate binds it here; the package's `simulate` is its function
        if name == "simulate" and isinstance(value, types.ModuleType):
            value = value.simulate
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
