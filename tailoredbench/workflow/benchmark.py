"""Evaluate a new model for real: plan its probe, read its lm-eval samples, estimate.

Three steps around two lm-eval runs, each leaving files in a plan folder:

1. :func:`plan_g_set` fits TailoredBench on a benchmark's source models and writes the
   G-set as lm-eval's ``--samples`` selection (``g_set.json``) and ``state.json``.
2. :func:`plan_n_set` reads the model's samples on the G-set, picks its native source
   models (single-target mode) and writes the rest of its probe, the N-set (``n_set.json``).
3. :func:`estimate` reads the samples on the whole probe and returns the estimate.

Or, instead of step 2, the sequential mode (beyond the paper): :func:`plan_round`, run after
each lm-eval run, writes the next round's items (``round_1.json``, ...) until the interval is as
narrow as the requested precision or the maximum budget is reached. Its rounds are TailoredBench's
growing probe, or (``method="fluid"``) adaptive IRT testing after the G-set: each round the items of
highest Fisher information at the model's ability so far (:mod:`tailoredbench.methods.fluid`).

Every step refits from the pinned data with the stored seed (the answer of a simulation's run 0),
so ``state.json``, a :class:`PlanState` checked whole when read, stays small; only the sequential
mode's stopping rule is stored. The samples of one plan must come from one model.

A plan folder is one transaction, as :mod:`tailoredbench.workflow.folder` keeps it: a step stopped
half-way reads as an interrupted plan that ``force`` redoes.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from ..datasets import load_benchmark
from ..datasets.benchmarks import BENCHMARKS, SPECS
from ..datasets.lm_eval import DEFAULT_METRIC, samples_argument
from ..errors import TailoredBenchError, check_integer
from ..estimator import TailoredBench
from ..intervals import difficulty, interval, pseudo_targets, unlikeness
from ..methods import MethodSpec, fluid
from ..stopping import MAX_BUDGET, ROUND_SIZE, StoppingRule, check_precision, round_budgets
from .folder import (
    G_SET,
    N_SET,
    ROUND,
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
    sha256_of,
)

#: The estimate's interval (calibrated on the source models, see tailoredbench.intervals).
INTERVAL_LEVEL = 0.9
#: The methods whose rounds the sequential mode plans (a fixed budget: TailoredBench's N-set only).
ROUND_METHODS = ("tailoredbench", "fluid")


@dataclass(frozen=True)
class NSet:
    """Step 2: the N-set that completes one model's probe to a fixed budget."""

    budget: int
    model: str
    native_sources: tuple[str, ...]
    n_set: tuple[int, ...]
    n_set_doc_ids: tuple[int, ...]

    def __post_init__(self):
        check_types(self)


@dataclass(frozen=True)
class Rounds:
    """The sequential mode instead of step 2: its settings, the probe's size after each round planned, its rule."""

    precision: float
    max_budget: int
    round_size: int
    model: str
    native_sources: tuple[str, ...]
    rounds: tuple[int, ...]
    rule: StoppingRule | None = None  # None until the first replay calibrates it; a saved plan holds one
    method: str = "tailoredbench"  # whose rounds: one of ROUND_METHODS

    def __post_init__(self):
        check_types(self)
        check_precision(self.precision)
        check_round_method(self.method)


