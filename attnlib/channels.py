r"""Output channels: the per-sequence loss in pairs and its ``K``-dimensional proximal map.

Conventions (THEORY.md sections 1 and 4):

- A sequence has ``K = T (T + 1) / 2`` pre-activation *pairs* ``h_ab``, ``a <= b``,
  ordered as in :func:`attnlib.tasks.pair_indices`; a symmetric ``T x T``
  matrix is rebuilt with :func:`attnlib.tasks.to_matrix`.
- The loss of a sequence is the task's square loss ``||Y - g(h)||^2`` summed
  over every output entry, seen as a function of the ``K`` pairs
  (:func:`pair_loss`).
- The output step of GAMP and of the state evolution, for one sequence with
  label ``Y``, mean ``omega`` (``K``) and variances ``V`` (``K``, all > 0):

      h* = argmin_h  loss(Y, h) + sum_ab (h_ab - omega_ab)^2 / (2 V_ab),
      g  = (h* - omega) / V,
      dg = diag d g / d omega = (diag[(H + D_V^{-1})^{-1} D_V^{-1}] - 1) / V,

  with ``H`` the exact Hessian of the loss in the pairs at ``h*`` and
  ``D_V = diag(V)``.

The proximal problem is non-convex for softmax tasks (softmax saturates and the
loss is flat along the global shift ``h + c 1``). The solver is a safeguarded
Newton method, vectorised over sequences with ``vmap`` and compiled once per
task (tasks are frozen, hashable dataclasses):

- direction: Newton with the Hessian of the prox objective shifted by
  ``|lambda_min| + 0.1 min(1/V)`` when it is not safely positive definite;
- step: the best point of a geometric set of step lengths along that
  direction, together with steps along ``+-`` the most negative curvature
  direction (which escapes saddle points), evaluated on the prox objective
  itself; a step is taken only if it lowers the objective (monotone descent);
- starts: ``omega``, a label-consistent point when the task has one
  (:class:`~attnlib.tasks.Seq2Seq`: the symmetric logits that reproduce ``Y``
  shifted towards ``omega``; :class:`~attnlib.tasks.Linear` has a closed form
  and needs none), and any user ``starts``; the lowest objective wins.

For :class:`~attnlib.tasks.Linear` the map is the closed form
``h* = (omega + 2 w V Y) / (1 + 2 w V)`` with ``w_ab = 1`` (diagonal) or ``2``
(off-diagonal pairs, counted twice in the ``T x T`` square loss).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import tasks as _tasks

__all__ = ["OutputStep", "pair_loss", "prox_objective", "output_step", "pair_weights"]


class OutputStep(NamedTuple):
    """Result of :func:`output_step` (leading axes ``...`` are the sequences).

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


def pair_loss(task: _tasks.Task, Y: jax.Array, p: jax.Array) -> jax.Array:
    """Per-sequence loss ``||Y - g(h)||^2`` as a function of the ``K`` pairs ``p``.

    ``Y`` has shape ``(..., *task.out_shape)``, ``p`` has shape ``(..., K)``;
    returns shape ``(...)``.
    """
    return task.loss(Y, _pairs_to_matrix(p, task.T))


@functools.cache
def _embedding(T: int) -> np.ndarray:
    """``(T*T, K)`` 0/1 matrix ``E`` with ``vec(to_matrix(p)) = E p`` (a matmul, no scatter)."""
    ia, ib = _tasks.pair_indices(T)
    E = np.zeros((T * T, len(ia)))
    E[ia * T + ib, np.arange(len(ia))] = 1.0
    E[ib * T + ia, np.arange(len(ia))] = 1.0
    return E


def _pairs_to_matrix(p, T):
    E = _embedding(T)
    if p.shape[-1] != E.shape[1]:
        raise ValueError(f"pairs must have last axis K = {E.shape[1]} for T = {T}, got {p.shape}")
    return (p @ jnp.asarray(E.T, dtype=p.dtype)).reshape(p.shape[:-1] + (T, T))


def prox_objective(task: _tasks.Task, Y, p, omega, V) -> jax.Array:
    """``loss(Y, p) + sum_ab (p_ab - omega_ab)^2 / (2 V_ab)``, shape ``(...)``."""
    return pair_loss(task, Y, p) + jnp.sum((p - omega) ** 2 / (2 * V), axis=-1)


