"""The per-sequence loss in pairs: value, exact gradient and Hessian, closed forms.

Conventions (the ``K`` pairs ``h_ab``, the loss as a function of them): :mod:`attnlib.channels`.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import _checks
from attnlib import tasks as _tasks

__all__ = ["OutputStep", "pair_loss", "prox_objective", "pair_weights"]


class OutputStep(NamedTuple):
    """Result of the output step (leading axes ``...`` are the sequences).

    Attributes:
      h: proximal point ``h*``, ``(..., K)``.
      g: ``(h* - omega) / V``, ``(..., K)``.
      dg: diagonal derivative ``d g_ab / d omega_ab``, ``(..., K)`` (``<= 0`` at a minimum).
      loss: ``loss(Y, h*)``, ``(...)``.
    """

    h: jax.Array
    g: jax.Array
    dg: jax.Array
    loss: jax.Array


@functools.cache
def _embedding(T: int) -> np.ndarray:
    """``(T*T, K)`` 0/1 matrix ``E`` with ``vec(to_matrix(p)) = E p`` (a matmul, no scatter)."""
    ia, ib = _tasks.pair_indices(T)
    E = np.zeros((T * T, len(ia)))
    E[ia * T + ib, np.arange(len(ia))] = 1.0
    E[ib * T + ia, np.arange(len(ia))] = 1.0
    E.setflags(write=False)
    return E


def _pairs_to_matrix(p, T):
    E = _embedding(T)
    if p.shape[-1] != E.shape[1]:
        raise ValueError(f"pairs must have last axis K = {E.shape[1]} for T = {T}, got {p.shape}")
    return (p @ jnp.asarray(E.T, dtype=p.dtype)).reshape(p.shape[:-1] + (T, T))


def check_args(task, **arrays):
    """ValueError naming the argument unless ``task`` is a task and each array is numeric,
    finite (magnitude <= ``_checks.MAX_ABS``) with the trailing shape its kind requires:
    ``"labels"`` ``(..., *task.out_shape)``, ``"pairs"`` ``(..., K)``, ``"variances"`` a
    scalar or ``(..., K)`` and ``> 0``. Traced arrays: shapes only (checked before jit)."""
    _checks.task(task)
    K = _tasks.n_pairs(task.T)
    for name, (x, kind) in arrays.items():
        if not isinstance(x, jax.core.Tracer):
            x = _checks.finite_array(
                name, _checks.numeric_array(name, x, "biuf"), max_abs=_checks.MAX_ABS
            )
            if kind == "variances" and not np.all(np.asarray(x) > 0):
                raise ValueError(f"{name} must be > 0 (prox variances)")
        shape = np.shape(x)
        tail = tuple(task.out_shape) if kind == "labels" else (K,)
        if kind == "variances" and shape == ():
            continue
        if len(shape) < len(tail) or tuple(shape[len(shape) - len(tail) :]) != tail:
            raise ValueError(
                f"{name} ({kind}) must have shape (..., {', '.join(map(str, tail))}), got {shape}"
            )


def pair_loss(task: _tasks.Task, Y: jax.Array, p: jax.Array) -> jax.Array:
    """Per-sequence loss ``||Y - g(h)||^2`` as a function of the ``K`` pairs ``p``.

    ``Y`` has shape ``(..., *task.out_shape)``, ``p`` has shape ``(..., K)``;
    returns shape ``(...)``.
    """
    check_args(task, Y=(Y, "labels"), p=(p, "pairs"))
    return task.loss(Y, _pairs_to_matrix(p, task.T))


def prox_objective(task: _tasks.Task, Y, p, omega, V) -> jax.Array:
    """``loss(Y, p) + sum_ab (p_ab - omega_ab)^2 / (2 V_ab)``, shape ``(...)``."""
    check_args(task, Y=(Y, "labels"), p=(p, "pairs"), omega=(omega, "pairs"), V=(V, "variances"))
    return pair_loss(task, Y, p) + jnp.sum((p - omega) ** 2 / (2 * V), axis=-1)


def pair_weights(T: int) -> np.ndarray:
    """Multiplicity of each pair in the ``T x T`` square loss: 1 (diagonal), 2 (off-diagonal)."""
    ia, ib = _tasks.pair_indices(T)
    return np.where(ia == ib, 1.0, 2.0)


def _obj(task, y, omega, V, p):
    """Prox objective of one sequence."""
    return pair_loss(task, y, p) + jnp.sum((p - omega) ** 2 / (2 * V))


def _softmax_objective(task, Y, omega, V, P):
    """:func:`objective_batch` of Seq2Seq written out entry by entry on the batch axes
    (each logit ``h_ab`` is one pair, the rows' softmax on lists of arrays: no tiny
    trailing axes, an order of magnitude fewer passes over memory than a ``vmap``; the
    exponentials in one operation, which keeps the compiled programs small)."""
    T, K = task.T, P.shape[-1]
    pair = _pair_of(T)
    p = [P[..., k] for k in range(K)]
    lead = (slice(None),) + (None,) * (P.ndim - 2)  # Y, omega, V broadcast over candidates
    shifted = []
    for a in range(T):
        z = [task.beta * p[pair[a, b]] for b in range(T)]
        top = functools.reduce(jnp.maximum, z)
        shifted += [zb - top for zb in z]
    ex = jnp.exp(jnp.stack(shifted))
    loss = jnp.zeros_like(p[0])
    for a in range(T):
        e = [ex[a * T + b] for b in range(T)]
        den = functools.reduce(jnp.add, e)
        for b in range(T):
            loss = loss + (Y[lead + (a, b)] - e[b] / den) ** 2
    quad = functools.reduce(
        jnp.add, [(p[k] - omega[lead + (k,)]) ** 2 / (2 * V[lead + (k,)]) for k in range(K)]
    )
    return loss + quad


def objective_batch(task, Y, omega, V, P):
    """Prox objectives of a batch: ``Y`` ``(N, *out_shape)``, ``omega``, ``V`` ``(N, K)``,
    points ``P`` ``(N, K)`` or ``(N, C, K)`` (``C`` candidates per problem) -> ``(N,)`` or
    ``(N, C)``; Seq2Seq written out on the batch axes, other tasks through ``vmap``."""
    if type(task) is _tasks.Seq2Seq:
        return _softmax_objective(task, Y, omega, V, P)
    obj = jax.vmap(functools.partial(_obj, task))
    if P.ndim == 3:
        obj = jax.vmap(jax.vmap(functools.partial(_obj, task), (None, None, None, 0)))
    return obj(Y, omega, V, P)


def loss_task(task):
    """The task with its label noise removed: the loss (all the prox needs) is the same,
    and tasks differing only in noise share their compiled solvers.

    The teacher's inverse temperature ``beta0`` and ``noise_out`` are removed too: they
    only make the labels."""
    _checks.task(task)
    extra = {"beta0": None} if getattr(task, "beta0", None) is not None else {}
    if task.noise_out != 0.0:
        extra["noise_out"] = 0.0
    if task.noise == 0.0 and task.noise_on == "logits" and not extra:
        return task
    return dataclasses.replace(task, noise=0.0, noise_on="logits", **extra)


def linear_step(task, Y, omega, V) -> OutputStep:
    """Closed-form output step of :class:`~attnlib.tasks.Linear`:
    ``h* = (omega + 2 w V y) / (1 + 2 w V)`` with ``w`` = :func:`pair_weights`."""
    check_args(task, Y=(Y, "labels"), omega=(omega, "pairs"), V=(V, "variances"))
    w = jnp.asarray(pair_weights(task.T), dtype=omega.dtype)
    y = _tasks.to_pairs(Y)
    den = 1.0 + 2.0 * w * V
    h = (omega + 2.0 * w * V * y) / den
    g = 2.0 * w * (y - omega) / den
    dg = jnp.broadcast_to(-2.0 * w / den, omega.shape)
    loss = jnp.sum(w * (y - h) ** 2, axis=-1)
    return OutputStep(h=h, g=g, dg=dg, loss=loss)


def grad_hess(task, y, p):
    """Gradient and Hessian of the loss in the pairs, one sequence.

    Closed form for :class:`~attnlib.tasks.Seq2Seq` (:func:`softmax_grad_hess`, an
    order of magnitude faster than autodiff); forward-over-reverse autodiff otherwise.
    """
    if type(task) is _tasks.Seq2Seq:
        return softmax_grad_hess(task, y, p)
    gfun = jax.grad(lambda q: pair_loss(task, y, q))
    H, G = jax.jacfwd(lambda q: (gfun(q), gfun(q)), has_aux=True)(p)
    return G, 0.5 * (H + H.T)


def softmax_grad_hess(task, y, p):
    r"""Exact gradient and Hessian of ``||Y - softmax_rows(beta h)||^2`` in the pairs.

    Per row ``a`` with ``s = softmax(z)``, ``z = beta h_a``, ``r = Y_a - s``,
    ``u = r * s``, ``ubar = sum u`` and ``J = diag(s) - s s^T = ds/dz``:
    ``dL/dz = -2 (u - ubar s)`` and
    ``d2L/dz2 = 2 J^T J - 2 sum_b r_b d2 s_b/dz2``, where
    ``sum_b r_b d2 s_b / dz2 = diag(u) - u s^T - s u^T + ubar (s s^T - J)``.
    The pairs enter through ``h_ab = sum_k E_abk p_k`` (``E`` = :func:`_embedding`).
    """
    check_args(task, y=(y, "labels"), p=(p, "pairs"))
    T = task.T
    E = jnp.asarray(_embedding(T).reshape(T, T, -1), dtype=p.dtype)
    beta = task.beta
    h = jnp.einsum("abk,k->ab", E, p)
    s = jax.nn.softmax(beta * h, axis=-1)
    u = (y - s) * s
    ub = jnp.sum(u, axis=-1)
    diag = jax.vmap(jnp.diag)
    J = diag(s) - s[:, :, None] * s[:, None, :]
    M = diag(u) - u[:, :, None] * s[:, None, :] - s[:, :, None] * u[:, None, :]
    M = M + ub[:, None, None] * (s[:, :, None] * s[:, None, :] - J)
    Hz = 2.0 * jnp.einsum("abc,abd->acd", J, J) - 2.0 * M
    gz = -2.0 * (u - ub[:, None] * s)
    G = beta * jnp.einsum("ac,ack->k", gz, E)
    H = beta**2 * jnp.einsum("acd,ack,adl->kl", Hz, E, E)
    return G, 0.5 * (H + H.T)


@functools.cache
def _hessian_map(T: int) -> np.ndarray:
    """``(T^3, K^2)`` 0/1 matrix ``M`` with ``M[(a, c, d), (k, l)] = E_ack E_adl``."""
    E = _embedding(T).reshape(T, T, -1)
    M = np.einsum("ack,adl->acdkl", E, E).reshape(T**3, -1)
    M.setflags(write=False)
    return M


def _softmax_grad_hess_batch(task, Y, P):
    """:func:`softmax_grad_hess` on a batch ``Y`` ``(N, T, T)``, ``P`` ``(N, K)`` written
    with broadcasting and two matrix products (``J^T J = J^2``, ``J`` symmetric)."""
    T, beta = task.T, task.beta
    N, K = P.shape
    E = jnp.asarray(_embedding(T), dtype=P.dtype)  # (T*T, K)
    s = jax.nn.softmax(beta * (P @ E.T).reshape(N, T, T), axis=-1)
    u = (Y - s) * s
    ub = jnp.sum(u, axis=-1)
    ss = s[..., :, None] * s[..., None, :]
    eye = jnp.eye(T, dtype=P.dtype)
    s2 = s * s
    JJ = eye * s2[..., None, :] - s2[..., :, None] * s[..., None, :]
    JJ = JJ - s[..., :, None] * s2[..., None, :] + jnp.sum(s2, -1)[..., None, None] * ss
    us = u[..., :, None] * s[..., None, :]
    M = eye * u[..., None, :] - us - us.swapaxes(-1, -2)
    M = M + ub[..., None, None] * (2.0 * ss - eye * s[..., None, :])
    Hz = 2.0 * JJ - 2.0 * M
    gz = -2.0 * (u - ub[..., None] * s)
    G = beta * (gz.reshape(N, T * T) @ E)
    H = (beta**2) * (Hz.reshape(N, T**3) @ jnp.asarray(_hessian_map(T), P.dtype))
    H = H.reshape(N, K, K)
    return G, 0.5 * (H + H.swapaxes(-1, -2))


def _pair_of(T):
    """``{(a, b): k}``: the pair index of the logit ``h_ab`` (both orders)."""
    ia, ib = _tasks.pair_indices(T)
    pair = {}
    for k, (a, b) in enumerate(zip(ia, ib, strict=True)):
        pair[int(a), int(b)] = pair[int(b), int(a)] = k
    return pair


def _softmax_row(beta, y, z):
    """Per row of the softmax loss, lists of ``(N,)`` arrays: ``(dL/dz, d2L/dz2)`` with
    the formulas of :func:`softmax_grad_hess` (``z`` the row's logits without ``beta``)."""
    T = len(z)
    bz = [beta * zb for zb in z]
    top = functools.reduce(jnp.maximum, bz)
    e = [jnp.exp(zb - top) for zb in bz]
    den = functools.reduce(jnp.add, e)
    s = [eb / den for eb in e]
    u = [(y[b] - s[b]) * s[b] for b in range(T)]
    ub = functools.reduce(jnp.add, u)
    J = [[(s[c] if c == d else 0.0) - s[c] * s[d] for d in range(T)] for c in range(T)]
    gz = [-2.0 * (u[c] - ub * s[c]) for c in range(T)]
    Hz = [[None] * T for _ in range(T)]
    for c in range(T):
        for d in range(c, T):
            JJ = functools.reduce(jnp.add, [J[b][c] * J[b][d] for b in range(T)])
            M = -u[c] * s[d] - s[c] * u[d] + ub * (s[c] * s[d] - J[c][d])
            if c == d:
                M = M + u[c]
            Hz[c][d] = Hz[d][c] = 2.0 * JJ - 2.0 * M
    return gz, Hz


def _softmax_grad_hess_lists(task, Y, P):
    """:func:`softmax_grad_hess` on a batch written out entry by entry on ``(N,)``
    vectors (T <= 3: no tiny trailing axes)."""
    T, beta, K = task.T, task.beta, P.shape[-1]
    pair = _pair_of(T)
    p = [P[:, k] for k in range(K)]
    G = [jnp.zeros_like(p[0]) for _ in range(K)]
    H = [[jnp.zeros_like(p[0]) for _ in range(K)] for _ in range(K)]
    for a in range(T):
        gz, Hz = _softmax_row(
            beta, [Y[:, a, b] for b in range(T)], [p[pair[a, b]] for b in range(T)]
        )
        for c in range(T):
            G[pair[a, c]] = G[pair[a, c]] + beta * gz[c]
            for d in range(T):
                k, m = pair[a, c], pair[a, d]
                H[k][m] = H[k][m] + beta**2 * Hz[c][d]
    H = jnp.stack([jnp.stack(row, -1) for row in H], -2)
    return jnp.stack(G, -1), 0.5 * (H + H.swapaxes(-1, -2))


def grad_hess_batch(task, Y, P):
    """:func:`grad_hess` on a batch: ``Y`` ``(N, *out_shape)``, ``P`` ``(N, K)`` ->
    ``(G (N, K), H (N, K, K))``; Seq2Seq without a per-sequence ``vmap`` (written out
    entry by entry for ``T <= 3``)."""
    if type(task) is _tasks.Seq2Seq and task.T <= 3:
        return _softmax_grad_hess_lists(task, Y, P)
    if type(task) is _tasks.Seq2Seq:
        return _softmax_grad_hess_batch(task, Y, P)
    return jax.vmap(functools.partial(grad_hess, task))(Y, P)
