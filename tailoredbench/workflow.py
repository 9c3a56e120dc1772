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

A plan folder is one transaction: a command holds its lock from first check to last write, and
a step's files are put in place together, ``state.json`` last with the sha256 of every other
file, so a step stopped in between reads as an interrupted plan that ``force`` redoes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import sys
import typing
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from . import atomic
from ._version import __version__
from .conformal import difficulty, interval, unlikeness
from .datasets import load_benchmark
from .datasets.benchmarks import BENCHMARKS
from .datasets.lm_eval import DEFAULT_METRIC, model_of, read_samples, samples_argument
from .errors import TailoredBenchError, check_integer
from .estimator import TailoredBench
from .intervals import pseudo_targets
from .methods import MethodSpec, fluid
from .stopping import MAX_BUDGET, ROUND_SIZE, StoppingRule, check_precision, round_budgets

if sys.platform != "win32":
    import fcntl

T = typing.TypeVar("T")

STATE, G_SET, N_SET = "state.json", "g_set.json", "n_set.json"
#: The sequential mode's files: round k's new items.
ROUND = "round_{}.json"
#: The files of a plan besides ``state.json``, which records each one's sha256.
PLAN_FILE = re.compile(r"(g_set|n_set|round_[1-9][0-9]*)\.json")
#: The temporary files of a step's files (see tailoredbench.atomic.stage).
_STAGED = re.compile(r"\.(state|g_set|n_set|round_[1-9][0-9]*)\.json\..+\.tmp")
#: How a command refuses a plan folder that another command holds.
IN_USE = "in use by another command; try again when it has ended"
#: The estimate's interval (calibrated on the source models, see tailoredbench.conformal).
INTERVAL_LEVEL = 0.9
#: The methods whose rounds the sequential mode plans (a fixed budget: TailoredBench's N-set only).
ROUND_METHODS = ("tailoredbench", "fluid")


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise TailoredBenchError(message)


def _fits(value, kind) -> bool:
    if typing.get_origin(kind) is tuple:  # tuple[X, ...], X itself perhaps a tuple
        return isinstance(value, tuple) and all(_fits(v, typing.get_args(kind)[0]) for v in value)
    # an int passes for a float (JSON may write 1 for 1.0), a bool for nothing
    return isinstance(value, (int, float) if kind is float else kind) and not isinstance(value, bool)


def _check_types(obj, what: str = "") -> None:
    """Refuse a dataclass whose field (or a nested dataclass's) is not of its annotated type."""
    for name, kind in typing.get_type_hints(type(obj)).items():
        value = getattr(obj, name)
        _require(_fits(value, kind), f"'{what}{name}' has the wrong type ({type(value).__name__})")
        if dataclasses.is_dataclass(value):
            _check_types(value, f"{what}{name}.")


def _build(cls, data: dict):
    """A ``cls`` from the fields of the JSON object ``data``, its lists as tuples."""
    for f in dataclasses.fields(cls):
        _require(f.name in data or f.default is not dataclasses.MISSING, f"not a complete plan state (no '{f.name}')")
    names = [f.name for f in dataclasses.fields(cls) if f.name in data]
    return cls(**{n: _tuples(data[n]) for n in names})


def _tuples(value):
    """A JSON value with its lists, nested ones too, as tuples."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _checksum(body: dict) -> str:
    body = {k: v for k, v in body.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


class _State:
    """What a plan's and a suite plan's ``state.json`` share: the step in place, and the sealed JSON."""

    FORMAT = 0  # each state's own
    FORMAT_KEY = "state_format"  # unannotated, as every class constant of a state: not a field to check

    def then(self: T, step) -> T:
        """This plan with ``step`` in place of its own, as this package version writes it."""
        return dataclasses.replace(self, step=step, tailoredbench_version=__version__)  # type: ignore[type-var]

    def to_json(self, files: typing.Mapping[str, str] | None = None) -> str:
        """The JSON of ``state.json``; ``files``, the sha256 of each other file of the plan, is sealed in with it."""
        body = dataclasses.asdict(self)  # type: ignore[call-overload]
        step = {k: v for k, v in (body.pop("step") or {}).items() if v is not None}
        body = {
            self.FORMAT_KEY: self.FORMAT,
            "tailoredbench_version": body.pop("tailoredbench_version"),
            **body,
            **step,
        }
        if files is not None:
            body["files"] = dict(sorted(files.items()))
        return json.dumps({**body, "checksum": _checksum(body)}, indent=1) + "\n"


def _load(text: str):
    """The JSON value of a state file's ``text``, or a one-line error."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise TailoredBenchError("not a JSON state file (truncated or foreign?)") from None
    return data


