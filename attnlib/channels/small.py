"""Batched linear algebra of small ``K x K`` symmetric matrices, unrolled for small ``K``.

The prox problems of the output channel are ``K``-dimensional (``K = T (T + 1) / 2``
pairs: 3 for ``T = 2``) and come in batches of tens of thousands. XLA's CPU
decompositions call LAPACK once per matrix; for ``K <= UNROLL_MAX_K`` the functions
below write the factorisations out entry by entry on ``(N,)`` vectors instead (the same
arithmetic, an order of magnitude faster on a batch). Beyond that size the Cholesky
factor and its solves are loops over the ``K`` columns on the whole batch, and only
:func:`eigh` (and the LU fallback of :func:`inv_diag`) call :mod:`jax.numpy.linalg`.
Why not LAPACK's batched Cholesky and LU: jaxlib runs each of them on the intra-op
thread pool and waits for it; two of them running at once in one program can occupy
every thread of that pool and wait for each other for ever (seen on 2 cores, jaxlib
0.10.2: the ``T = 3`` state evolution with the pathwise ``m_hat`` of
:mod:`attnlib.se.output`, whose derivative factors the prox Hessian beside the
variances' inverse). Shapes: ``A`` ``(N, K, K)`` symmetric (only its lower
triangle is read), right-hand sides ``(N, K)``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["UNROLL_MAX_K", "cholesky", "cho_solve", "inv_diag", "eigh"]

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


def _cholesky_loop(A):
    """:func:`cholesky` for any ``K``: one column of ``L`` per loop step."""
    K = A.shape[-1]
    rows = jnp.arange(K)

    def column(j, L):
        t = A[:, :, j] - jnp.einsum("nik,nk->ni", L, L[:, j, :])  # columns >= j still 0
        d = jnp.sqrt(t[:, j])
        col = jnp.where(rows > j, t / d[:, None], jnp.where(rows == j, d[:, None], 0.0))
        return L.at[:, :, j].set(col)

    return jax.lax.fori_loop(0, K, column, jnp.zeros_like(A))


def _tri_solve_loop(L, B, lower):
    """``L^{-1} B`` (``lower``) or ``L^{-T} B`` for a lower triangular ``L`` ``(N, K, K)``
    and ``B`` ``(N, K, R)``: one row of the solution per loop step."""
    K = L.shape[-1]
    M = L if lower else jnp.swapaxes(L, -1, -2)

    def row(step, X):
        i = step if lower else K - 1 - step
        t = B[:, i, :] - jnp.einsum("nk,nkr->nr", M[:, i, :], X)  # rows not yet set are 0
        return X.at[:, i, :].set(t / M[:, i, i][:, None])

    return jax.lax.fori_loop(0, K, row, jnp.zeros_like(B))


def cholesky(A):
    """Lower Cholesky factor ``(N, K, K)`` of ``A``; not finite where ``A`` is not
    positive definite (as :func:`jax.numpy.linalg.cholesky`)."""
    K = A.shape[-1]
    if K > UNROLL_MAX_K:
        return _cholesky_loop(A)
    L = _factor(A)
    zero = jnp.zeros_like(A[:, 0, 0])
    rows = [jnp.stack([L[i][j] if j <= i else zero for j in range(K)], -1) for i in range(K)]
    return jnp.stack(rows, -2)


def cho_solve(L, b):
    """``A^{-1} b`` from the lower Cholesky factor ``L`` of ``A``; ``b`` ``(N, K)``."""
    K = L.shape[-1]
    if K > UNROLL_MAX_K:
        y = _tri_solve_loop(L, b[..., None], lower=True)
        return _tri_solve_loop(L, y, lower=False)[..., 0]
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
        L = _cholesky_loop(A)
        pd = jnp.all(jnp.isfinite(L), axis=(-1, -2))
        eye = jnp.broadcast_to(jnp.eye(K, dtype=A.dtype), A.shape)
        diag = jnp.sum(_tri_solve_loop(L, eye, lower=True) ** 2, axis=-2)  # L^{-1}: columns
        return _pd_or_lu(diag, pd, A), pd
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
    return _pd_or_lu(diag, pd, A), pd


def _pd_or_lu(diag, pd, A):
    """``diag`` where the whole batch is positive definite, else the diagonal of an LU
    inverse of ``A``."""
    return jax.lax.cond(
        jnp.all(pd),
        lambda a: diag,
        lambda a: jnp.diagonal(jnp.linalg.inv(a), axis1=-2, axis2=-1),
        A,
    )


# at most this many cyclic Jacobi sweeps in :func:`eigh` (quadratic convergence: random
# 3 x 3 matrices are diagonal to rounding after 4); the sweeps stop once every
# off-diagonal entry of the batch is below _JACOBI_TOL times its row scale
_JACOBI_SWEEPS = 10
_JACOBI_TOL = 1e-16


def _rotate(a, v, p, q):
    """One Jacobi rotation zeroing ``a[p][q]`` (entry lists of ``(N,)`` arrays, ``a``
    symmetric with both triangles stored, ``v`` the accumulated eigenvectors)."""
    K = len(a)
    apq = a[p][q]
    zero = apq == 0.0
    theta = (a[q][q] - a[p][p]) / (2.0 * jnp.where(zero, 1.0, apq))
    # t = tan of the rotation angle, the root of t^2 + 2 theta t - 1 of smaller modulus
    # (0 for theta -> inf, where theta^2 overflows); NaN entries stay NaN
    t = jnp.sign(theta) / (jnp.abs(theta) + jnp.sqrt(theta * theta + 1.0))
    t = jnp.where(zero, 0.0, jnp.where(theta == 0.0, 1.0, t))
    c = jnp.sqrt(1.0 / (t * t + 1.0))
    s = t * c
    a = [row[:] for row in a]
    for r in range(K):
        if r in (p, q):
            continue
        arp, arq = a[r][p], a[r][q]
        a[r][p] = a[p][r] = c * arp - s * arq
        a[r][q] = a[q][r] = s * arp + c * arq
    app, aqq = a[p][p], a[q][q]
    a[p][p] = app - t * apq
    a[q][q] = aqq + t * apq
    a[p][q] = a[q][p] = jnp.zeros_like(apq)
    v = [row[:] for row in v]
    for r in range(K):
        vrp, vrq = v[r][p], v[r][q]
        v[r][p] = c * vrp - s * vrq
        v[r][q] = s * vrp + c * vrq
    return a, v


def _sweeps(a, v):
    """Cyclic Jacobi sweeps until the batch is diagonal to rounding (at most
    ``_JACOBI_SWEEPS``; NaN entries do not keep the loop going)."""
    K = len(a)
    if K == 1:
        return a, v

    def off(a):
        scale = sum(jnp.abs(a[i][i]) for i in range(K))
        big = [jnp.abs(a[p][q]) > _JACOBI_TOL * scale for p in range(K) for q in range(p + 1, K)]
        return jnp.any(jnp.stack(big))

    def body(c):
        a, v, k = c
        for p in range(K):
            for q in range(p + 1, K):
                a, v = _rotate(a, v, p, q)
        return a, v, k + 1

    def cond(c):
        a, _, k = c
        return (k < _JACOBI_SWEEPS) & off(a)

    a, v, _ = jax.lax.while_loop(cond, body, (a, v, jnp.asarray(0)))
    return a, v


def eigh(A):
    """Eigenvalues ``(N, K)`` in ascending order and eigenvectors ``(N, K, K)`` (columns)
    of symmetric ``A``, as :func:`jax.numpy.linalg.eigh`; for ``K <= UNROLL_MAX_K``
    cyclic Jacobi rotations written out on ``(N,)`` vectors (no LAPACK call per matrix).
    NaN in ``A`` gives NaN."""
    K = A.shape[-1]
    if K > UNROLL_MAX_K:
        return jnp.linalg.eigh(A)
    a = [[A[:, max(i, j), min(i, j)] for j in range(K)] for i in range(K)]
    one, zero = jnp.ones_like(A[:, 0, 0]), jnp.zeros_like(A[:, 0, 0])
    v = [[one if i == j else zero for j in range(K)] for i in range(K)]
    a, v = _sweeps(a, v)
    lam = [a[i][i] for i in range(K)]
    cols = [[v[r][i] for r in range(K)] for i in range(K)]
    for i, j in _SORT_NETWORK[K]:  # ascending order, by compare-and-swap
        swap = lam[i] > lam[j]
        lam[i], lam[j] = jnp.where(swap, lam[j], lam[i]), jnp.where(swap, lam[i], lam[j])
        ci, cj = cols[i], cols[j]
        cols[i] = [jnp.where(swap, y, x) for x, y in zip(ci, cj, strict=True)]
        cols[j] = [jnp.where(swap, x, y) for x, y in zip(ci, cj, strict=True)]
    U = jnp.stack([jnp.stack([cols[i][r] for i in range(K)], -1) for r in range(K)], -2)
    return jnp.stack(lam, -1), U


_SORT_NETWORK = {1: (), 2: ((0, 1),), 3: ((0, 1), (1, 2), (0, 1))}
