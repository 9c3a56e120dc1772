"""The analysis studies: their method switches, helpers and notebooks."""

import json
import re

import nbformat
import numpy as np
import pandas as pd
import pytest

from conftest import ROOT, check_clean, image_cells, synthetic_matrix
from tailoredbench import studies, tailored
from tailoredbench.batch import STUDY_NOTEBOOKS, reproduce
from tailoredbench.datasets import paper
from tailoredbench.datasets.benchmarks import Benchmark
from tailoredbench.datasets.matrix import ResponseMatrix
from tailoredbench.errors import TailoredBenchError
from tailoredbench.methods import MethodSpec, Oracle
from tailoredbench.methods.tailoredbench import probes


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


def test_the_native_reading_counts_near_twins(matrices):
    source, target = matrices
    target = target.copy()
    target[0] = source[3]  # SYNTHETIC: a target that answers every item as a source does
    said = studies.native_reading(_bench(source, target), 3, 0, 5)
    count = studies.adaptive_counts(_bench(source, target), 3, 0, 5)
    assert f"keeps {np.bincount(count).argmax()} native sources of the 20" in said
    assert "to 1.00, and 1 of the 20 targets has a near twin" in said


def test_coreset_is_tighter_for_the_models_it_was_chosen_on(matrices):
    # SYNTHETIC: targets answer at random, so the sources' clusters do not fit them
    source, _ = matrices
    noise = (np.random.default_rng(0).random(source.shape) < 0.5).astype(float)
    found = studies.coreset_distances(_bench(source, noise), 10)
    assert found["source models"]["mean_distance"] < found["target models"]["mean_distance"]
    assert len(found["medoids"]) == 10 and found["labels"].shape == (source.shape[1],)
    control = found["control"]  # fitted on four fifths of the sources: looser under the fifth left out, and the
    assert len(control["unseen"]) == 5 and (control["unseen"] > 1).all()  # random targets looser again
    assert (control["targets_over_unseen"] > 1).all()


def test_paper_table_sets_the_paper_beside_ours():
    averaged = studies.by_arm(
        pd.DataFrame({"arm": ["5", "10", "5", "10"], "mae": [0.1, 0.2, 0.3, 0.4], "kendall_tau": [1, 1, 0, 0]})
    )
    table = studies.paper_table(averaged, paper.STUDIES["g_size"])
    assert table["paper_mae"].tolist() == [0.030, 0.027]
    assert table["mae"].tolist() == pytest.approx([0.2, 0.3])


def _arms(rows):
    """A sweep-like table from (benchmark, targets, arm, mae, mae_se) rows."""
    return pd.DataFrame(rows, columns=["benchmark", "targets", "arm", "mae", "mae_se"]).assign(
        kendall_tau=0.5, kendall_tau_se=0.01
    )


def test_a_tie_within_noise_is_not_a_reversal():
    # POPE's 0.0609 against 0.0609: equal to four decimals, and within any noise
    table = _arms(
        [
            ("gsm8k", 75, "off", 0.035, 0.001),
            ("gsm8k", 75, "on", 0.030, 0.001),
            ("pope", 5, "off", 0.06088, 0.017),
            ("pope", 5, "on", 0.06092, 0.018),
        ]
    )
    verdicts = studies.per_benchmark(table).set_index("benchmark")
    assert verdicts.loc["gsm8k", "best"] == "on" and verdicts.loc["gsm8k", "clear"]
    assert verdicts.loc["pope", "tied"] and not verdicts.loc["pope", "clear"]
    sentence = studies.best_by_benchmark(verdicts.reset_index(), "calibration {}")
    assert sentence == (
        "Lowest MAE per benchmark: calibration on for gsm8k, clear of the other arms by two standard errors; a tie "
        "within noise between calibration off and calibration on for pope."
    )


def test_identical_arms_are_a_tie_and_the_weighted_mean_has_its_verdict():
    # POPE's arms are identical: neither is "lowest"; weighted by targets, gsm8k's clear gap decides
    table = _arms(
        [
            ("gsm8k", 75, "off", 0.0363, 0.0007),
            ("gsm8k", 75, "on", 0.0307, 0.0008),
            ("hellaswag", 150, "off", 0.0131, 0.0001),
            ("hellaswag", 150, "on", 0.0136, 0.0001),
            ("pope", 5, "off", 0.0609, 0.0175),
            ("pope", 5, "on", 0.0609, 0.0175),
        ]
    )
    findings = studies.takeaway(table, paper.STUDIES["calibration"], "calibration {}")
    assert "calibration on for gsm8k, calibration off for hellaswag, clear" in findings[0]
    assert "tie within noise between calibration off and calibration on for pope" in findings[0]
    assert "calibration off for hellaswag and pope" not in findings[0]
    assert (
        "; weighted by targets, calibration on 0.0202 ± 0.0005 against calibration off 0.0217 ± 0.0004, beyond noise"
        in findings[1]
    )


