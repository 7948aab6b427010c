"""Batched linear algebra of small ``K x K`` symmetric matrices, unrolled for small ``K``.

The prox problems of the output channel are ``K``-dimensional (``K = T (T + 1) / 2``
pairs: 3 for ``T = 2``) and come in batches of tens of thousands. XLA's CPU
decompositions call LAPACK once per matrix; for ``K <= UNROLL_MAX_K`` the functions
below write the factorisations out entry by entry on ``(N,)`` vectors instead (the same
arithmetic, an order of magnitude faster on a batch). Beyond that size they call
:mod:`jax.numpy.linalg`. Shapes: ``A`` ``(N, K, K)`` symmetric (only its lower
triangle is read), right-hand sides ``(N, K)``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["UNROLL_MAX_K", "cholesky", "cho_solve", "inv_diag"]

UNROLL_MAX_K = 3
"""Largest ``K`` written out entry by entry (``T <= 2``); larger ``K`` use LAPACK (the
unrolled programs of ``K = 6`` took 2-3 times longer to compile than they saved)."""


def _factor(A):
    """Entries ``L[i][j]`` (``j <= i``) of the Cholesky factor, as lists of ``(N,)``
    arrays; NaN or inf where ``A`` is not positive definite."""
    K = A.shape[-1]
    L = [[None] * K for _ in range(K)]
    for j in range(K):
        s = A[:, j, j] - sum((L[j][k] ** 2 for k in range(j)), jnp.zeros_like(A[:, 0, 0]))
        d = jnp.sqrt(s)
        L[j][j] = d
        for i in range(j + 1, K):
            t = A[:, i, j] - sum((L[i][k] * L[j][k] for k in range(j)), jnp.zeros_like(d))
            L[i][j] = t / d
    return L


def cholesky(A):
    """Lower Cholesky factor ``(N, K, K)`` of ``A``; not finite where ``A`` is not
    positive definite (as :func:`jax.numpy.linalg.cholesky`)."""
    K = A.shape[-1]
    if K > UNROLL_MAX_K:
        return jnp.linalg.cholesky(A)
    L = _factor(A)
    zero = jnp.zeros_like(A[:, 0, 0])
    rows = [jnp.stack([L[i][j] if j <= i else zero for j in range(K)], -1) for i in range(K)]
    return jnp.stack(rows, -2)


def cho_solve(L, b):
    """``A^{-1} b`` from the lower Cholesky factor ``L`` of ``A``; ``b`` ``(N, K)``."""
    K = L.shape[-1]
    if K > UNROLL_MAX_K:
        return jax.scipy.linalg.cho_solve((L, True), b[..., None])[..., 0]
    y = []
    for i in range(K):
        t = b[:, i] - sum((L[:, i, k] * y[k] for k in range(i)), jnp.zeros_like(b[:, 0]))
        y.append(t / L[:, i, i])
    x = [None] * K
    for i in reversed(range(K)):
        t = y[i] - sum((L[:, k, i] * x[k] for k in range(i + 1, K)), jnp.zeros_like(b[:, 0]))
        x[i] = t / L[:, i, i]
    return jnp.stack(x, -1)


def inv_diag(A):
    """``(diag(A^{-1}), pd)``: the diagonal ``(N, K)`` of the inverse and whether ``A``
    is positive definite ``(N,)``. Where every ``A`` of the batch is positive definite
    the diagonal comes from the Cholesky factor, otherwise from an LU inverse (the same
    values up to rounding where both apply)."""
    K = A.shape[-1]
    if K > UNROLL_MAX_K:
        pd = jnp.all(jnp.isfinite(jnp.linalg.cholesky(A)), axis=(-1, -2))
        return jnp.diagonal(jnp.linalg.inv(A), axis1=-2, axis2=-1), pd
    L = _factor(A)
    # M = L^{-1} (lower triangular); A^{-1} = M^T M, so diag_i = sum_{k >= i} M_ki^2
    M = [[None] * K for _ in range(K)]
    for j in range(K):
        M[j][j] = 1.0 / L[j][j]
        for i in range(j + 1, K):
            t = sum(L[i][k] * M[k][j] for k in range(j, i))
            M[i][j] = -t / L[i][i]
    diag = jnp.stack([sum(M[k][i] ** 2 for k in range(i, K)) for i in range(K)], -1)
    entries = jnp.stack([L[i][j] for i in range(K) for j in range(i + 1)], -1)
    pd = jnp.all(jnp.isfinite(entries), axis=-1)
    return jax.lax.cond(
        jnp.all(pd),
        lambda a: diag,
        lambda a: jnp.diagonal(jnp.linalg.inv(a), axis1=-2, axis2=-1),
        A,
    ), pd
