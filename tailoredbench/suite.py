"""A whole suite at once: one plan across benchmarks whose source models are the same models.

In the **joint** mode a target answers every benchmark's G-set first, and its native sources are the
sources that answer *all* the G-sets most like it (:func:`~tailoredbench.tailored.ranked_sources` on the
G-sets side by side); each benchmark's N-set is then chosen from those sources, and TailoredBench+'s
regressions and agreement weights read the target's answers on every benchmark's probe. The
**independent** mode is the faithful per-benchmark method, run on each benchmark alone (its estimates are
those of :func:`tailoredbench.simulate.simulate`). Random items with ridge regression gets the same two
modes (the joint one regresses each benchmark's accuracy on the random items of every benchmark, as
metabench and Zhang et al. 2025 suggest); gp-IRT and Random run per benchmark, the tinyBenchmarks way.

Stacking weights and 90% intervals are fitted on source models playing targets (:data:`STACK_FOLDS` and
:data:`INTERVAL_FOLDS` folds of the sources), per benchmark and for the suite's mean accuracy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import pandas as pd
from joblib import Parallel, delayed, parallel_config

from . import rng
from .datasets.benchmarks import Benchmark
from .datasets.suites import Suite, load_suite
from .errors import TailoredBenchError, check_integer
from .intervals import (
    LEVEL,
    PseudoTargets,
    conformal_halfwidth,
    difficulty,
    fold_groups,
    unlikeness,
)
from .intervals import interval as clipped_interval
from .kmedoids import binary_points, check_distance
from .methods import MethodSpec
from .methods.random import random_items
from .metrics import covered, per_run_metrics, summarize
from .simulate import simulate
from .stopping import FACTOR_STEP, MAX_FACTOR, ROUND_SIZE, check_precision, round_budgets, stopping_round
from .tailored import (
    COMPONENTS,
    Probe,
    calibrated_estimate,
    components,
    g_set,
    n_set,
    ranked_sources,
    ridge,
    simplex_weights,
)

MODES = ("joint", "independent")
#: Methods with a joint form; the others run per benchmark in either mode.
JOINT_METHODS = ("tailoredbench", "tailored_plus", "random_regression")
PER_BENCHMARK_METHODS = ("random", "gp_irt")
METHODS = (*JOINT_METHODS, *PER_BENCHMARK_METHODS)
#: Folds x repeats of the sources that fit TailoredBench+'s stacking weights (as the per-benchmark method).
STACK_FOLDS, STACK_REPEATS = 5, 2
#: Folds of the sources whose members play targets to calibrate the intervals (every source once).
INTERVAL_FOLDS = 10
#: Items per benchmark unless told (about a fifth of a tinyBenchmarks subset).
DEFAULT_BUDGET = 20
#: The suite mean's row in the tables.
SUITE_MEAN = "suite mean"


@dataclass
class SuiteSimulation:
    """What :func:`simulate_suite` returns."""

    results: pd.DataFrame  # one row per (run, mode, method, benchmark or SUITE_MEAN, target)
    summary: pd.DataFrame  # per (mode, method): errors, coverage and items, each over runs with its s.e.
    by_benchmark: pd.DataFrame  # per (mode, method, benchmark): MAE, Kendall's tau and coverage over runs
    suite: dict  # counts and provenance
    settings: dict
    weights: dict = field(default_factory=dict)  # per mode: TailoredBench+'s stacking weights per benchmark


@dataclass(frozen=True)
class _Setup:
    """What every run shares: the sources, the budgets and the settings."""

    sources: tuple[np.ndarray, ...]
    budgets: tuple[int, ...]
    g_size: int
    distance: str
    methods: tuple[str, ...]


def _run(setup: _Setup, targets: Sequence[np.ndarray], key, mode: str, weights=None) -> dict[str, dict]:
    """One run of the joint methods in ``mode`` on ``targets``: per method, each benchmark's estimates of
    every target (benchmarks x targets), their unlikeness to the sources, and TailoredBench+'s components."""
    out: dict[str, dict] = {}
    methods = setup.methods
    if {"tailoredbench", "tailored_plus"} & set(methods):
        calibrated, unlike, parts = _tailored(setup, targets, key, joint=mode == "joint")
        if "tailoredbench" in methods:
            out["tailoredbench"] = {"estimate": calibrated, "unlike": unlike}
        if "tailored_plus" in methods:
            out["tailored_plus"] = {"estimate": None, "unlike": unlike, "components": parts}
            if weights is not None:
                out["tailored_plus"]["estimate"] = _stacked(np.einsum("btc,bc->bt", parts, weights))
    if "random_regression" in methods:
        out["random_regression"] = _random_regression(setup, targets, key, joint=mode == "joint")
    return _exact_where_all_asked(out, targets, setup.budgets)


def _stacked(estimate: np.ndarray) -> np.ndarray:
    """TailoredBench+'s stacked estimates kept in [0, 1], which their weighted average leaves only by rounding."""
    return np.clip(estimate, 0.0, 1.0)


def _exact_where_all_asked(out: dict[str, dict], targets, budgets) -> dict[str, dict]:
    """``out`` with each target's accuracy on a benchmark whose every item it was asked, whatever the method said
    (as :func:`~tailoredbench.simulate.simulate` does); the estimates' last two axes are benchmarks x targets,
    ``targets`` each benchmark's results of the targets on all its items."""
    for found in out.values():
        if found["estimate"] is None:
            continue
        for b, (target, budget) in enumerate(zip(targets, budgets, strict=True)):
            if budget >= target.shape[1]:
                found["estimate"][..., b, :] = target.mean(axis=1)
    return out


def _tailored(setup: _Setup, targets, key, *, joint: bool):
    """TailoredBench's probes of every target on every benchmark: calibrated estimates, unlikeness and
    TailoredBench+'s single estimates (benchmarks x targets x COMPONENTS)."""
    return tuple(found[0] for found in _tailored_rounds(setup, targets, key, joint, (setup.budgets,)))


