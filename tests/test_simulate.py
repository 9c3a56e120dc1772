"""The simulation runner: determinism across workers and backends."""

import json
import os
import sys

import numpy as np
import pandas as pd
import pytest

from conftest import synthetic_matrix
from tailoredbench import simulate
from tailoredbench.errors import TailoredBenchError
from tailoredbench.simulate import run_chunks


def test_same_numbers_on_a_dask_cluster_as_locally():
    distributed = pytest.importorskip("distributed")
    data = synthetic_matrix(40, 90, 7)
    bench = (data[::2], data[1::2])
    methods = ["tailoredbench", "random", "anchor_points"]
    local = simulate(bench, methods=methods, budgets=[12, 18], runs=3, g_size=5, n_jobs=1)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None, death_timeout=60
    ) as cluster:
        with distributed.Client(cluster):
            remote = simulate(bench, methods=methods, budgets=[12, 18], runs=3, g_size=5, n_jobs=2, backend="dask")
    assert np.array_equal(local.results["estimate"].to_numpy(), remote.results["estimate"].to_numpy())


def test_a_multi_process_dask_cluster_by_address_from_python_and_the_command_line(tmp_path, capsys):
    distributed = pytest.importorskip("distributed")
    from tailoredbench.cli import main

    data = synthetic_matrix(40, 90, 11)  # SYNTHETIC
    path = tmp_path / "matrix.npy"
    np.save(path, data)
    args = ["simulate", "--matrix", str(path), "--budget", "12", "--runs", "3", "--g-size", "5", "--no-interval"]
    assert main([*args, "--json"]) == 0
    local = capsys.readouterr().out
    bench = (data[::2], data[1::2])
    one = simulate(bench, budgets=[12, 18], runs=3, g_size=5)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, dashboard_address=None, death_timeout=60
    ) as cluster:
        address = cluster.scheduler_address
        remote = simulate(bench, budgets=[12, 18], runs=3, g_size=5, n_jobs=2, backend="dask", scheduler=address)
        assert main([*args, "--json", "--jobs", "2", "--backend", "dask", "--scheduler", address]) == 0
    assert np.array_equal(one.results["estimate"].to_numpy(), remote.results["estimate"].to_numpy())
    timeless = [
        {k: v for k, v in json.loads(out).items() if k != "seconds_per_run"} for out in (local, capsys.readouterr().out)
    ]
    assert timeless[0] == timeless[1]


def test_a_local_dask_cluster_by_default_from_the_command_line(tmp_path, capsys):
    # --backend dask without --scheduler starts a cluster of --jobs processes on this machine; its
    # workers were refused a log level once ("Nanny failed to start", a traceback). The process's
    # environment is put back as it was when the cluster closes.
    pytest.importorskip("distributed")
    from tailoredbench.cli import main

    path = tmp_path / "matrix.npy"
    np.save(path, synthetic_matrix(40, 90, 13))  # SYNTHETIC
    args = ["simulate", "--matrix", str(path), "--budget", "12", "--runs", "2", "--g-size", "5", "--no-interval"]
    args.append("--json")
    environment = dict(os.environ)
    assert main([*args, "--jobs", "2", "--backend", "dask"]) == 0
    assert dict(os.environ) == environment
    on_dask = json.loads(capsys.readouterr().out)
    assert main(args) == 0
    here = json.loads(capsys.readouterr().out)
    assert {k: v for k, v in on_dask.items() if k != "seconds_per_run"} == {
        k: v for k, v in here.items() if k != "seconds_per_run"
    }


def test_a_scheduler_needs_the_dask_backend_and_dask_needs_a_client():
    pytest.importorskip("distributed")
    bench = (synthetic_matrix(10, 30, 1)[::2], synthetic_matrix(10, 30, 1)[1::2])
    with pytest.raises(TailoredBenchError, match="dask backend only"):
        simulate(bench, budgets=[8], runs=1, g_size=3, scheduler="tcp://127.0.0.1:8786")
    with pytest.raises(TailoredBenchError, match="no dask client"):
        simulate(bench, budgets=[8], runs=1, g_size=3, backend="dask")


def test_tidy_results_and_summary_shape():
    data = synthetic_matrix(30, 60, 8)
    sim = simulate((data[::2], data[1::2]), methods=["tailoredbench", "random"], budgets=[10, 14], runs=2, g_size=4)
    assert list(sim.results.columns) == ["run", "budget", "method", "target", "true", "estimate"]
    assert len(sim.results) == 2 * 2 * 2 * 15
    assert len(sim.summary) == 4 and (sim.summary["runs"] == 2).all()


def test_tidy_rows_follow_run_method_budget_target():
    from tailoredbench.simulate import _tidy

    models = ["m0", "m1", "m2"]
    rows = {"a": np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]]), "b": np.array([[0.7, 0.8, 0.9], [1.0, 0.0, 0.5]])}
    hardness = {"b": rows["b"] / 10}  # only "b" has a difficulty: "a"'s rows are NaN there
    outputs = [(0, rows, {}, hardness), (1, {k: v[::-1] for k, v in rows.items()}, {}, hardness)]
    table = _tidy(outputs, [10, 20], models, np.array([0.5, 0.6, 0.7]))
    assert list(table.columns) == ["run", "budget", "method", "target", "true", "estimate", "difficulty"]
    first = table.iloc[:6]
    assert first["method"].tolist() == ["a"] * 6 and first["budget"].tolist() == [10] * 3 + [20] * 3
    assert first["target"].tolist() == models * 2 and first["estimate"].tolist() == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    assert first["difficulty"].isna().all() and table.iloc[6:12]["difficulty"].tolist() == list(rows["b"].ravel() / 10)
    assert table["run"].tolist() == [0] * 12 + [1] * 12 and table["true"].tolist() == [0.5, 0.6, 0.7] * 8
    assert table["method"].dtype == table["target"].dtype == pd.Series(["x"]).dtype


