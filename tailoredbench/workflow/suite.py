"""Evaluate a new model on a whole suite for real: one plan folder, one lm-eval ``--samples`` file for every task.

Three steps around two lm-eval runs, as :mod:`tailoredbench.workflow.benchmark` takes them for one benchmark:

1. :func:`plan_suite_g_set` writes every benchmark's G-set as one ``--samples`` selection, ``g_set.json``
   (``{task: [doc_id, ...]}`` for every task of the suite), and ``state.json``.
2. :func:`plan_suite_n_set` reads the model's samples on the G-sets (one file per task, as lm-eval writes them),
   chooses its native sources from its answers on all of them, then each benchmark's N-set (``n_set.json``, every
   task again); TailoredBench+'s stacking weights and the intervals' quantiles are fitted on the source models
   there, once, and kept in the state.
3. :func:`estimate_suite` reads the samples on every probe: each benchmark's TailoredBench+ (joint) estimate and
   the suite mean's, each with its 90% interval.

Or, instead of step 2, the precision mode: :func:`plan_suite_round`, run after each lm-eval run, writes the next
round's items of every task (``round_1.json``, ...) until every benchmark's interval (or the suite mean's) is as
narrow as requested or the maximum budget is reached; its rounds, weights and stopping rule are
:func:`tailoredbench.suite.simulate_suite_precision`'s, fitted on the sources at the first round and kept.

The planning and the estimates are :mod:`tailoredbench.suite`'s joint mode for the model alone, as the only target
of run 0 of the plan's seed. A registered suite's source models are those of its split (as in a simulation); the
matrix files of a custom suite are all source models, their item ids the tasks' lm-eval doc_ids. A plan folder is
locked, written and checked by :mod:`tailoredbench.workflow.folder`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import typing
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from joblib import parallel_config

from ..datasets.lm_eval import DEFAULT_METRIC, metric_threshold, task_of
from ..datasets.matrix import ResponseMatrix, load_matrix
from ..datasets.suites import LM_EVAL_TASKS, SUITES, SuiteWarning, align, load_suite
from ..errors import TailoredBenchError, check_integer
from ..intervals import interval as clipped_interval
from ..kmedoids import check_distance
from ..stopping import ROUND_SIZE, check_precision, round_budgets
from ..suite import (
    INTERVAL_FOLDS,
    PRECISION_OF,
    ROUND_METHODS,
    RoundsRule,
    check_precision_of,
    check_round_method,
    fit_new_model,
    fit_new_model_rounds,
    new_model_estimate,
    new_model_g_sets,
    new_model_round_probes,
    new_model_rounds_estimate,
    round_budgets_of,
)
from ..tailored import COMPONENTS, matrix_sha256
from .benchmark import INTERVAL_LEVEL, PlanState
from .folder import (
    G_SET,
    N_SET,
    ROUND,
    STATE,
    State,
    Step,
    answers_on,
    build,
    check_files,
    check_free,
    check_types,
    in_plan_folder,
    json_text,
    load_json,
    locked,
    merge_samples,
    one_model,
    read_plan,
    replaceable,
    require,
    sealed_files,
)

#: The option of ``plan`` that starts a suite's plan (named by the error of an interrupted one).
START = "--suite"


@dataclass(frozen=True)
class SuiteNSet:
    """Step 2: each benchmark's N-set, one model's native sources, and what was fitted on the sources for it."""

    budget: int  # items per benchmark, G-set included
    model: str
    native_sources: tuple[str, ...]
    n_sets: tuple[tuple[int, ...], ...]  # per benchmark: item positions in its matrix
    n_set_doc_ids: tuple[tuple[int, ...], ...]
    weights: tuple[tuple[float, ...], ...]  # per benchmark: TailoredBench+'s weights over tailored.COMPONENTS
    quantiles: tuple[float, ...]  # per benchmark: the conformal quantile of the interval
    suite_quantile: float  # the suite mean's
    interval_level: float

    def __post_init__(self):
        check_types(self)


@dataclass(frozen=True)
class SuiteRounds:
    """The precision mode instead of step 2: its settings, the rounds planned so far and the rule fitted on the
    sources (:class:`~tailoredbench.suite.RoundsRule`), with TailoredBench+'s weights."""

    precision: float
    of: str  # the interval the precision is of: "every" benchmark's or the suite "mean"'s
    max_budget: int  # items per benchmark at most
    round_size: int
    method: str  # one of suite.ROUND_METHODS
    model: str
    native_sources: tuple[str, ...]
    rounds: tuple[int, ...]  # items per benchmark after each round planned
    weights: tuple[tuple[float, ...], ...]  # per benchmark: TailoredBench+'s weights; none for tailoredbench
    quantiles: tuple[tuple[float, ...], ...]  # per round of the settings: each benchmark's conformal quantile
    suite_quantiles: tuple[float, ...]  # per round: the suite mean's
    factor: float
    interval_level: float

    def __post_init__(self):
        check_types(self)
        check_precision(self.precision)
        require(self.of in PRECISION_OF, f"a precision of {self.of!r}, not of {' or '.join(PRECISION_OF)}")
        require(self.method in ROUND_METHODS, f"rounds by {self.method!r}, not by {' or '.join(ROUND_METHODS)}")

    @property
    def rule(self) -> RoundsRule:
        quantiles = np.array(self.quantiles, dtype=float)
        return RoundsRule(quantiles, np.array(self.suite_quantiles, dtype=float), self.factor, self.precision, self.of)


