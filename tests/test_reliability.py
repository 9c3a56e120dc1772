"""Bad input at every boundary gets one line of the package's own error, never a wrong number or a lost file."""

import errno
import gzip
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import synthetic_matrix
from tailoredbench import ResponseMatrix, TailoredBench, atomic, cache, cli, load_matrix, simulate
from tailoredbench import cache as run_cache
from tailoredbench.cli import main
from tailoredbench.datasets.lm_eval import read_samples
from tailoredbench.errors import CacheWarning, DataError, TailoredBenchError
from tailoredbench.methods import PAPER_METHODS, Oracle, gp_irt


def one_line_error(capsys, args, message, code=2):
    capsys.readouterr()
    assert main(args) == code
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert "Traceback" not in err


# --- matrices ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("m1,1,0,1\nm2,0,0,1\n", "looks like data"),  # no header: the first model would be lost
        ("model,q1,q2\nm1,1,0\nm1,0,0\n", "model id 'm1'"),
        ("model,q1,q1\nm1,1,0\nm2,0,0\n", "item id 'q1' repeats"),
        ("model,q1,q2\nm1,1\n", "line 2 has 2 cells"),
        ("model,q1,q2\n", "at least one model row"),
        ("model,q1,q2\nm1,1,x\n", "not numeric"),
        ("model,q1,q2\nm1,0_1,0\n", "not numeric 0/1 .*'0_1'"),  # float() reads it as 1
        ("model,q1,q2\nm1,\uff11,0\n", "not numeric"),  # a full-width digit one: float() reads it too
        ("model,q1,q2\nm1,1,0\nm2,0,2.0\n", r"m\.csv: line 3, item 'q2': value 2\.0 is not 0 or 1"),
        ("model,q1,q2,\nm1,1,0,1\n", r"column 4 of the header has an empty item id \(a trailing comma\?\)"),
        ("model,q1,,q3\nm1,1,0,1\n", "column 3 of the header has an empty item id;"),
    ],
)
def test_bad_csv_matrices(tmp_path, text, message):
    path = tmp_path / "m.csv"
    path.write_text(text)
    with pytest.raises(DataError, match=message):
        load_matrix(path)


def test_bad_npy_matrices(tmp_path):
    (tmp_path / "empty.npy").write_bytes(b"")
    np.save(tmp_path / "none.npy", np.zeros((0, 5)))
    np.save(tmp_path / "complex.npy", np.ones((3, 4)) * (1 + 1j))
    for name, message in (("empty", "not a readable"), ("none", "empty matrix"), ("complex", "complex")):
        with pytest.raises(DataError, match=message):
            load_matrix(tmp_path / f"{name}.npy")


def test_a_npy_header_is_checked_before_loading(tmp_path, capsys):
    huge = tmp_path / "huge.npy"
    with open(huge, "wb") as handle:  # a header claiming 8 TB, and no data
        np.lib.format.write_array_header_1_0(handle, {"descr": "<f8", "fortran_order": False, "shape": (10**6,) * 2})
    with pytest.raises(DataError, match=re.escape(str(huge)) + ".*claims shape"):
        load_matrix(huge)
    one_line_error(capsys, ["simulate", "--matrix", str(huge)], "claims shape")


def test_a_compressed_npy_and_a_folder_are_named_as_such(tmp_path, capsys):
    np.save(tmp_path / "m.npy", np.ones((4, 5)))
    packed = tmp_path / "packed.npy"
    packed.write_bytes(gzip.compress((tmp_path / "m.npy").read_bytes()))
    with pytest.raises(DataError, match="compressed \\(gzip\\)") as caught:
        load_matrix(packed)
    assert "pickle" not in str(caught.value) and "unsafe" not in str(caught.value)
    (tmp_path / "folder.npy").mkdir()
    with pytest.raises(DataError, match="a folder"):
        load_matrix(tmp_path / "folder.npy")
    one_line_error(capsys, ["simulate", "--matrix", str(tmp_path)], "a folder")


def structured(tmp_path):
    path = tmp_path / "records.npy"
    np.save(path, np.zeros((3, 4), dtype=[("correct", float)]))
    return path


