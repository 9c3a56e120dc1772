"""The run cache: a run read from it gives the numbers of a run computed afresh, to the digit."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tailoredbench as tb
from conftest import synthetic_matrix
from tailoredbench import cache as run_cache
from tailoredbench import sequential
from tailoredbench.batch import reproduce
from tailoredbench.errors import CacheWarning
from tailoredbench.methods.tailoredbench import TailoredBenchMethod

ENV = run_cache.ENV


@pytest.fixture
def bench():
    """SYNTHETIC: 30 sources and 12 targets on 150 items."""
    matrix = synthetic_matrix(42, 150, seed=3)
    return tb.Benchmark("synthetic", tb.ResponseMatrix(matrix[:30]), tb.ResponseMatrix(matrix[30:]))


def _simulate(bench, budgets=(15, 20), **kwargs):
    settings = {"methods": ["tailoredbench", "tailored_plus"], "runs": 2, "g_size": 5, "interval": 0.9, **kwargs}
    return tb.simulate(bench, budgets=list(budgets), **settings).results


def _entries(folder):
    return sorted(p.relative_to(folder) for p in folder.rglob("*.npz"))


def test_off_unless_a_folder_is_named(bench, tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, "")
    assert run_cache.folder() is None
    assert TailoredBenchMethod().prepare(bench.source.values, [15], distance="manhattan")["run_cache"] is None
    monkeypatch.setenv(ENV, str(tmp_path))
    assert run_cache.folder() == tmp_path


def test_cached_runs_give_the_same_numbers(bench, tmp_path, monkeypatch):
    fresh = _simulate(bench)
    monkeypatch.setenv(ENV, str(tmp_path))
    first = _simulate(bench)
    stored = _entries(tmp_path)
    # the targets' runs, the interval's folds and TailoredBench+'s stacking folds, one entry per budget
    assert stored and all(p.parts[0] == "probes" for p in stored)
    second = _simulate(bench)
    assert _entries(tmp_path) == stored  # everything was read, nothing chosen again
    pd.testing.assert_frame_equal(fresh, first, check_exact=True)
    pd.testing.assert_frame_equal(fresh, second, check_exact=True)
    # one budget of those runs is read from them, and is what a fresh run of it gives
    alone = _simulate(bench, budgets=[20])
    assert _entries(tmp_path) == stored
    monkeypatch.setenv(ENV, "")
    pd.testing.assert_frame_equal(alone, _simulate(bench, budgets=[20]), check_exact=True)


def test_a_cached_probe_whose_cluster_digest_fails_is_clustered_from_all_distances(bench, tmp_path, monkeypatch):
    from tailoredbench import kmedoids
    from tailoredbench.cache import load_cached, store_cached
    from tailoredbench.kmedoids import nearest_medoid

    fresh = _simulate(bench)
    monkeypatch.setenv(ENV, str(tmp_path))
    _simulate(bench)
    for path in tmp_path.rglob("*.npz"):  # every probe's stored digest off by one bit, each entry sound
        with np.load(path) as entry:
            key = str(entry["_key"])
        arrays = load_cached(path, key=key)
        flipped = {k: v ^ np.uint64(1) if k.startswith("labels_") else v for k, v in arrays.items()}
        store_cached(path, key=key, **flipped)
    fallbacks = []

    def from_all_distances(points, medoids):
        fallbacks.append(len(medoids))
        return nearest_medoid(points, medoids)

    monkeypatch.setattr(kmedoids, "nearest_medoid", from_all_distances)
    pd.testing.assert_frame_equal(fresh, _simulate(bench), check_exact=True)
    assert fallbacks  # every probe read failed its check and was clustered as when chosen


def test_gp_irt_anchors_are_cached_and_read_to_the_same_numbers(bench, tmp_path, monkeypatch):
    from tailoredbench.methods import gp_irt

    settings = {"methods": ["gp_irt"], "g_size": 5}
    fresh = _simulate(bench, **settings)
    monkeypatch.setenv(ENV, str(tmp_path))
    first = _simulate(bench, **settings)
    stored = _entries(tmp_path)
    # one entry per run and budget, for the targets' runs and the interval's folds
    assert stored and all(p.parts[0] == "anchors" for p in stored)

    def no_kmeans(*args):
        raise AssertionError("anchors chosen again")

    monkeypatch.setattr(gp_irt, "anchors", no_kmeans)
    second = _simulate(bench, **settings)
    assert _entries(tmp_path) == stored
    pd.testing.assert_frame_equal(fresh, first, check_exact=True)
    pd.testing.assert_frame_equal(fresh, second, check_exact=True)


def test_other_parameters_or_data_are_other_entries(bench, tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, str(tmp_path))
    _simulate(bench, methods=["tailoredbench"], interval=None, runs=1)
    stored = _entries(tmp_path)
    _simulate(bench, methods=["tailoredbench"], interval=None, runs=1, seed=1)
    _simulate(bench, methods=["tailoredbench"], interval=None, runs=1, g_size=6)
    changed = tb.Benchmark("synthetic", bench.source, tb.ResponseMatrix(1 - bench.target.values))
    _simulate(changed, methods=["tailoredbench"], interval=None, runs=1)
    assert len(_entries(tmp_path)) == 4 * len(stored)


def test_a_growing_probe_is_cached_whole_and_read_the_same(bench, tmp_path, monkeypatch):
    def rounds():
        out = sequential.simulate_rounds(bench, ["tailoredbench"], max_budget=25, step=5, g_size=5, runs=2)
        return out.results

    fresh = rounds()
    monkeypatch.setenv(ENV, str(tmp_path))
    first, second = rounds(), rounds()
    pd.testing.assert_frame_equal(fresh, first, check_exact=True)
    pd.testing.assert_frame_equal(fresh, second, check_exact=True)


def test_a_damaged_entry_is_named_removed_and_computed_again(bench, tmp_path, monkeypatch):
    fresh = _simulate(bench, methods=["tailoredbench"], interval=None, runs=1)
    monkeypatch.setenv(ENV, str(tmp_path))
    _simulate(bench, methods=["tailoredbench"], interval=None, runs=1)
    damaged, *_ = (tmp_path / p for p in _entries(tmp_path))
    damaged.write_bytes(damaged.read_bytes()[:100])
    with pytest.warns(CacheWarning, match="damaged cache entry"):
        again = _simulate(bench, methods=["tailoredbench"], interval=None, runs=1)
    pd.testing.assert_frame_equal(fresh, again, check_exact=True)
    assert damaged.is_file()  # written anew


def _signature(path):
    """The names and shapes of an entry's arrays: which run and budget of a simulation it can stand for."""
    with np.load(path) as entry:
        return tuple(sorted((name, entry[name].shape) for name in entry.files))


