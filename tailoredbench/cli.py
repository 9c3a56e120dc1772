"""The ``tailoredbench`` command: simulate and reproduce.

Bad input of any kind ends with one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from . import atomic
from .batch import NotebookFailed, reproduce
from .datasets import load_benchmark, load_matrix, split_models
from .datasets.benchmarks import BENCHMARKS, Benchmark
from .datasets.files import pin_data_dir
from .distances import DISTANCES, check_distance
from .errors import TailoredBenchError
from .methods import METHODS
from .simulate import simulate
from .workflow import G_SET, N_SET, estimate, plan_g_set, plan_n_set


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


class _Parser(argparse.ArgumentParser):
    """argparse with the package's one-line errors (exit code 2) instead of a usage block."""

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
    sim.add_argument("--split", default="interleave", help="for --matrix: interleave (default) or random")
    sim.add_argument("--max-models", type=_positive_int, help="seeded subsample of models before the split")
    sim.add_argument("--method", nargs="+", default=["tailoredbench"], help=f"one or more of: {', '.join(METHODS)}")
    sim.add_argument("--budget", nargs="+", type=_positive_int, default=[30], help="items per target (G-set included)")
    sim.add_argument("--g-size", type=_positive_int, default=10)
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
        "--interval", type=float, default=0.9, help="level of each estimate's interval, calibrated on source models"
    )
    sim.add_argument("--no-interval", action="store_true", help="skip the intervals (saves one pass per method)")
    sim.add_argument("--variant", help="tailored_plus variant (default: stacked, i.e. TailoredBench+)")
    sim.add_argument("--tidy", help="also write the tidy per-target results (with intervals) to this CSV file")
    sim.add_argument("--force", action="store_true", help="replace an existing --tidy file")
    sim.add_argument("--json", action="store_true", help="print JSON instead of a table")

    plan = sub.add_parser(
        "plan",
        help="plan a new model's probe: --benchmark writes the G-set; --state with --samples writes the N-set",
    )
    start = plan.add_mutually_exclusive_group(required=True)
    start.add_argument("--benchmark", help=f"step 1: fit on this benchmark's source models ({', '.join(BENCHMARKS)})")
    start.add_argument("--state", help="step 2: the plan folder of step 1")
    plan.add_argument("--task", help="lm-eval task name (default: the benchmark's name)")
    plan.add_argument("--metric", help="per-sample metric to read (default per task, e.g. acc_norm for arc_challenge)")
    plan.add_argument("--g-size", type=_positive_int, default=10)
    plan.add_argument("--distance", default="manhattan")
    plan.add_argument("--seed", type=_seed)
    plan.add_argument("--out", help="step 1: plan folder to write")
    plan.add_argument("--samples", nargs="+", help="step 2: lm-eval samples_<task>_*.jsonl files")
    plan.add_argument("--budget", type=_positive_int, help="step 2: items in all, G-set included")
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
    return parser


def _check_output(path: str | None, force: bool) -> None:
    """An output file's folder exists and the file is not there already (unless ``force``): before any work."""
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        raise TailoredBenchError(f"{target}: a folder; give a file name")
    if target.exists() and not force:
        raise TailoredBenchError(f"{target}: exists; add --force to replace it")
    if not target.parent.is_dir():
        raise TailoredBenchError(f"{target.parent}: no such folder")
    if not os.access(target.parent, os.W_OK):
        raise TailoredBenchError(f"{target.parent}: not writable")