@dataclass(frozen=True)
class SuiteState(State):
    """A suite plan's ``state.json``: each benchmark's task, metric and G-set, then (``step``) its N-set or rounds.

    Built only valid. Its JSON is flat, sealed by a sha256 (``checksum``); ``FORMAT`` alone decides whether a
    file can be read. ``suite``: a registered suite's name, or ``"custom"`` with its ``matrix_files``.
    """

    FORMAT = 2  # bump when the JSON layout changes, and only then
    FORMAT_KEY = "suite_state_format"
    #: Older formats still read: 1, before the precision mode's rounds.
    READS = (1,)

    suite: str
    matrix_files: tuple[str, ...]
    benchmarks: tuple[str, ...]
    tasks: tuple[str, ...]
    metrics: tuple[str, ...]
    seed: int
    g_size: int
    distance: str
    item_counts: tuple[int, ...]
    data_sha256: tuple[str, ...]
    sources_sha256: str
    g_sets: tuple[tuple[int, ...], ...]  # per benchmark: item positions in its matrix
    g_set_doc_ids: tuple[tuple[int, ...], ...]
    step: SuiteNSet | SuiteRounds | None = None

    def __post_init__(self):
        check_types(self)
        n, step, size = len(self.benchmarks), self.step, self.g_size
        per_benchmark = (self.tasks, self.metrics, self.item_counts, self.g_sets, self.g_set_doc_ids)
        require(n >= 2 and all(len(x) == n for x in per_benchmark), "not a task, metric and G-set per benchmark")
        require(len(set(self.tasks)) == n, "a task is named twice")
        check_integer(self.seed, "seed", 0)
        check_distance(self.distance)
        for metric in self.metrics:
            metric_threshold(metric)
        if isinstance(step, SuiteRounds):
            budgets = round_budgets(size, step.round_size, step.max_budget, min(self.item_counts))
            require(step.rounds == tuple(sorted(set(step.rounds) & set(budgets))), "its rounds are not of its settings")
            fitted_rounds = len(step.quantiles) == len(step.suite_quantiles) == len(budgets)
            require(
                fitted_rounds and all(len(q) == n for q in step.quantiles), "not a quantile per round and benchmark"
            )
            stacked = step.method == "tailored_plus"
            convex = all(len(w) == len(COMPONENTS) and min(w) >= 0 and abs(sum(w) - 1) < 1e-9 for w in step.weights)
            require(len(step.weights) == (n if stacked else 0) and convex, "its weights are not TailoredBench+'s")
            quantiles = [v for q in step.quantiles for v in q] + list(step.suite_quantiles)
            require(min(quantiles) >= 0 and step.factor > 0, "a negative quantile or factor")
            require(0 < step.interval_level < 1 and len(step.native_sources) > 0, "no interval level or sources")
        if isinstance(step, SuiteNSet):
            fitted = (step.n_sets, step.n_set_doc_ids, step.weights, step.quantiles)
            require(all(len(x) == n for x in fitted), "not an N-set, weights and a quantile per benchmark")
            convex = all(len(w) == len(COMPONENTS) and min(w) >= 0 and abs(sum(w) - 1) < 1e-9 for w in step.weights)
            require(convex, "its stacking weights are not weights of TailoredBench+'s estimates")
            require(min(step.quantiles) >= 0 and step.suite_quantile >= 0, "a negative quantile")
            require(0 < step.interval_level < 1 and len(step.native_sources) > 0, "no interval level or sources")
        for b, name in enumerate(self.benchmarks):
            items = self.g_sets[b] + (step.n_sets[b] if isinstance(step, SuiteNSet) else ())
            doc_ids = self.g_set_doc_ids[b] + (step.n_set_doc_ids[b] if isinstance(step, SuiteNSet) else ())
            require(0 < size == len(self.g_sets[b]) == len(self.g_set_doc_ids[b]), f"the G-set of {name} is not {size}")
            paired = len(set(items)) == len(items) == len(set(doc_ids)) == len(doc_ids)
            require(paired, f"an item or doc_id of {name} repeats or is unpaired")
            require(all(0 <= i < self.item_counts[b] for i in items), f"an item outside {name}'s {self.item_counts[b]}")
            if isinstance(step, SuiteNSet):
                require(step.budget == len(items), f"a budget of {step.budget} for {len(items)} items of {name}")

    @classmethod
    def parse(cls, text: str) -> tuple[SuiteState, dict[str, str] | None]:
        """The state of a :meth:`to_json` text and the file hashes it records, or a one-line error."""
        data = load_json(text)
        require(isinstance(data, dict) and "suite_state_format" in data, "not a suite's plan state")
        found = data["suite_state_format"]
        readable = found == cls.FORMAT or found in cls.READS
        require(readable, f"a suite plan state of format {found}, this is format {cls.FORMAT}")
        require(not {"budget", "precision"} <= data.keys(), "both a fixed budget and a precision")
        kind = SuiteNSet if "budget" in data else SuiteRounds if "precision" in data else None
        state = build(cls, {**data, "step": kind and build(kind, data)})
        return state, sealed_files(data)


