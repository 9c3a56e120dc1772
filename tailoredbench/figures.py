"""Every figure of the reports: each function draws one and saves it where it is told."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from . import rng
from .distances import standardize
from .families import model_family


def plotting():
    """pyplot and seaborn, headless, with the reports' theme."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="notebook")
    return plt, sns


def plot_budget_curves(summary: pd.DataFrame, path: str | Path, title: str = ""):
    """MAE and Kendall's tau against budget, one line per method, ± one standard error."""
    plt, sns = plotting()
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
    _, sns = plotting()
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


def plot_main_figure(table: pd.DataFrame, path: str | Path):
    """MAE and tau against budget, one column per benchmark, one line per method."""
    plt, sns = plotting()
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
    plt, _ = plotting()
    return plt.subplots(1, ncols, figsize=(width * ncols, height))


def item_map(source: np.ndarray) -> np.ndarray:
    """2-D principal components of the items embedded by z-scored source correctness."""
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
    sizes = np.bincount(probe.labels, minlength=len(probe.items))
    m_c = np.asarray(native_mean)[probe.items]
    y = np.asarray(results, dtype=float)
    jitter = rng.stream((rng.FIGURE_JITTER,)).uniform(-0.04, 0.04, len(y))
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
    plt, sns = plotting()
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


def plot_arms(table: pd.DataFrame, path, x: str = "arm", title: str = "", hue: str = "benchmark"):
    """MAE and tau per arm: one line per benchmark and the mean over benchmarks in black."""
    plt, sns = plotting()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    order = list(dict.fromkeys(table[x].astype(str)))
    data = table.assign(**{x: table[x].astype(str)})
    for ax, metric, label in ((axes[0], "mae", "MAE"), (axes[1], "kendall_tau", "Kendall's tau")):
        sns.pointplot(data=data, x=x, y=metric, hue=hue, order=order, ax=ax, errorbar=None, markersize=4, linewidth=1)
        if hue == "benchmark" and data["benchmark"].nunique() > 1:
            mean = data.groupby(x, sort=False)[metric].mean().reindex(order)
            ax.plot(range(len(order)), mean.values, color="black", linewidth=2.5, marker="o", label="mean")
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_counts(table: pd.DataFrame, adaptive: np.ndarray, adaptive_mae: float, path, title: str = ""):
    """MAE against a fixed native-source count, with the adaptive rule's count and MAE marked."""
    plt, _ = plotting()
    fig, ax = plt.subplots(figsize=(6, 3.8))
    ax.errorbar(table["count"], table["mae"], yerr=table["mae_se"], marker="o", label="fixed count")
    ax.axvline(adaptive.mean(), color="C3", linestyle="--", label=f"adaptive rule (mean {adaptive.mean():.0f})")
    ax.axhline(adaptive_mae, color="C3", linestyle=":", label=f"adaptive MAE {adaptive_mae:.4f}")
    ax.set_xlabel("native source models")
    ax.set_ylabel("MAE")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_family_heatmap(frame: pd.DataFrame, path, title: str = "", min_targets: int = 3):
    """Rows: target families; columns: source families; cells: share of the native sources."""
    plt, sns = plotting()
    frame = frame[frame["targets"] >= min_targets]
    grid = frame.pivot_table(index="target_family", columns="source_family", values="share", fill_value=0.0)
    fig, ax = plt.subplots(figsize=(1.0 + 0.6 * grid.shape[1], 1.2 + 0.45 * grid.shape[0]))
    sns.heatmap(grid, annot=True, fmt=".2f", cmap="Blues", cbar=False, ax=ax, annot_kws={"fontsize": 7})
    ax.set_xlabel("native source family")
    ax.set_ylabel("target family")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_embedding(coords: Mapping[str, np.ndarray], labels: np.ndarray, medoids, distances: Mapping, path, title=""):
    """Side by side: items embedded by source and by target models, coloured by coreset cluster."""
    plt, _ = plotting()
    fig, axes = plt.subplots(1, len(coords), figsize=(5 * len(coords), 4.2))
    for ax, (view, xy) in zip(np.atleast_1d(axes), coords.items(), strict=True):
        ax.scatter(xy[:, 0], xy[:, 1], c=labels, cmap="tab20", s=6, alpha=0.7)
        ax.scatter(xy[medoids, 0], xy[medoids, 1], c="black", marker="x", s=30)
        ax.set_title(f"{view}: mean item-to-medoid distance {distances[view]['mean_distance']:.2f}", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
