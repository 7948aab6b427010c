r"""The QMC error of a state-evolution fixed point, propagated through the map's Jacobian.

The map is ``x -> C(x) -> G(C(x))`` with ``x = (m, q, v)``, ``C`` the output side's
conjugates ``(m_hat, q_hat, a_hat)`` (QMC averages over ``R`` independent scramblings)
and ``G`` the input side (deterministic). A QMC error ``delta C`` of the conjugates at
the fixed point moves the fixed point itself, by

    delta x = (I - J)^{-1} G' delta C,     J = G' C'   (the map's Jacobian),

which is large where the map contracts slowly (``J`` has an eigenvalue near 1). The
metrics then move by their dependence on ``x`` plus their own integrals' error: the mse
``Q0 - 2 m + q`` by ``-2 delta m + delta q``; the train loss (an output-side average) by
``L' delta x`` plus its own QMC error, correlated with that of ``C`` (same points); the
test error by ``(de/dm, de/dq) . (delta m, delta q)`` plus its own (independent points).
Each scrambling's deviation from the mean is propagated linearly and the standard error
is taken over the ``R`` propagated deviations, so the correlations are kept. The
rank-constrained map of a student of width ``kappa < 1`` (:mod:`attnlib.width`) has its
own ``G`` (the nuclear one cut at ``x_kappa``, :func:`_nuclear_jacobian`).

Costs per converged point: the output side at ``x`` and its three neighbours on the
first ``PROBE_POINTS`` QMC points of the first scrambling (common random numbers), one
spectrum for the nuclear input side, the one the trace of ``S_hat`` needs anyway (its
derivatives are integrals over that spectrum, :func:`_nuclear_jacobian`), and the test
error at three ``(m, q)`` on ``PROBE_POINTS`` points. The Jacobians carry a QMC error
of their own, small beside the propagated one. With ``R`` scramblings the error estimate
has ``R - 1`` degrees of freedom: one solve's reported error can be several times below
its actual error (``benchmarks/se_bias.py`` compares it with the spread over seeds).
"""

from __future__ import annotations

import logging
import math

import jax.numpy as jnp
import numpy as np

from attnlib import rmt
from attnlib.denoisers.constrained import binding_cut
from attnlib.denoisers.nuclear import nuclear_spectrum
from attnlib.se.input import input_side
from attnlib.se.output import output_arrays
from attnlib.se.test_error import test_errors

__all__ = [
    "PROBE_POINTS",
    "STEP",
    "jacobians",
    "metric_errors",
    "metric_error",
    "own_error",
]

PROBE_POINTS = 2048
"""QMC points per scrambling of the finite-difference output Jacobian (the first ones of
every scrambling; :data:`attnlib.qmc.CHUNK`, so that the default solve's program serves)
and of the test error's gradient (one scrambling)."""
log = logging.getLogger("attnlib.se")

STEP = 1e-3
"""Finite-difference step in ``(m / Q0, log q, log v)`` (``m`` moves towards 0)."""


def _rel(err, value) -> float:
    return float(err / max(abs(value), 1e-300))


def _sem(dev) -> float:
    """Standard error of the mean from per-scrambling deviations ``dev`` ``(R,)``."""
    return float(np.std(dev, ddof=1) / math.sqrt(len(dev))) if len(dev) > 1 else math.nan


def own_error(train_loss, train_sem, te) -> float:
    """Largest relative error of the metrics where ``x`` is exact (the zero phase, where
    ``m = q = v = 0`` and the mse is ``Q0``): the train loss's and the test error's own
    QMC errors."""
    return max(_rel(train_sem, train_loss), _rel(te.stderr[0], te.test_error))