def test_values_that_are_not_0_1_numbers_are_refused(tmp_path):
    with pytest.raises(DataError, match=re.escape(str(tmp_path / "records.npy"))):
        load_matrix(structured(tmp_path))
    np.save(tmp_path / "dates.npy", np.zeros((3, 4), dtype="datetime64[s]"))
    with pytest.raises(DataError, match=r"dates\.npy"):
        load_matrix(tmp_path / "dates.npy")
    ones = np.eye(3, dtype=int)
    for values in (ones.astype("datetime64[s]"), ones.astype(object), ones.astype(str), [["0", "1"], ["1", "0"]]):
        with pytest.raises(DataError, match="not 0/1 numbers") as caught:
            ResponseMatrix(values)
        assert len(str(caught.value).splitlines()) == 1


def test_the_estimator_refuses_text_for_numbers():
    matrix = synthetic_matrix(20, 60)
    with pytest.raises(TailoredBenchError, match="source models"):
        TailoredBench(g_size=5).fit(matrix.astype(int).astype(str))
    estimator = TailoredBench(g_size=5).fit(matrix[1:])
    model = matrix[0]
    with pytest.raises(TailoredBenchError, match="G-set results"):
        estimator.plan(model[estimator.g_set_].astype(int).astype(str), 20)
    probe = estimator.plan(model[estimator.g_set_], 20)
    text = model[probe.items].astype(int).astype(str)
    for ask in (estimator.estimate, estimator.interval):
        with pytest.raises(TailoredBenchError, match="probe results"):
            ask(probe, text)
    with pytest.raises(TailoredBenchError, match="probe results"):
        estimator.estimate(probe, model[probe.items].astype(object))


def test_repeated_ids_are_refused_in_every_constructor():
    with pytest.raises(DataError, match="model id 'a' repeats"):
        ResponseMatrix(np.eye(2), models=["a", "a"])
    with pytest.raises(DataError, match="model id '1' repeats"):  # one id once read as text: the same model
        ResponseMatrix(np.eye(2), models=[1, "1"])
    with pytest.raises(DataError, match="item id 'q' repeats"):
        ResponseMatrix(np.eye(2), items=["q", "q"])
    with pytest.raises(DataError, match="model id 'model_0' repeats"):
        ResponseMatrix(np.eye(2)).take_models([0, 0])
    with pytest.raises(DataError, match="model id 'a' repeats"):
        ResponseMatrix(pd.DataFrame(np.eye(2), index=["a", "a"]))
    with pytest.raises(DataError, match="item id 'q' repeats"):
        TailoredBench(g_size=1).fit(pd.DataFrame(np.eye(3), columns=["q", "q", "r"]))


def test_pandas_frames_are_read_by_label():
    matrix = synthetic_matrix(21, 60, seed=2)
    items = [f"q{i}" for i in range(60)]
    frame = pd.DataFrame(matrix[1:], index=[f"m{i}" for i in range(20)], columns=items)
    as_matrix = ResponseMatrix(frame)
    assert as_matrix.models == tuple(frame.index) and as_matrix.items == tuple(items)
    reordered = ResponseMatrix(frame, models=frame.index[::-1], items=items[::-1])
    assert np.array_equal(reordered.values, matrix[1:][::-1, ::-1])
    with pytest.raises(DataError, match="not the DataFrame's"):
        ResponseMatrix(frame, items=items[:-1])
    estimator = TailoredBench(g_size=5).fit(frame)
    assert estimator.items_ == tuple(items)
    reference = TailoredBench(g_size=5).fit(ResponseMatrix(matrix[1:], items=items))
    assert np.array_equal(estimator.g_set_, reference.g_set_)
    model = pd.Series(matrix[0], index=items).sample(frac=1.0, random_state=0)  # any order: read by label
    probe = estimator.plan(model, 20)
    assert np.array_equal(probe.items, reference.plan(matrix[0][reference.g_set_], 20).items)
    row = model.to_frame("new model").T  # one model's results as a one-row DataFrame
    assert estimator.estimate(probe, row) == reference.estimate(probe, matrix[0][probe.items])
    with pytest.raises(TailoredBenchError, match="one row"):
        estimator.estimate(probe, pd.concat([row, row]))
    with pytest.raises(DataError, match="column 'q1'"):
        ResponseMatrix(frame.astype({"q1": str}))
    sim = simulate((frame.iloc[::2], frame.iloc[1::2]), ["random"], budgets=[20], runs=1, g_size=5)
    assert len(sim.results)


