"""Every figure of the reports: each function draws one, saves it where it is told and returns it.

No backend is chosen here: in Jupyter (or papermill) the figure a function returns is shown
in its cell by the inline backend and is the very object saved under ``reports/``; in a
script, matplotlib picks its own backend and the caller closes the figure when done.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from . import rng
from .datasets.families import model_family
from .distances import standardize
from .tailored import g_set_distances


def plotting():
    """pyplot and seaborn, with the reports' theme."""
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
    handles, labels = axes[0].get_legend_handles_labels()
    # one legend for both panels, below them, where it hides no line
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize="small", frameon=False)
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(path, dpi=120)
    return fig


def plot_estimates(results: pd.DataFrame, path: str | Path, budget: int, run: int = 0, title: str = ""):
    """Estimated against true accuracy of every target, one panel per method."""
    _, sns = plotting()
    data = results[(results["budget"] == budget) & (results["run"] == run)]
    grid = sns.relplot(
        data=data, x="true", y="estimate", col="method", col_wrap=min(3, data["method"].nunique()), height=3.2, s=25
    )
    # the range of the data (POPE's models all sit near 0.85), with no tick at an edge where panels meet
    values = np.concatenate([data["true"].to_numpy(), data["estimate"].to_numpy()])
    low, high = max(0.0, float(values.min()) - 0.03), min(1.0, float(values.max()) + 0.03)
    for ax in grid.axes.flat:
        ax.plot([0, 1], [0, 1], color="grey", lw=1, ls="--", label="estimate = truth")
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
        ax.xaxis.set_major_locator(MaxNLocator(4, prune="both"))
    grid.axes.flat[0].legend(loc="upper left", fontsize="small")
    grid.set_axis_labels("true accuracy", f"estimate ({budget} items)")
    grid.set_titles("{col_name}")
    if title:
        grid.figure.suptitle(title, y=1.02)
    grid.savefig(path, dpi=120)
    return grid.figure


def plot_main_figure(table: pd.DataFrame, path: str | Path, title: str = ""):
    """MAE and tau against budget, one column per benchmark, one line per method.

    Every panel has its own y-axis: one method far off on one benchmark (POPE's AnchorPoints)
    would otherwise flatten every other line of its row.
    """
    plt, sns = plotting()
    benchmarks = list(dict.fromkeys(table["benchmark"]))
    methods = sorted(table["method"].unique())
    palette = dict(zip(methods, sns.color_palette("colorblind", len(methods)), strict=True))
    rows = (("mae", "MAE (lower is better)"), ("kendall_tau", "Kendall's tau (higher is better)"))
    fig, axes = plt.subplots(2, len(benchmarks), figsize=(max(2.9 * len(benchmarks), 7.5), 5.6), squeeze=False)
    for col, name in enumerate(benchmarks):
        part = table[table["benchmark"] == name]
        for row, (metric, label) in enumerate(rows):
            ax = axes[row, col]
            for method in methods:
                line = part[part["method"] == method].sort_values("budget")
                ax.plot(line["budget"], line[metric], marker="o", ms=3, color=palette[method], label=method)
            ax.set_xticks(sorted(part["budget"].unique()))
            ax.set_title(name if row == 0 else "", fontsize=10)
            ax.set_xlabel("budget (items)" if row == 1 else "")
            ax.set_ylabel(label if col == 0 else "", fontsize=9)
            ax.tick_params(labelsize=8)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    ncol = len(methods) if len(benchmarks) > 3 else 3
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=8, frameon=False)
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.06 if ncol == len(methods) else 0.1, 1, 1))
    fig.savefig(path, dpi=110)
    return fig


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
    if labels is None:
        ax.scatter(xy[:, 0], xy[:, 1], c="lightgrey", s=6, alpha=0.6, label="item")
    else:
        ax.scatter(xy[:, 0], xy[:, 1], c=labels, s=6, cmap="tab20", alpha=0.6, label="item (colour: its cluster)")
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


