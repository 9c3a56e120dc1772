"""The ``tailoredbench`` command: simulate and reproduce.

Bad input of any kind ends with one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from . import atomic
from .batch import NotebookFailed, reproduce
from .datasets import load_benchmark, load_matrix, split_models
from .datasets.benchmarks import BENCHMARKS, Benchmark
from .datasets.files import pin_data_dir
from .datasets.suites import LM_EVAL_TASKS, SUITES, SuiteWarning, load_suite
from .errors import TailoredBenchError
from .kmedoids import DISTANCES, check_distance
from .methods import METHODS
from .sequential import ATLAS, MAX_BUDGET, ROUND_SIZE, check_precision, simulate_rounds, stop, stop_atlas
from .simulate import simulate
from .suite import ROUND_METHODS as SUITE_ROUND_METHODS
from .suite import simulate_suite, simulate_suite_precision
from .workflow import (
    G_SET,
    N_SET,
    ROUND_METHODS,
    NSet,
    SuiteNSet,
    check_round_method,
    estimate,
    estimate_suite,
    is_suite_plan,
    plan_g_set,
    plan_n_set,
    plan_round,
    plan_suite_g_set,
    plan_suite_n_set,
    plan_suite_round,
)


def _at_least(lowest: int, words: str):
    """An argparse type: an integer of at least ``lowest``."""

    def check(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < lowest:
            raise argparse.ArgumentTypeError(f"must be {words}: {value}")
        return value

    return check


_positive_int = _at_least(1, "at least 1")
_seed = _at_least(0, "0 or more")


def _number(text: str) -> float:
    """An argparse type: a number (its range is checked where it is used)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def _add_precision(parser, what: str) -> None:
    parser.add_argument(
        "--precision", type=_number, help=f"{what}: add items in rounds until the 90%% interval is +- this"
    )
    parser.add_argument("--max-budget", type=_positive_int, help=f"with --precision: most items (default {MAX_BUDGET})")
    parser.add_argument(
        "--round-size", type=_positive_int, help=f"with --precision: items per round (default {ROUND_SIZE})"
    )


