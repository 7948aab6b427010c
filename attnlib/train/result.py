"""The result of a training run, and what every solver checks and reports."""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from attnlib.train.objective import _mean_loss

__all__ = ["TrainResult"]


class TrainResult(NamedTuple):
    """Result of a training run.

    Attributes:
      S: the learned symmetric ``(d, d)`` matrix (float64 numpy array).
      W: the learned factor ``(d, p)`` for :func:`train_factorized`, else ``None``.
      history: objective value at every step (``(n_iter,)`` numpy array), in the
        units of :func:`objective` (a sum over sequences, not a mean).
      train_loss: mean per-sequence square loss of ``S`` on the training set.
      converged: whether the stopping criterion (``residual < tol``) was met. Not met,
        ``S`` is the last iterate (a ``RuntimeWarning`` gives the residual); after a
        breakdown (``S`` not finite) ``S``, ``W`` and ``train_loss`` are NaN.
      n_iter: number of optimisation steps taken.
      residual: the quantity compared with ``tol``. For the first-order solvers
        (:func:`train_factorized`, :func:`train_direct`) it is the relative
        change of the objective per step over the last chunk of steps; for
        :func:`train_convex` it is the relative norm of the gradient mapping
        ``||S - prox(S - grad/L)||_F / max(||S||_F, ||grad||_F / L)``.
      path: with ``keep_path=True``, the parameters (``W`` for
        :func:`train_factorized`, ``S`` for :func:`train_direct`) after every
        chunk of steps, shape ``(n_chunks, ...)``; step ``(i + 1) * chunk`` is
        ``path[i]``. Otherwise ``None``.
    """

    S: np.ndarray
    W: np.ndarray | None
    history: np.ndarray
    train_loss: float
    converged: bool
    n_iter: int
    residual: float
    path: np.ndarray | None = None


class _Run(NamedTuple):
    """What a solver hands to :func:`_finish`."""

    S: object  # the learned matrix (any array type)
    W: object | None
    history: np.ndarray
    converged: bool
    n_iter: int
    residual: float
    path: np.ndarray | None = None


def _finish(task, X, Y, run: _Run, solver: str, tol: float) -> TrainResult:
    """The result of the run, with the policy of the algorithms on data: not converged,
    the last iterate, ``converged=False`` and a ``RuntimeWarning`` with the residual; a
    breakdown (``S`` not finite, or a NaN residual) the same, with NaN ``S`` (and ``W``) and
    ``train_loss`` where ``S`` is not finite."""
    S = np.asarray(run.S, dtype=np.float64)
    W = None if run.W is None else np.asarray(run.W)
    finite = bool(np.all(np.isfinite(S)))
    if finite:
        X64, Y64 = jnp.asarray(X, jnp.float64), jnp.asarray(Y, jnp.float64)
        tl = float(_mean_loss(task, X64, Y64, jnp.asarray(S)))
    else:
        S, tl = np.full(S.shape, np.nan), math.nan
        W = None if W is None else np.full(W.shape, np.nan)
    if not finite or math.isnan(run.residual):
        warnings.warn(
            f"{solver} broke down after {run.n_iter} steps: residual {run.residual:.3g}"
            + ("" if finite else ", S not finite (S and train_loss are NaN)"),
            RuntimeWarning,
            stacklevel=3,
        )
    elif not run.converged:
        warnings.warn(
            f"{solver} did not converge in {run.n_iter} steps: residual {run.residual:.3g} "
            f">= tol {tol:.3g}",
            RuntimeWarning,
            stacklevel=3,
        )
    return TrainResult(
        S=S,
        W=W,
        history=np.asarray(run.history, dtype=np.float64),
        train_loss=tl,
        converged=bool(run.converged),
        n_iter=int(run.n_iter),
        residual=float(run.residual),
        path=run.path,
    )
