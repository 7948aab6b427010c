r"""Random-matrix toolkit: free convolution of a target spectrum with the semicircle.

Conventions (see the book's notation page):

- ``W_goe`` is symmetric with off-diagonal variance ``1/d`` and diagonal variance
  ``2/d``; its spectrum tends to the semicircle on ``[-2, 2]``.
- ``R = S0 + sqrt(Delta) W_goe``. Its limiting eigenvalue density ``rho_R`` is the
  free convolution of the target's spectral measure ``mu`` with the semicircle of
  variance ``Delta``.
- Stieltjes transforms are ``G(z) = int rho(t) / (z - t) dt`` (so ``G ~ 1/z`` at
  infinity and ``Im G < 0`` for ``Im z > 0``); on the real line
  ``rho_R(x) = -Im G_R(x + i0) / pi`` and ``h_R(x) = Re G_R(x + i0)`` (principal value).

Subordination: ``G_R(z) = G_mu(omega(z))`` with ``omega(z) = z - Delta G_R(z)``, i.e.
``omega`` solves ``H(omega) = z`` for ``H(w) = w + Delta G_mu(w)``. For real ``x`` we use
Biane's description of the boundary values: with
``F(u, v) = int mu(dt) / ((u - t)^2 + v^2)``, the set ``U = {u : F(u, 0) > 1/Delta}``
(which contains the support of ``mu``) is mapped by ``u -> x(u) = Re H(u + i v(u))``
increasingly onto the support of ``rho_R``, where ``v(u) > 0`` solves
``F(u, v) = 1/Delta``. On that curve::

    rho_R(x(u)) = v(u) / (pi Delta),    h_R(x(u)) = Re G_mu(u + i v(u)),
    dx/du = |H'(w)|^2 / Re H'(w),  w = u + i v(u).

The edges of ``rho_R`` are ``H(u)`` at the boundary points of ``U`` (``F(u, 0) = 1/Delta``),
and each connected piece of the support carries the ``mu``-mass of the matching
piece of ``U``. The curve parameter ``u`` is smooth across square-root edges.

A target enters through its limiting measure: the Wishart family through its
algebraic Stieltjes transform (implemented here with the branch cut exactly on the
Marchenko-Pastur support, so that it is also valid on the real axis; it equals
``Wishart.stieltjes`` off the axis), every other target through the atoms of
``target.measure(n_atoms)`` (an atomic measure: for small ``Delta`` isolated atoms
become separate small bumps of ``rho_R``). Isolated eigenvalues of the target
(spikes) are handled by :func:`outliers`.

Quadrature (:func:`deformed_spectrum`): on each support interval, ``u = mid + half
cos(theta)`` and adaptive Gauss-Kronrod (7-15) panels in ``theta``, graded towards
near-singular points (hard edges, closing gaps) and cut at user breakpoints.

References: P. Biane, "On the free convolution with a semi-circular distribution",
Indiana Univ. Math. J. 46 (1997); M. Capitaine, C. Donati-Martin, D. Feral, M. Fevrier,
"Free convolution with a semicircular distribution and eigenvalues of spiked
deformations of Wigner matrices", Electron. J. Probab. 16 (2011).
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from attnlib import _checks
from attnlib.targets import SpectralMeasure, Spiked, Target, Wishart

__all__ = [
    "DeformedSpectrum",
    "cdf",
    "Outlier",
    "SpectralIntegrals",
    "conditional_overlap",
    "deformed_spectrum",
    "density",
    "divergence_spectral",
    "isolated_eigenvalues",
    "outliers",
    "semicircle_density",
    "semicircle_stieltjes",
    "spectral_integrals",
    "stieltjes",
    "support",
]

_TINY = 1e-300


# --------------------------------------------------------------------------------------
# Semicircle
# --------------------------------------------------------------------------------------


def semicircle_density(x, Delta):
    """Density of the semicircle law of variance ``Delta`` (support ``|x| <= 2 sqrt(Delta)``)."""
    Delta = _checks.positive("Delta", Delta)
    x = np.asarray(_checks.finite_array("x", x), dtype=float)
    return np.sqrt(np.clip(4 * Delta - x**2, 0.0, None)) / (2 * np.pi * Delta)


def semicircle_stieltjes(z, Delta):
    """``G(z) = (z - sqrt(z^2 - 4 Delta)) / (2 Delta)``: semicircle of variance ``Delta``.

    The branch has ``G ~ 1/z`` at infinity and ``Im G < 0`` for ``Im z > 0``; on the
    real axis it returns the boundary value from above.
    """
    Delta = _checks.positive("Delta", Delta)
    z = np.asarray(_checks.finite_array("z", z), dtype=complex)
    r = 2 * math.sqrt(Delta)
    s = np.sqrt(z - r) * np.sqrt(z + r)
    return (z - s) / (2 * Delta)


# --------------------------------------------------------------------------------------
# Spectral laws of targets (internal)
# --------------------------------------------------------------------------------------


class _Law(NamedTuple):
    """Limiting spectral measure ``mu`` of a target, with its Stieltjes transform.

    ``lo, hi, mass``: the disjoint pieces of the support of ``mu`` (sorted; an atom
    has ``lo == hi``) and their masses. ``kind`` is ``"atoms"`` (``atoms``,
    ``weights``) or ``"wishart"`` (``c`` = kappa0).
    """

    kind: str
    lo: np.ndarray
    hi: np.ndarray
    mass: np.ndarray
    atoms: np.ndarray | None = None
    weights: np.ndarray | None = None
    c: float = 0.0


def _atoms_law(atoms, weights) -> _Law:
    atoms = np.asarray(atoms, dtype=float).ravel()
    weights = np.asarray(weights, dtype=float).ravel()
    if atoms.shape != weights.shape or atoms.size == 0:
        raise ValueError("target: the spectral measure needs as many weights as atoms (>= 1)")
    _checks.finite_array("target atoms", atoms)
    _checks.finite_array("target weights", weights)
    if np.any(weights < 0) or not np.isclose(weights.sum(), 1.0, rtol=1e-8, atol=1e-10):
        raise ValueError("target: the spectral measure must have weights >= 0 summing to 1")
    keep = weights > 0
    t, inv = np.unique(atoms[keep], return_inverse=True)
    w = np.zeros(t.size)
    np.add.at(w, inv, weights[keep])
    w = w / w.sum()
    return _Law("atoms", t, t, w, atoms=t, weights=w)


def _wishart_law(c: float) -> _Law:
    sc = math.sqrt(c)
    a, b = (1 - sc) ** 2 / sc, (1 + sc) ** 2 / sc
    if c >= 1.0:
        return _Law("wishart", np.array([0.0]), np.array([4.0]), np.array([1.0]), c=1.0)
    return _Law("wishart", np.array([0.0, a]), np.array([0.0, b]), np.array([1 - c, c]), c=float(c))


@functools.lru_cache(maxsize=64)
def _law_cached(target: Target, n_atoms: int) -> _Law:
    return _build_law(target, n_atoms)


def _build_law(target, n_atoms: int) -> _Law:
    if isinstance(target, SpectralMeasure):
        return _atoms_law(target.atoms, target.weights)
    if isinstance(target, Spiked):
        if target.bulk is None:
            return _atoms_law([0.0], [1.0])
        return _law(target.bulk, n_atoms)
    if isinstance(target, Wishart) and type(target).stieltjes is Wishart.stieltjes:
        return _wishart_law(float(target.kappa0))
    mu = target.measure(n_atoms)
    return _atoms_law(mu.atoms, mu.weights)


def _law(target, n_atoms: int = 4000) -> _Law:
    if isinstance(target, _Law):
        return target
    if not isinstance(target, (Target, SpectralMeasure)):
        raise ValueError(
            f"target must be an attnlib.targets.Target or SpectralMeasure, got {type(target)!r}"
        )
    if isinstance(target, Target):
        try:
            return _law_cached(target, n_atoms)
        except TypeError:  # unhashable user subclass
            return _build_law(target, n_atoms)
    return _build_law(target, n_atoms)


def _chunks(n_rows: int, n_cols: int, budget: int = 1 << 21):
    step = max(1, budget // max(n_cols, 1))
    for s in range(0, n_rows, step):
        yield slice(s, min(n_rows, s + step))


def _G(law: _Law, z, nder: int = 0) -> list[np.ndarray]:
    """``[G, G', ..., G^(nder)]`` of ``mu`` at complex ``z`` (upper boundary value on supp mu)."""
    z = np.asarray(z, dtype=complex)
    shape = z.shape
    z = z.ravel()
    if law.kind == "wishart":
        c = law.c
        sc = math.sqrt(c)
        a, b = (1 - sc) ** 2 / sc, (1 + sc) ** 2 / sc
        with np.errstate(all="ignore"):
            # G = N / (2 z), N = sqrt(c) z + 1 - c - sqrt(c) s, s = sqrt(z - a) sqrt(z - b):
            # the branch cut of s is [a, b], and G ~ 1/z at infinity, G ~ (1 - c)/z at 0.
            # Derivatives from 2 z G = N (no cancellation near the edges, where s -> 0).
            s = np.sqrt(z - a) * np.sqrt(z - b)
            G = ((sc * z + 1 - c) - sc * s) / (2 * z)
            out = [G]
            if nder >= 1:
                s1 = (2 * z - a - b) / (2 * s)
                G1 = (sc * (1 - s1) - 2 * G) / (2 * z)
                out.append(G1)
            if nder >= 2:
                s2 = -((a - b) ** 2) / (4 * s**3)
                G2 = (-sc * s2 - 4 * G1) / (2 * z)
                out.append(G2)
            if nder >= 3:
                s3 = -3 * s1 * s2 / s
                out.append((-sc * s3 - 6 * G2) / (2 * z))
        return [o.reshape(shape) for o in out]
    t, w = law.atoms, law.weights
    out = [np.empty(z.shape, dtype=complex) for _ in range(nder + 1)]
    if nder <= 1:
        # real arithmetic: with d = u - t, q = 1/(d^2 + v^2), 1/(z - t) = (d - i v) q
        u, v = z.real, z.imag
        with np.errstate(all="ignore"):
            for sl in _chunks(z.size, t.size):
                d = np.subtract.outer(u[sl], t)
                q = d * d
                q += (v[sl] ** 2)[:, None]
                np.reciprocal(q, out=q)
                d *= q  # d q
                out[0][sl] = (d @ w) - 1j * v[sl] * (q @ w)
                if nder:
                    re = (d * d) @ w - v[sl] ** 2 * ((q * q) @ w)
                    im = 2 * v[sl] * ((d * q) @ w)
                    out[1][sl] = -re + 1j * im
        return [o.reshape(shape) for o in out]
    with np.errstate(all="ignore"):
        for sl in _chunks(z.size, t.size):
            r = 1.0 / (z[sl, None] - t[None, :])
            rk = r
            for k in range(nder + 1):
                out[k][sl] = (-1) ** k * math.factorial(k) * (rk @ w)
                if k < nder:
                    rk = rk * r
    return [o.reshape(shape) for o in out]


def _G_real(law: _Law, u, nder: int = 0) -> list[np.ndarray]:
    """Real ``[G, ..., G^(nder)]`` at real ``u`` outside the support of ``mu`` (inf/nan on it)."""
    u = np.asarray(u, dtype=float)
    if law.kind == "wishart":
        return [np.real(g) for g in _G(law, u + 0j, nder)]
    t, w = law.atoms, law.weights
    flat = u.ravel()
    out = [np.empty(flat.shape) for _ in range(nder + 1)]
    with np.errstate(all="ignore"):
        for sl in _chunks(flat.size, t.size):
            r = 1.0 / (flat[sl, None] - t[None, :])
            rk = r
            for k in range(nder + 1):
                out[k][sl] = (-1) ** k * math.factorial(k) * (rk @ w)
                if k < nder:
                    rk = rk * r
    return [o.reshape(u.shape) for o in out]


def _on_support(law: _Law, u) -> np.ndarray:
    """True where real ``u`` lies on a continuous piece (or exactly on an atom) of ``mu``."""
    u = np.asarray(u, dtype=float)
    idx = np.searchsorted(law.lo, u, side="right") - 1
    ok = idx >= 0
    idx = np.clip(idx, 0, len(law.lo) - 1)
    return ok & (u <= law.hi[idx])


def _F0(law: _Law, u) -> np.ndarray:
    """``F(u, 0) = int mu(dt) / (u - t)^2 = -G'(u)``; ``+inf`` on the support of ``mu``."""
    u = np.asarray(u, dtype=float)
    F = -_G_real(law, u, 1)[1]
    F = np.where(_on_support(law, u) | ~np.isfinite(F), np.inf, F)
    return F


def _F_Fy(law: _Law, u, y):
    """``F(u, v)`` and ``dF/dy`` with ``y = v^2 > 0`` (``F = int mu(dt) / ((u - t)^2 + y)``)."""
    if law.kind == "atoms":
        t, w = law.atoms, law.weights
        F = np.empty(u.shape)
        Fy = np.empty(u.shape)
        for sl in _chunks(u.size, t.size):
            q = np.subtract.outer(u[sl], t)
            q *= q
            q += y[sl, None]
            np.reciprocal(q, out=q)
            F[sl] = q @ w
            q *= q
            Fy[sl] = -(q @ w)
        return F, Fy
    v = np.sqrt(y)
    G, G1 = _G(law, u + 1j * v, 1)
    F = -G.imag / v
    dFdv = (G.imag - v * G1.real) / y
    return F, dFdv / (2 * v)


# --------------------------------------------------------------------------------------
# Scalar root finding (vectorized, bracketed)
# --------------------------------------------------------------------------------------


def _bracketed_newton(fun, a, b, fa_sign, x0=None, xtol=1e-14, maxiter=200):
    """Solve ``fun(x)[0] = 0`` for each entry, given brackets ``[a, b]`` (either order).

    ``fun(x, mask)`` returns ``(f, df)`` at ``x[mask]``; ``fa_sign`` is the sign of ``f``
    at ``a``. Newton steps that leave the bracket are replaced by bisection.
    """
    shape = np.broadcast_shapes(np.shape(a), np.shape(b), np.shape(x0) if x0 is not None else ())
    a = np.array(np.broadcast_to(a, shape), dtype=float)
    b = np.array(np.broadcast_to(b, shape), dtype=float)
    x = 0.5 * (a + b) if x0 is None else np.clip(x0, np.minimum(a, b), np.maximum(a, b))
    x = np.array(np.broadcast_to(x, shape), dtype=float)
    active = np.ones(x.shape, dtype=bool)
    sa = np.broadcast_to(np.sign(fa_sign), x.shape)
    for _ in range(maxiter):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        f, df = fun(x[idx], idx)
        f = np.where(np.isnan(f), sa[idx] * np.inf, f)
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
    return x


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


# --------------------------------------------------------------------------------------
# Support of rho_R
# --------------------------------------------------------------------------------------


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


def _components(law: _Law, Delta: float) -> _Components:
    lo, hi, mass = law.lo, law.hi, law.mass
    sd = math.sqrt(Delta)
    target = 1.0 / Delta
    gl, gr = hi[:-1], lo[1:]
    L = gr - gl
    n_gap = L.size
    is_open = L > 2 * sd  # F <= 1/dist^2, so such gaps always keep an open part
    cand = ~is_open
    if law.kind == "atoms" and n_gap:
        # rigorous lower bound of F on a gap: the two neighbouring atoms, at their joint minimum,
        # plus neighbours further out at their largest possible distance
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
        cand &= ~(bound > target)
    ci = np.flatnonzero(cand)
    ustar = np.full(n_gap, np.nan)
    feats = [np.zeros(0)]
    if ci.size:
        # first try the minimiser of the two neighbouring pieces alone: if F is already below
        # 1/Delta there the gap is open and that point separates its two roots (F is convex)
        r1, r2 = np.cbrt(mass[:-1][ci]), np.cbrt(mass[1:][ci])
        up = (r1 * gr[ci] + r2 * gl[ci]) / (r1 + r2)
        with np.errstate(all="ignore"):
            Fp = _F0(law, up)
        quick = Fp < target
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
            order = np.argsort(Fmin[near])[:32]
            feats = [us[near][order]]
    oi = np.flatnonzero(is_open)
    # gap roots: left root measured from the left piece, right root from the right piece
    tmax_l = np.where(np.isnan(ustar[oi]), sd, ustar[oi] - gl[oi])
    tmax_r = np.where(np.isnan(ustar[oi]), sd, gr[oi] - ustar[oi])
    tmax_l = np.minimum(tmax_l, sd)
    tmax_r = np.minimum(tmax_r, sd)
    bases = np.concatenate([[lo[0]], gl[oi], gr[oi], [hi[-1]]])
    dirs = np.concatenate([[-1.0], np.ones(oi.size), -np.ones(oi.size), [1.0]])
    tmaxs = np.concatenate([[sd], tmax_l, tmax_r, [sd]])
    guess = None
    if law.kind == "atoms":  # an isolated atom of mass m has F ~ m / t^2
        guess = np.sqrt(
            np.concatenate([[mass[0]], mass[:-1][oi], mass[1:][oi], [mass[-1]]]) * Delta
        )
        guess = np.minimum(guess, 0.9 * tmaxs)
    roots = _edge_roots(law, Delta, bases, dirs, tmaxs, guess)
    k = oi.size
    u_lo = np.concatenate([[roots[0]], roots[1 + k : 1 + 2 * k]])
    u_hi = np.concatenate([roots[1 : 1 + k], [roots[-1]]])
    # masses: pieces between consecutive open gaps
    cuts = np.concatenate([[0], oi + 1, [lo.size]])
    cm = np.concatenate([[0.0], np.cumsum(mass)])
    comp_mass = cm[cuts[1:]] - cm[cuts[:-1]]
    with np.errstate(all="ignore"):
        x_lo = u_lo + Delta * _G_real(law, u_lo)[0]
        x_hi = u_hi + Delta * _G_real(law, u_hi)[0]
    if law.kind == "wishart":
        # the atom at 0 (a pole of G_mu), Marchenko-Pastur edges (branch points; hard at ratio 1)
        feats.append(np.concatenate([lo, hi]))
    if law.kind == "atoms":
        # extreme atoms of each component (discretized hard or jump edges of the target)
        feats.append(lo[cuts[:-1]][:64])
        feats.append(hi[cuts[1:] - 1][:64])
    features = np.unique(np.concatenate(feats))
    return _Components(u_lo, u_hi, x_lo, x_hi, comp_mass, features)


def _prepare(target, Delta, n_atoms):
    Delta = _checks.positive("Delta", Delta)
    n_atoms = _checks.integer("n_atoms", n_atoms, 1)
    return _law(target, n_atoms), Delta


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


# --------------------------------------------------------------------------------------
# Points on the curve u -> x(u)
# --------------------------------------------------------------------------------------


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


def _u_of_x(law: _Law, Delta, comp: _Components, x, k):
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


# --------------------------------------------------------------------------------------
# Stieltjes transform, density
# --------------------------------------------------------------------------------------


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
    us, ths, ks = [], [], []
    for k in range(comp.u_lo.size):
        m = max(32, int(math.ceil(n_grid * comp.mass[k])))
        th = np.linspace(math.pi, 0.0, m + 1)  # increasing u
        us.append(
            0.5 * (comp.u_lo[k] + comp.u_hi[k]) + 0.5 * (comp.u_hi[k] - comp.u_lo[k]) * np.cos(th)
        )
        ths.append(th)
        ks.append(np.full(m + 1, k))
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
        g = np.where(np.isfinite(g), g, 0.0)
        cum = np.concatenate([[0.0], np.cumsum(0.5 * (g[1:] + g[:-1]) * np.abs(np.diff(th)))])
        cum *= comp.mass[k] / cum[-1] if cum[-1] > 0 else 0.0
        xk = np.maximum.accumulate(c.x[sl])
        X.append(xk)
        C.append(base + cum)
        base += comp.mass[k]
    X, C = np.concatenate(X), np.concatenate(C)
    return np.interp(x, X, C, left=0.0, right=1.0)


# --------------------------------------------------------------------------------------
# Quadrature
# --------------------------------------------------------------------------------------


class DeformedSpectrum(NamedTuple):
    """Quadrature for integrals against ``rho_R``, ``R = S0 + sqrt(Delta) W_goe``.

    ``sum(w * phi(x))`` approximates ``int rho_R(x) phi(x) dx`` (spectrally accurate for
    smooth ``phi``; pass kinks of ``phi`` as ``breakpoints`` to
    :func:`deformed_spectrum`). Fields (``N`` nodes, ascending ``x``):

    - ``Delta``: noise variance; ``intervals``: support of ``rho_R`` (tuple of ``(lo, hi)``);
    - ``x`` (N,): nodes; ``w`` (N,): weights, renormalised to ``sum(w) = 1``;
    - ``density`` (N,): ``rho_R(x)``; ``hilbert`` (N,): ``h_R(x) = Re G_R(x + i0)``;
    - ``mass``: the raw ``sum(w)`` before renormalisation (``1`` up to quadrature error).
    """

    Delta: float
    intervals: tuple
    x: np.ndarray
    w: np.ndarray
    density: np.ndarray
    hilbert: np.ndarray
    mass: float


# Gauss-Kronrod 7-15 rule on [-1, 1] (QUADPACK's qk15 constants)
_XGK = np.array(
    [
        0.991455371120812639206854697526329,
        0.949107912342758524526189684047851,
        0.864864423359769072789712788640926,
        0.741531185599394439863864773280788,
        0.586087235467691130294144845693013,
        0.405845151377397166906606412076961,
        0.207784955007898467600689403773245,
        0.0,
    ]
)
_WGK = np.array(
    [
        0.022935322010529224963732008058970,
        0.063092092629978553290700663189204,
        0.104790010322250183839876322541518,
        0.140653259715525918745189590510238,
        0.169004726639267902826583426598550,
        0.190350578064785409913256402421014,
        0.204432940075298892414161999234649,
        0.209482141084727828012999174891714,
    ]
)
_WG = np.array(
    [
        0.129484966168869693270611432679082,
        0.279705391489276667901467771423780,
        0.381830050505118944950369775488975,
        0.417959183673469387755102040816327,
    ]
)
_KNODES = np.concatenate([-_XGK[:-1], [0.0], _XGK[:-1][::-1]])
_KWEIGHTS = np.concatenate([_WGK[:-1], [_WGK[-1]], _WGK[:-1][::-1]])
_GWEIGHTS = np.zeros(15)
_GWEIGHTS[1::2] = np.concatenate([_WG[:-1], [_WG[-1]], _WG[:-1][::-1]])


def _graded_cuts(law: _Law, Delta, features, ua, ub, ratio=2.0, max_levels=40):
    """theta cuts graded geometrically towards the features inside ``(ua, ub)``.

    A feature ``u_f`` with curve height ``v(u_f)`` small compared with the interval is a
    near-singularity of the integrand at distance about ``v(u_f)`` from the real axis;
    panels ``theta_f +- dtheta ratio^k`` isolate it so that each panel sees it at a
    distance comparable to its own length.
    """
    mid, half = 0.5 * (ua + ub), 0.5 * (ub - ua)
    f = features[(features > ua) & (features < ub)]
    if f.size == 0:
        return []
    v = np.sqrt(_solve_y(law, f, Delta))
    v = np.maximum(v, 1e-14 * half)
    # location of the near-singularity u_f +- i v_f in the theta variable
    th_s = np.arccos(((f + 1j * v) - mid) / half + 0j)
    cuts = []
    for ts, vf in zip(th_s, v, strict=True):
        if vf > 0.05 * half:
            continue
        th_f = float(np.clip(ts.real, 0.0, math.pi))
        dth = max(abs(ts.imag), 1e-12)
        cuts.append(th_f)
        for k in range(max_levels):
            step = dth * ratio**k
            if step > 0.5:
                break
            cuts += [th_f - step, th_f + step]
    return [c for c in cuts if 0.0 < c < math.pi]


def _groups(comp: _Components, max_panels: int):
    """Merge support components into at most ``max_panels`` groups (keeping the largest gaps)."""
    n = comp.u_lo.size
    if n <= max_panels:
        return [(i, i) for i in range(n)]
    gaps = comp.u_lo[1:] - comp.u_hi[:-1]
    keep = np.sort(np.argsort(gaps)[::-1][: max_panels - 1])
    starts = np.concatenate([[0], keep + 1])
    ends = np.concatenate([keep, [n - 1]])
    return list(zip(starts.tolist(), ends.tolist(), strict=True))


def deformed_spectrum(
    target,
    Delta,
    n_nodes: int = 90,
    *,
    breakpoints=(),
    tol: float = 1e-11,
    n_atoms: int = 4000,
    max_components: int = 4000,
    max_levels: int = 40,
) -> DeformedSpectrum:
    """Quadrature nodes and weights for ``rho_R`` with its density and Hilbert transform.

    Each support interval ``[x(u_a), x(u_b)]`` is integrated in the curve parameter
    ``u = (u_a + u_b)/2 + (u_b - u_a)/2 cos(theta)``: the integrand
    ``rho_R(x(u)) x'(u) phi(x(u)) du/dtheta`` is then smooth in ``theta`` at the
    square-root edges. The ``theta`` range ``[0, pi]`` is cut into panels (at least
    ``n_nodes / 15`` per unit mass, geometrically graded towards near-singular points
    such as the hard edge of a Marchenko-Pastur law or a closing gap, and cut at the
    ``breakpoints``) and integrated adaptively with the Gauss-Kronrod 7-15 rule:
    a panel is split until the Kronrod-Gauss difference of the mass, first moment and
    ``h_R`` moment is below ``tol`` (relative to its share of the interval's mass).

    ``breakpoints`` (x values, e.g. the threshold of a soft-threshold ``f``) are panel
    ends, so that functions with kinks there are integrated with the same accuracy.
    For an atomic measure (``target.measure(n_atoms)``) and small ``Delta`` the support
    can break into many intervals (one per isolated atom); beyond ``max_components`` the
    closest ones are merged and integrated less accurately.
    """
    law, Delta = _prepare(target, Delta, n_atoms)
    n_nodes = _checks.integer("n_nodes", n_nodes, 1)
    tol = _checks.positive("tol", tol)
    bps = np.sort(
        np.atleast_1d(np.asarray(_checks.finite_array("breakpoints", breakpoints), float))
    )
    comp = _components(law, Delta)
    groups = _groups(comp, max_components)
    n_grp = len(groups)
    g_mid = np.empty(n_grp)
    g_half = np.empty(n_grp)
    g_mass = np.empty(n_grp)
    g_eps = np.empty(n_grp)
    p_grp, p_a, p_b = [], [], []
    for j, (g0, g1) in enumerate(groups):
        ua, ub = comp.u_lo[g0], comp.u_hi[g1]
        mid, half = 0.5 * (ua + ub), 0.5 * (ub - ua)
        g_mid[j], g_half[j] = mid, half
        g_mass[j] = float(np.sum(comp.mass[g0 : g1 + 1]))
        g_eps[j] = 30 * np.finfo(float).eps * max(abs(ua), abs(ub)) / max(half, _TINY)
        n_init = max(1, int(math.ceil(n_nodes * g_mass[j] / 15)))
        th_cuts = list(np.linspace(0.0, math.pi, n_init + 1))
        inner = bps[(bps > comp.x_lo[g0]) & (bps < comp.x_hi[g1])]
        for xb in inner:
            k = np.searchsorted(comp.x_lo, xb, side="right") - 1
            if not (g0 <= k <= g1 and xb < comp.x_hi[k]):
                continue  # in a gap of the group: no kink inside the support
            ubp = _u_of_x(law, Delta, comp, np.array([xb]), k)[0]
            th_cuts.append(float(np.arccos(np.clip((ubp - mid) / half, -1.0, 1.0))))
        if g0 == g1:
            th_cuts += _graded_cuts(law, Delta, comp.features, ua, ub)
        th_cuts = np.unique(np.clip(th_cuts, 0.0, math.pi))
        p_grp += [j] * (th_cuts.size - 1)
        p_a += list(th_cuts[:-1])
        p_b += list(th_cuts[1:])
    p_grp, p_a, p_b = np.array(p_grp), np.array(p_a), np.array(p_b)
    # adaptive Gauss-Kronrod over all panels at once
    keys_done, y_done = np.zeros(0), np.zeros(0)
    out = []
    for level in range(max_levels + 1):
        n_p = p_a.size
        if n_p == 0:
            break
        pm, ph = 0.5 * (p_a + p_b), 0.5 * (p_b - p_a)
        th = pm[:, None] + ph[:, None] * _KNODES[None, :]
        gm, gh = g_mid[p_grp][:, None], g_half[p_grp][:, None]
        u = (gm + gh * np.cos(th)).ravel()
        dudth = (gh * np.sin(th)).ravel()
        keys = (p_grp[:, None] * 4.0 + th).ravel()
        y0 = np.interp(keys, keys_done, y_done) if keys_done.size else None
        c = _curve(law, Delta, u, y0)
        o = np.argsort(np.concatenate([keys_done, keys]))
        keys_done = np.concatenate([keys_done, keys])[o]
        y_done = np.concatenate([y_done, c.v**2])[o]
        with np.errstate(all="ignore"):
            i1 = (c.v / (np.pi * Delta) * c.dxdu * dudth).reshape(n_p, 15)
        i1 = np.where(np.isfinite(i1), i1, 0.0)
        xs = c.x.reshape(n_p, 15)
        hs = c.G.real.reshape(n_p, 15)
        dw = (_KWEIGHTS - _GWEIGHTS)[None, :] * ph[:, None]
        err = (
            np.abs(np.sum(dw * i1, axis=1))
            + np.abs(np.sum(dw * i1 * xs, axis=1)) / (1 + np.max(np.abs(xs), axis=1))
            + np.abs(np.sum(dw * i1 * hs, axis=1)) / (1 + np.max(np.abs(hs), axis=1))
        )
        # tolerance, raised to the rounding level of u = mid + half cos(theta) for narrow
        # intervals far from 0 (u - t then carries a relative error eps |u| / half)
        allowed = np.maximum(tol, g_eps[p_grp]) * g_mass[p_grp] * (p_b - p_a) / math.pi
        floor = (
            1e-14
            * np.sum(np.abs(_KWEIGHTS[None, :] * ph[:, None] * i1), axis=1)
            * (1 + np.max(np.abs(hs), axis=1) * Delta)
        )
        n_next = 2 * np.count_nonzero(err > np.maximum(allowed, floor))
        last = level == max_levels or n_next > 20000  # at most 300000 new nodes per level
        ok = (err <= np.maximum(allowed, floor)) | last | (ph < 1e-10)
        if last and not np.all(err <= np.maximum(allowed, floor)):
            warnings.warn(
                f"deformed_spectrum: adaptive quadrature stopped refining at Delta={Delta:g} "
                f"(largest panel error {np.max(err - allowed):.2e} above tolerance)",
                RuntimeWarning,
                stacklevel=2,
            )
        wk = _KWEIGHTS[None, :] * ph[:, None]
        out.append((c, (wk * i1).ravel(), np.repeat(ok, 15)))
        split = np.flatnonzero(~ok)
        p_grp = np.repeat(p_grp[split], 2)
        p_a, p_b = (
            np.stack([p_a[split], pm[split]], axis=1).ravel(),
            np.stack([pm[split], p_b[split]], axis=1).ravel(),
        )
    xs_, ws_, rho_, hil_ = [], [], [], []
    for c, w, keep in out:
        keep = keep & (c.v > 0) & (w != 0)
        xs_.append(c.x[keep])
        ws_.append(w[keep])
        rho_.append(c.v[keep] / (np.pi * Delta))
        hil_.append(c.G.real[keep])
    x, w, rho, hil = (np.concatenate(a) for a in (xs_, ws_, rho_, hil_))
    order = np.argsort(x)
    x, w, rho, hil = x[order], w[order], rho[order], hil[order]
    mass = float(np.sum(w))
    if not (abs(mass - 1.0) < 1e-6):
        warnings.warn(
            f"deformed_spectrum: quadrature mass {mass:.8f} (expected 1) at Delta={Delta:g}",
            RuntimeWarning,
            stacklevel=2,
        )
    intervals = tuple((float(a), float(b)) for a, b in zip(comp.x_lo, comp.x_hi, strict=True))
    return DeformedSpectrum(Delta, intervals, x, w / mass, rho, hil, mass)


def conditional_overlap(spec: DeformedSpectrum) -> np.ndarray:
    """``E[v^T S0 v | x] = x - 2 Delta h_R(x)`` at the nodes of ``spec`` (v: eigenvector of R)."""
    return spec.x - 2 * spec.Delta * spec.hilbert


class SpectralIntegrals(NamedTuple):
    """Limits for a spectral map ``F(R)`` with scalar ``f`` (see :func:`spectral_integrals`)."""

    q: float  # Tr F(R)^2 / d       -> int rho_R f^2
    m: float  # Tr F(R) S0 / d      -> int rho_R f (x - 2 Delta h_R)
    div: float  # div F / d^2        -> int rho_R f h_R


def spectral_integrals(spec: DeformedSpectrum, f: Callable) -> SpectralIntegrals:
    """``q, m, div`` of the spectral map with scalar function ``f`` (vectorized callable)."""
    fx = np.asarray(f(spec.x), dtype=float)
    return SpectralIntegrals(
        float(np.sum(spec.w * fx**2)),
        float(np.sum(spec.w * fx * conditional_overlap(spec))),
        float(np.sum(spec.w * fx * spec.hilbert)),
    )


# --------------------------------------------------------------------------------------
# Outliers
# --------------------------------------------------------------------------------------


class Outlier(NamedTuple):
    """An isolated eigenvalue ``theta`` of ``S0`` seen in ``R = S0 + sqrt(Delta) W_goe``.

    ``position``: the outlier eigenvalue of ``R`` (``omega(position) = theta``);
    ``overlap2``: squared overlap ``(v^T e)^2 = 1/omega'(position) = H'(theta)`` between
    the outlier eigenvector ``v`` of ``R`` and the eigenvector ``e`` of ``S0``.
    """

    theta: float
    position: float
    overlap2: float


def _gap_solutions(law: _Law, value: float) -> list[float]:
    """Real ``t`` outside supp ``mu`` with ``G_mu(t) = value`` (``G`` decreases on each gap)."""
    sols = []
    edges = [(-np.inf, law.lo[0])]
    edges += list(zip(law.hi[:-1], law.lo[1:], strict=True))
    edges += [(law.hi[-1], np.inf)]
    for a, b in edges:
        # bracket in a finite interval: G(t) ~ 1/t far away
        span = max(1.0, abs(1.0 / value) * 2 + 1.0) if value != 0 else np.inf
        lo_ = a if np.isfinite(a) else b - span - abs(b)
        hi_ = b if np.isfinite(b) else a + span + abs(a)
        eps = 1e-13 * max(1.0, abs(lo_), abs(hi_))
        with np.errstate(all="ignore"):
            g_lo = _G_real(law, np.array([lo_ + eps]))[0][0]
            g_hi = _G_real(law, np.array([hi_ - eps]))[0][0]
        if not np.isfinite(g_lo):
            g_lo = np.inf
        if not np.isfinite(g_hi):
            g_hi = -np.inf
        if not (g_hi < value < g_lo):
            continue

        def fun(t, idx):
            with np.errstate(all="ignore"):
                G, G1 = _G_real(law, t, 1)
            return G - value, G1

        t = _bracketed_newton(fun, np.array([lo_ + eps]), np.array([hi_ - eps]), 1.0)[0]
        sols.append(float(t))
    return sols


def isolated_eigenvalues(target, *, n_atoms: int = 4000) -> tuple[float, ...]:
    """Limits of the isolated eigenvalues of ``S0`` (zero-mass part of its spectrum).

    For :class:`~attnlib.targets.Spiked` with a bulk ``B`` (``S0 = B + sum_k theta_k u_k u_k^T``,
    ``u_k`` Haar) these are not the ``theta_k`` themselves: each spike gives an eigenvalue
    ``t`` of ``S0`` in every gap of the bulk's support where ``G_B(t) = 1/theta_k`` has a
    solution (rank-one perturbation formula). With no bulk they are the ``theta_k``.
    Other targets: ``target.outliers()``.
    """
    if isinstance(target, SpectralMeasure):
        return ()
    if isinstance(target, Spiked):
        if target.bulk is None:
            return tuple(float(t) for t in target.spikes)
        law = _law(target.bulk, n_atoms)
        out = []
        for th in target.spikes:
            if th != 0:
                out.extend(_gap_solutions(law, 1.0 / th))
        return tuple(sorted(out))
    return tuple(float(t) for t in target.outliers())


def outliers(target, Delta, *, n_atoms: int = 4000) -> tuple[Outlier, ...]:
    """Outlier eigenvalues of ``R = S0 + sqrt(Delta) W_goe`` and their eigenvector overlaps.

    For each isolated eigenvalue ``theta`` of ``S0`` (:func:`isolated_eigenvalues`) that
    lies outside the closure of ``U = {u : F(u, 0) > 1/Delta}``, ``R`` has an outlier at
    ``z = H(theta) = theta + Delta G_mu(theta)`` (the solution of ``omega(z) = theta``) with
    squared overlap ``1/omega'(z) = H'(theta) = 1 + Delta G_mu'(theta)``. Thetas inside ``U``
    do not detach (no entry). Pure spike + GOE: ``z = theta + Delta/theta``,
    ``overlap2 = 1 - Delta/theta^2`` for ``theta^2 > Delta``.
    """
    law, Delta = _prepare(target, Delta, n_atoms)
    out = []
    for th in isolated_eigenvalues(target, n_atoms=n_atoms):
        with np.errstate(all="ignore"):
            F = _F0(law, np.array([th]))[0]
        if not (F * Delta < 1.0):
            continue
        G, G1 = (g[0] for g in _G_real(law, np.array([th]), 1))
        out.append(Outlier(float(th), float(th + Delta * G), float(1 + Delta * G1)))
    return tuple(out)


# --------------------------------------------------------------------------------------
# Finite-d divergence of a spectral map
# --------------------------------------------------------------------------------------


def divergence_spectral(eigs, f: Callable, fprime: Callable) -> float:
    """Divergence of the spectral map ``F(B) = O f(diag(eigs)) O^T`` at a symmetric ``B``.

    Over the ``D = d(d+1)/2`` orthonormal coordinates of symmetric matrices:
    ``div F = sum_i f'(x_i) + sum_{i<j} (f(x_i) - f(x_j)) / (x_i - x_j)``; coinciding
    eigenvalues use ``(f'(x_i) + f'(x_j)) / 2``. ``f`` and ``fprime`` are vectorized
    callables; memory ``O(d^2)`` in blocks.
    """
    x = np.asarray(_checks.finite_array("eigs", eigs, ndim=1), dtype=float)
    fx = np.asarray(f(x), dtype=float)
    dx = np.asarray(fprime(x), dtype=float)
    if fx.shape != x.shape or dx.shape != x.shape:
        raise ValueError("f and fprime must map eigs (d,) to arrays of shape (d,)")
    total = float(np.sum(dx))
    d = x.size
    tol = 1e-12 * max(1.0, float(np.max(np.abs(x)))) if d else 0.0
    for sl in _chunks(d, d, budget=1 << 22):
        rows = np.arange(sl.start, sl.stop)
        num = fx[sl, None] - fx[None, :]
        den = x[sl, None] - x[None, :]
        close = np.abs(den) <= tol
        with np.errstate(all="ignore"):
            q = np.where(close, 0.5 * (dx[sl, None] + dx[None, :]), num / np.where(close, 1, den))
        upper = np.arange(d)[None, :] > rows[:, None]
        total += float(np.sum(q[upper]))
    return total
