"""Running the points of one task (a single point, or a stretch of a chain) in a worker.

Each point gives a *record*: a dict with ``row`` (the function's dict, or ``{}``),
``state`` (the warm start it hands on, chains only), ``status`` (``"ok"``;
``"not_converged"`` when the row's ``converged`` entry is false, anywhere for an
array; ``"error"`` when the function raised or returned something that is not a
dict), ``error`` (the exception's type and message, or ``None``) and ``seconds``.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from attnlib import _jax_config

__all__ = ["call_point", "run_task"]

OK, NOT_CONVERGED, ERROR = "ok", "not_converged", "error"


def _status(row: Mapping) -> str:
    """``not_converged`` when the row has a ``converged`` entry (a flag, or an array of
    flags for a curve) that is false anywhere."""
    if "converged" in row and not np.all(np.asarray(row["converged"], dtype=bool)):
        return NOT_CONVERGED
    return OK


def call_point(fn: Callable, point: Mapping, chained: bool, init) -> dict:
    """Evaluate ``fn`` at one point; never raises (an exception becomes an error record)."""
    t0 = time.perf_counter()
    try:
        out = fn(**point, init=init) if chained else fn(**point)
        row, state = out if chained else (out, None)
        if not isinstance(row, Mapping):
            raise TypeError(
                f"{getattr(fn, '__name__', fn)} returned {type(row).__name__}, "
                "expected a dict (and, with a chain, a (dict, state) pair)"
            )
        row = dict(row)
        status, error = _status(row), None
    except Exception as err:
        row, state, status = {}, init, ERROR
        error = f"{type(err).__name__}: {err}"
        tb = traceback.format_exc(limit=-3)
        error = f"{error}\n{tb}" if tb else error
    return {
        "row": row,
        "state": state,
        "status": status,
        "error": error,
        "seconds": time.perf_counter() - t0,
    }


def run_task(
    fn: Callable, points: Sequence[Mapping], chained: bool = False, init=None, *, float64=False
):
    """Evaluate ``fn`` at ``points`` in order; along a chain, each point starts from the
    state of the previous one (an errored point hands on the state it received).
    ``float64=True`` (the caller is in float64 mode) runs :func:`attnlib.configure_jax`
    first, in a worker process before it computes: importing attnlib does not.
    Returns the list of records."""
    if float64:
        _jax_config.configure_jax()
    records = []
    for point in points:
        rec = call_point(fn, point, chained, init)
        if chained:
            init = rec["state"]
        records.append(rec)
    return records
