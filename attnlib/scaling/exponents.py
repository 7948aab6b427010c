"""Derived scaling exponents ``zeta`` of ``e_test - e_0 ~ alpha^{-zeta}`` (book/08_scaling_laws).

The field is called ``f`` in :class:`ExponentPrediction` for compatibility; in the
book's notation it is ``zeta`` (``f`` is the spectral map).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from attnlib import _checks
from attnlib.scaling.schedule import LamSchedule

__all__ = ["ExponentPrediction", "predicted_exponent"]


class ExponentPrediction(NamedTuple):
    """Derived scaling exponent ``f`` of ``e_test - e_0 ~ alpha^{-f}`` and its phase.

    ``phase`` is ``"threshold"`` (the penalty's threshold limits which modes are
    learned: ``f = (1 + ell)(2 - r)``), ``"samples"`` (the effective noise of the
    state evolution sits above the threshold: ``f = 2/r - 1``), ``"optimal"``
    (noisy labels, ``ell = -1/2``: ``f = 1 - r/2``) or ``"variance"`` (noisy labels,
    ``ell > -1/2``: ``f = 1``). ``r = (1 - beta)/gamma`` is the counting exponent.
    """

    f: float
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
    gamma, schedule=0.0, *, share_exponent: float = 0.0, noisy: bool = False
) -> ExponentPrediction:
    r"""The derived exponent ``f`` in ``e_test - e_0 ~ alpha^{-f}`` (window ``1 << k* << n_modes``).

    Derivation (book/08_scaling_laws). With ``t ~ lam / alpha`` the state-evolution threshold
    and ``Delta_eff ~ (noise + C e) / alpha`` its effective noise, the error of the
    spectral soft threshold is the bias ``B(t) = sum_k pi_k min(lambda_k, t)^2 ~ t^{2-r}``
    plus ``Delta_eff`` times the recovered degrees of freedom ``~ rho(t) ~ t^{-r}``.

    - noise-free labels: ``f = min((1 + ell)(2 - r), 2/r - 1)``; the first branch
      (``(1 + ell) r < 1``) is limited by the threshold, the second by the samples
      (the threshold has fallen below the noise ``sqrt(Delta_eff)``);
    - noisy labels: ``f = (1 + ell)(2 - r)`` for ``ell < -1/2``, ``f = 1 - r/2`` at
      ``ell = -1/2`` (threshold above the edge of the noise bulk), ``f = 1`` for
      ``ell > -1/2`` (the kept noise bulk dominates: parametric rate).

    Args:
      gamma: eigenvalue decay exponent ``> 0``.
      schedule: ``ell`` (a float, ``> -1``) or a :class:`LamSchedule`.
      share_exponent: ``beta`` of :class:`PowerLawModes`; ``r = (1 - beta)/gamma`` must lie
        in ``(0, 2)``.
      noisy: whether the labels carry noise.
    """
    r = _counting_exponent(gamma, share_exponent)
    if isinstance(schedule, LamSchedule):
        ell = float(schedule.ell)
    else:
        ell = _checks.real("schedule", schedule)
    if not math.isfinite(ell) or ell <= -1.0:
        raise ValueError(
            f"ell must be > -1 (the threshold lam/alpha must vanish), got schedule = {ell!r}"
        )
    if not noisy:
        f_thr = (1.0 + ell) * (2.0 - r)
        f_smp = 2.0 / r - 1.0
        if f_thr <= f_smp:
            return ExponentPrediction(f_thr, "threshold", r)
        return ExponentPrediction(f_smp, "samples", r)
    if ell < -0.5:
        return ExponentPrediction((1.0 + ell) * (2.0 - r), "threshold", r)
    if ell == -0.5:
        return ExponentPrediction(1.0 - r / 2.0, "optimal", r)
    return ExponentPrediction(1.0, "variance", r)
