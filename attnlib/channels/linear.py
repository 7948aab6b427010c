"""The linear channel ``Y = h`` (:class:`attnlib.tasks.Linear`): everything in closed form.

The noise placements ``"logits"`` and ``"outputs"`` add the same symmetric noise to the
pairs (variance ``Delta`` each), ``"target"`` ``(Delta/2) sigma_ab^2`` on pair ``ab``; the
test error against noisy labels adds the noise's total variance ``e0 = sum_ab w_ab
Delta_ab`` (:meth:`LinearChannel.noise_floor`). The output step is
``h* = (omega + 2 w V y) / (1 + 2 w V)`` (:func:`attnlib.channels.linear_step`), every
average of the state evolution's output side is Gaussian, the test error is
``sum_ab w_ab sigma_ab^2 (Q0 - 2 m + q)`` (``w_ab`` = 1 on the diagonal, 2 off it), and
the Bayes posterior is Gaussian.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import tasks as _tasks
from attnlib.channels.channel import Channel, TestErrors
from attnlib.channels.losses import linear_step, pair_weights

__all__ = ["LinearChannel"]


@functools.partial(jax.jit, static_argnames=("task",))
def _linear_jit(task, Y, omega, V):
    return linear_step(task, Y, omega, V)


@dataclasses.dataclass(frozen=True)
class LinearChannel(Channel):
    """The channel of :class:`attnlib.tasks.Linear`."""

    closed_form_output = True
    gaussian = True
    shift_invariant = False

    @property
    def noise_on_pairs(self) -> bool:
        return True

    @property
    def labels_leave_range(self) -> bool:
        return False

    def output_step(self, Y, omega, V, starts, *, tol: float = 1e-12, max_iter: int = 100):
        return _linear_jit(self.task, Y, omega, V)

    def output_means(self, alpha, Q0, x, n_rep):
        task = self.task
        m, q, v = x[0], x[1], x[2]
        w = jnp.asarray(pair_weights(task.T))
        s2 = jnp.asarray(_tasks.pair_variances(task.T), dtype=jnp.float64)
        den = 1.0 + 2.0 * w * s2 * v
        noise = task.noise if task.noise_on != "target" else jnp.asarray(self.pair_noise)
        err = s2 * (Q0 - 2.0 * m + q) + noise  # E (y - omega)^2 per pair
        a_hat = alpha * jnp.sum(s2 * 2.0 * w / den)
        q_hat = 0.5 * alpha * jnp.sum(s2 * 4.0 * w**2 * err / den**2)
        train = jnp.sum(w * err / den**2)
        return jnp.broadcast_to(jnp.stack([a_hat, q_hat, a_hat, train]), (n_rep, 4))

    def replicon_factor(self, alpha: float, v: float):
        """``J`` diagonal and constant: ``(alpha / 2) sum_k sigma_k^4 J_k^2``, exact."""
        w = pair_weights(self.task.T)
        s2 = _tasks.pair_variances(self.task.T)
        J = 2.0 * w / (1.0 + 2.0 * w * s2 * v)
        return float(0.5 * alpha * np.sum(s2**2 * J**2)), 0.0

    def test_errors(self, Q0, m, q, qmc) -> TestErrors:
        T = self.task.T
        w = pair_weights(T)
        s2 = _tasks.pair_variances(T)
        e = float(np.sum(w * s2) * (Q0 - 2 * m + q))
        return TestErrors(e, e + self._noise_total(), (0.0, 0.0))

    def _noise_total(self) -> float:
        """``E||Y - h0||^2 = sum_ab w_ab Delta_ab``: the label noise summed over the
        ``T x T`` output (``w_ab`` = 1 on the diagonal, 2 off it)."""
        w = pair_weights(self.task.T)
        if self.task.noise_on == "target":
            return float(np.sum(w * self.pair_noise))
        return float(np.sum(w)) * self.task.noise

    def noise_floor(self, Q0, qmc) -> tuple:
        """``e0 = sum_ab w_ab Delta_ab``, the total variance of the label noise."""
        return self._noise_total(), 0.0

    def mse_test_error(self, mse: float):
        wts = pair_weights(self.task.T) * _tasks.pair_variances(self.task.T)
        return float(np.sum(wts)) * mse

    def best_scale(self, m: float, q: float):
        return max(m, 0.0) / q

    def observed_logits(self, Y):
        return np.asarray(_tasks.to_pairs(jnp.asarray(Y)))

    def bayes_test_error(self, mmse: float, Q0: float, plugin: float):
        return plugin
