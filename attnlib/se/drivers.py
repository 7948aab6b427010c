"""Thin drivers: :func:`solve`, :func:`learning_curve` (on :func:`continuation`),
:func:`optimal_lambda` (:func:`search_lambda`), :func:`solve_nearby`.

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

from attnlib import _checks, channels
from attnlib.se import engine, optimal, point, robust, several
from attnlib.se.output import check_task, qmc_points
from attnlib.se.results import (
    PENALTIES,
    LearningCurve,
    SEConvergenceWarning,
    SEMultipleFixedPointsWarning,  # noqa: F401  (named in the docstring)
    SEResult,
    WarmStart,
)
from attnlib.se.settings import SESettings, resolve

__all__ = [
    "solve",
    "learning_curve",
    "continuation",
    "optimal_lambda",
    "search_lambda",
    "solve_nearby",
]

ALPHA_MIN = _checks.ALPHA_RANGE[0]
"""Smallest sample ratio accepted (the largest is ``_checks.MAX_ABS``): beyond either end
the effective noise leaves the range the input side resolves."""

log = logging.getLogger("attnlib.se")


def _problem(task, target, alpha, lam, penalty, opts) -> point.Problem:
    qmc, memory = opts
    Q0 = float(target.Q0)
    data = engine.Data(
        z=qmc_points(task, *qmc),
        alpha=np.float64(alpha),
        lam=np.float64(lam),
        Q0=np.float64(Q0),
    )
    return point.Problem(task, target, penalty, data, qmc, memory)


def _history(warm: WarmStart, pb: point.Problem):
    """The warm Anderson history of ``warm`` where it fits this problem, else None."""
    if warm.history is None or warm.key != (pb.task, *pb.qmc):
        return None
    penalty, memory, hx, hr, k = warm.history
    return (hx, hr, k) if (penalty, memory) == (pb.penalty, pb.memory) else None


def _start(init, pb: point.Problem):
    """``(x0, prox0, history)`` from ``init``: None, ``(m, q, v)``, a :class:`WarmStart`
    (its prox points and Anderson history where they fit this problem) or a result (its
    ``(m, q, v)`` only; a result that did not converge, or the zero phase, starts cold)."""
    Q0 = float(pb.data.Q0)
    prox = history = None
    if init is None:
        return robust.default_x0(Q0), None, None
    if isinstance(init, SEResult):
        if not (init.converged and init.v > 0):  # zero phase or no fixed point
            return robust.default_x0(Q0), None, None
        init = (init.m, init.q, init.v)
    if isinstance(init, WarmStart):
        prox = init.prox if init.key == (pb.task, *pb.qmc) else None
        history = _history(init, pb)
        init = init.x
    x0 = np.asarray(init, dtype=float).reshape(-1)
    if x0.shape != (3,):
        raise ValueError(
            f"init must be (m, q, v), an SEResult or a WarmStart, got {_checks._fmt(init)}"
        )
    m, q, v = x0
    if not (np.all(np.isfinite(x0)) and q > 0 and v > 0 and m * m < q * Q0):
        raise ValueError(f"init (m, q, v) = {tuple(x0)} must have q > 0, v > 0 and m^2 < q Q0")
    return x0, prox, history


def _check_solve_args(task, target, alpha, lam, penalty):
    check_task(task)
    if task.piecewise_constant:  # no fixed point at finite scale: the scale contracts to 0
        raise ValueError(
            f"task {task!r}: a piecewise-constant, scale-invariant loss has no state-evolution "
            "fixed point at finite scale; use attnlib.hardmax.solve (its fixed ray)"
        )
    _checks.alpha(alpha)
    _checks.nonnegative("lam", lam)
    _checks.choice("penalty", penalty, PENALTIES)
    if not hasattr(target, "measure") or not hasattr(target, "Q0"):
        raise ValueError(f"target must be an attnlib.targets.Target, got {target!r}")


def _interpolation_bound(task, penalty) -> float:
    """The proven interpolation bound: with noisy labels (on the logits) and ``lam = 0``
    the ERM fits the data exactly below ``1/(4 m_eff)`` (nuclear + PSD; ``1/(2 m_eff)``
    Frobenius), so the ``lam = 0`` state evolution has no fixed point there (its ``v``
    runs off to infinity). 0 where that does not apply (noise-free labels, labels
    outside the range of the readout)."""
    if task.noise == 0.0 or task.m_eff <= 0:
        return 0.0
    if channels.for_task(task).labels_leave_range:
        return 0.0  # labels off the readout's range: the train loss stays positive
    return (0.25 if penalty == "nuclear" else 0.5) / task.m_eff


def _small_noise_bound(task, target) -> float:
    """``alpha_interp`` of noise-free labels at ``lam = 0``, nuclear + PSD: the PSD matrices
    that fit the data are S0 alone iff ``alpha > tangent_cone_dimension(kappa0) / m_eff``
    (:func:`attnlib.thresholds.interpolation_small_noise`; with noisy labels the upper end
    of the bracket of ``alpha_interp``); 0 where it does not apply (a target that is not
    PSD, labels outside the readout's range)."""
    from attnlib.thresholds import _common, geometry  # thresholds imports se

    if task.m_eff <= 0 or channels.for_task(task).labels_leave_range:
        return 0.0
    try:
        _common._check_psd_target(target)
        kappa0 = _common._target_kappa0(target)
    except ValueError:
        return 0.0
    return geometry.tangent_cone_dimension(kappa0) / task.m_eff


def _lam0_refusal(task, target, alpha, penalty) -> str | None:
    """Why ``lam = 0`` at ``alpha`` has no unique minimiser (the state evolution no fixed
    point: its ``v`` runs off to infinity), or None where the theory does not say so."""
    bound = _interpolation_bound(task, penalty)
    if penalty == "frobenius" and task.m_eff > 0 and alpha < 0.5 / task.m_eff:
        return (
            f"lam = 0 at alpha = {alpha:.4g} < 1/(2 m_eff) = {0.5 / task.m_eff:.4g}: fewer "
            "equations than the d^2/2 entries of S, so the Frobenius ERM has no unique "
            "minimiser at any noise (the loss is flat along the null space of the data). "
            f"Use lam > 0 (e.g. 1e-4), or alpha >= {0.5 / task.m_eff:.4g}."
        )
    if alpha < bound:
        top = _small_noise_bound(task, target)
        where = f"; alpha_interp at this noise lies in [{bound:.4g}, {top:.4g}]" if top else ""
        return (
            f"lam = 0 at alpha = {alpha:.4g} < 1/(4 m_eff) = {bound:.4g} with noisy labels "
            "has no state-evolution fixed point: the ERM interpolates the data there (train "
            f"loss 0, no unique minimiser; attnlib.thresholds.interpolation){where}. Use "
            f"lam > 0 (e.g. 1e-4), or alpha >= {bound:.4g}; "
            "attnlib.thresholds.interpolation_se gives the threshold at this noise."
        )
    free = _small_noise_bound(task, target) if penalty == "nuclear" and task.noise == 0 else 0.0
    if alpha < free:
        return (
            f"lam = 0 at alpha = {alpha:.4g} < alpha_interp = {free:.4g} (noise-free labels: "
            "tangent_cone_dimension(kappa0) / m_eff, attnlib.thresholds."
            "interpolation_small_noise): the PSD matrices that fit the data are not S0 alone, "
            f"the minimiser is not unique. Use lam > 0 (e.g. 1e-4), or alpha >= {free:.4g}."
        )
    return None


def _check_lam0(task, target, alphas, lam, penalty):
    """``ValueError`` at once for ``lam = 0`` where the theory knows there is no unique
    minimiser (the solver would search for minutes and return NaN, or a point at
    ``v = 1e21``): the smallest such ``alpha`` is named, with ``alpha_interp``."""
    if lam != 0.0:
        return
    for a in sorted(float(x) for x in np.asarray(alphas).reshape(-1)):
        why = _lam0_refusal(task, target, a, penalty)
        if why is not None:
            raise ValueError(why)
        return  # only the smallest alpha can be below a bound


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
    rtol: float | None = None, max_n_qmc: int | None = None, return_warm: bool = False,
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
      tol, max_iter, damping, anderson, n_qmc, n_rep, seed, on_fail, rtol, max_n_qmc:
        shorthands for the fields of ``settings`` of the same names (``None``: the
        field of ``settings``); :class:`attnlib.se.SESettings` documents them and holds
        the defaults. With ``rtol``, ``n_qmc`` doubles (warm-started solves) until
        ``integration_error <= rtol`` or up to ``max_n_qmc`` (then a ``RuntimeWarning``
        gives the accuracy reached).
      return_warm: also return the warm start of the fixed point.

    ``integration_error``: the relative error of the metrics at the fixed point
    (:mod:`attnlib.se.propagation`). Measured at 8192 points, seq2seq: T = 2 4e-4 to
    7e-3 at lam 0.05-0.1, alpha <= 0.3, 3-9e-2 at lam 1e-3 or alpha 1, 0.4 at alpha 2
    (a small mse); T = 3 1e-2. It falls like ``n_qmc^-1/2`` to ``^-3/4``: ask ``rtol``.

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
      :class:`SEMultipleFixedPointsWarning`.
    """
    s = resolve(settings, tol=tol, max_iter=max_iter, damping=damping, anderson=anderson,
                n_qmc=n_qmc, n_rep=n_rep, seed=seed, on_fail=on_fail, rtol=rtol,
                max_n_qmc=max_n_qmc)  # fmt: skip
    r, w = _solve(task, target, (alpha, lam, penalty), init, s)
    return (r, w) if return_warm else r


def _solve(task, target, point_, init, s: SESettings):
    """:func:`solve` at ``point_ = (alpha, lam, penalty)`` with validated settings ``s``:
    ``(SEResult, WarmStart | None)``."""
    alpha, lam, penalty = point_
    _check_solve_args(task, target, alpha, lam, penalty)
    if s.rtol is not None:
        return _solve_to_rtol(task, target, point_, init, s)
    alpha, lam = float(alpha), float(lam)
    _check_lam0(task, target, [alpha], lam, penalty)
    qmc = (int(s.n_qmc), int(s.n_rep), int(s.seed))
    pb = _problem(task, target, alpha, lam, penalty, (qmc, int(s.anderson)))
    start = _start(init, pb)
    loop = engine.loop_settings(s)
    found = robust.find(pb, lam, start, loop)
    extra = dict(converged=True, residual=found.residual, n_iter=found.n_iter)
    if found.zero is not None:  # the zero phase: S_hat = 0 exactly
        return point.result(pb, lam, np.zeros(3), extra, found.zero), None
    if found.attempt is None:
        _report_failure(alpha, lam, penalty, found, s.on_fail)
        return point.failed(pb, lam, found.residual, found.n_iter), None
    return several.lowest(pb, lam, found.attempt, extra, loop)


def _solve_to_rtol(task, target, point_, init, s: SESettings):
    """:func:`solve` with ``n_qmc`` doubled until ``integration_error <= rtol`` (each
    solve warm-started from the last); a ``RuntimeWarning`` where ``max_n_qmc`` stops it."""
    rtol, once = s.rtol, s._replace(rtol=None)
    r, w = _solve(task, target, point_, init, once)
    while r.converged and not r.integration_error <= rtol and 2 * once.n_qmc <= s.max_n_qmc:
        log.info("solve: error of the metrics %.2e > rtol %.1e at n_qmc %d: doubling",
                 r.integration_error, rtol, once.n_qmc)  # fmt: skip
        once = once._replace(n_qmc=2 * once.n_qmc)
        r, w = _solve(task, target, point_, w, once)
    if r.converged and not r.integration_error <= rtol:
        warnings.warn(
            f"se.solve: relative error of the metrics {r.integration_error:.2e} > rtol = "
            f"{rtol:g} at n_qmc = {once.n_qmc} (max_n_qmc = {s.max_n_qmc}); raise max_n_qmc "
            "for more (the error falls like n_qmc^-1/2 to n_qmc^-3/4)",
            RuntimeWarning,
            stacklevel=4,
        )
    return r, w


def _stack(results, penalty) -> LearningCurve:
    fields = {"penalty": penalty}
    for name in LearningCurve._fields:
        if name not in fields:
            fields[name] = np.array([getattr(r, name) for r in results])
    return LearningCurve(**fields)


def _predict(prev, alpha, Q0):
    """Warm start at ``alpha`` extrapolated linearly (secant) from the last two converged
    points ``prev = [(alpha, WarmStart), ...]``: ``(m/Q0, log q, log v)`` and the prox
    points; the last warm start where that is not possible or leaves the domain."""
    if not prev:
        return None
    a1, w1 = prev[-1]
    if len(prev) < 2:
        return w1
    a2, w2 = prev[-2]
    t = (alpha - a1) / (a1 - a2) if a1 != a2 else 0.0
    if not 0.0 < t <= _MAX_SECANT or w2.key != w1.key:
        return w1
    y1, y2 = (np.array([w.x[0] / Q0, math.log(w.x[1]), math.log(w.x[2])]) for w in (w1, w2))
    y = y1 + t * (y1 - y2)
    x = (y[0] * Q0, math.exp(y[1]), math.exp(y[2]))
    if not (np.all(np.isfinite(x)) and x[0] ** 2 < 0.999 * x[1] * Q0):
        return w1
    prox = None
    if w1.prox is not None and w2.prox is not None:
        prox = w1.prox + t * (w1.prox - w2.prox)
    return WarmStart(x, prox if prox is not None else w1.prox, w1.key, w1.history)


def _solve_quiet(task, target, point_, init, s: SESettings):
    """:func:`solve` that neither warns nor raises on non-convergence (the caller retries):
    ``(SEResult, WarmStart | None)``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SEConvergenceWarning)
        return _solve(task, target, point_, init, s._replace(on_fail="warn"))


