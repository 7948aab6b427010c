r"""GAMP on a finite data set for hardmax attention, renormalised (the nuclear + PSD penalty).

The iteration is that of :func:`attnlib.amp.gamp` (module docstring there) with the
output channel of the zero-scale limit, the ``1/V``-weighted projection of ``omega`` on
the closed region of each sequence's labels
(:func:`attnlib.channels.hardmax.projection`, exact derivatives, no jumps). Each step is
positively homogeneous of degree one in ``(S_hat, v)`` at fixed ``g`` (see
:mod:`attnlib.hardmax.state_evolution`), and the scale of ``S_hat`` contracts to zero, so
after each step ``S_hat`` and ``v`` are divided by ``sqrt(Tr(S_hat^2) / (d Q0))``
(``Q0`` the target's ``Tr S0^2 / d``, the normalisation of the state evolution); this
does not change the directions visited. The direction does not depend on ``lam > 0``
(``lam = 1`` is used). Convergence: the relative change of the normalised ``S_hat``.
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
from attnlib.amp import _data_gradient_sum, _spectral_prox
from attnlib.tasks import Hardmax, pair_variances, preactivations, to_pairs

__all__ = ["HardmaxGAMP", "gamp"]


class HardmaxGAMP(NamedTuple):
    """Result of :func:`gamp`: normalised ``S`` ``(d, d)`` (``Tr S^2 / d = Q0``), ``v``, the
    last scale factor ``kappa_scale`` (``< 1``: contraction per step), ``a_hat`` before the
    rescaling, ``history`` of residuals, ``converged``, ``n_iter``, ``residual``,
    ``trace`` (values of ``observe``)."""

    S: np.ndarray
    v: float
    kappa_scale: float
    a_hat: float
    history: np.ndarray
    converged: bool
    n_iter: int
    residual: float
    trace: np.ndarray


@functools.partial(jax.jit, static_argnames=("task",))
def _iterate(task, X, Y, Q0, damping, state):
    S, v, g = state
    n, T, d = X.shape
    sig2 = jnp.asarray(pair_variances(T), X.dtype)
    h = to_pairs(preactivations(X, S))
    V = jnp.broadcast_to(sig2 * v, h.shape)
    omega = h - V * g
    out = channels.hardmax._projection(task, Y, omega, V)
    a_hat = (n / d**2) * jnp.sum(sig2 * jnp.mean(-out.dg, axis=0))
    B = S + _data_gradient_sum(X, out.g) / (d * a_hat)
    S_new, div = _spectral_prox(B, 1.0 / a_hat, "nuclear")
    v_new = div / (d**2 * a_hat)
    scale = jnp.sqrt(jnp.sum(S_new**2) / (d * Q0))
    S_new, v_new = S_new / scale, v_new / scale
    res = jnp.linalg.norm(S_new - S) / jnp.linalg.norm(S_new)
    new = (damping * S + (1 - damping) * S_new, damping * v + (1 - damping) * v_new,
           damping * g + (1 - damping) * out.g)  # fmt: skip
    return new, (res, scale, a_hat)


def gamp(
    task, data, Q0: float, *, damping: float = 0.5, max_iter: int = 500, tol: float = 1e-6,
    S_init=None, v_init: float = 0.3, observe=None,
) -> HardmaxGAMP:  # fmt: skip
    """Renormalised GAMP for hardmax attention on ``data`` (``X`` ``(n, T, d)``, ``Y``
    ``(n, T, T)``), with ``Q0`` in ``[1e-100, 1e100]`` the normalisation ``Tr S^2 / d``
    (the state evolution's ``Q0``; ``v_init`` in the same range, default ``0.3``).
    ``S_init``: symmetric ``(d, d)`` start (default the identity: no information). Warns with
    the residual if ``max_iter`` iterations do not reach ``tol``. ``observe``: optional
    callable of the normalised ``S`` (numpy ``(d, d)``) returning a float, recorded after
    every iteration in ``trace`` (e.g. the cosine with the target: at finite ``d`` the
    iterate fluctuates around the state evolution's ray, average over iterations)."""
    if not isinstance(task, Hardmax):
        raise ValueError(f"task must be an attnlib.tasks.Hardmax, got {task!r}")
    X, Y, d = _checks.dataset(task, data)
    Q0 = _checks.in_interval("Q0", Q0, 1e-100, 1e100, low_open=False)
    damping = _checks.in_interval("damping", damping, 0.0, 1.0, low_open=False, high_open=True)
    max_iter = _checks.integer("max_iter", max_iter, 1)
    tol = _checks.positive("tol", tol)
    v = _checks.in_interval("v_init", v_init, 1e-100, 1e100, low_open=False)
    S = np.eye(d) if S_init is None else np.asarray(S_init, dtype=np.float64)
    if S.shape != (d, d) or not np.all(np.isfinite(S)):
        raise ValueError(f"S_init must be a finite ({d}, {d}) matrix, got shape {S.shape}")
    S = 0.5 * (S + S.T) / math.sqrt(np.sum(S**2) / (d * Q0))
    X, Y = jnp.asarray(X, dtype=jnp.float64), jnp.asarray(Y, dtype=jnp.float64)
    state = (jnp.asarray(S), jnp.asarray(v), jnp.zeros((X.shape[0], task.n_pairs)))
    if observe is not None and not callable(observe):
        raise ValueError(f"observe must be None or a callable of S, got {observe!r}")
    hist, trace, aux = [], [], (np.inf, np.nan, np.nan)
    for _ in range(max_iter):
        state, aux = _iterate(task, X, Y, jnp.float64(Q0), jnp.float64(damping), state)
        hist.append(float(aux[0]))
        if len(hist) == 1 and not float(aux[1]) > 0:
            raise ValueError(f"v_init = {v_init!r}: the first step thresholds the whole spectrum "
                             "(S_hat = 0); start from a smaller v_init")  # fmt: skip
        if observe is not None:
            trace.append(float(observe(np.asarray(state[0]))))
        if not math.isfinite(hist[-1]):
            raise FloatingPointError(f"hardmax gamp broke down after {len(hist)} iterations")
        if hist[-1] < tol:
            break
    if hist[-1] >= tol:
        warnings.warn(f"hardmax gamp: residual {hist[-1]:.3g} >= tol {tol:.3g} after "
                      f"{len(hist)} iterations", RuntimeWarning, stacklevel=2)  # fmt: skip
    S = np.asarray(state[0])
    return HardmaxGAMP(S=S, v=float(state[1]), kappa_scale=float(aux[1]), a_hat=float(aux[2]),
                       history=np.asarray(hist), converged=hist[-1] < tol, n_iter=len(hist),
                       residual=hist[-1], trace=np.asarray(trace))  # fmt: skip
