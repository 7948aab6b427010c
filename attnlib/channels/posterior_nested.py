r"""Pieces shared by the nested quasi-Monte Carlo channels
(:mod:`attnlib.channels.posterior_hardmax`, :mod:`attnlib.channels.posterior_level_set`).

Conventions of :mod:`attnlib.channels.posterior`: ``K`` pairs, ``sigma_ab^2 = 1 +
delta_ab``; ``omega_ab ~ N(0, sigma_ab^2 (Q0 - mmse))``, given ``omega`` the target's
pairs ``h_ab ~ N(omega_ab, V_ab)`` with ``V_ab = sigma_ab^2 mmse``, and the label is the
task's output at ``u = h + sqrt(Delta_ab) xi`` (logit noise of pair variance
``Delta_ab``: ``Delta`` for ``noise_on="logits"``, ``(Delta/2) sigma_ab^2`` for
``"target"``, :func:`logit_noise`; ``u = h`` without noise). Outer points
``z = (z_omega, z_h, z_xi)`` (``3 K`` normals with noise, ``2 K``
without); inner points ``K`` normals for ``u ~ N(omega, V + Delta)`` given ``omega``.
"""

from __future__ import annotations

import jax.numpy as jnp

from attnlib import tasks as _tasks
from attnlib.qmc import normals

__all__ = ["logit_noise", "scales", "outer_sample", "qmc_sets"]


def logit_noise(task):
    """The logit noise's variance: ``Delta`` (a float; ``noise_on="logits"``) or the
    per-pair ``(Delta/2) sigma_ab^2`` (``(K,)``; ``"target"``). ``ValueError`` naming
    ``noise_on`` for noise on the outputs (not a logit channel)."""
    if task.noise > 0 and task.noise_on == "outputs":
        raise ValueError(
            f"noise_on must be 'logits' or 'target' for this channel (noise on the logits), "
            f"got noise_on={task.noise_on!r} with noise={task.noise!r}"
        )
    if task.noise_on == "target":
        return jnp.asarray(_tasks.pair_noise_variances(task))
    return task.noise


def scales(task, mmse, Q0):
    """Per-pair standard deviations ``(sd_omega, sd_h, sd_u)``, each ``(K,)``: of
    ``omega``, of ``h`` given ``omega``, and of ``u`` given ``omega``."""
    s = jnp.sqrt(jnp.asarray(_tasks.pair_variances(task.T)))
    sd_w, sd_v = s * jnp.sqrt(jnp.maximum(Q0 - mmse, 0.0)), s * jnp.sqrt(mmse)
    return sd_w, sd_v, jnp.sqrt(sd_v**2 + logit_noise(task))


def outer_sample(task, z, sd_w, sd_v):
    """``(omega, label)`` of one outer point ``z`` (``(K,)`` and the task's output)."""
    K = task.n_pairs
    omega = sd_w * z[:K]
    h = omega + sd_v * z[K : 2 * K]
    u = h + jnp.sqrt(logit_noise(task)) * z[2 * K :] if task.noise > 0 else h
    return omega, task.output(_tasks.to_matrix(u, task.T))


def qmc_sets(task, n_outer: int, n_inner: int, seed: int):
    """Outer ``(n_outer, 2K or 3K)`` and inner ``(n_inner, K)`` scrambled Sobol normals."""
    K = task.n_pairs
    dim = 3 * K if task.noise > 0 else 2 * K
    z_out = jnp.asarray(normals(dim, n_outer, seed=seed, stream="outer", balanced=True)[0])
    z_in = jnp.asarray(normals(K, n_inner, seed=seed, stream="inner", balanced=True)[0])
    return z_out, z_in
