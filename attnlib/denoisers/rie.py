r"""The rotationally invariant estimator (RIE) of a symmetric matrix observed in GOE noise.

Conventions (``W_goe``, ``rho_R``, ``h_R``): :mod:`attnlib.rmt`; the observation is
``R = S0 + sqrt(Delta) W_goe``.

For a rotationally invariant prior on ``S0`` the Bayes-optimal estimator of
``S0`` given ``R`` keeps the eigenvectors of ``R`` and maps each eigenvalue ``x``
to ``E[v^T S0 v | x] = x - 2 Delta h_R(x)`` (``v`` the eigenvector); its error per
``d`` is

    mmse_den(Delta) = Q0 - int rho_R (x - 2 Delta h_R)^2
                    = Delta - (4 pi^2 / 3) Delta^2 int rho_R^3,

the second line from ``int rho_R h_R = 1/2`` and ``int rho_R h_R^2 = (pi^2/3)
int rho_R^3``. ``Delta -> 0``: ``mmse_den / Delta -> 2 kappa0 - kappa0^2`` for a
rank-``kappa0 d`` target (twice the dimension of the rank-``kappa0 d`` manifold per
``d^2``); ``Delta -> infinity``: ``mmse_den -> Q0 - (Tr S0 / d)^2``.

:func:`rie_denoise` applies the map to a matrix; :class:`RIE` is the denoiser of
GAMP-RIE (:func:`attnlib.bayes.gamp_rie`, on :func:`attnlib.gamp.run`), at the noise
``Delta_eff = 1 / (2 a_hat)`` of each iteration. :mod:`attnlib.bayes` re-exports
:func:`mmse_den`, :func:`rie_function` and :func:`rie_denoise`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import numpy as np

from attnlib import _checks, rmt
from attnlib.denoisers.spectral import integrate

__all__ = [
    "MMSE",
    "RIE",
    "mmse_den",
    "mmse_den_parts",
    "prior_variance",
    "rie_function",
    "rie_denoise",
]


class MMSE(NamedTuple):
    """``mmse_den`` by its two formulas (``overlap``: ``Q0 - int rho (x - 2 Delta h)^2``;
    ``cubic``: ``Delta - (4 pi^2/3) Delta^2 int rho^3``) on the same quadrature."""

    overlap: float
    cubic: float


def prior_variance(target) -> float:
    """``Q0 - (Tr S0 / d)^2``: ``mmse_den`` at infinite noise (the prior's own error)."""
    _checks.target(target)
    mean = target.measure().moment(1)
    return float(target.Q0 - mean * mean)


def mmse_den_parts(target, Delta: float) -> MMSE:
    """Both formulas of :func:`mmse_den` at ``Delta > 0`` (their gap is the quadrature error)."""
    _checks.target(target)
    Delta = _checks.positive("Delta", Delta)
    spec = rmt.deformed_spectrum(target, Delta)
    overlap = float(target.Q0 - integrate(spec, rmt.conditional_overlap(spec)).q)
    cubic = float(Delta - (4 * math.pi**2 / 3) * Delta**2 * np.sum(spec.w * spec.density**2))
    return MMSE(overlap, cubic)


def mmse_den(target, Delta: float) -> float:
    r"""Error ``lim ||F(R) - S0||_F^2 / d`` of the RIE at noise ``Delta > 0``.

    Uses ``Delta - (4 pi^2/3) Delta^2 int rho_R^3`` (no cancellation against ``Q0`` at
    small ``Delta``). ``Delta = 0`` returns 0.
    """
    _checks.target(target)
    Delta = _checks.nonnegative("Delta", Delta)
    if Delta == 0.0:
        return 0.0
    return mmse_den_parts(target, Delta).cubic


def rie_function(target, Delta: float, x) -> np.ndarray:
    """``f(x) = x - 2 Delta h_R(x)`` at real ``x`` (any shape), ``h_R`` of the limiting ``rho_R``.

    Outside the support of ``rho_R`` (finite-``d`` eigenvalues beyond the edge)
    ``h_R`` is the real Stieltjes transform there, so ``f`` stays continuous.
    """
    _checks.target(target)
    Delta = _checks.positive("Delta", Delta)
    x = np.asarray(_checks.finite_array("x", x), dtype=float)
    h = rmt.stieltjes(target, Delta, x.astype(complex)).real
    return x - 2 * Delta * h


class Denoised(NamedTuple):
    """Result of :func:`rie_denoise`: the estimate ``S`` ``(d, d)``, the eigenvalues ``x`` of
    ``R`` (ascending), ``f(x)``, and ``div``: the divergence of the spectral map
    over the ``d (d + 1) / 2`` orthonormal coordinates of symmetric matrices."""

    S: np.ndarray
    x: np.ndarray
    f: np.ndarray
    div: float


def rie_denoise(R, target, Delta: float) -> Denoised:
    r"""Apply the RIE to a symmetric ``(d, d)`` matrix ``R`` (eigenvectors kept, ``x -> f(x)``).

    ``f`` uses the *limiting* ``h_R`` of ``S0 + sqrt(Delta) W_goe`` for the given
    target (the prior is known, as in Bayes-optimal inference). The divergence is
    ``sum_i f'(x_i) + sum_{i<j} (f(x_i) - f(x_j)) / (x_i - x_j)`` with ``f'`` from
    finite differences of ``f`` between neighbouring eigenvalues (an ``O(1/d)``
    relative effect on the total).
    """
    R = np.asarray(_checks.square_matrix("R", R), dtype=float)
    x, U = np.linalg.eigh(0.5 * (R + R.T))
    f = rie_function(target, Delta, x)
    fp = np.gradient(f, x) if x.size > 1 else np.ones_like(x)
    dx = x[:, None] - x[None, :]
    tie = np.abs(dx) <= 1e-12 * (1.0 + np.max(np.abs(x)))
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(tie, 0.5 * (fp[:, None] + fp[None, :]), (f[:, None] - f[None, :]) / dx)
    div = float(np.sum(fp) + 0.5 * (np.sum(q) - np.trace(q)))
    S = (U * f[None, :]) @ U.T
    return Denoised(0.5 * (S + S.T), x, f, div)


@dataclasses.dataclass(frozen=True)
class RIE:
    """The Bayes-optimal denoiser of GAMP-RIE and of the Bayes state evolution (numpy, on
    the host): ``Delta_eff = 1 / (2 a_hat)``, ``S_hat = F(B)`` with the RIE of ``target``
    at ``Delta_eff`` and ``v = 2 Delta_eff div F(B) / d^2`` (``lam`` is not used); its
    error at ``Delta`` in the limit, :meth:`mmse` (the state evolution's input side)."""

    target: Any
    jittable = False

    def __post_init__(self):
        _checks.target(self.target)

    def __call__(self, B, a_hat, lam):
        d = B.shape[0]
        Delta = 1.0 / (2 * a_hat)
        den = rie_denoise(B, self.target, Delta)
        return den.S, 2 * Delta * den.div / d**2

    def mmse(self, Delta: float) -> float:
        """:func:`mmse_den` of ``target`` at ``Delta >= 0``."""
        return mmse_den(self.target, Delta)