def _tailored_rounds(setup: _Setup, targets, key, joint: bool, rounds):
    """Every target's probes after each round: calibrated estimates and unlikeness (rounds x benchmarks x
    targets) and TailoredBench+'s components (rounds x benchmarks x targets x COMPONENTS)."""
    sources = setup.sources
    n_rounds, n_bench, n_targets = len(rounds), len(sources), targets[0].shape[0]
    g_sets = _g_sets(setup, key)
    native = _native(setup, g_sets, [t[:, g] for t, g in zip(targets, g_sets, strict=True)], joint)
    accuracy = [s.mean(axis=1) for s in sources]
    calibrated, unlike = np.empty((n_rounds, n_bench, n_targets)), np.empty((n_rounds, n_bench, n_targets))
    parts = np.full((n_rounds, n_bench, n_targets, len(COMPONENTS)), np.nan)
    for t in range(n_targets):
        for r, probes in enumerate(_round_probes(setup, g_sets, [rows[t] for rows in native], key, t, rounds)):
            results = [y[t, p.items] for y, p in zip(targets, probes, strict=True)]
            calibrated[r, :, t], unlike[r, :, t], parts[r, :, t] = _read_probes(setup, probes, results, joint, accuracy)
    return calibrated, unlike, parts


def _joint_components(sources, accuracy, asked, b: int) -> dict[str, float]:
    """TailoredBench+'s single estimates of benchmark ``b`` in the joint mode: the local regression reads the
    results on every benchmark's probe; the agreement of the neighbours reads ``b``'s probe and, per other
    benchmark, the mean result on its probe (a hundred items of agreement would drown ``b``'s twenty)."""
    probe, native_mean, results = asked[b]
    items = np.hstack([sources[c][:, p.items] for c, (p, _, _) in enumerate(asked)])
    answers = np.concatenate([r for _, _, r in asked])
    others = [c for c in range(len(sources)) if c != b]
    means = np.column_stack(
        [sources[b][:, probe.items], *(sources[c][:, asked[c][0].items].mean(axis=1) for c in others)]
    )
    target_means = np.concatenate([results, [asked[c][2].mean() for c in others]])
    found = components(
        sources[b], accuracy, native_mean, probe, results, ["local_regression"], features=items, evidence=answers
    )
    rest = [c for c in COMPONENTS if c != "local_regression"]
    found.update(
        components(sources[b], accuracy, native_mean, probe, results, rest, features=means, evidence=target_means)
    )
    return found


def _random_regression(setup: _Setup, targets, key, *, joint: bool) -> dict:
    """Random items per benchmark (random+regression's stream) and a ridge regression to each benchmark's
    accuracy from the items of that benchmark, or in the joint mode of every benchmark."""
    items = [random_items(key, b, s.shape[1]) for b, s in zip(setup.budgets, setup.sources, strict=True)]
    X_all = np.hstack([s[:, i] for s, i in zip(setup.sources, items, strict=True)])
    x_all = np.hstack([t[:, i] for t, i in zip(targets, items, strict=True)])
    estimate, unlike = [], []
    for source, target, chosen in zip(setup.sources, targets, items, strict=True):
        X, x = (X_all, x_all) if joint else (source[:, chosen], target[:, chosen])
        coef, intercept = ridge(X, source.mean(axis=1))
        estimate.append(np.clip(x @ coef + intercept, 0.0, 1.0))
        unlike.append([unlikeness(source, chosen, row) for row in target[:, chosen]])
    return {"estimate": np.array(estimate), "unlike": np.array(unlike)}


def _on_folds(setup: _Setup, folds: list, mode: str, seed: int, run_offset: int, weights=None, runner=None) -> list:
    """Every fold's held-out sources as targets of the kept ones: per fold, (truth per benchmark, the output of
    ``runner``, by default :func:`_run`)."""
    runner = runner or _run
    outputs = Parallel()(
        delayed(_fold)(setup, kept, held, mode, seed, run_offset, weights, runner) for kept, held in folds
    )
    return rng.in_fold_order(folds, outputs)


def _fold(setup: _Setup, kept, held, mode, seed, run_offset, weights, runner) -> list:
    pseudo = replace(setup, sources=tuple(s[kept] for s in setup.sources))
    out = []
    for index, held_out in held:
        targets = [s[held_out] for s in setup.sources]
        truth = np.array([t.mean(axis=1) for t in targets])
        out.append((truth, runner(pseudo, targets, (seed, run_offset + index), mode, weights)))
    return out


def _stack_folds(setup: _Setup, seed: int) -> list:
    n_sources = setup.sources[0].shape[0]
    return rng.folds_by_kept(n_sources, min(STACK_FOLDS, n_sources), STACK_REPEATS, seed, rng.STACKING_FOLDS)


def _interval_folds(setup: _Setup, seed: int) -> list:
    """Every source held out once (as many folds as sources at most: an empty fold would hold no pseudo-target)."""
    n_sources = setup.sources[0].shape[0]
    return [
        (kept, [(i, held)]) for i, kept, held in rng.model_folds(n_sources, min(INTERVAL_FOLDS, n_sources), 1, seed)
    ]


def stacking_weights(setup: _Setup, mode: str, seed: int, rounds=None) -> np.ndarray:
    """TailoredBench+'s weights over COMPONENTS per benchmark, fitted on the sources (over all ``rounds`` if given)."""
    runner = None if rounds is None else partial(_rounds_run, rounds=rounds)
    done = _on_folds(setup, _stack_folds(setup, seed), mode, seed, rng.STACK_RUN, runner=runner)
    truth = np.hstack([t for t, _ in done])
    parts = np.concatenate([out["tailored_plus"]["components"] for _, out in done], axis=-2)
    parts = parts[None] if rounds is None else parts
    return np.array(
        [
            simplex_weights(parts[:, b].reshape(-1, len(COMPONENTS)), np.tile(truth[b], len(parts)))
            for b in range(len(setup.sources))
        ]
    )


def calibrate(setup: _Setup, mode: str, seed: int, weights=None, level: float = LEVEL) -> dict[str, tuple]:
    """Per joint method: each benchmark's conformal quantile and the suite mean's, from the sources, each
    playing a target once (a target's half-width is its quantile times its difficulty)."""
    done = _on_folds(setup, _interval_folds(setup, seed), mode, seed, rng.PSEUDO_RUN, weights)
    truth = np.hstack([t for t, _ in done])
    quantiles = {}
    for method in done[0][1]:
        estimate = np.hstack([out[method]["estimate"] for _, out in done])
        unlike = np.hstack([out[method]["unlike"] for _, out in done])
        quantiles[method] = _pseudo_quantiles(estimate, unlike, truth, setup.budgets, level)
    return quantiles


