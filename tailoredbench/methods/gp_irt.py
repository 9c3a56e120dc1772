"""gp-IRT (Maia Polo et al., tinyBenchmarks, ICML 2024).

F. Maia Polo, L. Weber, L. Choshen, Y. Sun, G. Xu, M. Yurochkin. *tinyBenchmarks:
evaluating LLMs with fewer examples*, ICML 2024.

1. A multidimensional 2PL IRT model, ``P(correct) = sigmoid(a_j . theta_m - b_j)``,
   is fitted on the source models (L-BFGS on the joint likelihood with Gaussian
   priors); its dimension is chosen from {2, 5, 10} on held-out source models.
2. Anchors: KMeans with ``budget`` clusters on the item parameters ``[a_j, b_j]``
   (the best of :data:`KMEANS_STARTS` starts seeded by k-means++); each cluster's anchor is the item
   nearest its centroid, weighted by cluster size.
3. A target's ability ``theta`` is fitted on its anchor results. tinyBenchmarks fits
   it by maximum likelihood; here the strength of a Gaussian prior on it is chosen,
   with the dimension, on held-out source models among :data:`ABILITY_PRIORS`, where
   0 is tinyBenchmarks' maximum likelihood (logits clipped at +/-30 as there, so
   that all-correct or all-wrong answers stay finite).
4. p-IRT: ``lambda_p * mean(seen) + (1 - lambda_p) * mean IRT probability of the
   unseen items``, ``lambda_p = n_seen / n_items``.
5. gp-IRT: ``lambda * anchor estimate + (1 - lambda) * p-IRT`` with
   ``lambda = b^2 / (b^2 + v / (4 n))``: ``b`` is p-IRT's mean absolute error on
   held-out source models at that budget, ``v`` the mean over source models of the
   variance of their per-item correctness, ``n`` the budget.

The fit depends only on the source models, the settings and the rounding, so it is cached
on disk (keyed by the data's hash, the settings and :func:`tailoredbench.environment.versions`)
and shared by every run. Every step runs on one thread (BLAS and OpenMP), so that a seed
gives the same numbers whatever the machine's core count. With other library versions, or
on a processor whose instructions round otherwise, floating-point rounding can move the
non-convex IRT fit itself (and the dimension and prior chosen on held-out sources with it),
and so the numbers beyond rounding: the same code gave HellaSwag's gp-IRT an MAE of 0.024 at
budget 20 in one environment and 0.021 in another, GSM8K's 0.047 at budget 20 on a processor
with AVX-512 against 0.051 (the reports' figure, which ``tailoredbench reproduce`` gives
there too: :func:`tailoredbench.environment.reproducible_numerics`). With the
run cache on (:mod:`tailoredbench.run_cache`), each run's anchors are kept there too, so
a notebook that repeats another's runs reads them instead of running KMeans again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numba
import numpy as np
from joblib import Parallel, delayed
from scipy.optimize import minimize
from scipy.special import expit
from threadpoolctl import threadpool_limits

from .. import rng, run_cache
from ..datasets.files import cache_dir, load_cached, store_cached
from ..environment import versions
from .base import Method, each_run

DIMENSIONS = (2, 5, 10)
#: Gaussian prior precisions of abilities, discriminations and difficulties in the IRT fit on the sources.
PRIOR = {"theta": 1.0, "a": 1.0, "b": 0.1}
#: Prior precisions of a new model's ability tried on held-out sources; 0 is maximum likelihood (tinyBenchmarks).
ABILITY_PRIORS = (0.0, 0.01, 0.1, 1.0)
#: KMeans starts per anchor choice (the best by inertia is kept).
KMEANS_STARTS = 10
#: Logits are clipped here when a new model's ability is fitted, as in tinyBenchmarks.
LOGIT_CLIP = 30.0
VALIDATION_SHARE = 0.2
CACHE_VERSION = 3  # 3: every entry carries a sha256 of its contents


@dataclass(frozen=True)
class IRTModel:
    """Item parameters of a fitted multidimensional 2PL model (and the fitted abilities)."""

    a: np.ndarray  # (n_items, dim)
    b: np.ndarray  # (n_items,)
    theta: np.ndarray  # (n_models, dim)

    def probabilities(self, theta: np.ndarray, items=None) -> np.ndarray:
        a, b = (self.a, self.b) if items is None else (self.a[items], self.b[items])
        return expit(np.atleast_2d(theta) @ a.T - b)


def fit_irt(Y: np.ndarray, dim: int, *, seed: int = rng.GP_IRT_FIT, max_iter: int = 3000) -> IRTModel:
    """Fit ``P(Y[m, j] = 1) = sigmoid(a_j . theta_m - b_j)`` by penalised maximum likelihood.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> theta, b = rng.normal(size=(300, 1)), rng.normal(size=20)
    >>> Y = (rng.random((300, 20)) < expit(theta @ np.ones((1, 20)) - b)).astype(float)
    >>> model = fit_irt(Y, 1)
    >>> bool(np.corrcoef(model.b, b)[0, 1] > 0.95)
    True
    """
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    n_models, n_items = Y.shape
    rng = np.random.default_rng(seed)
    start = np.concatenate([rng.normal(0, 0.1, n_models * dim), rng.normal(0, 0.1, n_items * dim), np.zeros(n_items)])
    # start difficulties at the logit of each item's failure rate
    rate = np.clip(Y.mean(axis=0), 0.02, 0.98)
    start[(n_models + n_items) * dim :] = -np.log(rate / (1 - rate))

    def unpack(x):
        theta = x[: n_models * dim].reshape(n_models, dim)
        a = x[n_models * dim : (n_models + n_items) * dim].reshape(n_items, dim)
        return theta, a, x[(n_models + n_items) * dim :]

    softplus, observed = np.empty((n_models, n_items)), np.empty((n_models, n_items))

    def loss(x):
        theta, a, b = unpack(x)
        R = theta @ a.T
        _logistic_terms(R, b, Y, softplus, observed)
        nll = softplus.sum() - observed.sum()
        penalty = 0.5 * (PRIOR["theta"] * (theta**2).sum() + PRIOR["a"] * (a**2).sum() + PRIOR["b"] * (b**2).sum())
        grad = np.concatenate(
            [
                (R @ a + PRIOR["theta"] * theta).ravel(),
                (R.T @ theta + PRIOR["a"] * a).ravel(),
                -R.sum(axis=0) + PRIOR["b"] * b,
            ]
        )
        return nll + penalty, grad

    # Multi-threaded BLAS is several times slower on these thin matrices (measured).
    with threadpool_limits(limits=1, user_api="blas"):
        result = minimize(loss, start, jac=True, method="L-BFGS-B", options={"maxiter": max_iter})
    theta, a, b = unpack(result.x)
    return IRTModel(a.copy(), b.copy(), theta.copy())


@numba.njit(cache=True, nogil=True)
def _logistic_terms(R, b, Y, softplus, observed):
    # With Z = R - b: softplus(Z) and Y * Z, the likelihood's terms, and in place of R the
    # residuals sigmoid(Z) - Y. Softplus and sigmoid come from one exponential, as
    # log(1 + e^Z) = max(Z, 0) + log1p(e^-|Z|). Element by element with the C library's exp
    # and log1p (numpy's too, except on AVX-512, where numpy has its own), summed by numpy
    # after, in one pass: the loss 1.45x as fast on GSM8K's 54 x 1319 (measured).
    for i in range(R.shape[0]):
        for j in range(R.shape[1]):
            z = R[i, j] - b[j]
            e = np.exp(-np.abs(z))
            softplus[i, j] = max(z, 0.0) + np.log1p(e)
            observed[i, j] = Y[i, j] * z
            R[i, j] = (1.0 if z >= 0 else e) / (1.0 + e) - Y[i, j]


def fit_abilities(
    Y_seen: np.ndarray, a: np.ndarray, b: np.ndarray, precision: float = PRIOR["theta"], iterations: int = 50
) -> np.ndarray:
    """Abilities of many models on the same seen items, by batched Newton steps.

    Maximum a posteriori under a Gaussian prior of ``precision`` on the ability;
    ``precision=0`` is maximum likelihood, as tinyBenchmarks fits it.

    Parameters
    ----------
    Y_seen : ndarray of shape (n_models, n_seen)
    a : ndarray of shape (n_seen, dim)
    b : ndarray of shape (n_seen,)
    precision : float
    """
    n_models, dim = Y_seen.shape[0], a.shape[1]
    theta = np.zeros((n_models, dim))
    # a vanishing ridge keeps the Newton system solvable when every answer is right or wrong
    eye = (precision + 1e-8) * np.eye(dim)
    for _ in range(iterations):
        P = expit(np.clip(theta @ a.T - b, -LOGIT_CLIP, LOGIT_CLIP))
        grad = (P - Y_seen) @ a + precision * theta
        W = P * (1 - P)
        H = np.einsum("mj,jd,je->mde", W, a, a) + eye
        step = np.linalg.solve(H, grad[..., None])[..., 0]
        # damped: a Newton step of the convex penalised likelihood, capped for safety
        norm = np.linalg.norm(step, axis=1, keepdims=True)
        theta -= step * np.minimum(1.0, 2.0 / np.maximum(norm, 1e-12))
        if np.abs(step).max() < 1e-8:
            break
    return theta


def _nearer_to(rows: np.ndarray, X: np.ndarray, norms: np.ndarray, closest: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances from ``rows`` to every row of ``X`` (``norms``: its squared
    norms), each the smaller of it and ``closest``: the products by BLAS, the rest in one pass."""
    return _nearer(rows @ X.T, np.einsum("ij,ij->i", rows, rows), norms, closest)


