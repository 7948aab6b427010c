"""Accelerated proximal gradient (FISTA) on ``S``: the reference ERM solver."""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import _checks
from attnlib.spectral_map import check_penalty
from attnlib.tasks import Dataset, Task
from attnlib.train.objective import _curvature, _objective_jit, _penalty, _value_and_sym_grad
from attnlib.train.progress import Progress
from attnlib.train.proximal import _prox
from attnlib.train.result import TrainResult, _finish, _Run
from attnlib.train.settings import TrainSettings, resolve

__all__ = ["train_convex"]


class _FistaState(NamedTuple):
    x: jax.Array  # current iterate
    x_prev: jax.Array
    theta: jax.Array  # momentum parameter
    L: jax.Array  # current Lipschitz estimate
    Fx: jax.Array  # objective at x


class _Static(NamedTuple):
    """Compile-time settings of :func:`_fista_chunk`."""

    task: object
    penalty: str
    chunk: int


@functools.partial(jax.jit, static_argnames=("static",))
def _fista_chunk(static: _Static, state: _FistaState, X, Y, lam):
    """``static.chunk`` FISTA iterations; returns the new state and the objective values."""
    task, penalty = static.task, static.penalty
    d = state.x.shape[0]
    vg = functools.partial(_value_and_sym_grad.__wrapped__, task, X, Y)
    # penalty in the prox: nuclear ``d lam Tr S`` -> threshold d lam / L;
    # Frobenius ``d (lam/2)||S||^2`` -> shrink factor 1 + d lam / L.
    pen = functools.partial(_penalty, lam=lam, penalty=penalty)

    def step(st: _FistaState, _):
        theta_next = (1 + jnp.sqrt(1 + 4 * st.theta**2)) / 2
        y = st.x + ((st.theta - 1.0) / theta_next) * (st.x - st.x_prev)
        fy, gy = vg(y)

        # backtracking: the first trial uses 0.9 L (the estimate may shrink slowly
        # where the curvature is smaller), then L doubles until both tests pass:
        # sufficient decrease f(z) <= f(y) + <g, dz> + L/2 |dz|^2 (up to rounding
        # errors of f) and its gradient form <grad f(z) - grad f(y), dz> <= L |dz|^2,
        # which stays accurate when |dz| is too small for differences of f.
        def cond(c):
            return (~c[3]) & (c[4] < 60)

        def body(c):
            L = jnp.where(c[4] == 0, c[0], 2.0 * c[0])
            z = _prox(y - gy / L, d * lam / L, penalty)
            dz = z - y
            fz, gz = vg(z)
            dz2 = jnp.sum(dz * dz)
            ok_f = fz - fy <= jnp.sum(gy * dz) + 0.5 * L * dz2 + 1e-13 * jnp.abs(fy)
            ok_g = jnp.sum((gz - gy) * dz) <= L * dz2
            return L, z, fz, ok_f & ok_g, c[4] + 1

        init = (0.9 * st.L, y, fy, jnp.asarray(False), 0)
        L, z, fz, _, _ = jax.lax.while_loop(cond, body, init)
        Fz = fz + pen(z)
        # monotone safeguard: if the momentum step increased the objective, restart
        # from x without momentum (the next step is a plain proximal-gradient step);
        # the slack of a few rounding errors matters only at the floor of float64.
        worse = Fz > st.Fx + 1e-13 * jnp.abs(st.Fx)
        # gradient-based adaptive restart (O'Donoghue and Candes)
        restart = jnp.sum((y - z) * (z - st.x)) > 0
        x_new = jnp.where(worse, st.x, z)
        x_prev = jnp.where(worse | restart, x_new, st.x)
        theta = jnp.where(worse | restart, 1.0, theta_next)
        Fx = jnp.where(worse, st.Fx, Fz)
        return _FistaState(x_new, x_prev, theta, L, Fx), Fx

    return jax.lax.scan(step, state, None, length=static.chunk)


def _gradient_mapping(static: _Static, S, L, X, Y, lam) -> float:
    d = S.shape[0]
    g = _value_and_sym_grad(static.task, X, Y, S)[1]
    T = _prox(S - g / L, d * lam / L, static.penalty)
    denom = max(float(jnp.linalg.norm(S)), float(jnp.linalg.norm(g)) / L, 1e-300)
    return float(jnp.linalg.norm(S - T)) / denom


