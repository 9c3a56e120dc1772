"""Run the notebooks in batch with papermill, without ever leaving a half-written report.

The notebooks in ``notebooks/`` are the source of every report; :func:`reproduce` executes
them. Each notebook runs into a staging folder beside its report folder; only when every
cell has succeeded does the staging folder replace ``<output_dir>/<name>/`` (two renames).
A failing cell or Ctrl-C leaves the previous report byte-identical, keeps the failed run in
``<output_dir>/.<name>.failed/`` for inspection, and says so.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

import joblib

from .cache import cache_dir
from .datasets.benchmarks import PAPER_BENCHMARKS
from .datasets.files import pin_data_dir
from .environment import reproducible_numerics
from .errors import TailoredBenchError
from .run_cache import ENV as RUN_CACHE

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
REPORTS = ROOT / "reports"
#: Where ``--quick`` runs go unless told otherwise: a scratch folder, ignored by git.
QUICK_REPORTS = ROOT / "reports-quick"

#: The benchmark notebooks, in the paper's order; they share their code cells and parameters.
BENCHMARK_NOTEBOOKS = PAPER_BENCHMARKS
STUDY_NOTEBOOKS = (
    "study_distance",
    "study_calibration",
    "study_g_size",
    "study_budget_scaling",
    "study_native_sources",
    "study_families",
    "study_embedding",
)
#: Every notebook, in the order ``reproduce`` starts them: the longest early, so that two side by
#: side finish together.
ORDER = (
    *BENCHMARK_NOTEBOOKS,
    "sequential_precision",
    "beyond",
    "method_walkthrough",
    "tutorial_evaluate_your_model",
    "main_table",
    *STUDY_NOTEBOOKS,
)
#: What a notebook waits for when notebooks run side by side. main_table and beyond read the
#: benchmark reports; the studies read the benchmark notebooks' runs from the run cache (started
#: sooner, they would compute those runs again, to the same numbers).
AFTER = {name: BENCHMARK_NOTEBOOKS for name in ("main_table", "beyond", *STUDY_NOTEBOOKS)}
#: How many notebooks ``reproduce`` runs side by side: one per two cores, as each runs its grids
#: on two workers (its ``jobs``). On two cores, two side by side kept the cores 95% busy instead
#: of 84% but took as long: four workers on two cores cost as much as the idle time they filled.
AT_ONCE = max(1, joblib.cpu_count() // 2)
#: Notebooks that compute little, in their kernel alone (about one core, seconds each). One runs
#: beside the ``at_once`` others, in the cores their grids leave idle (kernels starting, a table
#: read, a figure drawn). Each still starts in its turn in the order: none jumps ahead of a
#: notebook waiting for a slot.
LIGHT = frozenset({"method_walkthrough", "tutorial_evaluate_your_model", "main_table", "study_families"})
#: Notebooks that report seconds per run: none runs beside a light notebook, so that with
#: ``at_once`` 1 their seconds are those of a machine no other notebook shares.
TIMED = frozenset({*BENCHMARK_NOTEBOOKS, "sequential_precision"})
#: The tag of a notebook's grid cells, those that run its grids on workers. Once they are done
#: (the notebook draws its figures and writes its report, on one core), it no longer holds its
#: slot: the next notebook starts beside it (its kernel, imports and data) and runs its own grid
#: cells once it has finished, so that no two grids, nor a grid and a light notebook, share the
#: machine any more than before. On 2 cores, 3-5 s per notebook that ends in figures.
GRID = "grid"
#: Seconds between looks at whether a running notebook has left its grid cells.
POLL = 0.5

#: Seconds that notebooks have to stop after Ctrl-C before their kernels are killed. A kernel
#: ignores an interrupt that reaches it while it starts a cell (before its handler is set),
#: and one inside its own machinery can leave it alive but deaf; either would keep
#: ``reproduce`` waiting, up to forever. A second Ctrl-C kills them at once.
KILL_AFTER = 10.0
#: Seconds a finished notebook's kernel has to exit before it is sent SIGTERM (half of it) and
#: SIGKILL. Jupyter's default of 5 kept every notebook whose grids ran on workers waiting 2.6 s:
#: at shutdown the kernel sends its child processes SIGTERM and waits for them to exit, but the
#: resource trackers that joblib's workers start ignore SIGTERM, so the kernel waits until it
#: is sent SIGTERM itself (the trackers then exit, cleaning up, when it closes their pipe).
SHUTDOWN_WAIT = 1.0

_BENCHMARK_QUICK = {"runs": 2, "jobs": 2}
_STUDY_QUICK = {"benchmarks": ["gsm8k"], "runs": 2}
#: ``--quick``: small parameters that run every notebook in a few minutes, for students and smoke tests.
QUICK = {
    **{name: _BENCHMARK_QUICK for name in BENCHMARK_NOTEBOOKS},
    "gsm8k": {**_BENCHMARK_QUICK, "methods": ["tailoredbench", "random", "anchor_points", "random_regression"]},
    "main_table": {},
    "method_walkthrough": {},
    "tutorial_evaluate_your_model": {},
    "beyond": {
        "benchmarks": ["gsm8k"],
        "variants": ["calibrated", "stacked"],
        "runs": 2,
        "selection_runs": 2,
        "split_runs": 2,
        "random_splits": 1,
    },
    "sequential_precision": {
        "benchmarks": ["gsm8k", "pope"],
        "precisions": [0.06, 0.1],
        "max_budget": 40,
        "runs": 2,
    },
    "study_distance": {**_STUDY_QUICK, "distances": ["cosine", "manhattan"]},
    "study_calibration": _STUDY_QUICK,
    "study_g_size": {**_STUDY_QUICK, "g_sizes": [5, 10]},
    "study_budget_scaling": {
        "benchmarks": ["gsm8k"],
        "methods": ["tailoredbench", "random"],
        "budgets": [50, 100],
        "runs": 2,
    },
    "study_native_sources": {**_STUDY_QUICK, "fractions": [0.2, 1.0], "counts": [10, 40]},
    "study_families": {"benchmarks": ["arc_challenge"], "runs": 2},
    "study_embedding": {"benchmarks": ["gsm8k"], "embedding": "pca"},
}


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


#: Seconds of recorded cell time before the estimate of what is left follows this run's pace.
PACE_AFTER = 10.0


class _Progress:
    """One line per executed code cell: cells done, time elapsed, an estimate of what is left.

    The estimate scales the previous run's cell times (recorded by papermill in the report's
    notebook) by how fast this run has gone so far; without a previous run, by cells.
    """

    def __init__(self, name: str, nb, previous: Path, log):
        self.name, self.log = name, log
        self.code = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
        self.before = self._previous_durations(previous, len(nb.cells))
        self.start = time.perf_counter()
        self.done = 0

    @staticmethod
    def _previous_durations(path: Path, n_cells: int):
        import nbformat

        if not path.is_file():
            return None
        try:
            old = nbformat.read(path, as_version=4)
            durations = [float(c.metadata.get("papermill", {}).get("duration") or 0.0) for c in old.cells]
        except (OSError, ValueError, TypeError):
            return None
        return durations if len(durations) == n_cells + 1 else None  # + the injected parameters cell

    def __call__(self, cell=None, cell_index=None, **_):
        if cell is None or cell.cell_type != "code" or "injected-parameters" in cell.metadata.get("tags", []):
            return
        self.done += 1
        elapsed = time.perf_counter() - self.start
        left_cells = len(self.code) - self.done
        if self.before is not None and cell_index is not None:
            spent = sum(self.before[: cell_index + 1])
            rest = sum(self.before[cell_index + 1 :])
            # this run's pace against the last one's, once enough has run to tell (the
            # kernel's start-up is in `elapsed`, not in the recorded cell times)
            pace = elapsed / spent if spent >= PACE_AFTER else 1.0
            left = rest * pace
        else:
            left = elapsed / self.done * left_cells
        tail = f", about {_clock(left)} left" if left_cells else ""
        self.log(f"{self.name}: {self.done}/{len(self.code)} code cells, {_clock(elapsed)} elapsed{tail}")


def _shown(path: Path) -> str:
    """A path as the user would type it: relative to the working folder when inside it."""
    relative = os.path.relpath(Path(path).resolve())
    return str(path) if relative.startswith("..") else relative


def _relative(path: Path, start: Path) -> str:
    return os.path.relpath(Path(path).resolve(), Path(start).resolve())


def _clean(output: Path, *, stage_rel: str, final_rel: str, input_rel: str, output_rel: str) -> None:
    """Make the executed notebook say where its files now are, with no machine path."""
    import nbformat

    nb = nbformat.read(output, as_version=4)
    meta = nb.metadata.get("papermill", {})
    meta["input_path"], meta["output_path"] = input_rel, output_rel
    for key, value in meta.get("parameters", {}).items():
        if value == stage_rel:
            meta["parameters"][key] = final_rel
    for cell in nb.cells:
        if "injected-parameters" in cell.metadata.get("tags", []):
            cell.source = cell.source.replace(repr(stage_rel), repr(final_rel)).replace(
                f'"{stage_rel}"', f'"{final_rel}"'
            )
    nbformat.write(nb, output)


def _check_parameters(names, parameters: dict, declared: dict, only_declared: bool) -> dict:
    """Each notebook's overrides; a parameter that a notebook does not declare is an error."""
    chosen = {}
    for name in names:
        unknown = sorted(set(parameters) - set(declared[name]))
        if unknown and not only_declared:
            raise TailoredBenchError(
                f"notebook {name} has no parameter {', '.join(unknown)}; its parameters: {', '.join(declared[name])}"
            )
        chosen[name] = {k: v for k, v in parameters.items() if k in declared[name]}
    nowhere = sorted(k for k in parameters if not any(k in declared[n] for n in names))
    if nowhere:
        raise TailoredBenchError(f"no notebook chosen declares {', '.join(nowhere)}")
    return chosen


