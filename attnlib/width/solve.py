"""Driver of the rank-constrained state evolution: :func:`solve` and :class:`WidthResult`."""

from __future__ import annotations

import logging
import math
import warnings
from typing import NamedTuple

import numpy as np

from attnlib import _checks, _doubling, _limits, follow, se
from attnlib.se import drivers, point, robust
from attnlib.se import engine as se_engine
from attnlib.se.continuation import unfinished_result
from attnlib.se.output import check_task
from attnlib.se.results import SEConvergenceWarning, SEResult
from attnlib.se.settings import SESettings, resolve
from attnlib.width.input import constrained_trace

__all__ = ["WidthResult", "solve", "solve_constrained"]

log = logging.getLogger("attnlib.width")

_RETRY = (0.9, 5)  # the second attempt: damping 0.9, 5 max_iter maps (1500 by default)


class WidthResult(NamedTuple):
    """The state evolution of the factorised student of width ``kappa = p / d``.

    ``se``: the fixed point of the rank-constrained state evolution (an
    :class:`attnlib.se.SEResult`; its ``rank_fraction`` is ``min(kappa, kappa_star)``);
    ``convex``: the unconstrained (convex) fixed point at the same ``(alpha, lam)``;
    ``kappa_star``: its rank fraction (the minimal width); ``constrained``: whether
    ``kappa < kappa_star`` (otherwise ``se`` is ``convex``). ``se.trace`` and
    ``se.objective`` are those of the rank-constrained fixed point.

    Diagnostics ``converged``, ``residual``, ``n_iter`` (maps of the rank-constrained
    attempts, or of the convex solve where the constraint is inactive; the convex solve's
    are ``convex.n_iter``) and ``integration_error`` (at a constrained point the error
    propagated through the rank-constrained map's Jacobian) are properties reading ``se``.
    Not converged: ``converged`` false, ``se``'s order parameters and metrics NaN, and an
    :class:`attnlib.se.SEConvergenceWarning`. Where the convex point failed,
    ``se is convex`` (NaN), ``kappa_star`` is NaN and ``constrained`` false; where only the
    constrained map failed, ``convex`` keeps its fixed point.
    """

    kappa: float
    kappa_star: float
    constrained: bool
    se: SEResult
    convex: SEResult

    converged = property(lambda self: self.se.converged)
    residual = property(lambda self: self.se.residual)
    n_iter = property(lambda self: self.se.n_iter)
    integration_error = property(lambda self: self.se.integration_error)


def _problem(task, target, alpha, lam, *, kappa, s: SESettings) -> point.Problem:
    """The state-evolution problem at ``(alpha, lam, kappa)`` with the QMC points and
    Anderson memory of ``s``: the convex one with the nuclear map cut at ``x_kappa``
    (:func:`attnlib.se.drivers._problem`)."""
    opts = ((int(s.n_qmc), int(s.n_rep), int(s.seed)), int(s.anderson))
    return drivers._problem(task, target, alpha, lam, "nuclear", opts, m_hat=s.m_hat, kappa=kappa)


def _attempt(pb, x0, prox, settings):
    """One attempt of :func:`attnlib.se.point.attempt` (the one attempt of every ERM state
    evolution): ``(sides | None, x, prox, n_iter, residual)``; ``sides`` with what the
    propagated error needs (:func:`attnlib.se.point.sides_at`; the Jacobian of the map
    cut at ``x_kappa`` is :mod:`attnlib.se.propagation`'s for ``pb.kappa < 1``)."""
    a = point.attempt(pb, x0, prox, settings)
    sides = point.sides_at(float(pb.data.lam), a.sides) if a.converged else None
    return sides, a.x, a.prox, a.n_iter, a.residual


