"""Thin drivers: :func:`solve`, :func:`learning_curve` (on :func:`continuation`),
:func:`search_lambda`, :func:`solve_nearby`.

They validate arguments, build the problem's arrays, call the robust fixed-point search
(:mod:`attnlib.se.robust`) and return results (numbers only); with ``return_warm=True``
also the warm start beside each result (a :class:`~attnlib.se.WarmStart`, what
``init=`` takes to continue from it). Settings come in one
:class:`~attnlib.se.SESettings` (``settings=``); the keywords of its field names are
shorthands for single fields (``None``: from ``settings``). Nothing passed in is modified.
"""

from __future__ import annotations

import logging
import math
import time
import warnings

import numpy as np

from attnlib import _checks, _doubling, _limits, channels, follow
from attnlib.gamp import SpectralProx
from attnlib.se import engine, optimal, point, replicon, robust, several
from attnlib.se.continuation import continuation, unfinished_result
from attnlib.se.lam0 import _interpolation_bound, check_lam0  # noqa: F401  (tests read it)
from attnlib.se.output import check_task, m_hat_channel, pathwise_m_hat, qmc_points
from attnlib.se.results import (
    PENALTIES,
    LearningCurve,
    SEConvergenceWarning,
    SEMultipleFixedPointsWarning,  # noqa: F401  (named in the docstring)
)
from attnlib.se.settings import SESettings, resolve

__all__ = [
    "solve",
    "learning_curve",
    "continuation",
    "search_lambda",
    "solve_nearby",
]

log = logging.getLogger("attnlib.se")


def _problem(task, target, alpha, lam, penalty, opts, *, m_hat="derivative",
             kappa=1.0) -> point.Problem:  # fmt: skip
    """The problem at ``(alpha, lam)``: ``opts = ((n_qmc, n_rep, seed), anderson memory)``,
    ``m_hat`` the form of the output side's ``m_hat`` (:class:`attnlib.se.SESettings`),
    ``kappa`` the student's width (``< 1``: the nuclear map cut where its rank binds,
    :class:`attnlib.gamp.SpectralProx`; :mod:`attnlib.width`)."""
    qmc, memory = opts
    Q0 = float(target.Q0)
    data = engine.Data(
        z=qmc_points(task, *qmc),
        alpha=np.float64(alpha),
        lam=np.float64(lam),
        Q0=np.float64(Q0),
    )
    channel = m_hat_channel(task, m_hat)
    return point.Problem(channel, SpectralProx(penalty, target, float(kappa)), data, qmc, memory)


def _start(init, pb: point.Problem):
    """``(x0, prox0, history)`` from ``init`` (:func:`attnlib.follow.start`): a
    :class:`WarmStart`'s prox points and Anderson history where they fit this problem."""
    x0, warm = follow.start(init, robust.default_x0(float(pb.data.Q0)), float(pb.data.Q0))
    if warm is None or warm.key != (pb.task, *pb.qmc):
        return x0, None, None
    history = None
    if warm.history is not None and warm.history[:2] == (pb.penalty, pb.memory):
        history = warm.history[2:]
    return x0, warm.prox, history


def _check_solve_args(task, target, alpha, lam, penalty):
    check_task(task)
    if channels.for_task(task).scale_free:  # no fixed point at finite scale: the scale -> 0
        raise ValueError(
            f"task {task!r}: a piecewise-constant, scale-invariant loss has no state-evolution "
            "fixed point at finite scale; use attnlib.hardmax.solve (its fixed ray)"
        )
    _checks.alpha(alpha)
    _checks.nonnegative("lam", lam)
    _checks.choice("penalty", penalty, PENALTIES)
    if not hasattr(target, "measure") or not hasattr(target, "Q0"):
        raise ValueError(f"target must be an attnlib.targets.Target, got {target!r}")


def _report_failure(alpha, lam, penalty, found, on_fail):
    msg = (
        f"state evolution did not converge at alpha={alpha}, lam={lam}, penalty={penalty}: "
        f"best residual {found.residual:.2e} after {found.n_iter} maps (fields are NaN)"
    )
    if on_fail == "raise":
        raise RuntimeError(msg)
    warnings.warn(msg, SEConvergenceWarning, stacklevel=3)


