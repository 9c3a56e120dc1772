"""Plan -> lm-eval samples -> plan -> samples -> estimate, through the CLI, on real ARC data."""

import dataclasses
import hashlib
import json
import re

import numpy as np
import pytest

from tailoredbench import TailoredBench, __version__, load_benchmark
from tailoredbench.cli import main
from tailoredbench.datasets.lm_eval import load_lm_eval_samples, parse_samples_argument, read_samples
from tailoredbench.errors import TailoredBenchError
from tailoredbench.intervals import difficulty, interval, pseudo_targets, unlikeness
from tailoredbench.methods import MethodSpec, Oracle, fluid
from tailoredbench.methods.fluid import Fluid
from tailoredbench.stopping import StoppingRule
from tailoredbench.workflow import NSet, PlanState, Rounds, plan_n_set, plan_round, read_state
from tailoredbench.workflow.folder import checksum

TARGET = 17  # a held-out (target) model of the ARC split


@pytest.fixture(scope="module")
def arc():
    return load_benchmark("arc_challenge")


def write_samples(folder, model, doc_ids, row, stamp, task="arc_challenge", metric="acc_norm"):
    """A samples file as lm-eval --log_samples writes it, from recorded results."""
    path = folder / model / f"samples_{task}_{stamp}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        for doc_id in doc_ids:
            record = {"doc_id": doc_id, "doc": {}, "target": "", "filter": "none", metric: float(row[doc_id])}
            handle.write(json.dumps(record) + "\n")
    return path