def test_same_numbers_whatever_the_number_of_worker_processes():
    data = synthetic_matrix(40, 90, 9)  # SYNTHETIC
    bench = (data[::2], data[1::2])
    methods = ["tailoredbench", "tailored_plus[mix]", "random_regression"]
    one = simulate(bench, methods=methods, budgets=[12, 18], runs=3, g_size=5, n_jobs=1)
    two = simulate(bench, methods=methods, budgets=[12, 18], runs=3, g_size=5, n_jobs=2)
    assert np.array_equal(one.results["estimate"].to_numpy(), two.results["estimate"].to_numpy())


def test_the_large_matrix_option_is_explicit_and_checked():
    data = synthetic_matrix(40, 400, 12)  # SYNTHETIC
    bench = (data[::2], data[1::2])
    exact = simulate(bench, budgets=[20], runs=2, g_size=5)
    sampled = simulate(bench, budgets=[20], runs=2, g_size=5, method_options={"sample": 150})
    again = simulate(bench, budgets=[20], runs=2, g_size=5, method_options={"sample": 150}, n_jobs=2)
    assert not np.array_equal(exact.results["estimate"], sampled.results["estimate"])  # off by default
    assert np.array_equal(sampled.results["estimate"], again.results["estimate"])
    assert abs(sampled.summary["mae"].iloc[0] - exact.summary["mae"].iloc[0]) < 0.03
    with pytest.raises(TailoredBenchError, match="must exceed the largest budget 20"):
        simulate(bench, budgets=[20], runs=1, g_size=5, method_options={"sample": 20})
    with pytest.raises(TailoredBenchError, match="has no option 'sample'"):
        simulate(bench, methods=["random"], budgets=[20], runs=1, method_options={"sample": 100})


def test_runs_computed_together_give_each_run_its_numbers_alone(monkeypatch, tmp_path):
    from tailoredbench.kmedoids import binary_points
    from tailoredbench.methods import Oracle
    from tailoredbench.methods.tailoredbench import TailoredBenchMethod, probes, probes_of_runs

    data = synthetic_matrix(60, 120, 13)  # SYNTHETIC
    source, target = data[::2], data[1::2]
    method = TailoredBenchMethod()
    options = {"g_size": 5, "distance": "manhattan"}
    embedded = []  # the native-source lists whose items were embedded
    counting = lambda X, metric: embedded.append(X.tobytes()) or binary_points(X, metric)  # noqa: E731
    monkeypatch.setattr(sys.modules["tailoredbench.methods.tailoredbench"], "binary_points", counting)
    for cache in (None, tmp_path):  # the second pass reads the first's probes from the run cache
        prepared = {**method.prepare(source, [12, 18], distance="manhattan"), "run_cache": cache}
        keys = [(3, r) for r in range(4)]
        together = [{} for _ in keys]
        oracles = [{b: Oracle(target, budget=b) for b in (12, 18)} for _ in keys]
        embedded.clear()
        for i, budget, answered in probes_of_runs(prepared, source, oracles, keys, **options):
            together[i][budget, answered.target] = answered
        assert len(embedded) == len(set(embedded))  # each list once
        shared = len(embedded)
        embedded.clear()
        for i, key in enumerate(keys):
            alone = dict(
                ((budget, a.target), a)
                for budget, a in probes(
                    prepared, source, {b: Oracle(target, budget=b) for b in (12, 18)}, key, **options
                )
            )
            assert alone.keys() == together[i].keys()
            for where, a in alone.items():
                b = together[i][where]
                assert np.array_equal(a.probe.items, b.probe.items) and np.array_equal(a.probe.labels, b.probe.labels)
                assert np.array_equal(a.probe.native_sources, b.probe.native_sources)
                assert np.array_equal(a.results, b.results) and np.array_equal(a.native_mean, b.native_mean)
        assert shared < len(embedded)  # some lists came back from run to run, and were embedded once
    # and a whole simulation, one run to a task against several, intervals and TailoredBench+ included
    methods = ["tailoredbench", "tailored_plus[mix]", "tailored_plus[stacked]", "random"]
    kwargs = {"methods": methods, "budgets": [12, 18], "runs": 5, "g_size": 5, "interval": 0.9}
    several = simulate((source, target), **kwargs)
    monkeypatch.setattr(sys.modules["tailoredbench.simulate"], "RUNS_PER_TASK", 1)
    one = simulate((source, target), **kwargs)
    columns = ["estimate", "interval_low", "interval_high"]
    assert np.array_equal(several.results[columns].to_numpy(), one.results[columns].to_numpy())


def test_run_chunks_cover_every_run_once_in_order():
    for runs in (1, 2, 9, 10, 11, 100, 997):
        for workers in (1, 2, 3, 32):
            chunks = run_chunks(runs, workers)
            assert [r for chunk in chunks for r in chunk] == list(range(runs))
            assert max(map(len, chunks)) <= 10 and (workers == 1 or len(chunks) >= min(runs, workers))