@dataclass(frozen=True)
class PlanState(State):
    """A plan folder's ``state.json``: step 1's G-set, then (``step``) step 2's N-set or the sequential mode's rounds.

    Built only valid. Its JSON is flat, sealed by a sha256 (``checksum``) against edits;
    ``FORMAT`` alone decides whether a file can be read.
    """

    FORMAT = 4  # bump when the JSON layout changes, and only then
    #: Older formats still read: 3, whose rounds are all TailoredBench's (format 4 names their ``method``).
    READS = (3,)

    benchmark: str
    task: str
    metric: str
    seed: int
    g_size: int
    distance: str
    item_count: int
    data_sha256: tuple[str, ...]
    source_models: tuple[str, ...]
    g_set: tuple[int, ...]
    g_set_doc_ids: tuple[int, ...]
    step: NSet | Rounds | None = None

    def __post_init__(self):
        check_types(self)
        step, size, count = self.step, self.g_size, self.item_count
        items = self.g_set + getattr(step, "n_set", ())
        doc_ids = self.g_set_doc_ids + getattr(step, "n_set_doc_ids", ())
        require(self.benchmark in BENCHMARKS, f"unknown benchmark {self.benchmark!r}")
        check_integer(self.seed, "seed", 0)
        require(0 < size == len(self.g_set) == len(self.g_set_doc_ids), f"the G-set is not {size} items with doc_ids")
        paired = len(set(items)) == len(items) == len(set(doc_ids)) == len(doc_ids)
        require(paired, "an item or doc_id repeats or is unpaired")
        require(all(0 <= i < count for i in items), f"an item outside the benchmark's {count}")
        require(set(getattr(step, "native_sources", ())) <= set(self.source_models), "a native source is unknown")
        if isinstance(step, NSet):
            require(step.budget == len(items), f"a budget of {step.budget} for {len(items)} items")
        if isinstance(step, Rounds):
            budgets, rule = round_budgets(size, step.round_size, step.max_budget), step.rule
            ordered = step.rounds == tuple(sorted(set(step.rounds) & set(budgets)))
            require(ordered, "its rounds are not of its settings")
            settings = (budgets, len(budgets), step.precision, INTERVAL_LEVEL)
            fit = not rule or (rule.budgets, len(rule.q), rule.precision, rule.level) == settings
            require(fit, "its stopping rule was calibrated for other settings")

    @classmethod
    def from_json(cls, text: str) -> PlanState:
        """The state of a :meth:`to_json` text, or a one-line error saying what is wrong with it."""
        return cls.parse(text)[0]

    @classmethod
    def parse(cls, text: str) -> tuple[PlanState, dict[str, str] | None]:
        """The state of a :meth:`to_json` text and the file hashes it records (None if it records none)."""
        data = load_json(text)
        require(isinstance(data, dict), f"not a plan state (a JSON {type(data).__name__})")
        require("suite_state_format" not in data, "a suite's plan, read by tailoredbench.workflow.suite")
        found = data.get("state_format", 1)  # the states before formats were numbered are format 1
        require(found in (cls.FORMAT, *cls.READS), f"a plan state of format {found}, this is format {cls.FORMAT}")
        require(not {"budget", "precision"} <= data.keys(), "both a fixed budget and a precision")
        rule = data.get("rule")
        fields = {**data, "rule": build(StoppingRule, rule)} if isinstance(rule, dict) else data
        kind = NSet if "budget" in data else Rounds if "precision" in data else None
        state = build(cls, {**fields, "step": kind and build(kind, fields)})
        return state, sealed_files(data)


def check_round_method(method) -> str:
    """A method whose rounds the sequential mode plans, or a one-line error."""
    if method not in ROUND_METHODS:
        raise TailoredBenchError(f"plan in rounds by {' or '.join(ROUND_METHODS)}, not {method!r}")
    return method


def _data_hashes(bench) -> tuple[str, ...]:
    return tuple(sorted({f["sha256"] for f in bench.provenance.get("files", [])}))


def fitted(state: PlanState):
    """The benchmark and the fitted :class:`TailoredBench` of a plan (refitted with its seed)."""
    bench = load_benchmark(state.benchmark)
    if _data_hashes(bench) != state.data_sha256:
        raise TailoredBenchError(f"{state.benchmark}: planned on other data files than the pinned ones; plan again")
    if tuple(bench.source.models) != state.source_models:
        raise TailoredBenchError(f"{state.benchmark}: the source models differ from the plan's")
    tb = TailoredBench(state.g_size, state.distance, random_state=(state.seed, 0)).fit(bench.source)
    if tuple(int(i) for i in tb.g_set_) != state.g_set:
        raise TailoredBenchError("the G-set refitted from the data differs from the plan's")
    return bench, tb


