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
    summary.to_csv(paths[0], index=False, float_format="%.6g")
    paths[1].write_text(formatted(summary, "markdown", keys).to_markdown(index=False) + "\n")
    paths[2].write_text(
        formatted(summary, "latex", keys).to_latex(index=False, escape=False, column_format="l" * (len(keys) + 3))
    )
    return paths


def _plotting():
    """pyplot and seaborn, headless, with the reports' theme."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="notebook")
    return plt, sns


def plot_budget_curves(summary: pd.DataFrame, path: str | Path, title: str = ""):
    """MAE and Kendall's tau against budget, one line per method, ± one standard error."""
    plt, sns = _plotting()
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
    axes[1].legend(loc="best", fontsize="small", framealpha=0.6)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return fig


def plot_estimates(results: pd.DataFrame, path: str | Path, budget: int, run: int = 0, title: str = ""):
    """Estimated against true accuracy of every target, one panel per method."""
    _, sns = _plotting()
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


def paper_comparison(table: pd.DataFrame, paper: dict, budget: int = 30) -> pd.DataFrame:
    """At ``budget``: our best baseline and TailoredBench MAE beside the paper's."""
    rows = []
    for name, (paper_baseline, paper_tailored) in paper.items():
        ours = table[(table["benchmark"] == name) & (table["budget"] == budget)]
        if ours.empty:
            continue
        baselines = ours[~ours["method"].str.startswith("tailored")]
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


def plot_main_figure(table: pd.DataFrame, path: str | Path):
    """MAE and tau against budget, one column per benchmark, one line per method."""
    plt, sns = _plotting()
    long = table.melt(id_vars=["benchmark", "budget", "method"], value_vars=["mae", "kendall_tau"], var_name="metric")
    grid = sns.relplot(
        data=long,
        x="budget",
        y="value",
        hue="method",
        row="metric",
        col="benchmark",
        kind="line",
        marker="o",
        height=2.6,
        aspect=1.0,
        facet_kws={"sharey": "row", "sharex": False},
        palette="colorblind",
    )
    grid.set_titles("{col_name}: {row_name}")
    grid.savefig(path, dpi=110)
    plt.close("all")
    return grid.figure


def _axes(ncols: int = 1, width: float = 5.0, height: float = 3.6):
    plt, _ = _plotting()
    return plt.subplots(1, ncols, figsize=(width * ncols, height))


def item_map(source: np.ndarray) -> np.ndarray:
    """2-D principal components of the items embedded by z-scored source correctness."""
    from .kmedoids import standardize

    Z = standardize(source.T)
    Z = Z - Z.mean(axis=0)
    U, S, _ = np.linalg.svd(Z, full_matrices=False)
    return U[:, :2] * S[:2]


def plot_probe(source: np.ndarray, g_items, n_items=(), labels=None, path=None):
    """The items (PCA of the source embedding) with the G-set and, if given, the N-set and its clusters."""
    fig, ax = _axes()
    xy = item_map(source)
    colours = "lightgrey" if labels is None else labels
    ax.scatter(xy[:, 0], xy[:, 1], c=colours, s=6, cmap="tab20", alpha=0.6)
    ax.scatter(*xy[np.asarray(g_items, dtype=int)].T, marker="*", s=160, c="black", label="G-set")
    if len(n_items):
        ax.scatter(*xy[np.asarray(n_items, dtype=int)].T, marker="D", s=50, c="crimson", label="rest of the N-set")
    ax.set_xlabel("item PC 1 (source models)")
    ax.set_ylabel("item PC 2")
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=110)
    return fig


def plot_native_families(all_sources, native, path=None):
    """Families of the native source models against their share among all source models."""
    from .families import model_family

    fig, ax = _axes(width=7)
    every = pd.Series([model_family(m) for m in all_sources]).value_counts(normalize=True)
    chosen = pd.Series([model_family(m) for m in native]).value_counts(normalize=True)
    frame = pd.DataFrame({"all sources": every, "native sources": chosen}).fillna(0).sort_values("all sources")
    frame.plot.barh(ax=ax)
    ax.set_xlabel("share of models")
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=110)
    return fig


def plot_calibration(native_mean, probe, results, path=None):
    """Per cluster: the native sources' mean on the medoid against the target's result, and the cluster size."""
    fig, axes = _axes(ncols=2, width=5)
    sizes = np.bincount(probe.labels, minlength=len(probe.medoids))
    m_c = np.asarray(native_mean)[probe.medoids]
    y = np.asarray(results, dtype=float)
    jitter = np.random.default_rng(0).uniform(-0.04, 0.04, len(y))
    solved = np.where(y > 0, "seagreen", "indianred")
    axes[0].scatter(m_c, y + jitter, s=20 + sizes, c=solved, alpha=0.7)
    axes[0].set_xlabel("native sources' mean on the medoid (m_c)")
    axes[0].set_ylabel("target's result on the medoid (y_c)")
    axes[0].set_title("size = cluster size")
    scale = (y + 0.5) / (m_c + 0.5)
    axes[1].bar(np.arange(len(y)), scale, color=solved)
    axes[1].axhline(1.0, color="grey", lw=1)
    axes[1].set_xlabel("cluster (G-set first)")
    axes[1].set_ylabel("calibration factor (y_c + .5) / (m_c + .5)")
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=110)
    return fig


def plot_beyond(summary: pd.DataFrame, path: str | Path, methods: dict):
    """MAE against budget (top) and interval coverage (bottom) per benchmark, for the labelled methods.

    ``methods`` maps a method name in ``summary`` to its label in the figure.
    """
    plt, sns = _plotting()
    data = summary[summary["method"].isin(list(methods))].assign(method=lambda d: d["method"].map(methods))
    benchmarks = list(dict.fromkeys(data["benchmark"]))
    fig, axes = plt.subplots(2, len(benchmarks), figsize=(3.2 * len(benchmarks), 6), squeeze=False)
    for col, name in enumerate(benchmarks):
        part = data[data["benchmark"] == name]
        sns.lineplot(data=part, x="budget", y="mae", hue="method", marker="o", ax=axes[0, col], palette="colorblind")
        axes[0, col].set_title(name)
        coverage = part.groupby("method", sort=False)["coverage"].mean().reset_index()
        sns.barplot(data=coverage, x="method", y="coverage", ax=axes[1, col], palette="colorblind", hue="method")
        axes[1, col].axhspan(0.85, 0.95, color="green", alpha=0.15)
        axes[1, col].set_ylim(0.5, 1.0)
        axes[1, col].tick_params(axis="x", rotation=60, labelsize=7)
        axes[1, col].set_xlabel("")
        if col:
            axes[0, col].get_legend().remove()
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
