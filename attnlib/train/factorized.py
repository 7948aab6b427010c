"""Full-batch Adam on the tied factor ``W`` of the factorised student."""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import _checks
from attnlib.tasks import Dataset, Task
from attnlib.train.adam import _run_optax, make_config
from attnlib.train.result import TrainResult, _finish, _Run

__all__ = ["train_factorized"]


def _initial_factor(key, W_init, shape, init_scale, dt):
    if W_init is None:
        key = _checks.prng_key("key", key)
        # W, its gradient and Adam's two moments: four (d, p) arrays
        what = f"the factor W (d = {shape[0]}, p = {shape[1]}) and Adam's state"
        _checks.fits_in_memory("p", 4.0 * np.dtype(dt).itemsize * shape[0] * shape[1], what)
        return init_scale * jax.random.normal(key, shape, dtype=dt)
    W0 = _checks.numeric_array("W_init", W_init, kinds="biuf")
    if W0.shape != shape:
        raise ValueError(f"W_init must have shape (d, p) = {shape}, got {W0.shape}")
    _checks.finite_array("W_init", W0)
    return jnp.asarray(W0, dtype=dt)


def _weight_decay(lam_W, lam, p: int, d: int) -> float:
    """``lam_W`` from exactly one of ``lam_W`` and ``lam = sqrt(p/d) lam_W``."""
    if (lam_W is None) == (lam is None):
        raise ValueError(
            "give exactly one of lam_W (weight decay on W) and lam (the nuclear-equivalent "
            f"strength, lam = sqrt(p/d) lam_W), got lam_W={lam_W!r}, lam={lam!r}"
        )
    if lam_W is not None:
        return _checks.nonnegative("lam_W", lam_W)
    return _checks.nonnegative("lam", lam) / math.sqrt(p / d)


def train_factorized(
    key: jax.Array,
    task: Task,
    data: Dataset,
    p: int,
    lam_W: float | None = None,
    *,
    lam: float | None = None,
    steps: int = 5000,
    learning_rate: float | Callable = 0.1,
    decay: float = 0.01,
    tol: float = 1e-9,
    chunk: int = 100,
    dtype=jnp.float32,
    W_init=None,
    init_scale: float = 1.0,
    keep_path: bool = False,
    time_limit: float | None = None,
) -> TrainResult:
    r"""Full-batch Adam on the tied factor ``W`` (``d x p``), ``S = W W^T / sqrt(p d)``.

    Minimises ``sum_mu loss(Y_mu, h_mu(S)) + lam_W ||W||_F^2`` (equal to the nuclear
    objective with ``lam = sqrt(p/d) lam_W``). Pre-activations use
    :func:`factorized_preactivations`: one step costs about ``4 n T d p`` flops.

    Args:
      key: PRNG key for the initialisation (ignored when ``W_init`` is given).
      task, data: the task and the training set; ``p``: student width (``kappa = p/d``);
      lam_W: weight decay ``>= 0``; or ``lam``, the nuclear-equivalent strength ``>= 0``,
        ``lam = sqrt(kappa) lam_W`` (as in :func:`train_convex`); give exactly one.
      steps: maximal number of Adam steps (rounded up to a multiple of ``chunk``).
      learning_rate: peak Adam rate, or an optax schedule (then ``decay`` is ignored).
      decay: the rate decays exponentially from ``learning_rate`` to
        ``decay * learning_rate`` over ``steps`` (``1.0``: constant).
      tol: stop when the relative change of the objective per step, averaged
        over the last chunk, is below ``tol``.
      chunk: steps per jit-compiled ``lax.scan`` call (history is checked between chunks).
      dtype: ``float32`` (fast) or ``float64``.
      W_init: initial ``(d, p)`` factor; default i.i.d. ``N(0, init_scale^2)``.
      keep_path: also return ``W`` after every chunk (``TrainResult.path``).
      time_limit: stop after this many seconds (progress: logger ``attnlib.train``).

    Returns:
      :class:`TrainResult` with ``W`` set; ``S`` is computed in float64.
    """
    p = _checks.integer("p", p, 1)
    X, Y, d = _checks.dataset(task, data)
    lam_W = _weight_decay(lam_W, lam, p, d)
    opts = dict(steps=steps, decay=decay, tol=tol, chunk=chunk, time_limit=time_limit)
    opts.update(keep_path=keep_path, learning_rate=learning_rate)
    cfg = make_config(task, "factorized", "adam", **opts)
    init_scale = _checks.positive("init_scale", init_scale)
    dt = _checks.float_dtype("dtype", dtype)
    W0 = _initial_factor(key, W_init, (d, p), init_scale, dt)
    Xc, Yc = jnp.asarray(X, dtype=dt), jnp.asarray(Y, dtype=dt)
    W, history, residual, done, path = _run_optax(cfg, W0, Xc, Yc, lam_W)
    W64 = np.asarray(W, dtype=np.float64)
    S = W64 @ W64.T / math.sqrt(p * d)
    run = _Run(S, W, history, residual < cfg.tol, done, residual, path)
    return _finish(task, X, Y, run, "train_factorized", cfg.tol)
