"""LASSO instances and a small FISTA solver, to check :func:`attnlib.scaling.lasso_se`."""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import _checks
from attnlib.targets import atoms_and_weights

__all__ = ["lasso_data", "lasso_recovered_fractions", "LassoFit", "lasso_solve"]

MAX_ENTRIES = 1e9  # of the matrix A of lasso_data


def lasso_data(key: jax.Array, target, N: int, delta: float, noise: float = 0.0):
    """A LASSO instance: ``(A, y, x0)`` as float64 numpy arrays.

    ``x0`` has ``N`` entries, the atoms of ``target``'s measure repeated in proportion to
    their weights (largest remainders), in random order; ``A`` is ``n x N`` with
    i.i.d. ``N(0, 1/N)`` entries, ``n = round(delta N)``; ``y = A x0 + sqrt(noise) w``.
    """
    s, p = atoms_and_weights(target)
    key = _checks.prng_key("key", key)
    N = _checks.integer("N", N, 2)
    delta = _checks.positive("delta", delta)
    noise = _checks.in_interval("noise", noise, 0.0, 1e100, low_open=False)
    if N > MAX_ENTRIES or delta * N > MAX_ENTRIES / N:
        raise ValueError(
            f"N and delta: the matrix A (n = delta N = {delta * N:.3g} rows, N = {N} columns) "
            f"must have at most {MAX_ENTRIES:.0e} entries"
        )
    n = max(1, int(round(delta * N)))
    _checks.fits_in_memory("N", 8.0 * 2 * n * N, f"the matrix A ({n} x {N}) of the LASSO")
    share = p * N
    cnt = np.floor(share).astype(int)
    rest = N - int(cnt.sum())
    if rest > 0:
        cnt[np.argsort(-(share - cnt), kind="stable")[:rest]] += 1
    k_perm, k_a, k_w = jax.random.split(key, 3)
    x0 = np.repeat(s, cnt)[np.asarray(jax.random.permutation(k_perm, N))]
    A = np.asarray(jax.random.normal(k_a, (n, N), dtype=jnp.float64)) / math.sqrt(N)
    y = A @ x0 + math.sqrt(noise) * np.asarray(jax.random.normal(k_w, (n,), dtype=jnp.float64))
    return A, y, x0


def lasso_recovered_fractions(x, x0, target) -> np.ndarray:
    """Per atom of ``target``'s measure: the fraction of its entries in ``x0`` kept (``x != 0``)."""
    s, _ = atoms_and_weights(target)
    x = np.asarray(_checks.finite_array("x", x, ndim=1), dtype=float)
    x0 = np.asarray(_checks.finite_array("x0", x0, ndim=1, shape=x.shape, against="x"), float)
    out = np.full(s.shape, np.nan)
    for i, a in enumerate(s):
        sel = np.isclose(x0, a, rtol=1e-12, atol=1e-15)
        if sel.any():
            out[i] = float(np.mean(x[sel] != 0))
    return out


class LassoFit(NamedTuple):
    """LASSO minimiser from :func:`lasso_solve`: ``x``, iterations, convergence, residual."""

    x: np.ndarray
    n_iter: int
    converged: bool
    residual: float


def _soft(z, t):
    return np.sign(z) * np.maximum(np.abs(z) - t, 0.0)


def _lasso_polish(A, y, lam, x):
    """Exact minimiser on the support and signs of ``x`` if they satisfy the KKT conditions.

    On the support ``S`` with signs ``s`` the minimiser solves
    ``A_S^T A_S x_S = A_S^T y - lam s``; it is the global LASSO minimiser iff its
    signs are ``s`` and ``|A_j^T (y - A x)| <= lam`` off the support.
    """
    S = np.flatnonzero(x)
    if S.size == 0 or S.size > A.shape[0]:
        return None
    sg = np.sign(x[S])
    AS = A[:, S]
    try:
        xs = np.linalg.solve(AS.T @ AS, AS.T @ y - lam * sg)
    except np.linalg.LinAlgError:
        return None
    if np.any(np.sign(xs) != sg):
        return None
    out = np.zeros_like(x)
    out[S] = xs
    corr = A.T @ (y - A @ out)
    off = np.ones(x.size, dtype=bool)
    off[S] = False
    if np.any(np.abs(corr[off]) > lam * (1 + 1e-12)):
        return None
    return out


def _top_eigenvalue(A) -> float:
    """Largest eigenvalue of ``A^T A`` by 30 steps of power iteration (``1`` if ``A = 0``)."""
    N = A.shape[1]
    v = np.ones(N) / math.sqrt(N)
    nv = 1.0
    for _ in range(30):
        w = A.T @ (A @ v)
        nv = float(np.linalg.norm(w))
        if not nv > 0:
            return 1.0
        v = w / nv
    return nv


