"""The precision-targeted sequential mode: a growing probe, a stopping rule calibrated on sources."""

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from conftest import check_clean, image_cells, synthetic_matrix
from tailoredbench import TailoredBench
from tailoredbench.batch import reproduce
from tailoredbench.cli import main
from tailoredbench.errors import TailoredBenchError
from tailoredbench.intervals import PseudoTargets
from tailoredbench.methods import MethodSpec, Oracle
from tailoredbench.sequential import simulate_rounds, stop
from tailoredbench.stopping import StoppingRule, round_budgets, stopping_round

DATA = synthetic_matrix(80, 150, seed=4)  # SYNTHETIC
PAIR = (DATA[::2], DATA[1::2])
ROUNDS = dict(max_budget=30, step=5, g_size=5, runs=3)


@pytest.fixture(scope="module")
def rounds():
    return simulate_rounds(PAIR, ["tailoredbench", "tailored_plus"], **ROUNDS)


def test_round_budgets_and_bad_settings():
    assert round_budgets(10, 5, 30) == (15, 20, 25, 30)
    assert round_budgets(10, 7, 30) == (17, 24, 30)
    for args, message in [((10, 0, 30), "at least 1"), ((10, 5, 10), "must exceed"), ((10, 5, 2.5), "integer")]:
        with pytest.raises(TailoredBenchError, match=message):
            round_budgets(*args)


def test_each_round_holds_every_item_of_the_one_before():
    source, target = PAIR
    spec = MethodSpec.parse("tailoredbench", {"g_size": 5, "grow": True})
    budgets = [10, 15, 20]
    oracles = {b: Oracle(target, b) for b in budgets}
    spec.method.run(spec.method.prepare(source, budgets, **spec.options), source, [oracles], [(0, 0)], **spec.options)
    for t in range(target.shape[0]):
        asked = [set(oracles[b].revealed(t)[0]) for b in budgets]
        assert [len(a) for a in asked] == budgets
        assert asked[0] < asked[1] < asked[2]


def test_stopping_round():
    halfwidths = np.array([[0.2, 0.1, 0.05], [0.3, 0.2, 0.2], [0.01, 0.5, 0.5]])
    assert stopping_round(halfwidths, 0.1).tolist() == [1, 2, 0]


def test_rule_covers_its_pseudo_targets_at_their_stopping_round(rng):
    """The factor is the smallest on the grid whose intervals, read where the rule stops, cover the level."""
    n, budgets = 200, (15, 20, 25, 30)
    difficulty = {b: rng.uniform(0.05, 0.2, n) * 20 / b for b in budgets}
    pseudo = {
        b: PseudoTargets(np.abs(rng.normal(0, difficulty[b])), np.full(n, 0.5), np.zeros(n), np.full(n, b))
        for b in budgets
    }
    rule = StoppingRule.calibrate(pseudo, precision=0.08, level=0.9)
    assert rule.budgets == budgets and rule.precision == 0.08
    scales = np.column_stack([pseudo[b].difficulty for b in budgets])
    errors = np.column_stack([pseudo[b].errors for b in budgets])

    def coverage(factor):
        halfwidths = factor * np.asarray(rule.q) * scales
        at = stopping_round(halfwidths, 0.08)
        return (errors[np.arange(n), at] <= halfwidths[np.arange(n), at]).sum()

    rank = int(np.ceil((n + 1) * 0.9))
    assert coverage(rule.factor) >= rank
    assert all(coverage(f) < rank for f in np.arange(1, round(rule.factor * 100)) / 100)
    with pytest.raises(TailoredBenchError, match="between 0 and 1"):
        StoppingRule.calibrate(pseudo, precision=1.5)
    with pytest.raises(TailoredBenchError, match="not a round"):
        rule.halfwidth(17, 0.1)


def test_a_last_round_of_every_item_calibrates_without_a_warning(rng):
    """Every pseudo-target exact at the last round (no error, no scale) is no warning, and the factor is found."""
    n, budgets = 50, (10, 20, 30)
    pseudo = {
        b: PseudoTargets(np.abs(rng.normal(0, 0.05, n)) * (b < 30), np.full(n, 0.5), np.zeros(n), np.full(n, b))
        for b in budgets
    }
    rule = StoppingRule.calibrate(pseudo, precision=0.05)
    assert rule.q[-1] == 0 and 0 < rule.factor <= 100