def pair_weights(T: int) -> np.ndarray:
    """Multiplicity of each pair in the ``T x T`` square loss: 1 (diagonal), 2 (off-diagonal)."""
    ia, ib = _tasks.pair_indices(T)
    return np.where(ia == ib, 1.0, 2.0)


# ----------------------------------------------------------------------------
# Closed form: the linear task
# ----------------------------------------------------------------------------


def _linear_step(task, Y, omega, V):
    w = jnp.asarray(pair_weights(task.T), dtype=omega.dtype)
    y = _tasks.to_pairs(Y)
    den = 1.0 + 2.0 * w * V
    h = (omega + 2.0 * w * V * y) / den
    g = 2.0 * w * (y - omega) / den
    dg = jnp.broadcast_to(-2.0 * w / den, omega.shape)
    loss = jnp.sum(w * (y - h) ** 2, axis=-1)
    return OutputStep(h=h, g=g, dg=dg, loss=loss)


# ----------------------------------------------------------------------------
# Safeguarded Newton for a general task
# ----------------------------------------------------------------------------

# step lengths along the (shifted) Newton direction, and along +- the most negative
# curvature direction (in units of sqrt(max V)); the best candidate is taken.
_T_NEWTON = tuple(2.0**-k for k in (0, 1, 2, 3, 4, 6, 8, 11))
_T_CURV = (1.0, 0.25)
_ARMIJO = 1e-4


def _label_start(task, Y, omega, V):
    """A point fitting the labels exactly when one exists (Seq2Seq only), else ``None``.

    For ``Y = softmax_rows(beta h)`` with symmetric ``h``: ``log Y_ab = beta h_ab - L_a``;
    the row constants are fixed (up to a common shift) by least squares on the
    antisymmetric part ``L_a - L_b = log Y_ba - log Y_ab`` and the common shift is
    chosen to minimise the quadratic term (flat direction of the loss).
    """
    if not isinstance(task, _tasks.Seq2Seq):
        return None
    logY = jnp.log(jnp.clip(Y, 1e-12, None))
    r = logY.swapaxes(-1, -2) - logY  # r_ab = L_a - L_b
    L = jnp.mean(r, axis=-1)
    bh = 0.5 * (logY + logY.swapaxes(-1, -2)) + 0.5 * (L[..., :, None] + L[..., None, :])
    p = _tasks.to_pairs(bh / task.beta)
    shift = jnp.sum((omega - p) / V, axis=-1, keepdims=True) / jnp.sum(
        1.0 / V, axis=-1, keepdims=True
    )
    return p + shift


def _obj(task, y, omega, V, p):
    return pair_loss(task, y, p) + jnp.sum((p - omega) ** 2 / (2 * V))


def _grad_hess(task, y, p):
    """Gradient and Hessian of the loss in the pairs, one sequence.

    Closed form for :class:`~attnlib.tasks.Seq2Seq` (:func:`_softmax_grad_hess`, an
    order of magnitude faster than autodiff); forward-over-reverse autodiff otherwise.
    """
    if type(task) is _tasks.Seq2Seq:
        return _softmax_grad_hess(task, y, p)
    gfun = jax.grad(lambda q: pair_loss(task, y, q))
    H, G = jax.jacfwd(lambda q: (gfun(q), gfun(q)), has_aux=True)(p)
    return G, 0.5 * (H + H.T)


def _softmax_grad_hess(task, y, p):
    r"""Exact gradient and Hessian of ``||Y - softmax_rows(beta h)||^2`` in the pairs.

    Per row ``a`` with ``s = softmax(z)``, ``z = beta h_a``, ``r = Y_a - s``,
    ``u = r * s``, ``ubar = sum u`` and ``J = diag(s) - s s^T = ds/dz``:
    ``dL/dz = -2 (u - ubar s)`` and
    ``d2L/dz2 = 2 J^T J - 2 sum_b r_b d2 s_b/dz2``, where
    ``sum_b r_b d2 s_b / dz2 = diag(u) - u s^T - s u^T + ubar (s s^T - J)``.
    The pairs enter through ``h_ab = sum_k E_abk p_k`` (``E`` = :func:`_embedding`).
    """
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


