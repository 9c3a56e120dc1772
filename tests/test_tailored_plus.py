"""TailoredBench+: same probe as TailoredBench, its own estimate, no peeking at targets."""

import numpy as np
import pytest

from conftest import synthetic_matrix
from tailoredbench import TailoredBench, tailored
from tailoredbench import rng as streams
from tailoredbench.errors import TailoredBenchError
from tailoredbench.intervals import interval
from tailoredbench.methods import MethodSpec, Oracle, tailored_plus
from tailoredbench.simulate import simulate

PLUS = tailored_plus.TailoredPlus()


@pytest.fixture(scope="module")
def matrices():
    data = synthetic_matrix(60, 150, seed=3)  # SYNTHETIC
    return data[::2], data[1::2]


def test_calibrated_variant_is_the_faithful_method(matrices):
    sim = simulate(matrices, ["tailoredbench", "tailored_plus[calibrated]"], [15, 25], runs=2, g_size=5)
    est = sim.results.pivot_table(index=["run", "budget", "target"], columns="method", values="estimate")
    assert np.array_equal(est["tailoredbench"].values, est["tailored_plus[calibrated]"].values)


def test_variants_from_one_pass_equal_variants_run_alone(matrices):
    names = ["tailored_plus[mix]", "tailored_plus[local_mix]"]
    together = simulate(matrices, names, [20], runs=2, g_size=5).results
    alone = simulate(matrices, names[:1], [20], runs=2, g_size=5).results
    assert np.array_equal(together[together["method"] == names[0]]["estimate"].values, alone["estimate"].values)


@pytest.mark.parametrize("variant", [v for v in tailored_plus.VARIANTS if v != "calibrated"])
def test_never_reads_target_results_it_was_not_given(matrices, variant):
    source, target = matrices
    prepared = PLUS.prepare(source, [20], variants=[variant], g_size=5)
    oracle = Oracle(target, budget=20)
    first = PLUS.run(prepared, source, [{20: oracle}], [(0, 0)], variants=[variant], g_size=5)[0][variant][20]
    asked = oracle._asked.copy()
    assert (asked.sum(axis=1) == 20).all()
    # flip every result the method did not ask for: the estimates must not move
    changed = np.where(asked, target, 1.0 - target)
    again = PLUS.run(prepared, source, [{20: Oracle(changed, budget=20)}], [(0, 0)], variants=[variant], g_size=5)
    assert np.array_equal(first, again[0][variant][20])


def test_stacking_weights_come_from_sources_only(matrices):
    source, _ = matrices
    weights = tailored_plus.stack_weights(source, [20], g_size=5)
    assert weights.shape == (len(tailored_plus.COMPONENTS),)
    assert weights.min() >= 0 and weights.sum() == pytest.approx(1)
    assert np.array_equal(PLUS.prepare(source, [20], g_size=5)["weights"], weights)
    assert [MethodSpec.parse(f"tailored_plus[{v}]").variant for v in tailored_plus.VARIANTS] == list(
        tailored_plus.VARIANTS
    )


def test_simplex_weights_against_brute_force(rng):
    estimates = rng.random((30, 2))
    truth = 0.3 * estimates[:, 0] + 0.7 * estimates[:, 1]
    assert tailored_plus.simplex_weights(estimates, truth).tolist() == pytest.approx([0.3, 0.7])
    grid = [(a / 20, 1 - a / 20) for a in range(21)]
    brute = min(grid, key=lambda w: np.abs(estimates @ np.array(w) - truth + 0.01).mean())
    assert tailored_plus.simplex_weights(estimates, truth - 0.01).tolist() == pytest.approx(list(brute))


def test_weighted_ridge_matches_weighted_least_squares(rng):
    X = rng.normal(size=(12, 3))
    y = X @ [1.0, -2.0, 0.5] + rng.normal(scale=0.1, size=12)
    w = rng.random(12) + 0.1
    coef, intercept = tailored.weighted_ridge(X, y, w, alpha=0.0)
    design = np.column_stack([np.ones(12), X]) * np.sqrt(w)[:, None]
    brute = np.linalg.lstsq(design, y * np.sqrt(w), rcond=None)[0]
    assert np.allclose([intercept, *coef], brute)


def test_every_component_of_a_source_like_target_is_close(matrices):
    source, _ = matrices
    probe = tailored.n_set(source, np.arange(len(source)), np.array([0, 1, 2]), 25, random_state=0)
    truth = source[4].mean()
    parts = tailored.components(source, source.mean(axis=1), source.mean(axis=0), probe, source[4, probe.items])
    for value in parts.values():
        assert abs(value - truth) < 0.1


def test_unknown_variant_and_missing_weights_are_errors(matrices):
    source, target = matrices
    with pytest.raises(TailoredBenchError, match="no variant"):
        simulate(matrices, ["tailored_plus[best]"], [20], runs=1, g_size=5)
    prepared = PLUS.prepare(source, [20], variants=["mix"], g_size=5)
    with pytest.raises(TailoredBenchError, match="weights"):
        PLUS.run(prepared, source, [{20: Oracle(target, 20)}], [(0, 0)], variants=["stacked"], g_size=5)
    with pytest.raises(TailoredBenchError, match=r"no option 'n_nativ'.*g_size"):
        simulate(matrices, ["tailored_plus"], [20], runs=1, g_size=5, method_options={"n_nativ": 3})