def plan_g_set(
    benchmark: str,
    out: str | Path,
    *,
    task: str | None = None,
    metric: str | None = None,
    g_size: int = 10,
    seed: int = 0,
    distance: str = "manhattan",
    force: bool = False,
) -> PlanState:
    """Step 1: write ``g_set.json`` (the G-set for lm-eval's ``--samples``) and ``state.json``.

    ``task`` defaults to the benchmark's lm-eval task, ``metric`` to that task's per-item metric; a benchmark
    without one (POPE, the full-length HellaSwag) needs both.

    A folder that holds files is refused unless ``force`` (it may hold a plan a model is run on).
    """
    seed = check_integer(seed, "seed", 0)
    options = (task, metric, g_size, seed, distance, force)
    return in_plan_folder(out, lambda folder: _plan_g_set(benchmark, folder, *options))


def _plan_g_set(benchmark, out: Path, task, metric, g_size, seed, distance, force) -> PlanState:
    if not force:
        check_free(out, PlanState)
    if benchmark in SPECS and SPECS[benchmark].lm_eval_task is None and not (task and metric):
        # its items' ids are not known to be an lm-eval task's doc_ids: a guessed name or metric would misread
        raise TailoredBenchError(
            f"{benchmark} has no lm-eval task here: give --task (whose doc_ids are its item ids) and --metric"
        )
    bench = load_benchmark(benchmark)
    task = task or SPECS[benchmark].lm_eval_task or benchmark
    tb = TailoredBench(g_size, distance, random_state=(seed, 0)).fit(bench.source)
    g_items = tuple(int(i) for i in tb.g_set_)
    state = PlanState(
        benchmark=benchmark,
        task=task,
        metric=metric or DEFAULT_METRIC.get(task) or "acc",
        seed=seed,
        g_size=len(g_items),
        distance=distance,
        item_count=bench.n_items,
        data_sha256=_data_hashes(bench),
        source_models=tuple(bench.source.models),
        g_set=g_items,
        g_set_doc_ids=tuple(bench.source.items[i] for i in g_items),
    )
    with Step(out, replaces=lambda name: force) as step:  # the n_set and rounds of an older plan go
        step.write(G_SET, json_text(samples_argument(task, state.g_set_doc_ids)))
        step.commit(state)
    return state


def read_state(folder: str | Path, seed: int | None = None) -> PlanState:
    """The plan's state, refusing one of another format or seed (another package version's is read).

    Refused as well: a plan that a command is writing, or whose files disagree with the state (interrupted).
    """
    folder = Path(folder)
    with locked(folder, shared=True):
        state, files = read_plan(folder, PlanState, seed)
        check_files(folder, files)
    return state


def _results(state: PlanState, samples, item_ids) -> dict[int, float]:
    merged: dict[int, float] = {}
    for path in samples:
        merge_samples(merged, path, state.metric, state.task)
    outside = sorted(set(merged) - set(item_ids))
    if outside:
        raise TailoredBenchError(f"doc_id {outside[0]} is not an item of {state.benchmark}")
    return merged


def _probe(state: PlanState, samples, budget: int) -> tuple:
    """Refit, read the samples, and plan the probe from the G-set results."""
    bench, tb = fitted(state)
    results = _results(state, samples, bench.source.items)
    probe = tb.plan(answers_on(results, state.g_set_doc_ids, "G-set"), budget)
    return bench, tb, results, probe


def plan_n_set(folder: str | Path, samples, budget: int, seed: int | None = None, force: bool = False) -> PlanState:
    """Step 2: from the samples on the G-set, write ``n_set.json`` (the rest of the probe).

    Planning again with the same samples and budget changes nothing; with other ones it
    would replace an N-set a model may be running on, and needs ``force``.
    """
    folder = Path(folder)
    with locked(folder):
        state, files = read_plan(folder, PlanState, seed)
        check_files(folder, files, step=not force)
        budget = check_integer(budget, "budget")
        model = one_model(samples)
        bench, _, _, probe = _probe(state, samples, budget)
        names, items = bench.source.models, bench.source.items
        native = tuple(names[i] for i in probe.native_sources)
        step = NSet(budget, model, native, tuple(int(i) for i in probe.n_set), tuple(items[i] for i in probe.n_set))
        old = state.step
        if isinstance(old, NSet) and old != step and not force:
            raise TailoredBenchError(
                f"{folder}: already holds an N-set (budget {old.budget}, model {old.model}); "
                "planning another would replace it: add --force, or plan into a new folder"
            )
        if isinstance(old, Rounds) and not force:
            raise TailoredBenchError(
                f"{folder}: holds a plan to precision {old.precision}; add --force to replace it by a fixed budget"
            )
        state = state.then(step)
        with Step(folder, replaceable(files, force)) as written:  # the rounds of a plan to a precision go
            written.keep(G_SET)
            written.write(N_SET, json_text(samples_argument(state.task, step.n_set_doc_ids)))
            written.commit(state)
    return state


