"""K-Medoids with medoids held fixed.

The clustering is FasterPAM (Schubert & Rousseeuw, "Fast and eager k-medoids
clustering: O(k) runtime improvement of the PAM, CLARA, and CLARANS algorithms",
Information Systems 101, 2021): eager swaps, with each point's nearest and
second-nearest medoid cached so that one candidate is scored against all medoids
in O(n). Here some medoids may be *fixed*: they are never swapped out, which is
what TailoredBench needs to extend a G-set into an N-set. :func:`k_medoids_binary`
runs it on the distinct rows of a 0/1 matrix (:mod:`tailoredbench.distances`).

Memory stays linear in the items. Up to :data:`DENSE_LIMIT` distinct rows, the
distances between them are computed once (by matrix products) and kept; beyond it,
each distance is computed when needed from the rows packed 64 columns to a word (a
table holds the weight sum of every byte value). Before that, a lower bound settles most
points of a candidate swap: its differing columns (one popcount per word) times the least
column weight, compared in integer ticks (the weight rounded down, :data:`TICKS` to it),
so rounding only loosens it. The kept and computed distances agree to 1e-9 (both round
there), so the medoids could differ only where a tie is decided at that precision; in the
tests and the benchmarks measured they are the same.

``sample`` turns on CLARA (Kaufman & Rousseeuw, *Finding Groups in Data*, 1990, ch. 3):
K-Medoids on random samples of the rows, keeping the medoids of lowest cost on all
rows. It is an approximation for very large matrices, off by default.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property

import numba
import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from .distances import check_distance, column_scale, column_weights, scaled_distances
from .errors import TailoredBenchError
from .rng import generator

#: The least column weight in integer ticks: fine enough that rounding down loosens the bound
#: by a negligible amount, small enough that a distance in ticks fits in 64 bits.
TICKS = 2**31
# No packed rows: the distances are all kept (words, least, scale, table, root).
_NO_BITS = (
    np.zeros((1, 0), dtype=np.uint64),
    TICKS,
    1.0,
    np.zeros(8 * 256),
    False,
)


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
    """K-Medoids (FasterPAM) on a precomputed distance matrix, some medoids held fixed.

    Parameters
    ----------
    D : ndarray of shape (n, n)
        Symmetric distances with a zero diagonal.
    n_clusters : int
        Total number of medoids, fixed ones included.
    fixed : sequence of int, optional
        Points that are medoids throughout; they come first in the result, in this order.
    weights : ndarray of shape (n,), optional
        Point multiplicities: the cost is ``sum_i weights[i] * d(i, nearest medoid)``.
        The initial free medoids are drawn with probability proportional to them.
    random_state : int, sequence of int or numpy Generator, optional
        Seeds the random choice of the initial free medoids.
    max_iter : int, default 100
        Maximum number of passes over all points.
    same_row : ndarray of shape (n,), optional
        :func:`identical_rows` of ``D``, computed once for many calls on the same matrix.
        A candidate whose row of ``D`` is bit for bit that of one already scored since
        the last swap would score the same, so it is not scored again: the same
        medoids, faster where many points are alike (on POPE's 8910 items, 1472 rows
        differ).

    Returns
    -------
    KMedoidsResult
        ``labels[i]`` is the position in ``medoids`` of point ``i``'s nearest medoid;
        ties go to the earlier position, so fixed medoids win ties.

    References
    ----------
    E. Schubert and P. J. Rousseeuw. Fast and eager k-medoids clustering: O(k) runtime
    improvement of the PAM, CLARA, and CLARANS algorithms. Information Systems 101, 2021.

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


def _from_random_start(
    D, packed, weights, fixed, n_clusters: int, rng, max_iter: int, same_row=None
) -> tuple[np.ndarray, int]:
    """FasterPAM from free medoids drawn with probability proportional to ``weights``.

    The distances are ``D``, or, when it is empty, computed from ``packed`` (see
    :attr:`BinaryPoints.packed`). ``same_row`` is :func:`identical_rows` of ``D`` (None:
    every row its own). Returns the medoids (fixed first) and the number of swaps.
    """
    same_row = np.arange(len(weights), dtype=np.int64) if same_row is None else same_row
    free_pool = _others(len(weights), fixed)
    n_free = n_clusters - len(fixed)
    start = (
        rng.choice(free_pool, n_free, replace=False, p=weights[free_pool] / weights[free_pool].sum()) if n_free else []
    )
    medoids = np.concatenate([fixed, np.sort(start)]).astype(np.int64)
    n_swaps = _fasterpam(D, *packed, weights, medoids, len(fixed), max_iter, same_row) if n_free else 0
    return medoids, int(n_swaps)


