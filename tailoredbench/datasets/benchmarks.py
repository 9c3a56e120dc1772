"""The benchmarks of the paper, built from pinned upstream files.

``load_benchmark(name)`` returns a :class:`Benchmark`: source models (full results
known), target models (to be estimated), both over the same items, and a
provenance record that notebooks print and write into ``metrics.json``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..errors import DataError, TailoredBenchError
from .files import fetch, lookup
from .matrix import ResponseMatrix, split_models
from .readers import read_csv_block, read_joblib, read_npy, read_zip_csv


@dataclass(frozen=True)
class Benchmark:
    """A benchmark's source/target split and where it came from."""

    name: str
    source: ResponseMatrix
    target: ResponseMatrix
    provenance: dict = field(default_factory=dict)

    @property
    def n_items(self) -> int:
        return self.source.n_items

    def summary(self) -> dict:
        """Counts and provenance, ready for ``metrics.json``."""
        return {
            "benchmark": self.name,
            "n_source": self.source.n_models,
            "n_target": self.target.n_models,
            "n_items": self.n_items,
            **self.provenance,
        }


def _files(*pairs: tuple[str, str]) -> list[dict]:
    out = []
    for repo, path in pairs:
        entry = lookup(repo, path)
        out.append(
            {
                "repo": entry.repo,
                "commit": entry.commit,
                "path": entry.path,
                "sha256": entry.sha256,
                "licence": entry.licence,
            }
        )
    return out


_GSM8K = "marvelcell/TailoredBench"
_GSM8K_DIR = "BenchmarkDatasets/gsm8k"
_ARC = "socialfoundations/benchmark-prediction"
_ATLAS = "Peiyu-Georgia-Li/ATLAS"
_ATLAS_ZIP = "experiments/baseline_compare/tinybenchmark_calibration/response_matrices.zip"
_PSN = "Joe-Hall-Lee/PSN-IRT"


def _gsm8k() -> tuple[ResponseMatrix, ResponseMatrix, dict]:
    parts = {}
    for role in ("source", "target"):
        path = f"{_GSM8K_DIR}/{role}_model_alldata_acc_0.npy"
        local = fetch(_GSM8K, path)
        values = read_npy(local)
        models = tuple(f"gsm8k_{role}_{i:02d}" for i in range(values.shape[0]))
        parts[role] = ResponseMatrix(values, models, source=f"{_GSM8K}/{path}")
    info = {
        "description": "GSM8K test (1319 items), the paper's own 75 source + 75 target models, "
        "split as given (accuracy-stratified, alternating); models are unnamed.",
        "split": "as given",
        "files": _files(*[(_GSM8K, f"{_GSM8K_DIR}/{r}_model_alldata_acc_0.npy") for r in ("source", "target")]),
    }
    return parts["source"], parts["target"], info


def _full_matrix_arc() -> tuple[ResponseMatrix, dict]:
    scores_path, names_path = "data/scores/arc_challenge.jbl", "data/scores/arc_challenge_models.jbl"
    values = read_joblib(fetch(_ARC, scores_path))
    names = read_joblib(fetch(_ARC, names_path))
    matrix = ResponseMatrix(np.asarray(values), tuple(names), source=f"{_ARC}/{scores_path}")
    matrix, dropped = matrix.drop_duplicate_models()
    info = {
        "description": "ARC-Challenge test (1172 items, acc_norm, harness doc_id order), "
        "Open LLM Leaderboard v2 models from benchmark-prediction; exact duplicate rows dropped.",
        "n_models_upstream": len(names),
        "duplicates_dropped": dropped,
        "files": _files((_ARC, scores_path), (_ARC, names_path)),
    }
    return matrix, info


