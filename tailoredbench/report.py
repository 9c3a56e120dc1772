"""What a notebook writes under ``reports/<name>/`` and where it came from.

Tables (CSV for the raw numbers, Markdown and LaTeX with the best in bold), ``metrics.json``
with the code's commit, the package version and the versions that computed it, and
reading them back.
"""

from __future__ import annotations

import io
import json
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from . import atomic
from ._version import __version__
from .environment import versions
from .errors import TailoredBenchError
from .methods import kind_of
from .metrics import per_run_metrics

# Tables

#: For each metric, whether larger is better (used to put the best value in bold).
METRICS = {"mae": False, "kendall_tau": True}


def write_table(table: pd.DataFrame, directory: str | Path, name: str) -> None:
    """Write ``<name>.csv`` (6 significant digits) and ``<name>.md`` (4 decimals) of a table as it is."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    atomic.write_text(directory / f"{name}.csv", table.to_csv(index=False, float_format="%.6g"))
    atomic.write_text(directory / f"{name}.md", table.to_markdown(index=False, floatfmt=".4f") + "\n")


def best_mask(summary: pd.DataFrame, keys=("budget",)) -> pd.Series:
    """True where a row holds the best mean of its metric within its ``keys`` group."""
    marks = {}
    for metric, larger in METRICS.items():
        grouped = summary.groupby(list(keys))[metric]
        best = grouped.transform("max" if larger else "min")
        marks[metric] = np.isclose(summary[metric], best)
    return pd.DataFrame(marks, index=summary.index)


def formatted(summary: pd.DataFrame, style: str, keys=("budget",), decimals: int = 3) -> pd.DataFrame:
    """The summary with "mean ± se" cells, the best of each group in bold (``markdown`` or ``latex``)."""
    marks = best_mask(summary, keys)
    out = summary[[*keys, "method"]].copy()
    for metric, label in (("mae", "MAE"), ("kendall_tau", "tau")):
        cells = []
        for i, r in summary.iterrows():
            mean, se = f"{r[metric]:.{decimals}f}", f"{r[f'{metric}_se']:.{decimals}f}"
            if style == "latex":
                mean = rf"\textbf{{{mean}}}" if marks.loc[i, metric] else mean
                cells.append(rf"{mean} $\pm$ {se}")
            else:
                cells.append(f"**{mean}** ± {se}" if marks.loc[i, metric] else f"{mean} ± {se}")
        out[label] = cells
    return out


def write_tables(summary: pd.DataFrame, directory: str | Path, name: str = "summary", keys=("budget",)) -> list[Path]:
    """Write ``<name>.csv`` (raw numbers), ``<name>.md`` and ``<name>.tex`` (best in bold)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    summary = summary.sort_values([*keys, "method"], kind="stable").reset_index(drop=True)
    paths = [directory / f"{name}.csv", directory / f"{name}.md", directory / f"{name}.tex"]
    atomic.write_text(paths[0], summary.to_csv(index=False, float_format="%.6g"))
    atomic.write_text(paths[1], formatted(summary, "markdown", keys).to_markdown(index=False) + "\n")
    atomic.write_text(
        paths[2],
        formatted(summary, "latex", keys).to_latex(index=False, escape=False, column_format="l" * (len(keys) + 3)),
    )
    return paths


# Provenance

#: The checkout this package runs from (git commands take their paths relative to it).
CHECKOUT = Path(__file__).resolve().parents[1]


def folder(path: str | Path) -> Path:
    """A notebook's folder argument as a path: a relative one counts from ``notebooks/``, wherever the kernel runs.

    So ``papermill`` started from any folder writes inside the project, as JupyterLab does.

    Examples
    --------
    >>> folder("../scratch/gsm8k") == CHECKOUT / "scratch" / "gsm8k"
    True
    """
    path = Path(path)
    return path if path.is_absolute() else (CHECKOUT / "notebooks" / path).resolve()


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


# Reports


