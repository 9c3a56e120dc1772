"""The registry of estimation methods, and :class:`MethodSpec`: a method as the user named it.

To add a method, write a module here with a :class:`Method` subclass and list it below."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..errors import TailoredBenchError
from .anchor_points import AnchorPoints
from .base import KINDS, Key, Method, Oracle, RunEstimates
from .fluid import Fluid
from .gp_irt import GpIrt
from .random import Random
from .random_regression import RandomRegression
from .tailored_plus import TailoredPlus
from .tailoredbench import TailoredBenchMethod

#: Every method by name, in the reports' order.
METHODS: dict[str, type[Method]] = {
    cls.name: cls for cls in (TailoredBenchMethod, TailoredPlus, Random, AnchorPoints, GpIrt, RandomRegression, Fluid)
}
#: The paper's methods: TailoredBench and its four baselines.
PAPER_METHODS = tuple(name for name, cls in METHODS.items() if cls.in_paper)


@dataclass(frozen=True)
class MethodSpec:
    """A method name such as ``tailored_plus[mix]``, parsed once where it enters, with its checked options.

    Examples
    --------
    >>> spec = MethodSpec.parse("tailored_plus[mix]", {"g_size": 5})
    >>> spec.base, spec.variant, spec.options["g_size"], spec.kind
    ('tailored_plus', 'mix', 5, 'tailored')
    >>> MethodSpec.parse("random").variant
    ''
    """

    name: str  #: as the user gave it; the reports' label
    base: str
    variant: str  #: "" for a method without variants
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))  #: checked, without the variant

    @classmethod
    def parse(
        cls, name: str | MethodSpec, options: Mapping[str, Any] | None = None, shared: Mapping[str, Any] | None = None
    ) -> MethodSpec:
        """``name``'s spec; ``options`` are checked against those it declares (an unknown one is refused).

        ``shared`` settings (a simulation's ``g_size``, ``distance``) apply only where the method declares them.
        """
        if isinstance(name, MethodSpec):
            return name
        if not isinstance(name, str):
            raise TailoredBenchError(f"a method is named by a string, got {name!r}")
        base, variant = name, ""
        if name.endswith("]") and "[" in name:
            base, variant = name[:-1].split("[", 1)
            # "fluid[]" would run as fluid under another label: given twice, and missed by what looks for "fluid"
            if not variant:
                raise TailoredBenchError(f"method {name!r}: name a variant inside [], or leave the brackets out")
        if base not in METHODS:
            raise TailoredBenchError(f"unknown method {name!r}; choose one of {', '.join(METHODS)}")
        method = METHODS[base]()
        if variant and not method.variants:
            raise TailoredBenchError(f"method {base} has no variants")
        declared = {k: v for k, v in (shared or {}).items() if k in method.options}
        checked = method.check_options({**declared, **(options or {}), **({"variant": variant} if variant else {})})
        variant = checked.pop("variant", "")
        return cls(name, base, variant, MappingProxyType(checked))

    @property
    def method(self) -> Method:
        return METHODS[self.base]()

    @property
    def kind(self) -> str:
        return METHODS[self.base].kind


def parse_methods(names, shared: Mapping[str, Any] | None = None, options: Mapping[str, Any] | None = None):
    """Specs of several names: ``shared`` settings go to the methods that declare them, ``options`` to all.

    Examples
    --------
    >>> [s.options.get("g_size") for s in parse_methods(["tailoredbench", "random"], {"g_size": 5})]
    [5, None]
    """
    names = [names] if isinstance(names, str | MethodSpec) else list(names)
    if not names:
        raise TailoredBenchError("no method given; choose from: " + ", ".join(METHODS))
    specs = [MethodSpec.parse(name, options, shared) for name in names]
    if len({s.name for s in specs}) != len(specs):
        raise TailoredBenchError("a method is given twice")
    return specs


def kind_of(name: str) -> str:
    """``"tailored"`` or ``"baseline"``: the kind of a method named in a results table."""
    return MethodSpec.parse(name).kind


__all__ = [
    "KINDS",
    "METHODS",
    "PAPER_METHODS",
    "Key",
    "Method",
    "MethodSpec",
    "Oracle",
    "RunEstimates",
    "kind_of",
    "parse_methods",
]