def test_stop_reads_each_target_at_its_first_precise_round(rounds):
    out = stop(rounds, 0.1)
    res = out.results
    assert len(res) == 2 * 3 * PAIR[1].shape[0]
    assert set(res["items"]) <= set(rounds.settings["budgets"])
    assert (res["precision_met"] == (res["halfwidth"] <= 0.1)).all()
    # a target that did not meet the precision used the maximum
    assert (res.loc[~res["precision_met"], "items"] == 30).all()
    # the estimate and half-width are those of the stopping round
    grid = rounds.results.set_index(["method", "run", "target", "budget"])
    rule = out.rules["tailoredbench"]
    for row in res[res["method"] == "tailoredbench"].head(20).itertuples():
        at = grid.loc[("tailoredbench", row.run, row.target, row.items)]
        assert row.estimate == at["estimate"]
        assert row.halfwidth == pytest.approx(rule.halfwidth(row.items, at["difficulty"]))
        earlier = [b for b in rule.budgets if b < row.items]
        for b in earlier:  # no earlier round met the precision
            assert rule.halfwidth(b, grid.loc[("tailoredbench", row.run, row.target, b), "difficulty"]) > 0.1
    summary = out.summary.set_index("method")
    for column in ("mae", "coverage", "items_mean", "items_p90", "precision_met", "fixed_budget", "kendall_tau"):
        assert column in summary
    assert summary.loc["tailoredbench", "items_mean"] == pytest.approx(
        res[res["method"] == "tailoredbench"]["items"].mean()
    )
    # a looser precision never needs more items
    loose = stop(rounds, 0.2).summary.set_index("method")
    assert (loose["items_mean"] <= summary["items_mean"]).all()


def test_the_same_numbers_whatever_the_workers():
    one = simulate_rounds(PAIR, max_budget=25, step=5, g_size=5, runs=2, n_jobs=1)
    two = simulate_rounds(PAIR, max_budget=25, step=5, g_size=5, runs=2, n_jobs=2)
    pd.testing.assert_frame_equal(stop(one, 0.1).results, stop(two, 0.1).results)


def test_only_methods_with_a_growing_probe():
    with pytest.raises(TailoredBenchError, match="no growing probe"):
        simulate_rounds(PAIR, ["random"], **ROUNDS)


def test_the_estimator_replays_the_rule_and_the_rounds(rounds):
    """Real use gets the simulation's rule (same seed) and a probe that only grows."""
    source, target = PAIR
    tb = TailoredBench(g_size=5, random_state=0).fit(source)
    rule = tb.stopping_rule(0.1, max_budget=30, step=5)
    assert rule == stop(rounds, 0.1).rules["tailoredbench"]
    model = target[3]
    probes = tb.rounds(model[tb.g_set_], rule.budgets)
    assert [p.budget for p in probes] == [10, 15, 20, 25, 30]
    for smaller, larger in itertools.pairwise(probes):
        assert np.array_equal(larger.items[: smaller.budget], smaller.items)
    assert np.array_equal(probes[0].items, tb.plan(model[tb.g_set_], 10).items)
    low, high = tb.interval(probes[-1], model[probes[-1].items], rule=rule)
    assert low <= tb.estimate(probes[-1], model[probes[-1].items], rule=rule) <= high
    precise = [tb.precise(p, model[p.items], rule) for p in probes]
    assert isinstance(precise[0], bool)
    plus = TailoredBench(g_size=5, random_state=0, estimator="plus").fit(source)
    plus_rule = plus.stopping_rule(0.1, max_budget=30, step=5)
    assert plus_rule == stop(rounds, 0.1).rules["tailored_plus"]