def write_report(sim, directory: str | Path, **extra) -> dict:
    """The tables and ``metrics.json`` of a benchmark notebook, under ``directory``.

    ``tables/summary.{csv,md,tex}``, ``tables/per_run.csv`` and ``metrics.json``; the notebook
    draws its figures itself, so that they show in its cells. Returns the metrics record.
    """
    directory = Path(directory)
    (directory / "figures").mkdir(parents=True, exist_ok=True)
    write_tables(sim.summary, directory / "tables")
    per_run = per_run_metrics(sim.results).to_csv(index=False, float_format="%.6g")
    atomic.write_text(directory / "tables" / "per_run.csv", per_run)
    return write_metrics(
        directory / "metrics.json",
        parameters=sim.settings,
        benchmark=sim.benchmark,
        summary=sim.summary,
        seconds_per_run=sim.seconds_per_run,
        **extra,
    )


def _relative_change(ours: float, theirs: float) -> str:
    change = ours / theirs - 1
    return f"{-change:.0%} lower MAE" if change <= 0 else f"{change:.0%} higher MAE"


def interpretation(
    summary: pd.DataFrame, paper_mae_at_30=None, tailored: str = "tailoredbench", per_run: pd.DataFrame | None = None
) -> str:
    """What a benchmark's summary says, in words: who wins at each budget and by how much.

    One Markdown bullet per budget: the lowest MAE and the highest tau, and ``tailored``
    against the best baseline with the gap in standard errors (a gap under two is not a
    clear win at this number of runs). With the paper's ``(best baseline, TailoredBench)``
    MAE at 30 items, a bullet sets them beside ours; with ``per_run`` (one row per method,
    budget and run), a last one gives the spread of ``tailored``'s MAE over runs at 30.
    """
    lines = []
    for budget, part in summary.groupby("budget", sort=True):
        part = part.set_index("method")
        baselines = part[[kind_of(m) == "baseline" for m in part.index]]
        best = baselines["mae"].idxmin()
        ours, theirs = part.loc[tailored], part.loc[best]
        gap = (theirs["mae"] - ours["mae"]) / max(float(np.hypot(ours["mae_se"], theirs["mae_se"])), 1e-12)
        verdict = "a clear win" if gap >= 2 else "a clear loss" if gap <= -2 else "within two standard errors"
        lines.append(
            f"- **{budget} items**: lowest MAE {part['mae'].idxmin()} ({part['mae'].min():.4f}), highest tau "
            f"{part['kendall_tau'].idxmax()} ({part['kendall_tau'].max():.3f}). {tailored} {ours['mae']:.4f} against "
            f"the best baseline, {best}, {theirs['mae']:.4f}: {_relative_change(ours['mae'], theirs['mae'])}, "
            f"{abs(gap):.1f} standard errors apart, {verdict}."
        )
    if paper_mae_at_30 is not None and 30 in set(summary["budget"]):
        paper_baseline, paper_tailored = paper_mae_at_30
        at30 = summary[summary["budget"] == 30].set_index("method")
        baselines = at30[[kind_of(m) == "baseline" for m in at30.index]]
        ours, theirs = at30.loc[tailored, "mae"], baselines["mae"].min()
        lines.append(
            f"- **Beside the paper, at 30 items**: the paper's TailoredBench MAE {paper_tailored:.3f} against its best "
            f"baseline's {paper_baseline:.3f} ({_relative_change(paper_tailored, paper_baseline)}); ours {ours:.3f} "
            f"against {theirs:.3f} ({_relative_change(ours, theirs)})."
        )
    if per_run is not None:
        runs = per_run[(per_run["method"] == tailored) & (per_run["budget"] == 30)]["mae"]
        if len(runs) > 1:
            lines.append(
                f"- **Run to run, at 30 items**: {tailored}'s MAE has median {runs.median():.4f}, range "
                f"{runs.min():.4f}-{runs.max():.4f}; {int((runs > 2 * runs.median()).sum())} of {len(runs)} runs are "
                "more than twice the median."
            )
    return "\n".join(lines)