def test_a_benchmark_giving_more_than_the_whole_gap_names_those_leaning_the_other_way():
    # the study_distance numbers: pope gives 132% of cosine's lead; hellaswag and gsm8k favour manhattan
    rows = {
        "arc_challenge": (0.0289, 0.0312),
        "hellaswag": (0.0143, 0.0136),
        "gsm8k": (0.0382, 0.0307),
        "winogrande": (0.0229, 0.0247),
        "pope": (0.0443, 0.0609),
    }
    table = _arms(
        [
            (b, 100, arm, v, 0.01)
            for b, pair in rows.items()
            for arm, v in zip(("cosine", "manhattan"), pair, strict=True)
        ]
    )
    sentence = studies.mean_verdict(table)
    assert "pope gives 133% of that gap, as hellaswag and gsm8k lean the other way" in sentence
    assert "the others lean" not in sentence


def test_one_benchmark_driving_the_mean_is_named():
    # G-set 5 wins the mean almost wholly through POPE, a benchmark of five targets
    rows = [
        (b, t, arm, mae, 0.001)
        for b, t in (("arc", 105), ("hellaswag", 150), ("gsm8k", 75))
        for arm, mae in (("5", 0.0300), ("10", 0.0301))
    ]
    table = _arms([*rows, ("pope", 5, "5", 0.028, 0.003), ("pope", 5, "10", 0.061, 0.004)])
    shares = studies.gap_shares(table, "5", "10").set_index("benchmark")
    assert shares.loc["pope", "share"] > 0.9 and shares.loc["pope", "without_tie"]
    sentence = studies.mean_verdict(table, label="G-set {}")
    assert "but pope gives" in sentence and "without it the two are within noise" in sentence
    noisy = table.assign(mae_se=np.where(table["benchmark"] == "pope", 0.017, 0.001))
    assert "a tie within noise; pope gives 99% of that gap; weighted by targets," in studies.mean_verdict(noisy)
    weighted = studies.by_arm(table, weight="targets").set_index("arm")["mae"]
    assert weighted["10"] - weighted["5"] < 0.001  # weighted by targets, POPE hardly counts
    findings = studies.takeaway(table, paper.STUDIES["g_size"], "G-set {}")
    assert len(findings) == 3 and all(len(line) <= 300 for line in findings)
    assert "standard errors" in findings[-1]


def test_fewest_items_counts_only_methods_that_reach_the_precision():
    items = pd.DataFrame(
        {
            "benchmark": "x",
            "precision": [0.03, 0.03, 0.05, 0.05],
            "method": ["a", "b"] * 2,
            "items": [60.0, 40.0, 30.0, 20.0],
            "items_se": 1.0,
            "reached": [0.95, 0.5, 0.2, 0.3],
            "coverage": 0.9,
            "coverage_se": 0.02,
        }
    )
    fewest = studies.fewest_items(items)
    assert fewest["fewest"].tolist() == ["a", "none"]  # b asks fewer at 0.03 but leaves half the targets short
    grid = studies.fewest_grid(fewest, {"a": "A"})
    assert grid.columns.tolist() == ["benchmark", "±0.03", "±0.05"]
    assert grid.iloc[0].tolist() == ["x", "A 60, 90% ± 2%", "none (30% reach it)"]
    short = studies.fewest_grid(studies.fewest_items(items.assign(reached=[0.95, 0.5, 0.895, 0.3])), {})
    assert short.iloc[0, -1] == "none (89.5% reach it)"  # not "90%", the goal it misses


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
        "benchmarks": ["pope", "hellaswag"],  # two: the takeaway's average over benchmarks too
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


#: The notebooks this module checks the layout of.
LAID_OUT = (*STUDY_NOTEBOOKS, "beyond", "sequential_precision", "suite", "tutorial_evaluate_your_model")


@pytest.mark.parametrize("name", LAID_OUT)
def test_takeaway_first_then_results_then_method_and_provenance(name):
    nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    headings = [
        line for c in nb.cells if c.cell_type == "markdown" for line in c.source.splitlines() if line.startswith("## ")
    ]
    assert headings[0] == "## Takeaway" and headings[1].startswith("## Results"), headings
    assert headings[-2:] == ["## Method details", "## Provenance"], headings
    takeaway = next(i for i, c in enumerate(nb.cells) if c.source == "## Takeaway")
    assert "findings" in nb.cells[takeaway + 1].source  # sentences built from this run's numbers
    assert not any('"- "' in c.source for c in nb.cells if c.cell_type == "code")  # no generated bullets


