"""Suites: benchmarks answered by the same models, aligned row by row, for evaluating a model on all at once.

A suite's matrices share their models: CSVs and :class:`ResponseMatrix` objects are aligned by model id (a
model missing from any benchmark is dropped, with a :class:`SuiteWarning` that counts them), ``.npy`` files
by row order. :data:`SUITES` registers ``open_llm_tiny``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import TailoredBenchError, check_integer
from .benchmarks import ATLAS_ZIP, arc_challenge_matrix, atlas_matrix
from .matrix import ResponseMatrix, load_matrix, split_rows, subsample_rows
from .readers import file_records

#: The five tinyBenchmarks subsets of the Open LLM Leaderboard (v1), as ATLAS's response matrices hold them.
_TINY = {
    "arc": "response_matrix_tinyarc.csv",
    "gsm8k": "response_matrix_tinygsm8k.csv",
    "hellaswag": "response_matrix_tinyhellaswag.csv",
    "truthfulqa": "response_matrix_tinytruthfulqa.csv",
    "winogrande": "response_matrix_tinywinogrande.csv",
}


class SuiteWarning(UserWarning):
    """Models dropped from a suite because some of its benchmarks lack them."""


@dataclass(frozen=True)
class Suite:
    """Benchmarks whose source (and target) matrices hold the same models in the same rows."""

    name: str
    benchmarks: tuple[str, ...]
    source: tuple[ResponseMatrix, ...]
    target: tuple[ResponseMatrix, ...]
    provenance: dict = field(default_factory=dict)

    def __post_init__(self):
        for role in ("source", "target"):
            matrices = getattr(self, role)
            if len(matrices) != len(self.benchmarks):
                raise TailoredBenchError(f"suite {self.name}: {len(matrices)} {role} matrices for {self.benchmarks}")
            if len({m.models for m in matrices}) != 1:
                raise TailoredBenchError(f"suite {self.name}: the {role} matrices do not hold the same models")

    @property
    def n_items(self) -> tuple[int, ...]:
        return tuple(m.n_items for m in self.source)

    def summary(self) -> dict:
        """Counts and provenance, ready for ``metrics.json``."""
        return {
            "suite": self.name,
            "benchmarks": list(self.benchmarks),
            "n_source": self.source[0].n_models,
            "n_target": self.target[0].n_models,
            "n_items": list(self.n_items),
            **self.provenance,
        }


def align(matrices: Sequence[ResponseMatrix]) -> tuple[list[ResponseMatrix], int]:
    """The matrices restricted to the models all of them hold, in the first one's order, and how many were dropped.

    Examples
    --------
    >>> a = ResponseMatrix([[1, 0], [0, 1], [1, 1]], models=["x", "y", "z"])
    >>> b = ResponseMatrix([[1], [0]], models=["z", "x"])
    >>> aligned, dropped = align([a, b])
    >>> [m.models for m in aligned], dropped
    ([('x', 'z'), ('x', 'z')], 1)
    """
    common = set.intersection(*(set(m.models) for m in matrices))
    order = [model for model in matrices[0].models if model in common]
    if not order:  # else an empty matrix's error, which names neither the cause nor the files
        raise TailoredBenchError(
            "the suite's benchmarks share no model id (a .npy file's rows are model_0, model_1, ...: "
            "mix it only with CSVs whose models are so named, or give every benchmark as .npy)"
        )
    aligned = []
    for matrix in matrices:
        row = {model: i for i, model in enumerate(matrix.models)}
        aligned.append(matrix.take_models([row[model] for model in order]))
    every = set.union(*(set(m.models) for m in matrices))
    return aligned, len(every) - len(order)


def split_suite(
    name: str, names: Sequence[str], matrices: Sequence[ResponseMatrix], provenance: dict, how: str = "interleave"
) -> Suite:
    """Source and target models, as :func:`~tailoredbench.datasets.matrix.split_models` splits one matrix
    (``"interleave"``: sorted by the models' mean accuracy over the suite's benchmarks; ``"random"``: halves)."""
    accuracy = np.mean([m.accuracy() for m in matrices], axis=0)
    source_rows, target_rows = split_rows(accuracy, how, provenance.get("split_seed", 0))
    source = tuple(m.take_models(source_rows) for m in matrices)
    target = tuple(m.take_models(target_rows) for m in matrices)
    split = "interleave (accuracy-stratified)" if how == "interleave" else "random"
    return Suite(name, tuple(names), source, target, {**provenance, "split": split})


def _open_llm_tiny() -> tuple[list[str], list[ResponseMatrix], dict]:
    matrices = [atlas_matrix(member) for member in _TINY.values()]
    info = {
        "description": "The five tinyBenchmarks subsets of the Open LLM Leaderboard v1 (ARC, GSM8K, HellaSwag, "
        "TruthfulQA, Winogrande; 97-100 anchor items each) from ATLAS's response matrices, the models that "
        "answered all five.",
        "files": file_records(ATLAS_ZIP),
    }
    return list(_TINY), matrices, info


def _arc_truthfulqa() -> tuple[list[str], list[ResponseMatrix], dict]:
    """ARC-Challenge in full (Open LLM Leaderboard v2 harness) with tinyTruthfulQA (v1): a suite across
    leaderboards, for the models both list by the same name."""
    arc, arc_info = arc_challenge_matrix()
    truthfulqa = atlas_matrix(_TINY["truthfulqa"])
    info = {
        "description": "ARC-Challenge (1172 items, v2 harness, benchmark-prediction) with tinyTruthfulQA (97 anchor "
        "items, v1 harness, ATLAS), the models both leaderboards name alike.",
        "files": [*arc_info["files"], *file_records(ATLAS_ZIP)],
    }
    return ["arc_challenge", "truthfulqa"], [arc, truthfulqa], info


#: Registered suites: name -> builder of (benchmark names, matrices, provenance).
SUITES = {"open_llm_tiny": _open_llm_tiny, "arc_truthfulqa": _arc_truthfulqa}
#: The lm-eval task of each benchmark of a registered suite, in its order, and the per-sample metric its matrix
#: holds (whose item ids are the task's doc_ids). The Open LLM Leaderboard v1 scored TruthfulQA by MC2, whose
#: per-sample ``acc`` is the probability given to the true answers; ATLAS's matrix holds it as 0/1 without
#: saying how, so a sample counts as right above 0.5 (``acc>0.5``), more than half the probability on the truth.
LM_EVAL_TASKS = {
    "open_llm_tiny": (
        ("arc_challenge", "acc_norm"),
        ("gsm8k", "exact_match,strict-match"),
        ("hellaswag", "acc_norm"),
        ("truthfulqa_mc2", "acc>0.5"),
        ("winogrande", "acc"),
    ),
    "arc_truthfulqa": (("arc_challenge", "acc_norm"), ("truthfulqa_mc2", "acc>0.5")),
}


def load_suite(
    suite: str | Sequence, *, max_models: int | None = None, seed: int = 0, split: str = "interleave"
) -> Suite:
    """A suite split into source and target models.

    ``suite`` is a name in :data:`SUITES`, or two or more matrix files (``.csv`` aligned by model id, ``.npy``
    by row order) or :class:`ResponseMatrix` objects; benchmarks are named after the files. ``max_models``: a
    seeded subsample of the aligned models before the split; ``split`` as :func:`split_suite` (``"random"``
    seeded by ``seed``).
    """
    if isinstance(suite, str):
        if suite not in SUITES:
            raise TailoredBenchError(f"unknown suite {suite!r}; choose one of {', '.join(SUITES)} or give matrix files")
        names, matrices, info = SUITES[suite]()
        name = suite
    else:
        items = list(suite)
        if len(items) < 2:
            raise TailoredBenchError("a suite needs two or more benchmarks")
        matrices = [m if isinstance(m, ResponseMatrix) else load_matrix(m) for m in items]
        names = [Path(m).stem if not isinstance(m, ResponseMatrix) else f"benchmark_{i}" for i, m in enumerate(items)]
        if len(set(names)) != len(names):
            raise TailoredBenchError(f"two benchmarks of the suite have the same name: {', '.join(names)}")
        by_rows = [isinstance(m, (str, Path)) and Path(m).suffix.lower() == ".npy" for m in items]
        if any(by_rows) and len({m.n_models for m in matrices}) != 1:
            counts = ", ".join(f"{n} {m.n_models}" for n, m in zip(names, matrices, strict=True))
            raise TailoredBenchError(f"a .npy matrix is aligned by row order, but the row counts differ: {counts}")
        name, info = "custom", {"description": "user matrices", "files": [str(m) for m in items]}
    matrices, dropped = align(matrices)
    if matrices[0].n_models < 4:
        raise TailoredBenchError(
            f"the benchmarks {', '.join(names)} share {matrices[0].n_models} models; a suite needs at least 4 "
            "(2 source, 2 target)"
        )
    if dropped and name == "custom":  # a registered suite records its dropped models in its provenance
        warnings.warn(
            f"{dropped} models are missing from some benchmark of the suite and were dropped; "
            f"{matrices[0].n_models} remain",
            SuiteWarning,
            stacklevel=2,
        )
    info = {**info, "n_models_common": matrices[0].n_models, "n_models_dropped": dropped}
    if max_models is not None:
        max_models = check_integer(max_models, "max_models", 4)
        if matrices[0].n_models > max_models:
            rows = subsample_rows(matrices[0].n_models, max_models, seed)
            matrices = [m.take_models(rows) for m in matrices]
            info = {**info, "max_models": max_models, "subsample_seed": seed}
    return split_suite(name, names, matrices, {**info, "split_seed": seed} if split == "random" else info, split)
