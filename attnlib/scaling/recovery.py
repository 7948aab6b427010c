r"""Recovered modes of a target with an atomic spectrum: theory and trained matrices.

In the state evolution the learned matrix is ``S_hat = F(R)`` with
``R = S0 + sqrt(Delta_eff) W_goe`` and ``f(x) = (c x - tau)_+``
(:class:`attnlib.spectral_map.SpectralMap`): the eigenvectors of ``R`` with eigenvalue
above ``t = tau / c`` are kept. Writing ``omega(x) = u + i v`` for the subordination
function at ``x + i0`` (``u = x - Delta h_R(x)``, ``v = pi Delta rho_R(x)``),
``G_R(x) = sum_k pi_k / (omega - lambda_k)`` (plus the zero eigenvalues), so the density
of ``R`` splits into the spectral components of the modes,
``rho_R = sum_k rho_k + rho_null`` with

    rho_k(x) / rho_R(x) = pi_k Delta / ((u - lambda_k)^2 + v^2) = E[ ||P_k v_x||^2 | x ],

``P_k`` the projector on the eigenspace of mode ``k`` and ``v_x`` a unit eigenvector of
``R`` at ``x`` (the share of mode ``k`` among the eigenvectors at ``x``). The learned
fraction of mode ``k`` is ``phi_k = int_{x > t} rho_k / pi_k``, the limit of
``||P_+ P_k||_F^2 / (pi_k d)`` with ``P_+`` the projector on the range of ``S_hat``. A
mode is *recovered* when ``phi_k > 1/2`` (:func:`recovered_modes`); the same fractions
of a trained matrix are :func:`recovered_modes_trained`. A fraction that cannot be
computed (NaN) is an error, never a mode "not recovered" (:func:`count_recovered`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from attnlib import _checks, rmt
from attnlib.rmt.integrals import integrate
from attnlib.spectral_map import SpectralMap
from attnlib.targets import PowerLawModes, atoms_and_weights

__all__ = [
    "SpectralSummary",
    "spectral_summary",
    "count_recovered",
    "RecoveredModes",
    "recovered_modes",
    "recovered_modes_trained",
]


def _modes_of(target) -> tuple[np.ndarray, np.ndarray]:
    """Non-zero atoms of the target's measure (the modes), decreasing, and their masses."""
    if isinstance(target, PowerLawModes):
        return target.mode_eigenvalues(), target.mode_weights()
    a, w = atoms_and_weights(target)
    keep = (a != 0) & (w > 0)
    if not keep.any():
        raise ValueError("target has no non-zero eigenvalue group (no modes to recover)")
    if keep.sum() > 5000:
        raise ValueError("target must have an atomic spectrum with at most 5000 distinct modes")
    a, w = a[keep], w[keep]
    order = np.argsort(-a, kind="stable")
    return a[order], w[order]


class SpectralSummary(NamedTuple):
    """Large-``d`` quantities of ``F(R)``, ``R = S0 + sqrt(Delta) W_goe``, ``f(x) = (c x - tau)_+``.

    ``mse = ||F(R) - S0||_F^2 / d`` (Stein form, no cancellation between ``O(1)`` terms),
    ``div = div F / d^2 = int rho_R f h_R``, ``rank_fraction`` (mass above ``tau / c``);
    per mode (decreasing eigenvalue order): ``fractions`` ``phi_k`` (module docstring) and
    ``strengths``, the learned part ``Tr(P_k F(R)) / Tr(P_k S0)``.
    """

    Delta: float
    threshold: float
    mse: float
    div: float
    rank_fraction: float
    fractions: np.ndarray
    strengths: np.ndarray


def spectral_summary(
    target, Delta: float, tau: float, c: float = 1.0, *, n_nodes: int = 400
) -> SpectralSummary:
    r"""Error, divergence and per-mode recovered fractions of the spectral soft threshold.

    The shares of the modes as in the module docstring (on the support they sum to 1: the
    equation defining ``v``); the error :func:`attnlib.rmt.stein_mse`; the quadrature
    :func:`attnlib.rmt.deformed_spectrum` with a breakpoint at ``tau / c``.
    """
    Delta = _checks.positive("Delta", Delta)
    c = _checks.in_interval("c", c, 0.0, _checks.MAX_ABS)
    tau = _checks.nonnegative("tau", tau)
    sm = SpectralMap(c, tau, "nuclear")
    n_nodes = _checks.integer("n_nodes", n_nodes, 8)
    lam_k, pi_k = _modes_of(target)
    t = sm.threshold
    spec = rmt.deformed_spectrum(target, Delta, n_nodes, breakpoints=(t,))
    x, w, rho, h = (
        np.asarray(a, dtype=float) for a in (spec.x, spec.w, spec.density, spec.hilbert)
    )
    f = sm.f(x)
    s = integrate(spec, f)
    above = sm.kept(x)
    u = x[above] - Delta * h[above]
    v = np.pi * Delta * rho[above]
    share = pi_k[None, :] * Delta / ((u[:, None] - lam_k[None, :]) ** 2 + v[:, None] ** 2)
    fractions = np.clip((w[above] @ share) / pi_k, 0.0, 1.0)
    strengths = ((w[above] * f[above]) @ share) / (pi_k * lam_k)
    mse = rmt.stein_mse(spec, sm.f)
    return SpectralSummary(Delta, t, mse, s.div, s.rank, fractions, strengths)