def _start(init, pb):
    """``(x0, prox0)`` from ``init`` (:func:`attnlib.follow.start`; a result that did not
    converge starts cold): a ``WarmStart``'s prox points where they fit this problem's QMC
    points, else the cold prox points at ``x0``."""
    x0, warm = follow.start(init, robust.default_x0(float(pb.data.Q0)))
    prox = warm.prox if warm is not None and warm.key == (pb.task, *pb.qmc) else None
    return x0, (point.cold_prox(pb, x0) if prox is None else prox)


def _check(task, target, alpha, lam, kappa, init=None):
    check_task(task)
    _checks.target(target)
    _checks.alpha(alpha)
    _checks.nonnegative("lam", lam)
    _checks.in_interval("kappa", kappa, 0.0, 1.0)
    follow.start(init, None)  # a ValueError naming init before any solve


def _check_convex(convex, alpha, lam):
    """``convex``: ``None`` or the nuclear :class:`SEResult` at this ``(alpha, lam)``."""
    if convex is None:
        return
    if not isinstance(convex, SEResult) or convex.penalty != "nuclear":
        raise ValueError(f"convex must be None or a nuclear SEResult, got {convex!r}")
    if convex.alpha != float(alpha) or convex.lam != float(lam):
        raise ValueError(
            f"convex must be the fixed point at alpha={alpha}, lam={lam}, got one at "
            f"alpha={convex.alpha}, lam={convex.lam}"
        )


def _fail(msg, on_fail):
    if on_fail == "raise":
        raise RuntimeError(msg)
    warnings.warn(msg, SEConvergenceWarning, stacklevel=3)


def _attempts(attempts, s: SESettings) -> tuple:
    """The ``(damping, max_iter)`` pairs of the successive attempts, validated (a
    ``ValueError`` naming ``attempts``); default ``((damping, max_iter), (0.9, 5 max_iter))``
    of ``s``."""
    if attempts is None:
        return ((s.damping, s.max_iter), (_RETRY[0], _RETRY[1] * int(s.max_iter)))
    try:
        pairs = [] if isinstance(attempts, str) else [tuple(a) for a in attempts]
    except TypeError:
        pairs = []
    if not pairs or any(len(p) != 2 for p in pairs):
        raise ValueError(
            f"attempts must be a non-empty sequence of (damping, max_iter) pairs, got {attempts!r}"
        )
    interval = dict(low_open=False, high_open=True)
    checked = []
    for d, k in pairs:
        d = _checks.in_interval("attempts: damping", d, 0.0, 1.0, **interval)
        checked.append((d, _checks.integer("attempts: max_iter", k, 1)))
    return tuple(checked)


def _convex_start(task, target, alpha, lam, s: SESettings):
    """``(start, zero)``: the start of the constrained map without ``init``, the convex fixed
    point's warm start where it exists (``lam > 0``, off the zero phase), else the default
    start; ``zero``: the convex result where it is the zero phase (``S = 0`` has rank 0, so
    it is the constrained minimiser too), else ``None``."""
    if lam == 0.0:
        return robust.default_x0(float(target.Q0)), None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SEConvergenceWarning)
        quiet = s._replace(on_fail="warn", rtol=None)  # a start: the doublings are ours
        r, w = se.solve(task, target, alpha, lam, settings=quiet, return_warm=True)
    if r.converged and r.q == 0.0:
        return None, r
    return (w if r.converged else robust.default_x0(float(target.Q0))), None