def solve(
    task, target, alpha: float, lam: float, penalty: str = "nuclear", *, init=None,
    settings: SESettings | None = None, tol: float | None = None, max_iter: int | None = None,
    damping: float | None = None, anderson: int | None = None, n_qmc: int | None = None,
    n_rep: int | None = None, seed: int | None = None, on_fail: str | None = None,
    rtol: float | None = None, max_n_qmc: int | None = None, time_limit: float | None = None,
    refine: int | None = None, refine_steps: int | None = None, m_hat: str | None = None,
    refine_rep: int | None = None, return_warm: bool = False,
):  # fmt: skip
    r"""Solve the state evolution at ``(alpha, lam)``: the ERM's asymptotic metrics.

    Args:
      task: :class:`attnlib.tasks.Task`; target: :class:`attnlib.targets.Target`.
      alpha: sample ratio ``n / d^2 > 0``; lam: penalty strength ``>= 0``.
      penalty: ``"nuclear"`` (trace + PSD, the factorized student) or ``"frobenius"``.
      init: warm start: a :class:`WarmStart` (returned beside a previous result: its
        prox points and the fixed-point solver's last iterates, a secant model that makes
        the first step a quasi-Newton step), ``(m, q, v)``, or a previous
        :class:`SEResult` (its ``(m, q, v)`` only).
      settings: an :class:`attnlib.se.SESettings` (default ``SESettings()``: tolerance,
        iterations, damping, Anderson memory, QMC points, failure policy, ``rtol``).
      tol, max_iter, damping, anderson, n_qmc, n_rep, seed, on_fail (deprecated), rtol, max_n_qmc:
        shorthands for the fields of ``settings`` of the same names (``None``: the
        field of ``settings``); :class:`attnlib.se.SESettings` documents them and holds
        the defaults. With ``rtol``, ``n_qmc`` doubles (warm-started solves) until
        ``integration_error <= rtol`` or up to ``max_n_qmc`` (then a ``RuntimeWarning``
        gives the accuracy reached). Also ``refine``, ``refine_steps``, ``refine_rep``, ``m_hat``.
      time_limit: seconds (the shorthand of the field of ``settings``): past it the solve
        stops between two SE maps and returns NaN with ``converged=False`` and an
        :class:`SEConvergenceWarning` (the deprecated ``on_fail="raise"``: ``RuntimeError``).
      return_warm: also return the warm start of the fixed point.

    Progress: a solve that runs longer than about 10 s logs what it does at INFO on the
    logger ``attnlib.se`` every 10 s (``logging.basicConfig(level=logging.INFO)``).

    ``integration_error``: the relative error of the metrics at the fixed point
    (:mod:`attnlib.se.propagation`).

    Returns:
      :class:`SEResult` (``(SEResult, WarmStart | None)`` with ``return_warm``; the warm
      start is ``None`` in the zero phase and where the solve failed): a fixed point
      (``converged=True``), or ``converged=False`` with NaN fields (never a finite point
      that is not a fixed point). When the direct iteration fails, heavier damping and
      continuation in ``lam`` are tried (:mod:`attnlib.se.robust`). Where ``lam`` is at
      least ``m_hat`` times the top edge of ``R`` at ``S_hat -> 0`` the minimiser is
      ``S_hat = 0``: ``m = q = v = 0``, ``rank_fraction = 0`` and the conjugates of that
      limit. Where the output channel is not convex the engine also looks for other
      fixed points (:mod:`attnlib.se.several`) and returns the one of lowest
      ``objective``, the others in ``alternatives``, with an
      :class:`SEMultipleFixedPointsWarning`; where their objectives lie within their
      QMC errors and their metrics do not, it cannot decide: NaN, ``converged=False``,
      the candidates in ``alternatives`` and named in an :class:`SEConvergenceWarning`
      (``rtol`` then doubles ``n_qmc``). Small ``lam`` (``<= 1e-3``) is always searched.
    """
    s = resolve(settings, tol=tol, max_iter=max_iter, damping=damping, anderson=anderson,
                n_qmc=n_qmc, n_rep=n_rep, seed=seed, on_fail=on_fail, rtol=rtol, refine=refine,
                max_n_qmc=max_n_qmc, time_limit=time_limit, refine_steps=refine_steps,
                m_hat=m_hat, refine_rep=refine_rep)  # fmt: skip
    r, w = _solve_within(task, target, (alpha, lam, penalty), init, s)
    return (r, w) if return_warm else r


