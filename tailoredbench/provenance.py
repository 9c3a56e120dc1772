"""Where a result came from: the code's commit, the package version, and ``metrics.json``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

from . import atomic
from ._version import __version__
from .environment import versions
from .errors import TailoredBenchError

#: The checkout this package runs from (git commands take their paths relative to it).
CHECKOUT = Path(__file__).resolve().parents[1]


def git_commit(path: str | Path | None = None) -> str | None:
    """The checkout's commit, with ``-dirty`` when the package or notebooks have uncommitted changes."""
    cwd = Path(path or CHECKOUT)
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "tailoredbench", "notebooks"],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return f"{head}-dirty" if dirty else head


def code_is_current(commit: str | None, path: str | Path | None = None) -> bool:
    """Whether ``commit`` (from a metrics.json) has the same package, notebooks and registry as HEAD."""
    if not commit or commit.endswith("-dirty"):
        return False
    cwd = Path(path or CHECKOUT)
    try:
        diff = subprocess.run(
            ["git", "diff", "--quiet", commit, "HEAD", "--", "tailoredbench", "notebooks", "data"], cwd=cwd
        )
    except OSError:
        return False
    return diff.returncode == 0


def file_at(commit: str, relative: str) -> str:
    """A file's text as committed at ``commit`` (``relative`` to this checkout's top), or a one-line error."""
    try:
        shown = subprocess.run(["git", "show", f"{commit}:{relative}"], cwd=CHECKOUT, capture_output=True, text=True)
    except OSError:
        raise TailoredBenchError(f"{relative} at {commit}: git is not available") from None
    if shown.returncode:
        raise TailoredBenchError(f"{relative} at {commit}: not in this checkout's history ({shown.stderr.strip()})")
    return shown.stdout


def write_metrics(path: str | Path, *, parameters: dict, benchmark: dict, summary: pd.DataFrame, **extra) -> dict:
    """``metrics.json``: parameters, data provenance, code version and summary figures."""
    record = {
        "parameters": parameters,
        "benchmark": benchmark,
        "package_version": __version__,
        "git_commit": git_commit(),
        "environment": versions(),
        "summary": json.loads(summary.to_json(orient="records")),
        **extra,
    }
    atomic.write_text(path, json.dumps(record, indent=2, default=jsonable) + "\n")
    return record


def jsonable(value):
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
