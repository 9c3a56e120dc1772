"""The figures' palette (one colour per method, whatever its label) and what the figures show a reader."""

import matplotlib
import matplotlib.pyplot as plt
import pandas as pd
import pytest

from tailoredbench import figures
from tailoredbench.errors import TailoredBenchError
from tailoredbench.methods import METHODS
from tailoredbench.tailored import DEFAULT_VARIANT, VARIANTS


@pytest.fixture(autouse=True)
def closed():
    yield
    plt.close("all")


def test_every_method_has_its_own_colour_and_marker_from_the_colour_blind_safe_palette():
    assert set(METHODS) | {"fluid"} <= set(figures.METHOD_COLOURS)
    colours = list(figures.METHOD_COLOURS.values())
    assert len(set(colours)) == len(colours)
    assert set(colours) <= set(figures.OKABE_ITO.values())
    assert figures.NEUTRAL not in colours
    assert set(figures.METHOD_MARKERS) == set(figures.METHOD_COLOURS)
    assert len(set(figures.METHOD_MARKERS.values())) == len(figures.METHOD_MARKERS)


def test_a_label_takes_its_methods_colour():
    colour = figures.method_colour
    tailored, plus = figures.METHOD_COLOURS["tailoredbench"], figures.METHOD_COLOURS["tailored_plus"]
    assert colour("TailoredBench (faithful)") == colour("faithful TailoredBench") == tailored
    assert colour("tailored_plus[calibrated]") == tailored  # the faithful estimate
    assert colour(f"tailored_plus[{DEFAULT_VARIANT}]") == colour("TailoredBench+ (chosen)") == plus
    assert colour(f"TailoredBench+ ({DEFAULT_VARIANT})") == colour("TailoredBench+") == plus
    assert colour("gp-IRT") == colour("gp_irt") == figures.METHOD_COLOURS["gp_irt"]
    assert colour("AnchorPoints") == colour("anchor points") == figures.METHOD_COLOURS["anchor_points"]
    assert colour("best baseline") == figures.NEUTRAL
    with pytest.raises(TailoredBenchError, match="no colour"):
        colour("somebody's method")


def test_tailored_plus_variants_are_shades_of_one_hue_and_no_other_methods_colour():
    shades = [
        figures.method_colour(f"tailored_plus[{v}]") for v in VARIANTS if v not in ("calibrated", DEFAULT_VARIANT)
    ]
    assert len(set(shades)) == len(shades)
    assert not set(shades) & set(figures.METHOD_COLOURS.values())
    assert figures.method_colour("TailoredBench+ (mix)") == figures.method_colour("tailored_plus[mix]")


def test_methods_come_in_the_reports_order():
    names = ["random", "tailored_plus[stacked]", "gp_irt", "tailored_plus[calibrated]", "tailoredbench"]
    assert figures.method_order(names) == [
        "tailoredbench",
        "tailored_plus[calibrated]",
        "tailored_plus[stacked]",
        "random",
        "gp_irt",
    ]


def summary_of(benchmarks, methods, budgets=(10, 20)):
    rows = [
        {
            "benchmark": b,
            "method": m,
            "budget": n,
            "mae": 0.05 - 0.001 * n,
            "mae_se": 0.002,
            "kendall_tau": 0.7,
            "kendall_tau_se": 0.01,
            "coverage": 0.9,
            "width": 0.1,
        }
        for b in benchmarks
        for m in methods
        for n in budgets
    ]
    return pd.DataFrame(rows)


def line_colours(ax):
    return {line.get_label(): matplotlib.colors.to_hex(line.get_color()) for line in ax.get_lines()}


