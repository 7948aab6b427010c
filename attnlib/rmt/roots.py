"""Vectorized scalar root finding: Newton's method safeguarded by a bracket."""

from __future__ import annotations

import warnings

import numpy as np

__all__: list[str] = []  # helpers of attnlib.rmt's public functions, no public name


def _bracketed_newton(fun, a, b, fa_sign, *, x0=None, xtol=1e-14, maxiter=200, name="rmt"):
    """Solve ``fun(x)[0] = 0`` for each entry, given brackets ``[a, b]`` (either order).

    ``fun(x, mask)`` returns ``(f, df)`` at ``x[mask]``; ``fa_sign`` is the sign of ``f``
    at ``a``. Newton steps that leave the bracket are replaced by bisection. Entries
    still unconverged after ``maxiter`` steps are returned as they are, with a
    ``RuntimeWarning`` that gives their number, the largest ``|f|`` and bracket width.
    """
    shape = np.broadcast_shapes(np.shape(a), np.shape(b), np.shape(x0) if x0 is not None else ())
    a = np.array(np.broadcast_to(a, shape), dtype=float)
    b = np.array(np.broadcast_to(b, shape), dtype=float)
    x = 0.5 * (a + b) if x0 is None else np.clip(x0, np.minimum(a, b), np.maximum(a, b))
    x = np.array(np.broadcast_to(x, shape), dtype=float)
    active = np.ones(x.shape, dtype=bool)
    resid = np.zeros(x.shape)
    sa = np.broadcast_to(np.sign(fa_sign), x.shape)
    for _ in range(maxiter):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        f, df = fun(x[idx], idx)
        f = np.where(np.isnan(f), sa[idx] * np.inf, f)
        resid[idx] = np.abs(f)
        same = np.sign(f) == sa[idx]
        a[idx] = np.where(same, x[idx], a[idx])
        b[idx] = np.where(same, b[idx], x[idx])
        with np.errstate(all="ignore"):
            xn = x[idx] - f / df
        lo_, hi_ = np.minimum(a[idx], b[idx]), np.maximum(a[idx], b[idx])
        bad = ~((xn > lo_) & (xn < hi_))
        xn = np.where(bad, 0.5 * (a[idx] + b[idx]), xn)
        tol = xtol(x[idx], idx) if callable(xtol) else xtol * np.maximum(1.0, np.abs(x[idx]))
        done = (np.abs(xn - x[idx]) <= tol) | (f == 0) | (hi_ - lo_ <= tol)
        x[idx] = np.where(f == 0, x[idx], xn)
        active[idx[done]] = False
    if np.any(active):
        _warn_unconverged(name, active, resid, np.abs(b - a), maxiter)
    return x


def _warn_unconverged(name, active, resid, width, maxiter):
    warnings.warn(
        f"{name}: bracketed Newton did not converge at {int(np.sum(active))} points after "
        f"{maxiter} steps (largest residual |f| = {float(np.max(resid[active])):.3e}, "
        f"largest bracket width {float(np.max(width[active])):.3e})",
        RuntimeWarning,
        stacklevel=3,
    )
