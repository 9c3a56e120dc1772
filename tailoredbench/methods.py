"""The registry of estimation methods that the simulation runner and the CLI know.

Each method is a module with two functions:

``prepare(source, **options) -> dict``
    Work that depends only on the source models (item distances, an IRT fit), done
    once per benchmark and shared by every run.
``run(prepared, source, oracles, key, **options) -> {budget: estimates}``
    One repetition: ``oracles[budget]`` reveals the targets' results item by item and
    enforces the budget; ``key`` (seed, run) seeds every random choice.

A method with variants is named ``base[variant]`` (e.g. ``tailored_plus[mix]``); the
variant reaches ``run`` as ``variant=``. A module may also offer
``run_variants(..., variants=[...]) -> {variant: {budget: estimates}}`` to compute
several variants from one pass (the simulation runner then uses it), and
``INTERVAL_FOLDS``, the folds over source models that calibrate its intervals when
leaving one source out at a time (the default) would cost too many ``prepare`` calls.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

from .errors import TailoredBenchError

METHODS: dict[str, str] = {
    "tailoredbench": "tailoredbench.tailored",
    "tailored_plus": "tailoredbench.tailored_plus",
    "random": "tailoredbench.baselines.random",
    "anchor_points": "tailoredbench.baselines.anchor_points",
    "gp_irt": "tailoredbench.baselines.gp_irt",
    "random_regression": "tailoredbench.baselines.random_regression",
}


def split_name(name: str) -> tuple[str, str | None]:
    """``"base[variant]"`` -> ``("base", "variant")``; a plain name has no variant.

    Examples
    --------
    >>> split_name("tailored_plus[mix]"), split_name("random")
    (('tailored_plus', 'mix'), ('random', None))
    """
    if name.endswith("]") and "[" in name:
        base, variant = name[:-1].split("[", 1)
        return base, variant
    return name, None


def get_method(name: str) -> ModuleType:
    """The module implementing method ``name`` (checking the variant, if any)."""
    base, variant = split_name(name)
    try:
        module = import_module(METHODS[base])
    except KeyError:
        raise TailoredBenchError(f"unknown method {name!r}; choose one of {', '.join(METHODS)}") from None
    if variant is not None:
        if variant not in getattr(module, "VARIANTS", ()):
            raise TailoredBenchError(f"method {base} has no variant {variant!r}")
    return module


def method_options(name: str) -> dict:
    """The options a method name carries: ``{"variant": ...}`` for ``base[variant]``."""
    variant = split_name(name)[1]
    return {} if variant is None else {"variant": variant}