def _newton_step(task, Y, omega, V, P, F, tol):
    """One safeguarded Newton step on a batch ``(N, K)``: ``(P_new, F_new, done, H)``.

    ``H`` is the Hessian of the prox objective at the input ``P``.

    Where every Hessian of the batch is safely positive definite (the usual case
    near a minimum) the direction comes from a Cholesky solve (and the full Newton
    step is taken directly when it decreases every objective sufficiently, with a
    lower objective than the half step); otherwise from an eigendecomposition with
    the shift ``|lambda_min| + 0.1 min(1/V)`` and extra candidates along the most
    negative curvature direction. The two branches give the same direction where
    both apply. Step: the first local minimum along the ray on a geometric grid of
    step lengths (walking out from the shortest one), else the best candidate that
    lowers the objective (monotone descent). A greedy "best of the grid" rule would
    let a start hop into another basin (e.g. from the label-consistent point back
    to the saturated region around ``omega``), defeating the multi-start.
    ``done``: no candidate lowers the
    objective, or the point is safely positive definite and the full Newton step
    is below ``sqrt(tol)`` (then taken: quadratic convergence leaves an error
    ``O(tol)``).
    """
    N, K = P.shape
    dt = P.dtype
    invV = 1.0 / V
    eps_shift = 0.1 * jnp.min(invV, axis=-1)
    G, H = jax.vmap(functools.partial(_grad_hess, task))(Y, P)
    G = G + (P - omega) * invV
    H = H + jax.vmap(jnp.diag)(invV)
    eye = jnp.eye(K, dtype=dt)
    Ls = jnp.linalg.cholesky(H - eps_shift[:, None, None] * eye)
    safe = jnp.all(jnp.isfinite(Ls), axis=(-1, -2))
    t_newton = jnp.asarray(_T_NEWTON, dtype=dt)
    t_curv = jnp.sqrt(jnp.max(V, axis=-1))[:, None] * jnp.asarray(_T_CURV, dtype=dt)[None, :]
    nn, nc = len(_T_NEWTON), len(_T_CURV)
    objv = jax.vmap(jax.vmap(functools.partial(_obj, task), (None, None, None, 0)))

    def cheap(_):
        L = jnp.linalg.cholesky(H)
        d = -jax.scipy.linalg.cho_solve((L, True), G[..., None])[..., 0]
        c1 = P + d
        f1 = jax.vmap(functools.partial(_obj, task))(Y, omega, V, c1)
        pad_c = jnp.broadcast_to(P[:, None, :], (N, nn - 1 + 2 * nc, K))
        pad_f = jnp.full((N, nn - 1 + 2 * nc), jnp.inf, dtype=dt)

        def newton_ok(_):  # full Newton step, same basin: take it
            return jnp.concatenate([c1[:, None], pad_c], 1), jnp.concatenate(
                [f1[:, None], pad_f], 1
            )

        def line_search(_):
            cands = P[:, None, :] + t_newton[None, :, None] * d[:, None, :]
            fc = objv(Y, omega, V, cands)
            return jnp.concatenate([cands, pad_c[:, nn - 1 :]], 1), jnp.concatenate(
                [fc, pad_f[:, nn - 1 :]], 1
            )

        # the full step is taken when it decreases sufficiently and the objective also
        # decreases from the half step to the full one (no hop into another basin)
        f_half = jax.vmap(functools.partial(_obj, task))(Y, omega, V, P + 0.5 * d)
        slope = jnp.sum(G * d, axis=-1)
        full_ok = (f1 <= F + _ARMIJO * slope) & (f1 <= f_half) & (f_half < F)
        cands, fc = jax.lax.cond(jnp.all(full_ok), newton_ok, line_search, None)
        return cands, fc, d

    def full(_):
        lam, U = jnp.linalg.eigh(H)
        lam0 = lam[:, 0]
        shift = jnp.where(lam0 > eps_shift, 0.0, -lam0 + eps_shift)
        Gu = jnp.einsum("nki,nk->ni", U, G)
        d = -jnp.einsum("nik,nk->ni", U, Gu / (lam + shift[:, None]))
        u0 = U[:, :, 0]
        cands = jnp.concatenate(
            [
                P[:, None, :] + t_newton[None, :, None] * d[:, None, :],
                P[:, None, :] + t_curv[:, :, None] * u0[:, None, :],
                P[:, None, :] - t_curv[:, :, None] * u0[:, None, :],
            ],
            axis=1,
        )
        fc = objv(Y, omega, V, cands)
        # curvature steps only where the Hessian is not positive definite
        fc = fc.at[:, nn:].set(jnp.where((lam0 < 0)[:, None], fc[:, nn:], jnp.inf))
        return cands, fc, d

    cands, fc, d = jax.lax.cond(jnp.all(safe), cheap, full, None)
    fc = jnp.where(jnp.isfinite(fc), fc, jnp.inf)
    # Newton step length: the first local minimum of the objective along the ray on the
    # geometric grid, walking out from the shortest step (stays in the basin of the
    # start, so that several starts explore several minima); if even the shortest step
    # does not lower the objective, the best candidate (negative-curvature steps
    # included) that does
    fa = fc[:, nn - 1 :: -1]  # Newton candidates, ascending step length
    dec = fa[:, 1:] < fa[:, :-1]
    stop = jnp.where(jnp.all(dec, axis=1), nn - 1, jnp.argmax(~dec, axis=1))
    k_newton = nn - 1 - stop
    f_newton = jnp.take_along_axis(fc, k_newton[:, None], 1)[:, 0]
    k = jnp.where(f_newton < F, k_newton, jnp.argmin(fc, axis=1))
    f_new = jnp.take_along_axis(fc, k[:, None], 1)[:, 0]
    p_best = jnp.take_along_axis(cands, k[:, None, None], 1)[:, 0]
    improved = f_new < F
    scale = 1.0 + jnp.max(jnp.abs(P), axis=-1)
    # converged: positive definite and the full Newton step is below sqrt(tol) (the
    # objective cannot resolve such steps; the error after it is O(step^2) <= tol)
    d_full = cands[:, 0] - P
    conv = safe & (jnp.max(jnp.abs(d_full), axis=-1) <= jnp.sqrt(tol) * scale)
    P_new = jnp.where(conv[:, None], cands[:, 0], jnp.where(improved[:, None], p_best, P))
    F_new = jnp.where(conv, fc[:, 0], jnp.where(improved, f_new, F))
    done = conv | ~improved
    return P_new, F_new, done, H


