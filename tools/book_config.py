"""Write a copy of _config.yml with some settings overridden.

    python tools/book_config.py OUT.yml execute.execute_notebooks=off \
        sphinx.config.hide_solutions=true

Each override is a dotted path into the YAML and a value read as YAML (so
`true` is a boolean and `600` an int; `off` stays the string "off", the
Jupyter Book spelling). `make check-html` and `make book-student` use it to
build from the committed outputs without editing _config.yml.
"""

import os
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _value(text: str):
    return text if text in ("off", "on") else yaml.safe_load(text)


def override(config: dict, dotted: str, value) -> None:
    """Set config[a][b][c] = value for dotted = 'a.b.c', creating missing levels."""
    *parents, leaf = dotted.split(".")
    node = config
    for key in parents:
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            raise ValueError(f"{dotted}: {key} is not a mapping in _config.yml")
    node[leaf] = value


def main(argv: list[str]) -> None:
    if len(argv) < 1:
        raise SystemExit(__doc__)
    out, *pairs = argv
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    for pair in pairs:
        if "=" not in pair:
            raise SystemExit(f"override {pair!r} is not KEY=VALUE")
        key, text = pair.split("=", 1)
        override(config, key, _value(text))
    out = Path(out).resolve()
    # Jupyter Book reads local extension paths relative to the config file.
    local = config.get("sphinx", {}).get("local_extensions") or {}
    for name, path in local.items():
        local[name] = os.path.relpath(ROOT / path, out.parent)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(config, sort_keys=False))


if __name__ == "__main__":
    main(sys.argv[1:])