def solve_constrained(
    task,
    target,
    alpha: float,
    lam: float,
    kappa: float,
    init=None,
    *,
    settings: SESettings | None = None,
    attempts: tuple | None = None,
    return_warm: bool = False,
    **shorthands,
):
    r"""The rank-constrained fixed point at ``(alpha, lam, kappa)`` (an :class:`SEResult`).

    The map uses :func:`attnlib.width.constrained_input_side` (the convex input side where
    the constraint is inactive). ``init``, ``settings`` and its shorthands as in
    :func:`solve`; ``None`` starts from the convex fixed point's warm start where it exists
    (``lam > 0``), else from the default start of :mod:`attnlib.se`. ``attempts``: the
    ``(damping, max_iter)`` of the successive damped Anderson attempts (default
    ``((settings.damping, settings.max_iter), (0.9, 5 settings.max_iter))``, that is ``((0.5,
    300), (0.9, 1500))``; ``max_iter`` bounds both, so ``max_iter=1`` fails cheaply).
    ``rtol=``: ``n_qmc`` doubles as in :func:`solve`; ``integration_error``: the QMC error
    propagated through the constrained map's Jacobian. Not converged: NaN fields and a
    warning. Without ``init``, where the convex point is the zero phase, that result (``S =
    0``, rank 0). With ``return_warm``: ``(SEResult, WarmStart | None)``.
    """
    s = resolve(settings, **shorthands)
    _check(task, target, alpha, lam, kappa, init)
    attempts = _attempts(attempts, s)
    point_ = (float(alpha), float(lam), float(kappa))
    r, w = _constrained(task, target, point_, init, s, attempts)
    return (r, w) if return_warm else r


def _constrained(task, target, point_, init, s: SESettings, attempts, *, stacklevel=3):
    """:func:`solve_constrained` at ``point_ = (alpha, lam, kappa)`` with validated
    ``s`` and ``attempts``: ``(SEResult, WarmStart | None)``; with ``s.rtol``, ``n_qmc``
    doubles (each solve warm-started from the last converged one) until
    ``integration_error <= rtol`` or up to ``max_n_qmc`` (``_doubling.until_accurate``;
    ``stacklevel``: its warning's, from the caller of this function)."""
    if s.rtol is None:
        return _constrained_once(task, target, point_, init, s, attempts)

    def once(s1, last):
        start = init if last is None or not last[0].converged else last[1]
        return _constrained_once(task, target, point_, start, s1, attempts)

    name = f"width.solve at alpha={point_[0]}, lam={point_[1]}, kappa={point_[2]}"
    return _doubling.doubling_n_qmc(once, s, name=name, stacklevel=stacklevel)


def _constrained_once(task, target, point_, init, s: SESettings, attempts):
    """One solve of the rank-constrained map at ``s.n_qmc``: ``(SEResult, WarmStart |
    None)`` (:func:`solve_constrained`)."""
    alpha, lam, kappa = point_
    pb = _problem(task, target, alpha, lam, kappa=kappa, s=s)
    if init is None:
        init, zero = _convex_start(task, target, alpha, lam, s)
        if zero is not None:
            return zero, None
    x0, prox = _start(init, pb)
    n_iter, residual = 0, math.inf
    for damping, max_iter in attempts:
        loop = se_engine.LoopSettings(np.float64(s.tol), np.int64(max_iter), np.float64(damping))
        sides, x, prox_new, k, residual = _attempt(pb, x0, prox, loop)
        n_iter += k
        if sides is not None:
            extra = dict(converged=True, residual=residual, n_iter=n_iter)
            i = sides[1]
            trace = constrained_trace(target, i.Delta_eff, i.c, i.tau, kappa)
            r = point.result(pb, lam, x, extra, sides, trace=trace)
            return r, point.warm_start(pb, x, prox_new)
        log.info("width SE: no fixed point with damping %.2f (residual %.2e)", damping, residual)
    _fail(
        f"rank-constrained state evolution did not converge at alpha={alpha}, lam={lam}, "
        f"kappa={kappa}: residual {residual:.2e} after {n_iter} maps (fields are NaN)",
        s.on_fail,
    )
    return point.failed(pb, lam, residual, n_iter), None


