"""Support of ``rho_R``: the components of ``U = {u : F(u, 0) > 1/Delta}`` and their edges."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from attnlib import _checks
from attnlib.rmt.law import _F0, _TINY, _G_real, _Law, _law
from attnlib.rmt.roots import _bracketed_newton

__all__ = ["support"]


class _Components(NamedTuple):
    u_lo: np.ndarray  # components of U = {F(u, 0) > 1/Delta}, in the curve parameter u
    u_hi: np.ndarray
    x_lo: np.ndarray  # matching support intervals of rho_R
    x_hi: np.ndarray
    mass: np.ndarray  # mu-mass of each component (= rho_R-mass of the interval)
    features: np.ndarray  # u of possible near-singularities of v(u) (cusps, hard edges, jumps)


def _edge_roots(law: _Law, Delta, base, direction, tmax, guess=None):
    """``u = base + direction * t`` with ``0 < t <= tmax`` and ``F(u, 0) = 1/Delta``.

    Solved in ``s = log t`` where ``log F`` is close to linear near atoms (``F ~ m/t^2``)
    and square-root edges (``F ~ t^{-1/2}``). ``F(base + direction tmax) <= 1/Delta`` is
    assumed and ``F -> inf`` as ``t -> 0``; the root is unique in the bracket.
    """
    base = np.asarray(base, dtype=float)
    direction = np.asarray(direction, dtype=float)
    tmax = np.asarray(tmax, dtype=float)
    if base.size == 0:
        return base.copy()
    logD = math.log(Delta)

    def fun(s, idx):
        t = np.exp(s)
        u = base[idx] + direction[idx] * t
        with np.errstate(all="ignore"):
            _, G1, G2 = _G_real(law, u, 2)
            F, dF = -G1, -G2
            f = np.log(F) + logD
            df = dF / F * direction[idx] * t
        bad = ~np.isfinite(f) | (F <= 0)
        f = np.where(bad, np.inf, f)
        df = np.where(bad, np.nan, df)
        return f, df

    scale = np.maximum(np.abs(base), np.sqrt(Delta))
    s_lo = np.log(np.maximum(1e-17 * scale, _TINY))
    s_hi = np.log(tmax)

    def xtol(s, idx):
        # relative accuracy 1e-12 on t, or the resolution of u = base + direction t
        return np.maximum(1e-12, 2e-16 * np.abs(base[idx]) / np.exp(s))

    x0 = s_hi - 1.0 if guess is None else np.log(np.clip(guess, np.exp(s_lo), tmax))
    s = _bracketed_newton(fun, s_lo, s_hi, 1.0, x0=x0, xtol=xtol)
    return base + direction * np.exp(s)


def _gap_lower_bound(law: _Law, gl, gr, L):
    """Rigorous lower bound of ``F(u, 0)`` on each gap ``(gl, gr)`` of an atomic measure.

    The two neighbouring atoms at their joint minimum, plus neighbours further out at
    their largest possible distance.
    """
    n_gap = L.size
    m1, m2 = law.mass[:-1], law.mass[1:]
    with np.errstate(divide="ignore"):
        bound = (np.cbrt(m1) + np.cbrt(m2)) ** 3 / L**2
    t = law.atoms
    for k in range(1, 9):
        il = np.arange(n_gap) - k  # atom left of the gap's left atom
        ir = np.arange(n_gap) + 1 + k
        okl, okr = il >= 0, ir < t.size
        bound[okl] += law.mass[il[okl]] / (gr[okl] - t[il[okl]]) ** 2
        bound[okr] += law.mass[ir[okr]] / (t[ir[okr]] - gl[okr]) ** 2
    return bound


def _open_gaps(law: _Law, Delta: float):
    """Which gaps of supp ``mu`` stay open (``min F < 1/Delta``), a point between their
    two edge roots (``nan`` if not needed), and near-cusp features of closed gaps."""
    lo, hi, mass = law.lo, law.hi, law.mass
    target = 1.0 / Delta
    gl, gr = hi[:-1], lo[1:]
    L = gr - gl
    is_open = L > 2 * math.sqrt(Delta)  # F <= 1/dist^2, so such gaps always keep an open part
    cand = ~is_open
    if law.kind == "atoms" and L.size:
        cand &= ~(_gap_lower_bound(law, gl, gr, L) > target)
    ci = np.flatnonzero(cand)
    ustar = np.full(L.size, np.nan)
    feats = np.zeros(0)
    if ci.size == 0:
        return is_open, ustar, feats
    # first try the minimiser of the two neighbouring pieces alone: if F is already below
    # 1/Delta there the gap is open and that point separates its two roots (F is convex)
    r1, r2 = np.cbrt(mass[:-1][ci]), np.cbrt(mass[1:][ci])
    up = (r1 * gr[ci] + r2 * gl[ci]) / (r1 + r2)
    with np.errstate(all="ignore"):
        quick = _F0(law, up) < target
    ustar[ci[quick]] = up[quick]
    is_open[ci[quick]] = True
    ci2 = ci[~quick]
    if ci2.size:
        # otherwise locate the minimum of the convex F: the root of F' = -G''
        def fprime(u, idx):
            _, _, G2, G3 = _G_real(law, u, 3)
            return -G2, -G3

        us = _bracketed_newton(fprime, gl[ci2], gr[ci2], -1.0, x0=up[~quick], xtol=1e-15)
        with np.errstate(all="ignore"):
            Fmin = _F0(law, us)
        opened = Fmin < target
        ustar[ci2] = us
        is_open[ci2[opened]] = True
        # nearly-open gaps leave a near-cusp of rho_R at their minimum
        near = ~opened & (Fmin * Delta < 4.0)
        feats = us[near][np.argsort(Fmin[near])[:32]]
    return is_open, ustar, feats


def _component_edges(law: _Law, Delta: float, oi, ustar):
    """Curve parameters ``(u_lo, u_hi)`` of the components, given the open gaps ``oi``."""
    lo, hi, mass = law.lo, law.hi, law.mass
    sd = math.sqrt(Delta)
    gl, gr = hi[:-1], lo[1:]
    # gap roots: left root measured from the left piece, right root from the right piece
    tmax_l = np.minimum(np.where(np.isnan(ustar[oi]), sd, ustar[oi] - gl[oi]), sd)
    tmax_r = np.minimum(np.where(np.isnan(ustar[oi]), sd, gr[oi] - ustar[oi]), sd)
    bases = np.concatenate([[lo[0]], gl[oi], gr[oi], [hi[-1]]])
    dirs = np.concatenate([[-1.0], np.ones(oi.size), -np.ones(oi.size), [1.0]])
    tmaxs = np.concatenate([[sd], tmax_l, tmax_r, [sd]])
    guess = None
    if law.kind == "atoms":  # an isolated atom of mass m has F ~ m / t^2
        m = np.concatenate([[mass[0]], mass[:-1][oi], mass[1:][oi], [mass[-1]]])
        guess = np.minimum(np.sqrt(m * Delta), 0.9 * tmaxs)
    roots = _edge_roots(law, Delta, bases, dirs, tmaxs, guess)
    k = oi.size
    u_lo = np.concatenate([[roots[0]], roots[1 + k : 1 + 2 * k]])
    u_hi = np.concatenate([roots[1 : 1 + k], [roots[-1]]])
    return u_lo, u_hi


def _components(law: _Law, Delta: float) -> _Components:
    lo, hi, mass = law.lo, law.hi, law.mass
    is_open, ustar, near_cusps = _open_gaps(law, Delta)
    oi = np.flatnonzero(is_open)
    u_lo, u_hi = _component_edges(law, Delta, oi, ustar)
    # masses: pieces between consecutive open gaps
    cuts = np.concatenate([[0], oi + 1, [lo.size]])
    cm = np.concatenate([[0.0], np.cumsum(mass)])
    comp_mass = cm[cuts[1:]] - cm[cuts[:-1]]
    with np.errstate(all="ignore"):
        x_lo = u_lo + Delta * _G_real(law, u_lo)[0]
        x_hi = u_hi + Delta * _G_real(law, u_hi)[0]
    feats = [near_cusps]
    if law.kind == "wishart":
        # the atom at 0 (a pole of G_mu), Marchenko-Pastur edges (branch points; hard at ratio 1)
        feats.append(np.concatenate([lo, hi]))
    if law.kind == "atoms":
        # extreme atoms of each component (discretized hard or jump edges of the target)
        feats.append(lo[cuts[:-1]][:64])
        feats.append(hi[cuts[1:] - 1][:64])
    features = np.unique(np.concatenate(feats))
    return _Components(u_lo, u_hi, x_lo, x_hi, comp_mass, features)


DELTA_MAX = 1e100  # squares of the support edges (~ Delta) must stay far from overflow


def _prepare(target, Delta, n_atoms):
    """Checked ``(law, Delta)``.

    ``Delta`` lies in ``(0, 1e100]`` and resolves the target's spectrum in float64: with
    ``s = max(1, max|t|)`` the scale of the support of ``mu``, ``Delta >= 1e-30 s^2``; for
    an atomic measure the bump of ``rho_R`` around an atom of mass ``m`` has width
    ``~ sqrt(m Delta)``, which must be at least ``1e-11 s``.
    """
    Delta = _checks.in_interval("Delta", Delta, 0.0, DELTA_MAX)
    n_atoms = _checks.integer("n_atoms", n_atoms, 1)
    law = _law(target, n_atoms)
    scale = max(1.0, float(np.max(np.abs(law.hi))), float(np.max(np.abs(law.lo))))
    low = 1e-30 * scale**2
    if law.kind == "atoms":
        low = max(low, (1e-11 * scale) ** 2 / float(np.min(law.mass)))
    if Delta < low:
        raise ValueError(
            f"Delta = {Delta:.3g} is below {low:.3g}: rho_R would have features narrower "
            "than float64 resolves for this target"
        )
    return law, Delta


def support(target, Delta, *, n_atoms: int = 4000) -> tuple[tuple[float, float], ...]:
    """Support of ``rho_R`` for ``R = S0 + sqrt(Delta) W_goe`` as a tuple of ``(lo, hi)`` intervals.

    ``target`` is a :class:`~attnlib.targets.Target` (its isolated eigenvalues are not part
    of the bulk; see :func:`outliers`) or a :class:`~attnlib.targets.SpectralMeasure`.
    Edges are exact up to rounding: they are the values ``H(u)`` at the roots of
    ``F(u, 0) = 1/Delta``. For an atomic measure (non-Wishart targets use
    ``target.measure(n_atoms)``) and small ``Delta`` isolated atoms give separate intervals.
    """
    law, Delta = _prepare(target, Delta, n_atoms)
    comp = _components(law, Delta)
    return tuple((float(a), float(b)) for a, b in zip(comp.x_lo, comp.x_hi, strict=True))
