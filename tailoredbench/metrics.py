"""Quality of estimates over runs: MAE, Kendall's tau and interval coverage, from a tidy results table."""

from __future__ import annotations

import numba
import numpy as np
import pandas as pd

from .errors import ctrl_c_held

#: What a summary row is per: a simulation's method and budget (the sequential mode has no fixed budget).
KEYS = ("method", "budget")
#: Up to this many targets a run's tau counts pairs (:func:`kendall_tau_b`); above, scipy's O(n log n) is faster.
PAIRWISE_LIMIT = 500


def _scipy_tau(x, y) -> float:
    # Imported here: scipy.stats takes half a second to import, in every process that imports this module.
    from scipy.stats import kendalltau

    return kendalltau(x, y).statistic


def per_run_metrics(results: pd.DataFrame, keys=KEYS) -> pd.DataFrame:
    """MAE and Kendall's tau-b over the targets, per ``keys`` and run; an undefined tau is 0, as in the paper's code."""
    by = [*keys, "run"]
    # Groups in the order groupby(sort=True) gives them; rows keep their order within a group.
    codes = results.groupby(by, sort=True).ngroup().to_numpy()
    order = np.argsort(codes, kind="stable")
    ends = np.cumsum(np.bincount(codes))
    estimate = results["estimate"].to_numpy(dtype=float)[order]
    true = results["true"].to_numpy(dtype=float)[order]
    labels = results[by].iloc[order[ends - 1]].to_dict("records")
    rows, start = [], 0
    for label, end in zip(labels, ends, strict=True):
        x, y = true[start:end], estimate[start:end]
        tau = kendall_tau_b(x, y) if end - start <= PAIRWISE_LIMIT else _scipy_tau(x, y)
        rows.append(
            {**label, "mae": float(np.mean(np.abs(y - x))), "kendall_tau": 0.0 if np.isnan(tau) else float(tau)}
        )
        start = end
    return pd.DataFrame(rows, columns=[*by, "mae", "kendall_tau"])


@ctrl_c_held()  # numba compiles on the first call and drops a Ctrl-C that lands then
@numba.njit(cache=True)
def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b, NaN if either sample is constant or holds a NaN: :func:`scipy.stats.kendalltau` to the bit."""
    n = len(x)
    for i in range(n):
        if np.isnan(x[i]) or np.isnan(y[i]):
            return np.nan
    concordant_minus_discordant, x_ties, y_ties = 0, 0, 0
    for i in range(n):
        for j in range(i + 1, n):
            sx = (x[i] > x[j]) - (x[i] < x[j])
            sy = (y[i] > y[j]) - (y[i] < y[j])
            x_ties += sx == 0
            y_ties += sy == 0
            concordant_minus_discordant += sx * sy
    pairs = n * (n - 1) // 2
    if x_ties == pairs or y_ties == pairs:
        return np.nan
    tau = concordant_minus_discordant / np.sqrt(pairs - x_ties) / np.sqrt(pairs - y_ties)
    return min(1.0, max(-1.0, tau))


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
        extra = (
            results.assign(covered=covered(results), width=results["interval_high"] - results["interval_low"])
            .groupby(keys, sort=False)[["covered", "width"]]
            .mean()
            .rename(columns={"covered": "coverage"})
            .reset_index()
        )
        summary = summary.merge(extra, on=keys, how="left")
    return summary


def within_noise(a: float, a_se: float, b: float, b_se: float, k: float = 2.0) -> bool:
    """Whether two means differ by no more than ``k`` standard errors of their difference: a tie, not a verdict.

    Examples
    --------
    >>> within_noise(0.0609, 0.0010, 0.0609, 0.0012), within_noise(0.040, 0.001, 0.050, 0.001)
    (True, False)
    """
    return abs(a - b) <= k * float(np.hypot(a_se, b_se))
