"""Quadrature for integrals against ``rho_R`` (:func:`deformed_spectrum`).

On each support interval ``u = mid + half cos(theta)`` and adaptive Gauss-Kronrod
(7-15) panels in ``theta``, graded towards near-singular points (hard edges,
closing gaps) and cut at user breakpoints.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np

from attnlib import _checks
from attnlib.rmt.curve import _curve, _solve_y, _u_at_x
from attnlib.rmt.law import _TINY
from attnlib.rmt.support import _Components, _components, _prepare

__all__ = ["DeformedSpectrum", "deformed_spectrum"]


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
for _a in (_XGK, _WGK, _WG, _KNODES, _KWEIGHTS, _GWEIGHTS):
    _a.setflags(write=False)


def _graded_cuts(features, v, ua, ub, *, ratio=2.0, max_levels=40):
    """theta cuts graded geometrically towards the features inside ``(ua, ub)``.

    A feature ``u_f`` with curve height ``v_f = v(u_f)`` (``v``, same shape as
    ``features``) small compared with the interval is a near-singularity of the integrand
    at distance about ``v_f`` from the real axis; panels ``theta_f +- dtheta ratio^k``
    isolate it so that each panel sees it at a distance comparable to its own length.
    """
    mid, half = 0.5 * (ua + ub), 0.5 * (ub - ua)
    inside = (features > ua) & (features < ub)
    f = features[inside]
    if f.size == 0:
        return []
    v = np.maximum(v[inside], 1e-14 * half)
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


class _Groups(NamedTuple):
    """Groups of support components integrated together, in ``u = mid + half cos(theta)``."""

    mid: np.ndarray
    half: np.ndarray
    mass: np.ndarray
    eps: np.ndarray  # rounding level of u relative to half (narrow intervals far from 0)


class _Panels(NamedTuple):
    """Panels ``[a, b]`` in ``theta`` of group ``grp``."""

    grp: np.ndarray
    a: np.ndarray
    b: np.ndarray


def _theta_cuts(law, Delta, comp, group, n_init, bps, *, v_features):
    """Initial panel ends in ``theta`` for the group of components ``group = (g0, g1)``
    (``v_features``: the curve height ``v(u)`` at ``comp.features``)."""
    g0, g1 = group
    ua, ub = comp.u_lo[g0], comp.u_hi[g1]
    mid, half = 0.5 * (ua + ub), 0.5 * (ub - ua)
    th_cuts = list(np.linspace(0.0, math.pi, n_init + 1))
    inner = bps[(bps > comp.x_lo[g0]) & (bps < comp.x_hi[g1])]
    for xb in inner:
        k = np.searchsorted(comp.x_lo, xb, side="right") - 1
        if not (g0 <= k <= g1 and xb < comp.x_hi[k]):
            continue  # in a gap of the group: no kink inside the support
        ubp = _u_at_x(law, Delta, comp, np.array([xb]), k)[0]
        th_cuts.append(float(np.arccos(np.clip((ubp - mid) / half, -1.0, 1.0))))
    if g0 == g1:
        th_cuts += _graded_cuts(comp.features, v_features, ua, ub)
    return np.unique(np.clip(th_cuts, 0.0, math.pi))


def _initial_panels(law, Delta, comp, n_nodes, bps, max_components):
    groups = _groups(comp, max_components)
    # curve heights at the features, once for all groups (graded cuts of single components)
    v_features = np.sqrt(_solve_y(law, comp.features, Delta))
    g = np.empty((4, len(groups)))
    p_grp, p_a, p_b = [], [], []
    for j, (g0, g1) in enumerate(groups):
        ua, ub = comp.u_lo[g0], comp.u_hi[g1]
        half = 0.5 * (ub - ua)
        mass = float(np.sum(comp.mass[g0 : g1 + 1]))
        eps = 30 * np.finfo(float).eps * max(abs(ua), abs(ub)) / max(half, _TINY)
        g[:, j] = (0.5 * (ua + ub), half, mass, eps)
        n_init = max(1, int(math.ceil(n_nodes * mass / 15)))
        th_cuts = _theta_cuts(law, Delta, comp, (g0, g1), n_init, bps, v_features=v_features)
        p_grp += [j] * (th_cuts.size - 1)
        p_a += list(th_cuts[:-1])
        p_b += list(th_cuts[1:])
    return _Groups(*g), _Panels(np.array(p_grp, dtype=int), np.array(p_a), np.array(p_b))


def _panel_nodes(law, Delta, grp: _Groups, pan: _Panels, warm):
    """Curve points and the density integrand at the 15 Kronrod nodes of every panel."""
    pm, ph = 0.5 * (pan.a + pan.b), 0.5 * (pan.b - pan.a)
    th = pm[:, None] + ph[:, None] * _KNODES[None, :]
    gm, gh = grp.mid[pan.grp][:, None], grp.half[pan.grp][:, None]
    u = (gm + gh * np.cos(th)).ravel()
    dudth = (gh * np.sin(th)).ravel()
    keys = (pan.grp[:, None] * 4.0 + th).ravel()
    y0 = np.interp(keys, warm[0], warm[1]) if warm[0].size else None
    c = _curve(law, Delta, u, y0)
    o = np.argsort(np.concatenate([warm[0], keys]))
    warm = (np.concatenate([warm[0], keys])[o], np.concatenate([warm[1], c.v**2])[o])
    with np.errstate(all="ignore"):
        i1 = (c.v / (np.pi * Delta) * c.dxdu * dudth).reshape(-1, 15)
    # off the support (v = 0, rounding at the ends of an interval) the density is exactly 0
    # whatever x'(u); anything else non-finite is an error of the curve
    i1 = np.where(c.v.reshape(-1, 15) == 0, 0.0, i1)
    if not np.all(np.isfinite(i1)):
        raise FloatingPointError(
            f"deformed_spectrum: non-finite density integrand at {np.sum(~np.isfinite(i1))} "
            f"quadrature nodes inside the support (Delta={Delta:g})"
        )
    return c, i1, warm


def _panel_errors(Delta, grp, pan, c, i1, tol):
    """Kronrod-Gauss error estimate of every panel and the error it is allowed."""
    ph = 0.5 * (pan.b - pan.a)
    xs = c.x.reshape(-1, 15)
    hs = c.G.real.reshape(-1, 15)
    dw = (_KWEIGHTS - _GWEIGHTS)[None, :] * ph[:, None]
    err = (
        np.abs(np.sum(dw * i1, axis=1))
        + np.abs(np.sum(dw * i1 * xs, axis=1)) / (1 + np.max(np.abs(xs), axis=1))
        + np.abs(np.sum(dw * i1 * hs, axis=1)) / (1 + np.max(np.abs(hs), axis=1))
    )
    # tolerance, raised to the rounding level of u = mid + half cos(theta) for narrow
    # intervals far from 0 (u - t then carries a relative error eps |u| / half)
    allowed = np.maximum(tol, grp.eps[pan.grp]) * grp.mass[pan.grp] * (pan.b - pan.a) / math.pi
    floor = (
        1e-14
        * np.sum(np.abs(_KWEIGHTS[None, :] * ph[:, None] * i1), axis=1)
        * (1 + np.max(np.abs(hs), axis=1) * Delta)
    )
    return err, np.maximum(allowed, floor)


def _adaptive(law, Delta, grp: _Groups, pan: _Panels, tol, max_levels):
    """Adaptive Gauss-Kronrod over all panels at once; returns ``[(curve, w, keep), ...]``."""
    warm = (np.zeros(0), np.zeros(0))
    out = []
    for level in range(max_levels + 1):
        if pan.a.size == 0:
            break
        c, i1, warm = _panel_nodes(law, Delta, grp, pan, warm)
        err, allowed = _panel_errors(Delta, grp, pan, c, i1, tol)
        ph = 0.5 * (pan.b - pan.a)
        last = level == max_levels or 2 * np.count_nonzero(err > allowed) > 20000
        ok = (err <= allowed) | last | (ph < 1e-10)
        if last and not np.all(err <= allowed):
            warnings.warn(
                f"deformed_spectrum: adaptive quadrature stopped refining at Delta={Delta:g} "
                f"(largest panel error {np.max(err - allowed):.2e} above tolerance)",
                RuntimeWarning,
                stacklevel=3,
            )
        out.append((c, (_KWEIGHTS[None, :] * ph[:, None] * i1).ravel(), np.repeat(ok, 15)))
        split = np.flatnonzero(~ok)
        pm = 0.5 * (pan.a + pan.b)
        pan = _Panels(
            np.repeat(pan.grp[split], 2),
            np.stack([pan.a[split], pm[split]], axis=1).ravel(),
            np.stack([pm[split], pan.b[split]], axis=1).ravel(),
        )
    return out


def _collect(out, Delta, comp) -> DeformedSpectrum:
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
    if not abs(mass - 1.0) < 1e-2:
        raise ValueError(
            f"deformed_spectrum: quadrature mass {mass:.6g} (expected 1) at Delta={Delta:g}: "
            "the quadrature does not resolve rho_R at this Delta"
        )
    if not (abs(mass - 1.0) < 1e-6):
        warnings.warn(
            f"deformed_spectrum: quadrature mass {mass:.8f} (expected 1) at Delta={Delta:g}",
            RuntimeWarning,
            stacklevel=3,
        )
    intervals = tuple((float(a), float(b)) for a, b in zip(comp.x_lo, comp.x_hi, strict=True))
    return DeformedSpectrum(Delta, intervals, x, w / mass, rho, hil, mass)


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

    Nodes where the curve leaves the support by rounding (``v = 0``) carry zero
    density; a non-finite integrand anywhere else raises ``FloatingPointError``.
    """
    law, Delta = _prepare(target, Delta, n_atoms)
    n_nodes = _checks.integer("n_nodes", n_nodes, 1)
    tol = _checks.positive("tol", tol)
    max_components = _checks.integer("max_components", max_components, 1)
    max_levels = _checks.integer("max_levels", max_levels, 0)
    bps = np.sort(
        np.atleast_1d(np.asarray(_checks.finite_array("breakpoints", breakpoints), float))
    )
    comp = _components(law, Delta)
    grp, pan = _initial_panels(law, Delta, comp, n_nodes, bps, max_components)
    out = _adaptive(law, Delta, grp, pan, tol, max_levels)
    return _collect(out, Delta, comp)
