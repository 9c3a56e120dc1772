"""What the method walkthrough computes: a tiny SYNTHETIC matrix, each step's numbers as a table, every target.

The four steps are :mod:`tailoredbench.tailored`'s functions; this module lays their inputs and
outputs out for a reader, over targets, seeds and budgets. A target is evaluated alone, as a new model.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from . import rng
from .kmedoids import BinaryPoints, binary_points, nearest_medoid, standardize
from .methods.random import random_items
from .metrics import summarize
from .tailored import Probe, calibrated_estimate, g_set, g_set_distances, n_set, native_sources

#: The tiny example's seed, G-set size and budget: a matrix small enough to follow every step by eye.
TOY_SEED = 177
TOY_G_SIZE = 3
TOY_BUDGET = 5
#: The two estimates compared on every target, by their column in :func:`every_target`'s table.
ESTIMATES = {"estimate": "calibrated estimate", "probe_mean": "plain mean of the probe"}


def toy_matrix(seed: int = TOY_SEED, n_sources: int = 7, n_items: int = 12) -> pd.DataFrame:
    """A SYNTHETIC 0/1 matrix: ``n_sources`` source models (S1, S2, ...) and one target (T) by ``n_items`` items.

    Odd items need skill A, even items skill B; odd sources and the target are better at A, even
    sources at B; a model is right with a logistic probability of its skill minus the item's difficulty.

    Examples
    --------
    >>> toy = toy_matrix()
    >>> toy.shape, toy.index[-1], toy.columns[0]
    ((8, 12), 'T', 'q1')
    """
    gen = np.random.default_rng(seed)
    skill = np.arange(n_items) % 2  # 0: skill A, 1: skill B
    difficulty = gen.normal(0.0, 1.0, n_items)
    group = np.append(np.arange(n_sources) % 2, 0)  # the target is of the odd sources' kind
    ability = gen.normal(0.0, 0.7, size=(n_sources + 1, 2))
    rows = np.arange(n_sources + 1)
    ability[rows, group] += 1.2
    ability[rows, 1 - group] -= 0.6
    p = 1.0 / (1.0 + np.exp(-3.0 * (ability[:, skill] - difficulty)))
    values = (gen.random(p.shape) < p).astype(int)
    index = [f"S{k + 1}" for k in range(n_sources)] + ["T"]
    return pd.DataFrame(values, index=index, columns=[f"q{j + 1}" for j in range(n_items)])


def item_embedding(source: pd.DataFrame) -> pd.DataFrame:
    """Items (rows) embedded by the source models (columns): each source's row of results z-scored across items.

    The coordinates :func:`~tailoredbench.tailored.g_set` clusters (population standard
    deviation; a source with one result everywhere scales by 1).
    """
    return pd.DataFrame(standardize(source.to_numpy(dtype=float).T), index=source.columns, columns=source.index)


def item_map(source: np.ndarray) -> np.ndarray:
    """2-D principal components of the items embedded by z-scored source correctness."""
    Z = standardize(np.asarray(source, dtype=float).T)
    Z = Z - Z.mean(axis=0)
    U, S, _ = np.linalg.svd(Z, full_matrices=False)
    return U[:, :2] * S[:2]


def clusters(source: np.ndarray, medoids: Sequence[int], distance: str = "manhattan") -> np.ndarray:
    """Each item's nearest medoid (a position in ``medoids``, the earlier on ties); items embedded by ``source``."""
    points = binary_points(np.asarray(source, dtype=float).T, distance)
    labels, _ = nearest_medoid(points, np.asarray(medoids, dtype=np.int64))
    return labels


def cluster_members(items: Sequence[str], medoids: Sequence[int], labels: np.ndarray) -> pd.DataFrame:
    """One row per medoid (by item name): the items of its cluster and their count.

    Examples
    --------
    >>> cluster_members(["a", "b", "c"], [2, 0], np.array([1, 0, 0]))["items"].tolist()
    ['b, c', 'a']
    """
    names = np.asarray(items)
    labels = np.asarray(labels)
    members = [names[labels == k] for k in range(len(medoids))]
    return pd.DataFrame(
        {"items": [", ".join(m) for m in members], "size": [len(m) for m in members]},
        index=pd.Index(names[np.asarray(medoids)], name="medoid"),
    )


def distances_to_sources(
    names: Sequence[str], g_source: np.ndarray, g_target: np.ndarray, native: Sequence[int], distance: str = "manhattan"
) -> tuple[pd.DataFrame, float]:
    """One target's distance to each source on the G-set, nearest first, and the threshold.

    Columns: ``distance``, ``within threshold`` (at most the mean distance over all
    pairs of models) and ``native`` (kept by :func:`~tailoredbench.tailored.native_sources`).
    """
    to_sources, threshold = g_set_distances(g_source, np.atleast_2d(g_target), distance=distance)
    kept = np.isin(np.arange(len(names)), np.asarray(native))
    columns = {"distance": to_sources[0], "within threshold": to_sources[0] <= threshold, "native": kept}
    table = pd.DataFrame(columns, index=pd.Index(list(names), name="source"))
    return table.sort_values("distance", kind="stable"), threshold


