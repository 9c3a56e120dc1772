"""Notebooks: generated from one template, and run by papermill with tiny parameters."""

import json

import nbformat
import pytest
from conftest import ROOT

from tailoredbench.notebooks import BENCHMARK_NOTEBOOKS, benchmark_notebook, reproduce


@pytest.mark.parametrize("name", list(BENCHMARK_NOTEBOOKS))
def test_committed_notebook_is_the_template(name):
    committed = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    assert committed == benchmark_notebook(name), "run: python -m tailoredbench.notebooks"
    tagged = [c for c in committed.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1


@pytest.mark.notebook
def test_gsm8k_notebook_smoke(tmp_path):
    reproduce(
        ["gsm8k"],
        parameters={"runs": 2, "budgets": [20, 30], "jobs": 1},
        reports_dir=tmp_path,
        log=lambda _: None,
    )
    out = tmp_path / "gsm8k"
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["parameters"]["runs"] == 2
    assert metrics["benchmark"]["n_items"] == 1319
    assert metrics["benchmark"]["files"][0]["sha256"]
    rows = {(r["method"], r["budget"]): r for r in metrics["summary"]}
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
