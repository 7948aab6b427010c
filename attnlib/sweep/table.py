"""The result of a sweep: one tidy table, its failures, its summary; arrays from it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .execute import OK
from .grid import canonical

__all__ = ["make_table", "SweepResult", "pivot"]

META_COLUMNS = ("status", "error", "seconds", "cached")


def _outputs(row: Mapping, point: Mapping) -> dict:
    """The returned entries; one named like a parameter is kept as ``<name>_out`` unless
    it equals the parameter's value."""
    out = {}
    for k, v in row.items():
        if k not in point:
            out[k] = v
        elif not _same(v, point[k]):
            out[f"{k}_out"] = v
    return out


def _same(a, b) -> bool:
    try:
        return bool(np.array_equal(np.asarray(a), np.asarray(b)))
    except (TypeError, ValueError):
        return False


def make_table(points: Sequence[Mapping], records: Sequence[Mapping]) -> pd.DataFrame:
    """One row per point: its parameters (and ``seed``), the numbers it returned, and
    ``status``, ``error``, ``seconds`` (compute time) and ``cached`` columns. A returned
    entry named like a parameter, with another value, becomes the column ``<name>_out``."""
    rows = []
    for point, rec in zip(points, records, strict=True):
        meta = {k: rec.get(k) for k in META_COLUMNS}
        rows.append({**_outputs(rec["row"], point), **point, **meta})
    table = pd.DataFrame(rows)
    first = list(points[0]) if points else []
    rest = [c for c in table.columns if c not in first and c not in META_COLUMNS]
    return table[first + rest + list(META_COLUMNS)] if len(table) else table


@dataclass(frozen=True)
class SweepResult:
    """What :func:`attnlib.sweep.run` returns.

    Attributes:
      name: the experiment's name (its cache folder).
      table: one row per point (see :func:`make_table`); failed points keep their
        parameters, with NaN outputs when the function raised.
      n_cached: points read from the cache; n_computed: points computed now.
      seconds: wall-clock time of the run.
      params: names of the parameter columns (``seed`` included).
    """

    name: str
    table: pd.DataFrame
    n_cached: int
    n_computed: int
    seconds: float
    params: tuple = ()

    @property
    def failures(self) -> pd.DataFrame:
        """The rows whose status is not ``"ok"`` (raised, or ``converged`` false)."""
        return self.table[self.table["status"] != OK]

    @property
    def ok(self) -> bool:
        return len(self.failures) == 0

    def summary(self, max_listed: int = 10) -> str:
        """How many points were cached, computed and failed, and which failed (and why)."""
        fails = self.failures
        lines = [
            f"{self.name}: {len(self.table)} points, {self.n_cached} from cache, "
            f"{self.n_computed} computed in {self.seconds:.1f} s, {len(fails)} failed"
        ]
        for _, row in fails.head(max_listed).iterrows():
            where = ", ".join(f"{k}={row[k]!r}" for k in self.params)
            err = row["error"]
            why = err.splitlines()[0] if isinstance(err, str) and err else "converged = False"
            lines.append(f"  [{row['status']}] {where}: {why}")
        if len(fails) > max_listed:
            lines.append(f"  ... and {len(fails) - max_listed} more")
        return "\n".join(lines)


def pivot(table: pd.DataFrame, field: str, axes: Mapping[str, Sequence]) -> np.ndarray:
    """The column ``field`` as an array with one dimension per axis, in the given order.

    ``pivot(t, "test_error", {"lam": lams, "seed": range(3), "alpha": alphas})`` has
    shape ``(len(lams), 3, len(alphas))`` (plus the shape of ``field``'s values when they
    are arrays). Entries missing from the table, or of failed points, are NaN.
    """
    if not isinstance(table, pd.DataFrame):
        raise ValueError(f"table must be a pandas DataFrame, got {type(table).__name__}")
    if not isinstance(field, str) or field not in table.columns:
        raise ValueError(f"field must be a column of the table, got {field!r}")
    if not isinstance(axes, Mapping):
        raise ValueError(f"axes must be a dict of column names to values, got {axes!r}")
    for name in axes:
        if not isinstance(name, str) or name not in table.columns:
            raise ValueError(f"axes must name columns of the table, got {name!r}")
    index = [{_hashable(v): i for i, v in enumerate(vals)} for vals in axes.values()]
    shape = tuple(len(v) for v in axes.values())
    cells: dict[tuple, np.ndarray] = {}
    for _, row in table.iterrows():
        pos = [ix.get(_hashable(row[name])) for ix, name in zip(index, axes, strict=True)]
        value = row[field]
        if None not in pos and not (np.isscalar(value) and pd.isna(value)):
            cells[tuple(pos)] = np.asarray(value, dtype=float)
    inner = next(iter(cells.values())).shape if cells else ()
    out = np.full(shape + inner, np.nan)
    for pos, value in cells.items():
        out[pos] = value
    return out


def _hashable(value) -> str:
    return json.dumps(canonical("axis", value))
