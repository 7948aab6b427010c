r"""The output channel of hardmax attention: exact proximal map, ``g`` and its derivatives.

Conventions as in :mod:`attnlib.channels`: ``K = T (T + 1) / 2`` pairs ``h_ab``,
``a <= b``, centres ``omega`` and variances ``V > 0`` of shape ``(n, K)``, labels ``Y``
of shape ``(n, T, T)``.

The loss. With ``j_a`` the column attended by row ``a`` (the argmax of ``h_a.``), the
square loss is ``c(j) = sum_a ||Y_a - e_{j_a}||^2 = sum_a ||Y_a||^2 + T - 2 sum_a
Y_{a j_a}``: constant on each *region* ``C_j = {h symmetric : h_{a j_a} >= h_ab for all
a, b}``, a closed polyhedral cone (``T (T - 1)`` homogeneous inequalities, each between
two pairs). Not every ``j`` has a region with an interior: ``h`` is symmetric, and a
cycle ``j_a = b, j_b = c, j_c = a`` of three or more tokens forces ``h_ab > h_ac = h_ca >
h_cb = h_bc > h_ba``. Only the *realisable* assignments (interior non-empty, checked by
a linear program) are regions of the loss.

The proximal map. ``loss(Y, h) + sum_k (h_k - omega_k)^2 / (2 V_k)`` is minimised by
taking, over the realisable ``j``, the best of ``c(j) + dist_V(omega, C_j)^2 / 2``
(the infimum over the open region is attained on its closure: at a tie the row may
take any of its maximal entries, the lower semicontinuous envelope of the loss). Its
minimiser is the ``V``-weighted projection of ``omega`` on ``C_j``. Every face of
``C_j`` is a set of equalities between pairs, i.e. a partition of the ``K`` pairs into
classes of equal value, and the projection on such a subspace replaces each class by
its ``1/V``-weighted mean. The projection on ``C_j`` is therefore the closest to
``omega`` of the class-mean points, over all partitions, that lie in ``C_j``: the
solver enumerates the ``Bell(K)`` partitions (5 for ``T = 2``, 203 for ``T = 3``) and
the realisable regions (4 and 25), a finite and exact search (``T <= 3``).
Partially consistent regions (some rows right, some wrong) are among the regions;
"stay at ``omega``" is the partition into singletons.

Derivatives. Between jumps ``h* = M omega`` with ``M`` the class-mean operator of the
chosen partition, so ``dg_k / domega_k = (M_kk - 1) / V_k`` with ``M_kk = (1/V_k) /
sum_{l in class(k)} 1/V_l`` (``0`` for a pair left at ``omega``). Where the minimiser
jumps from one region or face to another (the objectives of two candidates tie),
``g`` jumps by ``[h*] / V`` and ``dg/domega`` has a Dirac part on that surface, which
the average ``E[dg/domega]`` of the state evolution and of GAMP's Onsager term must
count (the Moreau envelope is continuous with kinks; the averaged conjugates are
derivatives of its Gaussian average). :func:`finish` returns the almost-everywhere
derivative above; :func:`smoothed_divergence` the derivative of ``g`` smoothed by a
narrow Gaussian along each pair, which counts the jumps (what GAMP on data at finite
scale would need); the finite-scale output side of :mod:`attnlib.se` uses the exact
Stein form of ``a_hat`` (:func:`stein_a_hat`).

The zero-scale limit. The loss is invariant under ``h -> c h`` and the state evolution
and GAMP of this task shrink the scale of ``S_hat`` to zero (:mod:`attnlib.hardmax`);
there the quadratic term is negligible against the jumps of the loss and the prox is
the projection on the lowest-cost region, :func:`projection`: a Lipschitz map, whose
almost-everywhere derivative is the exact average one.
"""

from __future__ import annotations

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize
import scipy.stats

from attnlib import _checks
from attnlib import tasks as _tasks
from attnlib.channels.losses import OutputStep, check_args

__all__ = [
    "MAX_T",
    "regions",
    "partitions",
    "region_costs",
    "prox",
    "finish",
    "output_step",
    "projection",
    "smoothed_divergence",
    "stein_a_hat",
]

MAX_T = 3
"""Largest ``T`` of the exact solver (``Bell(10) = 115975`` partitions at ``T = 4``)."""

_CHUNK_ENTRIES = 1 << 23  # floats per vmapped block of the enumeration (64 MiB per array)


