"""attnlib's import rules (issue "one composition"): the channels load no state evolution,
no package imports a package that imports it, and no module takes a private name of
another package's public module. The graph is read from the source (every ``import``
statement, at module level or inside a function), so an import hidden in a function
counts too."""

import ast
import collections
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "attnlib"

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
    """Pairs of public parts that import each other."""
    public = [p for p in edges if not p.startswith("_")]
    pairs = {tuple(sorted((a, b))) for a in public for b in edges[a] if a in edges[b]}
    return sorted(p for p in pairs if not p[0].startswith("_") and not p[1].startswith("_"))


def test_no_package_imports_one_that_imports_it():
    edges, _ = import_graph()
    assert "denoisers" in edges["se"] and "rmt" in edges["denoisers"]  # the graph is read
    assert cycles(edges) == []


def test_no_private_name_of_another_package():
    assert import_graph()[1] == []


def test_the_cycle_check_can_fail():
    edges, _ = import_graph()
    edges["rmt"] = edges["rmt"] | {"denoisers"}  # the cycle this rule removed
    assert cycles(edges) == [("denoisers", "rmt")]
