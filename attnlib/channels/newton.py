"""Safeguarded Newton steps on a batch of ``K``-dimensional prox problems.

The proximal problem is non-convex for softmax tasks (softmax saturates and the loss
is flat along the global shift ``h + c 1``); plain or Hessian-shifted Newton lands on
saddles there. The safeguards:

- direction: Newton with the Hessian of the prox objective shifted by
  ``|lambda_min| + 0.1 min(1/V)`` when it is not safely positive definite;
- step: on a geometric set of step lengths along that direction, the first local
  minimum of the objective walking out from the shortest step (the step stays in the
  basin of its start, so that several starts explore several minima), together with
  steps along ``+-`` the most negative curvature direction (which escape saddle
  points); a step is taken only if it lowers the objective (monotone descent).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from attnlib.channels import small
from attnlib.channels.losses import grad_hess_batch, objective_batch

__all__ = ["Batch", "newton_step", "masked_step"]

# step lengths along the (shifted) Newton direction, and along +- the most negative
# curvature direction (in units of sqrt(max V)); the best candidate is taken.
_T_NEWTON = tuple(2.0**-k for k in (0, 1, 2, 3, 4, 6, 8, 11))
_T_CURV = (1.0, 0.25)
_ARMIJO = 1e-4


class Batch(NamedTuple):
    """A batch of prox problems: labels ``Y`` (N, ...), centres ``omega`` and variances
    ``V`` (N, K)."""

    Y: jax.Array
    omega: jax.Array
    V: jax.Array


def _cheap_step(task, b: Batch, P, F, G, H, *, tol, active):
    """Positive-definite batch: Cholesky direction; the full step alone when it decreases
    every ``active`` objective sufficiently (and more than the half step) or is below
    the convergence size (then both branches take it), else the step grid.
    Returns ``(P_new, F_new, done)`` as :func:`_finish_step`."""
    Y, omega, V = b
    N, K = P.shape
    dt = P.dtype
    nc = len(_T_CURV)
    d = -small.cho_solve(small.cholesky(H), G)
    c1 = P + d
    f1 = objective_batch(task, Y, omega, V, c1)
    f_half = objective_batch(task, Y, omega, V, P + 0.5 * d)
    conv = _converged(P, c1, jnp.ones(N, dtype=bool), tol)

    def newton_ok(_):
        # full Newton step, same basin: take it. This is what _finish_step returns for
        # the candidates (c1, then P padded with objective inf): f1 is finite here.
        take = conv | (f1 < F)
        return jnp.where(take[:, None], c1, P), jnp.where(take, f1, F), ~take | conv

    def line_search(_):  # the steps 1 and 1/2 are already evaluated: f1, f_half
        t_newton = jnp.asarray(_T_NEWTON, dtype=dt)
        cands = P[:, None, :] + t_newton[None, :, None] * d[:, None, :]
        rest = objective_batch(task, Y, omega, V, cands[:, 2:])
        fc = jnp.concatenate([f1[:, None], f_half[:, None], rest], 1)
        cands = jnp.concatenate([cands, jnp.broadcast_to(P[:, None, :], (N, 2 * nc, K))], 1)
        fc = jnp.concatenate([fc, jnp.full((N, 2 * nc), jnp.inf, dtype=dt)], 1)
        return _finish_step(cands, fc, P, F, jnp.ones(N, dtype=bool), tol)

    slope = jnp.sum(G * d, axis=-1)
    full_ok = (f1 <= F + _ARMIJO * slope) & (f1 <= f_half) & (f_half < F)
    # problems already done (masked by the caller) and converged steps do not decide:
    # at a minimum the full step cannot decrease the objective
    full_ok = full_ok | ~active | conv
    return jax.lax.cond(jnp.all(full_ok), newton_ok, line_search, None)


def _full_candidates(task, b: Batch, P, G, H, eps_shift):
    """Eigendecomposition: shifted Newton direction and negative-curvature steps."""
    Y, omega, V = b
    dt = P.dtype
    nn = len(_T_NEWTON)
    lam, U = jnp.linalg.eigh(H)
    lam0 = lam[:, 0]
    shift = jnp.where(lam0 > eps_shift, 0.0, -lam0 + eps_shift)
    Gu = jnp.einsum("nki,nk->ni", U, G)
    d = -jnp.einsum("nik,nk->ni", U, Gu / (lam + shift[:, None]))
    u0 = U[:, :, 0]
    t_newton = jnp.asarray(_T_NEWTON, dtype=dt)
    t_curv = jnp.sqrt(jnp.max(V, axis=-1))[:, None] * jnp.asarray(_T_CURV, dtype=dt)[None, :]
    cands = jnp.concatenate(
        [
            P[:, None, :] + t_newton[None, :, None] * d[:, None, :],
            P[:, None, :] + t_curv[:, :, None] * u0[:, None, :],
            P[:, None, :] - t_curv[:, :, None] * u0[:, None, :],
        ],
        axis=1,
    )
    fc = objective_batch(task, Y, omega, V, cands)
    # curvature steps only where the Hessian is not positive definite
    fc = fc.at[:, nn:].set(jnp.where((lam0 < 0)[:, None], fc[:, nn:], jnp.inf))
    return cands, fc


def _select(cands, fc, F):
    """Newton step length: the first local minimum along the ray on the geometric grid,
    walking out from the shortest step; if even the shortest step does not lower the
    objective, the best candidate (negative-curvature steps included) that does."""
    nn = len(_T_NEWTON)
    fc = jnp.where(jnp.isfinite(fc), fc, jnp.inf)
    fa = fc[:, nn - 1 :: -1]  # Newton candidates, ascending step length
    dec = fa[:, 1:] < fa[:, :-1]
    stop = jnp.where(jnp.all(dec, axis=1), nn - 1, jnp.argmax(~dec, axis=1))
    k_newton = nn - 1 - stop
    f_newton = jnp.take_along_axis(fc, k_newton[:, None], 1)[:, 0]
    k = jnp.where(f_newton < F, k_newton, jnp.argmin(fc, axis=1))
    f_new = jnp.take_along_axis(fc, k[:, None], 1)[:, 0]
    p_best = jnp.take_along_axis(cands, k[:, None, None], 1)[:, 0]
    return p_best, f_new, fc


def _converged(P, c1, safe, tol):
    """Safely positive definite and the full Newton step ``c1 - P`` below ``sqrt(tol)``."""
    scale = 1.0 + jnp.max(jnp.abs(P), axis=-1)
    return safe & (jnp.max(jnp.abs(c1 - P), axis=-1) <= jnp.sqrt(tol) * scale)


def _finish_step(cands, fc, P, F, safe, tol):
    """``(P_new, F_new, done)`` from the candidates (the full Newton step first)."""
    p_best, f_new, fc = _select(cands, fc, F)
    improved = f_new < F
    conv = _converged(P, cands[:, 0], safe, tol)
    P_new = jnp.where(conv[:, None], cands[:, 0], jnp.where(improved[:, None], p_best, P))
    F_new = jnp.where(conv, fc[:, 0], jnp.where(improved, f_new, F))
    return P_new, F_new, conv | ~improved


def newton_step(task, b: Batch, P, F, tol, *, active):
    """One safeguarded Newton step on a batch ``(N, K)``: ``(P_new, F_new, done, H)``.

    ``active`` (N,): the problems whose step is used; the others do not
    decide between the full step and the step grid.

    ``H`` is the Hessian of the prox objective at the input ``P``. Where every Hessian
    of the batch is safely positive definite the direction comes from a Cholesky solve,
    otherwise from an eigendecomposition (same direction where both apply).
    ``done``: no candidate lowers the objective, or the point is safely positive
    definite and the full Newton step is below ``sqrt(tol)`` (then taken: quadratic
    convergence leaves an error ``O(tol)``).
    """
    Y, omega, V = b
    K = P.shape[1]
    invV = 1.0 / V
    eps_shift = 0.1 * jnp.min(invV, axis=-1)
    G, H = grad_hess_batch(task, Y, P)
    G = G + (P - omega) * invV
    H = H + jax.vmap(jnp.diag)(invV)
    Ls = small.cholesky(H - eps_shift[:, None, None] * jnp.eye(K, dtype=P.dtype))
    safe = jnp.all(jnp.isfinite(Ls), axis=(-1, -2))

    def general(_):
        cands, fc = _full_candidates(task, b, P, G, H, eps_shift)
        return _finish_step(cands, fc, P, F, safe, tol)

    def cheap(_):
        return _cheap_step(task, b, P, F, G, H, tol=tol, active=active)

    P_new, F_new, done = jax.lax.cond(jnp.all(safe | ~active), cheap, general, None)
    return P_new, F_new, done, H


def masked_step(task, b: Batch, state, tol):
    """Newton step where not ``done``, on ``state = (P, F, done, H)``; ``H`` keeps the
    objective's Hessian at the start of each problem's last step."""
    P, F, done, H = state
    P2, F2, d2, H2 = newton_step(task, b, P, F, tol, active=~done)
    keep = done[:, None]
    return (
        jnp.where(keep, P, P2),
        jnp.where(done, F, F2),
        done | d2,
        jnp.where(keep[:, :, None], H, H2),
    )
