"""Evaluate a new model for real: plan its probe, read its lm-eval samples, estimate.

Three steps around two lm-eval runs, each leaving files in a plan folder:

1. :func:`plan_g_set` fits TailoredBench on a benchmark's source models and writes the
   G-set as lm-eval's ``--samples`` selection (``g_set.json``) and ``state.json``.
2. :func:`plan_n_set` reads the model's samples on the G-set, picks its native source
   models (single-target mode) and writes the rest of its probe, the N-set (``n_set.json``).
3. :func:`estimate` reads the samples on the whole probe and returns the estimate.

Or, instead of step 2, the sequential mode (beyond the paper): :func:`plan_round`, run
after each lm-eval run, writes the next round's items (``round_1.json``,
``round_2.json``, ...) until the estimate's interval is as narrow as the requested
precision or the maximum budget is reached, and says which.

Every step refits from the pinned data with the stored seed, so the state stays small
and a step run twice gives the same answer; run ``r`` of a simulation with seed ``s``
is replayed by seed ``s`` here when ``r`` is 0. The one thing kept rather than redone is
the sequential mode's stopping rule: calibrated on the source models when the rounds are
first planned (seconds of work), it is stored in the state and read by the later rounds
and the estimate.

``state.json`` is checked before it is used: its format, its keys and their types, a
sha256 over its contents (an edited, truncated or foreign state is refused) and the
hashes of the pinned data files it was planned on. The samples of one plan must come
from one model. Files are written atomically, and a plan folder in use is not
overwritten without ``force``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np

from . import atomic
from ._version import __version__
from .datasets import load_benchmark
from .datasets.benchmarks import BENCHMARKS
from .datasets.lm_eval import DEFAULT_METRIC, model_of, read_samples, samples_argument
from .errors import TailoredBenchError, check_integer
from .estimator import TailoredBench
from .stopping import MAX_BUDGET, ROUND_SIZE, StoppingRule, check_precision, round_budgets

STATE, G_SET, N_SET = "state.json", "g_set.json", "n_set.json"
#: The sequential mode's files: round k's new items.
ROUND = "round_{}.json"
#: The layout of ``state.json``; a state of another format is refused.
STATE_FORMAT = 3
#: The estimate's interval (calibrated on the source models, see tailoredbench.conformal).
INTERVAL_LEVEL = 0.9

#: Every key of a state after step 1, with its type ("list of X" for lists).
G_KEYS = {
    "state_format": int,
    "tailoredbench_version": str,
    "benchmark": str,
    "task": str,
    "metric": str,
    "seed": int,
    "g_size": int,
    "distance": str,
    "item_count": int,
    "data_sha256": [str],
    "source_models": [str],
    "g_set": [int],
    "g_set_doc_ids": [int],
}
#: The keys step 2 adds.
N_KEYS = {"budget": int, "model": str, "native_sources": [str], "n_set": [int], "n_set_doc_ids": [int]}
#: The keys the sequential mode adds instead (``rounds``: the probe's size after each round planned).
S_KEYS = {
    "precision": float,
    "max_budget": int,
    "round_size": int,
    "model": str,
    "native_sources": [str],
    "rounds": [int],
}
#: The stopping rule's fields (:class:`~tailoredbench.conformal.StoppingRule`), under the state's ``rule``.
RULE_KEYS = {"budgets": [int], "q": [float], "factor": float, "precision": float, "level": float}


def _write_json(path: Path, value) -> None:
    atomic.write_text(path, json.dumps(value, indent=1) + "\n")


def _checksum(state: dict) -> str:
    body = {k: v for k, v in state.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _sealed(state: dict) -> dict:
    return {**state, "checksum": _checksum(state)}


def _data_hashes(bench) -> list[str]:
    return sorted({f["sha256"] for f in bench.provenance.get("files", [])})


def _check_schema(state, path: Path) -> None:
    def fits(value, kind) -> bool:
        if isinstance(kind, list):
            return isinstance(value, list) and all(fits(v, kind[0]) for v in value)
        if kind is float:  # JSON writes 0.05 as a float and 1 as an int
            return isinstance(value, (int, float)) and not isinstance(value, bool)
        return isinstance(value, kind) and not isinstance(value, bool)

    if "budget" in state and "precision" in state:
        raise TailoredBenchError(f"{path}: both a fixed budget and a precision; plan again")
    keys = {**G_KEYS, **(N_KEYS if "budget" in state else {}), **(S_KEYS if "precision" in state else {})}
    for key, kind in keys.items():
        if key not in state:
            raise TailoredBenchError(f"{path}: not a complete plan state (no '{key}'); plan again")
        if not fits(state[key], kind):
            raise TailoredBenchError(f"{path}: '{key}' has the wrong type ({type(state[key]).__name__}); plan again")
    rule = state.get("rule")  # kept by the sequential mode once calibrated
    if rule is not None and not (
        isinstance(rule, dict) and rule.keys() == RULE_KEYS.keys() and all(map(fits, rule.values(), RULE_KEYS.values()))
    ):
        raise TailoredBenchError(f"{path}: its stopping rule is malformed; plan again")
    if rule is not None and "precision" in state and not _rule_fits(rule, state):
        raise TailoredBenchError(
            f"{path}: its stopping rule was calibrated for other settings; plan again with --force"
        )
    if state["benchmark"] not in BENCHMARKS:
        raise TailoredBenchError(f"{path}: unknown benchmark {state['benchmark']!r}")


def fitted(state: dict):
    """The benchmark and the fitted :class:`TailoredBench` of a plan (refitted with its seed)."""
    bench = load_benchmark(state["benchmark"])
    if _data_hashes(bench) != state["data_sha256"]:
        raise TailoredBenchError(f"{state['benchmark']}: planned on other data files than the pinned ones; plan again")
    if list(bench.source.models) != state["source_models"]:
        raise TailoredBenchError(f"{state['benchmark']}: the source models differ from the plan's")
    tb = TailoredBench(state["g_size"], state["distance"], random_state=(state["seed"], 0)).fit(bench.source)
    if [int(i) for i in tb.g_set_] != state["g_set"]:
        raise TailoredBenchError("the G-set refitted from the data differs from the plan's")
    return bench, tb


def plan_g_set(
    benchmark: str,
    out: str | Path,
    *,
    task: str | None = None,
    metric: str | None = None,
    g_size: int = 10,
    seed: int = 0,
    distance: str = "manhattan",
    force: bool = False,
) -> dict:
    """Step 1: write ``g_set.json`` (the G-set for lm-eval's ``--samples``) and ``state.json``.

    A folder that already holds files is refused unless ``force``: it may hold a plan
    whose N-set a model is being run on. With ``force`` the old plan's files go.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise TailoredBenchError(f"{out}: not a folder")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise TailoredBenchError(f"{out}: not empty (a plan may be in use); choose another folder or add --force")
    seed = check_integer(seed, "seed", 0)
    task = task or benchmark
    bench = load_benchmark(benchmark)
    tb = TailoredBench(g_size, distance, random_state=(seed, 0)).fit(bench.source)
    g_items = [int(i) for i in tb.g_set_]
    doc_ids = [bench.source.items[i] for i in g_items]
    state = {
        "state_format": STATE_FORMAT,
        "tailoredbench_version": __version__,
        "benchmark": benchmark,
        "task": task,
        "metric": metric or DEFAULT_METRIC.get(task, "acc"),
        "seed": seed,
        "g_size": g_size,
        "distance": distance,
        "item_count": bench.n_items,
        "data_sha256": _data_hashes(bench),
        "source_models": list(bench.source.models),
        "g_set": g_items,
        "g_set_doc_ids": doc_ids,
    }
    out.mkdir(parents=True, exist_ok=True)
    for stale in (N_SET, *out.glob(ROUND.format("*"))):  # from an older plan in a forced folder
        (out / stale).unlink(missing_ok=True)
    state = _sealed(state)
    _write_json(out / G_SET, samples_argument(task, doc_ids))
    _write_json(out / STATE, state)
    return state


def read_state(folder: str | Path, seed: int | None = None) -> dict:
    """The plan's state, refusing one of another format, package version or seed."""
    path = Path(folder) / STATE
    if not path.is_file():
        raise TailoredBenchError(f"{path}: no plan state; run 'tailoredbench plan --benchmark ...' first")
    try:
        state = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise TailoredBenchError(f"{path}: not a JSON state file (truncated or foreign?); plan again") from None
    if not isinstance(state, dict):
        raise TailoredBenchError(f"{path}: not a plan state (a JSON {type(state).__name__}); plan again")
    if state.get("state_format") != STATE_FORMAT:
        found = state.get("state_format", 1)
        raise TailoredBenchError(f"{path}: a plan state of format {found}, this is format {STATE_FORMAT}; plan again")
    if state.get("tailoredbench_version") != __version__:
        raise TailoredBenchError(
            f"{path}: written by tailoredbench {state.get('tailoredbench_version')}, this is {__version__}; plan again"
        )
    _check_schema(state, path)
    if state.get("checksum") != _checksum(state):
        raise TailoredBenchError(f"{path}: its contents do not match its checksum (edited or damaged); plan again")
    if seed is not None and seed != state["seed"]:
        raise TailoredBenchError(f"{path}: planned with seed {state['seed']}, not {seed}")
    return state


def _one_model(samples) -> str:
    """The model all the samples files come from; files of two models are an error naming both."""
    models = {}
    for path in samples:
        models.setdefault(model_of(path), path)
    if len(models) > 1:
        (first, a), (second, b) = list(models.items())[:2]
        raise TailoredBenchError(f"samples of two models in one plan: {first} ({a}) and {second} ({b})")
    if not models:
        raise TailoredBenchError("no samples files given")
    return next(iter(models))


def _results(state: dict, samples, item_ids) -> dict[int, float]:
    merged: dict[int, float] = {}
    for path in samples:
        for doc_id, value in read_samples(path, state["metric"], state["task"]).items():
            if doc_id in merged and merged[doc_id] != value:
                raise TailoredBenchError(f"{path}: doc_id {doc_id} has conflicting results across files")
            merged[doc_id] = value
    outside = sorted(set(merged) - set(item_ids))
    if outside:
        raise TailoredBenchError(f"doc_id {outside[0]} is not an item of {state['benchmark']}")
    return merged


def _on(results: dict, doc_ids, what: str) -> np.ndarray:
    missing = [d for d in doc_ids if d not in results]
    if missing:
        raise TailoredBenchError(f"the samples lack {len(missing)} {what} doc_ids, e.g. {missing[0]}")
    return np.array([results[d] for d in doc_ids])


def _probe(state: dict, samples, budget: int) -> tuple:
    """Refit, read the samples, and plan the probe from the G-set results."""
    bench, tb = fitted(state)
    results = _results(state, samples, bench.source.items)
    probe = tb.plan(_on(results, state["g_set_doc_ids"], "G-set"), budget)
    return bench, tb, results, probe


def plan_n_set(folder: str | Path, samples, budget: int, seed: int | None = None, force: bool = False) -> dict:
    """Step 2: from the samples on the G-set, write ``n_set.json`` (the rest of the probe).

    Planning again with the same samples and budget changes nothing; with other ones it
    would replace an N-set a model may be running on, and needs ``force``.
    """
    folder = Path(folder)
    state = read_state(folder, seed)
    budget = check_integer(budget, "budget")
    model = _one_model(samples)
    bench, _, _, probe = _probe(state, samples, int(budget))
    doc_ids = [bench.source.items[i] for i in probe.n_set]
    planned = {
        "budget": int(budget),
        "model": model,
        "native_sources": [bench.source.models[i] for i in probe.native_sources],
        "n_set": [int(i) for i in probe.n_set],
        "n_set_doc_ids": doc_ids,
    }
    if "budget" in state and {k: state[k] for k in planned} != planned and not force:
        raise TailoredBenchError(
            f"{folder}: already holds an N-set (budget {state['budget']}, model {state['model']}); "
            "planning another would replace it: add --force, or plan into a new folder"
        )
    if "precision" in state and not force:
        raise TailoredBenchError(
            f"{folder}: holds a plan to precision {state['precision']}; add --force to replace it by a fixed budget"
        )
    _drop_rounds(folder)
    state = _sealed({**_g_part(state), **planned})
    _write_json(folder / N_SET, samples_argument(state["task"], doc_ids))
    _write_json(folder / STATE, state)
    return state


def _g_part(state: dict) -> dict:
    """A state as step 1 left it: without an N-set or rounds (nor the checksum)."""
    return {k: v for k, v in state.items() if k in G_KEYS}


def _drop_rounds(folder: Path) -> None:
    for path in folder.glob(ROUND.format("*")):
        path.unlink()


def _sequential(state: dict, samples) -> dict:
    """Replay the sequential mode on the samples: the rule, every round's probe, and where the rule stops.

    Returns ``native`` (the native sources' names), ``answered`` (rounds whose every item
    has a result), ``status`` (``"precision reached"``, ``"maximum budget reached"`` or
    ``"next round"``) and, once a round is answered, ``stop`` (the first answered round
    whose half-width meets the precision, else the last answered one), ``estimate``,
    ``low`` and ``high`` there.
    """
    bench, tb = fitted(state)
    results = _results(state, samples, bench.source.items)
    if "rule" in state:
        rule = _kept_rule(state)
    else:
        rule = tb.stopping_rule(state["precision"], state["max_budget"], state["round_size"], INTERVAL_LEVEL)
    probes = tb.rounds(_on(results, state["g_set_doc_ids"], "G-set"), rule.budgets)
    native = [bench.source.models[i] for i in probes[0].native_sources]
    if state.get("native_sources", native) != native:
        raise TailoredBenchError("the G-set results differ from those the rounds were planned with")
    out = {"bench": bench, "rule": rule, "probes": probes, "native": native, "answered": 0, "status": "next round"}
    for index, probe in enumerate(probes):
        doc_ids = [bench.source.items[i] for i in probe.items]
        if not all(d in results for d in doc_ids):
            break
        y = np.array([results[d] for d in doc_ids])
        out.update(answered=index + 1, stop=index, y=y)
        if tb.precise(probe, y, rule):  # the rule stops here, even if more rounds were answered
            out["status"] = "precision reached"
            break
    else:
        out["status"] = "maximum budget reached"
    if out["answered"]:
        probe, y = probes[out["stop"]], out.pop("y")
        low, high = tb.interval(probe, y, rule=rule)
        out.update(estimate=tb.estimate(probe, y, rule=rule), low=low, high=high)
    return out


def _kept_rule(state: dict) -> StoppingRule:
    """The stopping rule stored in the state (:func:`_check_schema` has checked it)."""
    kept = state["rule"]
    return StoppingRule(
        tuple(kept["budgets"]),
        tuple(map(float, kept["q"])),
        *map(float, (kept["factor"], kept["precision"], kept["level"])),
    )


def _rule_fits(rule: dict, state: dict) -> bool:
    """Whether a stored rule was calibrated for the plan's rounds, precision and level."""
    budgets = round_budgets(state["g_size"], state["round_size"], state["max_budget"])
    return (
        tuple(rule["budgets"]) == budgets
        and len(rule["q"]) == len(budgets)
        and (float(rule["precision"]), float(rule["level"])) == (state["precision"], INTERVAL_LEVEL)
    )


def plan_round(
    folder: str | Path,
    samples,
    precision: float,
    max_budget: int = MAX_BUDGET,
    round_size: int = ROUND_SIZE,
    seed: int | None = None,
    force: bool = False,
) -> dict:
    """The sequential mode: after the G-set or a round, write the next round's items or say that it is done.

    Reads every samples file of the model so far (G-set and rounds), replays the
    growing probe, and either writes ``round_<k>.json`` (the next ``round_size`` items
    for lm-eval's ``--samples``) or reports that the interval's half-width is at most
    ``precision``, or that ``max_budget`` items were asked. Returns ``status`` (``"next
    round"``, ``"precision reached"`` or ``"maximum budget reached"``), ``items`` asked so
    far, the ``file`` written (or ``None``) and, once a round is answered, the estimate
    and its interval. The rule is calibrated on the source models
    (:meth:`TailoredBench.stopping_rule`).
    """
    folder = Path(folder)
    state = read_state(folder, seed)
    precision = check_precision(precision)
    model = _one_model(samples)
    settings = {"precision": precision, "max_budget": max_budget, "round_size": round_size, "model": model}
    if "budget" in state and not force:
        raise TailoredBenchError(
            f"{folder}: holds an N-set of budget {state['budget']}; add --force to plan to a precision instead"
        )
    if "precision" in state and {k: state[k] for k in settings} != settings and not force:
        planned = ", ".join(f"{k} {state[k]}" for k in settings)
        raise TailoredBenchError(
            f"{folder}: planned with {planned}; add --force to start again, or plan into a new folder"
        )
    fresh = "precision" not in state or {k: state[k] for k in settings} != settings
    if fresh:
        state = {**_g_part(state), **settings, "rounds": []}
    replayed = _sequential(state, samples)
    if fresh:  # a new plan (or a forced one): its rounds start again, once the samples have been read
        _drop_rounds(folder)
        (folder / N_SET).unlink(missing_ok=True)
    bench, probes, answered = replayed["bench"], replayed["probes"], replayed["answered"]
    out = {k: replayed[k] for k in ("status", "estimate", "low", "high", "rule") if k in replayed}
    out.update(items=probes[replayed["stop"]].budget if answered else len(state["g_set"]), file=None, round=answered)
    if out["status"] == "next round":
        new = probes[answered].n_set[len(probes[answered - 1].n_set) if answered else 0 :]
        path = folder / ROUND.format(answered + 1)
        _write_json(path, samples_argument(state["task"], [bench.source.items[i] for i in new]))
        out.update(file=str(path), round=answered + 1)
    rounds = sorted({*state["rounds"], *(p.budget for p in probes[: out["round"]])})
    kept = {"native_sources": replayed["native"], "rounds": rounds, "rule": dataclasses.asdict(replayed["rule"])}
    state = _sealed({**_g_part(state), **settings, **kept})
    _write_json(folder / STATE, state)
    return {**out, "precision": precision}


def _estimate_sequential(state: dict, samples) -> dict:
    replayed = _sequential(state, samples)
    if not replayed["answered"]:
        raise TailoredBenchError("no round is answered yet: run lm-eval on round_1.json, then plan or estimate")
    probe = replayed["probes"][replayed["stop"]]
    bench = replayed["bench"]
    status = replayed["status"]
    return {
        "estimate": replayed["estimate"],
        "interval_low": replayed["low"],
        "interval_high": replayed["high"],
        "budget": probe.budget,
        "precision": state["precision"],
        "precision_met": status == "precision reached",
        "status": "precision not reached yet: plan the next round" if status == "next round" else status,
        "items_used": [bench.source.items[i] for i in probe.items],
        "native_sources": state["native_sources"],
    }


def estimate(folder: str | Path, samples, seed: int | None = None) -> dict:
    """Step 3: the estimated full-benchmark accuracy from the samples on the whole probe.

    In the sequential mode: at the round where the rule stops, with ``precision_met``
    and a ``status`` saying whether the precision or the maximum was reached.
    """
    state = read_state(folder, seed)
    if "budget" not in state and "precision" not in state:
        raise TailoredBenchError(f"{folder}: plan the N-set first ('tailoredbench plan --state ... --budget N')")
    model = _one_model(samples)
    if model != state["model"]:
        raise TailoredBenchError(f"the samples come from {model}, the N-set was planned for {state['model']}")
    common = {"benchmark": state["benchmark"], "task": state["task"], "metric": state["metric"]}
    if "precision" in state:
        result = _estimate_sequential(state, samples)
        return {**common, **result, "interval_level": INTERVAL_LEVEL, "seed": state["seed"], "model": model}
    _, tb, results, probe = _probe(state, samples, state["budget"])
    if [int(i) for i in probe.n_set] != state["n_set"]:
        raise TailoredBenchError("the G-set results differ from those the N-set was planned with")
    y = _on(results, state["g_set_doc_ids"] + state["n_set_doc_ids"], "probe")
    value = tb.estimate(probe, y)
    low, high = tb.interval(probe, y, INTERVAL_LEVEL)
    return {
        **common,
        "estimate": value,
        "interval_level": INTERVAL_LEVEL,
        "interval_low": low,
        "interval_high": high,
        "budget": state["budget"],
        "seed": state["seed"],
        "items_used": state["g_set_doc_ids"] + state["n_set_doc_ids"],
        "native_sources": state["native_sources"],
        "model": model,
    }
