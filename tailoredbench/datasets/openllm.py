"""Response matrices from the Open LLM Leaderboard "details" datasets (optional: ``tailoredbench[hub]``).

The leaderboard (v1) published per model a Hugging Face dataset ``details_<org>__<model>`` (now in
``open-llm-leaderboard-old``), one configuration per task (e.g. ``harness_hellaswag_10``), whose
``latest`` split has one row per example with its metric as a column or in a ``metrics`` dictionary.
The paper's full HellaSwag or Winogrande matrices can be rebuilt from them::

    matrix = build_openllm_matrix(["01-ai/Yi-34B", "mistralai/Mistral-7B-v0.1", ...], "hellaswag")
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..cache import cache_dir, load_cached, store_cached
from ..errors import DataError
from .matrix import ResponseMatrix, validate_binary

#: Task -> (details configuration, per-example metric), as tinyBenchmarks used them: the leaderboard's
#: own columns, not lm-eval's names. Not TruthfulQA: its ``mc2`` is a probability, not 0/1 correctness.
TASKS = {
    "arc_challenge": ("harness_arc_challenge_25", "acc_norm"),
    "hellaswag": ("harness_hellaswag_10", "acc_norm"),
    "winogrande": ("harness_winogrande_5", "acc"),
    "gsm8k": ("harness_gsm8k_5", "acc"),
}
ORGANISATION = "open-llm-leaderboard-old"


def details_repo(model: str, organisation: str = ORGANISATION) -> str:
    """The details dataset of a model: ``<organisation>/details_<org>__<name>``.

    Examples
    --------
    >>> details_repo("01-ai/Yi-34B")
    'open-llm-leaderboard-old/details_01-ai__Yi-34B'
    """
    return f"{organisation}/details_{model.replace('/', '__')}"


def hub_loader(repo: str, config: str, split: str):
    """Rows of one details configuration, through ``datasets.load_dataset``."""
    try:
        from datasets import load_dataset
    except ImportError:
        raise DataError(
            "build_openllm_matrix needs the optional dependency: pip install 'tailoredbench[hub]'"
        ) from None
    return load_dataset(repo, config, split=split).to_pandas()


def _correctness(frame, metric: str, where: str) -> np.ndarray:
    if metric in frame.columns:
        try:
            values = frame[metric].to_numpy(dtype=float)
        except (TypeError, ValueError):
            raise DataError(f"{where}: '{metric}' holds values that are not numbers") from None
    elif "metrics" in frame.columns:
        try:
            values = np.array([float(m[metric]) for m in frame["metrics"]])
        except (KeyError, TypeError):
            raise DataError(f"{where}: no '{metric}' in its metrics") from None
        except ValueError:
            raise DataError(f"{where}: '{metric}' holds values that are not numbers") from None
    else:
        raise DataError(f"{where}: neither a '{metric}' nor a 'metrics' column")
    # checked per model, before it is cached: the error names the dataset, not a row number
    validate_binary(values.reshape(1, -1), f"{where}, '{metric}'")
    return values


def build_openllm_matrix(
    models: Sequence[str],
    task: str,
    *,
    config: str | None = None,
    metric: str | None = None,
    split: str = "latest",
    organisation: str = ORGANISATION,
    loader: Callable | None = None,
    cache: bool = True,
) -> ResponseMatrix:
    """A models (Hugging Face ids) x examples matrix of one task from the leaderboard's details datasets.

    ``task``: a key of :data:`TASKS`, or any name with ``config`` and ``metric``; ``loader(repo, config, split)``
    returns a DataFrame (by default downloaded with ``datasets``).
    """
    if not models:
        raise DataError(f"{task}: no models given")
    if task not in TASKS and (config is None or metric is None):
        raise DataError(f"unknown task {task!r}; give config= and metric=, or one of {', '.join(TASKS)}")
    config = config or TASKS[task][0]
    metric = metric or TASKS[task][1]
    loader = loader or hub_loader
    rows = []
    for model in models:
        repo = details_repo(model, organisation)
        stored = cache_dir() / "openllm" / repo / f"{config}.{split}.{metric}.npz"
        cached = load_cached(stored) if cache else None
        if cached is not None:
            rows.append(cached["values"])
            continue
        values = _correctness(loader(repo, config, split), metric, f"{repo} ({config})")
        if cache:
            store_cached(stored, values=values)
        rows.append(values)
    lengths = {len(r) for r in rows}
    if len(lengths) != 1:
        raise DataError(f"{task}: models have different numbers of examples {sorted(lengths)}")
    return ResponseMatrix(np.vstack(rows), tuple(models), source=f"Open LLM Leaderboard details, {config}")