def _sequential(state: PlanState, samples, planned: dict[str, str] | None = None) -> dict:
    """Replay the sequential mode on the samples: the rule, each round's new items (``round_items``, as far as
    the answers give them), and where the rule stops, with the items used there (``items_used``).

    ``stop``: the first answered round meeting the precision, else the last answered. ``planned``: the
    sha256 of the round files written so far, which a replay must write again (None: not checked).
    """
    plan = state.step
    assert isinstance(plan, Rounds)  # the callers replay a sequential plan only
    bench, tb = fitted(state)
    results = _results(state, samples, bench.source.items)
    if plan.method == "fluid":
        return _fluid_sequential(state, plan, bench, results, planned)
    rule = plan.rule or tb.stopping_rule(plan.precision, plan.max_budget, plan.round_size, INTERVAL_LEVEL)
    probes = tb.rounds(answers_on(results, state.g_set_doc_ids, "G-set"), rule.budgets)
    native = tuple(bench.source.models[i] for i in probes[0].native_sources)
    if plan.native_sources not in ((), native):  # () before the first replay
        raise TailoredBenchError("the G-set results differ from those the rounds were planned with")
    out = {"bench": bench, "rule": rule, "native": native, "answered": 0, "status": "next round"}
    out["round_items"] = [p.n_set[len(probes[i - 1].n_set) if i else 0 :] for i, p in enumerate(probes)]
    for index, probe in enumerate(probes):
        doc_ids = [bench.source.items[i] for i in probe.items]
        if not all(d in results for d in doc_ids):
            break
        y = np.array([results[d] for d in doc_ids])
        out.update(answered=index + 1, stop=index, y=y)
        if tb.precise(probe, y, rule):  # the rule stops here, even if more rounds were answered
            out["status"] = "precision reached"
            break
    else:
        out["status"] = "maximum budget reached"
    if out["answered"]:
        probe, y = probes[out["stop"]], out.pop("y")
        low, high = tb.interval(probe, y, rule=rule)
        out.update(estimate=tb.estimate(probe, y, rule=rule), low=low, high=high, items_used=probe.items)
    return out


def _fluid_rule(state: PlanState, plan: Rounds, source: np.ndarray) -> StoppingRule:
    """Fluid's stopping rule, calibrated by running real use's procedure (each fold's own G-set of the plan's
    size and distance, then rounds of the plan's size) on source models playing the new model."""
    budgets = round_budgets(state.g_size, plan.round_size, plan.max_budget, source.shape[1])
    real_use = MethodSpec.parse(
        "fluid", {"g_set_size": state.g_size, "g_set_distance": state.distance, "round_size": plan.round_size}
    )
    pseudo = pseudo_targets(real_use, source, budgets, seed=state.seed)
    return StoppingRule.calibrate(pseudo, plan.precision, INTERVAL_LEVEL)


