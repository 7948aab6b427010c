"""Penalty schedules ``lam(alpha) = lam0 (alpha / alpha_ref)^{-ell}``."""

from __future__ import annotations

import dataclasses

import numpy as np

from attnlib import _checks

__all__ = ["LamSchedule"]


@dataclasses.dataclass(frozen=True)
class LamSchedule:
    """Penalty schedule ``lam(alpha) = lam0 (alpha / alpha_ref)^{-ell}``.

    At fixed ``d`` the number of sequences is ``n = alpha d^2``, so this is
    ``lam ~ n^{-ell}``: ``ell = 0`` keeps ``lam`` fixed, ``ell > 0`` lets it decay,
    ``ell = -1/2`` grows it like ``sqrt(n)``.
    """

    lam0: float = 1.0
    ell: float = 0.0
    alpha_ref: float = 1.0

    def __post_init__(self):
        _checks.positive("lam0", self.lam0)
        _checks.finite("ell", self.ell)
        _checks.positive("alpha_ref", self.alpha_ref)

    def __call__(self, alpha):
        a = np.asarray(alpha, dtype=float)
        lo, hi = _checks.ALPHA_RANGE
        if not (np.all(a >= lo) and np.all(a <= hi)):  # False for NaN
            raise ValueError(f"alpha must lie in [{lo}, {hi}], got {_checks._fmt(alpha)}")
        out = self.lam0 * (a / self.alpha_ref) ** (-float(self.ell))
        return float(out) if out.ndim == 0 else out
