"""The settings of the state-evolution family: one NamedTuple, its defaults written once.

:func:`attnlib.se.solve`, :func:`attnlib.se.learning_curve`, :func:`attnlib.se.solve_accurate`,
:func:`attnlib.width.solve` and the drivers (:mod:`attnlib.se.drivers`) take
``settings=SESettings(...)`` (keyword-only). Their keywords of the same names
(``tol=``, ``n_qmc=``, ...) are shorthands: ``None`` (their default) means "from
``settings``", any other value replaces that field. :func:`resolve` merges the two and
validates every field (a ``ValueError`` naming it).
"""

from __future__ import annotations

from typing import NamedTuple

from attnlib import _checks, _deprecation

__all__ = ["SESettings", "resolve"]

ON_FAIL = ("warn", "raise")
M_HAT = ("derivative", "stein")


class SESettings(NamedTuple):
    """Settings of one state-evolution solve (the defaults of the whole family).

    - ``tol``: tolerance on the change of ``(m/Q0, log q, log v)`` under one SE map;
    - ``max_iter``: SE maps per attempt; ``damping``: weight of the old iterate
      (``[0, 1)``); ``anderson``: Anderson memory (0 = damped iteration);
    - ``n_qmc``, ``n_rep``, ``seed``: QMC points of the output side (``n_qmc / n_rep`` a
      power of 2), independent scramblings, seed;
    - ``on_fail``: deprecated, removed in the next release. The one failure policy is
      ``"warn"``: NaN fields, ``converged=False`` and an
      :class:`attnlib.se.SEConvergenceWarning` (to stop at a failure, check
      ``result.converged`` or turn the warning into an error with
      ``warnings.simplefilter("error", attnlib.se.SEConvergenceWarning)``). ``"raise"``
      (``RuntimeError``) still works for this release, with a ``DeprecationWarning``, as
      does passing the keyword ``on_fail=`` at all;
    - ``rtol``: accuracy of the metrics (``n_qmc`` doubles until ``integration_error <=
      rtol``, up to ``max_n_qmc``); ``None``: one solve at ``n_qmc``;
    - ``refine``, ``refine_steps``: the coarse-to-fine solve (:mod:`attnlib.se.refine`):
      the fixed point found on ``n_qmc`` points is corrected by ``refine_steps`` Newton
      steps (the map's Jacobian of the error propagation) on ``refine * n_qmc`` points,
      and the metrics and ``integration_error`` are those of the corrected point;
      ``refine=1``: no correction. The default (one step on ``4 * 8192`` points) costs
      about 1.6 times the CPU of ``refine=1``; over 16 seeds its mse deviates from a
      ``2^17``-point reference by 0.096 % (median; largest 0.28 %) at seq2seq T = 2,
      Wishart(0.5), alpha 2, lam 0.1, and 0.35 % (1.6 %) at a T = 3 point
      (``benchmarks/se_accuracy.py``; the book's ``methods_finite_size`` page). With
      ``rtol``, each doubling of ``n_qmc`` is corrected on ``refine`` times its points.
      The warm start returned beside a result is the fixed point on the ``n_qmc`` points
      themselves (before the correction). The step starts from the coarse fixed point,
      so it does not repair one that is far off (few points where the mse is small: keep
      the default ``n_qmc``, or ask ``rtol``). :func:`attnlib.width.solve_constrained`
      does not correct its rank-constrained point; the convex point it starts from is
      corrected;
    - ``refine_rep``: the scramblings of the ``refine * n_qmc`` points (``None``: ``n_rep``,
      each of the ``n_qmc`` points' scramblings extended; else a multiple of ``n_rep``
      that divides ``refine * n_rep``: those extended and new ones of the same length).
      More scramblings give ``integration_error`` more degrees of freedom (it is the
      spread of their means), so that it covers single solves' tails, and cost nothing;
      longer ones integrate better where quasi-Monte Carlo beats Monte Carlo. Measured
      over 16 seeds (``benchmarks/se_accuracy.py``): at the T = 3 point ``refine_rep=16``
      (16 scramblings of 2048) gives mse median deviation 0.29 % (largest 1.0 %) against
      0.35 % (1.6 %), every seed within 2.0 times its reported error against 2.7; at
      seq2seq T = 2, alpha 2, lam 0.1 it makes them 1.8 times larger (median 0.17 % against
      0.096 %);
    - ``m_hat``: the form of the output side's ``m_hat`` (:mod:`attnlib.se.output`):
      ``"derivative"`` (the default: the derivative of the prox through the labels, where
      the loss is smooth; the Stein form elsewhere, and where no fixed point is found
      with it) or ``"stein"`` (the Stein form everywhere: unbiased across jumps of the
      prox, a larger QMC error where the mse is small);
    - ``time_limit``: seconds of wall clock for the whole call (``None``: no limit); past
      it the call returns what it has: an unfinished point is NaN with
      ``converged=False`` and an :class:`attnlib.se.SEConvergenceWarning` (a curve keeps
      its finished points). Checked between SE maps.
    """

    tol: float = 1e-6
    max_iter: int = 300
    damping: float = 0.5
    anderson: int = 5
    n_qmc: int = 8192
    n_rep: int = 4
    seed: int = 0
    on_fail: str = "warn"
    rtol: float | None = None
    max_n_qmc: int = 2**17
    time_limit: float | None = None
    refine: int = 4
    refine_steps: int = 1
    m_hat: str = "derivative"
    refine_rep: int | None = None


