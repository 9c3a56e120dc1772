"""Repeat estimation methods over runs, budgets and targets; summarise MAE and Kendall's tau."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np
import pandas as pd
from joblib import Parallel, delayed, effective_n_jobs, parallel_config
from tqdm import tqdm  # plain text: no widget warning in notebooks

from . import cache as run_cache
from .datasets.benchmarks import Benchmark, load_benchmark
from .datasets.matrix import ResponseMatrix
from .errors import TailoredBenchError, check_integer
from .intervals import difficulty, pseudo_targets_of, revealed_unlikeness
from .intervals import interval as clipped_interval
from .methods import MethodSpec, Oracle, parse_methods
from .metrics import summarize

DEFAULT_BUDGETS = (20, 25, 30, 35, 40)


@dataclass
class Simulation:
    """What :func:`simulate` returns."""

    results: pd.DataFrame  # one row per (run, budget, method, target) with `true` and `estimate`
    summary: pd.DataFrame  # per (method, budget): mean and standard error over runs of MAE and Kendall's tau-b
    benchmark: dict  # counts and provenance of the data
    settings: dict  # the arguments, for metrics.json
    seconds_per_run: dict = field(default_factory=dict)  # per method, wall-clock seconds of one run
    calibration: dict = field(default_factory=dict)  # with intervals: per method and budget, their PseudoTargets


def _as_benchmark(benchmark) -> Benchmark:
    if isinstance(benchmark, Benchmark):
        return benchmark
    if isinstance(benchmark, str):
        return load_benchmark(benchmark)
    if isinstance(benchmark, tuple) and len(benchmark) == 2:
        source, target = (m if isinstance(m, ResponseMatrix) else ResponseMatrix(m) for m in benchmark)
        return Benchmark("custom", source, target, {"description": "user matrices"})
    raise TailoredBenchError("benchmark must be a name, a Benchmark or a (source, target) pair")


#: joblib backends a simulation runs on (None: joblib's default, processes).
BACKENDS = (None, "loky", "threading", "dask")


def check_inputs(bench: Benchmark, budgets: Sequence[int], specs: Sequence[MethodSpec]) -> None:
    """Raise a one-line :class:`TailoredBenchError` for settings no method can run."""
    if bench.source.n_models < 2 or bench.target.n_models < 2:
        raise TailoredBenchError(
            f"{bench.name}: {bench.source.n_models} source and {bench.target.n_models} target models; "
            "at least 2 of each are needed"
        )
    if bench.source.n_items != bench.target.n_items:
        raise TailoredBenchError(
            f"{bench.name}: source and target matrices have {bench.source.n_items} and {bench.target.n_items} items"
        )
    for budget in budgets:
        if budget > bench.n_items:
            raise TailoredBenchError(f"budget {budget} exceeds the item count {bench.n_items} of {bench.name}")
        if budget < 1:
            raise TailoredBenchError(f"budget {budget} must be positive")
        for spec in specs:
            if spec.kind == "tailored" and budget <= spec.options["g_size"]:
                raise TailoredBenchError(f"budget {budget} must exceed the G-set size {spec.options['g_size']}")


def by_method(specs: Sequence[MethodSpec]) -> dict[str, list[MethodSpec]]:
    """The specs grouped by method: a method's variants share one preparation and one pass over the runs."""
    groups: dict[str, list[MethodSpec]] = {}
    for spec in specs:
        groups.setdefault(spec.base, []).append(spec)
    return groups


def _prepare(source, budgets, specs: Sequence[MethodSpec], seed: int) -> dict[str, dict]:
    """One preparation per method, told every variant its runs will ask for (e.g. to fit stacking weights)."""
    prepared, cache = {}, run_cache.folder()
    for base, group in by_method(specs).items():
        variants = [s.variant for s in group]
        prepared[base] = group[0].method.prepare(
            source, budgets, seed=seed, cache=cache, variants=variants, **group[0].options
        )
    return prepared


