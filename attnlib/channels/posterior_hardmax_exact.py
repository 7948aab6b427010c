r"""Exact Bayes posterior of the ``T = 2`` hardmax channel: bivariate Gaussian orthants.

Conventions as in :mod:`attnlib.channels.posterior`: the ``K = 3`` pairs ``(h00, h01, h11)``,
``sigma^2 = (2, 1, 2)``, ``omega_ab ~ N(0, sigma_ab^2 (Q0 - mmse))``, given ``omega`` the
target's pairs ``h ~ N(omega, V)``, ``V = sigma^2 mmse``, and logits ``u = h + sqrt(Delta)
xi ~ N(omega, D)``, ``D = V + Delta`` (``Delta = 0`` without noise).

The reduction. Row 0 attends column 0 iff ``u00 >= u01`` and row 1 attends column 1 iff
``u11 > u01`` (``u10 = u01``), so the label is the pair of signs ``eps`` of the two
differences ``s = A u``, ``A = [[1, -1, 0], [0, -1, 1]]``: an orthant of the bivariate
Gaussian ``s ~ N(mu, Sigma)`` with ``mu = A omega`` and ``Sigma = A D A^T``. With
``sd_i = sqrt(Sigma_ii)``, ``r = Sigma_12 / (sd_1 sd_2)``, ``x_i = eps_i mu_i / sd_i``:

    Z_eps(mu) = Phi_2(x_1, x_2; eps_1 eps_2 r),
    dZ_eps / dmu_i = (eps_i / sd_i) phi(x_i) Phi((x_j - eps_1 eps_2 r x_i) / sqrt(1 - r^2)),

``Phi_2`` in closed form through Owen's ``T`` function. The output function is
``g = d log Z / d omega = A^T grad_mu log Z``, so ``zhat = E[(h - omega) / sqrt(V) | Y,
omega] = sqrt(V) g`` and the effective number of measurements is

    J mmse = E_mu sum_eps (grad_mu Z_eps)^T (A V A^T) (grad_mu Z_eps) / Z_eps,

``A V A^T = mmse C``, ``C = [[3, 1], [1, 3]]``, with the two-dimensional outer average
over ``mu ~ N(0, (Q0 - mmse) C)`` done by composite Gauss-Legendre quadrature on panels
that double in width away from each orthant's boundary (the integrand varies on the
scale ``sd_i`` near ``mu_i = 0`` and on the scale of the prior far from it). The
reported error is the change from a rule with 2/3 of the points (the quadrature
converges exponentially). The Bayes test error (noise-free labels) is a one-dimensional
integral with a closed form: each row errs with ``E[p (1 - p)]``, ``p = Phi(mu_i / sd_i)``,
so ``E_test = 1 - (2 / pi) arcsin(1 - mmse / Q0)`` (:func:`test_error`).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special

from attnlib import _checks
from attnlib import channels as _channels
from attnlib import tasks as _tasks

__all__ = ["A", "bvn_cdf", "orthants", "information", "test_error", "output"]

A = np.array([[1.0, -1.0, 0.0], [0.0, -1.0, 1.0]])
"""The two differences ``s = A u`` of the pairs ``(u00, u01, u11)`` whose signs are the label."""

_C = np.array([[3.0, 1.0], [1.0, 3.0]])  # A diag(sigma^2) A^T
_SIGNS = np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0], [-1.0, -1.0]])
_TINY_Z = 1e-13  # orthants less likely than this are left out (their share is ~|x| phi(x))


def bvn_cdf(h, k, r) -> np.ndarray:
    r"""``Phi_2(h, k; r) = P(X_1 < h, X_2 < k)`` for standard normals of correlation ``|r| < 1``.

    Owen's (1956) formula in Owen's ``T`` function on non-positive arguments (reflected,
    ``Phi_2(h, k; r) = Phi(k) - Phi_2(-h, k; -r)``, so that a small probability is never the
    difference of two numbers near 1). Absolute accuracy about ``1e-16``, so relative
    ``1e-9`` for ``Phi_2 > 1e-8`` (measured against adaptive quadrature of the 1-d integral:
    ``3e-10`` there, ``3e-6`` at ``1e-11``, ``7e-3`` at ``1e-15``); the channel's averages
    weight each label by its probability and are unaffected.
    """
    h, k, r = np.broadcast_arrays(*(np.asarray(x, dtype=float) for x in (h, k, r)))
    sh, sk = h > 0, k > 0
    base = _owen(np.where(sh, -h, h), np.where(sk, -k, k), np.where(sh ^ sk, -r, r))
    nh, nk = scipy.special.ndtr(h), scipy.special.ndtr(k)
    z = np.where(sh & sk, nh + nk - 1.0 + base, base)
    z = np.where(sh & ~sk, nk - base, z)
    z = np.where(~sh & sk, nh - base, z)
    return np.clip(z, 0.0, 1.0)


def _owen(h, k, r):
    """``Phi_2`` for ``h, k <= 0``: ``(Phi(h) + Phi(k)) / 2 - T(h, a_h) - T(k, a_k)`` with
    ``a_h = (k - r h) / (h sqrt(1 - r^2))`` and ``a_k`` likewise."""
    h = np.where(h == 0, -1e-300, h)  # the limit from below (Phi_2 is continuous)
    k = np.where(k == 0, -1e-300, k)
    c = np.sqrt(1.0 - r * r)
    with np.errstate(over="ignore"):
        ah, ak = (k - r * h) / (h * c), (h - r * k) / (k * c)
    z = 0.5 * (scipy.special.ndtr(h) + scipy.special.ndtr(k))
    return z - scipy.special.owens_t(h, ah) - scipy.special.owens_t(k, ak)


def _sigma(mmse: float, noise: float) -> np.ndarray:
    """``Sigma = A D A^T`` of the two differences, ``D = sigma^2 mmse + Delta``."""
    D = _tasks.pair_variances(2) * mmse + noise
    return (A * D) @ A.T


def orthants(mu, Sigma) -> tuple[np.ndarray, np.ndarray]:
    """``Z`` ``(4, ...)`` and ``grad_mu Z`` ``(4, ..., 2)`` of the four labels (module
    docstring) at means ``mu`` ``(..., 2)``; labels in the order of :data:`_SIGNS`
    ``(eps_1, eps_2) = (+,+), (+,-), (-,+), (-,-)``."""
    mu = np.asarray(mu, dtype=float)
    sd = np.sqrt(np.diag(Sigma))
    r0 = Sigma[0, 1] / (sd[0] * sd[1])
    c = math.sqrt(1.0 - r0 * r0)
    Z, dZ = [], []
    for e1, e2 in _SIGNS:
        x1, x2, r = e1 * mu[..., 0] / sd[0], e2 * mu[..., 1] / sd[1], e1 * e2 * r0
        Z.append(bvn_cdf(x1, x2, r))
        d1 = e1 / sd[0] * _npdf(x1) * scipy.special.ndtr((x2 - r * x1) / c)
        d2 = e2 / sd[1] * _npdf(x2) * scipy.special.ndtr((x1 - r * x2) / c)
        dZ.append(np.stack([d1, d2], axis=-1))
    return np.array(Z), np.array(dZ)


def _npdf(x):
    return np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def _nodes(scale_in: float, scale_out: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Composite Gauss-Legendre nodes and weights on the line: ``n`` points on each panel
    ``[x_k, 2 x_k]`` (and ``[0, x_0]``), from ``x_0 = min(scale_in, scale_out) / 4`` to
    ``12 scale_out`` on each side of ``0``."""
    x0 = 0.25 * min(scale_in, scale_out)
    n_pan = max(1, math.ceil(math.log2(12.0 * scale_out / x0)))
    edges = np.concatenate([[0.0], x0 * 2.0 ** np.arange(n_pan + 1)])
    t, w = np.polynomial.legendre.leggauss(n)
    lo, hi = edges[:-1, None], edges[1:, None]
    x = (0.5 * (hi - lo) * t + 0.5 * (hi + lo)).ravel()
    wx = (0.5 * (hi - lo) * w).ravel()
    return np.concatenate([-x[::-1], x]), np.concatenate([wx[::-1], wx])


