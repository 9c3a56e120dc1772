"""The registry of estimation methods that the simulation runner and the CLI know.

Each method is a module with two functions:

``prepare(source, **options) -> dict``
    Work that depends only on the source models (item distances, an IRT fit), done
    once per benchmark and shared by every run.
``run(prepared, source, oracles, key, **options) -> {budget: estimates}``
    One repetition: ``oracles[budget]`` reveals the targets' results item by item and
    enforces the budget; ``key`` (seed, run) seeds every random choice.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

from .errors import TailoredBenchError

METHODS: dict[str, str] = {
    "tailoredbench": "tailoredbench.tailored",
    "random": "tailoredbench.baselines.random",
    "anchor_points": "tailoredbench.baselines.anchor_points",
    "gp_irt": "tailoredbench.baselines.gp_irt",
    "random_regression": "tailoredbench.baselines.random_regression",
}


def get_method(name: str) -> ModuleType:
    """The module implementing method ``name``."""
    try:
        return import_module(METHODS[name])
    except KeyError:
        raise TailoredBenchError(f"unknown method {name!r}; choose one of {', '.join(METHODS)}") from None
