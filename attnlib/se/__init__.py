r"""State evolution (SE): exact asymptotic train and test errors of the ERM.

The ERM is a generalised linear model in the ``D = d (d + 1) / 2`` orthonormal
coordinates of symmetric matrices, with ``n K`` measurements (``K`` pairs per
sequence) and a block-wise (per sequence) loss. Its state evolution is a fixed point
of a map of three scalars ``(m, q, v)`` through the conjugates ``(m_hat, q_hat,
a_hat)`` (conventions: the book's notation page and the chapter 05_state_evolution):

- output side (:mod:`attnlib.se.output`, jitted; the proximal solve is
  :func:`attnlib.channels.prox`);
- input side (:mod:`attnlib.se.input`; free convolution of the target with a
  semicircle, :mod:`attnlib.rmt`);
- the map and its Anderson fixed point (:mod:`attnlib.se.engine`, on the generic
  :func:`attnlib.iterate.anderson`), one attempt and the metrics
  (:mod:`attnlib.se.point`), the fallbacks that make it robust
  (:mod:`attnlib.se.robust`), the drivers (:mod:`attnlib.se.drivers`).

The ridgeless limit ``lam -> 0+`` on both sides of the interpolation threshold, and the
height of the interpolation peak, are in :mod:`attnlib.thresholds.interpolator`.

Where the constants come from. Write ``x = sqrt(d/2) vec(S)`` (orthonormal
coordinates) so that each pair is ``h_ab = sigma_ab F . x`` with ``F`` of i.i.d.
entries of variance ``1/D``: the textbook GLM/ERM state evolution (with ``N = D``
unknowns and ``n K`` rows, ``n / D = 2 alpha``) gives ``V_hat = 2 a_hat``,
``m_hat_std = 2 m_hat``, ``q_hat_std = 4 q_hat``; the input denoiser is the prox of
the penalty at ``B = c (S0 + sqrt(Delta_eff) W_goe)``. The divergence of a spectral
map is ``d^2 int rho_R f h_R`` (Gaussian integration by parts).

Expectations over the pairs use scrambled Sobol points (fixed seeds) mapped through
the normal inverse CDF; ``R`` independent scramblings give their standard error, which
the fixed point amplifies: ``integration_error`` is the error of the metrics at the
fixed point, propagated through the map's Jacobian (:mod:`attnlib.se.propagation`). The
fixed point found on ``n_qmc`` points is corrected by a Newton step on
``SESettings.refine`` times as many points (:mod:`attnlib.se.refine`; the default
``refine=4``, ``refine=1``: no correction), and ``solve(..., rtol=...)`` (or
:func:`solve_accurate`) raises ``n_qmc`` until it meets ``rtol``. Results hold numbers
only; ``return_warm=True`` returns the warm start (:class:`WarmStart`) beside them,
which ``init=`` takes. Settings: one
:class:`SESettings` (``settings=``), its fields also as shorthand keywords. Progress is
logged on the ``attnlib.se`` logger (``logging.getLogger("attnlib.se").setLevel(logging.DEBUG)``).
"""

from attnlib.qmc import qmc_normals
from attnlib.se.accuracy import solve_accurate
from attnlib.se.drivers import (
    continuation,
    learning_curve,
    search_lambda,
    solve,
    solve_nearby,
)
from attnlib.se.input import InputSide, input_side
from attnlib.se.optimal import LambdaSearch
from attnlib.se.output import OutputSide, output_side
from attnlib.se.results import (
    PENALTIES,
    LearningCurve,
    SEConvergenceWarning,
    SEMultipleFixedPointsWarning,
    SEReplicaSymmetryWarning,
    SEResult,
    WarmStart,
)
from attnlib.se.settings import SESettings
from attnlib.se.test_error import noise_floor, test_error_from_overlaps
from attnlib.se.trajectory import SETrajectory, trajectory

__all__ = [
    "PENALTIES",
    "SEConvergenceWarning",
    "SEMultipleFixedPointsWarning",
    "SEReplicaSymmetryWarning",
    "SEResult",
    "LearningCurve",
    "WarmStart",
    "SESettings",
    "LambdaSearch",
    "OutputSide",
    "InputSide",
    "solve",
    "solve_accurate",
    "learning_curve",
    "search_lambda",
    "solve_nearby",
    "continuation",
    "test_error_from_overlaps",
    "noise_floor",
    "output_side",
    "input_side",
    "qmc_normals",
    "SETrajectory",
    "trajectory",
]
