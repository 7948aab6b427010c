"""Driver of the rank-constrained state evolution: :func:`solve` and :class:`WidthResult`."""

from __future__ import annotations

import logging
import math
import warnings
from typing import NamedTuple

import numpy as np

from attnlib import _checks, se
from attnlib.se import engine as se_engine
from attnlib.se import point, robust
from attnlib.se.output import check_task, qmc_points
from attnlib.se.results import SEConvergenceWarning, SEResult
from attnlib.width.input import constrained_trace

__all__ = ["WidthResult", "solve", "solve_constrained"]

log = logging.getLogger("attnlib.width")

_RETRY = ((0.5, 300), (0.9, 1500))  # (damping, max_iter) of the successive attempts


class WidthResult(NamedTuple):
    """The state evolution of the factorised student of width ``kappa = p / d``.

    ``se``: the fixed point of the rank-constrained state evolution (an
    :class:`attnlib.se.SEResult`; its ``rank_fraction`` is ``min(kappa, kappa_star)``);
    ``convex``: the unconstrained (convex) fixed point at the same ``(alpha, lam)``;
    ``kappa_star``: its rank fraction (the minimal width); ``constrained``: whether
    ``kappa < kappa_star`` (otherwise ``se`` is ``convex``). ``se.trace`` and
    ``se.objective`` are those of the rank-constrained fixed point (``f`` cut at the
    top-``kappa`` quantile of ``rho_R``; same normalisation as :class:`attnlib.se.SEResult`).
    """

    kappa: float
    kappa_star: float
    constrained: bool
    se: SEResult
    convex: SEResult


def _problem(task, target, point_, qmc, memory) -> point.Problem:
    """The state-evolution problem at ``point_ = (alpha, lam, kappa)``: the convex one
    with the nuclear map cut at ``x_kappa`` (``kappa``, :func:`attnlib.se.point.denoiser`)."""
    alpha, lam, kappa = point_
    z = qmc_points(task, *qmc)
    data = se_engine.Data(z, np.float64(alpha), np.float64(lam), np.float64(target.Q0))
    return point.Problem(task, target, "nuclear", data, qmc, memory, float(kappa))


def _attempt(pb, x0, prox, settings):
    """One attempt of :func:`attnlib.se.point.attempt` (the one attempt of every ERM state
    evolution): ``(sides | None, x, prox, n_iter, residual)``; ``sides`` without the
    propagated error's ingredients (the map's Jacobian is the convex one's there)."""
    a = point.attempt(pb, x0, prox, settings)
    sides = point.sides_at(float(pb.data.lam), a.sides[:2]) if a.converged else None
    return sides, a.x, a.prox, a.n_iter, a.residual


def _start(init, pb):
    if isinstance(init, WidthResult):
        init = init.se
    prox = None
    if isinstance(init, SEResult):
        w = init.warm
        if w is not None and w.key == (pb.task, *pb.qmc):
            prox = w.prox
        init = (init.m, init.q, init.v)
    x0 = np.asarray(init, dtype=float).reshape(-1)
    if x0.shape != (3,) or not np.all(np.isfinite(x0)) or x0[1] <= 0 or x0[2] <= 0:
        raise ValueError(f"init must be (m, q, v) with q, v > 0 or a result, got {init!r}")
    return x0, (point.cold_prox(pb, x0) if prox is None else prox)


def _check(task, target, alpha, lam, kappa, on_fail):
    check_task(task)
    if not hasattr(target, "measure") or not hasattr(target, "Q0"):
        raise ValueError(f"target must be an attnlib.targets.Target, got {target!r}")
    _checks.alpha(alpha)
    _checks.nonnegative("lam", lam)
    _checks.in_interval("kappa", kappa, 0.0, 1.0)
    _checks.choice("on_fail", on_fail, ("warn", "raise"))


def _fail(msg, on_fail):
    if on_fail == "raise":
        raise RuntimeError(msg)
    warnings.warn(msg, SEConvergenceWarning, stacklevel=3)