class _Store(argparse.Action):
    """An option's value: a list option given again adds up, any other given twice is refused (else the last won)."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = namespace.__dict__.setdefault("_given", set())
        if isinstance(values, list):
            values = [*getattr(namespace, self.dest), *values] if self.dest in given else values
        elif self.dest in given:
            raise argparse.ArgumentError(self, "given twice; give it once")
        given.add(self.dest)
        setattr(namespace, self.dest, values)


class _Parser(argparse.ArgumentParser):
    """argparse with the package's one-line errors (exit code 2) instead of a usage block, and :class:`_Store`."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in (None, "store", "extend"):
            self.register("action", name, _Store)

    def error(self, message):
        self.exit(2, f"tailoredbench: error: {message}\n")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tailoredbench",
        description="Estimate full-benchmark accuracy from a few items (TailoredBench, ACL 2025).",
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    sim = sub.add_parser("simulate", help="repeat methods over runs on a benchmark or your own matrix")
    data = sim.add_mutually_exclusive_group(required=True)
    data.add_argument("--benchmark", help=f"one of: {', '.join(BENCHMARKS)}")
    data.add_argument("--matrix", help="your own models x items 0/1 matrix (.npy or .csv)")
    data.add_argument(
        "--suite",
        nargs="+",
        help=f"a suite planned at once: {' or '.join(SUITES)}, or two or more matrix files whose models are the same",
    )
    sim.add_argument(
        "--suite-mode",
        choices=["joint", "independent", "both"],
        default="joint",
        help="with --suite: native sources from every benchmark's G-set (joint, the default) or per benchmark",
    )
    sim.add_argument(
        "--total-budget",
        type=_positive_int,
        help="with --suite: items in all, shared out where they cut the error most",
    )
    sim.add_argument(
        "--precision-of",
        choices=["every", "mean"],
        help="with --suite --precision: every benchmark's interval (the default) or the suite mean's",
    )
    sim.add_argument("--split", help="for --matrix or matrix files of --suite: interleave (default) or random")
    sim.add_argument("--max-models", type=_positive_int, help="seeded subsample of models before the split")
    sim.add_argument("--method", nargs="+", default=["tailoredbench"], help=f"one or more of: {', '.join(METHODS)}")
    sim.add_argument("--budget", nargs="+", type=_positive_int, help="items per target, G-set included (default 30)")
    sim.add_argument("--g-size", type=_positive_int, help="G-set size (default 10; 5 per benchmark of a suite)")
    sim.add_argument("--distance", default="manhattan", help=f"one of: {', '.join(DISTANCES)}")
    sim.add_argument("--runs", type=_positive_int, default=20)
    sim.add_argument("--seed", type=_seed, default=0)
    sim.add_argument("--jobs", type=_positive_int, default=1, help="workers (processes, or dask workers)")
    sim.add_argument("--backend", choices=["loky", "threading", "dask"], help="where the runs go (default: processes)")
    sim.add_argument(
        "--scheduler", help="with --backend dask: a scheduler address (tcp://HOST:8786), or 'local' (the default)"
    )
    sim.add_argument(
        "--sample",
        type=_seed,
        default=0,
        help="tailoredbench only, for very large matrices: each target's N-set by CLARA on samples of this many "
        "items (0, the default: exact)",
    )
    sim.add_argument(
        "--interval", type=float, help="level of each estimate's interval, calibrated on source models (default 0.9)"
    )
    sim.add_argument("--no-interval", action="store_true", help="skip the intervals (saves one pass per method)")
    _add_precision(sim, "tailoredbench, tailored_plus or fluid (also stopped by ATLAS's rule), instead of --budget")
    sim.add_argument("--variant", help="tailored_plus variant (default: stacked, i.e. TailoredBench+)")
    sim.add_argument("--tidy", help="also write the tidy per-target results (with intervals) to this CSV file")
    sim.add_argument("--force", action="store_true", help="replace an existing --tidy file")
    sim.add_argument("--json", action="store_true", help="print JSON instead of a table")

    plan = sub.add_parser(
        "plan",
        help="plan a new model's probe: --benchmark (or --suite) writes the G-set; --state with --samples the N-set",
    )
    start = plan.add_mutually_exclusive_group(required=True)
    start.add_argument("--benchmark", help=f"step 1: fit on this benchmark's source models ({', '.join(BENCHMARKS)})")
    start.add_argument(
        "--suite",
        nargs="+",
        help=f"step 1 for a whole suite: {' or '.join(SUITES)}, or two or more matrix files (all source models, "
        "item ids the tasks' doc_ids); one G-set per benchmark, all in one g_set.json",
    )
    start.add_argument("--state", help="step 2: the plan folder of step 1")
    plan.add_argument("--task", help="lm-eval task name (default: the benchmark's lm-eval task, if it has one)")
    plan.add_argument("--metric", help="per-sample metric to read (default per task, e.g. acc_norm for arc_challenge)")
    plan.add_argument(
        "--tasks",
        help="with --suite: the lm-eval tasks, comma-separated, one per benchmark in the suite's order (default for "
        "open_llm_tiny: " + ",".join(task for task, _ in LM_EVAL_TASKS["open_llm_tiny"]) + ")",
    )
    plan.add_argument(
        "--metrics",
        nargs="+",
        help="with --suite: one per-sample metric per task (default per task; truthfulqa_mc2's acc, a probability, "
        "is read as acc>0.5: right when above 0.5)",
    )
    plan.add_argument("--g-size", type=_positive_int, help="G-set size (default 10; 5 per benchmark of a suite)")
    plan.add_argument("--distance", help="step 1: how items are compared (default manhattan)")
    plan.add_argument("--seed", type=_seed)
    plan.add_argument("--out", help="step 1: plan folder to write")
    plan.add_argument("--samples", nargs="+", help="step 2: lm-eval samples_<task>_*.jsonl files")
    plan.add_argument("--budget", type=_positive_int, help="step 2: items in all, G-set included")
    _add_precision(plan, "step 2 instead of --budget, run after each round")
    plan.add_argument(
        "--method",
        help=f"with --precision: whose rounds, {' or '.join(ROUND_METHODS)} (default tailoredbench; "
        "fluid: the items of highest Fisher information at the model's ability so far); for a suite, "
        f"{' or '.join(SUITE_ROUND_METHODS)} (default {SUITE_ROUND_METHODS[0]})",
    )
    plan.add_argument(
        "--precision-of",
        choices=["every", "mean"],
        help="with a suite's --precision: every benchmark's interval (the default) or the suite mean's",
    )
    plan.add_argument(
        "--jobs", type=_positive_int, help="with a suite's --budget or first --precision: workers fitting its weights"
    )
    plan.add_argument("--force", action="store_true", help="replace a plan (or an N-set) already in the folder")

    est = sub.add_parser("estimate", help="estimate a new model's accuracy from its samples on the planned items")
    est.add_argument("--state", required=True, help="the plan folder")
    est.add_argument("--samples", nargs="+", required=True, action="extend", help="lm-eval samples files")
    est.add_argument("--seed", type=_seed, help="refuse a plan made with another seed")
    est.add_argument("--json", action="store_true")

    rep = sub.add_parser("reproduce", help="execute notebooks with papermill into reports/")
    rep.add_argument("--notebook", "--benchmark", dest="notebooks", nargs="+", help="notebook names (default: all)")
    rep.add_argument("--output-dir", help="where the reports go (default: reports/, or reports-quick/ with --quick)")
    rep.add_argument("--runs", type=_positive_int, help="runs for every chosen notebook that declares them")
    rep.add_argument("--quick", action="store_true", help="small parameters: every notebook in a few minutes")
    rep.add_argument("--force", action="store_true", help="replace existing reports made with other parameters")
    rep.add_argument(
        "--no-run-cache",
        dest="run_cache",
        action="store_false",
        help="choose every probe afresh instead of reading runs cached by earlier notebooks ($TAILOREDBENCH_RUN_CACHE)",
    )
    return parser


