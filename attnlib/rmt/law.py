"""Limiting spectral measure ``mu`` of a target and its Stieltjes transform ``G_mu``.

A target enters through its limiting measure: the Wishart family through its
algebraic Stieltjes transform (branch cut exactly on the Marchenko-Pastur support,
so that it is also valid on the real axis; it equals ``Wishart.stieltjes`` off the
axis), every other target through the atoms of ``target.measure(n_atoms)``.
``G(z) = int mu(dt) / (z - t)`` and ``F(u, v) = int mu(dt) / ((u - t)^2 + v^2)``
(see :mod:`attnlib.rmt`). Laws are cached per ``(target, n_atoms)``; their arrays
are read-only.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from attnlib import _checks
from attnlib.targets import SpectralMeasure, Spiked, Target, Wishart

__all__: list[str] = []  # helpers of attnlib.rmt's public functions, no public name

_TINY = 1e-300


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
    if c >= 1.0:  # full rank: one piece [a, b] (a = 0 at c = 1, a hard edge), no atom
        return _Law("wishart", np.array([a]), np.array([b]), np.array([1.0]), c=float(c))
    return _Law("wishart", np.array([0.0, a]), np.array([0.0, b]), np.array([1 - c, c]), c=float(c))


def _read_only(law: _Law) -> _Law:
    """The same law with its arrays marked read-only (laws are shared through the cache)."""
    for a in law:
        if isinstance(a, np.ndarray):
            a.setflags(write=False)
    return law


@functools.lru_cache(maxsize=64)
def _law_cached(target: Target, n_atoms: int) -> _Law:
    return _build_law(target, n_atoms)


def _build_law(target, n_atoms: int) -> _Law:
    return _read_only(_new_law(target, n_atoms))


def _new_law(target, n_atoms: int) -> _Law:
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
            # the branch cut of s is [a, b], and G ~ 1/z at infinity, G ~ (1 - c)/z at 0
            # for c < 1 (for c >= 1 the numerator vanishes at 0: no atom).
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
    return [o.reshape(shape) for o in _atom_sums(z, t, w, out)]


def _atom_sums(z, t, w, out) -> list[np.ndarray]:
    """``out[k] = d^k/dz^k sum_j w_j / (z - t_j)`` at flat ``z`` (in place; chunked)."""
    nder = len(out) - 1
    with np.errstate(all="ignore"):
        for sl in _chunks(z.size, t.size):
            r = 1.0 / (z[sl, None] - t[None, :])
            rk = r
            for k in range(nder + 1):
                out[k][sl] = (-1) ** k * math.factorial(k) * (rk @ w)
                if k < nder:
                    rk = rk * r
    return out


def _G_real(law: _Law, u, nder: int = 0) -> list[np.ndarray]:
    """Real ``[G, ..., G^(nder)]`` at real ``u`` outside the support of ``mu`` (inf/nan on it)."""
    u = np.asarray(u, dtype=float)
    if law.kind == "wishart":
        return [np.real(g) for g in _G(law, u + 0j, nder)]
    flat = u.ravel()
    out = [np.empty(flat.shape) for _ in range(nder + 1)]
    return [o.reshape(u.shape) for o in _atom_sums(flat, law.atoms, law.weights, out)]


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
