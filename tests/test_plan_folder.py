"""A plan folder is one transaction: one command at a time, and a step's files all or none."""

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tailoredbench.cli import main
from tailoredbench.datasets.lm_eval import samples_argument
from tailoredbench.errors import TailoredBenchError
from tailoredbench.workflow import NSet, plan_g_set, plan_n_set, read_state
from tailoredbench.workflow import benchmark as workflow

ROOT = Path(__file__).resolve().parents[1]
IN_USE = "in use by another command"


@pytest.fixture(scope="module")
def arc():
    from tailoredbench import load_benchmark

    return load_benchmark("arc_challenge")


def write_samples(folder: Path, arc, doc_ids=None, row=0, stamp="2025-01-01T00-00-00") -> Path:
    """lm-eval samples of target ``row`` on ``doc_ids`` (default: every item, so any G-set is covered)."""
    values = arc.target.values[row]
    doc_ids = range(arc.n_items) if doc_ids is None else doc_ids
    path = folder / "model-a" / f"samples_arc_challenge_{stamp}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"doc_id": d, "acc_norm": float(values[d])}) + "\n" for d in doc_ids))
    return path


def contents(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def consistent(folder: Path):
    """The folder's state, checked against the files lm-eval is given (independently of the package's own check)."""
    state = read_state(folder)
    assert json.loads((folder / "g_set.json").read_text()) == samples_argument(state.task, state.g_set_doc_ids)
    if isinstance(state.step, NSet):
        assert json.loads((folder / "n_set.json").read_text()) == samples_argument(state.task, state.step.n_set_doc_ids)
    else:
        assert not (folder / "n_set.json").exists()
    assert not list(folder.glob(".*")), "a temporary file was left"
    return state


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# --- two commands on one folder --------------------------------------------------------------


def race(monkeypatch, pause_in: str, first, second):
    """Run ``first`` in a thread until it is inside ``workflow.<pause_in>``, then ``second``; both outcomes."""
    entered, release = threading.Event(), threading.Event()
    real = getattr(workflow, pause_in)

    def paused(*args, **kwargs):
        if threading.current_thread().name == "first":
            entered.set()
            release.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(workflow, pause_in, paused)
    outcome = {}

    def run(key, step):
        try:
            outcome[key] = step()
        except Exception as err:
            outcome[key] = err

    thread = threading.Thread(target=run, args=("first", first), name="first", daemon=True)
    thread.start()
    try:
        assert entered.wait(60)
        run("second", second)
    finally:
        release.set()
        thread.join(120)
    assert not thread.is_alive()
    return outcome["first"], outcome["second"]


def test_a_second_n_set_plan_while_one_runs_is_refused(arc, tmp_path, monkeypatch):
    plan = tmp_path / "plan"
    plan_g_set("arc_challenge", plan)
    samples = [write_samples(tmp_path, arc)]
    first, second = race(
        monkeypatch, "fitted", lambda: plan_n_set(plan, samples, 30), lambda: plan_n_set(plan, samples, 35)
    )
    assert isinstance(second, TailoredBenchError) and str(second) == f"{plan}: {IN_USE}; try again when it has ended"
    assert not isinstance(first, Exception) and consistent(plan) == first and first.step.budget == 30


def test_two_g_set_plans_into_one_new_folder(tmp_path, monkeypatch):
    plan = tmp_path / "new" / "plan"
    first, second = race(
        monkeypatch,
        "load_benchmark",
        lambda: plan_g_set("arc_challenge", plan, seed=0),
        lambda: plan_g_set("arc_challenge", plan, seed=1),
    )
    assert isinstance(second, TailoredBenchError) and str(second).startswith(f"{plan}: {IN_USE}")
    assert not isinstance(first, Exception) and consistent(plan) == first and first.seed == 0


@pytest.mark.slow
def test_an_estimate_during_a_plan_step_is_refused(arc, tmp_path, monkeypatch):
    plan = tmp_path / "plan"
    plan_g_set("arc_challenge", plan)
    samples = [write_samples(tmp_path, arc)]
    plan_n_set(plan, samples, 30)
    _, second = race(
        monkeypatch,
        "fitted",
        lambda: plan_n_set(plan, samples, 35, force=True),
        lambda: workflow.estimate(plan, samples),
    )
    assert isinstance(second, TailoredBenchError) and IN_USE in str(second)
    assert workflow.estimate(plan, samples)["budget"] == 35


# --- a step that fails half-way --------------------------------------------------------------


@pytest.fixture
def full_at(monkeypatch):
    """``full_at(folder, n)``: the ``n``-th file written into ``folder`` (counting from 1) meets a full disk."""
    real = tempfile.mkstemp

    def arm(folder: Path, n: int):
        count = [0]

        def mkstemp(*args, dir=None, **kwargs):
            handle, name = real(*args, dir=dir, **kwargs)
            if dir is not None and Path(dir).resolve() == folder.resolve():
                count[0] += 1
                if count[0] == n:
                    os.close(handle)
                    return os.open("/dev/full", os.O_WRONLY), name
            return handle, name

        monkeypatch.setattr(tempfile, "mkstemp", mkstemp)

    return arm


def test_a_full_disk_between_the_two_files_of_step_1_leaves_no_half_plan(tmp_path, full_at, capsys, monkeypatch):
    plan = tmp_path / "plan"
    full_at(plan, 2)
    assert main(["plan", "--benchmark", "arc_challenge", "--out", str(plan)]) == 2
    err = one_line(capsys.readouterr().err)
    assert "No space left on device" in err and f"{plan}{os.sep}" in err and ".tmp" not in err
    assert not plan.exists() or not list(plan.iterdir())  # neither file: the step did not happen
    monkeypatch.undo()
    assert main(["plan", "--benchmark", "arc_challenge", "--out", str(plan)]) == 0  # no --force needed
    consistent(plan)


def test_a_full_disk_during_a_forced_step_2_keeps_the_old_plan(arc, tmp_path, full_at, capsys):
    plan = tmp_path / "plan"
    plan_g_set("arc_challenge", plan)
    samples = write_samples(tmp_path, arc)
    old = plan_n_set(plan, [samples], 30)
    before = contents(plan)
    full_at(plan, 2)
    args = ["plan", "--state", str(plan), "--samples", str(samples), "--budget", "35", "--force"]
    assert main(args) == 2
    assert "No space left on device" in one_line(capsys.readouterr().err)
    assert contents(plan) == before and consistent(plan) == old


def fail_when_placing(name: str, monkeypatch, how=None):
    """Renames and links that put ``name`` in place fail (or run ``how``): a crash between a step's files."""

    def wrap(real):
        def placing(src, dst, *args, **kwargs):
            if Path(dst).name == name:
                if how:
                    how()
                raise OSError(5, "Input/output error", str(dst))
            return real(src, dst, *args, **kwargs)

        return placing

    monkeypatch.setattr(os, "replace", wrap(os.replace))
    monkeypatch.setattr(os, "link", wrap(os.link))


@pytest.mark.slow
def test_a_forced_step_2_stopped_before_its_state_is_named_as_interrupted(arc, tmp_path, monkeypatch, capsys):
    plan = tmp_path / "plan"
    plan_g_set("arc_challenge", plan)
    samples = write_samples(tmp_path, arc)
    plan_n_set(plan, [samples], 30)
    fail_when_placing("state.json", monkeypatch)
    assert main(["plan", "--state", str(plan), "--samples", str(samples), "--budget", "35", "--force"]) == 2
    capsys.readouterr()
    monkeypatch.undo()
    check_interrupted_step_2(plan, samples, capsys)


def check_interrupted_step_2(plan, samples, capsys):
    """A plan whose N-set was being replaced is refused as interrupted until a forced step 2 redoes it."""
    for args in (
        ["estimate", "--state", str(plan), "--samples", str(samples)],
        ["plan", "--state", str(plan), "--samples", str(samples), "--budget", "30"],
        ["plan", "--state", str(plan), "--samples", str(samples), "--precision", "0.05"],
    ):
        capsys.readouterr()
        assert main(args) == 2
        err = one_line(capsys.readouterr().err)
        assert f"{plan}: interrupted" in err and "--force" in err and IN_USE not in err, err
    assert main(["plan", "--state", str(plan), "--samples", str(samples), "--budget", "35", "--force"]) == 0
    assert consistent(plan).step.budget == 35
    assert main(["estimate", "--state", str(plan), "--samples", str(samples)]) == 0


KILLED = """
import os, signal, sys
from pathlib import Path

def dies(real):
    def placing(src, dst, *args, **kwargs):
        if Path(dst).name == "state.json":
            os.kill(os.getpid(), signal.SIGKILL)
        return real(src, dst, *args, **kwargs)
    return placing

os.replace, os.link = dies(os.replace), dies(os.link)
from tailoredbench.cli import main
sys.exit(main(sys.argv[1:]))
"""


def killed_before_the_state(*args: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", KILLED, *args], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == -9, done.stderr


@pytest.mark.slow
def test_a_step_1_killed_between_its_files_is_named_and_redone_with_force(tmp_path, capsys):
    plan = tmp_path / "plan"
    killed_before_the_state("plan", "--benchmark", "arc_challenge", "--out", str(plan))
    assert (plan / "g_set.json").exists() and not (plan / "state.json").exists()
    for args in (
        ["plan", "--benchmark", "arc_challenge", "--out", str(plan)],
        ["plan", "--state", str(plan), "--samples", "x.jsonl", "--budget", "30"],
    ):
        capsys.readouterr()
        assert main(args) == 2
        err = one_line(capsys.readouterr().err)
        assert f"{plan}: interrupted" in err and "--force" in err and IN_USE not in err, err
    assert main(["plan", "--benchmark", "arc_challenge", "--out", str(plan), "--force"]) == 0
    consistent(plan)


@pytest.mark.slow
def test_a_forced_step_2_killed_between_its_files_is_named_and_redone_with_force(arc, tmp_path, capsys):
    plan = tmp_path / "plan"
    plan_g_set("arc_challenge", plan)
    samples = write_samples(tmp_path, arc)
    plan_n_set(plan, [samples], 30)
    killed_before_the_state("plan", "--state", str(plan), "--samples", str(samples), "--budget", "35", "--force")
    check_interrupted_step_2(plan, samples, capsys)


# --- writers racing on one folder --------------------------------------------------------------

STEPS = st.one_of(
    st.tuples(st.just("g_set"), st.sampled_from([0, 1]), st.booleans()),
    st.tuples(st.just("n_set"), st.sampled_from([25, 30, 35]), st.booleans()),
)


def slowed(real, seconds: float):
    """``real`` (a rename or a link), ``seconds`` later: a slow disk widens the gap between a step's files."""

    def placing(*args, **kwargs):
        time.sleep(seconds)
        return real(*args, **kwargs)

    return placing


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(st.tuples(STEPS, st.sampled_from([0.0, 0.002, 0.01, 0.03])), min_size=2, max_size=4),
    slow=st.sampled_from([0.0, 0.003, 0.01]),
)
def test_writers_racing_on_one_folder_leave_one_complete_plan(arc, steps, slow):
    with (
        tempfile.TemporaryDirectory() as scratch,
        mock.patch("os.replace", slowed(os.replace, slow)),
        mock.patch("os.link", slowed(os.link, slow)),
    ):
        plan = Path(scratch) / "plan"
        samples = [write_samples(Path(scratch), arc)]
        plan_g_set("arc_challenge", plan)
        old = plan_n_set(plan, samples, 30)
        start = threading.Barrier(len(steps), timeout=60)
        outcomes: list = [None] * len(steps)

        def run(index, step, delay):
            start.wait()
            time.sleep(delay)
            kind, value, force = step
            try:
                if kind == "g_set":
                    outcomes[index] = plan_g_set("arc_challenge", plan, seed=value, force=force)
                else:
                    outcomes[index] = plan_n_set(plan, samples, value, force=force)
            except TailoredBenchError as err:
                outcomes[index] = err

        threads = [threading.Thread(target=run, args=(i, s, d), daemon=True) for i, (s, d) in enumerate(steps)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        assert not any(thread.is_alive() for thread in threads)
        done = [o for o in outcomes if not isinstance(o, Exception)]
        for refused in (o for o in outcomes if isinstance(o, Exception)):
            message = str(refused)
            assert len(message.splitlines()) == 1 and message.startswith(str(plan))
            assert any(m in message for m in (IN_USE, "not empty", "already holds an N-set")), message
        final = consistent(plan)
        assert final in done if done else final == old


# --- two real commands at once -------------------------------------------------------------------


def together(*commands: list[str]) -> list[subprocess.CompletedProcess]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, "env": env}
    started = [subprocess.Popen([sys.executable, "-m", "tailoredbench", *c], **pipes) for c in commands]
    out = []
    for process in started:
        stdout, stderr = process.communicate(timeout=300)
        out.append(subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr))
    return out


@pytest.mark.slow
def test_two_real_plan_commands_at_once_on_one_folder(arc, tmp_path):
    plan = tmp_path / "plan"
    steps = together(*(["plan", "--benchmark", "arc_challenge", "--out", str(plan), "--seed", s] for s in "01"))
    assert sorted(s.returncode for s in steps) == [0, 2], [s.stderr for s in steps]
    refused = next(s for s in steps if s.returncode == 2)
    assert str(plan) in one_line(refused.stderr)
    winner = next(s for s in steps if s.returncode == 0)
    assert consistent(plan).seed == int(winner.args[-1])

    samples = str(write_samples(tmp_path, arc))
    steps = together(*(["plan", "--state", str(plan), "--samples", samples, "--budget", b] for b in ("30", "35")))
    assert sorted(s.returncode for s in steps) == [0, 2], [s.stderr for s in steps]
    refused = next(s for s in steps if s.returncode == 2)
    assert str(plan) in one_line(refused.stderr) and refused.stdout == ""
    winner = next(s for s in steps if s.returncode == 0)
    state = consistent(plan)
    assert state.step.budget == int(winner.args[-1])
    assert f"{len(state.step.n_set_doc_ids)} more items" in winner.stdout
