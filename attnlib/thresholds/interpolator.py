r"""The ridgeless limit ``lam -> 0+`` of the nuclear + PSD ERM on both sides of
``alpha_interp`` (:func:`attnlib.thresholds.interpolation_formula`), and the height of
the interpolation peak: state-evolution results (:class:`attnlib.se.SEResult`,
:class:`attnlib.se.LearningCurve`) where :func:`attnlib.se.solve` has no fixed point.

Above ``alpha_interp`` the ERM at ``lam = 0`` has a unique minimiser: the limit is
:func:`attnlib.se.solve` at ``lam = 0``. Below it the noisy labels are fitted exactly:
``sum_mu loss / lam + d Tr S`` turns the loss into the constraint "fit every label", and
the ERM tends to the minimum-trace PSD interpolator, whose state evolution is the
``lam -> 0`` limit of the ``lam > 0`` one (notation of :mod:`attnlib.se`):

Scaling. The train loss vanishes and ``v = v1 / lam`` diverges. In the whitened pairs
``u_ab = h_ab / sigma_ab`` the prox fits the labels: ``P (h*_w - y_w) = O(1/v)``, ``y``
the noisy logits and ``P`` the projector on the ``m_eff`` directions the labels fix (the
identity for the linear task; for softmax seq2seq the complement of the lost shift
``(1 / sigma_ab)``, along which ``h* = omega``). Hence ``g_w = P (y_w - omega_w) / v +
O(v^-2)`` and, per sequence,

    a_hat = m_hat = alpha m_eff / v,     q_hat = alpha m_eff E / (2 v^2),
    E = Q0 - 2 m + q + Delta_e / 2 = mse + Delta_e / 2,

with ``Delta_e / 2 = tr(P N) / m_eff`` the label noise per fixed direction
(:func:`attnlib.thresholds.equivalent_noise`). The input side's parameters have finite
limits, ``c -> 1``, ``Delta_eff = E / (2 alpha m_eff)``, ``tau = v1 / (alpha m_eff)``, and
``v = div / m_hat`` gives ``div = int rho_R f h_R = alpha m_eff``. The limit state
evolution is two equations in ``(Delta, tau)``:

    Delta = (mse(Delta, tau) + Delta_e / 2) / (2 alpha m_eff),
    div(Delta, tau) = alpha m_eff,

with ``m, q, div`` the integrals of ``f(x) = (x - tau)_+`` against ``rho_R``, the law of
``S0 + sqrt(Delta) W_goe`` (:mod:`attnlib.se.input`). ``Delta_e = 0`` gives the
perfect-recovery equation of :mod:`attnlib.thresholds.recovery_se`. The output side
enters only through ``m_eff`` and ``Delta_e``: softmax seq2seq's curve is the linear
task's at ``alpha m_eff``, only the test error differs.

Solving them. ``div`` decreases in ``tau``, so for each ``Delta`` with ``div(Delta, 0) >=
alpha m_eff`` the second equation has one root ``tau(Delta) >= 0`` (Brent). The first is
then one equation in ``log Delta``, bracketed between a small ``Delta`` and ``D_max``
(``tau(D_max) = 0``) below ``alpha_interp``. At ``alpha_interp``, ``D_max = dbar`` and
``tau = 0``: the closed form of :mod:`attnlib.thresholds.ridgeless`.

The peak. At ``alpha_interp`` (``J``, ``J'`` of :mod:`attnlib.thresholds.ridgeless`):
``m = J(dbar) - dbar J'(dbar) = Q0 + Delta_e / 2``, ``q = J(dbar)``, ``mse = dbar
J'(dbar) - Delta_e / 2``. ``dbar`` is finite for every PSD target and ``0 < Delta_e <
infinity`` (``J - delta J' = Tr(R_+ S0) / d`` grows without bound), so the peak of the
nuclear + PSD ERM is finite; the Frobenius (ridge) ERM's ``J - delta J' = Q0`` never
reaches ``Q0 + Delta_e / 2`` and its peak diverges. The ``lam = 0`` fixed point above the
threshold tends to the same ``(m, q)``: the curve is continuous there.

Result fields below ``alpha_interp`` are the limits ``lam -> 0+``: ``lam = 0``, ``v =
inf``, ``m_hat = q_hat = a_hat = 0``, ``c = 1``, ``Delta_eff``, ``tau`` (``lim lam v =
alpha m_eff tau``), ``train_loss = objective = 0``, ``trace`` the minimal ``Tr S / d``,
``rank_fraction`` the mass of ``rho_R`` above ``tau``, ``replicon`` NaN (the limit problem
is convex), ``integration_error`` the test error's QMC error (0 for the linear task),
``residual`` the first equation's relative residual, ``n_iter`` the number of spectral
integrals.

Applies to the tasks of :func:`attnlib.thresholds.interpolation_formula` (linear, softmax
seq2seq with noise on the pairs), noisy labels, PSD targets, nuclear + PSD penalty.
Seq2seq with noise on the outputs never interpolates: every ``alpha`` is on the ``lam =
0`` side.
"""

