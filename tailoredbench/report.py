"""What a notebook writes under ``reports/<name>/`` and where it came from.

Tables (CSV for the raw numbers, Markdown and LaTeX with the best in bold), ``metrics.json``
with the code's commit, the package version and the versions that computed it, and
reading them back.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from . import atomic
from ._version import __version__
from .datasets import SPECS
from .environment import versions
from .methods import PAPER_METHODS, kind_of
from .metrics import per_run_metrics, within_noise

# Tables

#: For each metric, whether larger is better, and its name in a table's title.
METRICS = {"mae": False, "kendall_tau": True}
LABELS = {"mae": "MAE", "kendall_tau": "Kendall's tau"}
#: The method the readings are about; the others are compared with the best baseline among them.
TAILORED = "tailoredbench"
#: Half a unit of the paper's last printed decimal: its figures are rounded to three.
PAPER_ROUNDING = 0.0005
#: A standard error below this is no error: the mean was the same in every run.
NO_ERROR = 1e-12


def write_table(table: pd.DataFrame, directory: str | Path, name: str) -> None:
    """Write ``<name>.csv`` (6 significant digits) and ``<name>.md`` (4 decimals) of a table as it is."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    atomic.write_text(directory / f"{name}.csv", table.to_csv(index=False, float_format="%.6g"))
    atomic.write_text(directory / f"{name}.md", table.to_markdown(index=False, floatfmt=".4f") + "\n")


def se_decimals(ses, least: int = 3, most: int = 4) -> int:
    """Decimals at which every standard error shows a digit, from ``least`` to ``most``.

    Examples
    --------
    >>> se_decimals([0.0012, 0.004]), se_decimals([0.00026, 0.004]), se_decimals([0.0, 0.004])
    (3, 4, 3)
    """
    positive = [float(s) for s in ses if np.isfinite(s) and s > NO_ERROR]
    if not positive:
        return least
    return int(np.clip(np.ceil(-np.log10(min(positive)) - 1e-9), least, most))


def cell(mean: float, se: float, decimals: int, bold: bool = False, style: str = "markdown") -> str:
    """``mean ± se``, the mean in bold if asked (``markdown`` or ``latex``)."""
    value = f"{mean:.{decimals}f}"
    bound = 0.5 * 10**-decimals
    # "± 0.0000" hides whether there is an error: none is "± 0", one that rounds to zero shows its bound
    below = "$<$ " if style == "latex" else "<\u00a0"
    error = "0" if se <= NO_ERROR else f"{below}{bound:.{decimals + 1}f}" if se < bound else f"{se:.{decimals}f}"
    if style == "latex":
        return (rf"\textbf{{{value}}}" if bold else value) + rf" $\pm$ {error}"
    # a no-break space: a narrow column wraps "mean ± se" before the "±", never after it
    return (f"**{value}**" if bold else value) + f" ±\u00a0{error}"


def leaders(summary: pd.DataFrame, metric: str = "mae", keys=("budget",)) -> pd.Series:
    """True where a row holds the best mean of its ``keys`` group or one within noise of it (a tie with the best)."""
    larger = METRICS[metric]
    marks = pd.Series(False, index=summary.index)
    for _, part in summary.groupby(list(keys)):
        best = part[metric].idxmax() if larger else part[metric].idxmin()
        b, b_se = part.at[best, metric], part.at[best, f"{metric}_se"]
        for i, row in part.iterrows():
            marks[i] = i == best or within_noise(row[metric], row[f"{metric}_se"], b, b_se)
    return marks


def quality_order(summary: pd.DataFrame, metric: str = "mae") -> list[str]:
    """The methods best first: by mean rank over the budgets (and benchmarks), then by mean value."""
    larger = METRICS[metric]
    groups = [k for k in ("benchmark", "budget") if k in summary]
    ranked = summary.assign(rank=summary.groupby(groups)[metric].rank(ascending=not larger))
    means = ranked.groupby("method").agg(rank=("rank", "mean"), value=(metric, "mean"))
    means["value"] = -means["value"] if larger else means["value"]
    return list(means.sort_values(["rank", "value"], kind="stable").index)


def _cells(frame: pd.DataFrame, metric: str, key: str, style: str) -> dict:
    """Each (``key``, method)'s ``mean ± se``; bold: the best of its ``key`` group and its ties."""
    decimals, bold = se_decimals(frame[f"{metric}_se"]), leaders(frame, metric, keys=(key,))
    return {
        (r[key], r["method"]): cell(r[metric], r[f"{metric}_se"], decimals, bold[i], style) for i, r in frame.iterrows()
    }


def _escaped(names, style: str) -> list[str]:
    return [str(n).replace("_", r"\_") for n in names] if style == "latex" else [str(n) for n in names]


def pivot(summary: pd.DataFrame, metric: str = "mae", style: str = "markdown", order=None) -> pd.DataFrame:
    """Budgets down, methods across (best first), ``mean ± se`` cells; bold: each budget's best and its ties.

    ``order`` fixes the columns' order (by default :func:`quality_order` on ``metric``).
    """
    order = list(order or quality_order(summary, metric))
    cells = _cells(summary, metric, "budget", style)
    budgets = sorted(summary["budget"].unique())
    rows = [[int(b), *(cells.get((b, m), "") for m in order)] for b in budgets]
    return pd.DataFrame(rows, columns=["budget", *_escaped(order, style)])


