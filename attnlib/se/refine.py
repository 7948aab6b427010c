r"""The coarse-to-fine solve: Newton corrections of a fixed point on many more QMC points.

The fixed point ``x*`` of the map ``F_n`` (the output side averaged over ``n`` QMC
points) carries the QMC error of ``n`` points, amplified by ``(I - J)^{-1}``
(:mod:`attnlib.se.propagation`). Iterating the map on ``N = factor n`` points would
remove most of it, at the cost of many maps on ``N`` points. One Newton step does it at
the cost of about one map on ``N`` points:

    x1 = x* + (I - J)^{-1} (F_N(x*) - x*),

with ``J = G C`` the map's Jacobian that the error propagation computes anyway
(finite differences on the first :data:`attnlib.se.propagation.PROBE_POINTS` points,
the nuclear input side's closed form). ``x1`` is the fixed point of ``F_N`` up to the
error of ``J`` times ``x* - x_N`` (second order in the QMC error where ``J`` is exact).
With ``steps = 2`` the map is evaluated once more on the ``N`` points at ``x1``
(warm-started prox) and the step repeated.

The ``N`` points are ``R'`` scramblings (:func:`_fine_points`; ``SESettings.refine_rep``,
by default ``R'`` = the ``n`` points' ``R``) of the same Sobol sequences as the ``n``
ones: the first ``R`` extend the ``n`` points' scramblings, so that those are their
first ``n / R`` points (scrambled Sobol sets are nested), and the others are new ones of
the same length. The prox points and averages at ``x*`` of the ``n`` points are reused,
and only the ``N - n`` new points are solved (cold-started prox, the lower minimum of the
two cold starts), on the pieces of :data:`attnlib.qmc.CHUNK` points of ``R`` scramblings
that the ``n``-point solve compiled (no new program when ``n / R`` is a multiple of it,
as at the default).

The metrics are then those of ``x1`` with the output side's averages moved to ``x1``
linearly (``C (x1 - x_base)``), and their error is the spread of the ``R'`` scramblings'
means over the ``N`` points (:func:`_groups`) propagated through the same ``(I - J)^{-1}``
(:func:`attnlib.se.propagation.metric_errors`), with the Newton step's own error in
quadrature (:class:`Refined`).

``benchmarks/se_accuracy.py`` measures the deviations against solves on many more
points; a second Newton step (``steps = 2``) gains little there.
"""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

from attnlib import qmc
from attnlib.se import propagation
from attnlib.se.engine import in_domain
from attnlib.se.input import host_input, input_side
from attnlib.se.output import _join, _rows, output_arrays, qmc_points, summarize

__all__ = ["Refined", "refine"]

log = logging.getLogger("attnlib.se")


class Refined(NamedTuple):
    """A refined fixed point: the problem on ``N`` points ``pb``, ``x``, the sides
    ``(OutputSide, image, (prox, means, image))`` at ``x``, the Jacobians ``(C, G, dC)``
    (:func:`attnlib.se.propagation.jacobians`), and ``untaken``: the relative error of the
    mse that the Newton step adds, in quadrature: the change the part of the last step
    not taken (to stay in the domain) would have made, and the standard error of the
    step from the QMC error of ``J`` (``(I - J)^{-1} dJ (x - x*)`` over the scramblings'
    Jacobians ``dJ = G dC``)."""

    pb: Any
    x: np.ndarray
    sides: tuple
    jac: tuple
    untaken: float = 0.0


def _image(pb, lam, conj) -> np.ndarray:
    """The input side ``(m, q, v, rank)`` at ``conj = (m_hat, q_hat, a_hat)``."""
    if pb.penalty == "nuclear":
        return host_input(pb.target, conj, lam, pb.kappa)
    i = input_side(pb.target, *conj, lam, pb.penalty, Q0=float(pb.data.Q0))
    return np.array([i.m, i.q, i.v, i.rank_fraction])


def _within(x, dx, Q0, halvings: int = 10):
    """``(x + t dx, (1 - t) dx)`` for the largest ``t`` in ``1, 1/2, 1/4, ...`` that keeps
    the point in the domain (a full Newton step can cross ``m^2 = q Q0`` where the mse
    is small), or ``(None, None)``."""
    t = 1.0
    for _ in range(halvings + 1):
        if in_domain(x + t * dx, Q0):
            return x + t * dx, (1.0 - t) * dx
        t *= 0.5
    return None, None


def _conj(means) -> np.ndarray:
    return np.asarray(means).mean(axis=0)[[2, 1, 0]]


def _fine_at(pb, x, z_new, prox_new, mode):
    """Output means of each piece of :func:`attnlib.qmc.chunks` on the new points
    ``z_new`` ``(R, M, dim)`` at ``x``, ``(pieces, R, 4)``, and the prox points there."""
    xj, R = jnp.asarray(x, dtype=jnp.float64), z_new.shape[0]
    outs = [
        output_arrays(pb.channel, z_new[:, sl], pb.data.alpha, pb.data.Q0, xj,
                      _rows(prox_new, R, sl), mode=mode)
        for sl in qmc.chunks(z_new.shape[1])
    ]  # fmt: skip
    return np.stack([np.asarray(o.means) for o in outs]), _join([o.prox for o in outs], R)


