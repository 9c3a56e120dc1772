"""POPE (MSCOCO) built from raw answer files of public LVLM runs.

POPE (Li et al., *Evaluating Object Hallucination in Large Vision-Language Models*, EMNLP 2023) asks yes/no
questions about COCO images: 9000 items in three splits. The models x items matrix is built from 22 public
runs (see the data registry's ``POPE.md``): items in ``ustc-hyin/cd_rethink``'s order, each answer file mapped
to items by one of five rules (:class:`Run`), parsed as POPE's ``eval_pope.py`` does and checked against the
published counts and accuracies. It is the complete block (runs that answered all of LLaVA's 8910 questions).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from ..errors import DataError
from .files import fetch
from .matrix import ResponseMatrix
from .readers import file_records

SPLITS = ("random", "popular", "adversarial")
OFFSET = {"random": 0, "popular": 3000, "adversarial": 6000}
N_ITEMS = 9000

_CANON = "ustc-hyin/cd_rethink"
_LQ = ("Haoming2000/VLM-Benchmarks", "playground/data/eval/pope/llava_pope_test.jsonl")
_MQ = ("Marcowky/LLaVA", "playground/data/eval/pope/llava_pope_test.jsonl")
_ANSWERS = "playground/data/eval/pope/answers/"  # same folder in Haoming2000 and Marcowky
_CR = "outputs/pope/baseline/llava-7b-coco-{}-{}.jsonl"
_SG = "GuangzhiSu/SmoothGuard", "image_eval/pope/answers/"
_SV = "seva/pope_result/llava_loraft_dpo_our_ocrlv8kfilter{}_r1024_a2048/pope_{}.jsonl"
_SV_VARIANT = {"d800": "4k_diffu800_textvqa8kfilter6k_diffu800", "d500": "_diffu500_textvqa8kfilter_diffu500"}
_CS = "ruichenZz/cs263-final-project", "experiments/output/"
_VP = "VigneshPreetham/lvlm_hallucinate"
_EASON = "EasonAI-5589/LLaVA-Eval"
_RAM = "shares the base run's broken pipeline; its signal may come from the RAM tags alone"
_SUFFIXES = ("Answer the question using a single word or phrase.", "Please just answer yes or no.")


@dataclass(frozen=True)
class Run:
    """One run of one model on POPE: its files, how they map to items, and the published check."""

    row: int
    name: str
    model: str
    # by L(LaVA question ids), P(OPE question ids), I(mage and question text), E(asonAI's restarting ids), V: position
    mapping: str
    files: tuple  # ((repo, path, split or None), ...)
    answered: int
    accuracy: float
    questions: tuple | None = None  # (repo, path) of the LLaVA question file for mapping L
    exclude: str = ""


def _one(repo: str, path: str, split: str | None = None) -> tuple:
    return ((repo, path, split),)


def _llava(name: str, questions: tuple = _LQ) -> tuple:
    """An answer file in the LLaVA answers folder of the repository that holds ``questions``."""
    return _one(questions[0], _ANSWERS + name)


def _cd_rethink(decoding: str) -> tuple:
    return tuple((_CANON, _CR.format(s, decoding), s) for s in SPLITS)


def _smooth(folder: str, name: str) -> tuple:
    return _one(_SG[0], f"{_SG[1]}{folder}_on_pope/{name}.jsonl")


def _per_split(repo, template, *args) -> tuple:
    return tuple((repo, template.format(*args, s if s != "adversarial" else "adv"), s) for s in SPLITS)


def _cs263(model: str, *stems: str) -> tuple:
    return tuple((_CS[0], f"{_CS[1]}{model}_coco_pope_{stem}_seed55.jsonl", stem.split("_")[0]) for stem in stems)


def _internvl(name: str) -> tuple:
    return _one(_VP, name, "adversarial")


_L7 = "LLaVA-1.5-7B"
_QWEN = "Qwen2.5-VL-7B-Instruct"
_SMOOTHING = "SmoothGuard randomized smoothing"
_SEVA = "Kevinz-code/SeVa"
_LLAVA2 = "LLaVA-LLaMA-2-13B-chat-preview (v1)"
_INTERN = "InternVL2-4B"

RUNS: tuple[Run, ...] = (
    Run(0, "official LLaVA eval answers", "LLaVA-1.5-13B", "L", _llava("llava-v1.5-13b.jsonl"), 8910, 0.8697, _LQ),
    Run(1, "Haoming2000, partial", _L7, "L", _llava("llava-v1.5-7b.jsonl"), 5712, 0.8654, _LQ),
    Run(2, "Marcowky", "LLaVA-1.6-Vicuna-7B", "L", _llava("llava-v1.6-vicuna-7b.jsonl", _MQ), 9000, 0.8762, _MQ),
    Run(
        3,
        "CLIP 'There is (no) X' (vit file)",
        "CLIP ViT-L/14-336",
        "L",
        _llava("llava-v1.6-vicuna-7b-vit.jsonl", _MQ),
        9000,
        0.4588,
        _MQ,
        exclude="a CLIP text-similarity baseline, not an LVLM (below chance, 83% yes)",
    ),
    Run(4, "cd_rethink greedy", _L7, "P", _cd_rethink("greedy"), 9000, 0.8541),
    Run(5, "cd_rethink sampling", _L7, "P", _cd_rethink("sample"), 9000, 0.8173),
    Run(6, "SmoothGuard normal", "llava-1.5-7b-hf", "L", _smooth("llava", "llava-Instruct-normal"), 8910, 0.8575, _LQ),
    Run(7, _SMOOTHING, "llava-1.5-7b-hf", "L", _smooth("llava", "llava-Instruct-new"), 8910, 0.8167, _LQ),
    Run(8, "SmoothGuard normal", _QWEN, "L", _smooth("qwen", f"{_QWEN}-normal"), 8910, 0.8486, _LQ),
    Run(9, _SMOOTHING, _QWEN, "L", _smooth("qwen", f"{_QWEN}-new"), 8910, 0.8741, _LQ),
    Run(
        10,
        "ClearSight (VAF)",
        _L7,
        "P",
        _one("ustc-hyin/ClearSight", "outputs/inference/res_coco_random.jsonl", "random"),
        3000,
        0.8977,
    ),
    Run(11, "SeVa DPO diffu800", "SeVa-7B", "P", _per_split(_SEVA, _SV, _SV_VARIANT["d800"]), 9000, 0.8667),
    Run(12, "SeVa DPO diffu500", "SeVa-7B", "P", _per_split(_SEVA, _SV, _SV_VARIANT["d500"]), 9000, 0.8692),
    Run(
        13,
        "cs263 VCD code, no CD",
        _L7,
        "I",
        _cs263("llava15", "random_answers_no_cd", "popular_answers_no_cd", "adversarial_answers_no_cd2"),
        6500,
        0.8043,
    ),
    Run(
        14,
        "cs263 + VCD, partial",
        _L7,
        "I",
        _cs263("llava15", "popular_answers_with_cd", "adversarial_answers_with_cd"),
        675,
        0.8163,
    ),
    Run(15, "cs263 sampling", _LLAVA2, "I", _cs263("my/llava1", "popular_answers_no_cd"), 3000, 0.5853),
    Run(16, "cs263 + VCD", _LLAVA2, "I", _cs263("my/llava1", "popular_answers_with_cd"), 3000, 0.5923),
    Run(17, "EasonAI free-form prompt", _L7, "E", _one(_EASON, "pope/answers/llava-v1.5-7b.jsonl"), 5742, 0.8299),
    Run(
        18,
        "SURf",
        "SURf-7B",
        "P",
        _one("GasolSun36/SURf", "output/coco_pope_popular_results.jsonl", "popular"),
        3000,
        0.8793,
    ),
    Run(
        19,
        "base",
        _INTERN,
        "V",
        _internvl("internvl_base_pope_responses.json"),
        3000,
        0.4910,
        exclude="at chance and uncorrelated with the labels (images evidently wrong or missing)",
    ),
    Run(20, "+ RAM tags", _INTERN, "V", _internvl("internvl_RAM_pope_responses.json"), 3000, 0.7497, exclude=_RAM),
    Run(
        21,
        "+ RAM tags, 2-step",
        _INTERN,
        "V",
        _internvl("POPE/internvl_2xPrompting_RAM_pope_responses.json"),
        3000,
        0.7223,
        exclude=_RAM,
    ),
)


def normalise_question(text: str) -> str:
    """The question as a matching key: first line, prompt suffixes and typos removed.

    Examples
    --------
    >>> normalise_question("Is there a cat in the imange?\\\\nAnswer the question using a single word or phrase.")
    'Is there a cat in the image?'
    """
    text = text.replace("\\n", "\n").split("\n")[0]
    for suffix in _SUFFIXES:
        text = text.replace(suffix, "")
    return " ".join(text.split()).replace("imange", "image")


def parse_yes_no(answer: str) -> str:
    """POPE's rule: text before the first ".", commas removed, "no" if a token is No/no/not.

    Examples
    --------
    >>> parse_yes_no("No, there is no cat."), parse_yes_no("Yes"), parse_yes_no("There is not.")
    ('no', 'yes', 'no')
    """
    tokens = answer.split(".")[0].replace(",", "").split(" ")
    return "no" if any(t in ("No", "no", "not") for t in tokens) else "yes"


def _records(repo: str, path: str) -> list[dict]:
    """A registered file's JSON records: a JSON array, or JSON Lines."""
    local = fetch(repo, path)
    text = local.read_text()
    try:
        if text.lstrip().startswith("["):
            return json.loads(text)
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except (ValueError, RecursionError) as err:
        raise DataError(f"{local}: not JSON or JSON Lines ({err})") from None


