"""The notebooks: their shape, and runs through papermill with small parameters."""

import ast
import json
import os
import re

import nbformat
import numpy as np
import pandas as pd
import pytest

from conftest import ROOT, check_clean, image_cells
from tailoredbench import SPECS, walkthrough
from tailoredbench.batch import (
    BENCHMARK_NOTEBOOKS,
    CATALOGUE,
    ORDER,
    QUICK,
    NotebookFailed,
    declared_parameters,
    reproduce,
)
from tailoredbench.cli import main
from tailoredbench.datasets.benchmarks import PAPER_BENCHMARKS
from tailoredbench.environment import reproducible_numerics
from tailoredbench.errors import TailoredBenchError

NOTEBOOKS = ROOT / "notebooks"


def read(name):
    return nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)


def shown_text(nb, call):
    """The Markdown that the code cell calling ``call`` shows."""
    cell = next(c for c in nb.cells if c.cell_type == "code" and call in c.source)
    shown = ("".join(o["data"]["text/markdown"]) for o in cell.outputs if "text/markdown" in o.get("data", {}))
    return "\n".join(shown).replace("\u00a0", " ")  # no-break spaces keep "mean ± se" on one line


def sentences(text):
    return re.split(r"(?<=\.) (?=[A-Z])", text.strip())


def parameters_cell(nb):
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    return tagged[0]


def test_every_notebook_is_run_by_reproduce():
    assert sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb")) == sorted(ORDER)


@pytest.mark.parametrize("name", BENCHMARK_NOTEBOOKS)
def test_benchmark_notebook_parameters_are_its_specs(name):
    """A benchmark's settings are written once, in its spec; its notebook's literals must agree."""
    declared = {key: ast.literal_eval(value) for key, value in declared_parameters(name).items()}
    spec = SPECS[name]
    assert declared["benchmark"] == name and declared["g_size"] == spec.g_size
    assert tuple(declared["budgets"]) == spec.budgets and declared["max_models"] == spec.max_models


def test_catalogue_names_the_paper_benchmarks_and_known_kinds():
    assert BENCHMARK_NOTEBOOKS == PAPER_BENCHMARKS
    assert {entry["kind"] for entry in CATALOGUE.values()} <= {"benchmark", "study", "other"}
    assert {entry.get("after") for entry in CATALOGUE.values()} <= {None, "benchmarks"}


@pytest.mark.parametrize("name", ORDER)
def test_parameters_cell_holds_literals_only(name):
    nb = read(name)
    tree = ast.parse(parameters_cell(nb).source)
    assert tree.body
    for statement in tree.body:
        assert isinstance(statement, ast.Assign) and len(statement.targets) == 1
        ast.literal_eval(statement.value)  # raises on anything but a literal
    assert "output_dir" in declared_parameters(name)
    # no generated-notebook leftovers; outputs are never committed in the source notebooks
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
    assert "do not edit" not in json.dumps(nb)