def kmeans_plusplus(X: np.ndarray, n_clusters: int, random_state: np.random.RandomState) -> np.ndarray:
    """k-means++ seeds (Arthur and Vassilvitskii, *k-means++: the advantages of careful
    seeding*, SODA 2007), greedy with ``2 + log k`` candidates per seed, as scikit-learn seeds
    ``KMeans``, of float64 features (gp-IRT's).

    The same draws from ``random_state`` and the same arithmetic as scikit-learn's own
    (unit sample weights), so ``KMeans(init=kmeans_plusplus)`` gives the centres its default
    gives, bit for bit (tested). Without the layers that each of a seeding's distance calls
    goes through there, and with the draw and the element-wise steps each in one compiled
    pass, a seeding of 30 centres takes 1.4 ms instead of scikit-learn's 3.9 ms on 1172 x 6
    features, 3.3 ms instead of 7.4 ms on 8910 x 3 (measured).
    """
    n = X.shape[0]
    weight = np.ones(n)
    norms = np.einsum("ij,ij->i", X, X)
    trials = 2 + int(np.log(n_clusters))
    chosen = np.empty(n_clusters, dtype=np.intp)
    chosen[0] = random_state.choice(n, p=weight / weight.sum())
    closest = _nearer_to(X[chosen[:1]], X, norms, np.full(n, np.inf))
    potential = closest @ weight
    for c in range(1, n_clusters):
        # candidates drawn in proportion to the squared distance to the nearest seed so far
        # (the unit weights left out of the product: multiplying by one is exact)
        candidates = _draw(closest.ravel(), random_state.uniform(size=trials) * potential)
        distances = _nearer_to(X[candidates], X, norms, closest.ravel())
        potentials = distances @ weight[:, None]  # a product, not a sum: the same rounding as scikit-learn's
        best = np.argmin(potentials)
        potential, closest = potentials[best], distances[best]
        chosen[c] = candidates[best]
    return X[chosen]