@dataclass(frozen=True)
class Items:
    labels: np.ndarray  # 1 for "yes", 0 for "no", canonical order
    keys: dict  # (split, image, normalised question) -> index


def canonical_items() -> Items:
    """The 9000 items in canonical order, with gold labels and matching keys."""
    labels = np.empty(N_ITEMS)
    keys = {}
    for split in SPLITS:
        records = _records(_CANON, f"data/coco/coco_pope_{split}.json")
        if len(records) != 3000:
            raise DataError(f"{_CANON}: coco_pope_{split}.json has {len(records)} lines, expected 3000")
        for line, record in enumerate(records, start=1):
            if record["question_id"] != line:
                raise DataError(f"{_CANON}: coco_pope_{split}.json line {line} has question_id {record['question_id']}")
            index = OFFSET[split] + line - 1
            labels[index] = record["label"] == "yes"
            key = (split, record["image"], normalise_question(record["text"]))
            if key in keys:
                raise DataError(f"{_CANON}: duplicate item {key}")
            keys[key] = index
    return Items(labels, keys)


def _question_key(question: dict) -> tuple:
    """The item key of a LLaVA-style question record."""
    return (question["category"], question["image"], normalise_question(question["text"]))


def _map_run(run: Run, items: Items, question_files: dict) -> np.ndarray:
    """The run's parsed answers (1 yes, 0 no) per item, NaN where unanswered; ``question_files`` caches across runs."""
    answers = np.full(N_ITEMS, np.nan)

    def put(index, record, where):
        if not np.isnan(answers[index]):
            raise DataError(f"{where}: item {index} answered twice")
        answers[index] = parse_yes_no(record["text"] if "text" in record else record["answer"]) == "yes"

    for repo, path, split in run.files:
        where = f"{repo}/{path}"
        records = _records(repo, path)
        if run.mapping == "V":
            for j, record in enumerate(records):
                put(OFFSET["adversarial"] + j, record, where)
        elif run.mapping == "P":
            for record in records:
                put(OFFSET[split] + record["question_id"] - 1, record, where)
        elif run.mapping == "I":
            for record in records:
                key = (split, record["image"], normalise_question(record["prompt"]))
                if key not in items.keys:
                    raise DataError(f"{where}: no POPE item matches {key}")
                put(items.keys[key], record, where)
        elif run.mapping == "L":
            assert run.questions is not None  # mapping L names its question file
            if run.questions not in question_files:
                question_files[run.questions] = {q["question_id"]: q for q in _records(*run.questions)}
            questions = question_files[run.questions]
            for record in records:
                put(items.keys[_question_key(questions[record["question_id"]])], record, where)
        elif run.mapping == "E":
            test = _records(_EASON, "pope/coco_test.jsonl")
            by_split, order, segment, previous = {}, [], -1, None
            for q in test:  # ids restart in each split of coco_test.jsonl
                if q["question_id"] == 1:
                    order.append(q["category"])
                by_split[(q["category"], q["question_id"])] = q
            for record in records:
                if previous is None or record["question_id"] < previous:
                    segment += 1
                previous = record["question_id"]
                put(items.keys[_question_key(by_split[(order[segment], record["question_id"])])], record, where)
    return answers


