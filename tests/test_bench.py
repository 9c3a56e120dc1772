"""``make bench``'s measurement of one scaling point, on a small synthetic matrix (its figures are not asserted)."""

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("sample", [0, 60])
def test_one_point_times_the_g_set_and_the_targets(bench, sample):
    point = bench.one_point(40, 400, sample)
    assert point["targets_timed"] == 20  # every target of 40 models split in halves
    assert point["g_set_seconds"] > 0 and point["seconds_per_target"] > 0 and point["peak_gb"] > 0
    assert 0 <= point["mae"] < 1


def test_a_difference_below_zero_is_not_measured_rather_than_a_time(bench, monkeypatch):
    # The run of 20 targets timed faster than that of 2 (the G-set inside each varies): no time.
    clock = iter([0.0, 10.0, 10.0, 20.0, 20.0, 25.0, 25.0, 30.0, 31.0, 32.0])  # 2 targets twice, 20 twice, the G-set
    monkeypatch.setattr(bench, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    point = bench.one_point(40, 400, 0)
    assert point["seconds_per_target"] is None and point["seconds_per_target_without_g_set"] is None
    assert bench._seconds(point, 15).strip() == "not measured"
    assert bench._seconds({"seconds_per_target": 0.0123}, 15) == "          0.012"


def test_more_targets_timed_sampled_and_the_mae_of_the_exact_columns_targets(bench, monkeypatch):
    # Sampled beyond 15000 items, 30 targets are timed, 6 exact; the MAE columns stay those of the same 6.
    from tailoredbench.datasets.benchmarks import Benchmark
    from tailoredbench.datasets.synthetic import synthetic_2pl
    from tailoredbench.simulate import simulate

    assert bench._targets(50000, 750) == 30 and bench._targets(50000) == 6 and bench._targets(14042, 750) == 20
    monkeypatch.setattr(bench, "_targets", lambda items, sample=0: 10 if sample else 4)
    point = bench.one_point(40, 400, 60)
    full = synthetic_2pl(40, 400)
    four = Benchmark(full.name, full.source, full.target.take_models(range(4)), full.provenance)
    expected = simulate(four, budgets=[30], runs=1, method_options={"sample": 60}).summary["mae"].iloc[0]
    assert point["targets_timed"] == 10 and point["mae"] == expected


def test_a_gsm8k_run_is_timed_in_a_fresh_process_as_the_pinned_comparison_does(bench):
    import subprocess
    import sys

    command = [sys.executable, str(BENCH), "--gsm8k-run", "1"]
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=300)
    assert float(done.stdout.strip().splitlines()[-1]) > 0
