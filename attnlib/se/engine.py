"""The state-evolution map and its fixed point, jitted (one compilation per task and penalty).

The unknowns are ``y = (m / Q0, log(q / Q0), log v)`` (comparable scales; ``q, v`` stay
positive); the map is ``y -> output side -> input side -> y`` with the prox points of
the output side carried along as warm starts. The fixed point is found by the generic
:func:`attnlib.fixed_point.anderson`; the map reports ``ok = False`` outside its domain
(``m^2 >= q Q0``, ``a_hat <= 0``, ``m_hat <= 0``, non-finite values) and when the input
side thresholds the whole spectrum away (``S_hat = 0``, remembered in ``saw_zero``).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from attnlib import fixed_point
from attnlib.se.input import input_arrays
from attnlib.se.output import output_arrays

__all__ = ["Data", "Settings", "to_y", "to_x", "se_map", "solve_fixed_point"]


class Data(NamedTuple):
    """Arrays of one solve: QMC points ``z`` and the scalars of the problem."""

    z: jax.Array
    alpha: jax.Array
    lam: jax.Array
    Q0: jax.Array
    token: jax.Array  # names the target for the input side's callback


class Settings(NamedTuple):
    """Dynamic settings of the fixed-point iteration (no recompilation when they change)."""

    tol: float = 1e-6
    max_iter: int = 300
    damping: float = 0.5


def to_y(x, Q0):
    return jnp.stack([x[0] / Q0, jnp.log(x[1] / Q0), jnp.log(x[2])])


def to_x(y, Q0):
    y = jnp.clip(y, -50.0, 50.0)
    return jnp.stack([y[0] * Q0, Q0 * jnp.exp(y[1]), jnp.exp(y[2])])


def _conjugates(means):
    """``(m_hat, q_hat, a_hat)`` from per-replicate ``(a_hat, q_hat, m_hat, loss)``."""
    mean = jnp.mean(means, axis=0)
    return jnp.stack([mean[2], mean[1], mean[0]])


def se_map(task, penalty, data: Data, y, aux):
    """One SE map ``y -> F(y)``: returns ``(F(y), aux', ok)``; ``aux = (prox, saw_zero,
    means, image)`` with the output side's per-replicate means at ``y`` and the input
    side's ``(m, q, v, rank_fraction)`` there (the metrics of a converged point)."""
    prox, saw_zero = aux[0], aux[1]
    Q0 = data.Q0
    x = to_x(y, Q0)
    bound = 0.999 * jnp.sqrt(x[1] * Q0)
    in_domain = x[0] ** 2 < x[1] * Q0
    x_safe = jnp.where(in_domain, x, x.at[0].set(jnp.clip(x[0], -bound, bound)))
    out = output_arrays(task, data.z, data.alpha, Q0, x_safe, prox, mode="warm")
    conj = _conjugates(out.means)
    out_ok = (conj[0] > 0) & (conj[2] > 0) & (conj[1] >= 0) & jnp.all(jnp.isfinite(conj))
    safe = jnp.where(out_ok, conj, jnp.array([1.0, 0.0, 1.0]))
    inp = input_arrays(data.token, penalty, safe, data.lam, Q0)
    zero = out_ok & (inp[3] == 0.0) & (inp[1] == 0.0)
    fx = inp[:3]
    fx_ok = jnp.all(jnp.isfinite(fx)) & (fx[1] > 0) & (fx[2] > 0) & (fx[0] ** 2 < fx[1] * Q0)
    ok = in_domain & out_ok & fx_ok
    fy = to_y(jnp.where(fx_ok, fx, x), Q0)
    new_prox = jnp.where(jnp.all(jnp.isfinite(out.prox)), out.prox, prox)
    return fy, (new_prox, saw_zero | zero, out.means, inp), ok


@functools.partial(jax.jit, static_argnames=("task", "penalty", "memory"))
def solve_fixed_point(task, penalty, memory, data: Data, settings: Settings, start):
    """Anderson fixed point of :func:`se_map` from ``start = (y0, prox0)``.

    Returns ``(FixedPoint, saw_zero)`` (see :func:`attnlib.fixed_point.anderson`); the
    ``aux`` of the result is ``(prox, means, image)`` of the last evaluation.
    """
    cfg = fixed_point.AndersonConfig(
        tol=settings.tol, max_iter=settings.max_iter, damping=settings.damping, memory=memory
    )
    y0, prox0 = start

    def F(y, aux):
        return se_map(task, penalty, data, y, aux)

    R = data.z.shape[0]
    aux0 = (prox0, jnp.asarray(False), jnp.zeros((R, 4)), jnp.zeros(4))
    fp = fixed_point.anderson(F, y0, aux0, cfg)
    prox, saw_zero, means, image = fp.aux
    return fp._replace(aux=(prox, means, image)), saw_zero