def _check_output(path: str | None, force: bool) -> None:
    """An output file's folder exists and the file is not there already (unless ``force``): before any work."""
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        raise TailoredBenchError(f"{target}: a folder; give a file name")
    if os.path.lexists(target) and not force:  # a dangling symbolic link too: it is the user's
        raise TailoredBenchError(f"{target}: exists; add --force to replace it")
    if not target.parent.is_dir():
        raise TailoredBenchError(f"{target.parent}: no such folder")
    if not os.access(target.parent, os.W_OK):
        raise TailoredBenchError(f"{target.parent}: not writable")


def _write_output(path: str, text: str, force: bool) -> None:
    """Write an output file once the work is done: one that appeared meanwhile is kept unless ``force``."""
    try:
        atomic.write_text(path, text, replace=force)
    except FileExistsError:
        raise TailoredBenchError(f"{path}: exists; add --force to replace it") from None


def _se(record: dict, key: str, digits: int) -> str:
    """`` ± se`` over the runs; nothing from one run, whose standard error is undefined (not zero)."""
    return f" ± {record[key]:.{digits}f}" if record["runs"] > 1 else ""


def _runs(record: dict) -> str:
    return f"{record['runs']} run" + "s" * (record["runs"] != 1)


def _set(value) -> bool:
    return value is not None


def _refuse(args, message: str, *flags: str, given=bool) -> None:
    """The ``message`` error, ``{0}`` the first of ``flags`` whose value is ``given``, if there is one."""
    for flag in flags:
        if given(getattr(args, flag[2:].replace("-", "_"))):
            raise TailoredBenchError(message.format(flag))


def _output(args, results: pd.DataFrame, records: list, line) -> int:
    """``--tidy``'s file if asked for, then the records as JSON (``--json``) or as ``line`` makes each one."""
    if args.tidy:
        _write_output(args.tidy, results.to_csv(index=False), args.force)
    if args.json:
        print(json.dumps(records[0] if len(records) == 1 else records, indent=None))
    else:
        for record in records:
            print(line(record))
    return 0


