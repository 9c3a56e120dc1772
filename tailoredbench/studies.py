"""The paper's analysis studies: ablations, native sources, budget scaling, families, embeddings.

Each study notebook (``notebooks/study_*.ipynb``) is a few calls into this module:
:func:`sweep` runs TailoredBench under several settings ("arms") on several
benchmarks with the same seeds (a paired comparison), :func:`by_arm` averages over
benchmarks as the paper does, :func:`paper_table` sets the paper's figure beside
ours, and :func:`tailoredbench.report.write_study` writes ``tables/``, ``figures/`` and
``metrics.json``.
The beyond-the-paper notebook uses :func:`compare_on_sources` (TailoredBench+'s
variants with source models only), :func:`beyond_table`, :func:`normalisation_table`
(how the intervals scale, on source models) and :func:`coverage_by_target` and
:func:`coverage_by_split` (how far an interval's coverage depends on which models are
the targets). The suite notebook reads a suite's simulation through :func:`joint_gains`
(joint against independent, per benchmark), :func:`predictability` and :func:`suite_takeaway`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from . import rng, sequential
from .datasets.benchmarks import SPECS, Benchmark, benchmark_spec
from .datasets.families import model_family
from .datasets.matrix import ResponseMatrix, split_models
from .errors import TailoredBenchError
from .intervals import NORMALISATIONS
from .kmedoids import binary_points, k_medoids_binary, standardize
from .methods import PAPER_METHODS, MethodSpec
from .methods.tailored_plus import VARIANTS
from .metrics import covered, within_noise
from .report import NO_ERROR, cell, listed, title
from .simulate import Simulation, simulate
from .tailored import COMPONENTS, g_set, ranked_sources


def study_benchmark(name: str, seed: int = 0) -> tuple[Benchmark, int]:
    """A benchmark as its notebook loads it (same model subsample), and its G-set size."""
    spec = benchmark_spec(name)
    return spec.load(seed), spec.g_size


def _plus(variant: str) -> str:
    return f"tailored_plus[{variant}]"


def sweep(
    benchmarks: Sequence[str],
    arms: Mapping[str, Mapping | Callable[[Benchmark], Mapping]],
    *,
    budget: int | Sequence[int] = 30,
    runs: int = 20,
    seed: int = 0,
    n_jobs: int = 1,
    methods: Sequence[str] = ("tailoredbench",),
) -> pd.DataFrame:
    """Run every arm on every benchmark; one summary row per (benchmark, arm, method, budget).

    Parameters
    ----------
    benchmarks : sequence of str
    arms : mapping of label to keyword arguments of :func:`simulate`
        (``g_size``, ``distance``, ``method_options``, ...); a callable instead is
        called with the :class:`Benchmark` and returns them (for settings that
        depend on the source count).
    budget : int or sequence of int
    runs, seed, n_jobs, methods
        As for :func:`simulate`; every arm uses the same seeds.

    Examples
    --------
    >>> table = sweep(["pope"], {"on": {}, "off": {"method_options": {"calibrate": False}}}, budget=20, runs=2)
    >>> table[["benchmark", "targets", "arm"]].values.tolist()
    [['pope', 5, 'on'], ['pope', 5, 'off']]
    """
    budgets = [int(budget)] if isinstance(budget, int | np.integer) else [int(b) for b in budget]
    frames = []
    for name in benchmarks:
        bench, g_size = study_benchmark(name, seed)
        for label, arm in arms.items():
            kwargs = {"g_size": g_size, **(arm(bench) if callable(arm) else arm)}
            sim = simulate(bench, methods, budgets, runs=runs, seed=seed, n_jobs=n_jobs, **kwargs)
            frames.append(sim.summary.assign(benchmark=name, targets=bench.target.n_models, arm=label))
    table = pd.concat(frames, ignore_index=True)
    first = ["benchmark", "targets", "arm", "method", "budget"]
    return table[first + [c for c in table.columns if c not in first]]


def by_arm(table: pd.DataFrame, keys=("arm",), weight: str | None = None) -> pd.DataFrame:
    """The mean over benchmarks of MAE and Kendall's tau per arm (the paper's averaging), with its standard error.

    Each benchmark counts once, or in proportion to its ``weight`` column (``"targets"``: a benchmark
    of 150 target models counts 30 times one of 5). Where ``table`` has ``mae_se`` and
    ``kendall_tau_se``, the mean's standard error is that of a weighted sum of independent means.

    Examples
    --------
    >>> table = pd.DataFrame({"arm": ["a", "a"], "mae": [0.02, 0.06], "mae_se": [0.003, 0.004],
    ...                       "kendall_tau": [0.8, 0.4], "kendall_tau_se": [0.01, 0.01], "targets": [150, 50]})
    >>> by_arm(table).round(4).to_dict("records")
    [{'arm': 'a', 'mae': 0.04, 'mae_se': 0.0025, 'kendall_tau': 0.6, 'kendall_tau_se': 0.0071, 'benchmarks': 2}]
    >>> float(by_arm(table, weight="targets")["mae"].iloc[0])
    0.03
    """
    keys = list(keys)
    rows = []
    for label, part in table.groupby(keys, sort=False):
        w = part[weight].to_numpy(dtype=float) if weight else np.ones(len(part))
        w = w / w.sum()
        row = dict(zip(keys, label if isinstance(label, tuple) else (label,), strict=True))
        for metric in [m for m in ("mae", "kendall_tau") if m in part]:
            row[metric] = float(w @ part[metric].to_numpy(dtype=float))
            if f"{metric}_se" in part:
                row[f"{metric}_se"] = float(np.sqrt(w**2 @ part[f"{metric}_se"].to_numpy(dtype=float) ** 2))
        row["benchmarks"] = len(part)
        rows.append(row)
    return pd.DataFrame(rows)


def _averaged(table: pd.DataFrame, key: str, weight: str | None = None) -> pd.DataFrame:
    return by_arm(table, keys=[key], weight=weight).assign(**{key: lambda d: d[key].astype(str)})


def _grid(cells: pd.DataFrame, index: str, columns: str, name: Callable = str, order=None) -> pd.DataFrame:
    """``cells``' ``cell`` column, ``index`` down in ``order`` (default: of appearance), ``columns`` across."""
    order = cells[index] if order is None else order
    grid = cells.pivot(index=index, columns=columns, values="cell").reindex(list(dict.fromkeys(order)))
    grid.columns = [name(c) for c in grid.columns]
    return grid.reset_index()


def per_benchmark(table: pd.DataFrame, key: str = "arm") -> pd.DataFrame:
    """Per benchmark: the arm with the lowest MAE, and the arms within noise of it (a tie, not a verdict).

    ``table`` has one row per benchmark and arm with ``mae`` and ``mae_se`` (as :func:`sweep`
    returns at one budget). ``clear`` says the best arm's MAE is more than two standard errors
    of the difference below every other arm's (:func:`~tailoredbench.metrics.within_noise`).

    Examples
    --------
    >>> table = pd.DataFrame({"benchmark": ["x", "x", "y", "y"], "arm": ["a", "b", "a", "b"],
    ...                       "mae": [0.030, 0.050, 0.0609, 0.0609], "mae_se": [0.001, 0.001, 0.003, 0.004]})
    >>> per_benchmark(table)[["benchmark", "best", "tied", "clear"]].values.tolist()
    [['x', 'a', '', True], ['y', 'a', 'b', False]]
    """
    rows = []
    for benchmark, part in table.groupby("benchmark", sort=False):
        part = part.set_index(part[key].astype(str))
        best = str(part["mae"].idxmin())
        mae, se = part.loc[best, "mae"], part.loc[best, "mae_se"]
        others = part.drop(index=best)
        tied = [str(a) for a, r in others.iterrows() if within_noise(mae, se, r["mae"], r["mae_se"])]
        none = pd.Series({"mae": np.nan, "mae_se": np.nan}, name="")
        runner_up = others.loc[others["mae"].idxmin()] if len(others) else none
        rows.append(
            {
                "benchmark": benchmark,
                **({"targets": int(part["targets"].iloc[0])} if "targets" in part else {}),
                "best": best,
                "mae": mae,
                "mae_se": se,
                "runner_up": str(runner_up.name),
                "runner_up_mae": runner_up["mae"],
                "runner_up_mae_se": runner_up["mae_se"],
                "tied": ", ".join(tied),
                "clear": not tied,
            }
        )
    return pd.DataFrame(rows)