def _takeaway_of(nb) -> list[str]:
    at = next(i for i, c in enumerate(nb.cells) if c.source == "## Takeaway")
    return [o["data"]["text/markdown"] for o in nb.cells[at + 1].outputs if "text/markdown" in o.get("data", {})]


@pytest.mark.notebook
@pytest.mark.parametrize("name", list(SMOKE))
def test_study_notebook_smoke(name, tmp_path):
    reproduce([name], parameters=SMOKE[name], output_dir=tmp_path, log=lambda _: None)
    out = tmp_path / name
    metrics = json.loads((out / "metrics.json").read_text())
    findings = metrics["findings"]
    assert 1 <= len(findings) <= 3 and all(len(line) <= 300 for line in findings)
    assert all(not line.startswith("- ") for line in findings)
    assert list((out / "figures").glob("*.png"))
    nb = check_clean(out / f"{name}.ipynb", tmp_path)
    assert _takeaway_of(nb)[0] == " ".join(findings)  # the takeaway shown is the one recorded
    assert len(re.split(r"(?<=[.!?])\s+(?=[A-Z])", " ".join(findings))) <= 3, findings
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
    by_split = metrics["tables"]["coverage_by_split"]
    assert [row["models"] for row in by_split] == ["all", "sources only"]
    assert [(row["sources"], row["targets"]) for row in by_split] == [(75, 75), (37, 38)]
    assert all(0.5 <= row["coverage"] <= 1 for row in by_split)
    assert 2 <= len(metrics["findings"]) <= 3 and all(len(line) <= 300 for line in metrics["findings"])
    assert "cover" in metrics["findings"][1]
    headline = metrics["tables"]["headline"]
    assert [row["benchmark"] for row in headline] == ["pope"]
    assert headline[0]["against faithful"] in ("lower", "higher", "tie")
    assert (tmp_path / "beyond" / "figures" / "beyond.png").is_file()
    nb = check_clean(tmp_path / "beyond" / "beyond.ipynb", tmp_path)
    assert len(image_cells(nb)) == 1
    assert _takeaway_of(nb)[0] == " ".join(metrics["findings"])


def test_a_best_baseline_from_after_the_paper_is_said_to_be_one():
    headline = pd.DataFrame(
        {
            "benchmark": ["arc_challenge", "gsm8k", "pope"],
            "TailoredBench+": [0.026, 0.028, 0.017],
            "best baseline": ["random_regression", "fluid", "fluid"],
            "baseline": [0.040, 0.030, 0.013],
        }
    )
    said = studies.below_best_baseline(headline)
    assert said == (
        "TailoredBench+ is below the best baseline on 2 of 3 benchmarks; fluid, the adaptive IRT test from after "
        "the paper, is the best baseline on 2 of 3 (GSM8K and POPE)."
    )
    paper_only = headline.assign(**{"best baseline": "gp_irt"})
    assert studies.below_best_baseline(paper_only) == "TailoredBench+ is below the best baseline on 2 of 3 benchmarks."


def test_coverage_is_judged_against_the_goal_with_its_standard_error():
    # beyond's GSM8K: 95.4% ± 1.4% is within two standard errors of the 95% edge, no miss
    assert studies.coverage_verdict(0.954, 0.014) == "consistent"
    assert studies.coverage_verdict(0.931, 0.014) == "inside"
    assert studies.coverage_verdict(0.990, 0.010) == "above"
    summary = pd.DataFrame(
        {
            "benchmark": "gsm8k",
            "method": ["tailored_plus[calibrated]", "tailored_plus[stacked]", "gp_irt"],
            "budget": 30,
            "mae": [0.0315, 0.0281, 0.0418],
            "mae_se": [0.0003, 0.0002, 0.0004],
            "kendall_tau": [0.86, 0.87, 0.82],
            "coverage": [0.950, 0.954, 0.990],
        }
    )
    spread = summary[["benchmark", "method"]].assign(coverage_se=[0.013, 0.014, 0.010])
    table = studies.beyond_table(summary, "stacked", spread).set_index("method")
    assert table["meets_coverage"].tolist() == [True, True, False]
    assert table.loc["tailored_plus[calibrated]", "mae_ratio_se"] == 0  # the reference's ratio to itself is exact
    assert table.loc["tailored_plus[stacked]", "mae_ratio_se"] == pytest.approx(
        0.0281 / 0.0315 * np.hypot(0.0002 / 0.0281, 0.0003 / 0.0315)
    )


