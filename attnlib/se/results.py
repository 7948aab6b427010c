"""Result types of the state evolution: one fixed point, a learning curve (numbers only),
and the warm start returned beside them."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from attnlib.se import display
from attnlib.spectral_map import PENALTIES

__all__ = [
    "PENALTIES",
    "SEConvergenceWarning",
    "SEMultipleFixedPointsWarning",
    "SEReplicaSymmetryWarning",
    "SEResult",
    "LearningCurve",
    "WarmStart",
]


class SEConvergenceWarning(RuntimeWarning):
    """The state-evolution fixed point was not reached (the residual is given)."""


class SEMultipleFixedPointsWarning(RuntimeWarning):
    """Several state-evolution fixed points were found; the lowest objective is returned
    (the others are in :attr:`SEResult.alternatives`)."""


class SEReplicaSymmetryWarning(RuntimeWarning):
    """The returned fixed point fails the replica-symmetric stability condition
    (:attr:`SEResult.replicon` > 1, :mod:`attnlib.se.replicon`): replica symmetry is
    broken there and the state evolution need not describe the ERM's minimiser."""


class WarmStart(NamedTuple):
    """What a solve hands to the next one: ``x = (m, q, v)`` and the prox points.

    Returned beside a result, never inside it (``se.solve(..., return_warm=True)``
    returns ``(SEResult, WarmStart | None)``; ``None`` in the zero phase and where the
    solve failed), and accepted by ``init=``.

    ``prox``: the ``(N, K)`` proximal points of the output side at ``x`` (or ``None``),
    valid for the QMC points and task loss named by ``key``. ``history``: ``(penalty,
    memory, hx, hr, k)``, the fixed-point solver's last iterates and residuals (a secant
    model of the map near ``x``; :attr:`attnlib.iterate.FixedPoint.history`), or
    ``None``; used by a solve with the same key, penalty and Anderson memory.
    """

    x: tuple
    prox: Any = None
    key: tuple = ()
    history: Any = None

    __repr__ = display.result_repr  # the prox array and the history elided