def solve_constrained(
    task, target, alpha: float, lam: float, kappa: float, init=None, *, tol: float = 1e-6,
    anderson: int = 5, n_qmc: int = 8192, n_rep: int = 4, seed: int = 0, on_fail: str = "warn",
    attempts: tuple = _RETRY,
) -> SEResult:  # fmt: skip
    r"""The rank-constrained fixed point at ``(alpha, lam, kappa)`` (an :class:`SEResult`).

    The map always uses :func:`attnlib.width.constrained_input_side`, which is the
    convex input side wherever the constraint is inactive. ``init``: ``(m, q, v)``, an
    :class:`SEResult` (its prox points are reused) or a :class:`WidthResult`; ``None``
    starts from the convex fixed point when it exists (``lam > 0``), else from the
    default start of :mod:`attnlib.se`. ``attempts``: the ``(damping, max_iter)`` of the successive
    damped Anderson attempts (default ``((0.5, 300), (0.9, 1500))``). Not converged:
    NaN fields and a warning (``on_fail="warn"``) or ``RuntimeError``.
    """
    _check(task, target, alpha, lam, kappa, on_fail)
    alpha, lam, kappa = float(alpha), float(lam), float(kappa)
    qmc = (int(n_qmc), int(n_rep), int(seed))
    pb = _problem(task, target, (alpha, lam, kappa), qmc, int(anderson))
    if init is None and lam == 0.0:
        init = robust.default_x0(float(target.Q0))
    if init is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SEConvergenceWarning)
            init = se.solve(task, target, alpha, lam, tol=tol, anderson=anderson, n_qmc=n_qmc,
                            n_rep=n_rep, seed=seed)  # fmt: skip
        if not init.converged or init.q == 0.0:
            init = robust.default_x0(float(target.Q0))
    x0, prox = _start(init, pb)
    n_iter, residual = 0, math.inf
    for damping, max_iter in attempts:
        damping = _checks.in_interval("damping", damping, 0.0, 1.0, low_open=False, high_open=True)
        max_iter = _checks.integer("max_iter", max_iter, 1)
        settings = se_engine.Settings(np.float64(tol), np.int64(max_iter), np.float64(damping))
        sides, x, prox_new, k, residual = _attempt(pb, x0, prox, settings)
        n_iter += k
        if sides is not None:
            extra = dict(converged=True, residual=residual, n_iter=n_iter,
                         warm=point.warm_start(pb, x, prox_new))  # fmt: skip
            i = sides[1]
            trace = constrained_trace(target, i.Delta_eff, i.c, i.tau, kappa)
            return point.result(pb, lam, x, extra, sides, trace=trace)
        log.info("width SE: no fixed point with damping %.2f (residual %.2e)", damping, residual)
    _fail(
        f"rank-constrained state evolution did not converge at alpha={alpha}, lam={lam}, "
        f"kappa={kappa}: residual {residual:.2e} after {n_iter} maps (fields are NaN)",
        on_fail,
    )
    return point.failed(pb, lam, residual, n_iter)


def solve(
    task, target, alpha: float, lam: float, kappa: float, *, init=None, convex=None,
    tol: float = 1e-6, anderson: int = 5, n_qmc: int = 8192, n_rep: int = 4, seed: int = 0,
    on_fail: str = "warn",
) -> WidthResult:  # fmt: skip
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
      init: warm start (``(m, q, v)``, an :class:`SEResult` or a :class:`WidthResult`).
      convex: the convex :class:`SEResult` at ``(alpha, lam)`` if already solved (same
        QMC settings).
      tol, anderson, n_qmc, n_rep, seed: as in :func:`attnlib.se.solve`.
      on_fail: ``"warn"`` (:class:`attnlib.se.SEConvergenceWarning`, NaN fields) or
        ``"raise"`` (``RuntimeError``).
    """
    _check(task, target, alpha, lam, kappa, on_fail)
    kw = dict(tol=tol, anderson=anderson, n_qmc=n_qmc, n_rep=n_rep, seed=seed)
    if convex is None:
        convex = se.solve(task, target, alpha, lam, on_fail=on_fail, **kw)
    k_star = float(convex.rank_fraction)
    if not convex.converged or not k_star > kappa:
        return WidthResult(float(kappa), k_star, False, convex, convex)
    init = convex if init is None else init
    r = solve_constrained(task, target, alpha, lam, kappa, init, on_fail=on_fail, **kw)
    return WidthResult(float(kappa), k_star, True, r, convex)