def count_recovered(fractions, level: float) -> int:
    """Number of modes with ``fractions > level``; ``ValueError`` if a fraction is NaN.

    A NaN fraction means the fraction could not be computed (e.g. a mode with no
    eigenvector of ``S0`` at this ``d``): it is reported, never counted as "not recovered".
    """
    fr = np.asarray(_checks.numeric_array("fractions", fractions, kinds="biuf"), dtype=float)
    level = _checks.in_interval("level", level, 0.0, 1.0, high_open=True)
    bad = np.flatnonzero(np.isnan(fr))
    if bad.size:
        raise ValueError(
            f"fractions: the recovered fraction of mode(s) {bad.tolist()} is NaN (undefined), "
            "so the number of recovered modes is undefined"
        )
    return int(np.sum(fr > level))


class RecoveredModes(NamedTuple):
    """Which modes are learned.

    ``count``: number of modes with ``fractions > level``; ``fractions`` (``n_modes``,
    decreasing eigenvalue order): ``phi_k`` (module docstring); ``strengths``:
    ``Tr(P_k S_hat) / Tr(P_k S0)``;
    ``threshold``: ``tau / c`` (theory) or the eigenvalue cut used (trained); ``level``.
    """

    count: int
    fractions: np.ndarray
    strengths: np.ndarray
    threshold: float
    level: float


def recovered_modes(target, se_result, *, level: float = 0.5, n_nodes: int = 400) -> RecoveredModes:
    """Modes recovered at a state-evolution fixed point (:func:`attnlib.se.solve` result).

    Mode ``k`` is recovered when more than ``level`` of its spectral component in
    ``R = S0 + sqrt(Delta_eff) W_goe`` lies above ``tau / c`` (module docstring).
    """
    level = _checks.in_interval("level", level, 0.0, 1.0, high_open=True)
    for name in ("Delta_eff", "tau", "c"):
        if not hasattr(se_result, name):
            raise ValueError(f"se_result must be an attnlib.se.SEResult, got {type(se_result)!r}")
    if getattr(se_result, "penalty", "nuclear") != "nuclear":
        raise ValueError("recovered_modes needs the nuclear penalty (a threshold tau / c)")
    s = spectral_summary(target, se_result.Delta_eff, se_result.tau, se_result.c, n_nodes=n_nodes)
    return RecoveredModes(
        count_recovered(s.fractions, level), s.fractions, s.strengths, s.threshold, level
    )


def recovered_modes_trained(
    S_hat, S0, target, *, level: float = 0.5, rtol: float = 1e-6
) -> RecoveredModes:
    """Modes recovered by a trained matrix ``S_hat`` for the target matrix ``S0``.

    The eigenvectors of ``S0`` are grouped by the mode eigenvalue they are closest to
    (``target``'s non-zero atoms; eigenvalues closer to 0 are the null space); ``P_+``
    projects on the eigenvectors of ``S_hat`` with eigenvalue above ``rtol`` times its
    largest one; ``fractions[k] = ||P_+ U_k||_F^2 / m_k`` with ``U_k`` the ``m_k``
    eigenvectors of mode ``k``: the finite-``d`` version of ``phi_k``.
    """
    level = _checks.in_interval("level", level, 0.0, 1.0, high_open=True)
    rtol = _checks.positive("rtol", rtol)
    S0 = np.asarray(_checks.square_matrix("S0", S0, symmetric=True), dtype=float)
    S_hat = np.asarray(_checks.square_matrix("S_hat", S_hat), dtype=float)
    if S_hat.shape != S0.shape:
        raise ValueError(f"S_hat has shape {S_hat.shape}, expected the shape {S0.shape} of S0")
    lam_k, _ = _modes_of(target)
    S_hat = (S_hat + S_hat.T) / 2
    e0, U0 = np.linalg.eigh((S0 + S0.T) / 2)
    cand = np.concatenate([lam_k, [0.0]])
    lab = np.argmin(np.abs(e0[:, None] - cand[None, :]), axis=1)
    e1, U1 = np.linalg.eigh(S_hat)
    top = float(np.max(np.abs(e1))) if e1.size else 0.0
    cut = rtol * top
    Up = U1[:, e1 > cut]
    proj = (Up.T @ U0) ** 2  # (n_kept, d): squared overlaps
    col = proj.sum(axis=0)
    diag = np.einsum("ij,ik,kj->j", U0, S_hat, U0)  # u_i^T S_hat u_i
    fr = np.full(lam_k.size, np.nan)
    st = np.full(lam_k.size, np.nan)
    for k in range(lam_k.size):
        sel = lab == k
        if sel.any():
            fr[k] = float(col[sel].mean())
            st[k] = float(diag[sel].mean() / lam_k[k])
    if np.any(np.isnan(fr)):
        missing = np.flatnonzero(np.isnan(fr)).tolist()
        raise ValueError(
            f"S0 has no eigenvalue closest to the eigenvalue of mode(s) {missing} of target: "
            "S0 does not sample this target (or d is too small for every mode)"
        )
    return RecoveredModes(count_recovered(fr, level), fr, st, cut, level)
