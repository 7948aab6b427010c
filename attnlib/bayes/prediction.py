r"""Test errors on the Nishimori line: the Bayes-optimal predictor and the plug-in one.

Conventions (see the book's "Notation and conventions" page, ``book/notation.md``):
a fresh sequence has target pairs ``h0_ab`` and, given the training data, the
posterior of ``h_ab`` is Gaussian with mean ``omega_ab = h_ab(S_post)`` (``S_post``
the posterior mean of ``S0``) and variance ``V_ab = sigma_ab^2 mmse``; jointly
``omega_ab ~ N(0, sigma_ab^2 q)``, ``h0 = omega + sqrt(V) u`` with ``q = Q0 - mmse``.

- Bayes-optimal test error: ``E||g(h0) - E[g(h) | omega]||^2``, the inner average over
  ``h ~ N(omega, V)`` (the best predictor of the noise-free label; nested quasi-Monte
  Carlo, outer and inner Sobol points, error = outer standard error from 8 blocks of
  the outer points, ``attnlib.qmc.block_error``);
- plug-in test error: ``E||g(h0) - g(omega)||^2``, the test error of the matrix
  ``S_post`` itself (:func:`attnlib.se.test_error_from_overlaps` with ``m = q``).

For the linear task both equal ``sum_ab w_ab sigma_ab^2 mmse`` (``w_ab`` = 1 on the
diagonal, 2 off it: the square loss over the ``T x T`` output). For ``T = 2`` hardmax the
Bayes-optimal one is ``1 - (2/pi) arcsin(1 - mmse / Q0)``
(:func:`attnlib.channels.posterior_hardmax_exact.test_error`).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import _checks, channels, se
from attnlib import tasks as _tasks
from attnlib.qmc import block_error, normals

__all__ = ["TestErrors", "test_errors"]


class TestErrors(NamedTuple):
    """Bayes-optimal and plug-in test errors (noise-free labels) and the QMC error of the first."""

    bayes: float
    plugin: float
    error: float


@functools.partial(jax.jit, static_argnames=("task",))
def _bayes_error(task, z_out, z_in, mmse, Q0):
    K, T = task.n_pairs, task.T
    s = jnp.sqrt(jnp.asarray(_tasks.pair_variances(T)))
    sd_w, sd_v = s * jnp.sqrt(jnp.maximum(Q0 - mmse, 0.0)), s * jnp.sqrt(mmse)

    def one(z):
        omega = sd_w * z[:K]
        clean = task.output(_tasks.to_matrix(omega + sd_v * z[K:], T))
        hs = omega[None, :] + sd_v[None, :] * z_in
        mean = jnp.mean(task.output(_tasks.to_matrix(hs, T)), axis=0)
        return jnp.sum((clean - mean) ** 2)

    return jax.lax.map(one, z_out, batch_size=64)


def test_errors(
    task, mmse: float, Q0: float, *, n_outer: int = 4096, n_inner: int = 1024, seed: int = 0
) -> TestErrors:
    """Test errors at posterior variance ``mmse`` (``0 <= mmse <= Q0``) for target norm ``Q0``
    (the argument order of :func:`attnlib.bayes.information`)."""
    channels.require_task(task)
    task.check_bayes_model("the Bayes-optimal test errors")
    Q0 = _checks.positive("Q0", Q0)
    mmse = _checks.in_interval("mmse", mmse, 0.0, Q0, low_open=False)
    if mmse == 0.0:  # perfect recovery: both predictors are exact
        return TestErrors(0.0, 0.0, 0.0)
    q = Q0 - mmse
    plugin = se.test_error_from_overlaps(task, Q0, q, q, seed=seed)
    closed = channels.for_task(task).bayes_test_error(mmse, Q0, plugin)  # or None
    if closed is not None:
        return TestErrors(closed, plugin, 0.0)
    K = task.n_pairs
    z_out = jnp.asarray(normals(2 * K, n_outer, seed=seed, stream="bayes_test_outer")[0])
    z_in = jnp.asarray(normals(K, n_inner, seed=seed, stream="bayes_test_inner")[0])
    e = np.asarray(_bayes_error(task, z_out, z_in, jnp.float64(mmse), jnp.float64(Q0)))
    return TestErrors(float(e.mean()), plugin, block_error(e))
