"""Test-wide settings, for the tests and for the doctests in the package."""

import os
import tempfile
from pathlib import Path

# Tests read real data from the local mirror (CI sets this too) ...
os.environ.setdefault("TAILOREDBENCH_DATA", str(Path(__file__).resolve().parent.parent / "shared" / "data"))
# ... and cache fitted models (gp-IRT) away from the user's cache.
os.environ.setdefault("TAILOREDBENCH_CACHE", tempfile.mkdtemp(prefix="tailoredbench-test-cache-"))
