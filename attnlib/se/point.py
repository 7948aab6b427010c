"""One attempt at a state-evolution fixed point, the zero phase, and the final metrics.

:func:`attempt` is the one attempt of every ERM state evolution, convex (:mod:`attnlib.se`)
or rank-constrained (:mod:`attnlib.width`): a :class:`Problem` is GAMP's composition, a
channel and a denoiser (``penalty``, and ``kappa`` for a student of width ``kappa``),
which select the two sides of the one map (:mod:`attnlib.se.engine`)."""

from __future__ import annotations

import logging
import math
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

from attnlib import _limits, channels, iterate
from attnlib.denoisers.nuclear import nuclear_integrals, nuclear_spectrum
from attnlib.gamp import SpectralProx
from attnlib.se import engine, propagation, refine, replicon
from attnlib.se.continuation import unfinished_result
from attnlib.se.input import InputSide, input_side, input_trace
from attnlib.se.output import cold_prox as _cold_prox
from attnlib.se.output import lower_minima, output_chunks, summarize
from attnlib.se.results import SEResult, WarmStart
from attnlib.se.test_error import test_errors

__all__ = [
    "Problem",
    "Attempt",
    "cold_prox",
    "attempt",
    "origin",
    "image",
    "sides_at",
    "objective_of",
    "result",
    "final",
    "failed",
    "warm_start",
]

log = logging.getLogger("attnlib.se")

# ``(m, q, v)`` next to the origin, where the output side takes its ``S_hat -> 0`` limit
# (``omega -> 0``, ``V -> 0``: ``g`` becomes minus the loss gradient at zero preactivation)
_ORIGIN_EPS = 1e-8
# re-solves of the fixed point after the multi-start check found lower prox minima;
# after that many the map itself runs Newton from the warm and the cold starts
# (output mode "multi"), whose fixed points the check cannot reject
_MAX_CHECKS = 4
# The stopping test bounds the change of (m / Q0, log q, log v), not of the mse
# Q0 - 2m + q, which cancels when the mse is small (excess risks of 1e-7 Q0 in the
# scaling laws): an accepted point must also move its mse by at most _MSE_RTOL
# (relative, or _MSE_ATOL Q0 absolute) under one map; if not, the tolerance is divided
# by 100, at most _MAX_TIGHTEN times, and the point fails if it never passes.
_MSE_RTOL = 1e-4
_MSE_ATOL = 1e-12
_MAX_TIGHTEN = 4


class Problem(NamedTuple):
    """Everything fixed during one solve: the output ``channel``
    (:func:`attnlib.channels.for_task`), the input side ``denoiser`` (its ``kappa < 1``: the
    nuclear map cut at ``x_kappa``, a student of width ``kappa``), ``data`` its arrays."""

    channel: channels.Channel
    denoiser: SpectralProx
    data: engine.Data
    qmc: tuple  # (n_qmc, n_rep, seed)
    memory: int
    refine: tuple = (1, 1, None)  # (factor, steps, rep) of the Newton corrections (se.refine)

    task = property(lambda self: self.channel.task)
    target = property(lambda self: self.denoiser.target)
    penalty = property(lambda self: self.denoiser.penalty)
    kappa = property(lambda self: self.denoiser.kappa)


class Attempt(NamedTuple):
    x: np.ndarray  # (m, q, v)
    prox: Any
    converged: bool
    residual: float
    n_iter: int
    saw_zero: bool
    # (OutputSide, image (m, q, v, rank), (prox, per-scrambling means)) at x, when converged
    sides: tuple | None = None
    history: tuple | None = None  # the Anderson history at the end (a warm history)
    checks: int = 0  # re-solves after the multi-start check found lower prox minima


def cold_prox(pb: Problem, x):
    """Prox points at ``x`` from the cold starts (omega and the noisy logits)."""
    z = pb.data.z
    prox = np.zeros((z.shape[0] * z.shape[1], pb.task.n_pairs))
    if pb.channel.closed_form_output:
        return prox
    x = jnp.asarray(x, dtype=jnp.float64)
    return _cold_prox(pb.task, z, pb.data.Q0, x)[0]


