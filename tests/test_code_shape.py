"""The shape of the library, measured with ast: small functions, small modules.

Rules (the library's code conventions): no function longer than 60 lines (from its
``def`` line to its last line, docstring included), no module longer than 500 lines
(a larger one becomes a package with one idea per file), no function with more than
6 positional parameters (``self``/``cls`` not counted; configuration goes in a
NamedTuple or dataclass), and every import at the top of its module (an import hidden
inside a function hides a dependency). A module that defines public functions or
classes declares its public interface in ``__all__`` (names it keeps for the library's
own use may stay out of it), and every name there exists.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "attnlib"
MODULES = sorted(p.relative_to(ROOT.parent).as_posix() for p in ROOT.rglob("*.py"))

MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 500
MAX_POSITIONAL = 6


def _tree(module: str) -> ast.Module:
    return ast.parse((ROOT.parent / module).read_text(), filename=module)


def _functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _positional(fn: ast.FunctionDef) -> int:
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names)


def test_the_library_is_found():
    assert "attnlib/__init__.py" in MODULES and len(MODULES) > 10


@pytest.mark.parametrize("module", MODULES)
def test_module_length(module):
    n = len((ROOT.parent / module).read_text().splitlines())
    assert n <= MAX_MODULE_LINES, f"{module} has {n} lines (> {MAX_MODULE_LINES})"


@pytest.mark.parametrize("module", MODULES)
def test_function_length(module):
    long = [
        f"{fn.name} (line {fn.lineno}): {fn.end_lineno - fn.lineno + 1} lines"
        for fn in _functions(_tree(module))
        if fn.end_lineno - fn.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, f"{module}: functions over {MAX_FUNCTION_LINES} lines: {long}"


@pytest.mark.parametrize("module", MODULES)
def test_positional_parameters(module):
    many = [
        f"{fn.name} (line {fn.lineno}): {_positional(fn)} positional parameters"
        for fn in _functions(_tree(module))
        if _positional(fn) > MAX_POSITIONAL
    ]
    assert not many, f"{module}: {many}"


@pytest.mark.parametrize("module", MODULES)
def test_imports_at_the_top(module):
    hidden = [
        f"{fn.name} (line {node.lineno})"
        for fn in _functions(_tree(module))
        for node in ast.walk(fn)
        if isinstance(node, (ast.Import, ast.ImportFrom))
    ]
    assert not hidden, f"{module}: imports inside functions: {hidden}"


def test_the_measures_can_fail():
    """The measures see a long function, many parameters and a hidden import."""
    src = "def f(a, b, c, d, e, f, g):\n    import os\n" + "    x = 1\n" * 70
    fn = next(_functions(ast.parse(src)))
    assert fn.end_lineno - fn.lineno + 1 == 72
    assert _positional(fn) == 7
    assert any(isinstance(n, ast.Import) for n in ast.walk(fn))
    method = next(_functions(ast.parse("class A:\n    def m(self, a, *, b):\n        pass\n")))
    assert _positional(method) == 1


def _public_definitions(tree: ast.Module) -> set[str]:
    return {
        n.name
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and not n.name.startswith("_")
    }


def _declared_all(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return [ast.literal_eval(e) for e in node.value.elts]
    return None


@pytest.mark.parametrize("module", MODULES)
def test_public_names_are_declared(module):
    tree = _tree(module)
    defined, declared = _public_definitions(tree), _declared_all(tree)
    if Path(module).name.startswith("_") and Path(module).name != "__init__.py":
        return  # a private module (attnlib/_checks.py)
    if not defined and declared is None:
        return  # a helper module whose names are all private
    assert declared is not None, f"{module} defines {sorted(defined)} but has no __all__"
    stored = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    imported = {
        a.asname or a.name.split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
    }
    names = stored | imported | {n.name for n in tree.body if hasattr(n, "name")}
    unknown = sorted(set(declared) - names)
    assert unknown == [], f"{module}: __all__ names nothing by {unknown}"


def test_the_declaration_check_can_fail():
    tree = ast.parse("def f():\n    pass\n\n\ndef _g():\n    pass\n")
    assert _public_definitions(tree) == {"f"} and _declared_all(tree) is None
    assert _declared_all(ast.parse("__all__ = ['f']\n")) == ["f"]
