"""The rank-constrained state-evolution map and its fixed point (jitted, Anderson).

The same map as :mod:`attnlib.se.engine` (unknowns ``y = (m / Q0, log(q / Q0), log v)``,
output side :func:`attnlib.se.output.output_arrays` with warm-started prox points),
with the input side of :mod:`attnlib.width.input` reached through ``jax.pure_callback``.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import iterate
from attnlib.se.engine import Settings, to_x, to_y
from attnlib.se.input import target_token, token_target
from attnlib.se.output import output_arrays
from attnlib.width.input import host_input

__all__ = ["Data", "solve_fixed_point", "token"]


class Data(NamedTuple):
    """Arrays of one solve: QMC points ``z`` and the scalars of the problem."""

    z: jax.Array
    alpha: jax.Array
    lam: jax.Array
    kappa: jax.Array
    Q0: jax.Array
    token: jax.Array  # names the target for the input side's callback


def token(target) -> int:
    """A small integer naming ``target`` for the callback (the state evolution's bounded
    table, :func:`attnlib.se.input.target_token`: one compilation serves every target)."""
    return target_token(target)


def _host(tok, conj, lam, kappa):
    return host_input(token_target(tok), conj, lam, kappa)


def _input(data: Data, conj):
    shape = jax.ShapeDtypeStruct((4,), jnp.float64)
    return jax.pure_callback(_host, shape, data.token, conj, data.lam, data.kappa)


def width_map(task, data: Data, y, aux):
    """One map ``y -> F(y)``: ``(F(y), aux', ok)`` with ``aux = (prox, means, image)``."""
    prox = aux[0]
    Q0 = data.Q0
    x = to_x(y, Q0)
    in_domain = x[0] ** 2 < x[1] * Q0
    bound = 0.999 * jnp.sqrt(x[1] * Q0)
    x_safe = jnp.where(in_domain, x, x.at[0].set(jnp.clip(x[0], -bound, bound)))
    out = output_arrays(task, data.z, data.alpha, Q0, x_safe, prox, mode="warm")
    mean = jnp.mean(out.means, axis=0)
    conj = jnp.stack([mean[2], mean[1], mean[0]])  # (m_hat, q_hat, a_hat)
    out_ok = (conj[0] > 0) & (conj[2] > 0) & (conj[1] > 0) & jnp.all(jnp.isfinite(conj))
    inp = _input(data, jnp.where(out_ok, conj, jnp.array([1.0, 1.0, 1.0])))
    fx = inp[:3]
    fx_ok = jnp.all(jnp.isfinite(fx)) & (fx[1] > 0) & (fx[2] > 0) & (fx[0] ** 2 < fx[1] * Q0)
    ok = in_domain & out_ok & fx_ok
    fy = to_y(jnp.where(fx_ok, fx, x), Q0)
    new_prox = jnp.where(jnp.all(jnp.isfinite(out.prox)), out.prox, prox)
    return fy, (new_prox, out.means, inp), ok


@functools.partial(jax.jit, static_argnames=("task", "memory"))
def solve_fixed_point(task, memory, data: Data, settings: Settings, start):
    """Anderson fixed point of :func:`width_map` from ``start = (y0, prox0)``."""
    cfg = iterate.AndersonConfig(
        tol=settings.tol, max_iter=settings.max_iter, damping=settings.damping, memory=memory
    )
    y0, prox0 = start
    R = data.z.shape[0]
    aux0 = (prox0, jnp.zeros((R, 4)), jnp.zeros(4))
    return iterate.anderson(lambda y, aux: width_map(task, data, y, aux), y0, aux0, cfg)


def start_y(x0, Q0):
    """``y`` of a start ``x0 = (m, q, v)``."""
    return to_y(jnp.asarray(np.asarray(x0, dtype=float)), Q0)
