"""Distances between the rows of 0/1 matrices, after z-scoring each column.

Between z-scored 0/1 rows, the Manhattan distance is a Hamming distance weighted by ``1 / std``:
computed by matrix products, without the z-scored data.
"""

from __future__ import annotations

import functools

import numba
import numpy as np
from threadpoolctl import ThreadpoolController

from .errors import TailoredBenchError

DISTANCES = ("manhattan", "euclidean", "cosine", "correlation")


def column_scale(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column means and population standard deviations, a constant column scaling by 1 (scikit-learn's
    ``StandardScaler``, as the paper's code)."""
    mean = X.mean(axis=0)
    std = X.std(axis=0)
    std[std == 0] = 1.0
    return mean, std


def standardize(X: np.ndarray) -> np.ndarray:
    """Z-score each column (population std; a constant column scales by 1).

    Examples
    --------
    >>> standardize(np.array([[0.0, 1.0], [1.0, 1.0]])).tolist()
    [[-1.0, 0.0], [1.0, 0.0]]
    """
    mean, std = column_scale(X)
    return (X - mean) / std


def weighted_hamming(A: np.ndarray, weights: np.ndarray, B: np.ndarray | None = None) -> np.ndarray:
    """``D[i, k] = sum_j weights[j] * (A[i, j] != B[k, j])`` for 0/1 rows, by matrix products."""
    same = B is None
    B = A if B is None else B
    Aw = A * weights
    # |a - b| = a + b - 2ab for a, b in {0, 1}; one BLAS thread: a product this thin gains nothing from two
    with _blas().limit(limits=1, user_api="blas"):
        D = Aw @ B.T
    _hamming_from_gram(D, Aw.sum(axis=1), B @ weights, same)
    return D


@functools.cache
def _blas() -> ThreadpoolController:
    """This process's thread pools, looked up once (a look-up is slow next to one product)."""
    return ThreadpoolController()


@numba.njit(cache=True, nogil=True)
def _hamming_from_gram(G, row_norm, col_norm, same):
    # In place: G[i, k] <- row_norm[i] + col_norm[k] - 2 G[i, k], clipped at 0.
    n, m = G.shape
    for i in range(n):
        for k in range(m):
            d = row_norm[i] + col_norm[k] - 2.0 * G[i, k]
            # rounded to 1e-9: equal sums of weights tie exactly, whatever the summation order
            G[i, k] = np.floor(d * 1e9 + 0.5) / 1e9 if d > 0.0 else 0.0
        if same:
            G[i, i] = 0.0


def binary_distances(X: np.ndarray, metric: str = "manhattan", rows: np.ndarray | None = None) -> np.ndarray:
    """Distances between the rows of a 0/1 matrix (or between ``rows``) after z-scoring each column of ``X``.

    For ``cosine`` and ``correlation``, a row of zero norm (or variance) is at distance 1 from every other.
    """
    X = np.asarray(X, dtype=np.float64)
    R = X if rows is None else np.asarray(rows, dtype=np.float64)
    return scaled_distances(R, *column_scale(X), metric)


def column_weights(std: np.ndarray, metric: str) -> np.ndarray:
    """What a differing column adds to a sum-over-columns distance once z-scored: ``1 / std``
    (Manhattan) or ``1 / std**2`` (Euclidean, before the square root)."""
    return 1.0 / std if metric == "manhattan" else 1.0 / std**2


def scaled_distances(
    R: np.ndarray, mean: np.ndarray, std: np.ndarray, metric: str, B: np.ndarray | None = None
) -> np.ndarray:
    """Distances between the 0/1 rows of ``R`` (or from them to those of ``B``), z-scored by ``mean`` and ``std``.

    ``B`` is for the distances that are sums over columns (Manhattan, Euclidean) only.
    """
    if metric in ("manhattan", "euclidean"):
        D = weighted_hamming(R, column_weights(std, metric), B)
        return D if metric == "manhattan" else np.sqrt(D)
    if B is not None:
        raise TailoredBenchError(f"{metric} distances are computed between the rows of one matrix only")
    return np.round(_angular_distances((R - mean) / std, check_distance(metric)), 9)


def _angular_distances(Z: np.ndarray, metric: str) -> np.ndarray:
    """Cosine or correlation distances between the rows of a real matrix."""
    if metric == "correlation":
        Z = Z - Z.mean(axis=1, keepdims=True)
    norm = np.sqrt((Z**2).sum(axis=1))
    safe = np.where(norm > 1e-12, norm, 1.0)
    U = Z / safe[:, None]
    D = 1.0 - U @ U.T
    degenerate = norm <= 1e-12
    D[degenerate, :] = 1.0
    D[:, degenerate] = 1.0
    np.fill_diagonal(D, 0.0)
    return np.clip(D, 0.0, 2.0)


def check_distance(metric: str) -> str:
    if metric not in DISTANCES:
        raise TailoredBenchError(f"unknown distance {metric!r}; choose one of {', '.join(DISTANCES)}")
    return metric
