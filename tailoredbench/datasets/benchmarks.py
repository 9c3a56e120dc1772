"""The benchmarks of the paper, built from pinned upstream files, and each one's settings (:data:`SPECS`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from ..errors import DataError, TailoredBenchError, check_integer
from . import paper
from .files import fetch
from .matrix import ResponseMatrix, distinct_rows, split_models, validate_binary
from .pope import load_pope_matrix
from .readers import file_records, read_csv_block, read_joblib, read_npy, read_zip_csv


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
        counts = {"n_source": self.source.n_models, "n_target": self.target.n_models, "n_items": self.n_items}
        return {"benchmark": self.name, **counts, **self.provenance}


_GSM8K = "marvelcell/TailoredBench"
_GSM8K_DIR = "BenchmarkDatasets/gsm8k"
_ARC = "socialfoundations/benchmark-prediction"
#: ATLAS's response matrices of the tinyBenchmarks subsets: (repo, path) of the zip.
ATLAS_ZIP = ("Peiyu-Georgia-Li/ATLAS", "experiments/baseline_compare/tinybenchmark_calibration/response_matrices.zip")
_PSN = "Joe-Hall-Lee/PSN-IRT"


def _gsm8k() -> tuple[ResponseMatrix, ResponseMatrix, dict]:
    """The paper's own split: source and target files."""
    paths = {role: f"{_GSM8K_DIR}/{role}_model_alldata_acc_0.npy" for role in ("source", "target")}
    parts = {}
    for role, path in paths.items():
        values = read_npy(fetch(_GSM8K, path))
        models = tuple(f"gsm8k_{role}_{i:02d}" for i in range(values.shape[0]))
        parts[role] = ResponseMatrix(values, models, source=f"{_GSM8K}/{path}")
    info = {
        "description": "GSM8K test (1319 items), the paper's own 75 source + 75 target models, "
        "split as given (accuracy-stratified, alternating); models are unnamed.",
        "split": "as given",
        "files": file_records(*[(_GSM8K, path) for path in paths.values()]),
    }
    return parts["source"], parts["target"], info


def arc_challenge_matrix() -> tuple[ResponseMatrix, dict]:
    """ARC-Challenge's full matrix (Open LLM Leaderboard v2 models), exact duplicate rows dropped, and provenance."""
    scores_path, names_path = "data/scores/arc_challenge.jbl", "data/scores/arc_challenge_models.jbl"
    where = f"{_ARC}/{scores_path}"
    values = validate_binary(read_joblib(fetch(_ARC, scores_path)), where)
    names = [str(name) for name in read_joblib(fetch(_ARC, names_path))]
    if len(names) != values.shape[0]:
        raise DataError(f"{where}: {len(names)} model ids for {values.shape[0]} rows")
    # upstream lists some models twice with the same results: one row each, as ids must be unique
    keep = distinct_rows(values)
    kept = set(keep.tolist())
    dropped = [name for i, name in enumerate(names) if i not in kept]
    matrix = ResponseMatrix(values[keep], tuple(names[i] for i in keep), source=where)
    info = {
        "description": "ARC-Challenge test (1172 items, acc_norm, harness doc_id order), "
        "Open LLM Leaderboard v2 models from benchmark-prediction; exact duplicate rows dropped.",
        "n_models_upstream": len(names),
        "duplicates_dropped": dropped,
        "files": file_records((_ARC, scores_path), (_ARC, names_path)),
    }
    return matrix, info


def atlas_matrix(member: str) -> ResponseMatrix:
    """One tinyBenchmarks subset of :data:`ATLAS_ZIP`: its models, and its items by their lm-eval doc_ids."""
    frame = read_zip_csv(fetch(*ATLAS_ZIP), member)
    models, items = tuple(frame.index.astype(str)), tuple(int(c) for c in frame.columns)
    return ResponseMatrix(frame.to_numpy(dtype=np.float64), models, items, source=f"{'/'.join(ATLAS_ZIP)}:{member}")


def _atlas(member: str, label: str) -> tuple[ResponseMatrix, dict]:
    matrix = atlas_matrix(member)
    info = {
        "description": f"{label}: the tinyBenchmarks anchor items only (not the full benchmark), "
        "thousands of Open LLM Leaderboard v1 models, from ATLAS.",
        "n_models_upstream": matrix.n_models,
        "files": file_records(ATLAS_ZIP),
        "member": member,
    }
    return matrix, info