@numba.njit(cache=True, nogil=True)
def _draw(closest, thresholds):
    # np.searchsorted(np.cumsum(closest), thresholds), capped at the last index (rounding can
    # draw past the end): the running sum added in cumsum's order, in one pass, not stored.
    n, m = closest.shape[0], thresholds.shape[0]
    order = np.argsort(thresholds)
    found = np.full(m, n - 1, dtype=np.intp)
    total, j = 0.0, 0
    for i in range(n):
        total = closest[0] if i == 0 else total + closest[i]
        while j < m and total >= thresholds[order[j]]:  # the first running sum at or above each
            found[order[j]] = i
            j += 1
        if j == m:
            break
    return found


@numba.njit(cache=True, nogil=True)
def _nearer(products, row_norms, norms, closest):
    # From the products, element by element as scikit-learn's numpy operations round:
    # (-2 p + |row|^2) + |x|^2, at least 0, then the smaller of it and closest.
    out = np.empty_like(products)
    for j in range(products.shape[0]):
        for i in range(products.shape[1]):
            d = products[j, i] * -2.0 + row_norms[j]
            d = d + norms[i]
            d = d if d >= 0.0 else 0.0
            out[j, i] = closest[i] if closest[i] <= d else d
    return out


@numba.njit(cache=True, nogil=True)
def _squared_to_centres(features, centres):
    # ((features[:, None] - centres[None]) ** 2).sum(axis=2), summed in numpy's order (its pairwise
    # sum: in turn below 8 terms, else 8 running sums; up to 128 terms), without the 3-D temporary.
    n, k, m = features.shape[0], centres.shape[0], features.shape[1]
    out = np.empty((n, k))
    terms = np.empty(m)
    partial = np.empty(8)
    for i in range(n):
        for c in range(k):
            for j in range(m):
                diff = features[i, j] - centres[c, j]
                terms[j] = diff * diff
            if m < 8:
                total = 0.0
                for j in range(m):
                    total += terms[j]
            else:
                partial[:] = terms[:8]
                j = 8
                while j < m - m % 8:
                    for r in range(8):
                        partial[r] += terms[j + r]
                    j += 8
                total = ((partial[0] + partial[1]) + (partial[2] + partial[3])) + (
                    (partial[4] + partial[5]) + (partial[6] + partial[7])
                )
                while j < m:
                    total += terms[j]
                    j += 1
            out[i, c] = total
    return out