@contextmanager
def dask_client(backend: str | None, scheduler: str | None, n_jobs: int):
    """The dask client of ``scheduler`` (``"local"``: a cluster of ``n_jobs`` processes here), else the current one."""
    if backend != "dask":
        yield None
        return
    try:
        import distributed
    except ImportError:
        raise TailoredBenchError("the dask backend needs distributed: pip install 'tailoredbench[dask]'") from None
    if scheduler is None:
        try:
            client = distributed.get_client()
        except ValueError:
            raise TailoredBenchError("no dask client: give a scheduler address (or 'local') or start one") from None
        yield client
        return
    with ExitStack() as stack:
        if scheduler == "local":
            # its workers start with variables set in this process's environment for good: put back at close
            stack.callback(_restore_environment, dict(os.environ))
            cluster = stack.enter_context(
                # a worker that cannot reach the scheduler within a minute stops instead of waiting for good
                distributed.LocalCluster(
                    n_workers=max(n_jobs, 1),
                    threads_per_worker=1,
                    dashboard_address=None,
                    silence_logs=logging.ERROR,
                    death_timeout=60,
                )
            )
            address = cluster.scheduler_address
        else:
            address = scheduler
        try:
            client = stack.enter_context(distributed.Client(address, timeout="10s"))
        except (OSError, TimeoutError) as error:
            raise TailoredBenchError(f"cannot reach the dask scheduler at {scheduler}: {error}") from None
        yield client


def _restore_environment(saved: dict) -> None:
    if dict(os.environ) != saved:
        os.environ.clear()
        os.environ.update(saved)


def _exact_where_all_seen(estimates, oracle: Oracle) -> np.ndarray:
    """A target whose every item was asked gets its accuracy on them, whatever the method would say."""
    estimates = np.array(estimates, dtype=float)
    for t in np.flatnonzero(oracle.spent() == oracle.n_items):
        estimates[t] = oracle.revealed(int(t))[1].mean()
    return estimates


#: Runs given to a worker at once: a method may share work between them (TailoredBench's item distances).
RUNS_PER_TASK = 10