def _noting(load, *args, **kwargs):
    """``load(*args, **kwargs)``, each :class:`SuiteWarning` it gives printed as a note on stderr."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SuiteWarning)
        loaded = load(*args, **kwargs)
    for warning in caught:
        print(f"tailoredbench: note: {warning.message}", file=sys.stderr)
    return loaded


def _check_precision_args(args) -> None:
    """--precision is a half-width and replaces --budget; --max-budget and --round-size go with it."""
    if args.precision is None:
        _refuse(args, "{0} applies with --precision only", "--max-budget", "--round-size")
        return
    args.precision = check_precision(args.precision)
    if args.budget:
        raise TailoredBenchError("give --precision or --budget, not both")
    args.max_budget = args.max_budget or MAX_BUDGET
    args.round_size = args.round_size or ROUND_SIZE


def _simulate(args) -> int:
    check_distance(args.distance)
    if args.no_interval and args.interval is not None:
        raise TailoredBenchError("give --interval LEVEL or --no-interval, not both")
    args.interval = 0.9 if args.interval is None else args.interval
    if args.benchmark and args.split is not None:
        raise TailoredBenchError("--split applies to --matrix (or a suite's matrix files): a benchmark has its split")
    args.split = args.split or "interleave"
    if args.suite:
        return _simulate_suite(args)
    _refuse(args, "{0} applies with --suite only", "--total-budget", "--precision-of")
    if args.suite_mode != "joint":
        raise TailoredBenchError("--suite-mode applies with --suite only")
    args.g_size = args.g_size or 10
    _check_output(args.tidy, args.force)
    _check_precision_args(args)
    if args.precision is not None and args.no_interval:
        raise TailoredBenchError("--precision stops on the interval: it cannot go with --no-interval")
    args.budget = args.budget or [30]
    repeated = sorted({b for b in args.budget if args.budget.count(b) > 1})
    if repeated:
        raise TailoredBenchError(f"budget {repeated[0]} is given twice")
    if args.variant and "tailored_plus" not in args.method:
        raise TailoredBenchError("--variant applies to tailored_plus only, which is not among the methods")
    if args.benchmark:
        bench = load_benchmark(args.benchmark, max_models=args.max_models, seed=args.seed)
    else:
        matrix = load_matrix(args.matrix)
        matrix = matrix.subsample_models(args.max_models, args.seed)
        source, target = split_models(matrix, args.split, args.seed)
        bench = Benchmark(matrix.source, source, target, {"description": f"user matrix, {args.split} split"})
    common = {
        # --variant V: tailored_plus runs as tailored_plus[V]
        "methods": [f"{m}[{args.variant}]" if args.variant and m == "tailored_plus" else m for m in args.method],
        "runs": args.runs,
        "seed": args.seed,
        "n_jobs": args.jobs,
        "g_size": args.g_size,
        "distance": args.distance,
        "method_options": {"sample": args.sample} if args.sample else None,
        "backend": args.backend,
        "scheduler": (args.scheduler or "local") if args.backend == "dask" else args.scheduler,
        "progress": sys.stderr.isatty(),
    }
    if args.precision is not None:
        return _simulate_precision(args, bench, common)
    sim = simulate(bench, budgets=args.budget, interval=None if args.no_interval else args.interval, **common)
    records = [
        _record(args, bench, row, sim.seconds_per_run, budget=int(row["budget"])) for _, row in sim.summary.iterrows()
    ]

    def line(r: dict) -> str:
        return (
            f"{r['method']:<16} budget {r['budget']:>4}  MAE {r['mae']:.4f}{_se(r, 'mae_se', 4)}  "
            f"tau {r['kendall_tau']:.3f}{_se(r, 'kendall_tau_se', 3)}  "
            + (f"coverage {r['coverage']:.2f} (width {r['interval_width']:.3f})  " if "coverage" in r else "")
            + f"({r['seconds_per_run']:.2f} s/run, {_runs(r)})"
        )

    return _output(args, sim.results, records, line)


def _suite_record(suite, row, **settings) -> dict:
    """One row of a suite's summary as ``simulate --suite --json`` prints it, ``settings`` after the benchmarks."""
    return {
        "method": row["method"],
        "mode": row["mode"],
        "suite": suite.name,
        "benchmarks": list(suite.benchmarks),
        **settings,
        "n_source": suite.source[0].n_models,
        "n_target": suite.target[0].n_models,
    }


