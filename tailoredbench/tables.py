"""Tables of a simulation's summary: CSV (raw numbers), Markdown and LaTeX (mean ± s.e., best in bold)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from . import atomic

#: For each metric, whether larger is better (used to put the best value in bold).
METRICS = {"mae": False, "kendall_tau": True}


def write_table(table: pd.DataFrame, directory: str | Path, name: str) -> None:
    """Write ``<name>.csv`` (6 significant digits) and ``<name>.md`` (4 decimals) of a table as it is."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    atomic.write_text(directory / f"{name}.csv", table.to_csv(index=False, float_format="%.6g"))
    atomic.write_text(directory / f"{name}.md", table.to_markdown(index=False, floatfmt=".4f") + "\n")


def best_mask(summary: pd.DataFrame, keys=("budget",)) -> pd.Series:
    """True where a row holds the best mean of its metric within its ``keys`` group."""
    marks = {}
    for metric, larger in METRICS.items():
        grouped = summary.groupby(list(keys))[metric]
        best = grouped.transform("max" if larger else "min")
        marks[metric] = np.isclose(summary[metric], best)
    return pd.DataFrame(marks, index=summary.index)


def formatted(summary: pd.DataFrame, style: str, keys=("budget",), decimals: int = 3) -> pd.DataFrame:
    """The summary with "mean ± se" cells, the best of each group in bold (``markdown`` or ``latex``)."""
    marks = best_mask(summary, keys)
    out = summary[[*keys, "method"]].copy()
    for metric, label in (("mae", "MAE"), ("kendall_tau", "tau")):
        cells = []
        for i, r in summary.iterrows():
            mean, se = f"{r[metric]:.{decimals}f}", f"{r[f'{metric}_se']:.{decimals}f}"
            if style == "latex":
                mean = rf"\textbf{{{mean}}}" if marks.loc[i, metric] else mean
                cells.append(rf"{mean} $\pm$ {se}")
            else:
                cells.append(f"**{mean}** ± {se}" if marks.loc[i, metric] else f"{mean} ± {se}")
        out[label] = cells
    return out


def write_tables(summary: pd.DataFrame, directory: str | Path, name: str = "summary", keys=("budget",)) -> list[Path]:
    """Write ``<name>.csv`` (raw numbers), ``<name>.md`` and ``<name>.tex`` (best in bold)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    summary = summary.sort_values([*keys, "method"], kind="stable").reset_index(drop=True)
    paths = [directory / f"{name}.csv", directory / f"{name}.md", directory / f"{name}.tex"]
    atomic.write_text(paths[0], summary.to_csv(index=False, float_format="%.6g"))
    atomic.write_text(paths[1], formatted(summary, "markdown", keys).to_markdown(index=False) + "\n")
    atomic.write_text(
        paths[2],
        formatted(summary, "latex", keys).to_latex(index=False, escape=False, column_format="l" * (len(keys) + 3)),
    )
    return paths
