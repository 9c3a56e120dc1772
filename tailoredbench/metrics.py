"""Quality of estimates over runs: MAE, Kendall's tau and interval coverage, from a tidy results table."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import kendalltau


def per_run_metrics(results: pd.DataFrame) -> pd.DataFrame:
    """MAE and Kendall's tau-b over the targets, per (method, budget, run).

    A run whose estimates are all equal has an undefined tau; it counts as 0, as in
    the paper's code.
    """
    rows = []
    for (method, budget, run), group in results.groupby(["method", "budget", "run"], sort=True):
        tau = kendalltau(group["true"], group["estimate"]).statistic
        rows.append(
            {
                "method": method,
                "budget": budget,
                "run": run,
                "mae": float(np.mean(np.abs(group["estimate"] - group["true"]))),
                "kendall_tau": 0.0 if np.isnan(tau) else float(tau),
            }
        )
    return pd.DataFrame(rows)


def covered(results: pd.DataFrame) -> pd.Series:
    """Per row of a simulation's ``results``: whether the true accuracy lies inside its interval."""
    return (results["interval_low"] <= results["true"]) & (results["true"] <= results["interval_high"])


def summarize(results: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard error over runs of MAE and Kendall's tau, per (method, budget)."""
    metrics = per_run_metrics(results)

    def se(values):
        return float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0

    summary = metrics.groupby(["method", "budget"], sort=False).agg(
        mae=("mae", "mean"),
        mae_se=("mae", se),
        kendall_tau=("kendall_tau", "mean"),
        kendall_tau_se=("kendall_tau", se),
        runs=("run", "nunique"),
    )
    summary = summary.reset_index()
    if "interval_low" in results:
        # coverage over all targets and runs: the share of true accuracies inside their interval
        extra = (
            results.assign(covered=covered(results), width=results["interval_high"] - results["interval_low"])
            .groupby(["method", "budget"], sort=False)[["covered", "width"]]
            .mean()
            .rename(columns={"covered": "coverage"})
            .reset_index()
        )
        summary = summary.merge(extra, on=["method", "budget"], how="left")
    return summary