def test_full_loop_equals_the_simulation(arc, tmp_path, capsys):
    row = arc.target.values[TARGET]
    plan = tmp_path / "plan"
    assert (
        main(["plan", "--benchmark", "arc_challenge", "--task", "arc_challenge", "--seed", "3", "--out", str(plan)])
        == 0
    )
    probe = parse_samples_argument(str(plan / "g_set.json"))  # as lm-eval reads --samples
    assert list(probe) == ["arc_challenge"] and len(probe["arc_challenge"]) == 10
    first = write_samples(tmp_path / "out", "held-out", probe["arc_challenge"], row, "2025-01-01T00-00-00.000001")

    assert main(["plan", "--state", str(plan), "--samples", str(first), "--budget", "30"]) == 0
    nset = parse_samples_argument(json.dumps(json.loads((plan / "n_set.json").read_text())))
    assert len(nset["arc_challenge"]) == 20 and not set(nset["arc_challenge"]) & set(probe["arc_challenge"])
    second = write_samples(tmp_path / "out", "held-out", nset["arc_challenge"], row, "2025-01-01T01-00-00.000001")

    capsys.readouterr()
    assert main(["estimate", "--state", str(plan), "--samples", str(first), str(second), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert len(result["items_used"]) == 30 and result["native_sources"]
    assert all("/" in name for name in result["native_sources"])  # leaderboard model names

    # the simulation's run 0 with seed 3, for this one target
    source = arc.source.values
    spec = MethodSpec.parse("tailoredbench")
    prepared = spec.method.prepare(source, [30], **spec.options)
    simulated = spec.method.run(prepared, source, [{30: Oracle(row[None, :], 30)}], [(3, 0)], **spec.options)
    simulated = simulated[0][""][30][0]
    assert result["estimate"] == pytest.approx(simulated, abs=1e-12)
    assert abs(result["estimate"] - row.mean()) < 0.15


@pytest.fixture
def planned(arc, tmp_path):
    plan = tmp_path / "plan"
    assert main(["plan", "--benchmark", "arc_challenge", "--out", str(plan)]) == 0
    probe = json.loads((plan / "g_set.json").read_text())["arc_challenge"]
    return plan, probe


def one_line_error(capsys, args, message):
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err


def test_samples_of_another_task(planned, arc, tmp_path, capsys):
    plan, probe = planned
    other = write_samples(tmp_path, "m", probe, arc.target.values[0], "2025-01-01T00-00-00", task="hellaswag")
    one_line_error(
        capsys, ["plan", "--state", str(plan), "--samples", str(other), "--budget", "30"], "task 'hellaswag'"
    )


def test_doc_id_outside_the_benchmark(planned, arc, tmp_path, capsys):
    plan, probe = planned
    row = np.concatenate([arc.target.values[0], [1.0]])
    path = write_samples(tmp_path, "m", [*probe, 1172], row, "2025-01-01T00-00-00")
    one_line_error(capsys, ["plan", "--state", str(plan), "--samples", str(path), "--budget", "30"], "not an item")


def reseal(state: dict) -> str:
    """A state.json edited with its checksum made to match, as a careful forger would."""
    return json.dumps({**state, "checksum": checksum(state)})


def test_state_of_another_seed(planned, arc, tmp_path, capsys):
    plan, probe = planned
    path = write_samples(tmp_path, "m", probe, arc.target.values[0], "2025-01-01T00-00-00")
    args = ["plan", "--state", str(plan), "--samples", str(path), "--budget", "30", "--seed", "5"]
    one_line_error(capsys, args, "planned with seed 0")


def test_the_state_round_trips_through_json(planned, arc, tmp_path):
    plan, probe = planned
    assert isinstance(read_state(plan), PlanState) and read_state(plan).step is None
    path = write_samples(tmp_path, "m", probe, arc.target.values[0], "2025-01-01T00-00-00")
    state = plan_n_set(plan, [path], 30)
    assert isinstance(state.step, NSet) and state.step.budget == 30 and len(state.step.n_set_doc_ids) == 20
    assert read_state(plan) == state == PlanState.from_json(state.to_json())
    # the state, and the sha256 of each file lm-eval is given, sealed in with it
    hashes = {name: hashlib.sha256((plan / name).read_bytes()).hexdigest() for name in ("g_set.json", "n_set.json")}
    assert (plan / "state.json").read_text() == state.to_json(hashes)
    assert PlanState.parse((plan / "state.json").read_text()) == (state, hashes)
    assert json.loads(state.to_json())["state_format"] == PlanState.FORMAT


def test_a_state_of_another_version_is_read_but_not_of_another_format(planned, arc, tmp_path, capsys):
    plan, probe = planned
    path = write_samples(tmp_path, "m", probe, arc.target.values[0], "2025-01-01T00-00-00")
    args = ["plan", "--state", str(plan), "--samples", str(path), "--budget", "30"]
    older = dataclasses.replace(read_state(plan), tailoredbench_version="0.0.1")
    (plan / "state.json").write_text(older.to_json())
    assert read_state(plan) == older
    assert main(args) == 0  # a patch release keeps every plan of the same format
    assert read_state(plan).tailoredbench_version == __version__  # as rewritten by this version
    state = json.loads((plan / "state.json").read_text())
    newer = reseal({**state, "state_format": PlanState.FORMAT + 1})
    unnumbered = reseal({k: v for k, v in state.items() if k not in ("state_format", "checksum")})
    for text, found in ((newer, PlanState.FORMAT + 1), (unnumbered, 1)):
        (plan / "state.json").write_text(text)
        message = f"{plan.name}/state.json: a plan state of format {found}, this is format {PlanState.FORMAT}; plan"
        one_line_error(capsys, args, message)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: {"seed": 1}, "its contents do not match its checksum (edited or damaged)"),
        (
            lambda s: {"g_set_doc_ids": s["g_set_doc_ids"][::-1]},
            "its contents do not match its checksum (edited or damaged)",
        ),
        (
            lambda s: {"g_set_doc_ids": s["g_set_doc_ids"][:-1]},
            "the G-set is not 10 items with doc_ids",
        ),  # checked first
    ],
)
def test_a_tampered_state_is_refused_in_one_line(planned, capsys, edit, message):
    plan, _ = planned
    state = json.loads((plan / "state.json").read_text())
    (plan / "state.json").write_text(json.dumps({**state, **edit(state)}))
    one_line_error(capsys, ["estimate", "--state", str(plan), "--samples", "x"], f"state.json: {message}; plan again")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: {"g_set_doc_ids": s["g_set_doc_ids"][:-1]}, "the G-set is not 10 items with doc_ids"),
        (lambda s: {"g_set": [s["g_set"][0]] * 10}, "an item or doc_id repeats or is unpaired"),
        (lambda s: {"g_set": [*s["g_set"][:-1], s["item_count"]]}, "an item outside the benchmark's 1172"),
        (lambda s: {"seed": -1}, "seed must be at least 0, got -1"),
        (lambda s: {"seed": True}, "'seed' has the wrong type (bool)"),
        (lambda s: {"benchmark": "mmlu"}, "unknown benchmark 'mmlu'"),
        (lambda s: {"budget": 30}, "not a complete plan state (no 'model')"),
        (lambda s: {"budget": 30, "precision": 0.05}, "both a fixed budget and a precision"),
    ],
)
def test_a_resealed_state_that_does_not_hold_together_is_refused(planned, capsys, edit, message):
    plan, _ = planned
    state = json.loads((plan / "state.json").read_text())
    (plan / "state.json").write_text(reseal({**state, **edit(state)}))
    one_line_error(capsys, ["estimate", "--state", str(plan), "--samples", "x"], f"state.json: {message}; plan again")
    with pytest.raises(TailoredBenchError, match=re.escape(message)):
        read_state(plan)


