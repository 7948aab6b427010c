r"""Bayes posterior of a scalar delta channel: seq2lab without noise or with logit noise
(``noise_on="logits"`` or ``"target"``).

Conventions as in :mod:`attnlib.channels.posterior`: ``K`` pairs, ``sigma_ab^2 = 1 +
delta_ab``; ``omega_ab ~ N(0, sigma_ab^2 (Q0 - mmse))`` and, given ``omega``, the
target's pairs ``h_ab ~ N(omega_ab, V_ab)``, ``V_ab = sigma_ab^2 mmse``. The label is
``y = r(u)`` exactly, ``r`` = the task's output (a scalar readout of the attention
matrix), ``u = h + sqrt(Delta) xi`` (``Delta = 0``: ``u = h``). The posterior of ``u``
lives on the level set ``{r(u) = y}`` of ``N(omega, V + Delta)``, and
``E[h - omega | y] = V / (V + Delta) E[u - omega | y]``.

The level set is reached as the limit ``eps -> 0`` of the likelihood
``exp(-(y - r(u))^2 / (2 eps^2))``: self-normalised importance sampling of ``u`` from
``N(omega, V + Delta)`` on ``n_inner`` fixed Sobol points, outer scrambled Sobol points
over ``(omega, h, xi)``, ``eps = eps_rel`` times the median spread of ``r(u)`` given
``omega`` (the width of the label's posterior). The bias is ``O(eps^2)``: the result
at ``eps`` is returned and a third of its change from ``2 eps`` (the Richardson estimate
of the bias) is added to the error, with half the gap between the two estimators
``E[zhat^2]`` and (Nishimori) ``E[zhat (h - omega) / sqrt(V)]`` and the outer standard
error. Check: a linear readout gives exactly one measurement per sequence, ``J mmse =
1``; softmax at small ``beta`` is nearly linear.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import channels as _channels
from attnlib import tasks as _tasks
from attnlib.channels import posterior_nested as nested

__all__ = ["level_set_information"]


@functools.partial(jax.jit, static_argnames=("task", "chunk"))
def _nested(task, z_out, z_in, scalars, chunk):
    mmse, Q0, eps = scalars[0], scalars[1], scalars[2]
    K, T = task.n_pairs, task.T
    sd_w, sd_v, sd_u = nested.scales(task, mmse, Q0)

    def one(z):
        omega, y = nested.outer_sample(task, z, sd_w, sd_v)
        us = omega[None, :] + sd_u[None, :] * z_in
        r = task.output(_tasks.to_matrix(us, T))
        w = jax.nn.softmax(-((y - r) ** 2) / (2 * eps**2))
        zhat = (sd_v / sd_u) * (w @ z_in)  # E[(h - omega) / sd_v | y, omega]
        return jnp.sum(zhat**2), jnp.sum(zhat * z[K : 2 * K])

    return jax.lax.map(one, z_out, batch_size=chunk)


@functools.partial(jax.jit, static_argnames=("task",))
def _conditional_sd(task, z_out, z_in, mmse, Q0):
    """Median over outer points of the spread of ``r(u)`` given ``omega``: the scale of
    the posterior of the label (``eps`` is measured in it)."""
    K, T = task.n_pairs, task.T
    s = jnp.sqrt(jnp.asarray(_tasks.pair_variances(T)))
    sd_w = s * jnp.sqrt(jnp.maximum(Q0 - mmse, 0.0))
    sd_u = jnp.sqrt(s**2 * mmse + nested.logit_noise(task))

    def one(z):
        us = (sd_w * z[:K])[None, :] + sd_u[None, :] * z_in
        return jnp.std(task.output(_tasks.to_matrix(us, T)))

    return jnp.median(jax.vmap(one)(z_out))


def level_set_information(task, mmse, Q0, n_outer, n_inner, seed, *, eps_rel=0.01):
    """``(J, dof, error)`` of seq2lab without noise or with noise on the logits (module
    docstring); arguments validated by :func:`attnlib.bayes.information`."""
    accepted = "a Seq2Lab without noise or with logit noise"
    _channels.require_task(task, _tasks.Seq2Lab, accepted=accepted)
    if task.noise > 0 and task.noise_on == "outputs":
        raise ValueError(f"task must be {accepted}, got {task!r}")
    if not mmse > 0.0:
        raise ValueError(f"mmse must be > 0 for the seq2lab delta channel, got {mmse}")
    z_out, z_in = nested.qmc_sets(task, n_outer, n_inner, seed)
    eps = eps_rel * float(_conditional_sd(task, z_out[:256], z_in, mmse, Q0))
    dofs, errs = [], []
    for e in (eps, 2 * eps):
        a, b = _nested(task, z_out, z_in, jnp.asarray([mmse, Q0, e], dtype=jnp.float64), 16)
        a, b = np.asarray(a), np.asarray(b)
        dofs.append(0.5 * (a.mean() + b.mean()))
        errs.append(0.5 * abs(a.mean() - b.mean()) + np.std(b) / np.sqrt(b.size))
    err = errs[0] + abs(dofs[1] - dofs[0]) / 3.0
    return float(dofs[0] / mmse), float(dofs[0]), float(err / mmse)
