"""Full-batch first-order training with optax (Adam or gradient descent), in jit chunks.

The host loop :func:`_run_optax` calls a jit-compiled ``lax.scan`` of ``chunk`` steps
(:func:`_optax_chunk`) and stops when the relative change of the objective per step,
over the last chunk, is below ``tol``. Its settings are one :class:`OptaxConfig`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from attnlib import _checks, _limits
from attnlib.train.objective import _direct_objective, _factorized_objective, _sym
from attnlib.train.progress import Progress
from attnlib.train.settings import TrainSettings

__all__ = ["OptaxConfig", "make_config"]

_OBJECTIVES = {"factorized": _factorized_objective, "direct": _direct_objective}


class OptaxConfig(NamedTuple):
    """Settings of one optax run.

    Attributes:
      task: the task (static under jit).
      kind: ``"factorized"`` (parameters ``W``) or ``"direct"`` (a symmetric ``S``).
      method: ``"adam"`` or ``"sgd"``.
      learning_rate: a float (peak rate) or an optax schedule (then ``decay`` is ignored).
      decay: the rate decays from ``learning_rate`` to ``decay * learning_rate`` over ``steps``.
      steps: number of steps (a multiple of ``chunk``).
      tol: stop when the relative change of the objective per step is below ``tol``.
      chunk: steps per jit-compiled call.
      keep_path: also return the parameters after every chunk.
      time_limit: stop after this many seconds (``None``: no limit; see
        :mod:`attnlib.train.progress`).
    """

    task: object
    kind: str
    method: str
    learning_rate: float | Callable
    decay: float
    steps: int
    tol: float
    chunk: int
    keep_path: bool = False
    time_limit: float | None = None


def make_config(task, kind: str, method: str, s: TrainSettings) -> OptaxConfig:
    """Checked :class:`OptaxConfig` from the resolved :class:`TrainSettings` ``s``
    (``learning_rate``: a float ``> 0`` or a callable schedule); ``steps`` is
    ``s.max_iter`` rounded up to a multiple of ``chunk``."""
    steps = _checks.integer("max_iter", s.max_iter, 1)
    chunk = _checks.integer("chunk", s.chunk, 1)
    lr = s.learning_rate
    return OptaxConfig(
        task=_checks.task(task),
        kind=_checks.choice("kind", kind, tuple(_OBJECTIVES)),
        method=_checks.choice("method", method, ("adam", "sgd")),
        learning_rate=lr if callable(lr) else _checks.positive("learning_rate", lr),
        decay=_checks.in_interval("decay", s.decay, 0.0, 1.0),
        steps=-(-steps // chunk) * chunk,
        tol=_checks.nonnegative("tol", s.tol),
        chunk=chunk,
        keep_path=bool(s.keep_path),
        time_limit=_limits.time_limit(s.time_limit),
    )


class _Static(NamedTuple):
    """The hashable, compile-time part of an :class:`OptaxConfig`."""

    task: object
    kind: str
    method: str
    schedule: Callable | None
    chunk: int


def _optimizer(method, schedule, lr0, decay, total):
    """Adam or SGD with the user's schedule, or ``lr0 * decay ** (step / total)``.

    Built inside the jitted chunk from hashable static choices and traced
    numbers, so repeated calls reuse the compiled code.
    """
    if schedule is None:

        def schedule(count):
            return lr0 * decay ** (count / total)

    return optax.adam(schedule) if method == "adam" else optax.sgd(schedule)


@functools.partial(jax.jit, static_argnames=("static",))
def _optax_chunk(static: _Static, state, X, Y, lam, lr):
    """``static.chunk`` optimiser steps from ``state = (params, opt_state)``.

    Returns the new ``(params, opt_state)`` and the objective before each step.
    """
    value_fn = functools.partial(_OBJECTIVES[static.kind], static.task)
    opt = _optimizer(static.method, static.schedule, *lr)

    def step(carry, _):
        params, opt_state = carry
        value, grad = jax.value_and_grad(value_fn)(params, X, Y, lam)
        if static.kind == "direct":
            grad = _sym(grad)
        updates, opt_state = opt.update(grad, opt_state, params)
        params = optax.apply_updates(params, updates)
        return (params, opt_state), value

    return jax.lax.scan(step, state, None, length=static.chunk)


def _rates(cfg: OptaxConfig, dt):
    """``(schedule or None, (lr0, decay, total))`` as traced numbers of dtype ``dt``."""
    if callable(cfg.learning_rate):
        return cfg.learning_rate, (jnp.ones((), dt),) * 3
    lr = (jnp.asarray(cfg.learning_rate, dt), jnp.asarray(cfg.decay, dt))
    return None, (*lr, jnp.asarray(cfg.steps, dt))


def _run_optax(cfg: OptaxConfig, params, X, Y, lam):
    """Host loop over jit-compiled chunks; stop when the relative change per step < tol.

    Returns ``(params, history, residual, steps_done, path)``.
    """
    dt = params.dtype
    schedule, lr = _rates(cfg, dt)
    static = _Static(cfg.task, cfg.kind, cfg.method, schedule, cfg.chunk)
    state = (params, _optimizer(cfg.method, schedule, *lr).init(params))
    lam = jnp.asarray(lam, dt)
    history, path = [], []
    residual = math.inf
    done = 0
    progress = Progress(f"train ({cfg.kind}, {cfg.method})", cfg.steps, cfg.time_limit)
    while done < cfg.steps:
        state, values = _optax_chunk(static, state, X, Y, lam, lr)
        values = np.asarray(values, dtype=float)
        done += cfg.chunk
        if not np.isfinite(values[0]) and not history:
            raise ValueError(
                "the objective is non-finite at the starting point: the initial parameters "
                "(W_init, init_scale, S_init) or the penalty (lam, lam_W) are too large"
            )
        if not np.all(np.isfinite(values)):
            raise ValueError(
                f"learning_rate too large: the objective became non-finite within {done} steps"
            )
        residual = _chunk_residual(history, values, cfg.chunk)
        history.append(values)
        if cfg.keep_path:
            path.append(np.asarray(state[0]))
        if residual < cfg.tol or progress.stop(done, residual):
            break
    path = np.stack(path) if cfg.keep_path else None
    return state[0], np.concatenate(history), residual, done, path


def _chunk_residual(history, values, chunk):
    """Relative change of the objective per step over this chunk, from the last value of
    the previous chunk (the first chunk: from its own first value). A first chunk of one
    step has no change to measure: ``inf`` (not converged), never a comparison of the
    objective with itself."""
    if history:
        prev, n_diff = history[-1][-1], chunk
    elif chunk == 1:
        return math.inf
    else:
        prev, n_diff = values[0], chunk - 1
    return abs(prev - values[-1]) / (max(abs(values[-1]), 1e-300) * n_diff)
