"""Notebooks: generated from templates, and run by papermill with tiny parameters."""

import json
import re

import nbformat
import pytest

from conftest import ROOT
from tailoredbench import SPECS
from tailoredbench.notebooks import BENCHMARK_NOTEBOOKS, REPRODUCE_ORDER, all_notebooks, reproduce


@pytest.mark.parametrize("name", REPRODUCE_ORDER)
def test_committed_notebook_is_the_template(name):
    committed = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    assert committed == all_notebooks()[name], "run: python -m tailoredbench.notebooks"
    tagged = [c for c in committed.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    # thin notebooks: the parameters cell holds literals only
    for line in tagged[0].source.splitlines()[1:]:
        assert re.fullmatch(r"\w+ = [\[\]{}'\"\w\s.,:/-]*", line), line


@pytest.mark.parametrize("name", list(BENCHMARK_NOTEBOOKS))
def test_opening_text_states_the_real_counts(name):
    spec = SPECS[name]
    bench = spec.load(seed=0)
    about = spec.about
    assert f"{bench.n_items} " in about or f"{bench.n_items} items" in about
    assert str(bench.source.n_models) in about and str(bench.target.n_models) in about


@pytest.mark.notebook
def test_benchmark_and_main_table_notebooks_smoke(tmp_path):
    tiny = {"runs": 2, "budgets": [20, 30], "jobs": 1}
    reproduce(["gsm8k"], parameters=tiny, reports_dir=tmp_path, log=lambda _: None)
    reproduce(["pope"], parameters={**tiny, "runs": 1}, reports_dir=tmp_path, log=lambda _: None)
    out = tmp_path / "gsm8k"
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["parameters"]["runs"] == 2
    assert metrics["benchmark"]["n_items"] == 1319
    assert metrics["benchmark"]["files"][0]["sha256"]
    rows = {(r["method"], r["budget"]): r for r in metrics["summary"]}
    assert set(m for m, _ in rows) == {"tailoredbench", "random", "anchor_points", "gp_irt", "random_regression"}
    assert 0.02 < rows[("tailoredbench", 30)]["mae"] < 0.045
    assert rows[("tailoredbench", 30)]["kendall_tau"] > 0.75
    for name in (
        "tables/summary.csv",
        "tables/summary.md",
        "tables/summary.tex",
        "figures/budget_curves.png",
        "figures/estimates.png",
        "gsm8k.ipynb",
    ):
        assert (out / name).is_file(), name
    assert "**" in (out / "tables" / "summary.md").read_text()  # best in bold

    reproduce(
        ["main_table"],
        parameters={"benchmarks": ["gsm8k", "pope"], "reports_dir": str(tmp_path)},
        reports_dir=tmp_path,
        log=lambda _: None,
    )
    main = json.loads((tmp_path / "main_table" / "metrics.json").read_text())
    compared = {r["benchmark"]: r for r in main["paper_comparison"]}
    assert compared["gsm8k"]["paper TailoredBench"] == 0.033
    assert (tmp_path / "main_table" / "tables" / "main_table.tex").is_file()
    assert (tmp_path / "main_table" / "figures" / "main_figure.png").is_file()


@pytest.mark.notebook
def test_tutorial_runs_the_real_workflow(tmp_path):
    reproduce(["tutorial_evaluate_your_model"], reports_dir=tmp_path, log=lambda _: None)
    out = tmp_path / "tutorial_evaluate_your_model"
    metrics = json.loads((out / "metrics.json").read_text())
    assert len(metrics["items_used"]) == metrics["budget"] == 30
    assert abs(metrics["estimate"] - metrics["true_accuracy"]) < 0.1
    for figure in ("g_set", "native_families", "clusters", "calibration"):
        assert (out / "figures" / f"{figure}.png").is_file()
    assert (out / "plan" / "g_set.json").is_file() and (out / "plan" / "n_set.json").is_file()