def at_budget(
    table: pd.DataFrame, budget: int = 30, metric: str = "mae", paper=None, style: str = "markdown", order=None
) -> pd.DataFrame:
    """Benchmarks down, methods across (best first), at one budget; bold: each benchmark's best and its ties.

    With ``paper`` (``{benchmark: (best baseline, TailoredBench)}``, the paper's MAE), a last
    column sets the paper's two figures beside ours. ``order`` fixes the columns' order.
    """
    part = table[table["budget"] == budget].reset_index(drop=True)
    order = list(order or quality_order(part, metric))
    benchmarks = list(dict.fromkeys(part["benchmark"]))
    cells = _cells(part, metric, "benchmark", style)
    rows = [[name, *(cells.get((name, m), "") for m in order)] for name in benchmarks]
    columns = ["benchmark", *order]
    if paper is not None:
        arrow = r"$\to$" if style == "latex" else "→"
        columns.append("paper: best baseline → TailoredBench".replace("→", arrow))
        for row, name in zip(rows, benchmarks, strict=True):
            row.append(f"{paper[name][0]:.3f} {arrow} {paper[name][1]:.3f}" if name in paper else "")
    return pd.DataFrame(rows, columns=_escaped(columns, style))


def _sections(summary: pd.DataFrame, style: str) -> str:
    """Every pivoted table of a summary (per metric, and per benchmark if it has several), columns in one order."""
    parts, order = [], quality_order(summary)  # one column order for every table, by MAE
    if "benchmark" in summary:
        groups = [(name, part.drop(columns="benchmark")) for name, part in summary.groupby("benchmark", sort=False)]
    else:
        groups = [("", summary)]
    for name, part in groups:
        part = part.reset_index(drop=True)
        runs = int(part["runs"].max()) if "runs" in part else None
        for metric in METRICS:
            title = f"{name}: " * bool(name) + LABELS[metric] + (f", {runs} runs" if runs else "")
            frame = pivot(part, metric, style, order=[m for m in order if m in set(part["method"])])
            if style == "latex":
                body = frame.to_latex(index=False, escape=False, column_format="r" + "l" * (frame.shape[1] - 1))
                parts.append(f"% {title}\n{body}")
            else:
                parts.append(f"**{title}** (mean ± standard error; bold: the best and any within noise of it)\n\n")
                parts[-1] += frame.to_markdown(index=False) + "\n"
    return "\n".join(parts)


def write_tables(summary: pd.DataFrame, directory: str | Path, name: str = "summary") -> list[Path]:
    """Write ``<name>.csv`` (the raw numbers), and ``<name>.md`` and ``<name>.tex`` (budget by method, per metric).

    A ``benchmark`` column gives one table per benchmark and metric.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    keys = [k for k in ("benchmark", "budget") if k in summary]
    raw = summary.sort_values([*keys, "method"], kind="stable").reset_index(drop=True)
    paths = [directory / f"{name}.csv", directory / f"{name}.md", directory / f"{name}.tex"]
    atomic.write_text(paths[0], raw.to_csv(index=False, float_format="%.6g"))
    atomic.write_text(paths[1], _sections(summary, "markdown"))
    atomic.write_text(paths[2], _sections(summary, "latex"))
    return paths


# Provenance

#: The checkout this package runs from (git commands take their paths relative to it).
CHECKOUT = Path(__file__).resolve().parents[1]


def folder(path: str | Path) -> Path:
    """A notebook's folder argument as a path: a relative one counts from ``notebooks/``, wherever the kernel runs.

    So ``papermill`` started from any folder writes inside the project, as JupyterLab does.

    >>> folder("../scratch/gsm8k") == CHECKOUT / "scratch" / "gsm8k"
    True
    """
    path = Path(path)
    return path if path.is_absolute() else (CHECKOUT / "notebooks" / path).resolve()


def git_commit(path: str | Path | None = None) -> str | None:
    """The checkout's commit, with ``-dirty`` when the package or notebooks have uncommitted changes."""
    cwd = Path(path or CHECKOUT)

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, check=True, timeout=60
        ).stdout.strip()

    try:
        head = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", "tailoredbench", "notebooks")
    except (OSError, subprocess.SubprocessError):  # no git, not a checkout, or git waiting on something
        return None
    return f"{head}-dirty" if dirty else head


def code_is_current(commit: str | None, path: str | Path | None = None) -> bool:
    """Whether ``commit`` (from a metrics.json) has the same package, notebooks and registry as HEAD."""
    if not commit or commit.endswith("-dirty"):
        return False
    cwd = Path(path or CHECKOUT)
    try:
        diff = subprocess.run(
            ["git", "diff", "--quiet", commit, "HEAD", "--", "tailoredbench", "notebooks", "data"], cwd=cwd, timeout=60
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return diff.returncode == 0


def write_metrics(path: str | Path, *, parameters: dict, benchmark: dict, summary: pd.DataFrame, **extra) -> dict:
    """``metrics.json``: parameters, data provenance, code version and summary figures."""
    record = {
        "parameters": parameters,
        "benchmark": benchmark,
        "package_version": __version__,
        "git_commit": git_commit(),
        "environment": versions(),
        "summary": json.loads(summary.to_json(orient="records")),
        **extra,
    }
    atomic.write_text(path, json.dumps(record, indent=2, default=jsonable) + "\n")
    return record


def jsonable(value):
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


# Reports


def write_report(sim, directory: str | Path, **extra) -> dict:
    """The tables and ``metrics.json`` of a benchmark notebook, under ``directory``.

    ``tables/summary.{csv,md,tex}``, ``tables/per_run.csv`` and ``metrics.json``; the notebook
    draws its figures itself, so that they show in its cells. Returns the metrics record.
    """
    directory = Path(directory)
    (directory / "figures").mkdir(parents=True, exist_ok=True)
    write_tables(sim.summary, directory / "tables")
    per_run = per_run_metrics(sim.results).to_csv(index=False, float_format="%.6g")
    atomic.write_text(directory / "tables" / "per_run.csv", per_run)
    return write_metrics(
        directory / "metrics.json",
        parameters=sim.settings,
        benchmark=sim.benchmark,
        summary=sim.summary,
        seconds_per_run=sim.seconds_per_run,
        **extra,
    )


# Readings: sentences built from a run's own numbers


def listed(words) -> str:
    """Words joined by commas and a last "and" (``a, b and c``)."""
    words = list(words)
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words)


