"""The command line: JSON output and one-line errors with exit code 2."""

import inspect
import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import numpy as np
import pytest

from tailoredbench import SPECS, TailoredBench, TailoredBenchError, simulate
from tailoredbench.cli import _build_parser, main

ROOT = Path(__file__).resolve().parents[1]

REQUIRED = {
    "method",
    "benchmark",
    "budget",
    "runs",
    "n_source",
    "n_target",
    "n_items",
    "mae",
    "mae_se",
    "kendall_tau",
    "kendall_tau_se",
    "seconds_per_run",
}


def test_simulate_json_through_python_dash_m():
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "tailoredbench",
            "simulate",
            "--benchmark",
            "gsm8k",
            "--method",
            "tailoredbench",
            "--budget",
            "20",
            "--runs",
            "2",
            "--seed",
            "0",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    record = json.loads(out.stdout)
    assert REQUIRED <= set(record)
    assert (record["n_source"], record["n_target"], record["n_items"]) == (75, 75, 1319)
    assert 0.0 < record["mae"] < 0.06


def test_same_numbers_for_any_number_of_jobs(capsys):
    args = ["simulate", "--benchmark", "gsm8k", "--budget", "15", "--g-size", "5", "--runs", "3", "--json"]
    assert main([*args, "--jobs", "1"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert main([*args, "--jobs", "2"]) == 0
    two = json.loads(capsys.readouterr().out)
    assert (one["mae"], one["kendall_tau"]) == (two["mae"], two["kendall_tau"])


def _matrix(tmp_path, values, name="m.npy"):
    path = tmp_path / name
    np.save(path, np.asarray(values, dtype=float))
    return str(path)


def bad_inputs(tmp_path):
    good = (np.random.default_rng(0).random((10, 40)) < 0.5).astype(float)
    with_nan = good.copy()
    with_nan[2, 3] = np.nan
    two = good.copy()
    two[0, 0] = 2
    corrupt = tmp_path / "corrupt.npy"
    corrupt.write_bytes(b"\x93NUMPY garbage")
    return {
        "unknown benchmark": (["--benchmark", "mmlu"], "unknown benchmark"),
        "NaN": (["--matrix", _matrix(tmp_path, with_nan)], "NaN"),
        "non-binary": (["--matrix", _matrix(tmp_path, two, "two.npy")], "non-binary"),
        "wrong shape": (["--matrix", _matrix(tmp_path, good[0], "flat.npy")], "2-D"),
        "corrupt file": (["--matrix", str(corrupt)], "corrupt.npy"),
        "missing file": (["--matrix", str(tmp_path / "nope.npy")], "no such file"),
        "budget too large": (["--benchmark", "gsm8k", "--budget", "2000"], "exceeds the item count"),
        "budget within G-set": (["--benchmark", "gsm8k", "--budget", "10"], "must exceed the G-set"),
        "too few models": (["--matrix", _matrix(tmp_path, good[:3], "three.npy"), "--budget", "20"], "at least 4"),
        "unknown method": (["--benchmark", "gsm8k", "--method", "oracle"], "unknown method"),
        "unknown distance": (["--benchmark", "gsm8k", "--distance", "jaccard"], "unknown distance"),
        "sample within budget": (["--benchmark", "gsm8k", "--sample", "30"], "must exceed the largest budget"),
        "sample for a baseline": (["--benchmark", "gsm8k", "--method", "random", "--sample", "500"], "no option"),
        "scheduler without dask": (["--benchmark", "gsm8k", "--scheduler", "tcp://x:1"], "dask backend only"),
    }


@pytest.mark.parametrize(
    "case",
    [
        "unknown benchmark",
        "NaN",
        "non-binary",
        "wrong shape",
        "corrupt file",
        "missing file",
        "budget too large",
        "budget within G-set",
        "too few models",
        "unknown method",
        "unknown distance",
        "sample within budget",
        "sample for a baseline",
        "scheduler without dask",
    ],
)
def test_bad_input_is_one_line_and_exit_code_2(case, tmp_path, capsys):
    args, message = bad_inputs(tmp_path)[case]
    assert main(["simulate", *args, "--runs", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err and "Traceback" not in err


def test_bad_flag_values_exit_2(capsys):
    assert main(["simulate", "--benchmark", "gsm8k", "--runs", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "tailoredbench: error: argument --runs: must be at least 1: 0"


@pytest.mark.parametrize("benchmark", ["gsm8k", "arc_challenge", "hellaswag", "winogrande", "pope", "hellaswag_full12"])
def test_simulate_every_benchmark(benchmark, capsys):
    args = [
        "simulate",
        "--benchmark",
        benchmark,
        "--budget",
        "20",
        "--runs",
        "1",
        "--json",
        "--no-interval",
    ]
    if SPECS[benchmark].split != "as given":  # GSM8K comes split as in the paper: no subsample
        args += ["--max-models", "60"]
    assert main(args) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["benchmark"] == benchmark and record["n_target"] >= 2
    assert 0.0 <= record["mae"] < 0.3
    assert record["g_size"] == inspect.signature(simulate).parameters["g_size"].default  # the CLI's is simulate's


# --- repeated options, Ctrl-C, messages ------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        *(
            (
                ["plan", "--state", "plan", "--samples", "s.jsonl", "--budget", "30", flag, value],
                f"{flag} goes with plan --benchmark",
            )
            for flag, value in (
                ("--metric", "acc"),
                ("--task", "t"),
                ("--g-size", "5"),
                ("--distance", "cosine"),
                ("--out", "o"),
            )
        ),
        (
            ["plan", "--benchmark", "arc_challenge", "--out", "p", "--samples", "s.jsonl"],
            "--samples goes with plan --state",
        ),
        (["plan", "--benchmark", "pope", "--out", "p"], "pope has no lm-eval task here: give --task"),
        (["simulate", "--benchmark", "gsm8k", "--split", "random"], "--split applies to --matrix"),
        (["simulate", "--benchmark", "gsm8k", "--interval", "0.5", "--no-interval"], "not both"),
        (["estimate", "--state", "", "--samples", "s.jsonl"], "--state is empty"),
    ],
)
def test_an_option_that_would_be_ignored_is_refused(args, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert not (tmp_path / "p").exists()


def test_one_run_prints_no_standard_error(capsys):
    assert main(["simulate", "--benchmark", "pope", "--runs", "1", "--no-interval"]) == 0
    out = capsys.readouterr().out
    assert "±" not in out and "s/run, 1 run)" in out


def test_a_repeated_list_option_adds_up():
    parse = _build_parser().parse_args
    base = ["simulate", "--benchmark", "gsm8k"]
    assert parse([*base, "--budget", "15", "--budget", "20"]).budget == parse([*base, "--budget", "15", "20"]).budget
    assert parse([*base, "--budget", "15", "--budget", "20", "25"]).budget == [15, 20, 25]
    assert parse([*base, "--method", "random", "--method", "tailoredbench"]).method == ["random", "tailoredbench"]
    assert parse([*base, "--method", "random"]).method == ["random"]  # the default is replaced, not added to
    assert parse([*base]).method == ["tailoredbench"]


@pytest.mark.parametrize(
    "args",
    [
        ["plan", "--state", "p", "--samples", "s.jsonl", "--budget", "15", "--budget", "20"],
        ["simulate", "--benchmark", "gsm8k", "--seed", "1", "--seed", "2"],
        ["simulate", "--benchmark", "gsm8k", "--benchmark", "pope"],
        ["plan", "--benchmark", "arc_challenge", "--out", "a", "--out", "b"],
    ],
)
def test_a_repeated_single_option_is_refused_in_one_line(args, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # were it run, nothing lands in the working tree
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    option = args[-2]
    assert len(err.splitlines()) == 1 and f"argument {option}: given twice" in err, err


def test_ctrl_c_in_a_command_is_one_line_and_130(monkeypatch, capsys):
    from tailoredbench import cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "load_benchmark", interrupted)
    assert main(["simulate", "--benchmark", "gsm8k", "--runs", "1"]) == 130
    assert capsys.readouterr().err == "tailoredbench: interrupted\n"


def test_ctrl_c_in_a_held_block_waits_for_its_end():
    from tailoredbench.errors import ctrl_c_held

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        ran = []
        with pytest.raises(KeyboardInterrupt), ctrl_c_held():
            signal.raise_signal(signal.SIGINT)
            ran.append("the rest of the block")
        assert ran == ["the rest of the block"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)


def console_script() -> str:
    """What the installed ``tailoredbench`` command runs: its entry point from pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    module, function = project["project"]["scripts"]["tailoredbench"].split(":")
    return f"import sys\nfrom {module} import {function}\nsys.exit({function}())\n"


def wait_for_library(pid: int, name: str, timeout: float = 60.0) -> None:
    """Return once process ``pid`` has loaded a shared library whose path holds ``name`` (Linux), or after a second."""
    maps, end = Path(f"/proc/{pid}/maps"), time.monotonic() + (timeout if Path("/proc/self/maps").exists() else 1.0)
    while time.monotonic() < end:
        try:
            if name in maps.read_text():
                return
        except OSError:
            pass
        time.sleep(0.005)


@pytest.mark.slow
@pytest.mark.parametrize("launcher", ["python -m", "console script"])
@pytest.mark.parametrize(
    ("library", "then", "empty_numba_cache"),
    [("numpy", 0.0, False), ("llvmlite", 1.5, False), ("llvmlite", 3.5, True)],
    ids=["while importing", "while running", "while numba compiles"],
)
def test_ctrl_c_at_any_moment_is_one_line_and_130(launcher, library, then, empty_numba_cache, tmp_path):
    start = ["-m", "tailoredbench"] if launcher == "python -m" else ["-c", console_script()]
    args = ["simulate", "--benchmark", "gsm8k", "--runs", "200", "--no-interval"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if empty_numba_cache:  # numba compiles, calling back from C, where Python would drop the interrupt
        env["NUMBA_CACHE_DIR"] = str(tmp_path)
    # as from a terminal: a suite started in the background would hand its children Ctrl-C ignored
    terminal = {"preexec_fn": lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)}
    process = subprocess.Popen([sys.executable, *start, *args], stderr=subprocess.PIPE, text=True, env=env, **terminal)
    wait_for_library(process.pid, library)  # numpy: the command's modules are loading; llvmlite (numba's): loaded
    time.sleep(then)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130 and err == "tailoredbench: interrupted\n", (process.returncode, err)


def test_the_entry_points_start_without_the_heavy_modules():
    code = "import sys, tailoredbench.__main__; print(sorted({'numpy', 'pandas', 'numba'} & set(sys.modules)))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env, timeout=120
    )
    assert done.stdout.strip() == "[]"
    assert console_script().startswith("import sys\nfrom tailoredbench.__main__ import main\n")


def test_a_max_budget_beyond_the_items_says_so(tmp_path, capsys):
    values = (np.random.default_rng(0).random((20, 40)) < 0.5).astype(float)
    args = ["simulate", "--matrix", _matrix(tmp_path, values), "--precision", "0.05", "--runs", "1"]
    assert main([*args, "--max-budget", "1000"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "tailoredbench: error: the maximum budget 1000 exceeds the item count 40", err
    with pytest.raises(TailoredBenchError, match=r"^the maximum budget 1000 exceeds the item count 40$"):
        TailoredBench(g_size=5).fit(values).stopping_rule(0.05, max_budget=1000)


@pytest.mark.slow
def test_a_failed_download_is_one_line(tmp_path):
    env = {
        **os.environ,
        "TAILOREDBENCH_DATA": str(tmp_path / "mirror"),
        "TAILOREDBENCH_CACHE": str(tmp_path / "cache"),
        "TAILOREDBENCH_BASE_URL": "http://127.0.0.1:9",
        "PYTHONPATH": str(ROOT),
    }
    command = [sys.executable, "-m", "tailoredbench", "simulate", "--benchmark", "gsm8k", "--runs", "1"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "download failed" in done.stderr
