"""Every figure of the reports: each function draws one, saves it where it is told and returns it.

No backend is chosen here: a notebook shows the very figure saved under ``reports/``. Methods take
their colours from :data:`METHOD_COLOURS` via :func:`method_colour`; figures are :data:`WIDTH` inches
wide at :data:`DPI`, a notebook's column, so the saved file reads as the notebook does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import patheffects
from matplotlib.colors import to_hex, to_rgb
from matplotlib.lines import Line2D
from matplotlib.patches import FancyBboxPatch, Rectangle
from matplotlib.ticker import FixedLocator, FormatStrFormatter, MaxNLocator, NullLocator

from . import rng
from .errors import TailoredBenchError
from .tailored import DEFAULT_VARIANT, VARIANTS, g_set_distances
from .walkthrough import ESTIMATES, item_map

#: Okabe and Ito's palette (*Color Universal Design*, 2008): told apart with every common colour-vision deficiency.
OKABE_ITO = {
    "black": "#000000",
    "orange": "#e69f00",
    "sky blue": "#56b4e9",
    "bluish green": "#009e73",
    "yellow": "#f0e442",
    "blue": "#0072b2",
    "vermillion": "#d55e00",
    "reddish purple": "#cc79a7",
}
#: One colour per method in every figure, in the reports' order of methods.
METHOD_COLOURS = {
    "tailoredbench": OKABE_ITO["blue"],
    "tailored_plus": OKABE_ITO["reddish purple"],
    "random": OKABE_ITO["black"],
    "anchor_points": OKABE_ITO["sky blue"],
    "gp_irt": OKABE_ITO["orange"],
    "random_regression": OKABE_ITO["bluish green"],
    "fluid": OKABE_ITO["vermillion"],
    "fluid_atlas": OKABE_ITO["yellow"],  # fluid stopped by ATLAS's rule
}
#: One colour per benchmark, from Paul Tol's muted palette: none is a method's, so a line per benchmark
#: is never read as a method. Benchmarks not named here take :data:`MORE_BENCHMARK_COLOURS` in turn.
BENCHMARK_COLOURS = {
    "arc_challenge": "#332288",
    "hellaswag": "#999933",
    "gsm8k": "#882255",
    "winogrande": "#cc6677",
    "pope": "#44aa99",
}
MORE_BENCHMARK_COLOURS = ("#ddcc77", "#117733", "#88ccee", "#aa4499")
#: A second cue beside the colour: for print, and for two colours a reader sees alike.
METHOD_MARKERS = {
    "tailoredbench": "o",
    "tailored_plus": "D",
    "random": "v",
    "anchor_points": "^",
    "gp_irt": "s",
    "random_regression": "P",
    "fluid": "X",
    "fluid_atlas": "*",
}
#: A method colour at least this light (luma, 0-1) reads faintly on white: its marks get a darker edge.
LIGHT = 0.75
#: What is no method: reference lines, items not highlighted, a role such as "best baseline" with no method named.
NEUTRAL = "#7f7f7f"
#: Labels the tables use for a method, lower-cased, with the method each stands for.
METHOD_LABELS = {
    "tailoredbench (faithful)": "tailoredbench",
    "faithful tailoredbench": "tailoredbench",
    "tailoredbench+": "tailored_plus",
    "tailoredbench+ (chosen)": "tailored_plus",
    "anchorpoints": "anchor_points",
    "gp-irt": "gp_irt",
    "gpirt": "gp_irt",
}
#: Roles whose method changes from benchmark to benchmark: :data:`NEUTRAL` unless the method is given.
ROLES = ("best baseline", "baseline")
#: Groups in a figure that shows no method (clusters of items), told apart by these.
GROUP_COLOURS = (OKABE_ITO["orange"], OKABE_ITO["bluish green"], OKABE_ITO["reddish purple"], OKABE_ITO["sky blue"])
#: A notebook column: figures this wide, at this resolution, show at their own size.
WIDTH, DPI = 10.0, 100
#: Legends at least this large (points).
LEGEND_SIZE = 10


def _variant_shades() -> dict[str, str]:
    # TailoredBench+'s variants: one hue, darker to lighter in VARIANTS' order
    others = [v for v in VARIANTS if v not in ("calibrated", DEFAULT_VARIANT)]
    base = np.array(to_rgb(METHOD_COLOURS["tailored_plus"]))
    shades = {}
    for variant, amount in zip(others, np.linspace(-0.55, 0.6, len(others)), strict=True):
        towards = np.zeros(3) if amount < 0 else np.ones(3)
        shades[variant] = to_hex(base + abs(amount) * (towards - base))
    return shades


#: ``tailored_plus[variant]``'s colour: TailoredBench+'s own for the default variant, TailoredBench's for
#: ``calibrated`` (the faithful estimate, identical to TailoredBench), a shade of TailoredBench+'s hue otherwise.
VARIANT_COLOURS = {
    "calibrated": METHOD_COLOURS["tailoredbench"],
    DEFAULT_VARIANT: METHOD_COLOURS["tailored_plus"],
    **_variant_shades(),
}


def method_of(name: str) -> str:
    """The method a name or table label stands for: ``"TailoredBench (faithful)"`` -> ``"tailoredbench"``.

    A variant stays a variant (``"TailoredBench+ (mix)"`` -> ``"tailored_plus[mix]"``); a role
    such as ``"best baseline"`` stays itself. An unknown name is an error, not a grey line.

    Examples
    --------
    >>> method_of("gp-IRT"), method_of("TailoredBench+ (stacked)"), method_of("tailored_plus[mix]")
    ('gp_irt', 'tailored_plus', 'tailored_plus[mix]')
    """
    if name in METHOD_COLOURS:
        return name
    if name.endswith("]") and "[" in name:
        base, variant = name[:-1].split("[", 1)
        if base in METHOD_COLOURS:
            return base if base == "tailored_plus" and variant == DEFAULT_VARIANT else name
    label = " ".join(name.strip().lower().split())
    plus = re.fullmatch(r"tailoredbench\+ \((\w+)\)", label)
    if plus and plus.group(1) in VARIANTS:
        return method_of(f"tailored_plus[{plus.group(1)}]")
    if label in METHOD_LABELS:
        return METHOD_LABELS[label]
    if label in ROLES:
        return label
    underscored = re.sub(r"[\s-]+", "_", label)
    if underscored in METHOD_COLOURS:
        return underscored
    raise TailoredBenchError(f"no colour for method {name!r}: add it to figures.METHOD_COLOURS or METHOD_LABELS")


def _parts(name: str) -> tuple[str, str]:
    """A name's method and variant (``""`` if none); the faithful variant counts as TailoredBench's."""
    base, _, variant = method_of(name).rstrip("]").partition("[")
    return ("tailoredbench", variant) if (base, variant) == ("tailored_plus", "calibrated") else (base, variant)


def method_colour(name: str) -> str:
    """A method's colour in every figure, from its name, its variant's name or a table's label for it.

    Examples
    --------
    >>> method_colour("TailoredBench (faithful)") == method_colour("tailoredbench") == METHOD_COLOURS["tailoredbench"]
    True
    >>> method_colour("best baseline") == NEUTRAL
    True
    """
    if method_of(name) in ROLES:
        return NEUTRAL
    base, variant = _parts(name)
    return VARIANT_COLOURS.get(variant, METHOD_COLOURS[base]) if base == "tailored_plus" else METHOD_COLOURS[base]


def method_edge(name: str) -> str:
    """The edge of a method's marks: its colour, or a darker shade of it where the colour is light (yellow).

    Examples
    --------
    >>> method_edge("tailoredbench") == method_colour("tailoredbench"), method_edge("fluid_atlas")
    (True, '#847d24')
    """
    colour = method_colour(name)
    r, g, b = to_rgb(colour)
    return to_hex((0.55 * r, 0.55 * g, 0.55 * b)) if 0.299 * r + 0.587 * g + 0.114 * b >= LIGHT else colour


def _cased(name: str, width: float) -> list:
    """Path effects that outline a light method's line of ``width`` in its edge colour, so that it reads on white."""
    edge = method_edge(name)
    if edge == method_colour(name):
        return []
    return [patheffects.withStroke(linewidth=width + 1.5, foreground=edge)]


