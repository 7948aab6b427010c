"""Points on Biane's curve ``u -> x(u) = Re H(u + i v(u))`` (see :mod:`attnlib.rmt`)."""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

from attnlib.rmt.law import _F0, _G, _TINY, _F_Fy, _G_real, _Law
from attnlib.rmt.roots import _bracketed_newton


def _solve_y(law: _Law, u, Delta, y0=None, rtol=1e-14, maxiter=100):
    """``y = v(u)^2``: the root of ``1/F(u, y) = Delta`` (0 where ``F(u, 0) <= 1/Delta``).

    ``1/F(u, .)`` is a complete Bernstein function of ``y`` (``F`` is a Stieltjes
    function), hence concave and increasing; the root lies in ``(0, Delta]``. Newton's
    method on ``1/F - Delta`` is safeguarded by bisection in ``log y``.
    """
    u = np.asarray(u, dtype=float)
    with np.errstate(all="ignore"):
        F0 = _F0(law, u)
    inside = ~(F0 * Delta <= 1.0)
    y = np.zeros(u.shape)
    idx = np.flatnonzero(inside)
    if idx.size == 0:
        return y
    lo = np.zeros(idx.size)
    hi = np.full(idx.size, float(Delta))
    yi = np.full(idx.size, 0.5 * Delta)
    if y0 is not None:
        g = np.asarray(y0, dtype=float)[idx]
        ok = np.isfinite(g) & (g > 0)
        yi[ok] = np.clip(g[ok], 1e-30 * Delta, Delta)
    act = np.arange(idx.size)
    for _ in range(maxiter):
        if act.size == 0:
            break
        with np.errstate(all="ignore"):
            F, Fy = _F_Fy(law, u[idx[act]], yi[act])
            chi = 1.0 / F - Delta
            dchi = -Fy / F**2
            pos = chi >= 0
            hi[act] = np.where(pos, yi[act], hi[act])
            lo[act] = np.where(pos, lo[act], yi[act])
            yn = yi[act] - chi / dchi
        l_, h_ = lo[act], hi[act]
        bad = ~((yn > l_) & (yn < h_))
        geo = np.sqrt(np.maximum(l_, 1e-12 * h_) * h_)
        yn = np.where(bad, geo, yn)
        done = (np.abs(yn - yi[act]) <= rtol * yi[act]) | (chi == 0) | (h_ - l_ <= rtol * h_)
        yi[act] = np.where(chi == 0, yi[act], yn)
        act = act[~done]
    if act.size:
        warnings.warn(
            f"rmt: v(u) did not converge at {act.size} points (Delta={Delta:g})",
            RuntimeWarning,
            stacklevel=3,
        )
    y[idx] = yi
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