def test_cli_simulate_precision(tmp_path, capsys):
    tidy = tmp_path / "tidy.csv"
    args = ["simulate", "--benchmark", "pope", "--precision", "0.1", "--max-budget", "30", "--runs", "2"]
    assert main([*args, "--json", "--tidy", str(tidy)]) == 0
    record = json.loads(capsys.readouterr().out)
    for key in ("mae", "coverage", "items_mean", "items_p90", "precision_met", "fixed_budget", "kendall_tau"):
        assert key in record
    assert record["precision"] == 0.1 and record["max_budget"] == 30 and record["round_size"] == 5
    table = pd.read_csv(tidy)
    assert {"items", "precision_met", "interval_low", "interval_high"} <= set(table.columns)
    assert table["items"].between(15, 30).all() and len(table) == 2 * 5
    assert main(args) == 0
    assert "precision ±0.1" in capsys.readouterr().out


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--precision", "0.1", "--budget", "30"], "not both"),
        (["--precision", "0.1", "--no-interval"], "--no-interval"),
        (["--precision", "1.5"], "between 0 and 1"),
        (["--precision", "abc"], "not a number"),
        (["--precision", "0.1", "--method", "random"], "no growing probe"),
        (["--precision", "0.1", "--max-budget", "10"], "must exceed the G-set size"),
        (["--precision", "0.1", "--max-budget", "99999"], "exceeds the item count"),
        (["--precision", "0.1", "--round-size", "0"], "at least 1"),
    ],
)
def test_cli_precision_bad_input_is_one_line_exit_2(extra, message, capsys):
    assert main(["simulate", "--benchmark", "pope", "--runs", "1", *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.splitlines()) == 1


@pytest.mark.notebook
def test_sequential_precision_notebook_smoke(tmp_path):
    """Papermill with small parameters, then the recorded metrics, within their ranges."""
    params = {
        "benchmarks": ["pope", "gsm8k"],
        "precisions": [0.08, 0.2],
        "max_budget": 30,
        "runs": 2,
        "methods": ["tailoredbench", "tailored_plus"],
    }
    reproduce(["sequential_precision"], parameters=params, output_dir=tmp_path, log=lambda _: None)
    out = tmp_path / "sequential_precision"
    metrics = json.loads((out / "metrics.json").read_text())
    rows = metrics["tables"]["by_precision"]
    methods = ("tailored_plus", "tailoredbench")  # the summary's order
    expected = [(b, p, m) for b in ("pope", "gsm8k") for p in (0.08, 0.2) for m in methods]
    assert [(r["benchmark"], r["precision"], r["method"]) for r in rows] == expected
    for row in rows:
        assert 15 <= row["items_mean"] <= row["max_budget"] == 30
        assert 0 <= row["precision_met"] <= 1 and 0 <= row["coverage"] <= 1 and 0 <= row["mae"] <= 0.5
    by = {(r["benchmark"], r["precision"], r["method"]): r for r in rows}
    for m in methods:  # looser is never dearer
        assert by["gsm8k", 0.2, m]["items_mean"] <= by["gsm8k", 0.08, m]["items_mean"]
    assert len(metrics["findings"]) == 3 and all(len(line) <= 300 for line in metrics["findings"])
    fewest = metrics["tables"]["fewest"]  # per benchmark and precision: which method asks fewest items
    assert [(r["benchmark"], r["precision"]) for r in fewest] == [
        (b, p) for b in ("pope", "gsm8k") for p in (0.08, 0.2)
    ]
    assert all(r["fewest"] in (*methods, "tie", "none") for r in fewest)
    assert sorted(p.name for p in (out / "figures").glob("*.png")) == ["items_by_precision.png", "one_model.png"]
    nb = check_clean(out / "sequential_precision.ipynb", tmp_path)
    assert len(image_cells(nb)) == 2


@pytest.mark.parametrize(
    "args, message",
    [
        (["simulate", "--benchmark", "pope", "--max-budget", "40"], "--max-budget applies with --precision only"),
        (["simulate", "--benchmark", "pope", "--round-size", "3"], "--round-size applies with --precision only"),
        (["plan", "--benchmark", "pope", "--out", "x", "--precision", "0.05"], "go with plan --state"),
    ],
)
def test_precision_settings_without_precision_are_refused(args, message, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.splitlines()) == 1
