"""Test error of a symmetric ``S`` from its overlaps ``(Q0, m, q)`` with the target."""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import _checks, channels
from attnlib import tasks as _tasks
from attnlib.se.output import check_overlaps, check_task, labels, noise_dim
from attnlib.se.qmc import qmc_normals

__all__ = ["test_error_from_overlaps"]


@functools.partial(jax.jit, static_argnames=("task",))
def _test_error_jit(task, z, Q0, m, q):
    R, N, _ = z.shape
    K = task.n_pairs
    z = z.reshape(R * N, -1)
    s = jnp.sqrt(jnp.asarray(_tasks.pair_variances(task.T), dtype=jnp.float64))
    u1, u2, u3 = z[:, :K], z[:, K : 2 * K], z[:, 2 * K :]
    h0 = s * jnp.sqrt(Q0) * u1
    h = s * ((m / jnp.sqrt(Q0)) * u1 + jnp.sqrt(jnp.maximum(q - m * m / Q0, 0.0)) * u2)
    pred = task.output(_tasks.to_matrix(h, task.T))
    clean = task.output(_tasks.to_matrix(h0, task.T))
    noisy, _ = labels(task, h0, u3)
    ax = tuple(range(1, pred.ndim))
    e0 = jnp.sum((clean - pred) ** 2, axis=ax) if ax else (clean - pred) ** 2
    e1 = jnp.sum((noisy - pred) ** 2, axis=ax) if ax else (noisy - pred) ** 2
    return jnp.mean(e0.reshape(R, N), axis=1), jnp.mean(e1.reshape(R, N), axis=1)


class TestErrors(NamedTuple):
    test_error: float
    test_error_noisy: float
    stderr: tuple


def _stderr(x: np.ndarray) -> float:
    return float(np.std(x, ddof=1) / math.sqrt(len(x))) if len(x) > 1 else 0.0


def _hardmax_t2(task, Q0, m, q) -> TestErrors:
    """Hardmax at ``T = 2`` in closed form. Row ``a`` attends wrongly (cost 2) when the
    differences ``h_aa - h_12`` of the prediction and of the label have opposite signs;
    they are jointly Gaussian with variances ``3 q`` and ``3 Q0 + 2 Delta`` (logit noise)
    and covariance ``3 m``, so each row errs with probability ``arccos(rho) / pi``
    (Sheppard's formula)."""

    def err(label_var):
        rho = 3.0 * m / math.sqrt(label_var * 3.0 * q) if q > 0 else 0.0
        return 2.0 * 2.0 * math.acos(min(max(rho, -1.0), 1.0)) / math.pi

    e0 = err(3.0 * Q0)
    if task.noise_on == "outputs":  # independent noise on the 4 outputs: adds 4 Delta
        return TestErrors(e0, e0 + 4.0 * task.noise, (0.0, 0.0))
    return TestErrors(e0, err(3.0 * Q0 + 2.0 * task.noise), (0.0, 0.0))


def test_errors(task, Q0, m, q, qmc) -> TestErrors:
    """Noise-free and noisy test errors and their QMC standard errors; ``qmc = (n_qmc,
    n_rep, seed)`` (the points use ``seed + 7919``). Closed forms for the linear task and
    for hardmax at ``T = 2`` (its indicator integrand converges slowly in QMC: +1 % at
    8192 points)."""
    n_qmc, n_rep, seed = qmc
    if isinstance(task, _tasks.Hardmax) and task.T == 2:
        return _hardmax_t2(task, Q0, m, q)
    if isinstance(task, _tasks.Linear):
        w = channels.pair_weights(task.T)
        s2 = _tasks.pair_variances(task.T)
        e = float(np.sum(w * s2) * (Q0 - 2 * m + q))
        return TestErrors(e, e + float(np.sum(w)) * task.noise, (0.0, 0.0))
    dim = 2 * task.n_pairs + noise_dim(task)
    z = jnp.asarray(qmc_normals(dim, n_qmc, n_rep, seed + 7919))
    e0, e1 = _test_error_jit(task, z, jnp.float64(Q0), jnp.float64(m), jnp.float64(q))
    e0, e1 = np.asarray(e0), np.asarray(e1)
    return TestErrors(float(e0.mean()), float(e1.mean()), (_stderr(e0), _stderr(e1)))


test_errors.__test__ = False  # not a pytest test


def test_error_from_overlaps(
    task, Q0: float, m: float, q: float, *, noisy: bool = False, n_qmc: int = 8192, seed: int = 0
) -> float:
    """``E||g(h0) - g(h)||^2`` with ``(h0_ab, h_ab) ~ N(0, sigma_ab^2 [[Q0, m], [m, q]])``.

    The test error of any symmetric ``S`` depends on it only through
    ``(Q0, m, q) = (Tr S0^2, Tr S S0, Tr S^2) / d`` (the pairs of fresh sequences
    are jointly Gaussian given ``S, S0``), so this also evaluates trained
    matrices. ``noisy=True`` compares with noisy labels instead. Closed forms for
    the linear task and for hardmax at ``T = 2``, QMC (``n_qmc`` points) otherwise.
    """
    task = check_task(task)
    Q0 = _checks.positive("Q0", Q0)
    m, q = check_overlaps(Q0, m, q)
    _checks.integer("n_qmc", n_qmc, 2)
    te = test_errors(task, Q0, m, q, (n_qmc, 4, seed))
    return te.test_error_noisy if noisy else te.test_error


test_error_from_overlaps.__test__ = False