def run_chunks(runs: int, workers: int) -> list[range]:
    """The runs ``0 .. runs - 1`` as tasks of up to :data:`RUNS_PER_TASK` runs; with several workers, at most
    half a worker's share of the runs left, so that no worker waits long for another's last task.

    Examples
    --------
    >>> [len(c) for c in run_chunks(25, 1)], [len(c) for c in run_chunks(25, 2)]
    ([10, 10, 5], [7, 5, 4, 3, 2, 1, 1, 1, 1])
    """
    chunks, start = [], 0
    while start < runs:
        size = RUNS_PER_TASK if workers <= 1 else max(1, min(RUNS_PER_TASK, -(-(runs - start) // (2 * workers))))
        chunks.append(range(start, min(start + size, runs)))
        start += size
    return chunks


def _some_runs(runs, specs, prepared, source, target, budgets, seed, with_difficulty=False):
    """Every method on the runs ``runs``: (run, rows, seconds, hardness) for each, in order; the seconds are
    per run, over the runs given."""
    keys = [(seed, run) for run in runs]
    rows: list[dict] = [{} for _ in runs]
    hardness: list[dict] = [{} for _ in runs]
    seconds: dict[str, float] = {}
    for base, group in by_method(specs).items():
        start = time.perf_counter()
        oracles = [{b: Oracle(target, budget=b) for b in budgets} for _ in runs]
        found = group[0].method.run(
            prepared[base], source, oracles, keys, variants=[s.variant for s in group], **group[0].options
        )
        for spec in group:
            seconds[spec.name] = (time.perf_counter() - start) / len(group) / len(runs)
            for i, run_oracles in enumerate(oracles):
                rows[i][spec.name] = np.vstack(
                    [_exact_where_all_seen(found[i][spec.variant][b], run_oracles[b]) for b in budgets]
                )
        if with_difficulty:  # what each target's interval scales with (tailoredbench.intervals)
            for i, run_oracles in enumerate(oracles):
                revealed = [revealed_unlikeness(source, run_oracles[b]) for b in budgets]
                # a target asked every item has its exact accuracy: its interval is that point
                exact = [run_oracles[b].spent() == run_oracles[b].n_items for b in budgets]
                for spec in group:
                    parts = zip(rows[i][spec.name], revealed, exact, strict=True)
                    hardness[i][spec.name] = np.vstack([np.where(e, 0.0, difficulty(r, *u)) for r, u, e in parts])
    return [(run, rows[i], seconds, hardness[i]) for i, run in enumerate(runs)]


def simulate(
    benchmark,
    methods: Sequence[str] = ("tailoredbench",),
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    runs: int = 100,
    seed: int = 0,
    n_jobs: int = 1,
    *,
    g_size: int = 10,
    distance: str = "manhattan",
    method_options: dict | None = None,
    interval: float | None = None,
    backend: str | None = None,
    scheduler: str | None = None,
    progress: bool = False,
) -> Simulation:
    """Estimate every target's accuracy with each method, repeated over runs and budgets.

    Parameters
    ----------
    benchmark : str, Benchmark or (source, target)
        A registered benchmark name, a loaded :class:`Benchmark`, or a pair of response matrices.
    methods : sequence of str
        Names from :data:`tailoredbench.methods.METHODS`.
    budgets : sequence of int
        Items each target answers (for TailoredBench, G-set included).
    runs : int
        Repetitions; run ``r`` is seeded by ``(seed, r)``.
    n_jobs : int
        joblib workers; the results are identical whatever their number.
    g_size, distance
        TailoredBench's settings, given to every method that declares them.
    method_options : dict, optional
        Further options for every method, e.g. ``{"calibrate": False}`` for TailoredBench.
    interval : float, optional
        A level such as 0.9: every estimate gets an interval calibrated on the source models;
        ``results`` gains ``interval_low`` and ``interval_high``, ``summary`` ``coverage`` and ``width``.
    backend : {None, "loky", "threading", "dask"}
        The joblib backend (``None``: joblib's default, processes); ``"dask"`` runs on the cluster of
        ``scheduler`` (an address, or ``"local"`` for ``n_jobs`` processes here), else the current client's.
    progress : bool
        Show a tqdm progress bar.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> ability = rng.random(40)
    >>> matrix = (rng.random((40, 120)) < ability[:, None]).astype(float)
    >>> sim = simulate((matrix[::2], matrix[1::2]), budgets=[15], runs=2, g_size=5)
    >>> sorted(sim.summary.columns)[:3]
    ['budget', 'kendall_tau', 'kendall_tau_se']
    """
    bench = _as_benchmark(benchmark)
    specs = parse_methods(methods, {"g_size": g_size, "distance": distance}, method_options)
    budgets = [check_integer(b, "budget", 1) for b in ([budgets] if np.isscalar(budgets) else list(budgets))]
    if not budgets:
        raise TailoredBenchError("no budget given")
    if len(set(budgets)) != len(budgets):
        raise TailoredBenchError(f"budget {next(b for b in budgets if budgets.count(b) > 1)} is given twice")
    budgets = sorted(budgets)
    runs = check_integer(runs, "runs", 1)
    seed = check_integer(seed, "seed", 0)
    n_jobs = check_integer(n_jobs, "n_jobs")
    if n_jobs == 0 or n_jobs < -1:
        raise TailoredBenchError(f"n_jobs must be at least 1 (or -1 for every core), got {n_jobs}")
    if backend not in BACKENDS:
        raise TailoredBenchError(f"unknown backend {backend!r}; choose from: {', '.join(map(str, BACKENDS))}")
    if scheduler is not None and backend != "dask":
        raise TailoredBenchError("a dask scheduler applies to the dask backend only")
    check_inputs(bench, budgets, specs)
    if interval is not None:
        if not 0 < interval < 1:
            raise TailoredBenchError(f"interval level must be between 0 and 1, got {interval}")
        if bench.source.n_models < 3:
            raise TailoredBenchError(f"{bench.name}: intervals need at least 3 source models")
    source, target = bench.source.values, bench.target.values
    # processes by default: the per-target Python work holds the GIL, so threads would take turns
    config = {"n_jobs": n_jobs} if backend is None else {"backend": backend, "n_jobs": n_jobs}
    with dask_client(backend, scheduler, n_jobs), parallel_config(**config):
        prepared = _prepare(source, budgets, specs, seed)  # TailoredBench+'s weights are fitted on the workers
        start = time.perf_counter()
        tasks = Parallel(return_as="generator")(
            delayed(_some_runs)(chunk, specs, prepared, source, target, budgets, seed, interval is not None)
            for chunk in run_chunks(runs, effective_n_jobs(None))
        )
        done = (out for outs in tasks for out in outs)
        if progress:
            done = tqdm(done, total=runs, desc=f"{bench.name} runs")
        outputs = sorted(done, key=lambda out: out[0])
        wall = time.perf_counter() - start
        # the intervals' calibration on source models, through the same workers
        calibration = {} if interval is None else _calibration(specs, source, budgets, seed, prepared)

    results = _tidy(outputs, budgets, list(bench.target.models), target.mean(axis=1))
    if interval is not None:
        results = _with_intervals(results, calibration, interval)
    names = [spec.name for spec in specs]
    seconds = {name: float(np.mean([out[2][name] for out in outputs])) for name in names}
    seconds["wall_per_run"] = wall / runs
    settings = {
        "methods": names,
        "budgets": budgets,
        "runs": runs,
        "seed": seed,
        "n_jobs": n_jobs,
        "g_size": g_size,
        "distance": distance,
        "method_options": dict(method_options or {}),
        "interval": interval,
    }
    return Simulation(results, summarize(results), bench.summary(), settings, seconds, calibration)


def _tidy(outputs, budgets, models: list, truth: np.ndarray) -> pd.DataFrame:
    """One row per run, method, budget and target, in that order."""
    blocks = [
        (run, budget, name, block[i], hardness[name][i] if name in hardness else None)
        for run, rows, _, hardness in outputs
        for name, block in rows.items()
        for i, budget in enumerate(budgets)
    ]
    n, m = len(models), len(blocks)
    runs, budget_of, names, estimates, difficulties = zip(*blocks, strict=True)
    every = np.arange(m * n)
    columns = {
        "run": np.repeat(np.asarray(runs, dtype=np.int64), n),
        "budget": np.repeat(np.asarray(budget_of, dtype=np.int64), n),
        "method": pd.Series(list(names)).take(every // n).to_numpy(),
        "target": pd.Series(models).take(every % n).to_numpy(),
        "true": np.tile(np.asarray(truth, dtype=float), m),
        "estimate": np.concatenate(estimates),
    }
    if any(d is not None for d in difficulties):
        columns["difficulty"] = np.concatenate([np.full(n, np.nan) if d is None else d for d in difficulties])
    return pd.DataFrame(columns)


def _calibration(specs, source, budgets, seed, prepared) -> dict:
    """``{method: {budget: PseudoTargets}}``: the source models estimated as targets that calibrate the intervals."""
    calibration = {}
    for base, group in by_method(specs).items():
        # TailoredBench+'s fitted weights are reused in the folds, not refitted
        if "weights" in prepared[base]:
            group = [
                replace(s, options=MappingProxyType({**s.options, "weights": prepared[base]["weights"]})) for s in group
            ]
        # a method's variants share one pass over the folds, as they share one pass over the runs
        calibration.update(pseudo_targets_of(group, source, budgets, seed=seed))
    return calibration


def _with_intervals(results, calibration, level):
    """``results`` with each estimate's interval, from the quantiles of ``calibration``."""
    rows_of = results.groupby(["method", "budget"], sort=False).indices  # positions, ascending
    estimate, hardness = results["estimate"].to_numpy(), results["difficulty"].to_numpy()
    low, high = np.full(len(results), np.nan), np.full(len(results), np.nan)
    for name, by_budget in calibration.items():
        for budget, pseudo in by_budget.items():
            rows = rows_of.get((name, budget), [])
            low[rows], high[rows] = clipped_interval(estimate[rows], pseudo.quantile(level=level) * hardness[rows])
    return results.assign(interval_low=low, interval_high=high)
