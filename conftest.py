"""Test-wide settings, for the tests and for the doctests in the package."""

import os
import tempfile
from pathlib import Path

# Tests read real, pinned data: from the local mirror that $TAILOREDBENCH_DATA names, if any
# (CI sets it), otherwise from the cache or by downloading the pinned files. A relative mirror
# path means relative to where pytest starts, also for the notebook kernels started in notebooks/.
if os.environ.get("TAILOREDBENCH_DATA"):
    os.environ["TAILOREDBENCH_DATA"] = str(Path(os.environ["TAILOREDBENCH_DATA"]).resolve())
# Downloads and fitted models (gp-IRT) go to a cache of the test session's own.
os.environ.setdefault("TAILOREDBENCH_CACHE", tempfile.mkdtemp(prefix="tailoredbench-test-cache-"))
