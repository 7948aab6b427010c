"""attnlib's import rules (attnlib/ARCHITECTURE.md, "Layers"): the channels load no state
evolution, an import never goes to a higher layer, no package imports (directly or through
others) a package that imports it, and no module takes a private name of another
package's public module. The graph is read from the source (every ``import`` statement,
at module level or inside a function), so an import hidden in a function counts too. A
new top-level module or package must be given a layer here."""

import ast
import collections
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "attnlib"

LAYERS = {
    1: "_checks _deprecation _limits _jax_config _compiled_programs _teacher finite_size follow "
    "qmc tasks targets iterate spectral_map plotting",
    2: "rmt denoisers channels",
    3: "_gamp_checks gamp amp train se",
    4: "width hardmax bayes thresholds scaling spectrum",
    5: "widgets sliders sweep book",
}
LAYER = {name: layer for layer, names in LAYERS.items() for name in names.split()}

LOADS = (
    "import sys, attnlib.channels; "
    "print(sorted(m for m in sys.modules if m.startswith(('attnlib.se', 'attnlib.iterate'))))"
)


def test_channels_load_no_state_evolution():
    """``import attnlib.channels`` (in a fresh process) loads neither ``attnlib.se`` nor
    ``attnlib.iterate``: the channels own their Gaussian model and take their QMC points
    from :mod:`attnlib.qmc`."""
    out = subprocess.run([sys.executable, "-c", LOADS], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def _part(module: str) -> str:
    """The top-level part of attnlib a module belongs to (``attnlib.se.point`` -> ``se``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _imports(path: Path):
    """``(imported module, names)`` of every import statement of the file ``path``."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "attnlib":  # from attnlib import se, channels
                for a in node.names:
                    yield f"attnlib.{a.name}", []
            elif node.module.startswith("attnlib."):
                yield node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("attnlib."):
                    yield a.name, []


def import_graph():
    """``(edges, private)``: the parts each part of attnlib imports, and the private names
    ``(importer, module, name)`` that a public part takes from another part's public
    module (a private module such as ``_paper_power_law`` is a piece of the part that
    imports it)."""
    edges, private = collections.defaultdict(set), []
    for path in ROOT.rglob("*.py"):
        mod = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts)
        mod = mod.removesuffix(".__init__")
        for target, names in _imports(path):
            if _part(target) in ("", _part(mod)):
                continue
            edges[_part(mod)].add(_part(target))
            if not _part(mod).startswith("_") and not any(
                p.startswith("_") for p in target.split(".")
            ):
                private += [(mod, target, n) for n in names if n.startswith("_")]
    return edges, private


def cycles(edges) -> list:
    """The parts that reach themselves through the import graph, sorted."""

    def reach(start):
        seen, todo = set(), [start]
        while todo:
            for nxt in edges.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    return sorted(p for p in list(edges) if p in reach(p))


EDGES = import_graph()[0]


def test_every_part_has_a_layer():
    parts = {p.relative_to(ROOT).parts[0].removesuffix(".py") for p in ROOT.rglob("*.py")}
    assert parts - {"__init__"} - set(LAYER) == set()


@pytest.mark.parametrize("part", sorted(p for p in EDGES if p))  # "": attnlib itself
def test_no_import_from_a_higher_layer(part):
    higher = sorted(t for t in EDGES[part] if LAYER.get(t, 0) > LAYER[part])
    assert higher == [], f"{part} (layer {LAYER[part]}) imports {higher}"


def test_no_package_imports_one_that_imports_it():
    assert "denoisers" in EDGES["se"] and "rmt" in EDGES["denoisers"]  # the graph is read
    assert cycles(EDGES) == []


def test_no_private_name_of_another_package():
    assert import_graph()[1] == []


def test_the_cycle_check_can_fail():
    edges, _ = import_graph()
    edges["rmt"] = edges["rmt"] | {"denoisers"}  # the cycle this rule removed
    assert cycles(edges) == ["denoisers", "rmt"]