def _steps(x, Q0):
    """Finite-difference steps ``(dm, dq, dv)`` that stay in ``m^2 < q Q0``: ``STEP``
    relative in ``m / Q0``, ``q`` and ``v``, and at most ``STEP`` times the conditional
    variance ``Q0 - m^2 / q`` of the target pairs given the student's, in the change of
    that variance (``m`` towards 0 and ``q`` up both raise it): near ``m^2 = q Q0`` (a
    small mse) a step of ``STEP Q0`` in ``m`` would change it by more than itself, and
    the forward differences would be those of a different point. Floored at ``1e-9 Q0``
    (rounding)."""
    m, q, v = x
    gap = max(Q0 - m * m / q, 0.0)
    dm = STEP * Q0 if m == 0.0 else min(STEP * Q0, STEP * gap * q / (2.0 * abs(m)))
    dq = q * math.expm1(STEP)
    dq = dq if m == 0.0 else min(dq, STEP * gap * q * q / (m * m))
    floor = 1e-9 * Q0
    return np.array([-math.copysign(max(dm, floor), m), max(dq, floor), v * math.expm1(STEP)])


def _output_jacobian(pb, x, prox, steps):
    """``d (a_hat, q_hat, m_hat, train_loss) / d (m, q, v)`` ``(R, 4, 3)`` (one per
    scrambling) by forward
    differences on the first :data:`PROBE_POINTS` points of every scrambling (warm prox
    from ``prox``; at the default, all 8192 points, the shape of the solve's own
    compiled program)."""
    R, per = pb.data.z.shape[:2]
    n = min(PROBE_POINTS, per)
    z = np.asarray(pb.data.z)[:, :n]  # numpy: no program per n
    p = np.asarray(prox).reshape(R, per, -1)[:, :n].reshape(R * n, -1)

    def out(xi):
        xj = jnp.asarray(xi, dtype=jnp.float64)
        res = output_arrays(pb.channel, z, pb.data.alpha, pb.data.Q0, xj, p, mode="warm")
        return np.asarray(res.means)

    base = out(x)
    cols = [(out(x + np.eye(3)[i] * steps[i]) - base) / steps[i] for i in range(3)]
    return np.stack(cols, axis=-1)  # (R, 4, 3): one Jacobian per scrambling


def _nuclear_jacobian(lam, conj, spec, cut=(-math.inf, 0.0)):
    """``d (m, q, v) / d (m_hat, q_hat, a_hat)`` of the nuclear input side from the
    spectrum ``spec`` at the fixed point. In ``c`` and ``tau`` at fixed ``Delta`` the
    derivatives are integrals of ``df`` (``f = (c x - tau)_+`` vanishes at its kink);
    in ``Delta`` they follow from the complex Burgers equation ``dG/dDelta = -G dG/dz``
    of the free convolution with a semicircle: ``d/dDelta int rho phi = int rho h phi'``
    and ``d/dDelta int rho h phi = int rho (h^2 - pi^2 rho^2 / 3) phi'``.

    ``cut = (x_kappa, rho_R(x_kappa))``: the rank-constrained map ``f 1[x > x_kappa]``
    (:mod:`attnlib.width`), cut where the constraint binds. The cut is the top-``kappa``
    quantile, which the flow ``drho/dDelta = -d(rho h)/dx`` carries at the speed
    ``h(x_kappa)``: integrals above it of a ``phi`` without ``h`` obey the same rule,
    and those with ``h`` gain ``-(pi^2 / 3) rho(x_kappa)^3 phi(x_kappa)``, with ``phi =
    f`` the jump of ``f`` at the cut (``s``, hence ``m`` and ``v``)."""
    m_hat, q_hat, a_hat = conj
    D, c, tau = q_hat / m_hat**2, m_hat / a_hat, lam / a_hat
    x, w, h = np.asarray(spec.x), np.asarray(spec.w), np.asarray(spec.hilbert)
    rho = np.asarray(spec.density)
    kept = ((c * x > tau) & (x > cut[0])).astype(float)
    f = np.maximum(c * x - tau, 0.0) * kept
    u = x - 2.0 * D * h
    s = np.sum(w * f * h)  # v m_hat
    ds = c * np.sum(w * kept * (h * h - np.pi**2 * rho * rho / 3.0))
    if math.isfinite(cut[0]):  # the jump c x_kappa - tau of f at the cut
        ds -= np.pi**2 / 3.0 * cut[1] ** 3 * max(c * cut[0] - tau, 0.0)
    dP = np.array(
        [
            [np.sum(w * h * (c * x * kept + f)) - 2 * s - 2 * D * ds,
             np.sum(w * kept * x * u), -np.sum(w * kept * u)],
            [2 * c * np.sum(w * f * h), 2 * np.sum(w * f * x), -2 * np.sum(w * f)],
            [ds, np.sum(w * kept * x * h), -np.sum(w * kept * h)],
        ]
    )  # fmt: skip  # d (m, q, s) / d (Delta, c, tau)
    chain = np.array(
        [
            [-2 * q_hat / m_hat**3, 1 / m_hat**2, 0.0],
            [1 / a_hat, 0.0, -m_hat / a_hat**2],
            [0.0, 0.0, -lam / a_hat**2],
        ]
    )  # d (Delta, c, tau) / d (m_hat, q_hat, a_hat)
    G = dP @ chain
    G[2] = G[2] / m_hat - np.array([s / m_hat**2, 0.0, 0.0])  # v = s / m_hat
    return G