def plot_native_sources(g_source, g_result, native, distance: str = "manhattan", path=None):
    """Every source model's distance to the target on the G-set, nearest first, the native sources marked."""
    to_sources, threshold = g_set_distances(g_source, g_result, distance=distance)
    order = np.argsort(to_sources[0], kind="stable")
    chosen = np.isin(order, np.asarray(native))
    fig, ax = _axes(width=7, height=4.0)
    x, height = np.arange(len(order)), to_sources[0, order]
    for mine, colour, label in ((chosen, "C0", "native source"), (~chosen, "darkgrey", "other source")):
        ax.bar(x[mine], height[mine], color=colour, alpha=0.6 if colour == "darkgrey" else 1.0, label=label)
        # a dot on every bar's top: a source at distance 0, with no bar, still shows
        ax.plot(x[mine], height[mine], "o", ms=3, color=colour, clip_on=False)
    ax.axhline(threshold, color="C3", ls="--", lw=1, label="mean distance over all pairs of models")
    ax.set_xlabel("source models, nearest to the target first")
    ax.set_ylabel(f"{distance} distance on the G-set")
    # below the axes: inside, it covered the tops of the bars
    fig.legend(loc="lower center", ncol=3, fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    if path:
        fig.savefig(path, dpi=110)
    return fig


def plot_native_families(all_sources, native, path=None):
    """Families of the native source models against their share among all source models."""
    fig, ax = _axes(width=7, height=4.6)
    every = pd.Series([model_family(m) for m in all_sources]).value_counts(normalize=True)
    chosen = pd.Series([model_family(m) for m in native]).value_counts(normalize=True)
    frame = pd.DataFrame({"all sources": every, "native sources": chosen}).fillna(0).sort_values("all sources")
    frame.plot.barh(ax=ax)
    ax.set_xlabel("share of models")
    ax.set_ylabel("model family")
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
    for value, colour, label in ((1.0, "seagreen", "target right"), (0.0, "indianred", "target wrong")):
        mine = y == value
        axes[0].scatter(m_c[mine], y[mine] + jitter[mine], s=20 + sizes[mine], c=colour, alpha=0.7, label=label)
    axes[0].set_xlabel("native sources' mean on the medoid (m_c)")
    axes[0].set_ylabel("target's result on the medoid (y_c)")
    axes[0].set_yticks([0, 1])
    axes[0].set_title("marker area: cluster size", fontsize=10)
    axes[0].legend(loc="center right", fontsize="small")
    scale = (y + 0.5) / (m_c + 0.5)
    bars = axes[1].bar(np.arange(len(y)), scale, color=solved)
    line = axes[1].axhline(1.0, color="grey", lw=1)
    right = next((b for b, c in zip(bars, solved, strict=True) if c == "seagreen"), None)
    wrong = next((b for b, c in zip(bars, solved, strict=True) if c == "indianred"), None)
    shown = [(h, t) for h, t in ((right, "target right"), (wrong, "target wrong"), (line, "no change")) if h]
    axes[1].legend(
        [h for h, _ in shown], [t for _, t in shown], loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small"
    )
    axes[1].set_xlabel("cluster (G-set first)")
    axes[1].set_ylabel("calibration factor")
    axes[1].set_title("(y_c + .5) / (m_c + .5)", fontsize=10)
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
    labels = list(dict.fromkeys(methods.values()))
    palette = dict(zip(labels, sns.color_palette("colorblind", len(labels)), strict=True))
    fig, axes = plt.subplots(2, len(benchmarks), figsize=(max(3.2 * len(benchmarks), 7), 6), squeeze=False)
    for col, name in enumerate(benchmarks):
        part = data[data["benchmark"] == name]
        for label in labels:
            line = part[part["method"] == label].sort_values("budget")
            if len(line):
                axes[0, col].plot(line["budget"], line["mae"], marker="o", ms=3, color=palette[label], label=label)
        axes[0, col].set_xticks(sorted(part["budget"].unique()))
        axes[0, col].set_title(name)
        axes[0, col].set_xlabel("budget (items)")
        axes[0, col].set_ylabel("MAE" if col == 0 else "")
        coverage = part.groupby("method", sort=False)["coverage"].mean().reindex(labels).dropna()
        axes[1, col].bar(range(len(coverage)), coverage.values, color=[palette[m] for m in coverage.index])
        axes[1, col].axhspan(0.85, 0.95, color="green", alpha=0.15, label="target coverage 85-95%")
        axes[1, col].axhline(0.9, color="green", lw=1, ls="--", label="nominal 90%")
        axes[1, col].set_ylim(0.5, 1.0)
        axes[1, col].set_xticks([])
        axes[1, col].set_ylabel("interval coverage" if col == 0 else "")
    # every method drawn anywhere (each benchmark has its own best baseline), once
    found: dict = {}
    for ax in axes[0]:
        for handle, name in zip(*ax.get_legend_handles_labels(), strict=True):
            found.setdefault(name, handle)
    handles, names = list(found.values()), list(found)
    bands, band_names = axes[1, 0].get_legend_handles_labels()
    ncol = 3 if len(benchmarks) > 2 else 2
    fig.legend(handles + bands, names + band_names, loc="lower center", ncol=ncol, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.14 if ncol == 2 else 0.1, 1, 1))
    fig.savefig(path, dpi=110)
    return fig


