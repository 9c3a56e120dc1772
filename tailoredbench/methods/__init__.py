"""The registry of estimation methods: name -> :class:`Method`, with its kind and capabilities.

To add a method: write one module here with a :class:`Method` subclass, and list it below.
"""

from __future__ import annotations

from ..errors import TailoredBenchError
from .anchor_points import AnchorPoints
from .base import KINDS, Method, split_name
from .gp_irt import GpIrt
from .random import Random
from .random_regression import RandomRegression
from .tailored_plus import TailoredPlus
from .tailoredbench import TailoredBenchMethod

#: Every method by name, in the reports' order.
METHODS: dict[str, type[Method]] = {
    cls.name: cls for cls in (TailoredBenchMethod, TailoredPlus, Random, AnchorPoints, GpIrt, RandomRegression)
}
#: The paper's methods: TailoredBench and its four baselines.
PAPER_METHODS = tuple(name for name, cls in METHODS.items() if cls.in_paper)


def get_method(name: str) -> Method:
    """The method of a name, ``base`` or ``base[variant]`` (the variant checked).

    Examples
    --------
    >>> get_method("tailored_plus[mix]").kind, get_method("random").kind
    ('tailored', 'baseline')
    """
    base, variant = split_name(name)
    if base not in METHODS:
        raise TailoredBenchError(f"unknown method {name!r}; choose one of {', '.join(METHODS)}")
    method = METHODS[base]()
    if variant is not None and variant not in method.variants:
        raise TailoredBenchError(f"method {base} has no variant {variant!r}")
    return method


def name_options(name: str) -> dict:
    """The options a method name carries: ``{"variant": ...}`` for ``base[variant]``."""
    variant = split_name(name)[1]
    return {} if variant is None else {"variant": variant}


def variant_names(base: str) -> list[str]:
    """Every ``base[variant]`` name of a method with variants, e.g. ``tailored_plus[mix]``."""
    return [f"{base}[{v}]" for v in METHODS[base].variants]


__all__ = ["KINDS", "METHODS", "PAPER_METHODS", "Method", "get_method", "name_options", "split_name", "variant_names"]