def _constrained_jacobian(target, lam, conj, kappa):
    """:func:`_nuclear_jacobian` of the map cut at ``x_kappa`` where the rank constraint
    of a student of width ``kappa < 1`` binds (:mod:`attnlib.denoisers.constrained`)."""
    m_hat, q_hat, a_hat = (float(t) for t in conj)
    D, c, tau = q_hat / m_hat**2, m_hat / a_hat, lam / a_hat
    cut = binding_cut(target, D, c, tau, kappa)
    spec = nuclear_spectrum(target, D, c, tau, cut)
    rho = float(rmt.density(target, D, cut)) if math.isfinite(cut) else 0.0
    return _nuclear_jacobian(lam, conj, spec, (cut, rho))


def _input_jacobian(pb, lam, conj, spec=None):
    """``d (m, q, v) / d (m_hat, q_hat, a_hat)`` at the fixed point (``spec``: its
    spectrum, :func:`attnlib.denoisers.nuclear_spectrum`, computed if None; ignored for
    the rank-constrained map of ``pb.kappa < 1``); the Frobenius input side is
    closed-form (forward differences)."""
    if pb.penalty == "nuclear" and pb.kappa < 1.0:
        return _constrained_jacobian(pb.target, lam, conj, pb.kappa)
    if pb.penalty == "nuclear":
        if spec is None:
            m_hat, q_hat, a_hat = conj
            spec = nuclear_spectrum(pb.target, q_hat / m_hat**2, m_hat / a_hat, lam / a_hat)
        return _nuclear_jacobian(lam, conj, spec)
    Q0 = float(pb.data.Q0)

    def g(cj):
        i = input_side(pb.target, cj[0], cj[1], cj[2], lam, "frobenius", Q0=Q0)
        return np.array([i.m, i.q, i.v])

    base, steps = g(conj), 1e-6 * np.abs(conj) + 1e-12
    return np.stack([(g(conj + np.eye(3)[i] * steps[i]) - base) / steps[i] for i in range(3)], 1)


def _test_gradient(pb, x, steps):
    """``d test_error / d (m, q)`` by forward differences on :data:`PROBE_POINTS` points."""
    Q0, (m, q) = float(pb.data.Q0), (float(x[0]), float(x[1]))
    qmc = (PROBE_POINTS, 1, pb.qmc[2])
    base = test_errors(pb.task, Q0, m, q, qmc).test_error
    dm = (test_errors(pb.task, Q0, m + steps[0], q, qmc).test_error - base) / steps[0]
    dq = (test_errors(pb.task, Q0, m, q + steps[1], qmc).test_error - base) / steps[1]
    return np.array([dm, dq])


