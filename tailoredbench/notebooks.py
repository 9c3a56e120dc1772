"""The benchmark notebooks: generated from one template, executed by papermill.

``notebooks/<benchmark>.ipynb`` are all made by :func:`benchmark_notebook` from the
same cells; only the literals of the ``parameters`` cell and the opening text
differ. ``python -m tailoredbench.notebooks`` rewrites them, and a test checks that
the committed files equal what the template makes. :func:`reproduce` executes
notebooks with papermill into ``reports/<name>/``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from .errors import TailoredBenchError

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
REPORTS = ROOT / "reports"

ALL_METHODS = ["tailoredbench", "random", "anchor_points", "gp_irt", "random_regression"]

#: Per benchmark: the parameter literals and a sentence on the data.
BENCHMARK_NOTEBOOKS: dict[str, dict] = {
    "gsm8k": {
        "title": "GSM8K",
        "about": "The paper's own GSM8K data: 75 source and 75 target models x 1319 test items, "
        "split as given by the paper (accuracy-stratified, alternating). Models are unnamed.",
        "parameters": {"budgets": [20, 25, 30, 35, 40], "g_size": 10, "max_models": None},
    },
}

DEFAULT_PARAMETERS = {"runs": 100, "seed": 0, "jobs": 2, "distance": "manhattan"}


def _parameters_source(name: str, spec: dict) -> str:
    params = {
        "benchmark": name,
        "methods": ALL_METHODS,
        **spec["parameters"],
        **DEFAULT_PARAMETERS,
        "output_dir": f"../reports/{name}",
    }
    lines = ["# Parameters (papermill injects overrides below this cell)."]
    lines += [f"{key} = {value!r}" for key, value in params.items()]
    return "\n".join(lines)


_CELLS = [
    (
        "code",
        """import json
from pathlib import Path

from IPython.display import Image, Markdown, display

import tailoredbench as tb
from tailoredbench import report""",
    ),
    (
        "code",
        """bench = tb.load_benchmark(benchmark, max_models=max_models, seed=seed)
info = bench.summary()
display(Markdown(
    f"**Data.** {info['description']}  \\n"
    f"{info['n_source']} source and {info['n_target']} target models x {info['n_items']} items; "
    f"files: " + ", ".join(f"`{f['repo']}@{f['commit'][:7]}/{f['path']}`" for f in info["files"])
))""",
    ),
    (
        "markdown",
        "## Simulation\nEvery method estimates every target's accuracy from `budget` items, "
        "repeated over `runs` seeded runs.",
    ),
    (
        "code",
        """sim = tb.simulate(
    bench, methods=methods, budgets=budgets, runs=runs, seed=seed, n_jobs=jobs,
    g_size=g_size, distance=distance,
)
metrics = report.write_report(sim, output_dir, title=f"{benchmark}: {runs} runs")
print(json.dumps(sim.seconds_per_run, indent=1))""",
    ),
    ("markdown", "## MAE and Kendall's tau per budget\nMean ± standard error over runs; best of each budget in bold."),
    ("code", """display(Markdown((Path(output_dir) / "tables" / "summary.md").read_text()))"""),
    ("code", """display(Image(filename=str(Path(output_dir) / "figures" / "budget_curves.png")))"""),
    ("markdown", "## Estimated against true accuracy (one run)"),
    ("code", """display(Image(filename=str(Path(output_dir) / "figures" / "estimates.png")))"""),
]


def benchmark_notebook(name: str):
    """The notebook of benchmark ``name``, as an ``nbformat`` node."""
    import nbformat

    spec = BENCHMARK_NOTEBOOKS[name]
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    intro = (
        f"# {spec['title']}: TailoredBench against its baselines\n\n"
        f"{spec['about']}\n\n"
        "Generated from one template by `python -m tailoredbench.notebooks`; do not edit by hand. "
        "Run it with `tailoredbench reproduce --notebook " + name + "` (or `make reproduce` for all); "
        f"it writes `reports/{name}/`."
    )
    cells = [nbformat.v4.new_markdown_cell(intro)]
    cells.append(nbformat.v4.new_code_cell(_parameters_source(name, spec), metadata={"tags": ["parameters"]}))
    for kind, source in _CELLS:
        maker = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
        cells.append(maker(source))
    for i, cell in enumerate(cells):
        cell["id"] = f"{name}-{i}"
    nb.cells = cells
    return nb


def write_notebooks(directory: Path = NOTEBOOKS) -> list[Path]:
    """(Re)write every benchmark notebook from the template."""
    import nbformat

    paths = []
    for name in BENCHMARK_NOTEBOOKS:
        path = Path(directory) / f"{name}.ipynb"
        nbformat.write(benchmark_notebook(name), path)
        paths.append(path)
    return paths


#: Order in which ``make reproduce`` executes notebooks (later ones read earlier reports).
REPRODUCE_ORDER = [*BENCHMARK_NOTEBOOKS]


def reproduce(
    names=None,
    *,
    parameters: dict | None = None,
    notebooks_dir: Path = NOTEBOOKS,
    reports_dir: Path = REPORTS,
    log=print,
) -> list[Path]:
    """Execute notebooks with papermill; each writes ``reports/<name>/``.

    Parameters
    ----------
    names : list of str, optional
        Notebook names (without ``.ipynb``); all of :data:`REPRODUCE_ORDER` by default.
    parameters : dict, optional
        Overrides injected into every notebook's ``parameters`` cell.
    """
    import papermill as pm

    names = list(names or REPRODUCE_ORDER)
    unknown = [n for n in names if not (Path(notebooks_dir) / f"{n}.ipynb").is_file()]
    if unknown:
        raise TailoredBenchError(f"no notebook named {', '.join(unknown)} in {notebooks_dir}")
    outputs = []
    for name in names:
        out_dir = Path(reports_dir) / name
        out_dir.mkdir(parents=True, exist_ok=True)
        # Relative to the notebook's folder, where the kernel runs: no machine paths in reports.
        relative = os.path.relpath(out_dir.resolve(), Path(notebooks_dir).resolve())
        params = {"output_dir": relative, **(parameters or {})}
        start = time.perf_counter()
        output = out_dir / f"{name}.ipynb"
        pm.execute_notebook(
            str(Path(notebooks_dir) / f"{name}.ipynb"),
            str(output),
            parameters=params,
            cwd=str(Path(notebooks_dir)),
            progress_bar=False,
            kernel_name="python3",
        )
        log(f"{name}: {time.perf_counter() - start:.0f} s -> {out_dir}")
        outputs.append(output)
    return outputs


if __name__ == "__main__":
    for written in write_notebooks():
        print(written)
