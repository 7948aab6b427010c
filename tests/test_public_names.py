"""attnlib's public names: every public module says what it exports (``__all__``, each
name defined), and nothing is exported under two names."""

import importlib
import pkgutil
import types

import pytest

import attnlib


def _public_modules() -> list[str]:
    names = ["attnlib"]
    for info in pkgutil.walk_packages(attnlib.__path__, "attnlib."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


MODULES = _public_modules()


def _exported(module: types.ModuleType) -> dict[str, object]:
    return {name: getattr(module, name) for name in module.__all__}


def test_the_walk_finds_the_modules():
    assert len(MODULES) > 60 and "attnlib.rmt.law" in MODULES and "attnlib.se.point" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_module_declares_all(name):
    module = importlib.import_module(name)
    assert hasattr(module, "__all__"), f"{name} has no __all__"
    assert isinstance(module.__all__, (list, tuple)), f"{name}.__all__ is not a list"
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert missing == [], f"{name}.__all__ names what it does not define: {missing}"
    assert len(set(module.__all__)) == len(module.__all__), f"{name}.__all__ repeats a name"


def _names_of_each_object() -> dict[int, set[str]]:
    """id of each exported function or class -> the names it is exported under."""
    names: dict[int, set[str]] = {}
    for name in MODULES:
        for export, obj in _exported(importlib.import_module(name)).items():
            if callable(obj) and getattr(obj, "__module__", "").startswith("attnlib"):
                names.setdefault(id(obj), set()).add(export)
    return names


def _aliases(names: dict[int, set[str]]) -> list[list[str]]:
    return sorted(sorted(v) for v in names.values() if len(v) > 1)


def test_one_name_for_each_thing():
    """A function or class of attnlib is exported under one name, wherever it is
    re-exported (no aliases such as ``default_dir`` beside ``default_cache_dir``)."""
    assert _aliases(_names_of_each_object()) == []


def test_the_alias_check_can_fail():
    names = _names_of_each_object()
    some = next(iter(names))
    names[some] = names[some] | {"another_name"}
    assert _aliases(names) != []
