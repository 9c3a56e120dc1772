"""lm-evaluation-harness in and out: per-sample result files and ``--samples`` selections.

lm-eval 0.4 with ``--log_samples`` writes ``<output_path>/<model>/samples_<task>_<timestamp>.jsonl``:
one line per document (and per *filter*, e.g. GSM8K's ``strict-match`` and ``flexible-extract``)
with its ``doc_id`` and a value per metric. A metric is named as lm-eval's results name it, its
filter after a comma (``exact_match,strict-match``). A per-sample score in [0, 1] that is not 0/1 (TruthfulQA
MC2's ``acc``, the probability given to the true answers) is refused unless the metric names a threshold,
``acc>0.5``: a sample counts as right when its score is above it. ``--samples`` takes ``{"<task>": [doc_id, ...]}``.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from .. import atomic
from ..errors import DataError
from .benchmarks import SPECS
from .matrix import ResponseMatrix

#: The metric read by default for the lm-eval tasks of the benchmarks the package knows.
DEFAULT_METRIC = {spec.lm_eval_task: spec.lm_eval_metric for spec in SPECS.values() if spec.lm_eval_task}
_FILE = re.compile(r"^samples_(?P<task>.+?)_(?P<stamp>\d{4}-\d{2}-\d{2}T[\d\-.:]+)\.jsonl(\.gz)?$")
#: A doc_id written as text: ASCII digits only ("²" is a digit to str.isdigit, not to int).
_DIGITS = re.compile(r"[0-9]+")


def task_of(path: str | Path) -> str | None:
    """The task named by an lm-eval samples file name, if it follows lm-eval's pattern.

    Examples
    --------
    >>> task_of("out/m/samples_arc_challenge_2025-01-02T10-11-12.123456.jsonl")
    'arc_challenge'
    """
    match = _FILE.match(Path(path).name)
    return match.group("task") if match else None


def metric_threshold(metric: str) -> tuple[str, float | None]:
    """A metric and the threshold it names after ``>`` (None if none): a score above it counts as right.

    >>> metric_threshold("acc>0.5")
    ('acc', 0.5)
    >>> metric_threshold("exact_match,strict-match")
    ('exact_match,strict-match', None)
    """
    name, above, cut = metric.partition(">")
    if not above:
        return metric, None
    try:
        threshold = float(cut)
    except ValueError:
        threshold = float("nan")
    if not name or not 0.0 <= threshold < 1.0:
        raise DataError(f"metric {metric!r}: name a score and a threshold from 0 to below 1, e.g. 'acc>0.5'")
    return name, threshold


def _metric_value(record: dict, metric: str, where: str, threshold: float | None = None) -> float:
    name = metric.partition(",")[0]
    if metric in record:
        value = record[metric]
    elif name in record:  # the key lacks the filter the metric names: the line is of that filter
        value = record[name]
    else:
        keys = [k for k in record if k.startswith(metric + ",")]
        if not keys:
            raise DataError(f"{where}: no '{metric}' value in doc_id {record.get('doc_id')}")
        if len(keys) > 1:
            raise DataError(f"{where}: doc_id {record.get('doc_id')} has {', '.join(keys)}; name one as the metric")
        value = record[keys[0]]
    if isinstance(value, list) and len(value) == 1:  # some metrics are logged as a one-element list
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DataError(f"{where}: '{metric}' of doc_id {record.get('doc_id')} is {value!r}, not 0/1")
    value = float(value)
    if threshold is not None:
        if not 0.0 <= value <= 1.0:
            raise DataError(f"{where}: '{metric}' of doc_id {record.get('doc_id')} is {value}, not a score in [0, 1]")
        return float(value > threshold)
    if value not in (0.0, 1.0):
        hint = ""
        if 0.0 < value < 1.0:  # a probability, such as TruthfulQA MC2's: which cut scored the sources is the user's
            hint = f" (a score in [0, 1]: name a threshold, e.g. metric '{metric}>0.5', or use a 0/1 task)"
        raise DataError(f"{where}: '{metric}' of doc_id {record.get('doc_id')} is {value}, not 0/1{hint}")
    return value


def _doc_id(value, where: str) -> int:
    """lm-eval's doc_id: an integer (a string of digits is accepted, as JSON round trips make them)."""
    doc_id = value
    if isinstance(value, str) and _DIGITS.fullmatch(value.strip()):
        doc_id = int(value)
    elif isinstance(value, float) and value.is_integer():
        doc_id = int(value)
    if isinstance(doc_id, bool) or not isinstance(doc_id, int):
        raise DataError(f"{where}: doc_id {value!r} is not an integer")
    if doc_id < 0:
        raise DataError(f"{where}: doc_id {doc_id} is negative")
    return doc_id