#: Most distinct rows whose distances are kept in a dense matrix (8 * DENSE_LIMIT**2 bytes, 134 MB).
DENSE_LIMIT = 4096
#: CLARA's default number of random samples.
DRAWS = 5


@dataclass(frozen=True, eq=False)
class BinaryPoints:
    """The rows of a 0/1 matrix as points to cluster, identical rows merged.

    Rows with the same 0/1 pattern are at distance 0 under every metric, so K-Medoids
    runs on the distinct patterns weighted by their counts: the same objective on a
    much smaller problem when few columns define the embedding (e.g. 5 source models
    give at most 32 patterns for 8910 POPE items).
    """

    pattern: np.ndarray  # (n,) each row's pattern
    counts: np.ndarray  # (u,) rows per pattern
    pattern_rows: np.ndarray  # (u, m) each pattern's 0/1 row while the distances are kept; (0, m) beyond
    mean: np.ndarray  # (m,) column means and
    std: np.ndarray  # (m,) standard deviations of all n rows, which z-score them
    metric: str
    words: np.ndarray  # (w, u) uint64: each pattern's columns, 64 to a word (column c: bit c % 64 of word c // 64)
    table: np.ndarray  # (8 * w * 256,): the weight sum of the set bits of every byte value of every word, byte by byte
    least: int  # the least column weight times scale, rounded down, and
    scale: float  # so least * differing columns / scale <= distance
    root: bool  # euclidean: the square root of the weighted sum (of squared weights)

    @property
    def n_points(self) -> int:
        return len(self.pattern)

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

    @property
    def n_patterns(self) -> int:
        return len(self.counts)

    @property
    def packed(self) -> tuple:
        """What the distance kernels read when no distances are kept: (words, least, scale, table, root)."""
        return self.words, self.least, self.scale, self.table, self.root

    @cached_property
    def rows_by_pattern(self) -> tuple[np.ndarray, np.ndarray]:
        """Every row, grouped by pattern in ascending order, and where each pattern's group starts."""
        starts = np.concatenate([[0], np.cumsum(self.counts)[:-1]])
        return np.argsort(self.pattern, kind="stable"), starts

    def random_rows(self, patterns, rng) -> np.ndarray:
        """One row of each pattern, drawn uniformly: ``rng.choice`` of its rows, pattern by pattern.

        One vectorised draw gives the same rows and leaves ``rng`` in the same state as the
        loop would (a pattern of one row draws nothing); a test holds the two together.
        """
        patterns = np.asarray(patterns, dtype=np.int64)
        rows, starts = self.rows_by_pattern
        return rows[starts[patterns] + rng.integers(0, self.counts[patterns])]

    def between(self, rows, cols=None) -> np.ndarray:
        """Distances between patterns ``rows`` and ``cols`` (all patterns if None)."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        if cols is None and self.distances.shape[0]:
            return self.distances[rows]  # whole rows: no index grid to build
        cols = np.arange(self.n_patterns) if cols is None else np.asarray(cols, dtype=np.int64).reshape(-1)
        if self.distances.shape[0]:
            return self.distances[np.ix_(rows, cols)]
        return _between(self.words, self.table, self.root, rows, cols)

    def from_patterns(self, rows) -> np.ndarray:
        """Distances from patterns ``rows`` to every pattern, without forming the dense matrix if it is not yet.

        The same as :meth:`between` up to rounding: a product of fewer rows can end in
        another last bit, which the distances' rounding to 1e-9 hides nearly always.
        """
        if not self.kept or "distances" in self.__dict__ or self.metric not in ("manhattan", "euclidean"):
            return self.between(rows)
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        return scaled_distances(self.pattern_rows[rows], self.mean, self.std, self.metric, B=self.pattern_rows)


def binary_points(X: np.ndarray, metric: str = "manhattan") -> BinaryPoints:
    """Merge identical rows of ``X``; keep the distances between the patterns if they fit :data:`DENSE_LIMIT`.

    The kept distances are computed when first needed (:attr:`BinaryPoints.distances`): the
    nearest of given medoids needs only the distances from them (:meth:`BinaryPoints.from_patterns`).
    Cosine and correlation distances are not sums over columns and are always kept dense.
    """
    check_distance(metric)
    X = np.asarray(X, dtype=np.float64)
    # Rows packed to 64-bit words make one sortable key each: 15x faster than np.unique(axis=0),
    # and up to 64 columns the key is one integer, 3x faster again to sort than bytes. Any key
    # that tells rows apart will do: the patterns are numbered by first occurrence below.
    words = _row_words(X)
    keys = words[:, 0] if words.shape[1] == 1 else words.view(np.dtype((np.void, 8 * words.shape[1]))).ravel()
    _, first, pattern, counts = np.unique(keys, return_index=True, return_inverse=True, return_counts=True)
    # Number patterns by first occurrence, not lexicographically: FasterPAM's eager
    # swaps scan points in order, and a sorted order (all-wrong patterns first) biases
    # which of equally good medoid sets it reaches (measured: +10% MAE on GSM8K).
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    patterns = X[first[order]]
    mean, std = column_scale(X)
    if metric not in ("manhattan", "euclidean") or len(order) <= DENSE_LIMIT:
        words, least, scale, table, _ = _NO_BITS
    else:
        weights = column_weights(std, metric)
        words, table = _packed(patterns, weights)
        least, scale = _least_weight(weights)
        patterns = patterns[:0]
    pattern = rank[pattern.reshape(-1)]
    return BinaryPoints(
        pattern, counts[order], patterns, mean, std, metric, words, table, least, scale, metric == "euclidean"
    )


def _least_weight(weights: np.ndarray) -> tuple[int, float]:
    """The least column weight in ticks (a shade less, rounded down: the bound stays below the
    distance) and the ticks per unit."""
    unit = weights.min() * (1.0 - 1e-12)
    scale = TICKS / unit
    return int(np.floor(unit * scale)), scale


def _row_words(X: np.ndarray) -> np.ndarray:
    """(n, w) uint64: each row's 0/1 columns, 64 to a word (column c: bit c % 64 of word c // 64), at least one word."""
    n_bytes = -(-X.shape[1] // 64) * 8 or 8
    bits = np.zeros((X.shape[0], n_bytes), dtype=np.uint8)
    packed = np.packbits(X.astype(bool), axis=1, bitorder="little")
    bits[:, : packed.shape[1]] = packed
    return bits.view("<u8").astype(np.uint64, copy=False)


def _packed(patterns: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Patterns packed 8 columns to a byte (padded to whole 64-bit words), and each byte's weight table, flat."""
    words = np.ascontiguousarray(_row_words(patterns).T)
    n_bytes = 8 * words.shape[0]
    w = np.zeros(n_bytes * 8)
    w[: len(weights)] = weights
    table = np.zeros((n_bytes, 256))
    for bit in range(8):  # bit by bit, in a fixed order: the same sum for the same columns
        has = (np.arange(256) >> bit) & 1 == 1
        table[:, has] += w[bit::8][:, None]
    return words, table.reshape(-1)


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
    """K-Medoids of the rows behind ``points`` (FasterPAM on the weighted patterns).

    Each free medoid pattern is represented by a random row of that pattern. If there
    are fewer distinct patterns than medoids, the remaining medoids are random further
    rows: they duplicate a pattern already chosen and, losing ties to it, own no items.
    Labels and medoids are row indices, fixed medoids first; ties go to the earlier medoid.

    With ``sample`` > 0 (more than the medoids, fewer than the patterns), CLARA:
    ``draws`` (default :data:`DRAWS`) times, FasterPAM on ``sample`` random patterns
    (the fixed ones always among them, each weighted by its count); the medoids of
    lowest cost on all patterns are kept.

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
    n_patterns = points.n_patterns
    k = len(fixed_patterns) + min(n_clusters - len(fixed), n_patterns - len(fixed_patterns))
    weights = points.counts.astype(np.float64)
    if sample and k < sample < n_patterns:
        chosen_patterns, n_swaps = _clara(points, weights, k, fixed_patterns, rng, max_iter, sample, draws or DRAWS)
    else:
        chosen_patterns, n_swaps = _from_random_start(
            points.distances, points.packed, weights, fixed_patterns, k, rng, max_iter
        )
    # A random row of each pattern, not the first: which of identical items a target is
    # asked is then part of each run's randomness rather than fixed by item order.
    chosen = points.random_rows(chosen_patterns[len(fixed_patterns) :], rng).tolist()
    missing = n_clusters - len(fixed) - len(chosen)
    if missing:
        pool = _others(n, np.concatenate([fixed, chosen]))
        chosen += rng.choice(pool, missing, replace=False).tolist()
    medoids = np.concatenate([fixed, np.asarray(chosen, dtype=np.int64)])
    labels, nearest = nearest_medoid(points, medoids)
    return KMedoidsResult(medoids, labels, float(nearest.sum()), n_swaps)


def _others(n: int, taken) -> np.ndarray:
    """``0 .. n - 1`` without ``taken``, in order (``np.setdiff1d``'s result, without its sort)."""
    free = np.ones(n, dtype=bool)
    free[np.asarray(taken, dtype=np.int64)] = False
    return np.flatnonzero(free)


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

    At a fraction of the cost: the labels are read from the distances to the medoids
    alone, one product for all sets (:meth:`BinaryPoints.from_patterns`); only for a set
    whose labels' digest differs (a distance that rounded otherwise decided a tie) is the
    dense matrix formed, as :func:`nearest_medoid` reads it.
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


def _clara(points: BinaryPoints, weights, k: int, fixed_patterns, rng, max_iter: int, sample: int, draws: int):
    """CLARA over ``draws`` samples of ``sample`` patterns: the medoid patterns of lowest full cost."""
    free_pool = _others(points.n_patterns, fixed_patterns)
    best, best_cost, n_swaps = None, np.inf, 0
    for _ in range(draws):
        drawn = np.sort(rng.choice(free_pool, sample - len(fixed_patterns), replace=False))
        subset = np.concatenate([fixed_patterns, drawn])
        result = k_medoids(
            points.between(subset, subset),
            k,
            fixed=np.arange(len(fixed_patterns)),
            weights=weights[subset],
            random_state=rng,
            max_iter=max_iter,
        )
        medoids = subset[result.medoids]
        cost = float(points.between(medoids).min(axis=0) @ weights)
        n_swaps += result.n_swaps
        if cost < best_cost:
            best, best_cost = medoids, cost
    return best, n_swaps


def identical_rows(D: np.ndarray) -> np.ndarray:
    """Each row's first row with the same bits (itself if none): the ``same_row`` of :func:`k_medoids`.

    Examples
    --------
    >>> identical_rows(np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])).tolist()
    [0, 1, 0]
    """
    D = np.ascontiguousarray(D, dtype=np.float64)
    if D.ndim != 2:
        raise TailoredBenchError(f"distance matrix must be two-dimensional, got shape {D.shape}")
    bits = D.view(np.uint64)
    hashes = _row_hashes(bits)
    return _first_equal(bits, np.argsort(hashes, kind="stable"), hashes)


@numba.njit(cache=True, nogil=True)
def _row_hashes(bits):
    # Each 64-bit word mixed in by a multiply and a shift down (a float's differing bits are
    # often only high ones, which a multiply alone would push out).
    out = np.empty(bits.shape[0], dtype=np.uint64)
    for i in range(bits.shape[0]):
        h = np.uint64(0)
        for j in range(bits.shape[1]):
            h = (h ^ bits[i, j]) * np.uint64(0xFF51AFD7ED558CCD)
            h ^= h >> np.uint64(33)
        out[i] = h
    return out


@numba.njit(cache=True, nogil=True)
def _first_equal(bits, order, hashes):
    # Rows in hash order (by index within a hash): each is compared with the rows of its
    # hash that were first of their bits, lowest index first.
    first = np.arange(bits.shape[0])
    heads = np.empty(bits.shape[0], dtype=np.int64)
    n_heads = 0
    for i in order:
        if n_heads and hashes[i] != hashes[heads[0]]:
            n_heads = 0
        for h in heads[:n_heads]:
            same = True
            for j in range(bits.shape[1]):
                if bits[i, j] != bits[h, j]:
                    same = False
                    break
            if same:
                first[i] = h
                break
        else:
            heads[n_heads] = i
            n_heads += 1
    return first


def assign(medoid_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each point's nearest medoid (first on ties) and its distance, from the medoids' rows."""
    return _first_least(np.ascontiguousarray(medoid_rows, dtype=np.float64))


@intrinsic
def _popcount(typingctx, value):
    # LLVM's ctpop: one instruction on current CPUs.
    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return types.uint64(types.uint64), codegen


@intrinsic
def _trailing_zeros(typingctx, value):
    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))

    return types.uint64(types.uint64), codegen


def _lanes(context, builder, array_type, array, start, count):
    # Elements start .. start + count - 1 of a 1-d array, loaded as one vector; integers
    # narrower than 64 bits are sign-extended to 64-bit lanes.
    data = context.make_array(array_type)(context, builder, array).data
    element = context.get_data_type(array_type.dtype)
    bits = array_type.dtype.bitwidth
    vector = builder.load(
        builder.bitcast(builder.gep(data, [start]), ir.VectorType(element, count).as_pointer()), align=bits // 8
    )
    if isinstance(array_type.dtype, types.Integer) and bits < 64:
        return builder.sext(vector, ir.VectorType(ir.IntType(64), count))
    return vector


def _lane_bits(builder, below):
    # Four comparisons as bits 0..3 of an integer: one movemask on x86.
    return builder.zext(builder.bitcast(below, ir.IntType(4)), ir.IntType(64))


@intrinsic
def _below4(typingctx, counts, columns, start):
    # Bit j (0..3): counts[start + j] < columns[start + j].
    def codegen(context, builder, signature, args):
        a = _lanes(context, builder, signature.args[0], args[0], args[2], 4)
        b = _lanes(context, builder, signature.args[1], args[1], args[2], 4)
        return _lane_bits(builder, builder.icmp_signed("<", a, b))

    return types.uint64(counts, columns, start), codegen


@intrinsic
def _fewer4(typingctx, row, wx, columns, start):
    # Bit j (0..3): row[start + j] and wx differ in fewer than columns[start + j] bits. Written
    # as vectors, since the compiler's own vectorisation built the bits with a shift per lane
    # (measured: the scan 1.4x as fast at 14042 items).
    def codegen(context, builder, signature, args):
        lanes = ir.VectorType(ir.IntType(64), 4)
        other = builder.insert_element(ir.Constant(lanes, ir.Undefined), args[1], ir.Constant(ir.IntType(32), 0))
        first = ir.Constant(ir.VectorType(ir.IntType(32), 4), [0, 0, 0, 0])
        other = builder.shuffle_vector(other, ir.Constant(lanes, ir.Undefined), first)
        differ = builder.xor(_lanes(context, builder, signature.args[0], args[0], args[3], 4), other)
        ctpop = cgutils.get_or_insert_function(builder.module, ir.FunctionType(lanes, [lanes]), "llvm.ctpop.v4i64")
        count = builder.call(ctpop, [differ])
        limit = _lanes(context, builder, signature.args[2], args[2], args[3], 4)
        return _lane_bits(builder, builder.icmp_signed("<", count, limit))

    return types.uint64(row, wx, columns, start), codegen


@intrinsic
def _below64(typingctx, values, limits, start):
    # Bit j (0..63): values[start + j] < limits[start + j], for float64 arrays: 64 comparisons
    # made one mask (measured: FasterPAM 7% faster on GSM8K than the compiler's own loop of them).
    def codegen(context, builder, signature, args):
        values = _lanes(context, builder, signature.args[0], args[0], args[2], 64)
        limits = _lanes(context, builder, signature.args[1], args[1], args[2], 64)
        below = builder.fcmp_ordered("<", values, limits)
        return builder.bitcast(below, ir.IntType(64))

    if values.layout != "C" or limits.layout != "C":  # read as one block of memory each
        return None
    return types.uint64(values, limits, start), codegen


@numba.njit(cache=True, nogil=True, inline="always")
def _distance(D, words, table, root, x, o):
    # The distance between patterns x and o: kept, or summed from the byte tables.
    if D.shape[0]:
        return D[x, o]
    s = 0.0
    for j in range(words.shape[0]):
        s += _word_sum(table, 8 * j, words[j, x] ^ words[j, o])
    return _rounded(s, root)


@numba.njit(cache=True, nogil=True, inline="always")
def _word_sum(table, b, v):
    # The weights of the differing columns v of word b // 8, byte by byte, in a fixed order.
    # One flat table: each byte's row is a constant offset from one address.
    t = 256 * b
    return (
        (table[t + (v & 255)] + table[t + 256 + ((v >> 8) & 255)])
        + (table[t + 512 + ((v >> 16) & 255)] + table[t + 768 + ((v >> 24) & 255)])
    ) + (
        (table[t + 1024 + ((v >> 32) & 255)] + table[t + 1280 + ((v >> 40) & 255)])
        + (table[t + 1536 + ((v >> 48) & 255)] + table[t + 1792 + (v >> 56)])
    )


@numba.njit(cache=True, nogil=True, inline="always")
def _rounded(s, root):
    # Rounded to 1e-9 as the kept distances are (tailoredbench.distances): equal sums tie.
    s = np.floor(s * 1e9 + 0.5) / 1e9 if s > 0.0 else 0.0
    return np.sqrt(s) if root else s


#: Above any bound in ticks (at most TICKS times the columns): no point is settled.
_NO_LIMIT = 2.0**62


@numba.njit(cache=True, nogil=True)
def _limits(root, ds, scale, least, columns, n_columns):
    # columns[o]: the differing columns at which the bound from a candidate (see _open), each
    # column counted at the least weight in ticks, reaches ds[o] (and 1e-9, which covers the
    # rounding of distances) rounded up to whole ticks. A point differing in as many is at
    # least ds[o] away: no swap to the candidate moves it. Beyond n_columns, n_columns + 1:
    # every point is open, and the count fits in 32 bits (half the bytes the scan reads).
    for o in range(ds.shape[0]):
        limit = np.int64(min(np.ceil(((ds[o] * ds[o] if root else ds[o]) + 1e-9) * scale), _NO_LIMIT))
        columns[o] = min((limit + least - 1) // least, n_columns + 1)


@numba.njit(cache=True, nogil=True)
def _open(words, x, columns, counts, found):
    # Bit j of found[b]: point 64 b + j differs from x in fewer than columns[o] columns, so
    # the bound leaves open whether x is within ds[o] of it. One popcount per word, four
    # points to a vector compare, no branch; FasterPAM visits the set bits.
    n = columns.shape[0]
    wx, row = words[0, x], words[0]
    if words.shape[0] == 1:
        for block in range(n // 64):
            mask = np.uint64(0)
            for q in range(16):
                mask |= _fewer4(row, wx, columns, 64 * block + 4 * q) << np.uint64(4 * q)
            found[block] = mask
    else:
        counts[:] = 0
        for j in range(words.shape[0]):
            wj, rj = words[j, x], words[j]
            for o in range(n):
                counts[o] += np.int64(_popcount(wj ^ rj[o]))
        for block in range(n // 64):
            mask = np.uint64(0)
            for q in range(16):
                mask |= _below4(counts, columns, 64 * block + 4 * q) << np.uint64(4 * q)
            found[block] = mask
    if n % 64:  # the last points, one by one
        start = n - n % 64
        mask = np.uint64(0)
        for o in range(start, n):
            c = np.int64(_popcount(wx ^ row[o])) if words.shape[0] == 1 else counts[o]
            mask |= np.uint64(c < columns[o]) << np.uint64(o - start)
        found[start // 64] = mask


@numba.njit(cache=True, nogil=True)
def _first_least(rows):
    # Per column, the first row of least value and that value (np.argmin's rule), row by row.
    labels = np.zeros(rows.shape[1], dtype=np.int64)
    nearest = rows[0].copy()
    for p in range(1, rows.shape[0]):
        for o in range(rows.shape[1]):
            if rows[p, o] < nearest[o]:
                nearest[o] = rows[p, o]
                labels[o] = p
    return labels, nearest


@numba.njit(cache=True, nogil=True)
def _between(words, table, root, rows, cols):
    D = np.empty((0, 0))
    out = np.empty((rows.shape[0], cols.shape[0]))
    for i in range(rows.shape[0]):
        for j in range(cols.shape[0]):
            out[i, j] = _distance(D, words, table, root, rows[i], cols[j])
    return out


@numba.njit(cache=True, nogil=True)
def _nearest_two_of(to_medoids, o, near, second, dn, ds):
    # Nearest and second-nearest medoid of point o, ties to the earlier position.
    # to_medoids[o, p] is o's distance to medoid position p: one row per point, so a
    # point's k distances are read together rather than from k rows of D.
    # In locals, stored once: the arrays may alias as far as the compiler knows, so it would
    # otherwise load and store them at every medoid.
    first_d, second_d, first_p, second_p = np.inf, np.inf, -1, -1
    row = to_medoids[o]
    for p in range(row.shape[0]):
        d = row[p]
        if d < first_d:
            second_d, second_p = first_d, first_p
            first_d, first_p = d, p
        elif d < second_d:
            second_d, second_p = d, p
    dn[o], ds[o], near[o], second[o] = first_d, second_d, first_p, second_p


@numba.njit(cache=True, nogil=True)
def _after_swap(D, words, table, root, to_medoids, p, x, near, second, dn, ds):
    # Medoid position p now holds x: update the caches in O(n), falling back to a
    # full O(k) scan only for points that lost their nearest or second medoid.
    for o in range(near.shape[0]):
        d = _distance(D, words, table, root, x, o)
        to_medoids[o, p] = d
        if near[o] == p:
            if d <= ds[o]:
                dn[o] = d
            else:
                _nearest_two_of(to_medoids, o, near, second, dn, ds)
        elif d < dn[o]:
            second[o] = near[o]
            ds[o] = dn[o]
            near[o] = p
            dn[o] = d
        elif second[o] == p:
            if d <= ds[o]:
                ds[o] = d
            else:
                _nearest_two_of(to_medoids, o, near, second, dn, ds)
        elif d < ds[o]:
            second[o] = p
            ds[o] = d


@numba.njit(cache=True, nogil=True)
def _scoring_rows(scoring, dn, ds, w, near):
    # What a score reads of each point, side by side: one cache line per point visited, not
    # four (measured: 4% faster at 14042 items). Rewritten after every swap.
    for o in range(dn.shape[0]):
        scoring[o, 0] = dn[o]
        scoring[o, 1] = ds[o]
        scoring[o, 2] = w[o]
        scoring[o, 3] = near[o]


@numba.njit(cache=True, nogil=True, inline="always")
def _score(d, dno, dso, wo, p, delta, nearer):
    # A point at distance d from the candidate, dno and dso from its nearest medoids (the
    # nearest at position p), of weight wo: what the swap changes for it, nothing unless
    # d < dso (nearer: known to be). Returns the change shared by every medoid removed; adds
    # the rest to delta[p]. Selects rather than branches: both tests go either way
    # unpredictably (measured: 12-15% faster on GSM8K and at 14042 items for d < dno, 1.3x at
    # 14042 items for d < dso). A point not nearer adds +0.0, which leaves every sum as it
    # was, since none is -0.0: removal sums terms of +0.0 or more, every change is +0.0 or
    # negative, and a sum of such terms is never -0.0.
    closer = d < dno
    delta[p] += wo * ((dno if closer else d) - dso) if nearer or d < dso else 0.0
    return wo * (d - dno) if closer else 0.0


@numba.njit(cache=True, nogil=True)
def _fasterpam(D, words, least, scale, table, root, w, medoids, n_fixed, max_iter, same_row):
    n = w.shape[0]
    k = medoids.shape[0]
    kept = D.shape[0] > 0
    is_medoid = np.zeros(n, dtype=np.bool_)
    for p in range(k):
        is_medoid[medoids[p]] = True
    near = np.empty(n, dtype=np.int64)
    second = np.empty(n, dtype=np.int64)
    dn = np.empty(n)
    ds = np.empty(n)
    to_medoids = np.empty((n, k))
    for p in range(k):
        for o in range(n):
            to_medoids[o, p] = _distance(D, words, table, root, medoids[p], o)
    for o in range(n):
        _nearest_two_of(to_medoids, o, near, second, dn, ds)
    columns = np.empty(n, dtype=np.int32)
    counts = np.empty(n, dtype=np.int64)
    found = np.zeros(-(-n // 64), dtype=np.uint64)
    scoring = np.empty((n if not kept else 0, 4))
    if not kept:
        _scoring_rows(scoring, dn, ds, w, near)
        _limits(root, ds, scale, least, columns, 64 * words.shape[0])
    removal = np.zeros(k)
    for o in range(n):
        removal[near[o]] += w[o] * (ds[o] - dn[o])
    cost = 0.0
    for o in range(n):
        cost += w[o] * dn[o]
    tol = 1e-12 * max(cost, 1.0)
    delta = np.empty(k)
    full = n - n % 64
    n_swaps = 0
    since_swap = 0
    # scored[r]: the swap count when a candidate with row r was last scored (and not
    # swapped in). Only a swap changes what a score reads, so a row scored since then
    # would score the same again.
    scored = np.full(n, -1, dtype=np.int64)
    x = 0
    for _ in range(max_iter * n):
        if since_swap >= n:
            break
        since_swap += 1
        if not is_medoid[x] and scored[same_row[x]] != n_swaps:
            shared = 0.0
            for p in range(k):
                delta[p] = removal[p]
            if kept:
                # Most points are farther from x than both their nearest medoids. A branch per
                # point mispredicts; 64 comparisons make one mask (no branch) and its set bits
                # are visited in order, so the sums are the same as a plain loop's.
                row = D[x]
                for start in range(0, full, 64):
                    mask = _below64(row, ds, start)
                    while mask:
                        o = start + _trailing_zeros(mask)
                        mask &= mask - np.uint64(1)
                        shared += _score(row[o], dn[o], ds[o], w[o], near[o], delta, True)
                for o in range(full, n):
                    if row[o] < ds[o]:
                        shared += _score(row[o], dn[o], ds[o], w[o], near[o], delta, True)
            else:
                # the bound settled most points; the others are measured, in order and with
                # no branch on the distance (a further bound per point, or a branch, cost
                # more than the distances they spared: 1.3-1.6x at 14042 items)
                _open(words, x, columns, counts, found)
                if words.shape[0] == 1:  # one word: no loop over words (a test per point cost 4%)
                    wx, first_words = words[0, x], words[0]
                    for block in range(found.shape[0]):
                        mask = found[block]
                        while mask:
                            o = 64 * block + _trailing_zeros(mask)
                            mask &= mask - np.uint64(1)
                            d = _rounded(_word_sum(table, 0, wx ^ first_words[o]), root)
                            shared += _score(
                                d, scoring[o, 0], scoring[o, 1], scoring[o, 2], np.int64(scoring[o, 3]), delta, False
                            )
                else:
                    for block in range(found.shape[0]):
                        mask = found[block]
                        while mask:
                            o = 64 * block + _trailing_zeros(mask)
                            mask &= mask - np.uint64(1)
                            d = _distance(D, words, table, root, x, o)
                            shared += _score(
                                d, scoring[o, 0], scoring[o, 1], scoring[o, 2], np.int64(scoring[o, 3]), delta, False
                            )
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
                    _scoring_rows(scoring, dn, ds, w, near)
                    _limits(root, ds, scale, least, columns, 64 * words.shape[0])
                for p in range(k):
                    removal[p] = 0.0
                for o in range(n):
                    removal[near[o]] += w[o] * (ds[o] - dn[o])
            else:
                scored[same_row[x]] = n_swaps
        x += 1
        if x == n:
            x = 0
    return n_swaps
