"""Speed and memory of the TailoredBench simulation: ``make bench`` prints figures, asserts nothing.

Three parts, one worker and budget 30 unless stated:

1. GSM8K (75 source, 75 target models, 1319 items): seconds per run, and what the
   90% intervals add. The paper's official code takes about 100 s per run here. Then
   one worker in fresh processes, as started and under the instructions ``make
   reproduce`` pins for the notebooks (:func:`tailoredbench.environment.reproducible_numerics`),
   alternated.
2. Scaling on SYNTHETIC 2PL matrices (half the models sources): seconds per target
   model of one run (its share of the G-set included) and the process's peak memory,
   exact and with the large-matrix option (each N-set by CLARA on samples of 750
   items, ``--sample 750``).
3. What the large-matrix option costs in accuracy: MAE exact against sampled, on
   GSM8K, ARC-Challenge and a synthetic matrix.

Each scaling point runs in a fresh process, so that its peak memory is its own.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

SAMPLE = 750
SCALING = [(200, 1000), (200, 5000), (200, 10000), (200, 14042), (200, 50000), (1000, 1000), (3000, 1000), (800, 10042)]


def _targets(items: int, sample: int = 0) -> int:
    """Targets timed per point: fewer where each takes seconds. Sampled beyond 15000 items, a
    target takes a fraction of a second and the G-set's timing varies by seconds: 30 targets,
    so that what they add stands out of that (six, as exact, came out at zero or below)."""
    if items > 15000:
        return 30 if sample else 6
    return 100 if items <= 5000 else 20


def one_point(models: int, items: int, sample: int) -> dict:
    """One run at budget 30, one worker, no interval, in this process.

    A run chooses the G-set once for all its targets, then each target's probe. The run
    is timed with two targets and with ``n``: a target costs ``(T(n) - T(2)) / (n - 2)``,
    and a run with every target of the matrix would take ``T(2)`` plus that for each
    further target. Each is the least of :data:`TIMINGS` timings where one takes under
    :data:`RETIME_BELOW` seconds: the G-set inside each run varies by a second or more at
    50000 items, as much as a few sampled targets cost, and only a slower machine adds to a
    timing. A difference that still comes out at zero or below is reported as not measured
    (None), never as a time. The G-set (the items embedded by all sources, and the K-Medoids
    that picks it) is timed on its own.
    """
    from tailoredbench import TailoredBench, simulate
    from tailoredbench.datasets import Benchmark
    from tailoredbench.datasets.synthetic import synthetic_2pl

    full = synthetic_2pl(models, items)
    all_targets = full.target.n_models
    n_targets = min(_targets(items, sample), all_targets)
    options = {"sample": sample} if sample else None
    simulate(synthetic_2pl(20, 300), budgets=[30], runs=1, g_size=10)  # compile outside the timing
    seconds, sim = {}, None

    def first_targets(n: int) -> Benchmark:
        return Benchmark(full.name, full.source, full.target.take_models(range(n)), full.provenance)

    for n in (2, n_targets):
        bench = first_targets(n)
        timings = []
        while len(timings) < TIMINGS and (not timings or timings[0] < RETIME_BELOW):
            start = time.perf_counter()
            sim = simulate(bench, budgets=[30], runs=1, method_options=options)
            timings.append(time.perf_counter() - start)
        seconds[n] = min(timings)
    n_exact = min(_targets(items), all_targets)
    if n_exact != n_targets:
        # the MAE of the exact column's targets: the native sources' threshold is formed over
        # every model, so each target's estimate depends on which others are in the run
        sim = simulate(first_targets(n_exact), budgets=[30], runs=1, method_options=options)
    per_target = (seconds[n_targets] - seconds[2]) / (n_targets - 2)
    measured = per_target > 0
    # run 0's G-set as the simulation chose it: the estimator's fit embeds the items and picks it
    start = time.perf_counter()
    TailoredBench(random_state=(0, 0)).fit(full.source.values)
    g_set_seconds = time.perf_counter() - start
    return {
        "seconds_per_target": (seconds[2] + (all_targets - 2) * per_target) / all_targets if measured else None,
        "seconds_per_target_without_g_set": per_target if measured else None,
        "g_set_seconds": g_set_seconds,
        "targets_timed": n_targets,
        "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2,
        "mae": float(sim.summary["mae"].iloc[0]),
    }


#: Timings of a simulation whose first takes under RETIME_BELOW seconds; the least is kept.
TIMINGS = 2
RETIME_BELOW = 30.0


def _point_in_a_fresh_process(models: int, items: int, sample: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--point", str(models), str(items), str(sample)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


#: Rounds of the GSM8K timings; medians are printed (the machine's speed drifts by 10-30%).
REPEATS = 5


def _seconds_per_run(bench, runs: int, **kwargs) -> float:
    """Seconds per run of a simulation at budget 30 (``kwargs`` go to ``simulate``)."""
    from tailoredbench import simulate

    start = time.perf_counter()
    simulate(bench, budgets=[30], runs=runs, **kwargs)
    return (time.perf_counter() - start) / runs


def gsm8k_figures(runs: int) -> dict:
    from tailoredbench import load_benchmark, simulate

    bench = load_benchmark("gsm8k")
    simulate(bench, budgets=[30], runs=2, n_jobs=2)  # compile and start the worker pool once
    simulate(bench, budgets=[30], runs=2, n_jobs=1)  # and load the compiled code in this process

    def per_run(**kwargs) -> float:
        return _seconds_per_run(bench, runs, **kwargs)

    # Each round times the three settings back to back, and what intervals add is read
    # within a round: a drift of the machine's speed then moves both sides of the ratio.
    timed = {"seconds_per_run_jobs1": [], "seconds_per_run_jobs2": [], "seconds_per_run_with_intervals_jobs1": []}
    for _ in range(REPEATS):
        timed["seconds_per_run_jobs1"].append(per_run(n_jobs=1))
        timed["seconds_per_run_with_intervals_jobs1"].append(per_run(n_jobs=1, interval=0.9))
        timed["seconds_per_run_jobs2"].append(per_run(n_jobs=2))
    figures = {name: statistics.median(seconds) for name, seconds in timed.items()}
    pairs = zip(timed["seconds_per_run_jobs1"], timed["seconds_per_run_with_intervals_jobs1"], strict=True)
    added = [with_intervals / without - 1 for without, with_intervals in pairs]
    figures["intervals_add"] = statistics.median(added)
    figures["timings"] = {**timed, "intervals_add": added}

    def shown(name: str) -> str:
        return f"{figures[name]:.3f} s per run ({min(timed[name]):.3f}-{max(timed[name]):.3f})"

    print(f"GSM8K, budget 30, {runs} runs; medians of {REPEATS} rounds (range)")
    print(f"  1 worker   {shown('seconds_per_run_jobs1')}")
    print(f"  2 workers  {shown('seconds_per_run_jobs2')}")
    print(
        f"  1 worker, 90% intervals  {shown('seconds_per_run_with_intervals_jobs1')}: intervals add "
        f"{figures['intervals_add']:.0%} ({min(added):.0%} to {max(added):.0%} within a round)",
        flush=True,
    )
    return figures


def gsm8k_seconds_per_run(runs: int) -> float:
    """Seconds per GSM8K run on one worker in this process, after one run that loads the compiled code."""
    from tailoredbench import load_benchmark, simulate

    bench = load_benchmark("gsm8k")
    simulate(bench, budgets=[30], runs=1, n_jobs=1)
    return _seconds_per_run(bench, runs, n_jobs=1)


def gsm8k_pinned(runs: int) -> dict | None:
    """One worker, fresh processes: as started against the notebooks' pinned instructions, alternated."""
    from tailoredbench.environment import reproducible_numerics

    pins = reproducible_numerics()
    if not pins:
        print("  (nothing to pin on this machine: the notebooks compute as started)")
        return None
    timed = {"as_started": [], "pinned": []}
    for _ in range(REPEATS):
        for name, env in (("as_started", os.environ), ("pinned", {**os.environ, **pins})):
            command = [sys.executable, __file__, "--gsm8k-run", str(runs)]
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            timed[name].append(float(done.stdout.strip().splitlines()[-1]))
    figures = {name: statistics.median(seconds) for name, seconds in timed.items()}
    shown = {name: f"{figures[name]:.3f} s ({min(t):.3f}-{max(t):.3f})" for name, t in timed.items()}
    print(
        f"  1 worker, fresh processes alternated: as started {shown['as_started']}; under make reproduce's "
        f"{' '.join(f'{k}={v}' for k, v in pins.items())}: {shown['pinned']}",
        flush=True,
    )
    return {**figures, "pins": pins, "timings": timed}