def is_suite_plan(folder: str | Path) -> bool:
    """Whether ``folder`` holds a suite's plan: by its ``state.json``, else (an interrupted plan) by a ``g_set.json``
    of two or more tasks, so that its error names ``plan --suite``."""
    try:
        data = json.loads((Path(folder) / STATE).read_text(errors="replace"))
    except (OSError, ValueError, RecursionError):  # unreadable: the plan's own reader says why
        try:
            g_sets = json.loads((Path(folder) / G_SET).read_text(errors="replace"))
        except (OSError, ValueError, RecursionError):
            return False
        return isinstance(g_sets, dict) and len(g_sets) > 1
    return isinstance(data, dict) and "suite_state_format" in data


@dataclass(frozen=True)
class _Sources:
    """A suite's source models as planned on: benchmark names, matrices, data hashes and a hash of the sources."""

    benchmarks: tuple[str, ...]
    matrices: tuple[ResponseMatrix, ...]
    data_sha256: tuple[str, ...]

    @property
    def values(self) -> list[np.ndarray]:
        return [m.values for m in self.matrices]

    @property
    def sha256(self) -> str:
        digest = hashlib.sha256()
        for m in self.matrices:
            digest.update(json.dumps([list(m.models), [str(i) for i in m.items]]).encode())
            digest.update(matrix_sha256(m.values).encode())
        return digest.hexdigest()

    def doc_ids(self, b: int) -> tuple[int, ...]:
        """Benchmark ``b``'s item ids as lm-eval doc_ids (whole numbers, as a CSV header may write them)."""
        out = []
        for item in self.matrices[b].items:
            text = str(item).strip()
            if not (isinstance(item, int | np.integer) or (text.isascii() and text.isdigit())):
                raise TailoredBenchError(
                    f"item id {item!r} of {self.benchmarks[b]} is not an lm-eval doc_id (a whole number)"
                )
            out.append(int(text))
        if len(set(out)) != len(out):  # "7" and "07" would read one sample as two items' results
            twice = next(d for d in out if out.count(d) > 1)
            raise TailoredBenchError(f"two item ids of {self.benchmarks[b]} are the one doc_id {twice}")
        return tuple(out)


def _sources(suite: str, files: Sequence[str | Path] = ()) -> _Sources:
    """A registered suite's source models (its split's), or every model of a custom suite's matrix files."""
    if not files:
        if suite not in SUITES:
            raise TailoredBenchError(f"unknown suite {suite!r}; choose one of {', '.join(SUITES)} or give matrix files")
        loaded = load_suite(suite)
        hashes = tuple(sorted({f["sha256"] for f in loaded.provenance.get("files", [])}))
        return _Sources(loaded.benchmarks, loaded.source, hashes)
    paths = [Path(f) for f in files]
    if len(paths) < 2:
        raise TailoredBenchError("a suite needs two or more benchmarks")
    names = tuple(p.stem for p in paths)
    if len(set(names)) != len(names):
        raise TailoredBenchError(f"two benchmarks of the suite have the same name: {', '.join(names)}")
    matrices = [load_matrix(p) for p in paths]
    hashes = tuple(hashlib.sha256(p.read_bytes()).hexdigest() for p in paths)
    aligned, dropped = align(matrices)
    if dropped:
        warnings.warn(
            f"{dropped} models are missing from some benchmark of the suite and were dropped; "
            f"{aligned[0].n_models} remain",
            SuiteWarning,
            stacklevel=3,
        )
    if aligned[0].n_models < INTERVAL_FOLDS:
        raise TailoredBenchError(
            f"the benchmarks {', '.join(names)} share {aligned[0].n_models} models; a suite's plan needs at least "
            f"{INTERVAL_FOLDS} source models (its intervals are calibrated on {INTERVAL_FOLDS} folds of them)"
        )
    return _Sources(names, tuple(aligned), hashes)


