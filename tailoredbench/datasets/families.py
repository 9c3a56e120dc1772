"""Model families parsed from model names (e.g. ``meta-llama/Meta-Llama-3-8B`` -> ``Llama``)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pandas as pd

#: Checked in order; the first pattern found in the lower-cased name wins.
FAMILIES = (
    ("StableLM", r"stablelm"),  # before Mistral: stablelm-zephyr models are StableLM
    ("Qwen", r"qwen"),
    ("Llama", r"llama"),
    ("Mistral", r"mistral|mixtral|zephyr"),
    ("Yi", r"(^|[/_\-])yi[\-_.]"),
    ("Gemma", r"gemma"),
    ("Phi", r"(^|[/_\-])phi[\-_.]?\d"),
    ("Falcon", r"falcon"),
    ("GPT-2/Neo/J", r"gpt2|gpt-neo|gpt-j|pythia"),
    ("InternLM", r"internlm"),
    ("DeepSeek", r"deepseek"),
    ("OLMo", r"olmo"),
    ("BLOOM", r"bloom"),
    ("MPT", r"mpt-"),
    ("Granite", r"granite"),
    ("SOLAR", r"solar"),
    ("RedPajama", r"redpajama"),
    ("StarCoder", r"starcoder"),
)


def model_family(name: str) -> str:
    """The family of a model name, or ``"other"``.

    Examples
    --------
    >>> model_family("01-ai/Yi-1.5-34B"), model_family("Qwen/Qwen2-7B"), model_family("gpt2")
    ('Yi', 'Qwen', 'GPT-2/Neo/J')
    """
    lowered = name.lower()
    for family, pattern in FAMILIES:
        if re.search(pattern, lowered):
            return family
    return "other"


def family_shares(models: Sequence[str], chosen: Sequence[str]) -> pd.DataFrame:
    """Each family's share of ``models`` (``all sources``) and of ``chosen`` among them (``native sources``),
    the families in increasing order of their share of all.

    Examples
    --------
    >>> family_shares(["gpt2", "Qwen/Qwen2-7B", "Qwen/Qwen2-1.5B", "x"], ["gpt2"]).round(2).values.tolist()
    [[0.25, 1.0], [0.25, 0.0], [0.5, 0.0]]
    """
    every = pd.Series([model_family(m) for m in models]).value_counts(normalize=True)
    native = pd.Series([model_family(m) for m in chosen]).value_counts(normalize=True)
    frame = pd.DataFrame({"all sources": every, "native sources": native}).fillna(0.0)
    return frame.sort_values("all sources")
