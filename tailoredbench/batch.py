"""Run the notebooks with papermill, one at a time, never leaving a half-written report.

Each runs in its own process into ``<output_dir>/.<name>.partial/``, which replaces ``<output_dir>/<name>/``
only once every cell has succeeded; a failed run is kept in ``.<name>.failed/``, an interrupted one removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from . import atomic
from .cache import ENV as RUN_CACHE
from .cache import default_folder
from .datasets.files import pin_data_dir
from .environment import reproducible_numerics
from .errors import TailoredBenchError

ROOT = Path(__file__).resolve().parents[1]
#: ``reports-quick``: where ``--quick`` runs go unless told otherwise, a scratch folder that git ignores.
NOTEBOOKS, REPORTS, QUICK_REPORTS = ROOT / "notebooks", ROOT / "reports", ROOT / "reports-quick"
LISTING = NOTEBOOKS / "catalogue.toml"  # absent where the package is installed without its notebooks
#: Each notebook, in the order ``reproduce`` runs them: its kind, what it runs after, its ``--quick`` parameters.
CATALOGUE: dict[str, dict] = tomllib.loads(LISTING.read_text()) if LISTING.is_file() else {}
ORDER = tuple(CATALOGUE)
BENCHMARK_NOTEBOOKS = tuple(name for name, entry in CATALOGUE.items() if entry["kind"] == "benchmark")
STUDY_NOTEBOOKS = tuple(name for name, entry in CATALOGUE.items() if entry["kind"] == "study")
AFTER = {name: BENCHMARK_NOTEBOOKS for name, entry in CATALOGUE.items() if entry.get("after") == "benchmarks"}
QUICK = {name: entry.get("quick", {}) for name, entry in CATALOGUE.items()}


class NotebookFailed(TailoredBenchError):
    """A notebook stopped before its last cell; its previous report is untouched."""


def declared_parameters(name: str, notebooks_dir: Path = NOTEBOOKS) -> dict:
    """The parameters a notebook declares in its ``parameters`` cell, with their defaults."""
    import papermill as pm

    path = Path(notebooks_dir) / f"{name}.ipynb"
    if not path.is_file():
        raise TailoredBenchError(f"no notebook named {name!r} in {notebooks_dir}; notebooks: {', '.join(ORDER)}")
    return {key: p["default"] for key, p in pm.inspect_notebook(str(path)).items()}


def _clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def user_path(path: Path) -> str:
    """A path as the user would type it: relative to the working folder when inside it."""
    relative = os.path.relpath(Path(path).resolve())
    return str(path) if relative.startswith("..") else relative


def _relative(path: Path, start: Path) -> str:
    return os.path.relpath(Path(path).resolve(), Path(start).resolve())


class _Progress:
    """One line per executed code cell: cells done, time elapsed, and at this pace, what is left."""

    def __init__(self, name: str, nb, log):
        self.name, self.log, self.start, self.done = name, log, time.perf_counter(), 0
        self.cells = sum(cell.cell_type == "code" for cell in nb.cells)

    def __call__(self, cell=None, **_):
        if cell is None or cell.cell_type != "code" or "injected-parameters" in cell.metadata.get("tags", []):
            return
        self.done += 1
        elapsed, cells_left = time.perf_counter() - self.start, self.cells - self.done
        left = f", about {_clock(elapsed / self.done * cells_left)} left" if cells_left else ""
        self.log(f"{self.name}: {self.done}/{self.cells} code cells, {_clock(elapsed)} elapsed{left}")


def reproduce(
    names=None,
    *,
    parameters: dict | None = None,
    output_dir: str | Path | None = None,
    quick: bool = False,
    force: bool = False,
    only_declared: bool = False,
    run_cache: str | Path | bool | None = None,
    notebooks_dir: str | Path = NOTEBOOKS,
    log=print,
) -> list[Path]:
    """Execute notebooks (all of :data:`ORDER` by default), each after those it reads (:data:`AFTER`), into
    ``<output_dir>/<name>/`` (``reports/``, or ``reports-quick/`` with :data:`QUICK`); a report made with other
    parameters is replaced only with ``force``. ``run_cache``: the kernels' run cache (``False``: none)."""
    pin_data_dir()  # a relative $TAILOREDBENCH_DATA means from here, not from notebooks/
    notebooks_dir, parameters = Path(notebooks_dir).resolve(), parameters or {}
    if not (waiting := list(dict.fromkeys(names or ORDER))):
        raise TailoredBenchError(f"no notebooks: {LISTING} is missing; reproduce runs in a clone of the project")
    declared = {name: declared_parameters(name, notebooks_dir) for name in waiting}
    for name in waiting:
        unknown = sorted(set(parameters) - set(declared[name]))
        if unknown and not only_declared:
            known = ", ".join(declared[name])
            raise TailoredBenchError(f"notebook {name} has no parameter {', '.join(unknown)}; its parameters: {known}")
    if nowhere := sorted(k for k in parameters if not any(k in declared[n] for n in waiting)):
        raise TailoredBenchError(f"no notebook chosen declares {', '.join(nowhere)}")
    root = Path(output_dir) if output_dir is not None else (QUICK_REPORTS if quick else REPORTS)
    # A notebook's own parameters regenerate reports/ (git keeps the old); --quick's refresh reports-quick/.
    own = root.resolve() == (QUICK_REPORTS if quick else REPORTS).resolve() and not parameters
    if os.path.lexists(root) and not root.is_dir():
        raise TailoredBenchError(f"{root}: not a folder (a file or a broken link); give a folder to write reports into")
    for name in waiting:  # every destination is checked before anything runs
        if (root / name).exists() and any((root / name).iterdir()) and not (own or force):
            raise TailoredBenchError(
                f"{root / name} exists and this run's parameters differ from the report's; "
                "name another folder with --output-dir, or add --force to replace it"
            )
    root.mkdir(parents=True, exist_ok=True)
    if run_cache is None or run_cache is True:
        run_cache = os.environ.get(RUN_CACHE, default_folder())
    # the kernels inherit their process's environment: where the run cache is, and how numpy rounds
    env = {**os.environ, RUN_CACHE: str(Path(run_cache).resolve()) if run_cache else "", **reproducible_numerics()}
    began, count, done = time.perf_counter(), len(waiting), []
    while waiting:
        name = next(n for n in waiting if set(waiting).isdisjoint(AFTER.get(n, ())))
        waiting.remove(name)
        log(f"{name} ({count - len(waiting)}/{count}): running into {user_path(root / name)}")
        values = {**(QUICK.get(name, {}) if quick else {}), **parameters}
        values = {key: value for key, value in values.items() if key in declared[name]}
        if "reports_dir" in declared[name]:  # read the reports this run writes
            values.setdefault("reports_dir", _relative(root, notebooks_dir))
        failure = _run(name, values, root, notebooks_dir, env, log)
        if failure:
            raise NotebookFailed(failure + (f"; not started: {', '.join(waiting)}" if waiting else ""))
        done.append(root / name / f"{name}.ipynb")
    log(f"{count} notebook(s) in {_clock(time.perf_counter() - began)}")
    return done


