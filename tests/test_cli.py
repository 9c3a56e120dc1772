"""The command line: JSON output and one-line errors with exit code 2."""

import json
import subprocess
import sys

import numpy as np
import pytest

from tailoredbench import SPECS
from tailoredbench.cli import main

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
