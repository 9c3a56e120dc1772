"""Intervals: split-conformal over source models, with coverage recorded by the simulation."""

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import synthetic_matrix
from tailoredbench import intervals
from tailoredbench.cli import main
from tailoredbench.errors import TailoredBenchError
from tailoredbench.methods import METHODS, MethodSpec, Oracle
from tailoredbench.rng import model_folds
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


def test_pseudo_targets_cover_every_source_each_repeat():
    source = synthetic_matrix(30, 80, seed=1)  # SYNTHETIC
    pseudo = intervals.pseudo_targets("tailoredbench", source, [15, 20], g_size=5, repeats=2)
    assert set(pseudo) == {15, 20}
    assert pseudo[15].errors.shape == pseudo[15].difficulty.shape == (60,)
    again = intervals.pseudo_targets("tailoredbench", source, [15, 20], g_size=5, repeats=2)
    assert np.array_equal(pseudo[20].errors, again[20].errors)
    assert np.array_equal(pseudo[20].difficulty, again[20].difficulty)


def test_unlikeness_against_brute_force(rng):
    source = (rng.random((9, 30)) < 0.5).astype(float)
    items, results = np.array([3, 7, 11, 20]), np.array([1.0, 0.0, 0.0, 1.0])
    for nearest in (1, 3, 9, 20):
        shares = sorted(sum(source[m, i] != r for i, r in zip(items, results, strict=True)) / 4 for m in range(9))
        brute = sum(shares[:nearest]) / min(nearest, 9)
        assert intervals.unlikeness(source, items, results, nearest) == pytest.approx(brute)


def test_difficulty_adds_sampling_error_and_unlikeness():
    for estimate, unlike, n in [(0.5, 0.0, 20), (0.1, 0.3, 35), (1.0, 0.2, 40)]:
        brute = (estimate * (1 - estimate) / n) ** 0.5 + 1 / n + unlike + 1 / n
        assert intervals.difficulty(estimate, unlike, n) == pytest.approx(brute)
    assert intervals.difficulty(0.5, 1.0, 0) == 1.0  # nothing asked
    assert intervals.NORMALISATIONS[intervals.IN_USE] is intervals.difficulty


def test_a_twin_of_a_source_gets_the_narrowest_interval(rng):
    source = (rng.random((12, 40)) < 0.5).astype(float)
    items = np.arange(10)
    twin = intervals.unlikeness(source, items, source[0, items], nearest=1)
    stranger = intervals.unlikeness(source, items, 1 - source[0, items], nearest=1)
    assert twin == 0 and stranger > twin
    assert intervals.difficulty(0.5, twin, 10) < intervals.difficulty(0.5, stranger, 10)