def _run(name: str, values: dict, root: Path, notebooks_dir: Path, env: dict, log) -> str:
    """Run one notebook in its own process (:func:`_child`), relaying its progress; why it failed, if it did."""
    start, final, stage, failed = time.perf_counter(), root / name, root / f".{name}.partial", root / f".{name}.failed"
    shutil.rmtree(stage, ignore_errors=True)  # what an earlier stopped run left
    stage.mkdir()
    source, output = notebooks_dir / f"{name}.ipynb", stage.resolve() / f"{name}.ipynb"
    stage_rel = _relative(stage, notebooks_dir)
    job = json.dumps([str(source), str(output), {**values, "output_dir": stage_rel}])
    read, write = os.pipe()
    # its and its kernel's console output: off the terminal, and kept if it fails
    with open(stage / "console.log", "wb") as console:
        command = [sys.executable, "-c", "from tailoredbench.batch import _child; _child()", job, str(write)]
        # its own session: Ctrl-C reaches reproduce alone, which passes it on once; from ROOT, it imports this package
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=console, stderr=console, pass_fds=(write,), start_new_session=True
        )
    os.close(write)
    failure = ""
    try:
        with open(read) as messages:
            for kind, text in map(json.loads, messages):
                if kind == "log":
                    log(text)
                else:
                    failure = text
        process.wait()
    except KeyboardInterrupt:
        process.send_signal(signal.SIGINT)  # it shuts its kernel down
        try:
            process.wait()
        except KeyboardInterrupt:  # a second Ctrl-C; its kernel exits by itself, as it watches its parent
            process.kill()
            process.wait()
        shutil.rmtree(stage, ignore_errors=True)
        log(f"interrupted: {name} stopped; {user_path(final)} is as it was")
        raise
    except BaseException:  # e.g. a test's time limit: the notebook's process and its kernel go with it
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        shutil.rmtree(stage, ignore_errors=True)
        raise
    if process.returncode:
        shutil.rmtree(failed, ignore_errors=True)
        stage.rename(failed)
        kept = "is unchanged" if final.exists() else "was not written"
        reason = failure or f"exit status {process.returncode}"
        return f"{name} failed ({reason}); {user_path(final)} {kept}; the failed run is in {user_path(failed)}"
    (stage / "console.log").unlink()
    # papermill's record of paths: relative to the project, and to the report's folder for the staging one
    text = output.read_text().replace(f'"{source}"', f'"{_relative(source, ROOT)}"')
    text = text.replace(f'"{output}"', f'"{_relative(final / output.name, ROOT)}"')
    output.write_text(normalised(text.replace(stage_rel, _relative(final, notebooks_dir))))
    atomic.replace_folder(stage, final)
    shutil.rmtree(failed, ignore_errors=True)
    log(f"{name}: done in {_clock(time.perf_counter() - start)} -> {user_path(final)}")
    return ""


