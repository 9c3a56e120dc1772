"""Model families parsed from model names (e.g. ``meta-llama/Meta-Llama-3-8B`` -> ``Llama``)."""

from __future__ import annotations

import re

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