class SEResult(NamedTuple):
    """A state-evolution fixed point and the asymptotic metrics it predicts.

    Inputs: ``alpha``, ``lam``, ``penalty``.

    Order parameters: ``m = Tr(S_hat S0)/d``, ``q = Tr(S_hat^2)/d``, ``v`` (prox
    variance per unit ``sigma^2``), conjugates ``m_hat, q_hat, a_hat``, and the
    effective denoising problem ``Delta_eff = q_hat/m_hat^2``, ``c = m_hat/a_hat``,
    ``tau = lam/a_hat``; ``Q0 = Tr(S0^2)/d``.

    Metrics (per sequence): ``train_loss = E loss(Y, h*)``; ``test_error =
    E||g(h(S0)) - g(h(S_hat))||^2`` (noise-free labels); ``test_error_noisy`` the
    same against noisy labels, ``E||Y - g(h(S_hat))||^2``; ``e0`` (the last field) its
    floor, ``E||Y - g(h(S0))||^2``, the error of the target itself against its noisy
    labels (0 without noise; :meth:`attnlib.channels.Channel.noise_floor`);
    ``mse = Q0 - 2 m + q = ||S_hat - S0||_F^2 / d``;
    ``rank_fraction`` = fraction of non-zero eigenvalues of ``S_hat``
    (``rho_R`` mass above ``tau/c``; 1 for Frobenius).

    Diagnostics: ``converged`` (when false every order parameter and metric is NaN:
    the engine never returns a point that is not a fixed point), ``residual`` (the
    largest change of ``(m/Q0, log q, log v)`` under one SE map at the returned point,
    or the best one seen when not converged), ``n_iter`` (SE maps evaluated, all
    attempts together), ``integration_error`` (the relative standard error of the
    metrics ``train_loss, test_error, mse`` at the fixed point, the largest of the
    three: the QMC error of the integrals propagated through the map's Jacobian,
    :mod:`attnlib.se.propagation`; 0 for closed forms; ``rtol`` of
    :func:`attnlib.se.solve` bounds it).

    The minimised objective (NaN when not converged, and in results built from stored
    rows without them). The ERM minimises ``sum_mu loss(Y_mu,
    h_mu(S)) + d lam Tr S`` (nuclear + PSD) or ``+ d (lam/2) ||S||_F^2`` (Frobenius), a
    sum over the ``n = alpha d^2`` sequences (:func:`attnlib.train.objective`); divided
    by ``n`` it tends to ``objective``:

    - ``trace = lim Tr S_hat / d = int rho_R f`` with ``f`` the input side's spectral
      map (``(c x - tau)_+``; Frobenius ``c x / (1 + tau)``, so ``trace = c Tr(S0)/d /
      (1 + tau)``); 0 in the zero phase;
    - ``objective = train_loss + lam * trace / alpha`` (nuclear) or ``train_loss +
      (lam / 2) * q / alpha`` (Frobenius): the per-sequence value of the minimised
      objective, ``lim min_S objective(S) / n``.

    ``alternatives``: the other fixed points found at the same ``(alpha, lam)`` where
    the output channel is not convex, a tuple of ``(m, q, v, objective)`` with
    objective above this one's (empty when none was found; see :mod:`attnlib.se.robust`);
    with ``converged=False``, every candidate where the objectives lie within their
    QMC errors and the search could not decide (:mod:`attnlib.se.several`).

    ``replicon`` (NaN where not computed: hardmax, rank-constrained students, failed
    solves, stored rows without it): the replica-symmetric stability
    (de Almeida-Thouless) of the fixed point, normalised so that it is stable where
    ``replicon < 1`` (:mod:`attnlib.se.replicon`); 0 in the zero phase. Where it is
    above 1 the solve warns (:class:`SEReplicaSymmetryWarning`) and :meth:`summary`
    shows it (elsewhere it is left out of the summary, not of the repr). ``summary()``
    shows ``e0`` beside the test errors where it is positive (noisy labels).
    """

    alpha: float
    lam: float
    penalty: str
    m: float
    q: float
    v: float
    m_hat: float
    q_hat: float
    a_hat: float
    Delta_eff: float
    tau: float
    c: float
    Q0: float
    train_loss: float
    test_error: float
    test_error_noisy: float
    mse: float
    rank_fraction: float
    converged: bool
    residual: float
    n_iter: int
    integration_error: float
    trace: float = math.nan
    objective: float = math.nan
    alternatives: tuple = ()
    replicon: float = math.nan
    e0: float = math.nan

    __repr__ = display.result_repr  # scalars listed, arrays elided

    def summary(self) -> str:
        """A few lines of text: inputs, metrics, order parameters, diagnostics."""
        return display.result_summary(self)


class LearningCurve(NamedTuple):
    """:class:`SEResult` fields as arrays over ``alpha`` (``penalty`` stays a string;
    ``alternatives`` is left out: read it from :func:`attnlib.se.solve`; ``e0``, the
    floor of ``test_error_noisy``, is the last field). Numbers only:
    the warm start of the last converged point comes beside the curve
    (``learning_curve(..., return_warm=True)``)."""

    alpha: np.ndarray
    lam: np.ndarray
    penalty: str
    m: np.ndarray
    q: np.ndarray
    v: np.ndarray
    m_hat: np.ndarray
    q_hat: np.ndarray
    a_hat: np.ndarray
    Delta_eff: np.ndarray
    tau: np.ndarray
    c: np.ndarray
    Q0: np.ndarray
    train_loss: np.ndarray
    test_error: np.ndarray
    test_error_noisy: np.ndarray
    mse: np.ndarray
    rank_fraction: np.ndarray
    converged: np.ndarray
    residual: np.ndarray
    n_iter: np.ndarray
    integration_error: np.ndarray
    trace: np.ndarray = None
    objective: np.ndarray = None
    replicon: np.ndarray = None
    e0: np.ndarray = None

    __repr__ = display.curve_repr

    def summary(self, max_rows: int = 12) -> str:
        """The curve as a short table: alpha, test error, mse, train loss, converged."""
        return display.curve_summary(self, max_rows)

    def to_dataframe(self):
        """A pandas DataFrame: one row per alpha, one column per array field."""
        return display.curve_dataframe(self)