def test_the_beyond_figure_colours_by_method_and_gives_coverage_its_error_bars(tmp_path):
    summary = summary_of(["a", "b"], ["tailored_plus[calibrated]", "tailored_plus[stacked]", "gp_irt"])
    labels = {
        "gp_irt": "gp_irt",
        "tailored_plus[calibrated]": "TailoredBench (faithful)",
        "tailored_plus[stacked]": "TailoredBench+ (stacked)",
    }
    spread = pd.DataFrame(
        {"benchmark": ["a", "b"] * 3, "method": [m for m in labels for _ in "ab"], "coverage_se": 0.02}
    )
    fig = figures.plot_beyond(summary, tmp_path / "beyond.png", labels, coverage=spread)
    assert (tmp_path / "beyond.png").is_file()
    coverage = fig.axes[2]
    assert coverage.get_ylabel().startswith("interval coverage")
    assert [t.get_text() for t in coverage.get_xticklabels()] == ["a", "b"]
    bars = [c for c in coverage.containers if isinstance(c, matplotlib.container.BarContainer)]
    assert len(bars) == 6 and all(bar.errorbar is not None for bar in bars)  # per benchmark and method
    faithful = [b.patches[0].get_facecolor() for b in bars if b.get_label() == "TailoredBench (faithful)"]
    assert matplotlib.colors.to_hex(faithful[0]) == figures.METHOD_COLOURS["tailoredbench"]


def test_every_requested_precision_is_labelled(tmp_path):
    rows = [
        {
            "benchmark": b,
            "method": m,
            "precision": p,
            "max_budget": 60,
            "precision_met": 0.95,
            "items_mean": 20 / p / 10,
            "fixed_budget": 40.0,
        }
        for b in ("a", "b")
        for m in ("tailoredbench", "tailored_plus")
        for p in (0.03, 0.04, 0.05, 0.06, 0.08, 0.1)
    ]
    fig = figures.plot_precision(pd.DataFrame(rows), tmp_path / "precision.png")
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks == [".03", ".04", ".05", ".06", ".08", ".10"]
    assert all(ax.get_xlabel() and ax.get_ylabel() for ax in fig.axes[:2])


def test_the_precision_figure_gives_each_mean_its_error_bar_and_hides_no_method(tmp_path):
    methods = ("tailoredbench", "fluid", "fluid_atlas")
    rows = [
        {
            "benchmark": "pope",
            "method": m,
            "precision": p,
            "max_budget": 120,
            "precision_met": 0.0,
            "items_mean": 120.0,  # fluid and ATLAS's rule both at the maximum, as on POPE
            "items_se": 3.0,
            "fixed_budget": float("nan"),
        }
        for m in methods
        for p in (0.05, 0.1)
    ]
    fig = figures.plot_precision(pd.DataFrame(rows), tmp_path / "precision.png")
    bars = [c for c in fig.axes[0].containers if isinstance(c, matplotlib.container.ErrorbarContainer)]
    assert len(bars) == len(methods) and all(bar.has_yerr for bar in bars)
    spans = [segment[:, 1] for bar in bars for segment in bar.lines[2][0].get_segments()]
    assert all(high - low == pytest.approx(6.0) for low, high in spans)  # ± one standard error
    xs = [tuple(bar.lines[0].get_xdata()) for bar in bars]
    assert len(set(xs)) == len(methods)  # at one precision, side by side rather than on top of each other
    atlas = next(bar for bar in bars if bar.lines[0].get_color() == figures.METHOD_COLOURS["fluid_atlas"])
    edge = atlas.lines[0].get_markeredgecolor()
    assert edge == figures.method_edge("fluid_atlas") != figures.METHOD_COLOURS["fluid_atlas"]  # yellow, outlined
    assert figures.method_edge("fluid") == figures.METHOD_COLOURS["fluid"]  # the other colours keep theirs


def test_the_family_heatmap_has_the_same_families_on_both_axes(tmp_path):
    frame = pd.DataFrame(
        [
            ("Llama", "Llama", 6),
            ("Llama", "Qwen", 2),
            ("Llama", "Yi", 2),
            ("Qwen", "Qwen", 5),
            ("Qwen", "Llama", 5),
            ("Yi", "Llama", 1),
        ],
        columns=["target_family", "source_family", "n"],
    )
    frame["share"] = frame["n"] / frame.groupby("target_family")["n"].transform("sum")
    frame["base"] = frame["source_family"].map({"Llama": 0.5, "Qwen": 0.3, "Yi": 0.2})
    frame["targets"] = frame["target_family"].map({"Llama": 4, "Qwen": 3, "Yi": 1})
    fig = figures.plot_family_heatmap(frame, tmp_path / "families.png", title="x", min_targets=3)
    ax = fig.axes[0]
    rows = [t.get_text() for t in ax.get_yticklabels()]
    columns = [t.get_text() for t in ax.get_xticklabels()]
    assert rows[:2] == columns[:2] == ["Llama", "Qwen"]
    assert columns[2] == "all other families" and rows[2].startswith("all source models")
    assert fig.axes[1].get_ylabel()  # the colour bar says what it measures
    assert [t.get_text() for t in ax.texts][:3] == ["60", "20", "20"]