def reproduce(
    names=None,
    *,
    parameters: dict | None = None,
    output_dir: str | Path | None = None,
    quick: bool = False,
    force: bool = False,
    only_declared: bool = False,
    run_cache: str | Path | bool | None = None,
    at_once: int = AT_ONCE,
    notebooks_dir: str | Path = NOTEBOOKS,
    log=print,
) -> list[Path]:
    """Execute notebooks with papermill; each writes ``<output_dir>/<name>/``.

    Parameters
    ----------
    names : list of str, optional
        Notebook names (without ``.ipynb``); every notebook of :data:`ORDER` by default.
    parameters : dict, optional
        Values for the notebooks' ``parameters`` cells. A parameter a chosen notebook does
        not declare is an error (with ``only_declared``, it is passed only where declared).
    output_dir : path, optional
        Where the reports go: ``reports/`` by default, ``reports-quick/`` with ``quick``.
    quick : bool
        Run with :data:`QUICK`'s small parameters (a few minutes for every notebook).
    force : bool
        Allow replacing an existing report made with other parameters; ``reports/``
        itself, run with the notebooks' own parameters, is always regenerated.
    run_cache : path or False, optional
        Where the notebooks keep and read each run's chosen probes (:mod:`tailoredbench.run_cache`),
        so that a later notebook reads what an earlier one computed: by default
        ``$TAILOREDBENCH_RUN_CACHE`` if it is set (empty: off), else ``runs/`` in the user
        cache. ``False`` turns it off. The numbers are the same either way.
    at_once : int, default :data:`AT_ONCE`
        How many notebooks run side by side, besides one of :data:`LIGHT` (never beside one of
        :data:`TIMED`); a notebook starts after those it reads (:data:`AFTER`), and one past its
        grid cells (:data:`GRID`) holds no slot. The numbers are the same for any value; only
        the seconds per run that notebooks report depend on it.

    Returns
    -------
    list of pathlib.Path
        The executed notebooks.

    Raises
    ------
    NotebookFailed
        A cell failed (or the run was interrupted); that notebook's previous report is left
        as it was, and no notebook starts after it (those running side by side finish).
    """
    pin_data_dir()  # a relative $TAILOREDBENCH_DATA means from here, not from notebooks/
    if isinstance(at_once, bool) or not isinstance(at_once, int) or at_once < 1:
        raise TailoredBenchError(f"at_once must be a whole number of notebooks, 1 or more, not {at_once!r}")
    notebooks_dir = Path(notebooks_dir)
    names = list(dict.fromkeys(names or ORDER))  # each once, in the order given
    declared = {name: declared_parameters(name, notebooks_dir) for name in names}
    parameters = dict(parameters or {})
    chosen = _check_parameters(names, parameters, declared, only_declared)
    if quick:
        chosen = {name: {**QUICK.get(name, {}), **chosen[name]} for name in names}
    root = Path(output_dir) if output_dir is not None else (QUICK_REPORTS if quick else REPORTS)
    # A notebook's own parameters regenerate reports/ (git keeps the old); --quick's refresh reports-quick/.
    home = QUICK_REPORTS if quick else REPORTS
    own = root.resolve() == home.resolve() and not parameters
    # Check every destination before computing anything.
    for name in names:
        final = root / name
        if final.exists() and any(final.iterdir()) and not (own or force):
            raise TailoredBenchError(
                f"{final} exists and this run's parameters differ from the report's; "
                "name another folder with --output-dir, or add --force to replace it"
            )
    root.mkdir(parents=True, exist_ok=True)
    if run_cache is None or run_cache is True:
        run_cache = os.environ.get(RUN_CACHE, cache_dir() / "runs")
    # The kernels inherit this process's environment: where the run cache is, and the
    # variables under which numpy and OpenBLAS round as where the reports are made.
    settings = {RUN_CACHE: str(Path(run_cache).resolve()) if run_cache else "", **reproducible_numerics()}
    previous = {name: os.environ.get(name) for name in settings}
    os.environ.update(settings)
    try:
        return _execute(names, chosen, declared, root, notebooks_dir, log, at_once)
    finally:
        for name, value in previous.items():
            if value is None:
                del os.environ[name]
            else:
                os.environ[name] = value