def collect(reports_dir: str | Path, names) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Summaries of several benchmark reports in one table, and one row of provenance per report."""
    frames, meta = [], []
    for name in names:
        path = Path(reports_dir) / name / "metrics.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: run the {name} notebook first")
        record = json.loads(path.read_text())
        frame = pd.DataFrame(record["summary"])
        frame.insert(0, "benchmark", name)
        frames.append(frame)
        bench = record["benchmark"]
        meta.append(
            {
                "benchmark": name,
                "n_source": bench["n_source"],
                "n_target": bench["n_target"],
                "n_items": bench["n_items"],
                "runs": record["parameters"]["runs"],
                "git_commit": record["git_commit"],
                "from_current_code": code_is_current(record["git_commit"]),
            }
        )
    return pd.concat(frames, ignore_index=True), pd.DataFrame(meta)


def changed_since(commit: str, reports_dir: str | Path, names: Sequence[str], methods: Sequence[str]) -> pd.DataFrame:
    """``methods``' MAE and tau in the checkout's benchmark reports at ``commit`` beside those in ``reports_dir``.

    For results that a change to a method moved on purpose, shown side by side in the reports.
    """
    rows = []
    for name in names:
        before = pd.read_csv(io.StringIO(file_at(commit, f"reports/{name}/tables/summary.csv")))
        now = pd.read_csv(Path(reports_dir) / name / "tables" / "summary.csv")
        both = before.merge(now, on=["method", "budget"], suffixes=("_before", "_now"))
        both = both[both["method"].isin(methods)]
        rows.append(both[["method", "budget", "mae_before", "mae_now", "kendall_tau_before", "kendall_tau_now"]])
        rows[-1].insert(0, "benchmark", name)
    return pd.concat(rows, ignore_index=True)


def paper_comparison(table: pd.DataFrame, paper: dict, budget: int = 30) -> pd.DataFrame:
    """At ``budget``: our best baseline and TailoredBench MAE beside the paper's."""
    rows = []
    for name, (paper_baseline, paper_tailored) in paper.items():
        ours = table[(table["benchmark"] == name) & (table["budget"] == budget)]
        if ours.empty:
            continue
        baselines = ours[[kind_of(m) == "baseline" for m in ours["method"]]]
        best = baselines.loc[baselines["mae"].idxmin()]
        tailored = ours[ours["method"] == "tailoredbench"].iloc[0]
        rows.append(
            {
                "benchmark": name,
                "paper best baseline": paper_baseline,
                "paper TailoredBench": paper_tailored,
                "paper reduction": 1 - paper_tailored / paper_baseline,
                "our best baseline": f"{best['mae']:.3f} ({best['method']})",
                "our TailoredBench": round(float(tailored["mae"]), 3),
                "our reduction": 1 - tailored["mae"] / best["mae"],
            }
        )
    return pd.DataFrame(rows)


def reproduction(comparison: pd.DataFrame) -> str:
    """In words, per benchmark of :func:`paper_comparison`: do we reproduce the paper's gain at 30 items?

    *Reproduced* when our TailoredBench beats our best baseline by at least half the paper's
    relative gain; *smaller gain* when it beats it by less; *not reproduced* when it does not.
    """
    lines = []
    for _, row in comparison.iterrows():
        ours, theirs = row["our reduction"], row["paper reduction"]
        if ours <= 0:
            verdict = "**not reproduced**: TailoredBench's MAE is above our best baseline's"
        elif ours < theirs / 2:
            verdict = "**a smaller gain** than the paper's"
        else:
            verdict = "**reproduced**"
        lines.append(
            f"- {row['benchmark']}: {verdict} (ours: {_relative_change(1 - ours, 1.0)} than the best baseline; "
            f"the paper's: {_relative_change(1 - theirs, 1.0)})."
        )
    return "\n".join(lines)


def write_study(directory, tables: Mapping[str, pd.DataFrame], *, parameters: dict, findings: Sequence[str], **extra):
    """Write each table as CSV and Markdown under ``tables/`` and ``metrics.json`` with the findings."""
    directory = Path(directory)
    (directory / "figures").mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        write_table(table, directory / "tables", name)
    record = {
        "parameters": parameters,
        "findings": list(findings),
        "git_commit": git_commit(),
        "environment": versions(),
        "tables": {name: json.loads(t.to_json(orient="records")) for name, t in tables.items()},
        **extra,
    }
    atomic.write_text(directory / "metrics.json", json.dumps(record, indent=2, default=jsonable) + "\n")
    return record
