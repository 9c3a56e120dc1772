"""Evaluate to a requested precision (beyond the paper): grow each target's probe until its interval is narrow.

The N-set is added in rounds of ``step`` items, every item asked kept; a target stops at the first
round whose half-width is at most ``precision``, or at ``max_budget`` items, by a rule calibrated on
source models (:class:`~tailoredbench.stopping.StoppingRule`). :func:`simulate_rounds` runs every round
once; :func:`stop` applies the rule of any precision to them. Adaptive IRT testing (``fluid``) grows its test
the same way; :func:`stop_atlas` stops it by ATLAS's own rule instead, on the ability's standard error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np
import pandas as pd

from .errors import TailoredBenchError
from .intervals import fold_groups
from .methods import MethodSpec, Oracle, parse_methods
from .methods.fluid import Fluid, adaptive_tests
from .metrics import summarize
from .simulate import Simulation, simulate
from .stopping import (
    LEVEL,
    MAX_BUDGET,
    ROUND_SIZE,
    AbilityRule,
    StoppingRule,
    check_precision,
    round_budgets,
    stopping_round,
)

#: The share of targets a fixed budget must bring to the precision, to be compared with.
FIXED_SHARE = 0.9


@dataclass
class Sequential:
    """What :func:`stop` returns.

    ``summary``'s ``fixed_budget`` is the fewest items whose fixed-budget intervals reach the precision
    for :data:`FIXED_SHARE` of the targets (NaN if none up to the maximum), ``fixed_share`` its share.
    """

    results: pd.DataFrame  # per (run, method, target): estimate, interval, halfwidth, items, precision_met
    summary: pd.DataFrame  # per method: MAE, tau, coverage, width, items_mean, items_p90, precision_met, ...
    rules: dict  # per method, the StoppingRule used
    rounds: Simulation  # every round of every target (simulate_rounds)


def simulate_rounds(
    benchmark,
    methods: Sequence[str] = ("tailoredbench",),
    *,
    max_budget: int = MAX_BUDGET,
    step: int = ROUND_SIZE,
    g_size: int = 10,
    level: float = LEVEL,
    method_options: dict | None = None,
    **kwargs,
) -> Simulation:
    """Every round of the growing probe for every target and run, each with its fixed-budget interval.

    A :func:`~tailoredbench.simulate.simulate` of ``methods`` with option ``grow`` at the round budgets
    ``g_size + step``, ``+ 2 step``, ... ``max_budget``, with intervals at ``level``; further keywords
    (``runs``, ``seed``, ``n_jobs``, ``distance``, ...) go to it.
    """
    distance = kwargs.pop("distance", "manhattan")
    specs = parse_methods(methods, {"g_size": g_size, "distance": distance}, method_options)
    for spec in specs:
        if "grow" not in spec.method.options:
            raise TailoredBenchError(
                f"method {spec.name} has no growing probe; "
                "the precision mode runs tailoredbench, tailored_plus or fluid"
            )
    options = {**(method_options or {}), "grow": True}
    specs = [replace(s, options=MappingProxyType({**s.options, "grow": True})) for s in specs]
    budgets = round_budgets(g_size, step, max_budget, getattr(benchmark, "n_items", None))
    return simulate(
        benchmark, specs, budgets, g_size=g_size, distance=distance, method_options=options, interval=level, **kwargs
    )


def stop(rounds: Simulation, precision: float) -> Sequential:
    """Stop every target of ``rounds`` (:func:`simulate_rounds`) by the rule for ``precision``, calibrated
    per method on the source models that calibrated ``rounds``' intervals."""
    budgets = tuple(rounds.settings["budgets"])
    level = rounds.settings["interval"]
    precision = check_precision(precision)
    frames, rows, rules = [], [], {}
    for method, table in rounds.results.groupby("method", sort=False):
        rules[method] = rule = StoppingRule.calibrate(rounds.calibration[method], precision, level)
        # runs x targets x rounds, in the results' own order of targets
        table = table.sort_values(["run", "budget"], kind="stable")
        n_runs, n_rounds = table["run"].nunique(), len(budgets)
        shape = (n_runs, n_rounds, -1)
        estimate = table["estimate"].to_numpy().reshape(shape).transpose(0, 2, 1)
        difficulty = table["difficulty"].to_numpy().reshape(shape).transpose(0, 2, 1)
        first = table[table["budget"] == budgets[0]]
        n_targets = estimate.shape[1]
        halfwidths = rule.halfwidths(difficulty.reshape(-1, n_rounds))
        at = stopping_round(halfwidths, precision)
        cells = np.arange(len(at))
        value = estimate.reshape(-1, n_rounds)[cells, at]
        halfwidth = halfwidths[cells, at]
        ids = {"run": first["run"].to_numpy(), "method": method, "target": first["target"].to_numpy()}
        met = halfwidth <= precision
        frames.append(pd.DataFrame(_stopped(ids, first["true"].to_numpy(), value, halfwidth, budgets, at, met)))
        # the same probe read at one fixed budget, with that budget's own calibrated interval
        fixed_met = (np.asarray(rule.q) * difficulty.reshape(-1, n_rounds) <= precision).mean(axis=0)
        reached = np.flatnonzero(fixed_met >= FIXED_SHARE)
        rows.append(
            {
                "method": method,
                "precision": precision,
                "targets": n_targets,
                "factor": rule.factor,
                "fixed_budget": float(budgets[reached[0]]) if len(reached) else np.nan,
                "fixed_share": float(fixed_met[reached[0]]) if len(reached) else float(fixed_met[-1]),
            }
        )
    results = pd.concat(frames, ignore_index=True)
    summary = summarize(results, keys=("method",))
    items = results.groupby("method", sort=False).agg(
        items_mean=("items", "mean"),
        items_p90=("items", lambda v: float(np.percentile(v, 90))),
        precision_met=("precision_met", "mean"),
    )
    summary = summary.merge(items.reset_index(), on="method").merge(pd.DataFrame(rows), on="method")
    return Sequential(results, summary, rules, rounds)