def _one_at_a_time(log):
    """``log``, one message at a time: print writes a line and its end apart, so two
    notebooks logging at once could run their lines together (two threads printing
    progress lines at once did, when tried)."""
    lock = threading.Lock()

    def serial(message):
        with lock:
            log(message)

    return serial


def _execute(names, chosen, declared, root: Path, notebooks_dir: Path, log, at_once: int) -> list[Path]:
    """Run the notebooks, ``at_once`` side by side and one of :data:`LIGHT` beside them, each
    into its staging folder; a notebook past its grid cells (:data:`GRID`) holds no slot, and
    the one started beside it runs its own grid cells once it has ended.

    Notebooks start in the order of ``names``, each once the notebooks it waits for
    (:data:`AFTER`) have finished; one that waits for them does not hold up those after it,
    but one that waits for a slot does. After a failure or Ctrl-C no notebook starts; those
    running finish, or on Ctrl-C are interrupted, and killed if still running
    :data:`KILL_AFTER` seconds later (or at a second Ctrl-C).
    """
    began = time.perf_counter()
    waiting, running, outputs, failures = list(names), {}, {}, []
    interrupted = threading.Event()  # Ctrl-C: every running notebook stops at once
    kill_at = None  # after Ctrl-C: when kernels still running are killed
    log = _one_at_a_time(log)  # notebooks side by side log from their own threads

    def next_ready():
        # a notebook past its grid cells still counts for what waits for its report, not for a slot
        names = {job.name for job in running.values() if not job.tail.is_set()}
        busy = set(waiting) | {job.name for job in running.values()}
        ready = next((name for name in waiting if busy.isdisjoint(AFTER.get(name, ()))), None)
        clash = LIGHT if ready in TIMED else TIMED if ready in LIGHT else frozenset()
        if ready is None or not names.isdisjoint(clash):
            return None  # none ready, or a light and a timed notebook would run side by side
        heavy = len(names - LIGHT)
        if heavy < at_once and len(names) < at_once + 1:
            return ready
        # every other slot taken: only a light notebook starts, beside them, if none runs yet
        return ready if ready in LIGHT and len(names) == heavy else None

    def interrupt():
        interrupted.set()
        for job in running.values():
            job.interrupt()

    # at_once + 1 and those past their grid cells, at most as many again
    with ThreadPoolExecutor(max_workers=2 * (at_once + 1)) as pool:
        while waiting or running:
            while not (failures or interrupted.is_set()):
                name = next_ready()
                if name is None:
                    break
                waiting.remove(name)
                log(f"{name} ({len(names) - len(waiting)}/{len(names)}): running into {_shown(root / name)}")
                job = _Notebook(name, interrupted, log)
                job.first = [other for other in running.values() if other.tail.is_set()]  # its grid waits for them
                running[pool.submit(job.run, chosen[name], declared[name], root, notebooks_dir)] = job
            if not running:
                break
            try:
                left = POLL if kill_at is None else max(0.0, min(POLL, kill_at - time.monotonic()))
                finished, _ = wait(running, timeout=left, return_when=FIRST_COMPLETED)
            except KeyboardInterrupt:
                if not interrupted.is_set():
                    interrupt()
                    kill_at = time.monotonic() + KILL_AFTER
                elif kill_at is not None:
                    kill_at = time.monotonic()
                continue
            if kill_at is not None and time.monotonic() >= kill_at:
                for job in running.values():
                    job.kill()  # the client notices a dead kernel within seconds, and fails the run
                kill_at = None  # then wait for them as long as that takes
            for future in finished:
                job = running.pop(future)
                try:
                    outputs[job.name] = future.result()
                except NotebookFailed as err:
                    failures.append(str(err))
                except BaseException:  # not a notebook's failure: a fault here; stop the others and say so
                    interrupt()
                    raise
    if failures:
        unstarted = f"; not started: {', '.join(waiting)}" if waiting else ""
        raise NotebookFailed("; ".join(failures) + unstarted)
    log(f"{len(names)} notebook(s) in {_clock(time.perf_counter() - began)}")
    return [outputs[name] for name in names]