def test_the_state_checks_itself_when_built(planned):
    state = read_state(planned[0])
    with pytest.raises(TailoredBenchError, match="'g_set' has the wrong type"):
        dataclasses.replace(state, g_set=list(state.g_set))
    step = NSet(25, "m", (state.source_models[0],), (999, 1000), (999, 1000))
    with pytest.raises(TailoredBenchError, match="a budget of 25 for 12 items"):
        state.then(step)
    with pytest.raises(TailoredBenchError, match="a native source is unknown"):
        state.then(dataclasses.replace(step, budget=12, native_sources=("nobody",)))
    with pytest.raises(TailoredBenchError, match="between 0 and 1"):
        Rounds(1.5, 30, 5, "m", (), ())
    with pytest.raises(TailoredBenchError, match="its rounds are not of its settings"):
        state.then(Rounds(0.05, 30, 5, "m", (), (17,)))


def test_missing_g_set_results_and_budget(planned, arc, tmp_path, capsys):
    plan, probe = planned
    path = write_samples(tmp_path, "m", probe[:-1], arc.target.values[0], "2025-01-01T00-00-00")
    one_line_error(capsys, ["plan", "--state", str(plan), "--samples", str(path), "--budget", "30"], "lack 1 G-set")
    full = write_samples(tmp_path, "n", probe, arc.target.values[0], "2025-01-01T00-00-00")
    one_line_error(capsys, ["plan", "--state", str(plan), "--samples", str(full), "--budget", "5"], "must exceed")


def test_samples_in_two_folders_of_one_name_are_two_models(planned, arc, tmp_path, capsys):
    plan, probe = planned
    first = write_samples(tmp_path / "run1", "model", probe[:5], arc.target.values[TARGET], "2025-01-01T00-00-00")
    second = write_samples(tmp_path / "run2", "model", probe[5:], arc.target.values[0], "2025-01-01T00-00-00")
    args = ["plan", "--state", str(plan), "--samples", str(first), str(second), "--budget", "30"]
    one_line_error(capsys, args, "two folders named 'model'")
    from tailoredbench.errors import DataError

    with pytest.raises(DataError, match="two folders named 'model'"):
        load_lm_eval_samples([first, second], "acc_norm")


def test_plan_onto_a_dangling_symbolic_link_names_it(tmp_path, capsys):
    link = tmp_path / "plan"
    link.symlink_to(tmp_path / "nowhere" / "plan")
    one_line_error(capsys, ["plan", "--benchmark", "arc_challenge", "--out", str(link)], f"{link}: a symbolic link to")
    assert not (tmp_path / "nowhere").exists()


