"""The counting bound on the interpolation threshold of a width-``kappa`` student."""

from __future__ import annotations

from attnlib import _checks, channels
from attnlib.tasks import Task
from attnlib.width.capacity import rank_manifold_dimension

__all__ = ["counting_bound"]


def counting_bound(task: Task, kappa: float) -> float:
    r"""``(kappa - kappa^2 / 2) / m_eff``: the dimension of the PSD matrices of rank
    ``<= kappa d`` (``p d - p (p - 1) / 2`` for ``p = kappa d``), over ``d^2``, divided by
    the ``m_eff`` equations one exactly fitted sequence imposes
    (:attr:`attnlib.tasks.Task.m_eff`).

    With noisy labels no width-``kappa`` student fits more sequences: the interpolation
    threshold satisfies ``alpha_interp(kappa) <= counting_bound(task, kappa)`` (and is at
    most the convex one, :func:`attnlib.thresholds.interpolation_se`).

    Args:
      task: an :class:`attnlib.tasks.Task`; kappa: width ``p / d`` in ``(0, 1]``.
    """
    channels.require_task(task)
    kappa = _checks.in_interval("kappa", kappa, 0.0, 1.0)
    return rank_manifold_dimension(kappa) / task.m_eff
