"""The whole real-use loop against the real lm-evaluation-harness: plan, lm-eval, plan, lm-eval, estimate.

lm-eval's ``dummy`` model runs offline and without torch on local tasks (YAMLs named
``arc_challenge`` over 1172 placeholder documents, ``gsm8k`` over 1319 and ``truthfulqa_mc2``
over 817, so that doc_ids line up with the benchmarks'). Its answers are random (or always
"lol"), so the estimate is not compared with any truth: what is tested is that the files
lm-eval really writes are read, checked and used.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tailoredbench.cli import main
from tailoredbench.datasets.lm_eval import read_samples, task_of
from tailoredbench.errors import DataError

pytestmark = pytest.mark.lm_eval

TASK_YAML = """task: arc_challenge
dataset_path: json
dataset_kwargs:
  data_files:
    test: {docs}
test_split: test
output_type: multiple_choice
doc_to_text: "{{{{question}}}}"
doc_to_choice: "{{{{choices}}}}"
doc_to_target: "{{{{answer}}}}"
metric_list:
  - metric: acc
  - metric: acc_norm
"""

# Generated answers scored twice, as lm-eval's own GSM8K task does: each document is then
# written once per filter. The dummy model answers "lol": "whole" keeps it, "strict-match"
# finds no "#### <number>" in it and gives "[invalid]", so the targets tell the filters apart.
GSM8K_YAML = """task: gsm8k
dataset_path: json
dataset_kwargs:
  data_files:
    test: {docs}
test_split: test
output_type: generate_until
doc_to_text: "{{{{question}}}}"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: ["Question:"]
  do_sample: false
metric_list:
  - metric: exact_match
filter_list:
  - name: strict-match
    filter:
      - function: regex
        regex_pattern: "#### (-?[0-9.,]+)"
      - function: take_first
  - name: whole
    filter:
      - function: take_first
"""
GSM8K_TARGETS = ("lol", "[invalid]", "7")  # doc_id % 3: right under "whole", under "strict-match", under neither

# TruthfulQA MC2 as the leaderboard scored it: each document's score is the probability given to its true
# answers (not 0/1), computed by a function beside the YAML, as lm-eval's own task does.
TRUTHFULQA_YAML = """task: truthfulqa_mc2
dataset_path: json
dataset_kwargs:
  data_files:
    validation: {docs}
validation_split: validation
output_type: multiple_choice
doc_to_text: "{{{{question}}}}"
doc_to_target: 0
doc_to_choice: "{{{{mc2_targets.choices}}}}"
process_results: !function truthfulqa_mass.process_results
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
"""
TRUTHFULQA_MASS = """import numpy as np


def process_results(doc, results):
    likelihood = np.exp([loglikelihood for loglikelihood, _ in results])
    labels = np.array(doc["mc2_targets"]["labels"])
    return {"acc": float(likelihood[labels == 1].sum() / likelihood.sum())}
"""


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    return write_tasks(tmp_path_factory.mktemp("tasks"))


def write_suite_csvs(folder: Path) -> list[str]:
    """SYNTHETIC source models of a three-benchmark suite (30 models, 40 items each), one CSV per benchmark."""
    rng = np.random.default_rng(0)
    ability, files = rng.random(30), []
    for name, docs in (("arc", 1172), ("gsm8k", 1319), ("truthfulqa", 817)):
        doc_ids = np.sort(rng.choice(docs, 40, replace=False))
        values = (rng.random((30, 40)) < ability[:, None]).astype(int)
        frame = pd.DataFrame(values, index=[f"m{i}" for i in range(30)], columns=[str(d) for d in doc_ids])
        frame.to_csv(folder / f"{name}.csv")
        files.append(str(folder / f"{name}.csv"))
    return files


def write_tasks(folder: Path) -> Path:
    """The local tasks arc_challenge, gsm8k and truthfulqa_mc2 in ``folder``, for lm-eval's ``--include_path``."""
    docs = folder / "docs.jsonl"
    with docs.open("w") as out:
        for i in range(1172):
            out.write(json.dumps({"question": f"placeholder {i}", "choices": ["A", "B", "C", "D"], "answer": i % 4}))
            out.write("\n")
    (folder / "arc_challenge.yaml").write_text(TASK_YAML.format(docs=docs))
    math = folder / "gsm8k_docs.jsonl"
    with math.open("w") as out:
        for i in range(1319):
            out.write(json.dumps({"question": f"placeholder {i}", "answer": GSM8K_TARGETS[i % 3]}) + "\n")
    (folder / "gsm8k.yaml").write_text(GSM8K_YAML.format(docs=math))
    truth = folder / "truthfulqa_docs.jsonl"
    with truth.open("w") as out:
        for i in range(817):
            choices = {"choices": ["A", "B", "C", "D"], "labels": [1, 1, 0, 0]}
            out.write(json.dumps({"question": f"placeholder {i}", "mc2_targets": choices}) + "\n")
    (folder / "truthfulqa_mc2.yaml").write_text(TRUTHFULQA_YAML.format(docs=truth))
    (folder / "truthfulqa_mass.py").write_text(TRUTHFULQA_MASS)
    return folder