def _check_T(T: int) -> int:
    T = _checks.integer("T", T, 2)
    if T > MAX_T:
        raise ValueError(f"T must be in [2, {MAX_T}] for the exact hardmax prox, got {T}")
    return T


def _constraints(T: int, j) -> np.ndarray:
    """``(T (T - 1), K)`` rows ``e_{a j_a} - e_{ab}``: ``A h >= 0`` on the region ``C_j``."""
    ia, ib = _tasks.pair_indices(T)
    idx = {}
    for k, (a, b) in enumerate(zip(ia, ib, strict=True)):
        idx[(a, b)] = idx[(b, a)] = k
    rows = []
    for a in range(T):
        for b in range(T):
            if b != j[a]:
                r = np.zeros(len(ia))
                r[idx[(a, j[a])]] += 1.0
                r[idx[(a, b)]] -= 1.0
                rows.append(r)
    return np.array(rows)


def _realisable(A: np.ndarray) -> bool:
    """Whether ``{A h >= 1}`` is non-empty (the region has an interior)."""
    K = A.shape[1]
    res = scipy.optimize.linprog(
        np.zeros(K), A_ub=-A, b_ub=-np.ones(len(A)), bounds=[(None, None)] * K, method="highs"
    )
    return res.status == 0


@functools.cache
def regions(T: int) -> tuple[np.ndarray, np.ndarray]:
    """Realisable assignments ``J`` ``(R, T)`` and their constraints ``A`` ``(R, T(T-1), K)``."""
    T = _check_T(T)
    J, A = [], []
    for j in itertools.product(range(T), repeat=T):
        Aj = _constraints(T, j)
        if _realisable(Aj):
            J.append(j)
            A.append(Aj)
    return np.array(J), np.array(A)


@functools.cache
def partitions(K: int) -> np.ndarray:
    """All set partitions of ``K`` items as ``(Bell(K), K, K)`` 0/1 membership matrices
    ``O[p, k, c] = 1`` if item ``k`` is in class ``c`` (restricted growth strings)."""
    K = _checks.integer("K", K, 1)
    out = []

    def grow(prefix, top):
        if len(prefix) == K:
            member = np.zeros((K, K))
            member[np.arange(K), prefix] = 1.0
            out.append(member)
            return
        for c in range(top + 2):
            grow(prefix + [c], max(top, c))

    grow([0], 0)
    return np.array(out)


def region_costs(task, Y) -> jax.Array:
    """Loss ``c(j) = sum_a ||Y_a - e_{j_a}||^2`` of every realisable region, ``(n, R)``."""
    J, _ = regions(task.T)
    T = task.T
    rows = jnp.arange(T)
    picked = Y[:, rows[None, :], jnp.asarray(J)]  # (n, R, T): Y[a, j_a]
    return jnp.sum(Y**2, axis=(-2, -1))[:, None] + T - 2.0 * jnp.sum(picked, axis=-1)


def _one(memb, A, cost, om, v, tol):
    """Exact prox of one sequence: ``(h*, objective, diag of dh*/domega)``."""
    w = 1.0 / v
    den = jnp.einsum("pkc,k->pc", memb, w)
    mean = jnp.einsum("pkc,k->pc", memb, w * om) / jnp.where(den > 0, den, 1.0)
    h = jnp.einsum("pkc,pc->pk", memb, mean)  # (P, K) class-mean points
    dist = 0.5 * jnp.sum((h - om) ** 2 * w, axis=-1)
    scale = 1.0 + jnp.max(jnp.abs(om))
    slack = jnp.einsum("rck,pk->prc", A, h)
    feas = jnp.all(slack >= -tol * scale, axis=-1)  # (P, R)
    tot = jnp.where(feas, dist[:, None] + cost[None, :], jnp.inf)
    best = jnp.argmin(tot.reshape(-1))
    p = best // tot.shape[1]
    diag = w * jnp.einsum("kc,c->k", memb[p], 1.0 / jnp.where(den[p] > 0, den[p], 1.0))
    return h[p], tot.reshape(-1)[best], diag