def _stopped(ids: dict, true, value: np.ndarray, halfwidth: np.ndarray, budgets, at: np.ndarray, met) -> dict:
    """The columns of :func:`stop`'s ``results`` for targets stopped at rounds ``at``, after ``ids``' columns."""
    return {
        **ids,
        "true": true,
        "estimate": value,
        "interval_low": np.clip(value - halfwidth, 0.0, 1.0),
        "interval_high": np.clip(value + halfwidth, 0.0, 1.0),
        "halfwidth": halfwidth,
        "items": np.asarray(budgets)[at],
        "precision_met": met,
    }


#: The label of fluid stopped by ATLAS's rule (:func:`stop_atlas`) in a summary.
ATLAS = "fluid_atlas"


def _rounds_of_tests(model, values: np.ndarray, budgets) -> tuple[np.ndarray, np.ndarray]:
    """Fluid's estimates and ability standard errors after every round (targets x rounds) of models ``values``."""
    tests = adaptive_tests(model, Oracle(values, budgets[-1]), budgets[-1])
    estimates = np.column_stack([tests.estimates(model, b) for b in budgets])
    return estimates, tests.se[:, np.asarray(budgets) - 1]


def atlas_pseudo_targets(rounds: Simulation, source: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Absolute errors and ability standard errors after every round (pseudo-targets x rounds) of the source
    models that calibrated fluid's intervals in ``rounds``: the same folds, the same (cached) fits."""
    budgets = tuple(rounds.settings["budgets"])
    spec = MethodSpec.parse("fluid")
    errors, se = [], []
    for kept, held in fold_groups(spec, source.shape[0], seed=rounds.settings["seed"]):
        model = Fluid().prepare(source[kept], budgets)["model"]
        for _, held_out in held:
            estimates, standard_errors = _rounds_of_tests(model, source[held_out], budgets)
            errors.append(np.abs(estimates - source[held_out].mean(axis=1)[:, None]))
            se.append(standard_errors)
    return np.vstack(errors), np.vstack(se)


def stop_atlas(
    rounds: Simulation, source: np.ndarray, target: np.ndarray, precision: float, threshold: float | None = None
) -> Sequential:
    """Fluid's rounds (``rounds`` of :func:`simulate_rounds` with ``fluid``, on ``source`` and ``target``) stopped
    by ATLAS's rule: at the first round whose ability's standard error is at most a threshold, chosen on the
    source models (:meth:`~tailoredbench.stopping.AbilityRule.calibrate`) unless ``threshold`` is given.

    The summary has :func:`stop`'s columns, the method labelled :data:`ATLAS`, ``fixed_budget`` that of fluid's
    own intervals, and ``se_threshold``; ``precision_met``: the rule stopped by itself, at a half-width at most
    the precision. Fluid draws nothing at random, so every run repeats the first.
    """
    if "fluid" not in rounds.calibration:
        raise TailoredBenchError("ATLAS's rule stops fluid: its rounds are not in this simulation")
    budgets = tuple(rounds.settings["budgets"])
    level = rounds.settings["interval"]
    rule = AbilityRule.calibrate(budgets, *atlas_pseudo_targets(rounds, source), precision, level, threshold)
    model = Fluid().prepare(source, budgets)["model"]
    estimates, se = _rounds_of_tests(model, target, budgets)
    at = rule.stopping_rounds(se)
    cells = np.arange(len(at))
    value = estimates[cells, at]
    first = rounds.results[(rounds.results["method"] == "fluid") & (rounds.results["budget"] == budgets[0])]
    runs = first["run"].nunique()
    met = (se[cells, at] <= rule.threshold) & (rule.halfwidth <= rule.precision)
    ids = {"method": ATLAS, "target": first["target"].to_numpy()[: len(at)]}
    one_run = _stopped(ids, target.mean(axis=1), value, np.full(len(at), rule.halfwidth), budgets, at, met)
    results = pd.concat([pd.DataFrame({"run": run, **one_run}) for run in range(runs)], ignore_index=True)
    summary = summarize(results, keys=("method",))
    fixed = stop(rounds, precision).summary.set_index("method").loc["fluid"]
    summary = summary.assign(
        items_mean=results["items"].mean(),
        items_p90=float(np.percentile(results["items"], 90)),
        precision_met=results["precision_met"].mean(),
        precision=rule.precision,
        targets=len(at),
        factor=np.nan,
        fixed_budget=fixed["fixed_budget"],
        fixed_share=fixed["fixed_share"],
        se_threshold=rule.threshold,
    )
    return Sequential(results, summary, {ATLAS: rule}, rounds)


#: What the precision report holds the mode to: targets at the precision, and interval coverage.
GOAL_SHARE = 0.9
COVERAGE_GOAL = (0.85, 0.95)


def precision_table(
    rounds_of: dict[str, Simulation], precisions: Sequence[float], matrices: dict | None = None
) -> pd.DataFrame:
    """Per benchmark (``rounds_of``: name -> :func:`simulate_rounds`) and precision: the sequential mode's
    items, coverage and MAE beside the fixed budget's. With ``matrices`` (name -> (source, target) values),
    the rounds of ``fluid`` are also stopped by ATLAS's rule (:func:`stop_atlas`), as method :data:`ATLAS`.

    ``items_se``: the standard error of ``items_mean`` across targets, each target's mean over runs one
    observation. ``fixed_coverage``: the mean over rounds of each round's fixed-budget coverage. ``goal_met``: at least
    :data:`GOAL_SHARE` of the targets reach the precision, with fewer items on average than the fixed
    budget that brings :data:`FIXED_SHARE` there (or none does), and coverage within :data:`COVERAGE_GOAL`.
    """
    rows = []
    for name, rounds in rounds_of.items():
        fixed_coverage = rounds.summary.groupby("method")["coverage"].mean()
        if "fluid" in fixed_coverage:  # ATLAS's rule stops the same probe
            fixed_coverage[ATLAS] = fixed_coverage["fluid"]
        for precision in precisions:
            stopped = [stop(rounds, precision)]
            if matrices and name in matrices and "fluid" in rounds.calibration:
                source, target = matrices[name]
                stopped.append(stop_atlas(rounds, source, target, precision))
            summary = pd.concat([s.summary.drop(columns="se_threshold", errors="ignore") for s in stopped])
            items_se = _items_se(pd.concat([s.results for s in stopped]))
            for _, row in summary.iterrows():
                fixed = row["fixed_budget"]
                fewer = bool(np.isnan(fixed) or row["items_mean"] < fixed)
                covered = COVERAGE_GOAL[0] <= row["coverage"] <= COVERAGE_GOAL[1]
                rows.append(
                    {
                        "benchmark": name,
                        "method": row["method"],
                        "precision": precision,
                        "first_round": rounds.settings["budgets"][0],
                        "max_budget": rounds.settings["budgets"][-1],
                        "precision_met": row["precision_met"],
                        "items_mean": row["items_mean"],
                        "items_se": items_se[row["method"]],
                        "items_p90": row["items_p90"],
                        "fixed_budget": fixed,
                        "coverage": row["coverage"],
                        "fixed_coverage": fixed_coverage[row["method"]],
                        "mae": row["mae"],
                        "factor": row["factor"],
                        "goal_met": bool(row["precision_met"] >= GOAL_SHARE and fewer and covered),
                    }
                )
    return pd.DataFrame(rows)


def _items_se(results: pd.DataFrame) -> pd.Series:
    """Per method of :func:`stop`'s ``results``, the standard error of the mean items across targets."""
    per_target = results.groupby(["method", "target"], sort=False)["items"].mean()
    return per_target.groupby(level="method", sort=False).agg(
        lambda v: v.std(ddof=1) / np.sqrt(len(v)) if len(v) > 1 else 0.0
    )


def followed(
    rounds: Simulation, precision: float, target: int, run: int = 0, method: str | None = None
) -> pd.DataFrame:
    """One target's (a position among the targets) rounds: per round, the estimate, the rule's interval
    (``low``, ``high``, ``halfwidth``), ``true``, and ``stopped`` at the round the rule stops at."""
    method = method or rounds.settings["methods"][0]
    rule = StoppingRule.calibrate(rounds.calibration[method], precision, rounds.settings["interval"])
    table = rounds.results[(rounds.results["method"] == method) & (rounds.results["run"] == run)]
    name = table["target"].drop_duplicates().iloc[target]
    table = table[table["target"] == name].sort_values("budget")
    halfwidth = rule.halfwidths(table["difficulty"].to_numpy()[None, :])[0]
    at = int(stopping_round(halfwidth[None, :], precision)[0])
    estimate = table["estimate"].to_numpy()
    return pd.DataFrame(
        {
            "target": name,
            "budget": table["budget"].to_numpy(),
            "estimate": estimate,
            "low": np.clip(estimate - halfwidth, 0, 1),
            "high": np.clip(estimate + halfwidth, 0, 1),
            "halfwidth": halfwidth,
            "true": table["true"].to_numpy(),
            "stopped": np.arange(len(table)) == at,
        }
    )