def _solve_within(task, target, point_, init, s: SESettings):
    """:func:`_solve` within ``s.time_limit``: past it, the unfinished point (NaN,
    ``converged=False``) and the failure policy's warning (or ``RuntimeError``)."""
    _check_solve_args(task, target, *point_)
    with _limits.limit(s.time_limit):
        try:
            return _solve(task, target, point_, init, s._replace(time_limit=None))
        except _limits.TimeUp:
            if s.time_limit is None:  # the limit of an enclosing call: its to handle
                raise
    alpha, lam, penalty = point_
    msg = (f"state evolution stopped at time_limit = {s.time_limit:g} s at alpha={alpha}, "
           f"lam={lam}, penalty={penalty} (fields are NaN)")  # fmt: skip
    if s.on_fail == "raise":
        raise RuntimeError(msg)
    warnings.warn(msg, SEConvergenceWarning, stacklevel=3)
    return unfinished_result(alpha, lam, penalty, float(target.Q0)), None


def _solve(task, target, point_, init, s: SESettings):
    """:func:`solve` at ``point_ = (alpha, lam, penalty)`` with validated settings ``s``:
    ``(SEResult, WarmStart | None)``."""
    alpha, lam, penalty = point_
    _check_solve_args(task, target, alpha, lam, penalty)
    if s.rtol is not None:
        return _solve_to_rtol(task, target, point_, init, s)
    alpha, lam = float(alpha), float(lam)
    check_lam0(task, target, [alpha], lam, penalty)
    qmc = (int(s.n_qmc), int(s.n_rep), int(s.seed))
    pb = _problem(task, target, alpha, lam, penalty, (qmc, int(s.anderson)), m_hat=s.m_hat)
    pb = pb._replace(refine=(int(s.refine), int(s.refine_steps), s.refine_rep))
    start = _start(init, pb)
    loop = engine.loop_settings(s)
    found = robust.find(pb, lam, start, loop)
    if found.attempt is None and found.zero is None and pathwise_m_hat(pb.channel):
        pb, found = _stein_fallback(pb, lam, start, loop, found)
    extra = dict(converged=True, residual=found.residual, n_iter=found.n_iter)
    if found.zero is not None:  # the zero phase: S_hat = 0 exactly
        return point.result(pb, lam, np.zeros(3), extra, found.zero), None
    if found.attempt is None:
        _report_failure(alpha, lam, penalty, found, s.on_fail)
        return point.failed(pb, lam, found.residual, found.n_iter), None
    r, w = several.lowest(pb, lam, found.attempt, extra, loop, on_fail=s.on_fail)
    replicon.warn_if_unstable(r, stacklevel=4)
    return r, w


def _stein_fallback(pb, lam, start, loop, failed):
    """Where the map with the pathwise ``m_hat`` has no fixed point within reach (a prox
    that jumps between minima makes that map rough at the QMC points: seq2seq beta 2,
    noise 0.25 on the target, alpha 0.4, lam 0.01 stalled at a residual 5e-5), the same
    search with its Stein form (:mod:`attnlib.se.output`): ``(problem, Found)``."""
    log.info(
        "no fixed point with the pathwise m_hat (best residual %.1e): the Stein form",
        failed.residual,
    )
    pb = pb._replace(channel=m_hat_channel(pb.channel, "stein"))
    found = robust.find(pb, lam, start, loop)
    residual = found.residual if found.attempt is not None else min(found.residual, failed.residual)
    return pb, found._replace(n_iter=failed.n_iter + found.n_iter, residual=residual)


