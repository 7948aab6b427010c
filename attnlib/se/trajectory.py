"""The state-evolution map iterated a fixed number of times: its trajectory, step by step.

:func:`attnlib.se.solve` looks for the fixed point (Anderson-accelerated, damped,
with fallbacks). To set the state evolution beside GAMP iterate by iterate (the
book's 05_state_evolution and the appendix page on GAMP's iterates), the map is
instead iterated as GAMP is: undamped, from a given start, one output side
(:func:`attnlib.se.output_side`) then one input side (:func:`attnlib.se.input_side`)
per iteration, recording the overlaps each output side sees.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from attnlib import _checks
from attnlib.se.input import input_side
from attnlib.se.output import output_side
from attnlib.se.results import PENALTIES

__all__ = ["SETrajectory", "trajectory"]


class SETrajectory(NamedTuple):
    """Arrays over the iterations ``t = 0 .. n_iter - 1``: the overlaps ``(m, q, v)`` the
    ``t``-th output side sees (the start at ``t = 0``) and the output side's training loss
    there (``mean loss(Y, h*)``, the training loss at a fixed point)."""

    m: np.ndarray
    q: np.ndarray
    v: np.ndarray
    train_loss: np.ndarray


def trajectory(
    task, target, alpha: float, lam: float, n_iter: int, *, start=(0.0, 0.0, 1.0),
    penalty: str = "nuclear", n_qmc: int = 8192, q_floor: float = 1e-12,
) -> SETrajectory:  # fmt: skip
    """The undamped state-evolution map iterated ``n_iter`` times from ``start``.

    Args:
      task, target, alpha, lam: as in :func:`attnlib.se.solve` (``Q0`` is the target's).
      n_iter: number of iterations, ``>= 1``.
      start: ``(m, q, v)`` of the first iterate (default ``S_hat = 0`` with ``v = 1``).
      penalty: ``"nuclear"`` or ``"frobenius"``.
      n_qmc: QMC points of each output side.
      q_floor: the output side divides by ``q``; it sees ``max(q, q_floor)`` (``> 0``),
        so that ``S_hat = 0`` (``q = 0``) can be a start.
    """
    n_iter = _checks.integer("n_iter", n_iter, 1)
    q_floor = _checks.positive("q_floor", q_floor)
    _checks.target(target)
    _checks.task(task)
    alpha, lam = _checks.alpha(alpha), _checks.nonnegative("lam", lam)
    _checks.choice("penalty", penalty, PENALTIES)
    m, q, v = (float(x) for x in start)
    rows = []
    for _ in range(n_iter):
        o = output_side(task, alpha, target.Q0, m, max(q, q_floor), v, n_qmc=n_qmc)
        rows.append((m, q, v, o.train_loss))
        i = input_side(target, o.m_hat, o.q_hat, o.a_hat, lam, penalty)
        m, q, v = i.m, i.q, i.v
    return SETrajectory(*(np.array(col) for col in zip(*rows, strict=True)))
