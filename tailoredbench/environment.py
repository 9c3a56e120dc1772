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
        "numpy_simd": " ".join(_numpy_cpu()[1]) or "baseline",
        "blas": _blas_kernels(),
    }


def reproducible_numerics() -> dict[str, str]:
    """Environment variables (those not set yet) under which numpy and OpenBLAS compute, in processes started
    afterwards, as on x86-64 without AVX-512 (whose last bits move gp-IRT's non-convex fit); ``{}`` elsewhere."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return {}
    features, dispatch = _numpy_cpu()
    if not (features.get("AVX2") and features.get("FMA3")):
        return {}  # OpenBLAS's Haswell kernels need both; without them it picks older ones anyway
    pins = {"OPENBLAS_CORETYPE": BLAS_CORE}
    above = [target for target in dispatch if target != "X86_V3"]  # AVX-512's targets
    if above:
        pins["NPY_DISABLE_CPU_FEATURES"] = ",".join(above)
    return {name: value for name, value in pins.items() if name not in os.environ}


def _numpy_cpu() -> tuple[dict, list[str]]:
    """numpy's own record of the processor (what np.show_runtime prints): its features, and the optimisation
    targets numpy dispatches to (after any it was told to skip)."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:
        return {}, []
    return dict(__cpu_features__), [target for target in __cpu_dispatch__ if __cpu_features__.get(target)]


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
