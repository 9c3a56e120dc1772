"""K-Medoids and distances against brute force on tiny inputs."""

import threading
from itertools import combinations

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from threadpoolctl import threadpool_info

from tailoredbench.errors import TailoredBenchError
from tailoredbench.kmedoids import (
    DISTANCES,
    binary_distances,
    binary_points,
    identical_rows,
    k_medoids,
    k_medoids_binary,
    standardize,
    weighted_hamming,
)


def cost(D, medoids):
    return D[np.asarray(medoids)].min(axis=0).sum()


def brute_force_pam(D, k, fixed=()):
    """The optimal medoid set containing ``fixed``, by enumeration."""
    free = [i for i in range(len(D)) if i not in set(fixed)]
    best = None
    for extra in combinations(free, k - len(fixed)):
        c = cost(D, [*fixed, *extra])
        if best is None or c < best[0] - 1e-12:
            best = (c, [*fixed, *extra])
    return best


def random_distances(rng, n, dim=2):
    X = rng.normal(size=(n, dim))
    return cdist(X, X, "cityblock")


@pytest.mark.parametrize("seed", range(20))
def test_result_is_a_swap_local_optimum(seed):
    rng = np.random.default_rng(seed)
    D = random_distances(rng, 9)
    result = k_medoids(D, 3, random_state=seed)
    assert np.isclose(result.cost, cost(D, result.medoids))
    # no single swap of a medoid with a non-medoid improves the cost
    for p in range(3):
        for x in set(range(9)) - set(result.medoids.tolist()):
            trial = result.medoids.copy()
            trial[p] = x
            assert cost(D, trial) >= result.cost - 1e-9


