import errno
import os
import tempfile
from pathlib import Path

import nbformat
import numpy as np
import pytest

from tailoredbench.simulate import _restore_environment

ROOT = Path(__file__).resolve().parents[1]
# No run cache unless a test asks for one: runs compared for determinism must each be computed.
os.environ["TAILOREDBENCH_RUN_CACHE"] = ""
#: The local data mirror, when $TAILOREDBENCH_DATA names one (optional: the loader can download).
MIRROR = Path(os.environ["TAILOREDBENCH_DATA"]) if os.environ.get("TAILOREDBENCH_DATA") else None


@pytest.fixture(autouse=True)
def environment_restored():
    """Every test leaves the process's environment as it found it.

    A dask LocalCluster of processes sets MALLOC_TRIM_THRESHOLD_=65536, OMP_NUM_THREADS=1 and
    more in the process that starts it, for good; every notebook kernel a later test started
    inherited them, and the beyond notebook's smoke test took 135 s instead of 65, with 100 s of
    system time instead of 4 (most likely every freed block handed back to the system).
    """
    saved = dict(os.environ)
    yield
    _restore_environment(saved)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture
def unwritable(monkeypatch):
    """``unwritable(folder, cause)`` makes ``folder`` refuse new files as a ``"read-only"`` or a
    ``"full"`` file system does, and returns the error's message.

    Root writes into a read-only folder all the same: there the refusal is made where the file is created.
    """
    made = []
    real = tempfile.mkstemp

    def make(folder: Path, cause: str) -> str:
        folder.mkdir(parents=True, exist_ok=True)
        inside = folder.resolve()

        def mkstemp(*args, dir=None, **kwargs):
            if dir is None or not Path(dir).resolve().is_relative_to(inside):
                return real(*args, dir=dir, **kwargs)
            if cause == "read-only":  # named as the system names it: the temporary file it could not create
                name = os.path.join(dir, f"{kwargs.get('prefix', 'tmp')}k3x9q2ab{kwargs.get('suffix', '')}")
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), name)
            handle, name = real(*args, dir=dir, **kwargs)
            os.close(handle)
            return os.open("/dev/full", os.O_WRONLY), name  # every write fails as on a full disk

        if cause == "read-only":
            folder.chmod(0o555)
            made.append(folder)
            if os.geteuid() == 0:
                monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
            return os.strerror(errno.EACCES)
        monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
        return os.strerror(errno.ENOSPC)

    yield make
    for folder in made:
        folder.chmod(0o755)


def synthetic_matrix(n_models: int, n_items: int, seed: int = 0) -> np.ndarray:
    """SYNTHETIC 0/1 data from a one-dimensional logistic model (for unit tests only)."""
    gen = np.random.default_rng(seed)
    ability = gen.normal(size=n_models)
    difficulty = gen.normal(size=n_items)
    p = 1 / (1 + np.exp(-(ability[:, None] - difficulty[None, :]) * 1.7))
    return (gen.random((n_models, n_items)) < p).astype(float)


@pytest.fixture(scope="session")
def gsm8k():
    from tailoredbench import load_benchmark

    return load_benchmark("gsm8k")


def image_cells(nb):
    """Ids of the cells that show a figure."""
    return [c.id for c in nb.cells if any("image/png" in o.get("data", {}) for o in c.get("outputs", []))]


def check_clean(path, tmp_path):
    """An executed notebook with no machine path, no warning and no error."""
    text = path.read_text()
    for machine in (str(ROOT), f'"{tmp_path}', f"'{tmp_path}", "site-packages", "/home/", "/root/"):
        assert machine not in text, machine  # relative paths only
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            assert output["output_type"] != "error", cell.id
            assert output.get("name") != "stderr", (cell.id, output.get("text"))
            assert "Warning" not in output.get("text", ""), cell.id
            data = output.get("data", {})
            assert "image/png" in data or "<Figure" not in data.get("text/plain", ""), cell.id  # never a bare repr
            assert output["output_type"] != "execute_result" or set(data) != {"text/plain"}, cell.id  # stray value
    return nb


#: Tests of a few seconds or more (real data through the CLI, subprocesses, dask clusters),
#: besides those marked notebook or lm_eval: `make check` leaves them to `make test`.
SLOW = {
    "test_without_its_notebooks_the_package_runs_and_reproduce_says_why",
    "test_gp_irt_anchors_are_cached_and_read_to_the_same_numbers",
    "test_reproduce_hands_the_cache_to_the_notebooks",
    "test_simulation_records_intervals_and_coverage",
    "test_rounds_to_a_precision_through_the_cli",
    "test_rounds_keep_the_stopping_rule_they_calibrated",
    "test_fluid_rounds_are_the_most_informative_items_until_the_precision",
    "test_a_closed_pipe_ends_quietly",
    "test_a_multi_process_dask_cluster_by_address_from_python_and_the_command_line",
    "test_a_local_dask_cluster_by_default_from_the_command_line",
    "test_rounds_refuse_what_would_replace_a_plan",
    "test_same_numbers_for_any_number_of_jobs",
    "test_cached_runs_give_the_same_numbers",
    "test_simulate_json_through_python_dash_m",
    "test_the_estimate_of_an_intact_plan",
    "test_a_cached_probe_whose_cluster_digest_fails_is_clustered_from_all_distances",
    "test_a_gsm8k_run_is_timed_in_a_fresh_process_as_the_pinned_comparison_does",
    "test_cli_variant_and_bad_variant",
    "test_cli_simulate_precision",
    "test_cli_json_has_coverage_and_tidy_has_intervals",
    "test_quality_on_gsm8k_matches_the_paper",
    "test_full_loop_equals_the_simulation",
    "test_every_method_runs_through_the_cli_deterministically",
    "test_simulate_every_benchmark",
    "test_a_growing_probe_is_cached_whole_and_read_the_same",
}


def pytest_collection_modifyitems(items):
    for item in items:
        if (
            item.get_closest_marker("notebook")
            or item.get_closest_marker("lm_eval")
            or getattr(item, "originalname", "") in SLOW
        ):
            item.add_marker(pytest.mark.slow)