def _fluid_sequential(state: PlanState, plan: Rounds, bench, results: dict, planned: dict[str, str] | None) -> dict:
    """:func:`_sequential` for fluid: the adaptive test after the G-set (:func:`fluid.replay`) as far as answered."""
    source, item_ids = bench.source.values, bench.source.items
    answers_on(results, state.g_set_doc_ids, "G-set")
    rule = plan.rule or _fluid_rule(state, plan, source)
    model = fluid.Fluid().prepare(source, rule.budgets)["model"]  # the fit the calibration's runs make
    position = {doc_id: i for i, doc_id in enumerate(item_ids)}
    answers = {position[d]: v for d, v in results.items()}
    with threadpool_limits(limits=1):
        tests, pending = fluid.replay(model, answers, rule.budgets[-1], state.g_set, plan.round_size)
    asked, ends = tests.items[0], (len(state.g_set), *rule.budgets)
    answered = sum(end <= len(asked) for end in rule.budgets)
    round_items = [asked[ends[r] : ends[r + 1]] for r in range(answered)] + ([pending] if len(pending) else [])
    for index, items in enumerate(round_items):
        name = ROUND.format(index + 1)
        text = json_text(samples_argument(state.task, [item_ids[i] for i in items]))
        if planned and rule.budgets[index] in plan.rounds and planned.get(name) != sha256_of(text.encode("utf-8")):
            raise TailoredBenchError(
                f"the answers differ from those the rounds were planned with ({name} would change)"
            )
    out = {"bench": bench, "rule": rule, "native": (), "answered": 0, "status": "next round"}
    out["round_items"] = round_items
    for index, budget in enumerate(rule.budgets[:answered]):
        value = float(tests.estimates(model, budget)[0])
        hardness = difficulty(value, unlikeness(source, asked[:budget], tests.answers[0, :budget]), budget)
        halfwidth = rule.halfwidth(budget, hardness)
        low, high = interval(value, halfwidth)
        out.update(answered=index + 1, stop=index, estimate=value, low=float(low), high=float(high))
        out["items_used"] = asked[:budget]
        if halfwidth <= rule.precision:  # the rule stops here, even if more rounds were answered
            out["status"] = "precision reached"
            break
    else:
        if answered == len(rule.budgets):
            out["status"] = "maximum budget reached"
    return out


def plan_round(
    folder: str | Path,
    samples,
    precision: float,
    max_budget: int = MAX_BUDGET,
    round_size: int = ROUND_SIZE,
    seed: int | None = None,
    force: bool = False,
    method: str = "tailoredbench",
) -> dict:
    """The sequential mode: after the G-set or a round, write the next round's items or say that it is done.

    Writes ``round_<k>.json`` (the next ``round_size`` items) unless the interval's half-width is
    at most ``precision`` or ``max_budget`` items were asked. Returns ``status`` (``"next round"``,
    ``"precision reached"`` or ``"maximum budget reached"``), ``items`` asked, the ``file`` written
    (or ``None``) and, once a round is answered, the estimate and its interval.

    ``method``: ``"tailoredbench"`` (its growing probe, planned from the G-set) or ``"fluid"`` (the items of
    highest Fisher information at the ability from every answer so far). A changed answer that would change
    a round already written is refused, unless ``force`` (the rounds are then planned again from the answers).
    """
    folder = Path(folder)
    with locked(folder):
        state, files = read_plan(folder, PlanState, seed)
        check_files(folder, files, step=not force)
        return _plan_round(folder, state, files, samples, precision, max_budget, round_size, force, method)