def _sealed_files(data: dict) -> dict[str, str] | None:
    """The file hashes a state's JSON records (None if none), refused unless sealed by its checksum."""
    files = data.get("files")
    hashes = isinstance(files, dict) and all(
        PLAN_FILE.fullmatch(k) and isinstance(v, str) and re.fullmatch("[0-9a-f]{64}", v) for k, v in files.items()
    )
    _require(files is None or (hashes and G_SET in files), "'files' is not the sha256 of each plan file")
    _require(data.get("checksum") == _checksum(data), "its contents do not match its checksum (edited or damaged)")
    return files


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
    method: str = "tailoredbench"  # whose rounds: one of ROUND_METHODS

    def __post_init__(self):
        _check_types(self)
        check_precision(self.precision)
        check_round_method(self.method)


@dataclass(frozen=True)
class PlanState(_State):
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

    @classmethod
    def from_json(cls, text: str) -> PlanState:
        """The state of a :meth:`to_json` text, or a one-line error saying what is wrong with it."""
        return cls.parse(text)[0]

    @classmethod
    def parse(cls, text: str) -> tuple[PlanState, dict[str, str] | None]:
        """The state of a :meth:`to_json` text and the file hashes it records (None if it records none)."""
        data = _load(text)
        _require(isinstance(data, dict), f"not a plan state (a JSON {type(data).__name__})")
        _require("suite_state_format" not in data, "a suite's plan, read by tailoredbench.suite_workflow")
        found = data.get("state_format", 1)  # the states before formats were numbered are format 1
        _require(found in (cls.FORMAT, *cls.READS), f"a plan state of format {found}, this is format {cls.FORMAT}")
        _require(not {"budget", "precision"} <= data.keys(), "both a fixed budget and a precision")
        rule = data.get("rule")
        fields = {**data, "rule": _build(StoppingRule, rule)} if isinstance(rule, dict) else data
        kind = NSet if "budget" in data else Rounds if "precision" in data else None
        state = _build(cls, {**fields, "step": kind and _build(kind, fields)})
        return state, _sealed_files(data)


def check_round_method(method) -> str:
    """A method whose rounds the sequential mode plans, or a one-line error."""
    if method not in ROUND_METHODS:
        raise TailoredBenchError(f"plan in rounds by {' or '.join(ROUND_METHODS)}, not {method!r}")
    return method


def _json(value) -> str:
    return json.dumps(value, indent=1) + "\n"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _digest(path: Path) -> str | None:
    """The sha256 of the file at ``path``, or None if there is none to read."""
    try:
        return _sha256(path.read_bytes())
    except OSError:
        return None


def _plan_files(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if PLAN_FILE.fullmatch(p.name)}


