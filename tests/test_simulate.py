"""The simulation runner: determinism across workers and backends."""

import numpy as np
import pytest

from conftest import synthetic_matrix
from tailoredbench import simulate


def test_same_numbers_on_a_dask_cluster_as_locally():
    distributed = pytest.importorskip("distributed")
    data = synthetic_matrix(40, 90, 7)
    bench = (data[::2], data[1::2])
    methods = ["tailoredbench", "random", "anchor_points"]
    local = simulate(bench, methods=methods, budgets=[12, 18], runs=3, g_size=5, n_jobs=1)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        with distributed.Client(cluster):
            remote = simulate(bench, methods=methods, budgets=[12, 18], runs=3, g_size=5, n_jobs=2, backend="dask")
    assert np.array_equal(local.results["estimate"].to_numpy(), remote.results["estimate"].to_numpy())


def test_tidy_results_and_summary_shape():
    data = synthetic_matrix(30, 60, 8)
    sim = simulate((data[::2], data[1::2]), methods=["tailoredbench", "random"], budgets=[10, 14], runs=2, g_size=4)
    assert list(sim.results.columns) == ["run", "budget", "method", "target", "true", "estimate"]
    assert len(sim.results) == 2 * 2 * 2 * 15
    assert len(sim.summary) == 4 and (sim.summary["runs"] == 2).all()


def test_same_numbers_whatever_the_number_of_worker_processes():
    data = synthetic_matrix(40, 90, 9)  # SYNTHETIC
    bench = (data[::2], data[1::2])
    methods = ["tailoredbench", "tailored_plus[mix]", "random_regression"]
    one = simulate(bench, methods=methods, budgets=[12, 18], runs=3, g_size=5, n_jobs=1)
    two = simulate(bench, methods=methods, budgets=[12, 18], runs=3, g_size=5, n_jobs=2)
    assert np.array_equal(one.results["estimate"].to_numpy(), two.results["estimate"].to_numpy())
