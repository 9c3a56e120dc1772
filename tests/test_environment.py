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


def _pins() -> dict[str, str]:
    from packaging.utils import canonicalize_name

    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version
    return pins


def test_constraints_pin_every_installed_dependency_within_its_range():
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = _pins()
    # what `make reproduce` and `make test` install: the package and its test and dask extras
    for declared in (
        *project["dependencies"],
        *project["optional-dependencies"]["test"],
        *project["optional-dependencies"]["dask"],
    ):
        requirement = Requirement(declared)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not pinned in constraints.txt"
        assert requirement.specifier.contains(pins[name], prereleases=True), f"{name}=={pins[name]} is not {declared}"


def test_make_installs_with_the_constraints():
    makefile = (ROOT / "Makefile").read_text()
    installer = next(line for line in makefile.splitlines() if line.startswith("INSTALL :="))
    assert "pip install" in installer
    installs = [line for line in makefile.splitlines() if "-e " in line and "install" in line.lower()]
    assert installs and all(line.startswith("\t$(INSTALL) -c constraints.txt -e ") for line in installs)


def test_a_report_records_the_versions_it_was_computed_with(tmp_path):
    import json

    import numpy as np
    import pandas as pd
    import scipy
    import sklearn

    from tailoredbench.report import write_study

    write_study(tmp_path, {"t": pd.DataFrame({"a": [1]})}, parameters={}, findings=[])
    recorded = json.loads((tmp_path / "metrics.json").read_text())["environment"]
    assert recorded["numpy"] == np.__version__ and recorded["scipy"] == scipy.__version__
    assert recorded["scikit-learn"] == sklearn.__version__ and recorded["machine"]


def test_reproducible_numerics_pin_openblas_and_numpy_below_avx512_in_the_processes_started_after(monkeypatch):
    import json
    import os
    import subprocess
    import sys

    from tailoredbench import environment

    for name in ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES"):
        monkeypatch.delenv(name, raising=False)
    pins = environment.reproducible_numerics()
    baseline, dispatch = environment._numpy_simd()
    found = set(baseline) | set(dispatch)
    if not ({"AVX2", "FMA3"} <= found or found & {"X86_V3", "X86_V4"}):
        assert pins == {}
        return
    assert pins["OPENBLAS_CORETYPE"] == "Haswell"
    assert ("NPY_DISABLE_CPU_FEATURES" in pins) == ("X86_V4" in dispatch)
    code = "import json; from tailoredbench.environment import versions; print(json.dumps(versions()))"
    child = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, **pins}, capture_output=True, text=True, timeout=120
    )
    recorded = json.loads(child.stdout)
    assert "Haswell" in recorded["blas"] and recorded["numpy_simd"] in ("X86_V3", "baseline"), recorded

    # a variable the user set is theirs; another architecture is left as it is
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Zen")
    assert "OPENBLAS_CORETYPE" not in environment.reproducible_numerics()
    monkeypatch.setattr(environment.platform, "machine", lambda: "arm64")
    assert environment.reproducible_numerics() == {}
