"""Adaptive IRT testing (Fluid Benchmarking, ATLAS): the method fluid."""

import json

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import expit, log_expit

from conftest import synthetic_matrix
from tailoredbench import rng, studies
from tailoredbench.cli import main
from tailoredbench.errors import TailoredBenchError
from tailoredbench.methods import MethodSpec, Oracle, fluid, irt, parse_methods
from tailoredbench.methods.fluid import Fluid
from tailoredbench.methods.irt import IRTModel
from tailoredbench.sequential import ATLAS, atlas_pseudo_targets, precision_table, simulate_rounds, stop, stop_atlas
from tailoredbench.stopping import AbilityRule
from tailoredbench.tailored import g_set

# SYNTHETIC: a hand-made 2PL model and targets drawn from it
GEN = np.random.default_rng(7)
MODEL = IRTModel(GEN.uniform(0.3, 2.5, (40, 1)), GEN.normal(0, 1.5, 40), np.zeros((1, 1)))
TARGETS = (GEN.random((6, 40)) < expit(GEN.normal(size=(6, 1)) @ MODEL.a.T - MODEL.b)).astype(float)


def _run(budgets, key=(0, 0), targets=TARGETS, model=MODEL):
    oracles = {b: Oracle(targets, b) for b in budgets}
    found = Fluid().run({"model": model}, None, [oracles], [key])[0][""]
    return found, oracles


def _map(items, answers):
    """The MAP ability under a standard normal prior, by a scalar search."""
    a, b = MODEL.a[items, 0], MODEL.b[items]

    def minus_log_posterior(theta):
        z = a * theta - b
        return -(answers * log_expit(z) + (1 - answers) * log_expit(-z)).sum() + theta**2 / 2

    return minimize_scalar(minus_log_posterior, bounds=(-8, 8), method="bounded", options={"xatol": 1e-10}).x


def test_each_item_is_the_most_informative_at_the_map_ability():
    _, oracles = _run([12])
    tests = fluid.adaptive_tests(MODEL, Oracle(TARGETS, 12), 12)
    for t in range(len(TARGETS)):
        items = tests.items[t]
        assert set(items) == set(oracles[12].revealed(t)[0])
        theta = 0.0  # the first item: at the prior's centre
        for k, item in enumerate(items):
            info = (
                MODEL.a[:, 0] ** 2
                * expit(MODEL.a[:, 0] * theta - MODEL.b)
                * (1 - expit(MODEL.a[:, 0] * theta - MODEL.b))
            )
            info[items[:k]] = -np.inf
            assert item == np.argmax(info)
            theta = _map(items[: k + 1], TARGETS[t, items[: k + 1]])
            assert tests.theta[t, k] == pytest.approx(theta, abs=1e-6)


def test_a_smaller_budget_asks_a_prefix_of_a_larger_ones_items():
    _, oracles = _run([5, 10, 20])
    tests = fluid.adaptive_tests(MODEL, Oracle(TARGETS, 20), 20)
    for t in range(len(TARGETS)):
        for budget in (5, 10, 20):
            assert set(oracles[budget].revealed(t)[0]) == set(tests.items[t, :budget])
    assert Fluid.options["grow"] is False  # accepted for the precision mode, a prefix either way


def test_deterministic_whatever_the_run_and_ties_to_the_lower_index():
    first, _ = _run([10], key=(0, 0))
    second, _ = _run([10], key=(3, 9))
    np.testing.assert_array_equal(first[10], second[10])
    twins = IRTModel(np.ones((4, 1)), np.array([1.0, 0.5, 0.5, 2.0]), np.zeros((1, 1)))
    assert fluid.next_items(twins, [], [], k=3).tolist() == [1, 2, 0]
    tests = fluid.adaptive_tests(twins, Oracle(np.ones((1, 4)), 2), 2)
    assert tests.items[0, 0] == 1


def test_the_estimate_is_answers_plus_predicted_probabilities_and_exact_with_every_item():
    found, _ = _run([10, 40])
    np.testing.assert_array_equal(found[40], TARGETS.mean(axis=1))
    tests = fluid.adaptive_tests(MODEL, Oracle(TARGETS, 10), 10)
    for t in range(len(TARGETS)):
        items = tests.items[t]
        p = MODEL.probabilities(np.array([[tests.theta[t, -1]]]))[0]
        unasked = np.setdiff1d(np.arange(40), items)
        expected = (TARGETS[t, items].sum() + p[unasked].sum()) / 40
        assert found[10][t] == pytest.approx(expected)
        assert fluid.estimate(MODEL, items, TARGETS[t, items]) == pytest.approx(expected)


