"""A plan folder: its lock, its sealed ``state.json``, the files a step puts in place together, its samples.

What a benchmark's plan (:mod:`.benchmark`) and a suite's (:mod:`.suite`) share.
A command holds the folder's lock from its first check to its last write; a step's files are staged beside
their targets and put in place together, ``state.json`` last with the sha256 of every other file, so a step stopped
in between reads as an interrupted plan that ``--force`` redoes.
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
from pathlib import Path

import numpy as np

from .. import atomic
from .._version import __version__
from ..datasets.lm_eval import model_of, read_samples
from ..errors import TailoredBenchError

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


def require(ok: bool, message: str) -> None:
    if not ok:
        raise TailoredBenchError(message)


def _fits(value, kind) -> bool:
    if typing.get_origin(kind) is tuple:  # tuple[X, ...], X itself perhaps a tuple
        return isinstance(value, tuple) and all(_fits(v, typing.get_args(kind)[0]) for v in value)
    # an int passes for a float (JSON may write 1 for 1.0), a bool for nothing
    return isinstance(value, (int, float) if kind is float else kind) and not isinstance(value, bool)


def check_types(obj, what: str = "") -> None:
    """Refuse a dataclass whose field (or a nested dataclass's) is not of its annotated type."""
    for name, kind in typing.get_type_hints(type(obj)).items():
        value = getattr(obj, name)
        require(_fits(value, kind), f"'{what}{name}' has the wrong type ({type(value).__name__})")
        if dataclasses.is_dataclass(value):
            check_types(value, f"{what}{name}.")


def build(cls, data: dict):
    """A ``cls`` from the fields of the JSON object ``data``, its lists as tuples."""
    for f in dataclasses.fields(cls):
        require(f.name in data or f.default is not dataclasses.MISSING, f"not a complete plan state (no '{f.name}')")
    names = [f.name for f in dataclasses.fields(cls) if f.name in data]
    return cls(**{n: _tuples(data[n]) for n in names})


def _tuples(value):
    """A JSON value with its lists, nested ones too, as tuples."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def checksum(body: dict) -> str:
    body = {k: v for k, v in body.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


@dataclasses.dataclass(frozen=True)
class State:
    """What a plan's and a suite plan's ``state.json`` share: the step in place, the version that wrote it, and
    the sealed JSON."""

    FORMAT = 0  # each state's own
    FORMAT_KEY = "state_format"  # unannotated, as every class constant of a state: not a field to check
    # keyword-only: it follows the fields of each state, which have no defaults
    tailoredbench_version: str = dataclasses.field(default=__version__, kw_only=True)

    def then(self: T, step) -> T:
        """This plan with ``step`` in place of its own, as this package version writes it."""
        return dataclasses.replace(self, step=step, tailoredbench_version=__version__)  # type: ignore[type-var]

    def to_json(self, files: typing.Mapping[str, str] | None = None) -> str:
        """The JSON of ``state.json``; ``files``, the sha256 of each other file of the plan, is sealed in with it."""
        body = dataclasses.asdict(self)
        step = {k: v for k, v in (body.pop("step") or {}).items() if v is not None}
        body = {
            self.FORMAT_KEY: self.FORMAT,
            "tailoredbench_version": body.pop("tailoredbench_version"),
            **body,
            **step,
        }
        if files is not None:
            body["files"] = dict(sorted(files.items()))
        return json.dumps({**body, "checksum": checksum(body)}, indent=1) + "\n"


def load_json(text: str):
    """The JSON value of a state file's ``text``, or a one-line error."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or beyond the parser's limits (nesting, digits)
        raise TailoredBenchError("not a JSON state file (truncated or foreign?)") from None
    return data


def sealed_files(data: dict) -> dict[str, str] | None:
    """The file hashes a state's JSON records (None if none), refused unless sealed by its checksum."""
    files = data.get("files")
    hashes = isinstance(files, dict) and all(
        PLAN_FILE.fullmatch(k) and isinstance(v, str) and re.fullmatch("[0-9a-f]{64}", v) for k, v in files.items()
    )
    require(files is None or (hashes and G_SET in files), "'files' is not the sha256 of each plan file")
    require(data.get("checksum") == checksum(data), "its contents do not match its checksum (edited or damaged)")
    return files


def json_text(value) -> str:
    return json.dumps(value, indent=1) + "\n"


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _digest(path: Path) -> str | None:
    """The sha256 of the file at ``path``, or None if there is none to read."""
    try:
        return sha256_of(path.read_bytes())
    except OSError:
        return None


def _plan_files(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if PLAN_FILE.fullmatch(p.name)}


@contextlib.contextmanager
def locked(folder: Path, shared: bool = False):
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


def interrupted(folder: Path, problem: str, step_1: bool, start: str = "--benchmark") -> TailoredBenchError:
    redo = f"plan {start} ... --out {folder}" if step_1 else f"plan --state {folder} ..."
    return TailoredBenchError(f"{folder}: interrupted plan ({problem}); rerun 'tailoredbench {redo} --force'")


def check_files(folder: Path, files: dict[str, str] | None, step: bool = True, start: str = "--benchmark") -> None:
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
        raise interrupted(folder, problem, name == G_SET, start)


class Step:
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

    def __enter__(self) -> Step:
        return self

    def __exit__(self, *exc) -> None:
        for temporary in self.staged.values():
            atomic.discard(temporary)

    def write(self, name: str, text: str) -> None:
        data = text.encode("utf-8")
        self.files[name] = sha256_of(data)
        if _digest(self.folder / name) != self.files[name]:
            self.staged[name] = atomic.stage(self.folder / name, data)

    def keep(self, name: str) -> None:
        digest = _digest(self.folder / name)
        if digest is None:
            raise interrupted(self.folder, f"{name} is missing", name == G_SET, self.start)
        self.files[name] = digest

    def commit(self, state: State) -> None:
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
    with locked(out):
        try:
            return step(out)
        except BaseException:
            if made:
                with contextlib.suppress(OSError):  # not empty: another command's files are there
                    out.rmdir()
            raise


def check_free(out: Path, kind) -> None:
    """Refuse a folder that holds anything: a plan (whole or interrupted) or other files."""
    names = {p.name for p in out.iterdir() if not _STAGED.fullmatch(p.name)}  # a killed step's temporary files
    if STATE in names:
        try:
            check_files(out, read_plan(out, kind)[1])
        except TailoredBenchError as error:
            if f"{out}: interrupted" in str(error):
                raise
    elif names & _plan_files(out):
        found = ", ".join(sorted(names & _plan_files(out)))
        raise interrupted(out, f"{found} without {STATE}", True)
    if names:
        raise TailoredBenchError(
            f"{out}: not empty (it may hold a plan a model is being run on); choose another folder or add --force"
        )


def read_plan(folder: Path, kind, seed: int | None = None, start: str = "--benchmark") -> tuple:
    """The plan's state (a ``kind``) and the file hashes it records, refusing one of another format or seed."""
    path = folder / STATE
    if not path.is_file():
        found = _plan_files(folder)
        if found:
            raise interrupted(folder, f"{', '.join(sorted(found))} without {STATE}", True, start)
        raise TailoredBenchError(f"{path}: no plan state; run 'tailoredbench plan {start} ...' first")
    try:
        state, files = kind.parse(path.read_text(errors="replace"))
    except TailoredBenchError as error:
        raise TailoredBenchError(f"{path}: {error}; plan again") from None
    if seed is not None and seed != state.seed:
        raise TailoredBenchError(f"{path}: planned with seed {state.seed}, not {seed}")
    return state, files


def one_model(samples) -> str:
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


def merge_samples(merged: dict[int, float], path, metric: str, task: str, what: str = "") -> None:
    """Add a samples file's results to ``merged``, refusing a doc_id (``what``: of which task) it contradicts."""
    for doc_id, value in read_samples(path, metric, task).items():
        if merged.get(doc_id, value) != value:
            raise TailoredBenchError(f"{path}: doc_id {doc_id}{what} has conflicting results across files")
        merged[doc_id] = value


def answers_on(results: dict, doc_ids, what: str) -> np.ndarray:
    missing = [d for d in doc_ids if d not in results]
    if missing:
        raise TailoredBenchError(f"the samples lack {len(missing)} {what} doc_ids, e.g. {missing[0]}")
    return np.array([results[d] for d in doc_ids])


def replaceable(files: dict[str, str] | None, force: bool) -> typing.Callable[[str], bool]:
    """Which files a step 2 may write over: the plan's own (all, with ``force`` or an older state's)."""
    return lambda name: force or files is None or name in files or name == STATE
