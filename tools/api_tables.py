"""The tables of public names in book/api.md, generated from the modules themselves.

    python tools/api_tables.py           # rewrite the tables in book/api.md
    python tools/api_tables.py --check   # exit 1 if a table is missing or stale

Each documented module of book/api.md has, above its ``automodule`` directive, a region

    <!-- api-table attnlib.se -->
    ... generated: the module's one-line summary and a table of its ``__all__`` ...
    <!-- end api-table -->

whose content this script writes: one row per name of the module's ``__all__``, in that
order, with the first line of the name's docstring. tests/test_api_tables.py checks that
every public name is in its module's table and that the tables are up to date.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "book" / "api.md"

START = re.compile(r"^<!-- api-table (\S+) -->$", re.M)
END = "<!-- end api-table -->"
_AUTOMODULE = re.compile(r"^\.\. automodule:: (\S+)", re.M)
_RST_LITERAL = re.compile(r"``([^`]+)``")
_RST_ROLE = re.compile(r":(?:py:)?(\w+):`([^`]+)`")


def documented_modules(text: str) -> list[str]:
    """The modules that api.md documents with ``.. automodule::``, in page order."""
    return _AUTOMODULE.findall(text)


def first_line(obj) -> str:
    """The first line of an object's own docstring, as MyST inline markdown; for a constant
    or a type alias (no docstring of its own), its value."""
    kind = _kind(obj)
    if kind in ("constant", "type"):
        value = repr(obj).replace("typing.", "")
        return f"`{value if len(value) <= 60 else value[:57] + '...'}`".replace("|", "\\|")
    doc = inspect.cleandoc(obj.__doc__) if isinstance(obj.__doc__, str) else ""
    line = doc.split("\n\n", 1)[0].replace("\n", " ").strip()
    line = _RST_LITERAL.sub(r"`\1`", line)
    line = _RST_ROLE.sub(r"{\1}`\2`", line)
    return line.replace("|", "\\|")


def module_summary(module) -> str:
    return first_line(module)


def _kind(obj) -> str:
    if inspect.ismodule(obj):
        return "module"
    if typing.get_origin(obj) is not None:
        return "type"
    if inspect.isclass(obj):
        return "class"
    if callable(obj):
        return "function"
    return "constant"


def table(modname: str) -> str:
    """The generated region's content for one module (without the two marker lines)."""
    module = importlib.import_module(modname)
    names = getattr(module, "__all__", None)
    if not names:
        raise ValueError(f"{modname} has no __all__: its public names are not declared")
    rows = [
        f"| {{py:obj}}`{name} <{modname}.{name}>` | {_kind(getattr(module, name))} "
        f"| {first_line(getattr(module, name)) or '(no docstring)'} |"
        for name in names
    ]
    return "\n".join(
        [
            f"**{{mod}}`{modname}`**: {module_summary(module)}",
            "",
            "| Name | Kind | Summary |",
            "| --- | --- | --- |",
            *rows,
        ]
    )


def render(text: str) -> str:
    """api.md with every generated region rewritten from the modules."""
    out, pos = [], 0
    for match in START.finditer(text):
        end = text.find(END, match.end())
        if end < 0:
            raise ValueError(f"region of {match.group(1)} has no {END!r}")
        out += [text[pos : match.end()], "\n", table(match.group(1)), "\n"]
        pos = end
    out.append(text[pos:])
    return "".join(out)


def problems(text: str) -> list[str]:
    """Modules documented without a table, tables without a module, stale tables."""
    documented, tabled = documented_modules(text), START.findall(text)
    found = [f"{m}: documented but has no api-table region" for m in documented if m not in tabled]
    found += [f"{m}: api-table region but no automodule" for m in tabled if m not in documented]
    if render(text) != text:
        found.append("tables are stale: run python tools/api_tables.py")
    return found


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    text = API.read_text()
    if argv == ["--check"]:
        found = problems(text)
        print("\n".join(found) or "api.md tables are up to date")
        return 1 if found else 0
    if argv:
        raise SystemExit(__doc__)
    API.write_text(render(text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