def metric_error(pb, lam, x, fixed, metrics, spec=None, *, jac=None) -> float:
    """The largest of :func:`metric_errors`: ``SEResult.integration_error`` (NaN where
    the Jacobians cannot be evaluated, e.g. a singular ``I - J``)."""
    try:
        return float(np.max(metric_errors(pb, lam, x, fixed, metrics, spec, jac=jac)))
    except (ValueError, ArithmeticError, np.linalg.LinAlgError) as err:
        log.warning("no error estimate at x = %s: %s", np.round(np.asarray(x), 6), err)
        return math.nan


def jacobians(pb, lam, x, prox, conj, spec=None) -> tuple:
    """``(C, G, dC)`` at ``x = (m, q, v)``: ``C = d (m_hat, q_hat, a_hat, train_loss) / d
    (m, q, v)`` ``(4, 3)`` (:func:`_output_jacobian`, rows reordered, the mean over the
    scramblings), ``G = d (m, q, v) / d (m_hat, q_hat, a_hat)`` ``(3, 3)``
    (:func:`_input_jacobian` at ``conj``) and ``dC`` ``(R, 4, 3)``: each scrambling's
    ``C`` minus their mean (the QMC error of ``C``); the map's Jacobian is ``J = G C[:3]``."""
    steps = _steps(np.asarray(x, dtype=float), float(pb.data.Q0))
    per = _output_jacobian(pb, np.asarray(x, dtype=float), prox, steps)[:, [2, 1, 0, 3]]
    C = per.mean(axis=0)
    return C, _input_jacobian(pb, lam, np.asarray(conj, dtype=float), spec), per - C


def metric_errors(pb, lam, x, fixed, metrics, spec=None, *, jac=None) -> np.ndarray:
    """Relative errors of ``metrics = (train_loss, te, mse)`` (``te`` a
    :class:`attnlib.channels.TestErrors`) at the fixed point ``x = (m, q, v)``:
    the per-scrambling QMC deviations propagated through ``(I - J)^{-1}`` (module
    docstring). ``fixed = (prox, means, image)``: the prox points, per-scrambling
    output means ``(R, 4)`` (``a_hat, q_hat, m_hat, train_loss``) and the input side
    ``(m, q, v, rank)`` of the map's evaluation at ``x``; ``spec``: the nuclear input
    side's spectrum there (:func:`attnlib.denoisers.nuclear_spectrum`; computed if None);
    ``jac``: the :func:`jacobians` ``(C, G)`` if already computed. 0 for the linear task
    (closed forms); NaN with a single scrambling (no error estimate)."""
    if pb.channel.closed_form_output:
        return np.zeros(3)
    prox, means, _ = fixed
    means = np.asarray(means, dtype=float)
    x = np.asarray(x, dtype=float)
    dev = means - means.mean(axis=0)  # (R, 4): a_hat, q_hat, m_hat, train_loss
    steps = _steps(x, float(pb.data.Q0))
    conj = means.mean(axis=0)[[2, 1, 0]]
    C, G = (jacobians(pb, lam, x, prox, conj, spec) if jac is None else jac)[:2]
    dx = np.linalg.solve(np.eye(3) - G @ C[:3], G @ dev[:, [2, 1, 0]].T).T  # (R, 3)
    train_loss, te, mse = metrics
    d_train = dx @ C[3] + dev[:, 3]
    d_test = dx[:, :2] @ _test_gradient(pb, x, steps)
    d_mse = -2.0 * dx[:, 0] + dx[:, 1]
    test_sem = math.hypot(_sem(d_test), te.stderr[0])
    return np.array(
        [_rel(_sem(d_train), train_loss), _rel(test_sem, te.test_error), _rel(_sem(d_mse), mse)]
    )
