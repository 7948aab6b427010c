"""Stieltjes transform ``G_R``, density and distribution function of ``rho_R``.

Subordination: ``G_R(z) = G_mu(omega(z))`` with ``omega(z) = z - Delta G_R(z)``
(see :mod:`attnlib.rmt`).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from attnlib import _checks
from attnlib.rmt.curve import _curve, _u_of_x
from attnlib.rmt.law import _G, _G_real, _Law
from attnlib.rmt.roots import _bracketed_newton
from attnlib.rmt.support import _Components, _components, _prepare

__all__ = ["stieltjes", "density", "cdf"]


def _omega_upper(law: _Law, Delta, z, maxiter=500, tol=1e-13):
    """``omega(z)`` for ``Im z > 0``: Newton on ``H(omega) = z`` with fixed-point fallback.

    Any root with ``Im omega > 0`` is the subordination function (for such a root
    ``Delta F(omega) < 1`` and ``H`` is injective there), so Newton only has to stay in
    ``{Im omega > Im z}``, which the fixed-point map ``omega -> z - Delta G_mu(omega)`` preserves.
    """
    w = z - Delta * _G(law, z)[0]
    active = np.arange(z.size)
    for _ in range(maxiter):
        if active.size == 0:
            break
        za, wa = z[active], w[active]
        G, G1 = _G(law, wa, 1)
        Phi = wa + Delta * G - za
        with np.errstate(all="ignore"):
            wn = wa - Phi / (1 + Delta * G1)
        bad = ~np.isfinite(wn) | (wn.imag <= za.imag)
        wn = np.where(bad, za - Delta * G, wn)
        done = np.abs(wn - wa) <= tol * np.maximum(1.0, np.abs(wa))
        w[active] = wn
        active = active[~done]
    if active.size:
        warnings.warn(
            f"rmt.stieltjes: subordination did not converge at {active.size} points",
            RuntimeWarning,
            stacklevel=3,
        )
    return w


def _omega_real(law: _Law, Delta, x, comp: _Components):
    """``omega(x + i0)`` for real ``x`` (complex array)."""
    x = np.asarray(x, dtype=float)
    out = np.empty(x.shape, dtype=complex)
    k = np.searchsorted(comp.x_lo, x, side="right") - 1  # interval to the left or containing x
    kc = np.clip(k, 0, comp.x_lo.size - 1)
    inside = (k >= 0) & (x <= comp.x_hi[kc])
    for j in np.unique(kc[inside]):
        sel = np.flatnonzero(inside & (kc == j))
        u = _u_of_x(law, Delta, comp, x[sel], j)
        c = _curve(law, Delta, u)
        out[sel] = u + 1j * c.v
    # outside: real root of H(u) = x in the matching gap of U, where H' > 0
    sel = np.flatnonzero(~inside)
    if sel.size:
        xs = x[sel]
        ks = k[sel]
        n = comp.x_lo.size
        a = np.where(ks >= 0, comp.u_hi[np.clip(ks, 0, n - 1)], np.minimum(xs, comp.u_lo[0]))
        b = np.where(
            ks < n - 1, comp.u_lo[np.clip(ks + 1, 0, n - 1)], np.maximum(xs, comp.u_hi[-1])
        )
        # H(u) < u left of the support and H(u) > u right of it, so [a, b] brackets the root

        def fun(u, idx):
            with np.errstate(all="ignore"):
                G, G1 = _G_real(law, u, 1)
            return u + Delta * G - xs[idx], 1 + Delta * G1

        u = _bracketed_newton(fun, a, b, -1.0, xtol=1e-15)
        out[sel] = u
    return out


def stieltjes(target, Delta, z, *, n_atoms: int = 4000) -> np.ndarray:
    """``G_R(z)`` of ``R = S0 + sqrt(Delta) W_goe`` at complex ``z`` (any shape).

    Solves the subordination equation ``G_R(z) = G_mu(z - Delta G_R(z))``. For
    ``Im z > 0`` by Newton's method with a fixed-point fallback (the branch with
    ``Im G_R < 0``); for real ``z`` the boundary value ``G_R(x + i0)`` through the curve
    ``u -> x(u)`` (bracketed, robust up to the edges); ``Im z < 0`` by conjugation.
    """
    law, Delta = _prepare(target, Delta, n_atoms)
    z = np.asarray(_checks.finite_array("z", z), dtype=complex)
    shape = z.shape
    z = z.ravel()
    out = np.empty(z.shape, dtype=complex)
    real = z.imag == 0
    if np.any(~real):
        idx = np.flatnonzero(~real)
        zu = np.where(z[idx].imag > 0, z[idx], np.conj(z[idx]))
        w = _omega_upper(law, Delta, zu)
        g = (zu - w) / Delta
        out[idx] = np.where(z[idx].imag > 0, g, np.conj(g))
    if np.any(real):
        idx = np.flatnonzero(real)
        comp = _components(law, Delta)
        w = _omega_real(law, Delta, z[idx].real, comp)
        G = np.where(w.imag > 0, _G(law, w)[0], 0j)
        onreal = w.imag == 0
        if np.any(onreal):
            G[onreal] = _G_real(law, w[onreal].real)[0]
        out[idx] = G
    return out.reshape(shape)


def density(target, Delta, x, *, n_atoms: int = 4000) -> np.ndarray:
    """``rho_R(x)`` at real ``x`` (any shape); zero outside the support."""
    law, Delta = _prepare(target, Delta, n_atoms)
    x = np.asarray(_checks.finite_array("x", x), dtype=float)
    comp = _components(law, Delta)
    w = _omega_real(law, Delta, x.ravel(), comp)
    return (w.imag / (np.pi * Delta)).reshape(x.shape)


def cdf(target, Delta, x, *, n_grid: int = 2048, n_atoms: int = 4000) -> np.ndarray:
    """Distribution function ``int_{-inf}^x rho_R`` at real ``x`` (any shape).

    Cumulative trapezoid rule in the curve variable ``theta`` of each support interval
    (``n_grid`` points per unit mass, at least 32 per interval), normalised to the exact
    mass of the interval, then linear interpolation in ``x``; accuracy about ``1e-6``.
    """
    law, Delta = _prepare(target, Delta, n_atoms)
    n_grid = _checks.integer("n_grid", n_grid, 8)
    x = np.asarray(_checks.finite_array("x", x), dtype=float)
    comp = _components(law, Delta)
    us, ths = [], []
    for k in range(comp.u_lo.size):
        m = max(32, int(math.ceil(n_grid * comp.mass[k])))
        th = np.linspace(math.pi, 0.0, m + 1)  # increasing u
        us.append(
            0.5 * (comp.u_lo[k] + comp.u_hi[k]) + 0.5 * (comp.u_hi[k] - comp.u_lo[k]) * np.cos(th)
        )
        ths.append(th)
    c = _curve(law, Delta, np.concatenate(us))
    X, C = [], []
    start = 0
    base = 0.0
    for k, th in enumerate(ths):
        sl = slice(start, start + th.size)
        start += th.size
        half = 0.5 * (comp.u_hi[k] - comp.u_lo[k])
        with np.errstate(all="ignore"):
            g = c.v[sl] / (np.pi * Delta) * c.dxdu[sl] * half * np.sin(th)
        # at the edges (v = 0) the density is exactly 0 whatever x'(u)
        g = np.where(c.v[sl] == 0, 0.0, g)
        if not np.all(np.isfinite(g)):
            raise FloatingPointError(
                f"cdf: non-finite density at {np.sum(~np.isfinite(g))} points inside support "
                f"interval {k} (Delta={Delta:g})"
            )
        cum = np.concatenate([[0.0], np.cumsum(0.5 * (g[1:] + g[:-1]) * np.abs(np.diff(th)))])
        cum *= comp.mass[k] / cum[-1] if cum[-1] > 0 else 0.0
        xk = np.maximum.accumulate(c.x[sl])
        X.append(xk)
        C.append(base + cum)
        base += comp.mass[k]
    X, C = np.concatenate(X), np.concatenate(C)
    return np.interp(x, X, C, left=0.0, right=1.0)