from __future__ import annotations

import math
import time
import warnings
from typing import NamedTuple

import numpy as np
from scipy.optimize import brentq

from attnlib import _checks, _limits, channels
from attnlib.denoisers.nuclear import nuclear_integrals
from attnlib.se.continuation import unfinished_result
from attnlib.se.drivers import learning_curve, solve
from attnlib.se.output import check_overlaps
from attnlib.se.results import LearningCurve, SEConvergenceWarning, SEResult
from attnlib.se.settings import SESettings, resolve
from attnlib.se.test_error import test_errors
from attnlib.thresholds.ridgeless import interpolation_formula as _threshold

__all__ = ["ridgeless_limit", "ridgeless_curve", "ridgeless_peak"]

_XTOL = 1e-13  # Brent's tolerance on tau and log Delta


class _Eq(NamedTuple):
    """The equations at one ``alpha``: ``am = alpha m_eff``, the noise ``De`` and ``Q0``;
    ``count`` holds the number of spectral integrals (a one-element list)."""

    target: object
    am: float
    De: float
    Q0: float
    count: list

    def integrals(self, D, tau):
        _limits.check()  # the caller's time limit, between two integrals
        self.count[0] += 1
        return nuclear_integrals(self.target, D, 1.0, tau)

    def tau_of(self, D):
        """The root ``tau >= 0`` of ``div(D, tau) = am``; 0 where ``div(D, 0) <= am``
        (``D >= D_max``: the continuous extension, met only within the root finder's
        tolerance of ``D_max``)."""

        def gap(t):
            return self.integrals(D, t).div - self.am

        if gap(0.0) <= 0:
            return 0.0
        hi = math.sqrt(self.Q0 + D)
        while gap(hi) > 0:
            hi *= 2.0
        return brentq(gap, 0.0, hi, xtol=_XTOL * hi, rtol=4 * np.finfo(float).eps)

    def gap(self, log_D):
        """``(mse + De/2) / (2 am) / D - 1`` at ``D = exp(log_D)``, ``tau = tau(D)``."""
        D = math.exp(log_D)
        s = self.integrals(D, self.tau_of(D))
        return (self.Q0 - 2 * s.m + s.q + 0.5 * self.De) / (2 * self.am * D) - 1.0


def _bracket(eq: _Eq, dbar):
    """``(lo, hi)`` in ``log Delta`` with ``gap(lo) > 0 > gap(hi)``; None where there is
    none (``alpha >= alpha_interp``). ``hi = log D_max``, where ``tau(D_max) = 0``."""

    def div0(log_D):
        return eq.integrals(math.exp(log_D), 0.0).div - eq.am

    hi = math.log(dbar)
    if div0(hi) < 0:  # D_max < dbar: alpha >= alpha_interp
        return None
    while div0(hi + 1.0) >= 0:  # alpha m_eff <= 1/4: div(D, 0) > am for all D
        hi += 1.0
        if eq.gap(hi) < 0 or hi > math.log(1e12 * eq.Q0):
            break
    else:
        hi = brentq(div0, hi, hi + 1.0, xtol=_XTOL)
    if not eq.gap(hi) < 0:
        return None
    lo = hi - 1.0
    while eq.gap(lo) <= 0:
        lo, hi = lo - 1.0, lo
        if lo < math.log(1e-12 * eq.Q0):
            return None
    return lo, hi