@functools.partial(jax.jit, static_argnames=("T",))
def _prox_jit(T, cost, omega, V, tol):
    J, A = regions(T)
    memb = jnp.asarray(partitions(_tasks.n_pairs(T)), dtype=omega.dtype)
    A = jnp.asarray(A, dtype=omega.dtype)
    one = functools.partial(_one, memb, A)
    chunk = max(1, _CHUNK_ENTRIES // (memb.shape[0] * A.shape[0] * A.shape[1]))
    if omega.shape[0] <= chunk:  # T = 2: 209715 sequences; T = 3: 275
        return jax.vmap(one, in_axes=(0, 0, 0, None))(cost, omega, V, tol)
    return jax.lax.map(lambda a: one(*a, tol), (cost, omega, V), batch_size=chunk)


def _check(task, Y, omega, V):
    if not isinstance(task, _tasks.Hardmax):
        raise ValueError(f"task must be an attnlib.tasks.Hardmax, got {task!r}")
    _check_T(task.T)
    check_args(task, Y=(Y, "labels"), omega=(omega, "pairs"), V=(V, "variances"))
    omega = jnp.asarray(omega, dtype=jnp.float64)
    if omega.ndim != 2:
        raise ValueError(f"omega must have shape (n, K), got {omega.shape}")
    V = jnp.broadcast_to(jnp.asarray(V, dtype=jnp.float64), omega.shape)
    Y = jnp.asarray(Y, dtype=jnp.float64)
    if Y.shape != (omega.shape[0], task.T, task.T):
        raise ValueError(f"Y must have shape (n, T, T) = {(omega.shape[0], task.T, task.T)}")
    return Y, omega, V


def _raw(task, Y, omega, V, tol=1e-10):
    return _prox_jit(task.T, region_costs(task, Y), omega, V, tol)


def prox(task, Y, omega, V, *, tol: float = 1e-10):
    """Exact proximal map ``argmin_h loss(Y, h) + sum_k (h_k - omega_k)^2 / (2 V_k)``.

    Args:
      task: an :class:`attnlib.tasks.Hardmax` with ``T <= 3``.
      Y: labels ``(n, T, T)`` (one-hot rows, or any real rows with output noise).
      omega: centres ``(n, K)``; V: variances ``(K,)`` or ``(n, K)``, ``> 0``.
      tol: relative tolerance of the feasibility test ``A h >= -tol (1 + max|omega|)``.

    Returns:
      ``(h, objective)``: the minimiser ``(n, K)`` and the minimum ``(n,)`` (the loss
      at a tie is the lower semicontinuous envelope: a tied row counts as right when one
      of its maximal entries is the label's column).
    """
    Y, omega, V = _check(task, Y, omega, V)
    tol = _checks.positive("tol", tol)
    h, obj, _ = _raw(task, Y, omega, V, tol)
    return h, obj


def finish(task, Y, omega, V) -> OutputStep:
    """Output step at the exact prox: ``h*``, ``g = (h* - omega) / V``, the almost-everywhere
    derivative ``dg = (M_kk - 1) / V_k`` (no jump part, see the module docstring) and the
    loss at ``h*`` (envelope convention at ties). Shapes as in :func:`prox`."""
    Y, omega, V = _check(task, Y, omega, V)
    return _finish(task, Y, omega, V)


def _finish(task, Y, omega, V) -> OutputStep:
    h, obj, diag = _raw(task, Y, omega, V)
    loss = obj - 0.5 * jnp.sum((h - omega) ** 2 / V, axis=-1)
    return OutputStep(h=h, g=(h - omega) / V, dg=(diag - 1.0) / V, loss=loss)


def projection(task, Y, omega, V) -> OutputStep:
    r"""The zero-scale limit of the output step: project on the lowest-cost region.

    Scaling ``omega -> eps omega``, ``V -> eps V`` with ``eps -> 0`` (the limit in which
    the state evolution and GAMP of this task live, see :mod:`attnlib.hardmax`), the
    quadratic term costs ``O(eps)`` against jumps of the loss of order one, so ``h*``
    is the ``1/V``-weighted projection of ``omega`` on the closed region ``C_j*`` of the
    lowest loss ``c(j*)`` (``j*`` the labels' own assignment for one-hot labels). A
    projection on a convex cone: Lipschitz, positively homogeneous, no jumps, so the
    almost-everywhere ``dg = (M_kk - 1) / V_k`` is the exact average derivative.
    Returns :class:`OutputStep` (``loss = c(j*)``); shapes as in :func:`prox`.
    """
    Y, omega, V = _check(task, Y, omega, V)
    return _projection(task, Y, omega, V)


def _projection(task, Y, omega, V) -> OutputStep:
    cost = region_costs(task, Y)
    low = jnp.min(cost, axis=-1, keepdims=True)
    only = jnp.where(cost <= low + 1e-12 * (1.0 + jnp.abs(low)), 0.0, jnp.inf)
    h, _, diag = _prox_jit(task.T, only, omega, V, 1e-10)
    loss = low[:, 0]
    return OutputStep(h=h, g=(h - omega) / V, dg=(diag - 1.0) / V, loss=loss)


def output_step(task, Y, omega, V, *, width: float = 0.1) -> OutputStep:
    """:func:`finish` with ``dg`` replaced by :func:`smoothed_divergence` (jumps counted,
    relative smoothing ``width``): the output step a GAMP iteration at finite scale needs
    (:mod:`attnlib.hardmax` iterates at zero scale, where the channel has no jumps)."""
    Y, omega, V = _check(task, Y, omega, V)
    width = _checks.positive("width", width)
    out = _finish(task, Y, omega, V)
    return out._replace(dg=_smoothed(task, Y, omega, V, width, 16))


def _half_normal_nodes(M: int) -> np.ndarray:
    return scipy.stats.norm.ppf(0.5 + 0.5 * (np.arange(M) + 0.5) / M)


def _smoothed(task, Y, omega, V, width, n_nodes):
    n, K = omega.shape
    z = jnp.asarray(_half_normal_nodes(n_nodes), dtype=omega.dtype)  # (M,)
    s = width * jnp.sqrt(V)  # (n, K)
    eye = jnp.eye(K, dtype=omega.dtype)
    # shifts (n, K, 2, M, K): +-s_k z_i along pair k
    sign = jnp.array([1.0, -1.0], dtype=omega.dtype)
    shift = (s[:, :, None, None, None] * sign[None, None, :, None, None]
             * z[None, None, None, :, None] * eye[None, :, None, None, :])  # fmt: skip
    om = (omega[:, None, None, None, :] + shift).reshape(-1, K)
    m = K * 2 * n_nodes
    Yr = jnp.repeat(Y, m, axis=0)
    Vr = jnp.repeat(V, m, axis=0)
    h, _, _ = _raw(task, Yr, om, Vr)
    g = ((h - om) / Vr).reshape(n, K, 2, n_nodes, K)
    gk = jnp.diagonal(g, axis1=1, axis2=4)  # (n, 2, M, K): g_k at the shifts along k
    diff = gk[:, 0] - gk[:, 1]  # (n, M, K)
    return jnp.mean(diff * z[None, :, None], axis=1) / (2.0 * s)


def smoothed_divergence(task, Y, omega, V, *, width: float = 0.1, n_nodes: int = 16):
    r"""Average derivative of ``g_k`` along pair ``k``, jumps included, ``(n, K)``.

    ``D_k = d/domega_k E_z[g_k(omega + s_k z e_k)]`` with ``z ~ N(0, 1)`` and ``s_k =
    width sqrt(V_k)``, computed as
    ``E[(g_k(omega + s_k |z| e_k) - g_k(omega - s_k |z| e_k)) |z|] / (2 s_k)`` on
    ``n_nodes`` half-normal quantiles. Averaged over sequences it is the distributional
    ``E[dg/domega]`` of ``omega`` widened by the variance ``s_k^2`` (relative bias
    ``O(width^2 V / Var omega)``): a jump of ``g`` of size ``[g]`` at distance ``t`` adds
    ``[g] phi(t / s_k) / s_k`` (up to the quadrature of ``z``).
    """
    Y, omega, V = _check(task, Y, omega, V)
    width = _checks.positive("width", width)
    n_nodes = _checks.integer("n_nodes", n_nodes, 1)
    return _smoothed(task, Y, omega, V, width, n_nodes)


def stein_a_hat(g, omega, h0, m, q, Q0):
    r"""Per-sample Stein form of ``a_hat / alpha = sum_k sigma_k^2 E[-dg_k/domega_k]``.

    Given the target pairs ``h0`` (and the label noise), ``omega_k ~ N((m/Q0) h0_k,
    sigma_k^2 r)`` independently, ``r = q - m^2/Q0``, so Gaussian integration by parts
    gives ``sigma_k^2 E[dg_k/domega_k] = E[g_k (omega_k - (m/Q0) h0_k)] / r``, exact
    across the jumps of ``g``. Returns ``-sum_k g_k (omega_k - (m/Q0) h0_k) / r``, shape
    ``(...)`` for ``g, omega, h0`` of shape ``(..., K)`` (to be averaged; jax-traceable).
    """
    r = jnp.maximum(q - m * m / Q0, 1e-300)
    return -jnp.sum(g * (omega - (m / Q0) * h0), axis=-1) / r
