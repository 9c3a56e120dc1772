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
    base = split_name(name)[0]
    if base not in METHODS:
        raise TailoredBenchError(f"unknown method {name!r}; choose one of {', '.join(METHODS)}")
    method = METHODS[base]()
    method.check_options(name_options(name))  # the variant, checked where every option is
    return method


def name_options(name: str) -> dict:
    """The options a method name carries: ``{"variant": ...}`` for ``base[variant]``."""
    variant = split_name(name)[1]
    return {} if variant is None else {"variant": variant}


def variant_name(base: str, variant: str) -> str:
    """The name of one variant of a method, e.g. ``tailored_plus[mix]`` (:func:`split_name` reads it back).

    Examples
    --------
    >>> split_name(variant_name("tailored_plus", "mix"))
    ('tailored_plus', 'mix')
    """
    return f"{base}[{variant}]"


__all__ = ["KINDS", "METHODS", "PAPER_METHODS", "Method", "get_method", "name_options", "split_name", "variant_name"]
