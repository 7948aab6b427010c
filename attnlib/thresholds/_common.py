"""Argument checks shared by the threshold modules."""

from __future__ import annotations

import numpy as np

from attnlib import channels
from attnlib.tasks import Task


def _check_task(task) -> Task:
    if channels.for_task(task).scale_free:  # hardmax: m_eff = 0, the counts below divide by it
        raise ValueError(
            f"task {task!r} gives inequalities, no equation on S (m_eff = 0): no finite "
            "threshold (the hardmax error decays as a power of alpha, see attnlib.hardmax)"
        )
    return task


def _target_kappa0(target) -> float:
    """The target's rank fraction (:attr:`attnlib.targets.Target.rank_fraction`) in ``(0, 1]``.

    A full-rank target (``Wishart(kappa0)`` with ``kappa0 >= 1``) has rank fraction 1:
    every threshold of this package then takes its full-rank value.
    """
    if not hasattr(target, "measure") or not hasattr(target, "rank_fraction"):
        raise ValueError(f"target must be an attnlib.targets.Target, got {target!r}")
    k = float(target.rank_fraction)
    if not (0.0 < k <= 1.0):
        raise ValueError(f"target rank fraction (rank / d) must lie in (0, 1], got {k!r}")
    return k


def _check_psd_target(target) -> None:
    if not hasattr(target, "measure") or not hasattr(target, "outliers"):
        raise ValueError(f"target must be an attnlib.targets.Target, got {target!r}")
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = target.measure()
    if np.any(np.asarray(mu.atoms) < -1e-12) or any(x < 0 for x in target.outliers()):
        raise ValueError(
            "target must be positive semi-definite (the nuclear + PSD estimator cannot "
            "recover a matrix with negative eigenvalues)"
        )


def _labels_leave_range(task: Task) -> bool:
    """Whether additive output noise puts labels outside the range of ``g`` almost surely
    (output dimension above ``m_eff``) or with positive probability per sequence (the
    bounded softmax readouts)."""
    return channels.for_task(task).labels_leave_range