def _dof_rule(mmse: float, Q0: float, noise: float, n: int) -> float:
    """``J mmse`` with ``n`` Gauss-Legendre points per panel and axis (module docstring)."""
    Sigma = _sigma(mmse, noise)
    var_out = max(Q0 - mmse, 0.0)
    scale_in = math.sqrt(Sigma[0, 0])
    scale_out = max(math.sqrt(_C[0, 0] * var_out), 1e-9 * scale_in)
    x, w = _nodes(scale_in, scale_out, n)
    mu = np.stack(np.meshgrid(x, x, indexing="ij"), axis=-1)  # (m, m, 2)
    cov = _C * max(var_out, scale_out**2 / _C[0, 0])
    prec = np.linalg.inv(cov)
    dens = np.exp(-0.5 * np.einsum("...i,ij,...j->...", mu, prec, mu))
    dens /= 2 * math.pi * math.sqrt(np.linalg.det(cov))
    Z, dZ = orthants(mu, Sigma)
    quad = np.einsum("e...i,ij,e...j->e...", dZ, mmse * _C, dZ)
    keep = Z > _TINY_Z
    per = np.sum(np.where(keep, quad / np.where(keep, Z, 1.0), 0.0), axis=0)
    return float(np.einsum("i,j,ij->", w, w, dens * per))


