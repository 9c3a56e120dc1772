"""Evaluate to a requested precision (beyond the paper): grow each target's probe until its interval is narrow.

The N-set is added in rounds of ``step`` items, every item asked kept; a target stops at the first
round whose half-width is at most ``precision``, or at ``max_budget`` items, by a rule calibrated on
source models (:class:`~tailoredbench.stopping.StoppingRule`). :func:`simulate_rounds` runs every round
once; :func:`stop` applies the rule of any precision to them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np
import pandas as pd

from .errors import TailoredBenchError
from .methods import parse_methods
from .metrics import summarize
from .simulate import Simulation, simulate
from .stopping import LEVEL, MAX_BUDGET, ROUND_SIZE, StoppingRule, check_precision, round_budgets, stopping_round

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
                f"method {spec.name} has no growing probe; the precision mode runs tailoredbench or tailored_plus"
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
        frames.append(
            pd.DataFrame(
                {
                    "run": first["run"].to_numpy(),
                    "method": method,
                    "target": first["target"].to_numpy(),
                    "true": first["true"].to_numpy(),
                    "estimate": value,
                    "interval_low": np.clip(value - halfwidth, 0.0, 1.0),
                    "interval_high": np.clip(value + halfwidth, 0.0, 1.0),
                    "halfwidth": halfwidth,
                    "items": np.asarray(budgets)[at],
                    "precision_met": halfwidth <= precision,
                }
            )
        )
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


#: What the precision report holds the mode to: targets at the precision, and interval coverage.
GOAL_SHARE = 0.9
COVERAGE_GOAL = (0.85, 0.95)


def precision_table(rounds_of: dict[str, Simulation], precisions: Sequence[float]) -> pd.DataFrame:
    """Per benchmark (``rounds_of``: name -> :func:`simulate_rounds`) and precision: the sequential mode's
    items, coverage and MAE beside the fixed budget's.

    ``fixed_coverage``: the mean over rounds of each round's fixed-budget coverage. ``goal_met``: at least
    :data:`GOAL_SHARE` of the targets reach the precision, with fewer items on average than the fixed
    budget that brings :data:`FIXED_SHARE` there (or none does), and coverage within :data:`COVERAGE_GOAL`.
    """
    rows = []
    for name, rounds in rounds_of.items():
        fixed_coverage = rounds.summary.groupby("method")["coverage"].mean()
        for precision in precisions:
            summary = stop(rounds, precision).summary
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