def test_versus_at_says_per_benchmark_who_needs_fewer_items_and_who_falls_short():
    items = pd.DataFrame(
        {
            "benchmark": ["gsm8k", "gsm8k", "hellaswag", "hellaswag"],
            "precision": 0.06,
            "method": ["tailored_plus", "fluid"] * 2,
            "items": [48.6, 92.9, 15.6, 10.6],
            "items_se": 0.5,
            "reached": [0.95, 0.56, 1.0, 1.0],
            "coverage": 0.9,
            "coverage_se": 0.01,
        }
    )
    assert studies.versus_at(items, "tailored_plus", "fluid", 0.06) == (
        "At ±0.06, tailored_plus needs fewer items than fluid on GSM8K (48.6 items, 90% cover, against 92.9, 90%; "
        "fluid: 56% reach it), and needs more on HellaSwag (15.6 items, 90% cover, against 10.6, 90%)."
    )
    only_more = items[items["benchmark"] == "hellaswag"]
    assert studies.versus_at(only_more, "tailored_plus", "fluid", 0.06) == (
        "At ±0.06, tailored_plus needs more than fluid on HellaSwag (15.6 items, 90% cover, against 10.6, 90%)."
    )
    undercovered = only_more.assign(coverage=[0.84, 0.97])
    assert studies.versus_at(undercovered, "tailored_plus", "fluid", 0.06) == (
        "At ±0.06, tailored_plus needs more than fluid on HellaSwag (15.6 items, 84% cover, against 10.6, 97%; "
        "tailored_plus covers outside the 85%-95% goal; fluid covers outside the 85%-95% goal)."
    )
    # a smaller run without the rival says so instead of failing
    assert studies.versus_at(items[items["method"] == "tailored_plus"], "tailored_plus", "fluid", 0.06) == (
        "tailored_plus and fluid were not both run at ±0.06, so they are not compared here."
    )


def _suite_results():
    """SYNTHETIC: 2 runs of 4 targets on benchmarks x (the joint plan halves every error) and y (no change)."""
    rows = []
    for run in range(2):
        for target, error in enumerate([0.02, 0.04, 0.03, 0.05]):
            for mode, x_error in (("joint", error / 2), ("independent", error)):
                rows.append((run, mode, "tailored_plus", "x", f"t{target}", 0.5, 0.5 + x_error))
                rows.append((run, mode, "tailored_plus", "y", f"t{target}", 0.5, 0.5 - error * (1 + run) / 2))
            rows.append((run, "independent", "random", "x", f"t{target}", 0.5, 0.6))
    return pd.DataFrame(rows, columns=["run", "mode", "method", "benchmark", "target", "true", "estimate"])


def test_joint_gains_pairs_the_two_plans_target_by_target_and_skips_one_mode_methods():
    gains = studies.joint_gains(_suite_results(), ["tailored_plus", "random"]).set_index("benchmark")
    assert list(gains.index) == ["x", "y"]  # random ran in one mode only
    assert gains.loc["x", "ratio"] == pytest.approx(0.5) and gains.loc["x", "verdict"] == "gain"
    assert gains.loc["y", "ratio"] == pytest.approx(1.0) and gains.loc["y", "verdict"] == "tie"
    assert gains.loc["y", "difference_se"] == 0 and gains.loc["y", "joint_se"] > 0  # runs differ, plans do not
    grid = studies.gains_grid(gains.reset_index())
    assert grid["tailored_plus"].tolist() == ["0.0175 / 0.0350 = **0.50**", "0.0263 / 0.0263 = **1.00** (tie)"]


def test_gains_reading_names_where_the_joint_plan_helps_and_how_much_the_others_predict_there():
    gains = pd.DataFrame(
        {
            "method": ["tailored_plus"] * 3 + ["random_regression"] * 3,
            "benchmark": ["a", "b", "c"] * 2,
            "ratio": [0.8, 0.9, 0.99, 0.7, 0.85, 0.97],
            "verdict": ["gain", "gain", "tie", "gain", "gain", "tie"],
        }
    )
    predicted = pd.DataFrame({"benchmark": ["a", "b", "c"], "mean_r": [0.8, 0.7, 0.4], "r2": [0.7, 0.5, 0.2]})
    text = studies.gains_reading(gains, predicted, "s")
    assert "TailoredBench+'s MAE beyond two standard errors across targets on 2 of 3 benchmarks" in text
    assert "not on c (0.99, within noise)" in text
    assert "c, which gains least for every method, has R² 0.20" in text
    assert "is 1.0 for TailoredBench+ and 1.0 for random+regression" in text