def _close_event_loop() -> None:
    """Close the event loop papermill opened on this worker thread; nothing else would."""
    try:
        loop = asyncio.get_event_loop()
    except RuntimeError:  # none on this thread
        return
    loop.close()
    asyncio.set_event_loop(None)


def _kernel_manager(job, sockets: str):
    """The class of ``job``'s kernel manager: it tells ``job.kernel`` who it is, so that Ctrl-C in
    the main thread can interrupt the kernel, and keeps the kernel's sockets as files in the
    folder ``sockets`` (no network port, and no warning about one)."""
    from jupyter_client.manager import AsyncKernelManager

    class Kernel(AsyncKernelManager):
        def __init__(self, **kwargs):
            super().__init__(
                transport="ipc", ip=os.path.join(sockets, "kernel"), shutdown_wait_time=SHUTDOWN_WAIT, **kwargs
            )
            job.kernel = self

        async def _async_interrupt_kernel(self) -> None:
            # jupyter_client interrupts every kernel it shuts down. Papermill shuts one down after
            # its last cell, with nothing left to interrupt, and a SIGINT reaching the idle kernel
            # at the wrong moment was printed on the console as "[IPKernelApp] ERROR |
            # KeyboardInterrupt caught in kernel." (in 2 of 4 full runs). Ctrl-C still interrupts.
            if not self.shutting_down:
                await super()._async_interrupt_kernel()

    return Kernel


