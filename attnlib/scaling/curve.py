"""Scaling laws from the state evolution: the excess risk along ``alpha`` with a penalty
schedule (:class:`LamSchedule`)."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from attnlib import _checks, _limits, channels, se
from attnlib.scaling.recovery import _modes_of, count_recovered, spectral_summary
from attnlib.scaling.schedule import LamSchedule
from attnlib.se.continuation import unfinished_result

__all__ = ["ExcessRiskCurve", "excess_risk_curve"]


class ExcessRiskCurve(NamedTuple):
    """State-evolution learning curve along ``alpha`` with a penalty schedule.

    Arrays over ``alpha``: ``lam``; ``test_error`` (noise-free labels); ``e0`` (the
    limit of ``test_error`` as ``S_hat -> S0``: 0 for noise-free test labels);
    ``excess = test_error - e0``; ``mse``; ``Delta_eff``; ``threshold = tau / c``;
    ``rank_fraction``; ``n_recovered`` and ``fractions`` (``(n_alpha, n_modes)``, see
    :func:`recovered_modes`); ``converged``. ``mse`` and ``excess`` are recomputed at
    the fixed point by :func:`spectral_summary` (Stein form), which keeps their relative
    accuracy when they are many decades below ``Q0``.
    """

    alpha: np.ndarray
    lam: np.ndarray
    test_error: np.ndarray
    e0: np.ndarray
    excess: np.ndarray
    mse: np.ndarray
    Delta_eff: np.ndarray
    threshold: np.ndarray
    rank_fraction: np.ndarray
    n_recovered: np.ndarray
    fractions: np.ndarray
    converged: np.ndarray


def _schedule(alphas, lam):
    alphas = np.asarray(_checks.finite_array("alphas", alphas), dtype=float).reshape(-1)
    if alphas.size == 0 or np.any(alphas <= 0) or np.any(np.diff(alphas) <= 0):
        raise ValueError(f"alphas must be a non-empty increasing list of values > 0, got {alphas}")
    if isinstance(lam, LamSchedule):
        lams = np.atleast_1d(lam(alphas))
    else:
        lams = np.full(alphas.shape, _checks.positive("lam", lam))
    return alphas, lams


def _errors(task, Q0, res, mse):
    """``(test_error, e0)`` at a fixed point: ``test_error_from_overlaps(Q0, m, q)`` with ``m =
    (Q0 + q - mse) / 2`` and the accurate ``mse`` (Stein form); for the linear task a function
    of ``mse`` alone.
    """
    closed = channels.for_task(task).mse_test_error(mse)  # linear: a function of mse alone
    if closed is not None:
        return closed, 0.0
    m = 0.5 * (Q0 + res.q - mse)
    te = se.test_error_from_overlaps(task, Q0, m, res.q)
    return te, se.test_error_from_overlaps(task, Q0, Q0, Q0)


def _starts(starts, n):
    """Per-alpha warm starts: ``None`` or ``n`` entries (each ``None`` or a warm start)."""
    if starts is None:
        return [None] * n
    if isinstance(starts, (str, bytes)) or not hasattr(starts, "__len__") or len(starts) != n:
        raise ValueError(f"starts must be None or a sequence of {n} warm starts (one per alpha)")
    return list(starts)


def _options(target, level, starts, n, se_kwargs):
    """``(level, starts, init, time_limit)`` checked, and taken out of ``se_kwargs`` (the
    time limit holds for the whole curve)."""
    level = _checks.in_interval("level", level, 0.0, 1.0, high_open=True)
    _checks.target(target)
    if se_kwargs.pop("penalty", "nuclear") != "nuclear":
        raise ValueError("penalty: excess_risk_curve uses the nuclear penalty")
    time_limit = _limits.time_limit(se_kwargs.pop("time_limit", None))
    return level, _starts(starts, n), se_kwargs.pop("init", None), time_limit


def _row(task, target, res, lm, level, n_nodes):
    """One row of :class:`ExcessRiskCurve` from the fixed point ``res`` at ``lam = lm``."""
    summ = spectral_summary(target, res.Delta_eff, res.tau, res.c, n_nodes=n_nodes)
    mse = max(summ.mse, 0.0)
    te, e0 = _errors(task, float(target.Q0), res, mse)
    row = (float(lm), te, e0, te - e0, mse, res.Delta_eff, summ.threshold, summ.rank_fraction)
    return (*row, count_recovered(summ.fractions, level), summ.fractions, res.converged)


def excess_risk_curve(
    task,
    target,
    alphas,
    lam,
    *,
    level: float = 0.5,
    n_nodes: int = 400,
    progress=None,
    starts=None,
    return_warm: bool = False,
    **se_kwargs,
):
    """:func:`attnlib.se.solve` along increasing ``alphas`` (warm starts), nuclear penalty.

    Args:
      task, target: an :class:`attnlib.tasks.Task` and a target with an atomic spectrum.
      alphas: increasing sample ratios ``> 0``; lam: a float or a :class:`LamSchedule`.
      level: recovery level of :func:`recovered_modes`; n_nodes: quadrature nodes of
        :func:`spectral_summary`; progress: optional ``progress(i, alpha, result)``.
      starts: optional per-alpha warm starts (each ``None``, ``(m, q, v)``, a result or a warm
        start); else the previous converged point's (or ``init`` for the first one).
      return_warm: also return the points' warm starts (``None`` where there is none).
      **se_kwargs: passed to :func:`attnlib.se.solve` (``init=``, ``settings=`` and its
        shorthands); ``time_limit=`` (seconds) holds for the whole curve.

    Returns an :class:`ExcessRiskCurve` (and the warm starts). Interrupted, past
    ``time_limit`` or where a point raises: the finished points, the others NaN with
    ``n_recovered = -1``, ``converged=False`` and an :class:`attnlib.se.SEConvergenceWarning`.
    """
    alphas, lams = _schedule(alphas, lam)
    level, starts, init, time_limit = _options(target, level, starts, alphas.size, se_kwargs)
    se.drivers._check_solve_args(task, target, alphas[0], lams[0], "nuclear")  # before the curve
    rows = {}

    def solve_at(i, a, start):
        return se.solve(
            task, target, a, float(lams[i]), "nuclear", init=start, return_warm=True, **se_kwargs
        )

    def after(i, a, res):
        row = _row(task, target, res, lams[i], level, n_nodes)
        if progress is not None:
            progress(i, a, res)
        rows[i] = row  # finished once the callback has returned

    with _limits.limit(time_limit):
        _, warms = se.continuation(
            solve_at,
            alphas,
            init=init,
            starts=starts,
            after=after,
            return_warm=True,
            unfinished=lambda a: unfinished_result(a, math.nan, "nuclear", float(target.Q0)),
            failures="mark",
            name="excess_risk_curve",
        )
    curve = _assemble(target, alphas, lams, rows)
    return (curve, warms) if return_warm else curve


def _assemble(target, alphas, lams, rows) -> ExcessRiskCurve:
    """The curve from the finished ``rows`` (by index), unfinished rows elsewhere."""
    n_modes = len(_modes_of(target)[0])
    full = [rows.get(i) or _unfinished_row(lams[i], n_modes) for i in range(alphas.size)]
    return ExcessRiskCurve(alphas, *(np.array(col) for col in zip(*full, strict=True)))


def _unfinished_row(lm, n_modes):
    """The row of a point not finished (interrupted, past the time limit, or failed)."""
    nan = math.nan
    return (float(lm), nan, nan, nan, nan, nan, nan, nan, -1, np.full(n_modes, nan), False)