@contextlib.contextmanager
def _locked(folder: Path, shared: bool = False):
    """Hold ``folder``'s lock: exclusive to write, shared to read (unlocked on Windows).

    ``flock`` on the folder itself: dropped when the process ends, so a killed command leaves no stale lock.
    """
    if sys.platform == "win32":
        yield
        return
    try:
        handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        raise TailoredBenchError(
            f"{folder / STATE}: no plan state; run 'tailoredbench plan --benchmark ...' first"
        ) from None
    except NotADirectoryError:
        raise TailoredBenchError(f"{folder}: not a folder") from None
    try:
        try:
            fcntl.flock(handle, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            raise TailoredBenchError(f"{folder}: {IN_USE}") from None
        except OSError as err:  # a file system without locks: reading goes on, writing could interleave
            if not shared:
                raise TailoredBenchError(f"{folder}: cannot be locked ({err.strerror}); plan on a local disk") from None
        try:
            same = os.path.samestat(os.fstat(handle), os.stat(folder))
        except FileNotFoundError:
            same = False
        if not same:  # removed (or made again) by another command since it was opened
            raise TailoredBenchError(f"{folder}: {IN_USE}")
        yield
    finally:
        os.close(handle)  # and with it the lock


def _interrupted(folder: Path, problem: str, step_1: bool, start: str = "--benchmark") -> TailoredBenchError:
    redo = f"plan {start} ... --out {folder}" if step_1 else f"plan --state {folder} ..."
    return TailoredBenchError(f"{folder}: interrupted plan ({problem}); rerun 'tailoredbench {redo} --force'")


def _check_files(folder: Path, files: dict[str, str] | None, step: bool = True, start: str = "--benchmark") -> None:
    """Refuse a plan whose files are not those ``state.json`` records (``step=False``: the G-set's only);
    ``start``: the option of ``plan`` that made the plan (named by the error of an interrupted one)."""
    if files is None:
        return
    for name in sorted(_plan_files(folder) | set(files)) if step else [G_SET]:
        if name not in files:
            problem = f"{name} is not in {STATE}"
        elif not (folder / name).exists():
            problem = f"{name} is missing"
        elif _digest(folder / name) != files[name]:
            problem = f"{name} does not match {STATE}"
        else:
            continue
        raise _interrupted(folder, problem, name == G_SET, start)


class _Step:
    """One plan step's files: written beside their targets, then put in place together, ``state.json`` last.

    Nothing changes before :meth:`commit`. ``replaces``: the names this step may write over;
    any other is only created. A file already holding the contents to write is left as it is.
    """

    def __init__(self, folder: Path, replaces: typing.Callable[[str], bool], start: str = "--benchmark"):
        self.folder, self.replaces, self.start = folder, replaces, start
        self.staged: dict[str, Path] = {}
        self.files: dict[str, str] = {}
        for left in folder.iterdir():  # left by a killed command: under the lock no other is writing
            if _STAGED.fullmatch(left.name):
                left.unlink(missing_ok=True)

    def __enter__(self) -> _Step:
        return self

    def __exit__(self, *exc) -> None:
        for temporary in self.staged.values():
            atomic.discard(temporary)

    def write(self, name: str, text: str) -> None:
        data = text.encode("utf-8")
        self.files[name] = _sha256(data)
        if _digest(self.folder / name) != self.files[name]:
            self.staged[name] = atomic.stage(self.folder / name, data)

    def keep(self, name: str) -> None:
        digest = _digest(self.folder / name)
        if digest is None:
            raise _interrupted(self.folder, f"{name} is missing", name == G_SET, self.start)
        self.files[name] = digest

    def commit(self, state: _State) -> None:
        """Put the files in place, remove the plan's files this step does not keep, and write ``state.json``."""
        self.staged[STATE] = atomic.stage(self.folder / STATE, state.to_json(self.files).encode("utf-8"))
        for name in [n for n in self.staged if n != STATE]:
            self._place(name)
        for name in sorted(_plan_files(self.folder) - set(self.files)):
            (self.folder / name).unlink()
        self._place(STATE)

    def _place(self, name: str) -> None:
        path = self.folder / name
        try:
            atomic.place(self.staged.pop(name), path, replace=self.replaces(name))
        except FileExistsError:
            raise TailoredBenchError(f"{path}: appeared while the plan was made; add --force to replace it") from None


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

    A folder that holds files is refused unless ``force`` (it may hold a plan a model is run on).
    """
    seed = check_integer(seed, "seed", 0)
    options = (task, metric, g_size, seed, distance, force)
    return in_plan_folder(out, lambda folder: _plan_g_set(benchmark, folder, *options))


def in_plan_folder(out: str | Path, step: typing.Callable[[Path], T]) -> T:
    """``step(out)`` holding the lock of the folder ``out``, made if need be (and removed again if ``step`` fails)."""
    out = Path(out)
    if out.is_symlink() and not out.exists():
        raise TailoredBenchError(f"{out}: a symbolic link to {os.readlink(out)}, which does not exist; give a folder")
    if out.exists() and not out.is_dir():
        raise TailoredBenchError(f"{out}: not a folder")
    try:
        out.mkdir(parents=True)
        made = True
    except FileExistsError:
        made = False
    with _locked(out):
        try:
            return step(out)
        except BaseException:
            if made:
                with contextlib.suppress(OSError):  # not empty: another command's files are there
                    out.rmdir()
            raise


def _plan_g_set(benchmark, out: Path, task, metric, g_size, seed, distance, force) -> PlanState:
    if not force:
        _check_free(out)
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
    with _Step(out, replaces=lambda name: force) as step:  # the n_set and rounds of an older plan go
        step.write(G_SET, _json(samples_argument(task, state.g_set_doc_ids)))
        step.commit(state)
    return state


def _check_free(out: Path) -> None:
    """Refuse a folder that holds anything: a plan (whole or interrupted) or other files."""
    names = {p.name for p in out.iterdir() if not _STAGED.fullmatch(p.name)}  # a killed step's temporary files
    if STATE in names:
        try:
            _check_files(out, _read(out)[1])
        except TailoredBenchError as error:
            if f"{out}: interrupted" in str(error):
                raise
    elif names & _plan_files(out):
        found = ", ".join(sorted(names & _plan_files(out)))
        raise _interrupted(out, f"{found} without {STATE}", True)
    if names:
        raise TailoredBenchError(
            f"{out}: not empty (it may hold a plan a model is being run on); choose another folder or add --force"
        )


def _read(folder: Path, seed: int | None = None, kind=PlanState, start: str = "--benchmark") -> tuple:
    """The plan's state (a ``kind``) and the file hashes it records, refusing one of another format or seed."""
    path = folder / STATE
    if not path.is_file():
        found = _plan_files(folder)
        if found:
            raise _interrupted(folder, f"{', '.join(sorted(found))} without {STATE}", True, start)
        raise TailoredBenchError(f"{path}: no plan state; run 'tailoredbench plan {start} ...' first")
    try:
        state, files = kind.parse(path.read_text(errors="replace"))
    except TailoredBenchError as error:
        raise TailoredBenchError(f"{path}: {error}; plan again") from None
    if seed is not None and seed != state.seed:
        raise TailoredBenchError(f"{path}: planned with seed {state.seed}, not {seed}")
    return state, files


def read_state(folder: str | Path, seed: int | None = None) -> PlanState:
    """The plan's state, refusing one of another format or seed (another package version's is read).

    Refused as well: a plan that a command is writing, or whose files disagree with the state (interrupted).
    """
    folder = Path(folder)
    with _locked(folder, shared=True):
        state, files = _read(folder, seed)
        _check_files(folder, files)
    return state


def _one_model(samples) -> str:
    """The model all the samples files come from; files of two models are an error naming both."""
    models: dict[str, typing.Any] = {}
    folders: dict[str, Path] = {}
    for path in samples:
        model = model_of(path)
        models.setdefault(model, path)
        folder = Path(path).parent.resolve()
        known = folders.setdefault(model, folder)
        if known != folder and model == f"folder {folder.name}":  # no results file: the name is all there is
            raise TailoredBenchError(
                f"samples in two folders named {folder.name!r} ({known}, {folder}) and no lm-eval results_*.json "
                "beside them to tell their models apart: put each model's samples in one folder"
            )
    if len(models) > 1:
        (first, a), (second, b) = list(models.items())[:2]
        raise TailoredBenchError(f"samples of two models in one plan: {first} ({a}) and {second} ({b})")
    if not models:
        raise TailoredBenchError("no samples files given")
    return next(iter(models))


def _merge(merged: dict[int, float], path, metric: str, task: str, what: str = "") -> None:
    """Add a samples file's results to ``merged``, refusing a doc_id (``what``: of which task) it contradicts."""
    for doc_id, value in read_samples(path, metric, task).items():
        if merged.get(doc_id, value) != value:
            raise TailoredBenchError(f"{path}: doc_id {doc_id}{what} has conflicting results across files")
        merged[doc_id] = value


def _results(state: PlanState, samples, item_ids) -> dict[int, float]:
    merged: dict[int, float] = {}
    for path in samples:
        _merge(merged, path, state.metric, state.task)
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
    with _locked(folder):
        state, files = _read(folder, seed)
        _check_files(folder, files, step=not force)
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
        state = state.then(step)
        with _Step(folder, _replaces(files, force)) as written:  # the rounds of a plan to a precision go
            written.keep(G_SET)
            written.write(N_SET, _json(samples_argument(state.task, step.n_set_doc_ids)))
            written.commit(state)
    return state


def _replaces(files: dict[str, str] | None, force: bool) -> typing.Callable[[str], bool]:
    """Which files a step 2 may write over: the plan's own (all, with ``force`` or an older state's)."""
    return lambda name: force or files is None or name in files or name == STATE


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
    probes = tb.rounds(_on(results, state.g_set_doc_ids, "G-set"), rule.budgets)
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
    _on(results, state.g_set_doc_ids, "G-set")
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
        text = _json(samples_argument(state.task, [item_ids[i] for i in items]))
        if planned and rule.budgets[index] in plan.rounds and planned.get(name) != _sha256(text.encode("utf-8")):
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
    with _locked(folder):
        state, files = _read(folder, seed)
        _check_files(folder, files, step=not force)
        return _plan_round(folder, state, files, samples, precision, max_budget, round_size, force, method)


def _plan_round(
    folder: Path, state: PlanState, files, samples, precision, max_budget, round_size, force, method
) -> dict:
    precision = check_precision(precision)
    method = check_round_method(method)
    model = _one_model(samples)
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
    step = state.step
    assert isinstance(step, Rounds)  # set just above
    rounds = tuple(sorted({*step.rounds, *budgets[: out["round"]]}))
    if force:  # fluid's rounds beyond the answers given are planned again when reached
        rounds = tuple(b for b in rounds if budgets.index(b) < len(round_items))
    kept = dataclasses.replace(step, native_sources=replayed["native"], rounds=rounds, rule=replayed["rule"])
    # every round planned so far, rewritten only where it differs: the replay checked that none would
    with _Step(folder, _replaces(files, force)) as written:  # a new plan's (or a forced one's) rounds start again
        written.keep(G_SET)
        for index in sorted(budgets.index(b) for b in rounds):
            if index >= len(round_items):  # a fluid round after one whose answers were not given
                written.keep(ROUND.format(index + 1))
                continue
            items = [bench.source.items[i] for i in round_items[index]]
            written.write(ROUND.format(index + 1), _json(samples_argument(state.task, items)))
        written.commit(state.then(kept))
    return {**out, "precision": precision}


def estimate(folder: str | Path, samples, seed: int | None = None) -> dict:
    """Step 3: the estimated full-benchmark accuracy from the samples on the whole probe.

    In the sequential mode: at the round where the rule stops, with ``precision_met``
    and a ``status`` saying whether the precision or the maximum was reached.
    """
    folder = Path(folder)
    with _locked(folder, shared=True):
        state, files = _read(folder, seed)
        _check_files(folder, files)
        return _estimate(folder, state, files, samples)


def _estimate(folder: Path, state: PlanState, files, samples) -> dict:
    step = state.step
    if step is None:
        raise TailoredBenchError(f"{folder}: plan the N-set first ('tailoredbench plan --state ... --budget N')")
    model = _one_model(samples)
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
        y = _on(results, items_used, "probe")
        low, high = tb.interval(probe, y, INTERVAL_LEVEL)
        result = {"estimate": tb.estimate(probe, y), "interval_low": low, "interval_high": high, "budget": step.budget}
    return {**common, **result, "items_used": items_used, **end}