def test_benchmark_notebooks_share_code_parameters_and_layout_but_not_prose():
    notebooks = {name: read(name) for name in BENCHMARK_NOTEBOOKS}
    names = {name: list(declared_parameters(name)) for name in BENCHMARK_NOTEBOOKS}
    first = BENCHMARK_NOTEBOOKS[0]
    for name, nb in notebooks.items():
        assert names[name] == names[first], name
        code = [c.source for c in nb.cells if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", [])]
        reference = notebooks[first]
        assert code == [
            c.source
            for c in reference.cells
            if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", [])
        ], name
        assert [c.cell_type for c in nb.cells] == [c.cell_type for c in reference.cells], name
    # each has its own opening, its own account of how its data differ from the paper's, and its own sources
    for start in ("# ", "### These data and the paper's", "## Provenance"):
        prose = {next(c.source for c in nb.cells if c.source.startswith(start)) for nb in notebooks.values()}
        assert len(prose) == len(BENCHMARK_NOTEBOOKS), start


def headings(nb):
    return [line for c in nb.cells if c.cell_type == "markdown" for line in c.source.splitlines() if line[:3] == "## "]


@pytest.mark.parametrize("name", [*BENCHMARK_NOTEBOOKS, "main_table"])
def test_a_results_notebook_opens_with_its_takeaway_and_ends_with_method_and_provenance(name):
    nb = read(name)
    assert headings(nb) == ["## Takeaway", "## Results", "## Method details", "## Provenance"]
    takeaway = next(i for i, c in enumerate(nb.cells) if c.source == "## Takeaway")
    assert "parameters" in nb.cells[1].metadata.get("tags", []) and takeaway == 3  # title, parameters, setup
    assert "takeaway(" in nb.cells[takeaway + 1].source  # built from the run's own numbers
    assert "changed_" not in json.dumps(nb)  # no before/after tables of development history in a published report


@pytest.mark.parametrize("name", list(BENCHMARK_NOTEBOOKS))
def test_opening_text_states_the_real_counts(name):
    bench = SPECS[name].load(seed=0)
    intro = read(name).cells[0].source
    assert str(bench.n_items) in intro
    assert f"{bench.source.n_models} source and {bench.target.n_models} target" in intro


@pytest.mark.parametrize("name", ORDER)
def test_quick_parameters_are_declared(name):
    assert set(QUICK[name]) <= set(declared_parameters(name))


def test_an_undeclared_parameter_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(TailoredBenchError, match="main_table has no parameter runs"):
        reproduce(["main_table"], parameters={"runs": 5}, output_dir=tmp_path, log=lambda _: None)
    assert not any(tmp_path.iterdir())
    assert main(["reproduce", "--notebook", "main_table", "--runs", "5", "--output-dir", str(tmp_path)]) == 2
    with pytest.raises(TailoredBenchError, match="no notebook named"):
        reproduce(["nope"], output_dir=tmp_path, log=lambda _: None)


@pytest.mark.notebook
def test_benchmark_and_main_table_notebooks_run_and_a_failed_rerun_changes_nothing(tmp_path):
    tiny = {"runs": 2, "budgets": [20, 30], "jobs": 1}
    lines = []
    pins = reproducible_numerics()
    reproduce(["gsm8k"], parameters=tiny, output_dir=tmp_path, log=lines.append)
    assert any("code cells" in line and "elapsed" in line for line in lines)  # progress
    out = tmp_path / "gsm8k"
    metrics = json.loads((out / "metrics.json").read_text())
    # the kernel computed under the pinned instructions, and this process got its own back
    if "OPENBLAS_CORETYPE" in pins:
        assert "Haswell" in metrics["environment"]["blas"] and "X86_V4" not in metrics["environment"]["numpy_simd"]
    assert not set(pins) & set(os.environ)
    assert metrics["parameters"]["runs"] == 2
    assert metrics["benchmark"]["n_items"] == 1319
    assert metrics["benchmark"]["files"][0]["sha256"]
    rows = {(r["method"], r["budget"]): r for r in metrics["summary"]}
    assert set(m for m, _ in rows) == {
        "tailoredbench",
        "random",
        "anchor_points",
        "gp_irt",
        "random_regression",
        "fluid",
    }
    assert 0.02 < rows[("tailoredbench", 30)]["mae"] < 0.045
    assert rows[("tailoredbench", 30)]["kendall_tau"] > 0.75
    for name in ("tables/summary.csv", "tables/summary.md", "tables/summary.tex", "figures/budget_curves.png"):
        assert (out / name).is_file(), name
    nb = check_clean(out / "gsm8k.ipynb", tmp_path)
    assert len(image_cells(nb)) == 2  # budget curves and estimates, each shown once in its cell
    assert sum("image/png" in o.get("data", {}) for c in nb.cells for o in c.get("outputs", [])) == 2
    takeaway = shown_text(nb, "takeaway(")
    assert takeaway.startswith("At 30 items, over 2 runs, too few for steady standard errors, TailoredBench's MAE")
    assert 1 <= len(sentences(takeaway)) <= 3 and max(map(len, sentences(takeaway))) <= 300
    assert "± 0.000 " not in shown_text(nb, '"mae"')  # errors at a precision that shows them
    injected = next(c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", []))
    assert "partial" not in injected.source and "partial" not in json.dumps(nb.metadata)

    # A rerun with other parameters into the same folder needs --force ...
    with pytest.raises(TailoredBenchError, match="--force"):
        reproduce(["gsm8k"], parameters={**tiny, "runs": 3}, output_dir=tmp_path, log=lambda _: None)
    # ... and one that fails half-way leaves the previous report byte-identical.
    before = {p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    with pytest.raises(NotebookFailed, match="is unchanged") as failed:
        reproduce(["gsm8k"], parameters={**tiny, "budgets": [5]}, output_dir=tmp_path, force=True, log=lambda _: None)
    assert {p.relative_to(out): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == before
    assert (tmp_path / ".gsm8k.failed" / "gsm8k.ipynb").is_file()
    assert not (tmp_path / ".gsm8k.partial").exists()
    assert "budget" in str(failed.value)

    reproduce(["main_table"], parameters={"benchmarks": ["gsm8k"]}, output_dir=tmp_path, force=True, log=lambda _: None)
    main_nb = check_clean(tmp_path / "main_table" / "main_table.ipynb", tmp_path)
    assert len(image_cells(main_nb)) == 1
    main = json.loads((tmp_path / "main_table" / "metrics.json").read_text())
    compared = {r["benchmark"]: r for r in main["paper_comparison"]}
    assert compared["gsm8k"]["paper_tailoredbench"] == 0.033
    assert compared["gsm8k"]["our_best_baseline"] in {"random", "anchor_points", "gp_irt", "random_regression"}
    takeaway = shown_text(main_nb, "main_takeaway(")
    assert takeaway.startswith("At 30 items, against the paper's baselines, TailoredBench") and "GSM8K" in takeaway
    assert 1 <= len(sentences(takeaway)) <= 3
    assert (tmp_path / "main_table" / "tables" / "main_table.tex").is_file()
    assert not (tmp_path / "main_table" / "tables" / "changed_baselines.csv").exists()
    assert (tmp_path / "main_table" / "figures" / "main_figure.png").is_file()


@pytest.mark.notebook
def test_method_walkthrough_teaches_by_hand_then_measures_every_target(tmp_path):
    reproduce(["method_walkthrough"], parameters={"repeats": 2}, output_dir=tmp_path, log=lambda _: None)
    out = tmp_path / "method_walkthrough"
    nb = check_clean(out / "method_walkthrough.ipynb", tmp_path)
    lines = [line for c in nb.cells if c.cell_type == "markdown" for line in c.source.splitlines()]
    sections = [line for line in lines if line.startswith("## ")]
    assert sections == ["## Takeaway", "## Results", "## Method details", "## Provenance"]
    takeaway = next(i for i, c in enumerate(nb.cells) if c.source == "## Takeaway") + 1
    said = "".join(o["data"]["text/markdown"] for o in nb.cells[takeaway].outputs if "text/markdown" in o["data"])
    sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z])", said.strip())
    assert 1 <= len(sentences) <= 3 and all(len(s) <= 300 for s in sentences), sentences
    text = json.dumps(nb)
    assert "SYNTHETIC" in text and text.count("$$") >= 12  # the tiny matrix is labelled; six display equations
    # each GSM8K step shows its figure
    shown = set(image_cells(nb))
    for call in ("tb.g_set(source", "tb.native_sources(source", "tb.n_set(source", "calibrated_estimate(native_mean"):
        cell = next(c for c in nb.cells if c.cell_type == "code" and call in c.source)
        assert cell.id in shown, call
    metrics = json.loads((out / "metrics.json").read_text())
    truths = SPECS["gsm8k"].load().target.values.mean(axis=1)
    worked = metrics["worked_target"]
    assert worked == walkthrough.median_target(truths) and abs(truths[worked] - np.median(truths)) < 0.01
    assert metrics["items_asked"] == 30 == len(metrics["g_set"]) + len(metrics["n_set"])
    table = pd.read_csv(out / "tables" / "all_targets.csv")
    assert list(table.columns) == ["target", "truth", "estimate", "probe_mean"]
    assert table["target"].tolist() == list(range(len(truths)))
    # the worked example is its row of the table; the calibrated estimate beats the plain mean of the same items
    assert table.loc[worked, "estimate"] == pytest.approx(metrics["worked"]["estimate"], abs=1e-5)
    error = {column: (table[column] - table["truth"]).abs().mean() for column in ("estimate", "probe_mean")}
    assert error["estimate"] < 0.06 < error["probe_mean"]
    for figure in ("pipeline", "g_set", "native_sources", "probe", "calibration", "every_target"):
        assert (out / "figures" / f"{figure}.png").is_file()


@pytest.mark.notebook
def test_tutorial_runs_the_real_workflow(tmp_path):
    reproduce(["tutorial_evaluate_your_model"], output_dir=tmp_path, log=lambda _: None)
    out = tmp_path / "tutorial_evaluate_your_model"
    nb = check_clean(out / "tutorial_evaluate_your_model.ipynb", tmp_path)
    assert len(image_cells(nb)) == 4
    # the steps are the shell commands a user types, run in the kernel's environment
    commands = [c.source for c in nb.cells if c.cell_type == "code" and c.source.startswith("!")]
    assert [c.split()[2:4] for c in commands] == [["tailoredbench", "plan"]] * 2 + [["tailoredbench", "estimate"]]
    printed = "".join(o.get("text", "") for c in nb.cells for o in c.get("outputs", []))
    assert "wrote plan/g_set.json" in printed and "wrote plan/n_set.json" in printed and "\x1b" not in printed
    metrics = json.loads((out / "metrics.json").read_text())
    assert 1 <= len(metrics["findings"]) <= 3 and all(len(line) <= 300 for line in metrics["findings"])
    assert len(metrics["items_used"]) == metrics["budget"] == 30
    assert abs(metrics["estimate"] - metrics["true_accuracy"]) < 0.1
    for figure in ("g_set", "native_families", "clusters", "calibration"):
        assert (out / "figures" / f"{figure}.png").is_file()


def test_quick_runs_never_replace_the_committed_reports_without_force(monkeypatch, tmp_path):
    from tailoredbench import batch

    (tmp_path / "gsm8k").mkdir()
    (tmp_path / "gsm8k" / "metrics.json").write_text("{}")
    monkeypatch.setattr(batch, "REPORTS", tmp_path)
    with pytest.raises(TailoredBenchError, match="--force"):
        reproduce(["gsm8k"], quick=True, output_dir=tmp_path, log=lambda _: None)


def test_reproduce_refuses_to_replace_a_report_with_other_parameters(tmp_path):
    (tmp_path / "gsm8k").mkdir()
    (tmp_path / "gsm8k" / "mine.txt").write_text("keep")
    with pytest.raises(TailoredBenchError, match="--force"):
        reproduce(["gsm8k"], parameters={"runs": 1}, output_dir=tmp_path, log=lambda _: None)
    assert (tmp_path / "gsm8k" / "mine.txt").read_text() == "keep"


@pytest.mark.notebook
def test_suite_notebook_smoke(tmp_path):
    """Papermill with small parameters, then the recorded metrics, within their ranges."""
    reproduce(["suite"], parameters={"runs": 1, "max_models": 200}, output_dir=tmp_path, log=lambda _: None)
    out = tmp_path / "suite"
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["parameters"]["runs"] == 1 and metrics["package_version"] and metrics["git_commit"]
    findings = metrics["findings"]
    assert 1 <= len(findings) <= 3 and all(len(line) <= 300 for line in findings)
    assert findings[0].startswith("Planned jointly, TailoredBench+'s MAE per benchmark is ")
    benchmarks = {"open_llm_tiny": 5, "arc_truthfulqa": 2}
    assert list(metrics["summary"]) == list(benchmarks)
    pairs = {
        (mode, m) for mode in ("joint", "independent") for m in ("tailoredbench", "tailored_plus", "random_regression")
    }
    for name, rows in metrics["summary"].items():
        assert {(r["mode"], r["method"]) for r in rows} == pairs | {
            ("independent", "gp_irt"),
            ("independent", "random"),
        }
        for r in rows:
            assert len(r["mae_by_benchmark"]) == benchmarks[name] and r["items"] == 20 * benchmarks[name]
            assert 0 < r["suite_mae"] <= r["mae"] < 0.15  # the mean's error is at most the errors' mean
            assert 0.5 <= r["coverage"] <= 1 and 0.5 <= r["suite_coverage"] <= 1
    suites = metrics["suites"]
    assert suites["open_llm_tiny"]["n_models_common"] == 1989 and suites["open_llm_tiny"]["max_models"] == 200
    assert (suites["arc_truthfulqa"]["n_source"], suites["arc_truthfulqa"]["n_target"]) == (50, 51)
    assert all(re.fullmatch("[0-9a-f]{64}", f["sha256"]) for s in suites.values() for f in s["files"])
    tables = metrics["tables"]
    gains = tables["gains"]
    assert {(r["suite"], r["method"]) for r in gains} == {
        (s, m) for s in benchmarks for m in ("tailored_plus", "tailoredbench", "random_regression")
    }
    assert all(0.3 < r["ratio"] < 2 and r["verdict"] in ("gain", "tie", "loss") for r in gains)
    assert all(0 <= r["r2"] <= 1 and -1 <= r["mean_r"] <= 1 for r in tables["predictability"])
    weights = tables["stacking_weights"]
    assert all(
        sum(r[c] for c in ("calibrated", "local_regression", "neighbours", "uncalibrated")) == pytest.approx(1)
        for r in weights
    )
    for name in ("summary", "by_benchmark", "gains", "predictability", "correlations", "stacking_weights"):
        assert (out / "tables" / f"{name}.csv").is_file() and (out / "tables" / f"{name}.md").is_file()
    assert [p.name for p in (out / "figures").glob("*.png")] == ["joint_vs_independent.png"]
    nb = check_clean(out / "suite.ipynb", tmp_path)
    assert len(image_cells(nb)) == 1
    assert shown_text(nb, 'Markdown(" ".join(findings))') == " ".join(
        findings
    )  # the takeaway shown is the one recorded
    assert "$$" in json.dumps(nb) and "sha256" in shown_text(nb, "suite_provenance(")
