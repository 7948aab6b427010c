"""The layers of the library (attnlib/ARCHITECTURE.md, "Layers"), read from its imports.

Every ``from attnlib.X ...`` / ``import attnlib.X`` in a module of package (or top-level
module) ``P`` is an edge ``P -> X``. Two rules: an edge never goes to a higher layer, and
no package imports, directly or through others, a package that imports it (no cycle of
packages). A new top-level module or package must be given a layer here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "attnlib"

LAYERS = {
    1: "_checks _deprecation _limits _jax_config _compiled_programs finite_size tasks targets iterate "
    "spectral_map plotting _teacher",
    2: "rmt denoisers channels",
    3: "_gamp_checks gamp amp train se",
    4: "width hardmax bayes thresholds scaling spectrum",
    5: "widgets sliders sweep book",
}
LAYER = {name: layer for layer, names in LAYERS.items() for name in names.split()}


def _part(path: Path) -> str:
    """The top-level package or module of attnlib that ``path`` belongs to."""
    rel = path.relative_to(ROOT)
    return rel.parts[0].removesuffix(".py")


def _targets(node) -> list[str]:
    if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        if node.module == "attnlib":
            return [alias.name for alias in node.names]
        if node.module.startswith("attnlib."):
            return [node.module.split(".")[1]]
    if isinstance(node, ast.Import):
        return [a.name.split(".")[1] for a in node.names if a.name.startswith("attnlib.")]
    return []


def _edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in ROOT.rglob("*.py"):
        part = _part(path)
        if part == "__init__":
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            for target in _targets(node):
                if target != part:
                    edges.setdefault(part, set()).add(target)
    return edges


EDGES = _edges()


def test_every_part_has_a_layer():
    parts = {_part(p) for p in ROOT.rglob("*.py")} - {"__init__"}
    assert parts - set(LAYER) == set()


@pytest.mark.parametrize("part", sorted(EDGES))
def test_no_import_from_a_higher_layer(part):
    higher = sorted(t for t in EDGES[part] if LAYER.get(t, 0) > LAYER[part])
    assert higher == [], f"{part} (layer {LAYER[part]}) imports {higher}"


def test_no_cycle_of_packages():
    def reach(start):
        seen, todo = set(), [start]
        while todo:
            for nxt in EDGES.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    cycles = sorted(p for p in EDGES if p in reach(p))
    assert cycles == [], f"packages on an import cycle: {cycles}"


def test_the_rules_can_fail():
    """The checker sees an edge that exists (``se`` imports ``channels``)."""
    assert "channels" in EDGES["se"]