def _simulate(args) -> int:
    check_distance(args.distance)
    _check_output(args.tidy, args.force)
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
    sim = simulate(
        bench,
        # --variant V: tailored_plus runs as tailored_plus[V]
        methods=[f"{m}[{args.variant}]" if args.variant and m == "tailored_plus" else m for m in args.method],
        budgets=args.budget,
        runs=args.runs,
        seed=args.seed,
        n_jobs=args.jobs,
        g_size=args.g_size,
        distance=args.distance,
        interval=None if args.no_interval else args.interval,
        method_options={"sample": args.sample} if args.sample else None,
        backend=args.backend,
        scheduler=(args.scheduler or "local") if args.backend == "dask" else args.scheduler,
        progress=sys.stderr.isatty(),
    )
    if args.tidy:
        atomic.write_text(args.tidy, sim.results.to_csv(index=False))
    records = []
    for _, row in sim.summary.iterrows():
        records.append(
            {
                "method": row["method"],
                "benchmark": bench.name,
                "budget": int(row["budget"]),
                "runs": int(row["runs"]),
                "seed": args.seed,
                "g_size": args.g_size,
                "distance": args.distance,
                "n_source": bench.source.n_models,
                "n_target": bench.target.n_models,
                "n_items": bench.n_items,
                "mae": float(row["mae"]),
                "mae_se": float(row["mae_se"]),
                "kendall_tau": float(row["kendall_tau"]),
                "kendall_tau_se": float(row["kendall_tau_se"]),
                "seconds_per_run": sim.seconds_per_run[row["method"]],
            }
        )
        if "coverage" in row:
            records[-1].update(
                interval_level=args.interval, coverage=float(row["coverage"]), interval_width=float(row["width"])
            )
    if args.json:
        print(json.dumps(records[0] if len(records) == 1 else records, indent=None))
    else:
        for r in records:
            print(
                f"{r['method']:<16} budget {r['budget']:>4}  MAE {r['mae']:.4f} ± {r['mae_se']:.4f}  "
                f"tau {r['kendall_tau']:.3f} ± {r['kendall_tau_se']:.3f}  "
                + (f"coverage {r['coverage']:.2f} (width {r['interval_width']:.3f})  " if "coverage" in r else "")
                + f"({r['seconds_per_run']:.2f} s/run, {r['runs']} runs)"
            )
    return 0


def _plan(args) -> int:
    if args.benchmark:
        if not args.out:
            raise TailoredBenchError("plan --benchmark needs --out FOLDER")
        check_distance(args.distance)
        state = plan_g_set(
            args.benchmark,
            args.out,
            task=args.task,
            metric=args.metric,
            g_size=args.g_size,
            seed=args.seed or 0,
            distance=args.distance,
            force=args.force,
        )
        print(f"wrote {args.out}/{G_SET}: {len(state['g_set_doc_ids'])} items of task {state['task']} (the G-set)")
        print(
            f"next: lm-eval run ... --tasks {state['task']} --samples {args.out}/{G_SET} "
            "--log_samples --output_path OUT"
        )
        return 0
    if not args.samples or not args.budget:
        raise TailoredBenchError("plan --state needs --samples FILE... and --budget N")
    state = plan_n_set(args.state, args.samples, args.budget, seed=args.seed, force=args.force)
    print(
        f"wrote {args.state}/{N_SET}: the N-set, {len(state['n_set_doc_ids'])} more items "
        f"({len(state['native_sources'])} native source models)"
    )
    return 0


def _estimate(args) -> int:
    result = estimate(args.state, args.samples, seed=args.seed)
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"estimated {result['task']} accuracy: {result['estimate']:.4f} from {result['budget']} items; "
            f"{result['interval_level']:.0%} interval {result['interval_low']:.4f}-{result['interval_high']:.4f}"
        )
        print("native source models: " + ", ".join(result["native_sources"]))
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
            only_declared=not args.notebooks,  # --runs with every notebook: where declared
            log=lambda m: print(m, file=sys.stderr, flush=True),
        )
    except NotebookFailed as err:
        print(f"tailoredbench: {err}", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    """Entry point of the ``tailoredbench`` command."""
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # --help, or a one-line usage error (code 2)
        return stop.code if isinstance(stop.code, int) else 2
    pin_data_dir()
    try:
        command = {"simulate": _simulate, "plan": _plan, "estimate": _estimate, "reproduce": _reproduce}
        return command[args.command](args)
    except BrokenPipeError:
        # the reader went away (``| head``): stop quietly, as other command-line tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except TailoredBenchError as err:
        print(f"tailoredbench: error: {err}", file=sys.stderr)
        return 2
    except (OSError, MemoryError) as err:
        print(f"tailoredbench: error: {type(err).__name__}: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