def scaling_table() -> list[dict]:
    print(
        "\nScaling, SYNTHETIC 2PL, one run at budget 30, one worker: seconds per target of a run with every target "
        "(its share of the G-set included), the process's peak memory, and the MAE of the exact column's targets"
    )
    print(
        f"{'models (targets) x items':>26} | {'G-set s':>7} | {'exact s/target':>14} | {'peak GB':>7} | {'MAE':>6} | "
        f"{'sample s/target':>15} | {'peak GB':>7} | {'MAE':>6}"
    )
    rows = []
    for models, items in SCALING:
        exact = _point_in_a_fresh_process(models, items, 0)
        sampled = _point_in_a_fresh_process(models, items, SAMPLE)
        label = f"{models} ({models // 2}) x {items}"
        print(
            f"{label:>26} | {exact['g_set_seconds']:7.2f} | {_seconds(exact, 14)} | "
            f"{exact['peak_gb']:7.2f} | {exact['mae']:6.4f} | {_seconds(sampled, 15)} | "
            f"{sampled['peak_gb']:7.2f} | {sampled['mae']:6.4f}",
            flush=True,
        )
        rows.append({"models": models, "items": items, "exact": exact, "sample": sampled})
    print(
        "(targets timed: 100 up to 5000 items, 20 up to 15000, 6 beyond (30 sampled); "
        "the MAE columns over the same targets)"
    )
    return rows