def _pseudo_quantiles(estimate, unlike, truth, budgets, level: float) -> tuple[np.ndarray, float]:
    """:func:`_quantiles` of source models' estimates, unlikeness and truth (each benchmarks x pseudo-targets)."""
    pseudo = [
        PseudoTargets(np.abs(estimate[b] - truth[b]), estimate[b], unlike[b], np.full(truth.shape[1], n))
        for b, n in enumerate(np.array(budgets, dtype=float))
    ]
    return _quantiles(pseudo, truth.mean(axis=0), level)


def _quantiles(pseudo: Sequence[PseudoTargets], truth_mean: np.ndarray, level: float) -> tuple[np.ndarray, float]:
    """Each benchmark's conformal quantile, and the suite mean's: of its error over its mean difficulty
    (``truth_mean``: the pseudo-targets' mean accuracy over the benchmarks, in their order)."""
    estimate = np.mean([p.estimates for p in pseudo], axis=0)
    scale = np.mean([p.difficulty for p in pseudo], axis=0)
    each = np.array([p.quantile(level=level) for p in pseudo])
    return each, conformal_halfwidth(np.abs(estimate - truth_mean) / scale, level)


def share_out(total: int, spread: np.ndarray, n_items: np.ndarray, least: int = 1) -> np.ndarray:
    """``total`` items shared out between benchmarks where they cut the error most under the sampling model: the
    error of an accuracy read from ``n`` items is about ``spread / sqrt(n)``, and ``n_b`` proportional to
    ``spread_b ** (2 / 3)`` minimises the sum over benchmarks (each between ``least`` and its item count).

    Examples
    --------
    >>> share_out(60, np.array([0.5, 0.5, 0.25]), np.array([100, 100, 100])).tolist()
    [22, 22, 16]
    """
    weight = np.asarray(spread, dtype=float) ** (2 / 3)
    budgets = np.full(len(weight), least)
    for _ in range(max(total - least * len(weight), 0)):  # one item at a time to the largest marginal gain
        gain = weight * (1 / np.sqrt(budgets) - 1 / np.sqrt(budgets + 1))
        gain[budgets >= n_items] = -np.inf
        budgets[int(np.argmax(gain))] += 1
    return budgets


def check_budgets(suite: Suite, budget, total_budget, g_size: int, methods) -> tuple[int, ...]:
    """Items per benchmark: ``budget`` each, or ``total_budget`` shared out by :func:`share_out` with each
    benchmark's spread of a source model's item results, ``mean sqrt(p (1 - p))`` (the sources only)."""
    if budget is not None and total_budget is not None:
        raise TailoredBenchError("give a budget per benchmark or a total budget, not both")
    if budget is None and total_budget is None:
        budget = DEFAULT_BUDGET
    n_items = np.array(suite.n_items)
    tailored = bool({"tailoredbench", "tailored_plus"} & set(methods))
    if budget is not None:
        budgets = np.full(len(n_items), check_integer(budget, "budget", 1))
    else:
        total = check_integer(total_budget, "total budget", len(n_items))
        least = g_size + 1 if tailored else 1
        if total < least * len(n_items) or total > n_items.sum():
            raise TailoredBenchError(
                f"a total budget of {total} must lie between {least * len(n_items)} ({least} per benchmark) and "
                f"the {n_items.sum()} items of the suite"
            )
        accuracy = [m.accuracy() for m in suite.source]
        spread = np.array([np.sqrt(a * (1 - a)).mean() for a in accuracy])
        budgets = share_out(total, spread, n_items, least)
    for name, b, n in zip(suite.benchmarks, budgets, n_items, strict=True):
        if b > n:
            raise TailoredBenchError(f"budget {b} exceeds the item count {n} of {name}")
        if {"tailoredbench", "tailored_plus"} & set(methods) and b <= g_size:
            raise TailoredBenchError(f"budget {b} on {name} must exceed the G-set size {g_size}")
    return tuple(int(b) for b in budgets)


def _check_modes(modes: Sequence[str]) -> tuple[str, ...]:
    modes = tuple(dict.fromkeys(modes))
    if not modes or any(m not in MODES for m in modes):
        raise TailoredBenchError(f"unknown suite mode in {list(modes)}; choose joint and/or independent")
    return modes


