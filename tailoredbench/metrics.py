"""Quality of estimates over runs: MAE, Kendall's tau and interval coverage, from a tidy results table."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

#: What a summary row is per: a simulation's method and budget (the sequential mode has no fixed budget).
KEYS = ("method", "budget")


def per_run_metrics(results: pd.DataFrame, keys=KEYS) -> pd.DataFrame:
    """MAE and Kendall's tau-b over the targets, per ``keys`` (by default method and budget) and run.

    A run whose estimates are all equal has an undefined tau; it counts as 0, as in
    the paper's code.
    """
    keys = list(keys)
    rows = []
    for values, group in results.groupby([*keys, "run"], sort=True):
        tau = kendalltau(group["true"], group["estimate"]).statistic
        rows.append(
            {
                **dict(zip([*keys, "run"], values, strict=True)),
                "mae": float(np.mean(np.abs(group["estimate"] - group["true"]))),
                "kendall_tau": 0.0 if np.isnan(tau) else float(tau),
            }
        )
    return pd.DataFrame(rows)


def covered(results: pd.DataFrame) -> pd.Series:
    """Per row of a simulation's ``results``: whether the true accuracy lies inside its interval."""
    return (results["interval_low"] <= results["true"]) & (results["true"] <= results["interval_high"])


def summarize(results: pd.DataFrame, keys=KEYS) -> pd.DataFrame:
    """Mean and standard error over runs of MAE and Kendall's tau, per ``keys`` (method and budget)."""
    keys = list(keys)
    metrics = per_run_metrics(results, keys)

    def se(values):
        return float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0

    summary = metrics.groupby(keys, sort=False).agg(
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
            .groupby(keys, sort=False)[["covered", "width"]]
            .mean()
            .rename(columns={"covered": "coverage"})
            .reset_index()
        )
        summary = summary.merge(extra, on=keys, how="left")
    return summary