@pytest.mark.parametrize("index", [-1, "1", 1.5, True])
def test_a_target_index_is_a_non_negative_integer(fitted, index):
    estimator, model, _ = fitted
    with pytest.raises(TailoredBenchError, match="target_index"):
        estimator.plan(model[estimator.g_set_], 20, target_index=index)
    with pytest.raises(TailoredBenchError, match="target_index"):
        estimator.rounds(model[estimator.g_set_], [20, 25], target_index=index)


@pytest.mark.parametrize("level", ["0.9", 0.0, 1.0, 1.5, float("nan"), True, None])
def test_an_interval_level_is_a_number_between_0_and_1(fitted, level):
    estimator, model, probe = fitted
    with pytest.raises(TailoredBenchError, match="level") as caught:
        estimator.interval(probe, model[probe.items], level)
    assert len(str(caught.value).splitlines()) == 1
    with pytest.raises(TailoredBenchError, match="level"):
        estimator.stopping_rule(0.05, max_budget=40, level=level)


# --- lm-eval samples files -------------------------------------------------------------------


def samples_file(tmp_path, lines, name="samples_arc_challenge_2025-01-01T00-00-00.jsonl", compress=False):
    path = tmp_path / "model" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps(line) + "\n" for line in lines)
    path.write_bytes(gzip.compress(text.encode()) if compress else text.encode())
    return path


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"doc_id": "seven", "acc_norm": 1.0}, "doc_id 'seven' is not an integer"),
        ({"doc_id": None, "acc_norm": 1.0}, "doc_id None is not an integer"),
        ({"doc_id": True, "acc_norm": 1.0}, "doc_id True is not an integer"),
        ({"doc_id": "\u00b2", "acc_norm": 1.0}, "doc_id '\u00b2' is not an integer"),  # str.isdigit() is true
        ({"doc_id": 3, "acc_norm": None}, "is None, not 0/1"),
        ({"doc_id": 3, "acc_norm": "1"}, "is '1', not 0/1"),
        ({"doc_id": 3, "acc_norm": []}, "is [], not 0/1"),
        ({"doc_id": 3, "acc_norm": 0.5}, "is 0.5, not 0/1"),
    ],
)
def test_bad_samples(tmp_path, record, message):
    with pytest.raises(DataError, match=message.replace("[", r"\[").replace("]", r"\]")):
        read_samples(samples_file(tmp_path, [record]), "acc_norm")


def test_gzipped_samples_are_read(tmp_path):
    lines = [{"doc_id": 0, "acc_norm": 1.0}, {"doc_id": "4", "acc_norm": [0.0]}]
    plain = read_samples(samples_file(tmp_path, lines), "acc_norm")
    gz = samples_file(tmp_path, lines, "samples_arc_challenge_2025-01-01T00-00-00.jsonl.gz", compress=True)
    packed = read_samples(gz, "acc_norm")
    assert plain == packed == {0: 1.0, 4: 0.0}


def test_a_corrupt_compressed_samples_file_is_named(tmp_path):
    lines = [{"doc_id": d, "acc_norm": 1.0} for d in range(200)]
    path = samples_file(tmp_path, lines, compress=True)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(DataError, match=re.escape(str(path)) + ": corrupt compressed file"):
        read_samples(path, "acc_norm")


# lm-eval writes a document once per filter (GSM8K: strict-match and flexible-extract), the
# metric under the same key in each line
TWO_FILTERS = [
    {"doc_id": d, "filter": f, "exact_match": float(v)}
    for f, values in (("strict-match", [0, 1, 0]), ("flexible-extract", [1, 1, 0]))
    for d, v in enumerate(values)
]


def test_a_named_filter_reads_its_lines_only(tmp_path):
    path = samples_file(tmp_path, TWO_FILTERS, "samples_gsm8k_2025-01-01T00-00-00.jsonl")
    assert read_samples(path, "exact_match,strict-match") == {0: 0.0, 1: 1.0, 2: 0.0}
    assert read_samples(path, "exact_match,flexible-extract") == {0: 1.0, 1: 1.0, 2: 0.0}


