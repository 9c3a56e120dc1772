"""The analysis studies: their method switches, helpers and notebooks."""

import json

import numpy as np
import pandas as pd
import pytest

from conftest import check_clean, image_cells, synthetic_matrix
from tailoredbench import studies, tailored
from tailoredbench.batch import STUDY_NOTEBOOKS, reproduce
from tailoredbench.datasets import paper
from tailoredbench.datasets.benchmarks import Benchmark
from tailoredbench.datasets.matrix import ResponseMatrix
from tailoredbench.errors import TailoredBenchError
from tailoredbench.methods import MethodSpec
from tailoredbench.methods.tailoredbench import probes
from tailoredbench.oracle import Oracle


@pytest.fixture(scope="module")
def matrices():
    data = synthetic_matrix(40, 100, seed=4)  # SYNTHETIC
    return data[::2], data[1::2]


def _run(matrices, **options):
    source, target = matrices
    spec = MethodSpec.parse("tailoredbench", {"g_size": 5, **options})
    prepared = spec.method.prepare(source, [20], **spec.options)
    return spec.method.run(prepared, source, [{20: Oracle(target, 20)}], [(0, 1)], **spec.options)[0][""][20]


def _bench(source, target) -> Benchmark:
    return Benchmark("synthetic", ResponseMatrix(source), ResponseMatrix(target), {})


def test_adaptive_count_given_explicitly_changes_nothing(matrices):
    count = studies.adaptive_counts(_bench(*matrices), 2, 0, 5)[1]  # run 1, as _run uses
    assert np.array_equal(_run(matrices), _run(matrices, n_native=int(count)))


def test_native_bands_take_the_ranked_columns():
    order = np.arange(10)[None, :]
    assert tailored.native_rows(order, 2, 4).tolist() == [[4, 5]]
    with pytest.raises(TailoredBenchError, match="out of range"):
        tailored.native_rows(order, 4, 8)


def test_calibration_off_is_the_cluster_weighted_mean(matrices):
    source, target = matrices
    prepared = MethodSpec.parse("tailoredbench").method.prepare(source, [20], distance="manhattan")
    for _, p in probes(prepared, source, {20: Oracle(target, 20)}, (0, 1), g_size=5, distance="manhattan"):
        brute = np.mean([p.results[label] for label in p.probe.labels])
        assert tailored.uncalibrated_estimate(p.probe, p.results) == pytest.approx(brute)
    off = _run(matrices, calibrate=False)
    assert not np.array_equal(off, _run(matrices))


def test_fixed_count_arm_scales_with_the_sources(matrices):
    bench = _bench(*matrices)
    assert studies.fixed_count(0.2, 2)(bench)["method_options"] == {"n_native": 4, "native_offset": 8}
    assert studies.fixed_count(1.0)(bench)["method_options"] == {"n_native": 20, "native_offset": 0}


def test_coreset_is_tighter_for_the_models_it_was_chosen_on(matrices):
    # SYNTHETIC: targets answer at random, so the sources' clusters do not fit them
    source, _ = matrices
    noise = (np.random.default_rng(0).random(source.shape) < 0.5).astype(float)
    found = studies.coreset_distances(_bench(source, noise), 10)
    assert found["source models"]["mean_distance"] < found["target models"]["mean_distance"]
    assert len(found["medoids"]) == 10 and found["labels"].shape == (source.shape[1],)


def test_paper_table_sets_the_paper_beside_ours():
    averaged = studies.by_arm(
        pd.DataFrame({"arm": ["5", "10", "5", "10"], "mae": [0.1, 0.2, 0.3, 0.4], "kendall_tau": [1, 1, 0, 0]})
    )
    table = studies.paper_table(averaged, paper.STUDIES["g_size"])
    assert table["paper_mae"].tolist() == [0.030, 0.027]
    assert table["mae"].tolist() == pytest.approx([0.2, 0.3])


def test_coverage_by_target_matches_brute_force():
    rng = np.random.default_rng(3)
    rows = [
        {
            "method": m,
            "target": t,
            "run": r,
            "true": rng.random(),
            "interval_low": rng.random() / 2,
            "interval_high": 0.5 + rng.random() / 2,
        }
        for m in ("a", "b")
        for t in range(6)
        for r in range(4)
    ]
    results = pd.DataFrame(rows)
    got = studies.coverage_by_target(results).set_index("method")
    for m, frame in results.groupby("method"):
        inside = (frame["interval_low"] <= frame["true"]) & (frame["true"] <= frame["interval_high"])
        per_target = [inside[frame["target"] == t].mean() for t in range(6)]
        assert got.loc[m, "coverage"] == pytest.approx(inside.mean())
        assert got.loc[m, "coverage_se"] == pytest.approx(np.std(per_target, ddof=1) / np.sqrt(6))