def test_importer_errors(tmp_path):
    row = np.ones(5)
    a = write_samples(tmp_path, "m1", range(5), row, "2025-01-01T00-00-00")
    b = write_samples(tmp_path, "m2", range(5), row, "2025-01-01T00-00-00", task="winogrande", metric="acc")
    from tailoredbench.errors import DataError

    with pytest.raises(DataError, match="several tasks"):
        load_lm_eval_samples([a, b], "acc_norm")
    with pytest.raises(DataError, match="no 'acc'"):
        read_samples(a, "acc")
    a.write_text(a.read_text() + json.dumps({"doc_id": 0, "acc_norm": 1.0}) + "\n")
    with pytest.raises(DataError, match="appears twice"):
        read_samples(a, "acc_norm")


def test_rounds_to_a_precision_through_the_cli(planned, arc, tmp_path, capsys):
    """plan --precision after the G-set and after each round, until it says stop; estimate agrees with Python."""
    plan, probe = planned
    row = arc.target.values[TARGET]
    files = [write_samples(tmp_path / "out", "held-out", probe, row, "2025-01-01T00-00-00.000000")]
    args = ["plan", "--state", str(plan), "--precision", "0.05", "--max-budget", "30"]
    written = []
    for k in range(1, 6):
        capsys.readouterr()
        assert main([*args, "--samples", *map(str, files)]) == 0
        said = capsys.readouterr().out
        if not (plan / f"round_{k}.json").exists():
            assert "precision reached" in said or "maximum budget reached" in said
            break
        items = json.loads((plan / f"round_{k}.json").read_text())["arc_challenge"]
        assert len(items) == 5 and not set(items) & set(probe) and not any(set(items) & set(w) for w in written)
        written.append(items)
        stamp = f"2025-01-01T0{k}-00-00.000000"
        files.append(write_samples(tmp_path / "out", "held-out", items, row, stamp))
    else:
        pytest.fail("the rounds did not stop at the maximum budget")
    # planning again with the same samples changes nothing and writes no file
    assert main([*args, "--samples", *map(str, files)]) == 0
    assert not (plan / f"round_{len(written) + 1}.json").exists()

    capsys.readouterr()
    assert main(["estimate", "--state", str(plan), "--samples", *map(str, files), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["budget"] == len(result["items_used"]) <= 10 + 5 * len(written)
    assert result["status"] in ("precision reached", "maximum budget reached")
    assert result["precision_met"] == (result["status"] == "precision reached")

    # the same from Python: the rule and the growing probe
    tb = TailoredBench(random_state=(0, 0)).fit(arc.source)
    rule = tb.stopping_rule(0.05, max_budget=30)
    probes = tb.rounds(row[tb.g_set_], rule.budgets)
    stopped = next((p for p in probes if tb.precise(p, row[p.items], rule)), probes[-1])
    assert result["budget"] == stopped.budget
    assert result["estimate"] == pytest.approx(tb.estimate(stopped, row[stopped.items], rule=rule), abs=1e-12)
    low, high = tb.interval(stopped, row[stopped.items], rule=rule)
    assert (result["interval_low"], result["interval_high"]) == pytest.approx((low, high), abs=1e-12)


def test_rounds_refuse_what_would_replace_a_plan(planned, arc, tmp_path, capsys):
    plan, probe = planned
    g = write_samples(tmp_path, "m", probe, arc.target.values[0], "2025-01-01T00-00-00")
    base = ["plan", "--state", str(plan), "--samples", str(g)]
    one_line_error(capsys, [*base, "--precision", "0.05", "--budget", "30"], "not both")
    one_line_error(capsys, ["plan", "--state", str(plan), "--precision", "0.05"], "needs --samples")
    one_line_error(capsys, ["estimate", "--state", str(plan), "--samples", str(g)], "plan the N-set first")
    assert main([*base, "--precision", "0.05", "--max-budget", "25"]) == 0
    assert (plan / "round_1.json").exists()
    one_line_error(capsys, ["estimate", "--state", str(plan), "--samples", str(g)], "no round is answered yet")
    one_line_error(capsys, [*base, "--precision", "0.03", "--max-budget", "25"], "add --force")
    one_line_error(capsys, [*base, "--budget", "30"], "add --force")
    assert (plan / "round_1.json").exists()  # nothing was replaced
    assert main([*base, "--budget", "30", "--force"]) == 0
    assert not (plan / "round_1.json").exists() and (plan / "n_set.json").exists()
    one_line_error(capsys, [*base, "--precision", "0.05"], "add --force")
    one_line_error(capsys, [*base, "--precision", "2"], "between 0 and 1")


def test_rounds_keep_the_stopping_rule_they_calibrated(planned, arc, tmp_path, capsys, monkeypatch):
    plan, probe = planned
    row = arc.target.values[TARGET]
    files = [write_samples(tmp_path / "out", "held-out", probe, row, "2025-01-01T00-00-00.000000")]
    args = ["plan", "--state", str(plan), "--precision", "0.05", "--max-budget", "25"]
    assert main([*args, "--samples", *map(str, files)]) == 0
    state = json.loads((plan / "state.json").read_text())
    tb = TailoredBench(random_state=(0, 0)).fit(arc.source)
    assert state["rule"] == json.loads(json.dumps(dataclasses.asdict(tb.stopping_rule(0.05, max_budget=25))))
    kept = read_state(plan)
    assert isinstance(kept.step, Rounds) and kept.step.rule == tb.stopping_rule(0.05, max_budget=25)
    assert PlanState.from_json(kept.to_json()) == kept and kept.step.rounds == (15,)

    # the next round and the estimate read it: no second calibration
    monkeypatch.setattr(TailoredBench, "stopping_rule", lambda *a, **k: pytest.fail("calibrated again"))
    items = json.loads((plan / "round_1.json").read_text())["arc_challenge"]
    files.append(write_samples(tmp_path / "out", "held-out", items, row, "2025-01-01T01-00-00.000000"))
    assert main([*args, "--samples", *map(str, files)]) == 0
    assert main(["estimate", "--state", str(plan), "--samples", *map(str, files)]) == 0

    # a stored rule that does not fit the plan's settings, or is not a rule, is refused (checksum or not)
    # (each message names the file, folder included)
    for rule, message in [({**state["rule"], "precision": 0.04}, "its stopping rule was calibrated for other"),
                          ({**state["rule"], "q": "0.1"}, "'rule.q' has the wrong type (str)")]:  # fmt: skip
        (plan / "state.json").write_text(reseal({**state, "rule": rule}))
        estimate = ["estimate", "--state", str(plan), "--samples", *map(str, files)]
        one_line_error(capsys, estimate, f"{plan.name}/state.json: {message}")


def fluid_plan(plan, row, out, precision, max_budget, round_size, method="fluid"):
    """Plan fluid's rounds through the CLI, each answered with ``row``'s recorded results, until it stops:
    the plan's arguments, the samples files and each round's doc_ids."""
    probe = json.loads((plan / "g_set.json").read_text())["arc_challenge"]
    files = [write_samples(out, "held-out", probe, row, "2025-01-01T00-00-00.000000")]
    args = ["plan", "--state", str(plan), "--method", method, "--precision", str(precision)]
    args += ["--max-budget", str(max_budget), "--round-size", str(round_size)]
    rounds = []
    while main([*args, "--samples", *map(str, files)]) == 0 and (plan / f"round_{len(rounds) + 1}.json").exists():
        rounds.append(json.loads((plan / f"round_{len(rounds) + 1}.json").read_text())["arc_challenge"])
        files.append(write_samples(out, "held-out", rounds[-1], row, f"2025-01-01T00-{len(rounds):02d}-00.000000"))
    return args, files, rounds


def estimate_json(capsys, plan, files) -> dict:
    capsys.readouterr()
    assert main(["estimate", "--state", str(plan), "--samples", *map(str, files), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_fluid_rounds_are_the_most_informative_items_until_the_precision(planned, arc, tmp_path, capsys):
    """Each round: the k items of highest information at the MAP ability from every answer so far; the rule,
    calibrated by the same procedure on source models, stops at the first round narrow enough."""
    plan, probe = planned
    row, source = arc.target.values[TARGET], arc.source.values
    args, files, rounds = fluid_plan(plan, row, tmp_path / "out", 0.06, 60, 5)
    assert rounds and all(len(r) == 5 for r in rounds)
    position = {doc_id: i for i, doc_id in enumerate(arc.source.items)}
    model = Fluid().prepare(source, [60])["model"]
    asked = [position[d] for d in probe]
    for items in rounds:
        expected = fluid.next_items(model, row[asked], asked, 5)
        assert [position[d] for d in items] == expected.tolist()
        asked += expected.tolist()

    # the rule: pseudo-targets of fluid started at each fold's G-set in rounds of 5, as real use
    state = read_state(plan)
    assert isinstance(state.step, Rounds) and state.step.method == "fluid" and state.step.native_sources == ()
    real_use = MethodSpec.parse("fluid", {"g_set_size": 10, "g_set_distance": "manhattan", "round_size": 5})
    budgets = tuple(range(15, 61, 5))
    rule = StoppingRule.calibrate(pseudo_targets(real_use, source, budgets, seed=0), 0.06, 0.9)
    assert state.step.rule == rule and state.step.rounds == budgets[: len(rounds)]

    # the estimate: the simulated procedure's (run 0 of seed 0) at the first round whose interval is narrow enough
    oracles = {b: Oracle(row[None, :], b) for b in budgets}
    prepared = real_use.method.prepare(source, budgets, **real_use.options)
    simulated = real_use.method.run(prepared, source, [oracles], [(0, 0)], **real_use.options)[0][""]
    assert oracles[budgets[len(rounds) - 1]].revealed(0)[0].tolist() == sorted(asked)
    halfwidths = [
        rule.halfwidth(b, difficulty(simulated[b][0], unlikeness(source, asked[:b], row[asked[:b]]), b))
        for b in budgets[: len(rounds)]
    ]
    stop = next(i for i, h in enumerate(halfwidths) if h <= 0.06)
    assert stop == len(rounds) - 1  # no round planned after the rule stopped
    result = estimate_json(capsys, plan, files)
    assert result["status"] == "precision reached" and result["precision_met"] and result["method"] == "fluid"
    assert result["budget"] == budgets[stop] == len(result["items_used"]) and result["native_sources"] == []
    assert result["estimate"] == pytest.approx(simulated[budgets[stop]][0], abs=1e-12)
    low, high = interval(simulated[budgets[stop]][0], halfwidths[stop])
    assert (result["interval_low"], result["interval_high"]) == pytest.approx((low, high), abs=1e-12)
    assert abs(result["estimate"] - row.mean()) < 0.1

    # the replay is deterministic: again, in another order, nothing changes; a new plan writes the same rounds
    written = {p.name: p.read_bytes() for p in plan.iterdir()}
    assert main([*args, "--samples", *map(str, files[::-1])]) == 0
    assert {p.name: p.read_bytes() for p in plan.iterdir()} == written
    again = tmp_path / "again"
    assert main(["plan", "--benchmark", "arc_challenge", "--out", str(again)]) == 0
    assert fluid_plan(again, row, tmp_path / "out-again", 0.06, 60, 5)[2] == rounds


def test_fluid_rounds_of_one_item_to_the_maximum_budget(planned, arc, tmp_path, capsys):
    plan, probe = planned
    row = arc.target.values[TARGET]
    _, files, rounds = fluid_plan(plan, row, tmp_path / "out", 0.01, 14, 1)
    assert [len(r) for r in rounds] == [1, 1, 1, 1]
    model = Fluid().prepare(arc.source.values, [14])["model"]
    position = {doc_id: i for i, doc_id in enumerate(arc.source.items)}
    asked = [position[d] for d in probe]
    for (item,) in rounds:
        info = fluid.information(model, [fluid.ability(model, asked, row[asked])[0]])[0]
        info[asked] = -np.inf
        assert position[item] == int(np.argmax(info))
        asked.append(position[item])
    result = estimate_json(capsys, plan, files)
    assert result["status"] == "maximum budget reached" and not result["precision_met"]
    assert result["budget"] == 14 and sorted(result["items_used"]) == sorted(probe + [r[0] for r in rounds])
    assert result["interval_high"] - result["interval_low"] > 0.02


def test_fluid_refuses_a_changed_answer_that_would_change_a_round(planned, arc, tmp_path, capsys):
    plan, probe = planned
    row = arc.target.values[TARGET].copy()
    g = write_samples(tmp_path / "out", "m", probe, row, "2025-01-01T00-00-00.000000")
    args = ["plan", "--state", str(plan), "--method", "fluid", "--precision", "0.01", "--max-budget", "30"]
    assert main([*args, "--samples", str(g)]) == 0
    first = json.loads((plan / "round_1.json").read_text())["arc_challenge"]
    one = write_samples(tmp_path / "out", "m", first, row, "2025-01-01T00-01-00.000000")
    assert main([*args, "--samples", str(g), str(one)]) == 0
    second = (plan / "round_2.json").read_text()
    row[first] = 1 - row[first]  # the same model, other answers on round 1
    changed = write_samples(tmp_path / "out", "m", first, row, "2025-01-01T00-01-00.000000")
    message = "the answers differ from those the rounds were planned with (round_2.json would change)"
    one_line_error(capsys, [*args, "--samples", str(g), str(changed)], message)
    one_line_error(capsys, ["estimate", "--state", str(plan), "--samples", str(g), str(changed)], message)
    assert (plan / "round_2.json").read_text() == second  # nothing was replaced
    assert main([*args, "--samples", str(g), str(changed), "--force"]) == 0  # planned again from these answers
    assert (plan / "round_2.json").read_text() != second


def test_plan_refuses_mixing_methods_and_fluid_at_a_fixed_budget(planned, arc, tmp_path, capsys):
    plan, probe = planned
    g = write_samples(tmp_path, "m", probe, arc.target.values[0], "2025-01-01T00-00-00")
    base = ["plan", "--state", str(plan), "--samples", str(g)]
    rounds = [*base, "--precision", "0.05", "--max-budget", "20"]
    one_line_error(capsys, [*base, "--method", "fluid", "--budget", "30"], "fluid plans in rounds only")
    one_line_error(capsys, [*rounds, "--method", "gp_irt"], "plan in rounds by tailoredbench or fluid, not 'gp_irt'")
    step_1 = ["plan", "--benchmark", "arc_challenge", "--out", str(tmp_path / "new"), "--method", "fluid"]
    one_line_error(capsys, step_1, "--method goes with plan --state --precision")
    tailored = read_state(plan).then(Rounds(0.05, 20, 5, "folder m", (), ()))  # TailoredBench's, none planned yet
    (plan / "state.json").write_text(tailored.to_json())
    one_line_error(capsys, [*rounds, "--method", "fluid"], "planned in rounds by tailoredbench, not fluid; add --force")
    assert read_state(plan).step.method == "tailoredbench"
    assert main([*rounds, "--method", "fluid", "--force"]) == 0
    assert read_state(plan).step.method == "fluid"
    one_line_error(capsys, rounds, "planned in rounds by fluid, not tailoredbench; add --force")
    one_line_error(capsys, [*rounds, "--method", "tailoredbench"], "planned in rounds by fluid, not tailoredbench")
    one_line_error(capsys, [*base, "--budget", "30"], "holds a plan to precision 0.05; add --force")
    with pytest.raises(TailoredBenchError, match="not 'random'"):
        plan_round(plan, [g], 0.05, 20, method="random")


def test_a_format_3_state_is_read_with_tailoredbenchs_rounds(planned):
    plan, _ = planned
    (plan / "state.json").write_text(read_state(plan).then(Rounds(0.05, 20, 5, "m", (), ())).to_json())
    state = json.loads((plan / "state.json").read_text())
    assert state["state_format"] == 4 and state["method"] == "tailoredbench"
    older = {k: v for k, v in state.items() if k not in ("method", "checksum")} | {"state_format": 3}
    (plan / "state.json").write_text(reseal(older))
    assert read_state(plan) == PlanState.from_json(json.dumps(state))
    fluid_state = read_state(plan).then(dataclasses.replace(read_state(plan).step, method="fluid"))
    assert PlanState.from_json(fluid_state.to_json()) == fluid_state
    with pytest.raises(TailoredBenchError, match="plan in rounds by tailoredbench or fluid, not 'gp_irt'"):
        dataclasses.replace(fluid_state.step, method="gp_irt")