def _check_global(pb: Problem, x, prox):
    """Multi-start prox at ``x``: ``(prox, n_better)`` (the SE needs the global minimum);
    the cold prox shares its compiled program with :func:`cold_prox`."""
    if pb.channel.global_prox:  # closed form / exact prox
        return prox, 0
    xj = jnp.asarray(x, dtype=jnp.float64)
    cold = _cold_prox(pb.task, pb.data.z, pb.data.Q0, xj)
    h, n_better = lower_minima(pb.task, pb.data.z, pb.data.Q0, xj, prox, cold)
    return h, int(n_better)


def _mse_moves(x, image, Q0) -> bool:
    """Whether one map moves the mse ``Q0 - 2m + q`` by more than the accepted amount."""
    mse, mse_image = Q0 - 2 * x[0] + x[1], Q0 - 2 * image[0] + image[1]
    return abs(mse_image - mse) > _MSE_RTOL * abs(mse) + _MSE_ATOL * Q0


def attempt(pb: Problem, x0, prox0, settings: engine.LoopSettings, history=None) -> Attempt:
    """Anderson from ``x0`` (with an optional warm Anderson ``history``); at convergence
    the prox is re-solved from the cold starts and the iteration goes on where some
    problem finds a lower minimum: warm-started maps up to ``_MAX_CHECKS`` times, then
    multi-start maps. A point where the check still finds lower minima is not
    converged (the iterate is a fixed point of a map with local prox minima only)."""
    Q0 = float(pb.data.Q0)
    y = engine.to_y(np.asarray(x0, dtype=np.float64), Q0)
    prox = cold_prox(pb, x0) if prox0 is None else prox0
    history = engine.no_history(pb.memory) if history is None else history
    n_iter, checks, tightened, mode = 0, 0, 0, "warm"
    while True:
        _limits.check()  # the caller's time limit, between two runs of the solver
        fp, saw_zero = engine.solve_fixed_point(
            pb.channel, pb.denoiser, pb.memory, pb.data, settings, (y, prox, history), mode=mode
        )
        history = fp.history
        n_iter += int(fp.n_iter)
        prox, means, image = fp.aux
        x = engine.to_x(np.asarray(fp.x), Q0)
        converged = int(fp.status) == iterate.CONVERGED
        log.debug("attempt: status %d residual %.3g after %d maps", fp.status, fp.residual, n_iter)
        if not converged:
            break
        prox, n_better = _check_global(pb, x, prox)
        if n_better > 0:
            if mode == "multi":
                log.debug("multi-start map: %d lower prox minima remain", n_better)
                converged = False
                break
            checks += 1
            mode = "multi" if checks >= _MAX_CHECKS else mode
            log.debug("multi-start check: %d lower prox minima, iterating on", n_better)
        elif _mse_moves(x, np.asarray(image), Q0):
            converged = tightened < _MAX_TIGHTEN
            if not converged:
                break
            tightened += 1
            settings = settings._replace(tol=float(settings.tol) * 1e-2)
            log.debug("mse not settled at this tolerance: tol -> %.1g", settings.tol)
        else:
            break
        y = fp.x
    image = np.asarray(image)
    sides = (summarize(means), image, (prox, np.asarray(means), image)) if converged else None
    a = Attempt(x, prox, converged, float(fp.residual), n_iter, bool(saw_zero), sides)
    return a._replace(history=history if converged else None, checks=checks)


def _cold_output(pb: Problem, x):
    """The output side at ``x`` from cold-started prox points (an ``OutputSide``)."""
    z, xj = pb.data.z, jnp.asarray(x, dtype=jnp.float64)
    prox = np.zeros((z.shape[0] * z.shape[1], pb.task.n_pairs))
    Q0 = float(pb.data.Q0)
    return summarize(output_chunks(pb.channel, z, pb.data.alpha, Q0, xj, prox, mode="cold").means)