SMOKE = {
    "study_distance": {"benchmarks": ["pope"], "runs": 2, "jobs": 1},
    "study_calibration": {"benchmarks": ["pope"], "runs": 2, "jobs": 1},
    "study_g_size": {"benchmarks": ["pope"], "runs": 2, "jobs": 1, "g_sizes": [5, 10]},
    "study_budget_scaling": {
        "benchmarks": ["pope"],
        "runs": 1,
        "jobs": 1,
        "budgets": [50, 60],
        "methods": ["tailoredbench", "random"],
    },
    "study_native_sources": {
        "benchmarks": ["pope"],
        "runs": 2,
        "jobs": 1,
        "count_benchmark": "pope",
        "counts": [1, 3, 5],
    },
    "study_families": {"benchmarks": ["arc_challenge"], "runs": 1},
    "study_embedding": {"benchmarks": ["pope"], "embedding": "pca"},
}


def test_every_study_has_a_smoke_setting():
    assert set(SMOKE) == set(STUDY_NOTEBOOKS)


@pytest.mark.notebook
@pytest.mark.parametrize("name", list(SMOKE))
def test_study_notebook_smoke(name, tmp_path):
    reproduce([name], parameters=SMOKE[name], output_dir=tmp_path, log=lambda _: None)
    out = tmp_path / name
    metrics = json.loads((out / "metrics.json").read_text())
    verdicts = [line for line in metrics["findings"] if "paper" in line]
    endings = ("Agrees with the paper.", "Agrees in part with the paper.", "Differs from the paper.")
    assert verdicts and all(line.endswith(endings) for line in verdicts)
    # the other findings say where an average over benchmarks hides a reversal
    others = [line for line in metrics["findings"] if line not in verdicts]
    assert all("benchmark" in line for line in others)
    assert list((out / "figures").glob("*.png"))
    nb = check_clean(out / f"{name}.ipynb", tmp_path)
    assert len(image_cells(nb)) >= 1  # figures show in their cells
    assert list((out / "tables").glob("*.csv")) and list((out / "tables").glob("*.md"))
    for table in metrics["tables"].values():
        for row in table:
            if row.get("mae") is not None:
                assert 0 <= row["mae"] <= 1
            if row.get("kendall_tau") is not None:
                assert -1 <= row["kendall_tau"] <= 1


@pytest.mark.notebook
def test_beyond_notebook_smoke(tmp_path):
    params = {
        "benchmarks": ["pope"],
        "runs": 2,
        "selection_runs": 1,
        "split_benchmark": "gsm8k",
        "split_runs": 1,
        "random_splits": 0,
        "jobs": 2,
        "reports_dir": "../reports",  # the committed reports, from notebooks/
    }
    reproduce(["beyond"], parameters=params, output_dir=tmp_path, log=lambda _: None)
    metrics = json.loads((tmp_path / "beyond" / "metrics.json").read_text())
    ablation = {row["method"]: row for row in metrics["tables"]["ablation"]}
    assert ablation["tailored_plus[calibrated]"]["role"] == "faithful TailoredBench"
    assert ablation["tailored_plus[stacked]"]["role"] == "TailoredBench+ (chosen)"
    assert any(row["role"] == "best baseline" for row in ablation.values())
    for row in ablation.values():
        assert 0 <= row["coverage"] <= 1 and row["width"] > 0 and row["coverage_se"] >= 0
    scales = metrics["tables"]["interval_scales"]
    overall = {row["normalisation"]: row["ratio"] for row in scales if row["method"] == "all"}
    assert set(overall) == {"none", "unlikeness", "sampling error", "geometric mean", "sum"}
    assert overall["none"] == 1 and all(ratio > 0 for ratio in overall.values())
    assert any(line.startswith("Interval scale") for line in metrics["findings"])
    by_split = metrics["tables"]["coverage_by_split"]
    assert [row["models"] for row in by_split] == ["all", "sources only"]
    assert [(row["sources"], row["targets"]) for row in by_split] == [(75, 75), (37, 38)]
    assert all(0.5 <= row["coverage"] <= 1 for row in by_split)
    assert "split otherwise" in metrics["findings"][-1]
    assert "coverage" in metrics["findings"][0] or "cover" in metrics["findings"][0]
    assert (tmp_path / "beyond" / "figures" / "beyond.png").is_file()
    assert len(image_cells(check_clean(tmp_path / "beyond" / "beyond.ipynb", tmp_path))) == 1