def _called(method: str) -> str:
    return "TailoredBench" if method == TAILORED else method


def title(benchmark: str) -> str:
    """A benchmark's short title for prose (``GSM8K``), or its name if it has none."""
    spec = SPECS.get(benchmark)
    return spec.title.split(" (")[0] if spec else benchmark


def headline_budget(summary: pd.DataFrame, preferred: int = 30) -> int:
    """The budget a notebook's headline is about: the paper's 30 items if run, else the middle one."""
    budgets = sorted(int(b) for b in summary["budget"].unique())
    return preferred if preferred in budgets else budgets[len(budgets) // 2]


@dataclass(frozen=True)
class Match:
    """A method's mean against the best baseline's at one budget, on one metric, with both standard errors."""

    budget: int
    metric: str
    method: str
    value: float
    se: float
    rival: str
    rival_value: float
    rival_se: float

    @property
    def tie(self) -> bool:
        return within_noise(self.value, self.se, self.rival_value, self.rival_se)

    @property
    def outcome(self) -> str:
        """``"win"``, ``"tie"`` (within two standard errors of the difference) or ``"loss"``."""
        if self.tie:
            return "tie"
        better = self.value > self.rival_value if METRICS[self.metric] else self.value < self.rival_value
        return "win" if better else "loss"

    @property
    def ratio(self) -> float:
        return self.value / self.rival_value if self.rival_value else float("inf")

    def change(self, prose: bool = False) -> str:
        """The gap to the rival as better or worse (for MAE relative, for tau in points); a tie says so.

        With ``prose``, words that go before "the best baseline's" in a sentence.

        Examples
        --------
        >>> Match(30, "mae", "tailoredbench", 0.0280, 0.0002, "gp_irt", 0.0250, 0.0002).change()
        '12% worse'
        >>> Match(30, "mae", "tailoredbench", 0.0583, 0.0059, "gp_irt", 0.0123, 0.0001).change(prose=True)
        '4.7 times'
        """
        if self.metric == "mae":
            r = self.ratio
            if r >= 2:
                words = f"{r:.1f} times" if prose else f"worse: {r:.1f}× the MAE"
            else:
                words = f"{1 - r:.0%} better" if r < 1 else f"{r - 1:.0%} worse"
        else:
            gap = self.value - self.rival_value
            words = f"{abs(gap):.3f} {'better' if gap >= 0 else 'worse'}"
        if prose:
            return words if " times" in words else words + " than"
        return f"tie ({words})" if self.tie else words

    def cells(self, decimals: int) -> tuple[str, str]:
        return cell(self.value, self.se, decimals), cell(self.rival_value, self.rival_se, decimals)


def _at(summary: pd.DataFrame, budget: int) -> pd.DataFrame:
    return summary[summary["budget"] == budget].set_index("method")


def _shown(part: pd.DataFrame, method: str, metric: str, decimals: int) -> str:
    return cell(part.at[method, metric], part.at[method, f"{metric}_se"], decimals)


def match(
    summary: pd.DataFrame, budget: int, metric: str = "mae", method: str = TAILORED, paper_only: bool = False
) -> Match | None:
    """``method`` against the best baseline at ``budget`` on ``metric``; ``None`` if either is missing.

    ``paper_only``: among the paper's baselines, so that a comparison with the paper compares like with like.
    """
    part = _at(summary, budget)
    rivals = [m != method and kind_of(m) == "baseline" and (not paper_only or m in PAPER_METHODS) for m in part.index]
    baselines = part[rivals]
    if method not in part.index or baselines.empty:
        return None
    rival = baselines[metric].idxmax() if METRICS[metric] else baselines[metric].idxmin()
    ours, theirs = part.loc[method], part.loc[rival]
    return Match(
        int(budget), metric, method, ours[metric], ours[f"{metric}_se"], rival, theirs[metric], theirs[f"{metric}_se"]
    )


def _tally(matches) -> str:
    """How often a method beats, ties and trails the best baseline, over the budgets of ``matches``.

    Examples
    --------
    >>> win, loss = Match(20, "mae", "t", 1, 0.01, "b", 2, 0.01), Match(30, "mae", "t", 2, 0.01, "b", 1, 0.01)
    >>> _tally([win, win]), _tally([win, loss, loss])
    ('beats every baseline at all 2 budgets', 'beats every baseline at 1 and trails the best at 2 of the 3 budgets')
    """
    n = len(matches)
    count = {o: sum(m.outcome == o for m in matches) for o in ("win", "tie", "loss")}
    words = {
        "win": "beats every baseline",
        "tie": "ties the best" + " baseline" * (not count["win"]),
        "loss": "trails it" if count["tie"] else "trails the best" + " baseline" * (not count["win"]),
    }
    for outcome, said in words.items():
        if count[outcome] == n:
            return f"{said} at all {n} budgets"
    return listed(f"{words[o]} at {count[o]}" for o in words if count[o]) + f" of the {n} budgets"


def _headline(m: Match, decimals: int, rival: str = "the best baseline") -> str:
    ours, theirs = m.cells(decimals)
    if m.outcome == "tie":
        return f"{ours}, against {theirs} for {rival}, {m.rival}: a tie, as the gap is within noise"
    return f"{ours}, {m.change(prose=True)} {rival}'s ({m.rival}, {theirs})"


def _paper_gap(ours: float, se: float, paper: float, what: str) -> str:
    """Our mean's gap to the paper's figure ``what``, in our standard errors, against our noise and its rounding."""
    gap = ours - paper
    said = f"{abs(gap):.4f} {'above' if gap > 0 else 'below'} {what}"
    if se <= NO_ERROR:
        verdict = (
            "within the paper's rounding" if abs(gap) <= PAPER_ROUNDING else "more than the paper's rounding explains"
        )
        return f"{said}, and ours is the same in every run: {verdict}"
    if rounding_explains(gap, se):
        return f"{said}: within our noise and the paper's rounding, the rounding (±{PAPER_ROUNDING}) the larger part"
    count = abs(gap / se)
    count_said = f"{count:.1f}" if count < 10 else f"{count:.0f}" if count < 100 else "over 100"
    verdict = "within" if abs(gap) <= 2 * se + PAPER_ROUNDING else "more than"
    explain = " explain" * (verdict == "more than")
    return f"{said}, {count_said} of our standard errors: {verdict} our noise and the paper's rounding{explain}"


def rounding_explains(gap: float, se: float) -> bool:
    """Whether a gap to the paper is beyond two of our standard errors but within them plus the paper's rounding."""
    return 2 * se < abs(gap) <= 2 * se + PAPER_ROUNDING


def _later(summary: pd.DataFrame, budget: int, metric: str = "mae") -> str:
    """A clause on the methods that came after the paper (not its baselines) at ``budget``, or nothing."""
    part = _at(summary, budget)
    later = [m for m in part.index if kind_of(m) == "baseline" and m not in PAPER_METHODS]
    decimals = se_decimals(part["mae_se"], least=4)
    said = [f"{m}, from after the paper, has {_shown(part, m, metric, decimals)}" for m in later]
    return "; " + listed(said) if said else ""


def takeaway(summary: pd.DataFrame, paper_mae_at_30=None, method: str = TAILORED) -> str:
    """At most three sentences on a benchmark's simulation: the headline budget, every budget, the paper.

    ``paper_mae_at_30`` is the paper's ``(best baseline, TailoredBench)`` MAE at 30 items.
    """
    budget = headline_budget(summary)
    runs = int(summary["runs"].max())
    decimals = se_decimals(summary["mae_se"], least=4)
    head = match(summary, budget, "mae", method, paper_only=True) or match(summary, budget, "mae", method)
    over = f"over {runs} run{'s' * (runs != 1)}" + (", too few for steady standard errors" if runs < 10 else "") + ","
    if head is None:  # nothing to compare: say who leads
        part = _at(summary, budget)
        best = part["mae"].idxmin()
        return f"At {budget} items, {over} the lowest MAE is {best}'s: {_shown(part, best, 'mae', decimals)}."
    budgets = sorted(int(b) for b in summary["budget"].unique())
    name = _called(method)
    decimals = se_decimals([head.se, head.rival_se], least=4)
    later = _later(summary, budget)
    rival = "the best paper baseline" if later and head.rival in PAPER_METHODS else "the best baseline"
    sentences = [f"At {budget} items, {over} {name}'s MAE is {_headline(head, decimals, rival)}{later}."]
    if len(budgets) > 1:
        mae = [match(summary, b, "mae", method, paper_only=True) for b in budgets]
        tau = [match(summary, b, "kendall_tau", method, paper_only=True) for b in budgets]
        sentences.append(
            f"Over the budgets {budgets[0]} to {budgets[-1]}, against the paper's baselines, on MAE it {_tally(mae)}; "
            "on Kendall's tau, "
            f"which measures how well the estimates rank the targets, it {_tally(tau)}."
        )
    if paper_mae_at_30 is not None and budget == 30 and method == TAILORED:
        base, tailored = paper_mae_at_30
        sentences.append(
            f"The paper reports {tailored:.3f} for TailoredBench and {base:.3f} for its best baseline at 30 items, "
            f"with no standard error; ours is {_paper_gap(head.value, head.se, tailored, 'its figure')}."
        )
    return " ".join(sentences)


def runs_reading(summary: pd.DataFrame, per_run: pd.DataFrame, method: str = TAILORED) -> str:
    """Two sentences on the MAE table: one run's spread against the mean's standard error, and random's level."""
    budget = headline_budget(summary)
    budgets = sorted(summary["budget"].unique())
    sentences = []
    runs = per_run[(per_run["method"] == method) & (per_run["budget"] == budget)]["mae"]
    if len(runs) > 1:
        se = runs.std(ddof=1) / np.sqrt(len(runs))
        sentences.append(
            f"The ± is the standard error of the mean over {len(runs)} runs, one run's spread divided by "
            f"√{len(runs)}: at {budget} items {_called(method)}'s MAE goes from {runs.min():.4f} to "
            f"{runs.max():.4f} from run to run, and the mean of {len(runs)} such runs is known to ±{se:.4f}."
        )
    if "random" in set(summary["method"]) and len(budgets) > 1:
        part = summary.set_index(["method", "budget"])["mae"]
        first, last = part[("random", budgets[0])], part[("random", budgets[-1])]
        best = summary.groupby("budget")["mae"].min()
        sentences.append(
            f"Random sampling, the plain way to spend the budget, has an MAE of {first:.4f} at {budgets[0]} items "
            f"and {last:.4f} at {budgets[-1]}; the best method's MAE is {best.iloc[0] / first:.0%} of that at "
            f"{budgets[0]} items and {best.iloc[-1] / last:.0%} at {budgets[-1]}."
        )
    return " ".join(sentences)


def tau_reading(summary: pd.DataFrame, results: pd.DataFrame | None = None) -> str:
    """A sentence on the tau table: the highest and lowest at the headline budget, and what the lowest means.

    With ``results`` (a simulation's per-target estimates) the lowest is read as the shares of pairs of targets
    its estimates put in the right order, in the wrong one and level (ties move tau-b off the steps of
    ``2 / pairs``); without, as the share in the right order were there no ties.
    """
    budget = headline_budget(summary)
    part = _at(summary, budget)
    high, low = part["kendall_tau"].idxmax(), part["kendall_tau"].idxmin()
    decimals = se_decimals(part.loc[[high, low], "kendall_tau_se"])
    shown = [_shown(part, m, "kendall_tau", decimals) for m in (low, high)]
    text = f"At {budget} items tau runs from {shown[0]} ({low}) to {shown[1]} ({high}). "
    tau = part.at[low, "kendall_tau"]
    if results is None:
        return text + (
            f"A tau of {tau:.2f} means that of two targets picked at random, the estimates put them in the right "
            f"order {(1 + tau) / 2:.0%} of the time, were there no ties."
        )
    right, wrong, level = pair_shares(results[(results["method"] == low) & (results["budget"] == budget)])
    return text + (
        f"Over the runs, {_called(low)}'s estimates put {right:.0%} of the pairs of targets in the right order, "
        f"{wrong:.0%} in the wrong one and {level:.0%} level with each other (tau counts a level pair as neither)."
    )


def pair_shares(results: pd.DataFrame) -> tuple[float, float, float]:
    """The shares of pairs of targets, pooled over runs, that the estimates put in the true order, in the other
    order, and level (equal estimates, or equal true accuracies).

    >>> frame = pd.DataFrame({"run": 0, "true": [0.1, 0.2, 0.3], "estimate": [0.1, 0.1, 0.05]})
    >>> tuple(round(s, 3) for s in pair_shares(frame))
    (0.0, 0.667, 0.333)
    """
    counts = np.zeros(3)
    for _, run in results.groupby("run"):
        true, estimate = run["true"].to_numpy(), run["estimate"].to_numpy()
        i, j = np.triu_indices(len(true), k=1)
        agree = np.sign(true[i] - true[j]) * np.sign(estimate[i] - estimate[j])
        counts += [(agree > 0).sum(), (agree < 0).sum(), (agree == 0).sum()]
    right, wrong, level = counts / counts.sum()
    return float(right), float(wrong), float(level)


def tau_steps_reading(summary: pd.DataFrame, per_run: pd.DataFrame, targets: int) -> str:
    """With few targets, tau moves in steps: the method whose tau moves most between budgets, its commonest tau
    per budget and how often it comes back; ``""`` with over 10 targets (a pair moves tau by under 0.05).
    """
    pairs = targets * (targets - 1) // 2
    if targets > 10:
        return ""
    spike = summary.groupby("method")["kendall_tau"].agg(lambda v: v.max() - v.min()).idxmax()
    taus = per_run[per_run["method"] == spike].assign(tau=lambda d: d["kendall_tau"].round(6))
    modes = taus.groupby("budget")["tau"].agg(lambda v: (v.mode().iloc[0], (v == v.mode().iloc[0]).mean()))
    return (
        f"{spike}'s tau moves most from budget to budget; its commonest tau over the runs is "
        + ", ".join(f"{tau:.1f} ({share:.0%} of runs) at {b} items" for b, (tau, share) in modes.items())
        + f". With {targets} targets tau counts {pairs} pairs, and, where no estimates tie, one pair in the other "
        f"order moves it by {2 / pairs:.1f}. Where one value comes back in most runs the method's estimates hardly "
        "change from run to run, and a jump between budgets is a pair or two of close targets changing order, not a "
        "trend."
    )


def curve_reading(summary: pd.DataFrame, method: str = TAILORED) -> str:
    """A sentence on the budget curves: how much more items buy, for ``method`` and random sampling."""
    budgets = sorted(summary["budget"].unique())
    if len(budgets) < 2:
        return ""
    part = summary.set_index(["method", "budget"])["mae"]
    shown = [m for m in (method, "random") if m in set(summary["method"])] or [quality_order(summary)[0]]
    falls = []
    for m in shown:
        first, last = part[(m, budgets[0])], part[(m, budgets[-1])]
        change = last / first - 1
        moved = "about the same" if abs(change) < 0.005 else f"{abs(change):.0%} {'lower' if change < 0 else 'higher'}"
        falls.append(f"{_called(m)}'s MAE goes from {first:.4f} to {last:.4f} ({moved})")
    return f"From {budgets[0]} to {budgets[-1]} items, {listed(falls)}."


def estimates_reading(results: pd.DataFrame, budget: int, run: int = 0) -> str:
    """A sentence on one run's estimates: the closest cloud, and the one most pulled towards the mean."""
    data = results[(results["budget"] == budget) & (results["run"] == run)]
    rows = []
    for method, part in data.groupby("method"):
        miss = (part["estimate"] - part["true"]).abs()
        slope = np.polyfit(part["true"], part["estimate"], 1)[0] if part["true"].nunique() > 1 else np.nan
        rows.append((method, miss.mean(), miss.max(), slope))
    frame = pd.DataFrame(rows, columns=["method", "mae", "worst", "slope"]).set_index("method")
    close = frame["mae"].idxmin()
    text = (
        f"In run {run} at {budget} items, {_called(close)}'s points lie closest to the line: off by "
        f"{frame.at[close, 'mae']:.3f} on average and {frame.at[close, 'worst']:.3f} at most"
    )
    flat = frame["slope"].idxmin()
    if frame.at[flat, "slope"] < 0:
        text += (
            f"; {_called(flat)}'s estimates fall as the true accuracy rises ({frame.at[flat, 'slope']:.2f} per unit): "
            "it ranks these targets backwards"
        )
    elif frame.at[flat, "slope"] < 0.9:
        text += (
            f"; {_called(flat)}'s cloud is the flattest, its estimates rising by {frame.at[flat, 'slope']:.2f} per "
            "unit of true accuracy, too high for weak models and too low for strong ones"
        )
    return text + "."


def paper_reading(summary: pd.DataFrame, paper_mae_at_30, method: str = TAILORED) -> str:
    """Two sentences setting our MAE at 30 items beside the paper's, our gaps in our standard errors."""
    m = match(summary, 30, "mae", method, paper_only=True)
    if paper_mae_at_30 is None or m is None or method != TAILORED:
        return "This run has no MAE at 30 items for TailoredBench and a baseline to set beside the paper's."
    base, tailored = paper_mae_at_30
    paper = Match(30, "mae", method, tailored, 0.0, "", base, 0.0)
    ours = "a tie with" if m.tie else m.change(prose=True)
    gaps = (
        _paper_gap(m.value, m.se, tailored, "the paper's"),
        _paper_gap(m.rival_value, m.rival_se, base, "the paper's best baseline"),
    )
    return (
        f"At 30 items the paper's TailoredBench is {paper.change(prose=True)} its best baseline ({tailored:.3f} "
        f"against {base:.3f}); ours is {ours} our best of the paper's baselines, {m.rival} ({m.value:.4f} against "
        f"{m.rival_value:.4f}). "
        f"Our TailoredBench is {gaps[0]}. Our best baseline is {gaps[1]}."
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
        commit = record["git_commit"]
        sizes = {k: bench[k] for k in ("n_source", "n_target", "n_items")}
        meta.append({"benchmark": name, **sizes, "runs": record["parameters"]["runs"], "git_commit": commit})
        meta[-1]["from_current_code"] = code_is_current(commit)
    return pd.concat(frames, ignore_index=True), pd.DataFrame(meta)


def reproduction(m: Match, paper_mae_at_30) -> str:
    """Whether ``m`` (TailoredBench against our best baseline at 30 items) reproduces the paper's gain.

    *Reproduced*: a clear gain of at least half the paper's; *a smaller gain*: a clear one under
    that; *not reproduced*: a tie or a loss.
    """
    base, tailored = paper_mae_at_30
    if m.outcome != "win":
        return "not reproduced (a tie)" if m.outcome == "tie" else "not reproduced (worse)"
    return "reproduced" if 1 - m.ratio >= (1 - tailored / base) / 2 else "a smaller gain"


def paper_comparison(table: pd.DataFrame, paper: dict, budget: int = 30) -> pd.DataFrame:
    """At ``budget``, per benchmark: the paper's MAE (best baseline, TailoredBench) beside ours, raw numbers.

    The paper gives no standard errors; ours come with each mean, and ``gap_in_se`` is our
    TailoredBench's distance to the paper's figure in them.
    """
    rows = []
    for name, (paper_baseline, paper_tailored) in paper.items():
        m = match(table[table["benchmark"] == name], budget, paper_only=True)
        if m is None:
            continue
        rows.append(
            {
                "benchmark": name,
                "paper_best_baseline": paper_baseline,
                "paper_tailoredbench": paper_tailored,
                "our_best_baseline": m.rival,
                "our_best_baseline_mae": m.rival_value,
                "our_best_baseline_se": m.rival_se,
                "our_tailoredbench_mae": m.value,
                "our_tailoredbench_se": m.se,
                "outcome": m.outcome,
                "gap_to_paper": m.value - paper_tailored,
                "gap_in_se": (m.value - paper_tailored) / m.se if m.se > 0 else float("nan"),
                "verdict": reproduction(m, (paper_baseline, paper_tailored)),
            }
        )
    return pd.DataFrame(rows)


#: :func:`paper_comparison`'s columns of our figures, as :class:`Match` takes them (``our_`` left off).
OURS = ("tailoredbench_mae", "tailoredbench_se", "best_baseline", "best_baseline_mae", "best_baseline_se")


def comparison_table(comparison: pd.DataFrame) -> pd.DataFrame:
    """:func:`paper_comparison` for reading: the paper's figures, ours with their errors, the changes, the verdict."""
    decimals = se_decimals([*comparison["our_tailoredbench_se"], *comparison["our_best_baseline_se"]], least=4)
    rows = []
    for _, r in comparison.iterrows():
        ours = Match(30, "mae", TAILORED, *r[[f"our_{k}" for k in OURS]])
        theirs = Match(30, "mae", TAILORED, r["paper_tailoredbench"], 0.0, "", r["paper_best_baseline"], 0.0)
        count = abs(r["gap_in_se"])
        gap = "" if np.isnan(count) else f" ({count:.1f} s.e.)" if count < 10 else f" ({count:.0f} s.e.)"
        if rounding_explains(r["gap_to_paper"], r["our_tailoredbench_se"]):
            gap = f" (within the paper's ±{PAPER_ROUNDING} rounding + 2 s.e.)"
        rows.append(
            {
                "benchmark": r["benchmark"],
                "paper: baseline → TailoredBench": f"{r['paper_best_baseline']:.3f} → {r['paper_tailoredbench']:.3f}",
                "paper's change": theirs.change(),
                "our best baseline": f"{cell(r['our_best_baseline_mae'], r['our_best_baseline_se'], decimals)} "
                f"({r['our_best_baseline']})",
                "our TailoredBench": cell(r["our_tailoredbench_mae"], r["our_tailoredbench_se"], decimals),
                "our change": ours.change(),
                "ours − paper's": f"{r['gap_to_paper']:+.{decimals}f}{gap}",
                "verdict": r["verdict"],
            }
        )
    return pd.DataFrame(rows)


def main_takeaway(table: pd.DataFrame, budget: int = 30, paper=None) -> str:
    """At most three sentences on the main table: TailoredBench per benchmark at ``budget``, the paper, tau."""
    of = {b: table[table["benchmark"] == b] for b in dict.fromkeys(table["benchmark"])}
    found = {b: match(part, budget, paper_only=True) for b, part in of.items()}
    mae = {b: m for b, m in found.items() if m is not None}
    if not mae:
        return f"No benchmark has TailoredBench and a baseline at {budget} items."
    groups = {o: [b for b, m in mae.items() if m.outcome == o] for o in ("win", "tie", "loss")}
    wins = []
    for b in groups["win"]:
        each = (match(of[b], int(x), paper_only=True) for x in sorted(of[b]["budget"].unique()))
        every = [m for m in each if m is not None]
        won = sum(m.outcome == "win" for m in every)
        when = f"at {budget} items only" if won == 1 else "not at every budget"
        when = f"at all {len(every)} budgets" if won == len(every) else f"{when}: it {_tally(every)}"
        wins.append(f"{title(b)} ({when})")
    losses = [f"{title(b)} ({mae[b].change(prose=True)} {mae[b].rival}'s)" for b in groups["loss"]]
    parts = [f"has a lower MAE than each of them on {listed(wins)}"] * bool(wins)
    parts += [f"ties the best of them on {listed(title(b) for b in groups['tie'])}"] * bool(groups["tie"])
    parts += [f"is worse on {listed(losses)}"] * bool(losses)
    # a baseline the paper does not run (fluid) may still beat TailoredBench: said beside the paper's comparison
    later: dict[str, list[str]] = {}
    for b in mae:
        m = match(of[b], budget)
        if m is not None and m.rival not in PAPER_METHODS and m.outcome == "loss":
            later.setdefault(m.rival, []).append(f"{title(b)} ({m.rival_value:.4f})")
    beyond = [
        f"{rival}, which the paper does not run, has a lower MAE on {listed(where)}" for rival, where in later.items()
    ]
    sentences = [f"At {budget} items, against the paper's baselines, TailoredBench {listed(parts)}"]
    if paper:
        short = {"reproduced": "reproduced", "a smaller gain": "smaller", "not reproduced": "not reproduced"}
        verdicts: dict[str, list[str]] = {v: [] for v in short.values()}
        for b, m in mae.items():
            if b in paper:
                verdicts.setdefault(short[reproduction(m, paper[b]).split(" (")[0]], []).append(title(b))
        said = [f"{v} on {listed(names)}" for v, names in verdicts.items() if names]
        sentences.append(
            f"Set beside the paper's gain over its best baseline, its gain over the paper's baselines is {listed(said)}"
        )
    if beyond:  # in the paper's sentence if there is one, else the first
        sentences[-1] += f"; {listed(beyond)}"
    sentences = [sentence + "." for sentence in sentences]
    tau = {b: match(of[b], budget, "kendall_tau", paper_only=True) for b in mae}
    best, tied = ([title(b) for b, m in tau.items() if m is not None and m.outcome == o] for o in ("win", "tie"))
    said = [f"ranks the targets best on {listed(best) or 'none'}"]
    said += [f"ties the best of them on {listed(tied)}"] * bool(tied)
    sentences.append(
        f"On Kendall's tau, against the same baselines, of {len(tau)} benchmark{'s' * (len(tau) != 1)}, it "
        f"{listed(said)}."
    )
    return " ".join(sentences)


def leaders_reading(table: pd.DataFrame) -> str:
    """A sentence on the main figure: per benchmark, the method with the best mean MAE, and tau, at most budgets.

    Examples
    --------
    >>> table = pd.DataFrame({"benchmark": ["x"] * 4, "budget": [10, 10, 20, 20], "method": ["a", "b"] * 2,
    ...                       "mae": [0.02, 0.03, 0.02, 0.01], "kendall_tau": [0.5, 0.6, 0.7, 0.8]})
    >>> leaders_reading(table)
    'The lowest mean MAE at the most budgets: a on x (1 of 2). The highest mean tau: b on x (2 of 2).'
    """
    said = []
    for metric, words in (("mae", "The lowest mean MAE at the most budgets"), ("kendall_tau", "The highest mean tau")):
        groups = table.groupby(["benchmark", "budget"], sort=False)[metric]
        best = table.loc[groups.idxmax() if METRICS[metric] else groups.idxmin()]
        where: dict[str, list[str]] = {}
        for benchmark, part in best.groupby("benchmark", sort=False):
            counts = part["method"].value_counts(sort=False)
            where.setdefault(counts.idxmax(), []).append(f"{title(benchmark)} ({counts.max()} of {len(part)})")
        said.append(f"{words}: " + "; ".join(f"{_called(m)} on {listed(places)}" for m, places in where.items()) + ".")
    return " ".join(said)


def spread_reading(table: pd.DataFrame, budget: int = 30) -> str:
    """A sentence on the benchmark-by-method table: random sampling's error, and how far the best method cuts it."""
    part = table[table["budget"] == budget]
    if "random" not in set(part["method"]):
        return ""
    by = part.groupby("benchmark", sort=False)
    random = part[part["method"] == "random"].set_index("benchmark")["mae"]
    best = by["mae"].min()
    cut = (best / random).dropna()
    low, high = random.idxmin(), random.idxmax()
    return (
        f"Random sampling, the plain way to spend {budget} items, has an MAE from {random[low]:.3f} "
        f"({title(low)}) to {random[high]:.3f} ({title(high)}); the best method on each benchmark has "
        f"{cut.min():.0%} to {cut.max():.0%} of random's."
    )


def tau_spread_reading(table: pd.DataFrame, sources: pd.DataFrame, budget: int = 30) -> str:
    """A sentence on the tau table: the best tau per benchmark, lowest and highest, with the pairs it counts."""
    best = table[table["budget"] == budget].groupby("benchmark", sort=False)["kendall_tau"].max()
    targets = sources.set_index("benchmark")["n_target"]
    low, high = best.idxmin(), best.idxmax()

    def pairs(b):
        n = int(targets[b])
        return f"whose {n} targets make {n * (n - 1) // 2} pairs"

    return (
        f"The best tau at {budget} items ranges from {best[low]:.3f} on {title(low)}, {pairs(low)}, to "
        f"{best[high]:.3f} on {title(high)}, {pairs(high)}: with few targets, one pair put in the wrong order moves "
        "tau by a lot."
    )


def comparison_reading(comparison: pd.DataFrame) -> str:
    """A sentence on :func:`paper_comparison`: where our TailoredBench's gap to the paper's is beyond noise."""
    beyond: list[str] = []
    within: list[str] = []
    for _, r in comparison.iterrows():
        se, gap = r["our_tailoredbench_se"], abs(r["gap_to_paper"])
        (within if gap <= 2 * se + PAPER_ROUNDING else beyond).append(title(r["benchmark"]))
    said = [f"by more than our noise and the paper's rounding on {listed(beyond)}"] * bool(beyond)
    said += [f"within them on {listed(within)}"] * bool(within)
    return (
        f"Our TailoredBench's MAE differs from the paper's {' and '.join(said)}. A gap beyond them is a difference "
        "between the two experiments (data, models or a detail of the method), not the noise of our runs."
    )


def write_main_report(
    table: pd.DataFrame, sources: pd.DataFrame, comparison: pd.DataFrame, directory: str | Path, parameters: dict
) -> dict:
    """The main table's tables and ``metrics.json``, under ``directory``.

    ``tables/main_table.{csv,md,tex}`` (every benchmark, budget and method), ``sources.csv``
    (the reports read) and ``paper_comparison.{csv,md}`` (at 30 items, beside the paper's).
    """
    directory = Path(directory)
    (directory / "figures").mkdir(parents=True, exist_ok=True)
    tables = directory / "tables"
    write_tables(table, tables, "main_table")
    atomic.write_text(tables / "sources.csv", sources.to_csv(index=False))
    atomic.write_text(tables / "paper_comparison.csv", comparison.to_csv(index=False, float_format="%.6g"))
    atomic.write_text(tables / "paper_comparison.md", comparison_table(comparison).to_markdown(index=False) + "\n")
    return write_metrics(
        directory / "metrics.json",
        parameters=parameters,
        benchmark={"inputs": sources.to_dict(orient="records")},
        summary=table,
        paper_comparison=comparison.to_dict(orient="records"),
    )


def provenance(record: Mapping) -> pd.DataFrame:
    """What made a benchmark report, one row per fact, from its ``metrics.json`` record."""
    bench, parameters = record["benchmark"], record["parameters"]
    seconds = record.get("seconds_per_run", {})
    rows = [
        *_file_rows(bench.get("files", [])),
        ("models and items", f"{bench['n_source']} source, {bench['n_target']} target, {bench['n_items']} items"),
        ("runs, seed, workers", f"{parameters['runs']}, {parameters['seed']}, {parameters['n_jobs']}"),
        (
            "seconds per run",
            ", ".join(f"{m} {s:.2f}" for m, s in seconds.items() if m != "wall_per_run")
            + (f"; wall clock {seconds['wall_per_run']:.2f}" if "wall_per_run" in seconds else ""),
        ),
        *_code_rows(record),
    ]
    return pd.DataFrame(rows, columns=["what", "value"])


def suite_provenance(record: Mapping) -> pd.DataFrame:
    """What made the suite report, one row per fact, from its ``metrics.json`` record (its ``suites``, ``seconds``
    and ``parameters``)."""
    rows = []
    for name, suite in record["suites"].items():
        rows.append(
            ("suite", f"`{name}`: {', '.join(suite['benchmarks'])} ({', '.join(map(str, suite['n_items']))} items)")
        )
        rows += _file_rows(suite.get("files", []))
        sampled = (
            f", a sample of {suite['max_models']} (seed {suite['subsample_seed']})" if "max_models" in suite else ""
        )
        rows.append(
            (
                "models",
                f"{suite['n_models_common']} answer every benchmark ({suite['n_models_dropped']} others do not)"
                f"{sampled}; {suite['n_source']} source, {suite['n_target']} target, split {suite['split']}",
            )
        )
        if name in record.get("seconds", {}):
            rows.append(("seconds", f"{record['seconds'][name]:.0f} to load it and run every method in both modes"))
    parameters = record["parameters"]
    rows += [
        ("runs, seed, workers", f"{parameters['runs']}, {parameters['seed']}, {parameters['jobs']}"),
        *_code_rows(record),
    ]
    return pd.DataFrame(rows, columns=["what", "value"])


def _code_rows(record: Mapping) -> list[tuple[str, str]]:
    return [
        ("package, commit", f"{record['package_version']}, {record['git_commit']}"),
        ("computed with", ", ".join(f"{k} {v}" for k, v in record["environment"].items())),
    ]


def _file_rows(files) -> list[tuple[str, str]]:
    """One row per data folder (repository, commit and path), then one per file in it: no cell too wide to wrap.

    A folder name over 40 characters is shortened in the middle (``metrics.json`` keeps every path whole).
    """
    folders: dict[str, dict[str, str]] = {}
    for f in files:
        where, _, name = f"{f['repo']}@{f['commit'][:7]}/{f['path']}".rpartition("/")
        where = "/".join(part if len(part) <= 40 else f"{part[:24]}…{part[-16:]}" for part in where.split("/"))
        folders.setdefault(where, {})[name] = f["sha256"][:12]
    rows = []
    for where, named in folders.items():
        rows.append(("data folder", f"`{where}/`"))
        rows += [("data file", f"`{name}` (sha256 {sha}…, checked)") for name, sha in named.items()]
    return rows


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
        "environment": versions(),
        "tables": {name: json.loads(t.to_json(orient="records")) for name, t in tables.items()},
        **extra,
    }
    atomic.write_text(directory / "metrics.json", json.dumps(record, indent=2, default=jsonable) + "\n")
    return record
