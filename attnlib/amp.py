r"""GAMP for the ERM of the attention-indexed model on a finite data set (matrix form).

The ERM (the book's chapters 04_gamp and 05_state_evolution, and its notation page) on
``n`` sequences ``X_mu`` of shape ``(T, d)``:

    nuclear:   min_{S PSD}  sum_mu ||Y_mu - g(h_mu(S))||^2 + d lam Tr S,
    frobenius: min_S        sum_mu ||Y_mu - g(h_mu(S))||^2 + d (lam/2) ||S||_F^2.

It is a generalised linear model in the ``D = d (d + 1) / 2`` orthonormal
coordinates of symmetric matrices: ``h_ab(S) = <S, Z_ab>_F`` with

    Z_aa = (x_a x_a^T - I) / sqrt(d),   Z_ab = (x_a x_b^T + x_b x_a^T) / (2 sqrt(d))  (a < b),

whose coordinates are nearly i.i.d. with variance ``sigma_ab^2 / d``,
``sigma_ab^2 = 1 + delta_ab``. GAMP with one scalar variance ``v`` (04_gamp,
the GAMP section) iterates, with ``alpha = n / d^2``:

1. output step (:func:`attnlib.channels.output_step`), for every sequence and pair:
   ``V_ab = sigma_ab^2 v``, ``omega = h(S_hat) - V g_old`` (Onsager term),
   ``h* = argmin_h loss(Y, h) + sum_ab (h_ab - omega_ab)^2 / (2 V_ab)``,
   ``g = (h* - omega) / V`` and ``dg = diag dg/domega``;
2. ``a_hat = alpha sum_ab sigma_ab^2 mean_mu(-dg_ab)``;
3. ``B = S_hat + (1 / (d a_hat)) sum_mu sum_ab g_ab Z_ab``. Without forming the
   ``Z``: with the symmetric ``T x T`` matrix ``G_mu`` with ``G_aa = g_aa`` and
   ``G_ab = G_ba = g_ab / 2`` (``a < b``),
   ``sum_ab g_ab Z_ab = (X_mu^T G_mu X_mu - Tr(G_mu) I) / sqrt(d)``, because
   ``X^T G X = sum_a g_aa x_a x_a^T + sum_{a<b} (g_ab / 2)(x_a x_b^T + x_b x_a^T)``;
   the sum over ``mu`` is one ``(d, n T) @ (n T, d)`` product;
4. ``S_hat = F(B)``, the spectral proximal map of the penalty with threshold
   ``tau = lam / a_hat``: eigenvalues ``x -> max(x - tau, 0)`` (nuclear + PSD) or
   ``x -> x / (1 + tau)`` (Frobenius);
5. ``v = div F(B) / (d^2 a_hat)`` with the divergence over the ``D`` orthonormal
   coordinates ``div F = sum_i f'(x_i) + sum_{i<j} (f(x_i) - f(x_j)) / (x_i - x_j)``.

Constants: ``1 / (d a_hat)`` is the GAMP input variance
``1 / sum_mu sum_ab ||Z_ab||^2_coord (-dg_ab)`` (``||Z_ab||^2 ~ sigma_ab^2 D / d``,
``n = alpha d^2``, ``D ~ d^2/2`` cancels against the per-coordinate variance),
and ``V_ab = sigma_ab^2 D / d * (div F / D) / (d a_hat) = sigma_ab^2 v``.

Fixed point = ERM minimiser. At a fixed point ``omega = h(S_hat) - V g`` and
``h* = omega + V g``, so ``h* = h(S_hat)`` and, by the optimality of the prox,
``g = -grad_h loss(Y, h(S_hat))``. Since ``grad_S L(S) = sum_mu sum_ab
(d loss / d h_ab) Z_ab``, step 3 reads ``B = S_hat - grad L(S_hat) / (d a_hat)`` and
step 4 is the proximal-gradient step with step size ``eta = 1 / (d a_hat)``: the
threshold ``eta d lam = lam / a_hat`` (nuclear) and the shrinkage
``1 + eta d lam = 1 + lam / a_hat`` (Frobenius) are exactly those of the penalties
above. A fixed point of GAMP (for any ``a_hat > 0``, any damping) is therefore a
fixed point of proximal gradient, i.e. satisfies the KKT conditions of the ERM.

Numerics. ``S_hat``, ``v`` and ``g`` are damped (``new = beta old + (1 - beta)
update``, default ``beta = 0.5``; undamped iterations oscillate at ``d = 60``); damping
does not move the fixed point. For non-linear tasks the ``K``-dimensional prox is
solved by a few steps of the safeguarded Newton method of :func:`attnlib.channels.prox`,
warm-started at the previous ``h*`` (close to the
answer once the iteration settles); a batch in which some sequence does not end
at a verified strict local minimum is redone with more steps and then with the
multi-start solver of :func:`attnlib.channels.output_step`. The linear task uses
the closed form. Each iteration costs one ``(d, nT) @ (nT, d)`` product, one
``d x d`` eigendecomposition and the ``n`` small prox problems.
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import _checks, channels
from attnlib.rmt import spectral_divergence
from attnlib.spectral_map import PENALTIES, SpectralMap, check_penalty
from attnlib.tasks import Dataset, Task, pair_variances, preactivations, to_pairs

__all__ = [
    "PENALTIES",
    "GAMPResult",
    "gamp",
    "spectral_prox",
    "spectral_divergence",
    "data_gradient_sum",
]


class GAMPResult(NamedTuple):
    """Result of :func:`gamp`.

    Attributes:
      S: the estimate ``S_hat``, symmetric ``(d, d)`` (numpy float64).
      v: the scalar GAMP variance at the last iteration.
      a_hat: ``alpha sum_ab sigma_ab^2 mean(-dg_ab)`` at the last iteration.
      history: residual ``||S_new - S_old||_F / max(||S_new||_F, 1e-12)`` per iteration
        (before damping; ``(n_iter,)``).
      converged: whether the residual fell below ``tol``.
      n_iter: number of iterations run.
      residual: the last residual.
      n_fallback: iterations whose output step needed the multi-start solver of
        :func:`attnlib.channels.output_step` (the local Newton solver failed its check).
    """

    S: np.ndarray
    v: float
    a_hat: float
    history: np.ndarray
    converged: bool
    n_iter: int
    residual: float
    n_fallback: int = 0


def data_gradient_sum(X: jax.Array, g: jax.Array) -> jax.Array:
    r"""``sum_mu sum_{a<=b} g_ab Z_ab`` for ``X`` ``(n, T, d)`` and pair values ``g`` ``(n, K)``.

    Equal to ``(sum_mu X_mu^T G_mu X_mu - sum_mu Tr(G_mu) I) / sqrt(d)`` with
    ``G_aa = g_aa``, ``G_ab = G_ba = g_ab / 2``. With ``g = dloss/dh`` it is the
    gradient (in ``S``) of ``sum_mu loss(h_mu(S))``.
    """
    if not isinstance(X, jax.core.Tracer) and not isinstance(g, jax.core.Tracer):
        Xa = _checks.finite_array("X", X, ndim=3, max_abs=_checks.MAX_ABS)
        Xa = np.asarray(Xa)
        if min(Xa.shape) < 1:
            raise ValueError(f"X must have shape (n, T, d) with n, T, d >= 1, got {Xa.shape}")
        K = Xa.shape[1] * (Xa.shape[1] + 1) // 2
        want = (Xa.shape[0], K)
        _checks.finite_array("g", g, ndim=2, shape=want, against="X", max_abs=_checks.MAX_ABS)
    return _data_gradient_sum(jnp.asarray(X), jnp.asarray(g))


def _data_gradient_sum(X, g):
    n, T, d = X.shape
    ia, ib = np.triu_indices(T)
    half = jnp.where(jnp.asarray(ia == ib), 1.0, 0.5).astype(g.dtype)
    G = jnp.zeros((n, T, T), g.dtype).at[:, ia, ib].set(g * half).at[:, ib, ia].set(g * half)
    GX = jnp.einsum("nab,nbi->nai", G, X)
    M = X.reshape(n * T, d).T @ GX.reshape(n * T, d)
    tr = jnp.sum(g * (ia == ib))
    return (0.5 * (M + M.T) - tr * jnp.eye(d, dtype=g.dtype)) / math.sqrt(d)


def spectral_prox(B: jax.Array, tau: float, penalty: str = "nuclear"):
    """``(F(B), div F(B))`` for the penalty's spectral prox with threshold ``tau >= 0``:
    eigenvalues ``x -> max(x - tau, 0)`` (nuclear + PSD) or ``x / (1 + tau)`` (Frobenius)."""
    check_penalty(penalty)
    tau = _checks.nonnegative("tau", tau)
    B = jnp.asarray(B)
    if B.ndim != 2 or B.shape[0] != B.shape[1]:
        raise ValueError(f"B must be a square (d, d) matrix, got shape {B.shape}")
    if not isinstance(B, jax.core.Tracer):  # stays differentiable under jax transforms
        _checks.finite_array("B", np.asarray(B))
    return _spectral_prox(B, tau, penalty)


@functools.partial(jax.jit, static_argnames=("penalty",))
def _spectral_prox(B, tau, penalty):
    x, U = jnp.linalg.eigh(0.5 * (B + B.T))
    fmap = SpectralMap(1.0, tau, penalty)
    f, fp = fmap.f(x), fmap.fprime(x)
    S = (U * f[None, :]) @ U.T
    return 0.5 * (S + S.T), spectral_divergence(x, f, fp)


class _State(NamedTuple):
    S: jax.Array
    v: jax.Array
    g: jax.Array
    hstar: jax.Array  # last proximal points (warm start of the local Newton solver)
    a_hat: jax.Array
    res: jax.Array


def _output(task, Y, omega, V, warm, opts):
    """Output step: closed form for the linear task; otherwise the public jitted prox
    (:func:`attnlib.channels.prox`) warm-started at the previous ``h*`` for ``n_newton``
    safeguarded Newton steps (``robust=False``; also returns whether every sequence
    ends at a strict local minimum with a small gradient) or the multi-start
    :func:`attnlib.channels.output_step` (``robust=True``)."""
    n_newton, robust = opts
    if channels.for_task(task).closed_form_output:
        return channels.output_step(task, Y, omega, V), jnp.asarray(True)
    if robust:
        return channels.output_step(task, Y, omega, V, starts=warm), jnp.asarray(True)
    Vb = jnp.broadcast_to(V, omega.shape)
    p = channels.prox(task, Y, omega, Vb, warm[:, None, :], max_iter=n_newton)
    out, ok = channels.finish(task, Y, omega, Vb, p.h)
    return out, jnp.all(ok)


@functools.partial(jax.jit, static_argnames=("task", "penalty", "opts"))
def _iterate(task, penalty, opts, arrays, st: _State):
    """One GAMP iteration; returns the new state and whether its output step is trusted."""
    X, Y, lam, damping = arrays
    n, T, d = X.shape
    sig2 = jnp.asarray(pair_variances(T), X.dtype)
    alpha = n / d**2
    h = to_pairs(preactivations(X, st.S))
    V = sig2 * st.v
    omega = h - V * st.g
    out, ok = _output(task, Y, omega, V, st.hstar, opts)
    a_hat = alpha * jnp.sum(sig2 * jnp.mean(-out.dg, axis=0))
    B = st.S + _data_gradient_sum(X, out.g) / (d * a_hat)
    S_new, div = _spectral_prox(B, lam / a_hat, penalty)
    v_new = div / (d**2 * a_hat)
    res = jnp.linalg.norm(S_new - st.S) / jnp.maximum(jnp.linalg.norm(S_new), 1e-12)
    S = damping * st.S + (1 - damping) * S_new
    v = damping * st.v + (1 - damping) * v_new
    g = damping * st.g + (1 - damping) * out.g
    return _State(S, v, g, out.h, a_hat, res), ok


def _check_gamp_args(task, data, lam, penalty, damping):
    if getattr(task, "piecewise_constant", False):  # scale contracts to 0: see attnlib.hardmax
        raise ValueError(f"task {task!r}: piecewise-constant loss; use attnlib.hardmax.gamp")
    check_penalty(penalty)
    lam = (
        _checks.nonnegative("lam", lam) if penalty == "frobenius" else _checks.positive("lam", lam)
    )
    damping = _checks.in_interval("damping", damping, 0.0, 1.0, low_open=False, high_open=True)
    return lam, damping


def _data_arrays(task, data):
    """``(X, Y)`` as float64 numpy arrays after the shared data checks."""
    X, Y, _ = _checks.dataset(task, data)
    return np.asarray(X, dtype=np.float64), np.asarray(Y, dtype=np.float64)


def _initial_state(task, X, S_init, v_init) -> _State:
    n, _, d = X.shape
    v_init = _checks.positive("v_init", v_init)
    if S_init is None:
        S0 = np.zeros((d, d))
    else:
        S0 = np.asarray(S_init, dtype=np.float64)
        if S0.shape != (d, d):
            raise ValueError(f"S_init must have shape ({d}, {d}), got {S0.shape}")
        _checks.finite_array("S_init", S0)
        S0 = 0.5 * (S0 + S0.T)
    return _State(
        S=jnp.asarray(S0),
        v=jnp.asarray(v_init),
        g=jnp.zeros((n, task.n_pairs)),
        hstar=to_pairs(preactivations(jnp.asarray(X), jnp.asarray(S0))),
        a_hat=jnp.asarray(np.nan),
        res=jnp.asarray(np.inf),
    )


def _step(task, penalty, n_newton, arrays, st):
    """One GAMP iteration with the prox fallbacks: ``(state, used the multi-start)``."""
    new, ok = _iterate(task, penalty, (n_newton, False), arrays, st)
    if not bool(ok):  # more local Newton steps, then the global multi-start solver
        new, ok = _iterate(task, penalty, (8 * n_newton, False), arrays, st)
    if bool(ok):
        return new, False
    new, _ = _iterate(task, penalty, (n_newton, True), arrays, st)
    return new, True


def _run(task, penalty, n_newton, arrays, st, limits):
    """Iterate until the residual is below ``tol``: ``(state, history, converged, n_fallback)``."""
    max_iter, tol = limits
    hist, n_fallback = [], 0
    for _ in range(max_iter):
        st, fallback = _step(task, penalty, n_newton, arrays, st)
        n_fallback += int(fallback)
        res, a_hat = float(st.res), float(st.a_hat)
        hist.append(res)
        if not (math.isfinite(res) and math.isfinite(a_hat) and a_hat > 0):
            raise FloatingPointError(
                f"gamp: iteration broke down after {len(hist)} iterations "
                f"(a_hat = {a_hat:.3g}, residual {res:.3g}); increase damping"
            )
        if res < tol:
            return st, hist, True, n_fallback
    return st, hist, False, n_fallback


def gamp(
    task: Task, data: Dataset, lam: float, penalty: str = "nuclear", *, damping: float = 0.5,
    max_iter: int = 2000, tol: float = 1e-8, S_init=None, v_init: float = 1.0, n_newton: int = 4,
) -> GAMPResult:  # fmt: skip
    r"""GAMP for the nuclear + PSD or Frobenius ERM on the data set ``data``.

    See the module docstring for the iteration and why its fixed point is the
    ERM minimiser (:func:`attnlib.train.train_convex` on the same data).

    Args:
      task: the task (loss and output function).
      data: :class:`attnlib.tasks.Dataset` with ``X`` ``(n, T, d)`` and ``Y``
        ``(n, *task.out_shape)``; ``alpha = n / d^2``.
      lam: penalty strength, ``> 0`` (nuclear) or ``>= 0`` (Frobenius).
      penalty: ``"nuclear"`` (PSD + trace) or ``"frobenius"``.
      damping: weight ``beta`` of the old value in ``S_hat``, ``v`` and ``g``
        (``new = beta old + (1 - beta) update``), in ``[0, 1)``.
      max_iter: maximal number of iterations (each one jit-compiled call).
      tol: stop when the relative change of ``S_hat`` per (undamped) update is below ``tol``.
      S_init: starting symmetric matrix (default zero); v_init: starting ``v > 0``.
      n_newton: warm-started Newton steps of :func:`attnlib.channels.prox` per iteration
        (then 8 times more, then the multi-start :func:`attnlib.channels.output_step`).

    Returns:
      :class:`GAMPResult`. Warns (``RuntimeWarning``) with the residual if not
      converged; raises ``FloatingPointError`` if the iteration produces NaN or a
      non-positive ``a_hat``.
    """
    lam, damping = _check_gamp_args(task, data, lam, penalty, damping)
    max_iter = _checks.integer("max_iter", max_iter, 1)
    tol = _checks.positive("tol", tol)
    n_newton = _checks.integer("n_newton", n_newton, 1)
    X, Y = _data_arrays(task, data)
    st = _initial_state(task, X, S_init, v_init)
    arrays = (jnp.asarray(X), jnp.asarray(Y), jnp.asarray(lam), jnp.asarray(damping))
    st, hist, converged, n_fallback = _run(task, penalty, n_newton, arrays, st, (max_iter, tol))
    done = len(hist)
    history = np.asarray(hist)
    residual = float(history[-1])
    if not converged:
        warnings.warn(
            f"gamp did not converge in {done} iterations: residual {residual:.3g} >= tol {tol:.3g}",
            RuntimeWarning,
            stacklevel=2,
        )
    return GAMPResult(
        S=np.asarray(st.S, dtype=np.float64),
        v=float(st.v),
        a_hat=float(st.a_hat),
        history=history,
        converged=converged,
        n_iter=done,
        residual=residual,
        n_fallback=n_fallback,
    )