def _masked_step(task, Y, omega, V, P, F, done, H, tol):
    """Newton step where not ``done``; ``H`` keeps the objective's Hessian at the start
    of each problem's last step (at its final point up to ``sqrt(tol)`` once done)."""
    P2, F2, d2, H2 = _newton_step(task, Y, omega, V, P, F, tol)
    keep = done[:, None]
    return (
        jnp.where(keep, P, P2),
        jnp.where(done, F, F2),
        done | d2,
        jnp.where(keep[:, :, None], H, H2),
    )


def _best(ps, fs):
    """Best of the starts: ``ps`` (n, S, K), ``fs`` (n, S) -> (n, K), (n,)."""
    fs = jnp.where(jnp.isfinite(fs), fs, jnp.inf)
    k = jnp.argmin(fs, axis=1)
    return jnp.take_along_axis(ps, k[:, None, None], 1)[:, 0], jnp.take_along_axis(
        fs, k[:, None], 1
    )[:, 0]


def _finish_one(task, y, om, v, p):
    """``g``, ``dg`` (exact Hessian) and the loss at the prox point ``p``."""
    _, H = _grad_hess(task, y, p)
    A = H + jnp.diag(1.0 / v)
    Ainv = jnp.linalg.inv(A)
    dg = (jnp.diagonal(Ainv) / v - 1.0) / v
    return p, (p - om) / v, dg, pair_loss(task, y, p)


def _flatten_starts_impl(task, Y, omega, V, starts):
    n, S, K = starts.shape
    rep = lambda a: jnp.repeat(a, S, axis=0)  # noqa: E731
    Yr, Or, Vr = rep(Y), rep(omega), rep(V)
    P = starts.reshape(n * S, K)
    F = jax.vmap(lambda y, om, v, p: _obj(task, y, om, v, p))(Yr, Or, Vr, P)
    H = jnp.zeros((n * S, K, K), dtype=P.dtype)
    return Yr, Or, Vr, P, F, jnp.zeros(n * S, dtype=bool), H


def _finish_from_hessian_impl(task, Y, omega, V, P, H):
    """``OutputStep`` from the prox points and the objective's Hessians ``H`` there."""
    Ainv = jnp.linalg.inv(H)
    dg = (jnp.diagonal(Ainv, axis1=-2, axis2=-1) / V - 1.0) / V
    return OutputStep(h=P, g=(P - omega) / V, dg=dg, loss=pair_loss(task, Y, P))