def run_correctness(runs=RUNS) -> tuple[np.ndarray, Items]:
    """Correctness (1, 0, NaN unanswered) of every run on the 9000 items, each checked against :data:`RUNS`."""
    items = canonical_items()
    question_files: dict = {}
    rows = []
    for run in runs:
        answers = _map_run(run, items, question_files)
        answered = ~np.isnan(answers)
        correct = np.where(answered, answers == items.labels, np.nan)
        accuracy = float(np.nanmean(correct))
        if answered.sum() != run.answered or round(accuracy, 4) != run.accuracy:
            raise DataError(
                f"POPE run {run.row} ({run.name}): {answered.sum()} answered at accuracy {accuracy:.4f}, "
                f"expected {run.answered} at {run.accuracy:.4f}; {run.files[0][0]}/{run.files[0][1]}"
            )
        rows.append(correct)
    return np.vstack(rows), items


def load_pope_matrix() -> tuple[ResponseMatrix, dict]:
    """The complete block of usable runs x items, and its provenance."""
    correctness, _ = run_correctness()
    usable = [i for i, run in enumerate(RUNS) if not run.exclude]
    answered = ~np.isnan(correctness)
    llava_items = answered[0]  # row 0 answered exactly LLaVA's 8910 questions
    complete = np.array([i for i in usable if answered[i, llava_items].all()], dtype=int)
    columns = np.flatnonzero(answered[complete].all(axis=0))
    models = tuple(f"r{RUNS[i].row:02d} {RUNS[i].model} ({RUNS[i].name})" for i in complete)
    matrix = ResponseMatrix(
        correctness[np.ix_(complete, columns)], models, tuple(int(c) for c in columns), source="POPE answer files"
    )
    files = []
    for run in RUNS:
        pairs = [(repo, path) for repo, path, _ in run.files] + ([run.questions] if run.questions else [])
        files += [{**record, "run": run.row} for record in file_records(*pairs)]
    info = {
        "description": "POPE (MSCOCO, random/popular/adversarial) built from raw answer files of public LVLM runs: "
        f"the complete block of {len(complete)} runs x {len(columns)} items (runs that answered every question "
        "of LLaVA's 8910-question version); far fewer models than the paper's POPE split.",
        "runs_checked": len(RUNS),
        "runs_excluded": {run.row: run.exclude for run in RUNS if run.exclude},
        "runs_partial_left_out": [RUNS[i].row for i in usable if i not in complete],
        "item_ids": "canonical index = offset + question_id - 1 (random 0, popular 3000, adversarial 6000)",
        "files": files,
    }
    return matrix, info
