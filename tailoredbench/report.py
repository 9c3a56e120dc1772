"""What a notebook writes under ``reports/<name>/``: tables, figures and ``metrics.json``, and reading them back."""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from .figures import plot_budget_curves, plot_estimates
from .methods import get_method
from .metrics import per_run_metrics
from .provenance import code_is_current, file_at, git_commit, jsonable, write_metrics
from .tables import write_table, write_tables


def write_report(sim, directory: str | Path, *, title: str = "", **extra) -> dict:
    """Everything a benchmark notebook regenerates, under ``directory``.

    ``tables/summary.{csv,md,tex}``, ``tables/per_run.csv``, ``figures/budget_curves.png``,
    ``figures/estimates.png`` and ``metrics.json``. Returns the metrics record.
    """
    directory = Path(directory)
    (directory / "figures").mkdir(parents=True, exist_ok=True)
    write_tables(sim.summary, directory / "tables")
    per_run_metrics(sim.results).to_csv(directory / "tables" / "per_run.csv", index=False, float_format="%.6g")
    plot_budget_curves(sim.summary, directory / "figures" / "budget_curves.png", title=title)
    budgets = sim.settings["budgets"]
    plot_estimates(sim.results, directory / "figures" / "estimates.png", budget=budgets[len(budgets) // 2], title=title)
    plt.close("all")
    return write_metrics(
        directory / "metrics.json",
        parameters=sim.settings,
        benchmark=sim.benchmark,
        summary=sim.summary,
        seconds_per_run=sim.seconds_per_run,
        **extra,
    )


def collect(reports_dir: str | Path, names) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Summaries of several benchmark reports in one table, and one row of provenance per report."""
    frames, meta = [], []
    for name in names:
        path = Path(reports_dir) / name / "metrics.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path}: run the {name} notebook first")
        record = json.loads(path.read_text())
        frame = pd.DataFrame(record["summary"])
        frame.insert(0, "benchmark", name)
        frames.append(frame)
        bench = record["benchmark"]
        meta.append(
            {
                "benchmark": name,
                "n_source": bench["n_source"],
                "n_target": bench["n_target"],
                "n_items": bench["n_items"],
                "runs": record["parameters"]["runs"],
                "git_commit": record["git_commit"],
                "from_current_code": code_is_current(record["git_commit"]),
            }
        )
    return pd.concat(frames, ignore_index=True), pd.DataFrame(meta)


def changed_since(commit: str, reports_dir: str | Path, names: Sequence[str], methods: Sequence[str]) -> pd.DataFrame:
    """``methods``' MAE and tau in the checkout's benchmark reports at ``commit`` beside those in ``reports_dir``.

    For results that a change to a method moved on purpose, shown side by side in the reports.
    """
    rows = []
    for name in names:
        before = pd.read_csv(io.StringIO(file_at(commit, f"reports/{name}/tables/summary.csv")))
        now = pd.read_csv(Path(reports_dir) / name / "tables" / "summary.csv")
        both = before.merge(now, on=["method", "budget"], suffixes=("_before", "_now"))
        both = both[both["method"].isin(methods)]
        rows.append(both[["method", "budget", "mae_before", "mae_now", "kendall_tau_before", "kendall_tau_now"]])
        rows[-1].insert(0, "benchmark", name)
    return pd.concat(rows, ignore_index=True)


def paper_comparison(table: pd.DataFrame, paper: dict, budget: int = 30) -> pd.DataFrame:
    """At ``budget``: our best baseline and TailoredBench MAE beside the paper's."""
    rows = []
    for name, (paper_baseline, paper_tailored) in paper.items():
        ours = table[(table["benchmark"] == name) & (table["budget"] == budget)]
        if ours.empty:
            continue
        baselines = ours[[get_method(m).kind == "baseline" for m in ours["method"]]]
        best = baselines.loc[baselines["mae"].idxmin()]
        tailored = ours[ours["method"] == "tailoredbench"].iloc[0]
        rows.append(
            {
                "benchmark": name,
                "paper best baseline": paper_baseline,
                "paper TailoredBench": paper_tailored,
                "paper reduction": 1 - paper_tailored / paper_baseline,
                "our best baseline": f"{best['mae']:.3f} ({best['method']})",
                "our TailoredBench": round(float(tailored["mae"]), 3),
                "our reduction": 1 - tailored["mae"] / best["mae"],
            }
        )
    return pd.DataFrame(rows)


def write_study(directory, tables: Mapping[str, pd.DataFrame], *, parameters: dict, findings: Sequence[str], **extra):
    """Write each table as CSV and Markdown under ``tables/`` and ``metrics.json`` with the findings."""
    directory = Path(directory)
    (directory / "figures").mkdir(parents=True, exist_ok=True)
    for name, table in tables.items():
        write_table(table, directory / "tables", name)
    record = {
        "parameters": parameters,
        "findings": list(findings),
        "git_commit": git_commit(),
        "tables": {name: json.loads(t.to_json(orient="records")) for name, t in tables.items()},
        **extra,
    }
    (directory / "metrics.json").write_text(json.dumps(record, indent=2, default=jsonable) + "\n")
    return record
