"""gp-IRT (Maia Polo et al., *tinyBenchmarks: evaluating LLMs with fewer examples*, ICML 2024; arXiv 2402.14992).

1. A multidimensional 2PL IRT model (:mod:`tailoredbench.methods.irt`) is fitted on the source models.
2. Anchors: KMeans with ``budget`` clusters on the item parameters ``[a_j, b_j]``; each cluster's
   anchor is the item nearest its centroid, weighted by cluster size.
3. A target's ability is fitted on its anchor results, under a Gaussian prior chosen with the
   dimension on held-out source models (:data:`ABILITY_PRIORS`; 0 is tinyBenchmarks' maximum likelihood).
4. p-IRT: ``lambda_p * mean(seen) + (1 - lambda_p) * mean IRT probability of the unseen items``,
   ``lambda_p = n_seen / n_items``.
5. gp-IRT: ``lambda * anchor estimate + (1 - lambda) * p-IRT``, ``lambda = b^2 / (b^2 + v / (4 n))``:
   ``b`` p-IRT's MAE on held-out sources at budget ``n``, ``v`` the sources' mean per-item variance.

The fit is cached on disk, keyed by the data, the settings and the numeric versions (rounding can move
the non-convex fit). Every step runs on one thread: a seed gives the same numbers on any core count.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits

from .. import cache as run_cache
from .. import rng
from ..cache import cache_dir, load_cached, store_cached
from ..errors import TailoredBenchError
from .base import EachBudget
from .irt import PRIOR, IRTModel, cache_entry, fit_abilities, fit_irt

DIMENSIONS = (2, 5, 10)
#: The fewest source models gp-IRT is fitted on: two held out to choose its dimension, two to fit.
MIN_SOURCES = 4
#: Prior precisions of a new model's ability tried on held-out sources; 0 is maximum likelihood (tinyBenchmarks).
ABILITY_PRIORS = (0.0, 0.01, 0.1, 1.0)
#: KMeans starts per anchor choice (the best by inertia is kept).
KMEANS_STARTS = 10
VALIDATION_SHARE = 0.2
CACHE_VERSION = 4  # 4: every entry carries the key of what it was fitted on


def anchors(model: IRTModel, budget: int, random_state) -> tuple[np.ndarray, np.ndarray]:
    """KMeans anchors on ``[a_j, b_j]``: item indices and cluster-size weights (summing to 1)."""
    from sklearn.cluster import KMeans  # here, not at the top: its import is slow

    features = np.column_stack([model.a, model.b])
    seed = int(random_state.integers(2**31 - 1)) if isinstance(random_state, np.random.Generator) else random_state
    kmeans = KMeans(n_clusters=budget, n_init=KMEANS_STARTS, random_state=seed).fit(features)
    sizes = np.bincount(kmeans.labels_, minlength=budget)
    # numpy's pairwise sum, not cdist's running one: the anchors and numbers as the reports' to the bit
    distance = ((features[:, None, :] - kmeans.cluster_centers_[None, :, :]) ** 2).sum(axis=2)
    chosen = np.empty(budget, dtype=np.int64)
    for c in np.argsort(-sizes, kind="stable"):  # distinct anchors; big clusters choose first
        # the nearest item not yet an anchor, the first on ties (argmin's rule)
        chosen[c] = np.argmin(distance[:, c])
        distance[chosen[c], :] = np.inf
    return chosen, sizes / len(features)


def estimates(
    model: IRTModel, anchor_items, weights, Y_anchor, lam: float, precision: float = PRIOR["theta"]
) -> dict[str, np.ndarray]:
    """Anchor-weighted, p-IRT and gp-IRT estimates of models with results ``Y_anchor``."""
    n_items = len(model.b)
    theta = fit_abilities(Y_anchor, model.a[anchor_items], model.b[anchor_items], precision)
    unseen = np.setdiff1d(np.arange(n_items), anchor_items)
    lam_p = len(anchor_items) / n_items
    if unseen.size:
        p_irt = lam_p * Y_anchor.mean(axis=1) + (1 - lam_p) * model.probabilities(theta, unseen).mean(axis=1)
    else:  # every item is an anchor: the answers are the accuracy
        p_irt = Y_anchor.mean(axis=1)
    anchor_estimate = Y_anchor @ weights
    return {"anchor": anchor_estimate, "p_irt": p_irt, "gp_irt": lam * anchor_estimate + (1 - lam) * p_irt}


def _cache_entry(source: np.ndarray, budgets) -> tuple[Path, str]:
    """Where the fit on ``source`` at ``budgets`` is cached, and its key: a sha256 of everything the fit depends on."""
    settings = {
        "dims": DIMENSIONS,
        "prior": PRIOR,
        "ability_priors": ABILITY_PRIORS,
        "starts": KMEANS_STARTS,
        "val": VALIDATION_SHARE,
        "split": rng.GP_IRT_FIT,
        "budgets": sorted(budgets),
        "v": CACHE_VERSION,
    }
    return cache_entry(source, settings)


def _fits(shape: tuple[int, int], budgets) -> Callable[[dict], None]:
    """A check that an entry holds a fit on ``shape`` sources x items, validated at ``budgets`` (raises ValueError)."""
    n_sources, n_items = shape

    def check(arrays: dict) -> None:
        meta = json.loads(str(arrays["meta"]))
        dim = int(meta["dim"])
        found = {name: array.shape for name, array in arrays.items()}
        expected = {"a": (n_items, dim), "b": (n_items,), "theta": (n_sources, dim), "meta": ()}
        if found != expected:
            raise ValueError(f"arrays of shapes {found}, where a fit on {n_sources} x {n_items} has {expected}")
        if sorted(int(b) for b in meta["bias"]) != sorted(budgets):
            raise ValueError(f"validated at budgets {sorted(meta['bias'])}, not {sorted(budgets)}")
        float(meta["ability_prior"])

    return check


def _validate(train: np.ndarray, val: np.ndarray, dim: int, budgets) -> dict:
    """``{(dim, prior): {budget: p-IRT's MAE on the held-out sources val}}`` of a fit on ``train``."""
    truth = val.mean(axis=1)
    errors: dict[tuple[int, float], dict[int, float]] = {}
    with threadpool_limits(limits=1):  # on a worker too: the same numbers on any machine
        model = fit_irt(train, dim)
        chosen = {budget: anchors(model, budget, 0) for budget in budgets}
        for precision in ABILITY_PRIORS:
            errors[dim, precision] = {}
            for budget, (items, weights) in chosen.items():
                p_irt = estimates(model, items, weights, val[:, items], 0.0, precision)["p_irt"]
                errors[dim, precision][budget] = float(np.mean(np.abs(p_irt - truth)))
    return errors


def _select(source: np.ndarray, budgets) -> tuple[int, float, dict[int, float], dict]:
    """Dimension and ability prior with the lowest p-IRT error on held-out sources, and that error per budget."""
    n = source.shape[0]
    order = np.random.default_rng(rng.GP_IRT_FIT).permutation(n)
    n_val = max(2, round(VALIDATION_SHARE * n))
    val, train = order[:n_val], order[n_val:]
    # the dimensions side by side on the caller's joblib workers, each on one thread
    errors = {}
    for by_prior in Parallel()(delayed(_validate)(source[train], source[val], dim, budgets) for dim in DIMENSIONS):
        errors.update(by_prior)
    best = min(errors, key=lambda k: np.mean(list(errors[k].values())))  # first on ties: lower dimension, ML
    return *best, errors[best], {f"{d}, {p}": e for (d, p), e in errors.items()}


def prepare(source: np.ndarray, budgets) -> dict:
    """Fit (or load from the cache) the IRT model, its dimension and the lambda inputs."""
    if source.shape[0] < MIN_SOURCES:  # the validation split keeps 2 sources, the fit needs some left
        raise TailoredBenchError(
            f"gp_irt needs at least {MIN_SOURCES} source models to fit and validate its IRT model, got "
            f"{source.shape[0]} (an interval's calibration fits it on all sources but a fold)"
        )
    budgets = sorted(int(b) for b in budgets)
    path, key = _cache_entry(source, budgets)
    cached = load_cached(path, key=key, check=_fits(source.shape, budgets))
    if cached is None:
        dim, precision, bias, all_errors = _select(source, budgets)
        model = fit_irt(source, dim)
        meta: dict = {
            "dim": dim,
            "ability_prior": precision,
            "bias": {str(k): v for k, v in bias.items()},
            "validation_mae": all_errors,
        }
        store_cached(path, key=key, folder=cache_dir(), a=model.a, b=model.b, theta=model.theta, meta=json.dumps(meta))
    else:
        model, meta = IRTModel(cached["a"], cached["b"], cached["theta"]), json.loads(str(cached["meta"]))
    accuracy = source.mean(axis=1)
    return {
        "model": model,
        "ability_prior": meta["ability_prior"],
        "bias": {int(k): v for k, v in meta["bias"].items()},
        "variance": float(np.mean(accuracy * (1 - accuracy))),
        "meta": meta,
    }


def weight(prepared: dict, budget: int) -> float:
    """lambda = b^2 / (b^2 + v / (4 n)), as in tinyBenchmarks."""
    bias = prepared["bias"].get(budget)
    if bias is None:  # a budget the fit was not validated at: nearest validated one
        nearest = min(prepared["bias"], key=lambda b: abs(b - budget))
        bias = prepared["bias"][nearest]
    return bias**2 / (bias**2 + prepared["variance"] / (4 * budget))


def _anchors_of_run(prepared: dict, key, budget: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`anchors` of one run and budget, read from the run cache when it holds them."""
    root, model = prepared.get("run_cache"), prepared["model"]
    parts = [model.a, model.b, KMEANS_STARTS, list(key), budget] if root else []  # every input of anchors()
    entry = run_cache.load(root, "anchors", parts, {"items": (budget,), "weights": (budget,)})
    if entry is not None:
        return entry["items"], entry["weights"]
    items, weights = anchors(model, budget, rng.stream(key, rng.GP_IRT_ANCHORS, budget))
    run_cache.store(root, "anchors", parts, items=items, weights=weights)
    return items, weights


class GpIrt(EachBudget):
    """New KMeans anchors per run and budget (seeded), shared by all targets."""

    name = "gp_irt"
    kind = "baseline"
    #: Each fold of an interval's calibration refits the IRT model: ten, not one per source.
    interval_folds = 10

    def prepare(self, source, budgets, *, cache=None, **_) -> dict:
        # every pool, KMeans' OpenMP too: one thread gives the same numbers on any machine
        with threadpool_limits(limits=1):
            return {**prepare(source, budgets), "run_cache": cache}

    def estimate(self, prepared, source, oracle, key, budget):
        with threadpool_limits(limits=1):
            items, weights = _anchors_of_run(prepared, key, budget)
            lam = weight(prepared, budget)
            found = estimates(prepared["model"], items, weights, oracle.ask(items), lam, prepared["ability_prior"])
        return found["gp_irt"]