def _interpolating(task, target, alpha, th):
    """``(Delta, tau, integrals, n, residual)`` of the limit equations at ``alpha <
    alpha_interp``, or None where they have no root."""
    eq = _Eq(target, alpha * task.m_eff, th.Delta_e, float(target.Q0), [0])
    br = _bracket(eq, th.delta)
    if br is None:
        return None
    log_D = brentq(eq.gap, *br, xtol=_XTOL)
    D = math.exp(log_D)
    tau = eq.tau_of(D)
    return D, tau, eq.integrals(D, tau), eq.count[0], abs(eq.gap(log_D))


def _limit_result(task, target, alpha, point, qmc) -> SEResult:
    """The :class:`SEResult` of the interpolating limit ``point = (Delta, tau, integrals,
    n, residual)`` (module docstring: the fields' limits)."""
    D, tau, s, n, residual = point
    Q0 = float(target.Q0)
    m, q = check_overlaps(Q0, s.m, s.q)
    te = test_errors(task, Q0, m, q, qmc)
    e0 = float(channels.for_task(task).noise_floor(Q0, qmc)[0])
    return SEResult(
        alpha=float(alpha), lam=0.0, penalty="nuclear", m=m, q=q, v=math.inf,
        m_hat=0.0, q_hat=0.0, a_hat=0.0, Delta_eff=D, tau=tau, c=1.0, Q0=Q0,
        train_loss=0.0, test_error=te.test_error, test_error_noisy=te.test_error_noisy,
        mse=Q0 - 2 * m + q, rank_fraction=s.rank, converged=True, residual=residual,
        n_iter=n, integration_error=te.stderr[0] / max(te.test_error, 1e-300),
        trace=s.trace, objective=0.0, alternatives=(), replicon=math.nan, e0=e0,
    )  # fmt: skip


def _fail(alpha, target, s: SESettings, why) -> SEResult:
    msg = f"ridgeless: {why} at alpha={alpha} (fields are NaN)"
    if s.on_fail == "raise":
        raise RuntimeError(msg)
    warnings.warn(msg, SEConvergenceWarning, stacklevel=4)
    return unfinished_result(alpha, 0.0, "nuclear", float(target.Q0))


def _check(task, target, alpha):
    """The threshold (``ValueError`` from the closed form for tasks, targets and noise
    it does not cover) and the checked ``alpha``."""
    alpha = _checks.alpha(alpha)
    _checks.target(target)
    return _threshold(task, target), alpha


def _point(task, target, alpha, th, s: SESettings, init=None):
    """:func:`ridgeless_limit` with the threshold ``th`` and settings ``s`` known:
    ``(SEResult, WarmStart | None)``."""
    qmc = (int(s.n_qmc), int(s.n_rep), int(s.seed))
    if alpha >= th.alpha:
        return solve(task, target, alpha, 0.0, init=init, settings=s, return_warm=True)
    with _limits.limit(s.time_limit):
        try:
            point = _interpolating(task, target, alpha, th)
        except _limits.TimeUp:
            if s.time_limit is None:  # an enclosing call's limit: its to handle
                raise
            return _fail(alpha, target, s, f"stopped at time_limit = {s.time_limit:g} s"), None
        except (ValueError, FloatingPointError, ArithmeticError) as err:
            return _fail(alpha, target, s, f"the limit equations failed ({err})"), None
    if point is None:
        return _fail(alpha, target, s, "no root of the limit equations was bracketed"), None
    return _limit_result(task, target, alpha, point, qmc), None


def ridgeless_limit(
    task, target, alpha: float, *, settings: SESettings | None = None, **shorthands
) -> SEResult:
    r"""The ``lam -> 0+`` limit of the nuclear + PSD state evolution at ``alpha``.

    Below ``alpha_interp``: the minimum-trace PSD interpolator of the noisy labels (the
    limit equations of the module docstring). At and above it: :func:`attnlib.se.solve`
    at ``lam = 0`` (at ``alpha_interp`` itself that solve fails: see
    :func:`ridgeless_peak`). ``settings`` and the shorthand keywords as in
    :func:`attnlib.se.solve`; below the threshold ``n_qmc, n_rep, seed`` set the test
    error's QMC points (softmax) and ``time_limit`` bounds the root search.

    Failure policy (no bracketed root, a failure, ``time_limit``): NaN, ``converged=False``
    and an :class:`attnlib.se.SEConvergenceWarning` (``on_fail="raise"``: ``RuntimeError``).
    About a hundred spectral integrals. ``ValueError`` for a task, a target or noise-free
    labels the closed-form threshold does not cover.
    """
    th, alpha = _check(task, target, alpha)
    s = resolve(settings, **shorthands)
    return _point(task, target, alpha, th, s)[0]