def _hellaswag_full12() -> tuple[ResponseMatrix, dict]:
    path = "data/combine.csv"
    values = read_csv_block(fetch(_PSN, path), slice(11323, 21365))
    if values.shape != (12, 10042):
        raise DataError(f"{_PSN}/{path}: expected a 12 x 10042 HellaSwag block, got {values.shape}")
    matrix = ResponseMatrix(values, tuple(f"psn_model_{i:02d}" for i in range(12)), source=f"{_PSN}/{path}")
    info = {
        "description": "HellaSwag validation, full length (10042 items), 12 anonymous OpenCompass "
        "models from PSN-IRT (columns 11323:21365 of data/combine.csv); too few models for "
        "source/target statistics, useful for long-item behaviour and speed.",
        "files": file_records((_PSN, path), (_PSN, "results/dataset_analysis.csv")),
    }
    return matrix, info


_PAPER_BUDGETS = (20, 25, 30, 35, 40)
_SMALL_BUDGETS = (10, 15, 20, 25, 30)
_SMALL_NOTE = (
    " With about 100 items, budgets scale down to 10-30 with a G-set of 5 (the paper's 20-40 with 10 "
    "would ask for up to 40% of the items); the main table compares at 30."
)


@dataclass(frozen=True)
class BenchmarkSpec:
    """Everything that differs between benchmarks, written once."""

    name: str
    title: str
    # returns (matrix, info), all models to split by `split`; with split "as given", (source, target, info)
    build: Callable[[], tuple]
    split: str  # "as given", or "interleave": sorted by accuracy, alternately target and source
    budgets: tuple[int, ...]  # those its notebook and studies run (G-set included)
    g_size: int
    max_models: int | None  # the seeded model subsample its notebook and studies load (None: all)
    about: str  # where the data come from and how they differ from the paper's (the notebook's opening)
    paper_mae_at_30: tuple[float, float] | None = None  # the main table's (best baseline, TailoredBench)
    lm_eval_task: str | None = None
    lm_eval_metric: str | None = None  # lm-eval's per-sample metric of its items
    named_models: bool = False  # the family study needs names

    def load(self, seed: int = 0) -> Benchmark:
        """The benchmark as its notebook and the studies load it (its ``max_models``, subsampled with ``seed``)."""
        return load_benchmark(self.name, max_models=self.max_models, seed=seed)


def _spec(name: str, title: str, build, about: str, *, split="interleave", small=False, max_models=None, **kwargs):
    budgets, g_size = (_SMALL_BUDGETS, 5) if small else (_PAPER_BUDGETS, 10)
    about += _SMALL_NOTE if small else ""
    return BenchmarkSpec(
        name, title, build, split, budgets, g_size, max_models, about, paper.MAE_AT_30.get(name), **kwargs
    )


