"""tailoredbench: estimate a model's full-benchmark accuracy from 20-40 items.

TailoredBench (Yuan et al., ACL 2025, arXiv:2502.13576) and its baselines. The names below load their modules
when first used, so that the ``tailoredbench`` command starts before numpy, pandas and numba load.
"""

import importlib
import sys
import types

from ._version import __version__

#: Each public name and the module that defines it (``paper``: the paper's numbers, which the studies quote).
_HOME = {
    name: module
    for module, names in (
        ("batch", "reproduce"),
        ("datasets", "BENCHMARKS SPECS Benchmark BenchmarkSpec ResponseMatrix paper"),
        ("datasets", "load_benchmark load_matrix split_models"),
        ("errors", "DataError TailoredBenchError"),
        ("estimator", "TailoredBench"),
        ("kmedoids", "k_medoids"),
        ("simulate", "Simulation simulate"),
        ("tailored", "Probe calibrated_estimate g_set n_set native_sources"),
    )
    for name in names.split()
}

__all__ = ["__version__", *_HOME]


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
