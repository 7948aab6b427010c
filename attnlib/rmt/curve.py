"""Points on Biane's curve ``u -> x(u) = Re H(u + i v(u))`` (see :mod:`attnlib.rmt`)."""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

from attnlib.rmt.law import _F0, _G, _TINY, _F_Fy, _G_real, _Law
from attnlib.rmt.roots import _bracketed_newton

__all__: list[str] = []  # helpers of attnlib.rmt's public functions, no public name

# |1/F - Delta| at this multiple of eps Delta is rounding: y is then the root to float64
_ROUND = 4.0 * np.finfo(float).eps


def _lower_y(law: _Law, u, Delta):
    """Cold start of the ``y = v(u)^2`` iteration below the root, where Newton's method on
    the concave increasing ``1/F - Delta`` increases monotonically to it (no overshoot
    into the bisection). For an atomic ``mu`` the largest of three lower bounds: one
    Newton step from ``y = 0``, ``Delta - int mu(dt) (u - t)^2`` (Jensen) and
    ``max_t (mu_t Delta - (u - t)^2)`` (one atom); ``Delta / 2`` where none is positive
    and for the Wishart law."""
    y = np.full(u.shape, 0.5 * Delta)
    if law.kind != "atoms" or u.size * law.atoms.size > (1 << 21):
        return y
    d2 = np.subtract.outer(u, law.atoms) ** 2
    r2 = 1.0 / d2  # inf on an atom: then the one-atom bound decides
    F0 = r2 @ law.weights
    step = (Delta * F0 - 1.0) * F0 / ((r2 * r2) @ law.weights)
    low = np.maximum(Delta - d2 @ law.weights, np.max(law.weights * Delta - d2, axis=1))
    low = np.maximum(low, np.where(np.isfinite(step), step, 0.0))
    return np.where(low > 0, np.minimum(low, Delta), y)


def _solve_y(law: _Law, u, Delta, y0=None, rtol=1e-14, maxiter=100):
    """``y = v(u)^2``: the root of ``1/F(u, y) = Delta`` (0 where ``F(u, 0) <= 1/Delta``).

    ``1/F(u, .)`` is a complete Bernstein function of ``y`` (``F`` is a Stieltjes
    function), hence concave and increasing; the root lies in ``(0, Delta]``. Newton's
    method on ``1/F - Delta`` is safeguarded by bisection in ``log y``.
    """
    u = np.asarray(u, dtype=float)
    y = np.zeros(u.shape)
    with np.errstate(all="ignore"):
        idx = np.flatnonzero(~(_F0(law, u) * Delta <= 1.0))
        if idx.size == 0:
            return y
        ua, lo, hi = u.ravel()[idx], np.zeros(idx.size), np.full(idx.size, float(Delta))
        ya = _lower_y(law, ua, Delta) if y0 is None else np.full(idx.size, 0.5 * Delta)
        if y0 is not None:
            g = np.asarray(y0, dtype=float).ravel()[idx]
            ok = np.isfinite(g) & (g > 0)
            ya[ok] = np.clip(g[ok], 1e-30 * Delta, Delta)
        out = np.empty(idx.size)
        pos = np.arange(idx.size)  # positions in out of the active entries
        for _ in range(maxiter):
            F, Fy = _F_Fy(law, ua, ya)
            chi = 1.0 / F - Delta
            up = chi >= 0
            hi = np.where(up, ya, hi)
            lo = np.where(up, lo, ya)
            yn = ya + chi * F * F / Fy
            bad = ~((yn > lo) & (yn < hi))
            if bad.any():
                yn = np.where(bad, np.sqrt(np.maximum(lo, 1e-12 * hi) * hi), yn)
            zero = np.abs(chi) <= _ROUND * Delta  # the root is as exact as float64 allows
            done = (np.abs(yn - ya) <= rtol * ya) | zero | (hi - lo <= rtol * hi)
            ya = np.where(zero, ya, yn)
            if done.all():
                out[pos] = ya
                pos = pos[:0]
                break
            if done.any():
                out[pos[done]] = ya[done]
                keep = ~done
                pos, ua, ya, lo, hi = pos[keep], ua[keep], ya[keep], lo[keep], hi[keep]
    if pos.size:
        out[pos] = ya
        warnings.warn(
            f"rmt: v(u) did not converge at {pos.size} points (Delta={Delta:g})",
            RuntimeWarning,
            stacklevel=3,
        )
    y.ravel()[idx] = out
    return y


