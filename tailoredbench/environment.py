"""The versions that compute the numbers: Python, the machine and the numeric libraries.

Reports record them and the run cache keys by them; :func:`reproducible_numerics` pins the instructions used.
"""

from __future__ import annotations

import os
import platform
from importlib import metadata

#: The libraries whose rounding a number can depend on.
NUMERIC_LIBRARIES = ("numpy", "scipy", "numba", "scikit-learn", "pandas")

#: OpenBLAS's kernels for x86-64 with AVX2 and FMA: the same rounding on processors with and without AVX-512.
BLAS_CORE = "Haswell"


def versions() -> dict[str, str]:
    """Python's, the machine's and each numeric library's versions, numpy's dispatch targets and OpenBLAS's kernels."""
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        **{name: metadata.version(name) for name in NUMERIC_LIBRARIES},  # without importing them
        "numpy_simd": " ".join(_numpy_simd()[1]) or "baseline",
        "blas": _blas_kernels(),
    }


def reproducible_numerics() -> dict[str, str]:
    """Environment variables (those not set yet) under which numpy and OpenBLAS compute, in processes started
    afterwards, as on x86-64 without AVX-512 (whose last bits move gp-IRT's non-convex fit); ``{}`` elsewhere."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return {}
    baseline, dispatch = _numpy_simd()
    found = set(baseline) | set(dispatch)
    if not ({"AVX2", "FMA3"} <= found or found & {"X86_V3", "X86_V4"}):
        return {}  # OpenBLAS's Haswell kernels need both; without them it picks older ones anyway
    pins = {"OPENBLAS_CORETYPE": BLAS_CORE}
    above = [target for target in dispatch if target.startswith(("AVX512", "X86_V4"))]
    if above:
        pins["NPY_DISABLE_CPU_FEATURES"] = ",".join(above)
    return {name: value for name, value in pins.items() if name not in os.environ}


def _numpy_simd() -> tuple[list[str], list[str]]:
    """numpy's baseline instructions and the optimisation targets it dispatches to on this processor (after any
    it was told to skip), as ``numpy.show_config`` reports them."""
    import numpy

    simd = numpy.show_config(mode="dicts").get("SIMD Extensions", {})
    return list(simd.get("baseline", [])), list(simd.get("found", []))


def _blas_kernels() -> str:
    """The BLAS libraries loaded and the kernels each picked, e.g. ``openblas Haswell``."""
    import numpy  # noqa: F401  (its BLAS is loaded with it)
    from threadpoolctl import threadpool_info

    found = {
        f"{i['internal_api']} {i.get('architecture') or ''}".strip()
        for i in threadpool_info()
        if i["user_api"] == "blas"
    }
    return ", ".join(sorted(found)) or "none found"