def plot_arms(table: pd.DataFrame, path, x: str = "arm", title: str = "", hue: str = "benchmark", xlabel: str = ""):
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
        ax.set_xlabel(xlabel or x)
        ax.get_legend().remove()
    handles, labels = axes[0].get_legend_handles_labels()
    # one legend for both panels, below them, where it hides no line
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize="small", frameon=False)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(path, dpi=120)
    return fig


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
    return fig


def plot_family_heatmap(frame: pd.DataFrame, path, title: str = "", min_targets: int = 3):
    """Rows: target families; columns: source families; cells: share of the native sources."""
    plt, sns = plotting()
    frame = frame[frame["targets"] >= min_targets]
    grid = frame.pivot_table(index="target_family", columns="source_family", values="share", fill_value=0.0)
    fig, ax = plt.subplots(figsize=(2.0 + 0.65 * grid.shape[1], 2.2 + 0.45 * grid.shape[0]))
    sns.heatmap(grid, annot=True, fmt=".2f", cmap="Blues", cbar=False, ax=ax, annot_kws={"fontsize": 7})
    ax.set_xlabel("native source family")
    ax.set_ylabel("target family")
    ax.tick_params(axis="y", rotation=0)
    ax.set_title(f"{title}: each row's native sources by family (shares)" if title else "", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return fig


def plot_embedding(coords: Mapping[str, np.ndarray], labels: np.ndarray, medoids, distances: Mapping, path, title=""):
    """Side by side: items embedded by source and by target models, coloured by coreset cluster."""
    plt, _ = plotting()
    fig, axes = plt.subplots(1, len(coords), figsize=(5 * len(coords), 4.2))
    for ax, (view, xy) in zip(np.atleast_1d(axes), coords.items(), strict=True):
        ax.scatter(xy[:, 0], xy[:, 1], c=labels, cmap="tab20", s=6, alpha=0.7, label="item (colour: its cluster)")
        ax.scatter(xy[medoids, 0], xy[medoids, 1], c="black", marker="x", s=30, label="coreset item (medoid)")
        ax.legend(loc="lower right", fontsize=7)
        ax.set_title(f"{view}: mean item-to-medoid distance {distances[view]['mean_distance']:.2f}", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return fig


def plot_precision(table: pd.DataFrame, path: str | Path):
    """Items asked against the requested precision, one panel per benchmark and a colour per method: the
    sequential mode's mean (solid) beside the fixed budget that brings 90% of the targets to that precision
    (dashed); a hollow marker where fewer than 90% of the targets reach the precision by the maximum."""
    plt, sns = plotting()
    names = list(dict.fromkeys(table["benchmark"]))
    methods = list(dict.fromkeys(table["method"]))
    fig, axes = plt.subplots(1, len(names), figsize=(3.1 * len(names), 3.7), sharey=True, squeeze=False)
    colour = dict(zip(methods, sns.color_palette("colorblind"), strict=False))
    for ax, name in zip(axes[0], names, strict=True):
        top = table.loc[table["benchmark"] == name, "max_budget"].iloc[0]
        ax.axhline(top, color="grey", lw=0.8, ls="-.", label="maximum budget")
        for method in methods:
            rows = table[(table["benchmark"] == name) & (table["method"] == method)].sort_values("precision")
            x, c = rows["precision"].to_numpy(), colour[method]
            short = rows["precision_met"].to_numpy() < 0.9
            ax.plot(x, rows["items_mean"], color=c, marker="o", label=f"{method}: sequential, mean items")
            ax.scatter(x[short], rows["items_mean"].to_numpy()[short], s=80, facecolors="white", edgecolors=c, zorder=3)
            ax.plot(
                x, rows["fixed_budget"], color=c, ls="--", marker="s", ms=4, label=f"{method}: fixed budget for 90%"
            )
            # a cross on the maximum: no fixed budget up to it brings 90% of the targets to the precision
            none = rows["fixed_budget"].isna().to_numpy()
            ax.scatter(x[none], np.full(none.sum(), top), marker="X", s=45, color=c, zorder=3)
        ax.set_title(name)
        ax.set_xlabel("requested precision (±)")
        ax.invert_xaxis()  # tighter precision to the right: more items
    axes[0][0].set_ylabel("items asked per target")
    handles, labels = axes[0][0].get_legend_handles_labels()
    handles.append(plt.Line2D([], [], ls="none", marker="o", mfc="white", mec="grey", ms=9))
    labels.append("hollow: < 90% of targets reach it")
    handles.append(plt.Line2D([], [], ls="none", marker="X", color="grey", ms=7))
    labels.append("cross: no fixed budget up to the maximum")
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, 0.16, 1, 1))
    fig.savefig(path, dpi=110)
    return fig