@pytest.mark.parametrize(
    ("lines", "metric", "message"),
    [
        (
            TWO_FILTERS,
            "exact_match",
            "several filters ('strict-match', 'flexible-extract'); name one after the metric, "
            "e.g. 'exact_match,strict-match'",
        ),
        (
            TWO_FILTERS,
            "exact_match,strict",
            "no samples of filter 'strict'; the file has 'strict-match', 'flexible-extract'",
        ),
        ([*TWO_FILTERS[:1], {"doc_id": 1, "exact_match": 1.0}], "exact_match", "'strict-match', 'none'"),
        ([{"doc_id": 0, "filter": 3, "exact_match": 1.0}], "exact_match", "line 1 has filter 3, not a name"),
        (TWO_FILTERS[:1] * 2, "exact_match,strict-match", "doc_id 0 appears twice in filter 'strict-match'"),
        # one line, a value per filter under suffixed keys: which is meant must be said
        (
            [{"doc_id": 0, "exact_match,strict-match": 1.0, "exact_match,flexible-extract": 0.0}],
            "exact_match",
            "has exact_match,strict-match, exact_match,flexible-extract; name one as the metric",
        ),
    ],
)
def test_samples_of_several_filters_need_one_named(tmp_path, lines, metric, message):
    path = samples_file(tmp_path, lines, "samples_gsm8k_2025-01-01T00-00-00.jsonl")
    with pytest.raises(DataError, match=re.escape(message)):
        read_samples(path, metric)


def test_a_filter_named_in_the_key_is_read_from_lines_without_filters(tmp_path):
    lines = [{"doc_id": 0, "exact_match,strict-match": 1.0, "exact_match,flexible-extract": 0.0}]
    path = samples_file(tmp_path, lines, "samples_gsm8k_2025-01-01T00-00-00.jsonl")
    assert read_samples(path, "exact_match,flexible-extract") == {0: 0.0}


# --- the plan folder: one model, a state you can trust, nothing overwritten ---------------


@pytest.fixture(scope="module")
def arc():
    from tailoredbench import load_benchmark

    return load_benchmark("arc_challenge")


def write_samples(folder, model, doc_ids, row, stamp):
    path = folder / model / f"samples_arc_challenge_{stamp}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"doc_id": d, "acc_norm": float(row[d])}) + "\n" for d in doc_ids))
    return path


@pytest.fixture
def planned(arc, tmp_path):
    """A plan with its N-set, for target 0; the samples files of both lm-eval runs."""
    plan = tmp_path / "plan"
    assert main(["plan", "--benchmark", "arc_challenge", "--out", str(plan)]) == 0
    row = arc.target.values[0]
    g_ids = json.loads((plan / "g_set.json").read_text())["arc_challenge"]
    first = write_samples(tmp_path / "out", "model-a", g_ids, row, "2025-01-01T00-00-00")
    assert main(["plan", "--state", str(plan), "--samples", str(first), "--budget", "30"]) == 0
    n_ids = json.loads((plan / "n_set.json").read_text())["arc_challenge"]
    second = write_samples(tmp_path / "out", "model-a", n_ids, row, "2025-01-01T01-00-00")
    return plan, first, second, n_ids