#: The per-sample metric read by default for a task (else ``acc``): the registered suites', then the benchmarks'.
KNOWN_METRIC = {task: metric for pairs in LM_EVAL_TASKS.values() for task, metric in pairs} | DEFAULT_METRIC


def _tasks_and_metrics(suite: str, benchmarks, tasks, metrics) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The lm-eval task and metric of each benchmark: as given, else the registered suite's tasks and metrics (a
    custom suite's benchmarks by name, read by :data:`KNOWN_METRIC`)."""
    tasks = tuple(tasks) if tasks else tuple(task for task, _ in LM_EVAL_TASKS.get(suite, ())) or tuple(benchmarks)
    n = len(benchmarks)
    if len(tasks) != n:
        raise TailoredBenchError(
            f"{len(tasks)} tasks for the {n} benchmarks of the suite ({', '.join(benchmarks)}): "
            "name one lm-eval task per benchmark, in that order"
        )
    registered = tuple(task for task, _ in LM_EVAL_TASKS.get(suite, ()))
    moved = [(given, b) for b, given in enumerate(tasks) if given in registered and registered[b] != given]
    if moved:  # a known task of another benchmark would read its samples as this one's results
        given, b = moved[0]
        raise TailoredBenchError(
            f"task {given!r} is {suite}'s task of {benchmarks[registered.index(given)]}, not of {benchmarks[b]}: "
            f"name the tasks in the suite's order, {','.join(registered)}"
        )
    repeated = sorted({t for t in tasks if tasks.count(t) > 1})
    if repeated or not all(isinstance(t, str) and t.strip() for t in tasks):
        raise TailoredBenchError(f"task {(repeated or [''])[0]!r} is named twice or empty; name each task once")
    # a registered suite's matrix holds its own metric, whatever the task is named
    known = [metric for _, metric in LM_EVAL_TASKS[suite]] if suite in LM_EVAL_TASKS else None
    metrics = tuple(metrics) if metrics else tuple(known or (KNOWN_METRIC.get(task, "acc") for task in tasks))
    if len(metrics) != n:
        raise TailoredBenchError(f"{len(metrics)} metrics for {n} tasks: name one per task, in their order")
    for metric in metrics:
        metric_threshold(metric)
    return tasks, metrics


def plan_suite_g_set(
    suite: str | Sequence[str | Path],
    out: str | Path,
    *,
    tasks: Sequence[str] | None = None,
    metrics: Sequence[str] | None = None,
    g_size: int = 5,
    seed: int = 0,
    distance: str = "manhattan",
    force: bool = False,
) -> SuiteState:
    """Step 1: write ``g_set.json`` (every task's G-set, one lm-eval ``--samples`` selection) and ``state.json``.

    ``suite``: a registered suite's name or two or more matrix files. ``tasks``: one lm-eval task per benchmark, in
    the suite's order (a registered suite's by default, e.g. ``truthfulqa_mc2`` read as ``acc>0.5``; a custom
    suite's benchmarks are named after its files); ``metrics``: one per task. A folder that holds files is refused
    unless ``force``.
    """
    seed = check_integer(seed, "seed", 0)
    g_size = check_integer(g_size, "g_size", 1)
    distance = check_distance(distance)
    files = () if isinstance(suite, str) else tuple(str(Path(f).resolve()) for f in suite)
    name = suite if isinstance(suite, str) else "custom"

    def step(folder: Path) -> SuiteState:
        if not force:
            check_free(folder, PlanState)  # a benchmark plan's interruption is named; anything else is "not empty"
        sources = _sources(name, files)
        chosen_tasks, chosen_metrics = _tasks_and_metrics(name, sources.benchmarks, tasks, metrics)
        doc_ids = [sources.doc_ids(b) for b in range(len(sources.benchmarks))]
        for benchmark, m in zip(sources.benchmarks, sources.matrices, strict=True):
            if not 0 < g_size < m.n_items:
                raise TailoredBenchError(f"g_size={g_size} must be below the item count {m.n_items} of {benchmark}")
        g_sets = new_model_g_sets(sources.values, g_size, distance=distance, seed=seed)
        state = SuiteState(
            suite=name,
            matrix_files=files,
            benchmarks=sources.benchmarks,
            tasks=chosen_tasks,
            metrics=chosen_metrics,
            seed=seed,
            g_size=g_size,
            distance=distance,
            item_counts=tuple(m.n_items for m in sources.matrices),
            data_sha256=sources.data_sha256,
            sources_sha256=sources.sha256,
            g_sets=tuple(tuple(int(i) for i in g) for g in g_sets),
            g_set_doc_ids=tuple(tuple(ids[i] for i in g) for ids, g in zip(doc_ids, g_sets, strict=True)),
        )
        with Step(folder, replaces=lambda _: force, start=START) as written:  # an older plan's n_set goes
            written.write(G_SET, json_text(_selection(state.tasks, state.g_set_doc_ids)))
            written.commit(state)
        return state

    return in_plan_folder(out, step)