def _simulate_suite(args) -> int:
    """``simulate --suite``: the suite's benchmarks planned at once (and/or one at a time)."""
    refused = ("--backend", "--scheduler", "--sample", "--variant", "--no-interval")
    _refuse(args, "{0} does not apply with --suite", *refused)
    if args.budget and len(args.budget) > 1:
        raise TailoredBenchError("with --suite, --budget is one number: the items per benchmark")
    _check_output(args.tidy, args.force)
    registered = [name for name in args.suite if name in SUITES]
    if registered and len(args.suite) > 1:
        raise TailoredBenchError(f"--suite takes a registered suite ({registered[0]}) alone, or matrix files")
    if len(args.suite) == 1 and not registered and Path(args.suite[0]).suffix:
        raise TailoredBenchError(f"a suite needs two or more matrix files, got one: {args.suite[0]}")
    names = args.suite[0] if len(args.suite) == 1 else args.suite
    suite = _noting(load_suite, names, max_models=args.max_models, seed=args.seed, split=args.split)
    modes = ["joint", "independent"] if args.suite_mode == "both" else [args.suite_mode]
    common = {"runs": args.runs, "seed": args.seed, "n_jobs": args.jobs, "g_size": args.g_size or 5}
    common.update(distance=args.distance, level=args.interval)
    if args.precision is not None:
        return _simulate_suite_precision(args, suite, modes, common)
    _refuse(args, "{0} applies with --precision only", "--precision-of", "--max-budget", "--round-size")
    budget = args.budget[0] if args.budget else None
    sim = simulate_suite(suite, args.method, modes, budget=budget, total_budget=args.total_budget, **common)
    records = []
    for _, row in sim.summary.iterrows():
        settings = {"budgets": sim.settings["budgets"], "items": int(row["items"]), "runs": int(row["runs"])}
        settings.update(seed=args.seed, g_size=sim.settings["g_size"], distance=args.distance)
        record = _suite_record(suite, row, **settings)
        record["n_items"] = list(suite.n_items)
        record.update({k: float(row[k]) for k in ("mae", "mae_se", "suite_mae", "suite_mae_se")})
        record.update(mae_by_benchmark=[float(v) for v in row["mae_by_benchmark"]], interval_level=args.interval)
        records.append(record | {k: float(row[k]) for k in ("coverage", "coverage_se", "suite_coverage")})

    def line(r: dict) -> str:
        by = ", ".join(f"{b} {m:.4f}" for b, m in zip(r["benchmarks"], r["mae_by_benchmark"], strict=True))
        return (
            f"{r['method']:<18} {r['mode']:<11} {r['items']} items  MAE {r['mae']:.4f}{_se(r, 'mae_se', 4)} "
            f"({by})  suite mean {r['suite_mae']:.4f}  coverage {r['coverage']:.2f}  ({_runs(r)})"
        )

    return _output(args, sim.results, records, line)


def _simulate_suite_precision(args, suite, modes, common: dict) -> int:
    """``simulate --suite --precision``: rounds on every benchmark until every interval (or the mean's) is narrow."""
    if args.budget or args.total_budget:
        raise TailoredBenchError("give --precision or a budget, not both")
    of, round_size = args.precision_of or "every", args.round_size or ROUND_SIZE
    rounds = {"of": of, "max_budget": args.max_budget, "round_size": round_size}
    found = simulate_suite_precision(suite, args.precision, args.method, modes, **rounds, **common)
    fields = ("items_mean", "items_p90", "precision_met", "mae", "suite_mae", "coverage", "suite_coverage", "factor")
    records = []
    for _, row in found.summary.iterrows():
        settings = {"precision": args.precision, "of": row["of"], "rounds": found.settings["rounds"]}
        settings.update(runs=int(row["runs"]), seed=args.seed, g_size=found.settings["g_size"])
        record = _suite_record(suite, row, **settings)
        records.append({**record, "interval_level": args.interval, **{k: float(row[k]) for k in fields}})

    def line(r: dict) -> str:
        return (
            f"{r['method']:<14} {r['mode']:<11} ±{r['precision']} on {r['of']}: met for {r['precision_met']:.0%}, "
            f"items mean {r['items_mean']:.1f} (p90 {r['items_p90']:.0f})  MAE {r['mae']:.4f}  "
            f"suite mean {r['suite_mae']:.4f}  coverage {r['coverage']:.2f}  ({_runs(r)})"
        )

    return _output(args, found.results, records, line)


def _record(args, bench, row, seconds: dict, **first) -> dict:
    """One summary row as ``simulate --json`` prints it: settings, data counts, MAE, tau, interval."""
    record = {
        "method": row["method"],
        "benchmark": bench.name,
        **first,
        "runs": int(row["runs"]),
        **{k: getattr(args, k) for k in ("seed", "g_size", "distance")},
        "n_source": bench.source.n_models,
        "n_target": bench.target.n_models,
        "n_items": bench.n_items,
        **{k: float(row[k]) for k in ("mae", "mae_se", "kendall_tau", "kendall_tau_se")},
    }
    if "coverage" in row:
        record.update(interval_level=args.interval, coverage=float(row["coverage"]), interval_width=float(row["width"]))
    return {**record, "seconds_per_run": seconds[row["method"]]}