def benchmark_colours(names: Iterable[str]) -> dict[str, str]:
    """Each benchmark's colour (:data:`BENCHMARK_COLOURS`), the others' in turn from the spare ones."""
    spare = iter(MORE_BENCHMARK_COLOURS * 4)
    return {str(n): BENCHMARK_COLOURS.get(str(n)) or next(spare) for n in dict.fromkeys(names)}


def method_marker(name: str) -> str:
    """A method's marker, the cue beside its colour (a variant shares its method's)."""
    return METHOD_MARKERS.get(_parts(name)[0], "o")


def method_order(names: Iterable[str]) -> list[str]:
    """Names in the reports' order of methods (:data:`METHOD_COLOURS`), variants after their method."""

    def rank(name: str) -> tuple[int, int, str]:
        base, variant = _parts(name)
        order = list(METHOD_COLOURS)
        where = order.index(base) if base in order else len(order)
        return where, list(VARIANT_COLOURS).index(variant) + 1 if variant in VARIANT_COLOURS else 0, name

    return sorted(dict.fromkeys(names), key=rank)


def plotting():
    """pyplot and seaborn, with the reports' theme."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="notebook", rc={"legend.fontsize": LEGEND_SIZE})
    return plt, sns


def _save(fig, path):
    if path:  # "tight": a legend outside the axes is part of the picture
        fig.savefig(path, dpi=DPI, bbox_inches="tight")
    return fig


def _lines(
    ax, table: pd.DataFrame, metric: str, labels: Mapping, ms: int = 4, capsize: int = 2, skip_empty: bool = False
) -> None:
    """Each method's ``metric`` against budget, ticked at the budgets, ± one standard error, in its colour and
    marker; ``labels`` maps the methods, in order, to their labels (an empty line still makes a legend entry
    unless ``skip_empty``)."""
    for method, label in labels.items():
        line = table[table["method"] == method].sort_values("budget")
        if len(line) or not skip_empty:
            style = {"marker": method_marker(method), "ms": ms, "capsize": capsize, "color": method_colour(method)}
            ax.errorbar(line["budget"], line[metric], yerr=line.get(f"{metric}_se"), label=label, **style)
    ax.set_xticks(sorted(table["budget"].unique()))


def _tight(fig, path, dpi: int = 110):
    if fig.get_layout_engine() is None:  # a constrained figure lays itself out; tight_layout would warn
        fig.tight_layout()
    if path:
        fig.savefig(path, dpi=dpi)
    return fig


def _legend_below(fig, entries: tuple[list, list], ncol: int | None = None) -> None:
    """One legend for every panel, below them, where it hides no line: ``entries`` are (handles, labels)."""
    handles, labels = entries
    ncol = ncol or min(len(labels), 4)
    fig.legend(handles, labels, loc="outside lower center", ncol=ncol, frameon=False, fontsize=LEGEND_SIZE)


def _legend_spare(fig, spare: list, entries: tuple[list, list]) -> None:
    """The legend in the first of the last row's empty panels, or below the panels if there is none."""
    for ax in spare:
        ax.set_axis_off()
    if spare:
        spare[0].legend(*entries, loc="center", frameon=False)
    else:
        _legend_below(fig, entries, ncol=3)


def _first_handles(axes) -> tuple[list, list]:
    """Every label drawn in any of ``axes``, once, with its first handle."""
    found: dict = {}
    for ax in np.ravel(axes):
        for handle, name in zip(*ax.get_legend_handles_labels(), strict=True):
            found.setdefault(name, handle)
    return list(found.values()), list(found)