def plot_followed(frame: pd.DataFrame, precision: float, path: str | Path, title: str = ""):
    """One model round by round: its estimate and interval beside its true accuracy (left), and the
    interval's half-width against the requested precision (right); the rule stops at the star."""
    plt, sns = plotting()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    colours = sns.color_palette("colorblind")
    x = frame["budget"].to_numpy()
    stop = frame[frame["stopped"]].iloc[0]
    left.fill_between(x, frame["low"], frame["high"], color=colours[0], alpha=0.2, label="90% interval")
    left.plot(x, frame["estimate"], color=colours[0], marker="o", label="estimate")
    left.axhline(frame["true"].iloc[0], color="black", ls="--", lw=1, label="true accuracy (all items)")
    left.plot([stop["budget"]], [stop["estimate"]], marker="*", ms=16, color=colours[3], ls="none", label="stop")
    left.set_xlabel("items asked")
    left.set_ylabel("accuracy")
    below = {"fontsize": "small", "loc": "upper center", "bbox_to_anchor": (0.5, -0.2), "ncol": 2}
    left.legend(**below)  # below the axes: inside, it covered the band
    right.plot(x, frame["halfwidth"], color=colours[0], marker="o", label="interval half-width")
    right.axhline(precision, color=colours[3], ls="--", label=f"requested precision ±{precision}")
    right.plot([stop["budget"]], [stop["halfwidth"]], marker="*", ms=16, color=colours[3], ls="none")
    right.set_xlabel("items asked")
    right.set_ylabel("half-width")
    right.legend(**below)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return fig


