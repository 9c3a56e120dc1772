"""TailoredBench as a simulated method: the four steps of :mod:`tailoredbench.tailored` for every target.

The G-set, the native sources and the native item embedding are computed once per
target and serve every budget; each target is asked its probe through the oracle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from .. import rng, run_cache
from ..distances import check_distance
from ..errors import TailoredBenchError
from ..kmedoids import binary_points, label_digest
from ..oracle import Oracle
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
from .base import Method


@dataclass(frozen=True)
class Answered:
    """One target's probe at one budget, and its answers."""

    target: int
    probe: Probe
    native_mean: np.ndarray  # the native sources' mean result on every item
    results: np.ndarray  # the target's results on probe.items


def probes(
    prepared: Mapping,
    source: np.ndarray,
    oracles: Mapping[int, Oracle],
    key: Sequence[int],
    *,
    g_size: int,
    distance: str,
    n_native: int | None = None,
    native_offset: int = 0,
    sample: int = 0,
    grow: bool = False,
):
    """Steps 1-3 of one repetition: yield an :class:`Answered` per target and budget.

    Targets come grouped by their native sources, not in index order; each carries its index.

    ``n_native`` and ``native_offset`` override the adaptive native-source rule
    (see :func:`~tailoredbench.tailored.native_rows`); ``sample`` > 0 chooses each
    target's N-set by CLARA on samples of that many items (:func:`~tailoredbench.tailored.n_set`).
    ``grow``: each budget's probe extends the next smaller one's, whose items stay
    asked (the rounds of the sequential mode); by default each budget's is chosen afresh.
    """
    budgets = sorted(oracles)
    for budget in budgets:
        check_budget(budget, g_size, source.shape[1])
    if sample and sample <= budgets[-1]:
        raise TailoredBenchError(f"sample {sample} must exceed the largest budget {budgets[-1]} (or be 0: exact)")
    n_targets = oracles[budgets[0]].n_targets
    # Every input of the chosen items is in the key (tailoredbench.run_cache). A budget's
    # items depend on no other budget's, except on a growing probe, whose rounds form one entry.
    root = prepared.get("run_cache")
    cache_key = (
        [source, oracles[budgets[0]].digest, list(key), g_size, distance, n_native, native_offset, sample, grow]
        if root
        else []  # no cache: no key to hash
    )
    groups = [tuple(budgets)] if grow else [(b,) for b in budgets]
    kept, g_items = {}, None  # each cached budget's items per target, and the G-set
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
        # The G-set stays exact under `sample`: it is chosen once per run for all targets.
        g_items = g_set(source, g_size, random_state=rng.stream(key, rng.G_SET), points=prepared["points"])
    g_target = oracles[budgets[0]].ask(g_items)
    for budget in budgets[1:]:
        oracles[budget].ask(g_items)
    adaptive, order = ranked_sources(source[:, g_items], g_target, distance=distance)
    neighbours = native_rows(order, adaptive if n_native is None else n_native, native_offset)
    chosen = {b: np.empty((n_targets, b), dtype=np.int32) for b in budgets if b not in kept}
    # each chosen probe's label digest: a cached probe's labels are then read without the
    # distances between all items (tailoredbench.kmedoids.known_labels)
    digests = {b: np.empty(n_targets, dtype=np.uint64) for b in chosen}
    # Targets with the same native sources, in the same order, share one item embedding: its
    # distances are computed once (on ARC, GSM8K, HellaSwag and Winogrande, 8-39% of the targets' lists differ).
    sharing = {}
    for t, rows in enumerate(neighbours):
        sharing.setdefault(rows.tobytes(), []).append(t)
    for targets in sharing.values():
        rows = neighbours[targets[0]]
        native = source[rows]
        points = binary_points(native.T, distance)
        native_mean = native.mean(axis=0)
        cached = [(t, b) for t in targets for b in budgets if b in kept]
        read = chosen_probes(
            points, g_items, rows, [kept[b][0][t] for t, b in cached], [int(kept[b][1][t]) for t, b in cached]
        )
        read = dict(zip(cached, read, strict=True))
        for t in targets:
            asked = ()
            for budget in budgets:
                if budget in kept:
                    probe = read[t, budget]
                else:
                    probe = n_set(
                        source,
                        rows,
                        g_items,
                        budget,
                        random_state=rng.stream(key, rng.N_SET, t, budget),
                        points=points,
                        sample=sample,
                        asked=asked,
                    )
                    chosen[budget][t] = probe.items
                    if root:  # kept only with the items
                        digests[budget][t] = label_digest(probe.labels)
                if grow:
                    asked = probe.n_set
                yield budget, Answered(t, probe, native_mean, oracles[budget].ask(probe.items, targets=[t])[0])
    for group in groups:
        if group[0] not in kept:
            items = {f"items_{b}": chosen[b] for b in group}
            labels = {f"labels_{b}": digests[b] for b in group}
            run_cache.store(root, "probes", [*cache_key, list(group)], g_set=g_items, **items, **labels)


class TailoredBenchMethod(Method):
    """TailoredBench (Yuan et al., ACL 2025), faithful to the paper's code.

    Options: ``g_size``, ``distance``; ``calibrate=False`` is the ablation's
    uncalibrated arm; ``n_native`` and ``native_offset`` fix the native sources to a
    count or consistency band instead of the adaptive rule; ``sample`` (0, exact, by
    default) is the large-matrix approximation: each target's N-set by CLARA on
    samples of that many items (the G-set, chosen once per run, stays exact);
    ``grow`` makes each budget's probe extend the next smaller one's (the sequential
    mode's rounds, :mod:`tailoredbench.sequential`).
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

    def prepare(self, source, budgets, *, distance, **_options) -> dict:
        """The items as points under the full source embedding, and the run cache's folder (or None)."""
        # the distances formed here, once for every run, not again in each worker a run is sent to
        points = binary_points(source.T, check_distance(distance)).with_distances()
        return {"points": points, "run_cache": run_cache.folder()}

    def run(self, prepared, source, oracles, key, *, calibrate=True, **options) -> dict[int, np.ndarray]:
        estimates = {b: np.empty(oracles[b].n_targets) for b in oracles}
        for budget, a in probes(prepared, source, oracles, key, **options):
            estimates[budget][a.target] = (
                calibrated_estimate(a.native_mean, a.probe, a.results)
                if calibrate
                else uncalibrated_estimate(a.probe, a.results)
            )
        return estimates
