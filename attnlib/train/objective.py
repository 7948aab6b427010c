"""The ERM objective on a data set (conventions: :mod:`attnlib.train`): pre-activations,
data term, penalty, curvature."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp

from attnlib import _checks
from attnlib.spectral_map import check_penalty
from attnlib.tasks import Dataset, Task

__all__ = ["objective", "factorized_preactivations"]


def _sym(A):
    return (A + A.T) / 2


_UNROLL_MAX_T = 8  # up to this T the pair products are written out (see _pair_gram)


def _pair_gram(U, V):
    """``G_ab = <U_a, V_b>`` for ``(n, T, k)`` arrays, assuming ``G`` symmetric.

    For small ``T`` the ``K`` products ``a <= b`` are computed as element-wise
    products and row sums and mirrored: on CPU this is several times faster
    than a batched ``einsum`` of ``n`` tiny ``(T, k) @ (k, T)`` products.
    """
    T = U.shape[-2]
    if T > _UNROLL_MAX_T:
        return jnp.einsum("nak,nbk->nab", U, V)
    g = {}
    for a in range(T):
        for b in range(a, T):
            g[a, b] = jnp.sum(U[:, a, :] * V[:, b, :], axis=-1)
    rows = [jnp.stack([g[min(a, b), max(a, b)] for b in range(T)], axis=-1) for a in range(T)]
    return jnp.stack(rows, axis=-2)


def _preacts(X, S):
    """:func:`attnlib.tasks.preactivations` for ``(n, T, d)`` data and symmetric ``S``."""
    n, T, d = X.shape
    XS = (X.reshape(n * T, d) @ S).reshape(n, T, d)
    h = _pair_gram(XS, X)
    return (h - jnp.trace(S) * jnp.eye(T, dtype=h.dtype)) / math.sqrt(d)


def _data_term(task: Task, X, Y, S):
    """``sum_mu loss(Y_mu, h_mu(S))``."""
    return jnp.sum(task.loss(Y, _preacts(X, S)))


def _penalty(S, lam, penalty: str):
    d = S.shape[0]
    if penalty == "nuclear":
        return d * lam * jnp.trace(S)
    return d * (lam / 2) * jnp.sum(S * S)


def objective(task: Task, data: Dataset, S, lam: float, penalty: str = "nuclear") -> float:
    """``sum_mu loss(Y_mu, h_mu(S)) + d lam Tr S`` (nuclear) or ``+ d (lam/2) ||S||_F^2``.

    The nuclear objective is the one of PSD ``S``; this function evaluates the
    formula for any symmetric ``S`` (the PSD constraint is the solver's business).

    Args:
      task: the task (output function and loss).
      data: a :class:`attnlib.tasks.Dataset` with ``X`` of shape ``(n, T, d)``.
      S: symmetric ``(d, d)`` matrix.
      lam: penalty strength ``>= 0``.
      penalty: ``"nuclear"`` or ``"frobenius"``.
    """
    lam = _checks.nonnegative("lam", lam)
    check_penalty(penalty)
    X, Y, d = _checks.dataset(task, data)
    S = jnp.asarray(_checks.square_matrix("S", S, d, symmetric=True), dtype=X.dtype)
    return float(_objective_jit(task, X, Y, S, lam, penalty))


@functools.partial(jax.jit, static_argnames=("task", "penalty"))
def _objective_jit(task, X, Y, S, lam, penalty):
    return _data_term(task, X, Y, S) + _penalty(S, lam, penalty)


@functools.partial(jax.jit, static_argnames=("task",))
def _mean_loss(task, X, Y, S):
    return jnp.mean(task.loss(Y, _preacts(X, S)))


def factorized_preactivations(X, W):
    r"""Pre-activations of ``S = W W^T / sqrt(p d)`` without forming ``S``.

    ``h = [(X W)(X W)^T / sqrt(p d) - I Tr S] / sqrt(d)`` with
    ``Tr S = ||W||_F^2 / sqrt(p d)``: one ``(n T, d) @ (d, p)`` matmul dominates.
    ``X`` has shape ``(n, T, d)``, ``W`` ``(d, p)`` (finite, entries at most ``1e100`` in
    magnitude); returns ``(n, T, T)``.
    """
    X = _checks.finite_array("X", _checks.numeric_array("X", X, kinds="biuf"), ndim=3)
    if min(X.shape) < 1:
        raise ValueError(f"X must be a non-empty (n, T, d) array, got shape {X.shape}")
    W = _checks.numeric_array("W", W, kinds="biuf")
    _checks.finite_array("W", W, ndim=2, shape=(X.shape[2], None), against="X")
    if W.shape[1] < 1:
        raise ValueError(f"W must have at least one column, got shape {W.shape}")
    for name, a in (("X", X), ("W", W)):
        _checks.finite_array(name, a, max_abs=_checks.MAX_ABS)
    return _factorized_preacts(jnp.asarray(X), jnp.asarray(W))


def _factorized_preacts(X, W):
    n, T, d = X.shape
    p = W.shape[1]
    c = 1.0 / math.sqrt(p * d)
    XW = (X.reshape(n * T, d) @ W).reshape(n, T, p)
    G = _pair_gram(XW, XW) * c
    tr = jnp.sum(W * W) * c
    return (G - tr * jnp.eye(T, dtype=G.dtype)) / math.sqrt(d)


def _factorized_objective(task, W, X, Y, lam_W):
    return jnp.sum(task.loss(Y, _factorized_preacts(X, W))) + lam_W * jnp.sum(W * W)


def _direct_objective(task, S, X, Y, lam):
    return _data_term(task, X, Y, S) + _penalty(S, lam, "frobenius")


@functools.partial(jax.jit, static_argnames=("task",))
def _value_and_sym_grad(task, X, Y, S):
    """Data term and its gradient in the space of symmetric matrices."""
    f, g = jax.value_and_grad(functools.partial(_data_term, task, X, Y))(S)
    return f, _sym(g)


def _curvature(task, X, Y, S, iters: int = 20) -> float:
    """Power-iteration estimate of the largest curvature of the data term at ``S``.

    Hessian-vector products by finite differences of gradients (float64), which
    keeps the compiled code to the gradient alone.
    """
    S = jnp.asarray(S)
    g0 = _value_and_sym_grad(task, X, Y, S)[1]
    v = _sym(jax.random.normal(jax.random.PRNGKey(0), S.shape, S.dtype))
    v = v / jnp.linalg.norm(v)
    eps = 1e-5 * max(1.0, float(jnp.linalg.norm(S)))
    L = 0.0
    for _ in range(iters):
        hv = (_value_and_sym_grad(task, X, Y, S + eps * v)[1] - g0) / eps
        L = float(jnp.linalg.norm(hv))
        if not L > 0:
            return 1.0
        v = hv / L
    return L
