"""The package's layers (ARCHITECTURE.md): imports point one way, down, with no circle."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "tailoredbench"

#: Each module's layer, lowest first; a module may import from its own layer or any below.
LAYERS = {
    "foundation": ["errors", "_version", "rng", "atomic", "environment", "cache"],
    "data": ["datasets"],
    "core": ["kmedoids", "tailored", "metrics"],
    "methods": ["methods"],
    "estimator": ["intervals", "stopping", "estimator"],
    "reporting": ["figures", "report", "walkthrough"],
    "experiments": ["simulate", "sequential", "studies", "suite", "workflow"],
    "faces": ["batch", "site", "cli", "__main__", "__init__"],
}
RANK = {top: rank for rank, tops in enumerate(LAYERS.values()) for top in tops}
#: The one import inside a function: the entry point loads the command inside its Ctrl-C guard.
DEFERRED = {("tailoredbench.__main__", "tailoredbench.cli")}


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(("tailoredbench", *parts))] = path
    return found


def internal_imports(name: str, path: Path) -> list[tuple[str, int, bool]]:
    """``(imported module, line, at module top)`` for every import of the package's own modules."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    top = {id(node) for node in tree.body}
    known = modules()
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if not module.startswith("tailoredbench"):
                continue
            targets = [f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in known] or [module]
            out += [(t, node.lineno, id(node) in top) for t in targets]
        elif isinstance(node, ast.Import):
            out += [(a.name, node.lineno, id(node) in top) for a in node.names if a.name.startswith("tailoredbench")]
    return out


def layer(module: str) -> int:
    parts = module.split(".")
    return RANK["__init__" if len(parts) == 1 else parts[1]]


GRAPH = {name: internal_imports(name, path) for name, path in modules().items()}


def test_every_module_has_a_layer():
    missing = sorted(m for m in GRAPH if "." in m and m.split(".")[1] not in RANK)
    assert not missing, f"add these to LAYERS and ARCHITECTURE.md: {missing}"


@pytest.mark.parametrize("name", sorted(GRAPH))
def test_imports_point_down_and_sit_at_the_top(name):
    for target, line, at_top in GRAPH[name]:
        assert at_top or (name, target) in DEFERRED, (
            f"{name}:{line} imports {target} inside a function: move it to the top"
        )
        assert layer(target) <= layer(name), f"{name}:{line} imports {target}, a layer above it"


def test_no_import_circle():
    state: dict[str, int] = {}  # 1 on the current path, 2 done

    def visit(node, path):
        state[node] = 1
        for target, _, _ in GRAPH.get(node, []):
            if state.get(target) == 1:
                circle = [*path[path.index(target) :], target]
                pytest.fail("import circle: " + " -> ".join(circle))
            if target not in state:
                visit(target, [*path, target])
        state[node] = 2

    for node in sorted(GRAPH):
        if node not in state:
            visit(node, [node])


def test_these_tests_can_fail(monkeypatch):
    monkeypatch.setitem(GRAPH, "tailoredbench.rng", [("tailoredbench.simulate", 1, True)])
    with pytest.raises(pytest.fail.Exception, match="import circle"):
        test_no_import_circle()
    with pytest.raises(AssertionError, match="a layer above"):
        test_imports_point_down_and_sit_at_the_top("tailoredbench.rng")
    monkeypatch.setitem(GRAPH, "tailoredbench.rng", [("tailoredbench.errors", 9, False)])
    with pytest.raises(AssertionError, match="inside a function"):
        test_imports_point_down_and_sit_at_the_top("tailoredbench.rng")