def origin(pb: Problem, lam):
    """Output and input sides at ``S_hat -> 0``: ``(OutputSide, InputSide, zero)``;
    ``zero``: the whole spectrum is thresholded there (``S_hat = 0`` is the fixed point)."""
    Q0 = float(pb.data.Q0)
    o = _cold_output(pb, np.array([0.0, _ORIGIN_EPS * Q0, _ORIGIN_EPS]))
    if not (o.a_hat > 0 and o.m_hat > 0 and math.isfinite(o.q_hat) and o.q_hat >= 0):
        return o, None, False
    i = input_side(pb.target, o.m_hat, o.q_hat, o.a_hat, lam, pb.penalty, Q0=Q0)
    return o, i, bool(i.rank_fraction == 0.0 and i.q == 0.0)


def image(pb: Problem, lam, x):
    """``F(x)``: one map from ``x`` with cold-started prox points, as ``(m, q, v)``; None
    where the map is undefined (a start inside the domain, wherever ``x`` was)."""
    Q0 = float(pb.data.Q0)
    o = _cold_output(pb, x)
    if not (o.a_hat > 0 and o.m_hat > 0 and math.isfinite(o.q_hat) and o.q_hat > 0):
        return None
    try:
        i = input_side(pb.target, o.m_hat, o.q_hat, o.a_hat, lam, pb.penalty, Q0=Q0)
    except (ValueError, FloatingPointError, ArithmeticError):
        return None
    fx = np.array([i.m, i.q, i.v])
    return fx if engine.in_domain(fx, Q0) else None


def _integrals_error(o, te) -> float:
    """Largest relative QMC error of the integrals at the point (not propagated)."""
    vals = (o.a_hat, o.q_hat, o.m_hat, o.train_loss)
    rel = [se / max(abs(v), 1e-12) for se, v in zip(o.stderr, vals, strict=True)]
    rel.append(te.stderr[0] / max(te.test_error, 1e-12))
    return float(max(rel))


def sides_at(lam, sides) -> tuple:
    """``(OutputSide, InputSide, fixed)`` at a converged point from the map's last
    evaluation (``fixed``: what :func:`attnlib.se.propagation.metric_error` needs;
    ``(OutputSide, InputSide)`` from ``sides = (OutputSide, image)`` without it)."""
    o, image = sides[:2]
    c, tau = o.m_hat / o.a_hat, lam / o.a_hat
    i = InputSide(*(float(t) for t in image[:4]), o.q_hat / o.m_hat**2, c, tau)
    return (o, i, *sides[2:])


def objective_of(penalty, alpha, lam, train_loss, trace_q) -> float:
    """The minimised objective per sequence: ``train_loss + lam * trace / alpha``
    (nuclear, ``trace_q = trace``) or ``train_loss + (lam / 2) q / alpha`` (Frobenius,
    ``trace_q = q``); :class:`attnlib.se.SEResult` gives the normalisation."""
    scale = 1.0 if penalty == "nuclear" else 0.5
    return float(train_loss + scale * lam * trace_q / alpha) if lam > 0 else float(train_loss)


def final(pb: Problem, lam, a: Attempt, extra: dict) -> SEResult:
    """:func:`result` at the converged attempt ``a``, after the Newton corrections on
    ``pb.refine = (factor, steps, rep)`` times more QMC points in ``rep`` scramblings
    (:func:`attnlib.se.refine.refine`;
    ``factor = 1``: none) where the output side is a QMC average; where a correction
    leaves the domain, the uncorrected point."""
    factor, steps, rep = pb.refine
    if factor > 1 and not pb.channel.closed_form_output and not pb.channel.scale_free:
        fine = refine.refine(pb, lam, a.x, a.sides[2], factor, steps, rep=rep)
        if fine is not None:
            sides = sides_at(lam, fine.sides)
            r = result(fine.pb, lam, fine.x, extra, sides, jac=fine.jac, coarse=(pb, a.prox))
            return r._replace(integration_error=math.hypot(r.integration_error, fine.untaken))
        log.info("refine: the Newton correction left the domain; the %d-point fixed point "
                 "is kept", pb.qmc[0])  # fmt: skip
    return result(pb, lam, a.x, extra, sides_at(lam, a.sides))