def lm_eval(tasks: Path, selection: Path, output: Path, task: str = "arc_challenge") -> list[Path]:
    """Run lm-eval's dummy model on the selected documents; the samples files it wrote."""
    before = set(output.rglob("samples_*.jsonl")) if output.exists() else set()
    executable = shutil.which("lm-eval", path=os.path.dirname(sys.executable)) or shutil.which("lm-eval")
    assert executable, "lm-eval is not installed (pip install -e '.[test]')"
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    command = [executable, "run", "--model", "dummy", "--tasks", task, "--include_path", str(tasks)]
    command += ["--samples", str(selection), "--log_samples", "--output_path", str(output)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return sorted(set(output.rglob("samples_*.jsonl")) - before)


def test_plan_lm_eval_plan_lm_eval_estimate(tasks, tmp_path, capsys):
    plan, out = tmp_path / "plan", tmp_path / "out"
    assert main(["plan", "--benchmark", "arc_challenge", "--out", str(plan)]) == 0
    first = lm_eval(tasks, plan / "g_set.json", out)
    assert len(first) == 1
    assert main(["plan", "--state", str(plan), "--samples", *map(str, first), "--budget", "30"]) == 0
    state = json.loads((plan / "state.json").read_text())
    assert state["model"] == "dummy({})"  # from lm-eval's results file, not its random folder name
    second = lm_eval(tasks, plan / "n_set.json", out)
    assert len(second) == 1
    capsys.readouterr()
    assert main(["estimate", "--state", str(plan), "--samples", *map(str, first + second), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert len(result["items_used"]) == 30 and result["model"] == "dummy({})"
    assert 0.0 <= result["interval_low"] <= result["estimate"] <= result["interval_high"] <= 1.0

    # Another model's N-set samples are refused, naming both models.
    results = second[0].parent / second[0].name.replace("samples_arc_challenge_", "results_").replace(".jsonl", ".json")
    record = json.loads(results.read_text())
    record["config"]["model_args"] = "pretrained=someone/else"
    results.write_text(json.dumps(record))
    assert main(["estimate", "--state", str(plan), "--samples", *map(str, first + second)]) == 2
    err = capsys.readouterr().err
    assert "two models" in err and "dummy({})" in err and "someone/else" in err and len(err.splitlines()) == 1


def test_rounds_to_a_precision_with_lm_eval(tasks, tmp_path, capsys):
    """The sequential mode's round files are lm-eval --samples selections, and its samples are read back."""
    plan, out = tmp_path / "plan", tmp_path / "out"
    assert main(["plan", "--benchmark", "arc_challenge", "--out", str(plan)]) == 0
    files = lm_eval(tasks, plan / "g_set.json", out)
    args = ["plan", "--state", str(plan), "--precision", "0.05", "--max-budget", "20"]
    assert main([*args, "--samples", *map(str, files)]) == 0
    files += lm_eval(tasks, plan / "round_1.json", out)
    assert len(files) == 2
    assert main([*args, "--samples", *map(str, files)]) == 0
    if (plan / "round_2.json").exists():
        files += lm_eval(tasks, plan / "round_2.json", out)
    capsys.readouterr()
    assert main(["estimate", "--state", str(plan), "--samples", *map(str, files), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["budget"] in (15, 20) and len(result["items_used"]) == result["budget"]
    assert result["model"] == "dummy({})" and result["status"] in ("precision reached", "maximum budget reached")
    assert 0.0 <= result["interval_low"] <= result["estimate"] <= result["interval_high"] <= 1.0


def test_gsm8k_samples_of_two_filters_are_read_by_the_one_named(tasks, tmp_path, capsys):
    """lm-eval writes each GSM8K document once per filter; the plan reads the filter its metric names."""
    plan, out = tmp_path / "plan", tmp_path / "out"
    assert main(["plan", "--benchmark", "gsm8k", "--out", str(plan)]) == 0
    assert json.loads((plan / "state.json").read_text())["metric"] == "exact_match,strict-match"
    (first,) = lm_eval(tasks, plan / "g_set.json", out, task="gsm8k")
    g_set = json.loads((plan / "g_set.json").read_text())["gsm8k"]
    lines = [json.loads(line) for line in first.read_text().splitlines()]
    assert sorted(line["filter"] for line in lines) == sorted(["strict-match", "whole"] * len(g_set))
    for name, right in (("whole", 0), ("strict-match", 1)):
        read = read_samples(first, f"exact_match,{name}", "gsm8k")
        assert read == {d: float(d % 3 == right) for d in g_set}
    with pytest.raises(DataError, match="several filters"):
        read_samples(first, "exact_match", "gsm8k")
    assert main(["plan", "--state", str(plan), "--samples", str(first), "--budget", "30"]) == 0
    assert len(json.loads((plan / "n_set.json").read_text())["gsm8k"]) == 20

    # a metric that names no filter: one line, naming the filters to choose from
    other = tmp_path / "other"
    assert main(["plan", "--benchmark", "gsm8k", "--metric", "exact_match", "--out", str(other)]) == 0
    capsys.readouterr()
    assert main(["plan", "--state", str(other), "--samples", str(first), "--budget", "30"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'strict-match', 'whole'" in err and "exact_match,strict-match" in err


def test_fluid_rounds_to_a_precision_with_lm_eval(tasks, tmp_path, capsys):
    """fluid's rounds (one item each) are lm-eval --samples selections, and its samples are read back."""
    plan, out = tmp_path / "plan", tmp_path / "out"
    assert main(["plan", "--benchmark", "arc_challenge", "--out", str(plan)]) == 0
    files = lm_eval(tasks, plan / "g_set.json", out)
    args = ["plan", "--state", str(plan), "--method", "fluid", "--precision", "0.05", "--max-budget", "12"]
    args += ["--round-size", "1"]
    for k in (1, 2):
        assert main([*args, "--samples", *map(str, files)]) == 0
        if not (plan / f"round_{k}.json").exists():
            break
        assert len(json.loads((plan / f"round_{k}.json").read_text())["arc_challenge"]) == 1
        files += lm_eval(tasks, plan / f"round_{k}.json", out)
    assert main([*args, "--samples", *map(str, files)]) == 0  # replayed: nothing more to ask
    capsys.readouterr()
    assert main(["estimate", "--state", str(plan), "--samples", *map(str, files), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["method"] == "fluid" and result["model"] == "dummy({})" and result["native_sources"] == []
    assert result["budget"] in (11, 12) and len(result["items_used"]) == result["budget"]
    assert result["status"] in ("precision reached", "maximum budget reached")
    assert 0.0 <= result["interval_low"] <= result["estimate"] <= result["interval_high"] <= 1.0


def test_a_suite_planned_at_once_through_lm_eval(tasks, tmp_path, capsys):
    """One lm-eval run of three tasks per step: --samples names them all, and each task's samples file is read."""
    files = write_suite_csvs(tmp_path)
    names = "arc_challenge,gsm8k,truthfulqa_mc2"
    plan, out = tmp_path / "plan", tmp_path / "out"
    assert main(["plan", "--suite", *files, "--tasks", names, "--out", str(plan)]) == 0
    first = lm_eval(tasks, plan / "g_set.json", out, task=names)
    assert sorted(task_of(path) for path in first) == sorted(names.split(","))
    truthfulqa = next(path for path in first if task_of(path) == "truthfulqa_mc2")
    scores = [json.loads(line)["acc"] for line in truthfulqa.read_text().splitlines()]
    assert len(scores) == 5 and not set(scores) <= {0.0, 1.0}  # probabilities, read as right above 0.5
    assert main(["plan", "--state", str(plan), "--samples", *map(str, first), "--budget", "12"]) == 0
    second = lm_eval(tasks, plan / "n_set.json", out, task=names)
    assert len(second) == 3
    capsys.readouterr()
    assert main(["estimate", "--state", str(plan), "--samples", *map(str, first + second), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["model"] == "dummy({})" and result["items"] == 36
    assert [b["task"] for b in result["benchmarks"]] == names.split(",")
    assert [b["metric"] for b in result["benchmarks"]] == ["acc_norm", "exact_match,strict-match", "acc>0.5"]
    for row in [*result["benchmarks"], result["suite_mean"]]:
        assert 0.0 <= row["interval_low"] <= row["estimate"] <= row["interval_high"] <= 1.0