def _simulate_precision(args, bench, common) -> int:
    """``simulate --precision``: every round once, then the stopping rule."""
    rounds = simulate_rounds(bench, max_budget=args.max_budget, step=args.round_size, level=args.interval, **common)
    outcome = stop(rounds, args.precision)
    results, summary = outcome.results, outcome.summary
    if "fluid" in rounds.calibration:  # ATLAS's own rule on fluid's rounds, reported beside it
        atlas = stop_atlas(rounds, bench.source.values, bench.target.values, args.precision)
        results = pd.concat([results, atlas.results], ignore_index=True)
        summary = pd.concat([summary, atlas.summary], ignore_index=True)
    settings = {"precision": args.precision, "max_budget": args.max_budget, "round_size": args.round_size}
    seconds = {**rounds.seconds_per_run, ATLAS: rounds.seconds_per_run.get("fluid", np.nan)}
    records = []
    for _, row in summary.iterrows():
        record = _record(args, bench, row, seconds, **settings)
        record.update({k: float(row[k]) for k in ("items_mean", "items_p90", "precision_met")})
        record["fixed_budget"] = None if np.isnan(row["fixed_budget"]) else int(row["fixed_budget"])
        if row["method"] == ATLAS:
            record["se_threshold"] = float(row["se_threshold"])
        records.append(record)

    def line(r: dict) -> str:
        fixed = f"{r['fixed_budget']} items" if r["fixed_budget"] else f"none up to {r['max_budget']} items"
        return (
            f"{r['method']:<16} precision ±{r['precision']}: met for {r['precision_met']:.0%} of targets, "
            f"items mean {r['items_mean']:.1f} (p90 {r['items_p90']:.0f}; a fixed budget for 90%: {fixed})  "
            f"MAE {r['mae']:.4f}  coverage {r['coverage']:.2f}  "
            f"({r['seconds_per_run']:.2f} s/run, {_runs(r)})"
        )

    return _output(args, results, records, line)  # --tidy: one row per (run, method, target), with its items


def _next_run(tasks: str, samples: str) -> int:
    print(f"next: lm-eval run ... --tasks {tasks} --samples {samples} --log_samples --output_path OUT")
    return 0


def _next_round(done: dict, state: str, more: str) -> int:
    """What a round of the precision mode wrote, and what to run next (or that the rule has stopped)."""
    if done["file"]:
        print(f"wrote {done['file']}: round {done['round']}, {more}")
        print(f"next: lm-eval run ... --samples {done['file']} --log_samples, then plan again with every samples file")
    else:
        print(f"{done['status']}: run 'tailoredbench estimate --state {state} --samples ...'")
    return 0


def _plan(args) -> int:
    if args.suite or (args.state and is_suite_plan(args.state)):
        return _plan_suite(args)
    _refuse(args, "{0} applies to a suite's plan only", "--tasks", "--metrics", "--jobs", "--precision-of")
    if args.benchmark:
        _refuse(args, "{0} goes with plan --state, after the G-set's lm-eval run", "--samples", given=_set)
    else:  # the plan folder already fixes them: an ignored option would mislead
        _refuse(args, "{0} goes with plan --benchmark (step 1): the plan in --state has fixed it", *_STEP_1, given=_set)
    args.g_size = args.g_size or 10
    args.distance = args.distance or "manhattan"
    _check_precision_args(args)
    if args.method is not None:
        check_round_method(args.method)
        if args.benchmark:
            raise TailoredBenchError("--method goes with plan --state --precision; the G-set is every method's")
        if args.method != "tailoredbench" and args.budget:
            raise TailoredBenchError(f"{args.method} plans in rounds only: give --precision P, not --budget")
    if args.benchmark:
        if args.precision is not None or args.budget:
            raise TailoredBenchError("--budget and --precision go with plan --state, after the G-set's lm-eval run")
        if not args.out:
            raise TailoredBenchError("plan --benchmark needs --out FOLDER")
        check_distance(args.distance)
        options = {k: getattr(args, k) for k in ("task", "metric", "g_size", "distance", "force")}
        state = plan_g_set(args.benchmark, args.out, seed=args.seed or 0, **options)
        print(f"wrote {args.out}/{G_SET}: {len(state.g_set_doc_ids)} items of task {state.task} (the G-set)")
        return _next_run(state.task, f"{args.out}/{G_SET}")
    if args.precision is not None:
        if not args.samples:
            raise TailoredBenchError("plan --state --precision needs --samples FILE... (the G-set's and every round's)")
        method = args.method or "tailoredbench"
        options = {"seed": args.seed, "force": args.force, "method": method}
        done = plan_round(args.state, args.samples, args.precision, args.max_budget, args.round_size, **options)
        if "estimate" in done:
            print(
                f"after {done['items']} items: estimate {done['estimate']:.4f}, "
                f"90% interval {done['low']:.4f}-{done['high']:.4f} (requested +-{done['precision']})"
            )
        return _next_round(done, args.state, f"{done.get('round_size', args.round_size)} more items at most")
    if not args.samples or not args.budget:
        raise TailoredBenchError("plan --state needs --samples FILE... and --budget N (or --precision P)")
    step = plan_n_set(args.state, args.samples, args.budget, seed=args.seed, force=args.force).step
    assert isinstance(step, NSet)  # plan_n_set's step
    print(
        f"wrote {args.state}/{N_SET}: the N-set, {len(step.n_set_doc_ids)} more items "
        f"({len(step.native_sources)} native source models)"
    )
    return 0


