r"""The ``lam = 0`` state evolution as ``v -> infinity``: the rate at which ``v`` runs away.

Why. At ``lam = 0`` (nuclear + PSD) the input side depends on the output side only
through ``Delta_eff = q_hat / m_hat^2`` and ``c = m_hat / a_hat`` (``tau = lam / a_hat =
0``), and its variance is ``v' = div(Delta_eff, c) / m_hat``. When ``v`` is large the
prox fits the labels, so at fixed ``(m, q)`` the conjugates scale as ``a_hat, m_hat ~
1/v`` and ``q_hat ~ 1/v^2``: ``Delta_eff`` and ``c`` have limits, the new ``(m, q)`` too,
and ``v' / v`` tends to a finite rate

    r(m, q) = lim_{v -> infinity} div(Delta_eff, c) / (m_hat v).

So at large ``v`` the map splits into a map of ``(m, q)`` alone and a multiplication of
``v`` by ``r``. Let ``(m*, q*)`` be the fixed point of that limit map and ``r* = r(m*,
q*)``. If ``r* > 1``, ``v`` grows geometrically (``log v`` gains ``log r*`` per map)
while ``(m, q)`` settle: the state evolution has no fixed point, the ERM interpolates
(train loss ``~ lam^2``, ``v ~ 1/lam`` at small ``lam > 0``). If ``r* < 1``, ``v`` comes
back from infinity: along the curve of ``(m, q)`` fixed points at each ``v`` the rate
goes from ``+infinity`` (``v -> 0``: ``v'`` stays finite) to ``r* < 1``, so it crosses 1,
and there is a finite fixed point. ``alpha_interp`` is the root of ``r*(alpha) = 1``.
Several limit fixed points can coexist; one that runs away (``r* > 1``) is enough for
interpolation: its train loss tends to 0, the smallest possible, so it is the ERM's
global minimum and a finite fixed point beside it (positive train loss) is not.
For the Gaussian channels (linear task, softmax seq2seq with noise on the pairs) the
limit map is in closed form (``a_hat v = m_hat v = alpha m_eff``, ``c = 1``) and
``r* = 1`` is the closed form of :func:`attnlib.thresholds.interpolation_formula`; for
seq2lab (one nonlinear constraint per sequence: ``c != 1``) it is computed here.

How. :func:`growth_rate` iterates the real state-evolution map (output side on the QMC
points of :func:`attnlib.se.output.qmc_points`, input side at ``lam = 0``) with ``v``
pinned: ``v`` is raised tenfold per map from ``1e2`` to ``1e7`` (the prox points follow as
warm starts: a prox started cold at ``v = 1e8`` fails to fit the labels), then held there
while ``(m, q)`` iterate; ``r = v' / v`` at each map (the correction of ``r`` at ``v = 1e7``
against ``v -> infinity`` is below ``1e-3``). The verdict is +1 (runs away: interpolation)
or -1 (a fixed point) once ``|r - 1|`` exceeds ``margin`` plus three standard errors (over
the ``R`` scramblings) plus twice the bound on the change still to come (the last change of
``r`` times ``rho / (1 - rho)``, ``rho`` the measured contraction); 0 (undecided) where
``max_maps`` pass first.
"""

from __future__ import annotations

import logging
import math
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from attnlib import _checks, _limits, channels
from attnlib.gamp import SpectralProx
from attnlib.se import engine, point
from attnlib.se.input import input_side
from attnlib.se.output import output_chunks, qmc_points, summarize

__all__ = ["Runaway", "growth_rate", "decided"]

log = logging.getLogger("attnlib.se")

_V_START = 1e2  # v of the first map; raised tenfold per map up to _V_BIG
_V_BIG = 1e6
_MOVE = 100.0  # with tol: (m/Q0, log q) must also move by at most _MOVE * tol per map
_RHO_MAX = 0.95  # the contraction assumed at most when bounding the change to come
# decided verdicts by (task, target, alpha), at most _MEMORY of them: the bisection of
# attnlib.thresholds.interpolation_se decides a point before it solves there, and the
# solve's own check (attnlib.se.lam0) then finds the verdict here instead of iterating again
_DECIDED: dict = {}
_MEMORY = 512


class Runaway(NamedTuple):
    """:func:`growth_rate`'s result at ``alpha``: ``rate`` the limit ``v' / v`` at the
    limit point ``(m, q)`` (> 1: no ``lam = 0`` fixed point), ``stderr`` its QMC standard
    error over the scramblings, ``tail`` the bound on its change still to come,
    ``verdict`` +1 (interpolating), -1 (a fixed point) or 0 (undecided), ``n_maps`` the
    state-evolution maps used. ``warm`` (internal) warm-starts the next call."""

    alpha: float
    rate: float
    stderr: float
    tail: float
    m: float
    q: float
    verdict: int
    n_maps: int
    warm: tuple


def _rates(target, means, v, Q0):
    """``(m', q', r)`` from the scramblings' mean, and the rate of each scrambling."""
    o = summarize(means)
    i = input_side(target, o.m_hat, o.q_hat, o.a_hat, 0.0, "nuclear", Q0=Q0)
    per = []
    for a_hat, q_hat, m_hat, _ in np.asarray(means):
        try:
            per.append(input_side(target, m_hat, q_hat, a_hat, 0.0, "nuclear", Q0=Q0).v / v)
        except ValueError:
            per.append(math.nan)
    return i.m, i.q, i.v / v, np.asarray(per)