def test_next_items_continue_the_test_and_the_ability_has_atlas_standard_error():
    tests = fluid.adaptive_tests(MODEL, Oracle(TARGETS, 8), 8)
    items, answers = tests.items[0], tests.answers[0]
    for k in range(1, 8):
        assert fluid.next_items(MODEL, answers[:k], items[:k])[0] == items[k]
    top = fluid.next_items(MODEL, answers[:4], items[:4], k=3)
    assert top[0] == items[4] and not set(top) & set(items[:4])
    theta, se = fluid.ability(MODEL, items, answers)
    p = expit(MODEL.a[items, 0] * theta - MODEL.b[items])
    assert se == pytest.approx(1 / np.sqrt(1 + (MODEL.a[items, 0] ** 2 * p * (1 - p)).sum()))
    assert se == pytest.approx(tests.se[0, -1]) and (np.diff(tests.se[0]) < 0).all()


@pytest.mark.parametrize(
    "args, message",
    [
        (([1, 0], [3]), "2 answers for 1 items"),
        (([1], [99]), "distinct indices"),
        (([0.5], [3]), "0 or 1"),
        (([1], [2.9]), "integer indices"),
        (([1], ["2"]), "integer indices"),
    ],
)
def test_bad_answers_are_one_line_errors(args, message):
    with pytest.raises(TailoredBenchError, match=message):
        fluid.next_items(MODEL, *args)
    with pytest.raises(TailoredBenchError, match="left unasked"):
        fluid.next_items(MODEL, [], [], k=41)


def test_fractional_items_are_refused_not_truncated():
    for call in (fluid.ability, fluid.estimate):
        with pytest.raises(TailoredBenchError, match="integer indices"):
            call(MODEL, [1.7], [1])
    assert fluid.ability(MODEL, [1.0], [1]) == fluid.ability(MODEL, [1], [1])


def test_a_test_stays_within_the_items_and_its_own_length():
    with pytest.raises(TailoredBenchError, match="exceeds the item count 40"):
        fluid.adaptive_tests(MODEL, Oracle(TARGETS), 41)
    tests = fluid.adaptive_tests(MODEL, Oracle(TARGETS), 5)
    for budget in (0, 6):
        with pytest.raises(TailoredBenchError, match="budget"):
            tests.estimates(MODEL, budget)


def test_empty_brackets_are_no_second_label_of_the_method():
    with pytest.raises(TailoredBenchError, match="name a variant"):
        MethodSpec.parse("fluid[]")
    with pytest.raises(TailoredBenchError, match="name a variant"):
        parse_methods(["fluid", "fluid[]"])


def test_the_unidimensional_fit_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("TAILOREDBENCH_CACHE", str(tmp_path))
    source = synthetic_matrix(30, 50, 3)
    first = Fluid().prepare(source, [10])["model"]
    assert first.a.shape == (50, 1) and len(list(tmp_path.glob("irt/*.npz"))) == 1
    np.testing.assert_array_equal(irt.fitted(source, 1).a, first.a)
    np.testing.assert_array_equal(irt.fit_irt(source, 1).b, first.b)