_ROUNDS_ONLY = ("--max-budget", "--round-size", "--method", "--precision-of")
#: what a plan's first step fixes
_STEP_1 = ("--task", "--metric", "--g-size", "--distance", "--out")


def _plan_suite(args) -> int:
    """``plan --suite`` (step 1), and ``plan --state`` on a suite's plan: step 2 or the precision mode's rounds."""
    _refuse(args, "{0} does not apply to a suite's plan; name them with {0}s", "--task", "--metric", given=_set)
    if args.suite:
        after = "after the G-sets' lm-eval run"
        _refuse(args, "{0} goes with plan --state, " + after, "--samples", "--budget", "--precision", given=_set)
        _refuse(args, "{0} goes with plan --state --precision, " + after, *_ROUNDS_ONLY, given=_set)
        _refuse(args, "{0} goes with plan --state --budget, where the weights are fitted", "--jobs")
        if not args.out:
            raise TailoredBenchError("plan --suite needs --out FOLDER")
        suite = args.suite[0] if len(args.suite) == 1 else args.suite
        tasks = [t.strip() for t in args.tasks.split(",")] if args.tasks else None
        distance = check_distance(args.distance or "manhattan")
        options = {"g_size": args.g_size or 5, "seed": args.seed or 0, "distance": distance, "force": args.force}
        state = _noting(plan_suite_g_set, suite, args.out, tasks=tasks, metrics=args.metrics, **options)
        print(f"wrote {args.out}/{G_SET}: {state.g_size} items of each of {len(state.tasks)} tasks (the G-sets)")
        return _next_run(",".join(state.tasks), f"{args.out}/{G_SET}")
    _refuse(args, "{0} goes with plan --suite", "--tasks", "--metrics")
    _refuse(args, "{0} goes with plan --suite (step 1): the plan in --state has fixed it", *_STEP_1, given=_set)
    if args.precision is not None:
        if args.budget:
            raise TailoredBenchError("give --precision or --budget, not both")
        if not args.samples:
            raise TailoredBenchError("plan --state --precision needs --samples FILE... (the G-sets' and every round's)")
        return _plan_suite_round(args)
    _refuse(args, "{0} applies with --precision only", *_ROUNDS_ONLY, given=_set)
    if not args.samples or not args.budget:
        raise TailoredBenchError(
            "plan --state needs --samples FILE... (every task's) and --budget N per benchmark (or --precision P)"
        )
    options = {"seed": args.seed, "force": args.force, "n_jobs": args.jobs or 1}
    state = plan_suite_n_set(args.state, args.samples, args.budget, **options)
    step = state.step
    assert isinstance(step, SuiteNSet)  # plan_suite_n_set's step
    print(
        f"wrote {args.state}/{N_SET}: the N-sets, {step.budget - state.g_size} more items of each of "
        f"{len(state.tasks)} tasks ({len(step.native_sources)} native source models)"
    )
    return _next_run(",".join(state.tasks), f"{args.state}/{N_SET}")


