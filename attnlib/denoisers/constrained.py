r"""The rank-constrained denoiser: the nuclear soft threshold cut at the top-``kappa``
quantile of ``rho_R``.

A student of width ``kappa = p / d`` keeps at most ``kappa d`` eigenvalues: the proximal
map of trace + PSD + rank ``<= kappa d`` is ``f(x) = (c x - tau)_+ 1[x > x_kappa]`` with
``int_{x_kappa}^inf rho_R = kappa`` (:mod:`attnlib.width.input` derives it). Where fewer
than ``kappa d`` eigenvalues pass the threshold ``tau / c`` the constraint does not bind
and the map is the nuclear one (:mod:`attnlib.denoisers.nuclear`).
"""

from __future__ import annotations

import math

import numpy as np

from attnlib import _checks, rmt
from attnlib.denoisers.nuclear import nuclear_integrals
from attnlib.denoisers.spectral import Integrals

__all__ = ["rank_cutoff", "binding_cut", "constrained_integrals"]

_N_GRID = 4097


def _cdf_grid(target, Delta):
    """``(x, F(x))`` on ``_N_GRID`` points of the support of ``rho_R`` (non-decreasing)."""
    pieces = rmt.support(target, Delta)
    xs = np.linspace(pieces[0][0], pieces[-1][1], _N_GRID)
    return xs, np.maximum.accumulate(np.asarray(rmt.cdf(target, Delta, xs), dtype=float))


def _invert(xs, F, level) -> float:
    k = int(np.clip(np.searchsorted(F, level), 1, xs.size - 1))
    a, b, Fa, Fb = xs[k - 1], xs[k], F[k - 1], F[k]
    return float(a + (b - a) * (level - Fa) / (Fb - Fa)) if Fb > Fa else float(a)


def rank_cutoff(target, Delta: float, kappa: float) -> float:
    r"""``x_kappa``: the top-``kappa`` quantile of ``rho_R`` (``int_{x_kappa} rho_R = kappa``).

    ``R = S0 + sqrt(Delta) W_goe`` (:mod:`attnlib.rmt`); ``kappa`` in ``(0, 1]``;
    ``kappa = 1`` returns ``-inf`` (no cut). :func:`attnlib.rmt.cdf` on a grid of
    ``4097`` points of the support, inverted by linear interpolation (accuracy about
    ``1e-6`` in mass, that of the cdf).
    """
    Delta = _checks.positive("Delta", Delta)
    kappa = _checks.in_interval("kappa", kappa, 0.0, 1.0)
    if kappa == 1.0:
        return -math.inf
    xs, F = _cdf_grid(target, Delta)
    return _invert(xs, F, 1.0 - kappa)


def binding_cut(target, Delta, c, tau, kappa) -> float:
    """The cut ``x_kappa`` where the rank constraint binds (more than a fraction
    ``kappa`` of ``rho_R`` lies above ``tau / c``), else ``-inf``."""
    if kappa >= 1.0:
        return -math.inf
    xs, F = _cdf_grid(target, Delta)
    if 1.0 - float(np.interp(tau / c, xs, F)) <= kappa:
        return -math.inf
    return _invert(xs, F, 1.0 - kappa)


def constrained_integrals(target, Delta, c, tau, kappa) -> Integrals:
    """:class:`~attnlib.denoisers.spectral.Integrals` of the rank-constrained map (the
    nuclear soft threshold cut at :func:`binding_cut`; the nuclear one for ``kappa = 1``)."""
    return nuclear_integrals(target, Delta, c, tau, binding_cut(target, Delta, c, tau, kappa))