def _finish_impl(task, Y, omega, V, P):
    h, g, dg, loss = jax.vmap(functools.partial(_finish_one, task))(Y, omega, V, P)
    return OutputStep(h=h, g=g, dg=dg, loss=loss)


@functools.partial(jax.jit, static_argnums=(0, 5, 6))
def _general_step(task, Y, omega, V, starts, max_iter, tol):
    """Multi-start safeguarded Newton (traceable: a ``while_loop`` until all are done)."""
    n, S, K = starts.shape
    Yr, Or, Vr, P, F, done, H = _flatten_starts_impl(task, Y, omega, V, starts)

    def body(st):
        *st, it = st
        return (*_masked_step(task, Yr, Or, Vr, *st, tol), it + 1)

    def cond(st):
        return jnp.logical_and(st[4] < max_iter, ~jnp.all(st[2]))

    P, F, done, H, _ = jax.lax.while_loop(cond, body, (P, F, done, H, 0))
    P, _ = _best(P.reshape(n, S, K), F.reshape(n, S))
    return _finish_impl(task, Y, omega, V, P)


# --- the same solver with compaction (concrete arrays only) ---------------------------
# Newton runs a few masked steps on every problem, then only on the unconverged ones,
# gathered into batches of a few bucketed sizes, so that a warm start costs
# about one step per problem instead of the slowest problem's count.

_FIRST_STEPS = 1
_LATER_STEPS = 1


@functools.partial(jax.jit, static_argnums=(0, 1))
def _masked_steps(task, n_steps, Y, omega, V, P, F, done, H, tol):
    def body(_, st):
        return _masked_step(task, Y, omega, V, *st, tol)

    return jax.lax.fori_loop(0, n_steps, body, (P, F, done, H))


@jax.jit
def _gather(sel, arrays):
    return tuple(a[sel] for a in arrays)


@jax.jit
def _scatter(sel, arrays, values):
    return tuple(a.at[sel].set(b) for a, b in zip(arrays, values, strict=True))


_flatten_starts = jax.jit(_flatten_starts_impl, static_argnums=(0,))
_finish = jax.jit(_finish_impl, static_argnums=(0,))
_finish_from_hessian = jax.jit(_finish_from_hessian_impl, static_argnums=(0,))


@jax.jit
def _best_of(P, F, H):
    """Best start per problem: ``P`` (n, S, K), ``F`` (n, S), ``H`` (n, S, K, K)."""
    F = jnp.where(jnp.isfinite(F), F, jnp.inf)
    k = jnp.argmin(F, axis=1)
    take = lambda a: jnp.take_along_axis(a, k.reshape((-1, 1) + (1,) * (a.ndim - 2)), 1)[:, 0]  # noqa: E731
    return take(P), take(F), take(H)


_BUCKETS = (64, 256, 2048)


def _bucket(k: int, n: int) -> int:
    """Batch size for ``k`` unconverged problems out of ``n`` (few sizes: few compilations)."""
    for b in _BUCKETS:
        if k <= b < n:
            return b
    return n


def _loss_task(task):
    """The task with its label noise removed: the loss (all the prox needs) is the same,
    and tasks differing only in noise share their compiled solvers."""
    if task.noise == 0.0 and task.noise_on == "logits":
        return task
    return dataclasses.replace(task, noise=0.0, noise_on="logits")