def test_figures_are_notebook_wide(tmp_path):
    summary = summary_of(["a"], ["tailoredbench", "random"]).drop(columns="benchmark")
    fig = figures.plot_budget_curves(summary, tmp_path / "curves.png")
    assert fig.get_size_inches()[0] == figures.WIDTH
    assert line_colours(fig.axes[0])  # drawn


def test_benchmarks_have_their_own_colours_none_a_methods(tmp_path):
    colours = figures.benchmark_colours([*figures.BENCHMARK_COLOURS, "new_one"])
    assert len(set(colours.values())) == len(colours)
    assert not set(colours.values()) & {c.lower() for c in figures.METHOD_COLOURS.values()}
    table = pd.DataFrame(
        {
            "benchmark": ["gsm8k", "gsm8k", "pope", "pope"],
            "arm": ["off", "on"] * 2,
            "mae": [0.036, 0.031, 0.061, 0.061],
            "mae_se": 0.001,
            "kendall_tau": 0.8,
            "kendall_tau_se": 0.01,
        }
    )
    fig = figures.plot_arms(table, tmp_path / "arms.png")
    drawn = {bars.get_label(): matplotlib.colors.to_hex(bars.lines[0].get_color()) for bars in fig.axes[0].containers}
    assert drawn["gsm8k"] == figures.BENCHMARK_COLOURS["gsm8k"] and drawn["pope"] == figures.BENCHMARK_COLOURS["pope"]


def test_the_item_clusters_colour_few_groups_and_enlarge_where_they_lie(tmp_path, rng):
    source = (rng.random((12, 80)) < 0.5).astype(float)
    labels = rng.integers(0, 10, 80)
    fig = figures.plot_item_clusters(source, labels, [0, 1, 2], list(range(3, 10)), path=tmp_path / "probe.png")
    whole, region = fig.axes
    clusters = [c for c in whole.collections if c.get_label().startswith("cluster of")]
    assert len(clusters) == 3  # a reader tells three colours apart, not thirty
    assert region.get_xlim()[1] - region.get_xlim()[0] <= whole.get_xlim()[1] - whole.get_xlim()[0]
    assert all(ax.get_xlabel() and ax.get_ylabel() for ax in fig.axes)


def test_the_suite_figure_pairs_the_two_plans_per_method_and_prints_each_ratio(tmp_path):
    gains = {
        name: pd.DataFrame(
            {
                "method": [m for m in ("tailored_plus", "tailoredbench") for _ in benchmarks],
                "benchmark": benchmarks * 2,
                "joint": 0.02,
                "joint_se": 0.001,
                "independent": 0.025,
                "independent_se": 0.001,
                "ratio": 0.8,
                "verdict": ["gain", "tie"] * len(benchmarks),
            }
        )
        for name, benchmarks in (("s", ["a", "b", "suite mean"]), ("t", ["c", "suite mean"]))
    }
    fig = figures.plot_suite_gains(gains, tmp_path / "suite.png", {"s": "suite s"})
    assert (tmp_path / "suite.png").is_file() and fig.get_size_inches()[0] == figures.WIDTH
    left, right = fig.axes[:2]
    assert left.get_yscale() == "log" and left.get_title() == "suite s" and right.get_title() == "t"
    assert [t.get_text() for t in left.get_xticklabels()] == ["a", "b", "suite mean"]
    assert [t.get_text() for t in left.texts] == ["0.80"] * 6  # a ratio per benchmark and method
    joined = {matplotlib.colors.to_hex(line.get_color()) for line in left.get_lines() if len(line.get_xdata()) == 2}
    # the methods' colours, and the grey dotted line that sets the suite mean apart
    assert joined == {figures.METHOD_COLOURS["tailored_plus"], figures.METHOD_COLOURS["tailoredbench"], figures.NEUTRAL}