def _groups(means_n, pieces, per: int, n_new: int) -> np.ndarray:
    """The ``R`` scramblings' output means ``(R, 4)`` over all their points: the
    ``n``-point set's ``means_n`` and the new ``pieces`` weighted by their points
    (consecutive pieces of one scrambled Sobol sequence are not independent replicates)."""
    w = per / (per + n_new)
    return w * means_n + (1.0 - w) * np.average(pieces, axis=0)


def _new_sets(pb, x, z_new, prox_new, mode):
    """Output means ``(R', 4)`` and prox points of the added scramblings ``z_new``
    ``(R', P, dim)`` at ``x``, evaluated ``R`` scramblings at a time (the program of the
    ``n``-point solve)."""
    R, P = pb.qmc[1], z_new.shape[1]
    if not len(z_new):
        return np.zeros((0, 4)), np.zeros((0, pb.task.n_pairs))
    outs = [_fine_at(pb, x, z_new[g : g + R], np.asarray(prox_new)[g * P : (g + R) * P], mode)
            for g in range(0, len(z_new), R)]  # fmt: skip
    return np.concatenate([o[0].mean(axis=0) for o in outs]), np.concatenate([o[1] for o in outs])


def _fine_points(pb, factor: int, rep: int) -> np.ndarray:
    """The fine stage's points ``(rep, factor n / rep, dim)``: ``rep`` scramblings (a
    multiple of ``pb``'s ``R`` that divides ``factor R``, as :class:`attnlib.se.SESettings`
    checks) of the output stream, of which the first ``R`` extend ``pb``'s own (their
    first ``n / R`` points are ``pb``'s)."""
    n, _, seed = pb.qmc
    return np.asarray(qmc_points(pb.task, factor * n, rep, seed))


def refine(pb, lam, x, fixed, factor: int, steps: int = 1, *, rep: int | None = None
           ) -> Refined | None:  # fmt: skip
    """Newton corrections of the fixed point ``x`` of ``pb`` (a
    :class:`attnlib.se.point.Problem`) on ``factor`` times its QMC points in ``rep``
    scramblings (:func:`_fine_points`; None: ``pb``'s ``R``, each extended) (module
    docstring); ``fixed = (prox, means, image)`` of the map's evaluation at ``x``.
    None where a step leaves the domain ``m^2 < q Q0``, ``q, v > 0`` or the input side
    is undefined (the caller keeps ``x``)."""
    n, R, seed = pb.qmc
    per, Q0 = n // R, float(pb.data.Q0)
    rep = R if rep is None else rep
    z = _fine_points(pb, factor, rep)
    P = z.shape[1]
    z_ext, z_add = z[:R, per:], z[R:]  # pb's scramblings past their first per points; new ones
    prox_n, means_n = np.asarray(fixed[0]), np.asarray(fixed[1])
    means, prox = means_n, prox_n  # of pb's R scramblings, extended below to P points each
    if P > per:
        blank = np.zeros((R * (P - per), pb.task.n_pairs))
        pieces, prox_ext = _fine_at(pb, x, z_ext, blank, "cold")
        means, prox = _groups(means_n, pieces, per, P - per), _join([prox_n, prox_ext], R)
    added, prox_add = _new_sets(pb, x, z_add, np.zeros((len(z_add) * P, pb.task.n_pairs)), "cold")
    means, prox = np.concatenate([means, added]), np.concatenate([prox, prox_add])
    jac = propagation.jacobians(pb, lam, x, prox_n, _conj(means))
    C, G, dC = jac
    step = np.linalg.inv(np.eye(3) - G @ C[:3])
    base, x_new, short = np.asarray(x, dtype=float), None, 0.0
    for k in range(steps):
        image = _image(pb, lam, _conj(means))
        if not in_domain(image[:3], Q0):
            return None
        x_new, short = _within(base, step @ (image[:3] - base), Q0)
        if x_new is None:
            log.debug("refine: step %d leaves the domain from x = %s", k, base)
            return None
        if k + 1 < steps:  # every fine point again, warm-started
            means, prox = _new_sets(pb, x_new, z, prox, "warm")
            base = x_new
    means = means + (C[[2, 1, 0, 3]] @ (x_new - base))[None, :]  # moved to x_new, linearly
    image = _image(pb, lam, _conj(means))
    if not in_domain(image[:3], Q0):
        return None
    fine = pb._replace(data=pb.data._replace(z=jnp.asarray(z)), qmc=(factor * n, rep, seed))
    mse = abs(Q0 - 2.0 * x_new[0] + x_new[1])
    untaken = abs(-2.0 * short[0] + short[1]) / mse  # relative, in the mse
    # the Newton step's error from the QMC error of J: dx' = (I - J)^{-1} dJ dx
    d = np.einsum("ij,rjk,k->ri", step @ G, dC[:, :3], np.asarray(x_new) - np.asarray(x))
    d_mse = -2.0 * d[:, 0] + d[:, 1]
    step_err = float(np.std(d_mse, ddof=1) / np.sqrt(len(d_mse))) / mse if len(d) > 1 else 0.0
    extra = float(np.hypot(untaken, step_err))
    return Refined(fine, x_new, (summarize(means), image, (prox, means, image)), jac, extra)
