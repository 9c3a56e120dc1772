"""reproduce's scheduling: notebooks side by side, after what they read; failures and Ctrl-C.

The notebooks here are synthetic: each sleeps, then records when it ran.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import nbformat
import pytest

from tailoredbench import batch
from tailoredbench.batch import NotebookFailed, reproduce
from tailoredbench.errors import TailoredBenchError

RECORD = """\
import json, pathlib, time
assert not fail, "told to fail"
start = time.time()
time.sleep(seconds)
pathlib.Path(output_dir, "times.json").write_text(json.dumps([start, time.time()]))
"""
LAST = "pathlib.Path(output_dir, 'last.txt').write_text('the last cell ran')"


@pytest.fixture
def notebooks(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for name in ("one", "two", "three"):
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
        parameters = nbformat.v4.new_code_cell("output_dir = 'out'\nseconds = 0.0\nfail = False")
        parameters.metadata["tags"] = ["parameters"]
        nb.cells = [parameters, nbformat.v4.new_code_cell(RECORD), nbformat.v4.new_code_cell(LAST)]
        nbformat.write(nb, folder / f"{name}.ipynb")
    return folder


def times(root, name):
    return json.loads((root / name / "times.json").read_text())


def run(notebooks, out, names, *, at_once, seconds=3.0, **options):
    """The synthetic notebooks ``names``, each sleeping ``seconds``, into ``out``."""
    options.setdefault("log", print)
    return reproduce(
        names, parameters={"seconds": seconds}, notebooks_dir=notebooks, output_dir=out, at_once=at_once, **options
    )


@pytest.mark.notebook
def test_notebooks_run_side_by_side_each_after_what_it_reads(notebooks, tmp_path, monkeypatch):
    monkeypatch.setattr(batch, "AFTER", {"three": ("one",)})
    out, lines = tmp_path / "reports", []
    done = run(notebooks, out, ["three", "one", "two"], at_once=2, log=lines.append)
    assert [p.parent.name for p in done] == ["three", "one", "two"]  # in the order asked
    one, two, three = times(out, "one"), times(out, "two"), times(out, "three")
    assert one[0] < two[1] and two[0] < one[1]  # side by side
    assert three[0] >= one[1]  # three reads what one writes
    assert [line.split(" (")[0] for line in lines if "running into" in line] == ["one", "two", "three"]
    assert not list(out.glob(".*"))  # no staging folder left


STAMP = "import json, pathlib, time\npathlib.Path(output_dir, '{what}.json').write_text(json.dumps(time.time()))"


@pytest.fixture
def gridded(tmp_path):
    """Notebooks whose grid cell (tagged) is followed by a slow last cell, as figures follow a grid."""
    folder = tmp_path / "gridded"
    folder.mkdir()
    for name in ("one", "two"):
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
        parameters = nbformat.v4.new_code_cell("output_dir = 'out'\nseconds = 0.0")
        parameters.metadata["tags"] = ["parameters"]
        grid = nbformat.v4.new_code_cell(STAMP.format(what="grid"))
        grid.metadata["tags"] = [batch.GRID]
        last = nbformat.v4.new_code_cell(f"time.sleep(seconds)\n{STAMP.format(what='end')}")
        nb.cells = [parameters, nbformat.v4.new_code_cell(STAMP.format(what="start")), grid, last]
        nbformat.write(nb, folder / f"{name}.ipynb")
    return folder


def stamp(root, name, what):
    return json.loads((root / name / f"{what}.json").read_text())


@pytest.mark.notebook
def test_the_next_notebook_starts_beside_the_last_cells_and_runs_its_grid_after_them(gridded, tmp_path):
    """One at a time, a notebook past its grid cells (figures, on one core) gives up its slot: the
    next one starts its kernel beside it, but its own grid cell waits until that one has ended."""
    out = tmp_path / "reports"
    run(gridded, out, ["one", "two"], at_once=1, seconds=4.0)
    assert stamp(out, "two", "start") < stamp(out, "one", "end")  # side by side
    assert stamp(out, "two", "grid") >= stamp(out, "one", "end")  # the grid alone
    assert stamp(out, "one", "grid") < stamp(out, "two", "start")  # not before one's grid


@pytest.mark.notebook
def test_one_notebook_per_two_cores_by_default():
    import joblib

    assert batch.AT_ONCE == max(1, joblib.cpu_count() // 2)


@pytest.mark.notebook
def test_a_light_notebook_runs_beside_the_others_in_its_turn(notebooks, tmp_path, monkeypatch):
    monkeypatch.setattr(batch, "LIGHT", frozenset({"two"}))
    out, lines = tmp_path / "reports", []
    run(notebooks, out, ["one", "three", "two"], at_once=1, log=lines.append)
    one, two, three = times(out, "one"), times(out, "two"), times(out, "three")
    assert three[0] >= one[1]  # one at a time, but for the light notebook
    assert two[0] >= one[1]  # not ahead of three, which waited for the slot
    assert two[0] < three[1] and three[0] < two[1]  # beside three
    assert [line.split(" (")[0] for line in lines if "running into" in line] == ["one", "three", "two"]


@pytest.mark.notebook
def test_no_light_notebook_runs_beside_one_that_reports_its_seconds(notebooks, tmp_path, monkeypatch):
    monkeypatch.setattr(batch, "LIGHT", frozenset({"two"}))
    monkeypatch.setattr(batch, "TIMED", frozenset({"one"}))
    out = tmp_path / "reports"
    run(notebooks, out, ["one", "two"], at_once=1, seconds=2.0)
    assert times(out, "two")[0] >= times(out, "one")[1]


def test_light_notebooks_start_no_workers():
    from tailoredbench.batch import ORDER, declared_parameters

    for name in batch.LIGHT:  # they compute in their kernel alone: no `jobs` to give them
        assert name in ORDER and "jobs" not in declared_parameters(name)


def test_one_at_a_time_when_asked(notebooks, tmp_path):
    out = tmp_path / "reports"
    run(notebooks, out, ["one", "two"], at_once=1, seconds=1.0)
    assert times(out, "two")[0] >= times(out, "one")[1]


@pytest.mark.notebook
def test_after_a_failure_running_notebooks_finish_and_no_other_starts(notebooks, tmp_path, monkeypatch):
    monkeypatch.setattr(batch, "AFTER", {"three": ("one",)})
    out = tmp_path / "reports"
    (out / "one").mkdir(parents=True)
    (out / "one" / "mine.txt").write_text("keep")
    one = nbformat.read(notebooks / "one.ipynb", as_version=4)
    one.cells[0].source += "\nfail = True"  # the notebook's own default: fails whatever it is given
    nbformat.write(one, notebooks / "one.ipynb")
    with pytest.raises(NotebookFailed, match=r"one failed .*told to fail.*; not started: three") as failed:
        reproduce(
            ["one", "two", "three"],
            parameters={"seconds": 3.0},
            notebooks_dir=notebooks,
            output_dir=out,
            force=True,
            at_once=2,
            log=print,
        )
    assert "two" not in str(failed.value)
    assert (out / "one" / "mine.txt").read_text() == "keep"  # the previous report is untouched
    assert (out / ".one.failed" / "one.ipynb").is_file()
    assert (out / "two" / "last.txt").is_file()  # it ran to its last cell, begun after one failed
    assert not (out / "three").exists()


def _interrupted_run(notebooks, out, log, *, kill_after=None, presses=1, ready=None):
    """Run one, two and three two at a time in a child process, Ctrl-C it (``presses`` times, a
    second apart) once one and two have run their parameters cell (and the file ``ready``
    exists, if given), and return its exit status, its output and the seconds it took to stop.
    The child writes to a file, not a pipe: its kernels hold what it writes to, and a pipe
    would stay open as long as they live. Whatever happens, nothing is left running."""
    script = (
        "import signal, sys\n"
        # Ctrl-C as a terminal delivers it, even where the tests run in a shell's background
        # job, which starts every process with SIGINT ignored
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from tailoredbench import batch\n"
        + (f"batch.KILL_AFTER = {kill_after}\n" if kill_after is not None else "")
        + "try:\n"
        "    batch.reproduce(['one', 'two', 'three'], parameters={'seconds': 120.0}, force=True, at_once=2,\n"
        f"                    notebooks_dir={str(notebooks)!r}, output_dir={str(out)!r},\n"
        "                    log=lambda m: print(m, flush=True))\n"
        "except batch.NotebookFailed as err:\n"
        "    print('FAILED', err, flush=True)\n"
        "    sys.exit(1)\n"
    )
    with open(log, "w") as written:
        child = subprocess.Popen([sys.executable, "-c", script], stdout=written, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        started = set()
        # each notebook has run its parameters cell and starts the next: an interrupt may
        # reach its kernel before the kernel can take it
        while started != {"one", "two"} or (ready is not None and not ready.exists()):
            assert child.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
            started = {line.split(":")[0] for line in log.read_text().splitlines() if "1/3 code cells" in line}
        began = time.monotonic()
        child.send_signal(signal.SIGINT)
        for _ in range(presses - 1):
            time.sleep(1.0)
            child.send_signal(signal.SIGINT)
        status = child.wait(timeout=60)
        return status, log.read_text(), time.monotonic() - began
    finally:
        if child.poll() is None:  # its kernels stop within a second of it (they watch their parent)
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()


@pytest.mark.notebook
def test_ctrl_c_interrupts_every_running_notebook_and_keeps_their_reports(notebooks, tmp_path):
    out = tmp_path / "reports"
    for name in ("one", "two"):
        (out / name).mkdir(parents=True)
        (out / name / "mine.txt").write_text("keep")
    status, written, seconds = _interrupted_run(notebooks, out, tmp_path / "log.txt")
    assert status == 1, written
    # interrupted, not slept out: at once, or killed after KILL_AFTER where the interrupt came too soon
    assert seconds < batch.KILL_AFTER + 15
    assert "one failed (KeyboardInterrupt" in written and "two failed (KeyboardInterrupt" in written
    assert "not started: three" in written
    for name in ("one", "two"):
        assert (out / name / "mine.txt").read_text() == "keep"
        assert (out / f".{name}.failed" / f"{name}.ipynb").is_file()
    assert not (out / "three").exists()


@pytest.mark.notebook
@pytest.mark.parametrize(
    ("kill_after", "presses", "within"),
    [(2.0, 1, 20.0), (60.0, 2, 30.0)],  # killed after kill_after, or at once at a second Ctrl-C
    ids=["after-a-while", "at-a-second-ctrl-c"],
)
def test_a_kernel_deaf_to_ctrl_c_is_killed_and_the_run_stops(notebooks, tmp_path, kill_after, presses, within):
    deaf = nbformat.read(notebooks / "two.ipynb", as_version=4)
    # Deaf once the file is written: a Ctrl-C sent earlier would reach the kernel before the
    # cell ignores it, fail the notebook at once and end the run before a second Ctrl-C, which
    # then killed the exiting run (seen under load: exit status -2).
    deaf_now = tmp_path / "deaf"
    deaf.cells[1].source = (
        "import pathlib, signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        f"pathlib.Path({str(deaf_now)!r}).touch()\n" + deaf.cells[1].source
    )
    nbformat.write(deaf, notebooks / "two.ipynb")
    out = tmp_path / "reports"
    status, written, seconds = _interrupted_run(
        notebooks, out, tmp_path / "log.txt", kill_after=kill_after, presses=presses, ready=deaf_now
    )
    assert status == 1, written
    assert seconds < within  # not the 120 s it sleeps, nor kill_after
    assert "two failed (KeyboardInterrupt" in written and "not started: three" in written
    assert (out / ".two.failed" / "two.ipynb").is_file()
    assert not (out / "two").exists()


def test_notebooks_logging_at_once_never_run_their_lines_together():
    # print writes a line, then its end: two threads printing at once can join their lines
    written = []

    def like_print(message):
        written.append(message)
        time.sleep(0.0005)
        written.append("\n")

    log = batch._one_at_a_time(like_print)
    threads = [threading.Thread(target=lambda n=n: [log(f"{n}: {i}") for i in range(40)]) for n in ("one", "two")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted("".join(written).splitlines()) == sorted(f"{n}: {i}" for n in ("one", "two") for i in range(40))


@pytest.mark.parametrize("at_once", [0, -1, 1.5, True, "2"])
def test_at_once_is_a_positive_whole_number(at_once, tmp_path):
    with pytest.raises(TailoredBenchError, match="at_once"):
        reproduce(["gsm8k"], output_dir=tmp_path, at_once=at_once, log=print)


def test_the_cli_refuses_a_bad_at_once_in_one_line(capsys, tmp_path):
    from tailoredbench.cli import main

    assert main(["reproduce", "--at-once", "0", "--output-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--at-once" in err[0]


def test_no_kernel_socket_folder_is_left(notebooks, tmp_path):
    import tempfile

    before = set(os.listdir(tempfile.gettempdir()))
    reproduce(["one"], notebooks_dir=notebooks, output_dir=tmp_path / "reports", log=print)
    left = {n for n in set(os.listdir(tempfile.gettempdir())) - before if n.startswith("tailoredbench-kernel-")}
    assert not left


def test_a_kernel_is_shut_down_without_an_interrupt():
    """jupyter_client sends SIGINT to every kernel it shuts down; reproduce's kernels, shut down
    after their last cell with nothing to interrupt, are not sent it (an idle kernel it reached at
    the wrong moment printed an error on the console)."""
    import shutil
    import tempfile
    from types import SimpleNamespace

    from jupyter_core.utils import run_sync

    job = SimpleNamespace(kernel=None)
    sockets = tempfile.mkdtemp(prefix="tailoredbench-kernel-")  # short: a socket's path has a length limit
    kernel = batch._kernel_manager(job, sockets)(kernel_name="python3")
    sent = []
    try:
        run_sync(kernel.start_kernel)()
        assert job.kernel is kernel
        send = kernel._async_signal_kernel

        async def recorded(signum):
            sent.append(signum)
            await send(signum)

        kernel._async_signal_kernel = recorded
        run_sync(kernel.shutdown_kernel)()
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
    assert signal.SIGINT not in sent
    assert not run_sync(kernel.is_alive)()


WORKERS = """\
import json, os, pathlib
import psutil
from joblib import Parallel, delayed
Parallel(n_jobs=2)(delayed(os.getpid)() for _ in range(4))
pids = [os.getpid(), *(child.pid for child in psutil.Process().children(recursive=True))]
pathlib.Path(output_dir, "pids.json").write_text(json.dumps(pids))
"""


@pytest.mark.notebook
def test_a_kernel_that_started_workers_leaves_no_process_behind(notebooks, tmp_path):
    """The kernel is sent SIGTERM after :data:`batch.SHUTDOWN_WAIT` / 2 seconds (its workers'
    resource trackers ignore SIGTERM); it, its workers and their trackers all end."""
    import psutil

    nb = nbformat.read(notebooks / "one.ipynb", as_version=4)
    nb.cells[1] = nbformat.v4.new_code_cell(WORKERS)
    nbformat.write(nb, notebooks / "one.ipynb")
    reproduce(["one"], notebooks_dir=notebooks, output_dir=tmp_path / "reports", log=print)
    pids = json.loads((tmp_path / "reports" / "one" / "pids.json").read_text())
    assert len(pids) >= 3  # the kernel, its workers and at least one resource tracker

    def running(pid):
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:  # ended, perhaps between two looks
            return False

    deadline = time.monotonic() + 10
    while (alive := [p for p in pids if running(p)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive
