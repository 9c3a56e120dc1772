"""Distances between 0/1 rows, and K-Medoids (FasterPAM) with some medoids held fixed (a G-set extended
into an N-set), and CLARA.

Distances are taken after z-scoring each column. Between z-scored 0/1 rows, the Manhattan distance is a
Hamming distance weighted by ``1 / std``: computed by matrix products, without the z-scored data.

:func:`k_medoids_binary` clusters the distinct rows of a 0/1 matrix, weighted by count: up to
:data:`DENSE_LIMIT` of them with their distances kept, beyond from rows packed 64 columns to a word
behind a lower bound (differing columns times the least column weight). Both round distances to 1e-9,
so they give the same medoids.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from dataclasses import dataclass
from functools import cached_property

import numba
import numpy as np
from threadpoolctl import ThreadpoolController

from .errors import TailoredBenchError, ctrl_c_held
from .rng import generator

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
    # |a - b| = a + b - 2ab for a, b in {0, 1}; one BLAS thread: a product this thin gains nothing from two.
    # The limit is process-wide: one thread at a time sets and restores it, else threads restore each other's
    # setting and leave the process's BLAS at one thread
    with _BLAS_LIMIT, _blas().limit(limits=1, user_api="blas"):
        D = Aw @ B.T
    _hamming_from_gram(D, Aw.sum(axis=1), B @ weights, same)
    return D


_BLAS_LIMIT = threading.Lock()


@functools.cache
def _blas() -> ThreadpoolController:
    """This process's thread pools, looked up once (a look-up is slow next to one product)."""
    return ThreadpoolController()


@ctrl_c_held()  # numba compiles on the first call and drops a Ctrl-C that lands then
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


#: The least column weight in integer ticks: fine enough for the bound, coarse enough for 64-bit distances.
TICKS = 2**31
#: Most distinct rows whose distances are kept in a dense matrix (8 * DENSE_LIMIT**2 bytes, 134 MB).
DENSE_LIMIT = 4096
#: CLARA's default number of random samples.
DRAWS = 5
# What the kernels read of packed rows (words, least, scale, table, root) when the distances are kept.
_NO_BITS = (np.zeros((1, 0), dtype=np.uint64), TICKS, 1.0, np.zeros(8 * 256), False)


@dataclass(frozen=True)
class KMedoidsResult:
    """Medoids (fixed ones first, in the order given), each point's cluster, and the cost."""

    medoids: np.ndarray
    labels: np.ndarray
    cost: float
    n_swaps: int


def k_medoids(
    D: np.ndarray,
    n_clusters: int,
    *,
    fixed=(),
    weights=None,
    random_state=None,
    max_iter: int = 100,
    same_row=None,
) -> KMedoidsResult:
    """FasterPAM on a distance matrix ``D`` (symmetric, zero diagonal), ``n_clusters`` medoids in all.

    FasterPAM (Schubert and Rousseeuw, *Fast and Eager k-Medoids Clustering*, Information Systems 101,
    2021, https://doi.org/10.1016/j.is.2021.101804) performs any improving swap at once.

    ``fixed`` points are medoids throughout, first in the result. ``weights`` are point multiplicities
    (the cost is ``sum_i weights[i] * d(i, nearest medoid)``; the initial free medoids are drawn in
    proportion). ``same_row``, :func:`identical_rows` of ``D``, skips a candidate whose row equals one
    scored since the last swap. ``labels[i]`` is the position of point ``i``'s nearest medoid, the
    earlier on ties, so fixed medoids win ties.

    Examples
    --------
    >>> X = np.array([0.0, 1.0, 2.0, 10.0, 11.0, 12.0])
    >>> D = np.abs(X[:, None] - X[None, :])
    >>> result = k_medoids(D, 2, random_state=0)
    >>> sorted(result.medoids.tolist()), result.cost
    ([1, 4], 4.0)
    >>> k_medoids(D, 2, fixed=[0], random_state=0).medoids.tolist()
    [0, 4]
    """
    D = np.ascontiguousarray(D, dtype=np.float64)
    n = D.shape[0]
    fixed = np.asarray(fixed, dtype=np.int64).reshape(-1)
    if D.ndim != 2 or D.shape[1] != n:
        raise TailoredBenchError(f"distance matrix must be square, got shape {D.shape}")
    if len(np.unique(fixed)) != len(fixed) or (len(fixed) and (fixed.min() < 0 or fixed.max() >= n)):
        raise TailoredBenchError("fixed medoids must be distinct point indices")
    if not len(fixed) <= n_clusters <= n:
        raise TailoredBenchError(f"cannot choose {n_clusters} medoids ({len(fixed)} fixed) among {n} points")
    rng = generator(random_state)
    weights = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    if same_row is not None:
        same_row = np.asarray(same_row, dtype=np.int64)
        if same_row.shape != (n,) or (n and (same_row.min() < 0 or same_row.max() >= n)):
            raise TailoredBenchError(f"same_row must hold {n} point indices, as identical_rows(D) returns")
    medoids, n_swaps = _from_random_start(D, _NO_BITS, weights, fixed, n_clusters, rng, max_iter, same_row)
    labels, nearest = assign(D[medoids])
    return KMedoidsResult(medoids, labels, float(nearest @ weights), n_swaps)


def _from_random_start(D, packed, weights, fixed, n_clusters: int, rng, max_iter: int, same_row=None):
    """FasterPAM from free medoids drawn in proportion to ``weights``: (medoids, swaps); empty ``D``: ``packed``."""
    same_row = np.arange(len(weights), dtype=np.int64) if same_row is None else same_row
    free_pool = _others(len(weights), fixed)
    n_free = n_clusters - len(fixed)
    start = (
        rng.choice(free_pool, n_free, replace=False, p=weights[free_pool] / weights[free_pool].sum()) if n_free else []
    )
    medoids = np.concatenate([fixed, np.sort(start)]).astype(np.int64)
    if not n_free:
        return medoids, 0
    # one tuple: a numba dispatcher called with starred arguments confuses the type checker
    arguments = (D, *packed, weights, medoids, len(fixed), max_iter, same_row)
    return medoids, int(_fasterpam(*arguments))


@dataclass(frozen=True, eq=False)
class BinaryPoints:
    """The rows of a 0/1 matrix as points to cluster: identical rows (at distance 0 under every
    metric) merged into a pattern weighted by its count, the same objective on a smaller problem."""

    pattern: np.ndarray  # (n,) each row's pattern
    counts: np.ndarray  # (u,) rows per pattern
    pattern_rows: np.ndarray  # (u, m) each pattern's 0/1 row while the distances are kept; (0, m) beyond
    mean: np.ndarray  # (m,) column means and
    std: np.ndarray  # (m,) standard deviations of all n rows, which z-score them
    metric: str
    words: np.ndarray  # (w, u) uint64: each pattern's columns, 64 to a word (column c: bit c % 64 of word c // 64)
    table: np.ndarray  # (8 * w * 256,): the weight sum of the set bits of every byte value of every word
    least: int  # the least column weight times scale, rounded down, and
    scale: float  # so least * differing columns / scale <= distance
    root: bool  # euclidean: the square root of the weighted sum (of squared weights)

    @property
    def n_points(self) -> int:
        return len(self.pattern)

    @property
    def n_patterns(self) -> int:
        return len(self.counts)

    @property
    def kept(self) -> bool:
        """Whether the distances between patterns are kept in a dense matrix (:data:`DENSE_LIMIT`)."""
        return self.pattern_rows.shape[0] > 0

    @cached_property
    def distances(self) -> np.ndarray:
        """(u, u) between patterns, computed at first use; (0, 0) when each is computed as needed."""
        if not self.kept:
            return np.zeros((0, 0))
        return scaled_distances(self.pattern_rows, self.mean, self.std, self.metric)

    def with_distances(self) -> BinaryPoints:
        """These points, their kept distances formed now: before they are sent to other processes."""
        self.distances  # noqa: B018 (a cached property, computed on first access)
        return self

    def random_rows(self, patterns, rng) -> np.ndarray:
        """One row of each pattern, drawn uniformly: the rows and ``rng`` state of ``rng.choice`` pattern by pattern."""
        patterns = np.asarray(patterns, dtype=np.int64)
        rows, starts = np.argsort(self.pattern, kind="stable"), np.cumsum(self.counts) - self.counts
        return rows[starts[patterns] + rng.integers(0, self.counts[patterns])]

    def between(self, rows, cols=None) -> np.ndarray:
        """Distances between patterns ``rows`` and ``cols`` (all patterns if None)."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        if cols is None and self.kept:
            return self.distances[rows]
        cols = np.arange(self.n_patterns) if cols is None else np.asarray(cols, dtype=np.int64).reshape(-1)
        if self.kept:
            return self.distances[np.ix_(rows, cols)]
        return _between(self.words, self.table, self.root, rows, cols)

    def from_patterns(self, rows) -> np.ndarray:
        """Distances from patterns ``rows`` to every pattern, without forming the dense matrix if it is not yet
        (:meth:`between` up to the last bit of a product, which the rounding to 1e-9 hides nearly always)."""
        if not self.kept or "distances" in self.__dict__ or self.metric not in ("manhattan", "euclidean"):
            return self.between(rows)
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        return scaled_distances(self.pattern_rows[rows], self.mean, self.std, self.metric, B=self.pattern_rows)


def binary_points(X: np.ndarray, metric: str = "manhattan") -> BinaryPoints:
    """Merge identical rows of ``X``; keep the patterns' distances (computed at first use) up to :data:`DENSE_LIMIT`.

    Cosine and correlation distances are not sums over columns: always kept.
    """
    check_distance(metric)
    X = np.asarray(X, dtype=np.float64)
    words = _row_words(X)  # one sortable key per row: an integer up to 64 columns
    keys = words[:, 0] if words.shape[1] == 1 else words.view(np.dtype((np.void, 8 * words.shape[1]))).ravel()
    _, first, pattern, counts = np.unique(keys, return_index=True, return_inverse=True, return_counts=True)
    # Patterns numbered by first occurrence: FasterPAM scans points in order, and a sorted
    # order (all-wrong patterns first) biases which of equally good medoid sets it reaches.
    order = np.argsort(first, kind="stable")
    rank = np.argsort(order)  # the inverse permutation
    patterns = X[first[order]]
    mean, std = column_scale(X)
    words, least, scale, table, _ = _NO_BITS
    if metric in ("manhattan", "euclidean") and len(order) > DENSE_LIMIT:
        weights = column_weights(std, metric)
        words = np.ascontiguousarray(_row_words(patterns).T)
        w = np.zeros(64 * words.shape[0])
        w[: len(weights)] = weights
        table = np.zeros((8 * words.shape[0], 256))
        for bit in range(8):  # bit by bit, in a fixed order: the same sum for the same columns
            table[:, (np.arange(256) >> bit) & 1 == 1] += w[bit::8][:, None]
        table = table.reshape(-1)
        unit = weights.min() * (1.0 - 1e-12)  # a shade below the least weight: the bound stays below
        scale = TICKS / unit
        least = int(np.floor(unit * scale))
        patterns = patterns[:0]
    pattern = rank[pattern.reshape(-1)]
    return BinaryPoints(
        pattern, counts[order], patterns, mean, std, metric, words, table, least, scale, metric == "euclidean"
    )


def _row_words(X: np.ndarray) -> np.ndarray:
    """(n, w) uint64: each row's 0/1 columns, 64 to a word (column c: bit c % 64 of word c // 64), at least one word."""
    bits = np.zeros((X.shape[0], -(-X.shape[1] // 64) * 8 or 8), dtype=np.uint8)
    packed = np.packbits(X.astype(bool), axis=1, bitorder="little")
    bits[:, : packed.shape[1]] = packed
    return bits.view("<u8").astype(np.uint64, copy=False)


def k_medoids_binary(
    points: BinaryPoints,
    n_clusters: int,
    *,
    fixed=(),
    random_state=None,
    max_iter: int = 100,
    sample: int = 0,
    draws: int | None = None,
) -> KMedoidsResult:
    """FasterPAM (see :func:`k_medoids`) of the rows behind ``points``, on the weighted patterns.

    Each free medoid is a random row of its pattern; with fewer patterns than medoids, the rest are
    random further rows that, losing ties, own no items. Medoids and labels are row indices.

    With ``sample`` > 0 (more than the medoids, fewer than the patterns), CLARA (Kaufman and
    Rousseeuw, *Finding Groups in Data*, ch. 3, Wiley, 1990): ``draws`` (default :data:`DRAWS`) times,
    FasterPAM on ``sample`` random patterns (the fixed ones among them); the medoids of lowest full cost win.

    Examples
    --------
    >>> X = np.array([[0, 0], [0, 0], [1, 1], [1, 1], [1, 0]], dtype=float)
    >>> result = k_medoids_binary(binary_points(X), 2, fixed=[0], random_state=0)
    >>> result.medoids[0], sorted(set(result.labels.tolist()))
    (np.int64(0), [0, 1])
    """
    rng = generator(random_state)
    fixed = np.asarray(fixed, dtype=np.int64).reshape(-1)
    n = points.n_points
    if not len(fixed) <= n_clusters <= n:
        raise TailoredBenchError(f"cannot choose {n_clusters} medoids ({len(fixed)} fixed) among {n} points")
    fixed_patterns = np.array(list(dict.fromkeys(points.pattern[fixed].tolist())), dtype=np.int64)
    k = len(fixed_patterns) + min(n_clusters - len(fixed), points.n_patterns - len(fixed_patterns))
    weights = points.counts.astype(np.float64)
    if sample and k < sample < points.n_patterns:
        chosen_patterns, n_swaps = _clara(points, weights, k, fixed_patterns, rng, max_iter, sample, draws or DRAWS)
    else:
        packed = points.words, points.least, points.scale, points.table, points.root
        chosen_patterns, n_swaps = _from_random_start(
            points.distances, packed, weights, fixed_patterns, k, rng, max_iter
        )
    # A random row of each pattern, not the first: which of identical items a target is
    # asked is then part of each run's randomness rather than fixed by item order.
    chosen = points.random_rows(chosen_patterns[len(fixed_patterns) :], rng).tolist()
    missing = n_clusters - len(fixed) - len(chosen)
    if missing:
        chosen += rng.choice(_others(n, np.concatenate([fixed, chosen])), missing, replace=False).tolist()
    medoids = np.concatenate([fixed, np.asarray(chosen, dtype=np.int64)])
    labels, nearest = nearest_medoid(points, medoids)
    return KMedoidsResult(medoids, labels, float(nearest.sum()), n_swaps)


def _others(n: int, taken) -> np.ndarray:
    """``0 .. n - 1`` without ``taken``, in order (what ``np.setdiff1d`` gives, without its sorts)."""
    free = np.ones(n, dtype=bool)
    free[np.asarray(taken, dtype=np.int64)] = False
    return np.flatnonzero(free)


def _clara(points: BinaryPoints, weights, k: int, fixed_patterns, rng, max_iter: int, sample: int, draws: int):
    """CLARA over ``draws`` samples of ``sample`` patterns: the medoid patterns of lowest full cost."""
    free_pool = _others(points.n_patterns, fixed_patterns)
    best, best_cost, n_swaps = None, np.inf, 0
    for _ in range(draws):
        drawn = np.sort(rng.choice(free_pool, sample - len(fixed_patterns), replace=False))
        subset = np.concatenate([fixed_patterns, drawn])
        fixed = np.arange(len(fixed_patterns))
        D = points.between(subset, subset)
        result = k_medoids(D, k, fixed=fixed, weights=weights[subset], random_state=rng, max_iter=max_iter)
        medoids = subset[result.medoids]
        cost = float(points.between(medoids).min(axis=0) @ weights)
        n_swaps += result.n_swaps
        if cost < best_cost:
            best, best_cost = medoids, cost
    return best, n_swaps


def nearest_medoid(points: BinaryPoints, medoids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's nearest medoid (a position in ``medoids``, the earlier on ties) and its distance."""
    labels, nearest = assign(points.between(points.pattern[medoids]))  # pattern by pattern
    return labels[points.pattern], nearest[points.pattern]


def label_digest(labels: np.ndarray) -> int:
    """A 64-bit digest (BLAKE2b) of labels such as :func:`nearest_medoid` gives."""
    data = np.ascontiguousarray(labels, dtype=np.int64).tobytes()
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def known_labels(points: BinaryPoints, medoid_sets, digests) -> list[np.ndarray]:
    """:func:`nearest_medoid`'s labels of each set of medoids, known by their :func:`label_digest`.

    Read from one product of the distances to the medoids alone; the dense matrix is formed only for
    a set whose digest differs (a distance that rounded otherwise decided a tie).
    """
    medoid_sets = [np.asarray(medoids, dtype=np.int64) for medoids in medoid_sets]
    if not medoid_sets:
        return []
    patterns = [points.pattern[medoids] for medoids in medoid_sets]
    union, where = np.unique(np.concatenate(patterns), return_inverse=True)
    rows = points.from_patterns(union)
    ends = np.cumsum([len(p) for p in patterns])
    found = []
    for medoids, index, digest in zip(medoid_sets, np.split(where, ends[:-1]), digests, strict=True):
        labels = assign(rows[index])[0][points.pattern]
        found.append(labels if label_digest(labels) == digest else nearest_medoid(points, medoids)[0])
    return found


def identical_rows(D: np.ndarray) -> np.ndarray:
    """Each row's first row with the same bits: the ``same_row`` of :func:`k_medoids`.

    Examples
    --------
    >>> identical_rows(np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])).tolist()
    [0, 1, 0]
    """
    D = np.ascontiguousarray(D, dtype=np.float64)
    if D.ndim != 2:
        raise TailoredBenchError(f"distance matrix must be two-dimensional, got shape {D.shape}")
    if not D.shape[1]:  # no columns: every row is the first
        return np.zeros(len(D), dtype=np.int64)
    rows = D.view(np.dtype((np.void, 8 * D.shape[1]))).ravel()  # compared bit for bit
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    return first[inverse.reshape(-1)]


def assign(medoid_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each point's nearest medoid (first on ties) and its distance, from the medoids' rows."""
    medoid_rows = np.asarray(medoid_rows, dtype=np.float64)
    labels = np.argmin(medoid_rows, axis=0)
    return labels, medoid_rows[labels, np.arange(len(labels))]


_M1, _M2, _M4 = np.uint64(0x5555555555555555), np.uint64(0x3333333333333333), np.uint64(0x0F0F0F0F0F0F0F0F)


@numba.njit(cache=True, nogil=True)
def _popcount(v):
    # The bits set in a uint64 (SWAR): the compiler makes it one popcount instruction.
    v = v - ((v >> np.uint64(1)) & _M1)
    v = (v & _M2) + ((v >> np.uint64(2)) & _M2)
    v = (v + (v >> np.uint64(4))) & _M4
    return np.int64((v * np.uint64(0x0101010101010101)) >> np.uint64(56))


@numba.njit(cache=True, nogil=True, inline="always")  # a call would count references to the arrays
def _distance(D, words, table, root, x, o):
    # The distance between patterns x and o: kept, or summed from the byte tables in a fixed order.
    if D.shape[0]:
        return D[x, o]
    s = 0.0
    for j in range(words.shape[0]):
        v, t = words[j, x] ^ words[j, o], 2048 * j
        s += (
            (table[t + (v & 255)] + table[t + 256 + ((v >> 8) & 255)])
            + (table[t + 512 + ((v >> 16) & 255)] + table[t + 768 + ((v >> 24) & 255)])
        ) + (
            (table[t + 1024 + ((v >> 32) & 255)] + table[t + 1280 + ((v >> 40) & 255)])
            + (table[t + 1536 + ((v >> 48) & 255)] + table[t + 1792 + (v >> 56)])
        )
    s = np.floor(s * 1e9 + 0.5) / 1e9 if s > 0.0 else 0.0  # as the kept distances round: equal sums tie
    return np.sqrt(s) if root else s


@ctrl_c_held()  # numba compiles on the first call and drops a Ctrl-C that lands then
@numba.njit(cache=True, nogil=True)
def _between(words, table, root, rows, cols):
    D, out = np.empty((0, 0)), np.empty((rows.shape[0], cols.shape[0]))
    for i in range(rows.shape[0]):
        for j in range(cols.shape[0]):
            out[i, j] = _distance(D, words, table, root, rows[i], cols[j])
    return out


@numba.njit(cache=True, nogil=True)
def _limits(root, ds, scale, least, columns):
    # columns[o]: the differing columns, each at the least weight in ticks, that reach ds[o] (plus
    # 1e-9 for the rounding): a point differing in as many is at least ds[o] away.
    for o in range(ds.shape[0]):
        limit = min(np.ceil(((ds[o] * ds[o] if root else ds[o]) + 1e-9) * scale), 2.0**62)
        columns[o] = (np.int64(limit) + least - 1) // least


@numba.njit(cache=True, nogil=True)
def _open(words, x, columns, counts, flags):
    # flags[o]: point o differs from x in fewer than columns[o] columns, so the bound leaves it
    # open. Word by word over all points: the compiler vectorises each pass.
    for j in range(words.shape[0]):
        wx, row = words[j, x], words[j]
        for o in range(columns.shape[0]):
            c = _popcount(wx ^ row[o]) + (counts[o] if j else 0)
            if j == words.shape[0] - 1:
                flags[o] = c < columns[o]
            else:
                counts[o] = c


@numba.njit(cache=True, nogil=True)
def _nearest_two_of(to_medoids, o, near, second, dn, ds):
    # Nearest and second-nearest medoid of point o, ties to the earlier position; to_medoids[o]
    # holds o's distances to the medoids side by side. In locals: the arrays may alias.
    first_d, second_d, first_p, second_p = np.inf, np.inf, -1, -1
    for p in range(to_medoids.shape[1]):
        d = to_medoids[o, p]
        if d < first_d:
            second_d, second_p, first_d, first_p = first_d, first_p, d, p
        elif d < second_d:
            second_d, second_p = d, p
    dn[o], ds[o], near[o], second[o] = first_d, second_d, first_p, second_p


@numba.njit(cache=True, nogil=True)
def _after_swap(D, words, table, root, to_medoids, p, x, near, second, dn, ds):
    # Medoid position p now holds x: update the caches in O(n), with a full O(k) scan only for
    # points that lost their nearest or second medoid.
    for o in range(near.shape[0]):
        d = to_medoids[o, p] = _distance(D, words, table, root, x, o)
        if (near[o] == p or second[o] == p) and d > ds[o]:
            _nearest_two_of(to_medoids, o, near, second, dn, ds)
        elif near[o] == p:
            dn[o] = d
        elif d < dn[o]:
            second[o], ds[o], near[o], dn[o] = near[o], dn[o], p, d
        elif second[o] == p or d < ds[o]:
            second[o], ds[o] = p, d


@ctrl_c_held()  # numba compiles on the first call and drops a Ctrl-C that lands then
@numba.njit(cache=True, nogil=True)
def _fasterpam(D, words, least, scale, table, root, w, medoids, n_fixed, max_iter, same_row):
    n, k = w.shape[0], medoids.shape[0]
    kept = D.shape[0] > 0
    is_medoid = np.zeros(n, dtype=np.bool_)
    is_medoid[medoids] = True
    near, second, dn, ds = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64), np.empty(n), np.empty(n)
    to_medoids = np.empty((n, k))
    for p in range(k):
        for o in range(n):
            to_medoids[o, p] = _distance(D, words, table, root, medoids[p], o)
    for o in range(n):
        _nearest_two_of(to_medoids, o, near, second, dn, ds)
    columns, counts = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    if not kept:
        _limits(root, ds, scale, least, columns)
    # flags[o]: point o may be nearer to the candidate than its second medoid. Most are not:
    # they are read as bit masks of 64 points, as a branch per point would mispredict.
    flags = np.zeros(-(-n // 64) * 64, dtype=np.uint8)
    eights = flags.view(np.uint64)
    removal = np.zeros(k)
    for o in range(n):
        removal[near[o]] += w[o] * (ds[o] - dn[o])
    tol = 1e-12 * max(np.sum(w * dn), 1.0)
    delta = np.empty(k)
    n_swaps = since_swap = x = 0
    # scored[r]: the swap count when a candidate with row r was last scored and not swapped in;
    # only a swap changes what a score reads.
    scored = np.full(n, -1, dtype=np.int64)
    for _ in range(max_iter * n):
        if since_swap >= n:
            break
        since_swap += 1
        if not is_medoid[x] and scored[same_row[x]] != n_swaps:
            if kept:
                for o in range(n):
                    flags[o] = D[x, o] < ds[o]
            else:
                _open(words, x, columns, counts, flags)
            delta[:] = removal
            shared = 0.0  # the change shared by every medoid removed
            for b in range(0, eights.shape[0], 8):
                v = np.uint64(0)
                for q in range(8):  # the multiply gathers the low bit of each of 8 bytes into the top byte
                    v |= ((eights[b + q] * np.uint64(0x0102040810204080)) >> np.uint64(56)) << np.uint64(8 * q)
                while v:
                    o = 8 * b + _popcount(v ^ (v - np.uint64(1))) - 1  # the lowest bit set
                    v &= v - np.uint64(1)
                    d = _distance(D, words, table, root, x, o)
                    dno, dso, wo, no = dn[o], ds[o], w[o], near[o]  # in locals: delta may alias them
                    # Selects, not branches (unpredictable); a point not nearer adds +0.0, which no sum notices.
                    closer = d < dno
                    delta[no] += wo * ((dno if closer else d) - dso) if d < dso else 0.0
                    shared += wo * (d - dno) if closer else 0.0
            best = n_fixed
            for p in range(n_fixed + 1, k):
                if delta[p] < delta[best]:
                    best = p
            if delta[best] + shared < -tol:
                is_medoid[medoids[best]] = False
                is_medoid[x] = True
                medoids[best] = x
                n_swaps += 1
                since_swap = 0
                _after_swap(D, words, table, root, to_medoids, best, x, near, second, dn, ds)
                if not kept:
                    _limits(root, ds, scale, least, columns)
                removal[:] = 0.0
                for o in range(n):
                    removal[near[o]] += w[o] * (ds[o] - dn[o])
            else:
                scored[same_row[x]] = n_swaps
        x = x + 1 if x + 1 < n else 0
    return n_swaps