def _lines(path: Path) -> list[str]:
    """The file's lines; a gzip'd file (by its first bytes, whatever its name) is read too."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as err:
            raise DataError(f"{path}: corrupt compressed file (gzip: {err})") from None
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        raise DataError(f"{path}: not UTF-8 text; expected lm-eval's JSON Lines") from None


def _check_path(path: Path) -> None:
    if path.is_dir():
        raise DataError(f"{path}: a folder, not a samples file; give the samples_<task>_<date>.jsonl files in it")
    if not path.is_file():
        raise DataError(f"{path}: no such samples file")


def model_of(path: str | Path) -> str:
    """Which model an lm-eval samples file comes from: ``config.model`` and ``config.model_args`` of the
    ``results_<time>.json`` beside it, else the folder lm-eval named after the model."""
    path = Path(path)
    _check_path(path)
    match = _FILE.match(path.name)
    if match is None:  # which model wrote it is known from lm-eval's names only
        raise DataError(f"{path}: not an lm-eval samples file name (samples_<task>_<date>.jsonl)")
    results = path.parent / f"results_{match.group('stamp')}.json"
    if not results.is_file():
        return f"folder {path.parent.name}"
    try:
        config = json.loads(results.read_text()).get("config", {})
        args = config.get("model_args")
        args = json.dumps(args, sort_keys=True) if isinstance(args, dict) else (args or "")
        return f"{config['model']}({args})"
    except (ValueError, RecursionError, AttributeError, KeyError, TypeError):  # ValueError: JSON, UTF-8, digits
        raise DataError(f"{results}: not lm-eval's results JSON (no config.model)") from None


def read_samples(path: str | Path, metric: str, task: str | None = None) -> dict[int, float]:
    """``{doc_id: 0/1}`` from one lm-eval samples file (gzip'd or not), or a :class:`DataError`.

    ``metric`` may name a filter after a comma (``exact_match,strict-match``): only its lines are
    read. A file of several filters needs one named: which one scored the sources is not the reader's
    to guess. A threshold after ``>`` (``acc>0.5``) reads a score in [0, 1] as 1 above it, else 0.
    """
    metric, threshold = metric_threshold(metric)
    path = Path(path)
    _check_path(path)
    file_task = task_of(path)
    if task is not None and file_task is not None and file_task != task:
        raise DataError(f"{path}: a samples file of task '{file_task}', expected '{task}'")
    by_filter: dict[str | None, list[tuple[int, dict]]] = {}
    for number, line in enumerate(_lines(path), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, or beyond the parser's limits (nesting, digits)
            raise DataError(f"{path}: line {number} is not JSON") from None
        if not isinstance(record, dict) or "doc_id" not in record:
            raise DataError(f"{path}: line {number} has no doc_id")
        applied = record.get("filter")
        if applied is not None and not isinstance(applied, str):
            raise DataError(f"{path}: line {number} has filter {applied!r}, not a name")
        by_filter.setdefault(_unfiltered(applied), []).append((number, record))
    _, comma, wanted = metric.partition(",")  # the filter the metric names, if any
    in_filter = ""
    if comma and set(by_filter) != {None}:  # lines that carry no filter: the name is in the key
        if _unfiltered(wanted) not in by_filter:
            raise DataError(f"{path}: no samples of filter '{wanted}'; the file has {_filters(by_filter)}")
        records, in_filter = by_filter[_unfiltered(wanted)], f" in filter '{wanted}'"
    elif len(by_filter) > 1:
        first = next(f for f in by_filter if f is not None)
        raise DataError(
            f"{path}: samples of several filters ({_filters(by_filter)}); name one after the metric, "
            f"e.g. '{metric},{first}'"
        )
    else:
        records = next(iter(by_filter.values()), [])
    results: dict[int, float] = {}
    for number, record in records:
        doc_id = _doc_id(record["doc_id"], f"{path}: line {number}")
        if doc_id in results:
            raise DataError(f"{path}: doc_id {doc_id} appears twice{in_filter}")
        results[doc_id] = _metric_value(record, metric, str(path), threshold)
    if not results:
        raise DataError(f"{path}: no samples")
    return results


def _unfiltered(name: str | None) -> str | None:
    """A filter's name, None for none: lm-eval names its absence "none", older lines carry no filter."""
    return None if name in (None, "none") else name


def _filters(by_filter: dict) -> str:
    return ", ".join(f"'{'none' if f is None else f}'" for f in by_filter)


def load_lm_eval_samples(paths: Iterable[str | Path], metric: str, task: str | None = None) -> ResponseMatrix:
    """Per-sample files of one or many models as a models x doc_id response matrix.

    The model id is the folder lm-eval wrote the file into (two folders of one name are refused); several
    files of one model (disjoint ``--samples``) are merged, and every model must cover the same documents.

    Examples
    --------
    >>> import tempfile, json, os
    >>> root = tempfile.mkdtemp()
    >>> for model, accs in {"m1": [1, 0], "m2": [1, 1]}.items():
    ...     os.makedirs(f"{root}/{model}")
    ...     with open(f"{root}/{model}/samples_arc_challenge_2025-01-01T00-00-00.jsonl", "w") as f:
    ...         for doc_id, acc in enumerate(accs):
    ...             _ = f.write(json.dumps({"doc_id": doc_id, "acc_norm": acc}) + "\\n")
    >>> m = load_lm_eval_samples(sorted(__import__("glob").glob(f"{root}/*/*.jsonl")), "acc_norm")
    >>> m.models, m.values.tolist()
    (('m1', 'm2'), [[1.0, 0.0], [1.0, 1.0]])
    """
    per_model: dict[str, dict[int, float]] = {}
    folders: dict[str, Path] = {}
    tasks = set()
    for path in paths:
        path = Path(path)
        folder = folders.setdefault(path.parent.name, path.parent.resolve())
        if folder != path.parent.resolve():
            raise DataError(
                f"samples in two folders named {folder.name!r} ({folder}, {path.parent.resolve()}): the folder's "
                "name is the model id; give each model a folder of its own name"
            )
        named = task_of(path)
        if named:
            tasks.add(named)
        if len(tasks) > 1:
            raise DataError(f"samples of several tasks given: {', '.join(sorted(tasks))}")
        results = read_samples(path, metric, task)
        merged = per_model.setdefault(path.parent.name, {})
        overlap = merged.keys() & results.keys()
        if overlap:
            raise DataError(f"{path}: doc_id {min(overlap)} already read for model {path.parent.name}")
        merged.update(results)
    if not per_model:
        raise DataError("no samples files given")
    doc_ids = sorted(next(iter(per_model.values())))
    for model, results in per_model.items():
        if sorted(results) != doc_ids:
            raise DataError(f"model {model} covers different doc_ids from the others")
    values = np.array([[results[d] for d in doc_ids] for results in per_model.values()])
    return ResponseMatrix(values, tuple(per_model), tuple(doc_ids), source="lm-eval samples")


def samples_argument(task: str, doc_ids: Sequence) -> dict:
    """The ``--samples`` selection of lm-eval: ``{"<task>": [doc_id, ...]}``."""
    return {task: [int(d) for d in doc_ids]}


def parse_samples_argument(value: str) -> dict[str, list[int]]:
    """Read a ``--samples`` value as lm-eval 0.4 does: a path to a JSON file, else a JSON string."""
    path = Path(value)
    text = path.read_text() if path.is_file() else value
    selection = json.loads(text)
    if not isinstance(selection, dict) or not all(
        isinstance(k, str) and isinstance(v, list) and all(isinstance(i, int) for i in v) for k, v in selection.items()
    ):
        raise ValueError("--samples must map task names to lists of integer doc indices")
    return selection


def write_samples(folder: str | Path, model: str, task: str, doc_ids, values, metric: str, stamp: str) -> Path:
    """Write recorded results as an lm-eval samples file, ``<folder>/<model>/samples_<task>_<stamp>.jsonl``,
    so that they stand in for a live lm-eval run (for teaching and testing)."""
    path = Path(folder) / model / f"samples_{task}_{stamp}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps({"doc_id": int(d), "filter": "none", metric: float(v)}) for d, v in zip(doc_ids, values, strict=True)
    ]
    atomic.write_text(path, "\n".join(lines) + "\n")
    return path