@pytest.mark.parametrize("n_items", [150, 160], ids=["same shape", "more items"])
@pytest.mark.parametrize("method", ["tailoredbench", "gp_irt"])
def test_an_entry_computed_on_another_matrix_is_named_removed_and_computed_again(
    bench, tmp_path, monkeypatch, method, n_items
):
    settings = {"methods": [method], "interval": None, "runs": 1}
    fresh = _simulate(bench, **settings)
    # SYNTHETIC: another matrix, whose entries have the shapes of ours (more items: indices past our last)
    matrix = synthetic_matrix(42, n_items, seed=4)
    other = tb.Benchmark("other", tb.ResponseMatrix(matrix[:30]), tb.ResponseMatrix(matrix[30:]))
    for name, data in (("ours", bench), ("theirs", other)):
        monkeypatch.setenv(ENV, str(tmp_path / name))
        _simulate(data, **settings)
    theirs = {_signature(path): path for path in (tmp_path / "theirs").rglob("*.npz")}
    ours = list((tmp_path / "ours").rglob("*.npz"))
    assert len(ours) == len(theirs) == 2  # a probe (or anchors) per budget
    for path in ours:  # each entry swapped for the other matrix's of the same run and budget
        theirs[_signature(path)].replace(path)
    monkeypatch.setenv(ENV, str(tmp_path / "ours"))
    with pytest.warns(CacheWarning, match="cache entry computed on other data"):
        again = _simulate(bench, **settings)
    pd.testing.assert_frame_equal(fresh, again, check_exact=True)


def test_a_folder_in_place_of_an_entry_is_named_and_removed(bench, tmp_path, monkeypatch):
    settings = {"methods": ["tailoredbench"], "interval": None, "runs": 1}
    fresh = _simulate(bench, **settings)
    monkeypatch.setenv(ENV, str(tmp_path))
    _simulate(bench, **settings)
    entry, *_ = (tmp_path / p for p in _entries(tmp_path))
    entry.unlink()
    entry.mkdir()
    (entry / "stray").write_bytes(b"")
    with pytest.warns(CacheWarning, match=f"{entry.name}: not a file"):
        again = _simulate(bench, **settings)
    pd.testing.assert_frame_equal(fresh, again, check_exact=True)
    assert entry.is_file()


