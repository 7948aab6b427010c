r"""State evolution of the LASSO (vector compressed sensing), the comparison of the
scaling-laws chapter (book/08_scaling_laws).

``y = A x0 + sqrt(noise) w`` with ``A`` an ``n x N`` matrix of i.i.d. ``N(0, 1/N)``
entries (each measurement has variance ``||x0||^2 / N``, like a pre-activation ``h``),
``delta = n / N``, and the LASSO ``min_x (1/2) ||y - A x||^2 + lam ||x||_1``. The
entries of ``x0`` follow the target's spectral measure (a fraction ``pi_k`` of the
entries equals ``lambda_k``), so the vector and the matrix problems share their
"spectrum". The state evolution of Bayati and Montanari / Donoho, Maleki and
Montanari (:func:`lasso_se`) reads, with the soft threshold
``eta(x; theta) = sign(x) (|x| - theta)_+`` and ``X = X0 + tau Z``::

    tau^2 = (noise + E[(eta(X; theta) - X0)^2]) / delta,
    theta = lam / (delta - P(|X| > theta)),

the second line being the calibration between ``lam`` and the threshold (the LASSO
normalisation above is the textbook one with ``A -> A / sqrt(delta)``,
``lam -> lam / delta``, ``noise -> noise / delta``).
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np
import scipy.optimize
import scipy.special

from attnlib import _checks
from attnlib.scaling.schedule import LamSchedule
from attnlib.targets import atoms_and_weights

__all__ = ["LassoSE", "lasso_se", "lasso_curve"]


def _soft_stats(s, tau, theta):
    """Per-atom ``(E[(eta(s + tau Z; theta) - s)^2], P(|s + tau Z| > theta))``, ``Z ~ N(0, 1)``."""
    s = np.abs(np.asarray(s, dtype=float))  # the soft threshold is odd: only |s| matters
    a = (theta - s) / tau  # upper crossing, Z > a
    b = (-theta - s) / tau  # lower crossing, Z < b
    Qa, Pb = scipy.special.ndtr(-a), scipy.special.ndtr(b)
    pa, pb = (np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi) for z in (a, b))  # densities
    # Z > a: error tau Z - theta;  Z < b: error tau Z + theta;  in between: error -s
    up = tau**2 * (a * pa + Qa) - 2 * tau * theta * pa + theta**2 * Qa
    lo = tau**2 * (Pb - b * pb) - 2 * tau * theta * pb + theta**2 * Pb
    mid = s**2 * np.clip(1.0 - Qa - Pb, 0.0, 1.0)
    return np.maximum(up, 0.0) + np.maximum(lo, 0.0) + mid, Qa + Pb


class LassoSE(NamedTuple):
    """Fixed point of the LASSO state evolution (see the module docstring).

    ``delta = n / N``, ``lam``, ``noise`` (variance of the measurement noise); ``tau``
    (effective noise of the scalar problem ``X0 + tau Z``), ``theta`` (soft threshold);
    ``mse = ||x_hat - x0||^2 / N`` (also the test error ``E (a.(x_hat - x0))^2``),
    ``dof`` = fraction of non-zero entries of ``x_hat``; ``recovered`` (per atom of the
    target's measure, in its order): fraction of the entries equal to that atom that
    are non-zero in ``x_hat``; ``converged``, ``residual`` (relative residual of the
    ``tau`` equation). Not converged: every field but ``delta``, ``lam``, ``noise``,
    ``converged`` and ``residual`` is NaN (the theory failure policy).
    """

    delta: float
    lam: float
    noise: float
    tau: float
    theta: float
    mse: float
    dof: float
    recovered: np.ndarray
    converged: bool
    residual: float


def _theta_of_tau(s, p, delta, lam, tau):
    """Calibrated threshold: the root of ``theta (delta - dof) = lam`` with ``dof < delta``."""

    def dof(th):
        return float(np.sum(p * _soft_stats(s, tau, th)[1]))

    smax = float(np.max(np.abs(s)))
    # theta_delta: where dof = delta (0 if delta >= 1); k(theta) increases beyond it
    lo = 0.0
    if delta < 1.0:
        hi = smax + 10 * tau
        while dof(hi) > delta:
            hi *= 2
        lo = scipy.optimize.brentq(lambda th: dof(th) - delta, 0.0, hi, xtol=1e-15, rtol=1e-14)
    hi = max(2 * lo, lam / delta + smax + 10 * tau, 1e-300)
    while hi * (delta - dof(hi)) < lam:
        hi *= 2
    return scipy.optimize.brentq(
        lambda th: th * (delta - dof(th)) - lam, lo, hi, xtol=1e-300, rtol=1e-14
    )


def _bracket(resid, lo, hi):
    """Widen ``[lo, hi]`` (log tau) by decades until ``resid(lo) >= 0 >= resid(hi)``;
    ``None`` and why where no decade up to ``1e250`` (down to ``1e-250``) brackets it."""
    while resid(hi) > 0:
        hi += math.log(10.0)
        if hi > math.log(1e250):
            return None, "no fixed point bracketed (residual > 0 at large tau)"
    while resid(lo) < 0:
        lo -= math.log(10.0)
        if lo < math.log(1e-250):
            return None, "no fixed point bracketed (residual < 0 at small tau)"
    return (lo, hi), ""


def _failed(s, delta, lam, noise, res, why) -> LassoSE:
    """The theory failure policy: NaN fields, ``converged=False`` and a warning."""
    warnings.warn(
        f"lasso_se: {why} at delta={delta}, lam={lam} (fields are NaN)",
        RuntimeWarning,
        stacklevel=3,
    )
    nan = math.nan
    return LassoSE(delta, lam, noise, nan, nan, nan, nan, np.full(np.shape(s), nan), False, res)


RANGE = (1e-100, 1e100)  # of delta, lam and noise: the scalar equations stay in float range


def lasso_se(
    target, delta: float, lam: float, noise: float = 0.0, *, tol: float = 1e-12
) -> LassoSE:
    r"""State evolution of the LASSO for a vector whose entries follow ``target``'s spectrum.

    Solves ``tau^2 = (noise + mse(tau, theta)) / delta``, ``theta(tau)`` the calibrated
    threshold on the branch ``P(|X| > theta) < delta``, by Brent's method in ``log tau``
    (the residual is positive as ``tau -> 0`` and negative as ``tau -> infinity``), with
    closed Gaussian forms for the atoms (Bayati and Montanari 2011; Donoho, Maleki and
    Montanari 2009).

    Args:
      target: a :class:`~attnlib.targets.Target` or :class:`~attnlib.targets.SpectralMeasure`
        (the law of the entries of ``x0``; signs do not matter).
      delta: ``n / N > 0``.
      lam: penalty ``> 0``.
      noise: measurement-noise variance ``>= 0``.
      tol: relative tolerance on ``tau``.

    Returns the :class:`LassoSE` at the fixed point; where the relative residual of the
    ``tau`` equation stays above ``1e-6`` (or no fixed point is bracketed), NaN fields
    with ``converged=False`` and a ``RuntimeWarning`` (the theory failure policy).
    """
    s, p = atoms_and_weights(target)
    delta = _checks.in_interval("delta", delta, *RANGE, low_open=False)
    lam = _checks.in_interval("lam", lam, *RANGE, low_open=False)
    noise = _checks.in_interval("noise", noise, 0.0, RANGE[1], low_open=False)
    tol = _checks.positive("tol", tol)
    Q = float(np.sum(p * s * s))
    scale = math.sqrt(max(Q, noise, 1e-300))

    def resid(logtau):
        tau = math.exp(logtau)
        th = _theta_of_tau(s, p, delta, lam, tau)
        m = float(np.sum(p * _soft_stats(s, tau, th)[0]))
        return (noise + m) / delta / tau**2 - 1.0

    ends, why = _bracket(
        resid, math.log(1e-12 * scale), math.log(10 * scale / min(1.0, math.sqrt(delta)))
    )
    if ends is None:
        return _failed(s, delta, lam, noise, math.nan, why)
    lo, hi = ends
    logtau = scipy.optimize.brentq(resid, lo, hi, xtol=tol, rtol=tol, maxiter=500)
    tau = math.exp(logtau)
    th = _theta_of_tau(s, p, delta, lam, tau)
    mse_k, dof_k = _soft_stats(s, tau, th)
    res = abs(resid(logtau))
    ok = res < 1e-6
    if not ok:
        return _failed(s, delta, lam, noise, float(res), f"residual {res:.2e}")
    mse, dof = float(np.sum(p * mse_k)), float(np.sum(p * dof_k))
    recovered = np.asarray(dof_k, dtype=float)
    return LassoSE(delta, lam, noise, tau, float(th), mse, dof, recovered, bool(ok), float(res))


def lasso_curve(target, deltas, lam, noise: float = 0.0) -> LassoSE:
    """:func:`lasso_se` along ``deltas``; ``lam`` a float or a :class:`LamSchedule` (of ``delta``).

    Returns a :class:`LassoSE` whose fields are arrays over ``deltas`` (``recovered``
    has shape ``(len(deltas), n_atoms)``).
    """
    deltas = np.asarray(_checks.finite_array("deltas", deltas), dtype=float).reshape(-1)
    if deltas.size == 0 or np.any(deltas <= 0):
        raise ValueError(f"deltas must be a non-empty list of values > 0, got {deltas}")
    if isinstance(lam, LamSchedule):
        lams = lam(deltas)
    else:
        lams = np.full(deltas.shape, _checks.positive("lam", lam))
    rs = [
        lasso_se(target, float(d_), float(l_), noise) for d_, l_ in zip(deltas, lams, strict=True)
    ]
    return LassoSE(*(np.array([getattr(r, f) for r in rs]) for f in LassoSE._fields))
