"""Item response theory: the multidimensional two-parameter logistic (2PL) model.

``P(model m answers item j) = sigmoid(a_j . theta_m - b_j)`` (Birnbaum 1968, in Lord and Novick,
*Statistical theories of mental test scores*), fitted as tinyBenchmarks (Maia Polo et al. 2024, arXiv
2402.14992): item parameters and source abilities jointly (:func:`fit_irt`), then a new model's ability.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np
from scipy.optimize import minimize
from scipy.special import expit
from threadpoolctl import threadpool_limits

from .. import rng
from ..cache import cache_dir, load_cached, store_cached
from ..environment import versions
from ..errors import ctrl_c_held

#: Gaussian prior precisions of abilities, discriminations and difficulties in the fit on the sources.
PRIOR = {"theta": 1.0, "a": 1.0, "b": 0.1}
#: Version of :func:`fitted`'s cache entries.
FIT_CACHE_VERSION = 1
#: Logits are clipped here when a new model's ability is fitted, as in tinyBenchmarks.
LOGIT_CLIP = 30.0


@dataclass(frozen=True)
class IRTModel:
    """Item parameters of a fitted multidimensional 2PL model, and the fitted abilities."""

    a: np.ndarray  # (n_items, dim)
    b: np.ndarray  # (n_items,)
    theta: np.ndarray  # (n_models, dim)

    def probabilities(self, theta: np.ndarray, items=None) -> np.ndarray:
        a, b = (self.a, self.b) if items is None else (self.a[items], self.b[items])
        return expit(np.atleast_2d(theta) @ a.T - b)


def fit_irt(Y: np.ndarray, dim: int, *, seed: int = rng.GP_IRT_FIT, max_iter: int = 3000) -> IRTModel:
    """Fit the 2PL model by penalised maximum likelihood (Gaussian priors :data:`PRIOR`), L-BFGS on all parameters.

    Examples
    --------
    >>> gen = np.random.default_rng(0)
    >>> theta, b = gen.normal(size=(300, 1)), gen.normal(size=20)
    >>> Y = (gen.random((300, 20)) < expit(theta @ np.ones((1, 20)) - b)).astype(float)
    >>> model = fit_irt(Y, 1)
    >>> bool(np.corrcoef(model.b, b)[0, 1] > 0.95)
    True
    """
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    n_models, n_items = Y.shape
    gen = np.random.default_rng(seed)
    start = np.concatenate([gen.normal(0, 0.1, n_models * dim), gen.normal(0, 0.1, n_items * dim), np.zeros(n_items)])
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

    # multi-threaded BLAS is slower on these thin matrices
    with threadpool_limits(limits=1, user_api="blas"):
        result = minimize(loss, start, jac=True, method="L-BFGS-B", options={"maxiter": max_iter})
    theta, a, b = unpack(result.x)
    return IRTModel(a.copy(), b.copy(), theta.copy())


@ctrl_c_held()  # numba compiles on the first call and drops a Ctrl-C that lands then
@numba.njit(cache=True, nogil=True)
def _logistic_terms(R, b, Y, softplus, observed):
    # softplus(Z), Y * Z and, in place of R, sigmoid(Z) - Y for Z = R - b, by the C library's exp and log1p
    # (AVX-512's numpy would round otherwise)
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
    """Abilities of many models on the same seen items by batched Newton steps: maximum a posteriori under a
    Gaussian prior of ``precision`` (0: maximum likelihood, as tinyBenchmarks)."""
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


def cache_entry(source: np.ndarray, settings: dict) -> tuple[Path, str]:
    """Where a fit on ``source`` under ``settings`` is cached, and its key: a sha256 of the data, the settings and
    the numeric versions (the fit is non-convex: another library or processor's rounding can move it)."""
    source = np.ascontiguousarray(source)
    digest = hashlib.sha256(f"{source.dtype.str}:{source.shape}".encode())
    digest.update(source.tobytes())
    digest.update(json.dumps({**settings, "environment": versions()}, sort_keys=True).encode())
    key = digest.hexdigest()
    return cache_dir() / "irt" / f"{key[:24]}.npz", key


def fitted(source: np.ndarray, dim: int, *, seed: int = rng.GP_IRT_FIT) -> IRTModel:
    """:func:`fit_irt` of ``source`` in ``dim`` dimensions, read from the cache when it holds it.

    Examples
    --------
    >>> gen = np.random.default_rng(0)
    >>> Y = (gen.random((30, 12)) < 0.6).astype(float)
    >>> fitted(Y, 1).a.shape
    (12, 1)
    """
    n_models, n_items = np.shape(source)
    settings = {"fit": dim, "prior": PRIOR, "seed": seed, "v": FIT_CACHE_VERSION}
    path, key = cache_entry(source, settings)
    shapes = {"a": (n_items, dim), "b": (n_items,), "theta": (n_models, dim)}

    def check(arrays: dict) -> None:
        found = {name: array.shape for name, array in arrays.items()}
        if found != shapes:
            raise ValueError(f"arrays of shapes {found}, where a fit on {n_models} x {n_items} has {shapes}")

    cached = load_cached(path, key=key, check=check)
    if cached is not None:
        return IRTModel(cached["a"], cached["b"], cached["theta"])
    model = fit_irt(source, dim, seed=seed)
    store_cached(path, key=key, folder=cache_dir(), a=model.a, b=model.b, theta=model.theta)
    return model