def _selection(tasks: Sequence[str], doc_ids: Sequence[Sequence[int]]) -> dict[str, list[int]]:
    """lm-eval's ``--samples`` selection of several tasks: ``{task: [doc_id, ...]}``."""
    return {task: [int(d) for d in ids] for task, ids in zip(tasks, doc_ids, strict=True)}


def read_suite_state(folder: str | Path, seed: int | None = None) -> SuiteState:
    """The suite plan's state, refusing one of another format or seed, or whose files disagree with it."""
    folder = Path(folder)
    with locked(folder, shared=True):
        state, files = read_plan(folder, SuiteState, seed, START)
        check_files(folder, files, start=START)
    return state


def _refit(state: SuiteState) -> tuple[_Sources, list[np.ndarray]]:
    """The plan's source models and G-sets, computed again and checked against the plan's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SuiteWarning)  # said when the plan was made
        sources = _sources(state.suite, state.matrix_files)
    if sources.data_sha256 != state.data_sha256:
        raise TailoredBenchError(f"suite {state.suite}: planned on other data files than these; plan again")
    if sources.benchmarks != state.benchmarks or sources.sha256 != state.sources_sha256:
        raise TailoredBenchError(f"suite {state.suite}: the source models differ from the plan's")
    g_sets = new_model_g_sets(sources.values, state.g_size, distance=state.distance, seed=state.seed)
    if tuple(tuple(int(i) for i in g) for g in g_sets) != state.g_sets:
        raise TailoredBenchError("the G-sets refitted from the data differ from the plan's")
    return sources, g_sets


def _answers(state: SuiteState, sources: _Sources, samples) -> list[dict[int, float]]:
    """Each benchmark's results ``{doc_id: 0/1}`` from samples files of the plan's tasks (each file names its own)."""
    where = {task: b for b, task in enumerate(state.tasks)}
    merged: list[dict[int, float]] = [{} for _ in state.tasks]
    for path in samples:
        task = task_of(path)
        if task not in where:
            raise TailoredBenchError(f"{path}: samples of task '{task}', not of this plan ({', '.join(state.tasks)})")
        merge_samples(merged[where[task]], path, state.metrics[where[task]], task, f" of task {task}")
    for b, task in enumerate(state.tasks):
        if not merged[b]:
            raise TailoredBenchError(f"the samples hold no results of task {task}: give its samples_{task}_*.jsonl")
        outside = sorted(set(merged[b]) - set(sources.doc_ids(b)))
        if outside:
            raise TailoredBenchError(f"doc_id {outside[0]} of task {task} is not an item of {state.benchmarks[b]}")
    return merged


def _probes(state: SuiteState, samples, rounds) -> tuple:
    """Refit, read the samples, and plan every benchmark's probe after each of ``rounds`` (a fixed budget: one)."""
    sources, g_sets = _refit(state)
    answers = _answers(state, sources, samples)
    g_answers = [
        answers_on(results, doc_ids, f"{task} G-set")
        for results, doc_ids, task in zip(answers, state.g_set_doc_ids, state.tasks, strict=True)
    ]
    probes = new_model_round_probes(sources.values, g_sets, g_answers, rounds, distance=state.distance, seed=state.seed)
    return sources, answers, probes


