"""The softmax channels: :class:`attnlib.tasks.Seq2Seq` and :class:`attnlib.tasks.Seq2Lab`.

Seq2seq labels ``Y = softmax_rows(beta h)`` give the logits up to one global shift:
the ERM prox starts from the label-consistent point as well, and without noise (or
with noise on the logits, ``noise_on`` ``"logits"`` or ``"target"``) the Bayes
posterior is Gaussian in the shift-projected
precision (:mod:`attnlib.channels.posterior`). Seq2lab without noise (or with noise on the
logits) is a delta channel on a level set (:mod:`attnlib.channels.posterior_level_set`).
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp

from attnlib import tasks as _tasks
from attnlib.channels import posterior as _posterior
from attnlib.channels import posterior_level_set as _level_set
from attnlib.channels.channel import Channel

__all__ = ["Seq2SeqChannel", "Seq2LabChannel"]


@dataclasses.dataclass(frozen=True)
class Seq2SeqChannel(Channel):
    """The channel of :class:`attnlib.tasks.Seq2Seq`."""

    @property
    def gaussian(self) -> bool:
        task = self.task
        logit_noise_only = task.noise_out == 0.0 and (task.noise == 0.0 or self.noise_on_pairs)
        return type(task) is _tasks.Seq2Seq and logit_noise_only

    def label_start(self, Y, omega, V):
        """The label-consistent point: for ``Y = softmax_rows(beta h)`` with symmetric
        ``h``, ``log Y_ab = beta h_ab - L_a``; the row constants are fixed (up to a common
        shift) by least squares on the antisymmetric part ``L_a - L_b = log Y_ba - log
        Y_ab`` and the common shift is chosen to minimise the quadratic term (flat
        direction of the loss)."""
        logY = jnp.log(jnp.clip(Y, 1e-12, None))
        r = logY.swapaxes(-1, -2) - logY  # r_ab = L_a - L_b
        L = jnp.mean(r, axis=-1)
        bh = 0.5 * (logY + logY.swapaxes(-1, -2)) + 0.5 * (L[..., :, None] + L[..., None, :])
        p = _tasks.to_pairs(bh / self.task.beta)
        shift = jnp.sum((omega - p) / V, axis=-1, keepdims=True) / jnp.sum(
            1.0 / V, axis=-1, keepdims=True
        )
        return p + shift

    def observed_logits(self, Y):
        return _posterior.logits_from_attention(Y, self.task.beta)


@dataclasses.dataclass(frozen=True)
class Seq2LabChannel(Channel):
    """The channel of :class:`attnlib.tasks.Seq2Lab`."""

    def information(self, mmse, Q0, method, qmc):
        task = self.task
        if task.noise == 0.0 or self.noise_on_pairs:
            if not mmse > 0.0:
                raise ValueError(f"mmse must be > 0 for the seq2lab delta channel, got {mmse}")
            n_outer, n_inner, seed = qmc
            return _level_set.level_set_information(task, mmse, Q0, n_outer, n_inner, seed)
        return super().information(mmse, Q0, method, qmc)