def _atlas(member: str, label: str) -> Callable[[], tuple[ResponseMatrix, dict]]:
    def build():
        frame = read_zip_csv(fetch(_ATLAS, _ATLAS_ZIP), member)
        items = tuple(int(c) for c in frame.columns)
        matrix = ResponseMatrix(
            frame.to_numpy(dtype=np.float64),
            tuple(frame.index.astype(str)),
            items,
            source=f"{_ATLAS}/{_ATLAS_ZIP}:{member}",
        )
        info = {
            "description": f"{label}: the tinyBenchmarks anchor items only (not the full benchmark), "
            "thousands of Open LLM Leaderboard v1 models, from ATLAS.",
            "n_models_upstream": matrix.n_models,
            "files": _files((_ATLAS, _ATLAS_ZIP)),
            "member": member,
        }
        return matrix, info

    return build


def _hellaswag_full12() -> tuple[ResponseMatrix, dict]:
    path = "data/combine.csv"
    block = slice(11323, 21365)
    values = read_csv_block(fetch(_PSN, path), block)
    if values.shape != (12, 10042):
        raise DataError(f"{_PSN}/{path}: expected a 12 x 10042 HellaSwag block, got {values.shape}")
    matrix = ResponseMatrix(values, tuple(f"psn_model_{i:02d}" for i in range(12)), source=f"{_PSN}/{path}")
    info = {
        "description": "HellaSwag validation, full length (10042 items), 12 anonymous OpenCompass "
        "models from PSN-IRT (columns 11323:21365 of data/combine.csv); too few models for "
        "source/target statistics, useful for long-item behaviour and speed.",
        "files": _files((_PSN, path), (_PSN, "results/dataset_analysis.csv")),
    }
    return matrix, info


def _pope() -> tuple[ResponseMatrix, dict]:
    from .pope import load_pope_matrix

    return load_pope_matrix()


#: name -> builder of the full matrix (split by load_benchmark); gsm8k comes pre-split.
_FULL_MATRIX_BUILDERS: dict[str, Callable[[], tuple[ResponseMatrix, dict]]] = {
    "arc_challenge": _full_matrix_arc,
    "hellaswag": _atlas("response_matrix_tinyhellaswag.csv", "HellaSwag (tinyHellaswag, 97 items)"),
    "winogrande": _atlas("response_matrix_tinywinogrande.csv", "Winogrande (tinyWinogrande, 100 items)"),
    "hellaswag_full12": _hellaswag_full12,
    "pope": _pope,
}

BENCHMARKS = ("gsm8k", *_FULL_MATRIX_BUILDERS)


def load_benchmark(name: str, max_models: int | None = None, seed: int = 0) -> Benchmark:
    """Load a benchmark's source and target models.

    Parameters
    ----------
    name : str
        One of ``gsm8k``, ``arc_challenge``, ``hellaswag``, ``winogrande``, ``pope``
        and ``hellaswag_full12``.
    max_models : int, optional
        Seeded subsample of at most this many models before the split (for the
        thousands-of-model matrices); ``None`` keeps all. Ignored by ``gsm8k``,
        which comes split as in the paper.
    seed : int, default 0
        Seed of the subsample.

    Returns
    -------
    Benchmark
        Source and target split: GSM8K as given by the paper, the others by the
        same accuracy-stratified interleaving.

    Examples
    --------
    >>> bench = load_benchmark("gsm8k")
    >>> bench.source.shape, bench.target.shape
    ((75, 1319), (75, 1319))
    """
    if name == "gsm8k":
        source, target, info = _gsm8k()
        return Benchmark(name, source, target, info)
    if name not in _FULL_MATRIX_BUILDERS:
        raise TailoredBenchError(f"unknown benchmark {name!r}; choose one of {', '.join(BENCHMARKS)}")
    matrix, info = _FULL_MATRIX_BUILDERS[name]()
    if max_models is not None and matrix.n_models > max_models:
        matrix = matrix.subsample_models(max_models, seed)
        info = {**info, "max_models": max_models, "subsample_seed": seed}
    source, target = split_models(matrix, "interleave")
    return Benchmark(name, source, target, {**info, "split": "interleave (accuracy-stratified)"})