def _plan_suite_round(args) -> int:
    """``plan --state --precision`` on a suite's plan: the next round of every task, or that it is done."""
    round_size = args.round_size or ROUND_SIZE
    options = {"of": args.precision_of or "every", "max_budget": args.max_budget, "round_size": round_size}
    options.update(method=args.method or SUITE_ROUND_METHODS[0], seed=args.seed, force=args.force)
    done = plan_suite_round(args.state, args.samples, args.precision, n_jobs=args.jobs or 1, **options)
    tasks = [b["task"] for b in done.get("benchmarks", [])]
    watched = "the suite mean's interval" if done["precision_of"] == "mean" else "every benchmark's interval"
    if "suite_mean" in done:
        mean = done["suite_mean"]
        print(
            f"after {done['items']} items of each of {len(tasks)} tasks: suite mean {mean['estimate']:.4f}, "
            f"90% interval {mean['interval_low']:.4f}-{mean['interval_high']:.4f} "
            f"(requested +-{done['precision']} on {watched})"
        )
        wide = [b["task"] for b in done["benchmarks"] if b["halfwidth"] > done["precision"]]
        if wide and done["precision_of"] == "every":
            print("  still wider: " + ", ".join(wide))
    return _next_round(done, args.state, f"up to {round_size} more items a task")


def _estimate(args) -> int:
    if is_suite_plan(args.state):
        return _estimate_suite(args)
    result = estimate(args.state, args.samples, seed=args.seed)
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"estimated {result['task']} accuracy: {result['estimate']:.4f} from {result['budget']} items; "
            f"{result['interval_level']:.0%} interval {result['interval_low']:.4f}-{result['interval_high']:.4f}"
        )
        if "precision" in result:
            print(f"{result['status']} (requested +-{result['precision']})")
        if result["native_sources"]:  # fluid has none
            print("native source models: " + ", ".join(result["native_sources"]))
    return 0


def _estimate_suite(args) -> int:
    result = estimate_suite(args.state, args.samples, seed=args.seed)
    if args.json:
        print(json.dumps(result))
        return 0
    method = {"tailored_plus": "TailoredBench+", "tailoredbench": "TailoredBench"}[result["method"]]
    print(
        f"estimated accuracy ({method}, joint) from {result['budget']} items of each of "
        f"{len(result['benchmarks'])} tasks, with {result['interval_level']:.0%} intervals:"
    )
    rows = [(b["task"], b) for b in result["benchmarks"]] + [("suite mean", result["suite_mean"])]
    width = max(len(name) for name, _ in rows)
    for name, row in rows:
        print(f"  {name:<{width}}  {row['estimate']:.4f}  {row['interval_low']:.4f}-{row['interval_high']:.4f}")
    if "precision" in result:
        print(f"{result['status']} (requested +-{result['precision']} on {result['precision_of']})")
    print(f"{result['native_sources']} native source models")
    return 0


def _reproduce(args) -> int:
    parameters = {"runs": args.runs} if args.runs else None
    try:
        reproduce(
            args.notebooks,
            parameters=parameters,
            output_dir=args.output_dir,
            quick=args.quick,
            force=args.force,
            run_cache=None if args.run_cache else False,
            only_declared=not args.notebooks,  # --runs with every notebook: where declared
            log=lambda m: print(m, file=sys.stderr, flush=True),
        )
    except NotebookFailed as err:
        print(f"tailoredbench: {err}", file=sys.stderr)
        return 1
    return 0


def _one_line(err: Exception) -> str:
    """An error in one line; an operating system's names its file when it has one."""
    if isinstance(err, TailoredBenchError):
        return str(err)
    if isinstance(err, OSError) and err.filename and err.strerror:
        return f"{err.filename}: {err.strerror}"
    return f"{type(err).__name__}: {err}"


def main(argv=None) -> int:
    """Entry point of the ``tailoredbench`` command."""
    try:
        parser = _build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as stop:  # --help, or a one-line usage error (code 2)
            return stop.code if isinstance(stop.code, int) else 2
        for flag in ("state", "out", "tidy", "output_dir"):  # "" would name the current folder unseen
            if getattr(args, flag, None) == "":
                raise TailoredBenchError(f"--{flag.replace('_', '-')} is empty: give a path")
        pin_data_dir()
        command = {"simulate": _simulate, "plan": _plan, "estimate": _estimate, "reproduce": _reproduce}
        return command[args.command](args)
    except BrokenPipeError:
        # the reader went away (``| head``): stop quietly, as other command-line tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (TailoredBenchError, OSError, MemoryError) as err:
        print(f"tailoredbench: error: {_one_line(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: one line and the shell's code for it
        print("tailoredbench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
