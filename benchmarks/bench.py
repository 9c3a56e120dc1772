"""Speed and memory of the TailoredBench simulation on GSM8K (75 source, 75 target models).

Prints figures, asserts nothing: ``make bench``. Reference point: the paper's official
code takes about 100 s for one run of 75 targets at budget 20 on this 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

from tailoredbench import load_benchmark, simulate


def timed(label, **kwargs):
    start = time.perf_counter()
    sim = simulate(**kwargs)
    seconds = time.perf_counter() - start
    row = sim.summary.iloc[0]
    print(
        f"{label:<44} {seconds:7.1f} s total  {seconds / kwargs['runs']:6.2f} s/run   "
        f"MAE {row['mae']:.4f}  tau {row['kendall_tau']:.3f}",
        flush=True,
    )
    return seconds, sim


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=100, help="runs of the full grid")
    parser.add_argument("--quick", action="store_true", help="10 runs of the grid instead of 100")
    args = parser.parse_args(argv)
    grid_runs = 10 if args.quick else args.runs
    os.environ.setdefault("PYTHONHASHSEED", "0")
    bench = load_benchmark("gsm8k")
    # Compile (numba cache) and start the worker pool once, as a notebook session would.
    simulate(bench, budgets=[20], runs=2, n_jobs=2)
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}")
    results = {}
    for jobs in (1, 2):
        seconds, _ = timed(f"budget 20, 20 runs, jobs={jobs}", benchmark=bench, budgets=[20], runs=20, n_jobs=jobs)
        results[f"seconds_per_run_budget20_jobs{jobs}"] = seconds / 20
    seconds, _ = timed(
        f"grid: budgets 20-40, {grid_runs} runs, jobs=2",
        benchmark=bench,
        budgets=[20, 25, 30, 35, 40],
        runs=grid_runs,
        n_jobs=2,
    )
    results[f"grid_{grid_runs}_runs_seconds"] = seconds
    # The worker pool outlives this script's timing, so only the main process is measured.
    results["peak_rss_mb_main_process"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
