"""Tables (CSV, Markdown, LaTeX), seaborn figures and ``metrics.json`` from a simulation."""

from __future__ import annotations

import json
import platform
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

#: For each metric, whether larger is better (used to put the best value in bold).
METRICS = {"mae": False, "kendall_tau": True}


def git_commit(path: str | Path | None = None) -> str | None:
    """The checkout's commit (with ``-dirty`` when it has uncommitted changes), if any."""
    cwd = Path(path or Path(__file__).resolve().parent)
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
    paths = [directory / f"{name}.csv", directory / f"{name}.md", directory / f"{name}.tex"]
    summary.to_csv(paths[0], index=False, float_format="%.6g")
    paths[1].write_text(formatted(summary, "markdown", keys).to_markdown(index=False) + "\n")
    paths[2].write_text(
        formatted(summary, "latex", keys).to_latex(index=False, escape=False, column_format="l" * (len(keys) + 3))
    )
    return paths


def plot_budget_curves(summary: pd.DataFrame, path: str | Path, title: str = ""):
    """MAE and Kendall's tau against budget, one line per method, ± one standard error."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="notebook")
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    palette = dict(zip(sorted(summary["method"].unique()), sns.color_palette("colorblind"), strict=False))
    panels = (("mae", "MAE (lower is better)"), ("kendall_tau", "Kendall's tau (higher is better)"))
    for ax, (metric, label) in zip(axes, panels, strict=True):
        for method, group in summary.groupby("method", sort=True):
            group = group.sort_values("budget")
            ax.errorbar(
                group["budget"],
                group[metric],
                yerr=group[f"{metric}_se"],
                marker="o",
                label=method,
                color=palette[method],
                capsize=3,
            )
        ax.set_xlabel("budget (items answered per target)")
        ax.set_ylabel(label)
    axes[1].legend(loc="lower right", fontsize="small")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return fig


def plot_estimates(results: pd.DataFrame, path: str | Path, budget: int, run: int = 0, title: str = ""):
    """Estimated against true accuracy of every target, one panel per method."""
    import matplotlib

    matplotlib.use("Agg")
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="notebook")
    data = results[(results["budget"] == budget) & (results["run"] == run)]
    grid = sns.relplot(
        data=data, x="true", y="estimate", col="method", col_wrap=min(3, data["method"].nunique()), height=3.2, s=25
    )
    for ax in grid.axes.flat:
        ax.plot([0, 1], [0, 1], color="grey", lw=1, ls="--")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
    grid.set_axis_labels("true accuracy", f"estimate ({budget} items)")
    if title:
        grid.figure.suptitle(title, y=1.02)
    grid.savefig(path, dpi=120)
    return grid.figure


def write_metrics(path: str | Path, *, parameters: dict, benchmark: dict, summary: pd.DataFrame, **extra) -> dict:
    """``metrics.json``: parameters, data provenance, code version and summary figures."""
    from . import __version__

    record = {
        "parameters": parameters,
        "benchmark": benchmark,
        "package_version": __version__,
        "git_commit": git_commit(),
        "python": platform.python_version(),
        "summary": json.loads(summary.to_json(orient="records")),
        **extra,
    }
    Path(path).write_text(json.dumps(record, indent=2, default=_jsonable) + "\n")
    return record


def _jsonable(value):
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def write_report(sim, directory: str | Path, *, title: str = "", **extra) -> dict:
    """Everything a benchmark notebook regenerates, under ``directory``.

    ``tables/summary.{csv,md,tex}``, ``tables/per_run.csv``, ``figures/budget_curves.png``,
    ``figures/estimates.png`` and ``metrics.json``. Returns the metrics record.
    """
    import matplotlib.pyplot as plt

    from .simulate import per_run_metrics

    directory = Path(directory)
    (directory / "figures").mkdir(parents=True, exist_ok=True)
    write_tables(sim.summary, directory / "tables")
    per_run_metrics(sim.results).to_csv(directory / "tables" / "per_run.csv", index=False, float_format="%.6g")
    plot_budget_curves(sim.summary, directory / "figures" / "budget_curves.png", title=title)
    budgets = sim.settings["budgets"]
    plot_estimates(sim.results, directory / "figures" / "estimates.png", budget=budgets[len(budgets) // 2], title=title)
    plt.close("all")
    return write_metrics(
        directory / "metrics.json",
        parameters=sim.settings,
        benchmark=sim.benchmark,
        summary=sim.summary,
        seconds_per_run=sim.seconds_per_run,
        **extra,
    )
