r"""GAMP-RIE: Bayes-optimal message passing on a finite data set (arXiv:2408.03733 at T = 1).

Conventions (see the book's "Notation and conventions" page, ``book/notation.md``):
``h_ab(S) = <S, Z_ab>_F`` for the ``K`` pairs of each sequence, ``sigma_ab^2 = 1 + delta_ab``,
``alpha = n / d^2``. The iteration is the matrix GAMP of the ERM (:mod:`attnlib.amp`)
with the two proximal maps replaced by Bayes-optimal ones:

1. output step: ``V_ab = sigma_ab^2 v``, ``omega = h(S_hat) - V g_old`` (Onsager term),
   ``g = d/d omega log Z_out`` and ``dg = diag dg/domega`` of the task's channel
   (:func:`attnlib.bayes.channels.gaussian_output`);
2. ``a_hat = alpha sum_ab sigma_ab^2 mean_mu(-dg_ab)`` and ``Delta_eff = 1 / (2 a_hat)``;
3. ``B = S_hat + (1 / (d a_hat)) sum_mu sum_ab g_ab Z_ab`` (:func:`attnlib.amp.data_gradient_sum`),
   which behaves like ``S0 + sqrt(Delta_eff) W_goe``;
4. ``S_hat = F(B)`` with the RIE ``f(x) = x - 2 Delta_eff h_R(x)`` of the prior's limiting
   ``rho_R`` (:func:`attnlib.bayes.denoiser.rie_denoise`);
5. ``v = 2 Delta_eff div F(B) / d^2`` (``= mmse_den(Delta_eff)`` in the limit).

``S_hat``, ``v`` and ``g`` are damped (``new = damping old + (1 - damping) update``).
Start: the prior mean ``S_hat = (Tr S0 / d) I`` with ``v`` the prior variance (no
information). Implemented channels: the Gaussian ones (linear; seq2seq without noise or
with noise on the logits) and ``T = 2`` hardmax (:func:`attnlib.bayes.hardmax_exact.output`).
Each iteration costs one ``(d, nT) @ (nT, d)`` product and one ``d x d``
eigendecomposition.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from attnlib import _checks, amp
from attnlib import channels as _channels
from attnlib import tasks as _tasks
from attnlib.bayes import denoiser

__all__ = ["GAMPRIEResult", "gamp_rie"]


class GAMPRIEResult(NamedTuple):
    """Result of :func:`gamp_rie`: the estimate ``S`` ``(d, d)``; per iteration ``(n_iter,)``
    the histories of ``Delta_eff``, ``v`` and (if ``S0`` was given) ``mse = ||S - S0||_F^2/d``;
    ``converged`` (relative change of ``S`` below ``tol``), ``n_iter``, ``residual``."""

    S: np.ndarray
    Delta_eff: np.ndarray
    v: np.ndarray
    mse: np.ndarray
    converged: bool
    n_iter: int
    residual: float


def _check_inputs(task, data, target):
    ok = isinstance(task, _tasks.Task) and _channels.for_task(task).exact_posterior_output
    if not ok:
        raise ValueError(
            f"task must be a Task with a Gaussian channel (is_gaussian) or T = 2 hardmax, "
            f"got {task!r}"
        )
    if not hasattr(target, "measure") or not hasattr(target, "Q0"):
        raise ValueError(f"target must be an attnlib.targets.Target, got {target!r}")
    X = np.asarray(data.X, dtype=float)
    if X.ndim != 3 or X.shape[1] != task.T:
        raise ValueError(f"data.X must have shape (n, T={task.T}, d), got {X.shape}")
    return X


def _step(task, target, X, Y, *, S, v, g_old):
    n, _, d = X.shape
    s2 = _tasks.pair_variances(task.T)
    V = s2 * v
    h = np.asarray(_tasks.to_pairs(_tasks.preactivations(jnp.asarray(X), jnp.asarray(S))))
    omega = h - V[None, :] * g_old
    g, dg = _channels.for_task(task).posterior_output(Y, omega, V)  # Gaussian, or T = 2 hardmax
    a_hat = (n / d**2) * float(np.sum(s2 * np.mean(-dg, axis=0)))
    if not (a_hat > 0 and math.isfinite(a_hat)):
        raise RuntimeError(f"gamp_rie: a_hat = {a_hat} (expected finite and > 0)")
    B = S + np.asarray(amp.data_gradient_sum(jnp.asarray(X), jnp.asarray(g))) / (d * a_hat)
    Delta = 1.0 / (2 * a_hat)
    den = denoiser.rie_denoise(B, target, Delta)
    return den.S, 2 * Delta * den.div / d**2, g, Delta


def gamp_rie(
    task, data, target, *, S0=None, max_iter: int = 50, tol: float = 1e-5, damping: float = 0.5
) -> GAMPRIEResult:
    r"""Run GAMP-RIE on ``data`` (:class:`attnlib.tasks.Dataset`) with the prior of ``target``.

    Args:
      task: a task with a Gaussian channel (:func:`attnlib.bayes.channels.is_gaussian`)
        or ``T = 2`` hardmax without noise or with noise on the logits.
      data: the data set (``X`` of shape ``(n, T, d)``, labels ``Y``).
      target: the prior of ``S0`` (its limiting spectrum enters the RIE).
      S0: the true target ``(d, d)``, only to record the mse per iteration (optional).
      max_iter: iterations (>= 1); tol: relative change of ``S`` that stops the run (> 0).
      damping: weight of the old ``S``, ``v`` and ``g`` in each update, ``0 <= damping < 1``
        (undamped iterations diverge at ``d = 100``; damping does not move the fixed point).
    """
    X = _check_inputs(task, data, target)
    max_iter = _checks.integer("max_iter", max_iter, 1)
    tol = _checks.positive("tol", tol)
    damping = _checks.in_interval("damping", damping, 0.0, 1.0, low_open=False, high_open=True)
    n, _, d = X.shape
    Y = np.asarray(data.Y, dtype=float)
    S = np.eye(d) * target.measure().moment(1)
    v = denoiser.prior_variance(target)
    g = np.zeros((n, task.n_pairs))
    S0 = None if S0 is None else np.asarray(_checks.square_matrix("S0", S0, d, True), float)
    hist_D, hist_v, hist_m = [], [], []
    residual, converged = math.inf, False
    for _ in range(max_iter):
        S_new, v_new, g_new, Delta = _step(task, target, X, Y, S=S, v=v, g_old=g)
        residual = float(np.linalg.norm(S_new - S) / max(np.linalg.norm(S_new), 1e-12))
        S = damping * S + (1 - damping) * S_new
        v = damping * v + (1 - damping) * v_new
        g = damping * g + (1 - damping) * g_new
        hist_D.append(Delta)
        hist_v.append(v)
        if S0 is not None:
            hist_m.append(float(np.sum((S - S0) ** 2) / d))
        if residual < tol:
            converged = True
            break
    return GAMPRIEResult(
        S, np.array(hist_D), np.array(hist_v), np.array(hist_m), converged, len(hist_D), residual
    )