def test_the_suite_reading_says_where_a_baseline_is_below_joint_tailoredbench_and_whether_beyond_noise():
    summary = pd.DataFrame(
        {
            "mode": ["joint", "joint", "independent"],
            "method": ["tailoredbench", "random_regression", "gp_irt"],
            "mae": [0.0285, 0.0281, 0.0322],
            "mae_se": [0.0001, 0.0004, 0.0003],
            "suite_mae": [0.0182, 0.0162, 0.0165],
            "suite_mae_se": [0.0001, 0.0004, 0.0003],
            "coverage": 0.9,
            "coverage_se": 0.001,
        }
    )
    text = studies.suite_summary_reading(summary, "s")
    assert "below it are, per benchmark, joint random+regression (0.0281, within noise); on the suite mean, " in text
    assert "joint random+regression (0.0162) and independent gp-IRT (0.0165)." in text
    ahead = summary.assign(mae=[0.02, 0.03, 0.04], suite_mae=[0.01, 0.02, 0.03])
    assert "below it" not in studies.suite_summary_reading(ahead, "s")


def test_suite_takeaway_is_at_most_three_sentences_of_at_most_300_characters():
    summary = pd.DataFrame(
        {
            "mode": ["joint", "independent"] * 2,
            "method": ["tailored_plus"] * 2 + ["random_regression"] * 2,
            "mae": [0.019, 0.0214, 0.0273, 0.0338],
            "coverage": 0.9,
            "items": 100,
        }
    )
    gains = pd.DataFrame(
        {
            "method": "tailored_plus",
            "benchmark": ["arc", "gsm8k", "hellaswag", "truthfulqa", "winogrande", "suite mean"],
            "ratio": [0.9, 0.99, 0.95, 0.97, 0.98, 0.96],
            "verdict": "tie",
        }
    )
    findings = studies.suite_takeaway({"one": summary, "two": summary}, {"one": gains, "two": gains})
    assert len(findings) == 3 and all(len(line) <= 300 for line in findings)
    assert "on none of the 5 benchmarks of one (ratios from 0.90 on ARC to 0.99 on GSM8K)" in findings[1]
    assert findings[2].endswith("but stay above joint TailoredBench+.")
    assert studies.suite_takeaway({"one": summary[summary["method"] == "random_regression"]}, {}) == [
        "TailoredBench+ was not run in both modes, so the joint plan is not compared with the independent one here."
    ]


def test_gains_reading_says_why_ties_are_ties_and_the_figure_reading_sets_no_goal():
    gains = pd.DataFrame(
        {
            "method": ["tailored_plus"] * 2,
            "benchmark": ["a", "b"],
            "ratio": [0.9, 0.97],
            "difference": [-0.003, -0.001],
            "difference_se": [0.002, 0.0015],
            "verdict": ["tie", "tie"],
        }
    )
    predicted = pd.DataFrame({"benchmark": ["a", "b"], "mean_r": [0.5, 0.5], "r2": [0.25, 0.25]})
    text = studies.gains_reading(gains, predicted, "s")
    assert "lower in 2 of the 2 (benchmark, method) pairs" in text
    assert "(0.0010 to 0.0030) are each within two of their standard errors across targets (0.0015 to 0.0020)" in text
    figure = studies.gains_figure_reading({"s": gains})
    assert "goal" not in figure and figure.endswith("0 ratios are 0.80 or below and 1 above 0.95 (1 a tie).")


def test_best_grid_keeps_the_tables_benchmark_order_when_a_budget_is_missing():
    table = pd.DataFrame(
        {
            "benchmark": ["A", "A", "B", "B", "B", "B"],
            "budget": [50, 50, 20, 20, 50, 50],
            "method": ["x", "y"] * 3,
            "mae": [0.01, 0.02] * 3,
            "mae_se": [0.001] * 6,
        }
    )
    assert studies.best_grid(table)["benchmark"].tolist() == ["A", "B"]


def test_beyond_table_calls_the_faithful_method_faithful_when_it_is_also_the_chosen_one():
    summary = pd.DataFrame(
        {
            "benchmark": ["pope"] * 2,
            "budget": [20, 20],
            "method": ["tailored_plus[calibrated]", "gp_irt"],
            "mae": [0.02, 0.03],
            "mae_se": [0.001, 0.001],
            "kendall_tau": [0.8, 0.7],
            "kendall_tau_se": [0.01, 0.01],
            "coverage": [0.9, 0.9],
            "width": [0.1, 0.1],
        }
    )
    assert studies.beyond_table(summary, "calibrated")["role"].tolist() == ["faithful TailoredBench", "best baseline"]
