r"""Bayes posterior of the hardmax channel (noise-free, or noise on the logits), by nested
quasi-Monte Carlo: the default at ``T = 3``; ``T = 2`` uses the exact orthant integrals of
:mod:`attnlib.channels.posterior_hardmax_exact` (this path with ``method="qmc"``: there it was 4-6 %
low at ``mmse / Q0 = 0.016`` with 2048-8192 outer points, -0.6 % with 16384 x 32768).

Conventions as in :mod:`attnlib.channels.posterior`: ``K`` pairs, ``sigma_ab^2 = 1 +
delta_ab``, ``omega_ab ~ N(0, sigma_ab^2 (Q0 - mmse))`` and, given ``omega``, the
target's pairs ``h_ab ~ N(omega_ab, V_ab)`` with ``V_ab = sigma_ab^2 mmse``. The labels
are ``Y = hardmax_rows(u)`` with ``u = h + sqrt(Delta) xi`` (``Delta = 0``: ``u = h``),
so ``Y`` says only which region ``C_Y`` of :mod:`attnlib.channels.hardmax` the Gaussian
``u ~ N(omega, V + Delta)`` fell in:

    Z_out(Y; omega) = P(u in C_Y),
    g = (E[h | Y, omega] - omega) / V = E[u - omega | u in C_Y] / (V + Delta).

``J mmse = sum_ab sigma_ab^2 E[g_ab^2] mmse = sum_ab E[zhat_ab^2]`` with ``zhat =
E[(h - omega) / sqrt(V) | Y, omega]``, computed by a nested integral: outer scrambled
Sobol points over ``(omega, h, xi)``, inner the ``n_inner`` fixed Sobol points of
``u ~ N(omega, V + Delta)`` kept when their argmax pattern is ``Y`` (exact rejection:
the posterior of ``u`` is the prior truncated to ``C_Y``). Two estimators,
``E[zhat^2]`` and (Nishimori) ``E[zhat (h - omega) / sqrt(V)]``, are averaged and
half their gap plus the outer standard error is the reported error. Outer points
whose ``n_inner`` inner points all miss ``C_Y`` (probability ``(1 - P(C_Y))^n_inner``)
are left out and counted in the error (each as the largest per-point value seen).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import channels as _channels
from attnlib import tasks as _tasks
from attnlib.channels import posterior_nested as nested

__all__ = ["hardmax_information"]


@functools.partial(jax.jit, static_argnames=("task", "chunk"))
def _nested(task, z_out, z_in, mmse, Q0, chunk):
    K, T = task.n_pairs, task.T
    sd_w, sd_v, sd_u = nested.scales(task, mmse, Q0)

    def one(z):
        omega, Y = nested.outer_sample(task, z, sd_w, sd_v)
        us = omega[None, :] + sd_u[None, :] * z_in
        hit = jnp.all(task.output(_tasks.to_matrix(us, T)) == Y[None], axis=(1, 2))
        n_hit = jnp.sum(hit)
        zbar = jnp.sum(jnp.where(hit[:, None], z_in, 0.0), axis=0) / jnp.maximum(n_hit, 1)
        zhat = (sd_v / sd_u) * zbar  # E[(h - omega) / sd_v | Y, omega]
        return jnp.sum(zhat**2), jnp.sum(zhat * z[K : 2 * K]), n_hit

    return jax.lax.map(one, z_out, batch_size=chunk)


def hardmax_information(task, mmse: float, Q0: float, n_outer: int, n_inner: int, seed: int):
    """``(J, dof, error, n_empty)`` of the hardmax channel at ``mmse`` (module docstring).

    Arguments are validated by :func:`attnlib.bayes.information`, which dispatches here
    for :class:`attnlib.tasks.Hardmax` without noise or with noise on the logits.
    """
    _channels.require_task(task, _tasks.Hardmax)
    if not mmse > 0.0:
        raise ValueError(f"mmse must be > 0 for the hardmax channel, got {mmse}")
    z_out, z_in = nested.qmc_sets(task, n_outer, n_inner, seed)
    a, b, n_hit = _nested(task, z_out, z_in, jnp.float64(mmse), jnp.float64(Q0), 64)
    a, b, n_hit = np.asarray(a), np.asarray(b), np.asarray(n_hit)
    ok = n_hit > 0
    if not np.any(ok):
        raise ValueError(f"mmse = {mmse!r}: no inner point hit the label's region; raise n_inner")
    dof = 0.5 * (a[ok].mean() + b[ok].mean())
    err = 0.5 * abs(a[ok].mean() - b[ok].mean()) + np.std(b[ok]) / np.sqrt(ok.sum())
    err += (~ok).mean() * max(a.max(), abs(b).max())
    return float(dof / mmse), float(dof), float(err / mmse), int((~ok).sum())