def anchors(model: IRTModel, budget: int, random_state) -> tuple[np.ndarray, np.ndarray]:
    """KMeans anchors on ``[a_j, b_j]``: item indices and cluster-size weights (summing to 1)."""
    from sklearn.cluster import KMeans

    features = np.column_stack([model.a, model.b])
    seed = int(random_state.integers(2**31 - 1)) if isinstance(random_state, np.random.Generator) else random_state
    kmeans = KMeans(n_clusters=budget, n_init=KMEANS_STARTS, random_state=seed, init=kmeans_plusplus).fit(features)
    sizes = np.bincount(kmeans.labels_, minlength=budget)
    centres = kmeans.cluster_centers_
    if features.shape[1] <= 128:  # beyond, numpy's pairwise sum splits otherwise
        distance = _squared_to_centres(features, centres)
    else:
        distance = ((features[:, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
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


def _cache_path(source: np.ndarray, budgets) -> object:
    settings = {
        "dims": DIMENSIONS,
        "prior": PRIOR,
        "ability_priors": ABILITY_PRIORS,
        "starts": KMEANS_STARTS,
        "val": VALIDATION_SHARE,
        "budgets": sorted(budgets),
        "v": CACHE_VERSION,
        # the fit is non-convex: another numeric library or processor's rounding can move it
        "environment": versions(),
    }
    digest = hashlib.sha256(np.ascontiguousarray(source, dtype=np.uint8).tobytes())
    digest.update(repr(source.shape).encode())
    digest.update(json.dumps(settings, sort_keys=True).encode())
    return cache_dir() / "irt" / f"{digest.hexdigest()[:24]}.npz"


def _validate(train: np.ndarray, val: np.ndarray, dim: int, budgets) -> dict:
    """``{(dim, prior): {budget: p-IRT's MAE on the held-out sources val}}`` of a fit on ``train``."""
    truth = val.mean(axis=1)
    errors = {}
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
    # The dimensions are fitted side by side on the workers of the caller's joblib configuration
    # (a simulation's; on one of a fold's workers, one after another), each on one thread.
    errors = {}
    for by_prior in Parallel()(delayed(_validate)(source[train], source[val], dim, budgets) for dim in DIMENSIONS):
        errors.update(by_prior)
    best = min(errors, key=lambda k: np.mean(list(errors[k].values())))  # first on ties: lower dimension, ML
    return *best, errors[best], {f"{d}, {p}": e for (d, p), e in errors.items()}


def prepare(source: np.ndarray, budgets) -> dict:
    """Fit (or load from the cache) the IRT model, its dimension and the lambda inputs."""
    budgets = sorted(int(b) for b in budgets)
    path = _cache_path(source, budgets)
    cached = load_cached(path)
    if cached is None:
        dim, precision, bias, all_errors = _select(source, budgets)
        model = fit_irt(source, dim)
        meta = {
            "dim": dim,
            "ability_prior": precision,
            "bias": {str(k): v for k, v in bias.items()},
            "validation_mae": all_errors,
        }
        store_cached(path, a=model.a, b=model.b, theta=model.theta, meta=json.dumps(meta))
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


class GpIrt(Method):
    name = "gp_irt"
    kind = "baseline"
    #: Each fold of an interval's calibration refits the IRT model: ten, not one per source.
    interval_folds = 10

    def prepare(self, source, budgets, *, cache=None, **_) -> dict:
        # KMeans' OpenMP pool is loaded when scikit-learn is first imported: limited at each call
        with threadpool_limits(limits=1):
            return {**prepare(source, budgets), "run_cache": cache}

    def run(self, prepared, source, oracles, keys, **_):
        return each_run(lambda run, key: self._run(prepared, run, key), oracles, keys)

    def _run(self, prepared, oracles, key) -> dict[int, np.ndarray]:
        """New KMeans anchors per run and budget (seeded), shared by all targets."""
        out = {}
        with threadpool_limits(limits=1):
            for budget, oracle in oracles.items():
                items, weights = _anchors_of_run(prepared, key, budget)
                lam = weight(prepared, budget)
                found = estimates(prepared["model"], items, weights, oracle.ask(items), lam, prepared["ability_prior"])
                out[budget] = found["gp_irt"]
        return out
