"""The whole real-use loop against the real lm-evaluation-harness: plan, lm-eval, plan, lm-eval, estimate.

lm-eval's ``dummy`` model runs offline and without torch on a local task (a YAML named
``arc_challenge`` over 1172 placeholder documents, so that doc_ids line up with the
benchmark's). Its answers are random, so the estimate is not compared with any truth:
what is tested is that the files lm-eval really writes are read, checked and used.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tailoredbench.cli import main

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


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tasks")
    docs = folder / "docs.jsonl"
    with docs.open("w") as out:
        for i in range(1172):
            out.write(json.dumps({"question": f"placeholder {i}", "choices": ["A", "B", "C", "D"], "answer": i % 4}))
            out.write("\n")
    (folder / "arc_challenge.yaml").write_text(TASK_YAML.format(docs=docs))
    return folder


def lm_eval(tasks: Path, selection: Path, output: Path) -> list[Path]:
    """Run lm-eval's dummy model on the selected documents; the samples files it wrote."""
    before = set(output.rglob("samples_*.jsonl")) if output.exists() else set()
    executable = shutil.which("lm-eval", path=os.path.dirname(sys.executable)) or shutil.which("lm-eval")
    assert executable, "lm-eval is not installed (pip install -e '.[test]')"
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    command = [executable, "run", "--model", "dummy", "--tasks", "arc_challenge", "--include_path", str(tasks)]
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