def _plan_round(
    folder: Path, state: PlanState, files, samples, precision, max_budget, round_size, force, method
) -> dict:
    precision = check_precision(precision)
    method = check_round_method(method)
    model = one_model(samples)
    max_budget, round_size = check_integer(max_budget, "max budget"), check_integer(round_size, "round size", 1)
    settings: dict[str, typing.Any] = dict(precision=precision, max_budget=max_budget, round_size=round_size)
    settings.update(model=model, method=method)
    old = state.step
    if isinstance(old, NSet) and not force:
        raise TailoredBenchError(
            f"{folder}: holds an N-set of budget {old.budget}; add --force to plan to a precision instead"
        )
    if isinstance(old, Rounds) and old.method != method and not force:
        raise TailoredBenchError(
            f"{folder}: planned in rounds by {old.method}, not {method}; add --force to start again, "
            "or plan into a new folder"
        )
    same = isinstance(old, Rounds) and all(getattr(old, k) == v for k, v in settings.items())
    if isinstance(old, Rounds) and not same and not force:
        planned = ", ".join(f"{k} {getattr(old, k)}" for k in settings)
        raise TailoredBenchError(
            f"{folder}: planned with {planned}; add --force to start again, or plan into a new folder"
        )
    state = state.then(old if isinstance(old, Rounds) and same else Rounds(**settings, native_sources=(), rounds=()))
    replayed = _sequential(state, samples, None if force else files)
    bench, answered, round_items = replayed["bench"], replayed["answered"], replayed["round_items"]
    budgets = list(replayed["rule"].budgets)
    out = {k: replayed[k] for k in ("status", "estimate", "low", "high", "rule") if k in replayed}
    out.update(items=budgets[replayed["stop"]] if answered else len(state.g_set), file=None, round=answered)
    if out["status"] == "next round":
        out.update(file=str(folder / ROUND.format(answered + 1)), round=answered + 1)
        out["round_size"] = budgets[answered] - (budgets[answered - 1] if answered else len(state.g_set))
    step = state.step
    assert isinstance(step, Rounds)  # set just above
    rounds = tuple(sorted({*step.rounds, *budgets[: out["round"]]}))
    if force:  # fluid's rounds beyond the answers given are planned again when reached
        rounds = tuple(b for b in rounds if budgets.index(b) < len(round_items))
    kept = dataclasses.replace(step, native_sources=replayed["native"], rounds=rounds, rule=replayed["rule"])
    # every round planned so far, rewritten only where it differs: the replay checked that none would
    with Step(folder, replaceable(files, force)) as written:  # a new plan's (or a forced one's) rounds start again
        written.keep(G_SET)
        for index in sorted(budgets.index(b) for b in rounds):
            if index >= len(round_items):  # a fluid round after one whose answers were not given
                written.keep(ROUND.format(index + 1))
                continue
            items = [bench.source.items[i] for i in round_items[index]]
            written.write(ROUND.format(index + 1), json_text(samples_argument(state.task, items)))
        written.commit(state.then(kept))
    return {**out, "precision": precision}


def estimate(folder: str | Path, samples, seed: int | None = None) -> dict:
    """Step 3: the estimated full-benchmark accuracy from the samples on the whole probe.

    In the sequential mode: at the round where the rule stops, with ``precision_met``
    and a ``status`` saying whether the precision or the maximum was reached.
    """
    folder = Path(folder)
    with locked(folder, shared=True):
        state, files = read_plan(folder, PlanState, seed)
        check_files(folder, files)
        return _estimate(folder, state, files, samples)


def _estimate(folder: Path, state: PlanState, files, samples) -> dict:
    step = state.step
    if step is None:
        raise TailoredBenchError(f"{folder}: plan the N-set first ('tailoredbench plan --state ... --budget N')")
    model = one_model(samples)
    if model != step.model:
        raise TailoredBenchError(f"the samples come from {model}, the N-set was planned for {step.model}")
    common = {k: getattr(state, k) for k in ("benchmark", "task", "metric")} | {"interval_level": INTERVAL_LEVEL}
    end = {"seed": state.seed, "native_sources": list(step.native_sources), "model": model}
    end["method"] = getattr(step, "method", "tailoredbench")
    if isinstance(step, Rounds):
        replayed = _sequential(state, samples, files)
        if not replayed["answered"]:
            raise TailoredBenchError("no round is answered yet: run lm-eval on round_1.json, then plan or estimate")
        status, items = replayed["status"], replayed["items_used"]
        result = {"estimate": replayed["estimate"], "interval_low": replayed["low"], "interval_high": replayed["high"]}
        result.update(budget=len(items), precision=step.precision, precision_met=status == "precision reached")
        result["status"] = "precision not reached yet: plan the next round" if status == "next round" else status
        items_used = [replayed["bench"].source.items[i] for i in items]
    else:
        _, tb, results, probe = _probe(state, samples, step.budget)
        if tuple(int(i) for i in probe.n_set) != step.n_set:
            raise TailoredBenchError("the G-set results differ from those the N-set was planned with")
        items_used = [*state.g_set_doc_ids, *step.n_set_doc_ids]
        y = answers_on(results, items_used, "probe")
        low, high = tb.interval(probe, y, INTERVAL_LEVEL)
        result = {"estimate": tb.estimate(probe, y), "interval_low": low, "interval_high": high, "budget": step.budget}
    return {**common, **result, "items_used": items_used, **end}
