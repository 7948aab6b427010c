"""Derived scaling exponents ``zeta`` of ``e_test - e_0 ~ alpha^{-zeta}`` (book/08_scaling_laws).

Names follow the notation page (book/notation.md): ``zeta`` the excess-risk exponent,
``nu`` the exponent of the penalty schedule ``lam ~ alpha^{-nu}``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from attnlib import _checks
from attnlib.scaling.schedule import LamSchedule

__all__ = ["ExponentPrediction", "predicted_exponent"]


class ExponentPrediction(NamedTuple):
    """Derived scaling exponent ``zeta`` of ``e_test - e_0 ~ alpha^{-zeta}`` and its phase.

    ``phase`` is ``"threshold"`` (the penalty's threshold limits which modes are
    learned: ``zeta = (1 + nu)(2 - r)``), ``"samples"`` (the effective noise of the
    state evolution sits above the threshold: ``zeta = 2/r - 1``), ``"optimal"``
    (noisy labels, ``nu = -1/2``: ``zeta = 1 - r/2``) or ``"variance"`` (noisy labels,
    ``nu > -1/2``: ``zeta = 1``). ``r = (1 - beta)/gamma`` is the counting exponent.
    Two more in the paper's finite-``d`` regime (:func:`predicted_exponent`'s
    ``all_modes`` and ``interpolating``): ``"shrinkage"`` (``zeta = 2 (1 + nu)``) and
    ``"minimax"`` (noisy labels below interpolation: ``zeta = 1 - r/2``).
    """

    zeta: float
    phase: str
    r: float


def _counting_exponent(gamma, share_exponent) -> float:
    gamma = _checks.positive("gamma", gamma)
    b = _checks.finite("share_exponent", share_exponent)
    r = (1.0 - b) / gamma
    if not 0.0 < r < 2.0:
        raise ValueError(
            "the counting exponent r = (1 - share_exponent) / gamma must lie in (0, 2) for a "
            f"power law to exist (equal shares: gamma > 1/2), got r={r:.4g}"
        )
    return r


def predicted_exponent(
    gamma,
    schedule=0.0,
    *,
    share_exponent: float = 0.0,
    noisy: bool = False,
    all_modes: bool = False,
    interpolating: bool = False,
) -> ExponentPrediction:
    r"""The derived exponent ``zeta`` of ``e_test - e_0 ~ alpha^{-zeta}`` (``1 << k* << n_modes``).

    Derivation (book/08_scaling_laws). With ``t ~ lam / alpha`` the state-evolution threshold
    and ``Delta_eff ~ (noise + C e) / alpha`` its effective noise, the error of the
    spectral soft threshold is the bias ``B(t) = sum_k pi_k min(lambda_k, t)^2 ~ t^{2-r}``
    plus ``Delta_eff`` times the recovered degrees of freedom ``~ rho(t) ~ t^{-r}``.

    - noise-free labels: ``zeta = min((1 + nu)(2 - r), 2/r - 1)``; the first branch
      (``(1 + nu) r < 1``) is limited by the threshold, the second by the samples
      (the threshold has fallen below the noise ``sqrt(Delta_eff)``);
    - noisy labels: ``zeta = (1 + nu)(2 - r)`` for ``nu < -1/2``, ``zeta = 1 - r/2`` at
      ``nu = -1/2`` (threshold above the edge of the noise bulk), ``zeta = 1`` for
      ``nu > -1/2`` (the kept noise bulk dominates: parametric rate).

    Args:
      gamma: eigenvalue decay exponent ``> 0``; schedule: ``nu > -1`` or a :class:`LamSchedule`.
      share_exponent: ``beta`` of :class:`PowerLawModes` (``r = (1 - beta)/gamma`` in ``(0,
        2)``); noisy: whether the labels carry noise.
      all_modes: the threshold has fallen below the smallest eigenvalue (a finite number
        of modes, or the paper's finite-``d`` target once ``n >> d^{1 + 2 gamma}``): the
        bias is the shrinkage ``t^2`` of every mode, ``zeta = 2 (1 + nu)`` (phase
        ``"shrinkage"``, the paper's ``(lam d^2 / n)^2``); with noisy labels the variance
        ``zeta = 1`` wins for ``nu >= -1/2``.
      interpolating: below the interpolation threshold (the paper's ``n << d^2``, i.e.
        ``alpha -> 0``) a vanishing penalty does not keep the noise bulk: interpolation
        puts the threshold at the noise edge ``sqrt(Delta_eff)``. With noisy labels and
        ``nu >= -1/2`` this gives ``zeta = 1 - r/2`` (phase ``"minimax"``, the paper's
        ``(n/d)^{-1 + 1/(2 gamma)}``) in place of ``"variance"``; noise-free labels are
        unchanged. Not with ``all_modes`` (that needs ``n >> d^2``).

    The paper's four rates in ``n`` at fixed ``d`` (``r = 1/gamma``): :func:`paper_exponent`.
    """
    r = _counting_exponent(gamma, share_exponent)
    if isinstance(schedule, LamSchedule):
        nu = float(schedule.nu)
    else:
        nu = _checks.real("schedule", schedule)
    if not math.isfinite(nu) or nu <= -1.0:
        raise ValueError(
            f"nu must be > -1 (the threshold lam/alpha must vanish), got schedule = {nu!r}"
        )
    paper = _paper_phase(r, nu, noisy, all_modes, interpolating)
    if paper is not None:
        return paper
    if not noisy:
        return _noise_free(r, nu)
    if nu < -0.5:
        return ExponentPrediction((1.0 + nu) * (2.0 - r), "threshold", r)
    if nu == -0.5:
        return ExponentPrediction(1.0 - r / 2.0, "optimal", r)
    return ExponentPrediction(1.0, "variance", r)


def _noise_free(r, nu) -> ExponentPrediction:
    zeta_thr = (1.0 + nu) * (2.0 - r)
    zeta_smp = 2.0 / r - 1.0
    if zeta_thr <= zeta_smp:
        return ExponentPrediction(zeta_thr, "threshold", r)
    return ExponentPrediction(zeta_smp, "samples", r)


def _paper_phase(r, nu, noisy, all_modes, interpolating) -> ExponentPrediction:
    """The phases that only the paper's finite-``d`` regime has (see :func:`predicted_exponent`);
    ``None`` where the flags set leave the usual phases."""
    for name, flag in (("all_modes", all_modes), ("interpolating", interpolating)):
        if not isinstance(flag, (bool, np.bool_)):
            raise ValueError(f"{name} must be True or False, got {flag!r}")
    if not (all_modes or interpolating):
        return None
    if all_modes and interpolating:
        raise ValueError(
            "all_modes and interpolating exclude each other (every mode above the threshold "
            "needs n >> d^(1 + 2 gamma) > d^2, above the interpolation threshold)"
        )
    if all_modes:
        zeta_shr = 2.0 * (1.0 + nu)
        if noisy and zeta_shr >= 1.0:
            return ExponentPrediction(1.0, "variance", r)
        return ExponentPrediction(zeta_shr, "shrinkage", r)
    if noisy and nu >= -0.5:  # interpolating: the threshold sits at the noise edge
        return ExponentPrediction(1.0 - r / 2.0, "minimax", r)
    return None