#: Every benchmark, the paper's five first in the paper's order.
SPECS: dict[str, BenchmarkSpec] = {
    spec.name: spec
    for spec in (
        _spec(
            "arc_challenge",
            "ARC-Challenge",
            arc_challenge_matrix,
            "ARC-Challenge test, 1172 items (`acc_norm`, harness doc_id order), 218 named Open LLM Leaderboard "
            "(v2 harness) models from `socialfoundations/benchmark-prediction` (MIT); 9 exact duplicate rows dropped "
            "(first name kept), leaving 209 models: 104 source and 105 target by the accuracy-stratified interleave.",
            lm_eval_task="arc_challenge",
            lm_eval_metric="acc_norm",
            named_models=True,
        ),
        _spec(
            "hellaswag",
            "HellaSwag (tinyHellaswag items)",
            partial(_atlas, "response_matrix_tinyhellaswag.csv", "HellaSwag (tinyHellaswag, 97 items)"),
            "HellaSwag as ATLAS's tinyHellaswag matrix (`Peiyu-Georgia-Li/ATLAS`): 3467 Open LLM Leaderboard v1 "
            "models x the 97 tinyBenchmarks anchor items, not the full 10042; a seeded subsample of 300 models "
            "(`max_models`), split 150 source / 150 target by the accuracy-stratified interleave.",
            small=True,
            max_models=300,
            lm_eval_task="hellaswag",
            lm_eval_metric="acc_norm",
            named_models=True,
        ),
        _spec(
            "gsm8k",
            "GSM8K",
            _gsm8k,
            "The paper's own GSM8K data (`marvelcell/TailoredBench`): 75 source and 75 target models x 1319 "
            "test items, split as given by the paper (accuracy-stratified, alternating). Models are unnamed.",
            split="as given",
            lm_eval_task="gsm8k",
            # strict-match reads the number after "####", as the dataset's answers are written; the
            # paper's data do not say whether it or flexible-extract (the last number) scored them
            lm_eval_metric="exact_match,strict-match",
        ),
        _spec(
            "winogrande",
            "Winogrande (tinyWinogrande items)",
            partial(_atlas, "response_matrix_tinywinogrande.csv", "Winogrande (tinyWinogrande, 100 items)"),
            "Winogrande as ATLAS's tinyWinogrande matrix (`Peiyu-Georgia-Li/ATLAS`): 4680 Open LLM Leaderboard "
            "v1 models x the 100 tinyBenchmarks anchor items, not the full 1267; a seeded subsample of 300 models "
            "(`max_models`), split 150 source / 150 target by the accuracy-stratified interleave.",
            small=True,
            max_models=300,
            lm_eval_task="winogrande",
            lm_eval_metric="acc",
            named_models=True,
        ),
        _spec(
            "pope",
            "POPE",
            load_pope_matrix,
            "POPE (MSCOCO; random, popular and adversarial splits) built by the package from raw answer files "
            "of 22 public LVLM runs (see the data registry and `tailoredbench/datasets/pope.py`): every run is "
            "parsed with POPE's own yes/no rule and checked against the published answered counts and accuracies; "
            "4 flagged runs are excluded. The matrix is the complete block: the 10 runs (5 checkpoints) that answered "
            "all 8910 items of LLaVA's question set, split 5 source / 5 target. **That is far fewer models than the "
            "paper's POPE split**: Kendall's tau over 5 targets can only take a few values and is very noisy, and "
            "native-source selection has at most 5 sources to choose from; read MAE as the main figure here.",
        ),
        _spec(
            "hellaswag_full12",
            "HellaSwag, full length, 12 models",
            _hellaswag_full12,
            "HellaSwag validation at full length (10042 items), 12 anonymous OpenCompass models from PSN-IRT; "
            "too few models for source/target statistics, useful for long-item behaviour and speed.",
        ),
    )
}

#: Every benchmark name.
BENCHMARKS = tuple(SPECS)
#: The benchmarks of the paper's tables (and of the averaged studies), in the paper's order.
PAPER_BENCHMARKS = tuple(name for name, spec in SPECS.items() if spec.paper_mae_at_30 is not None)


def benchmark_spec(name: str) -> BenchmarkSpec:
    """The :class:`BenchmarkSpec` of ``name``, or a one-line error listing the benchmarks."""
    if name not in SPECS:
        raise TailoredBenchError(f"unknown benchmark {name!r}; choose one of {', '.join(BENCHMARKS)}")
    return SPECS[name]


def load_benchmark(name: str, max_models: int | None = None, seed: int = 0) -> Benchmark:
    """A benchmark's source and target models: GSM8K split as the paper gives it, the others interleaved
    after a subsample of at most ``max_models`` models seeded by ``seed`` (``None``: all)."""
    spec = benchmark_spec(name)
    if max_models is not None:
        max_models = check_integer(max_models, "max_models", 2)
    if spec.split == "as given":
        if max_models is not None:
            raise TailoredBenchError(f"{name} comes split as in the paper; max_models does not apply to it")
        source, target, info = spec.build()
        return Benchmark(name, source, target, info)
    matrix, info = spec.build()
    if max_models is not None and matrix.n_models > max_models:
        matrix = matrix.subsample_models(max_models, seed)
        info = {**info, "max_models": max_models, "subsample_seed": seed}
    source, target = split_models(matrix, spec.split)
    return Benchmark(name, source, target, {**info, "split": "interleave (accuracy-stratified)"})
