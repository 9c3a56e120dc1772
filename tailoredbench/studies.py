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
the targets).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from . import rng
from .conformal import NORMALISATIONS
from .datasets.benchmarks import PAPER_BENCHMARKS, SPECS, Benchmark, benchmark_spec
from .datasets.families import model_family
from .datasets.matrix import ResponseMatrix, split_models
from .distances import standardize
from .errors import TailoredBenchError
from .kmedoids import binary_points, k_medoids_binary
from .methods import MethodSpec
from .methods.tailored_plus import VARIANTS
from .metrics import covered
from .simulate import simulate
from .tailored import g_set, ranked_sources

#: Benchmarks the averaged studies run on, in the paper's order.
STUDY_BENCHMARKS = PAPER_BENCHMARKS
#: Benchmarks whose models have names (for the family study).
NAMED_BENCHMARKS = tuple(name for name in PAPER_BENCHMARKS if SPECS[name].named_models)


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
    >>> table[["benchmark", "arm"]].values.tolist()
    [['pope', 'on'], ['pope', 'off']]
    """
    budgets = [int(budget)] if isinstance(budget, int | np.integer) else [int(b) for b in budget]
    frames = []
    for name in benchmarks:
        bench, g_size = study_benchmark(name, seed)
        for label, arm in arms.items():
            kwargs = {"g_size": g_size, **(arm(bench) if callable(arm) else arm)}
            sim = simulate(bench, methods, budgets, runs=runs, seed=seed, n_jobs=n_jobs, **kwargs)
            frames.append(sim.summary.assign(benchmark=name, arm=label))
    table = pd.concat(frames, ignore_index=True)
    first = ["benchmark", "arm", "method", "budget"]
    return table[first + [c for c in table.columns if c not in first]]


def by_arm(table: pd.DataFrame, keys=("arm",)) -> pd.DataFrame:
    """The mean over benchmarks of MAE and Kendall's tau, per arm (the paper's averaging)."""
    keys = list(keys)
    return table.groupby(keys, sort=False)[["mae", "kendall_tau"]].mean().reset_index()


def paper_table(averaged: pd.DataFrame, paper: Mapping, key: str = "arm") -> pd.DataFrame:
    """Our averaged MAE and tau beside the paper's, per arm (the paper's blank where it has none)."""
    rows = []
    for _, row in averaged.iterrows():
        theirs = paper.get(row[key], paper.get(_as_number(row[key]), (np.nan, np.nan)))
        rows.append(
            {
                key: row[key],
                "mae": row["mae"],
                "paper_mae": theirs[1],
                "kendall_tau": row["kendall_tau"],
                "paper_kendall_tau": theirs[0],
            }
        )
    return pd.DataFrame(rows)


def _as_number(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return value


def best_arm(averaged: pd.DataFrame, key: str = "arm") -> tuple[str, str]:
    """The arm with the lowest MAE and the arm with the highest tau."""
    return (
        str(averaged.loc[averaged["mae"].idxmin(), key]),
        str(averaged.loc[averaged["kendall_tau"].idxmax(), key]),
    )


def reversals(table: pd.DataFrame, key: str = "arm") -> str:
    """The benchmarks where the arm with the lowest MAE is not the lowest on average, in words.

    An average over benchmarks can hide that an arm which helps on most of them hurts on
    some; this names them. Empty when every benchmark agrees with the average.
    """
    best_overall = best_arm(by_arm(table, keys=[key]), key)[0]
    mean_mae = table.groupby([key, "benchmark"], sort=False)["mae"].mean().unstack(key)
    found = []
    for benchmark, row in mean_mae.iterrows():
        best_here = str(row.idxmin())
        if best_here != best_overall:
            tie = ", equal to four decimals" if round(row.min(), 4) == round(row[best_overall], 4) else ""
            found.append(
                f"{benchmark} (lowest: {best_here}, {row.min():.4f}, against {best_overall}'s "
                f"{row[best_overall]:.4f}{tie})"
            )
    if not found:
        return f"Every benchmark agrees with the average: {best_overall} has the lowest MAE on each."
    return f"The average hides a reversal on {len(found)} of {len(mean_mae)} benchmarks: " + "; ".join(found) + "."


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
    """Per target family (with a known family and ``min_targets`` targets): own-family share vs base rate."""
    own = frame[(frame["target_family"] == frame["source_family"]) & (frame["target_family"] != "other")]
    own = own[own["targets"] >= min_targets]
    return own[["target_family", "targets", "share", "base"]].rename(
        columns={"share": "native_share", "base": "share_among_all_sources"}
    )


# ---------------------------------------------------------------------------
# The motivating embedding figure


def coreset_distances(bench: Benchmark, budget: int = 30, seed: int = 0) -> dict:
    """A static coreset's clusters, and their tightness seen by source and by target models.

    The coreset is K-Medoids (Manhattan) on items embedded by the z-scored source
    models. Each item's Manhattan distance to its cluster's medoid is measured in
    the source embedding and in the target embedding (z-scored target models), with
    the same clusters: looser clusters under the targets mean the coreset
    represents them worse.
    """
    source, target = bench.source.values, bench.target.values
    result = k_medoids_binary(binary_points(source.T), budget, random_state=rng.stream((seed, rng.CORESET)))
    medoid_of_item = result.medoids[result.labels]
    out: dict = {"medoids": result.medoids, "labels": result.labels}
    for view, matrix in (("source models", source), ("target models", target)):
        Z = standardize(matrix.T)
        distance = np.abs(Z - Z[medoid_of_item]).sum(axis=1)
        out[view] = {"mean_distance": float(distance.mean()), "per_model": float(distance.mean() / matrix.shape[0])}
    return out


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
        mae = sim.summary.groupby("method")["mae"].mean()
        for v, method in zip(variants, names, strict=True):
            rows.append(
                {
                    "benchmark": name,
                    "variant": v,
                    "mae": mae[method],
                    "ratio": mae[method] / mae[_plus("calibrated")],
                }
            )
    table = pd.DataFrame(rows)
    mean = table.groupby("variant", sort=False)[["mae", "ratio"]].mean().reset_index().assign(benchmark="mean")
    return pd.concat([table, mean], ignore_index=True)


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
    range.
    """
    faithful = _plus("calibrated")
    table = summary.groupby(["benchmark", "method"], sort=False)[["mae", "kendall_tau", "coverage", "width"]].mean()
    table = table.reset_index()
    if spread is not None:
        table = table.merge(spread[["benchmark", "method", "coverage_se"]], on=["benchmark", "method"], how="left")
    base = table[table["method"] == faithful].set_index("benchmark")
    table["mae_ratio"] = table["mae"] / table["benchmark"].map(base["mae"])
    table["tau_change"] = table["kendall_tau"] - table["benchmark"].map(base["kendall_tau"])
    limit = table["benchmark"].map(MAE_TARGET).fillna(1.0)
    table["meets_mae"] = (table["mae_ratio"] <= limit) & (table["tau_change"] >= 0)
    table["meets_coverage"] = table["coverage"].between(*COVERAGE_RANGE)
    table["role"] = np.where(
        table["method"] == faithful,
        "faithful TailoredBench",
        np.where(
            table["method"] == _plus(chosen),
            "TailoredBench+ (chosen)",
            np.where(
                [MethodSpec.parse(m).base == "tailored_plus" for m in table["method"]], "variant", "best baseline"
            ),
        ),
    )
    table["meets_mae"] = table["meets_mae"].astype(object)
    table.loc[table["method"] == faithful, "meets_mae"] = None  # the reference itself
    return table


def normalisation_table(
    calibrations: Mapping[str, Mapping], methods: Sequence[str], level: float = 0.9
) -> pd.DataFrame:
    """How wide each of :data:`~tailoredbench.conformal.NORMALISATIONS` makes the intervals, on source models only.

    ``calibrations`` maps a benchmark to its simulation's ``calibration`` (per
    method and budget, the left-out sources that calibrated the intervals). For each
    method of ``methods``, the mean width over budgets of intervals calibrated on
    those sources (:meth:`~tailoredbench.conformal.PseudoTargets.width`) and its
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
        ``split_seed``, ``coverage`` and its ``coverage_se`` across targets
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
        spread = coverage_by_target(sim.results).iloc[0]
        means = sim.summary[["mae", "kendall_tau", "width"]].mean()
        rows.append(
            {
                "models": models,
                "split": how,
                "split_seed": split_seed,
                "sources": source.n_models,
                "targets": target.n_models,
                "coverage": spread["coverage"],
                "coverage_se": spread["coverage_se"],
                **means.to_dict(),
            }
        )
    return pd.DataFrame(rows)


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
