"""reproduce: staging folders, the atomic replace, the order of notebooks, failures and Ctrl-C.

The notebooks here are synthetic: each records what it saw, sleeps, and can be told to fail.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import nbformat
import pytest

from conftest import ROOT
from tailoredbench import batch
from tailoredbench.batch import NotebookFailed, reproduce
from tailoredbench.errors import TailoredBenchError

RECORD = """\
import json, os, pathlib, signal, time
if deaf:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
if pid_file:
    pathlib.Path(pid_file).write_text(str(os.getpid()))
assert not fail, "told to fail"
seen = {"output_dir": output_dir, "cwd": os.getcwd(), "environ": dict(os.environ), "start": time.time()}
time.sleep(seconds)
pathlib.Path(output_dir, "seen.json").write_text(json.dumps({**seen, "end": time.time()}))
"""
LAST = "pathlib.Path(output_dir, 'last.txt').write_text('the last cell ran')"


@pytest.fixture
def notebooks(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    for name in ("one", "two", "three"):
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
        parameters = nbformat.v4.new_code_cell(
            "output_dir = 'out'\nseconds = 0.0\nfail = False\ndeaf = False\npid_file = ''"
        )
        parameters.metadata["tags"] = ["parameters"]
        nb.cells = [parameters, nbformat.v4.new_code_cell(RECORD), nbformat.v4.new_code_cell(LAST)]
        nbformat.write(nb, folder / f"{name}.ipynb")
    return folder


def seen(out, name):
    return json.loads((out / name / "seen.json").read_text())


@pytest.mark.notebook
def test_a_notebook_runs_into_its_staging_folder_which_then_replaces_the_report(notebooks, tmp_path, monkeypatch):
    out, lines = tmp_path / "reports", []
    (out / "one").mkdir(parents=True)
    (out / "one" / "old.txt").write_text("from the last run")
    monkeypatch.setattr(batch, "reproducible_numerics", lambda: {"TAILOREDBENCH_PIN": "pinned"})
    done = reproduce(
        ["one"], notebooks_dir=notebooks, output_dir=out, force=True, run_cache=tmp_path / "c", log=lines.append
    )
    assert done == [out / "one" / "one.ipynb"]
    record = seen(out, "one")
    assert record["output_dir"] == os.path.join("..", "reports", ".one.partial")  # written while staged
    assert record["cwd"] == str(notebooks)
    # the kernel's environment: the run cache's folder and the pinned numerics, not this process's
    assert record["environ"]["TAILOREDBENCH_RUN_CACHE"] == str(tmp_path / "c")
    assert record["environ"]["TAILOREDBENCH_PIN"] == "pinned" and "TAILOREDBENCH_PIN" not in os.environ
    assert sorted(p.name for p in (out / "one").iterdir()) == ["last.txt", "one.ipynb", "seen.json"]  # replaced whole
    assert sorted(p.name for p in out.iterdir()) == ["one"]  # no staging folder left
    text = (out / "one" / "one.ipynb").read_text()
    assert ".partial" not in text and f'"{tmp_path}' not in text  # its record of paths: the report's, relative
    assert nbformat.reads(text, 4).metadata.papermill.parameters.output_dir == os.path.join("..", "reports", "one")
    assert lines[0] == f"one (1/1): running into {out / 'one'}"
    assert any(line.startswith("one: 2/3 code cells,") and "elapsed, about" in line for line in lines)
    assert lines[-2].startswith("one: done in ") and lines[-1].startswith("1 notebook(s) in ")


def test_a_report_made_with_other_parameters_is_replaced_only_with_force(notebooks, tmp_path):
    out = tmp_path / "reports"
    (out / "two").mkdir(parents=True)
    (out / "two" / "mine.txt").write_text("keep")
    with pytest.raises(TailoredBenchError, match="--force"):
        reproduce(["one", "two"], notebooks_dir=notebooks, output_dir=out, log=print)
    assert sorted(p.name for p in out.iterdir()) == ["two"]  # nothing ran, not even one
    assert (out / "two" / "mine.txt").read_text() == "keep"


@pytest.mark.notebook
def test_a_notebook_runs_after_those_it_reads(notebooks, tmp_path, monkeypatch):
    monkeypatch.setattr(batch, "AFTER", {"one": ("three",)})
    out, lines = tmp_path / "reports", []
    done = reproduce(["one", "two", "three"], notebooks_dir=notebooks, output_dir=out, log=lines.append)
    assert [line.split(" (")[0] for line in lines if "running into" in line] == ["two", "three", "one"]
    assert seen(out, "three")["end"] <= seen(out, "one")["start"]  # one at a time
    assert done == [out / name / f"{name}.ipynb" for name in ("two", "three", "one")]


@pytest.mark.notebook
def test_a_failure_leaves_the_report_as_it_was_and_stops_the_run(notebooks, tmp_path):
    out = tmp_path / "reports"
    (out / "one").mkdir(parents=True)
    (out / "one" / "mine.txt").write_text("keep")
    with pytest.raises(NotebookFailed) as failed:
        reproduce(["one", "two"], parameters={"fail": True}, notebooks_dir=notebooks, output_dir=out, force=True)
    message = str(failed.value)
    assert message.startswith("one failed (") and "told to fail" in message
    assert f"{out / 'one'} is unchanged; the failed run is in {out / '.one.failed'}; not started: two" in message
    assert sorted(p.name for p in (out / "one").iterdir()) == ["mine.txt"]
    assert (out / ".one.failed" / "one.ipynb").is_file() and (out / ".one.failed" / "console.log").is_file()
    assert not (out / ".one.partial").exists() and not (out / "two").exists()


def test_no_kernel_socket_folder_is_left(notebooks, tmp_path, monkeypatch):
    # a private temporary folder, short enough for socket paths: other runs on the machine make folders too
    private = tempfile.mkdtemp(prefix="tb-")
    try:
        monkeypatch.setenv("TMPDIR", private)
        reproduce(["one"], notebooks_dir=notebooks, output_dir=tmp_path / "reports", log=print)
        assert not [n for n in os.listdir(private) if n.startswith("tailoredbench-kernel-")]
    finally:
        shutil.rmtree(private, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie has ended
        return stat.read().split(")")[-1].split()[0] != "Z"


@pytest.mark.notebook
@pytest.mark.parametrize("deaf", [False, True], ids=["kernel", "kernel-deaf-to-sigint"])
def test_ctrl_c_stops_the_kernel_removes_the_staging_folder_and_says_so_in_one_line(notebooks, tmp_path, deaf):
    out, pid_file, log = tmp_path / "reports", tmp_path / "kernel.pid", tmp_path / "log.txt"
    (out / "one").mkdir(parents=True)
    (out / "one" / "mine.txt").write_text("keep")
    parameters = {"seconds": 120.0, "deaf": deaf, "pid_file": str(pid_file)}
    script = (
        "import signal, sys\n"
        # Ctrl-C as a terminal delivers it, even where the tests run in a shell's background job
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "from tailoredbench.batch import reproduce\n"
        "try:\n"
        f"    reproduce(['one', 'two'], parameters={parameters!r}, notebooks_dir={str(notebooks)!r},\n"
        f"              output_dir={str(out)!r}, force=True, log=lambda m: print(m, flush=True))\n"
        "except KeyboardInterrupt:\n"
        "    sys.exit(130)\n"
    )
    with open(log, "w") as written:  # a file: the child's kernel would hold a pipe open
        child = subprocess.Popen(
            [sys.executable, "-c", script], stdout=written, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 120
        while not pid_file.exists() or "one: 1/3 code cells" not in log.read_text():
            assert child.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        time.sleep(0.5)  # into the sleeping cell
        began = time.monotonic()
        child.send_signal(signal.SIGINT)
        status = child.wait(timeout=60)
        seconds = time.monotonic() - began
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    written = log.read_text()
    assert status == 130, written
    assert seconds < 15  # not the 120 s it sleeps
    assert written.splitlines()[-1] == f"interrupted: one stopped; {out / 'one'} is as it was"
    assert "Traceback" not in written and "two (2/2)" not in written
    assert sorted(p.name for p in out.iterdir()) == ["one"]  # neither staging nor failed run left
    assert sorted(p.name for p in (out / "one").iterdir()) == ["mine.txt"]
    kernel = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _alive(kernel) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(kernel)


@pytest.mark.notebook
def test_a_failure_in_the_caller_stops_the_notebook_and_its_kernel(notebooks, tmp_path):
    # as a test's time limit does: an exception raised in the caller while a cell runs
    out, pid_file = tmp_path / "reports", tmp_path / "kernel.pid"
    (out / "one").mkdir(parents=True)
    (out / "one" / "mine.txt").write_text("keep")

    def log(line):
        if "one: 1/3 code cells" in line:
            deadline = time.monotonic() + 60
            while not pid_file.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            raise RuntimeError("the caller gave up")

    parameters = {"seconds": 120.0, "pid_file": str(pid_file)}
    with pytest.raises(RuntimeError, match="the caller gave up"):
        reproduce(["one"], parameters=parameters, notebooks_dir=notebooks, output_dir=out, force=True, log=log)
    kernel, deadline = int(pid_file.read_text()), time.monotonic() + 10
    while _alive(kernel) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(kernel)
    assert sorted(p.name for p in out.iterdir()) == ["one"]  # no staging folder left
    assert sorted(p.name for p in (out / "one").iterdir()) == ["mine.txt"]


def test_an_output_folder_that_is_a_file_is_one_line(tmp_path, capsys):
    from tailoredbench.cli import main

    (tmp_path / "afile").write_text("mine")
    code = main(["reproduce", "--notebook", "gsm8k", "--output-dir", str(tmp_path / "afile")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "not a folder" in err
    assert (tmp_path / "afile").read_text() == "mine"


def test_without_its_notebooks_the_package_runs_and_reproduce_says_why(tmp_path):
    """As installed from a wheel: the package alone, no notebooks beside it."""
    shutil.copytree(ROOT / "tailoredbench", tmp_path / "tailoredbench", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}

    def run(*args):
        command = [sys.executable, "-m", "tailoredbench", *args]
        return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)

    assert run("simulate", "--help").returncode == 0
    refused = run("reproduce")
    assert refused.returncode == 2 and "catalogue.toml is missing" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