def test_samples_of_two_models_are_refused(planned, arc, tmp_path, capsys):
    plan, first, _, n_ids = planned
    other = write_samples(tmp_path / "out", "model-b", n_ids, arc.target.values[40], "2025-01-01T01-00-00")
    args = ["estimate", "--state", str(plan), "--samples", str(first), str(other)]
    one_line_error(capsys, args, "two models in one plan: folder model-a")


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (lambda folder: folder / "model-b" / "samples_arc_challenge_2025-01-01T02-00-00.jsonl", "no such samples file"),
        (lambda folder: folder / "model-a", "a folder, not a samples file"),
        (lambda folder: folder / "model-a" / "results.jsonl", "not an lm-eval samples file name"),
    ],
)
def test_each_bad_samples_path_gets_its_own_message(planned, capsys, given, message):
    plan, first, second, _ = planned
    path = given(first.parent.parent)
    if path.name == "results.jsonl":
        path.write_text(second.read_text())
    args = ["estimate", "--state", str(plan), "--samples", str(first), str(path)]
    one_line_error(capsys, args, f"{path}: {message}")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda text, state: text[: len(text) // 2], "not a JSON state file"),
        (lambda text, state: "[]", "a JSON list"),
        (lambda text, state: "null", "a JSON NoneType"),
        (lambda text, state: json.dumps({k: v for k, v in state.items() if k != "n_set"}), "no 'n_set'"),
        (lambda text, state: json.dumps({**state, "budget": "30"}), "'budget' has the wrong type"),
        (lambda text, state: json.dumps({**state, "native_sources": state["native_sources"][::-1]}), "checksum"),
        (lambda text, state: json.dumps({**state, "n_set_doc_ids": state["n_set_doc_ids"][::-1]}), "checksum"),
        (lambda text, state: json.dumps({"state_format": 3, "hello": 1}), "plan again"),
        # beyond the JSON parser's own limits: nesting deeper than Python's recursion, a number of 5000 digits
        (lambda text, state: "[" * 100_000 + "]" * 100_000, "not a JSON state file"),
        (lambda text, state: text.replace("{", '{"x": ' + "9" * 5000 + ", ", 1), "not a JSON state file"),
    ],
)
def test_a_damaged_state_is_refused(planned, capsys, damage, message):
    plan, first, second, _ = planned
    path = plan / "state.json"
    text = path.read_text()
    path.write_text(damage(text, json.loads(text)))
    one_line_error(capsys, ["estimate", "--state", str(plan), "--samples", str(first), str(second)], message)


@pytest.mark.parametrize(
    "line",
    ['{"doc_id": 5, "acc_norm": 1, "x": ' + "1" * 5000 + "}", '{"doc_id": ' + "[" * 100_000 + "]" * 100_000 + "}"],
)
def test_a_samples_line_beyond_the_json_parsers_limits_is_refused(planned, capsys, line):
    plan, first, second, _ = planned
    second.write_text(second.read_text() + line + "\n")
    one_line_error(capsys, ["estimate", "--state", str(plan), "--samples", str(first), str(second)], "is not JSON")