def _check_point(A, y, lam, x, *, gm, tol, it) -> LassoFit:
    """The polished point if it is a minimiser to ``tol`` (``gm``: the relative gradient
    mapping; ``it``: the iterations done), else ``x`` with its residual."""
    xp = _lasso_polish(A, y, lam, x)
    if xp is not None:
        res_p = gm(xp, A @ xp)
        if res_p < tol:
            return LassoFit(xp, it, True, res_p)
    residual = gm(x, A @ x)
    return LassoFit(x, it, residual < tol, residual)


def _fista(A, y, lam, x, *, tol, max_iter) -> LassoFit:
    """FISTA with restarts from ``x`` (``tol``, ``max_iter``: see :func:`lasso_solve`)."""
    L = [1.1 * _top_eigenvalue(A)]  # raised by backtracking if a prox step fails to descend

    def gm(x, Ax):
        step = x - _soft(x - A.T @ (Ax - y) / L[0], lam / L[0])
        return float(np.linalg.norm(step) / max(float(np.linalg.norm(x)), 1e-300))

    Ax = A @ x
    fx = 0.5 * float((Ax - y) @ (Ax - y)) + lam * float(np.abs(x).sum())
    z, Az, t = x.copy(), Ax.copy(), 1.0
    residual = math.inf
    it = 0
    for it in range(1, max_iter + 1):
        x_new = _soft(z - A.T @ (Az - y) / L[0], lam / L[0])
        Ax_new = A @ x_new
        r = Ax_new - y
        f_new = 0.5 * float(r @ r) + lam * float(np.abs(x_new).sum())
        if f_new > fx * (1 + 1e-15):
            if t == 1.0:  # a plain prox-gradient step failed: L was too small
                L[0] *= 1.5
            z, Az, t = x.copy(), Ax.copy(), 1.0  # restart the momentum from x
            continue
        t_new = 0.5 * (1 + math.sqrt(1 + 4 * t * t))
        mom = (t - 1) / t_new
        z = x_new + mom * (x_new - x)
        Az = Ax_new + mom * (Ax_new - Ax)
        x, Ax, t, fx = x_new, Ax_new, t_new, f_new
        if it % 50 == 0:
            fit = _check_point(A, y, lam, x, gm=gm, tol=tol, it=it)
            if fit.converged:
                return fit
            residual = fit.residual
    return LassoFit(x, it, False, residual)


def lasso_solve(
    A, y, lam: float, *, tol: float = 1e-10, max_iter: int = 50000, x_init=None
) -> LassoFit:
    r"""``argmin_x (1/2)||y - A x||^2 + lam ||x||_1``: FISTA, then an exact polish.

    FISTA with step ``1/L``, ``L = 1.1 ||A||_2^2`` (power iteration; raised where a step
    fails to descend) and a momentum reset whenever the objective increases. Every
    50 steps the support and signs of the iterate are tried: the least-squares
    solution on the support with the ``lam * sign`` shift is returned if it satisfies
    the KKT conditions of the LASSO (it is then the exact minimiser). The residual
    is the relative gradient mapping ``||x - S(x - A^T(Ax - y)/L, lam/L)|| / ||x||``
    (``S`` the soft threshold); a run that ends above ``tol`` warns with it.
    ``A`` ``(n, N)``, ``y`` ``(n,)``, ``x_init`` ``(N,)``: finite, at most ``1e100``.
    """
    A = np.asarray(_checks.finite_array("A", A, ndim=2, max_abs=_checks.MAX_ABS), dtype=float)
    if min(A.shape) < 1:
        raise ValueError(f"A must be a non-empty (n, N) matrix, got shape {A.shape}")
    y = _checks.finite_array("y", y, 1, (A.shape[0],), against="A", max_abs=_checks.MAX_ABS)
    lam = _checks.positive("lam", lam)
    limits = dict(
        tol=_checks.positive("tol", tol), max_iter=_checks.integer("max_iter", max_iter, 1)
    )
    N = A.shape[1]
    if x_init is None:
        x = np.zeros(N)
    else:
        x = _checks.finite_array("x_init", x_init, 1, (N,), against="A", max_abs=_checks.MAX_ABS)
    fit = _fista(A, np.asarray(y, dtype=float), lam, np.asarray(x, dtype=float), **limits)
    if not fit.converged:
        warnings.warn(
            f"lasso_solve: residual {fit.residual:.2e} > tol {limits[0]:.1e} after "
            f"{limits[1]} iterations",
            RuntimeWarning,
            stacklevel=2,
        )
    return fit
