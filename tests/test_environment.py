"""environment.yml and pyproject.toml declare the same dependencies."""

import re
import tomllib

from conftest import ROOT


def _normalise(requirement: str) -> str:
    return re.sub(r"\s+", "", requirement).lower().replace("_", "-")


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = set(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        declared |= set(extra)
    conda = set()
    text = (ROOT / "environment.yml").read_text()
    for line in text.split("\ndependencies:\n", 1)[1].splitlines():
        match = re.match(r"^(?:  |      )- ([A-Za-z0-9_.\-]+.*)$", line)  # conda, or pip's list below it
        if match and not match.group(1).startswith(("python=", "pip", "-e")):
            conda.add(match.group(1))
    assert {_normalise(d) for d in declared} == {_normalise(d) for d in conda}