def test_cli_fluid_with_intervals(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TAILOREDBENCH_CACHE", str(tmp_path))
    matrix = tmp_path / "m.npy"
    np.save(matrix, synthetic_matrix(60, 120, 5))  # SYNTHETIC
    args = ["simulate", "--matrix", str(matrix), "--method", "fluid", "--budget", "15", "30", "--runs", "2", "--json"]
    assert main(args) == 0
    records = json.loads(capsys.readouterr().out)
    assert [r["budget"] for r in records] == [15, 30]
    for r in records:
        assert r["method"] == "fluid" and r["mae_se"] == 0 and 0 < r["mae"] < 0.1
        assert 0.5 <= r["coverage"] <= 1 and r["interval_width"] > 0 and r["seconds_per_run"] > 0


# SYNTHETIC: the precision mode on a small pair of matrices
PAIR = (synthetic_matrix(80, 150, seed=4)[::2], synthetic_matrix(80, 150, seed=4)[1::2])


@pytest.fixture(scope="module")
def fluid_rounds(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TAILOREDBENCH_CACHE", str(tmp_path_factory.mktemp("cache")))
        rounds = simulate_rounds(PAIR, ["fluid"], max_budget=40, step=5, g_size=5, runs=2)
        yield rounds, stop_atlas(rounds, *PAIR, 0.08)


def test_the_precision_mode_runs_fluid_and_atlas_rule_beside_it(fluid_rounds):
    rounds, atlas = fluid_rounds
    conformal = stop(rounds, 0.08)
    for summary in (conformal.summary, atlas.summary):
        for key in ("mae", "coverage", "items_mean", "items_p90", "precision_met", "fixed_budget"):
            assert key in summary.columns
    assert list(atlas.summary["method"]) == [ATLAS]
    fixed = [conformal.summary["fixed_budget"].iloc[0], atlas.summary["fixed_budget"].iloc[0]]
    assert np.array_equal(fixed[:1], fixed[1:], equal_nan=True)  # the same probe's fixed budget
    rule = atlas.rules[ATLAS]
    # each target stops at its first round whose ability's standard error is at most the threshold
    tests = fluid.adaptive_tests(Fluid().prepare(PAIR[0], [40])["model"], Oracle(PAIR[1], 40), 40)
    se = tests.se[:, np.asarray(rule.budgets) - 1]
    first = atlas.results[atlas.results["run"] == 0]
    expected = np.where(
        (se <= rule.threshold).any(axis=1), (se <= rule.threshold).argmax(axis=1), len(rule.budgets) - 1
    )
    np.testing.assert_array_equal(first["items"], np.asarray(rule.budgets)[expected])
    assert (first["halfwidth"] == rule.halfwidth).all()
    np.testing.assert_allclose(first["interval_high"], np.clip(first["estimate"] + rule.halfwidth, 0, 1))


def test_atlas_pseudo_targets_are_those_of_fluids_intervals(fluid_rounds):
    rounds, atlas = fluid_rounds
    errors, se = atlas_pseudo_targets(rounds, PAIR[0])
    for r, budget in enumerate(rounds.settings["budgets"]):
        np.testing.assert_allclose(errors[:, r], rounds.calibration["fluid"][budget].errors, atol=1e-12)
    rule = atlas.rules[ATLAS]
    at = rule.stopping_rounds(se)
    covered = (errors[np.arange(len(at)), at] <= rule.halfwidth).mean()
    assert covered >= 0.9 and rule.halfwidth <= 0.08


def test_the_ability_rule_takes_the_largest_threshold_every_smaller_one_of_which_passes():
    budgets = (10, 20, 30)
    se = np.tile([0.5, 0.3, 0.1], (20, 1))
    errors = np.tile([0.2, 0.05, 0.01], (20, 1))
    rule = AbilityRule.calibrate(budgets, errors, se, 0.06)
    assert rule.threshold == pytest.approx(0.495) and rule.halfwidth == 0.05  # at 0.5 all stop at 10 items: 0.2
    assert AbilityRule.calibrate(budgets, errors, se, 0.001).threshold == 0.005  # none passes: the smallest
    given = AbilityRule.calibrate(budgets, errors, se, 0.06, threshold=0.2)
    assert given.threshold == 0.2 and given.halfwidth == 0.01
    np.testing.assert_array_equal(given.stopping_rounds(se), np.full(20, 2))
    with pytest.raises(TailoredBenchError, match="positive number"):
        AbilityRule.calibrate(budgets, errors, se, 0.06, threshold=-1)


def test_cli_precision_reports_fluid_and_the_atlas_rule(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TAILOREDBENCH_CACHE", str(tmp_path))
    matrix = tmp_path / "m.npy"
    np.save(matrix, synthetic_matrix(60, 120, 5))  # SYNTHETIC
    args = ["simulate", "--matrix", str(matrix), "--method", "fluid", "--precision", "0.08", "--max-budget", "40"]
    assert main([*args, "--runs", "2", "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert [r["method"] for r in records] == ["fluid", ATLAS]
    for r in records:
        for key in ("mae", "coverage", "items_mean", "items_p90", "precision_met", "fixed_budget"):
            assert key in r
        assert 15 <= r["items_mean"] <= 40
    assert 0 < records[1]["se_threshold"] <= 1


def test_the_precision_table_puts_atlas_rule_beside_fluid(fluid_rounds):
    rounds, atlas = fluid_rounds
    table = precision_table({"pair": rounds}, [0.08], matrices={"pair": PAIR})
    assert list(table["method"]) == ["fluid", ATLAS]
    row = table.set_index("method").loc[ATLAS]
    assert (
        row["items_mean"] == atlas.summary["items_mean"].iloc[0]
        and row["coverage"] == atlas.summary["coverage"].iloc[0]
    )
    assert list(precision_table({"pair": rounds}, [0.08])["method"]) == ["fluid"]
    # each target's mean items over runs is one observation, as in the report's items table
    per_target = atlas.results.groupby("target")["items"].mean()
    assert row["items_se"] == pytest.approx(per_target.std(ddof=1) / np.sqrt(len(per_target)))
    items = studies.items_by_precision({"pair": rounds}, [0.08]).set_index("method")
    assert table.set_index("method").loc["fluid", "items_se"] == pytest.approx(items.loc["fluid", "items_se"])


def test_a_test_starts_from_given_items_then_asks_rounds_of_the_most_informative():
    start = [3, 7, 11]
    tests = fluid.adaptive_tests(MODEL, Oracle(TARGETS, 20), 20, start=start, round_size=4)
    assert (tests.items[:, :3] == start).all()
    for t in range(len(TARGETS)):
        items, answers = tests.items[t], tests.answers[t]
        for end, k in ((3, 4), (7, 4), (11, 4), (15, 4), (19, 1)):  # the last round cut to the budget
            expected = fluid.next_items(MODEL, answers[:end], items[:end], k)
            np.testing.assert_array_equal(items[end : end + k], expected)
            # the ability after a round, from all its answers, at each of the round's items
            assert tests.theta[t, end + k - 1] == pytest.approx(
                fluid.ability(MODEL, items[: end + k], answers[: end + k])[0]
            )
            assert (tests.theta[t, end : end + k] == tests.theta[t, end + k - 1]).all()


def test_replay_is_the_same_test_from_one_models_answers_so_far():
    tests = fluid.adaptive_tests(MODEL, Oracle(TARGETS, 20), 20, start=[3, 7, 11], round_size=4)
    for t in range(len(TARGETS)):
        known = dict(enumerate(TARGETS[t]))
        alone, pending = fluid.replay(MODEL, known, 20, start=[3, 7, 11], round_size=4)
        for field in ("items", "answers", "theta", "se"):  # exactly: the same code, whatever the others tested
            np.testing.assert_array_equal(getattr(alone, field)[0], getattr(tests, field)[t])
        assert len(pending) == 0
        # answers through the second round only: the test stops there, with the third round to ask
        asked = tests.items[t, :11]
        partial, pending = fluid.replay(MODEL, {i: known[i] for i in asked}, 20, start=[3, 7, 11], round_size=4)
        np.testing.assert_array_equal(partial.items[0], asked)
        np.testing.assert_array_equal(pending, tests.items[t, 11:15])
    with pytest.raises(TailoredBenchError, match="repeat"):
        fluid.replay(MODEL, {}, 20, start=[3, 3])


def test_a_targets_test_does_not_depend_on_the_targets_tested_with_it():
    together = fluid.adaptive_tests(MODEL, Oracle(TARGETS, 15), 15)
    for t in range(len(TARGETS)):
        alone = fluid.adaptive_tests(MODEL, Oracle(TARGETS[t : t + 1], 15), 15)
        np.testing.assert_array_equal(alone.theta[0], together.theta[t])
        np.testing.assert_array_equal(alone.items[0], together.items[t])


def test_the_method_starts_at_each_runs_g_set_and_asks_rounds(tmp_path, monkeypatch):
    monkeypatch.setenv("TAILOREDBENCH_CACHE", str(tmp_path))
    source, targets = PAIR
    spec = MethodSpec.parse("fluid", {"g_set_size": 6, "round_size": 3})
    prepared = spec.method.prepare(source, [9, 12, 13], **spec.options)
    oracles = {b: Oracle(targets, b) for b in (9, 12, 13)}
    found = spec.method.run(prepared, source, [oracles], [(2, 5)], **spec.options)[0][""]
    g_items = g_set(source, 6, random_state=rng.stream((2, 5), rng.G_SET))
    tests = fluid.adaptive_tests(prepared["model"], Oracle(targets, 13), 13, start=g_items, round_size=3)
    for budget in (9, 12, 13):
        np.testing.assert_array_equal(found[budget], tests.estimates(prepared["model"], budget))
        assert set(oracles[budget].revealed(0)[0]) == set(tests.items[0, :budget])
    with pytest.raises(TailoredBenchError, match="budget 10 is not the end of a round of 3 after 6 items"):
        spec.method.run(prepared, source, [{b: Oracle(targets, b) for b in (10, 13)}], [(2, 5)], **spec.options)
    with pytest.raises(TailoredBenchError, match="round_size"):
        MethodSpec.parse("fluid", {"round_size": 0})