def test_the_estimate_of_an_intact_plan(planned, capsys):
    plan, first, second, _ = planned
    capsys.readouterr()
    assert main(["estimate", "--state", str(plan), "--samples", str(first), str(second), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model"] == "folder model-a"


def test_nothing_is_overwritten_without_force(planned, arc, tmp_path, capsys):
    plan, first, _, _ = planned
    before = {p.name: p.read_bytes() for p in plan.iterdir()}
    one_line_error(capsys, ["plan", "--benchmark", "arc_challenge", "--out", str(plan)], "not empty")
    one_line_error(
        capsys, ["plan", "--state", str(plan), "--samples", str(first), "--budget", "25"], "already holds an N-set"
    )
    assert {p.name: p.read_bytes() for p in plan.iterdir()} == before
    # the same step again changes nothing and needs no --force
    assert main(["plan", "--state", str(plan), "--samples", str(first), "--budget", "30"]) == 0
    assert {p.name: p.read_bytes() for p in plan.iterdir()} == before
    # --force starts the plan afresh: no N-set of the old plan is left behind
    assert main(["plan", "--benchmark", "arc_challenge", "--out", str(plan), "--force"]) == 0
    assert sorted(p.name for p in plan.iterdir()) == ["g_set.json", "state.json"]
    assert not list(plan.glob(".*"))  # no temporary file left by the atomic writes


def test_tidy_output_is_checked_before_any_work(tmp_path, capsys):
    existing = tmp_path / "tidy.csv"
    existing.write_text("mine")
    base = ["simulate", "--benchmark", "gsm8k", "--runs", "1", "--no-interval"]
    one_line_error(capsys, [*base, "--tidy", str(existing)], "exists; add --force")
    assert existing.read_text() == "mine"
    one_line_error(capsys, [*base, "--tidy", str(tmp_path / "nowhere" / "t.csv")], "no such folder")
    assert main([*base, "--tidy", str(existing), "--force"]) == 0
    assert existing.read_text().startswith("run,budget,method")


TIDY_RUN = ["simulate", "--benchmark", "arc_challenge", "--runs", "1", "--no-interval", "--max-models", "40"]


def test_a_tidy_file_that_appears_during_the_run_is_not_replaced(tmp_path, capsys, monkeypatch):
    tidy = tmp_path / "tidy.csv"
    real = cli.simulate

    def meanwhile(*args, **kwargs):
        tidy.write_text("mine")  # another program, or another simulation, writes it first
        return real(*args, **kwargs)

    monkeypatch.setattr(cli, "simulate", meanwhile)
    one_line_error(capsys, [*TIDY_RUN, "--tidy", str(tidy)], f"{tidy}: exists; add --force to replace it")
    assert tidy.read_text() == "mine" and not list(tmp_path.glob(".*"))
    assert main([*TIDY_RUN, "--tidy", str(tidy), "--force"]) == 0
    assert tidy.read_text().startswith("run,budget,method")


def test_a_symlink_at_the_tidy_path_is_followed_never_replaced(tmp_path, capsys):
    tidy, elsewhere = tmp_path / "tidy.csv", tmp_path / "elsewhere.csv"
    tidy.symlink_to(elsewhere)  # dangling
    one_line_error(capsys, [*TIDY_RUN, "--tidy", str(tidy)], f"{tidy}: exists; add --force to replace it")
    assert tidy.is_symlink() and not elsewhere.exists()
    assert main([*TIDY_RUN, "--tidy", str(tidy), "--force"]) == 0
    assert tidy.is_symlink() and elsewhere.read_text().startswith("run,budget,method")
    elsewhere.write_text("old")
    assert main([*TIDY_RUN, "--tidy", str(tidy), "--force"]) == 0
    assert tidy.is_symlink() and elsewhere.read_text().startswith("run,budget,method")


def test_a_file_system_without_hard_links_still_creates_exclusively(tmp_path, monkeypatch):
    def no_links(*args, **kwargs):
        raise OSError(errno.EPERM, os.strerror(errno.EPERM))

    monkeypatch.setattr(os, "link", no_links)
    path = tmp_path / "out.csv"
    atomic.write_text(path, "first", replace=False)
    with pytest.raises(FileExistsError, match=re.escape(str(path))):
        atomic.write_text(path, "second", replace=False)
    assert path.read_text() == "first" and not list(tmp_path.glob(".*"))
    assert oct(path.stat().st_mode & 0o777) == oct(0o666 & ~atomic.umask())


@pytest.mark.slow
def test_two_simulations_with_one_new_tidy_path(tmp_path):
    tidy = tmp_path / "tidy.csv"
    command = [sys.executable, "-m", "tailoredbench", *TIDY_RUN, "--tidy", str(tidy)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    started = [subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    errors = [p.communicate(timeout=300)[1] for p in started]
    assert sorted(p.returncode for p in started) == [0, 2], errors
    refused = errors[[p.returncode for p in started].index(2)].strip()
    assert refused == f"tailoredbench: error: {tidy}: exists; add --force to replace it", refused
    assert tidy.read_text().startswith("run,budget,method")


@pytest.mark.parametrize("cause", ["read-only", "full"])
def test_an_unwritable_output_is_named_not_its_temporary_file(tmp_path, capsys, unwritable, cause):
    folder = tmp_path / "out"
    error = unwritable(folder, cause)
    tidy = folder / "tidy.csv"
    capsys.readouterr()
    assert main([*TIDY_RUN, "--tidy", str(tidy)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and ".tmp" not in err, err
    assert f"{tidy}: {error}" in err or f"{folder}: not writable" in err, err
    plan = folder / "plan"
    capsys.readouterr()
    assert main(["plan", "--benchmark", "arc_challenge", "--out", str(plan)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and ".tmp" not in err and f"{plan}" in err, err


# --- the command line and the Python API ---------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seed", "-1"], "must be 0 or more"),
        (["--budget", "15", "15"], "budget 15 is given twice"),
        (["--max-models", "50"], "max_models does not apply"),
        (["--variant", "regression"], "--variant applies to tailored_plus only"),
        (["--jobs", "0"], "must be at least 1"),
    ],
)
def test_cli_settings_that_do_not_apply(capsys, args, message):
    one_line_error(capsys, ["simulate", "--benchmark", "gsm8k", "--runs", "1", "--no-interval", *args], message)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"methods": []}, "no method given"),
        ({"methods": ["random", "random"]}, "given twice"),
        ({"n_jobs": 0}, "n_jobs must be at least 1"),
        ({"budgets": []}, "no budget given"),
        ({"budgets": [20.5]}, "budget must be an integer"),
        ({"budgets": ["20"]}, "budget must be an integer"),
        ({"seed": -1}, "seed must be at least 0"),
        ({"runs": 1.5}, "runs must be an integer"),
        ({"backend": "multiprocessing"}, "unknown backend"),
    ],
)
def test_api_settings_are_checked(kwargs, message):
    matrix = synthetic_matrix(20, 60)
    settings = {"methods": ["random"], "budgets": [20], "runs": 1, **kwargs}
    with pytest.raises(TailoredBenchError, match=message):
        simulate((matrix[::2], matrix[1::2]), g_size=5, **settings)


@pytest.fixture(scope="module")
def fitted():
    from tailoredbench import ResponseMatrix

    matrix = synthetic_matrix(30, 80, seed=3)
    source = ResponseMatrix(matrix[:20], items=tuple(f"q{i}" for i in range(80)))
    estimator = TailoredBench(g_size=5, random_state=0).fit(source)
    model = matrix[25]
    return estimator, model, estimator.plan(model[estimator.g_set_], 20)


@pytest.mark.parametrize("bad", [np.nan, -5.0, 0.5, 2.0])
def test_results_that_are_not_0_1_are_refused(fitted, bad):
    estimator, model, probe = fitted
    results = model[probe.items].copy()
    results[3] = bad
    with pytest.raises(TailoredBenchError, match="is not 0/1"):
        estimator.estimate(probe, results)
    with pytest.raises(TailoredBenchError, match="expected 20 probe results"):
        estimator.estimate(probe, results[:-1])


def test_pandas_results_are_read_by_item_id(fitted):
    estimator, model, probe = fitted
    ids = [estimator.items_[i] for i in probe.items]
    shuffled = pd.Series(model[probe.items], index=ids).sample(frac=1.0, random_state=1)
    assert estimator.estimate(probe, shuffled) == estimator.estimate(probe, model[probe.items])
    with pytest.raises(TailoredBenchError, match="lack item"):
        estimator.estimate(probe, shuffled.iloc[1:])


# --- exact at the edges --------------------------------------------------------------------


def test_every_method_is_exact_when_every_item_is_asked():
    matrix = synthetic_matrix(20, 60, seed=5)
    sim = simulate((matrix[::2], matrix[1::2]), [*PAPER_METHODS, "tailored_plus"], budgets=[60], runs=1, g_size=5)
    assert np.allclose(sim.results["estimate"], sim.results["true"], atol=1e-12)
    estimator = TailoredBench(g_size=5).fit(matrix[::2])
    model = matrix[1]
    probe = estimator.plan(model[estimator.g_set_], 60)
    assert estimator.estimate(probe, model[probe.items]) == pytest.approx(model.mean(), abs=1e-12)
    assert estimator.interval(probe, model[probe.items]) == pytest.approx((model.mean(), model.mean()))


# --- caches that heal ----------------------------------------------------------------------


def test_a_damaged_gp_irt_cache_entry_is_named_removed_and_rebuilt():
    source = synthetic_matrix(30, 50, seed=11)
    first = gp_irt.prepare(source, [10])
    path, _ = gp_irt._cache_entry(source, [10])
    assert path.is_file()
    path.write_bytes(path.read_bytes()[:100])  # truncated
    with pytest.warns(CacheWarning, match=str(path.name)):
        again = gp_irt.prepare(source, [10])
    assert np.array_equal(again["model"].a, first["model"].a) and path.is_file()
    # a tampered entry: a readable file whose contents no longer match their hash
    with np.load(path) as entry:
        stored = dict(entry)
    stored["a"] = stored["a"] + 1.0
    np.savez(path.with_suffix(".x.npz"), **stored)
    path.with_suffix(".x.npz").replace(path)
    with pytest.warns(CacheWarning, match="sha256 mismatch"):
        healed = gp_irt.prepare(source, [10])
    assert np.array_equal(healed["model"].a, first["model"].a)
    assert cache.load_cached(path) is not None


def _gp_irt_estimates(source, target, budget=10):
    """gp-IRT's estimates of the targets' accuracies, its fit on ``source`` read from the cache or made."""
    method = gp_irt.GpIrt()
    prepared = method.prepare(source, [budget])
    return method.run(prepared, source, [{budget: Oracle(target, budget)}], [(0, 0)])[0][""][budget]


@pytest.mark.parametrize("other_items", [50, 60], ids=["fitted on another matrix", "of another shape"])
def test_a_gp_irt_entry_swapped_for_another_matrix_s_is_named_removed_and_refitted(tmp_path, monkeypatch, other_items):
    monkeypatch.setenv("TAILOREDBENCH_CACHE", str(tmp_path))
    matrix = synthetic_matrix(40, 50, seed=11)  # SYNTHETIC
    source, target = matrix[:30], matrix[30:]
    fresh = _gp_irt_estimates(source, target)
    (entry,) = tmp_path.glob("irt/*.npz")
    gp_irt.prepare(synthetic_matrix(30, other_items, seed=12), [10])  # SYNTHETIC
    (other,) = set(tmp_path.glob("irt/*.npz")) - {entry}
    other.replace(entry)  # a sound entry, of a fit on another matrix
    with pytest.warns(CacheWarning, match=f"{entry.name}: cache entry computed on other data"):
        again = _gp_irt_estimates(source, target)
    np.testing.assert_array_equal(again, fresh)
    np.testing.assert_array_equal(_gp_irt_estimates(source, target), fresh)  # the refit was stored: no warning


def test_a_folder_in_place_of_a_gp_irt_entry_is_named_and_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("TAILOREDBENCH_CACHE", str(tmp_path))
    matrix = synthetic_matrix(40, 50, seed=11)  # SYNTHETIC
    fresh = _gp_irt_estimates(matrix[:30], matrix[30:])
    (entry,) = tmp_path.glob("irt/*.npz")
    entry.unlink()
    entry.mkdir()
    (entry / "stray").write_bytes(b"")
    with pytest.warns(CacheWarning, match=f"{entry.name}: not a file"):
        again = _gp_irt_estimates(matrix[:30], matrix[30:])
    np.testing.assert_array_equal(again, fresh)
    assert entry.is_file()


@pytest.mark.parametrize("cause", ["read-only", "full"])
def test_an_unwritable_gp_irt_cache_is_named_once_and_the_simulation_runs_without_it(
    tmp_path, monkeypatch, unwritable, cause
):
    matrix = synthetic_matrix(40, 50, seed=11)  # SYNTHETIC
    settings = {"budgets": [10], "runs": 2, "interval": None}
    monkeypatch.setenv("TAILOREDBENCH_CACHE", str(tmp_path / "sound"))
    fresh = simulate((matrix[:30], matrix[30:]), ["gp_irt"], **settings).results
    folder = tmp_path / "unwritable"
    error = unwritable(folder, cause)
    monkeypatch.setenv("TAILOREDBENCH_CACHE", str(folder))
    with warnings.catch_warnings(record=True) as caught:  # each simulation's fit fails to be stored: one warning
        warnings.simplefilter("always")
        again = [simulate((matrix[:30], matrix[30:]), ["gp_irt"], **settings).results for _ in range(2)]
    assert [w.category for w in caught] == [CacheWarning], [str(w.message) for w in caught]
    assert str(caught[0].message).startswith(f"{folder}: ") and error in str(caught[0].message)
    for results in again:
        pd.testing.assert_frame_equal(fresh, results, check_exact=True)


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002], ids=["022", "077", "002"])
def test_written_files_follow_the_umask(tmp_path, mask):
    previous = os.umask(mask)
    try:
        written = [
            atomic.write_text(tmp_path / "report.md", "x"),
            cache.store_cached(tmp_path / "irt" / "entry.npz", values=np.zeros(2)),
        ]
        run_cache.store(tmp_path / "runs", "probes", [1], items=np.zeros(2))
        written += list((tmp_path / "runs").rglob("*.npz"))
    finally:
        os.umask(previous)
    assert len(written) == 3
    assert {oct(path.stat().st_mode & 0o777) for path in written} == {oct(0o666 & ~mask)}


# --- pipes ----------------------------------------------------------------------------------


def test_a_closed_pipe_ends_quietly():
    command = [sys.executable, "-m", "tailoredbench", "simulate", "--benchmark", "gsm8k", "--runs", "1"]
    command += ["--budget", "20", "25", "30", "35", "40", "--no-interval"]
    done = subprocess.run(f"{' '.join(command)} | head -c 1", shell=True, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