class _Track(NamedTuple):
    """The rates of the maps at ``v = _V_BIG`` (their last two changes bound the tail)."""

    rates: list

    def tail(self) -> float:
        r = self.rates
        if len(r) < 3:
            return math.inf
        d1, d0 = abs(r[-1] - r[-2]), abs(r[-2] - r[-3])
        rho = min(d1 / d0, _RHO_MAX) if d0 > 0 else 0.0
        return d1 * rho / (1.0 - rho)


def _verdict(rate, stderr, tail, margin) -> int:
    gap = margin + 3.0 * stderr + 2.0 * tail
    if not math.isfinite(gap) or abs(rate - 1.0) <= gap:
        return 0
    return 1 if rate > 1.0 else -1


def _start(task, target, x0, prox, z):
    """``(x, prox)`` to start from at ``v = 1e2``: the ``(m, q)`` and prox points of a warm
    start, or the default start (the ramp to ``1e6`` is run again either way: a jump of
    ``(m, q)`` at ``v = 1e6`` leaves prox points that do not fit the labels)."""
    Q0 = float(target.Q0)
    if x0 is not None:
        return np.array([x0[0], x0[1], _V_START]), prox
    x = np.array([0.3 * Q0, 0.5 * Q0, _V_START])
    n = z.shape[0] * z.shape[1]
    if prox is None or prox.shape[0] != n:
        prox = np.zeros((n, task.n_pairs))
    return x, prox


def growth_rate(
    task, target, alpha: float, *, n_qmc: int = 2048, n_rep: int = 4, seed: int = 0,
    max_maps: int = 40, tol: float = 0.0, margin: float = 0.0, warm: tuple | None = None,
) -> Runaway:  # fmt: skip
    r"""The rate ``r*`` at which ``v`` runs away in the ``lam = 0`` state evolution at
    ``alpha`` (nuclear + PSD; module docstring), with its verdict.

    Iterates until the verdict is decided with ``margin`` (a decision with ``tol = 0``,
    the default) or, with ``tol > 0``, until ``stderr``-free precision ``tail <= tol``
    (to locate ``r* = 1``) and ``(m/Q0, log q)`` move by at most ``100 tol`` per map; at
    most ``max_maps`` maps. ``n_qmc, n_rep, seed``: the QMC
    points of the output side (as in :func:`attnlib.se.solve`). ``warm``: the ``warm``
    field of an earlier result for the same task, target and points (another ``alpha``).
    Cost: one state-evolution map each, 5-20 maps (seq2lab ``T = 3``, ``n_qmc = 2048``:
    about 0.1 s a map on one core).
    """
    alpha = _checks.alpha(alpha)
    n_qmc, n_rep, seed = _checks.qmc_sizes(n_qmc, n_rep, seed)
    z = qmc_points(task, n_qmc, n_rep, seed)
    Q0 = float(target.Q0)
    x0, prox = (None, None) if warm is None else warm
    x, prox = _start(task, target, x0, prox, z)
    if warm is None:
        prox = np.asarray(point.cold_prox(_problem(task, target, alpha, z), x))
    track, k = _Track([]), 0
    rate = stderr = tail = math.nan
    verdict = 0
    while k < max_maps:
        _limits.check()
        out = output_chunks(task, z, np.float64(alpha), Q0, jnp.asarray(x), prox, mode="warm")
        prox = np.asarray(out.prox)
        m, q, r, per = _rates(target, out.means, x[2], Q0)
        k += 1
        if x[2] >= _V_BIG:
            track.rates.append(r)
            rate, tail = r, track.tail()
            stderr = float(np.std(per, ddof=1) / math.sqrt(per.size)) if per.size > 1 else 0.0
            verdict = _verdict(rate, stderr, tail, margin)
            moved = abs(m - x[0]) / Q0 + abs(math.log(q / x[1]))  # (m, q) under this map
            done = tail <= tol and moved <= _MOVE * tol if tol > 0 else verdict != 0
            if done:
                break
        if not (math.isfinite(m) and q > 0 and m * m < q * Q0):
            break
        x = np.array([m, q, min(10.0 * x[2], _V_BIG)])
    if verdict != 0:
        try:
            _remember((task, target, float(alpha)), verdict)
        except TypeError:  # an unhashable task or target: nothing remembered
            pass
    log.debug("growth_rate at alpha %.5g: r = %.6f +- %.1e (tail %.1e), %d maps",
              alpha, rate, stderr, tail, k)  # fmt: skip
    return Runaway(alpha, rate, stderr, tail, float(x[0]), float(x[1]), verdict, k, (x, prox))


def _problem(task, target, alpha, z) -> point.Problem:
    """A :class:`attnlib.se.point.Problem` for the cold prox points at ``lam = 0``."""
    data = engine.Data(z=z, alpha=np.float64(alpha), lam=np.float64(0.0), Q0=np.float64(target.Q0))
    den = SpectralProx("nuclear", target)
    return point.Problem(channels.for_task(task), den, data, (0, 0, 0), 0)


def _remember(key, verdict) -> None:
    if len(_DECIDED) >= _MEMORY:
        _DECIDED.pop(next(iter(_DECIDED)))
    _DECIDED[key] = verdict


def decided(task, target, alpha: float) -> int:
    """The verdict of an earlier :func:`growth_rate` at ``(task, target, alpha)`` in this
    process (+1 interpolating, -1 a fixed point), 0 if none was decided."""
    try:
        return _DECIDED.get((task, target, float(alpha)), 0)
    except TypeError:  # an unhashable task or target
        return 0