def result(pb: Problem, lam, x, extra: dict, sides, *, trace=None, jac=None,
           coarse=None) -> SEResult:  # fmt: skip
    """:class:`SEResult` at a fixed point ``x`` with ``sides = (OutputSide, InputSide[,
    fixed])`` (:func:`sides_at`; without ``fixed``, as in the zero phase, ``x`` is exact
    and ``integration_error`` is the metrics' own QMC error, else their error at the
    fixed point, :func:`attnlib.se.propagation.metric_error`, with the Jacobians ``jac``
    if given); ``trace``: ``lim Tr S_hat / d`` if known (else computed from the convex
    input side); ``coarse = (Problem, prox)``: the problem and prox points on which the
    replicon is evaluated (a refined point's coarse ones; default ``pb`` and the prox
    points of ``sides``)."""
    Q0 = float(pb.data.Q0)
    m, q, v = (float(t) for t in x)
    o, i = sides[:2]
    te = test_errors(pb.task, Q0, m, q, pb.qmc)
    mse = Q0 - 2 * m + q
    spec = None
    if trace is None and q != 0.0 and pb.penalty == "nuclear" and len(sides) > 2:
        # one spectrum for the trace (as input_trace computes it) and the error
        spec = nuclear_spectrum(pb.target, i.Delta_eff, i.c, i.tau)
        trace = nuclear_integrals(pb.target, i.Delta_eff, i.c, i.tau, spec=spec).trace
    if len(sides) > 2:
        metrics = (o.train_loss, te, mse)
        error = propagation.metric_error(pb, lam, x, sides[2], metrics, spec, jac=jac)
    elif pb.channel.closed_form_output:
        error = 0.0
    elif q == 0.0:  # the zero phase: x = 0 exactly
        error = propagation.own_error(o.train_loss, o.stderr[3], te)
    else:  # a map without a propagated error (attnlib.width): the integrals' error
        error = _integrals_error(o, te)
    if trace is None:
        trace = 0.0 if q == 0.0 else input_trace(pb.target, i.Delta_eff, i.c, i.tau, pb.penalty)
    alpha = float(pb.data.alpha)
    tq = trace if pb.penalty == "nuclear" else q
    rep = _replicon(pb, x, sides, spec, coarse)
    return SEResult(
        alpha=alpha, lam=float(lam), penalty=pb.penalty, m=m, q=q, v=v,
        m_hat=o.m_hat, q_hat=o.q_hat, a_hat=o.a_hat, Delta_eff=i.Delta_eff, tau=i.tau,
        c=i.c, Q0=Q0, train_loss=o.train_loss, test_error=te.test_error,
        test_error_noisy=te.test_error_noisy, mse=mse,
        rank_fraction=i.rank_fraction, integration_error=error,
        trace=float(trace), objective=objective_of(pb.penalty, alpha, lam, o.train_loss, tq),
        replicon=rep, e0=float(pb.channel.noise_floor(Q0, pb.qmc)[0]),
        **extra,
    )  # fmt: skip


def _replicon(pb: Problem, x, sides, spec, coarse=None) -> float:
    """:func:`attnlib.se.replicon.replicon_at` with the prox points of ``sides`` (NaN
    without them, but for the closed forms and the zero phase, which need none), or on
    ``coarse = (Problem, prox)``."""
    prox = sides[2][0] if len(sides) > 2 else None
    if coarse is not None:
        pb, prox = coarse
    if prox is None and not pb.channel.closed_form_output and float(x[1]) != 0.0:
        return math.nan
    return replicon.replicon_at(pb, x, sides[0], sides[1], prox, spec)


def failed(pb: Problem, lam, residual, n_iter) -> SEResult:
    """A non-converged result: every order parameter and metric is NaN (the unfinished
    point of :func:`attnlib.se.continuation.unfinished_result` with the solver's
    ``residual`` and ``n_iter``)."""
    r = unfinished_result(pb.data.alpha, lam, pb.penalty, pb.data.Q0)
    return r._replace(residual=float(residual), n_iter=int(n_iter))


def warm_start(pb: Problem, x, prox, history=None) -> WarmStart:
    """The warm start at a converged ``x``: prox points and the Anderson ``history``
    (:attr:`Attempt.history`, optional), returned beside the result."""
    hist = None if history is None else (pb.penalty, pb.memory, *history)
    return WarmStart(tuple(float(t) for t in x), prox, (pb.task, *pb.qmc), hist)
