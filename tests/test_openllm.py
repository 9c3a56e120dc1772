"""The leaderboard importer, on local files laid out like the details datasets."""

import numpy as np
import pandas as pd
import pytest

from tailoredbench.datasets.openllm import build_openllm_matrix, details_repo
from tailoredbench.errors import DataError


@pytest.fixture
def details(tmp_path):
    """Per model, <root>/<repo>/<config>/latest.json: one row per example, as the hub serves them."""
    rng = np.random.default_rng(0)
    truth = {}
    for i, model in enumerate(["org-a/model-1", "org-b/model-2", "org-b/model-3"]):
        acc = (rng.random(12) < 0.6).astype(float)
        truth[model] = acc
        rows = pd.DataFrame({"full_prompt": [f"q{j}" for j in range(12)], "example": list(range(12))})
        if i == 0:  # older files keep the metric as a column, newer ones in a dict
            rows["acc_norm"] = acc
        else:
            rows["metrics"] = [{"acc": a, "acc_norm": a} for a in acc]
        path = tmp_path / details_repo(model) / "harness_arc_challenge_25" / "latest.json"
        path.parent.mkdir(parents=True)
        rows.to_json(path, orient="records")
    calls = []

    def loader(repo, config, split):
        calls.append(repo)
        return pd.read_json(tmp_path / repo / config / f"{split}.json", orient="records")

    return truth, loader, calls


def test_builds_the_matrix_and_caches_it(details, tmp_path, monkeypatch):
    monkeypatch.setenv("TAILOREDBENCH_CACHE", str(tmp_path / "cache"))
    truth, loader, calls = details
    matrix = build_openllm_matrix(list(truth), "arc_challenge", loader=loader)
    assert matrix.models == tuple(truth) and matrix.shape == (3, 12)
    assert np.array_equal(matrix.values, np.vstack(list(truth.values())))
    build_openllm_matrix(list(truth), "arc_challenge", loader=loader)
    assert len(calls) == 3  # the second build read the cache


def test_errors_name_the_problem(details, tmp_path, monkeypatch):
    monkeypatch.setenv("TAILOREDBENCH_CACHE", str(tmp_path / "cache"))
    _, loader, _ = details
    with pytest.raises(DataError, match="no 'mc2'"):
        build_openllm_matrix(["org-b/model-2"], "x", config="harness_arc_challenge_25", metric="mc2", loader=loader)
    with pytest.raises(DataError, match="unknown task"):
        build_openllm_matrix(["org-b/model-2"], "mmlu", loader=loader)


def test_a_score_that_is_not_correctness_is_refused_before_it_is_cached(tmp_path, monkeypatch):
    """TruthfulQA's leaderboard score mc2 is a probability per question: no 0/1 matrix, and nothing cached."""
    monkeypatch.setenv("TAILOREDBENCH_CACHE", str(tmp_path / "cache"))

    def loader(repo, config, split):
        return pd.DataFrame({"metrics": [{"mc1": 1.0, "mc2": 0.62}, {"mc1": 0.0, "mc2": 0.31}]})

    with pytest.raises(DataError, match=r"details_org-a__model-1 \(harness_truthfulqa_mc_0\), 'mc2': non-binary"):
        build_openllm_matrix(
            ["org-a/model-1"], "truthfulqa", config="harness_truthfulqa_mc_0", metric="mc2", loader=loader
        )
    assert not (tmp_path / "cache").exists()
    matrix = build_openllm_matrix(
        ["org-a/model-1"], "truthfulqa", config="harness_truthfulqa_mc_0", metric="mc1", loader=loader
    )
    assert matrix.values.tolist() == [[1.0, 0.0]]
    with pytest.raises(DataError, match="unknown task"):
        build_openllm_matrix(["org-a/model-1"], "truthfulqa", loader=loader)


def test_no_models_and_values_that_are_not_numbers_are_named(tmp_path, monkeypatch):
    monkeypatch.setenv("TAILOREDBENCH_CACHE", str(tmp_path / "cache"))
    with pytest.raises(DataError, match="arc_challenge: no models given"):
        build_openllm_matrix([], "arc_challenge", loader=lambda *_: None)
    for rows in ({"acc_norm": ["yes", "no"]}, {"metrics": [{"acc_norm": "yes"}, {"acc_norm": "no"}]}):
        with pytest.raises(DataError, match="'acc_norm' holds values that are not numbers"):
            build_openllm_matrix(
                ["org-a/model-1"], "arc_challenge", loader=lambda *_, r=rows: pd.DataFrame(r), cache=False
            )