def _row(ncols: int, height: float, width: float = WIDTH, nrows: int = 1, **kwargs):
    """``nrows`` rows of ``ncols`` panels, ``width`` by ``height`` inches in all."""
    plt, _ = plotting()
    return plt.subplots(nrows, ncols, figsize=(width, height), layout="constrained", **kwargs)


def _grid(n: int, ncols: int, panel_height: float, **kwargs):
    """``n`` panels in rows of ``ncols`` at notebook width; the last row's empty panels are returned apart."""
    ncols = min(ncols, n)
    nrows = -(-n // ncols)
    fig, axes = _row(ncols, panel_height * nrows + 0.8, nrows=nrows, squeeze=False, **kwargs)
    flat = list(axes.ravel())
    return fig, flat[:n], flat[n:]


def plot_budget_curves(summary: pd.DataFrame, path: str | Path, title: str = ""):
    """MAE and Kendall's tau against budget, one line per method, ± one standard error."""
    fig, axes = _row(2, 4.4)
    panels = (("mae", "MAE (lower is better)"), ("kendall_tau", "Kendall's tau (higher is better)"))
    for ax, (metric, label) in zip(axes, panels, strict=True):
        _lines(ax, summary, metric, {m: m for m in method_order(summary["method"])}, 5, 3)
        ax.set(xlabel="budget (items answered per target)", ylabel=label)
    _legend_below(fig, axes[0].get_legend_handles_labels(), ncol=5)
    fig.suptitle(f"{title} (mean over runs ± one standard error)" if title else "Mean over runs ± one standard error")
    return _save(fig, path)


def plot_estimates(results: pd.DataFrame, path: str | Path, budget: int, run: int = 0, title: str = ""):
    """Estimated against true accuracy of every target, one panel per method, in the method's colour."""
    _, sns = plotting()
    data = results[(results["budget"] == budget) & (results["run"] == run)]
    methods = method_order(data["method"])
    panels = {"col": "method", "col_order": methods, "col_wrap": min(3, len(methods)), "height": WIDTH / 3}
    palette = {m: method_colour(m) for m in methods}
    grid = sns.relplot(data=data, x="true", y="estimate", s=25, hue="method", palette=palette, legend=False, **panels)
    # the range of the data (POPE's models all sit near 0.85), with no tick at an edge where panels meet
    values = np.concatenate([data["true"].to_numpy(), data["estimate"].to_numpy()])
    low, high = max(0.0, float(values.min()) - 0.03), min(1.0, float(values.max()) + 0.03)
    for ax in grid.axes.flat:
        ax.plot([0, 1], [0, 1], color=NEUTRAL, lw=1, ls="--", label="estimate = truth")
        ax.set(xlim=(low, high), ylim=(low, high))
        ax.xaxis.set_major_locator(MaxNLocator(4, prune="both"))
    grid.axes.flat[0].legend(loc="upper left")
    grid.set_axis_labels("true accuracy (all items)", f"estimate ({budget} items)")
    grid.set_titles("{col_name}")
    grid.figure.suptitle(f"{title + ': ' if title else ''}every target of run {run}, one dot each", y=1.02)
    grid.savefig(path, dpi=DPI)
    return grid.figure


def plot_main_figure(table: pd.DataFrame, path: str | Path, title: str = ""):
    """MAE and tau against budget, one row per benchmark, one line per method, ± one standard error.

    Every panel has its own y-axis: one method far off on one benchmark (POPE's AnchorPoints)
    would otherwise flatten every other line of its row.
    """
    benchmarks = list(dict.fromkeys(table["benchmark"]))
    methods = {m: m for m in method_order(table["method"])}
    metrics = (("mae", "MAE", "lower is better"), ("kendall_tau", "Kendall's tau", "higher is better"))
    fig, axes = _row(2, 2.4 * len(benchmarks) + 1.0, nrows=len(benchmarks), squeeze=False)
    for row, (name, part) in enumerate(table.groupby("benchmark", sort=False)):
        for col, (metric, label, better) in enumerate(metrics):
            ax = axes[row, col]
            _lines(ax, part, metric, methods)
            ax.set_title(f"{name}: {label} ({better})", fontsize=11)
            ax.set(ylabel=f"{label} (± s.e.)", xlabel="budget (items per target)" if row == len(benchmarks) - 1 else "")
    handles, labels = _first_handles(axes)
    if title:
        fig.suptitle(title)
        _legend_below(fig, (handles, labels), ncol=5)
    else:  # above the panels: in a tall figure, a legend at the bottom is far from the first rows
        fig.legend(handles, labels, loc="outside upper center", ncol=min(len(labels), 5), frameon=False)
    return _save(fig, path)


def plot_native_sources(g_source, g_result, native, distance: str = "manhattan", path=None):
    """Every source model's distance to the target on the G-set, nearest first, the native sources marked."""
    to_sources, threshold = g_set_distances(g_source, g_result, distance=distance)
    order = np.argsort(to_sources[0], kind="stable")
    chosen = np.isin(order, np.asarray(native))
    fig, ax = _row(1, 4.2, WIDTH * 0.8)
    x, height = np.arange(len(order)), to_sources[0, order]
    native_colour = METHOD_COLOURS["tailoredbench"]
    for mine, colour, label in ((chosen, native_colour, "native source"), (~chosen, "darkgrey", "other source")):
        ax.bar(x[mine], height[mine], color=colour, alpha=0.6 if colour == "darkgrey" else 1.0, label=label)
        # a dot on every bar's top: a source at distance 0, with no bar, still shows
        ax.plot(x[mine], height[mine], "o", ms=3, color=colour, clip_on=False)
    ax.axhline(threshold, color="black", ls="--", lw=1, label="mean distance over all pairs of models")
    ax.set(xlabel="source models, nearest to the target first", ylabel=f"{distance} distance on the G-set")
    _legend_below(fig, ax.get_legend_handles_labels(), ncol=3)
    return _save(fig, path)


def plot_native_families(shares: pd.DataFrame, path=None):
    """Families of the native source models against their share among all source models
    (:func:`~tailoredbench.datasets.families.family_shares`'s table)."""
    fig, ax = _row(1, 4.8, WIDTH * 0.7)
    shares.plot.barh(ax=ax, color=[NEUTRAL, METHOD_COLOURS["tailoredbench"]])
    ax.set(xlabel="share of models", ylabel="model family")
    ax.legend(loc="lower right")
    return _save(fig, path)


def plot_calibration(native_mean, probe, results, path=None):
    """Per cluster: the native sources' mean on the medoid against the target's result, and the cluster size."""
    fig, axes = _row(2, 3.6)
    sizes = np.bincount(probe.labels, minlength=len(probe.items))
    m_c = np.asarray(native_mean)[probe.items]
    y = np.asarray(results, dtype=float)
    jitter = rng.stream((rng.FIGURE_JITTER,)).uniform(-0.04, 0.04, len(y))
    solved = np.where(y > 0, "seagreen", "indianred")
    for value, colour, label in ((1.0, "seagreen", "target right"), (0.0, "indianred", "target wrong")):
        mine = y == value
        axes[0].scatter(m_c[mine], y[mine] + jitter[mine], s=20 + sizes[mine], c=colour, alpha=0.7, label=label)
    axes[0].set(xlabel="native sources' mean on the medoid (m_c)", ylabel="target's result on the medoid (y_c)")
    axes[0].set_yticks([0, 1])
    axes[0].set_title("marker area: cluster size; results jittered around 0 and 1", fontsize=11)
    legend = axes[0].legend(loc="center right")
    for handle in legend.legend_handles:  # one marker size in the legend: there, size means nothing
        handle.set_sizes([40])
    scale = (y + 0.5) / (m_c + 0.5)
    bars = axes[1].bar(np.arange(len(y)), scale, color=solved)
    line = axes[1].axhline(1.0, color="grey", lw=1)
    right = next((b for b, c in zip(bars, solved, strict=True) if c == "seagreen"), None)
    wrong = next((b for b, c in zip(bars, solved, strict=True) if c == "indianred"), None)
    shown = [(h, t) for h, t in ((right, "target right"), (wrong, "target wrong"), (line, "no change")) if h]
    # headroom above the tallest bar: the legend lies in one row over the bars, hiding none
    axes[1].set_ylim(0, float(scale.max()) * 1.4)
    axes[1].legend([h for h, _ in shown], [t for _, t in shown], loc="upper center", ncol=3, fontsize="small")
    axes[1].set(xlabel="cluster (G-set first)", ylabel="calibration factor")
    axes[1].set_title("(y_c + .5) / (m_c + .5)", fontsize=11)
    return _save(fig, path)


def plot_beyond(summary: pd.DataFrame, path: str | Path, methods: dict, *, coverage: pd.DataFrame | None = None):
    """MAE against budget per benchmark (top), and every method's interval coverage per benchmark (bottom).

    ``methods`` maps a method name in ``summary`` to its label. Coverage is the mean over budgets, its
    error bar one standard error across targets, from ``coverage`` (as :func:`~tailoredbench.studies.beyond_table`
    returns it) or else a ``coverage_se`` column of ``summary``.
    """
    plt, _ = plotting()
    data = summary[summary["method"].isin(list(methods))]
    benchmarks = list(dict.fromkeys(data["benchmark"]))
    order = method_order(methods)
    ncols = min(3, len(benchmarks))
    nrows = -(-len(benchmarks) // ncols)
    fig = plt.figure(figsize=(WIDTH, 2.9 * nrows + 3.6), layout="constrained")
    grid = fig.add_gridspec(nrows + 1, ncols, height_ratios=[1.0] * nrows + [1.25])
    panels = [fig.add_subplot(grid[i // ncols, i % ncols]) for i in range(len(benchmarks))]
    for ax, (name, part) in zip(panels, data.groupby("benchmark", sort=False), strict=True):
        _lines(ax, part, "mae", {m: methods[m] for m in order}, skip_empty=True)
        ax.set_title(name, fontsize=11)
        ax.set(xlabel="budget (items)", ylabel="MAE (± s.e.)")
    bars = fig.add_subplot(grid[nrows, :])
    means = data.groupby(["benchmark", "method"], sort=False)["coverage"].mean()
    if coverage is not None:
        errors = coverage.set_index(["benchmark", "method"])["coverage_se"].reindex(means.index)
    elif "coverage_se" in data:
        errors = data.groupby(["benchmark", "method"], sort=False)["coverage_se"].mean()
    else:
        errors = pd.Series(np.nan, index=means.index)
    bars.axhspan(0.85, 0.95, color=OKABE_ITO["bluish green"], alpha=0.12, label="target coverage 85-95%")
    bars.axhline(0.9, color="black", lw=1, ls="--", label="nominal 90%")
    width = min(0.25, 0.8 / max(1, max(len(means[name]) for name in benchmarks)))
    for x, name in enumerate(benchmarks):
        present = [m for m in order if m in means[name].index]
        for k, method in enumerate(present):
            error = errors.get((name, method), np.nan)
            at, yerr = x + (k - (len(present) - 1) / 2) * width, None if np.isnan(error) else error
            style = {"width": width * 0.92, "capsize": 3, "color": method_colour(method), "label": methods[method]}
            bars.bar(at, means[name, method], yerr=yerr, **style)
    bars.set_xticks(range(len(benchmarks)), benchmarks)
    low = float(np.nanmin(means.to_numpy() - errors.fillna(0).to_numpy()))
    bars.set_ylim(min(0.7, np.floor(low * 20) / 20 - 0.05), 1.01)
    bars.grid(axis="x", visible=False)
    shown = "mean over budgets ± s.e. across targets" if errors.notna().any() else "mean over budgets"
    bars.set(xlabel="benchmark", ylabel=f"interval coverage\n({shown})")
    bars.set_title("Share of true accuracies inside their 90% interval", fontsize=11)
    spare = [fig.add_subplot(grid[nrows - 1, i]) for i in range(len(benchmarks) - (nrows - 1) * ncols, ncols)]
    _legend_spare(fig, spare, _first_handles([*panels, bars]))
    return _save(fig, path)


def plot_arms(table: pd.DataFrame, path, x: str = "arm", title: str = "", hue: str = "benchmark", xlabel: str = ""):
    """MAE and tau per arm, ± one standard error: one line per benchmark and the mean over benchmarks in black."""
    _, sns = plotting()
    fig, axes = _row(2, 4.2)
    order = list(dict.fromkeys(table[x].astype(str)))
    data = table.assign(**{x: table[x].astype(str)})
    groups = list(dict.fromkeys(data[hue]))
    colours = benchmark_colours(groups) if hue == "benchmark" else dict(zip(groups, sns.color_palette(), strict=False))
    at = np.arange(len(order))
    for ax, metric, label in ((axes[0], "mae", "MAE (± s.e.)"), (axes[1], "kendall_tau", "Kendall's tau (± s.e.)")):
        for k, group in enumerate(groups):
            line = data[data[hue] == group].groupby(x, sort=False)[[metric, f"{metric}_se"]].mean().reindex(order)
            # a small sideways offset per line: error bars at one arm do not hide each other
            shift = (k - (len(groups) - 1) / 2) * 0.04
            style = {"color": colours[group], "marker": "o", "ms": 4, "lw": 1, "capsize": 2, "label": str(group)}
            ax.errorbar(at + shift, line[metric], yerr=line[f"{metric}_se"], **style)
        if hue == "benchmark" and len(groups) > 1:
            per = data.groupby([x, hue], sort=False)[[metric, f"{metric}_se"]].mean()
            mean = per[metric].groupby(level=0, sort=False).mean().reindex(order)
            rms = (per[f"{metric}_se"] ** 2).groupby(level=0, sort=False).mean().pow(0.5).reindex(order)
            se = rms / np.sqrt(len(groups))
            ax.errorbar(at, mean.values, yerr=se.values, color="black", lw=2.5, marker="o", capsize=3, label="mean")
        ax.set_xticks(at, order)
        ax.set(ylabel=label, xlabel=xlabel or x)
    _legend_below(fig, axes[0].get_legend_handles_labels(), ncol=6)
    fig.suptitle(title)
    return _save(fig, path)


def plot_counts(table: pd.DataFrame, adaptive: np.ndarray, adaptive_mae: float, path, title: str = ""):
    """MAE against a fixed native-source count, with the adaptive rule's count and MAE marked."""
    plt, _ = plotting()
    fig, ax = plt.subplots(figsize=(6, 3.8))
    ax.errorbar(table["count"], table["mae"], yerr=table["mae_se"], marker="o", label="fixed count")
    ax.axvline(adaptive.mean(), color="C3", linestyle="--", label=f"adaptive rule (mean {adaptive.mean():.0f})")
    ax.axhline(adaptive_mae, color="C3", linestyle=":", label=f"adaptive MAE {adaptive_mae:.4f}")
    ax.set(xlabel="native source models", ylabel="MAE", title=title)
    ax.legend(fontsize=8)
    return _tight(fig, path, dpi=120)


def plot_family_heatmap(frame: pd.DataFrame, path, title: str = "", min_targets: int = 3):
    """Rows: target families; columns: the same families, then all others; cells: share of the native sources.

    A family's share among its own targets' native sources is on the diagonal (outlined); the last
    row is each family's share among all source models, a target's by chance.
    """
    plt, sns = plotting()
    shown = frame[frame["targets"] >= min_targets]
    families = sorted(shown["target_family"].unique(), key=lambda f: (f == "other", f.lower()))
    rest = "all other families"
    named = shown.assign(column=shown["source_family"].where(shown["source_family"].isin(families), rest))
    grid = named.pivot_table(index="target_family", columns="column", values="share", aggfunc="sum", fill_value=0.0)
    grid = grid.reindex(index=families, columns=[*families, rest], fill_value=0.0)
    base = frame.groupby("source_family")["base"].first().reindex(families)
    chance = pd.Series({**base.to_dict(), rest: 1.0 - float(base.sum())}, name="all source models (chance)")
    grid = pd.concat([grid, chance.to_frame().T])
    rows, cols = grid.shape
    size = (min(WIDTH, max(7.0, 3.2 + 0.6 * cols)), max(4.4, 1.8 + 0.42 * rows))
    fig, ax = plt.subplots(figsize=size, layout="constrained")
    cells = {"annot": True, "fmt": ".0f", "cmap": "Blues", "vmin": 0, "linewidths": 0.5, "linecolor": "white"}
    colour_bar = {"label": "% of the row's native sources"}
    sns.heatmap(grid * 100, ax=ax, annot_kws={"fontsize": 9}, cbar_kws=colour_bar, **cells)
    for k in range(len(families)):  # the diagonal: a family picked by its own
        ax.add_patch(Rectangle((k, k), 1, 1, fill=False, edgecolor="black", lw=1.8))
    ax.axhline(rows - 1, color="black", lw=1.5)  # chance, below: not a target family
    ax.axvline(cols - 1, color="black", lw=1.5)
    ax.set(xlabel="family of the native sources", ylabel="family of the target")
    ax.tick_params(axis="x", rotation=45, labelsize=10)
    ax.tick_params(axis="y", rotation=0, labelsize=10)
    plt.setp(ax.get_xticklabels(), ha="right", rotation_mode="anchor")
    name = f"{title}: " if title else ""
    ax.set_title(f"{name}the families of each target family's native sources\n(% of them; outlined: its own family)")
    return _save(fig, path)


def plot_embedding(
    coords: Mapping[str, np.ndarray], labels: np.ndarray, medoids, distances: Mapping, path, title="", *, highlight=3
):
    """Side by side: items embedded by source and by target models; the ``highlight`` largest coreset clusters coloured.

    Compact where the coreset was chosen (sources), scattered where it is used (targets) if the two disagree.
    """
    fig, axes = _row(len(coords), 4.6, squeeze=False)
    labels = np.asarray(labels, dtype=int)
    medoids = np.asarray(medoids, dtype=int)
    largest = np.argsort(-np.bincount(labels, minlength=len(medoids)), kind="stable")[:highlight]
    for ax, (view, xy) in zip(axes[0], coords.items(), strict=True):
        ax.scatter(xy[:, 0], xy[:, 1], c="#C8C8C8", s=6, label="item")
        for colour, cluster in zip(GROUP_COLOURS, largest, strict=False):
            mine = labels == cluster
            ax.scatter(*xy[mine].T, c=colour, s=9, label=f"cluster of item {medoids[cluster]} ({mine.sum()} items)")
        ax.scatter(xy[medoids, 0], xy[medoids, 1], c="black", marker="x", s=30, label="coreset item (medoid)")
        ax.set_title(f"by {view}: mean item-to-medoid distance {distances[view]['mean_distance']:.2f}", fontsize=11)
        ax.set(xlabel="embedding dimension 1", ylabel="embedding dimension 2", xticks=[], yticks=[])
    _legend_below(fig, axes[0, 0].get_legend_handles_labels(), ncol=3)
    fig.suptitle(f"{title}\n(the {highlight} largest clusters coloured, the others grey)" if title else "")
    return _save(fig, path)


def plot_precision(table: pd.DataFrame, path: str | Path):
    """Items asked against the requested precision, one panel per benchmark and a colour per method: the
    sequential mode's mean (solid, ± one standard error where the table has ``items_se``) beside the fixed
    budget that brings 90% of the targets to that precision (dashed); a hollow marker where fewer than 90%
    of the targets reach the precision by the maximum. Each method's points sit a little apart from the
    others' at the same precision, so that none hides another."""
    names = list(dict.fromkeys(table["benchmark"]))
    methods = method_order(table["method"])
    precisions = sorted(table["precision"].unique())
    step = min(np.diff(precisions), default=0.01) / 5  # the methods' offsets within a precision
    fig, axes, spare = _grid(len(names), 3, 3.3, sharey=True)
    for ax, (name, part) in zip(axes, table.groupby("benchmark", sort=False), strict=True):
        top = part["max_budget"].iloc[0]
        ax.axhline(top, color=NEUTRAL, lw=1, ls="-.")
        for k, method in enumerate(methods):
            rows = part[part["method"] == method].sort_values("precision")
            # the axis runs from loose to tight precision: subtracting sets the methods left to right in their order
            x = rows["precision"].to_numpy() - (k - (len(methods) - 1) / 2) * step
            c, edge = method_colour(method), method_edge(method)
            below = 0.1 * (edge != c)  # a light method's outlined line, wider, goes under the others'
            short = rows["precision_met"].to_numpy() < 0.9
            line = {"color": c, "mec": edge, "path_effects": _cased(method, 1.5), "zorder": 2 - below}
            ax.errorbar(x, rows["items_mean"], rows.get("items_se"), ecolor=edge, marker="o", ms=5, capsize=2.5, **line)
            mean = rows["items_mean"].to_numpy()
            ringed = {"edgecolors": edge, "zorder": 3 - below}
            ax.scatter(x[short], mean[short], s=80, facecolors="white", linewidths=1.2, **ringed)
            ax.plot(x, rows["fixed_budget"], ls="--", marker="s", ms=4, **line)
            # a cross on the maximum: no fixed budget up to it brings 90% of the targets to the precision
            none = rows["fixed_budget"].isna().to_numpy()
            ax.scatter(x[none], np.full(none.sum(), top), marker="X", s=45, facecolors=c, **ringed)
        ax.set_title(name, fontsize=11)
        # ".05" rather than "0.05": precisions 0.01 apart stay apart in a narrow panel
        ax.set_xticks(precisions, [f"{p:.2f}".removeprefix("0") for p in precisions], fontsize=9)
        ax.set_xlim(max(precisions) + 0.005, min(precisions) - 0.005)  # tighter precision to the right: more items
        ax.set(xlabel="requested precision (±)", ylabel="items asked per target")
        ax.yaxis.set_tick_params(labelleft=True)
    handles = [Line2D([], [], color=method_colour(m), lw=3, path_effects=_cased(m, 3)) for m in methods]
    keys = {
        "sequential mode: mean items asked": Line2D([], [], color="black", marker="o", ms=5),
        "fixed budget: 90% of targets there": Line2D([], [], color="black", ls="--", marker="s", ms=4),
        "maximum budget": Line2D([], [], color=NEUTRAL, ls="-.", lw=1),
        "hollow: < 90% of targets reach it": Line2D([], [], ls="none", marker="o", mfc="white", mec="black", ms=9),
        "cross: no fixed budget up to the maximum": Line2D([], [], ls="none", marker="X", color="black", ms=7),
    }
    _legend_spare(fig, spare, ([*handles, *keys.values()], [*methods, *keys]))
    return _save(fig, path)


def plot_followed(frame: pd.DataFrame, precision: float, path: str | Path, title: str = "", *, method: str = ""):
    """One model round by round: its estimate and interval beside its true accuracy (left), and the
    interval's half-width against the requested precision (right); the rule stops at the star.
    ``method`` names the method that made the estimates, for its colour."""
    plt, _ = plotting()
    fig, (left, right) = plt.subplots(1, 2, figsize=(WIDTH, 4.2))
    colour, stopped = method_colour(method) if method else "#404040", "black"
    x = frame["budget"].to_numpy()
    stop = frame[frame["stopped"]].iloc[0]
    left.fill_between(x, frame["low"], frame["high"], color=colour, alpha=0.2, label="90% interval")
    left.plot(x, frame["estimate"], color=colour, marker="o", label="estimate")
    left.axhline(frame["true"].iloc[0], color=NEUTRAL, ls="--", lw=1.2, label="true accuracy (all items)")
    left.plot([stop["budget"]], [stop["estimate"]], marker="*", ms=16, color=stopped, ls="none", label="stop")
    left.set(xlabel="items asked", ylabel="accuracy")
    below = {"fontsize": LEGEND_SIZE, "loc": "upper center", "bbox_to_anchor": (0.5, -0.2), "ncol": 2}
    left.legend(**below)  # below the axes: inside, it covered the band
    right.plot(x, frame["halfwidth"], color=colour, marker="o", label="interval half-width")
    right.axhline(precision, color=NEUTRAL, ls="--", lw=1.2, label=f"requested precision ±{precision}")
    right.plot([stop["budget"]], [stop["halfwidth"]], marker="*", ms=16, color=stopped, ls="none")
    right.set(xlabel="items asked", ylabel="half-width")
    right.legend(**below)
    if title:
        fig.suptitle(title)
    return _tight(fig, path)


# The walkthrough's figures

#: The two estimates the walkthrough compares: TailoredBench's colour, and grey for the plain mean.
WALKTHROUGH_COLOURS = {"calibrated estimate": METHOD_COLOURS["tailoredbench"], "plain mean of the probe": NEUTRAL}


def plot_pipeline(path=None):
    """The four steps as boxes: what each reads from the sources and from the target, and what it passes on."""
    plt, _ = plotting()
    fig, ax = plt.subplots(figsize=(10, 4.4))
    ax.set(xlim=(0, 10), ylim=(0, 4.4))
    ax.axis("off")
    rounded = {"boxstyle": "round,pad=0.05", "ec": "dimgrey", "lw": 1, "mutation_scale": 1}

    def box(x, y, w, h, text, colour):
        ax.add_patch(FancyBboxPatch((x, y), w, h, fc=colour, **rounded))
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
    return _tight(fig, path)


def plot_item_clusters(embedded_by, labels, g_items, n_items=(), groups: int = 3, path=None, title: str = ""):
    """Items in the space their clusters were formed in, whole (left) and where the coloured ones lie (right).

    The principal components of the items embedded by ``embedded_by``'s rows (z-scored), one marker per
    answer pattern (area: its items); the ``groups`` largest clusters in colour, each medoid ringed in its
    cluster's colour, the rest grey; stars the G-set, diamonds the rest of the N-set.
    """
    fig, axes = _row(2, 4.6)
    xy = item_map(np.asarray(embedded_by, dtype=float))
    labels = np.asarray(labels)
    g_items, n_items = np.asarray(g_items, dtype=int), np.asarray(n_items, dtype=int)
    medoids = np.concatenate([g_items, n_items])
    sizes = np.bincount(labels, minlength=len(medoids))
    shown = np.argsort(-sizes, kind="stable")[: min(groups, len(GROUP_COLOURS))]
    # items with one answer pattern share a point: draw each point once, its area the items on it
    points, first, count = np.unique(np.round(xy, 9), axis=0, return_index=True, return_counts=True)
    coloured = np.isin(labels[first], shown)
    # the enlarged region: where the coloured clusters' points lie, a little margin around them
    low, high = np.percentile(points[coloured], [2, 98], axis=0) if coloured.any() else (xy.min(0), xy.max(0))
    pad = 0.08 * (high - low) + 0.1
    low, high = low - pad, high + pad
    for ax, scale in ((axes[0], 1.0), (axes[1], 2.5)):
        area = scale * 10 * np.sqrt(count)
        ax.scatter(*points[~coloured].T, s=area[~coloured], c="lightgrey", alpha=0.7, label="items of other clusters")
        for colour, cluster in zip(GROUP_COLOURS, shown, strict=False):
            mine = labels[first] == cluster
            label = f"cluster of {sizes[cluster]} items"
            ax.scatter(*points[mine].T, s=area[mine], color=colour, alpha=0.75, label=label)
            ring = {"s": 260 * scale, "facecolors": "none", "edgecolors": colour, "lw": 2, "zorder": 4}
            ax.scatter(*xy[medoids[cluster]], **ring)
        ax.scatter(*xy[g_items].T, marker="*", s=110 * scale, c="black", label="G-set item")
        if len(n_items):
            ax.scatter(*xy[n_items].T, marker="D", s=28 * scale, c="white", edgecolors="black", label="N-set item")
        ax.set(xlabel="item PC 1", ylabel="item PC 2")
    axes[1].set(xlim=(low[0], high[0]), ylim=(low[1], high[1]))
    axes[1].set_title("where the coloured clusters lie, enlarged", fontsize=10)
    box = Rectangle(low, *(high - low), fill=False, ls="--", lw=1, edgecolor="black")
    axes[0].add_patch(box)
    axes[0].set_title(f"{title}: all {len(labels)} items" if title else f"all {len(labels)} items", fontsize=10)
    handles, names = axes[0].get_legend_handles_labels()
    for handle in handles[: len(shown) + 1]:  # the legend's markers at one size, not their first point's
        handle.set_sizes([30])
    _legend_below(fig, (handles, names), ncol=3)
    fig.suptitle(f"the {len(shown)} largest of {len(medoids)} clusters in colour, each medoid ringed", fontsize=10)
    return _tight(fig, path)


def plot_every_target(
    table: pd.DataFrame, path=None, worked: int | None = None, strongest_source: float | None = None, title: str = ""
):
    """Left: each target's error (estimate - truth) against its accuracy, for the calibrated estimate and the
    probe's plain mean; a cross marks a target that kept a single native source (if ``table`` has ``n_native``).
    Right: each one's mean absolute error over the targets, ± one standard error. ``title``: which run it shows."""
    plt, _ = plotting()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.0), gridspec_kw={"width_ratios": [2.2, 1]})
    if title:
        fig.suptitle(title, fontsize=11)
    left.axhline(0.0, color="grey", lw=1)
    errors = {label: table[column] - table["truth"] for column, label in ESTIMATES.items()}
    for label, error in errors.items():
        left.scatter(table["truth"], error, s=18, color=WALKTHROUGH_COLOURS[label], alpha=0.8, label=label)
    alone = table[table["n_native"] == 1] if "n_native" in table else table.iloc[:0]
    if len(alone):
        error = alone["estimate"] - alone["truth"]
        left.scatter(alone["truth"], error, marker="x", s=50, c="black", label="one native source")
    if strongest_source is not None:
        left.axvline(strongest_source, color="black", ls="--", lw=1, label="strongest source model")
    if worked is not None:
        row = table[table["target"] == worked].iloc[0]
        at = (row["truth"], row["estimate"] - row["truth"])
        left.scatter([at[0]], [at[1]], s=120, facecolors="none", edgecolors="black")
        arrow = {"arrowstyle": "-", "color": "black", "lw": 0.8}
        left.annotate("worked target", at, xytext=(12, -38), textcoords="offset points", fontsize=8, arrowprops=arrow)
    left.set(xlabel="target's true accuracy", ylabel="error: estimate - truth")
    left.legend(loc="upper center", bbox_to_anchor=(0.5, -0.17), ncol=2, fontsize="small", frameon=False)
    means = [float(e.abs().mean()) for e in errors.values()]
    ses = [float(e.abs().std(ddof=1) / np.sqrt(len(e))) for e in errors.values()]
    right.bar(range(2), means, yerr=ses, capsize=4, color=[WALKTHROUGH_COLOURS[label] for label in errors])
    right.set_xticks(range(2), ["calibrated\nestimate", "plain mean\nof the probe"])
    right.set_ylabel("MAE over the targets (± se)")
    return _tight(fig, path)


#: The suite figure's MAE ticks (a logarithmic axis): those within its range are labelled.
SUITE_TICKS = (0.005, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.06, 0.08, 0.1, 0.15, 0.2)


def plot_suite_gains(gains: Mapping[str, pd.DataFrame], path: str | Path, titles: Mapping[str, str] | None = None):
    """Per suite (a panel each) and benchmark, each method's MAE planned one benchmark at a time (hollow) and
    jointly (filled), ± one standard error over runs, joined by a line and annotated with their ratio.

    ``gains`` maps a suite to :func:`~tailoredbench.studies.joint_gains`'s table. The axis is logarithmic, so
    within a panel a line's length is the ratio whatever the benchmark's error (panels span different ranges);
    a ratio within two standard errors across targets of 1 (a tie) is printed in grey italics.
    """
    names = list(gains)
    groups = {s: list(dict.fromkeys(gains[s]["benchmark"])) for s in names}
    ratios = [len(groups[s]) + 0.6 for s in names]
    fig, axes = _row(len(names), 4.8, squeeze=False, gridspec_kw={"width_ratios": ratios})
    methods: list[str] = []
    for ax, suite in zip(axes[0], names, strict=True):
        table = gains[suite]
        order = method_order(table["method"])
        methods += [m for m in order if m not in methods]
        step = 0.8 / max(len(order), 1)
        for k, method in enumerate(order):
            rows = table[table["method"] == method].set_index("benchmark").reindex(groups[suite])
            x = np.arange(len(rows)) + (k - (len(order) - 1) / 2) * step
            colour, edge, marker = method_colour(method), method_edge(method), method_marker(method)
            style = {"ls": "none", "marker": marker, "ms": 6.5, "capsize": 2, "ecolor": edge, "mec": edge}
            ax.errorbar(x, rows["independent"], yerr=rows["independent_se"], mfc="white", zorder=2, **style)
            ax.errorbar(x, rows["joint"], yerr=rows["joint_se"], mfc=colour, zorder=3, **style)
            ratio = {"xytext": (0, -9), "textcoords": "offset points", "ha": "center", "va": "top", "rotation": 90}
            for at, row in zip(x, rows.itertuples(), strict=True):  # the joining lines sit under the markers
                ax.plot([at, at], [row.independent, row.joint], color=colour, lw=1.6, zorder=1)
                tie = row.verdict != "gain"
                below = min(row.joint - row.joint_se, row.independent - row.independent_se)
                shown = {"color": NEUTRAL if tie else edge, "style": "italic" if tie else "normal"}
                ax.annotate(f"{row.ratio:.2f}", (at, below), fontsize=9, **ratio, **shown)
        low = min((table[m] - table[f"{m}_se"]).min() for m in ("joint", "independent")) / 1.5
        high = max((table[m] + table[f"{m}_se"]).max() for m in ("joint", "independent")) * 1.08
        ax.set(yscale="log", ylim=(low, high))
        # no tick on the top edge, where its label would run into the title
        ax.yaxis.set_major_locator(FixedLocator([t for t in SUITE_TICKS if low <= t <= high / 1.03]))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_xticks(range(len(groups[suite])), groups[suite], fontsize=9, rotation=20)
        ax.set_xlabel("benchmark", fontsize=10)
        ax.set_xlim(-0.6, len(groups[suite]) - 0.4)
        if "suite mean" in groups[suite]:  # the suite mean is no benchmark: set apart
            ax.axvline(groups[suite].index("suite mean") - 0.5, color=NEUTRAL, lw=1, ls=":")
        ax.grid(axis="x", visible=False)
        ax.yaxis.set_major_formatter(FormatStrFormatter("%.3f"))
        ax.tick_params(axis="y", labelsize=9)
        ax.set_title((titles or {}).get(suite, suite), fontsize=11)
    axes[0][0].set_ylabel("MAE on the targets (log scale, ± s.e. over runs)")
    handles = [
        Line2D([], [], color=method_colour(m), marker=method_marker(m), mec=method_edge(m), lw=1.6) for m in methods
    ]
    keys = {
        "hollow: independent": Line2D([], [], ls="none", marker="o", mfc="white", mec="black", ms=6.5),
        "filled: joint": Line2D([], [], ls="none", marker="o", color="black", ms=6.5),
    }
    _legend_below(fig, ([*handles, *keys.values()], [*methods, *keys]), ncol=len(methods) + len(keys))
    return _save(fig, path)
