"""Robust by default: the fallbacks tried when the direct fixed-point iteration fails.

In order, after a direct attempt of at most 100 maps: the zero phase (the input side
thresholded everything: is ``S_hat = 0`` the fixed point?), a restart from the image of
the origin, a restart from the image of the start (one map: a point inside the domain
``m^2 < q Q0``, which the iteration in ``(m/Q0, log q, log v)`` can leave on its way),
smaller starts where the map is undefined, the default start (when a warm start was
given), continuation in ``lam`` (solve at ``lam 10^(k/2)`` for the smallest ``k`` that
converges, then walk back down to ``lam`` warm-starting each step), starts shrunk
towards the origin where the direct iteration met the zero phase (next to the boundary
of the zero phase the fixed point has small ``m``, ``q`` and ``v``, an iteration from a
larger start is thrown into the region where the input side thresholds everything and
stalls there, and continuation upwards in ``lam`` walks into the zero phase itself),
and heavier damping (0.8, then 0.95). Every accepted point passed the fixed-point test of
:func:`attnlib.se.point.attempt`; if none does, the caller reports NaN.
"""

from __future__ import annotations

import logging
from typing import NamedTuple

import numpy as np

from attnlib import follow
from attnlib.se import point
from attnlib.se.engine import LoopSettings, in_domain

__all__ = ["Found", "default_x0", "find"]

log = logging.getLogger("attnlib.se")

_DAMPINGS = (0.8, 0.95)
_LADDER = 8  # continuation from at most lam * 10^4
_DIRECT = 100  # SE maps of the direct attempt before the fallbacks
_PROBE = 60  # SE maps of each probe of the continuation ladder


class Found(NamedTuple):
    attempt: point.Attempt | None  # the fixed point, or None
    zero: tuple | None  # (OutputSide, InputSide) of the zero phase
    n_iter: int
    residual: float


def default_x0(Q0):
    return np.array([0.3 * Q0, 0.5 * Q0, 1.0])


def _at_lam(pb: point.Problem, lam) -> point.Problem:
    return pb._replace(data=pb.data._replace(lam=np.float64(lam)))


def _continuation(pb, lam, settings):
    """Walk down from the smallest converging ``lam 10^(k/2)``: ``(Attempt | None, n_iter)``."""
    base = lam if lam > 0 else 1e-6
    ladder = [base * 10 ** (k / 2) for k in range(1, _LADDER + 1)]
    probe = settings._replace(max_iter=min(int(settings.max_iter), _PROBE))
    x0 = default_x0(float(pb.data.Q0))
    up = follow.retry(lambda lam_k: point.attempt(_at_lam(pb, lam_k), x0, None, probe), ladder)
    n_iter = sum(a.n_iter for a in up.tried)
    if not up.accepted:
        return None, n_iter
    log.info("continuation from lam=%.3g down to lam=%.3g", up.rung, lam)
    walk = [*ladder[: len(up.tried) - 1][::-1], lam]
    a, k = _descend(pb, up.result, walk, (settings, settings._replace(damping=0.9)))
    return a, n_iter + k


def _descend(pb: point.Problem, a: point.Attempt, lams, rungs) -> tuple:
    """The fixed point ``a`` continued through ``lams`` (:func:`attnlib.follow.follow`),
    each step from the last one with the first of the loop settings ``rungs`` that
    converges (e.g. the same step with heavier damping): ``(Attempt | None, n_iter)``,
    ``None`` where a step fails."""
    n_iter = 0

    def step(i, lam_j, b):
        nonlocal n_iter
        t = follow.retry(lambda s: point.attempt(_at_lam(pb, lam_j), b.x, b.prox, s), rungs)
        n_iter += sum(c.n_iter for c in t.tried)
        return t.result, (t.result if t.accepted else None)

    if not lams:
        return a, 0
    done = follow.follow(step, lams, init=a, stop_at_failure=True, what="lam").results
    return (done[-1] if len(done) == len(lams) and done[-1].converged else None), n_iter


def _shrunk(x0, settings):
    """Starts ``x0`` with ``m`` and ``v`` halved 1, 2, 4 and 8 times."""
    shrink = np.array([0.5, 1.0, 0.5])
    return [(np.asarray(x0, dtype=float) * shrink**k, settings) for k in (1, 2, 4, 8)]


def _fallback_starts(pb, lam, a, x0, settings):
    """Restarts after a failed direct attempt ``a``: ``(Found | None, starts)``."""
    Q0 = float(pb.data.Q0)
    starts = []
    if a.saw_zero:
        o, i, zero = point.origin(pb, lam)
        if zero:
            return Found(None, (o, i), a.n_iter, 0.0), []
        image = np.array([i.m, i.q, i.v]) if i is not None else None
        if image is not None and in_domain(image, Q0):
            starts.append((image, settings))
    fx0 = point.image(pb, lam, x0) if a.n_iter > 1 else None
    if fx0 is not None:  # the image of the start: inside the domain, often close
        starts.append((fx0, settings))
    if a.n_iter <= 1:  # the map is undefined at the start: smaller m and v
        starts += _shrunk(x0, settings)
    if not np.allclose(x0, default_x0(Q0)):
        starts.append((default_x0(Q0), settings._replace(max_iter=_PROBE)))
    return None, starts


def _first(pb, starts, n_iter, best):
    """The first of the attempts from ``starts`` (``(x, settings)`` pairs) that converges:
    ``(Found | None, n_iter, best residual)``."""

    def attempt(start):
        log.info("retry from %s with damping %.2f", np.round(start[0], 4), float(start[1].damping))
        return point.attempt(pb, start[0], None, start[1])

    t = follow.retry(attempt, starts)
    n_iter += sum(a.n_iter for a in t.tried)
    best = min([best, *(a.residual for a in t.tried)])
    return (Found(t.result, None, n_iter, t.result.residual) if t.accepted else None), n_iter, best


def find(pb: point.Problem, lam, start, settings: LoopSettings) -> Found:
    """The fixed point at ``lam`` from ``start = (x0, prox0, history)`` (a warm Anderson
    history or None), with the fallbacks above."""
    Q0 = float(pb.data.Q0)
    x0, prox0, history = start
    direct = settings._replace(max_iter=min(int(settings.max_iter), _DIRECT))
    a = point.attempt(pb, x0, prox0, direct, history)
    if a.converged:
        return Found(a, None, a.n_iter, a.residual)
    zero, starts = _fallback_starts(pb, lam, a, x0, direct)
    if zero is not None:
        return zero
    found, n_iter, best = _first(pb, starts, a.n_iter, a.residual)
    if found is not None:
        return found
    c, k = _continuation(pb, lam, settings)
    n_iter += k
    if c is not None:
        return Found(c, None, n_iter, c.residual)
    if a.saw_zero and a.n_iter > 1:  # next to the zero phase: smaller starts
        found, n_iter, best = _first(pb, _shrunk(x0, direct), n_iter, best)
        if found is not None:
            return found
    heavy = [(default_x0(Q0), settings._replace(damping=d)) for d in _DAMPINGS]
    found, n_iter, best = _first(pb, heavy, n_iter, best)
    return found if found is not None else Found(None, None, n_iter, best)