def plan_suite_n_set(
    folder: str | Path, samples, budget: int, *, seed: int | None = None, force: bool = False, n_jobs: int = 1
) -> SuiteState:
    """Step 2: from the samples on every G-set, write ``n_set.json`` (every task's N-set) with the fitted state.

    ``budget``: items per benchmark, G-set included. Fitting TailoredBench+'s weights and the intervals on the
    sources takes most of the time (``n_jobs`` workers, the same numbers for any number). Planning again with the
    same samples and budget changes nothing; with other ones it would replace N-sets a model may be running on,
    and needs ``force``.
    """
    folder = Path(folder)
    with locked(folder):
        state, files = read_plan(folder, SuiteState, seed, START)
        check_files(folder, files, step=not force, start=START)
        budget = check_integer(budget, "budget")
        if budget <= state.g_size:
            raise TailoredBenchError(f"budget {budget} must exceed the G-set size {state.g_size}")
        for name, count in zip(state.benchmarks, state.item_counts, strict=True):
            if budget > count:
                raise TailoredBenchError(f"budget {budget} exceeds the item count {count} of {name}")
        model = one_model(samples)
        sources, _, (probes,) = _probes(state, samples, [(budget,) * len(state.tasks)])
        names = sources.matrices[0].models
        native = tuple(names[i] for i in probes[0].native_sources)
        n_sets = tuple(tuple(int(i) for i in p.n_set) for p in probes)
        old = state.step
        planned = (budget, model, native, n_sets)
        if isinstance(old, SuiteRounds) and not force:
            raise TailoredBenchError(
                f"{folder}: holds a plan to precision {old.precision}; add --force to replace it by a fixed budget"
            )
        if isinstance(old, SuiteNSet) and (old.budget, old.model, old.native_sources, old.n_sets) == planned:
            step = old  # the same plan: what was fitted for it is kept
        elif isinstance(old, SuiteNSet) and not force:
            raise TailoredBenchError(
                f"{folder}: already holds N-sets (budget {old.budget}, model {old.model}); "
                "planning others would replace them: add --force, or plan into a new folder"
            )
        else:
            with parallel_config(n_jobs=check_integer(n_jobs, "n_jobs", 1)):
                weights, q, q_mean = fit_new_model(
                    sources.values, [budget] * len(probes), state.g_size, distance=state.distance, seed=state.seed
                )
            doc_ids = [sources.doc_ids(b) for b in range(len(probes))]
            step = SuiteNSet(
                budget=budget,
                model=model,
                native_sources=native,
                n_sets=n_sets,
                n_set_doc_ids=tuple(tuple(ids[i] for i in items) for ids, items in zip(doc_ids, n_sets, strict=True)),
                weights=tuple(tuple(float(w) for w in row) for row in weights),
                quantiles=tuple(float(v) for v in q),
                suite_quantile=q_mean,
                interval_level=INTERVAL_LEVEL,
            )
        state = state.then(step)
        with Step(folder, replaceable(files, force), start=START) as written:
            written.keep(G_SET)
            written.write(N_SET, json_text(_selection(state.tasks, step.n_set_doc_ids)))
            written.commit(state)
    return state


def estimate_suite(folder: str | Path, samples, seed: int | None = None) -> dict:
    """Step 3: each benchmark's TailoredBench+ (joint) estimate and the suite mean's, with their intervals.

    Returns ``benchmarks`` (per benchmark: ``benchmark``, ``task``, ``metric``, ``estimate``, ``interval_low``,
    ``interval_high``, ``items``), ``suite_mean`` (``estimate``, ``interval_low``, ``interval_high``), the ``items``
    asked in all, the number of ``native_sources``, and the plan's settings. A plan to a precision: at the round
    where its rule stops, each interval with its ``halfwidth``, and ``precision``, ``precision_of``,
    ``precision_met``, ``status`` and ``round``.
    """
    folder = Path(folder)
    with locked(folder, shared=True):
        state, files = read_plan(folder, SuiteState, seed, START)
        check_files(folder, files, start=START)
        step = state.step
        if step is None:
            raise TailoredBenchError(f"{folder}: plan the N-sets first ('tailoredbench plan --state ... --budget N')")
        model = one_model(samples)
        if model != step.model:
            raise TailoredBenchError(f"the samples come from {model}, the N-sets were planned for {step.model}")
        head = {"suite": state.suite, "method": "tailored_plus", "mode": "joint", "interval_level": step.interval_level}
        tail = {"native_sources": len(step.native_sources), "model": model, "seed": state.seed}
        if isinstance(step, SuiteRounds):
            replayed = _replay(state, step, samples)
            if not replayed["answered"]:
                raise TailoredBenchError("no round is answered yet: run lm-eval on round_1.json, then plan or estimate")
            status, items = replayed["status"], replayed["items"]
            if status == "next round":
                status = "precision not reached yet: plan the next round"
            done = _estimates(state, items, *replayed["stopped"])
            return {
                **head,
                "method": step.method,
                **done,
                "items": items * len(state.tasks),
                "budget": items,
                "round": replayed["stop"] + 1,
                "precision": step.precision,
                "precision_of": step.of,
                "precision_met": replayed["status"] == "precision reached",
                "status": status,
                **tail,
            }
        sources, answers, (probes,) = _probes(state, samples, [(step.budget,) * len(state.tasks)])
        if tuple(tuple(int(i) for i in p.n_set) for p in probes) != step.n_sets:
            raise TailoredBenchError("the G-set results differ from those the N-sets were planned with")
        results = [
            answers_on(found, g + n, f"{task} probe")
            for found, g, n, task in zip(answers, state.g_set_doc_ids, step.n_set_doc_ids, state.tasks, strict=True)
        ]
        fit = new_model_estimate(sources.values, probes, results, step.weights, step.quantiles, step.suite_quantile)
    bounds = (fit.low, fit.high, fit.suite_low, fit.suite_high)
    done = _estimates(state, step.budget, fit.estimate, fit.suite_estimate, bounds=bounds)
    return {**head, **done, "items": step.budget * len(state.tasks), "budget": step.budget, **tail}


