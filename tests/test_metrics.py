"""MAE and Kendall's tau per run: the same values, to the bit, as scipy's tau-b on each group."""

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from tailoredbench.metrics import kendall_tau_b, per_run_metrics


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 40, 150])
@pytest.mark.parametrize("levels", [2, 5, 0])
def test_tau_b_equals_scipys_to_the_bit(n, levels):
    rng = np.random.default_rng(n * 10 + levels)
    for _ in range(20):
        # few levels: many ties in either sample; 0: continuous values
        x = rng.integers(0, levels, n).astype(float) / 7 if levels else rng.random(n)
        y = np.round(x + rng.normal(0, 0.3, n), 1)
        ours, theirs = kendall_tau_b(x, y), kendalltau(x, y).statistic if n > 1 else np.nan
        assert (np.isnan(ours) and np.isnan(theirs)) or ours == theirs


def test_tau_b_is_nan_when_a_sample_is_constant_or_holds_a_nan():
    assert np.isnan(kendall_tau_b(np.array([0.3, 0.3, 0.3]), np.array([0.1, 0.2, 0.3])))
    assert np.isnan(kendall_tau_b(np.array([0.1, np.nan, 0.3]), np.array([0.1, 0.2, 0.3])))


@pytest.mark.parametrize("limit", [500, 0])  # pairs counted, or scipy's tau above the limit
def test_per_run_metrics_equal_a_groupby_over_runs(limit, monkeypatch):
    from tailoredbench import metrics

    monkeypatch.setattr(metrics, "PAIRWISE_LIMIT", limit)
    rng = np.random.default_rng(0)
    n = 3000
    results = pd.DataFrame(
        {
            "method": rng.choice(["random", "tailoredbench", "gp_irt"], n),
            "budget": rng.choice([30, 10, 20], n),
            "run": rng.integers(0, 25, n),
            "true": np.round(rng.random(n), 2),
            "estimate": np.round(rng.random(n), 1),
        }
    )
    results.loc[results["run"] == 3, "estimate"] = 0.5  # an undefined tau counts as 0
    expected = []
    for (method, budget, run), group in results.groupby(["method", "budget", "run"], sort=True):
        tau = kendalltau(group["true"], group["estimate"]).statistic
        mae = float(np.mean(np.abs(group["estimate"].to_numpy() - group["true"].to_numpy())))
        expected.append((method, budget, run, mae, 0.0 if np.isnan(tau) else tau))
    got = per_run_metrics(results)
    assert list(got.columns) == ["method", "budget", "run", "mae", "kendall_tau"]
    assert list(got.itertuples(index=False, name=None)) == expected
    assert (got.loc[got["run"] == 3, "kendall_tau"] == 0.0).all()


def test_a_nan_estimate_is_not_skipped():
    results = pd.DataFrame(
        {
            "method": "m",
            "budget": 10,
            "run": [0, 0, 0, 1, 1],
            "true": [0.5, 0.6, 0.7, 0.5, 0.6],
            "estimate": [0.5, np.nan, 0.7, 0.4, 0.6],
        }
    )
    got = per_run_metrics(results)
    assert np.isnan(got["mae"].iloc[0]) and got["mae"].iloc[1] == pytest.approx(0.05)