# The walkthrough's figures

#: The two estimates the walkthrough compares, one colour each (seaborn's colour-blind palette).
WALKTHROUGH_COLOURS = {"calibrated estimate": "#0173b2", "plain mean of the probe": "#de8f05"}
#: Colours of the clusters a cluster map shows (seaborn's colour-blind palette without its grey).
CLUSTER_COLOURS = ("#0173b2", "#de8f05", "#029e73", "#d55e00", "#cc78bc", "#ca9161", "#56b4e9", "#ece133")


def plot_pipeline(path=None):
    """The four steps as boxes: what each reads from the sources and from the target, and what it passes on."""
    plt, _ = plotting()
    from matplotlib.patches import FancyBboxPatch

    fig, ax = plt.subplots(figsize=(10, 4.4))
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 4.4)
    ax.axis("off")

    def box(x, y, w, h, text, colour):
        ax.add_patch(
            FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.05", fc=colour, ec="dimgrey", lw=1, mutation_scale=1)
        )
        ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=9, wrap=True)

    def arrow(start, end, text=""):
        ax.annotate("", xy=end, xytext=start, arrowprops={"arrowstyle": "-|>", "color": "dimgrey", "lw": 1.2})
        if text:  # beside the arrow, on its right
            ax.text(start[0] + 0.08, (start[1] + end[1]) / 2, text, ha="left", va="center", fontsize=8, color="dimgrey")

    box(0.2, 3.5, 9.6, 0.7, "source models: full 0/1 results, known (sources x items)", "#e8eef7")
    steps = (
        "1  G-set\nK-Medoids on the items,\nembedded by every\nsource's results",
        "2  native sources\nthe sources nearest\nthe target on the G-set\n(mean-distance threshold)",
        "3  N-set\nK-Medoids on the items,\nembedded by the native\nsources, G-set held fixed",
        "4  calibrated estimate\neach medoid's result\nrescales the native\nsources' item means",
    )
    width, gap, y, h = 2.1, 0.4, 1.7, 1.3
    xs = [0.2 + k * (width + gap) for k in range(4)]
    for x, text in zip(xs, steps, strict=True):
        box(x, y, width, h, text, "#f4f4f4")
        arrow((x + width / 2, 3.45), (x + width / 2, y + h + 0.08))
    for k in range(3):
        arrow((xs[k] + width + 0.05, y + h / 2), (xs[k + 1] - 0.05, y + h / 2))
    box(0.2, 0.2, 9.6, 0.7, "target model: answers only the probe's items (G-set, then N-set)", "#fbeee0")
    arrow((xs[0] + 0.6, y - 0.05), (xs[0] + 0.6, 0.95), "asks the G-set")
    arrow((xs[1] + width / 2, 0.95), (xs[1] + width / 2, y - 0.05), "G-set answers")
    arrow((xs[2] + 0.6, y - 0.05), (xs[2] + 0.6, 0.95), "asks the N-set")
    arrow((xs[3] + width / 2, 0.95), (xs[3] + width / 2, y - 0.05), "all its answers")
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=110)
    return fig


