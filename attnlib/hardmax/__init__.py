r"""Hardmax attention (``beta -> infinity``): its state evolution and GAMP on data.

The task is :class:`attnlib.tasks.Hardmax`; its output channel (exact proximal map of
the piecewise-constant loss, and its zero-scale limit, the projection on the region of
the labels) is :mod:`attnlib.channels.hardmax`.

- :mod:`attnlib.hardmax.state_evolution`: the fixed *ray* of the state evolution
  (the scale of ``S_hat`` contracts to zero, the direction converges), :func:`solve`,
  and the map iterated from a start, :func:`trajectory`: the state evolution's fixed
  point (:func:`attnlib.se.engine.solve_fixed_point`) of the zero-scale channel x the
  nuclear denoiser renormalised to ``q = Q0`` (``gamp.SpectralProx(..., ray=True)``);
- :mod:`attnlib.hardmax.gamp`: GAMP on a finite data set with the same channel and
  denoiser, :func:`gamp`.
"""

from attnlib.hardmax.gamp import gamp
from attnlib.hardmax.state_evolution import (
    HardmaxSE,
    HardmaxSettings,
    HardmaxTrajectory,
    solve,
    trajectory,
)

__all__ = [
    "HardmaxSE",
    "HardmaxSettings",
    "HardmaxTrajectory",
    "gamp",
    "solve",
    "trajectory",
]
