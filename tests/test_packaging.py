"""environment.yml must install exactly what `pip install -e ".[...]"` installs."""

import re
import tomllib  # Python >= 3.11 (pyproject.toml: requires-python)
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]

_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*([^;]*)(?:;(.*))?$")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _parse(requirement: str) -> tuple[str, str, str]:
    """'jupyter-book>=1.0.3,<2' -> ('jupyter-book', '<2,>=1.0.3', '') (specifiers sorted);
    an environment marker ("; python_version < '3.11'") is the third item, spaces removed."""
    match = _REQ.match(requirement)
    assert match, f"cannot parse requirement {requirement!r}"
    name, spec, marker = match.groups()
    spec = ",".join(sorted(s.strip() for s in spec.split(",") if s.strip()))
    marker = re.sub(r"\s+", "", (marker or "").replace('"', "'"))
    return _canonical(name), spec, marker


def _pyproject_requirements() -> set[tuple[str, str, str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        reqs.extend(extra)
    return {_parse(r) for r in reqs}


def _environment():
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def _environment_pip_requirements() -> set[tuple[str, str, str]]:
    pip_sections = [d["pip"] for d in _environment()["dependencies"] if isinstance(d, dict)]
    assert len(pip_sections) == 1, "environment.yml must have exactly one pip section"
    # '-e .' installs the library itself; it is not a requirement to compare.
    return {_parse(r) for r in pip_sections[0] if not r.startswith("-")}


def test_every_requirement_has_a_lower_bound():
    for name, spec, _ in _pyproject_requirements():
        assert ">=" in spec, f"{name} has no lower bound in pyproject.toml"


def test_environment_matches_pyproject():
    pyproject = _pyproject_requirements()
    environment = _environment_pip_requirements()
    assert environment - pyproject == set(), "only in environment.yml"
    assert pyproject - environment == set(), "only in pyproject.toml"


def test_environment_python_satisfies_requires_python():
    conda = [d for d in _environment()["dependencies"] if isinstance(d, str)]
    pythons = [d for d in conda if d.startswith("python")]
    assert len(pythons) == 1
    version = tuple(int(x) for x in pythons[0].split("=")[-1].split("."))
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    minimum = tuple(int(x) for x in requires.removeprefix(">=").split("."))
    assert version >= minimum
    assert "-e ." in next(d["pip"] for d in _environment()["dependencies"] if isinstance(d, dict))
