"""Adam or gradient descent on a symmetric ``S`` with the Frobenius penalty."""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp

from attnlib import _checks
from attnlib.tasks import Dataset, Task
from attnlib.train.adam import _run_optax, make_config
from attnlib.train.objective import _curvature, _sym
from attnlib.train.result import TrainResult, _finish, _Run
from attnlib.train.settings import TrainSettings, resolve

__all__ = ["train_direct"]

_DEFAULTS = dict(max_iter=5000, chunk=100, dtype=jnp.float64)  # learning_rate: the rule below


def _default_rate(task, X, Y, S0, lam, method):
    """``(learning_rate, decay)`` when none is given: Adam ``0.02``; GD ``1/L``, constant."""
    if method == "adam":
        return 0.02, None
    X64, Y64 = jnp.asarray(X, jnp.float64), jnp.asarray(Y, jnp.float64)
    L = _curvature(task, X64, Y64, jnp.asarray(S0, jnp.float64)) + S0.shape[0] * lam
    return 1.0 / L, 1.0


def train_direct(
    task: Task,
    data: Dataset,
    lam: float,
    *,
    method: str = "adam",
    settings: TrainSettings | None = None,
    max_iter: int | None = None,
    learning_rate: float | Callable | None = None,
    decay: float | None = None,
    tol: float | None = None,
    chunk: int | None = None,
    dtype=None,
    S_init=None,
    keep_path: bool | None = None,
    time_limit: float | None = None,
) -> TrainResult:
    r"""Train a symmetric ``S`` element-wise with the Frobenius penalty (no PSD constraint).

    Minimises ``sum_mu loss(Y_mu, h_mu(S)) + d (lam/2) ||S||_F^2``; gradients are
    symmetrised so ``S`` stays symmetric.

    Args:
      task, data: the task and the training set.
      lam: penalty strength ``>= 0``.
      method: ``"adam"`` or ``"gd"`` (plain gradient descent).
      settings: :class:`TrainSettings`; ``learning_rate``: Adam peak rate (default
        ``0.02``) or gradient-descent step (default ``1 / L``, ``L`` a power-iteration
        estimate of the curvature at ``S_init``); ``keep_path``: ``S`` after every chunk.
      max_iter, learning_rate, decay, tol, chunk, dtype, keep_path, time_limit:
        shorthands for the fields of ``settings`` (``None``: from ``settings``).
      S_init: initial symmetric ``(d, d)`` matrix (default zero).
    """
    given = dict(max_iter=max_iter, learning_rate=learning_rate, decay=decay, tol=tol, chunk=chunk)
    given.update(dtype=dtype, keep_path=keep_path, time_limit=time_limit)
    s = resolve(settings, given, _DEFAULTS)
    lam = _checks.nonnegative("lam", lam)
    _checks.choice("method", method, ("adam", "gd"))
    make_config(task, "direct", "sgd", s._replace(learning_rate=1.0))  # checks the options
    dt = _checks.float_dtype("dtype", s.dtype)
    X, Y, d = _checks.dataset(task, data)
    Xc, Yc = jnp.asarray(X, dtype=dt), jnp.asarray(Y, dtype=dt)
    if S_init is None:
        S0 = jnp.zeros((d, d), dt)
    else:
        S0 = _sym(jnp.asarray(_checks.square_matrix("S_init", S_init, d, symmetric=True)))
        S0 = jnp.asarray(S0, dtype=dt)
    if s.learning_rate is None:
        learning_rate, gd_decay = _default_rate(task, X, Y, S0, lam, method)
        s = s._replace(learning_rate=learning_rate, decay=s.decay if gd_decay is None else gd_decay)
    cfg = make_config(task, "direct", "adam" if method == "adam" else "sgd", s)
    S, history, residual, done, path = _run_optax(cfg, S0, Xc, Yc, lam)
    run = _Run(_sym(S), None, history, residual < cfg.tol, done, residual, path)
    return _finish(task, X, Y, run, "train_direct", cfg.tol)
