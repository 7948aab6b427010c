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
      task: an :class:`attnlib.tasks.Task` with ``m_eff >= 1``; kappa: width ``p / d`` in
        ``(0, 1]``.

    Raises:
      ValueError: naming ``task`` for a task whose fitted sequences give no equation
        (``m_eff = 0``: hardmax, whose labels are ``T (T - 1)`` linear inequalities on the
        pairs). No count of equations bounds what such a student fits; ``inf`` would read
        as "fits any number of noisy sequences", which inequalities do not allow.
    """
    channels.require_task(task)
    if task.m_eff < 1:
        raise ValueError(
            f"task must give equations on S (m_eff >= 1) for a counting bound, got {task!r} "
            f"(m_eff = {task.m_eff}: its labels are inequalities)"
        )
    kappa = _checks.in_interval("kappa", kappa, 0.0, 1.0)
    return rank_manifold_dimension(kappa) / task.m_eff