def solve(
    task,
    target,
    alpha: float,
    lam: float,
    kappa: float,
    *,
    init=None,
    convex=None,
    settings: SESettings | None = None,
    return_warm: bool = False,
    **shorthands,
):
    r"""State evolution of the factorised student of width ``kappa`` (nuclear penalty).

    The factorised objective with weight decay ``lam_W`` is the nuclear + PSD ERM with
    ``lam = sqrt(kappa) lam_W`` restricted to rank ``<= kappa d``
    (:mod:`attnlib.train`). Where the convex minimiser has rank fraction
    ``kappa_star <= kappa`` the constraint is inactive and the result is the convex
    state evolution (:func:`attnlib.se.solve`); below, :func:`solve_constrained`
    started from ``init`` or else from the convex fixed point.

    Args:
      task, target: as in :func:`attnlib.se.solve`; alpha ``> 0``, lam ``>= 0``.
      kappa: student width ``p / d`` in ``(0, 1]``.
      init: warm start of the constrained map: a :class:`~attnlib.se.WarmStart` (e.g.
        the convex point's, returned beside it), ``(m, q, v)``, or an :class:`SEResult`
        or :class:`WidthResult` (their ``(m, q, v)``); default: the convex point's warm
        start when :func:`solve` computes it, ``convex``'s ``(m, q, v)`` when given.
      convex: the convex :class:`SEResult` at ``(alpha, lam)`` if already solved (same
        settings; pass its warm start as ``init`` to reuse its prox points).
      settings: an :class:`attnlib.se.SESettings`; the shorthand keywords (``tol=``,
        ``anderson=``, ``n_qmc=``, ``n_rep=``, ``seed=``, ``rtol=``, ``max_n_qmc=``, ...)
        as in :func:`attnlib.se.solve` (with ``rtol``, the convex point, unless given,
        and the constrained one each double ``n_qmc``). Not converged: NaN fields and an
        :class:`attnlib.se.SEConvergenceWarning` (the deprecated ``on_fail="raise"``:
        ``RuntimeError``). ``time_limit`` (seconds, the whole call): past it NaN fields,
        ``converged=False`` and the same policy. Progress: INFO on ``attnlib.se``.
      return_warm: also return the warm start of the returned fixed point.

    Returns:
      :class:`WidthResult` (``(WidthResult, WarmStart | None)`` with ``return_warm``).
    """
    s = resolve(settings, **shorthands)
    _check(task, target, alpha, lam, kappa, init)
    _check_convex(convex, alpha, lam)
    with _limits.limit(s.time_limit):
        try:
            out, w = _width_point(task, target, alpha, lam, kappa, init=init, convex=convex, s=s)
            return (out, w) if return_warm else out
        except _limits.TimeUp:
            if s.time_limit is None:  # the limit of an enclosing call: its to handle
                raise
    where = f"time_limit = {s.time_limit:g} s at alpha={alpha}, lam={lam}, kappa={kappa}"
    _fail(f"width.solve stopped at {where} (fields are NaN)", s.on_fail)
    nan = unfinished_result(alpha, lam, "nuclear", float(target.Q0))
    out = WidthResult(float(kappa), math.nan, False, nan, nan if convex is None else convex)
    return (out, None) if return_warm else out


def _width_point(task, target, alpha, lam, kappa, *, init, convex, s: SESettings):
    """:func:`solve` at ``(alpha, lam, kappa)`` from ``init`` and ``convex``:
    ``(WidthResult, WarmStart | None)``."""
    s = s._replace(time_limit=None)  # the enclosing limit holds
    warm = None
    if convex is None:
        convex, warm = se.solve(task, target, alpha, lam, settings=s, return_warm=True)
    k_star = float(convex.rank_fraction)
    if not convex.converged or not k_star > kappa:
        return WidthResult(float(kappa), k_star, False, convex, convex), warm
    if init is None:
        init = convex if warm is None else warm
    point_ = (float(alpha), float(lam), float(kappa))
    r, w = _constrained(task, target, point_, init, s, _attempts(None, s), stacklevel=4)
    return WidthResult(float(kappa), k_star, True, r, convex), w
