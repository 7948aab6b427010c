"""Least-squares power-law fits ``y = C x^{-exponent}`` in log-log coordinates."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from attnlib import _checks

__all__ = ["PowerLawFit", "fit_power_law"]


class PowerLawFit(NamedTuple):
    """Least-squares fit of ``y = C x^{-exponent}`` in log-log coordinates.

    Error model: ``log y_i = log C - exponent log x_i + eps_i`` with i.i.d. centred
    ``eps_i`` of unknown variance ``s^2``, estimated from the residuals with ``n - 2``
    degrees of freedom; ``stderr = s / sqrt(sum_i (log x_i - mean log x)^2)`` is the
    ordinary-least-squares standard error of the slope. A deterministic curve (state
    evolution) is not a pure power law: it has steps where modes enter (correlated
    residuals) and a slowly drifting local slope (corrections to scaling at the ends of
    the window). ``drift`` measures the latter: half the difference between the
    exponents fitted on the first and on the second half of the points (``0`` for fewer
    than 6 points). ``uncertainty = sqrt(stderr^2 + drift^2)`` is the error bar to
    compare a derived exponent with.

    Attributes: ``exponent``, ``stderr``, ``drift``, ``uncertainty``, ``prefactor`` (``C``),
    ``n`` (points), ``log_residual_rms`` (``s``), ``x_range`` (``(min x, max x)``).
    """

    exponent: float
    stderr: float
    drift: float
    uncertainty: float
    prefactor: float
    n: int
    log_residual_rms: float
    x_range: tuple


def _ols(lx, ly):
    mx = lx.mean()
    sxx = float(np.sum((lx - mx) ** 2))
    if sxx <= 0:
        raise ValueError("x must take at least two distinct values in the window")
    slope = float(np.sum((lx - mx) * (ly - ly.mean())) / sxx)
    icpt = float(ly.mean() - slope * mx)
    res = ly - (icpt + slope * lx)
    s = float(math.sqrt(np.sum(res**2) / (lx.size - 2)))
    return slope, icpt, s, s / math.sqrt(sxx)


def fit_power_law(x, y, *, x_min: float | None = None, x_max: float | None = None) -> PowerLawFit:
    """Fit ``y ~ C x^{-exponent}`` (decay exponent, positive for decreasing ``y``).

    Args:
      x, y: 1-d arrays of the same length, ``x > 0`` and ``y > 0`` (finite).
      x_min, x_max: optional window; only points with ``x_min <= x <= x_max`` are used.

    Returns:
      :class:`PowerLawFit` (see it for the error model). Needs at least 3 points.
    """
    x = np.asarray(_checks.finite_array("x", x, ndim=1), dtype=float)
    y = np.asarray(
        _checks.finite_array("y", y, ndim=1, shape=(x.shape[0],), against="x"), dtype=float
    )
    if np.any(x <= 0):
        raise ValueError("x must be > 0 for a log-log fit")
    if np.any(y <= 0):
        raise ValueError("y must be > 0 for a log-log fit (subtract e0 only where e > e0)")
    keep = np.ones(x.shape, dtype=bool)
    if x_min is not None:
        keep &= x >= _checks.positive("x_min", x_min)
    if x_max is not None:
        keep &= x <= _checks.positive("x_max", x_max)
    if keep.sum() < 3:
        raise ValueError(
            f"fit_power_law needs at least 3 points (x, y) in the window [x_min, x_max], "
            f"got {keep.sum()}"
        )
    order = np.argsort(x[keep])
    lx, ly = np.log(x[keep][order]), np.log(y[keep][order])
    n = lx.size
    slope, icpt, s, se_ = _ols(lx, ly)
    drift = 0.0
    if n >= 6:
        h = (n + 1) // 2
        drift = 0.5 * abs(_ols(lx[:h], ly[:h])[0] - _ols(lx[n - h :], ly[n - h :])[0])
    return PowerLawFit(
        exponent=-slope,
        stderr=se_,
        drift=drift,
        uncertainty=math.sqrt(se_**2 + drift**2),
        prefactor=math.exp(icpt),
        n=int(n),
        log_residual_rms=s,
        x_range=(float(np.exp(lx[0])), float(np.exp(lx[-1]))),
    )