def _replay(state: SuiteState, step: SuiteRounds, samples) -> dict:
    """The precision mode replayed on the samples: every round's new items (``round_items``, per round and benchmark,
    positions in its matrix), the rounds ``answered`` in full, and where the rule stops among them (``stop``, with the
    ``items`` per benchmark there and the model's ``stopped`` estimates), with the ``status`` it gives."""
    rounds = round_budgets_of(state.item_counts, state.g_size, step.round_size, step.max_budget)
    sources, answers, probes = _probes(state, samples, rounds)
    native = tuple(sources.matrices[0].models[i] for i in probes[0][0].native_sources)
    if step.native_sources not in ((), native):  # () before the first replay
        raise TailoredBenchError("the G-set results differ from those the rounds were planned with")
    doc_ids = [sources.doc_ids(b) for b in range(len(state.tasks))]
    round_items = [
        [p.n_set[len(probes[r - 1][b].n_set) if r else 0 :] for b, p in enumerate(round_probes)]
        for r, round_probes in enumerate(probes)
    ]
    answered = 0
    for round_probes in probes:
        if not all(
            all(ids[i] in found for i in p.items) for p, ids, found in zip(round_probes, doc_ids, answers, strict=True)
        ):
            break
        answered += 1
    out = {"sources": sources, "doc_ids": doc_ids, "native": native, "round_items": round_items}
    out.update(rounds=rounds, answered=answered, status="next round", items=state.g_size, stop=-1)
    if answered:
        results = [
            np.array([found.get(d, np.nan) for d in ids], dtype=float)
            for found, ids in zip(answers, doc_ids, strict=True)
        ]
        stopped = new_model_rounds_estimate(
            sources.values,
            state.g_size,
            rounds[:answered],
            results,
            step.rule,
            step.weights or None,
            method=step.method,
            distance=state.distance,
            seed=state.seed,
        )
        at = int(stopped.at[0])
        found = (stopped.estimate[:, 0], stopped.mean[0], stopped.half[:, 0], stopped.half_mean[0])
        out.update(stopped=found, stop=at, items=rounds[at][0])
        if stopped.met[0]:
            out["status"] = "precision reached"
        elif answered == len(rounds):
            out["status"] = "maximum budget reached"
    return out


def _estimates(state: SuiteState, items: int, estimate, mean, half=None, half_mean=None, bounds=None) -> dict:
    """``benchmarks`` and ``suite_mean``: each estimate with its interval, from the half-widths or the ``bounds``."""
    if bounds is None:
        low, high = clipped_interval(np.append(estimate, mean), np.append(half, half_mean))
        bounds = (low[:-1], high[:-1], low[-1], high[-1])
    lows, highs, mean_low, mean_high = bounds
    each = zip(state.benchmarks, state.tasks, state.metrics, estimate, lows, highs, strict=True)
    rows = [
        {"benchmark": name, "task": task, "metric": metric, "estimate": float(value)}
        | {"interval_low": float(low), "interval_high": float(high)}
        | ({} if half is None else {"halfwidth": float(half[b])})
        | {"items": items}
        for b, (name, task, metric, value, low, high) in enumerate(each)
    ]
    whole = {"estimate": float(mean), "interval_low": float(mean_low), "interval_high": float(mean_high)}
    return {"benchmarks": rows, "suite_mean": whole | ({} if half is None else {"halfwidth": float(half_mean)})}