def _initial_state(static: _Static, X, Y, S_init, lam_j) -> _FistaState:
    d = X.shape[2]
    if S_init is None:
        x = jnp.zeros((d, d), jnp.float64)
    else:
        S = _checks.square_matrix("S_init", S_init, d, symmetric=True)
        x = _prox(jnp.asarray(S, jnp.float64), 0.0, static.penalty)
    L = jnp.asarray(_curvature(static.task, X, Y, x), jnp.float64)
    Fx = _objective_jit(static.task, X, Y, x, lam_j, static.penalty)
    return _FistaState(x, x, jnp.asarray(1.0), L, Fx)


def _iterate(static: _Static, state, X, Y, lam, *, max_iter, tol, progress):
    """FISTA chunks on the data ``(X, Y)`` until the gradient mapping is below ``tol``,
    ``max_iter``, the time limit or a non-finite gradient mapping (a breakdown, for
    :func:`_finish` to report): ``(state, history, done, residual)``."""
    lam_j = jnp.asarray(lam, jnp.float64)
    history, done, residual = [], 0, math.inf
    while done < max_iter:
        state, values = _fista_chunk(static, state, X, Y, lam_j)
        done += static.chunk
        history.append(np.asarray(values))
        residual = _gradient_mapping(static, state.x, float(state.L), X, Y, lam)
        if not math.isfinite(residual) or residual < tol or progress.stop(done, residual):
            break
    return state, history, done, residual


def train_convex(
    task: Task,
    data: Dataset,
    lam: float,
    *,
    penalty: str = "nuclear",
    settings: TrainSettings | None = None,
    max_iter: int | None = None,
    tol: float | None = None,
    chunk: int | None = None,
    S_init=None,
    time_limit: float | None = None,
) -> TrainResult:
    r"""Accelerated proximal gradient on ``S`` (float64), the reference ERM solver.

    Nuclear: ``min_{S PSD} L(S) + d lam Tr S`` with the proximal map
    :func:`prox_nuclear_psd`; Frobenius: ``min_S L(S) + d (lam/2)||S||_F^2`` with
    :func:`prox_frobenius`. FISTA with backtracking on the Lipschitz constant
    (initialised by power iteration on the Hessian, allowed to shrink by 10 % per
    step), a monotone safeguard (a step that increases the objective is undone
    and the momentum reset) and gradient-based adaptive restart. For the softmax
    tasks ``L`` is not convex in ``S``; the solver then returns a stationary point
    reached monotonically from ``S_init``.

    Convergence: the relative gradient mapping (:attr:`TrainResult.residual`) every
    ``chunk`` iterations; ``tol = 1e-9`` gives ``S`` to about ``cond * 1e-9`` relative
    accuracy. An iteration is a few passes over the data, ``O(alpha T^2 d^4)``.

    Args:
      task, data: the task and the training set (computed in float64).
      lam: penalty strength ``>= 0``; penalty: ``"nuclear"`` or ``"frobenius"``.
      settings: :class:`TrainSettings` (``max_iter``, ``tol`` on the relative gradient
        mapping, ``chunk``, ``time_limit``; its other fields do not apply).
      max_iter, tol, chunk, time_limit: shorthands for those fields (``None``: from settings).
      S_init: starting symmetric matrix (default zero).

    Returns a :class:`TrainResult` (failure policy: its ``converged``; a non-finite
    gradient mapping is a breakdown).
    """
    given = dict(max_iter=max_iter, tol=tol, chunk=chunk, time_limit=time_limit)
    s = resolve(settings, given, dict(max_iter=20000, chunk=50))
    lam = _checks.nonnegative("lam", lam)
    check_penalty(penalty)
    max_iter = _checks.integer("max_iter", s.max_iter, 1)
    static = _Static(task, penalty, _checks.integer("chunk", s.chunk, 1))
    tol = _checks.nonnegative("tol", s.tol)
    X, Y, d = _checks.dataset(task, data)
    X, Y = jnp.asarray(X, jnp.float64), jnp.asarray(Y, jnp.float64)
    lam_j = jnp.asarray(lam, jnp.float64)
    state = _initial_state(static, X, Y, S_init, lam_j)
    progress = Progress("train_convex", max_iter, s.time_limit)
    state, history, done, residual = _iterate(
        static, state, X, Y, lam, max_iter=max_iter, tol=tol, progress=progress
    )
    run = _Run(state.x, None, np.concatenate(history), residual < tol, done, residual)
    return _finish(task, X, Y, run, "train_convex", tol)
