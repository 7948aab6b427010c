"""How many noisy sequences a student of rank ``p`` can fit at finite ``d``.

:func:`attnlib.width.counting_bound` is the large-``d`` limit of the count below, per
``d^2`` and per equation; here the finite-``d`` counts that the narrow-student
simulations of 03_factorisation are placed against.
"""

from __future__ import annotations

import numpy as np

from attnlib import _checks

__all__ = ["fit_capacity", "rank_manifold_dim", "rank_manifold_dimension"]


def rank_manifold_dim(d: int, p: int) -> int:
    """``p d - p (p - 1) / 2``: the dimension of the PSD ``d x d`` matrices of rank ``p``.

    Args:
      d: dimension, ``>= 1``; p: rank, in ``[1, d]``.
    """
    d = _checks.integer("d", d, 1)
    p = _checks.integer("p", p, 1)
    if p > d:
        raise ValueError(f"p must be in [1, d] = [1, {d}], got {p}")
    return p * d - p * (p - 1) // 2


def rank_manifold_dimension(kappa):
    r"""``kappa - kappa^2 / 2``: the dimension of the PSD (or symmetric) ``d x d`` matrices of
    rank ``kappa d`` over ``d^2`` as ``d -> infinity`` (``kappa d^2 - (kappa d)^2 / 2``;
    :func:`rank_manifold_dim` counts it at finite ``d``). The count behind
    :func:`attnlib.bayes.perfect_recovery`, :func:`attnlib.width.counting_bound`
    and the factorised interpolation bound. ``kappa`` in ``(0, 1]``: a float, or an array (same
    shape returned)."""
    k = _checks.numeric_array("kappa", kappa, "iuf").astype(float)
    if not np.all((k > 0.0) & (k <= 1.0)):  # False for NaN
        raise ValueError(f"kappa must be in (0, 1], got {_checks._fmt(kappa)}")
    dim = k - k * k / 2
    return float(dim) if dim.ndim == 0 else dim


def fit_capacity(d: int, p: int, alpha_interp: float) -> float:
    """``min(rank_manifold_dim(d, p), alpha_interp d^2)``: the smaller of two upper bounds on
    the number of noisy sequences (one equation each) a rank-``p`` student fits, the
    counting bound and the convex interpolation threshold ``alpha_interp``
    (:func:`attnlib.thresholds.interpolation_se`) of the unconstrained PSD problem.

    Args:
      d: dimension, ``>= 1``; p: rank, in ``[1, d]``; alpha_interp: ``> 0``.
    """
    alpha_interp = _checks.positive("alpha_interp", alpha_interp)
    return min(rank_manifold_dim(d, p), alpha_interp * d * d)