# secant predictions only for steps at most this many times the last one
_MAX_SECANT = 3.0


def learning_curve(
    task, target, alphas, lam: float, penalty: str = "nuclear", *, init=None,
    settings: SESettings | None = None, return_warm: bool = False, **shorthands,
):  # fmt: skip
    """:func:`solve` along ``alphas`` (in the given order), warm-starting each point from
    the last converged ones (a secant prediction from the last two: order parameters and
    prox points; the fixed-point solver's history of the last one). ``init`` (optional,
    as in :func:`solve`) warm-starts the first point; ``settings`` and the shorthand
    keywords (``tol=``, ``n_qmc=``, ...: fields of :class:`~attnlib.se.SESettings`, as in
    :func:`solve`) apply to every point. Returns a :class:`LearningCurve` (numbers only);
    with ``return_warm``, ``(LearningCurve, WarmStart | None)``: the warm start of the
    last converged point."""
    alphas = np.asarray(_checks.numeric_array("alphas", alphas, "biuf"), dtype=float).reshape(-1)
    lo, hi = _checks.ALPHA_RANGE
    ok = np.all(alphas >= lo) and np.all(alphas <= hi)  # False for NaN
    if alphas.size == 0 or not ok:
        raise ValueError(
            f"alphas must be a non-empty list of values in [{lo}, {hi}], got {_checks._fmt(alphas)}"
        )
    s = resolve(settings, **shorthands)
    check_task(task)
    _checks.choice("penalty", penalty, PENALTIES)
    _check_lam0(task, target, alphas, _checks.nonnegative("lam", lam), penalty)
    Q0 = float(target.Q0) if hasattr(target, "Q0") else 1.0
    t0 = time.perf_counter()

    def solve_at(i, a, start):
        if i:
            log.info("learning_curve: point %d/%d (alpha %.4g), %.1f s so far",
                     i + 1, len(alphas), a, time.perf_counter() - t0)  # fmt: skip
        return _solve_quiet(task, target, (a, lam, penalty), start, s)

    def report(i, a, r):
        if not r.converged:
            _report_failure(a, lam, penalty, r, s.on_fail)

    results, warms = continuation(
        solve_at, alphas, init=init, secant_Q0=Q0, after=report, return_warm=True
    )
    curve = _stack(results, penalty)
    if not return_warm:
        return curve
    good = [w for w in warms if w is not None]
    return curve, (good[-1] if good else None)


