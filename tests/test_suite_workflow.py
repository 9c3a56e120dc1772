"""A whole suite evaluated for real: plan --suite -> samples -> plan --state -> samples -> estimate."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_lm_eval_harness import lm_eval, write_suite_csvs, write_tasks

from tailoredbench.cli import main
from tailoredbench.datasets.lm_eval import read_samples
from tailoredbench.datasets.matrix import ResponseMatrix
from tailoredbench.datasets.suites import Suite, load_suite
from tailoredbench.errors import DataError, TailoredBenchError
from tailoredbench.suite import SUITE_MEAN, simulate_suite, simulate_suite_precision
from tailoredbench.workflow import (
    PlanState,
    SuiteState,
    estimate_suite,
    plan_suite_g_set,
    plan_suite_n_set,
    plan_suite_round,
    read_suite_state,
)
from tailoredbench.workflow import suite as suite_workflow
from tailoredbench.workflow.folder import IN_USE, checksum, locked

TASKS = ("arc_challenge", "gsm8k", "truthfulqa_mc2")
#: The value each task's samples carry: TruthfulQA MC2's is a probability.
METRIC = {"arc_challenge": "acc_norm", "gsm8k": "exact_match", "truthfulqa_mc2": "acc", "hellaswag": "acc_norm"}
METRIC["winogrande"] = "acc"
FIRST, SECOND = "2025-01-01T00-00-00.000001", "2025-01-01T01-00-00.000001"


def synthetic(folder, n_models=40, n_items=(40, 30, 35), seed=1):
    """SYNTHETIC: three benchmarks whose accuracies share one ability per model, as CSV files whose item ids are
    doc_ids, and one more model's results on each (``{doc_id: 0/1}``), the new model."""
    rng = np.random.default_rng(seed)
    ability = rng.random(n_models + 1)
    files, model = [], []
    for name, count in zip(("arc", "gsm8k", "truthfulqa"), n_items, strict=True):
        doc_ids = np.sort(rng.choice(800, count, replace=False))
        values = (rng.random((n_models + 1, count)) < ability[:, None]).astype(int)
        frame = pd.DataFrame(values[:-1], index=[f"m{i}" for i in range(n_models)], columns=[str(d) for d in doc_ids])
        frame.to_csv(folder / f"{name}.csv")
        files.append(str(folder / f"{name}.csv"))
        model.append(dict(zip(doc_ids.tolist(), values[-1].tolist(), strict=True)))
    return files, model


def answer(folder, selection, model, stamp, name="new-model"):
    """lm-eval's samples files (one per task) for a ``--samples`` selection of several tasks, from ``model``'s
    results; TruthfulQA MC2's acc is the probability of the true answers, 0.8 when right and 0.3 when not."""
    paths = []
    for b, (task, doc_ids) in enumerate(json.loads(selection.read_text()).items()):
        path = folder / "out" / name / f"samples_{task}_{stamp}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = []
        for doc_id in doc_ids:
            right = model[b][doc_id]
            value = (0.8 if right else 0.3) if task == "truthfulqa_mc2" else float(right)
            where = "strict-match" if task == "gsm8k" else "none"
            lines.append(json.dumps({"doc_id": doc_id, "filter": where, METRIC[task]: value}))
        path.write_text("\n".join(lines) + "\n")
        paths.append(str(path))
    return paths


@pytest.fixture
def suite(tmp_path):
    files, model = synthetic(tmp_path)
    plan = tmp_path / "plan"
    args = ["plan", "--suite", *files, "--tasks", ",".join(TASKS), "--g-size", "4", "--seed", "2", "--out", str(plan)]
    assert main(args) == 0
    return plan, files, model, answer(tmp_path, plan / "g_set.json", model, FIRST)


