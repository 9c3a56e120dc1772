"""TailoredBench as a simulated method: the four steps of :mod:`tailoredbench.tailored` for every target."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np

from .. import cache as run_cache
from .. import rng
from ..errors import TailoredBenchError
from ..kmedoids import binary_points, check_distance, label_digest
from ..tailored import (
    Probe,
    calibrated_estimate,
    check_budget,
    chosen_probes,
    g_set,
    n_set,
    native_rows,
    ranked_sources,
    uncalibrated_estimate,
)
from .base import Method, Oracle


@dataclass(frozen=True)
class Answered:
    """One target's probe at one budget, and its answers."""

    target: int
    probe: Probe
    native_mean: np.ndarray  # the native sources' mean result on every item
    results: np.ndarray  # the target's results on probe.items


def probes(prepared: Mapping, source: np.ndarray, oracles: Mapping[int, Oracle], key: Sequence[int], **options):
    """Steps 1-3 of one repetition: yield (budget, :class:`Answered`), targets grouped by native sources."""
    for _, budget, answered in probes_of_runs(prepared, source, [oracles], [key], **options):
        yield budget, answered


def probes_of_runs(
    prepared: Mapping,
    source: np.ndarray,
    oracles_of_runs: Sequence[Mapping[int, Oracle]],
    keys: Sequence[Sequence[int]],
    **options,
):
    """Steps 1-3 of several repetitions: yield (position of the run, budget, :class:`Answered`).

    Each run's probes are those it gets alone; runs share the item embeddings of the native-source lists
    they have in common (the same lists come back from run to run), one list's held at a time.
    The options are :class:`TailoredBenchMethod`'s but ``calibrate``; ``g_size`` and ``distance`` are required.
    """
    plans = [
        _plan(prepared, source, oracles, key, **options) for oracles, key in zip(oracles_of_runs, keys, strict=True)
    ]
    distance = options["distance"]
    # targets with the same native sources, in the same order, share one item embedding, in a run and across runs
    sharing: dict[bytes, dict[int, list[int]]] = {}
    for i, plan in enumerate(plans):
        for t, rows in enumerate(plan.neighbours):
            sharing.setdefault(rows.tobytes(), {}).setdefault(i, []).append(t)
    for by_run in sharing.values():
        first, targets = next(iter(by_run.items()))
        rows = plans[first].neighbours[targets[0]]
        native = source[rows]
        points = binary_points(native.T, distance)
        native_mean = native.mean(axis=0)
        for i, targets in by_run.items():
            for budget, answered in plans[i].answer(source, rows, targets, points, native_mean):
                yield i, budget, answered
    for plan in plans:
        plan.store()


@dataclass
class _Plan:
    """One run's G-set, native sources, and the probes chosen (or read from the run cache) so far."""

    oracles: Mapping[int, Oracle]
    key: Sequence[int]
    budgets: list[int]
    g_items: np.ndarray
    neighbours: np.ndarray
    kept: dict  # each cached budget's (items, label digests) per target
    chosen: dict  # each budget's items per target, as they are chosen
    digests: dict  # each chosen probe's label digest
    root: Path | None  # the run cache's folder
    cache_key: list
    groups: list
    sample: int  # CLARA's sample size for the N-set (0: exact)
    grow: bool  # each budget's probe extends the next smaller one's

    def answer(self, source, rows, targets, points, native_mean):
        """The probes of ``targets``, whose native sources are ``rows`` (embedded as ``points``): (budget, Answered)."""
        kept, g_items = self.kept, self.g_items
        cached = [(t, b) for t in targets for b in self.budgets if b in kept]
        read = chosen_probes(
            points, g_items, rows, [kept[b][0][t] for t, b in cached], [int(kept[b][1][t]) for t, b in cached]
        )
        read = dict(zip(cached, read, strict=True))
        for t in targets:
            asked = ()
            for budget in self.budgets:
                if budget in kept:
                    probe = read[t, budget]
                else:
                    gen = rng.stream(self.key, rng.N_SET, t, budget)
                    probe = n_set(
                        source, rows, g_items, budget, random_state=gen, points=points, sample=self.sample, asked=asked
                    )
                    self.chosen[budget][t] = probe.items
                    if self.root:  # a cached probe's labels are read back by their digest (kmedoids.known_labels)
                        self.digests[budget][t] = label_digest(probe.labels)
                if self.grow:
                    asked = probe.n_set
                yield budget, Answered(t, probe, native_mean, self.oracles[budget].ask(probe.items, targets=[t])[0])

    def store(self) -> None:
        """Keep the probes chosen in the run cache (if one is in use)."""
        for group in self.groups:
            if group[0] not in self.kept:
                items = {f"items_{b}": self.chosen[b] for b in group}
                labels = {f"labels_{b}": self.digests[b] for b in group}
                parts = [*self.cache_key, list(group)]
                run_cache.store(self.root, "probes", parts, g_set=self.g_items, **items, **labels)


