"""The versions that compute the numbers: Python, the machine and the numeric libraries.

Every report records them (``environment`` in ``metrics.json``) and the run cache keys its
entries by them; ``constraints.txt`` pins the libraries for ``make reproduce``.
"""

from __future__ import annotations

import platform
from importlib import metadata

#: The libraries whose rounding a number can depend on: numpy (with the BLAS its wheel
#: carries) and scipy for distances, numba for the medoids, scikit-learn for gp-IRT's KMeans
#: anchors, pandas for the tables' means.
NUMERIC_LIBRARIES = ("numpy", "scipy", "numba", "scikit-learn", "pandas")


def versions() -> dict[str, str]:
    """Python's version, the machine's architecture and each numeric library's version."""
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        **{name: metadata.version(name) for name in NUMERIC_LIBRARIES},  # without importing them
    }