def _natural(arm: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", arm)]


def best_by_benchmark(verdicts: pd.DataFrame, label: str = "{}") -> str:
    """:func:`per_benchmark` in one sentence: which arm is lowest clear of noise where, and which arms tie where.

    ``label`` formats an arm (``"G-set {}"``). Arms within noise of the lowest are a tie, named alike
    whichever of them happens to be lowest (two identical arms included).

    Examples
    --------
    >>> verdicts = pd.DataFrame({"benchmark": ["x", "y", "z"], "best": ["a", "a", "b"], "tied": ["", "b", "a"],
    ...                          "clear": [True, False, False]})
    >>> print(best_by_benchmark(verdicts, "arm {}"))  # doctest: +NORMALIZE_WHITESPACE
    Lowest MAE per benchmark: arm a for x, clear of the other arms by two standard errors; a tie within noise
    between arm a and arm b for y and z.
    """
    if len(verdicts) == 1:
        row = verdicts.iloc[0]
        if row["clear"]:
            return f"Lowest MAE: {label.format(row['best'])}; it is clear of the rest by two standard errors."
        tied = [label.format(arm) for arm in str(row["tied"]).split(", ")]
        verb = "is" if len(tied) == 1 else "are"
        return f"Lowest MAE: {label.format(row['best'])}; {listed(tied)} {verb} within noise of it."
    clear: dict[str, list[str]] = {}
    ties: dict[tuple[str, ...], list[str]] = {}
    for row in verdicts.itertuples():
        if row.clear:
            clear.setdefault(str(row.best), []).append(row.benchmark)
        else:
            arms = tuple(sorted({str(row.best), *str(row.tied).split(", ")}, key=_natural))
            ties.setdefault(arms, []).append(row.benchmark)
    parts = []
    if clear:
        where = ", ".join(f"{label.format(arm)} for {listed(names)}" for arm, names in clear.items())
        parts.append(f"{where}, clear of the other arms by two standard errors")
    if ties:
        where = "; between ".join(
            f"{listed(label.format(a) for a in arms)} for {listed(names)}" for arms, names in ties.items()
        )
        parts.append(f"a tie within noise between {where}")
    return "Lowest MAE per benchmark: " + "; ".join(parts) + "."


def gap_shares(table: pd.DataFrame, a: str, b: str, key: str = "arm") -> pd.DataFrame:
    """How much each benchmark gives of the gap between arms ``b`` and ``a`` in the mean MAE over benchmarks.

    ``share`` is the benchmark's part of ``mean(b) - mean(a)`` (the shares add up to 1); one
    benchmark with more than half of it makes the average on its own. ``without_tie``: whether
    the two arms are within noise once that benchmark is left out.

    Examples
    --------
    >>> table = pd.DataFrame({"benchmark": ["x", "x", "y", "y"], "arm": ["5", "10"] * 2,
    ...                       "mae": [0.03, 0.031, 0.03, 0.06], "mae_se": [0.001, 0.001, 0.01, 0.01]})
    >>> gap_shares(table, "5", "10")[["benchmark", "share", "without_tie"]].round(2).values.tolist()
    [['x', 0.03, False], ['y', 0.97, True]]
    """
    arms = table.assign(**{key: table[key].astype(str)}).set_index(["benchmark", key])
    mae, se = arms["mae"].unstack(key), arms["mae_se"].unstack(key)
    gap = mae[b] - mae[a]
    rows = []
    for benchmark in mae.index:
        rest = mae.index != benchmark
        n = rest.sum()
        if n:
            mean_a, mean_b = mae.loc[rest, a].mean(), mae.loc[rest, b].mean()
            se_a, se_b = np.sqrt((se.loc[rest, a] ** 2).sum()) / n, np.sqrt((se.loc[rest, b] ** 2).sum()) / n
            tie = within_noise(mean_a, se_a, mean_b, se_b)
        else:
            mean_a = mean_b = np.nan
            tie = True
        rows.append(
            {
                "benchmark": benchmark,
                "gap": gap[benchmark],
                "share": gap[benchmark] / gap.sum() if gap.sum() else np.nan,
                "without_mae_a": mean_a,
                "without_mae_b": mean_b,
                "without_tie": bool(tie),
            }
        )
    return pd.DataFrame(rows)


def mean_verdict(table: pd.DataFrame, key: str = "arm", label: str = "{}") -> str:
    """The average over benchmarks in one sentence: its best arm against the next, and whether one benchmark makes it.

    Examples
    --------
    >>> table = pd.DataFrame({"benchmark": ["x", "x", "y", "y"], "arm": ["5", "10"] * 2,
    ...                       "mae": [0.03, 0.031, 0.03, 0.06], "mae_se": [0.001, 0.001, 0.003, 0.003]})
    >>> print(mean_verdict(table, label="G-set {}"))  # doctest: +NORMALIZE_WHITESPACE
    Averaged over 2 benchmarks, G-set 5 has the lowest MAE (0.0300 ± 0.0016, against 0.0455 ± 0.0016 for
    G-set 10), but y gives 97% of that gap, and without it the two are within noise.
    """
    averaged = _averaged(table, key).set_index(key)
    order = averaged["mae"].sort_values(kind="stable").index
    a, b = averaged.loc[order[0]], averaged.loc[order[1]]
    n = table["benchmark"].nunique()
    head = (
        f"Averaged over {n} benchmarks, {label.format(order[0])} has the lowest MAE "
        f"({a['mae']:.4f} ± {a['mae_se']:.4f}, against {b['mae']:.4f} ± {b['mae_se']:.4f} for {label.format(order[1])})"
    )
    shares = gap_shares(table, order[0], order[1], key).set_index("benchmark")
    top = shares["share"].idxmax()
    share = shares.loc[top, "share"]
    gives = f"{top} gives {share:.0%} of that gap"
    if share > 1:  # the others do not all lean the other way: say which do
        against = [b for b in dict.fromkeys(table["benchmark"]) if shares.loc[b, "share"] < 0]
        gives += f", as {listed(against)} lean{'s' * (len(against) == 1)} the other way" if against else ""
    weighted = _weighted(table, key, label)
    if within_noise(a["mae"], a["mae_se"], b["mae"], b["mae_se"]):
        return head + ", a tie within noise" + (f"; {gives}" if share > 0.5 else "") + weighted + "."
    if share > 0.5:
        rest = "without it the two are within noise" if shares.loc[top, "without_tie"] else "the rest agree"
        return head + f", but {gives}, and {rest}" + weighted + "."
    return head + "; no one benchmark gives more than half of that gap" + weighted + "."


def _weighted(table: pd.DataFrame, key: str, label: str) -> str:
    """The mean over benchmarks weighted by target count, its lowest arm against the next (a clause)."""
    if "targets" not in table:
        return ""
    averaged = _averaged(table, key, "targets")
    a, b = averaged.sort_values("mae", kind="stable").iloc[:2].to_dict("records")
    tie = within_noise(a["mae"], a["mae_se"], b["mae"], b["mae_se"])
    return (
        f"; weighted by targets, {label.format(a[key])} {a['mae']:.4f} ± {a['mae_se']:.4f} against "
        f"{label.format(b[key])} {b['mae']:.4f} ± {b['mae_se']:.4f}, {'a tie' if tie else 'beyond noise'}"
    )


def paper_gap(ours: float, ours_se: float, theirs: float) -> str:
    """Our mean beside the paper's figure, the gap in our standard errors (the paper gives none).

    Examples
    --------
    >>> paper_gap(0.0322, 0.0010, 0.027)
    "0.0322 ± 0.0010 against the paper's 0.027, 5.2 standard errors above it"
    >>> paper_gap(0.0275, 0.0010, 0.027)
    "0.0275 ± 0.0010 against the paper's 0.027, within two standard errors"
    """
    gap = (ours - theirs) / ours_se if ours_se > 0 else np.inf * np.sign(ours - theirs)
    side = "above" if gap > 0 else "below"
    where = "within two standard errors" if abs(gap) <= 2 else f"{abs(gap):.1f} standard errors {side} it"
    return f"{ours:.4f} ± {ours_se:.4f} against the paper's {theirs:.3f}, {where}"


def takeaway(table: pd.DataFrame, paper: Mapping, label: str = "{}", key: str = "arm") -> list[str]:
    """An arm study's findings in at most three sentences, from this run's numbers.

    :func:`best_by_benchmark`, :func:`mean_verdict` (with two benchmarks or more) and :func:`paper_gap`
    at the paper's best arm; ``paper`` maps an arm to the paper's (tau, MAE).
    """
    sentences = [best_by_benchmark(per_benchmark(table, key), label)]
    if table["benchmark"].nunique() > 1:
        sentences.append(mean_verdict(table, key, label))
    theirs = {str(arm): figures for arm, figures in paper.items()}
    mean = _averaged(table, key).set_index(key)
    best = min(theirs, key=lambda arm: theirs[arm][1])
    if best in mean.index:
        n = table["benchmark"].nunique()
        ours, over = str(mean["mae"].idxmin()), f"over {n} benchmark{'s' if n > 1 else ''}"
        gap = paper_gap(mean.loc[best, "mae"], mean.loc[best, "mae_se"], theirs[best][1])
        if ours == best:
            sentences.append(
                f"The paper's lowest MAE is at {label.format(best)}, as is ours; there, {over}, ours is {gap}."
            )
        else:  # the two orders disagree: where ours is lowest, and what the paper found there
            worst = " (the paper's highest)" if ours == max(theirs, key=lambda arm: theirs[arm][1]) else ""
            sentences.append(
                f"The paper's lowest MAE is at {label.format(best)}, ours at {label.format(ours)}{worst}; at "
                f"{label.format(best)}, {over}, ours is {gap}."
            )
    return sentences


def readable(table: pd.DataFrame, decimals: int = 4) -> pd.DataFrame:
    """A table for reading: every column with a ``<column>_se`` beside it as one "mean ± se" cell.

    Other float columns keep ``decimals`` decimals (the paper's, ``paper*``, the three it prints); a
    missing value is left blank.

    Examples
    --------
    >>> table = pd.DataFrame({"arm": ["a"], "mae": [0.04123], "mae_se": [0.00081], "paper_mae": [0.027]})
    >>> readable(table).iloc[0].tolist()
    ['a', '0.0412 ±\xa00.0008', '0.027']
    """
    out = pd.DataFrame(index=table.index)
    for column in table.columns:
        if column.endswith("_se") and column[:-3] in table:
            continue
        values = table[column]
        if f"{column}_se" in table:
            se = table[f"{column}_se"]
            out[column] = ["" if pd.isna(m) else cell(m, e, decimals) for m, e in zip(values, se, strict=True)]
        elif pd.api.types.is_float_dtype(values):
            places = 3 if column.startswith("paper") else decimals  # the paper prints three
            out[column] = ["" if pd.isna(v) else f"{v:.{places}f}" for v in values]
        else:
            out[column] = values
    return out


def tau_by_arm_reading(table: pd.DataFrame, label: str = "{}", key: str = "arm") -> str:
    """A sentence on an arm study's Kendall's tau, averaged over benchmarks (:func:`by_arm`): the highest and
    lowest arm, whether their gap is beyond noise, and whether the MAE favours the same arm; ranking the models
    need not favour the setting that measures their accuracy best.

    >>> table = pd.DataFrame({"arm": ["a", "b"], "mae": [0.03, 0.02], "mae_se": 0.001,
    ...                       "kendall_tau": [0.80, 0.70], "kendall_tau_se": 0.01})
    >>> print(tau_by_arm_reading(table, "arm {}"))  # doctest: +NORMALIZE_WHITESPACE
    Averaged over the benchmarks, Kendall's tau is highest at arm a (0.8000) and lowest at arm b (0.7000), a gap
    beyond noise; the lowest MAE is at arm b: ranking the models and measuring their accuracy favour different
    settings here.
    """
    mean = by_arm(table, keys=[key]).set_index(key)
    top, low, by_mae = mean["kendall_tau"].idxmax(), mean["kendall_tau"].idxmin(), mean["mae"].idxmin()
    tied = within_noise(
        *mean.loc[top, ["kendall_tau", "kendall_tau_se"]], *mean.loc[low, ["kendall_tau", "kendall_tau_se"]]
    )
    if by_mae == top:
        mae = "the same setting has the lowest MAE."
    elif tied:
        mae = f"the lowest MAE is at {label.format(by_mae)}, but by tau no setting is clear of the others."
    else:
        mae = (
            f"the lowest MAE is at {label.format(by_mae)}: ranking the models and measuring their accuracy favour "
            "different settings here."
        )
    return (
        f"Averaged over the benchmarks, Kendall's tau is highest at {label.format(top)} "
        f"({mean.loc[top, 'kendall_tau']:.4f}) and lowest at {label.format(low)} ({mean.loc[low, 'kendall_tau']:.4f}), "
        f"a gap {'within' if tied else 'beyond'} noise; {mae}"
    )


def arm_grid(
    table: pd.DataFrame, key: str = "arm", metric: str = "mae", index: Sequence[str] | None = None, decimals: int = 4
) -> pd.DataFrame:
    """One row per benchmark with its target count (or per ``index``), one column per arm: "mean ± se"."""
    cells = table.assign(cell=[cell(m, e, decimals) for m, e in zip(table[metric], table[f"{metric}_se"], strict=True)])
    if index is None:
        index = ["benchmark", "targets"] if "targets" in table else ["benchmark"]
    index = list(index)
    grid = cells.pivot(index=index, columns=key, values="cell")
    grid = grid[list(dict.fromkeys(table[key]))].reindex(list(dict.fromkeys(table[index[0]])), level=0)
    grid.columns = [str(c) for c in grid.columns]
    return grid.reset_index()


def best_grid(table: pd.DataFrame, key: str = "method", by: str = "budget") -> pd.DataFrame:
    """One row per benchmark, one column per value of ``by``: the arm with the lowest MAE, and those tied with it.

    A cell reads ``gp_irt`` when that arm is clear of the others by two standard errors, and
    ``gp_irt ≈ tailoredbench`` when the arms after ``≈`` are within noise of it (:func:`per_benchmark`).
    """
    rows = []
    for value, part in table.groupby(by, sort=True):
        for _, row in per_benchmark(part, key).iterrows():
            text = row["best"] + (f" ≈ {row['tied']}" if row["tied"] else "")
            rows.append({"benchmark": row["benchmark"], by: value, "cell": text})
    return _grid(pd.DataFrame(rows), "benchmark", by, lambda c: f"{by} {c}", order=table["benchmark"])


def arm_summary(table: pd.DataFrame, paper: Mapping, key: str = "arm") -> pd.DataFrame:
    """Per arm: the mean over benchmarks, the mean weighted by target count, and the paper's figures.

    MAE and tau with their standard errors (:func:`by_arm`); ``weighted_mae`` counts each
    benchmark in proportion to its targets, so that a benchmark of five target models cannot
    make the average on its own.
    """
    mean = paper_table(by_arm(table, keys=[key]), paper, key)
    weighted = by_arm(table, keys=[key], weight="targets").rename(
        columns={"mae": "weighted_mae", "mae_se": "weighted_mae_se"}
    )
    mean = mean.merge(weighted[[key, "weighted_mae", "weighted_mae_se"]], on=key)
    first = [key, "mae", "mae_se", "weighted_mae", "weighted_mae_se", "paper_mae"]
    return mean[first + [c for c in mean.columns if c not in first]]


def paper_table(averaged: pd.DataFrame, paper: Mapping, key: str = "arm") -> pd.DataFrame:
    """Our averaged MAE and tau (with their standard errors, where ``averaged`` has them) beside the paper's.

    The paper's cell is blank where it has no figure for an arm.
    """
    rows = []
    for _, row in averaged.iterrows():
        theirs = paper.get(row[key], paper.get(_as_number(row[key]), (np.nan, np.nan)))
        ours = {m: row[m] for m in ("mae", "mae_se", "kendall_tau", "kendall_tau_se") if m in row}
        rows.append({key: row[key], **ours, "paper_mae": theirs[1], "paper_kendall_tau": theirs[0]})
    return pd.DataFrame(rows)


def _as_number(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return value


# ---------------------------------------------------------------------------
# Native-source studies


def fixed_count(fraction: float, offset_bands: int = 0):
    """An arm fixing the native sources at ``fraction`` of all sources, skipping ``offset_bands`` bands.

    ``fixed_count(0.2, 2)`` keeps the sources ranked 40-60% by consistency.
    """

    def arm(bench: Benchmark) -> dict:
        count = max(1, round(fraction * bench.source.n_models))
        offset = offset_bands * count
        if offset + count > bench.source.n_models:
            offset = bench.source.n_models - count
        return {"method_options": {"n_native": count, "native_offset": offset}}

    return arm


def adaptive_counts(bench: Benchmark, runs: int, seed: int = 0, g_size: int = 10, distance: str = "manhattan"):
    """The native-source count the adaptive rule chooses in each run (same streams as :func:`simulate`)."""
    source, target = bench.source.values, bench.target.values
    points = binary_points(source.T, distance)
    counts = []
    for run in range(runs):
        g_items = g_set(source, g_size, random_state=rng.stream((seed, run), rng.G_SET), points=points)
        counts.append(ranked_sources(source[:, g_items], target[:, g_items], distance=distance)[0])
    return np.array(counts)


def native_reading(bench: Benchmark, runs: int, seed: int = 0, g_size: int = 10, distance: str = "manhattan") -> str:
    """Two sentences on how alike a benchmark's models are: the native sources kept, and near twins across the split.

    Likeness is Cohen's kappa, agreement beyond what two models of their accuracies reach by chance: two models that
    fail nearly every item agree on nearly every item without being alike. A target with a near twin among the
    sources (kappa at least 0.9, such as the same checkpoint run another way) is easy for any method that finds it.
    """
    kept = adaptive_counts(bench, runs, seed, g_size, distance)
    usual = int(np.bincount(kept).argmax())
    how_often = (
        f"in all {runs} runs"
        if kept.min() == kept.max()
        else f"in {int((kept == usual).sum())} of the {runs} runs ({kept.min()} to {kept.max()} in all)"
    )
    source, target = bench.source.values, bench.target.values
    observed = (target @ source.T + (1 - target) @ (1 - source).T) / bench.n_items  # share of items alike
    p_t, p_s = target.mean(axis=1)[:, None], source.mean(axis=1)[None, :]
    by_chance = p_t * p_s + (1 - p_t) * (1 - p_s)
    with np.errstate(divide="ignore", invalid="ignore"):  # a model right (or wrong) on every item: no kappa
        kappa = np.where(by_chance < 1, (observed - by_chance) / (1 - by_chance), 0.0)
    closest = kappa.max(axis=1)
    twins = int((closest >= 0.9).sum())
    return (
        f"TailoredBench keeps {usual} native sources of the {bench.source.n_models} {how_often}. Measured by Cohen's "
        f"kappa (agreement beyond chance, 1 for identical answers), each target's closest source is at "
        f"{closest.min():.2f} to {closest.max():.2f}, and {twins} of the {bench.target.n_models} targets "
        f"{'has' if twins == 1 else 'have'} a near twin among the sources (kappa 0.9 or more)."
    )


def native_families(bench: Benchmark, runs: int = 10, seed: int = 0, g_size: int = 10) -> pd.DataFrame:
    """Share of each source family among the native sources of each target family.

    Returns one row per (target family, source family) with ``share`` (of the
    native sources, pooled over runs), ``base`` (of all sources) and ``targets``.
    """
    source, target = bench.source.values, bench.target.values
    points = binary_points(source.T, "manhattan")
    src_family = np.array([model_family(m) for m in bench.source.models])
    tgt_family = np.array([model_family(m) for m in bench.target.models])
    counts: dict[tuple[str, str], int] = {}
    for run in range(runs):
        g_items = g_set(source, g_size, random_state=rng.stream((seed, run), rng.G_SET), points=points)
        n_native, order = ranked_sources(source[:, g_items], target[:, g_items])
        for t, rows in enumerate(order[:, :n_native]):
            for family in src_family[rows]:
                counts[tgt_family[t], family] = counts.get((tgt_family[t], family), 0) + 1
    frame = pd.DataFrame([(t, s, c) for (t, s), c in counts.items()], columns=["target_family", "source_family", "n"])
    frame["share"] = frame["n"] / frame.groupby("target_family")["n"].transform("sum")
    base = pd.Series(src_family).value_counts(normalize=True)
    frame["base"] = frame["source_family"].map(base).fillna(0.0)
    frame["targets"] = frame["target_family"].map(pd.Series(tgt_family).value_counts())
    return frame.sort_values(["target_family", "source_family"]).reset_index(drop=True)


def own_family(frame: pd.DataFrame, min_targets: int = 3) -> pd.DataFrame:
    """Per target family (with a known family and ``min_targets`` targets): own-family share vs base rate.

    ``lift`` is their ratio: above 1, the family's targets pick their own family more often than its
    share among all sources would.
    """
    own = frame[(frame["target_family"] == frame["source_family"]) & (frame["target_family"] != "other")]
    own = own[own["targets"] >= min_targets].assign(lift=lambda d: d["share"] / d["base"])
    return own[["target_family", "targets", "share", "base", "lift"]].rename(
        columns={"share": "native_share", "base": "share_among_all_sources"}
    )


# ---------------------------------------------------------------------------
# The motivating embedding figure


def coreset_distances(bench: Benchmark, budget: int = 30, seed: int = 0, folds: int = 5) -> dict:
    """A static coreset's clusters, and their tightness seen by source and by target models.

    The coreset is K-Medoids (Manhattan) on items embedded by the z-scored source
    models. Each item's Manhattan distance to its cluster's medoid is measured in
    the source embedding and in the target embedding (z-scored target models), with
    the same clusters: looser clusters under the targets mean the coreset
    represents them worse.

    ``control``: clusters look looser under any models they were not fitted to. With the sources ranked by
    accuracy and dealt into ``folds`` folds, a coreset is fitted on all but one fold and measured under those
    sources, under the fold left out and under the targets. ``unseen``: each fold's looseness of the left-out
    sources over the fitted ones; ``targets_over_unseen``: the targets' over the left-out sources', both unseen,
    so only this ratio above 1 says that targets differ from sources.
    """
    source, target = bench.source.values, bench.target.values
    result = _coreset(source, budget, seed)
    out: dict = {"medoids": result.medoids, "labels": result.labels}
    for view, matrix in (("source models", source), ("target models", target)):
        out[view] = _tightness(matrix, result)
    fold_of = np.empty(len(source), dtype=int)
    fold_of[np.argsort(source.mean(axis=1), kind="stable")] = np.arange(len(source)) % folds  # alike folds
    unseen, targets_over_unseen = [], []
    for fold in range(folds):
        fitted, left_out = source[fold_of != fold], source[fold_of == fold]
        coreset = _coreset(fitted, budget, seed)
        fitted_d, left_out_d, target_d = (_tightness(m, coreset)["per_model"] for m in (fitted, left_out, target))
        unseen.append(left_out_d / fitted_d if fitted_d else np.nan)
        targets_over_unseen.append(target_d / left_out_d if left_out_d else np.nan)
    out["control"] = {"unseen": np.array(unseen), "targets_over_unseen": np.array(targets_over_unseen)}
    return out


def _coreset(source: np.ndarray, budget: int, seed: int):
    return k_medoids_binary(binary_points(source.T), budget, random_state=rng.stream((seed, rng.CORESET)))


def _tightness(matrix: np.ndarray, coreset) -> dict:
    """Each item's Manhattan distance to its medoid among the z-scored models of ``matrix``: mean, and per model."""
    Z = standardize(matrix.T)
    distance = np.abs(Z - Z[coreset.medoids[coreset.labels]]).sum(axis=1)
    return {"mean_distance": float(distance.mean()), "per_model": float(distance.mean() / matrix.shape[0])}


def embed_items(matrix: np.ndarray, method: str = "pca", seed: int = 0) -> np.ndarray:
    """2-D coordinates of the items embedded by the z-scored models (PCA or t-SNE)."""
    Z = standardize(np.asarray(matrix, dtype=float).T)
    if method == "pca":
        from sklearn.decomposition import PCA

        return PCA(n_components=2, random_state=seed).fit_transform(Z)
    if method == "tsne":
        from sklearn.manifold import TSNE

        return TSNE(n_components=2, metric="manhattan", init="pca", random_state=seed).fit_transform(Z)
    raise TailoredBenchError(f"unknown embedding {method!r}; choose pca or tsne")


# ---------------------------------------------------------------------------
# Beyond the paper: TailoredBench+ variants and intervals


def compare_on_sources(
    benchmarks: Sequence[str],
    variants: Sequence[str] = VARIANTS,
    *,
    runs: int = 20,
    seed: int = 0,
    n_jobs: int = 1,
) -> pd.DataFrame:
    """Every variant's MAE relative to calibration, using source models only.

    On each benchmark the *source* models are split (accuracy-stratified interleave)
    into pseudo-sources and pseudo-targets; every variant runs at the benchmark's
    budgets. The targets are never loaded into the simulation: this is what a user
    can see before trusting a variant.

    Returns
    -------
    DataFrame
        Per variant and benchmark, the MAE over budgets and its ratio to the
        calibrated estimate's, and a ``mean`` row per variant.
    """
    rows = []
    for name in benchmarks:
        bench, g_size = study_benchmark(name, seed)
        pseudo_source, pseudo_target = split_models(bench.source, "interleave", seed)
        pseudo = Benchmark(f"{name} (sources only)", pseudo_source, pseudo_target, {})
        names = [_plus(v) for v in variants]
        sim = simulate(pseudo, names, SPECS[name].budgets, runs=runs, seed=seed, n_jobs=n_jobs, g_size=g_size)
        mae = sim.summary.groupby("method")[["mae", "mae_se"]].mean()
        base = mae.loc[_plus("calibrated")]
        for v, method in zip(variants, names, strict=True):
            ours = mae.loc[method]
            rows.append(
                {
                    "benchmark": name,
                    "variant": v,
                    "mae": ours["mae"],
                    "ratio": ours["mae"] / base["mae"],
                    "ratio_se": ratio_se(ours["mae"], ours["mae_se"], base["mae"], base["mae_se"])
                    * (v != "calibrated"),
                }
            )
    table = pd.DataFrame(rows)
    mean = table.groupby("variant", sort=False).agg(
        mae=("mae", "mean"), ratio=("ratio", "mean"), ratio_se=("ratio_se", lambda e: np.sqrt((e**2).sum()) / len(e))
    )
    mean = mean.reset_index().assign(benchmark="mean")
    return pd.concat([table, mean], ignore_index=True)


def ratio_se(a: float, a_se: float, b: float, b_se: float) -> float:
    """The standard error of ``a / b`` (first order), as if the two were independent.

    The arms share their runs, so their errors go together and this overstates the ratio's error.
    """
    return float(a / b * np.hypot(a_se / a, b_se / b))


def coverage_verdict(coverage: float, se: float, goal=None) -> str:
    """``inside`` the goal (85-95%), ``consistent`` with it (outside, within two standard errors), ``below``, ``above``.

    Examples
    --------
    >>> coverage_verdict(0.931, 0.014), coverage_verdict(0.954, 0.014), coverage_verdict(0.80, 0.01)
    ('inside', 'consistent', 'below')
    """
    low, high = goal or COVERAGE_RANGE
    if low <= coverage <= high:
        return "inside"
    if low - 2 * se <= coverage <= high + 2 * se:
        return "consistent"
    return "below" if coverage < low else "above"


#: Benchmarks on which the MAE target (<= 0.9 x faithful) applies; elsewhere "no worse".
MAE_TARGET = {"gsm8k": 0.90, "arc_challenge": 0.90}
COVERAGE_RANGE = (0.85, 0.95)


def beyond_table(summary: pd.DataFrame, chosen: str, spread: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per benchmark and method: MAE, tau, coverage and width over budgets, against the faithful method.

    ``summary`` is the concatenated simulation summaries with a ``benchmark``
    column, including ``tailored_plus[calibrated]`` (the faithful estimate).
    ``spread``, if given, adds the ``coverage_se`` of :func:`coverage_by_target`
    (with a ``benchmark`` column). ``meets_mae`` checks the ratio target (<= 0.9 on
    GSM8K and ARC, <= 1 elsewhere) and a tau not lower; ``meets_coverage`` the 85-95%
    range within two of ``coverage_se`` (:func:`coverage_verdict`); ``mae_ratio_se`` is
    :func:`ratio_se`. ``mae_se`` is the mean over budgets of each budget's standard error: the budgets
    share their runs, so the errors of their MAEs go together, and this bound does not assume otherwise.
    """
    faithful = _plus("calibrated")
    means = ["mae", "mae_se", "kendall_tau", "kendall_tau_se", "coverage", "width"]
    table = summary.groupby(["benchmark", "method"], sort=False)[[m for m in means if m in summary]].mean()
    table = table.reset_index()
    if spread is not None:
        table = table.merge(spread[["benchmark", "method", "coverage_se"]], on=["benchmark", "method"], how="left")
    base = table[table["method"] == faithful].set_index("benchmark")
    table["mae_ratio"] = table["mae"] / table["benchmark"].map(base["mae"])
    table["mae_ratio_se"] = [
        ratio_se(r.mae, r.mae_se, base.at[r.benchmark, "mae"], base.at[r.benchmark, "mae_se"])
        for r in table.itertuples()
    ]
    table.loc[table["method"] == faithful, "mae_ratio_se"] = 0.0  # the reference: exactly 1
    table["tau_change"] = table["kendall_tau"] - table["benchmark"].map(base["kendall_tau"])
    limit = table["benchmark"].map(MAE_TARGET).fillna(1.0)
    table["meets_mae"] = (table["mae_ratio"] <= limit) & (table["tau_change"] >= 0)
    spread = table["coverage_se"] if "coverage_se" in table else pd.Series(0.0, index=table.index)
    table["meets_coverage"] = [
        coverage_verdict(c, e) in ("inside", "consistent") for c, e in zip(table["coverage"], spread, strict=True)
    ]
    roles = {_plus(chosen): "TailoredBench+ (chosen)", faithful: "faithful TailoredBench"}  # faithful wins a tie
    table["role"] = [
        roles.get(m, "variant" if MethodSpec.parse(m).base == "tailored_plus" else "best baseline")
        for m in table["method"]
    ]
    table["meets_mae"] = table["meets_mae"].astype(object)
    table.loc[table["method"] == faithful, "meets_mae"] = None  # the reference itself
    return table


def beyond_headline(table: pd.DataFrame) -> pd.DataFrame:
    """Per benchmark, from :func:`beyond_table`: the faithful method, TailoredBench+ and the best baseline.

    MAE over budgets with its standard error, TailoredBench+'s MAE as a ratio to the faithful
    method's and whether the two differ beyond noise (``lower``, ``higher`` or ``tie``), and
    TailoredBench+'s interval coverage with its standard error across targets.
    """
    rows = []
    for benchmark, part in table.groupby("benchmark", sort=False):
        by_role = part.set_index("role")
        faithful, plus = by_role.loc["faithful TailoredBench"], by_role.loc["TailoredBench+ (chosen)"]
        none = pd.Series({"method": "", "mae": np.nan, "mae_se": np.nan})
        baseline = by_role.loc["best baseline"] if "best baseline" in by_role.index else none
        tie = within_noise(plus["mae"], plus["mae_se"], faithful["mae"], faithful["mae_se"])
        rows.append(
            {
                "benchmark": benchmark,
                "faithful": faithful["mae"],
                "faithful_se": faithful["mae_se"],
                "TailoredBench+": plus["mae"],
                "TailoredBench+_se": plus["mae_se"],
                "ratio": plus["mae_ratio"],
                "against faithful": "tie" if tie else "lower" if plus["mae"] < faithful["mae"] else "higher",
                "best baseline": baseline["method"],
                "baseline": baseline["mae"],
                "baseline_se": baseline["mae_se"],
                "coverage": plus["coverage"],
                "coverage_se": plus["coverage_se"],
            }
        )
    return pd.DataFrame(rows)


#: What a method from after the paper is, for prose that names it as a benchmark's best baseline.
LATER_METHODS = {"fluid": "the adaptive IRT test"}


def below_best_baseline(headline: pd.DataFrame) -> str:
    """One sentence: on how many benchmarks TailoredBench+ is below the best baseline (:func:`beyond_headline`), and
    which best baselines came after the paper, said so, lest they be read as the paper's baselines.

    Examples
    --------
    >>> headline = pd.DataFrame({"benchmark": ["gsm8k", "pope", "x"], "TailoredBench+": 0.02,
    ...                          "best baseline": ["gp_irt", "fluid", "fluid"], "baseline": [0.03, 0.01, 0.03]})
    >>> print(below_best_baseline(headline))  # doctest: +NORMALIZE_WHITESPACE
    TailoredBench+ is below the best baseline on 2 of 3 benchmarks; fluid, the adaptive IRT test from after
    the paper, is the best baseline on 2 of 3 (POPE and x).
    """
    n, below = len(headline), (headline["TailoredBench+"] < headline["baseline"]).sum()
    said = f"TailoredBench+ is below the best baseline on {below} of {n} benchmarks"
    best = headline["best baseline"]
    for method in dict.fromkeys(m for m in best if m and m not in PAPER_METHODS):
        where = headline.loc[best == method, "benchmark"]
        what = LATER_METHODS.get(method, "a method")
        said += f"; {method}, {what} from after the paper, is the best baseline on {len(where)} of {n} "
        said += f"({listed([title(b) for b in where])})"
    return said + "."


def by_benchmark(table: pd.DataFrame, value: str, row: str = "method", mean: bool = True) -> pd.DataFrame:
    """A long table pivoted for reading: one row per ``row``, one column per benchmark (and their ``mean``)."""
    order = list(dict.fromkeys(table["benchmark"]))
    grid = table.pivot_table(index=row, columns="benchmark", values=value, sort=False)[order]
    if mean and len(order) > 1:
        grid["mean"] = grid[order].mean(axis=1)
    grid.columns.name = None
    return grid.reset_index()


def normalisation_table(
    calibrations: Mapping[str, Mapping], methods: Sequence[str], level: float = 0.9
) -> pd.DataFrame:
    """How wide each of :data:`~tailoredbench.intervals.NORMALISATIONS` makes the intervals, on source models only.

    ``calibrations`` maps a benchmark to its simulation's ``calibration`` (per
    method and budget, the left-out sources that calibrated the intervals). For each
    method of ``methods``, the mean width over budgets of intervals calibrated on
    those sources (:meth:`~tailoredbench.intervals.PseudoTargets.width`) and its
    ratio to no normalisation; ``mean`` rows average the ratios over benchmarks, and
    ``all`` rows over methods too. The normalisation with the lowest ``all`` ratio
    is the one a user would choose without seeing any target.
    """
    rows = []
    for benchmark, calibration in calibrations.items():
        for method in methods:
            widths = {
                n: float(np.mean([p.width(n, level) for p in calibration[method].values()])) for n in NORMALISATIONS
            }
            rows += [
                {"benchmark": benchmark, "method": method, "normalisation": n, "width": w, "ratio": w / widths["none"]}
                for n, w in widths.items()
            ]
    table = pd.DataFrame(rows)
    mean = table.groupby(["method", "normalisation"], sort=False)[["width", "ratio"]].mean().reset_index()
    overall = table.groupby("normalisation", sort=False)[["width", "ratio"]].mean().reset_index()
    return pd.concat([table, mean.assign(benchmark="mean"), overall.assign(benchmark="mean", method="all")])[
        ["benchmark", "method", "normalisation", "width", "ratio"]
    ].reset_index(drop=True)


def coverage_by_target(results: pd.DataFrame) -> pd.DataFrame:
    """Per method: interval coverage over all targets, runs and budgets, and its standard error across targets.

    Each target's coverage over its runs and budgets is one observation: the
    standard error (their spread over ``sqrt(n_targets)``) says how much the figure
    would move with another set of target models, which a run count cannot reduce.

    Examples
    --------
    >>> results = pd.DataFrame({"method": "m", "target": ["a", "a", "b", "b"], "true": 0.5,
    ...                         "interval_low": [0.4, 0.6, 0.4, 0.4], "interval_high": 0.6})
    >>> coverage_by_target(results).round(3).to_dict("records")
    [{'method': 'm', 'coverage': 0.75, 'coverage_se': 0.25}]
    """
    per_target = results.assign(covered=covered(results)).groupby(["method", "target"], sort=False)["covered"].mean()
    return (
        per_target.groupby(level="method", sort=False)
        .agg(coverage="mean", coverage_se=lambda v: v.std(ddof=1) / np.sqrt(len(v)))
        .reset_index()
    )


def coverage_by_split(
    name: str,
    splits: Sequence[tuple[str, int]] = (("interleave", 0), ("random", 1), ("random", 2), ("random", 3)),
    *,
    method: str = "tailored_plus",
    runs: int = 20,
    seed: int = 0,
    n_jobs: int = 1,
    level: float = 0.9,
) -> pd.DataFrame:
    """Interval coverage of ``method`` when benchmark ``name``'s models are split into sources and targets otherwise.

    The benchmark's source and target models are pooled and split again by each
    ``(how, split_seed)`` of ``splits`` (:func:`~tailoredbench.datasets.matrix.split_models`).
    A last row splits the source models alone (accuracy-stratified interleave, as
    :func:`compare_on_sources` does): the check a user can run without any target
    result. The interval is calibrated on each split's own sources, as always.

    Returns
    -------
    DataFrame
        One row per split: ``models`` (``all`` or ``sources only``), ``split``,
        ``split_seed``, the counts of ``sources`` and ``targets``, ``coverage`` and its ``coverage_se`` across targets
        (:func:`coverage_by_target`), mean ``width``, ``mae`` and ``kendall_tau``
        averaged over the benchmark's budgets.
    """
    bench, g_size = study_benchmark(name, seed)
    budgets = SPECS[name].budgets
    pooled = ResponseMatrix(
        np.vstack([bench.source.values, bench.target.values]),
        tuple(f"source:{m}" for m in bench.source.models) + tuple(f"target:{m}" for m in bench.target.models),
        bench.source.items,
        f"{name} (all models)",
    )
    cases = [("all", how, split_seed, *split_models(pooled, how, split_seed)) for how, split_seed in splits]
    cases.append(("sources only", "interleave", 0, *split_models(bench.source, "interleave")))
    rows = []
    for models, how, split_seed, source, target in cases:
        resplit = Benchmark(f"{name} ({models}, {how} split {split_seed})", source, target, {})
        sim = simulate(resplit, [method], budgets, runs=runs, seed=seed, n_jobs=n_jobs, g_size=g_size, interval=level)
        spread = coverage_by_target(sim.results).iloc[0][["coverage", "coverage_se"]]
        means = sim.summary[["mae", "kendall_tau", "width"]].mean()
        rows.append((models, how, split_seed, source.n_models, target.n_models, *spread, *means))
    columns = ["models", "split", "split_seed", "sources", "targets", "coverage", "coverage_se", *means.index]
    return pd.DataFrame(rows, columns=columns)


def agreement(agrees: bool, partly: bool = False) -> str:
    """The closing words of a finding.

    Examples
    --------
    >>> agreement(False, partly=True)
    'Agrees in part with the paper.'
    """
    if agrees:
        return "Agrees with the paper."
    return "Agrees in part with the paper." if partly else "Differs from the paper."


# ---------------------------------------------------------------------------
# The precision (sequential) mode


def items_by_precision(rounds_of: Mapping[str, Simulation], precisions: Sequence[float]) -> pd.DataFrame:
    """Per benchmark, precision and method: the items the sequential mode asks and the coverage where it stops.

    ``rounds_of`` maps a benchmark to its :func:`~tailoredbench.sequential.simulate_rounds`. Each
    target's mean over runs is one observation: ``items_se`` and ``coverage_se`` are their spread
    across targets over ``sqrt(n_targets)``, as in :func:`coverage_by_target`. ``reached`` is the
    share of (target, run) that reached the precision by the maximum budget.
    """
    rows = []
    for name, rounds in rounds_of.items():
        for precision in precisions:
            stopped = sequential.stop(rounds, precision).results
            per_target = stopped.assign(covered=covered(stopped)).groupby(["method", "target"], sort=False)
            means = per_target[["items", "covered"]].mean()
            for method, part in means.groupby(level="method", sort=False):
                mine = stopped[stopped["method"] == method]
                rows.append(
                    {
                        "benchmark": name,
                        "precision": precision,
                        "method": method,
                        "items": part["items"].mean(),
                        "items_se": _sem(part["items"]),
                        "reached": float(mine["precision_met"].mean()),
                        "coverage": part["covered"].mean(),
                        "coverage_se": _sem(part["covered"]),
                    }
                )
    return pd.DataFrame(rows)


def fewest_items(items: pd.DataFrame, share: float = sequential.GOAL_SHARE) -> pd.DataFrame:
    """Per benchmark and precision: the method asking fewest items, of those that bring ``share`` of the targets there.

    ``items`` is :func:`items_by_precision`'s table. ``fewest`` is a method's name, ``"tie"`` when
    the lowest two are within noise (:func:`~tailoredbench.metrics.within_noise`), or ``"none"``
    when no method brings ``share`` of the targets to the precision by the maximum budget; the
    row gives that method's items and coverage (the lowest's, for a tie).

    Examples
    --------
    >>> items = pd.DataFrame({"benchmark": "x", "precision": [0.05, 0.05, 0.1, 0.1], "method": ["a", "b"] * 2,
    ...                       "items": [40.0, 30.0, 15.0, 15.5], "items_se": 1.0, "reached": [0.95, 0.92, 1, 1],
    ...                       "coverage": 0.9, "coverage_se": 0.01})
    >>> fewest_items(items)[["precision", "fewest", "items"]].values.tolist()
    [[0.05, 'b', 30.0], [0.1, 'tie', 15.0]]
    """
    rows = []
    for (name, precision), part in items.groupby(["benchmark", "precision"], sort=False):
        able = part[part["reached"] >= share].sort_values("items", kind="stable")
        if able.empty:
            best, fewest = part.sort_values("reached", ascending=False, kind="stable").iloc[0], "none"
        else:
            best, rival = able.iloc[0], able.iloc[min(1, len(able) - 1)]
            tie = len(able) > 1 and within_noise(best["items"], best["items_se"], rival["items"], rival["items_se"])
            fewest = "tie" if tie else best["method"]
        shown = best[["items", "items_se", "reached", "coverage", "coverage_se"]]
        rows.append({"benchmark": name, "precision": precision, "fewest": fewest, **shown})
    return pd.DataFrame(rows)


def reach(share: float, goal: float = sequential.GOAL_SHARE) -> str:
    """A share of targets short of ``goal``, as a percentage that never rounds up to the goal.

    Examples
    --------
    >>> reach(0.19), reach(0.896), reach(0.8996), reach(1.0)
    ('19%', '89.6%', '89.9%', '100%')
    """
    if share >= goal or round(share, 2) < goal:
        return f"{share:.0%}"
    return f"{np.floor(share * 1000) / 10:.1f}%"


def fewest_grid(fewest: pd.DataFrame, short: Mapping[str, str]) -> pd.DataFrame:
    """:func:`fewest_items` at a glance: one row per benchmark, one column per precision.

    A cell names the method with the fewest items (by its ``short`` name; ``tie`` or ``none``),
    its mean items and its intervals' coverage where it stops, e.g. ``TB+ 45, 88 ± 3%``.
    """
    cells = fewest.assign(
        cell=[
            f"{short.get(r.fewest, r.fewest)} {r.items:.0f}, {r.coverage:.0%} ± {r.coverage_se:.0%}"
            if r.fewest != "none"
            else f"none ({reach(r.reached)} reach it)"
            for r in fewest.itertuples()
        ]
    )
    return _grid(cells, "benchmark", "precision", lambda p: f"±{p:g}")


def versus_at(items: pd.DataFrame, method: str, rival: str, precision: float) -> str:
    """One sentence: per benchmark, whether ``method`` needs fewer items than ``rival`` at ``precision``.

    ``items`` is :func:`items_by_precision`'s table; a gap within noise is a tie, and a method that brings
    fewer than :data:`~tailoredbench.sequential.GOAL_SHARE` of the targets to the precision says how many.

    Examples
    --------
    >>> items = pd.DataFrame({"benchmark": "gsm8k", "precision": 0.06, "method": ["a", "b"], "items": [20.0, 30.0],
    ...                       "items_se": 1.0, "reached": 1.0, "coverage": 0.9, "coverage_se": 0.01})
    >>> versus_at(items, "a", "b", 0.06)
    'At ±0.06, a needs fewer items than b on GSM8K (20.0 items, 90% cover, against 30.0, 90%).'
    """
    said: dict[str, list[str]] = {"fewer": [], "tie": [], "more": []}
    both = items[np.isclose(items["precision"], precision) & items["method"].isin([method, rival])]
    both = both[both.groupby("benchmark")["method"].transform("nunique") == 2]
    if both.empty:  # a smaller run, without the rival or this precision
        return f"{method} and {rival} were not both run at ±{precision:g}, so they are not compared here."
    for name, part in both.groupby("benchmark", sort=False):
        ours, theirs = (part[part["method"] == m].iloc[0] for m in (method, rival))
        short = "".join(
            f"; {m}: {reach(r['reached'])} reach it"
            for m, r in ((method, ours), (rival, theirs))
            if r["reached"] < sequential.GOAL_SHARE
        )
        low, high = sequential.COVERAGE_GOAL
        short += "".join(
            f"; {m} covers outside the {low:.0%}-{high:.0%} goal"
            for m, r in ((method, ours), (rival, theirs))
            if not low <= r["coverage"] <= high
        )
        numbers = f"{ours['items']:.1f} items, {ours['coverage']:.0%} cover, against {theirs['items']:.1f}"
        tie = within_noise(ours["items"], ours["items_se"], theirs["items"], theirs["items_se"])
        side = "tie" if tie else "fewer" if ours["items"] < theirs["items"] else "more"
        said[side].append(f"{title(name)} ({numbers}, {theirs['coverage']:.0%}{short})")
    words = {"fewer": f"needs fewer items than {rival} on", "tie": "ties it on", "more": "needs more on"}
    parts = [f"{words[k]} {listed(v)}" for k, v in said.items() if v]
    if not said["fewer"] and parts:
        parts[0] = parts[0].replace(" it on", f" {rival} on", 1).replace("more on", f"more than {rival} on", 1)
    joined = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + ", and " + parts[-1]
    return f"At ±{precision:g}, {method} {joined}."


# ---------------------------------------------------------------------------
# Suites: benchmarks planned at once (the suite notebook)

#: The methods with a joint form, in the suite notebook's order.
SUITE_JOINT = ("tailored_plus", "tailoredbench", "random_regression")
#: How prose names a suite's benchmarks and methods.
SUITE_TITLES = {"arc": "ARC", "truthfulqa": "TruthfulQA", "hellaswag": "HellaSwag", "gsm8k": "GSM8K"}
METHOD_NAMES = {
    "tailoredbench": "TailoredBench",
    "tailored_plus": "TailoredBench+",
    "random_regression": "random+regression",
    "gp_irt": "gp-IRT",
    "random": "Random",
}


def _method(name: str) -> str:
    return METHOD_NAMES.get(name, name)


def suite_title(name: str) -> str:
    """A suite benchmark's name in prose: ``arc`` -> ``ARC``, else :func:`~tailoredbench.report.title`.

    >>> suite_title("truthfulqa"), suite_title("arc_challenge"), suite_title("suite mean")
    ('TruthfulQA', 'ARC-Challenge', 'suite mean')
    """
    return SUITE_TITLES.get(name) or title(name)


def _percent_se(se: float) -> str:
    """A share's standard error in percent, as :func:`~tailoredbench.report.cell` shows one: none is "0%", one that
    rounds to zero shows its bound."""
    return "0%" if se <= NO_ERROR else "<\u00a00.05%" if se < 0.0005 else f"{se:.1%}"


def suite_table(summary: pd.DataFrame) -> pd.DataFrame:
    """:attr:`~tailoredbench.suite.SuiteSimulation.summary` for reading: per mode and method, "mean ± se" cells.

    Examples
    --------
    >>> summary = pd.DataFrame({"mode": ["joint"], "method": ["tailored_plus"], "mae": [0.01904], "mae_se": [0.0003],
    ...                         "suite_mae": [0.01046], "suite_mae_se": [0.0001], "coverage": [0.8994],
    ...                         "coverage_se": [0.0013], "suite_coverage": [0.9045], "items": [100], "runs": [3]})
    >>> suite_table(summary).iloc[0, 2:6].tolist()
    ['0.0190 ±\\xa00.0003', '0.0105 ±\\xa00.0001', '89.9% ±\\xa00.1%', '90.5%']
    """

    def cells(mean: str) -> list[str]:
        return [cell(m, e, 4) for m, e in zip(summary[mean], summary[f"{mean}_se"], strict=True)]

    return pd.DataFrame(
        {
            "mode": summary["mode"],
            "method": summary["method"],
            "MAE per benchmark": cells("mae"),
            "suite-mean MAE": cells("suite_mae"),
            "coverage": [
                f"{c:.1%} ±\u00a0{_percent_se(e)}"
                for c, e in zip(summary["coverage"], summary["coverage_se"], strict=True)
            ],
            "suite-mean coverage": [f"{c:.1%}" for c in summary["suite_coverage"]],
            "items per target": [int(n) for n in summary["items"]],
        }
    ).reset_index(drop=True)


def suite_summary_reading(summary: pd.DataFrame, suite_name: str, goal=COVERAGE_RANGE) -> str:
    """:func:`suite_table` in prose: the lowest MAE per benchmark and of the suite mean, and how the intervals cover.

    Examples
    --------
    >>> summary = pd.DataFrame({"mode": ["joint", "independent"], "method": "tailored_plus", "mae": [0.019, 0.0214],
    ...                         "mae_se": 0.0001, "suite_mae": [0.0105, 0.0113], "coverage": [0.899, 0.96],
    ...                         "coverage_se": 0.002})
    >>> print(suite_summary_reading(summary, "s"))  # doctest: +NORMALIZE_WHITESPACE
    On s, the lowest MAE per benchmark is joint TailoredBench+'s (0.0190), then independent TailoredBench+'s
    (0.0214); the suite mean's lowest is joint TailoredBench+'s (0.0105). The 90% intervals cover from 89.9%
    (joint TailoredBench+) to 96.0% (independent TailoredBench+) of the true accuracies, inside 85-95% for 1 of
    the 2 rows.
    """
    who = _mode_and_method
    ranked = summary.sort_values("mae", kind="stable")
    first, second = ranked.iloc[0], ranked.iloc[1]
    suite_best = summary.sort_values("suite_mae", kind="stable").iloc[0]
    low, high = summary.loc[summary["coverage"].idxmin()], summary.loc[summary["coverage"].idxmax()]
    inside = summary["coverage"].between(*goal).sum()
    return (
        f"On {suite_name}, the lowest MAE per benchmark is {who(first)}'s ({first['mae']:.4f}), then {who(second)}'s "
        f"({second['mae']:.4f}); the suite mean's lowest is {who(suite_best)}'s ({suite_best['suite_mae']:.4f}). "
        + _paper_method_beaten(summary)
        + f"The 90% intervals cover from {low['coverage']:.1%} ({who(low)}) to {high['coverage']:.1%} ({who(high)}) "
        f"of the true accuracies, inside {100 * goal[0]:.0f}-{100 * goal[1]:.0f}% for {inside} of the "
        f"{len(summary)} rows."
    )


def _mode_and_method(row) -> str:
    return f"{row['mode']} {_method(row['method'])}"


def _paper_method_beaten(summary: pd.DataFrame) -> str:
    # the paper's own method, planned jointly, against the baselines: a sentence where one of them is lower
    ours = summary[(summary["mode"] == "joint") & (summary["method"] == "tailoredbench")]
    if ours.empty:
        return ""
    mine, others = ours.iloc[0], summary[~summary["method"].isin(["tailoredbench", "tailored_plus"])]

    def lower(column: str) -> list[str]:
        rows = others[others[column] < mine[column]].sort_values(column)
        return [
            f"{_mode_and_method(row)} ({row[column]:.4f}"
            + (
                ", within noise"
                if within_noise(row[column], row[f"{column}_se"], mine[column], mine[f"{column}_se"])
                else ""
            )
            + ")"
            for _, row in rows.iterrows()
        ]

    parts = [
        f"{what}, {listed(names)}"
        for what, column in (("per benchmark", "mae"), ("on the suite mean", "suite_mae"))
        if (names := lower(column))
    ]
    if not parts:
        return ""
    return (
        f"Joint TailoredBench ({mine['mae']:.4f}; suite mean {mine['suite_mae']:.4f}) is not the lowest among the "
        f"paper's method and baselines: below it are, {'; '.join(parts)}. "
    )


def stacking_table(weights: Mapping[str, np.ndarray], benchmarks: Sequence[str]) -> pd.DataFrame:
    """TailoredBench+'s stacking weights of a suite (:attr:`~tailoredbench.suite.SuiteSimulation.weights`), one
    row per mode and benchmark, one column per :data:`~tailoredbench.tailored.COMPONENTS` entry.

    >>> stacking_table({"joint": np.array([[0.1, 0.5, 0.4, 0.0]])}, ["x"]).values.tolist()
    [['joint', 'x', 0.1, 0.5, 0.4, 0.0]]
    """
    rows = [
        {"mode": mode, "benchmark": name, **dict(zip(COMPONENTS, map(float, row), strict=True))}
        for mode, table in weights.items()
        if table is not None
        for name, row in zip(benchmarks, table, strict=True)
    ]
    return pd.DataFrame(rows, columns=["mode", "benchmark", *COMPONENTS])


def joint_gains(results: pd.DataFrame, methods: Sequence[str] = SUITE_JOINT) -> pd.DataFrame:
    """Per method with both modes and per benchmark (and the suite mean): joint against independent MAE.

    ``results`` is :attr:`~tailoredbench.suite.SuiteSimulation.results`. ``joint_se`` and
    ``independent_se`` are standard errors over runs; ``difference`` is joint minus independent MAE and
    ``difference_se`` its standard error across targets (each target's absolute error averaged over runs,
    paired between the modes). ``verdict``: ``gain`` or ``loss`` beyond two such standard errors, else ``tie``.

    Examples
    --------
    >>> rows = [(r, mode, "m", "b", t, 0.5, 0.5 + e) for r in range(2) for t, (j, i) in enumerate(
    ...         [(0.01, 0.02), (0.02, 0.03), (0.01, 0.03)]) for mode, e in (("joint", j), ("independent", i))]
    >>> results = pd.DataFrame(rows, columns=["run", "mode", "method", "benchmark", "target", "true", "estimate"])
    >>> joint_gains(results, ["m"])[["joint", "independent", "ratio", "verdict"]].round(4).values.tolist()
    [[0.0133, 0.0267, 0.5, 'gain']]
    """
    rows = []
    error = results.assign(error=(results["estimate"] - results["true"]).abs())
    for method in methods:
        mine = error[error["method"] == method]
        if set(mine["mode"]) != {"joint", "independent"}:
            continue
        for name, part in mine.groupby("benchmark", sort=False):
            per_run = part.groupby(["mode", "run"])["error"].mean()
            per_target = part.groupby(["mode", "target"])["error"].mean().unstack("mode")
            joint, independent = (per_run[mode] for mode in ("joint", "independent"))
            difference = per_target["joint"] - per_target["independent"]
            se = _sem(difference)
            gap = float(difference.mean())
            rows.append(
                {
                    "method": method,
                    "benchmark": name,
                    "joint": float(joint.mean()),
                    "joint_se": _sem(joint),
                    "independent": float(independent.mean()),
                    "independent_se": _sem(independent),
                    "ratio": float(joint.mean() / independent.mean()),
                    "difference": gap,
                    "difference_se": se,
                    "verdict": "gain" if gap < -2 * se else "loss" if gap > 2 * se else "tie",
                }
            )
    return pd.DataFrame(rows)


def _sem(values: pd.Series) -> float:
    return float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0


def gains_grid(gains: pd.DataFrame) -> pd.DataFrame:
    """:func:`joint_gains` for reading: one row per benchmark, per method "joint / independent = ratio (verdict)"."""
    shown = gains.assign(
        cell=[
            f"{r.joint:.4f} / {r.independent:.4f} = **{r.ratio:.2f}**"
            + ("" if r.verdict == "gain" else f" ({r.verdict})")
            for r in gains.itertuples()
        ]
    )
    return _grid(shown, "benchmark", "method")[["benchmark", *dict.fromkeys(gains["method"])]]


def accuracy_correlations(suite) -> pd.DataFrame:
    """Pearson correlations of the benchmarks' accuracies across a suite's *source* models (benchmarks x benchmarks)."""
    accuracy = pd.DataFrame({name: m.accuracy() for name, m in zip(suite.benchmarks, suite.source, strict=True)})
    return accuracy.corr()


def predictability(suite) -> pd.DataFrame:
    """Per benchmark, across the source models: the mean correlation of its accuracy with the others', and the R²
    of a least-squares fit of its accuracy on all the others' (how much of it the rest of the suite predicts).

    Examples
    --------
    >>> from tailoredbench.datasets.matrix import ResponseMatrix
    >>> from tailoredbench.datasets.suites import Suite
    >>> rng = np.random.default_rng(0)  # SYNTHETIC: b follows a, c is noise
    >>> a = (rng.random((60, 30)) < np.linspace(0.1, 0.9, 60)[:, None]).astype(float)
    >>> parts = [a, a[:, ::-1].copy(), (rng.random((60, 30)) < 0.5).astype(float)]
    >>> m = [ResponseMatrix(p, models=[f"m{i}" for i in range(60)]) for p in parts]
    >>> suite = Suite("s", ("a", "b", "c"), tuple(m), tuple(m))
    >>> predictability(suite)["r2"].round(1).tolist()
    [1.0, 1.0, 0.1]
    """
    accuracy = np.column_stack([m.accuracy() for m in suite.source])
    correlation = accuracy_correlations(suite).to_numpy()
    rows = []
    for b, name in enumerate(suite.benchmarks):
        others = np.delete(np.arange(len(suite.benchmarks)), b)
        X = np.column_stack([np.ones(len(accuracy)), accuracy[:, others]])
        coef, *_ = np.linalg.lstsq(X, accuracy[:, b], rcond=None)
        explained = 1 - np.var(accuracy[:, b] - X @ coef) / np.var(accuracy[:, b])
        rows.append({"benchmark": name, "mean_r": float(correlation[b, others].mean()), "r2": float(explained)})
    return pd.DataFrame(rows)


def _spearman(a, b) -> float:
    ra, rb = pd.Series(a).rank().to_numpy(), pd.Series(b).rank().to_numpy()
    return float(np.corrcoef(ra, rb)[0, 1]) if np.std(ra) > 0 and np.std(rb) > 0 else float("nan")


def _gain_clause(part: pd.DataFrame, where: str = "", label: str = "ratio ") -> str:
    """Where one method gains beyond noise: "on all 5 benchmarks, most on ARC (ratio 0.84) and least on GSM8K (0.93)".

    >>> part = pd.DataFrame({"benchmark": ["x", "y", "z"], "ratio": [0.8, 0.98, 1.02],
    ...                      "verdict": ["gain", "tie", "loss"]})
    >>> _gain_clause(part)
    'on 1 of 3 benchmarks, x (ratio 0.80); not on y (0.98, within noise) and z (1.02, a loss)'
    """
    part = part.sort_values("ratio", kind="stable")
    n, won = len(part), part[part["verdict"] == "gain"]
    low, high = part.iloc[[0, -1]].itertuples()

    def said(r, first=False):
        return f"{suite_title(r.benchmark)} ({label if first else ''}{r.ratio:.2f})"

    if len(won) == n == 1:
        return f"on its one benchmark{where}, {said(low, True)}"
    if len(won) == n:
        return f"on all {n} benchmarks{where}, most on {said(low, True)} and least on {said(high)}"
    if won.empty and n > 2:
        ratios = " to ".join(f"{r.ratio:.2f} on {suite_title(r.benchmark)}" for r in (low, high))
        return f"on none of the {n} benchmarks{where} ({label.replace('ratio', 'ratios')}from {ratios})"
    if won.empty:
        ratios = listed(f"{r.ratio:.2f} on {suite_title(r.benchmark)}" for r in part.itertuples())
        return f"on none of the {n} benchmarks{where} ({label}{ratios})"
    noted = [
        f"{suite_title(r.benchmark)} ({r.ratio:.2f}" + (", a loss)" if r.verdict == "loss" else ", within noise)")
        for r in part[part["verdict"] != "gain"].itertuples()
    ]
    gained = ", ".join(said(r, i == 0) for i, r in enumerate(won.itertuples()))
    return f"on {len(won)} of {n} benchmarks{where}, {gained}; not on {listed(noted)}"


def _within_noise(each: pd.DataFrame) -> str:
    """Why no ratio of ``each`` counts as a gain: how large the differences are against their standard errors
    ("" unless every ratio is a tie, or without :func:`joint_gains`'s difference columns)."""
    if not (each["verdict"] == "tie").all() or not {"difference", "difference_se"} <= set(each.columns):
        return ""
    lower = int((each["ratio"] < 1).sum())
    size, se = each["difference"].abs(), each["difference_se"]
    return (
        f" The joint MAE is the lower in {lower} of the {len(each)} (benchmark, method) pairs, but the differences "
        f"({size.min():.4f} to {size.max():.4f}) are each within two of their standard errors across targets "
        f"({se.min():.4f} to {se.max():.4f})."
    )


def gains_reading(gains: pd.DataFrame, predicted: pd.DataFrame, suite_name: str) -> str:
    """Which benchmarks gain from the joint plan and which do not, beside how much the others predict each.

    ``gains`` is :func:`joint_gains`'s table of one suite, ``predicted`` :func:`predictability`'s.

    Examples
    --------
    >>> gains = pd.DataFrame({"method": ["tailored_plus"] * 3, "benchmark": ["x", "y", "suite mean"],
    ...                       "ratio": [0.85, 0.97, 0.9], "verdict": ["gain", "tie", "gain"]})
    >>> predicted = pd.DataFrame({"benchmark": ["x", "y"], "mean_r": [0.6, 0.6], "r2": [0.36, 0.36]})
    >>> print(gains_reading(gains, predicted, "s"))  # doctest: +NORMALIZE_WHITESPACE
    On s, the joint plan lowers TailoredBench+'s MAE beyond two standard errors across targets on 1 of 2
    benchmarks, x (ratio 0.85); not on y (0.97, within noise). Across the source models the two accuracies
    correlate at r = 0.60.
    """
    each = gains[gains["benchmark"].isin(predicted["benchmark"])]
    clauses = [
        f"{_method(method)}'s{' MAE' * (i == 0)} " + _gain_clause(part, label="ratio " if i == 0 else "")
        for i, (method, part) in enumerate(each.groupby("method", sort=False))
    ]
    text = (
        f"On {suite_name}, the joint plan lowers "
        + clauses[0].replace(" on ", " beyond two standard errors across targets on ", 1)
        + "".join(f"; {c}" for c in clauses[1:])
        + "."
    )
    text += _within_noise(each)
    if len(predicted) == 2:
        return text + f" Across the source models the two accuracies correlate at r = {predicted['mean_r'].iat[0]:.2f}."
    worst = each.loc[each.groupby("method", sort=False)["ratio"].idxmax(), ["method", "benchmark"]]
    ranked = predicted.sort_values("r2", ascending=False, kind="stable").set_index("benchmark")
    text += (
        f" Across the source models, the other benchmarks predict {suite_title(ranked.index[0])}'s accuracy best "
        f"(R² {ranked['r2'].iloc[0]:.2f}, from a least-squares fit on them) and {suite_title(ranked.index[-1])}'s "
        f"least ({ranked['r2'].iloc[-1]:.2f})."
    )
    least, methods = [], each["method"].nunique()
    for name, part in worst.groupby("benchmark", sort=False):
        who = "every method" if len(part) == methods > 1 else listed(_method(m) for m in part["method"])
        least.append(f"{suite_title(name)}, which gains least for {who}, has R² {ranked.loc[name, 'r2']:.2f}")
    text += " " + "; ".join(least) + "."
    bottom = ranked.index[-1]
    if bottom not in set(worst["benchmark"]):  # the least predicted benchmark still gains more than another
        ratios = listed(f"{r.ratio:.2f} ({_method(r.method)})" for r in each[each["benchmark"] == bottom].itertuples())
        text += f" {suite_title(bottom)}, the least predicted, has ratios {ratios}."
    agree = []
    for method, part in each.groupby("method", sort=False):
        merged = part.merge(predicted, on="benchmark")
        agree.append(f"{_spearman(merged['r2'], 1 - merged['ratio']):.1f} for {_method(method)}")
    return text + (
        f" The rank correlation between a benchmark's R² and its gain (1 - ratio) is {listed(agree)}: over "
        f"{len(predicted)} benchmarks, an indication, not a test."
    )


def gains_figure_reading(gains: Mapping[str, pd.DataFrame], marks: tuple[float, float] = (0.80, 0.95)) -> str:
    """The suite figure in prose: how many (suite, benchmark, method) ratios fall below 1, the extremes, and how
    many are at most ``marks[0]`` (a large gain) or above ``marks[1]`` (a small one), the suite means left out.

    Examples
    --------
    >>> gains = {"s": pd.DataFrame({"method": "tailored_plus", "benchmark": ["x", "y", "suite mean"],
    ...                             "ratio": [0.78, 0.97, 0.9], "verdict": ["gain", "tie", "gain"]})}
    >>> print(gains_figure_reading(gains))  # doctest: +NORMALIZE_WHITESPACE
    Leaving the suite means aside, 2 of the 2 (suite, benchmark, method) ratios lie below 1, 1 of them beyond two
    standard errors across targets. The longest line is TailoredBench+'s on x of s (ratio 0.78); the shortest
    TailoredBench+'s on y of s (0.97). 1 ratio is 0.80 or below and 1 above 0.95 (1 a tie).
    """
    each = pd.concat([table.assign(suite=name) for name, table in gains.items()], ignore_index=True)
    each = each[each["benchmark"] != "suite mean"]
    longest, shortest = each.loc[each["ratio"].idxmin()], each.loc[each["ratio"].idxmax()]
    large, small = each[each["ratio"] <= marks[0]], each[each["ratio"] > marks[1]]
    small_ties = int((small["verdict"] == "tie").sum())
    ties = "all ties" if small_ties == len(small) > 1 else f"{small_ties} {'a tie' if small_ties == 1 else 'ties'}"
    line = [f"{_method(r['method'])}'s on {suite_title(r['benchmark'])} of {r['suite']}" for r in (longest, shortest)]
    ending = f" ({ties})." if len(small) else "."
    return (
        f"Leaving the suite means aside, {(each['ratio'] < 1).sum()} of the {len(each)} (suite, benchmark, method) "
        f"ratios lie below 1, {(each['verdict'] == 'gain').sum()} of them beyond two standard errors across targets. "
        f"The longest line is {line[0]} (ratio {longest['ratio']:.2f}); the shortest {line[1]} "
        f"({shortest['ratio']:.2f}). {len(large)} ratio{'s' * (len(large) != 1)} {'is' if len(large) == 1 else 'are'} "
        f"{marks[0]:.2f} or below and {len(small)} above {marks[1]:.2f}{ending}"
    )


def _modes(summary: pd.DataFrame, method: str) -> pd.DataFrame | None:
    """``method``'s rows of a suite summary by mode; ``None`` unless it ran both jointly and independently."""
    rows = summary[summary["method"] == method].set_index("mode")
    return rows if {"joint", "independent"} <= set(rows.index) else None


def _against(rows: pd.DataFrame) -> str:
    return f"{rows.loc['joint', 'mae']:.4f} against {rows.loc['independent', 'mae']:.4f}"


def _benchmark_gains(table: pd.DataFrame, method: str) -> pd.DataFrame:
    """``method``'s rows of a :func:`joint_gains` table, the suite mean's left out."""
    return table[(table["method"] == method) & (table["benchmark"] != "suite mean")]


def suite_takeaway(
    summaries: Mapping[str, pd.DataFrame], gains: Mapping[str, pd.DataFrame], method: str = "tailored_plus"
) -> list[str]:
    """The suite notebook's takeaway, at most three sentences: joint against independent ``method`` per suite,
    on how many benchmarks it gains, and the joint random+regression beside it.

    ``summaries`` and ``gains`` map a suite's name to its :attr:`~tailoredbench.suite.SuiteSimulation.summary`
    and :func:`joint_gains` table.

    Examples
    --------
    >>> summary = pd.DataFrame({"mode": ["joint", "independent"] * 2, "method": ["tailored_plus"] * 2 + [
    ...     "random_regression"] * 2, "mae": [0.019, 0.0214, 0.0273, 0.0338], "coverage": 0.899, "items": 100})
    >>> gains = pd.DataFrame({"method": "tailored_plus", "benchmark": ["x", "y", "suite mean"],
    ...                       "ratio": [0.84, 0.93, 0.9], "verdict": ["gain", "tie", "gain"]})
    >>> for line in suite_takeaway({"s": summary}, {"s": gains}):
    ...     print(line)  # doctest: +NORMALIZE_WHITESPACE
    Planned jointly, TailoredBench+'s MAE per benchmark is 0.0190 against 0.0214 planned one benchmark at a time on
    s (ratio 0.89, 100 items per target), its 90% intervals covering 89.9%.
    It gains beyond two standard errors across targets on 1 of 2 benchmarks of s, x (ratio 0.84); not on y (0.93,
    within noise).
    Random items with a joint regression also fall below their independent MAE (0.0273 against 0.0338 on s), but
    stay above joint TailoredBench+.
    """
    name = _method(method)
    heads: list[str] = []
    covers: list[str] = []
    gained: list[str] = []
    regressions: list[str] = []
    above: list[bool] = []
    for suite, summary in summaries.items():
        rows, regression = _modes(summary, method), _modes(summary, "random_regression")
        if rows is None:
            continue
        first, joint = not heads, rows.loc["joint"]
        heads.append(
            _against(rows)
            + " planned one benchmark at a time" * first
            + f" on {suite} ({'ratio ' * first}{joint['mae'] / rows.loc['independent', 'mae']:.2f}, "
            + f"{int(joint['items'])} items per target)"
        )
        covers.append(f"{joint['coverage']:.1%}")
        part = _benchmark_gains(gains[suite], method).sort_values("ratio")
        gained.append(_gain_clause(part, f" of {suite}", "ratio " * first))
        if regression is not None:
            each = _benchmark_gains(gains[suite], "random_regression")
            tied = len(each) > 0 and bool((each["verdict"] == "tie").all())
            regressions.append(f"{_against(regression)} on {suite}" + ", within noise on each of its benchmarks" * tied)
            above.append(regression.loc["joint", "mae"] > joint["mae"])
    if not heads:
        return [f"{name} was not run in both modes, so the joint plan is not compared with the independent one here."]
    findings = [
        f"Planned jointly, {name}'s MAE per benchmark is {listed(heads)}, its 90% intervals covering {listed(covers)}.",
        f"It gains beyond two standard errors across targets {'; '.join(gained)}.",
    ]
    if regressions:
        where = "but stay above" if all(above) else "and below" if not any(above) else "above"
        verdict = f"{where} joint {name}" + " on some suites only" * (where == "above")
        findings.append(
            f"Random items with a joint regression also fall below their independent MAE ({'; '.join(regressions)}), "
            f"{verdict}."
        )
    return findings
