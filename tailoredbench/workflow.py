"""Evaluate a new model for real: plan its probe, read its lm-eval samples, estimate.

Three steps around two lm-eval runs, each leaving files in a plan folder:

1. :func:`plan_g_set` fits TailoredBench on a benchmark's source models and writes the
   G-set as lm-eval's ``--samples`` selection (``g_set.json``) and ``state.json``.
2. :func:`plan_n_set` reads the model's samples on the G-set, picks its native source
   models (single-target mode) and writes the rest of its probe, the N-set (``n_set.json``).
3. :func:`estimate` reads the samples on the whole probe and returns the estimate.

Or, instead of step 2, the sequential mode (beyond the paper): :func:`plan_round`, run
after each lm-eval run, writes the next round's items (``round_1.json``,
``round_2.json``, ...) until the estimate's interval is as narrow as the requested
precision or the maximum budget is reached, and says which.

Every step refits from the pinned data with the stored seed, so the state stays small
and a step run twice gives the same answer, that of a simulation's run 0 with that seed.
Only the sequential mode's stopping rule is kept rather than redone: calibrated on the
source models when the rounds are first planned (seconds), it is stored in the state.

``state.json`` is a :class:`PlanState`, checked whole when read, as are the hashes of
the data files it was planned on. The samples of one plan must come from one model.
Files are written atomically, and a plan folder in use is not overwritten without ``force``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import typing
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import atomic
from ._version import __version__
from .datasets import load_benchmark
from .datasets.benchmarks import BENCHMARKS
from .datasets.lm_eval import DEFAULT_METRIC, model_of, read_samples, samples_argument
from .errors import TailoredBenchError, check_integer
from .estimator import TailoredBench
from .stopping import MAX_BUDGET, ROUND_SIZE, StoppingRule, check_precision, round_budgets

STATE, G_SET, N_SET = "state.json", "g_set.json", "n_set.json"
#: The sequential mode's files: round k's new items.
ROUND = "round_{}.json"
#: The estimate's interval (calibrated on the source models, see tailoredbench.conformal).
INTERVAL_LEVEL = 0.9


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise TailoredBenchError(message)


def _fits(value, kind) -> bool:
    # an int passes for a float (JSON may write 1 for 1.0), a bool for nothing
    return isinstance(value, (int, float) if kind is float else kind) and not isinstance(value, bool)


def _check_types(obj, what: str = "") -> None:
    """Refuse a dataclass whose field (or a nested dataclass's) is not of its annotated type."""
    for name, kind in typing.get_type_hints(type(obj)).items():
        value = getattr(obj, name)
        each = typing.get_args(kind)[0] if typing.get_origin(kind) is tuple else None
        ok = isinstance(value, tuple) and all(_fits(v, each) for v in value) if each else _fits(value, kind)
        _require(ok, f"'{what}{name}' has the wrong type ({type(value).__name__})")
        if dataclasses.is_dataclass(value):
            _check_types(value, f"{what}{name}.")


def _build(cls, data: dict):
    """A ``cls`` from the fields of the JSON object ``data``, its lists as tuples."""
    for f in dataclasses.fields(cls):
        _require(f.name in data or f.default is not dataclasses.MISSING, f"not a complete plan state (no '{f.name}')")
    names = [f.name for f in dataclasses.fields(cls) if f.name in data]
    return cls(**{n: tuple(data[n]) if isinstance(data[n], list) else data[n] for n in names})


def _checksum(body: dict) -> str:
    body = {k: v for k, v in body.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class NSet:
    """Step 2: the N-set that completes one model's probe to a fixed budget."""

    budget: int
    model: str
    native_sources: tuple[str, ...]
    n_set: tuple[int, ...]
    n_set_doc_ids: tuple[int, ...]

    def __post_init__(self):
        _check_types(self)


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

    def __post_init__(self):
        _check_types(self)
        check_precision(self.precision)


@dataclass(frozen=True)
class PlanState:
    """A plan folder's ``state.json``: step 1's G-set, then (``step``) step 2's N-set or the sequential mode's rounds.

    Built only valid (types, ranges, items matching doc_ids and budget, the rule fitting
    the settings). Its JSON is flat, the step's fields beside step 1's, sealed by a sha256
    (``checksum``) against edits. ``FORMAT`` alone decides whether a file can be read;
    ``tailoredbench_version`` records the package version that wrote it.
    """

    FORMAT = 3  # bump when the JSON layout changes, and only then

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
    tailoredbench_version: str = __version__

    def __post_init__(self):
        _check_types(self)
        step, size, count = self.step, self.g_size, self.item_count
        items = self.g_set + getattr(step, "n_set", ())
        doc_ids = self.g_set_doc_ids + getattr(step, "n_set_doc_ids", ())
        _require(self.benchmark in BENCHMARKS, f"unknown benchmark {self.benchmark!r}")
        check_integer(self.seed, "seed", 0)
        _require(0 < size == len(self.g_set) == len(self.g_set_doc_ids), f"the G-set is not {size} items with doc_ids")
        paired = len(set(items)) == len(items) == len(set(doc_ids)) == len(doc_ids)
        _require(paired, "an item or doc_id repeats or is unpaired")
        _require(all(0 <= i < count for i in items), f"an item outside the benchmark's {count}")
        _require(set(getattr(step, "native_sources", ())) <= set(self.source_models), "a native source is unknown")
        if isinstance(step, NSet):
            _require(step.budget == len(items), f"a budget of {step.budget} for {len(items)} items")
        if isinstance(step, Rounds):
            budgets, rule = round_budgets(size, step.round_size, step.max_budget), step.rule
            ordered = step.rounds == tuple(sorted(set(step.rounds) & set(budgets)))
            _require(ordered, "its rounds are not of its settings")
            settings = (budgets, len(budgets), step.precision, INTERVAL_LEVEL)
            fit = not rule or (rule.budgets, len(rule.q), rule.precision, rule.level) == settings
            _require(fit, "its stopping rule was calibrated for other settings")

    def then(self, step: NSet | Rounds) -> PlanState:
        """This plan with ``step`` in place of its own, as this package version writes it."""
        return dataclasses.replace(self, step=step, tailoredbench_version=__version__)

    def to_json(self) -> str:
        body = dataclasses.asdict(self)
        step = {k: v for k, v in (body.pop("step") or {}).items() if v is not None}
        body = {"state_format": self.FORMAT, "tailoredbench_version": body.pop("tailoredbench_version"), **body, **step}
        return json.dumps({**body, "checksum": _checksum(body)}, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> PlanState:
        """The state of a :meth:`to_json` text, or a one-line error saying what is wrong with it."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            raise TailoredBenchError("not a JSON state file (truncated or foreign?)") from None
        _require(isinstance(data, dict), f"not a plan state (a JSON {type(data).__name__})")
        found = data.get("state_format", 1)  # the states before formats were numbered are format 1
        _require(found == cls.FORMAT, f"a plan state of format {found}, this is format {cls.FORMAT}")
        _require(not {"budget", "precision"} <= data.keys(), "both a fixed budget and a precision")
        rule = data.get("rule")
        fields = {**data, "rule": _build(StoppingRule, rule)} if isinstance(rule, dict) else data
        kind = NSet if "budget" in data else Rounds if "precision" in data else None
        state = _build(cls, {**fields, "step": kind and _build(kind, fields)})
        _require(data.get("checksum") == _checksum(data), "its contents do not match its checksum (edited or damaged)")
        return state


def _write_json(path: Path, value) -> None:
    atomic.write_text(path, json.dumps(value, indent=1) + "\n")


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

    A folder that already holds files is refused unless ``force``: it may hold a plan
    whose N-set a model is being run on. With ``force`` the old plan's files go.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise TailoredBenchError(f"{out}: not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise TailoredBenchError(f"{out}: not empty (a plan may be in use); choose another folder or add --force")
    seed = check_integer(seed, "seed", 0)
    task = task or benchmark
    bench = load_benchmark(benchmark)
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
    out.mkdir(parents=True, exist_ok=True)
    for stale in (out / N_SET, *out.glob(ROUND.format("*"))):  # from an older plan in a forced folder
        stale.unlink(missing_ok=True)
    _write_json(out / G_SET, samples_argument(task, state.g_set_doc_ids))
    atomic.write_text(out / STATE, state.to_json())
    return state


def read_state(folder: str | Path, seed: int | None = None) -> PlanState:
    """The plan's state, refusing one of another format or seed (another package version's is read)."""
    path = Path(folder) / STATE
    if not path.is_file():
        raise TailoredBenchError(f"{path}: no plan state; run 'tailoredbench plan --benchmark ...' first")
    try:
        state = PlanState.from_json(path.read_text(errors="replace"))
    except TailoredBenchError as error:
        raise TailoredBenchError(f"{path}: {error}; plan again") from None
    if seed is not None and seed != state.seed:
        raise TailoredBenchError(f"{path}: planned with seed {state.seed}, not {seed}")
    return state


def _one_model(samples) -> str:
    """The model all the samples files come from; files of two models are an error naming both."""
    models: dict[str, typing.Any] = {}
    for path in samples:
        models.setdefault(model_of(path), path)
    if len(models) > 1:
        (first, a), (second, b) = list(models.items())[:2]
        raise TailoredBenchError(f"samples of two models in one plan: {first} ({a}) and {second} ({b})")
    if not models:
        raise TailoredBenchError("no samples files given")
    return next(iter(models))


def _results(state: PlanState, samples, item_ids) -> dict[int, float]:
    merged: dict[int, float] = {}
    for path in samples:
        for doc_id, value in read_samples(path, state.metric, state.task).items():
            if doc_id in merged and merged[doc_id] != value:
                raise TailoredBenchError(f"{path}: doc_id {doc_id} has conflicting results across files")
            merged[doc_id] = value
    outside = sorted(set(merged) - set(item_ids))
    if outside:
        raise TailoredBenchError(f"doc_id {outside[0]} is not an item of {state.benchmark}")
    return merged


def _on(results: dict, doc_ids, what: str) -> np.ndarray:
    missing = [d for d in doc_ids if d not in results]
    if missing:
        raise TailoredBenchError(f"the samples lack {len(missing)} {what} doc_ids, e.g. {missing[0]}")
    return np.array([results[d] for d in doc_ids])


def _probe(state: PlanState, samples, budget: int) -> tuple:
    """Refit, read the samples, and plan the probe from the G-set results."""
    bench, tb = fitted(state)
    results = _results(state, samples, bench.source.items)
    probe = tb.plan(_on(results, state.g_set_doc_ids, "G-set"), budget)
    return bench, tb, results, probe


def plan_n_set(folder: str | Path, samples, budget: int, seed: int | None = None, force: bool = False) -> PlanState:
    """Step 2: from the samples on the G-set, write ``n_set.json`` (the rest of the probe).

    Planning again with the same samples and budget changes nothing; with other ones it
    would replace an N-set a model may be running on, and needs ``force``.
    """
    folder = Path(folder)
    state = read_state(folder, seed)
    budget = check_integer(budget, "budget")
    model = _one_model(samples)
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
    _drop_rounds(folder)
    state = state.then(step)
    _write_json(folder / N_SET, samples_argument(state.task, step.n_set_doc_ids))
    atomic.write_text(folder / STATE, state.to_json())
    return state


def _drop_rounds(folder: Path) -> None:
    for path in folder.glob(ROUND.format("*")):
        path.unlink()


def _sequential(state: PlanState, samples) -> dict:
    """Replay the sequential mode on the samples: the rule, every round's probe, and where the rule stops.

    Returns ``native`` (the native sources), ``answered`` (rounds whose items all have a
    result), ``status`` and, once a round is answered, ``stop`` (the first answered round
    meeting the precision, else the last answered) with the ``estimate``, ``low`` and ``high`` there.
    """
    plan = state.step
    assert isinstance(plan, Rounds)  # the callers replay a sequential plan only
    bench, tb = fitted(state)
    results = _results(state, samples, bench.source.items)
    rule = plan.rule or tb.stopping_rule(plan.precision, plan.max_budget, plan.round_size, INTERVAL_LEVEL)
    probes = tb.rounds(_on(results, state.g_set_doc_ids, "G-set"), rule.budgets)
    native = tuple(bench.source.models[i] for i in probes[0].native_sources)
    if plan.native_sources not in ((), native):  # () before the first replay
        raise TailoredBenchError("the G-set results differ from those the rounds were planned with")
    out = {"bench": bench, "rule": rule, "probes": probes, "native": native, "answered": 0, "status": "next round"}
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
        out.update(estimate=tb.estimate(probe, y, rule=rule), low=low, high=high)
    return out


def plan_round(
    folder: str | Path,
    samples,
    precision: float,
    max_budget: int = MAX_BUDGET,
    round_size: int = ROUND_SIZE,
    seed: int | None = None,
    force: bool = False,
) -> dict:
    """The sequential mode: after the G-set or a round, write the next round's items or say that it is done.

    Replays the growing probe on every samples file of the model so far (G-set and
    rounds) and writes ``round_<k>.json`` (the next ``round_size`` items), unless the
    interval's half-width is at most ``precision`` or ``max_budget`` items were asked.
    Returns ``status`` (``"next round"``, ``"precision reached"`` or ``"maximum budget
    reached"``), ``items`` asked, the ``file`` written (or ``None``) and, once a round is
    answered, the estimate and its interval.
    """
    folder = Path(folder)
    state = read_state(folder, seed)
    precision = check_precision(precision)
    model = _one_model(samples)
    max_budget, round_size = check_integer(max_budget, "max budget"), check_integer(round_size, "round size", 1)
    settings: dict[str, typing.Any] = {
        "precision": precision,
        "max_budget": max_budget,
        "round_size": round_size,
        "model": model,
    }
    old = state.step
    if isinstance(old, NSet) and not force:
        raise TailoredBenchError(
            f"{folder}: holds an N-set of budget {old.budget}; add --force to plan to a precision instead"
        )
    same = isinstance(old, Rounds) and all(getattr(old, k) == v for k, v in settings.items())
    if isinstance(old, Rounds) and not same and not force:
        planned = ", ".join(f"{k} {getattr(old, k)}" for k in settings)
        raise TailoredBenchError(
            f"{folder}: planned with {planned}; add --force to start again, or plan into a new folder"
        )
    state = state.then(old if isinstance(old, Rounds) and same else Rounds(**settings, native_sources=(), rounds=()))
    replayed = _sequential(state, samples)
    if not same:  # a new plan (or a forced one): its rounds start again, once the samples have been read
        _drop_rounds(folder)
        (folder / N_SET).unlink(missing_ok=True)
    bench, probes, answered = replayed["bench"], replayed["probes"], replayed["answered"]
    out = {k: replayed[k] for k in ("status", "estimate", "low", "high", "rule") if k in replayed}
    out.update(items=probes[replayed["stop"]].budget if answered else len(state.g_set), file=None, round=answered)
    if out["status"] == "next round":
        new = probes[answered].n_set[len(probes[answered - 1].n_set) if answered else 0 :]
        path = folder / ROUND.format(answered + 1)
        _write_json(path, samples_argument(state.task, [bench.source.items[i] for i in new]))
        out.update(file=str(path), round=answered + 1)
    step = state.step
    assert isinstance(step, Rounds)  # set just above
    rounds = tuple(sorted({*step.rounds, *(int(p.budget) for p in probes[: out["round"]])}))
    kept = dataclasses.replace(step, native_sources=replayed["native"], rounds=rounds, rule=replayed["rule"])
    atomic.write_text(folder / STATE, state.then(kept).to_json())
    return {**out, "precision": precision}


def estimate(folder: str | Path, samples, seed: int | None = None) -> dict:
    """Step 3: the estimated full-benchmark accuracy from the samples on the whole probe.

    In the sequential mode: at the round where the rule stops, with ``precision_met``
    and a ``status`` saying whether the precision or the maximum was reached.
    """
    state = read_state(folder, seed)
    step = state.step
    if step is None:
        raise TailoredBenchError(f"{folder}: plan the N-set first ('tailoredbench plan --state ... --budget N')")
    model = _one_model(samples)
    if model != step.model:
        raise TailoredBenchError(f"the samples come from {model}, the N-set was planned for {step.model}")
    common = {k: getattr(state, k) for k in ("benchmark", "task", "metric")} | {"interval_level": INTERVAL_LEVEL}
    end = {"seed": state.seed, "native_sources": list(step.native_sources), "model": model}
    if isinstance(step, Rounds):
        replayed = _sequential(state, samples)
        if not replayed["answered"]:
            raise TailoredBenchError("no round is answered yet: run lm-eval on round_1.json, then plan or estimate")
        probe, status = replayed["probes"][replayed["stop"]], replayed["status"]
        result = {"estimate": replayed["estimate"], "interval_low": replayed["low"], "interval_high": replayed["high"]}
        result.update(budget=probe.budget, precision=step.precision, precision_met=status == "precision reached")
        result["status"] = "precision not reached yet: plan the next round" if status == "next round" else status
        items_used = [replayed["bench"].source.items[i] for i in probe.items]
    else:
        _, tb, results, probe = _probe(state, samples, step.budget)
        if tuple(int(i) for i in probe.n_set) != step.n_set:
            raise TailoredBenchError("the G-set results differ from those the N-set was planned with")
        items_used = [*state.g_set_doc_ids, *step.n_set_doc_ids]
        y = _on(results, items_used, "probe")
        low, high = tb.interval(probe, y, INTERVAL_LEVEL)
        result = {"estimate": tb.estimate(probe, y), "interval_low": low, "interval_high": high, "budget": step.budget}
    return {**common, **result, "items_used": items_used, **end}