def _check(s: SESettings) -> SESettings:
    """``s`` with every field validated (``ValueError`` naming the field)."""
    _checks.positive("tol", s.tol)
    _checks.integer("max_iter", s.max_iter, 1)
    _checks.in_interval("damping", s.damping, 0.0, 1.0, low_open=False, high_open=True)
    _checks.integer("anderson", s.anderson, 0)
    n_qmc, _, _ = _checks.qmc_sizes(s.n_qmc, s.n_rep, s.seed)
    _checks.choice("on_fail", s.on_fail, ON_FAIL)
    max_n_qmc = _checks.integer("max_n_qmc", s.max_n_qmc, 2)
    if s.time_limit is not None:
        _checks.positive("time_limit", s.time_limit)
    _checks.integer("refine", s.refine, 1)
    _checks.integer("refine_steps", s.refine_steps, 1)
    _checks.choice("m_hat", s.m_hat, M_HAT)
    if s.refine_rep is not None:
        rep = _checks.integer("refine_rep", s.refine_rep, s.n_rep)
        if rep % s.n_rep or (s.refine * s.n_rep) % rep:
            raise ValueError(
                f"refine_rep must be a multiple of n_rep = {s.n_rep} that divides refine x "
                f"n_rep = {s.refine * s.n_rep}, got {rep}"
            )
    if s.rtol is not None:
        _checks.positive("rtol", s.rtol)
        _checks.integer("max_n_qmc", max_n_qmc, n_qmc)
    return s


def resolve(settings: SESettings | None = None, **shorthands) -> SESettings:
    """``settings`` (default :class:`SESettings()`) with each shorthand keyword that is not
    ``None`` replacing its field (:func:`attnlib._checks.settings`, the one merge of the
    library's settings types), validated. ``rtol=None`` as a shorthand keeps
    ``settings.rtol``. The deprecated ``on_fail`` (the keyword, or ``"raise"`` in
    ``settings``) gives a ``DeprecationWarning`` (attributed to the caller's caller)."""
    s = _check(_checks.settings(SESettings, settings, shorthands))
    if shorthands.get("on_fail") is not None or s.on_fail != "warn":
        _deprecation.warn(
            "on_fail (a second failure policy)",
            "the one policy: NaN, converged=False and an SEConvergenceWarning; check "
            "result.converged, or warnings.simplefilter('error', SEConvergenceWarning) to stop",
            stacklevel=4,
        )
    return s
