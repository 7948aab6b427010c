"""Declaring a grid: the function of one point, its parameter points, seeds and chains.

A *point* is a dict of parameter values (plus ``seed`` when the grid has seeds); the
function is called once per point as ``fn(**point)`` (with a chain,
``fn(**point, init=state)``: :mod:`attnlib.sweep`) and returns one row of the table.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import itertools
import json
import math
import numbers
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import attnlib

__all__ = [
    "product",
    "canonical",
    "function_name",
    "library_fingerprint",
    "code_fingerprint",
    "point_key",
    "Grid",
]

RESERVED = ("seed", "init")


def product(**axes) -> list[dict]:
    """Every combination of the axes, the last axis varying fastest.

    ``product(alpha=[0.1, 0.2], lam=[1.0])`` is
    ``[{"alpha": 0.1, "lam": 1.0}, {"alpha": 0.2, "lam": 1.0}]``. A scalar value is
    an axis of length one.
    """
    names = list(axes)
    values = [v if _is_axis(v) else [v] for v in axes.values()]
    for name, vals in zip(names, values, strict=True):
        for v in vals:
            canonical(name, v)  # ValueError naming the parameter (non-finite, unsupported)
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*values)]


def _is_axis(v) -> bool:
    return isinstance(v, (list, tuple, range, np.ndarray))


def canonical(name: str, value):
    """A JSON-able, exact form of one parameter value (the basis of the cache key)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        x = float(value)
        if not math.isfinite(x):
            raise ValueError(f"parameter {name} must be finite, got {value!r}")
        return x
    if isinstance(value, str) or value is None:
        return value
    if isinstance(value, (list, tuple, np.ndarray)):
        return [canonical(name, v) for v in np.asarray(value, dtype=object).tolist()]
    raise ValueError(
        f"parameter {name} must be a number, a string, None or a list of them, got {value!r}"
    )


def function_name(fn: Callable) -> str:
    """``module.qualname`` of ``fn``; a script run as ``python -m pkg.mod`` gives ``pkg.mod``."""
    module = getattr(fn, "__module__", None) or "?"
    if module == "__main__":
        spec = getattr(sys.modules.get("__main__"), "__spec__", None)
        module = spec.name if spec is not None else "__main__"
    return f"{module}.{getattr(fn, '__qualname__', repr(fn))}"


@functools.lru_cache(maxsize=1)
def library_fingerprint() -> str:
    """sha256 of every ``.py`` file of the installed attnlib package (paths and
    contents, in sorted order): it changes whenever any of the library's code does."""
    root = Path(attnlib.__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def code_fingerprint(fn: Callable) -> str:
    """sha256 of the code a point function runs: the whole source file of the module
    that defines ``fn`` (so its helpers count too) and :func:`library_fingerprint`.
    A function whose source cannot be read (defined interactively) contributes its
    bytecode instead."""
    digest = hashlib.sha256(library_fingerprint().encode())
    target = inspect.unwrap(fn)
    try:
        digest.update(Path(inspect.getsourcefile(target)).read_bytes())
    except (TypeError, OSError):
        code = getattr(target, "__code__", None)
        digest.update(code.co_code if code is not None else repr(target).encode())
    return digest.hexdigest()


def point_key(name: str, point: Mapping, prefix: Sequence = (), code: str = "") -> str:
    """Cache key of a point: a hash of the function's name, attnlib's version, the code
    it runs (``code``, a :func:`code_fingerprint`), the point's parameters and (for a
    chained point) the chain values before it."""
    blob = json.dumps(
        {
            "fn": name,
            "version": attnlib.__version__,
            "code": code,
            "point": {k: canonical(k, v) for k, v in point.items()},
            "chain_prefix": [canonical("chain", v) for v in prefix],
        },
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class Grid:
    """A grid of experiments: ``fn`` evaluated at every point and seed.

    Args:
      fn: function of one point's parameters (keywords), and of ``seed`` when
        ``seeds`` is given, returning a dict of numbers or arrays. A returned
        ``converged`` entry that is false marks the point as failed (the row is
        kept). With ``chain`` it takes ``init`` and returns ``(row, state)``.
        Defined at module level, so that workers can import it.
      params: a dict of axes (their product is taken, see :func:`product`) or a
        list of points (dicts), e.g. the concatenation of several products.
      seeds: number of seeds per point (``seed = 0 .. seeds - 1``); ``None`` for a
        deterministic function called without ``seed``.
      chain: name of the axis along which points are warm-started (or ``None``).
      name: name of the experiment in the cache (default: ``fn``'s module and
        qualified name). Cached points are keyed by the source of ``fn``'s module
        and of attnlib as well (:func:`code_fingerprint`): editing either
        recomputes them; renaming the grid recomputes them too.
    """

    fn: Callable
    params: Mapping | Sequence[Mapping]
    seeds: int | None = None
    chain: str | None = None
    name: str = ""
    points: tuple = field(init=False, repr=False)

    def __post_init__(self):
        if not callable(self.fn):
            raise ValueError(f"fn must be callable, got {self.fn!r}")
        if self.seeds is not None and (
            isinstance(self.seeds, bool)
            or not isinstance(self.seeds, numbers.Integral)
            or self.seeds < 1
        ):
            raise ValueError(f"seeds must be None or an integer >= 1, got {self.seeds!r}")
        if isinstance(self.params, Mapping):
            base = product(**self.params)
        elif isinstance(self.params, Sequence) and not isinstance(self.params, str):
            base = list(self.params)
        else:
            raise ValueError(
                f"params must be a dict of axes or a list of dicts, got {self.params!r}"
            )
        if not base or not all(isinstance(p, Mapping) for p in base):
            raise ValueError("params must be a dict of axes or a non-empty list of dicts")
        for p in base:
            bad = [k for k in p if k in RESERVED]
            if bad:
                raise ValueError(f"params must not contain {bad}: reserved names {RESERVED}")
            if self.chain is not None and self.chain not in p:
                raise ValueError(f"chain {self.chain!r} is not a parameter of every point")
        seeds = [None] if self.seeds is None else range(int(self.seeds))
        pts = tuple(
            dict(p) if s is None else {**p, "seed": s} for p, s in itertools.product(base, seeds)
        )
        object.__setattr__(self, "points", pts)
        object.__setattr__(self, "name", self.name or function_name(self.fn))

    def __len__(self) -> int:
        return len(self.points)

    def chains(self) -> list[list[int]]:
        """Indices of the points grouped into chains (one index per group without a chain),
        each chain in the declared order of its axis."""
        if self.chain is None:
            return [[i] for i in range(len(self.points))]
        groups: dict[str, list[int]] = {}
        for i, p in enumerate(self.points):
            rest = {k: canonical(k, v) for k, v in p.items() if k != self.chain}
            groups.setdefault(json.dumps(rest, sort_keys=True), []).append(i)
        return list(groups.values())

    def keys(self) -> list[str]:
        """Cache key of every point (in the order of :attr:`points`); a change of the
        function's module or of attnlib's source changes every key."""
        code = code_fingerprint(self.fn)
        keys = [""] * len(self.points)
        for chain in self.chains():
            prefix = []
            for i in chain:
                keys[i] = point_key(self.name, self.points[i], prefix, code)
                if self.chain is not None:
                    prefix.append(self.points[i][self.chain])
        return keys
