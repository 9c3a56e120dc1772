"""``make bench``'s measurement of one scaling point, on a small synthetic matrix (its figures are not asserted)."""

import importlib.util
from pathlib import Path

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
