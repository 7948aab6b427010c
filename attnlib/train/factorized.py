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
from attnlib.train.settings import TrainSettings, resolve

__all__ = ["train_factorized"]

_DEFAULTS = dict(max_iter=5000, chunk=100, learning_rate=0.1, dtype=jnp.float32)


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
    settings: TrainSettings | None = None,
    max_iter: int | None = None,
    learning_rate: float | Callable | None = None,
    decay: float | None = None,
    tol: float | None = None,
    chunk: int | None = None,
    dtype=None,
    W_init=None,
    init_scale: float = 1.0,
    keep_path: bool | None = None,
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
      settings: :class:`TrainSettings` (its fields and defaults; the rate decays
        exponentially, ``decay = 1.0``: constant; ``keep_path``: ``W`` after every chunk).
      max_iter, learning_rate, decay, tol, chunk, dtype, keep_path, time_limit:
        shorthands for the fields of ``settings`` (``None``: from ``settings``).
      W_init: initial ``(d, p)`` factor; default i.i.d. ``N(0, init_scale^2)``.

    Returns:
      :class:`TrainResult` with ``W`` set; ``S`` is computed in float64.
    """
    given = dict(max_iter=max_iter, learning_rate=learning_rate, decay=decay, tol=tol, chunk=chunk)
    given.update(dtype=dtype, keep_path=keep_path, time_limit=time_limit)
    s = resolve(settings, given, _DEFAULTS)
    p = _checks.integer("p", p, 1)
    X, Y, d = _checks.dataset(task, data)
    lam_W = _weight_decay(lam_W, lam, p, d)
    cfg = make_config(task, "factorized", "adam", s)
    init_scale = _checks.positive("init_scale", init_scale)
    dt = _checks.float_dtype("dtype", s.dtype)
    W0 = _initial_factor(key, W_init, (d, p), init_scale, dt)
    Xc, Yc = jnp.asarray(X, dtype=dt), jnp.asarray(Y, dtype=dt)
    W, history, residual, done, path = _run_optax(cfg, W0, Xc, Yc, lam_W)
    W64 = np.asarray(W, dtype=np.float64)
    S = W64 @ W64.T / math.sqrt(p * d)
    run = _Run(S, W, history, residual < cfg.tol, done, residual, path)
    return _finish(task, X, Y, run, "train_factorized", cfg.tol)