def plan_suite_round(
    folder: str | Path,
    samples,
    precision: float,
    *,
    of: str = "every",
    max_budget: int | None = None,
    round_size: int = ROUND_SIZE,
    method: str = "tailored_plus",
    seed: int | None = None,
    force: bool = False,
    n_jobs: int = 1,
) -> dict:
    """The precision mode instead of step 2: after the G-sets or a round, write the next round or say it is done.

    Writes ``round_<k>.json`` (the next ``round_size`` items of every task, one lm-eval ``--samples`` selection)
    unless every benchmark's 90% interval (``of="every"``) or the suite mean's (``of="mean"``) is at most
    ``precision`` on each side, or ``max_budget`` items per benchmark (by default the smallest benchmark's item
    count) were asked. Every benchmark grows each round, as in :func:`~tailoredbench.suite.simulate_suite_precision`,
    whose weights and rule are calibrated for probes that grow together. ``method``: ``"tailored_plus"`` or
    ``"tailoredbench"``. The first call fits the rule on the sources (``n_jobs`` workers); it is kept in the state.

    Returns ``status`` (``"next round"``, ``"precision reached"`` or ``"maximum budget reached"``), the ``round``
    and ``file`` written (or ``None``), ``items`` per benchmark where the rule stops, and, once a round is
    answered, ``benchmarks`` and ``suite_mean`` as :func:`estimate_suite` gives them; then the settings
    ``precision``, ``precision_of``, ``method`` and ``max_budget``. Other settings than the plan's, or another
    model's samples, are refused unless ``force`` (the rounds then start again).
    """
    folder = Path(folder)
    with locked(folder):
        state, files = read_plan(folder, SuiteState, seed, START)
        check_files(folder, files, step=not force, start=START)
        precision = check_precision(precision)
        of, method = check_precision_of(of), check_round_method(method)
        round_size = check_integer(round_size, "round size", 1)
        rounds = round_budgets_of(state.item_counts, state.g_size, round_size, max_budget)
        model = one_model(samples)
        settings: dict[str, typing.Any] = dict(precision=precision, of=of, max_budget=rounds[-1][0])
        settings.update(round_size=round_size, method=method, model=model)
        old = state.step
        if isinstance(old, SuiteNSet) and not force:
            raise TailoredBenchError(
                f"{folder}: holds N-sets of budget {old.budget}; add --force to plan to a precision instead"
            )
        same = isinstance(old, SuiteRounds) and all(getattr(old, k) == v for k, v in settings.items())
        if isinstance(old, SuiteRounds) and not same and not force:
            planned = ", ".join(f"{k.replace('_', ' ')} {getattr(old, k)}" for k in settings)
            raise TailoredBenchError(
                f"{folder}: planned with {planned}; add --force to start again, or plan into a new folder"
            )
        if isinstance(old, SuiteRounds) and same:  # its fit is kept; forced, its rounds start again
            step = dataclasses.replace(old, native_sources=(), rounds=()) if force else old
        else:
            sources, _ = _refit(state)
            _answers(state, sources, samples)  # bad samples are refused before the long fit
            with parallel_config(n_jobs=check_integer(n_jobs, "n_jobs", 1)):
                weights, rule = fit_new_model_rounds(
                    sources.values,
                    rounds,
                    state.g_size,
                    precision,
                    of=of,
                    method=method,
                    distance=state.distance,
                    seed=state.seed,
                    level=INTERVAL_LEVEL,
                )
            step = SuiteRounds(
                **settings,
                native_sources=(),
                rounds=(),
                weights=() if weights is None else tuple(tuple(float(w) for w in row) for row in weights),
                quantiles=tuple(tuple(float(v) for v in row) for row in rule.q),
                suite_quantiles=tuple(float(v) for v in rule.q_mean),
                factor=float(rule.factor),
                interval_level=INTERVAL_LEVEL,
            )
        replayed = _replay(state, step, samples)
        answered, status = replayed["answered"], replayed["status"]
        out: dict[str, typing.Any] = {"status": status, "round": answered, "file": None, "items": replayed["items"]}
        if status == "next round":
            out.update(round=answered + 1, file=str(folder / ROUND.format(answered + 1)))
        if answered:
            out.update(_estimates(state, replayed["items"], *replayed["stopped"]))
        budgets = [r[0] for r in rounds]
        planned_rounds = tuple(sorted({*step.rounds, *budgets[: out["round"]]}))
        step = dataclasses.replace(step, native_sources=replayed["native"], rounds=planned_rounds)
        with Step(folder, replaceable(files, force), start=START) as written:  # an N-set or older rounds go
            written.keep(G_SET)
            for index in sorted(budgets.index(b) for b in planned_rounds):
                items = replayed["round_items"][index]
                ids = [[replayed["doc_ids"][b][i] for i in chosen] for b, chosen in enumerate(items)]
                written.write(ROUND.format(index + 1), json_text(_selection(state.tasks, ids)))
            written.commit(state.then(step))
    return {**out, "precision": precision, "precision_of": of, "method": method, "max_budget": rounds[-1][0]}