def _solve_to_rtol(task, target, point_, init, s: SESettings):
    """:func:`solve` with ``n_qmc`` doubled until ``integration_error <= rtol`` (each
    solve warm-started from the last; also doubled where the search could not decide
    among fixed points: NaN, the candidates in ``alternatives``, :func:`several.decide`)."""

    def once(s1, last):
        start = init if last is None or not last[0].converged else last[1]
        return _solve(task, target, point_, start, s1)

    return _doubling.doubling_n_qmc(
        once, s, name="se.solve", more=lambda r: not r.converged and r.alternatives, stacklevel=4
    )


def _stack(results, penalty) -> LearningCurve:
    fields = {"penalty": penalty}
    for name in LearningCurve._fields:
        if name not in fields:
            fields[name] = np.array([getattr(r, name) for r in results])
    return LearningCurve(**fields)


def _solve_quiet(task, target, point_, init, s: SESettings):
    """:func:`solve` that neither warns nor raises on non-convergence (the caller retries):
    ``(SEResult, WarmStart | None)``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SEConvergenceWarning)
        return _solve(task, target, point_, init, s._replace(on_fail="warn"))


def learning_curve(
    task, target, alphas, lam: float, penalty: str = "nuclear", *, init=None,
    settings: SESettings | None = None, return_warm: bool = False, **shorthands,
):  # fmt: skip
    """:func:`solve` along ``alphas`` (in the given order), warm-starting each point from
    the last converged ones (a secant prediction from the last two: order parameters and
    prox points; the fixed-point solver's history of the last one). ``init`` (optional,
    as in :func:`solve`) warm-starts the first point; ``settings`` and the shorthand
    keywords (``tol=``, ``n_qmc=``, ...: fields of :class:`~attnlib.se.SESettings`, as in
    :func:`solve`) apply to every point; ``time_limit=`` holds for the whole curve.
    Returns a :class:`LearningCurve` (numbers only); with ``return_warm``,
    ``(LearningCurve, WarmStart | None)``: the warm start of the last converged point.

    Finished work is kept: on a ``KeyboardInterrupt``, at ``time_limit`` or where a point
    raises (``on_fail="warn"``), the finished points are returned and the others are NaN
    with ``converged=False``, with an :class:`SEConvergenceWarning` saying why. Progress:
    one INFO line per point on the logger ``attnlib.se``."""
    alphas = np.asarray(_checks.numeric_array("alphas", alphas, "biuf"), dtype=float).reshape(-1)
    lo, hi = _checks.ALPHA_RANGE
    ok = np.all(alphas >= lo) and np.all(alphas <= hi)  # False for NaN
    if alphas.size == 0 or not ok:
        raise ValueError(
            f"alphas must be a non-empty list of values in [{lo}, {hi}], got {_checks._fmt(alphas)}"
        )
    s = resolve(settings, **shorthands)
    _check_solve_args(task, target, alphas[0], lam, penalty)  # before the curve starts
    check_lam0(task, target, alphas, _checks.nonnegative("lam", lam), penalty)
    Q0 = float(target.Q0) if hasattr(target, "Q0") else 1.0
    t0 = time.perf_counter()

    each = s._replace(time_limit=None)  # the curve's limit holds for all its points

    def solve_at(i, a, start):
        if i:
            log.info("learning_curve: point %d/%d (alpha %.4g), %.1f s so far",
                     i + 1, len(alphas), a, time.perf_counter() - t0)  # fmt: skip
        return _solve_quiet(task, target, (a, lam, penalty), start, each)

    def report(i, a, r):
        if not r.converged:
            _report_failure(a, lam, penalty, r, s.on_fail)

    with _limits.limit(s.time_limit):
        results, warms = continuation(
            solve_at, alphas, init=init, secant_Q0=Q0, after=report, return_warm=True,
            unfinished=lambda a: unfinished_result(a, lam, penalty, Q0), name="learning_curve",
            failures="mark" if s.on_fail == "warn" else "raise",
        )  # fmt: skip
    curve = _stack(results, penalty)
    if not return_warm:
        return curve
    good = [w for w in warms if w is not None]
    return curve, (good[-1] if good else None)


def solve_nearby(
    task, target, alpha: float, lam: float, penalty: str = "nuclear", *, init=None,
    nearby: float = 1.5, settings: SESettings | None = None, return_warm: bool = False,
    **shorthands,
):  # fmt: skip
    """:func:`solve`; where a cold start (``init=None``) does not converge, once more
    warm-started from the fixed point at ``nearby * alpha`` (when that one converges).
    ``settings`` and the shorthand keywords as in :func:`solve`; with ``return_warm``,
    ``(SEResult, WarmStart | None)``."""
    s = resolve(settings, **shorthands)
    _checks.positive("nearby", nearby)
    if init is not None:
        r, w = _solve(task, target, (alpha, lam, penalty), init, s)
        return (r, w) if return_warm else r
    r, w = _solve_quiet(task, target, (alpha, lam, penalty), None, s)
    if not r.converged:
        log.info("solve_nearby: no fixed point from a cold start at alpha %.4g, lam %.3g: "
                 "starting from alpha %.4g", alpha, lam, nearby * alpha)  # fmt: skip
        near, near_w = _solve_quiet(task, target, (nearby * alpha, lam, penalty), None, s)
        if near.converged:
            r, w = _solve_quiet(task, target, (alpha, lam, penalty), near_w, s)
    if not r.converged:
        _report_failure(float(alpha), lam, penalty, r, s.on_fail)
    return (r, w) if return_warm else r


def search_lambda(
    task, target, alpha: float, penalty: str = "nuclear", *, bounds=(1e-4, 10.0),
    xatol: float = 0.02, noisy: bool = False, previous: float | None = None, grid=None,
    init=None, settings: SESettings | None = None, **shorthands,
) -> optimal.LambdaSearch:  # fmt: skip
    """The ``lam`` minimising the SE test error at ``alpha``, with what the search met:
    :func:`attnlib.se.optimal.search` (bounded Brent on ``log lam``; around a
    ``previous`` optimum; or over a ``grid``) on :func:`solve_nearby` (``settings`` and
    the shorthand keywords as in :func:`solve`). ``init``: a warm start of the first
    solve (as in :func:`solve`). Returns a :class:`~attnlib.se.LambdaSearch`.
    ``time_limit=`` (a shorthand) holds for the whole search: past it, or on a
    ``KeyboardInterrupt``, the best of the finished solves is returned with an
    :class:`SEConvergenceWarning` (NaN before the first); each solve is logged at INFO
    (logger ``attnlib.se``)."""
    check_task(task)
    alpha = _checks.alpha(alpha)
    _checks.choice("penalty", penalty, PENALTIES)
    s = resolve(settings, **shorthands)
    bounds = _checks.finite_array("bounds", bounds)
    if np.shape(bounds) != (2,):
        raise ValueError(f"bounds must be (low, high), got {_checks._fmt(bounds)}")
    lo = _checks.positive("bounds[0]", bounds[0])
    hi = _checks.positive("bounds[1]", bounds[1])
    if not lo < hi:
        raise ValueError(f"bounds must satisfy 0 < low < high, got {bounds}")
    xatol = _checks.positive("xatol", xatol)
    previous = None if previous is None else _checks.positive("previous", previous)
    grid = None if grid is None else _checks.finite_array("grid", grid)

    each = s._replace(time_limit=None)  # the search's limit holds for all its solves

    def solve_at(lam, start):
        return solve_nearby(task, target, alpha, lam, penalty, init=start, settings=each,
                            return_warm=True)  # fmt: skip

    with _limits.limit(s.time_limit):
        found = optimal.search(solve_at, bounds=(lo, hi), xatol=xatol, previous=previous,
                               grid=grid, init=init, noisy=noisy)  # fmt: skip
    if found.result is None:  # stopped before a solve finished
        found = found._replace(result=unfinished_result(alpha, math.nan, penalty, target.Q0))
    return found
