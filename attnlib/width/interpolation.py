r"""Interpolation threshold of the factorised student of width ``kappa`` (rank-constrained).

As for the convex ERM (:mod:`attnlib.thresholds.interpolation`): with noisy labels and
``lam -> 0+`` the training loss is zero below ``alpha_interp(kappa)`` and has a positive,
``lam``-independent limit above it, which is the ``lam = 0`` fixed point of the
(rank-constrained) state evolution, with a finite ``v``; below the threshold that
fixed point does not exist. :func:`interpolation_bracket` bisects on its existence.

Bounds: ``alpha_interp(kappa) <= (kappa - kappa^2 / 2) / m_eff`` (``n m_eff`` generic
equations cannot be fitted by the ``(kappa - kappa^2/2) d^2``-dimensional set of PSD
matrices of rank ``<= kappa d``) and ``alpha_interp(kappa) <= alpha_interp`` of the
convex ERM (:func:`attnlib.thresholds.interpolation_small_noise` bounds that one);
equality with the convex value once ``kappa`` exceeds the rank fraction of the
``lam = 0`` fixed point there.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

from attnlib import _checks, se, thresholds
from attnlib.width.solve import solve_constrained

__all__ = ["WidthInterpolation", "interpolation_bracket"]

_RESIDUAL_OK = 1e-5
_V_MAX = 1e8
_PROBE = ((0.5, 150),)  # one attempt per probe: below the threshold it runs to max_iter


class WidthInterpolation(NamedTuple):
    """``lo < alpha_interp(kappa) <= hi``; ``fixed_point`` the ``lam = 0`` SE at ``hi``
    (an :class:`attnlib.se.SEResult`); ``alpha = (lo + hi) / 2``; ``n_solves``."""

    alpha: float
    lo: float
    hi: float
    fixed_point: object
    n_solves: int


def _lam0(task, target, alpha, kappa, init, kw):
    """The ``lam = 0`` rank-constrained fixed point at ``alpha`` or ``None`` (none exists)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", se.SEConvergenceWarning)
        try:
            r = solve_constrained(task, target, alpha, 0.0, kappa, init, attempts=_PROBE, **kw)
        except RuntimeError:
            return None
    fixed = bool(r.converged) or r.residual < _RESIDUAL_OK
    if not (fixed and math.isfinite(r.v) and r.v < _V_MAX and r.train_loss > 0):
        return None
    return r


def interpolation_bracket(
    task, target, kappa: float, *, xtol: float = 1e-3, **kw
) -> WidthInterpolation:
    r"""Interpolation threshold of the width-``kappa`` student at the task's noise.

    Bisection in ``alpha`` on "the ``lam = 0`` rank-constrained state evolution has a
    fixed point with finite ``v`` and positive train loss", from the bracket
    ``[0, 1.02 t / m_eff]`` with ``t`` the tangent-cone dimension of the target
    (:func:`attnlib.thresholds.tangent_cone_dimension`; the start there is the convex
    fixed point), lowered to ``1.02 (kappa - kappa^2/2) / m_eff`` when the fixed point
    exists there; each probe is warm-started from the fixed point at the upper end,
    until ``hi - lo <= xtol``. ``RuntimeError`` if there is no fixed point at the top.
    Keyword arguments go to the state evolution (``n_qmc``, ``tol``, ...).

    Args:
      task: a task with noisy labels (``task.noise > 0``); target: a PSD target.
      kappa: student width in ``(0, 1]``; xtol: absolute tolerance in ``alpha``.
    """
    kappa = _checks.in_interval("kappa", kappa, 0.0, 1.0)
    xtol = _checks.positive("xtol", xtol)
    if getattr(task, "noise", 0.0) <= 0.0:
        raise ValueError("task must have noisy labels (task.noise > 0) for interpolation")
    top = 1.02 * thresholds.interpolation_small_noise(task, target)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the convex start, probed far away
        start = se.solve(task, target, top, 0.0, on_fail="warn", **kw)
    point = _lam0(task, target, top, kappa, start if start.converged else None, kw)
    if point is None:
        raise RuntimeError(
            f"interpolation_bracket: no lam = 0 fixed point at alpha = {top:.4g} (kappa = {kappa})"
        )
    hi = top
    bound = (kappa - kappa * kappa / 2) / task.m_eff  # counting bound: no fit above it
    if bound < hi:
        r = _lam0(task, target, 1.02 * bound, kappa, point, kw)
        if r is not None:
            hi, point = 1.02 * bound, r
    lo, n = 0.0, 1
    while hi - lo > xtol:
        mid = 0.5 * (lo + hi)
        r = _lam0(task, target, mid, kappa, point, kw)
        n += 1
        if r is None:
            lo = mid
        else:
            hi, point = mid, r
    return WidthInterpolation(0.5 * (lo + hi), lo, hi, point, n)
