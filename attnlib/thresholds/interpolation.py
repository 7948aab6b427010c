r"""The interpolation threshold of the nuclear + PSD ERM (noisy labels, ``d -> infinity``
then ``lam -> 0+``: the largest ``alpha`` with zero training loss), and the minimal width.

How :func:`interpolation_se` finds it. Below the threshold the data are fitted exactly:
the train loss vanishes like ``lam^2``, ``v`` diverges like ``1 / lam`` and the ``lam = 0``
state evolution has no fixed point. Above it the ``lam = 0`` fixed point (the minimum-loss
PSD matrix) has a finite ``v`` and a positive train loss. The threshold is the smallest
``alpha`` with such a fixed point, bisected between the proven bounds ``1/(4 m_eff) <=
alpha_interp(Delta) <= tangent_cone_dimension(kappa0) / m_eff``. Each probe is 7-30
state-evolution maps, not a solve: at large ``v`` the ``lam = 0`` map multiplies ``v`` by
a rate ``r*`` that has a limit, and there is a fixed point iff ``r* < 1``
(:mod:`attnlib.se.runaway`; for the linear task and seq2seq ``r* = 1`` is the closed
form of :func:`attnlib.thresholds.interpolation_formula`).
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from typing import NamedTuple

from attnlib import _checks, _limits, follow, se
from attnlib.se import runaway
from attnlib.spectral_map import PENALTIES
from attnlib.tasks import Task
from attnlib.thresholds._common import (
    _check_psd_target,
    _check_task,
    _labels_leave_range,
    _target_kappa0,
)
from attnlib.thresholds.geometry import tangent_cone_dimension
from attnlib.width.capacity import rank_manifold_dimension

__all__ = [
    "interpolation",
    "interpolation_small_noise",
    "InterpolationThreshold",
    "interpolation_se_bracket",
    "interpolation_se",
    "minimal_width",
]

log = logging.getLogger("attnlib.thresholds")

# a lam = 0 fixed point is accepted with a relative residual below _RESIDUAL_OK and v
# below _V_MAX; the final solve at hi (large v: slow) gets at most _FINAL_SOLVE_S seconds
_RESIDUAL_OK = 1e-5
_V_MAX = 1e8
_FINAL_SOLVE_S = 120.0
# the runaway rate is iterated until its change still to come is below _RATE_TOL (the sign
# of rate - 1 is the verdict: at 2 % of rate change per 1 % of alpha, 5e-6 in alpha)
_RATE_TOL = 1e-5
_RATE_MAX_MAPS = 80


def _interpolates(task, target, alpha, se_kwargs) -> bool:
    """The probe of the bisection: whether the ``lam = 0`` state evolution at ``alpha`` has
    no fixed point, its ``v`` running away at a rate above 1 (:mod:`attnlib.se.runaway`, a
    few maps instead of a solve; at the QMC points ``n_qmc``, ``n_rep``, ``seed`` of
    ``se_kwargs``, the solves' own). False where the rate is below 1, or not finite."""
    qmc = {k: se_kwargs[k] for k in ("n_qmc", "n_rep", "seed") if se_kwargs.get(k) is not None}
    qmc.setdefault("n_qmc", se.SESettings().n_qmc)  # the solves' default
    # every probe starts cold: a warm start from the probe below follows the running-away
    # branch (the limit map can have two fixed points) and gives wrong rates; cold starts
    # agree with the closed form (test_lam0_runaway)
    r = runaway.growth_rate(task, target, alpha, tol=_RATE_TOL, max_maps=_RATE_MAX_MAPS, **qmc)
    msg = "interpolation_se: alpha %.5g: v runs away at the rate %.5f +- %.1e per map (%d maps)"
    log.info(msg, alpha, r.rate, r.stderr, r.n_maps)
    return bool(r.rate > 1.0)


def interpolation(task: Task, kappa: float | None = None, penalty: str = "nuclear") -> float:
    r"""Interpolation threshold for noise-dominated labels: ``1/(4 m_eff)`` (nuclear + PSD).

    Exact for ``S0 = 0``; the ``Delta -> infinity`` limit (and a lower bound) of
    :func:`interpolation_se` for a PSD target.

    Derivation. A training loss of zero means ``M = n m_eff = alpha m_eff d^2`` linear
    equations ``A(S - S0) = e`` (``e`` the label noise) in the ``N = d^2/2`` dimensional
    space of symmetric matrices.

    - ``penalty="frobenius"`` (direct ``S``, no constraint): solvable iff ``M < N``,
      so ``alpha_interp = 1 / (2 m_eff)``, whatever the target and the noise.
    - ``penalty="nuclear"``, ``kappa=None`` (``S`` in the PSD cone ``C``): by Gordon's
      comparison (CGMT), ``A(S - S0) = e`` has a solution iff ``sup_r [w(r)^2 - ||e||^2 /
      r^2] > M``, ``w(r)^2`` the squared Gaussian width of ``(C - S0) / r`` on the unit
      sphere, decreasing from the statistical dimension of the tangent cone ``T_C(S0)``
      (``r -> 0``; zero noise: :func:`interpolation_small_noise`) to ``delta(C) = N/2 =
      d^2/4`` (``r -> infinity``: noise-dominated labels, or ``S0 = 0`` at any noise):
      ``alpha_interp = 1/(4 m_eff)``.
    - ``penalty="nuclear"`` with a factorised width ``kappa < 1``: the rank ``<= kappa d``
      PSD matrices form a manifold of dimension ``d^2 (kappa - kappa^2/2)``, so the
      dimension count (not a theorem) predicts ``alpha_interp = min(1/4, kappa -
      kappa^2/2) / m_eff`` for noise-dominated labels.

    With ``noise_on="outputs"`` on a softmax task the labels leave the range of ``g``:
    the training loss stays positive at every ``alpha`` and this returns ``0.0``.

    Args:
      task: the task (gives ``m_eff`` and the noise placement).
      kappa: width ``p / d`` of the factorised student in ``(0, 1]``, or ``None`` for the
        convex problem (unbounded rank). Only with ``penalty="nuclear"``.
      penalty: ``"nuclear"`` (PSD, factorised student) or ``"frobenius"`` (direct ``S``).
    """
    task = _check_task(task)
    _checks.choice("penalty", penalty, PENALTIES)
    if kappa is not None:
        if penalty != "nuclear":
            raise ValueError(
                "kappa applies to the factorised (nuclear) student only; use kappa=None"
            )
        kappa = _checks.in_interval("kappa", kappa, 0.0, 1.0)
    if _labels_leave_range(task):
        return 0.0
    if penalty == "frobenius":
        return 1.0 / (2.0 * task.m_eff)
    dim = 0.25 if kappa is None else min(0.25, rank_manifold_dimension(kappa))
    return dim / task.m_eff


def interpolation_small_noise(task: Task, target) -> float:
    r"""Interpolation threshold for vanishing label noise, ``Delta -> 0+`` (nuclear + PSD).

    With ``||e|| -> 0`` the comparison of :func:`interpolation` is decided at
    ``r -> 0``, where ``(C - S0)/r`` becomes the tangent cone ``T_C(S0)``:
    ``alpha = tangent_cone_dimension(kappa0) / m_eff`` (``0.4375`` for the linear
    ``T = 1`` task and ``kappa0 = 1/2``), an upper bound on :func:`interpolation_se`. It
    exceeds :func:`perfect_recovery`: the trace's descent cone at ``S0`` lies in ``T_C(S0)``.
    """
    task = _check_task(task)
    _check_psd_target(target)
    if _labels_leave_range(task):
        return 0.0
    return tangent_cone_dimension(_target_kappa0(target)) / task.m_eff


class InterpolationThreshold(NamedTuple):
    """Result of :func:`interpolation_se_bracket`.

    ``lo < alpha_interp <= hi``: at ``lo`` the ``lam = 0`` state evolution's ``v`` runs
    away, at ``hi`` it has the fixed point ``fixed_point`` (an :class:`attnlib.se.SEResult`,
    ``train_loss > 0``; None, with a ``RuntimeWarning``, where that solve failed or was cut
    short). ``alpha = (lo + hi) / 2``; ``n_solves`` probes, the two ends included.
    """

    alpha: float
    lo: float
    hi: float
    fixed_point: object
    n_solves: int


def _lam0_fixed_point(task, target, alpha, init, se_kwargs, *, rate=True):
    """``(SEResult, WarmStart)`` of the ``lam = 0`` fixed point at ``alpha`` (from ``init``),
    or ``None``: where ``v`` runs away at a rate above 1 (with ``rate``, no solve), where the
    solve stops short (residual above ``_RESIDUAL_OK``; its ``SEConvergenceWarning`` is
    swallowed, other warnings pass on), or ``v >= _V_MAX``, or a train loss ``<= 0``.
    """
    if rate and _interpolates(task, target, alpha, se_kwargs):  # v runs away: no solve
        return None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            r, w = se.solve(
                task, target, alpha, 0.0, "nuclear", init=init, return_warm=True, **se_kwargs
            )
        except RuntimeError:  # no valid iterate at all
            r = None
        except ValueError as err:  # refused by se.solve's own check: below the threshold
            if "below the interpolation threshold" not in str(err):
                raise
            r = None
    for msg in caught:  # not ``w``: that is the warm start returned below
        if not issubclass(msg.category, se.SEConvergenceWarning):
            warnings.warn_explicit(msg.message, msg.category, msg.filename, msg.lineno)
    if r is None:
        return None
    fixed = bool(r.converged) or r.residual < _RESIDUAL_OK
    if not (fixed and math.isfinite(r.v) and r.v < _V_MAX and r.train_loss > 0):
        return None
    return r, w


class _Budget(NamedTuple):
    """Limits of a bisection: its start, ``time_limit`` (seconds) and state-evolution
    solves (None: none)."""

    start: float
    time_limit: float | None
    max_solves: int | None

    def spent(self, n_solves: int) -> str | None:
        """Which limit is reached after ``n_solves`` solves, or None."""
        if self.max_solves is not None and n_solves >= self.max_solves:
            return f"max_solves = {self.max_solves}"
        if _limits.expired():
            return f"time_limit = {self.time_limit:g} s"
        return None

    def why(self, err) -> str:
        """Why a probe was cut short by ``err`` (an interrupt or the time limit)."""
        if isinstance(err, KeyboardInterrupt):
            return "an interrupt (KeyboardInterrupt)"
        return f"time_limit = {self.time_limit:g} s"


def _stop_warning(why, lo, hi, xtol) -> None:
    warnings.warn(
        f"interpolation_se: stopped at {why} with the bracket [{lo:.5g}, {hi:.5g}] "
        f"(width {hi - lo:.3g} > xtol = {xtol:g})",
        RuntimeWarning,
        stacklevel=5,
    )


def _bisect(task, target, bracket, xtol, se_kwargs, *, budget):
    """Halve ``bracket`` (:func:`attnlib.follow.bisect`) until ``hi - lo <= xtol``, the budget
    is spent or an interrupt comes (the finished probes' bracket is kept). Each probe is the
    runaway rate of ``v`` (:func:`_interpolates`); the fixed point
    at the final ``hi`` is solved once at the end."""

    def probe(alpha, _at_hi):  # a fixed point (not a runaway) moves hi
        return None if _interpolates(task, target, alpha, se_kwargs) else True

    def after(n, alpha, r, lo, hi):
        msg = "interpolation_se: probe %d at alpha %.5g: %s; bracket [%.5g, %.5g], %.0f s"
        what = "fixed point" if r else "interpolates"
        log.info(msg, n, alpha, what, lo, hi, time.perf_counter() - budget.start)

    def spent(n):  # the two end-point solves came first
        return budget.spent(n + 2)

    b = follow.bisect(probe, *bracket, xtol=xtol, spent=spent, after=after)
    if b.stopped is not None:
        why = b.stopped if isinstance(b.stopped, str) else budget.why(b.stopped)
        _stop_warning(why, b.lo, b.hi, xtol)
    return b.lo, b.hi, _fixed_point_at(task, target, b.hi, se_kwargs), b.n_probes


def _fixed_point_at(task, target, alpha, se_kwargs):
    """The ``lam = 0`` fixed point at ``alpha`` (an end of the bracket); None where the
    solve fails or is cut short by the time limit or ``_FINAL_SOLVE_S`` (a
    ``RuntimeWarning`` says so)."""
    try:
        with _limits.limit(_FINAL_SOLVE_S):
            r = _lam0_fixed_point(task, target, alpha, None, se_kwargs, rate=False)
    except (KeyboardInterrupt, _limits.TimeUp):  # the bracket is kept
        r = None
    if r is None:
        warnings.warn(
            f"interpolation_se: the lam = 0 fixed point at {alpha:.5g} was not found "
            "(fixed_point is None); the bracket stands (it rests on the runaway rate)",
            RuntimeWarning,
            stacklevel=5,
        )
        return None
    return r[0]


def _ends(task, target, se_kwargs, budget):
    """The probes at both ends of ``[1/(4 m_eff), 1.02 x small-noise bound]``: an
    :class:`InterpolationThreshold` where they settle it (NaN where there is no bracket),
    else ``(lo, hi)``."""
    lo = interpolation(task)
    hi = 1.02 * interpolation_small_noise(task, target)
    try:
        top = not _interpolates(task, target, hi, se_kwargs)
        bottom = top and not _interpolates(task, target, lo, se_kwargs)
    except (KeyboardInterrupt, _limits.TimeUp) as err:
        _stop_warning(budget.why(err) + " before a bracket was found (NaN)", lo, hi, 0.0)
        return InterpolationThreshold(math.nan, lo, hi, None, 0)
    if not top:  # the theory failure policy: NaN and a warning
        warnings.warn(
            f"interpolation_se: the lam = 0 state evolution's v runs away at alpha = "
            f"{hi:.4g}, above the small-noise bound; the threshold cannot be bracketed: NaN "
            f"(it lies in [{lo:.4g}, {hi:.4g}])",
            se.SEConvergenceWarning,
            stacklevel=4,
        )
        return InterpolationThreshold(math.nan, lo, hi, None, 1)
    if bottom:
        warnings.warn(
            f"interpolation_se: the lam = 0 state evolution's v does not run away at "
            f"1/(4 m_eff) = {lo:.4g}, below which interpolation is proven; returning "
            "1/(4 m_eff)",
            RuntimeWarning,
            stacklevel=4,
        )
        fixed = _fixed_point_at(task, target, lo, se_kwargs)
        return InterpolationThreshold(lo, lo, lo, fixed, 2)
    return lo, hi


def interpolation_se_bracket(
    task: Task,
    target,
    *,
    xtol: float = 1e-3,
    time_limit: float | None = None,
    max_solves: int | None = None,
    **se_kwargs,
) -> InterpolationThreshold:
    r"""Interpolation threshold at the task's noise: the bracket ``lo < alpha_interp <= hi``.

    Bisection (module docstring) from ``[1/(4 m_eff), 1.02 tangent_cone_dimension(kappa0) /
    m_eff]`` until ``hi - lo <= xtol`` (absolute). A fixed point at the lower end gives
    ``lo = hi = 1/(4 m_eff)`` and a ``RuntimeWarning``; none at the upper end gives ``alpha``
    NaN, the two bounds and an :class:`attnlib.se.SEConvergenceWarning`. Each probe (about
    ``2 + log2(width / xtol)``) is the runaway rate :func:`attnlib.se.runaway.growth_rate`
    at the QMC points of ``se_kwargs``; then one :func:`attnlib.se.solve` at ``hi``
    (``se_kwargs`` passed on; at most ``_FINAL_SOLVE_S``) gives ``fixed_point``. The QMC
    error of the threshold is the rate's standard error (logged) over ``|d rate / d
    alpha|``. Nuclear + PSD penalty, noise on the logits or the target.

    ``time_limit`` (seconds; a probe stops between two SE maps), ``max_solves`` (probes,
    the two ends included) and a ``KeyboardInterrupt`` stop early with a
    ``RuntimeWarning`` and the finished probes' bracket (NaN before both ends are probed).
    Probes are logged at INFO on the logger ``attnlib.thresholds``.
    """
    task = _check_task(task)
    _check_psd_target(target)
    xtol = _checks.positive("xtol", xtol)
    budget = _Budget(
        time.perf_counter(),
        _limits.time_limit(time_limit),
        None if max_solves is None else _checks.integer("max_solves", max_solves, 2),
    )
    if _labels_leave_range(task):
        return InterpolationThreshold(0.0, 0.0, 0.0, None, 0)
    if task.noise == 0.0:
        raise ValueError("interpolation_se needs noisy labels (task.noise > 0)")
    with _limits.limit(budget.time_limit):
        ends = _ends(task, target, se_kwargs, budget)
        if isinstance(ends, InterpolationThreshold):
            return ends
        lo, hi, point, n = _bisect(task, target, ends, xtol, se_kwargs, budget=budget)
    return InterpolationThreshold(0.5 * (lo + hi), lo, hi, point, n + 2)


def interpolation_se(
    task: Task, target, *, xtol: float = 1e-3, time_limit: float | None = None, **se_kwargs
) -> float:
    r"""Interpolation threshold ``alpha_interp(Delta)`` at the task's noise (state evolution).

    The midpoint of :func:`interpolation_se_bracket` (accurate to ``xtol / 2``), between
    :func:`interpolation` (``Delta -> infinity``) and :func:`interpolation_small_noise`
    (``Delta -> 0``).
    """
    return interpolation_se_bracket(
        task, target, xtol=xtol, time_limit=time_limit, **se_kwargs
    ).alpha


def minimal_width(task: Task, target, alpha: float, lam: float, **se_kwargs) -> float:
    r"""``kappa*(alpha, lam)``: rank fraction of the convex (nuclear + PSD) minimiser.

    From the state evolution, ``kappa* = int_{x > tau / c} rho_R(x) dx``
    (``se.solve(...).rank_fraction``). Since every PSD matrix of rank ``<= p`` is a
    ``W W^T / sqrt(p d)`` with ``W`` of width ``p``, the factorised student of width
    ``kappa = p / d`` can reach the convex minimum iff ``kappa >= kappa*``; below it
    the rank constraint binds. Extra keyword arguments go to :func:`attnlib.se.solve`.
    """
    task = _check_task(task)
    alpha = _checks.alpha(alpha)
    lam = _checks.positive("lam", lam)
    res = se.solve(task, target, alpha, lam, penalty="nuclear", **se_kwargs)
    return float(res.rank_fraction)