def simulate_suite(
    suite: str | Suite | Sequence,
    methods: Sequence[str] = ("tailoredbench", "tailored_plus"),
    modes: Sequence[str] = MODES,
    *,
    budget: int | None = None,
    total_budget: int | None = None,
    runs: int = 10,
    seed: int = 0,
    n_jobs: int = 1,
    g_size: int = 5,
    distance: str = "manhattan",
    level: float = LEVEL,
    max_models: int | None = None,
) -> SuiteSimulation:
    """Estimate every target's accuracy on every benchmark of a suite, jointly and one benchmark at a time.

    Parameters
    ----------
    suite : str, Suite or sequence of matrix files
        A registered suite (``"open_llm_tiny"``), a loaded :class:`~tailoredbench.datasets.suites.Suite`, or
        two or more matrix files (see :func:`~tailoredbench.datasets.suites.load_suite`).
    methods : sequence of str
        From :data:`METHODS`; ``random`` and ``gp_irt`` run per benchmark and are reported once.
    modes : sequence of str
        ``"joint"`` and/or ``"independent"``.
    budget, total_budget
        Items per benchmark (default :data:`DEFAULT_BUDGET`), or in all (shared out where they cut the error
        most, by :func:`check_budgets`, on the sources only); the G-sets included.
    runs, seed, n_jobs
        Run ``r`` is seeded by ``(seed, r)``; the results are the same whatever the number of workers.
    g_size, distance
        TailoredBench's settings (a G-set of 5 per benchmark of about 100 items).
    level : float
        The intervals' level, calibrated on source models playing targets.

    Examples
    --------
    >>> from tailoredbench.datasets.matrix import ResponseMatrix
    >>> rng = np.random.default_rng(0)
    >>> ability = rng.random(40)
    >>> parts = [ResponseMatrix((rng.random((40, 30)) < ability[:, None]).astype(float)) for _ in range(2)]
    >>> sim = simulate_suite(parts, budget=8, runs=2, g_size=3)
    >>> sim.summary[["mode", "method"]].values.tolist()[:2]
    [['joint', 'tailoredbench'], ['joint', 'tailored_plus']]
    """
    if not isinstance(suite, Suite):
        suite = load_suite(suite, max_models=max_models, seed=seed)
    elif max_models is not None:  # a loaded suite's models are chosen already
        raise TailoredBenchError("max_models applies to a suite loaded here; give load_suite(..., max_models=...)")
    methods = tuple(dict.fromkeys(methods))
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise TailoredBenchError(f"unknown suite method {(unknown or [''])[0]!r}; choose from {', '.join(METHODS)}")
    modes = _check_modes(modes)
    runs, seed = check_integer(runs, "runs", 1), check_integer(seed, "seed", 0)
    budgets = check_budgets(suite, budget, total_budget, check_integer(g_size, "g_size", 1), methods)
    joint_methods = tuple(m for m in methods if m in JOINT_METHODS)
    setup = _Setup(tuple(m.values for m in suite.source), budgets, g_size, check_distance(distance), joint_methods)
    targets = [m.values for m in suite.target]
    truth = np.array([t.mean(axis=1) for t in targets])
    blocks, weights = [], {}
    n_jobs = check_integer(n_jobs, "n_jobs")
    if n_jobs == 0 or n_jobs < -1:
        raise TailoredBenchError(f"n_jobs must be at least 1 (or -1 for every core), got {n_jobs}")
    with parallel_config(n_jobs=n_jobs):
        for mode in modes if joint_methods else ():
            mode_weights = stacking_weights(setup, mode, seed) if "tailored_plus" in joint_methods else None
            weights[mode] = mode_weights
            quantiles = calibrate(setup, mode, seed, mode_weights, level)
            outputs = Parallel()(delayed(_run)(setup, targets, (seed, r), mode, mode_weights) for r in range(runs))
            for method in joint_methods:
                q, q_mean = quantiles[method]
                for r, out in enumerate(outputs):
                    estimate, unlike = out[method]["estimate"], out[method]["unlike"]
                    scale = difficulty(estimate, unlike, np.array(budgets, dtype=float)[:, None])
                    blocks.append((r, mode, method, estimate, q[:, None] * scale, q_mean * scale.mean(axis=0)))
        for method in (m for m in methods if m in PER_BENCHMARK_METHODS):
            blocks += _per_benchmark(suite, method, budgets, runs, seed, n_jobs, level, modes)
    results = _tidy(blocks, suite, truth)
    summary, by_benchmark = summarize_suite(results, suite.benchmarks, budgets)
    settings = {
        "methods": list(methods),
        "modes": list(modes),
        "budgets": list(budgets),
        "runs": runs,
        "seed": seed,
        "n_jobs": n_jobs,
        "g_size": g_size,
        "distance": distance,
        "interval": level,
    }
    return SuiteSimulation(results, summary, by_benchmark, suite.summary(), settings, weights)


def _per_benchmark(suite: Suite, method: str, budgets, runs, seed, n_jobs, level, modes) -> list:
    """A per-benchmark method through :func:`~tailoredbench.simulate.simulate`, as a block per run; the
    suite mean's interval from its pseudo-targets, as for the joint methods."""
    by_run: dict[int, list] = {r: [] for r in range(runs)}
    pseudo = []
    for name, source, target, b in zip(suite.benchmarks, suite.source, suite.target, budgets, strict=True):
        sim = simulate(
            Benchmark(name, source, target), [method], [b], runs=runs, seed=seed, n_jobs=n_jobs, interval=level
        )
        for r, part in sim.results.groupby("run", sort=True):
            by_run[int(r)].append(part)
        pseudo.append(sim.calibration[method][b])
    # the pseudo-targets in the order the calibration's folds held them out, the same for every benchmark
    groups = fold_groups(MethodSpec.parse(method), suite.source[0].n_models, seed=seed)
    order = np.concatenate([held for _, held in sorted((h for _, fold in groups for h in fold), key=lambda h: h[0])])
    truth_mean = np.mean([s.values.mean(axis=1) for s in suite.source], axis=0)[order]
    q, q_mean = _quantiles(pseudo, truth_mean, level)
    blocks = []
    for r, parts in by_run.items():
        estimate = np.array([p["estimate"].to_numpy() for p in parts])
        scale = np.array([p["difficulty"].to_numpy() for p in parts])
        blocks.append((r, "independent", method, estimate, q[:, None] * scale, q_mean * scale.mean(axis=0)))
    return blocks