def normalised(text: str) -> str:
    """An executed notebook as JupyterLab saves it, so that it opens unmodified: normalised, valid, in nbformat's
    layout, with the kernelspec of the kernel that ran it (papermill copies the source notebook's display name)."""
    import nbformat
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    _, nb = nbformat.validator.normalize(nbformat.reads(text, as_version=nbformat.NO_CONVERT))
    nb = nbformat.from_dict(nb)
    if name := nb.metadata.get("kernelspec", {}).get("name"):
        try:
            spec = KernelSpecManager().get_kernel_spec(name)
        except NoSuchKernel:  # a kernel that ran and is gone: nothing to match
            pass
        else:
            nb.metadata.kernelspec = {"display_name": spec.display_name, "language": spec.language, "name": name}
    nbformat.validate(nb)
    return nbformat.writes(nb, version=nbformat.NO_CONVERT).rstrip("\n") + "\n"  # as nbformat.write ends a file


def _child() -> None:
    """A notebook's process: papermill runs it; its progress, or why it failed, goes up the pipe."""
    (source, output, parameters), pipe = json.loads(sys.argv[1]), open(int(sys.argv[2]), "w", buffering=1)
    try:
        import nbformat
        import papermill as pm
        from traitlets.config import Config

        progress = _Progress(
            Path(source).stem, nbformat.read(source, 4), lambda line: print(json.dumps(["log", line]), file=pipe)
        )
        with tempfile.TemporaryDirectory(prefix="tailoredbench-kernel-") as sockets:
            pm.execute_notebook(
                source,
                output,
                parameters=parameters,
                cwd=Path(source).parent,
                kernel_name="python3",
                progress_bar=False,
                on_cell_executed=progress,
                # the kernel's sockets as files: no network port, and no warning about one
                config=Config({"KernelManager": {"transport": "ipc", "ip": os.path.join(sockets, "kernel")}}),
            )
    except BaseException as err:  # a failing cell, or Ctrl-C passed on by the parent
        text = str(err).strip()
        print(json.dumps(["failed", text.splitlines()[-1] if text else type(err).__name__]), file=pipe)
        sys.exit(1)