def ridgeless_peak(task, target, *, n_qmc: int = 2**16, n_rep: int = 8, seed: int = 0) -> SEResult:
    r"""The height of the interpolation peak: :func:`ridgeless_limit`'s common limit at
    ``alpha -> alpha_interp`` from both sides.

    Module docstring: ``tau = 0``, ``Delta_eff = dbar``, ``m = Q0 + Delta_e / 2``, ``q =
    J(dbar)``. Test errors from these overlaps
    (softmax: QMC, ``n_qmc`` points in ``n_rep`` scramblings, relative standard error
    ``integration_error``). Fields as in :func:`ridgeless_limit` below the threshold.
    """
    th, _ = _check(task, target, 1.0)
    n_qmc, n_rep, seed = _checks.qmc_sizes(n_qmc, n_rep, seed)
    if not th.alpha > 0:  # labels off the readout's range: no interpolation at all
        raise ValueError(f"task {task!r} never interpolates its labels: there is no peak")
    s = nuclear_integrals(target, th.delta, 1.0, 0.0)
    point = (th.delta, 0.0, s, 1, 0.0)
    return _limit_result(task, target, th.alpha, point, (n_qmc, n_rep, seed))


def _stack(results) -> LearningCurve:
    fields = [f for f in LearningCurve._fields if f != "penalty"]
    columns = {f: np.array([getattr(r, f) for r in results]) for f in fields}
    return LearningCurve(penalty="nuclear", **columns)


def ridgeless_curve(
    task, target, alphas, *, settings: SESettings | None = None, **shorthands
) -> LearningCurve:
    r""":func:`ridgeless_limit` along ``alphas``: a :class:`LearningCurve` on both sides of
    ``alpha_interp`` (in the given order).

    Below the threshold each point is solved on its own; above it at ``lam = 0`` in
    decreasing ``alpha`` (:func:`attnlib.se.learning_curve`, warm-started). ``time_limit=``
    holds for the whole curve; unfinished points are NaN with ``converged=False``.
    """
    alphas = np.asarray(_checks.finite_array("alphas", alphas), dtype=float).reshape(-1)
    if alphas.size == 0 or not np.all(alphas > 0):
        raise ValueError(f"alphas must be a non-empty list of values > 0, got {alphas!r}")
    th, _ = _check(task, target, float(alphas[0]))
    s = resolve(settings, **shorthands)
    out = [None] * alphas.size
    t0 = time.perf_counter()
    with _limits.limit(s.time_limit):
        above = [i for i in np.argsort(-alphas) if alphas[i] >= th.alpha]
        if above:
            left = None if s.time_limit is None else max(_limits.left(), 1e-3)
            s_left = s._replace(time_limit=left)
            curve = learning_curve(task, target, alphas[above], 0.0, settings=s_left)
            for k, i in enumerate(above):
                out[i] = SEResult(**{f: _item(curve, f, k) for f in SEResult._fields})
        left_s = s.time_limit
        for i in (j for j in range(alphas.size) if out[j] is None):
            if left_s is not None:
                left_s = s.time_limit - (time.perf_counter() - t0)
            if left_s is not None and left_s <= 0:
                out[i] = _fail(alphas[i], target, s, f"stopped at time_limit = {s.time_limit:g} s")
                continue
            out[i] = _point(task, target, float(alphas[i]), th, s._replace(time_limit=left_s))[0]
    return _stack(out)


def _item(curve: LearningCurve, field: str, k: int):
    """Field ``field`` of point ``k`` of ``curve`` as an :class:`SEResult` field."""
    if field == "alternatives":
        return ()
    if field == "penalty":
        return curve.penalty
    value = getattr(curve, field)
    return math.nan if value is None else value[k].item()
