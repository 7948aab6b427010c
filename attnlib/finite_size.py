"""Finite-size extrapolation: a straight line in ``1/d`` through simulation means.

A quantity measured at finite ``d`` (an error, a loss) approaches its ``d -> infinity``
limit as ``y(d) = a + b/d + O(1/d^2)``; the book compares the intercept ``a`` and its
error bar with the state evolution's prediction. :func:`fit_inverse_d` is the weighted
least-squares line the chapters use:

    >>> from attnlib import finite_size
    >>> fit = finite_size.fit_inverse_d([40, 60, 100], [0.250, 0.240, 0.232], [0.002, 0.002, 0.001])
    >>> round(fit.a, 3), round(fit.a_err, 3)
    (0.22, 0.002)

The error bars are those of weighted least squares, multiplied by
``sqrt(chi2 / dof)`` when the reduced chi-square exceeds 1 (the points scatter more
about the line than their error bars allow: a ``1/d^2`` term, or error bars too
small), never shrunk when it is below 1. Without error bars (``sem=None``, e.g. one
value per seed and ``d``) the line is unweighted and the errors come from the
scatter of the points about it (``dof >= 1`` needed).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from attnlib import _checks

__all__ = ["InverseDFit", "fit_inverse_d", "mean_and_sem"]


class InverseDFit(NamedTuple):
    """A fit ``y(d) = a + b/d``.

    ``a``: the extrapolation to ``d -> infinity``, ``a_err`` its standard error; ``b``,
    ``b_err``: the slope in ``1/d``; ``chi2``: the reduced chi-square ``sum w r^2 / dof``
    (residuals ``r`` weighted by ``1/sem^2``; ``0`` when ``dof = 0``, NaN without
    ``sem``); ``dof = len(d) - 2``; ``rescaled``: whether the errors were multiplied by
    ``sqrt(chi2)`` (weighted fits with ``chi2 > 1``, and every unweighted fit).
    """

    a: float
    b: float
    a_err: float
    b_err: float
    chi2: float
    dof: int
    rescaled: bool

    def __call__(self, d):
        """The fitted line at ``d`` (scalar or array)."""
        return self.a + self.b / np.asarray(d, dtype=float)

    def tension(self, value: float, err: float = 0.0) -> float:
        """``(a - value) / sqrt(a_err^2 + err^2)``: how many standard errors separate the
        extrapolation from a prediction ``value`` (with its own error ``err``)."""
        value = _checks.finite("value", value)
        err = _checks.nonnegative("err", err)
        return (self.a - value) / math.hypot(self.a_err, err)


def _inputs(d, y, sem):
    d = np.asarray(_checks.finite_array("d", _checks.numeric_array("d", d, "biuf"), ndim=1), float)
    y = np.asarray(_checks.finite_array("y", _checks.numeric_array("y", y, "biuf"), ndim=1), float)
    if np.any(d <= 0):
        raise ValueError(f"d must hold sizes > 0, got {_checks._fmt(d)}")
    if y.shape != d.shape:
        raise ValueError(f"y must have the shape {d.shape} of d, got {y.shape}")
    if len(np.unique(d)) < 2:
        raise ValueError(f"d must hold at least two different sizes, got {_checks._fmt(d)}")
    if sem is not None:
        sem = np.asarray(_checks.numeric_array("sem", sem, "biuf"), float)
        if sem.shape != d.shape or not np.all(np.isfinite(sem) & (sem > 0)):
            raise ValueError(f"sem must hold finite values > 0, one per d, got {_checks._fmt(sem)}")
    elif len(d) < 3:
        raise ValueError("without sem the errors come from the scatter: give at least 3 points")
    return d, y, sem


def fit_inverse_d(d, y, sem=None, *, rescale: bool = True) -> InverseDFit:
    """Weighted least-squares line ``y = a + b/d``.

    Args:
      d: sizes (``> 0``, at least two different ones; repeated sizes allowed).
      y: the measured values, one per entry of ``d`` (means over seeds, or single runs).
      sem: their standard errors (weights ``1/sem^2``), or ``None`` for an unweighted
        fit whose errors come from the residual scatter (at least 3 points).
      rescale: multiply the errors by ``sqrt(chi2)`` when the reduced chi-square of a
        weighted fit exceeds 1 (``False``: the bare weighted least-squares errors).

    Returns:
      :class:`InverseDFit`.
    """
    d, y, sem = _inputs(d, y, sem)
    w = np.ones_like(y) if sem is None else 1.0 / sem**2
    X = np.stack([np.ones_like(d), 1.0 / d], axis=1)
    cov = np.linalg.inv(X.T @ (w[:, None] * X))
    a, b = cov @ X.T @ (w * y)
    dof = len(d) - 2
    chi2 = float(np.sum(w * (y - a - b / d) ** 2) / max(dof, 1))
    if sem is None:
        rescaled, factor, chi2_out = True, chi2, math.nan
    else:
        rescaled = bool(rescale and chi2 > 1.0)
        factor, chi2_out = (chi2 if rescaled else 1.0), chi2
    err = np.sqrt(np.diag(cov) * factor)
    return InverseDFit(float(a), float(b), float(err[0]), float(err[1]), chi2_out, dof, rescaled)


def mean_and_sem(values, axis: int = -1):
    """Mean and standard error of the mean (``ddof = 1``) over ``axis`` (the seeds)."""
    v = np.asarray(_checks.numeric_array("values", values, "biuf"), float)
    n = v.shape[axis]
    if n < 2:
        raise ValueError(f"values must hold at least 2 runs along axis {axis}, got {n}")
    return v.mean(axis=axis), v.std(axis=axis, ddof=1) / math.sqrt(n)
