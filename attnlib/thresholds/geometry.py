r"""Statistical dimensions (convex geometry) and the perfect-recovery threshold.

``delta(kappa0)``: statistical dimension of the descent cone of ``Tr S + indicator(S PSD)``
at a PSD matrix of rank ``kappa0 d``, over ``d^2``; the tangent cone of the PSD cone at
that matrix; the perfect-recovery threshold ``alpha_PR = delta(kappa0) / m_eff``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.optimize import brentq

from attnlib import _checks
from attnlib.tasks import Task
from attnlib.thresholds._common import _check_psd_target, _check_task, _target_kappa0
from attnlib.width.capacity import rank_manifold_dimension

__all__ = [
    "semicircle_moment2",
    "statistical_dimension",
    "perfect_recovery",
    "tangent_cone_dimension",
]


def _semicircle_partial(a: float) -> tuple[float, float, float]:
    r"""``I_k(a) = int_a^1 s^k sqrt(1 - s^2) ds`` for ``k = 0, 1, 2`` and ``a in [-1, 1]``.

    With ``phi = arccos(a)``:
    ``I_0 = (phi - a sqrt(1 - a^2)) / 2``, ``I_1 = (1 - a^2)^{3/2} / 3``,
    ``I_2 = (phi + a sqrt(1 - a^2) (1 - 2 a^2)) / 8``
    (antiderivatives ``(s sqrt(1-s^2) + arcsin s)/2``, ``-(1-s^2)^{3/2}/3`` and
    ``(arcsin s - s sqrt(1-s^2)(1 - 2 s^2))/8``, and ``pi/2 - arcsin a = arccos a``).
    """
    a = min(max(a, -1.0), 1.0)
    phi = math.acos(a)
    s = math.sqrt(max(1.0 - a * a, 0.0))
    return (phi - a * s) / 2.0, s**3 / 3.0, (phi + a * s * (1.0 - 2.0 * a * a)) / 8.0


def semicircle_moment2(t: float, r: float) -> float:
    r"""``E_{u ~ SC(r)} (u - t)_+^2`` for the semicircle law of radius ``r`` (density
    ``2 sqrt(r^2 - u^2) / (pi r^2)`` on ``[-r, r]``).

    Writing ``u = r s`` and ``a = t / r``, ``E (u - t)_+^2 = r^2 (2/pi) (I_2 - 2 a I_1 + a^2 I_0)``
    with the partial moments ``I_k`` of :func:`_semicircle_partial`. Limits: ``r^2/4 + t^2``
    for ``t <= -r`` (the full second moment), ``0`` for ``t >= r``.
    """
    r = _checks.nonnegative("r", r)
    t = _checks.finite("t", t)
    if not (r < 1e150 and abs(t) < 1e150):  # r^2 and t^2 would overflow float64
        raise ValueError(f"r and t must be below 1e150 in size, got r = {r!r}, t = {t!r}")
    if r == 0.0:
        return max(-t, 0.0) ** 2
    if t <= -r:
        return r * r / 4.0 + t * t
    if t >= r:
        return 0.0
    a = t / r
    i0, i1, i2 = _semicircle_partial(a)
    return r * r * (2.0 / math.pi) * (i2 - 2.0 * a * i1 + a * a * i0)


def _semicircle_moment1(t: float, r: float) -> float:
    """``E_{u ~ SC(r)} (u - t)_+ = r (2/pi) (I_1 - a I_0)``, ``a = t / r`` in ``[-1, 1]``."""
    a = min(max(t / r, -1.0), 1.0)
    i0, i1, _ = _semicircle_partial(a)
    return r * (2.0 / math.pi) * (i1 - a * i0)


def statistical_dimension(kappa0: float) -> float:
    r"""``delta(kappa0)``: statistical dimension of the trace + PSD descent cone, over ``d^2``.

    .. math::

        \delta(\kappa_0) = \inf_{t \ge 0} \Big[\frac{\kappa_0^2}{2} + \kappa_0(1 - \kappa_0)
            + \kappa_0 t^2 + (1 - \kappa_0)\, E_{u \sim SC(r)} (u - t)_+^2\Big],
        \qquad r = \sqrt{2 (1 - \kappa_0)}.

    The first two terms are the tangent directions (the ``kappa0 d x kappa0 d``
    block and the off-diagonal block), ``kappa0 t^2`` the subgradient on the
    support, and the last term the distance of the GOE block on the null space to
    the scaled negative PSD cone (:func:`semicircle_moment2` in closed form). The
    objective is convex in ``t`` with derivative
    ``2 kappa0 t - 2 (1 - kappa0) E (u - t)_+``, negative at ``t = 0`` and positive at
    ``t = r`` for ``kappa0 < 1``: its root is found by Brent's method.

    Values: ``delta(0.2) = 0.25556``, ``delta(0.5) = 0.42217``, ``delta(1) = 1/2``.

    Args:
      kappa0: rank fraction of the PSD target, in ``(0, 1]``.
    """
    k = _checks.in_interval("kappa0", kappa0, 0.0, 1.0)
    if k == 1.0:
        return 0.5
    r = math.sqrt(2.0 * (1.0 - k))

    def value(t):
        return k * k / 2 + k * (1 - k) + k * t * t + (1 - k) * semicircle_moment2(t, r)

    def slope(t):
        return 2 * k * t - 2 * (1 - k) * _semicircle_moment1(t, r)

    t_star = brentq(slope, 0.0, r, xtol=1e-15, rtol=4 * np.finfo(float).eps)
    return float(value(t_star))


def perfect_recovery(task: Task, target) -> float:
    r"""Perfect-recovery threshold ``alpha_PR = delta(kappa0) / m_eff`` (convex geometry).

    Noise-free labels, ``lam -> 0+``: the nuclear + PSD ERM returns the
    minimum-trace PSD matrix that fits the data, which is ``S0`` with probability
    tending to one iff the ``n m_eff`` generic linear measurements outnumber the
    statistical dimension ``delta(kappa0) d^2`` of the descent cone at ``S0``
    (Amelunxen et al. 2014). Depends on the target only through ``kappa0``.
    E.g. ``0.2111`` for ``Seq2Seq(T=2)`` with ``Wishart(0.5)``.

    Only ``task.m_eff`` enters: a task with ``noise > 0`` gets a ``UserWarning`` (noisy labels
    are never recovered exactly; their threshold is :func:`interpolation_se`).
    """
    task = _check_task(task)
    if task.noise > 0:
        warnings.warn(
            f"task has noise = {task.noise!r} > 0, which perfect_recovery ignores: it returns "
            "the noise-free threshold (pass the task with noise=0.0; for noisy labels see "
            "interpolation_se)",
            UserWarning,
            stacklevel=2,
        )
    _check_psd_target(target)
    return statistical_dimension(_target_kappa0(target)) / task.m_eff


def tangent_cone_dimension(kappa0: float) -> float:
    r"""Statistical dimension over ``d^2`` of the tangent cone of the PSD cone at a PSD
    matrix of rank ``kappa0 d``: ``kappa0 - kappa0^2/2 + (1 - kappa0)^2 / 4``.

    The tangent cone is ``{D symmetric : P D P PSD}`` with ``P`` the projector on the
    null space of ``S0``: a linear space (the range block, ``kappa0^2 d^2 / 2``, and
    the off-diagonal block, ``kappa0 (1 - kappa0) d^2``) times a PSD cone of size
    ``(1 - kappa0) d`` (half its dimension, ``(1 - kappa0)^2 d^2 / 4``).
    """
    k = _checks.in_interval("kappa0", kappa0, 0.0, 1.0)
    return rank_manifold_dimension(k) + (1 - k) ** 2 / 4
