"""A suite of benchmarks planned at once: alignment, the joint plan against the faithful per-benchmark one."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from tailoredbench.datasets.benchmarks import Benchmark
from tailoredbench.datasets.matrix import ResponseMatrix
from tailoredbench.datasets.suites import SuiteWarning, load_suite
from tailoredbench.errors import TailoredBenchError
from tailoredbench.simulate import simulate
from tailoredbench.suite import SUITE_MEAN, simulate_suite, simulate_suite_precision


def synthetic_suite(n_models=60, n_items=40, n_benchmarks=3, seed=1):
    """SYNTHETIC: benchmarks whose accuracies share one ability per model."""
    rng = np.random.default_rng(seed)
    ability = rng.random(n_models)
    return [
        ResponseMatrix(
            (rng.random((n_models, n_items)) < ability[:, None]).astype(float),
            models=[f"m{i}" for i in range(n_models)],
        )
        for _ in range(n_benchmarks)
    ]


def test_independent_mode_is_the_per_benchmark_method_to_the_bit():
    parts = synthetic_suite()
    methods = ["tailoredbench", "tailored_plus", "random_regression"]
    sim = simulate_suite(parts, methods, modes=["independent"], budget=10, runs=2, g_size=4)
    suite = load_suite(parts)
    for name, source, target in zip(suite.benchmarks, suite.source, suite.target, strict=True):
        alone = simulate(Benchmark(name, source, target), methods, [10], runs=2, g_size=4).results
        for method in methods:
            ours = sim.results.query("method == @method and benchmark == @name")["estimate"].to_numpy()
            np.testing.assert_allclose(ours, alone[alone["method"] == method]["estimate"].to_numpy(), atol=1e-12)


def test_joint_mode_shares_native_sources_and_reports_every_benchmark_and_the_suite_mean():
    parts = synthetic_suite()
    sim = simulate_suite(
        parts, ["tailoredbench", "tailored_plus", "random", "random_regression"], budget=10, runs=2, g_size=4
    )
    assert set(map(tuple, sim.summary[["mode", "method"]].values)) == {
        ("joint", "tailoredbench"),
        ("joint", "tailored_plus"),
        ("joint", "random_regression"),
        ("independent", "tailoredbench"),
        ("independent", "tailored_plus"),
        ("independent", "random_regression"),
        ("independent", "random"),
    }
    assert set(sim.results["benchmark"]) == {"benchmark_0", "benchmark_1", "benchmark_2", SUITE_MEAN}
    r = sim.results
    assert ((r["interval_low"] <= r["estimate"]) & (r["estimate"] <= r["interval_high"])).all()
    assert r["estimate"].between(0, 1).all()
    # the suite mean is the mean of the benchmarks' estimates, target by target
    one = r[(r["run"] == 0) & (r["mode"] == "joint") & (r["method"] == "tailoredbench")]
    means = one[one["benchmark"] != SUITE_MEAN].groupby("target", sort=False)["estimate"].mean()
    np.testing.assert_allclose(one[one["benchmark"] == SUITE_MEAN].set_index("target")["estimate"][means.index], means)
    row = sim.summary.iloc[0]
    assert len(row["mae_by_benchmark"]) == 3 and row["mae"] == pytest.approx(np.mean(row["mae_by_benchmark"]))
    assert row["items"] == 30 and 0 <= row["coverage"] <= 1 and 0 <= row["suite_coverage"] <= 1
    assert sim.weights["joint"].shape == (3, 4)


def test_same_numbers_for_any_number_of_workers():
    parts = synthetic_suite(n_models=40, n_items=30)
    one = simulate_suite(parts, ["tailoredbench", "tailored_plus"], budget=8, runs=3, g_size=3, n_jobs=1)
    two = simulate_suite(parts, ["tailoredbench", "tailored_plus"], budget=8, runs=3, g_size=3, n_jobs=2)
    pd.testing.assert_frame_equal(one.results, two.results)


def test_models_missing_from_a_benchmark_are_dropped_with_a_warning_that_counts_them():
    a, b = synthetic_suite(n_benchmarks=2)
    b = b.take_models(range(50))
    with pytest.warns(SuiteWarning, match="10 models are missing"):
        suite = load_suite([a, b])
    assert suite.source[0].n_models + suite.target[0].n_models == 50
    assert all(s.models == suite.source[0].models for s in suite.source)


def test_npy_files_align_by_row_order_and_refuse_other_row_counts(tmp_path):
    a, b = synthetic_suite(n_benchmarks=2)
    np.save(tmp_path / "a.npy", a.values)
    np.save(tmp_path / "b.npy", b.values[:50])
    with pytest.raises(TailoredBenchError, match="aligned by row order, but the row counts differ: a 60, b 50"):
        load_suite([tmp_path / "a.npy", tmp_path / "b.npy"])
    np.save(tmp_path / "b.npy", b.values)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        suite = load_suite([tmp_path / "a.npy", tmp_path / "b.npy"])
    assert suite.benchmarks == ("a", "b")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"budget": 4}, "must exceed the G-set size 4"),
        ({"budget": 41}, "exceeds the item count 40"),
        ({"budget": 10, "total_budget": 30}, "not both"),
        ({"methods": ["anchor_points"]}, "unknown suite method 'anchor_points'"),
        ({"modes": ["together"]}, "unknown suite mode"),
    ],
)
def test_bad_settings_are_one_line_errors(kwargs, message):
    settings = {"budget": 10, "g_size": 4, "runs": 1, **kwargs}
    with pytest.raises(TailoredBenchError, match=message):
        simulate_suite(synthetic_suite(), **settings)


def test_a_total_budget_goes_where_the_sources_say_it_cuts_the_error_most():
    parts = synthetic_suite(n_benchmarks=2)
    # SYNTHETIC: the second benchmark almost every model gets right, so its accuracy is read from few items
    easy = (np.random.default_rng(3).random(parts[1].shape) < 0.97).astype(float)
    parts[1] = ResponseMatrix(easy[:, :20], models=parts[1].models)
    sim = simulate_suite(parts, ["random"], total_budget=30, runs=1)
    first, second = sim.settings["budgets"]
    assert first + second == 30 and first > second >= 1
    tailored = simulate_suite(parts, ["tailoredbench"], total_budget=30, runs=1, g_size=4)
    assert min(tailored.settings["budgets"]) >= 5


def test_unknown_suite_names_the_registered_ones():
    with pytest.raises(TailoredBenchError, match="unknown suite 'tiny'; choose one of open_llm_tiny"):
        load_suite("tiny")


@pytest.mark.slow
def test_open_llm_tiny_holds_the_five_benchmarks_of_the_models_common_to_all():
    suite = load_suite("open_llm_tiny")
    assert suite.benchmarks == ("arc", "gsm8k", "hellaswag", "truthfulqa", "winogrande")
    assert suite.n_items == (99, 100, 97, 97, 100)
    assert suite.source[0].n_models + suite.target[0].n_models == 1989
    assert suite.provenance["files"][0]["sha256"]


def _csv(matrix: ResponseMatrix, path):
    pd.DataFrame(matrix.values, index=list(matrix.models), columns=[f"q{i}" for i in range(matrix.n_items)]).to_csv(
        path
    )
    return str(path)


def test_simulate_suite_from_the_command_line_prints_one_record_per_method_and_mode(tmp_path, capsys):
    from tailoredbench.cli import main

    a, b = synthetic_suite(n_benchmarks=2)
    files = [_csv(a, tmp_path / "arc.csv"), _csv(b.take_models(range(55)), tmp_path / "gsm.csv")]
    args = ["simulate", "--suite", *files, "--budget", "8", "--g-size", "3", "--runs", "2", "--json"]
    assert main([*args, "--method", "tailoredbench", "random_regression", "--suite-mode", "both"]) == 0
    out, err = capsys.readouterr()
    assert (
        err.strip()
        == "tailoredbench: note: 5 models are missing from some benchmark of the suite and were dropped; 55 remain"
    )
    records = json.loads(out)
    assert [(r["mode"], r["method"]) for r in records] == [
        ("joint", "tailoredbench"),
        ("joint", "random_regression"),
        ("independent", "tailoredbench"),
        ("independent", "random_regression"),
    ]
    first = records[0]
    assert first["benchmarks"] == ["arc", "gsm"] and first["items"] == 16 and first["budgets"] == [8, 8]
    assert first["mae"] == pytest.approx(np.mean(first["mae_by_benchmark"]))
    assert {"suite_mae", "coverage", "suite_coverage", "n_source", "n_target", "runs"} <= set(first)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--precision", "0.05", "--budget", "8"], "give --precision or a budget, not both"),
        (["--precision-of", "mean"], "--precision-of applies with --precision only"),
        (
            ["--precision", "0.05", "--method", "random"],
            "the suite's precision mode runs tailoredbench and tailored_plus",
        ),
        (["--budget", "8", "9"], "--budget is one number"),
        (["--suite-mode", "apart"], "invalid choice"),
    ],
)
def test_simulate_suite_refuses_what_does_not_apply_in_one_line(tmp_path, capsys, extra, message):
    from tailoredbench.cli import main

    a, b = synthetic_suite(n_benchmarks=2)
    files = [_csv(a, tmp_path / "a.csv"), _csv(b, tmp_path / "b.csv")]
    assert main(["simulate", "--suite", *files, "--runs", "1", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "Traceback" not in err


def test_total_budget_and_suite_mode_need_a_suite(capsys):
    from tailoredbench.cli import main

    assert main(["simulate", "--benchmark", "gsm8k", "--total-budget", "40"]) == 2
    assert capsys.readouterr().err.strip() == "tailoredbench: error: --total-budget applies with --suite only"


def test_suite_names_a_registered_suite_alone_or_two_files(capsys):
    from tailoredbench.cli import main

    assert main(["simulate", "--suite", "only.csv"]) == 2
    assert capsys.readouterr().err.strip().endswith("a suite needs two or more matrix files, got one: only.csv")
    assert main(["simulate", "--suite", "open_llm_tiny", "more.csv"]) == 2
    assert "registered suite (open_llm_tiny) alone" in capsys.readouterr().err
    parts = synthetic_suite(n_benchmarks=2)
    parts[1] = ResponseMatrix(parts[1].values[:, :2], models=parts[1].models)
    with pytest.raises(TailoredBenchError, match=r"a total budget of 9 must lie between 10 \(5 per benchmark\) and"):
        simulate_suite(parts, ["tailoredbench"], total_budget=9, runs=1, g_size=4)


def test_the_precision_mode_stops_each_target_when_every_interval_or_the_means_is_narrow_enough():
    parts = synthetic_suite(n_models=50, n_items=30)
    every = simulate_suite_precision(
        parts, 0.12, ["tailoredbench", "tailored_plus"], max_budget=22, round_size=4, runs=2, g_size=3
    )
    mean = simulate_suite_precision(
        parts, 0.12, ["tailoredbench"], of="mean", max_budget=22, round_size=4, runs=2, g_size=3
    )
    assert every.settings["rounds"] == [7, 11, 15, 19, 22]
    r = every.results
    assert ((r["interval_low"] <= r["estimate"]) & (r["estimate"] <= r["interval_high"])).all()
    # a target that met the precision did so on every benchmark; on the mean, the mean's interval alone
    for found, watched in ((every, r["benchmark"] != SUITE_MEAN), (mean, mean.results["benchmark"] == SUITE_MEAN)):
        rows = found.results[found.results["met"] & watched]
        assert (rows["interval_high"] - rows["estimate"] <= 0.12 + 1e-12).all()
    row = every.summary.set_index("method").loc["tailored_plus"]
    assert 7 * 3 <= row["items_mean"] <= 22 * 3 and 0 <= row["precision_met"] <= 1 and row["factor"] > 0
    assert mean.summary["items_mean"].iloc[0] <= every.summary.set_index("method").loc["tailoredbench", "items_mean"]


def test_simulate_suite_precision_from_the_command_line(tmp_path, capsys):
    from tailoredbench.cli import main

    a, b = synthetic_suite(n_benchmarks=2, n_models=40, n_items=30)
    files = [_csv(a, tmp_path / "a.csv"), _csv(b, tmp_path / "b.csv")]
    args = ["simulate", "--suite", *files, "--precision", "0.1", "--max-budget", "20", "--round-size", "5"]
    assert main([*args, "--g-size", "3", "--runs", "1", "--method", "tailored_plus", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["of"] == "every" and record["rounds"] == [8, 13, 18, 20] and record["mode"] == "joint"
    assert {"items_mean", "items_p90", "precision_met", "mae", "suite_mae", "coverage", "factor"} <= set(record)


def test_a_suite_of_fewer_than_twenty_models_calibrates_on_fewer_folds_instead_of_crashing():
    parts = synthetic_suite(n_models=12, n_items=20, n_benchmarks=2)  # 6 sources: fewer than the 10 interval folds
    sim = simulate_suite(parts, ["tailoredbench", "tailored_plus"], budget=6, runs=1, g_size=3)
    found = simulate_suite_precision(parts, 0.1, ["tailored_plus"], max_budget=12, round_size=3, runs=1, g_size=3)
    for r in (sim.results, found.results):
        assert r["estimate"].notna().all() and r["estimate"].between(0, 1).all()
        assert ((r["interval_low"] <= r["estimate"]) & (r["estimate"] <= r["interval_high"])).all()


def test_max_models_subsamples_a_suite_of_matrices_and_is_refused_for_a_loaded_one():
    parts = synthetic_suite(n_models=40, n_items=20, n_benchmarks=2)
    sim = simulate_suite(parts, ["random"], budget=6, runs=1, max_models=10)
    assert sim.suite["n_source"] + sim.suite["n_target"] == 10 and sim.suite["max_models"] == 10
    with pytest.raises(TailoredBenchError, match="max_models applies to a suite loaded here"):
        simulate_suite(load_suite(parts), ["random"], budget=6, runs=1, max_models=10)


def test_benchmarks_sharing_no_model_id_are_refused_by_name(tmp_path):
    a, b = synthetic_suite(n_benchmarks=2)
    np.save(tmp_path / "b.npy", b.values)  # its rows are model_0, model_1, ...; the CSV's m0, m1, ...
    with pytest.raises(TailoredBenchError, match="share no model id"):
        load_suite([_csv(a, tmp_path / "a.csv"), tmp_path / "b.npy"])


def test_a_benchmark_whose_every_item_is_asked_gets_its_exact_accuracy_as_the_per_benchmark_method_does():
    parts = synthetic_suite(n_models=40, n_items=30, n_benchmarks=2)
    parts[1] = ResponseMatrix(parts[1].values[:, :10], models=parts[1].models)  # SYNTHETIC: 10 items, all asked
    methods = ["tailoredbench", "tailored_plus", "random_regression"]
    sim = simulate_suite(parts, methods, budget=10, runs=2, g_size=3)
    whole = sim.results[sim.results["benchmark"] == "benchmark_1"]
    np.testing.assert_allclose(whole["estimate"], whole["true"], atol=1e-12)
    assert (whole["interval_low"] == whole["estimate"]).all() and (whole["interval_high"] == whole["estimate"]).all()
    suite = load_suite(parts)
    alone = simulate(Benchmark("b", suite.source[1], suite.target[1]), methods, [10], runs=2, g_size=3).results
    for method in methods:
        ours = sim.results.query("mode == 'independent' and method == @method and benchmark == 'benchmark_1'")
        np.testing.assert_allclose(ours["estimate"], alone[alone["method"] == method]["estimate"], atol=1e-12)
    found = simulate_suite_precision(parts, 0.001, ["tailored_plus"], max_budget=10, round_size=4, runs=1, g_size=3)
    last = found.results[(found.results["items"] == 20) & (found.results["benchmark"] == "benchmark_1")]
    assert len(last) and np.allclose(last["estimate"], last["true"])
    assert (last["interval_high"] == last["estimate"]).all()


def test_stacked_estimates_that_rounding_would_push_past_one_stay_in_their_intervals(monkeypatch):
    from tailoredbench import suite

    sources = (np.ones((6, 8)), np.ones((6, 8)))
    setup = suite._Setup(sources, (4, 4), 2, "manhattan", ("tailored_plus",))
    parts = np.ones((2, 3, 4))  # benchmarks x targets x components, every one 1.0

    monkeypatch.setattr(suite, "_tailored", lambda *args, **kwargs: (None, np.zeros((2, 3)), parts))
    # weights of sum 1 whose products with 1.0 add up to 1.0000000000000002
    weights = np.array([[0.2840601112017852, 0.26952329475317766, 0.2852637172771054, 0.16115287676793189]] * 2)
    estimate = suite._run(setup, [np.ones((3, 8))] * 2, (0, 0), "joint", weights)["tailored_plus"]["estimate"]
    assert estimate.max() == 1.0