def test_stateful_plus_estimator(matrices):
    source, target = matrices
    tb = TailoredBench(g_size=5, estimator="plus").fit(source)
    probe = tb.plan(target[0, tb.g_set_], budget=20)
    value = tb.estimate(probe, target[0, probe.items])
    low, high = tb.interval(probe, target[0, probe.items], 0.9)
    assert 0 <= low <= value <= high <= 1
    with pytest.raises(TailoredBenchError, match="estimator"):
        TailoredBench(estimator="best").fit(source)


def test_a_refit_forgets_the_old_sources(matrices):
    # stacking weights and interval scales are fitted on the sources: refitting on others must refit them
    source, target = matrices
    other = 1 - source

    def answer(tb):
        probe = tb.plan(target[0, tb.g_set_], budget=20)
        return tb.estimate(probe, target[0, probe.items]), tb.interval(probe, target[0, probe.items], 0.9)

    refitted = TailoredBench(g_size=5, estimator="plus").fit(source)
    answer(refitted)
    assert answer(refitted.fit(other)) == answer(TailoredBench(g_size=5, estimator="plus").fit(other))


def test_two_sources_get_equal_stacking_weights(matrices):
    source, _ = matrices
    n = len(tailored_plus.COMPONENTS)
    assert tailored_plus.stack_weights(source[:2], [20], g_size=5).tolist() == pytest.approx([1 / n] * n)


def test_a_simulation_fits_the_stacking_weights_with_its_own_seed(matrices):
    source, target = matrices
    for seed in (0, 1):
        prepared = PLUS.prepare(source, [20], g_size=5, seed=seed)
        assert np.array_equal(prepared["weights"], tailored_plus.stack_weights(source, [20], g_size=5, seed=seed))
    prepared = PLUS.prepare(source, [20], g_size=5, seed=1)
    by_hand = PLUS.run(prepared, source, [{20: Oracle(target, 20)}], [(1, 0)], g_size=5)[0]["stacked"]
    simulated = simulate(matrices, ["tailored_plus"], [20], runs=1, g_size=5, seed=1).results["estimate"].values
    assert np.array_equal(simulated, by_hand[20])


def test_stacking_folds_that_keep_the_same_sources_are_prepared_once(monkeypatch):
    # Four sources in five folds is leave-one-out, repeated: each set of three is kept twice.
    source = synthetic_matrix(4, 60, seed=5)  # SYNTHETIC
    weights = tailored_plus.stack_weights(source, [10], g_size=4, seed=2)
    calls = []
    prepare = tailored_plus.TailoredPlus.prepare
    monkeypatch.setattr(tailored_plus.TailoredPlus, "prepare", lambda *a, **k: calls.append(1) or prepare(*a, **k))
    assert np.array_equal(tailored_plus.stack_weights(source, [10], g_size=4, seed=2), weights)
    assert len(calls) == 4
    folds = streams.model_folds(4, 4, tailored_plus.STACK_REPEATS, 2, splits=streams.STACKING_FOLDS)
    alone = [
        tailored_plus._stack_folds(
            source[kept], [(source[held_out], (2, streams.STACK_RUN + index))], [10], 2, None,
            g_size=4, distance="manhattan", grow=False,
        )[0]
        for index, kept, held_out in folds
    ]  # fmt: skip
    columns, truth = np.vstack([c for c, _ in alone]), np.concatenate([t for _, t in alone])
    assert np.array_equal(tailored_plus.simplex_weights(columns, truth), weights)


def test_each_variant_computes_only_the_estimates_it_reads(matrices):
    source, target = matrices
    probe = tailored.n_set(source, np.arange(len(source)), np.array([0, 1, 2]), 25, random_state=0)
    args = (source, source.mean(axis=1), source.mean(axis=0), probe, target[0, probe.items])
    every = tailored.components(*args)
    assert tuple(every) == tailored.ESTIMATES
    weights = np.array([0.4, 0.3, 0.2, 0.1])
    for variant in tailored_plus.VARIANTS:
        names = tailored.needed([variant])
        parts = tailored.components(*args, names)
        assert set(parts) == set(names)
        assert tailored.combine(parts, variant, weights) == tailored.combine(every, variant, weights)
    assert set(tailored.needed(["stacked"])) == set(tailored_plus.COMPONENTS)
    assert tailored.needed(["mix", "neighbours"]) == ("calibrated", "regression", "neighbours")


def test_run_refuses_an_option_it_does_not_know():
    source, target = synthetic_matrix(12, 40, seed=0), synthetic_matrix(3, 40, seed=1)
    method = tailored_plus.TailoredPlus()
    prepared = method.prepare(source, [15], variants=("calibrated",))
    with pytest.raises(TypeError, match="n_native"):
        method.run(prepared, source, [{15: Oracle(target, budget=15)}], [(0, 0)], variants=("calibrated",), n_native=2)


def test_an_estimate_that_rounding_would_push_past_one_stays_in_its_interval():
    # the weights sum to 1 but their products with 1.0 add up to 1.0000000000000002
    parts = dict.fromkeys(tailored.COMPONENTS, 1.0)
    estimate = tailored.combine(parts, "stacked", [0.05, 0.55, 0.3, 0.1])
    low, high = interval(estimate, 0.05)
    assert estimate == 1.0 and low <= estimate <= high
    assert tailored.combine(dict.fromkeys(tailored.COMPONENTS, 0.0), "stacked", [0.05, 0.55, 0.3, 0.1]) == 0.0