def estimate_by_item(native_mean: np.ndarray, probe: Probe, results: np.ndarray, items: Sequence[str]) -> pd.DataFrame:
    """The calibrated estimate item by item: medoid, ``m_i``, ``m_c``, ``y_c``, factor and the item's value.

    The mean of the last column, kept in [0, 1], is
    :func:`~tailoredbench.tailored.calibrated_estimate`.
    """
    m = np.asarray(native_mean, dtype=float)
    y = np.asarray(results, dtype=float)
    c = probe.labels
    m_c = m[probe.items][c]
    factor = (y[c] + 0.5) / (m_c + 0.5)
    names = np.asarray(items)
    columns = {"c(i)": names[probe.items][c], "m_i": m, "m_c": m_c, "y_c": y[c].astype(int), "factor": factor}
    columns["item estimate"] = np.minimum(1.0, (m + 0.5) * factor - 0.5)
    return pd.DataFrame(columns, index=pd.Index(names, name="item i"))


def median_target(truth: np.ndarray) -> int:
    """The target whose accuracy is nearest the median accuracy (the lower index on ties).

    Examples
    --------
    >>> median_target(np.array([0.9, 0.2, 0.5, 0.45]))
    3
    """
    truth = np.asarray(truth, dtype=float)
    return int(np.argmin(np.abs(truth - np.median(truth))))


def every_target(
    source: np.ndarray,
    targets: np.ndarray,
    *,
    g_size: int,
    budgets: Sequence[int],
    seeds: Sequence[int],
    distance: str = "manhattan",
    together: bool = False,
) -> pd.DataFrame:
    """Every target, each evaluated alone, for each seed and budget: the calibrated estimate and the probe's plain mean.

    A row is what the walkthrough's four steps give for that target, seed and budget.
    ``together=True`` takes every target's G-set answers at once, as the paper and the benchmark
    notebooks do: one native-source count for all. Columns: ``seed, budget, target, truth,
    estimate, probe_mean, n_native, native_accuracy`` (the native sources' mean accuracy).
    """
    source = np.asarray(source, dtype=float)
    targets = np.asarray(targets, dtype=float)
    truth = targets.mean(axis=1)
    rows = []
    for seed in seeds:
        g = g_set(source, g_size, distance=distance, random_state=seed)
        if together:
            n_together, nearest_all = native_sources(source[:, g], targets[:, g], distance=distance)
        embedded: dict[bytes, BinaryPoints] = {}  # targets with the same native sources share their item embedding
        for t, answers in enumerate(targets):
            if together:
                n_native, native = n_together, nearest_all[t]
            else:
                n_native, nearest = native_sources(source[:, g], answers[None, g], distance=distance)
                native = nearest[0]
            key = native.tobytes()
            if key not in embedded:
                embedded[key] = binary_points(source[native].T, distance)
            native_mean = source[native].mean(axis=0)
            for budget in budgets:
                probe = n_set(source, native, g, budget, distance=distance, random_state=seed, points=embedded[key])
                results = answers[probe.items]
                estimate = calibrated_estimate(native_mean, probe, results)
                rows.append((seed, budget, t, truth[t], estimate, results.mean(), n_native, native_mean.mean()))
    columns = ["seed", "budget", "target", "truth", "estimate", "probe_mean", "n_native", "native_accuracy"]
    return pd.DataFrame(rows, columns=columns)


def quality(table: pd.DataFrame) -> pd.DataFrame:
    """MAE and Kendall's tau of each estimate, mean and standard error over the seeds, per budget.

    Columns: ``estimate`` (its label in :data:`ESTIMATES`), ``budget``, ``mae``, ``mae_se``,
    ``kendall_tau``, ``kendall_tau_se``, ``runs`` (seeds).
    """
    renamed = table.rename(columns={"seed": "run", "truth": "true"})
    columns = ["run", "budget", "target", "true"]
    each = [
        renamed[[*columns, c]].rename(columns={c: "estimate"}).assign(method=label) for c, label in ESTIMATES.items()
    ]
    return summarize(pd.concat(each, ignore_index=True)).rename(columns={"method": "estimate"})


def random_sample(targets: np.ndarray, *, budgets: Sequence[int], seeds: Sequence[int]) -> pd.DataFrame:
    """The baseline that needs no source model: each target's mean on ``budget`` items drawn at random.

    The Random baseline's draw (:func:`~tailoredbench.methods.random.random_items`): one subset per seed and
    budget, shared by all targets, as in the benchmark notebooks. Columns as :func:`quality`'s, with the
    estimate ``random sample``.
    """
    targets = np.asarray(targets, dtype=float)
    truth = targets.mean(axis=1)
    rows = []
    for seed in seeds:
        for budget in budgets:
            estimates = targets[:, random_items(rng.as_key(seed), budget, targets.shape[1])].mean(axis=1)
            rows += [(seed, budget, t, truth[t], estimate) for t, estimate in enumerate(estimates)]
    table = pd.DataFrame(rows, columns=["run", "budget", "target", "true", "estimate"])
    return summarize(table.assign(method="random sample")).rename(columns={"method": "estimate"})


def with_se(mean: float, se: float, digits: int = 4) -> str:
    """``mean ± se`` at a precision that shows the standard error.

    Examples
    --------
    >>> with_se(0.03931, 0.00084)
    '0.0393 ± 0.0008'
    """
    return f"{mean:.{digits}f} ± {se:.{digits}f}"