def _tidy(blocks, suite: Suite, truth: np.ndarray) -> pd.DataFrame:
    """One row per run, mode, method, benchmark (and the suite mean) and target; a seventh part: more columns."""
    models = list(suite.target[0].models)
    names = [*suite.benchmarks, SUITE_MEAN]
    truth_all = np.vstack([truth, truth.mean(axis=0)])
    frames = []
    for run, mode, method, estimate, half, half_mean, *extra in blocks:
        estimate_all = np.vstack([estimate, estimate.mean(axis=0)])
        half_all = np.vstack([half, half_mean])
        low, high = clipped_interval(estimate_all, half_all)
        n = len(models)
        frames.append(
            pd.DataFrame(
                {
                    "run": run,
                    "mode": mode,
                    "method": method,
                    "benchmark": np.repeat(names, n),
                    "target": np.tile(models, len(names)),
                    "true": truth_all.ravel(),
                    "estimate": estimate_all.ravel(),
                    "interval_low": low.ravel(),
                    "interval_high": high.ravel(),
                    **(extra[0] if extra else {}),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def summarize_suite(results: pd.DataFrame, benchmarks: Sequence[str], budgets: Sequence[int]):
    """``(summary, by_benchmark)``: per mode and method, and per benchmark, means over runs with standard errors.

    ``mae`` is the mean over benchmarks of each benchmark's MAE, ``suite_mae`` the MAE of the suite mean,
    ``coverage`` the share of the benchmarks' intervals that hold the truth, ``suite_coverage`` the suite mean's.
    """
    keys = ("mode", "method", "benchmark")
    by_benchmark = summarize(results, keys)
    per_run = per_run_metrics(results, keys)
    per_run["coverage"] = (
        results.assign(covered=covered(results)).groupby([*keys, "run"], sort=True)["covered"].mean().to_numpy()
    )
    rows = []
    for (mode, method), part in per_run.groupby(["mode", "method"], sort=False):
        each = part[part["benchmark"] != SUITE_MEAN].groupby("run")[["mae", "coverage"]].mean()
        whole = part[part["benchmark"] == SUITE_MEAN]
        by = part[part["benchmark"] != SUITE_MEAN].groupby("benchmark")["mae"].mean()
        rows.append(
            {
                "mode": mode,
                "method": method,
                "mae": float(each["mae"].mean()),
                "mae_se": _se(each["mae"]),
                "mae_by_benchmark": [float(by[b]) for b in benchmarks],
                "suite_mae": float(whole["mae"].mean()),
                "suite_mae_se": _se(whole["mae"]),
                "coverage": float(each["coverage"].mean()),
                "coverage_se": _se(each["coverage"]),
                "suite_coverage": float(whole["coverage"].mean()),
                "items": int(sum(budgets)),
                "runs": int(part["run"].nunique()),
            }
        )
    order = {k: i for i, k in enumerate(results[["mode", "method"]].drop_duplicates().itertuples(index=False))}
    summary = pd.DataFrame(rows)
    summary = summary.iloc[np.argsort([order[(m, n)] for m, n in zip(summary["mode"], summary["method"], strict=True)])]
    return summary.reset_index(drop=True), by_benchmark


def _se(values) -> float:
    values = np.asarray(values, dtype=float)
    return float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0


# ---- Precision mode: rounds until every benchmark's interval, or the suite mean's, is narrow enough -------------

#: What the precision refers to: every benchmark's interval, or the suite mean's.
PRECISION_OF = ("every", "mean")
#: The methods whose rounds a suite's precision mode plans (the default first, as in simulate_suite_precision).
ROUND_METHODS = ("tailored_plus", "tailoredbench")


def check_precision_of(of: str) -> str:
    """Which intervals a precision is of (one of :data:`PRECISION_OF`), or a one-line error."""
    if of not in PRECISION_OF:
        raise TailoredBenchError(f"the precision is of {' or '.join(PRECISION_OF)} (interval), got {of!r}")
    return of


def check_round_method(method: str) -> str:
    """A method whose rounds a suite's precision mode plans (one of :data:`ROUND_METHODS`), or a one-line error."""
    if method not in ROUND_METHODS:
        raise TailoredBenchError(f"plan a suite in rounds by {' or '.join(ROUND_METHODS)}, not {method!r}")
    return method


@dataclass
class SuitePrecision:
    """What :func:`simulate_suite_precision` returns."""

    results: pd.DataFrame  # per (run, mode, method, benchmark or SUITE_MEAN, target): the stopped estimate
    summary: pd.DataFrame  # per (mode, method): items, share that met the precision, MAE and coverage
    settings: dict
    factors: dict = field(default_factory=dict)  # per (mode, method): the stopping rule's factor


def _rounds_run(setup: _Setup, targets, key, mode: str, weights=None, rounds=()) -> dict[str, dict]:
    """:func:`_run` of the tailored methods after every round (rounds x benchmarks x targets), the probes growing."""
    calibrated, unlike, parts = _tailored_rounds(setup, targets, key, mode == "joint", rounds)
    out: dict[str, dict] = {}
    if "tailoredbench" in setup.methods:
        out["tailoredbench"] = {"estimate": calibrated, "unlike": unlike}
    if "tailored_plus" in setup.methods:
        estimate = None if weights is None else _stacked(np.einsum("rbtc,bc->rbt", parts, weights))
        out["tailored_plus"] = {"estimate": estimate, "unlike": unlike, "components": parts}
    for r, budgets in enumerate(rounds):
        _exact_where_all_asked(
            {m: {"estimate": found["estimate"][r]} for m, found in out.items() if found["estimate"] is not None},
            targets,
            budgets,
        )
    return out


def _round_probes(setup: _Setup, g_sets, native_rows, key, t: int, rounds):
    """Yield target ``t``'s probe on every benchmark after each round, each round's extending the one before."""
    asked = None
    for budgets in rounds:
        probes = _probes(setup, g_sets, native_rows, key, t, budgets, asked)
        yield probes
        asked = [p.n_set for p in probes]


def round_budgets_of(
    suite: Suite | Sequence[int], g_size: int, round_size: int, max_budget: int | None
) -> tuple[tuple[int, ...], ...]:
    """Each round's items per benchmark: ``g_size + round_size``, ``+ 2 round_size``, ... up to ``max_budget``
    (by default the smallest benchmark's item count), the same on every benchmark. ``suite``: a suite or its
    benchmarks' item counts."""
    n_items = suite.n_items if isinstance(suite, Suite) else tuple(int(n) for n in suite)
    largest = min(n_items) if max_budget is None else check_integer(max_budget, "max budget", 1)
    if largest > min(n_items):
        raise TailoredBenchError(f"the maximum budget {largest} exceeds the item count {min(n_items)}")
    return tuple((b,) * len(n_items) for b in round_budgets(g_size, round_size, largest))


def stopping_factor(errors: np.ndarray, scales: np.ndarray, precision: float, level: float = LEVEL) -> float:
    """The smallest factor (on a grid of :data:`~tailoredbench.stopping.FACTOR_STEP`) whose intervals, where the
    rule stops, cover a ``level`` share (the conformal rank) of the pseudo-targets' errors on every benchmark.

    ``errors`` and ``scales`` are rounds x intervals x pseudo-targets (the intervals: each benchmark's, or the suite
    mean's alone); a pseudo-target stops at the first round where all its intervals are at most ``precision``.
    """
    n = errors.shape[1] * errors.shape[2]
    rank = min(int(np.ceil((n + 1) * level)), n)
    columns = np.arange(errors.shape[2])
    factor = FACTOR_STEP
    while factor < MAX_FACTOR:
        widest = (factor * scales).max(axis=1)  # rounds x pseudo-targets
        stop = stopping_round(widest.T, precision)
        covered = (errors[stop, :, columns] <= factor * scales[stop, :, columns]).sum()
        if covered >= rank:
            break
        factor = round(factor + FACTOR_STEP, 10)
    return factor


@dataclass(frozen=True)
class Stopped:
    """Where :meth:`RoundsRule.stop` stops each target, and its estimates and half-widths there."""

    at: np.ndarray  # per target: the index of the round it stops at
    met: np.ndarray  # per target: whether the watched intervals are at most the precision there
    estimate: np.ndarray  # benchmarks x targets
    half: np.ndarray  # benchmarks x targets: each benchmark's half-width
    mean: np.ndarray  # per target: the suite mean's estimate
    half_mean: np.ndarray  # per target: the suite mean's half-width


@dataclass(frozen=True)
class RoundsRule:
    """The suite's precision mode's rule, calibrated on the sources: after round ``r`` a benchmark's half-width is
    ``factor * q[r, b]`` times the target's difficulty, the suite mean's ``factor * q_mean[r]`` times its mean
    difficulty; a target stops at the first round whose watched intervals (``of``) are at most ``precision``."""

    q: np.ndarray  # rounds x benchmarks
    q_mean: np.ndarray  # rounds
    factor: float
    precision: float
    of: str

    def stop(self, estimate: np.ndarray, unlike: np.ndarray, n_items: np.ndarray) -> Stopped:
        """Each target's stop among the rounds given (rounds x benchmarks x targets; a first part of the rounds is
        enough): the first whose watched intervals are at most the precision, else the last given."""
        n_rounds = len(estimate)
        s = difficulty(estimate, unlike, n_items[:n_rounds])
        half = self.factor * self.q[:n_rounds, :, None] * s
        half_mean = self.factor * self.q_mean[:n_rounds, None] * s.mean(axis=1)
        watched = half if self.of == "every" else half_mean[:, None, :]
        stop = stopping_round(watched.max(axis=1).T, self.precision)
        columns = np.arange(estimate.shape[2])
        met = watched.max(axis=1)[stop, columns] <= self.precision
        chosen, chosen_half = estimate[stop, :, columns].T, half[stop, :, columns].T
        return Stopped(stop, met, chosen, chosen_half, chosen.mean(axis=0), half_mean[stop, columns])


def calibrate_rounds(
    setup: _Setup, mode: str, seed: int, rounds, precision: float, of: str, level: float = LEVEL
) -> tuple[np.ndarray | None, dict[str, RoundsRule]]:
    """TailoredBench+'s weights over all ``rounds`` (None without it) and each method's :class:`RoundsRule`, fitted on
    the sources playing targets: each round's conformal quantiles, then the factor of :func:`stopping_factor`."""
    weights = stacking_weights(setup, mode, seed, rounds) if "tailored_plus" in setup.methods else None
    run = partial(_rounds_run, rounds=rounds)
    done = _on_folds(setup, _interval_folds(setup, seed), mode, seed, rng.PSEUDO_RUN, weights, runner=run)
    truth = np.hstack([t for t, _ in done])
    n_items = np.array([r[0] for r in rounds], dtype=float)[:, None, None]
    rules = {}
    for method in setup.methods:
        estimate = np.concatenate([out[method]["estimate"] for _, out in done], axis=2)
        unlike = np.concatenate([out[method]["unlike"] for _, out in done], axis=2)
        found = [_pseudo_quantiles(estimate[r], unlike[r], truth, budgets, level) for r, budgets in enumerate(rounds)]
        q, q_mean = np.array([each for each, _ in found]), np.array([mean for _, mean in found])
        scale = difficulty(estimate, unlike, n_items)
        if of == "every":
            factor = stopping_factor(np.abs(estimate - truth), q[:, :, None] * scale, precision, level)
        else:
            mean_errors = np.abs(estimate.mean(axis=1) - truth.mean(axis=0))[:, None, :]
            factor = stopping_factor(
                mean_errors, q_mean[:, None, None] * scale.mean(axis=1)[:, None, :], precision, level
            )
        rules[method] = RoundsRule(q, q_mean, factor, precision, of)
    return weights, rules


def simulate_suite_precision(
    suite: str | Suite | Sequence,
    precision: float,
    methods: Sequence[str] = ("tailored_plus",),
    modes: Sequence[str] = ("joint",),
    *,
    of: str = "every",
    max_budget: int | None = None,
    round_size: int = ROUND_SIZE,
    runs: int = 5,
    seed: int = 0,
    n_jobs: int = 1,
    g_size: int = 5,
    distance: str = "manhattan",
    level: float = LEVEL,
) -> SuitePrecision:
    """The precision mode on a suite: every benchmark's probe grows by ``round_size`` items a round until every
    benchmark's 90% interval (``of="every"``) or the suite mean's (``of="mean"``) is at most ``precision`` wide on
    each side, or ``max_budget`` items per benchmark are asked.

    As in the single benchmark's mode (:class:`~tailoredbench.stopping.StoppingRule`), each round's intervals are
    the fixed-budget conformal ones times a factor, the smallest whose intervals cover, where the rule stops, a
    90% share of source models playing targets; TailoredBench+'s weights are fitted on the sources over all rounds.

    Examples
    --------
    >>> from tailoredbench.datasets.matrix import ResponseMatrix
    >>> rng = np.random.default_rng(0)
    >>> ability = rng.random(40)
    >>> parts = [ResponseMatrix((rng.random((40, 30)) < ability[:, None]).astype(float)) for _ in range(2)]
    >>> found = simulate_suite_precision(parts, 0.15, max_budget=18, round_size=4, runs=1, g_size=3)
    >>> found.summary[["mode", "method"]].values.tolist()
    [['joint', 'tailored_plus']]
    """
    if not isinstance(suite, Suite):
        suite = load_suite(suite)
    precision = check_precision(precision)
    check_precision_of(of)
    methods = tuple(dict.fromkeys(methods))
    wrong = [m for m in methods if m not in ROUND_METHODS]
    if wrong or not methods:
        raise TailoredBenchError(f"the suite's precision mode runs tailoredbench and tailored_plus, not {wrong[:1]}")
    modes = _check_modes(modes)
    runs, seed = check_integer(runs, "runs", 1), check_integer(seed, "seed", 0)
    rounds = round_budgets_of(suite, check_integer(g_size, "g_size", 1), round_size, max_budget)
    setup = _Setup(tuple(m.values for m in suite.source), rounds[-1], g_size, check_distance(distance), methods)
    targets = [m.values for m in suite.target]
    truth = np.array([t.mean(axis=1) for t in targets])
    n_items = np.array([r[0] for r in rounds], dtype=float)[:, None, None]
    blocks, rows, factors = [], [], {}
    with parallel_config(n_jobs=check_integer(n_jobs, "n_jobs", -1) or 1):
        for mode in modes:
            weights, rules = calibrate_rounds(setup, mode, seed, rounds, precision, of, level)
            run = partial(_rounds_run, rounds=rounds)
            outputs = Parallel()(delayed(run)(setup, targets, (seed, r), mode, weights) for r in range(runs))
            for method in methods:
                rule = rules[method]
                factors[mode, method] = rule.factor
                for r, out in enumerate(outputs):
                    stopped = rule.stop(out[method]["estimate"], out[method]["unlike"], n_items)
                    n_rows = len(suite.benchmarks) + 1
                    more = {"items": n_items[stopped.at, 0, 0] * len(suite.benchmarks), "met": stopped.met}
                    more = {k: np.tile(v, n_rows) for k, v in more.items()}
                    blocks.append((r, mode, method, stopped.estimate, stopped.half, stopped.half_mean, more))
    results = _tidy(blocks, suite, truth)
    for (mode, method), part in results.groupby(["mode", "method"], sort=False):
        each, whole = part[part["benchmark"] != SUITE_MEAN], part[part["benchmark"] == SUITE_MEAN]
        inside = covered(part)
        rows.append(
            {
                "mode": mode,
                "method": method,
                "precision": precision,
                "of": of,
                "items_mean": float(whole["items"].mean()),
                "items_p90": float(whole["items"].quantile(0.9)),
                "precision_met": float(whole["met"].mean()),
                "mae": float((each["estimate"] - each["true"]).abs().mean()),
                "suite_mae": float((whole["estimate"] - whole["true"]).abs().mean()),
                "coverage": float(inside[each.index].mean()),
                "suite_coverage": float(inside[whole.index].mean()),
                "factor": factors[mode, method],
                "runs": runs,
            }
        )
    settings = {
        "precision": precision,
        "of": of,
        "rounds": [r[0] for r in rounds],
        "round_size": round_size,
        "methods": list(methods),
        "modes": list(modes),
        "runs": runs,
        "seed": seed,
        "g_size": g_size,
        "distance": distance,
        "interval": level,
    }
    return SuitePrecision(results, pd.DataFrame(rows), settings, {f"{m} {n}": f for (m, n), f in factors.items()})


# ---- Real use: one new model, the only target of run 0 of the joint mode (tailoredbench.workflow.suite) -------


def _g_sets(setup: _Setup, key) -> list[np.ndarray]:
    """Each benchmark's G-set of the run ``key``."""
    return [
        g_set(source, setup.g_size, distance=setup.distance, random_state=rng.stream(key, rng.G_SET))
        for source in setup.sources
    ]


def _native(setup: _Setup, g_sets, g_targets, joint: bool) -> list[np.ndarray]:
    """Each benchmark's native sources of every target (targets x sources kept), from the targets' G-set answers."""
    sources, distance = setup.sources, setup.distance
    g_answers = [(s[:, g], t) for s, t, g in zip(sources, g_targets, g_sets, strict=True)]
    if joint:  # the whole suite's G-sets side by side choose one set of native sources for all benchmarks
        n_native, order = ranked_sources(
            *(np.hstack(parts) for parts in zip(*g_answers, strict=True)), distance=distance
        )
        return [order[:, :n_native]] * len(sources)
    native = []
    for g_source, g_target in g_answers:
        n_native, order = ranked_sources(g_source, g_target, distance=distance)
        native.append(order[:, :n_native])
    return native


def _probes(setup: _Setup, g_sets, native_rows, key, t: int, budgets=None, asked=None) -> list[Probe]:
    """Target ``t``'s probe on every benchmark: its G-set and the N-set its native sources choose (``budgets``
    items each, by default the setup's; ``asked``: each benchmark's N-set so far, which the probe extends)."""
    probes = []
    budgets = setup.budgets if budgets is None else budgets
    for b, (source, rows) in enumerate(zip(setup.sources, native_rows, strict=True)):
        budget, distance = budgets[b], setup.distance
        points = binary_points(source[rows].T, distance)
        gen = rng.stream(key, rng.N_SET, t, budget)
        held = () if asked is None else asked[b]
        probes.append(
            n_set(source, rows, g_sets[b], budget, distance=distance, random_state=gen, points=points, asked=held)
        )
    return probes


def _read_probes(setup: _Setup, probes, results, joint: bool, accuracy=None):
    """One target's calibrated estimate, unlikeness and TailoredBench+'s single estimates on every benchmark
    (benchmarks, benchmarks, benchmarks x COMPONENTS) from its ``results`` on each probe's items;
    ``accuracy``: each benchmark's source accuracies, when computed once for many targets."""
    sources = setup.sources
    accuracy = [s.mean(axis=1) for s in sources] if accuracy is None else accuracy
    asked = [(p, s[p.native_sources].mean(axis=0), y) for s, p, y in zip(sources, probes, results, strict=True)]
    calibrated, unlike = np.empty(len(sources)), np.empty(len(sources))
    parts = np.full((len(sources), len(COMPONENTS)), np.nan)
    for b, (probe, native_mean, y) in enumerate(asked):
        calibrated[b] = calibrated_estimate(native_mean, probe, y)
        unlike[b] = unlikeness(sources[b], probe.items, y)
        if "tailored_plus" in setup.methods:
            if joint:
                found = _joint_components(sources, accuracy[b], asked, b)
            else:
                found = components(sources[b], accuracy[b], native_mean, probe, y, COMPONENTS)
            parts[b] = [found[c] for c in COMPONENTS]
    return calibrated, unlike, parts


def _one_model(sources, budgets, g_size: int, distance: str, method: str = "tailored_plus") -> _Setup:
    """The setup of real use: ``method`` on the sources as given, ``budgets`` items per benchmark."""
    check_round_method(method)
    values = tuple(np.asarray(source, dtype=float) for source in sources)
    return _Setup(values, tuple(int(b) for b in budgets), g_size, check_distance(distance), (method,))


def new_model_g_sets(sources: Sequence[np.ndarray], g_size: int = 5, *, distance: str = "manhattan", seed: int = 0):
    """Each benchmark's G-set (item positions) that a new model answers first: those of :func:`simulate_suite`'s
    run 0 with ``seed``."""
    return _g_sets(_one_model(sources, (), g_size, distance), (seed, 0))


def new_model_probes(
    sources: Sequence[np.ndarray], g_sets, g_answers, budgets: Sequence[int], *, distance: str = "manhattan", seed=0
) -> list[Probe]:
    """A new model's probe on every benchmark from its 0/1 answers on every G-set (``g_answers``, in G-set order):
    its native sources from all the answers (the same rows on every benchmark), then each benchmark's N-set, as
    the joint mode plans them for the only target of run 0."""
    return new_model_round_probes(sources, g_sets, g_answers, [tuple(budgets)], distance=distance, seed=seed)[0]


def fit_new_model(
    sources: Sequence[np.ndarray],
    budgets: Sequence[int],
    g_size: int = 5,
    *,
    distance: str = "manhattan",
    seed: int = 0,
    level: float = LEVEL,
) -> tuple[np.ndarray, np.ndarray, float]:
    """TailoredBench+'s joint stacking weights (benchmarks x COMPONENTS), each benchmark's conformal quantile and
    the suite mean's: fitted on the sources playing targets, as :func:`simulate_suite` fits them."""
    setup = _one_model(sources, budgets, g_size, distance)
    weights = stacking_weights(setup, "joint", seed)
    q, q_mean = calibrate(setup, "joint", seed, weights, level)["tailored_plus"]
    return weights, q, float(q_mean)


@dataclass(frozen=True)
class NewModelEstimate:
    """A new model's TailoredBench+ (joint) estimates, per benchmark and of the suite mean, with their intervals."""

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    suite_estimate: float
    suite_low: float
    suite_high: float


def new_model_estimate(
    sources: Sequence[np.ndarray], probes: Sequence[Probe], results, weights, quantiles, suite_quantile: float
) -> NewModelEstimate:
    """The estimates from a new model's 0/1 ``results`` on each probe's items, with :func:`fit_new_model`'s weights
    and quantiles: a half-width is the quantile times the model's difficulty, the suite mean's its mean difficulty."""
    budgets = [p.budget for p in probes]
    setup = _one_model(sources, budgets, len(probes[0].g_set), "manhattan")  # the probes' distance is spent
    _, unlike, parts = _read_probes(setup, probes, [np.asarray(y, dtype=float) for y in results], True)
    estimate = _stacked(np.einsum("btc,bc->bt", parts[:, None, :], np.asarray(weights, dtype=float)))
    for b, (source, probe, y) in enumerate(zip(sources, probes, results, strict=True)):
        if probe.budget >= np.shape(source)[1]:  # every item asked: its accuracy, as _exact_where_all_asked
            estimate[b] = np.mean(y)
    scale = difficulty(estimate, unlike[:, None], np.array(budgets, dtype=float)[:, None])
    halfwidth = np.vstack([np.asarray(quantiles, dtype=float)[:, None] * scale, suite_quantile * scale.mean(axis=0)])
    low, high = clipped_interval(np.vstack([estimate, estimate.mean(axis=0)]), halfwidth)
    estimate, low, high = np.append(estimate[:, 0], estimate.mean(axis=0)), low[:, 0], high[:, 0]
    return NewModelEstimate(estimate[:-1], low[:-1], high[:-1], float(estimate[-1]), float(low[-1]), float(high[-1]))


def new_model_round_probes(
    sources: Sequence[np.ndarray], g_sets, g_answers, rounds, *, distance: str = "manhattan", seed: int = 0
) -> list[list[Probe]]:
    """A new model's probe on every benchmark after each of ``rounds`` (items per benchmark, as
    :func:`round_budgets_of` gives them), from its 0/1 answers on every G-set: the growing probes of the joint mode."""
    setup = _one_model(sources, rounds[-1], len(g_sets[0]), distance)
    native = _native(setup, g_sets, [np.asarray(a, dtype=float).reshape(1, -1) for a in g_answers], True)
    return list(_round_probes(setup, g_sets, [rows[0] for rows in native], (seed, 0), 0, rounds))


def fit_new_model_rounds(
    sources: Sequence[np.ndarray],
    rounds,
    g_size: int,
    precision: float,
    *,
    of: str = "every",
    method: str = "tailored_plus",
    distance: str = "manhattan",
    seed: int = 0,
    level: float = LEVEL,
) -> tuple[np.ndarray | None, RoundsRule]:
    """TailoredBench+'s weights (None for ``tailoredbench``) and the :class:`RoundsRule`, fitted on the sources
    playing targets exactly as :func:`simulate_suite_precision` fits them (joint mode)."""
    check_precision_of(of)
    setup = _one_model(sources, rounds[-1], g_size, distance, method)
    weights, rules = calibrate_rounds(setup, "joint", seed, rounds, check_precision(precision), of, level)
    return weights, rules[method]


def new_model_rounds_estimate(
    sources: Sequence[np.ndarray],
    g_size: int,
    rounds,
    answers,
    rule: RoundsRule,
    weights,
    *,
    method: str = "tailored_plus",
    distance: str = "manhattan",
    seed: int = 0,
) -> Stopped:
    """Where the rule stops a new model among the ``rounds`` it answered (a first part of the plan's), with its
    estimates and half-widths there: :func:`simulate_suite_precision`'s run 0 for the model as the only target.

    ``answers``: per benchmark, the model's 0/1 results on all its items, NaN where not asked (never read)."""
    setup = _one_model(sources, rounds[-1], g_size, distance, method)
    targets = [np.asarray(a, dtype=float).reshape(1, -1) for a in answers]
    weights = None if weights is None else np.asarray(weights, dtype=float)
    out = _rounds_run(setup, targets, (seed, 0), "joint", weights, rounds)[method]
    return rule.stop(out["estimate"], out["unlike"], np.array([r[0] for r in rounds], dtype=float)[:, None, None])