def continuation(
    solve_at, alphas, *, init=None, starts=None, secant_Q0=None, after=None,
    return_warm: bool = False,
):  # fmt: skip
    """Results of ``solve_at(i, alpha, start) -> (SEResult, WarmStart | None)`` along
    ``alphas`` (in the given order), each point warm-started from the last converged ones
    (their warm starts): the one continuation in ``alpha`` of the library
    (:func:`learning_curve`, the explorers, :func:`attnlib.scaling.excess_risk_curve`).

    The start of point ``i`` is ``starts[i]`` where given (``starts``: one entry per
    alpha, ``None`` for none); else, once a point has converged, the last converged
    point's warm start or, with ``secant_Q0`` (the target's ``Q0``), the secant
    prediction from the last two (``(m/Q0, log q, log v)`` and the prox points), solved
    again from the last warm start where the prediction does not converge; before that,
    ``init``. ``after(i, alpha, result)`` (optional) is called after each point. Returns
    the list of results; with ``return_warm``, ``(results, warm starts)`` (two lists)."""
    if not callable(solve_at):
        raise ValueError(f"solve_at must be a callable (i, alpha, start), got {solve_at!r}")
    alphas = _checks.finite_array("alphas", alphas)
    alphas = [float(a) for a in np.asarray(alphas, dtype=float).reshape(-1)]
    if starts is not None and (isinstance(starts, (str, bytes)) or not hasattr(starts, "__len__")
                               or len(starts) != len(alphas)):  # fmt: skip
        raise ValueError(f"starts must have one entry per alpha ({len(alphas)}), got {starts!r}")
    if after is not None and not callable(after):
        raise ValueError(f"after must be None or a callable (i, alpha, result), got {after!r}")
    if secant_Q0 is not None:
        secant_Q0 = _checks.positive("secant_Q0", secant_Q0)
    results, warms, prev = [], [], []
    for i, a in enumerate(alphas):
        given = starts[i] if starts is not None else None
        secant = given is None and bool(prev) and secant_Q0 is not None
        if given is not None:
            start = given
        elif prev:
            start = _predict(prev, a, secant_Q0) if secant else prev[-1][1]
        else:
            start = init
        r, w = solve_at(i, a, start)
        if secant and not r.converged and start is not prev[-1][1]:  # without the secant
            r, w = solve_at(i, a, prev[-1][1])
        if after is not None:
            after(i, a, r)
        results.append(r)
        warms.append(w)
        if w is not None:
            prev = [*prev[-1:], (a, w)]
    return (results, warms) if return_warm else results


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
    solve (as in :func:`solve`). Returns a :class:`~attnlib.se.LambdaSearch`: ``lam``,
    the ``result`` there, the ``warm`` start for a neighbouring search (beside the
    result, as everywhere), ``n_solves``, and ``result_warm``, the warm start of
    ``result``."""
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

    def solve_at(lam, start):
        return solve_nearby(task, target, alpha, lam, penalty, init=start, settings=s,
                            return_warm=True)  # fmt: skip

    return optimal.search(solve_at, bounds=(lo, hi), xatol=xatol, previous=previous,
                          grid=grid, init=init, noisy=noisy)  # fmt: skip


def optimal_lambda(
    task, target, alpha: float, penalty: str = "nuclear", *, bounds=(1e-4, 10.0),
    xatol: float = 0.02, noisy: bool = False, settings: SESettings | None = None,
    **shorthands,
):  # fmt: skip
    """``lam`` minimising the SE test error at ``alpha`` (bounded search on ``log lam``;
    :func:`search_lambda` has the other searches and what the search met).

    Returns ``(lam_opt, SEResult at lam_opt)``. ``noisy=True`` minimises
    ``test_error_noisy``. Points that do not converge count as ``+inf``. ``settings``
    and the shorthand keywords as in :func:`solve`.
    """
    s = search_lambda(task, target, alpha, penalty, bounds=bounds, xatol=xatol, noisy=noisy,
                      settings=settings, **shorthands)  # fmt: skip
    return s.lam, s.result
