"""Penalty schedules ``lam(alpha) = lam0 (alpha / alpha_ref)^{-nu}``, and the window of
``alpha`` over which a schedule keeps a power-law target in its threshold phase."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from attnlib import _checks
from attnlib.targets import PowerLawModes

__all__ = ["LamSchedule", "threshold_window"]


@dataclasses.dataclass(frozen=True)
class LamSchedule:
    """Penalty schedule ``lam(alpha) = lam0 (alpha / alpha_ref)^{-nu}``.

    At fixed ``d`` the number of sequences is ``n = alpha d^2``, so this is
    ``lam ~ n^{-nu}``: ``nu = 0`` keeps ``lam`` fixed, ``nu > 0`` lets it decay,
    ``nu = -1/2`` grows it like ``sqrt(n)`` (``nu``: book/notation.md).
    """

    lam0: float = 1.0
    nu: float = 0.0
    alpha_ref: float = 1.0

    def __post_init__(self):
        _checks.positive("lam0", self.lam0)
        _checks.finite("nu", self.nu)
        _checks.positive("alpha_ref", self.alpha_ref)

    def __call__(self, alpha):
        a = np.asarray(alpha, dtype=float)
        lo, hi = _checks.ALPHA_RANGE
        if not (np.all(a >= lo) and np.all(a <= hi)):  # False for NaN
            raise ValueError(f"alpha must lie in [{lo}, {hi}], got {_checks._fmt(alpha)}")
        out = self.lam0 * (a / self.alpha_ref) ** (-float(self.nu))
        return float(out) if out.ndim == 0 else out


def threshold_window(
    target,
    nu: float | None = None,
    m_eff: float | None = None,
    k_lo: int | None = None,
    k_hi: int | None = None,
    *,
    ratio: float,
):
    """``(lam0, alpha_lo, alpha_hi)`` of a noise-free linear-task curve in the threshold phase.

    At large ``alpha`` the linear task has ``a_hat ~ 4 m_eff alpha`` (so the threshold is
    ``t ~ lam / (4 m_eff alpha)``) and ``Delta_eff ~ e / (2 m_eff alpha)`` with
    ``e ~ B(t) = 2 t^2 rho(t) / (2 - r)``, hence ``t^2 / Delta_eff ~ m_eff alpha (2 - r) /
    rho(t)``. The window starts where mode ``k_lo`` sits at the threshold with ``t /
    sqrt(Delta_eff) = ratio`` and ends where mode ``k_hi`` does, along the schedule
    ``lam = lam0 alpha^{-nu}`` (:class:`LamSchedule` with ``alpha_ref = 1``).

    Args:
      target: a :class:`attnlib.targets.PowerLawModes`; nu: the schedule's exponent
        (``> -1``; required);
      m_eff: the task's :attr:`attnlib.tasks.Task.m_eff` (``> 0``);
      k_lo, k_hi: the first and last mode of the window, ``1 <= k_lo <= k_hi <= n_modes``;
      ratio: ``t / sqrt(Delta_eff)`` at the start, ``> 0``.
    """
    if not isinstance(target, PowerLawModes):
        raise ValueError(f"target must be an attnlib.targets.PowerLawModes, got {target!r}")
    nu = _checks.finite("nu", nu)
    if not nu > -1.0:
        raise ValueError(f"nu must be > -1, got {nu!r}")
    m_eff = _checks.positive("m_eff", m_eff)
    ratio = _checks.positive("ratio", ratio)
    lam_k = target.mode_eigenvalues()
    k_lo, k_hi = _checks.integer("k_lo", k_lo, 1), _checks.integer("k_hi", k_hi, 1)
    if not k_lo <= k_hi <= lam_k.size:
        bound = f"1 <= k_lo <= k_hi <= {lam_k.size}"
        raise ValueError(f"k_lo, k_hi must satisfy {bound}, got {k_lo}, {k_hi}")
    t_lo, t_hi = lam_k[k_lo - 1], lam_k[k_hi - 1]
    rho_lo = float(np.sum(target.mode_weights()[:k_lo]))
    try:
        a_lo = ratio**2 * rho_lo / (m_eff * (2.0 - target.r))
        lam0 = 4 * m_eff * t_lo * a_lo ** (1.0 + nu)
        a_hi = (lam0 / (4 * m_eff * t_hi)) ** (1.0 / (1.0 + nu))
    except (OverflowError, ZeroDivisionError):
        lam0 = a_lo = a_hi = math.nan
    if not all(0.0 < x < math.inf for x in (lam0, a_lo, a_hi)):
        window = "nu, m_eff, ratio: the window (lam0, alpha_lo, alpha_hi)"
        raise ValueError(f"{window} = {(lam0, a_lo, a_hi)} is not finite and positive")
    return lam0, a_lo, a_hi
