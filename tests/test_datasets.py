"""The data registry, hash checks, downloads and response-matrix readers."""

import http.server
import shutil
import threading
from functools import partial

import numpy as np
import pytest

from conftest import MIRROR
from tailoredbench import ResponseMatrix, load_benchmark, load_matrix, split_models
from tailoredbench.datasets import files as reg
from tailoredbench.errors import DataError, TailoredBenchError

GSM8K = ("marvelcell/TailoredBench", "BenchmarkDatasets/gsm8k/source_model_alldata_acc_0.npy")


@pytest.mark.skipif(MIRROR is None, reason="no local mirror: $TAILOREDBENCH_DATA is not set")
def test_registry_covers_the_mirror():
    entries = reg.registry()
    for line in (MIRROR / "SOURCES.tsv").read_text().splitlines()[1:]:
        repo, commit, path, sha, size = line.split("\t")
        entry = entries[f"{repo}/{path}"]
        assert (entry.commit, entry.sha256, entry.bytes) == (commit, sha, int(size))


def test_gsm8k_is_the_papers_split(gsm8k):
    assert gsm8k.source.shape == (75, 1319) and gsm8k.target.shape == (75, 1319)
    assert gsm8k.source.items == tuple(range(1319))
    # the paper's split: from the most accurate down, models alternate target, source
    # (up to ties in accuracy)
    acc = np.concatenate([gsm8k.target.accuracy(), gsm8k.source.accuracy()])
    is_source = np.array([0] * 75 + [1] * 75)[np.argsort(-acc, kind="stable")]
    assert np.mean(is_source[0::2] == 0) > 0.85 and np.mean(is_source[1::2] == 1) > 0.85


@pytest.fixture(scope="session")
def pinned_gsm8k():
    """The pinned GSM8K file, wherever the loader finds it (mirror, cache or download)."""
    return reg.fetch(*GSM8K)


@pytest.fixture
def fake_mirror(tmp_path, monkeypatch, pinned_gsm8k):
    """A private mirror holding one GSM8K file, and an empty cache."""
    repo, path = GSM8K
    target = tmp_path / "mirror" / repo / path
    target.parent.mkdir(parents=True)
    shutil.copy(pinned_gsm8k, target)
    monkeypatch.setenv("TAILOREDBENCH_DATA", str(tmp_path / "mirror"))
    monkeypatch.setenv("TAILOREDBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(reg, "_verified", set())
    return target


def test_hash_mismatch_names_the_file(fake_mirror):
    fake_mirror.write_bytes(fake_mirror.read_bytes()[:-1] + b"\x01")
    with pytest.raises(DataError, match=r"sha256 mismatch.*source_model_alldata_acc_0\.npy"):
        reg.fetch(*GSM8K)


def test_missing_file_without_download_is_an_error(fake_mirror):
    fake_mirror.unlink()
    with pytest.raises(DataError, match="not found"):
        reg.fetch(*GSM8K, download=False)


@pytest.fixture
def mirror_server(pinned_gsm8k):
    """Serve the pinned GSM8K file over loopback, at its raw GitHub address."""
    repo, path = GSM8K

    class Handler(http.server.SimpleHTTPRequestHandler):
        def translate_path(self, url):
            # /<owner>/<repo>/<commit>/<path> -> the pinned file, if it is that one
            parts = url.lstrip("/").split("/")
            wanted = "/".join(parts[:2]) == repo and "/".join(parts[3:]) == path
            return str(pinned_gsm8k) if wanted else str(pinned_gsm8k.parent / "missing")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(pinned_gsm8k.parent)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_download_checks_the_hash_and_fills_the_cache(fake_mirror, mirror_server, monkeypatch, tmp_path):
    fake_mirror.unlink()
    monkeypatch.setenv("TAILOREDBENCH_BASE_URL", mirror_server)
    path = reg.fetch(*GSM8K)
    assert path == tmp_path / "cache" / GSM8K[0] / GSM8K[1]
    assert reg.sha256sum(path) == reg.lookup(*GSM8K).sha256
    # a second call uses the cache
    assert reg.fetch(*GSM8K, download=False) == path


def test_download_failure_is_one_clear_error(fake_mirror, monkeypatch):
    fake_mirror.unlink()
    monkeypatch.setenv("TAILOREDBENCH_BASE_URL", "http://127.0.0.1:9")
    with pytest.raises(DataError, match="download failed"):
        reg.fetch(*GSM8K)


def test_unknown_benchmark():
    with pytest.raises(TailoredBenchError, match="unknown benchmark 'mmlu'"):
        load_benchmark("mmlu")


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([[0, 1], [1, np.nan]], "NaN"),
        ([[0, 1], [1, 2]], r"non-binary value 2 at row 1, column 1 \(0-based\)"),
        ([0, 1, 1], "2-D"),
        (np.zeros((0, 3)), "empty"),
    ],
)
def test_malformed_matrices(values, message):
    with pytest.raises(DataError, match=message):
        ResponseMatrix(values)


def test_load_matrix_csv_and_npy(tmp_path):
    csv = tmp_path / "m.csv"
    csv.write_text("model,q7,q9,q11\nalpha,1,0,1\nbeta,0,0,1\n")
    matrix = load_matrix(csv)
    assert matrix.models == ("alpha", "beta") and matrix.items == ("q7", "q9", "q11")
    assert matrix.values.tolist() == [[1, 0, 1], [0, 0, 1]]
    npy = tmp_path / "m.npy"
    np.save(npy, np.eye(3))
    assert load_matrix(npy).shape == (3, 3)
    bad = tmp_path / "bad.csv"
    bad.write_text("model,q1\nalpha,yes\n")
    with pytest.raises(DataError, match=r"bad\.csv"):
        load_matrix(bad)
    txt = tmp_path / "m.txt"
    txt.write_text("1 0\n")
    with pytest.raises(DataError, match="unsupported format"):
        load_matrix(txt)


def test_split_models():
    values = np.array([[1, 1, 1], [0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 0, 1]], dtype=float)
    source, target = split_models(ResponseMatrix(values))
    # accuracies 1, 0, 1/3, 2/3, 1/3 -> sorted rows 1, 2, 4, 3, 0 -> target 1, 4, 0; source 2, 3
    assert target.models == ("model_1", "model_4", "model_0")
    assert source.models == ("model_2", "model_3")
    a = split_models(ResponseMatrix(values), "random", seed=3)
    b = split_models(ResponseMatrix(values), "random", seed=3)
    assert a[0].models == b[0].models
    with pytest.raises(TailoredBenchError, match="unknown split"):
        split_models(ResponseMatrix(values), "by-family")