def _plan(
    prepared, source, oracles, key, *, g_size, distance, n_native=None, native_offset=0, sample=0, grow=False
) -> _Plan:
    """Steps 1 and 2 of one run (G-set, native sources), and what the run cache holds of its probes."""
    budgets = sorted(oracles)
    for budget in budgets:
        check_budget(budget, g_size, source.shape[1])
    if sample and sample <= budgets[-1]:
        raise TailoredBenchError(f"sample {sample} must exceed the largest budget {budgets[-1]} (or be 0: exact)")
    n_targets = oracles[budgets[0]].n_targets
    # every input of the chosen items is in the key; a growing probe's rounds form one entry
    root = prepared.get("run_cache")
    cache_key = (
        [source, oracles[budgets[0]].digest, list(key), g_size, distance, n_native, native_offset, sample, grow]
        if root
        else []  # no cache: no key to hash
    )
    groups = [tuple(budgets)] if grow else [(b,) for b in budgets]
    kept, g_items = {}, None
    for group in groups:
        shapes = {
            "g_set": (g_size,),
            **{f"items_{b}": (n_targets, b) for b in group},
            **{f"labels_{b}": (n_targets,) for b in group},
        }
        entry = run_cache.load(root, "probes", [*cache_key, list(group)], shapes)
        if entry is not None:
            kept.update({b: (entry[f"items_{b}"], entry[f"labels_{b}"]) for b in group})
            g_items = entry["g_set"]
    if g_items is None:
        # exact under `sample`: it is chosen once per run
        g_items = g_set(source, g_size, random_state=rng.stream(key, rng.G_SET), points=prepared["points"])
    g_target = oracles[budgets[0]].ask(g_items)
    for budget in budgets[1:]:
        oracles[budget].ask(g_items)
    adaptive, order = ranked_sources(source[:, g_items], g_target, distance=distance)
    neighbours = native_rows(order, adaptive if n_native is None else n_native, native_offset)
    chosen = {b: np.empty((n_targets, b), dtype=np.int32) for b in budgets if b not in kept}
    digests = {b: np.empty(n_targets, dtype=np.uint64) for b in chosen}
    return _Plan(
        oracles, key, budgets, g_items, neighbours, kept, chosen, digests, root, cache_key, groups, sample, grow
    )


class TailoredBenchMethod(Method):
    """TailoredBench (Yuan et al., ACL 2025), faithful to the paper's code but for one tie: a medoid keeps its own
    cluster (and its answer is read) where the code's nearest-medoid rule gives it to an identical earlier one.

    Options beyond ``g_size`` and ``distance``: ``calibrate=False``, the ablation's uncalibrated arm;
    ``n_native`` and ``native_offset``, a count or consistency band of native sources instead of the
    adaptive rule (:func:`~tailoredbench.tailored.native_rows`); ``sample`` > 0, each N-set by CLARA on
    samples of that many items; ``grow``, each budget's probe extends the next smaller one's.
    """

    name = "tailoredbench"
    kind = "tailored"
    options = MappingProxyType(
        {
            "g_size": 10,
            "distance": "manhattan",
            "calibrate": True,
            "n_native": None,
            "native_offset": 0,
            "sample": 0,
            "grow": False,
        }
    )
    real_use = True

    def prepare(self, source, budgets, *, cache=None, distance="manhattan", **_) -> dict:
        """The items as points under the full source embedding, and the run cache's folder (or None)."""
        # the distances formed here, once, not again in each worker
        points = binary_points(source.T, check_distance(distance)).with_distances()
        return {"points": points, "run_cache": cache}

    def run(self, prepared, source, oracles, keys, *, variants=("",), calibrate=True, **options):
        """Several runs, sharing the native sources' item embeddings (:func:`probes_of_runs`)."""
        estimates = [{b: np.empty(run[b].n_targets) for b in run} for run in oracles]
        for i, budget, a in probes_of_runs(prepared, source, oracles, keys, **options):
            estimates[i][budget][a.target] = (
                calibrated_estimate(a.native_mean, a.probe, a.results)
                if calibrate
                else uncalibrated_estimate(a.probe, a.results)
            )
        return [{"": e} for e in estimates]
