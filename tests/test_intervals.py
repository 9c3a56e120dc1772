"""Intervals: split-conformal over source models, with coverage recorded by the simulation."""

import json

import numpy as np
import pandas as pd
import pytest

from conftest import synthetic_matrix
from tailoredbench import intervals, tailored
from tailoredbench.cli import main
from tailoredbench.errors import TailoredBenchError
from tailoredbench.methods import METHODS
from tailoredbench.simulate import simulate


def test_conformal_halfwidth_against_brute_force(rng):
    for n in (5, 19, 50):
        errors = rng.random(n)
        q = intervals.conformal_halfwidth(errors, 0.8)
        # the smallest error value whose share of errors at or below it reaches (n + 1) * level / n
        need = min(np.ceil((n + 1) * 0.8), n)
        brute = min(e for e in errors if (errors <= e).sum() >= need)
        assert q == brute


def test_bad_level_is_an_error():
    with pytest.raises(TailoredBenchError, match="between 0 and 1"):
        intervals.conformal_halfwidth(np.ones(5), 1.5)


def test_pseudo_target_errors_cover_every_source_each_repeat():
    source = synthetic_matrix(30, 80, seed=1)  # SYNTHETIC
    errors = intervals.pseudo_target_errors("tailoredbench", source, [15, 20], g_size=5, repeats=2)
    assert set(errors) == {15, 20}
    assert errors[15].shape == (60,)
    again = intervals.pseudo_target_errors("tailoredbench", source, [15, 20], g_size=5, repeats=2)
    assert np.array_equal(errors[20], again[20])


def test_too_few_sources_for_an_interval():
    with pytest.raises(TailoredBenchError, match="too few"):
        intervals.pseudo_target_errors("random", synthetic_matrix(2, 30), [5])


def test_simulation_records_intervals_and_coverage():
    data = synthetic_matrix(60, 120, seed=2)  # SYNTHETIC
    methods = list(METHODS)  # every method gets intervals
    sim = simulate((data[::2], data[1::2]), methods, [15, 25], runs=3, g_size=5, interval=0.9)
    res = sim.results
    assert (res["interval_low"] <= res["estimate"]).all() and (res["estimate"] <= res["interval_high"]).all()
    inside = (res["interval_low"] <= res["true"]) & (res["true"] <= res["interval_high"])
    by_method = inside.groupby([res["method"], res["budget"]]).mean()
    summary = sim.summary.set_index(["method", "budget"])
    assert np.allclose(summary["coverage"], by_method.reindex(summary.index))
    assert (summary["width"] > 0).all()
    assert sim.settings["interval"] == 0.9


def test_cli_json_has_coverage_and_tidy_has_intervals(tmp_path, capsys):
    tidy = tmp_path / "tidy.csv"
    args = ["simulate", "--benchmark", "pope", "--budget", "20", "--runs", "2", "--json", "--tidy", str(tidy)]
    assert main(args) == 0
    record = json.loads(capsys.readouterr().out)
    assert 0 <= record["coverage"] <= 1 and record["interval_width"] > 0 and record["interval_level"] == 0.9
    table = pd.read_csv(tidy)
    assert {"interval_low", "interval_high"} <= set(table.columns)
    assert main([*args[:-2], "--no-interval"]) == 0
    assert "coverage" not in json.loads(capsys.readouterr().out)


def test_cli_bad_level_is_one_line_exit_2(capsys):
    assert main(["simulate", "--benchmark", "pope", "--budget", "20", "--runs", "1", "--interval", "1.5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "between 0 and 1" in err


def test_stateful_interval_needs_an_estimate():
    source = synthetic_matrix(20, 60)  # SYNTHETIC
    tb = tailored.TailoredBench(g_size=5).fit(source)
    with pytest.raises(TailoredBenchError, match="estimate"):
        tb.interval()


def test_cli_variant_and_bad_variant(capsys):
    args = ["simulate", "--benchmark", "pope", "--method", "tailored_plus", "--budget", "20", "--runs", "1"]
    assert main([*args, "--variant", "mix", "--json", "--no-interval"]) == 0
    assert json.loads(capsys.readouterr().out)["method"] == "tailored_plus[mix]"
    assert main([*args, "--variant", "best"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no variant" in err