def plot_item_clusters(embedded_by, labels, g_items, n_items=(), groups: int = 6, path=None, title: str = ""):
    """Items in the space their clusters were formed in: the principal components of the items embedded
    by ``embedded_by``'s rows (z-scored), one marker per answer pattern (area: its items), the ``groups``
    largest clusters in colour and the rest in grey; stars the G-set, diamonds the rest of the N-set."""
    fig, ax = _axes(width=6.4, height=4.6)
    xy = item_map(np.asarray(embedded_by, dtype=float))
    labels = np.asarray(labels)
    sizes = np.bincount(labels, minlength=int(labels.max()) + 1)
    shown = np.argsort(-sizes, kind="stable")[: min(groups, len(CLUSTER_COLOURS))]
    # items with one answer pattern share a point: draw each point once, its area the items on it
    points, first, count = np.unique(np.round(xy, 9), axis=0, return_index=True, return_counts=True)
    area = 10 * np.sqrt(count)
    grey = ~np.isin(labels[first], shown)
    ax.scatter(
        points[grey, 0], points[grey, 1], s=area[grey], c="lightgrey", alpha=0.7, label="items of other clusters"
    )
    for colour, cluster in zip(CLUSTER_COLOURS, shown, strict=False):
        mine = labels[first] == cluster
        ax.scatter(
            points[mine, 0], points[mine, 1], s=area[mine], color=colour, alpha=0.75, label=f"{sizes[cluster]} items"
        )
    ax.scatter(*xy[np.asarray(g_items, dtype=int)].T, marker="*", s=110, c="black", label="G-set item (medoid)")
    if len(n_items):
        ax.scatter(
            *xy[np.asarray(n_items, dtype=int)].T, marker="D", s=28, c="white", edgecolors="black", label="N-set item"
        )
    ax.set_xlabel("item PC 1")
    ax.set_ylabel("item PC 2")
    legend = ax.legend(
        loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small", title="cluster", title_fontsize="small"
    )
    for handle in legend.legend_handles[: len(shown) + 1]:  # the clusters' markers at one size, not their first point's
        handle.set_sizes([30])
    if title:
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=110)
    return fig


def plot_every_target(table: pd.DataFrame, path=None, worked: int | None = None, strongest_source: float | None = None):
    """Left: each target's error (estimate - truth) against its accuracy, for the calibrated estimate and the
    probe's plain mean; a cross marks a target that kept a single native source (if ``table`` has ``n_native``).
    Right: each one's mean absolute error over the targets, ± one standard error."""
    plt, _ = plotting()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.0), gridspec_kw={"width_ratios": [2.2, 1]})
    columns = {"estimate": "calibrated estimate", "probe_mean": "plain mean of the probe"}
    left.axhline(0.0, color="grey", lw=1)
    for column, label in columns.items():
        left.scatter(
            table["truth"],
            table[column] - table["truth"],
            s=18,
            color=WALKTHROUGH_COLOURS[label],
            alpha=0.8,
            label=label,
        )
    if "n_native" in table:
        alone = table[table["n_native"] == 1]
        if len(alone):
            left.scatter(
                alone["truth"],
                alone["estimate"] - alone["truth"],
                marker="x",
                s=50,
                c="black",
                label="one native source",
            )
    if strongest_source is not None:
        left.axvline(strongest_source, color="black", ls="--", lw=1, label="strongest source model")
    if worked is not None:
        row = table[table["target"] == worked].iloc[0]
        left.scatter([row["truth"]], [row["estimate"] - row["truth"]], s=120, facecolors="none", edgecolors="black")
        left.annotate(
            "worked target",
            (row["truth"], row["estimate"] - row["truth"]),
            xytext=(12, -38),
            textcoords="offset points",
            fontsize=8,
            arrowprops={"arrowstyle": "-", "color": "black", "lw": 0.8},
        )
    left.set_xlabel("target's true accuracy")
    left.set_ylabel("error: estimate - truth")
    left.legend(loc="upper center", bbox_to_anchor=(0.5, -0.17), ncol=2, fontsize="small", frameon=False)
    errors = {label: (table[column] - table["truth"]).abs() for column, label in columns.items()}
    means = [float(e.mean()) for e in errors.values()]
    ses = [float(e.std(ddof=1) / np.sqrt(len(e))) for e in errors.values()]
    right.bar(range(2), means, yerr=ses, capsize=4, color=[WALKTHROUGH_COLOURS[label] for label in errors])
    right.set_xticks(range(2), ["calibrated\nestimate", "plain mean\nof the probe"])
    right.set_ylabel("MAE over the targets (± se)")
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=110)
    return fig