class _Curve(NamedTuple):
    u: np.ndarray
    v: np.ndarray
    x: np.ndarray
    G: np.ndarray  # G_mu(u + i v) = G_R(x + i0)
    dxdu: np.ndarray


def _curve(law: _Law, Delta, u, y0=None) -> _Curve:
    y = _solve_y(law, u, Delta, y0)
    v = np.sqrt(y)
    w = u + 1j * v
    G, G1 = _G(law, w, 1)
    on = v > 0
    G = np.where(on, G, _G_real(law, u)[0] + 0j)
    Hp = 1 + Delta * G1
    with np.errstate(all="ignore"):
        dxdu = np.where(on, np.abs(Hp) ** 2 / Hp.real, Hp.real)
    x = u + Delta * G.real
    return _Curve(u, v, x, G, dxdu)


def _u_of_x(law: _Law, Delta, comp, x, k):
    """Curve parameter ``u`` with ``x(u) = x`` for ``x`` in support interval ``k`` (arrays)."""
    ua, ub = comp.u_lo[k], comp.u_hi[k]
    xa, xb = comp.x_lo[k], comp.x_hi[k]
    # initial guess: a semicircle-like profile between the edges
    frac = np.clip((x - xa) / np.maximum(xb - xa, _TINY), 0.0, 1.0)
    u0 = ua + (ub - ua) * frac
    ywarm = np.full(x.shape, np.nan)

    def fun(u, idx):
        c = _curve(law, Delta, u, ywarm[idx])
        ywarm[idx] = c.v**2
        return c.x - x[idx], c.dxdu

    return _bracketed_newton(fun, ua, ub, -1.0, x0=u0, xtol=1e-15)


def _u_at_x(law: _Law, Delta, comp, x, k, maxiter=40):
    """:func:`_u_of_x` by Newton's method on ``H(omega) = x`` in the complex plane.

    Any root with ``Im omega > 0`` is the subordination function ``omega(x + i0)``, so
    ``u = Re omega``. Started from the curve point at the interpolated guess, it converges
    quadratically inside the support; entries where it does not (near an edge, where
    ``H'`` vanishes) or that leave the upper half-plane fall back to :func:`_u_of_x`.
    """
    x = np.asarray(x, dtype=float)
    ua, ub = comp.u_lo[k], comp.u_hi[k]
    frac = np.clip((x - comp.x_lo[k]) / np.maximum(comp.x_hi[k] - comp.x_lo[k], _TINY), 0.0, 1.0)
    u0 = ua + (ub - ua) * frac
    w = u0 + 1j * np.sqrt(_solve_y(law, u0, Delta))
    done = np.zeros(x.shape, dtype=bool)
    with np.errstate(all="ignore"):
        for _ in range(maxiter):
            G, G1 = _G(law, w, 1)
            step = (w + Delta * G - x) / (1 + Delta * G1)
            w = np.where(done, w, w - step)
            small = np.abs(step) <= 1e-13 * np.maximum(1.0, np.abs(w))
            if np.all(done | small):
                G, G1 = _G(law, w, 1)  # one more step: quadratic convergence to rounding
                w = w - (w + Delta * G - x) / (1 + Delta * G1)
                done |= small
                break
            done |= small
        good = done & np.isfinite(w) & (w.imag > 0) & (w.real >= ua) & (w.real <= ub)
    u = w.real.copy()
    if not np.all(good):
        bad = np.flatnonzero(~good)
        u[bad] = _u_of_x(law, Delta, comp, x[bad], k)
    return u
