"""Eigenvector statistics of ``R = S0 + sqrt(Delta) W_goe`` against the target.

Closed forms ``a(x), b(x), w(x)`` and the overlap density ``O(x, lambda)`` (see
:mod:`attnlib.spectrum`), and their finite-``d`` counterparts for a trained matrix.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from attnlib import _checks, rmt
from attnlib.spectrum.common import _DEFAULT_NODES, _deformed, _profile, _zero_mass

__all__ = [
    "DirectionProfile",
    "TopOverlaps",
    "overlap_density",
    "direction_profile",
    "direction_statistics",
    "kept_mass_in_range",
    "top_overlaps",
]


class DirectionProfile(NamedTuple):
    r"""Large-``d`` statistics of the eigenvectors of ``R`` at eigenvalue ``x``.

    Attributes:
      x: eigenvalues of ``R`` (the nodes).
      a: ``E[u^T S0 u | x] = x - 2 Delta h_R(x)``.
      b: ``E[||S0 u||^2 | x]``.
      w: ``E[||P0 u||^2 | x]`` (``P0`` projector on the range of ``S0``).
      rho: ``rho_R(x)``.
      hilbert: ``h_R(x) = Re G_R(x + i0)``.
    """

    x: np.ndarray
    a: np.ndarray
    b: np.ndarray
    w: np.ndarray
    rho: np.ndarray
    hilbert: np.ndarray


def _points(name: str, x) -> np.ndarray:
    """Finite real values at most ``1e100`` in magnitude (any shape)."""
    a = _checks.numeric_array(name, x, kinds="biuf")
    return np.asarray(_checks.finite_array(name, a, max_abs=_checks.MAX_ABS), dtype=float)


def _rho_h_at(target, Delta, x):
    """``rho_R(x)`` and ``h_R(x)`` at arbitrary real ``x``."""
    x = _points("x", x)
    G = np.asarray(rmt.stieltjes(target, Delta, x + 0j), complex)  # boundary value G(x + i0)
    return np.maximum(-G.imag / math.pi, 0.0), G.real


def overlap_density(target, Delta: float, x, theta):
    r"""``O(x, theta)``: ``d`` times the mean squared overlap of eigenvectors of ``R`` and ``S0``.

    For an eigenvector of ``R = S0 + sqrt(Delta) W_goe`` with eigenvalue ``x`` in
    the bulk and one of ``S0`` with eigenvalue ``theta`` (the notation page's
    ``theta_i``, target eigenvalues):
    ``O = Delta / ((theta - x + Delta h_R(x))^2 + (pi Delta rho_R(x))^2)``.
    ``x`` and ``theta`` broadcast against each other.
    """
    target = _checks.target(target)
    Delta = _checks.positive("Delta", Delta)
    x = _points("x", x)
    theta = _points("theta", theta)
    try:
        np.broadcast_shapes(x.shape, theta.shape)
    except ValueError:
        raise ValueError(f"x {x.shape} and theta {theta.shape} must broadcast") from None
    rho, h = _rho_h_at(target, Delta, x)
    with np.errstate(all="ignore"):
        out = Delta / ((theta - x + Delta * h) ** 2 + (math.pi * Delta * rho) ** 2)
    if not np.all(np.isfinite(out)):
        raise ValueError(
            f"overlap_density overflows at Delta = {Delta:g} (theta = x outside the support, "
            "where O = 1 / (Delta h_R^2)); use a larger Delta"
        )
    return out


def direction_profile(target, Delta: float, x=None, *, n_nodes: int = _DEFAULT_NODES):
    r"""Closed-form ``a(x), b(x), w(x)`` of the eigenvectors of ``R`` (module docstring).

    ``x=None`` evaluates at the quadrature nodes of :func:`attnlib.rmt.deformed_spectrum`.
    Returns a :class:`DirectionProfile`.
    """
    target = _checks.target(target)
    Delta = _checks.positive("Delta", Delta)
    if x is None:
        x, _, rho, h, _ = _deformed(target, Delta, _checks.integer("n_nodes", n_nodes, 16))
    else:
        x = _points("x", x)
        rho, h = _rho_h_at(target, Delta, x)
    a, b, w = _profile(x, rho, h, Delta, _zero_mass(target))
    return DirectionProfile(x=x, a=a, b=b, w=w, rho=rho, hilbert=h)


def direction_statistics(S, S0, *, rank_tol: float = 1e-8):
    r"""Finite-``d`` eigen-statistics ``(s, a, b, w)`` of a symmetric ``S`` against ``S0``.

    ``S = sum_i s_i u_i u_i^T`` (ascending ``s``), ``a_i = u_i^T S0 u_i``,
    ``b_i = ||S0 u_i||^2``, ``w_i = ||P0 u_i||^2`` with ``P0`` the projector on the
    eigenvectors of ``S0`` with ``|lambda| > rank_tol max |lambda|``.
    Returns four ``(d,)`` arrays.
    """
    S0 = np.asarray(_checks.square_matrix("S0", S0, symmetric=True), float)
    S = np.asarray(_checks.square_matrix("S", S, S0.shape[0], against="S0"), float)
    rank_tol = _checks.nonnegative("rank_tol", rank_tol)
    s, U = np.linalg.eigh((S + S.T) / 2)
    SU = S0 @ U
    a = np.sum(U * SU, axis=0)
    b = np.sum(SU * SU, axis=0)
    l0, V0 = np.linalg.eigh((S0 + S0.T) / 2)
    rng = np.abs(l0) > rank_tol * max(np.max(np.abs(l0)), 1e-300)
    w = np.sum((V0[:, rng].T @ U) ** 2, axis=0)
    return s, a, b, w


def kept_mass_in_range(S, S0, *, rank_tol: float = 1e-8) -> float:
    """``(1/d) sum_{i kept} ||P0 u_i||^2``: how much of the kept eigenvectors of ``S`` lies in
    the range of ``S0`` (``P0`` as in :func:`direction_statistics`); ``u_i`` is kept when
    ``|s_i| > rank_tol max |s|``. Equals the rank fraction of ``S`` when its range lies in
    that of ``S0``."""
    rank_tol = _checks.nonnegative("rank_tol", rank_tol)
    s, _, _, w = direction_statistics(S, S0)
    kept = np.abs(s) > rank_tol * np.abs(s).max()
    return float(np.sum(w[kept]) / s.size)


class TopOverlaps(NamedTuple):
    """``eigs``: the eigenvalues of ``S`` (ascending); ``theta``: the ``k`` largest of ``S0``
    (descending); ``overlap2``: ``(u_j . v_j)^2`` of the ``j``-th top eigenvectors of ``S``
    and ``S0``, ``j = 1..k``."""

    eigs: np.ndarray
    theta: np.ndarray
    overlap2: np.ndarray


def top_overlaps(S, S0, k: int) -> TopOverlaps:
    """The top eigenvectors of ``S`` against those of ``S0`` (spiked targets: the learned
    outliers' directions, to compare with ``LearnedOutlier.overlap2``)."""
    S0 = np.asarray(_checks.square_matrix("S0", S0, symmetric=True), float)
    S = np.asarray(_checks.square_matrix("S", S, S0.shape[0], against="S0"), float)
    k = _checks.integer("k", k, 1)
    if k > S0.shape[0]:
        raise ValueError(f"k must be an integer in [1, d] = [1, {S0.shape[0]}], got {k}")
    ev, U = np.linalg.eigh(S)
    l0, V = np.linalg.eigh(S0)
    overlap2 = np.array([(U[:, -1 - j] @ V[:, -1 - j]) ** 2 for j in range(k)])
    return TopOverlaps(ev, l0[::-1][:k], overlap2)
