"""The build helpers in tools/: config overrides and the browser check's text rules."""

import importlib.util
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_book_config_overrides_and_keeps_extension_paths(tmp_path):
    out = tmp_path / "sub" / "config.yml"
    _load("book_config").main(
        [str(out), "execute.execute_notebooks=off", "sphinx.config.hide_solutions=true"]
    )
    original = yaml.safe_load((ROOT / "_config.yml").read_text())
    config = yaml.safe_load(out.read_text())
    assert config["execute"]["execute_notebooks"] == "off"  # the string, not False
    assert config["sphinx"]["config"]["hide_solutions"] is True
    assert config["title"] == original["title"]
    for name, path in config["sphinx"]["local_extensions"].items():
        assert (out.parent / path / f"{name}.py").resolve().is_file(), path


def test_raw_tex_rule():
    check = _load("check_html")
    for text in [r"raw $\alpha = 1$ here", r"see \frac{a}{b}", "$$x$$", r"\(x\)"]:
        assert check.RAW_TEX.search(text), text
    for text in ["a plain sentence", "costs 5 units", "np.mean(x)"]:
        assert not check.RAW_TEX.search(text), text
    assert check.NUMPY_REPR.search("gap np.float64(0.0123)")
    assert not check.NUMPY_REPR.search("gap 0.0123")


def test_namedtuple_signatures_lose_their_forward_refs():
    """attnlib's NamedTuples carry ForwardRef annotations (future annotations); the book's
    Sphinx extension turns them into plain strings before autodoc formats a signature."""
    import inspect
    import typing

    from attnlib import se

    fixes = _load("book_html_fixes")
    fields = se.SESettings.__new__.__annotations__
    assert any(isinstance(v, typing.ForwardRef) for v in fields.values()) or all(
        isinstance(v, str) for v in fields.values()
    )
    fixes.unwrap_forward_refs(se.SESettings)
    fixes.unwrap_forward_refs(se.solve)  # not a NamedTuple: left alone
    assert fields["tol"] == "float" and fields["rtol"] == "float | None"
    signature = str(inspect.signature(se.SESettings))
    assert "ForwardRef" not in signature and "tol: 'float' = 1e-06" in signature
