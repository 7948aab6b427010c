r"""The interpolation threshold in closed form (free probability), for Gaussian channels.

Corollary 3.2 of :cite:`boncoraglio2025attention` (arXiv:2509.24914) gives the
ridgeless (``lam -> 0+``) interpolation threshold of the nuclear + PSD ERM from the
free convolution of the target's spectrum with a semicircle. In this library's
conventions (``R = S0 + sqrt(delta) W_goe``, ``rho_delta`` the law of ``R``: the target's
law free-convolved with the semicircle of variance ``delta``; :mod:`attnlib.rmt`) define

    J(delta) = int rho_delta(x) x_+^2 dx,   J'(delta) = d J / d delta = 2 int rho_delta x_+ h_R

(the second form is the free heat equation, ``h_R`` the Hilbert transform of
``rho_delta``; ``J = q`` and ``J' = 2 div`` of :func:`attnlib.denoisers.nuclear_integrals`
at ``c = 1, tau = 0``). Then

    alpha_interp = J'(dbar) / (2 m_eff),   where   J(dbar) - dbar J'(dbar) = Q0 + Delta_e / 2.

Derivation: the limit equations of :mod:`attnlib.thresholds.interpolator` at ``tau =
0`` (the state evolution at ``lam = 0`` as ``v -> infinity``); with ``q = J``, ``m = J -
2 Delta_eff div`` they are the pair above, ``dbar = Delta_eff``. The left-hand side ``J -
delta J'`` is the overlap ``m(delta) = Tr(R_+ S0)/d``, increasing from ``Q0`` at ``delta
= 0``.

``Delta_e`` is the noise per constraint, in the whitened pairs ``u_ab / sigma_ab`` of
the noisy logits: ``Delta_e / 2 = tr(P N) / m_eff`` with ``N = diag(Delta_ab /
sigma_ab^2)`` (``Delta_ab``: :func:`attnlib.tasks.pair_noise_variances`) and ``P`` the
identity (linear task) or the projection that removes the lost global shift, the
whitened direction ``(1 / sigma_ab)`` (softmax seq2seq). With the paper's noise
(``noise_on="target"``, ``Delta_ab = (Delta/2) sigma_ab^2``) ``Delta_e = Delta`` for every
``T``: the paper's formula. With ``noise_on="logits"`` at ``T = 2`` (seq2seq)
``Delta_e = 5 Delta / 4``. For softmax seq2seq ``2 m_eff = T^2 + T - 2``.

Where it holds: the linear task (any placement) and softmax seq2seq with noise on the
pairs (``"logits"`` or ``"target"``), PSD targets. Seq2seq with noise on the outputs has
no interpolation (labels off the softmax range): 0, as :func:`interpolation`. Other tasks
(seq2lab, hardmax, custom) are not Gaussian at the threshold: ``ValueError``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy.optimize import brentq

from attnlib import _checks, channels
from attnlib import tasks as _tasks
from attnlib.denoisers.nuclear import nuclear_integrals
from attnlib.tasks import Task
from attnlib.thresholds._common import _check_psd_target, _check_task, _labels_leave_range

__all__ = ["RidgelessThreshold", "equivalent_noise", "interpolation_formula"]


class RidgelessThreshold(NamedTuple):
    """:func:`interpolation_formula`'s solution: ``alpha`` the threshold, ``delta`` the
    width ``dbar`` of the semicircle, ``J`` and ``dJ`` (``J(dbar)``, ``J'(dbar)``),
    ``Delta_e`` the noise per constraint."""

    alpha: float
    delta: float
    J: float
    dJ: float
    Delta_e: float


def equivalent_noise(task: Task) -> float:
    r"""``Delta_e``: the label noise per constraint in the whitened pairs (module
    docstring): ``Delta`` for ``noise_on="target"``, and for the linear task at ``T = 1``."""
    task = _check_task(task)
    ch = channels.for_task(task)
    if not ch.gaussian:
        raise ValueError(
            f"task must be an attnlib.tasks.Linear or a Seq2Seq with noise on the pairs "
            f"(noise_on 'logits' or 'target'), got {task!r}"
        )
    s2 = _tasks.pair_variances(task.T)
    nw = _tasks.pair_noise_variances(task) / s2
    tr = float(np.sum(nw))
    if ch.shift_invariant:
        n2 = (1.0 / s2) / np.sum(1.0 / s2)
        tr -= float(np.sum(n2 * nw))
    return 2.0 * tr / ch.m_eff


def _J(target, delta: float) -> tuple[float, float]:
    """``(J(delta), J'(delta))`` by the spectral quadrature."""
    s = nuclear_integrals(target, delta, 1.0, 0.0)
    return float(s.q), 2.0 * float(s.div)


def interpolation_formula(task: Task, target, *, rtol: float = 1e-10) -> RidgelessThreshold:
    r"""The ridgeless interpolation threshold from the free convolution (module
    docstring): ``RidgelessThreshold(alpha, delta, J, dJ, Delta_e)``, ``dbar`` found by
    Brent's method on ``log delta`` to relative ``rtol`` (in ``[1e-15, 0.1]``).

    An independent computation of what :func:`attnlib.thresholds.interpolation_se`
    bisects on the state evolution. Noise-free labels (``dbar -> 0``) give the
    small-noise limit :func:`attnlib.thresholds.interpolation_small_noise`; a zero
    target (``dbar -> infinity``) ``1/(4 m_eff)``: both are refused here (``ValueError``
    naming ``task``), as is a target whose ``m(delta)`` stays below ``Q0 + Delta_e/2``
    up to ``delta = 1e8 Q0``.
    """
    task = _check_task(task)
    _check_psd_target(target)
    rtol = _checks.in_interval("rtol", rtol, 1e-15, 0.1, low_open=False)
    if _labels_leave_range(task):
        return RidgelessThreshold(0.0, math.inf, math.nan, math.nan, math.nan)
    if task.noise == 0.0:
        raise ValueError(
            "task must have noisy labels (task.noise > 0); without noise the threshold is "
            "interpolation_small_noise"
        )
    Q0 = float(target.Q0)
    De = equivalent_noise(task)

    def gap(log_delta):
        J, dJ = _J(target, math.exp(log_delta))
        return J - math.exp(log_delta) * dJ - (Q0 + 0.5 * De)

    lo, hi = math.log(1e-6 * Q0), math.log(Q0)
    while gap(hi) < 0:
        lo, hi = hi, hi + math.log(10.0)
        if hi > math.log(1e8 * Q0):
            raise ValueError(f"target: m(delta) stays below Q0 + Delta_e/2 = {Q0 + De / 2:g}")
    log_delta = brentq(gap, lo, hi, xtol=rtol, rtol=rtol)
    delta = math.exp(log_delta)
    J, dJ = _J(target, delta)
    return RidgelessThreshold(dJ / (2.0 * channels.for_task(task).m_eff), delta, J, dJ, De)