class _Notebook:
    """One notebook's run into its staging folder; a success replaces its report."""

    def __init__(self, name: str, interrupted: threading.Event, log):
        self.name, self.interrupted, self.log = name, interrupted, log
        self.kernel = None
        self.tail = threading.Event()  # its grid cells are done (GRID)
        self.finished = threading.Event()  # its kernel has stopped
        self.first: list[_Notebook] = []  # the notebooks its first grid cell waits for
        self.grids = self.grids_started = 0

    def interrupt(self) -> None:
        """Ctrl-C for the kernel's running cell, as Jupyter's interrupt button sends it."""
        self._signal(None)

    def kill(self) -> None:
        """Stop the kernel and the workers it started (its process group)."""
        self._signal(signal.SIGKILL)

    def _signal(self, signum) -> None:
        from jupyter_core.utils import run_sync

        kernel = self.kernel
        try:
            if kernel is not None and kernel.has_kernel:
                if signum is None:
                    run_sync(kernel.interrupt_kernel)()
                else:
                    run_sync(kernel.signal_kernel)(signum)
        except RuntimeError:  # the kernel ended in between: nothing left to stop
            pass

    def _before_cell(self, cell=None, **_) -> None:
        if self.interrupted.is_set():  # Ctrl-C while the kernel was starting
            raise KeyboardInterrupt
        if cell is None:
            return
        if GRID in cell.metadata.get("tags", []):
            for other in self.first:  # started beside their figures: the machine is the grid's alone
                while not other.finished.wait(0.1):
                    if self.interrupted.is_set():
                        raise KeyboardInterrupt
            self.first = []
            self.grids_started += 1
        elif self.grids and self.grids_started == self.grids:
            self.tail.set()

    def run(self, values: dict, declared: dict, root: Path, notebooks_dir: Path) -> Path:
        try:
            return self._run(values, declared, root, notebooks_dir)
        finally:
            self.finished.set()  # whatever happened: a notebook waiting for this one goes on

    def _run(self, values: dict, declared: dict, root: Path, notebooks_dir: Path) -> Path:
        import nbformat
        import papermill as pm

        name = self.name
        final, stage, failed = root / name, root / f".{name}.partial", root / f".{name}.failed"
        shutil.rmtree(stage, ignore_errors=True)  # what an earlier interrupted run left
        stage.mkdir()
        stage_rel, final_rel = _relative(stage, notebooks_dir), _relative(final, notebooks_dir)
        values = {**values, "output_dir": stage_rel}
        if "reports_dir" in declared and "reports_dir" not in values:
            values["reports_dir"] = _relative(root, notebooks_dir)  # read the reports this run writes
        source = notebooks_dir / f"{name}.ipynb"
        output = stage / f"{name}.ipynb"
        nb = nbformat.read(source, as_version=4)
        self.grids = sum(GRID in cell.metadata.get("tags", []) for cell in nb.cells)
        progress = _Progress(name, nb, final / f"{name}.ipynb", self.log)
        sockets = tempfile.mkdtemp(prefix="tailoredbench-kernel-")
        try:
            pm.execute_notebook(
                str(source),
                str(output),
                parameters=values,
                progress_bar=False,
                kernel_name="python3",
                kernel_manager_class=_kernel_manager(self, sockets),
                # the kernel's working folder; papermill's `cwd` would move this whole process, threads and all
                resources={"metadata": {"path": str(notebooks_dir)}},
                on_cell_start=self._before_cell,
                on_cell_executed=progress,
            )
        except (Exception, KeyboardInterrupt) as err:
            shutil.rmtree(failed, ignore_errors=True)
            stage.rename(failed)
            kept = f"{_shown(final)} is unchanged" if final.exists() else f"{_shown(final)} was not written"
            if self.interrupted.is_set():  # whatever the kernel said as it stopped (or died)
                reason = "KeyboardInterrupt"
            else:
                reason = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
            raise NotebookFailed(f"{name} failed ({reason}); {kept}; the failed run is in {_shown(failed)}") from None
        finally:
            shutil.rmtree(sockets, ignore_errors=True)
            _close_event_loop()
        _clean(  # papermill's record of paths, relative to the project
            output,
            stage_rel=stage_rel,
            final_rel=final_rel,
            input_rel=_relative(source, ROOT),
            output_rel=_relative(final / f"{name}.ipynb", ROOT),
        )
        old = root / f".{name}.old"
        shutil.rmtree(old, ignore_errors=True)
        if final.exists():
            final.rename(old)
        stage.rename(final)
        shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(failed, ignore_errors=True)
        self.log(f"{name}: done in {_clock(time.perf_counter() - progress.start)} -> {_shown(final)}")
        return final / f"{name}.ipynb"