def information(task, mmse: float, Q0: float, n_nodes: int = 12) -> tuple[float, float, float]:
    """``(J, dof, error)`` of ``T = 2`` hardmax without noise or with noise on the logits at
    ``0 < mmse <= Q0``: ``dof = J mmse`` from the exact orthant probabilities and a
    Gauss-Legendre outer integral with ``n_nodes >= 6`` points per panel; ``error`` is the
    absolute error of ``J`` (the change from a rule with 2/3 of the points)."""
    _check_task(task)
    Q0 = _checks.positive("Q0", Q0)
    mmse = _checks.in_interval("mmse", mmse, 0.0, Q0)
    n_nodes = _checks.integer("n_nodes", n_nodes, 6)
    dof = _dof_rule(mmse, Q0, task.noise, n_nodes)
    coarse = _dof_rule(mmse, Q0, task.noise, (2 * n_nodes) // 3)
    err = abs(dof - coarse) + 1e-12 * abs(dof)
    return dof / mmse, dof, err / mmse


def _check_task(task) -> None:
    accepted = "an attnlib.tasks.Hardmax with T = 2, without noise or with noise on the logits"
    _channels.require_task(task, _tasks.Hardmax, accepted=accepted)
    if task.T != 2 or (task.noise > 0 and task.noise_on != "logits"):
        raise ValueError(f"task must be {accepted}, got {task!r}")


def test_error(mmse: float, Q0: float) -> float:
    r"""Bayes-optimal test error ``1 - (2/pi) arcsin(1 - mmse / Q0)`` of ``T = 2`` hardmax
    (noise-free labels, posterior variance ``mmse``; module docstring)."""
    Q0 = _checks.positive("Q0", Q0)
    mmse = _checks.in_interval("mmse", mmse, 0.0, Q0, low_open=False)
    return float(1.0 - (2.0 / math.pi) * math.asin(1.0 - mmse / Q0))


test_error.__test__ = False  # not a pytest test


def output(task, Y, omega, V) -> tuple[np.ndarray, np.ndarray]:
    r"""Bayes output step of ``T = 2`` hardmax for GAMP: ``(g, dg)``, each ``(n, 3)``.

    ``Y``: labels ``(n, 2, 2)``; ``omega``: ``(n, 3)``; ``V``: ``(3,)`` posterior variances
    of the pairs. ``g = A^T grad_mu log Z`` and ``dg`` the diagonal of ``dg / domega =
    A^T (grad^2_mu log Z) A`` (the second derivatives of ``Phi_2`` in closed form).
    """
    _check_task(task)
    Y = np.asarray(Y, dtype=float)
    omega = np.asarray(omega, dtype=float)
    V = np.asarray(_checks.finite_array("V", V, ndim=1), dtype=float)
    if Y.shape[1:] != (2, 2) or omega.shape != (len(Y), 3) or V.shape != (3,):
        raise ValueError(f"Y (n, 2, 2), omega (n, 3), V (3,) expected: {Y.shape}, {omega.shape}")
    D = V + task.noise
    Sigma = (A * D) @ A.T
    eps = np.stack([np.where(Y[:, 0, 0] > 0.5, 1.0, -1.0), np.where(Y[:, 1, 1] > 0.5, 1.0, -1.0)])
    sd = np.sqrt(np.diag(Sigma))
    r = eps[0] * eps[1] * Sigma[0, 1] / (sd[0] * sd[1])
    x = eps.T * (omega @ A.T) / sd  # (n, 2)
    grad, hess = _log_bvn_derivatives(x[:, 0], x[:, 1], r)
    S = eps.T / sd  # d x / d mu
    gmu = grad * S
    Hmu = hess * S[:, :, None] * S[:, None, :]
    g = gmu @ A
    dg = np.einsum("ik,nij,jk->nk", A, Hmu, A)
    return g, dg


def _log_bvn_derivatives(x1, x2, r) -> tuple[np.ndarray, np.ndarray]:
    """Gradient ``(n, 2)`` and Hessian ``(n, 2, 2)`` of ``log Phi_2(x1, x2; r)``. Where
    ``Phi_2 < 1e-15`` (relative accuracy lost, see :func:`bvn_cdf`) the most violated of the
    two constraints alone is kept: the univariate truncation, an approximation."""
    c = np.sqrt(1.0 - r * r)
    Z = bvn_cdf(x1, x2, r)
    tail = Z < 1e-15
    logZ = np.log(np.where(tail, 1.0, Z))
    c1, c2 = (x2 - r * x1) / c, (x1 - r * x2) / c
    l2pi = 0.5 * math.log(2 * math.pi)
    lphi1, lphi2 = -0.5 * x1 * x1 - l2pi, -0.5 * x2 * x2 - l2pi
    with np.errstate(over="ignore"):
        g1 = np.exp(lphi1 + scipy.special.log_ndtr(c1) - logZ)
        g2 = np.exp(lphi2 + scipy.special.log_ndtr(c2) - logZ)
        f12 = np.exp(lphi1 - 0.5 * c1 * c1 - l2pi - logZ) / c  # bivariate density / Z
    first = x1 <= x2  # the more violated constraint
    xm = np.minimum(x1, x2)
    mills = np.exp(-0.5 * xm * xm - l2pi - scipy.special.log_ndtr(xm))
    g1 = np.where(tail, np.where(first, mills, 0.0), g1)
    g2 = np.where(tail, np.where(first, 0.0, mills), g2)
    f12 = np.where(tail, 0.0, f12)
    h11 = np.where(tail & ~first, 0.0, -x1 * g1 - r * f12 - g1 * g1)
    h22 = np.where(tail & first, 0.0, -x2 * g2 - r * f12 - g2 * g2)
    h12 = f12 - g1 * g2
    grad = np.stack([g1, g2], axis=1)
    hess = np.stack([np.stack([h11, h12], axis=1), np.stack([h12, h22], axis=1)], axis=1)
    return grad, hess
