"""The error of a state-evolution fixed point, and a solve to a requested accuracy.

:func:`solve_accurate` is :func:`attnlib.se.solve` with an accuracy ``rtol`` (default
1e-3) on ``SEResult.integration_error`` (:mod:`attnlib.se.propagation`);
:func:`fixed_point_error` measures the same error from independent scramblings.
"""

from __future__ import annotations

import numpy as np

from attnlib.se.drivers import solve
from attnlib.se.settings import SESettings

__all__ = ["METRICS", "fixed_point_error", "solve_accurate"]

METRICS = ("train_loss", "test_error", "mse")
"""The metrics whose relative error ``integration_error`` bounds."""


def fixed_point_error(results) -> float:
    """Largest relative standard deviation (``ddof = 1``) over :data:`METRICS` among
    converged results of the same point solved with independent QMC seeds: the error of
    one of them, measured. NaN when fewer than two converged."""
    vals = np.array([[getattr(r, f) for f in METRICS] for r in results if r.converged], float)
    if len(vals) < 2:
        return float("nan")
    scale = np.maximum(np.abs(vals.mean(axis=0)), 1e-300)
    return float(np.max(vals.std(axis=0, ddof=1) / scale))


def solve_accurate(
    task, target, alpha: float, lam: float, penalty: str = "nuclear", *,
    rtol: float = 1e-3, settings: SESettings | None = None, **kw,
):  # fmt: skip
    """:func:`attnlib.se.solve` with ``rtol`` (default 1e-3): ``n_qmc`` doubles until
    ``integration_error``, the error of the metrics at the fixed point, is at most
    ``rtol`` (up to ``settings.max_n_qmc``, default ``2**17``; then a ``RuntimeWarning``
    states the accuracy reached). ``settings`` (an :class:`~attnlib.se.SESettings`) and
    the other keywords (``init=``, ``return_warm=``, shorthands of the settings) go to
    :func:`attnlib.se.solve`."""
    return solve(task, target, alpha, lam, penalty, rtol=rtol, settings=settings, **kw)