def test_the_full_loop_is_the_joint_simulation_of_the_model_alone(suite, tmp_path, capsys):
    plan, files, model, first = suite
    g_sets = json.loads((plan / "g_set.json").read_text())
    assert list(g_sets) == list(TASKS) and all(len(ids) == 4 for ids in g_sets.values())
    assert main(["plan", "--state", str(plan), "--samples", *first, "--budget", "10"]) == 0
    n_sets = json.loads((plan / "n_set.json").read_text())
    assert list(n_sets) == list(TASKS)
    assert all(len(n_sets[t]) == 6 and not set(n_sets[t]) & set(g_sets[t]) for t in TASKS)
    assert all(set(n_sets[t]) <= set(model[b]) for b, t in enumerate(TASKS))
    second = answer(tmp_path, plan / "n_set.json", model, SECOND)
    capsys.readouterr()
    assert main(["estimate", "--state", str(plan), "--samples", *first, *second, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [b["task"] for b in result["benchmarks"]] == list(TASKS)
    assert result["items"] == 30 and result["native_sources"] >= 1 and result["model"] == "folder new-model"
    assert [b["metric"] for b in result["benchmarks"]] == ["acc_norm", "exact_match,strict-match", "acc>0.5"]

    # joint TailoredBench+ simulated with this model as the only target: run 0 of seed 2, to the bit
    sources = tuple(ResponseMatrix(pd.read_csv(f, index_col=0)) for f in files)
    targets = tuple(ResponseMatrix([list(results.values())], models=["new"]) for results in model)
    alone = Suite("custom", ("arc", "gsm8k", "truthfulqa"), sources, targets)
    sim = simulate_suite(alone, ["tailored_plus"], ["joint"], budget=10, runs=1, g_size=4, seed=2).results
    expected = sim.set_index("benchmark").loc[["arc", "gsm8k", "truthfulqa", SUITE_MEAN]]
    found = [*result["benchmarks"], result["suite_mean"]]
    for key in ("estimate", "interval_low", "interval_high"):
        assert [row[key] for row in found] == expected[key].tolist()

    capsys.readouterr()  # and the text, one line per task and the suite mean
    assert main(["estimate", "--state", str(plan), "--samples", *first, *second]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "from 10 items of each of 3 tasks, with 90% intervals" in lines[0]
    assert [line.split()[0] for line in lines[1:4]] == list(TASKS) and lines[4].strip().startswith("suite mean")


def test_the_python_steps_keep_a_plan_and_refuse_to_replace_it_without_force(suite, tmp_path, monkeypatch):
    plan, files, model, first = suite
    state = plan_suite_n_set(plan, first, 10)
    assert read_suite_state(plan) == state and state.step.budget == 10 and len(state.step.weights[0]) == 4
    assert SuiteState.parse(state.to_json())[0] == state

    def refit(*args, **kwargs):
        raise AssertionError("fitted again")

    monkeypatch.setattr(suite_workflow, "fit_new_model", refit)
    before = {p.name: p.read_bytes() for p in plan.iterdir()}
    assert plan_suite_n_set(plan, first, 10) == state  # the same plan: kept as it is
    assert {p.name: p.read_bytes() for p in plan.iterdir()} == before
    with pytest.raises(TailoredBenchError, match=r"already holds N-sets \(budget 10.*add --force"):
        plan_suite_n_set(plan, first, 11)
    monkeypatch.undo()
    assert plan_suite_n_set(plan, first, 11, force=True).step.budget == 11
    second = answer(tmp_path, plan / "n_set.json", model, SECOND)
    done = estimate_suite(plan, first + second)
    assert done["budget"] == 11 and len(done["benchmarks"]) == 3
    assert all(b["interval_low"] <= b["estimate"] <= b["interval_high"] for b in [*done["benchmarks"]])
    assert done["suite_mean"]["estimate"] == pytest.approx(np.mean([b["estimate"] for b in done["benchmarks"]]))

    with pytest.raises(TailoredBenchError, match="not empty"):
        plan_suite_g_set(files, plan, tasks=TASKS)
    again = plan_suite_g_set(files, plan, tasks=TASKS, g_size=4, seed=2, force=True)
    assert again.step is None and not (plan / "n_set.json").exists()


def edit(path, change):
    path.write_text(change(path.read_text()))


def drop_first_line(text):
    return "".join(text.splitlines(keepends=True)[1:])


def add_line(doc_id, value):
    return lambda text: text + json.dumps({"doc_id": doc_id, "filter": "none", "acc_norm": value}) + "\n"


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        (
            lambda files: files[:2],
            "the samples hold no results of task truthfulqa_mc2: give its samples_truthfulqa_mc2",
        ),
        (lambda files: edit_first(files, drop_first_line), "the samples lack 1 arc_challenge G-set doc_ids, e.g."),
        (lambda files: edit_first(files, add_line(999, 1.0)), "doc_id 999 of task arc_challenge is not an item of arc"),
        (lambda files: conflicting(files), "of task arc_challenge has conflicting results across files"),
        (lambda files: [*files, other_task(files)], "samples of task 'hellaswag', not of this plan"),
    ],
)
def test_bad_samples_are_one_line_errors(suite, capsys, spoil, message):
    plan, _, _, first = suite
    capsys.readouterr()
    assert main(["plan", "--state", str(plan), "--samples", *spoil(first), "--budget", "10"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.splitlines()) == 1, err
    assert not (plan / "n_set.json").exists()


def edit_first(files, change):
    edit(Path(files[0]), change)
    return files


def conflicting(files):
    """A second arc_challenge file from the same run folder, one doc_id answered otherwise."""
    path = Path(files[0])
    record = json.loads(path.read_text().splitlines()[0])
    twin = path.with_name(path.name.replace(FIRST, SECOND))
    twin.write_text(json.dumps({**record, "acc_norm": 1.0 - record["acc_norm"]}) + "\n")
    return [*files, str(twin)]


def other_task(files):
    path = Path(files[0])
    other = path.with_name(f"samples_hellaswag_{FIRST}.jsonl")
    other.write_text(json.dumps({"doc_id": 1, "filter": "none", "acc_norm": 1.0}) + "\n")
    return str(other)


def test_a_probability_is_refused_unless_a_threshold_reads_it(suite, tmp_path, capsys):
    _, files, _, first = suite
    other = tmp_path / "plain"
    metrics = ["--metrics", "acc_norm", "exact_match,strict-match", "acc"]
    assert main(["plan", "--suite", *files, "--tasks", ",".join(TASKS), *metrics, "--out", str(other)]) == 0
    capsys.readouterr()
    assert main(["plan", "--state", str(other), "--samples", *first, "--budget", "10"]) == 2
    err = capsys.readouterr().err
    assert "samples_truthfulqa_mc2_" in err and "'acc' of doc_id" in err and "not 0/1" in err, err
    assert "name a threshold, e.g. metric 'acc>0.5'" in err and len(err.splitlines()) == 1
    assert read_samples(first[2], "acc>0.5", "truthfulqa_mc2") == read_samples(first[2], "acc>0.7", "truthfulqa_mc2")
    assert set(read_samples(first[2], "acc>0.9", "truthfulqa_mc2").values()) == {0.0}
    for bad in ("acc>1", "acc>x", ">0.5"):
        with pytest.raises(DataError, match="a threshold from 0 to below 1"):
            read_samples(first[2], bad)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--budget", "4"], "budget 4 must exceed the G-set size 4"),
        (["--budget", "31"], "budget 31 exceeds the item count 30 of gsm8k"),
        (["--budget", "10", "--precision", "0.05"], "give --precision or --budget, not both"),
        (["--budget", "10", "--round-size", "3"], "--round-size applies with --precision only"),
        (["--budget", "10", "--tasks", "a,b,c"], "--tasks goes with plan --suite"),
        (["--budget", "10", "--seed", "3"], "planned with seed 2, not 3"),
    ],
)
def test_bad_n_set_settings_are_one_line_errors(suite, capsys, args, message):
    plan, _, _, first = suite
    capsys.readouterr()
    assert main(["plan", "--state", str(plan), "--samples", *first, *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tasks", "arc_challenge,gsm8k"], "2 tasks for the 3 benchmarks of the suite (arc, gsm8k, truthfulqa)"),
        (["--tasks", "a,a,b"], "task 'a' is named twice"),
        (["--metrics", "acc", "acc"], "2 metrics for 3 tasks"),
        (["--task", "arc_challenge"], "--task does not apply to a suite's plan; name them with --tasks"),
        (["--budget", "10"], "--budget goes with plan --state"),
        (["--metrics", "acc", "acc", "acc>2"], "metric 'acc>2': name a score and a threshold"),
    ],
)
def test_bad_g_set_settings_are_one_line_errors(tmp_path, capsys, args, message):
    files, _ = synthetic(tmp_path)
    assert main(["plan", "--suite", *files, "--out", str(tmp_path / "plan"), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "plan").exists()


def test_suite_options_are_refused_for_one_benchmark(capsys, tmp_path):
    assert main(["plan", "--benchmark", "gsm8k", "--tasks", "gsm8k", "--out", str(tmp_path / "p")]) == 2
    assert capsys.readouterr().err.strip() == "tailoredbench: error: --tasks applies to a suite's plan only"


def test_a_plan_in_use_is_refused_and_an_interrupted_one_named(suite, capsys):
    plan, _, _, first = suite
    with locked(plan):
        assert main(["plan", "--state", str(plan), "--samples", *first, "--budget", "10"]) == 2
    assert IN_USE in capsys.readouterr().err
    assert main(["plan", "--state", str(plan), "--samples", *first, "--budget", "10"]) == 0
    (plan / "n_set.json").unlink()
    capsys.readouterr()
    assert main(["estimate", "--state", str(plan), "--samples", *first]) == 2
    err = capsys.readouterr().err
    assert f"{plan}: interrupted plan (n_set.json is missing)" in err and f"plan --state {plan} ..." in err
    (plan / "g_set.json").unlink()
    assert main(["plan", "--state", str(plan), "--samples", *first, "--budget", "10", "--force"]) == 2
    assert f"'tailoredbench plan --suite ... --out {plan} --force'" in capsys.readouterr().err


def test_an_interrupted_suite_plan_without_its_state_is_named_a_suite_plan(suite, capsys):
    plan, _, _, first = suite
    (plan / "state.json").unlink()  # the G-sets of every task remain
    for command in (["plan", "--state", str(plan), "--budget", "10"], ["estimate", "--state", str(plan)]):
        capsys.readouterr()
        assert main([*command, "--samples", *first]) == 2
        assert f"rerun 'tailoredbench plan --suite ... --out {plan} --force'" in capsys.readouterr().err


def test_the_state_is_sealed_and_typed(suite, capsys):
    plan, _, _, first = suite
    assert main(["plan", "--state", str(plan), "--samples", *first, "--budget", "10"]) == 0
    path = plan / "state.json"
    text = path.read_text()
    with pytest.raises(TailoredBenchError, match="a suite's plan"):
        PlanState.from_json(text)
    data = json.loads(text)
    path.write_text(json.dumps({**data, "suite_quantile": data["suite_quantile"] / 2}))
    capsys.readouterr()
    assert main(["estimate", "--state", str(plan), "--samples", *first]) == 2
    assert "do not match its checksum" in capsys.readouterr().err
    path.write_text(json.dumps({**data, "suite_state_format": 99}))
    assert main(["estimate", "--state", str(plan), "--samples", *first]) == 2
    assert "a suite plan state of format 99, this is format 2" in capsys.readouterr().err
    state = SuiteState.parse(text)[0]
    with pytest.raises(TailoredBenchError, match="not weights of TailoredBench"):
        state.then(type(state.step)(**{**vars(state.step), "weights": ((1.0, 1.0, 0.0, 0.0),) * 3}))
    with pytest.raises(TailoredBenchError, match="'g_sets' has the wrong type"):
        SuiteState(**{**vars(state), "g_sets": ((1, 2, 3, "4"),) * 3})


def test_open_llm_tiny_plans_its_five_lm_eval_tasks_by_doc_id(tmp_path, capsys):
    plan = tmp_path / "plan"
    assert main(["plan", "--suite", "open_llm_tiny", "--out", str(plan)]) == 0
    assert "--tasks arc_challenge,gsm8k,hellaswag,truthfulqa_mc2,winogrande --samples" in capsys.readouterr().out
    g_sets = json.loads((plan / "g_set.json").read_text())
    state = read_suite_state(plan)
    assert state.metrics == ("acc_norm", "exact_match,strict-match", "acc_norm", "acc>0.5", "acc")
    suite = load_suite("open_llm_tiny")
    for doc_ids, matrix in zip(g_sets.values(), suite.source, strict=True):
        assert len(doc_ids) == 5 and set(doc_ids) <= set(matrix.items)
    assert max(g_sets["hellaswag"]) > 100  # doc_ids of the full benchmark, not positions among the tiny items
    assert main(["plan", "--suite", "open_llm_tiny", "--tasks", "arc_challenge", "--out", str(tmp_path / "b")]) == 2
    assert "1 tasks for the 5 benchmarks of the suite (arc, gsm8k, hellaswag, truthfulqa, winogrande)" in (
        capsys.readouterr().err
    )


def test_open_llm_tiny_refuses_its_tasks_out_of_order_and_keeps_its_metrics_for_renamed_tasks(tmp_path, capsys):
    swapped = "gsm8k,arc_challenge,hellaswag,truthfulqa_mc2,winogrande"
    assert main(["plan", "--suite", "open_llm_tiny", "--tasks", swapped, "--out", str(tmp_path / "a")]) == 2
    assert "task 'gsm8k' is open_llm_tiny's task of gsm8k, not of arc" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()
    renamed = "arc_challenge_25shot,gsm8k,hellaswag,truthfulqa_mc2,winogrande"
    assert main(["plan", "--suite", "open_llm_tiny", "--tasks", renamed, "--out", str(tmp_path / "b")]) == 0
    state = read_suite_state(tmp_path / "b")
    assert state.metrics == ("acc_norm", "exact_match,strict-match", "acc_norm", "acc>0.5", "acc")


@pytest.mark.slow
def test_open_llm_tiny_evaluates_a_held_out_model(tmp_path):
    """A target model of the registered split, from its recorded answers: every estimate near its accuracy."""
    suite = load_suite("open_llm_tiny")
    row = 7
    model = [dict(zip(m.items, m.values[row].astype(int).tolist(), strict=True)) for m in suite.target]
    plan = tmp_path / "plan"
    plan_suite_g_set("open_llm_tiny", plan)
    first = answer(tmp_path, plan / "g_set.json", model, FIRST)
    plan_suite_n_set(plan, first, 20, n_jobs=2)
    second = answer(tmp_path, plan / "n_set.json", model, SECOND)
    done = estimate_suite(plan, first + second)
    truth = [m.values[row].mean() for m in suite.target]
    assert done["items"] == 100
    assert abs(done["suite_mean"]["estimate"] - np.mean(truth)) < 0.1
    assert all(abs(b["estimate"] - t) < 0.25 for b, t in zip(done["benchmarks"], truth, strict=True))


def test_item_ids_that_are_one_doc_id_are_refused(tmp_path, capsys):
    files, _ = synthetic(tmp_path)
    frame = pd.read_csv(files[1], index_col=0)
    frame.columns = ["07", "7", *frame.columns[2:]]  # SYNTHETIC: one lm-eval doc_id written two ways
    frame.to_csv(files[1])
    assert main(["plan", "--suite", *files, "--g-size", "4", "--out", str(tmp_path / "plan")]) == 2
    assert "two item ids of gsm8k are the one doc_id 7" in capsys.readouterr().err


def test_a_task_whose_every_item_is_asked_is_estimated_by_its_exact_accuracy():
    from tailoredbench.suite import new_model_estimate, new_model_g_sets, new_model_probes
    from tailoredbench.tailored import COMPONENTS

    rng = np.random.default_rng(0)  # SYNTHETIC: two benchmarks of 12 items, every one asked of the new model
    ability = rng.random(31)
    values = [(rng.random((31, 12)) < ability[:, None]).astype(float) for _ in range(2)]
    sources, new = [v[:30] for v in values], [v[30] for v in values]
    g_sets = new_model_g_sets(sources, 3)
    probes = new_model_probes(sources, g_sets, [y[g] for y, g in zip(new, g_sets, strict=True)], [12, 12])
    weights = np.tile(np.eye(len(COMPONENTS))[COMPONENTS.index("local_regression")], (2, 1))  # not exact alone
    done = new_model_estimate(
        sources, probes, [y[p.items] for y, p in zip(new, probes, strict=True)], weights, [0.1] * 2, 0.1
    )
    np.testing.assert_allclose(done.estimate, [y.mean() for y in new])
    assert (done.low <= done.estimate).all() and (done.estimate <= done.high).all()


def test_a_state_of_format_1_is_still_read(suite):
    plan, _, _, first = suite
    state = plan_suite_n_set(plan, first, 10)
    data = json.loads(state.to_json())
    data["suite_state_format"] = 1
    data["checksum"] = checksum(data)
    assert SuiteState.parse(json.dumps(data))[0] == state


# ---- The precision mode: rounds of every task until every interval, or the suite mean's, is narrow enough ----

ROUNDS = ["--max-budget", "20", "--round-size", "4"]


def rounds_until_done(plan, tmp_path, model, first, precision, *more, name="new-model"):
    """``plan --state --precision`` after the G-sets and after each round, answering each round file from ``model``;
    the samples files and the rounds written."""
    files, written = list(first), 0
    for k in range(1, 10):
        assert (
            main(["plan", "--state", str(plan), "--precision", str(precision), *ROUNDS, *more, "--samples", *files])
            == 0
        )
        if not (plan / f"round_{k}.json").exists():
            break
        written = k
        files += answer(tmp_path, plan / f"round_{k}.json", model, f"2025-01-02T{k:02d}-00-00.000001", name)
    return files, written


@pytest.mark.parametrize("of", ["every", "mean"])
def test_rounds_to_a_precision_are_the_precision_simulation_of_the_model_alone(suite, tmp_path, capsys, of):
    plan, files, model, first = suite
    samples, written = rounds_until_done(plan, tmp_path, model, first, 0.1, "--precision-of", of)
    rounds = [json.loads((plan / f"round_{k}.json").read_text()) for k in range(1, written + 1)]
    g_sets = json.loads((plan / "g_set.json").read_text())
    for t in TASKS:  # each round asks round-size new items of every task
        asked = [d for r in rounds for d in r[t]]
        assert all(len(r[t]) == 4 for r in rounds) and len(set(asked) | set(g_sets[t])) == 4 + 4 * written
    capsys.readouterr()
    assert main(["estimate", "--state", str(plan), "--samples", *samples, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["precision"] == 0.1 and result["precision_of"] == of and result["method"] == "tailored_plus"
    assert result["budget"] == 4 + 4 * result["round"] and result["items"] == 3 * result["budget"]
    assert all(b["items"] == result["budget"] for b in result["benchmarks"])

    # the precision mode simulated with this model as the only target: run 0 of seed 2, to the bit
    sources = tuple(ResponseMatrix(pd.read_csv(f, index_col=0)) for f in files)
    targets = tuple(ResponseMatrix([list(results.values())], models=["new"]) for results in model)
    alone = Suite("custom", ("arc", "gsm8k", "truthfulqa"), sources, targets)
    sim = simulate_suite_precision(alone, 0.1, of=of, max_budget=20, round_size=4, runs=1, g_size=4, seed=2).results
    expected = sim.set_index("benchmark").loc[["arc", "gsm8k", "truthfulqa", SUITE_MEAN]]
    found = [*result["benchmarks"], result["suite_mean"]]
    for key in ("estimate", "interval_low", "interval_high"):
        assert [row[key] for row in found] == expected[key].tolist()
    assert expected["items"].iloc[0] == result["items"] and expected["met"].iloc[0] == result["precision_met"]
    assert result["status"] == ("precision reached" if result["precision_met"] else "maximum budget reached")


def test_every_interval_and_the_means_stop_at_different_rounds(suite, tmp_path):
    plan, files, model, first = suite
    other = tmp_path / "mean"
    plan_suite_g_set(files, other, tasks=TASKS, g_size=4, seed=2)
    stops = {}
    for folder, of in ((plan, "every"), (other, "mean")):
        samples = list(first)
        for _ in range(5):
            done = plan_suite_round(folder, samples, 0.1, of=of, max_budget=20, round_size=4)
            if done["file"] is None:
                break
            samples += answer(tmp_path, Path(done["file"]), model, f"2025-01-03T{done['round']:02d}-00-00.000001")
        stops[of] = done
        assert estimate_suite(folder, samples)["precision_met"] == (done["status"] == "precision reached")
    every, mean = stops["every"], stops["mean"]
    # the suite mean's interval is narrower than its benchmarks': it is met sooner, while one benchmark's is not
    assert mean["status"] == "precision reached" and mean["items"] < every["items"]
    assert mean["suite_mean"]["halfwidth"] <= 0.1 < max(b["halfwidth"] for b in mean["benchmarks"])
    assert every["status"] == "maximum budget reached" and every["items"] == 20


def test_a_plan_in_rounds_keeps_its_rule_and_refuses_other_settings_without_force(suite, tmp_path, monkeypatch):
    plan, _, model, first = suite
    done = plan_suite_round(plan, first, 0.1, max_budget=20, round_size=4)
    assert done["status"] == "next round" and done["round"] == 1 and "benchmarks" not in done
    state = read_suite_state(plan)
    assert state.step.rounds == (8,) and SuiteState.parse(state.to_json())[0] == state
    with pytest.raises(TailoredBenchError, match=r"no round is answered yet: run lm-eval on round_1\.json"):
        estimate_suite(plan, first)

    def refit(*args, **kwargs):
        raise AssertionError("fitted again")

    monkeypatch.setattr(suite_workflow, "fit_new_model_rounds", refit)
    before = {p.name: p.read_bytes() for p in plan.iterdir()}
    assert plan_suite_round(plan, first, 0.1, max_budget=20, round_size=4) == done  # the same plan: kept
    assert {p.name: p.read_bytes() for p in plan.iterdir()} == before
    with pytest.raises(TailoredBenchError, match=r"planned with precision 0.1, of every, max budget 20.*add --force"):
        plan_suite_round(plan, first, 0.05, max_budget=20, round_size=4)
    with pytest.raises(TailoredBenchError, match=r"holds a plan to precision 0\.1; add --force"):
        plan_suite_n_set(plan, first, 10)
    monkeypatch.undo()
    plan_suite_n_set(plan, first, 10, force=True)
    assert not (plan / "round_1.json").exists() and (plan / "n_set.json").exists()
    with pytest.raises(TailoredBenchError, match="holds N-sets of budget 10; add --force to plan to a precision"):
        plan_suite_round(plan, first, 0.1)
    done = plan_suite_round(plan, first, 0.1, max_budget=20, round_size=4, method="tailoredbench", force=True)
    assert done["method"] == "tailoredbench" and not (plan / "n_set.json").exists()
    assert read_suite_state(plan).step.weights == ()
    samples = first + answer(tmp_path, plan / "round_1.json", model, SECOND)
    result = estimate_suite(plan, samples)
    assert result["method"] == "tailoredbench" and result["budget"] == 8 and result["round"] == 1

    (plan / "round_1.json").unlink()
    with pytest.raises(TailoredBenchError, match=r"interrupted plan \(round_1.json is missing\)"):
        estimate_suite(plan, samples)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--precision", "1.5"], "the precision must be between 0 and 1 (a half-width), got 1.5"),
        (["--precision", "0"], "the precision must be between 0 and 1"),
        (["--precision", "0.1", "--method", "fluid"], "plan a suite in rounds by tailored_plus or tailoredbench, not"),
        (["--precision", "0.1", "--precision-of", "all"], "argument --precision-of: invalid choice: 'all'"),
        (["--precision", "0.1", "--max-budget", "31"], "the maximum budget 31 exceeds the item count 30"),
        (["--precision", "0.1", "--max-budget", "4"], "the maximum budget 4 must exceed the G-set size 4"),
        (["--method", "tailoredbench"], "--method applies with --precision only"),
        (["--precision", "0.1", "--drop", "truthfulqa_mc2"], "the samples hold no results of task truthfulqa_mc2"),
    ],
)
def test_bad_precision_settings_are_one_line_errors(suite, capsys, args, message):
    plan, _, _, first = suite
    if "--drop" in args:
        first, args = [f for f in first if args[-1] not in f], args[:-2]
    capsys.readouterr()
    assert main(["plan", "--state", str(plan), "--samples", *first, *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.splitlines()) == 1 and err.startswith("tailoredbench: error: "), err
    assert not (plan / "round_1.json").exists() and read_suite_state(plan).step is None


def test_the_rounds_options_go_with_a_suites_second_step(tmp_path, capsys):
    files, _ = synthetic(tmp_path)
    for args, message in (
        (["--precision", "0.1"], "--precision goes with plan --state, after the G-sets' lm-eval run"),
        (["--precision-of", "mean"], "--precision-of goes with plan --state --precision"),
    ):
        assert main(["plan", "--suite", *files, "--out", str(tmp_path / "plan"), *args]) == 2
        assert message in capsys.readouterr().err
    assert main(["plan", "--benchmark", "gsm8k", "--precision-of", "mean", "--out", str(tmp_path / "p")]) == 2
    assert capsys.readouterr().err.strip() == "tailoredbench: error: --precision-of applies to a suite's plan only"


@pytest.mark.lm_eval
def test_a_suite_in_rounds_to_a_precision_through_lm_eval(tmp_path, capsys):
    """Each round is one lm-eval run of the three tasks (its dummy model), read back until the plan is done."""
    (tmp_path / "tasks").mkdir()
    tasks = write_tasks(tmp_path / "tasks")
    files = write_suite_csvs(tmp_path)
    names = "arc_challenge,gsm8k,truthfulqa_mc2"
    plan, out = tmp_path / "plan", tmp_path / "out"
    assert main(["plan", "--suite", *files, "--tasks", names, "--out", str(plan)]) == 0
    samples = lm_eval(tasks, plan / "g_set.json", out, task=names)
    args = ["plan", "--state", str(plan), "--precision", "0.05", "--max-budget", "15", "--precision-of", "mean"]
    for k in (1, 2):
        capsys.readouterr()
        assert main([*args, "--samples", *map(str, samples)]) == 0
        if not (plan / f"round_{k}.json").exists():
            break
        assert f"wrote {plan / f'round_{k}.json'}: round {k}" in capsys.readouterr().out
        new = lm_eval(tasks, plan / f"round_{k}.json", out, task=names)
        assert len(new) == 3
        samples += new
    assert main([*args, "--samples", *map(str, samples)]) == 0  # replayed: nothing more to ask
    assert "reached: run 'tailoredbench estimate" in capsys.readouterr().out
    assert main(["estimate", "--state", str(plan), "--samples", *map(str, samples), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["model"] == "dummy({})" and result["budget"] in (10, 15) and result["precision_of"] == "mean"
    assert result["status"] in ("precision reached", "maximum budget reached")
    assert [b["task"] for b in result["benchmarks"]] == names.split(",")
    for row in [*result["benchmarks"], result["suite_mean"]]:
        assert 0.0 <= row["interval_low"] <= row["estimate"] <= row["interval_high"] <= 1.0
    capsys.readouterr()
    assert main(["estimate", "--state", str(plan), "--samples", *map(str, samples)]) == 0
    assert "(requested +-0.05 on mean)" in capsys.readouterr().out


def test_rounds_planned_on_other_g_set_answers_are_refused_unless_forced(suite, tmp_path):
    plan, _, model, first = suite
    plan_suite_round(plan, first, 0.1, max_budget=20, round_size=4)
    changed = [dict(results) for results in model]
    g_sets = json.loads((plan / "g_set.json").read_text())
    for b, task in enumerate(TASKS):  # SYNTHETIC: every G-set answer turned round
        for doc_id in g_sets[task]:
            changed[b][doc_id] = 1 - changed[b][doc_id]
    (tmp_path / "again").mkdir()
    other = answer(tmp_path / "again", plan / "g_set.json", changed, FIRST)  # the same model, answering otherwise
    with pytest.raises(TailoredBenchError, match="differ from those the rounds were planned with"):
        plan_suite_round(plan, other, 0.1, max_budget=20, round_size=4)
    before = (plan / "round_1.json").read_text()
    done = plan_suite_round(plan, other, 0.1, max_budget=20, round_size=4, force=True)
    assert done["round"] == 1 and read_suite_state(plan).step.rounds == (8,)
    assert (plan / "round_1.json").read_text() != before