def _seconds(point: dict, width: int) -> str:
    seconds = point["seconds_per_target"]
    return f"{seconds:{width}.3f}" if seconds is not None else f"{'not measured':>{width}}"


def sample_accuracy(runs: int) -> list[dict]:
    from tailoredbench import load_benchmark, simulate
    from tailoredbench.datasets.synthetic import synthetic_2pl

    print(f"\nThe large-matrix option's accuracy cost (budget 30, CLARA on samples of {SAMPLE} items)")
    rows = []
    cases = [("gsm8k", runs), ("arc_challenge", runs), ("synthetic 200 x 6000", 2)]
    for name, n_runs in cases:
        bench = synthetic_2pl(200, 6000) if name.startswith("synthetic") else load_benchmark(name)
        maes = {}
        for sample in (0, SAMPLE):
            options = {"sample": sample} if sample else None
            sim = simulate(bench, budgets=[30], runs=n_runs, n_jobs=2, method_options=options)
            maes[sample] = (float(sim.summary["mae"].iloc[0]), float(sim.summary["mae_se"].iloc[0]))
        ratio = maes[SAMPLE][0] / maes[0][0]
        print(
            f"  {name:<22} MAE exact {maes[0][0]:.4f} ± {maes[0][1]:.4f}, sampled {maes[SAMPLE][0]:.4f} ± "
            f"{maes[SAMPLE][1]:.4f}: {ratio - 1:+.1%} ({n_runs} runs)",
            flush=True,
        )
        rows.append({"benchmark": name, "runs": n_runs, "mae_exact": maes[0], "mae_sampled": maes[SAMPLE]})
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="runs of the GSM8K and accuracy figures")
    parser.add_argument("--only", choices=["gsm8k", "scaling", "sample"], help="one part only")
    parser.add_argument("--point", nargs=3, type=int, metavar=("MODELS", "ITEMS", "SAMPLE"), help=argparse.SUPPRESS)
    parser.add_argument("--gsm8k-run", type=int, metavar="RUNS", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.point:
        print(json.dumps(one_point(*args.point)))
        return 0
    if args.gsm8k_run:
        print(gsm8k_seconds_per_run(args.gsm8k_run))
        return 0
    os.environ.setdefault("PYTHONHASHSEED", "0")
    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}")
    results = {}
    if args.only in (None, "gsm8k"):
        results["gsm8k"] = gsm8k_figures(args.runs)
        results["gsm8k_pinned"] = gsm8k_pinned(args.runs)
    if args.only in (None, "scaling"):
        results["scaling"] = scaling_table()
    if args.only in (None, "sample"):
        results["sample"] = sample_accuracy(args.runs)
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