def separated_clusters(seed):
    """Distances between 12 points in three far-apart clusters of 4: the optimum is reachable by local search."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0, 0], [20, 0], [0, 20]])
    X = np.vstack([c + rng.normal(size=(4, 2)) for c in centres])
    return cdist(X, X)


@pytest.mark.parametrize("seed", range(10))
def test_matches_brute_force_on_separated_clusters(seed):
    D = separated_clusters(seed)
    optimum, _ = brute_force_pam(D, 3)
    assert np.isclose(k_medoids(D, 3, random_state=seed).cost, optimum)


@pytest.mark.parametrize("seed", range(15))
def test_fixed_medoids_never_move_and_rest_is_locally_optimal(seed):
    rng = np.random.default_rng(seed)
    D = random_distances(rng, 10)
    fixed = [7, 2]
    result = k_medoids(D, 4, fixed=fixed, random_state=seed)
    assert result.medoids[:2].tolist() == fixed
    assert len(set(result.medoids.tolist())) == 4
    for p in (2, 3):
        for x in set(range(10)) - set(result.medoids.tolist()):
            trial = result.medoids.copy()
            trial[p] = x
            assert cost(D, trial) >= result.cost - 1e-9


@pytest.mark.parametrize("seed", range(10))
def test_fixed_medoid_plus_free_ones_reach_the_optimum_on_separated_clusters(seed):
    # one medoid fixed inside the first cluster: the free medoids must find the other two clusters' best points
    D = separated_clusters(seed)
    optimum, _ = brute_force_pam(D, 3, fixed=[1])
    result = k_medoids(D, 3, fixed=[1], random_state=seed)
    assert result.medoids[0] == 1 and np.isclose(result.cost, optimum)


def test_fixed_medoids_win_ties():
    X = np.array([0.0, 2.0, 1.0, 5.0])
    D = np.abs(X[:, None] - X[None, :])
    # point 2 (at 1.0) is equally far from medoids 0 and 1; fixed medoid 0 comes first
    result = k_medoids(D, 2, fixed=[0, 1])
    assert result.labels.tolist() == [0, 1, 0, 1]


def test_all_fixed_and_seed_reproducibility(rng):
    D = random_distances(rng, 30)
    assert k_medoids(D, 3, fixed=[1, 2, 3]).medoids.tolist() == [1, 2, 3]
    a = k_medoids(D, 5, random_state=7)
    b = k_medoids(D, 5, random_state=7)
    assert a.medoids.tolist() == b.medoids.tolist()


def test_bad_arguments():
    D = np.zeros((4, 4))
    with pytest.raises(TailoredBenchError):
        k_medoids(D, 5)
    with pytest.raises(TailoredBenchError):
        k_medoids(D, 1, fixed=[0, 1])
    with pytest.raises(TailoredBenchError):
        k_medoids(np.zeros((3, 4)), 2)


def test_weighted_hamming_is_manhattan_of_standardized(rng):
    X = (rng.random((50, 12)) < 0.3).astype(float)
    X[:, 3] = 1.0  # a constant column scales by 1 and never differs
    expected = cdist(standardize(X), standardize(X), "cityblock")
    assert np.allclose(binary_distances(X, "manhattan"), expected)
    assert np.allclose(binary_distances(X, "euclidean"), cdist(standardize(X), standardize(X)))
    w = rng.random(12)
    Y = (rng.random((7, 12)) < 0.5).astype(float)
    brute = np.array([[np.sum(w * (a != b)) for b in Y] for a in X])
    assert np.allclose(weighted_hamming(X, w, Y), brute)


def test_distances_in_many_threads_leave_the_process_blas_threads_as_they_were(rng):
    # threads (the threading backend) each lowering BLAS to one thread for a product and restoring it
    X, w = (rng.random((300, 30)) < 0.5).astype(float), rng.random(30)
    weighted_hamming(X, w)  # every BLAS library loaded
    before = [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]
    threads = [threading.Thread(target=lambda: [weighted_hamming(X, w) for _ in range(500)]) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"] == before


@pytest.mark.parametrize("metric", ["cosine", "correlation"])
def test_angular_distances_match_scipy(rng, metric):
    X = (rng.random((40, 9)) < 0.5).astype(float)
    Z = standardize(X)
    assert np.allclose(binary_distances(X, metric), cdist(Z, Z, metric), atol=1e-10)


def test_distance_names():
    assert DISTANCES == ("manhattan", "euclidean", "cosine", "correlation")
    with pytest.raises(TailoredBenchError, match="unknown distance"):
        binary_distances(np.zeros((3, 3)), "braycurtis")


@pytest.mark.parametrize("n_columns", [1, 4, 64, 65])  # up to 64 columns a row's key is one integer
def test_binary_points_merge_identical_rows_exactly(rng, n_columns):
    X = (rng.random((12, n_columns)) < 0.5).astype(float)[rng.integers(0, 12, size=60)]  # many duplicates
    points = binary_points(X)
    assert points.counts.sum() == 60 and len(points.counts) <= 12
    full = binary_distances(X)
    assert np.allclose(points.distances[points.pattern][:, points.pattern], full)
    # patterns are numbered by first occurrence
    assert points.pattern[0] == 0 and np.all(np.diff(np.unique(points.pattern, return_index=True)[1]) > 0)
    _, first, inverse = np.unique(X, axis=0, return_index=True, return_inverse=True)
    assert np.array_equal(points.pattern, np.argsort(np.argsort(first))[inverse.reshape(-1)])


@pytest.mark.parametrize("seed", range(8))
def test_weighted_patterns_reach_a_local_optimum_of_the_full_problem(seed):
    rng = np.random.default_rng(seed)
    X = (rng.random((9, 5)) < 0.5).astype(float)[rng.integers(0, 9, size=40)]
    points = binary_points(X)
    D = binary_distances(X)
    fixed = [3]
    result = k_medoids_binary(points, 4, fixed=fixed, random_state=seed)
    assert result.medoids[0] == 3 and len(set(result.medoids.tolist())) == 4
    assert np.isclose(result.cost, cost(D, result.medoids))
    for p in (1, 2, 3):
        for x in set(range(40)) - set(result.medoids.tolist()):
            trial = result.medoids.copy()
            trial[p] = x
            assert cost(D, trial) >= result.cost - 1e-9


def test_fewer_patterns_than_medoids_pads_with_distinct_rows():
    X = np.array([[0.0], [1.0]])[np.arange(20) % 2]  # two patterns, twenty rows
    result = k_medoids_binary(binary_points(X), 5, fixed=[0], random_state=0)
    assert len(set(result.medoids.tolist())) == 5 and result.medoids[0] == 0
    assert result.cost == 0.0


@pytest.mark.parametrize("columns", [33, 70])  # one word (its own bound loop) and two
@pytest.mark.parametrize("metric", ["manhattan", "euclidean"])
@pytest.mark.parametrize("seed", range(4))
def test_distances_computed_as_needed_give_the_kept_distances_medoids(monkeypatch, metric, seed, columns):
    # Beyond DENSE_LIMIT patterns no distance matrix is kept; the medoids must not change.
    from tailoredbench import kmedoids

    X = (np.random.default_rng(seed).random((300, columns)) < 0.4).astype(float)
    kept = binary_points(X, metric)
    monkeypatch.setattr(kmedoids, "DENSE_LIMIT", 0)
    streamed = binary_points(X, metric)
    assert kept.distances.shape == (300, 300) and streamed.distances.shape == (0, 0)
    assert np.allclose(streamed.between(np.arange(300)), kept.distances, atol=2e-9)
    a = k_medoids_binary(kept, 12, fixed=[5, 9], random_state=seed)
    b = k_medoids_binary(streamed, 12, fixed=[5, 9], random_state=seed)
    assert a.medoids.tolist() == b.medoids.tolist() and a.labels.tolist() == b.labels.tolist()
    assert np.isclose(a.cost, b.cost)


@pytest.mark.parametrize("columns", [1, 3, 33, 64, 70, 130])  # one word (full or not), two, three
@pytest.mark.parametrize("metric", ["manhattan", "euclidean"])
@pytest.mark.parametrize("rows", [300, 320])  # a last block of 44 points, and none
def test_the_bound_in_ticks_leaves_open_every_point_nearer_than_its_limit(monkeypatch, metric, columns, rows):
    # A point the bound does not flag is skipped by FasterPAM: it must be at least ds away.
    from tailoredbench import kmedoids

    rng = np.random.default_rng(columns)
    share = rng.uniform(0.005, 0.995, columns)  # weights 1/std from about 2 to 14
    X = (rng.random((rows, columns)) < share).astype(float)
    monkeypatch.setattr(kmedoids, "DENSE_LIMIT", 0)
    points = binary_points(X, metric)
    n = points.n_patterns
    D = points.between(np.arange(n))  # as FasterPAM computes them
    columns_open, counts, found = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64), np.empty(n, dtype=np.uint8)
    differing = (points.words[:, :, None] ^ points.words[:, None, :]).astype(np.uint64)
    popcount = np.unpackbits(differing.view(np.uint8), axis=-1).reshape(*differing.shape, 64).sum(axis=(0, -1))
    for x in range(0, n, 5):
        # each point's limit at its distance (nothing to flag), just beyond (everything), and another's
        for ds in (D[x], D[x] + 1e-7, D[(x + 1) % n], np.full(n, 1e300)):  # and beyond every distance
            kmedoids._limits(points.root, ds, points.scale, points.least, columns_open)
            kmedoids._open(points.words, x, columns_open, counts, found)
            flags = found.astype(bool)
            assert flags[np.flatnonzero(D[x] < ds)].all()
            assert flags.tolist() == (popcount[x] < columns_open).tolist()  # the same compare, in plain numpy
    assert kmedoids.TICKS - 1 <= points.least <= kmedoids.TICKS


def test_streamed_distances_on_up_to_64_columns(monkeypatch):
    from tailoredbench import kmedoids

    X = (np.random.default_rng(3).random((400, 33)) < 0.5).astype(float)
    kept = k_medoids_binary(binary_points(X), 20, fixed=[0], random_state=1)
    monkeypatch.setattr(kmedoids, "DENSE_LIMIT", 0)
    streamed = k_medoids_binary(binary_points(X), 20, fixed=[0], random_state=1)
    assert kept.medoids.tolist() == streamed.medoids.tolist()


def test_clara_keeps_fixed_medoids_and_is_close_to_exact():
    X = (np.random.default_rng(4).random((600, 20)) < 0.5).astype(float)
    points = binary_points(X)
    exact = k_medoids_binary(points, 15, fixed=[3, 7], random_state=0)
    clara = k_medoids_binary(points, 15, fixed=[3, 7], random_state=0, sample=200, draws=3)
    assert clara.medoids[:2].tolist() == [3, 7] and len(set(clara.medoids.tolist())) == 15
    assert exact.cost <= clara.cost <= 1.15 * exact.cost
    assert np.isclose(clara.cost, binary_distances(X)[clara.medoids].min(axis=0).sum())


@pytest.mark.parametrize("seed", range(10))
def test_random_rows_draw_as_rng_choice_pattern_by_pattern(seed):
    # One vectorised draw must give the rows, and leave the generator, as the loop it replaces.
    rng = np.random.default_rng(seed)
    X = (rng.random((30, 3)) < 0.5).astype(float)[rng.integers(0, 30, size=200)]
    points = binary_points(X)
    patterns = rng.permutation(points.n_patterns)[: rng.integers(0, points.n_patterns + 1)]
    a, b = np.random.default_rng(seed + 100), np.random.default_rng(seed + 100)
    looped = [int(a.choice(np.flatnonzero(points.pattern == p))) for p in patterns]
    assert points.random_rows(patterns, b).tolist() == looped
    assert a.bit_generator.state == b.bit_generator.state


@pytest.mark.parametrize("seed", range(6))
def test_nearest_medoid_is_the_first_of_least_distance(seed):
    from tailoredbench.kmedoids import assign, nearest_medoid

    rng = np.random.default_rng(seed)
    X = (rng.random((25, 4)) < 0.5).astype(float)[rng.integers(0, 25, size=150)]  # ties everywhere
    points = binary_points(X)
    medoids = rng.choice(150, 9, replace=False)
    labels, nearest = nearest_medoid(points, medoids)
    rows = points.distances[points.pattern[medoids]][:, points.pattern]
    assert labels.tolist() == np.argmin(rows, axis=0).tolist()  # numpy's rule: the first on ties
    assert nearest.tolist() == rows.min(axis=0).tolist()
    assert [a.tolist() for a in assign(rows)] == [labels.tolist(), nearest.tolist()]


@pytest.mark.parametrize("metric", ["manhattan", "euclidean", "cosine"])
def test_known_labels_are_nearest_medoid_labels_without_the_dense_matrix(metric):
    from tailoredbench.kmedoids import known_labels, label_digest, nearest_medoid

    rng = np.random.default_rng(3)
    X = (rng.random((40, 6)) < 0.5).astype(float)[rng.integers(0, 40, size=300)]  # ties everywhere
    medoid_sets = [rng.choice(300, size, replace=False) for size in (3, 8, 8, 15)]
    truth = [nearest_medoid(binary_points(X, metric), medoids)[0] for medoids in medoid_sets]
    points = binary_points(X, metric)
    found = known_labels(points, medoid_sets, [label_digest(labels) for labels in truth])
    assert [f.tolist() for f in found] == [t.tolist() for t in truth]
    # sums over columns need only the distances from the medoids; cosine keeps its matrix
    assert ("distances" in points.__dict__) == (metric == "cosine")


def test_the_prepared_source_points_travel_with_their_distances():
    import pickle

    from tailoredbench.methods.tailoredbench import TailoredBenchMethod

    source = (np.random.default_rng(5).random((20, 90)) < 0.5).astype(float)
    points = TailoredBenchMethod().prepare(source, [15], distance="manhattan")["points"]
    sent = pickle.loads(pickle.dumps(points))  # as to a worker: formed once, not in every run
    assert "distances" in sent.__dict__ and np.array_equal(sent.distances, binary_points(source.T).distances)


def test_known_labels_fall_back_to_the_dense_matrix_when_the_digest_differs():
    from tailoredbench.kmedoids import known_labels, label_digest, nearest_medoid

    rng = np.random.default_rng(4)
    X = (rng.random((200, 12)) < 0.5).astype(float)
    points = binary_points(X)
    medoids = rng.choice(200, 10, replace=False)
    truth = nearest_medoid(binary_points(X), medoids)[0]
    # a digest the distances from the medoids alone cannot give, as a tie decided otherwise would
    (found,) = known_labels(points, [medoids], [label_digest(truth) ^ 1])
    assert found.tolist() == truth.tolist() and "distances" in points.__dict__


@pytest.mark.parametrize("seed", range(3))
def test_more_points_than_one_mask_reach_a_swap_local_optimum(seed):
    # FasterPAM's scan compares 64 points to a mask; 150 points also leave a remainder of 22.
    rng = np.random.default_rng(seed)
    D = random_distances(rng, 150)
    w = rng.integers(1, 4, size=150).astype(float)
    result = k_medoids(D, 6, fixed=[7], weights=w, random_state=seed)
    assert result.medoids[0] == 7 and np.isclose(result.cost, D[result.medoids].min(axis=0) @ w)
    for p in range(1, 6):
        for x in set(range(150)) - set(result.medoids.tolist()):
            trial = result.medoids.copy()
            trial[p] = x
            assert D[trial].min(axis=0) @ w >= result.cost - 1e-9


def test_identical_rows_match_bit_for_bit():
    D = np.array([[0.0, 1.0, 2.0], [0.0, 1.0, 2.0], [0.0, 1.0, np.nextafter(2.0, 3.0)], [-0.0, 1.0, 2.0]])
    # the third row differs in its last bit and the fourth in a sign bit: each stays its own
    assert identical_rows(D).tolist() == [0, 0, 2, 3]
    rng = np.random.default_rng(0)
    rows = rng.integers(0, 3, size=(500, 4)).astype(float)
    first = {}
    assert identical_rows(rows).tolist() == [first.setdefault(r.tobytes(), i) for i, r in enumerate(rows)]


@pytest.mark.parametrize("seed", range(5))
def test_same_row_skips_without_changing_the_medoids(seed):
    # 300 points on 12 sites: a candidate on the site of one already scored since the last
    # swap is skipped; every result is the one the full scan gives
    rng = np.random.default_rng(seed)
    sites = rng.normal(size=(12, 2))
    X = sites[rng.integers(0, 12, size=300)]
    D = cdist(X, X, "cityblock")
    same_row = identical_rows(D)
    assert len(set(same_row.tolist())) == 12
    w = rng.integers(1, 4, size=300).astype(float)
    for k, fixed in [(5, ()), (8, (3,))]:
        full = k_medoids(D, k, fixed=fixed, weights=w, random_state=seed)
        fast = k_medoids(D, k, fixed=fixed, weights=w, random_state=seed, same_row=same_row)
        assert fast.medoids.tolist() == full.medoids.tolist() and fast.n_swaps == full.n_swaps
        assert fast.labels.tolist() == full.labels.tolist() and fast.cost == full.cost
    with pytest.raises(TailoredBenchError, match="identical_rows"):
        k_medoids(D, 5, same_row=same_row[:-1])
