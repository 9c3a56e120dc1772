"""Each baseline on hand-made matrices whose answer is known."""

import json
import math

import numpy as np
import pytest
from scipy.special import expit

from conftest import synthetic_matrix
from tailoredbench import rng
from tailoredbench.cli import main
from tailoredbench.methods import METHODS, Oracle, anchor_points, gp_irt, irt, random, random_regression


def test_random_is_the_mean_on_its_items():
    target = synthetic_matrix(6, 50, 1)
    oracle = Oracle(target, 10)
    estimate = random.Random().run({}, None, [{10: oracle}], [(0, 0)])[0][""][10]
    items = np.flatnonzero(oracle._asked[0])
    assert len(items) == 10 and (oracle.spent() == 10).all()
    assert np.allclose(estimate, target[:, items].mean(axis=1))


def distinct_patterns(n_models, n_groups, group_sizes, seed):
    """Items that come in groups of identical, non-constant columns."""
    rng = np.random.default_rng(seed)
    while True:
        patterns = (rng.random((n_models, n_groups)) < 0.5).astype(float)
        corr = np.corrcoef(patterns.T)
        if patterns.std(axis=0).min() > 0 and np.abs(corr[np.triu_indices(n_groups, 1)]).max() < 0.99:
            break
    columns = np.repeat(np.arange(n_groups), group_sizes)
    return patterns[:, columns]


def test_anchor_points_with_one_cluster_per_pattern_is_exact():
    sizes = [7, 3, 12, 1, 5]
    data = distinct_patterns(30, 5, sizes, seed=2)
    source, target = data[:20], data[20:]
    method = anchor_points.AnchorPoints()
    prepared = method.prepare(source, [5])
    for run in range(5):
        estimate = method.run(prepared, source, [{5: Oracle(target, 5)}], [(run, 0)])[0][""][5]
        assert np.allclose(estimate, target.mean(axis=1))


def test_anchor_points_weights_sum_to_one():
    corr = anchor_points.item_correlation(synthetic_matrix(20, 40, 3))
    weights = anchor_points.anchor_weights(corr, np.array([0, 5, 9]), synthetic_matrix(20, 40, 3))
    assert np.isclose(weights.sum(), 1.0)


def test_ridge_matches_scikit_learn():
    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(0)
    X, y = rng.random((40, 8)), rng.random(40)
    coef, intercept = random_regression.ridge(X, y, 10.0)
    reference = Ridge(alpha=10.0).fit(X, y)
    assert np.allclose(coef, reference.coef_) and np.isclose(intercept, reference.intercept_)


def test_random_regression_uses_the_same_items_as_random():
    data = synthetic_matrix(40, 60, 4)
    source, target = data[:20], data[20:]
    a, b = Oracle(target, 15), Oracle(target, 15)
    random.Random().run({}, source, [{15: a}], [(1, 2)])
    method = random_regression.RandomRegression()
    estimate = method.run(method.prepare(source, [15]), source, [{15: b}], [(1, 2)])[0][""][15]
    assert (a._asked == b._asked).all()
    # the ridge fit from the sources' results on those items to their accuracy, applied to the targets
    items = np.flatnonzero(b._asked[0])
    coef, intercept = random_regression.ridge(source[:, items], source.mean(axis=1))
    assert np.allclose(estimate, np.clip(target[:, items] @ coef + intercept, 0, 1))


def test_irt_recovers_known_item_parameters():
    rng = np.random.default_rng(1)
    n_models, n_items, dim = 600, 40, 2
    theta = rng.normal(size=(n_models, dim))
    a = np.abs(rng.normal(1.0, 0.3, size=(n_items, dim)))
    b = rng.normal(size=n_items)
    truth = expit(theta @ a.T - b)
    Y = (rng.random(truth.shape) < truth).astype(float)
    model = irt.fit_irt(Y, dim)
    fitted = expit(model.theta @ model.a.T - model.b)
    assert np.mean(np.abs(fitted - truth)) < 0.08
    assert np.corrcoef(model.b, b)[0, 1] > 0.95
    # abilities of new models from a subset of items, by the batched Newton fit
    items = np.arange(0, 40, 2)
    abilities = irt.fit_abilities(Y[:50, items], model.a[items], model.b[items])
    assert abilities.shape == (50, dim) and np.isfinite(abilities).all()


def test_the_irt_loss_terms_are_the_c_librarys_in_one_pass():
    # The fit's trajectory follows these terms' every bit, so they are compared with the C
    # library's exp and log1p exactly (Python's math calls them). numpy's float64 exp and log1p
    # are the same functions only on x86-64 without AVX-512; with it numpy has its own, which
    # differ from them in the last bits of some 5% of these elements: measured on a Zen 4.
    rng = np.random.default_rng(3)
    exp, log1p = np.vectorize(math.exp), np.vectorize(math.log1p)
    for n_models, n_items in [(54, 1319), (7, 33), (1, 1)]:
        R = rng.normal(0.0, 4.0, size=(n_models, n_items))
        b = rng.normal(0.0, 2.0, size=n_items)
        Y = (rng.random((n_models, n_items)) < 0.5).astype(float)
        R[0, 0] = b[0]  # Z = 0 exactly: the sigmoid's branch at its edge
        Z = R - b
        e = exp(-np.abs(Z))
        softplus, observed = np.empty_like(R), np.empty_like(R)
        residual = R.copy()
        irt._logistic_terms(residual, b, Y, softplus, observed)
        np.testing.assert_array_equal(softplus, np.maximum(Z, 0.0) + log1p(e))
        np.testing.assert_array_equal(observed, Y * Z)
        np.testing.assert_array_equal(residual, np.where(Z >= 0, 1.0, e) / (1.0 + e) - Y)