def test_difficulty_uses_only_the_revealed_items():
    oracle = Oracle(np.array([[1.0, 0.0, 1.0, 0.0]]))
    oracle.ask([0, 2])
    source = np.array([[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    expected = intervals.difficulty(0.4, intervals.unlikeness(source, [0, 2], [1.0, 1.0]), 2)
    assert intervals.difficulties(source, oracle, [0.4]).tolist() == [expected]


def test_width_of_a_normalisation_against_brute_force(rng):
    n = 40
    pseudo = intervals.PseudoTargets(rng.random(n) / 10, rng.random(n), rng.random(n) / 3, np.full(n, 20))
    for name, scale_of in intervals.NORMALISATIONS.items():
        scale = scale_of(pseudo.estimates, pseudo.unlike, pseudo.n_items)
        scores = np.sort(pseudo.errors / scale)
        q = scores[int(np.ceil((n + 1) * 0.9)) - 1]  # the conformal rank
        assert pseudo.width(name, 0.9) == pytest.approx(2 * q * scale.mean())


def test_too_few_sources_for_an_interval():
    with pytest.raises(TailoredBenchError, match="too few"):
        intervals.pseudo_targets("random", synthetic_matrix(2, 30), [5])


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
    # adaptive: a target that is harder to match gets a wider interval (where clipping does not bite)
    inner = res[(res["interval_low"] > 0) & (res["interval_high"] < 1)]
    ratio = (inner["interval_high"] - inner["interval_low"]) / inner["difficulty"]
    assert np.allclose(ratio.groupby([inner["method"], inner["budget"]]).std().fillna(0), 0, atol=1e-9)
    assert inner["difficulty"].nunique() > 1


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


def test_cli_variant_and_bad_variant(capsys):
    args = ["simulate", "--benchmark", "pope", "--method", "tailored_plus", "--budget", "20", "--runs", "1"]
    assert main([*args, "--variant", "mix", "--json", "--no-interval"]) == 0
    assert json.loads(capsys.readouterr().out)["method"] == "tailored_plus[mix]"
    assert main([*args, "--variant", "best"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no variant" in err


def test_folds_that_keep_the_same_sources_are_prepared_once(monkeypatch):
    # Leave-one-out repeated three times keeps each set of 7 sources three times: 8 preparations,
    # and the same pseudo-targets as preparing every fold anew.
    source = synthetic_matrix(8, 60, seed=4)  # SYNTHETIC
    spec = MethodSpec.parse("tailoredbench", {"g_size": 4})
    impl = spec.method
    grouped = intervals.pseudo_targets_of([spec], source, [12], repeats=3)["tailoredbench"][12]
    calls = []
    prepare = impl.prepare
    monkeypatch.setattr(type(impl), "prepare", lambda *a, **k: calls.append(1) or prepare(*a[1:], **k))
    intervals.pseudo_targets_of([spec], source, [12], repeats=3)
    assert len(calls) == 8
    alone = [
        intervals._folds([spec], source[kept], [(source[held_out], index)], [12], 0, None)[0]["tailoredbench"][12]
        for index, kept, held_out in model_folds(8, 8, 3, 0)
    ]  # fmt: skip
    fields = ("errors", "estimates", "unlike", "n_items")
    for field, expected in zip(fields, map(np.concatenate, zip(*alone, strict=True)), strict=True):
        assert np.array_equal(getattr(grouped, field), expected)


def test_every_estimate_lies_in_0_1_and_inside_its_interval():
    # SYNTHETIC: targets far weaker than every source push the calibrated mean below 0
    rng = np.random.default_rng(4)
    ability = rng.random((30, 1)) * 0.6 + 0.3
    source = (rng.random((30, 60)) < ability).astype(float)
    target = (rng.random((6, 60)) < 0.03).astype(float)
    results = simulate(
        (source, target), ["tailoredbench", "tailored_plus"], [15], runs=3, g_size=5, interval=0.9
    ).results
    assert results["estimate"].between(0, 1).all()
    assert (results["interval_low"] <= results["estimate"]).all() and (
        results["estimate"] <= results["interval_high"]
    ).all()


@pytest.mark.parametrize(
    "method", ["anchor_points", pytest.param("gp_irt", marks=pytest.mark.slow), "tailored_plus[stacked]", "fluid"]
)
def test_a_target_right_on_every_item_is_estimated_at_most_1_and_inside_its_interval(method):
    # SYNTHETIC: weights that sum to 1 can add 1.0 answers up to 1.0000000000000002, above the interval's top
    rng = np.random.default_rng(7)
    source = (rng.random((30, 60)) < rng.random((30, 1)) * 0.6 + 0.3).astype(float)
    results = simulate((source, np.ones((4, 60))), [method], [9, 13, 17, 21, 25], runs=8, g_size=5, interval=0.9)
    estimate = results.results["estimate"]
    assert estimate.between(0, 1).all() and (estimate <= results.results["interval_high"]).all()


def test_a_target_asked_every_item_gets_its_exact_accuracy_as_a_point_interval():
    source = synthetic_matrix(20, 24, seed=1)  # SYNTHETIC
    target = synthetic_matrix(4, 24, seed=2)  # SYNTHETIC
    methods = ["tailoredbench", "tailored_plus", "anchor_points", "random_regression"]
    results = simulate((source, target), methods, [24], runs=1, g_size=5, interval=0.9).results
    assert np.allclose(results["estimate"], results["true"])
    assert np.allclose(results["interval_low"], results["interval_high"])


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    weak=st.floats(0.0, 0.1),
    method=st.sampled_from(["tailoredbench", "tailored_plus"]),
)
def test_property_estimates_lie_in_0_1_and_inside_their_intervals(seed, weak, method):
    # SYNTHETIC: sources of any ability, targets that may be far weaker than all of them
    rng = np.random.default_rng(seed)
    ability = rng.random((30, 1)) * 0.6 + 0.3
    source = (rng.random((30, 60)) < ability).astype(float)
    target = (rng.random((6, 60)) < weak).astype(float)
    results = simulate((source, target), [method], [15, 60], runs=2, g_size=5, seed=seed % 1000, interval=0.9).results
    assert results["estimate"].between(0, 1).all()
    assert (results["interval_low"] <= results["estimate"]).all()
    assert (results["estimate"] <= results["interval_high"]).all()
    every = results[results["budget"] == 60]  # every item asked: the exact accuracy, as a point
    assert np.allclose(every["estimate"], every["true"]) and np.allclose(every["interval_low"], every["interval_high"])
