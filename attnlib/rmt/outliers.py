"""Isolated eigenvalues of the target and the outliers they create in ``R``."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from attnlib import _checks
from attnlib.rmt.law import _F0, _G_real, _Law, _law
from attnlib.rmt.roots import _bracketed_newton
from attnlib.rmt.support import _prepare
from attnlib.targets import SpectralMeasure, Spiked, Target

__all__ = ["Outlier", "isolated_eigenvalues", "outliers"]


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
    n_atoms = _checks.integer("n_atoms", n_atoms, 1)
    if isinstance(target, SpectralMeasure):
        return ()
    if not isinstance(target, Target):
        raise ValueError(f"target must be an attnlib.targets.Target, got {type(target)!r}")
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
