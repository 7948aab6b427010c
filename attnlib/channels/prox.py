"""The proximal solve of the output channel, jitted, and the output step built on it.

For one sequence with label ``Y``, mean ``omega`` (``K``) and variances ``V`` (``K``,
all > 0) the output step of GAMP and of the state evolution is

    h* = argmin_h  loss(Y, h) + sum_ab (h_ab - omega_ab)^2 / (2 V_ab),
    g  = (h* - omega) / V,
    dg = diag d g / d omega = (diag[(H + D_V^{-1})^{-1} D_V^{-1}] - 1) / V,

with ``H`` the exact Hessian of the loss in the pairs at ``h*`` and ``D_V = diag(V)``.
:func:`prox` runs the safeguarded Newton method of :mod:`attnlib.channels.newton` from
every start (one ``lax.while_loop`` over the whole batch until every problem is done)
and keeps the lowest objective. :func:`output_step` adds the starts ``omega`` and the
label-consistent point (Seq2Seq) and the derivatives.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import channels
from attnlib import tasks as _tasks
from attnlib.channels import small
from attnlib.channels.losses import (
    OutputStep,
    check_args,
    grad_hess_batch,
    loss_task,
    objective_batch,
    pair_loss,
)
from attnlib.channels.newton import Batch, masked_step

__all__ = ["Prox", "prox", "finish", "output_step", "label_start", "target_derivative"]


class Prox(NamedTuple):
    """Result of :func:`prox`: best point ``h`` (n, K), its objective (n,), Newton steps run."""

    h: jax.Array
    objective: jax.Array
    n_steps: jax.Array


def prox(task: _tasks.Task, Y, omega, V, starts, *, tol=1e-12, max_iter: int = 100) -> Prox:
    """Multi-start safeguarded Newton on the prox objective (jitted; ``task`` static).

    Args:
      task: the task (its label noise is irrelevant here).
      Y: labels ``(n, *task.out_shape)``; omega: centres ``(n, K)``; V: variances ``(n, K)``.
      starts: ``(n, S, K)`` starting points; the lowest final objective wins.
      tol: Newton stops at a positive-definite point once its full step is below
        ``sqrt(tol)`` relative (quadratic convergence: error ``O(tol)``).
      max_iter: maximal number of Newton steps (the batch runs until all are done).
    """
    check_args(task, Y=(Y, "labels"), omega=(omega, "pairs"), V=(V, "variances"))
    check_args(task, starts=(starts, "pairs"))
    if np.ndim(starts) != 3:
        raise ValueError(f"starts must have shape (n, S, K), got {np.shape(starts)}")
    n = np.shape(starts)[0]
    for name, x in (("Y", Y), ("omega", omega), ("V", V)):
        if np.ndim(x) < (1 if name == "Y" else 2) or np.shape(x)[0] != n:
            raise ValueError(f"{name} must have n = len(starts) = {n} rows, got {np.shape(x)}")
    return channels.for_task(task).prox(Y, omega, V, starts, tol=tol, max_iter=max_iter)


@functools.partial(jax.jit, static_argnames=("task", "max_iter"))
def _prox_jit(task, Y, omega, V, starts, *, tol, max_iter) -> Prox:
    task = loss_task(task)
    n, S, K = starts.shape
    rep = lambda a: jnp.repeat(a, S, axis=0)  # noqa: E731
    Yr, Or, Vr = rep(Y), rep(omega), rep(V)
    P = starts.reshape(n * S, K)
    F = objective_batch(task, Yr, Or, Vr, P)
    H = jnp.zeros((n * S, K, K), dtype=P.dtype)
    tol = jnp.asarray(tol, dtype=P.dtype)
    done = jnp.zeros(n * S, dtype=bool)
    (P, F, _, _), it = _newton_stages(task, Batch(Yr, Or, Vr), (P, F, done, H), tol, max_iter)
    F = jnp.where(jnp.isfinite(F), F, jnp.inf).reshape(n, S)
    k = jnp.argmin(F, axis=1)
    h = jnp.take_along_axis(P.reshape(n, S, K), k[:, None, None], 1)[:, 0]
    return Prox(h, jnp.take_along_axis(F, k[:, None], 1)[:, 0], it)


# After the whole batch, Newton goes on with the slowest N/8, then N/64 problems (those not
# yet done, gathered with a stable argsort): fixed shapes inside jit, and a few slow
# problems no longer cost a step of the whole batch each.
_STAGES = (8, 64)
_MIN_STAGE = 64


def _newton_loop(task, b: Batch, st, tol, *, it0, max_iter, keep_going_above):
    """Masked Newton steps from the count ``it0`` until at most ``keep_going_above``
    problems are left or ``max_iter``."""

    def body(c):
        st, it = c
        return masked_step(task, b, st, tol), it + 1

    def cond(c):
        st, it = c
        return (it < max_iter) & (jnp.sum(~st[2]) > keep_going_above)

    return jax.lax.while_loop(cond, body, (st, it0))


def _newton_stages(task, b: Batch, st, tol, max_iter):
    """Newton on the whole batch, then on shrinking sets of unfinished problems."""
    N = st[0].shape[0]
    sizes = [N] + [N // f for f in _STAGES if N // f >= _MIN_STAGE]
    it = jnp.asarray(0)
    for i, M in enumerate(sizes):
        nxt = sizes[i + 1] if i + 1 < len(sizes) else 0
        stages = dict(it0=it, max_iter=max_iter, keep_going_above=nxt)
        if M == N:
            st, it = _newton_loop(task, b, st, tol, **stages)
            continue
        idx = jnp.argsort(st[2], stable=True)[:M]  # unfinished problems first
        sub_b = Batch(*(a[idx] for a in b))
        sub, it = _newton_loop(task, sub_b, tuple(a[idx] for a in st), tol, **stages)
        st = tuple(a.at[idx].set(x) for a, x in zip(st, sub, strict=True))
    return st, it


def _finish_batch(task, Y, omega, V, h):
    G, H = grad_hess_batch(task, Y, h)
    A = H + jax.vmap(jnp.diag)(1.0 / V)
    inv_diag, pd = small.inv_diag(A)
    dg = (inv_diag / V - 1.0) / V
    # strict local minimum with a small gradient (single entries of dg may be > 0)
    grad = G + (h - omega) / V
    scale = 1.0 + jnp.max(jnp.abs(h - omega) / V, axis=-1)
    ok = pd & (jnp.max(jnp.abs(grad), axis=-1) <= 1e-7 * scale)
    loss = pair_loss(task, Y, h)
    return (h, (h - omega) / V, dg, loss), ok


def finish(task: _tasks.Task, Y, omega, V, h):
    """``(OutputStep, ok)`` at prox points ``h``: ``g``, ``dg`` from the exact Hessian, the
    loss, and ``ok`` (n,) where ``h`` is a strict local minimum with a small gradient.

    ``Y`` ``(n, *task.out_shape)``; ``omega``, ``V``, ``h`` ``(n, K)`` (jitted; ``task`` static).
    """
    check_args(task, Y=(Y, "labels"), omega=(omega, "pairs"), V=(V, "variances"))
    check_args(task, h=(h, "pairs"))
    n = np.shape(omega)[0] if np.ndim(omega) == 2 else None
    for name, x in (("omega", omega), ("V", V), ("h", h)):
        if np.ndim(x) != 2 or np.shape(x)[0] != n:
            raise ValueError(
                f"{name} must have shape (n, K) with n = len(omega), got {np.shape(x)}"
            )
    if np.ndim(Y) < 1 or np.shape(Y)[0] != n:
        raise ValueError(f"Y must have n = len(omega) = {n} rows, got shape {np.shape(Y)}")
    return channels.for_task(task).finish(Y, omega, V, h)


@functools.partial(jax.jit, static_argnames=("task",))
def _finish_jit(task, Y, omega, V, h):
    task = loss_task(task)
    (h, g, dg, loss), ok = _finish_batch(task, Y, omega, V, h)
    return OutputStep(h=h, g=g, dg=dg, loss=loss), ok


def target_derivative(channel, h, h0, xi, V):
    r"""``diag d g / d h0`` ``(n, K)`` at prox points ``h`` ``(n, K)``: how the output
    step moves with the target pairs ``h0`` ``(n, K)`` through the labels
    ``channel.labels(h0, xi)`` (noise normals ``xi`` ``(n, noise_dim)``, held fixed)
    at fixed ``omega``, variances ``V`` ``(n, K)``. At a strict local minimum ``h`` of
    the prox objective ``L(Y(h0), h) + |h - omega|^2 / 2V`` the implicit function
    theorem gives ``d h / d h0 = -(H + D_V^{-1})^{-1} d_h0 grad_h L`` (``H`` the loss's
    Hessian in ``h``) and ``g = (h - omega) / V``. Exact where ``h`` does not jump
    between minima as ``h0`` moves. Traceable (``channel`` a static, hashable
    :class:`attnlib.channels.Channel` whose labels and loss are differentiable); batched:
    one Hessian, ``K`` forward derivatives of the gradient and ``K`` small solves."""
    task = loss_task(channel.task)
    n, K = h.shape

    def grad_of(h0):
        Y, _ = channel.labels(h0, xi)
        return jax.grad(lambda p: jnp.sum(pair_loss(task, Y, p)))(h)

    Y, _ = channel.labels(h0, xi)
    A = grad_hess_batch(task, Y, h)[1] + jax.vmap(jnp.diag)(1.0 / V)
    L = small.cholesky(A)
    _, dgrad = jax.linearize(grad_of, h0)
    cols = []
    for k in range(K):
        e = jnp.zeros((n, K), dtype=h.dtype).at[:, k].set(1.0)
        cols.append(small.cho_solve(L, dgrad(e))[:, k])
    return -jnp.stack(cols, axis=-1) / V


def _is_concrete(x) -> bool:
    return not isinstance(x, jax.core.Tracer)


def _check_step_args(task, Y, omega, V, max_iter, tol):
    K = task.n_pairs
    if omega.ndim != 2 or omega.shape[1] != K:
        raise ValueError(f"omega must have shape (n, K={K}), got {omega.shape}")
    n = omega.shape[0]
    if Y.shape != (n, *task.out_shape):
        raise ValueError(
            f"Y must have shape (n, *out_shape) = {(n, *task.out_shape)}, got {Y.shape}"
        )
    if V.shape not in ((K,), (n, K)):
        raise ValueError(f"V must have shape (K,) = ({K},) or (n, K) = {(n, K)}, got {V.shape}")
    if _is_concrete(V) and not bool(np.all(np.asarray(V) > 0) and np.all(np.isfinite(V))):
        raise ValueError("V must be finite and > 0 (prox variances)")
    if _is_concrete(omega) and not bool(np.all(np.isfinite(np.asarray(omega)))):
        raise ValueError("omega contains NaN or inf")
    if not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"max_iter must be an integer >= 1, got {max_iter!r}")
    if not (float(tol) > 0):
        raise ValueError(f"tol must be > 0, got {tol!r}")


def label_start(task, Y, omega, V):
    """A point fitting the labels exactly when one is known (the task's channel:
    Seq2Seq), else ``None``; ``Y`` ``(n, *task.out_shape)``, ``omega``, ``V`` ``(n, K)``."""
    check_args(task, Y=(Y, "labels"), omega=(omega, "pairs"), V=(V, "variances"))
    return channels.for_task(task).label_start(Y, omega, V)


def _all_starts(channel, Y, omega, V, starts):
    n, K = omega.shape
    st = [omega[:, None, :]]
    lab = channel.label_start(Y, omega, V)
    if lab is not None:
        st.append(lab[:, None, :])
    if starts is not None:
        starts = jnp.asarray(starts, dtype=jnp.float64)
        if starts.ndim == 2:
            starts = starts[:, None, :]
        if starts.ndim != 3 or starts.shape[0] != n or starts.shape[2] != K:
            raise ValueError(f"starts must have shape (n, K) or (n, S, K) with n={n}, K={K}")
        st.append(starts)
    return jnp.concatenate(st, axis=1)


def output_step(
    task: _tasks.Task, Y, omega, V, *, starts=None, max_iter: int = 100, tol: float = 1e-12
) -> OutputStep:
    r"""Proximal map of the per-sequence loss and its derivatives, for ``n`` sequences.

    Args:
      task: an :class:`attnlib.tasks.Task` (frozen, hashable: one compilation per task).
      Y: labels, shape ``(n, *task.out_shape)``.
      omega: prox centres, shape ``(n, K)``.
      V: prox variances, ``(K,)`` or ``(n, K)``, all ``> 0``.
      starts: optional extra Newton starting points, ``(n, K)`` or ``(n, S, K)``
        (e.g. the noisy logits that generated ``Y`` in the state evolution); ``omega``
        and (Seq2Seq) the label-consistent point are always tried.
      max_iter: Newton iterations per start (safeguarded, monotone).
      tol: relative step size at which Newton stops (at a positive-definite point).

    Returns:
      :class:`OutputStep` with ``h, g, dg`` of shape ``(n, K)`` and ``loss`` of shape ``(n,)``.

    The :class:`~attnlib.tasks.Linear` task uses its closed form;
    :class:`~attnlib.tasks.Hardmax` the exact enumeration of :mod:`attnlib.channels.hardmax`
    (``dg`` is then the almost-everywhere derivative, without the jump part).
    """
    check_args(task, Y=(Y, "labels"), omega=(omega, "pairs"), V=(V, "variances"))
    omega = jnp.asarray(omega, dtype=jnp.float64)
    Y = jnp.asarray(Y, dtype=jnp.float64)
    V = jnp.asarray(V, dtype=jnp.float64)
    _check_step_args(task, Y, omega, V, max_iter, tol)
    V = jnp.broadcast_to(V, omega.shape)
    return channels.for_task(task).output_step(Y, omega, V, starts, tol=tol, max_iter=max_iter)