@pytest.mark.parametrize("cause", ["read-only", "full"])
def test_an_unwritable_cache_folder_is_named_once_and_the_simulation_runs_without_it(
    bench, tmp_path, monkeypatch, unwritable, cause
):
    fresh = _simulate(bench)
    folder = tmp_path / "runs"
    error = unwritable(folder, cause)
    monkeypatch.setenv(ENV, str(folder))
    with warnings.catch_warnings(record=True) as caught:  # dozens of entries fail to be stored: one warning
        warnings.simplefilter("always")
        again = _simulate(bench)
    assert [w.category for w in caught] == [CacheWarning], [str(w.message) for w in caught]
    assert str(caught[0].message).startswith(f"{folder}: ") and error in str(caught[0].message)
    pd.testing.assert_frame_equal(fresh, again, check_exact=True)


def _reads_as(data: bytes, sound: bytes) -> bool:
    """Whether ``data`` still holds the arrays of the entry ``sound`` (a byte of zip metadata may change)."""
    import io

    try:
        with np.load(io.BytesIO(data)) as found, np.load(io.BytesIO(sound)) as expected:
            return found.files == expected.files and all(np.array_equal(found[n], expected[n]) for n in found.files)
    except Exception:
        return False


def test_whatever_bytes_replace_an_entry_the_numbers_are_those_of_no_cache(bench, tmp_path, monkeypatch):
    options = {"methods": ["tailoredbench"], "interval": None, "runs": 1, "budgets": [15]}
    fresh = _simulate(bench, **options)
    others = []  # the same run's entry on other matrices of the same shape: sound, but not this one's
    for seed in (4, 5):
        matrix = synthetic_matrix(42, 150, seed=seed)  # SYNTHETIC
        monkeypatch.setenv(ENV, str(tmp_path / f"other{seed}"))
        _simulate(tb.Benchmark("other", tb.ResponseMatrix(matrix[:30]), tb.ResponseMatrix(matrix[30:])), **options)
        (other,) = (tmp_path / f"other{seed}").rglob("*.npz")
        others.append(other.read_bytes())
    monkeypatch.setenv(ENV, str(tmp_path / "ours"))
    _simulate(bench, **options)
    (entry,) = (tmp_path / "ours").rglob("*.npz")
    sound = entry.read_bytes()
    size = len(sound)
    truncated = st.integers(0, size - 1).map(lambda n: sound[:n])
    one_byte_changed = st.tuples(st.integers(0, size - 1), st.integers(1, 255)).map(
        lambda at: sound[: at[0]] + bytes([sound[at[0]] ^ at[1]]) + sound[at[0] + 1 :]
    )

    @settings(max_examples=25, deadline=None, derandomize=True, database=None)
    @given(st.one_of(st.sampled_from(others), st.binary(max_size=size), truncated, one_byte_changed))
    def overwritten(data):
        entry.write_bytes(data)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            again = _simulate(bench, **options)
        pd.testing.assert_frame_equal(fresh, again, check_exact=True)
        assert all(w.category is CacheWarning and entry.name in str(w.message) for w in caught)
        assert len(caught) == (0 if _reads_as(data, sound) else 1)  # named whenever its arrays changed
        assert _reads_as(entry.read_bytes(), sound)  # and written again

    overwritten()


def test_keys_tell_values_apart_but_not_numpy_from_python_integers(tmp_path):
    path = run_cache._entry
    assert path(tmp_path, "probes", [np.int64(5), [1, 2]]) == path(tmp_path, "probes", [5, [1, 2]])
    assert path(tmp_path, "probes", [5]) != path(tmp_path, "probes", [5.0])
    assert path(tmp_path, "probes", [None]) != path(tmp_path, "probes", [0])
    assert path(tmp_path, "probes", [np.zeros(2)]) != path(tmp_path, "probes", [np.zeros((1, 2))])
    assert path(None, "probes", [5]) is None


def test_reproduce_hands_the_cache_to_the_notebooks(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV)
    cache = tmp_path / "cache"
    tiny = {"methods": ["tailoredbench", "random"], "budgets": [15], "runs": 1, "jobs": 1}
    reproduce(["gsm8k"], parameters=tiny, output_dir=tmp_path / "a", run_cache=cache, log=lambda _: None)
    stored = _entries(cache)
    assert stored
    reproduce(["gsm8k"], parameters=tiny, output_dir=tmp_path / "b", run_cache=cache, log=lambda _: None)
    assert _entries(cache) == stored
    reproduce(["gsm8k"], parameters=tiny, output_dir=tmp_path / "c", run_cache=False, log=lambda _: None)
    metrics = [json.loads((tmp_path / d / "gsm8k" / "metrics.json").read_text())["summary"] for d in "abc"]
    assert metrics[0] == metrics[1] == metrics[2]
    assert ENV not in __import__("os").environ  # as it was