def test_gp_irt_prepare_is_cached_and_lambda_follows_the_formula(tmp_path, monkeypatch):
    monkeypatch.setenv("TAILOREDBENCH_CACHE", str(tmp_path))
    source = synthetic_matrix(40, 80, 5)
    first = gp_irt.prepare(source, [10, 20])
    assert list(tmp_path.glob("irt/*.npz"))
    second = gp_irt.prepare(source, [10, 20])
    assert np.array_equal(first["model"].a, second["model"].a)
    assert first["meta"]["dim"] in gp_irt.DIMENSIONS
    bias, v = first["bias"][20], first["variance"]
    assert np.isclose(gp_irt.weight(first, 20), bias**2 / (bias**2 + v / 80))
    oracle = Oracle(synthetic_matrix(10, 80, 6), 20)
    estimate = gp_irt.GpIrt().run(first, source, [{20: oracle}], [(0, 0)])[0][""][20]
    assert (oracle.spent() == 20).all()
    # gp-IRT is lambda x the anchor-weighted mean + (1 - lambda) x p-IRT, on the anchors it asked
    items, weights = gp_irt.anchors(first["model"], 20, rng.stream((0, 0), rng.GP_IRT_ANCHORS, 20))
    assert set(items.tolist()) == set(np.flatnonzero(oracle._asked[0]).tolist())
    parts = gp_irt.estimates(first["model"], items, weights, oracle.ask(items), 0.0, first["ability_prior"])
    lam = gp_irt.weight(first, 20)
    assert np.allclose(estimate, lam * parts["anchor"] + (1 - lam) * parts["p_irt"])


@pytest.mark.parametrize("method", list(METHODS))
def test_every_method_runs_through_the_cli_deterministically(method, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("TAILOREDBENCH_CACHE", str(tmp_path))
    args = [
        "simulate",
        "--benchmark",
        "gsm8k",
        "--method",
        method,
        "--budget",
        "20",
        "--runs",
        "2",
        "--json",
        "--no-interval",
    ]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert main(args) == 0
    second = json.loads(capsys.readouterr().out)
    assert first["method"] == method and first["mae"] == second["mae"]
    assert 0 < first["mae"] < 0.15


def test_ability_by_maximum_likelihood_is_unshrunk_and_finite():
    rng = np.random.default_rng(4)
    a, b = np.ones((200, 1)), rng.normal(size=200)
    theta = np.array([[-2.0], [0.0], [2.5]])
    Y = (rng.random((3, 200)) < expit(theta @ a.T - b)).astype(float)
    ml = irt.fit_abilities(Y, a, b, precision=0.0)
    assert np.allclose(ml, theta, atol=0.45)  # 200 items: within about two standard errors
    shrunk = irt.fit_abilities(Y, a, b, precision=50.0)
    assert (np.abs(shrunk) < np.abs(ml)).all()  # a strong prior pulls towards 0
    extreme = irt.fit_abilities(np.array([[1.0] * 5, [0.0] * 5]), a[:5], b[:5], precision=0.0)
    assert np.isfinite(extreme).all() and extreme[0, 0] > 3 > -3 > extreme[1, 0]


def test_gp_irt_chooses_the_ability_prior_on_held_out_sources(tmp_path, monkeypatch):
    monkeypatch.setenv("TAILOREDBENCH_CACHE", str(tmp_path))
    prepared = gp_irt.prepare(synthetic_matrix(60, 80, 8), [10, 20])
    errors = prepared["meta"]["validation_mae"]
    assert len(errors) == len(gp_irt.DIMENSIONS) * len(gp_irt.ABILITY_PRIORS)
    chosen = f"{prepared['meta']['dim']}, {prepared['ability_prior']}"
    assert np.mean(list(errors[chosen].values())) == min(np.mean(list(e.values())) for e in errors.values())


def test_anchor_points_on_items_all_sources_answer_alike():
    # SYNTHETIC: 70% of the items are solved (or failed) by every source, as on POPE
    rng = np.random.default_rng(3)
    varied = synthetic_matrix(24, 60, 11)
    solved, failed = np.ones((24, 120)), np.zeros((24, 20))
    data = np.hstack([varied, solved, failed])
    source, target = data[:12], data[12:]
    target[:, 60:200] = rng.random((12, 140)) < np.r_[np.full(120, 0.95), np.full(20, 0.05)]
    method = anchor_points.AnchorPoints()
    prepared = method.prepare(source, [15])
    corr = prepared["corr"]
    assert (corr[60:180, 60:180] == 1).all() and (corr[60:180, 180:] == 0).all() and (corr[180:, 180:] == 1).all()
    errors = [
        np.abs(
            method.run(prepared, source, [{15: Oracle(target, 15)}], [(run, 0)])[0][""][15] - target.mean(axis=1)
        ).mean()
        for run in range(10)
    ]
    assert np.mean(errors) < 0.1  # 0.058; 0.31 when every constant item joined the first medoid


def test_gp_irt_on_too_few_sources_is_a_one_line_error():
    from tailoredbench.errors import TailoredBenchError
    from tailoredbench.simulate import simulate

    rng = np.random.default_rng(4)
    matrix = (rng.random((6, 40)) < rng.random(6)[:, None]).astype(float)  # SYNTHETIC: 3 sources, 3 targets
    with pytest.raises(TailoredBenchError, match="gp_irt needs at least 4 source models"):
        simulate((matrix[::2], matrix[1::2]), ["gp_irt"], [10], runs=1, interval=0.9)