def _compact_minimize(task, Y, omega, V, starts, max_iter, tol):
    """Best prox point over the starts: ``P`` (n, K), objective ``F`` (n,), Hessian ``H``.

    ``H`` (n, K, K) is the prox objective's Hessian at ``P`` up to a last Newton step of
    relative size ``<= sqrt(tol)``; :func:`_finish` recomputes it exactly at ``P``.
    """
    task = _loss_task(task)
    n, S, K = starts.shape
    N = n * S
    Yr, Or, Vr, P, F, done, H = _flatten_starts(task, Y, omega, V, starts)
    M = next((b for b in _BUCKETS if N <= b), N)
    if M > N:  # small problems: pad (as done) to a bucket size, to reuse its compilation
        sel = jnp.asarray(np.concatenate([np.arange(N), np.zeros(M - N, dtype=int)]))
        Yr, Or, Vr, P, F, done, H = _gather(sel, (Yr, Or, Vr, P, F, done, H))
        done = done.at[N:].set(True)
    tol = jnp.asarray(tol, dtype=P.dtype)
    steps = min(_FIRST_STEPS, max_iter)
    st = _masked_steps(task, steps, Yr, Or, Vr, P, F, done, H, tol)
    while steps < max_iter:
        idx = np.flatnonzero(~np.asarray(st[2]))
        if idx.size == 0:
            break
        size = _bucket(idx.size, M)
        ns = min(_LATER_STEPS, max_iter - steps)
        if size == M:
            st = _masked_steps(task, ns, Yr, Or, Vr, *st, tol)
        else:
            sel = jnp.asarray(np.concatenate([idx, np.full(size - idx.size, idx[0])]))
            sub = _gather(sel, (Yr, Or, Vr, *st))
            st = _scatter(sel, st, _masked_steps(task, ns, *sub, tol))
        steps += ns
    P, F, _, H = (a[:N] for a in st)
    if S == 1:
        return P, F, H
    return _best_of(P.reshape(n, S, K), F.reshape(n, S), H.reshape(n, S, K, K))


def _compact_step(task, Y, omega, V, starts, max_iter, tol):
    P, _, _ = _compact_minimize(task, Y, omega, V, starts, max_iter, tol)
    return _finish(_loss_task(task), Y, omega, V, P)


@functools.partial(jax.jit, static_argnums=(0,))
def _linear_jit(task, Y, omega, V):
    return _linear_step(task, Y, omega, V)


def _is_concrete(x) -> bool:
    return not isinstance(x, jax.core.Tracer)


def output_step(
    task: _tasks.Task,
    Y,
    omega,
    V,
    *,
    starts=None,
    max_iter: int = 100,
    tol: float = 1e-12,
) -> OutputStep:
    r"""Proximal map of the per-sequence loss and its derivatives, for ``n`` sequences.

    Args:
      task: an :class:`attnlib.tasks.Task` (frozen, hashable: one compilation per task).
      Y: labels, shape ``(n, *task.out_shape)``.
      omega: prox centres, shape ``(n, K)``.
      V: prox variances, ``(K,)`` or ``(n, K)``, all ``> 0``.
      starts: optional extra Newton starting points, ``(n, K)`` or ``(n, S, K)``
        (e.g. the noisy logits that generated ``Y`` in the state evolution).
      max_iter: Newton iterations per start (safeguarded, monotone).
      tol: relative step size at which Newton stops (at a positive-definite point).

    Returns:
      :class:`OutputStep` with ``h, g, dg`` of shape ``(n, K)`` and ``loss`` of shape ``(n,)``.

    The :class:`~attnlib.tasks.Linear` task uses its closed form.
    """
    K = task.n_pairs
    omega = jnp.asarray(omega, dtype=jnp.float64)
    Y = jnp.asarray(Y, dtype=jnp.float64)
    V = jnp.asarray(V, dtype=jnp.float64)
    if omega.ndim != 2 or omega.shape[1] != K:
        raise ValueError(f"omega must have shape (n, K={K}), got {omega.shape}")
    n = omega.shape[0]
    out_shape = task.out_shape
    if Y.shape != (n, *out_shape):
        raise ValueError(f"Y must have shape (n, *out_shape) = {(n, *out_shape)}, got {Y.shape}")
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
    V = jnp.broadcast_to(V, (n, K))
    if isinstance(task, _tasks.Linear):
        return _linear_jit(task, Y, omega, V)
    st = [omega[:, None, :]]
    lab = _label_start(task, Y, omega, V)
    if lab is not None:
        st.append(lab[:, None, :])
    if starts is not None:
        starts = jnp.asarray(starts, dtype=jnp.float64)
        if starts.ndim == 2:
            starts = starts[:, None, :]
        if starts.ndim != 3 or starts.shape[0] != n or starts.shape[2] != K:
            raise ValueError(f"starts must have shape (n, K) or (n, S, K) with n={n}, K={K}")
        st.append(starts)
    st = jnp.concatenate(st, axis=1)
    if all(_is_concrete(a) for a in (Y, omega, V, st)):
        return _compact_step(task, Y, omega, V, st, int(max_iter), float(tol))
    return _general_step(_loss_task(task), Y, omega, V, st, int(max_iter), float(tol))
