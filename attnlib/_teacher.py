r"""The teacher beside the student: a teacher inverse temperature ``beta0`` and output
noise ``noise_out`` on top of the noise on the logits (the model of arXiv:2509.24914,
Boncoraglio et al. 2025b). The tasks of :mod:`attnlib.tasks` take them; this module
holds what they share (it imports nothing from the tasks).

- ``noise_out`` (default 0): the variance of Gaussian noise added to every output entry
  after the logit noise, ``Y = g0(h + xi_logits) + sqrt(noise_out) xi_out`` with
  ``xi_out`` i.i.d. ``N(0, 1)``, independent of ``xi_logits``. It goes with ``noise_on``
  ``"logits"`` or ``"target"`` (with ``"outputs"`` the two variances would add: put
  their sum in ``noise``). The softmax tasks and ``Custom`` take it; ``Linear`` (outputs
  are the logits: put the variance in ``noise``) and ``Hardmax`` refuse it.
- ``beta0`` (``Seq2Seq``, ``Seq2Lab``; default ``None``: ``beta0 = beta``): the teacher's
  inverse temperature. The labels are made by ``g0(h) = softmax_rows(beta0 h)``
  (``task.target_output``), the student predicts and is trained with ``g(h) =
  softmax_rows(beta h)`` (``task.output``, the loss). Since ``softmax(beta0 h(S0)) =
  softmax(beta h(c S0))`` with ``c = beta0 / beta`` (``task.target_scale``), the model
  is exactly the ``beta0 = beta`` model of the target ``c S0`` with logit noise
  ``c^2 Delta`` (output noise unchanged): the student's best matrix is ``c S0``.

Data, the ERM state evolution, GAMP on data and the test errors handle both (labels from
the teacher, prox and predictions with the student); the ridgeless threshold
(``attnlib.thresholds.interpolation_formula``) is unchanged by ``beta0`` (homogeneous of
degree 0 under ``(S0, Delta) -> (c S0, c^2 Delta)``) and 0 with ``noise_out > 0``; the
Bayes-optimal computations refuse both (:func:`check_bayes_model`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from attnlib import _checks

__all__ = ["Teacher", "TeacherBeta", "add_output_noise", "check_bayes_model", "check_noise_out"]


def check_noise_out(task) -> None:
    """``ValueError`` naming ``noise_out`` unless it is ``>= 0``, taken by the task
    (``task._no_noise_out`` empty) where positive, and beside noise on the logits."""
    _checks.nonnegative("noise_out", task.noise_out)
    if task.noise_out > 0 and task._no_noise_out:
        raise ValueError(
            f"noise_out must be 0 for {type(task).__name__}, got {task.noise_out!r} "
            f"({task._no_noise_out})"
        )
    if task.noise_out > 0 and task.noise_on == "outputs":
        raise ValueError(
            f"noise_out must be 0 with noise_on='outputs' (got {task.noise_out!r}): it "
            "adds output noise beside noise on the logits ('logits' or 'target'); with "
            "noise on the outputs alone, put the whole variance in noise"
        )


def add_output_noise(task, key, h0, logit_labels):
    """Labels with ``noise_out`` on top: ``logit_labels(key, h0)`` (the labels of
    ``noise``/``noise_on``; returned as they are where ``noise_out = 0``) plus
    ``sqrt(noise_out)`` standard normals on every output entry. With both noises ``key``
    is split in two (logits, outputs)."""
    if task.noise_out == 0.0:
        return logit_labels(key, h0)
    if task.noise > 0.0:
        key, k_out = jax.random.split(key)
        Y = logit_labels(key, h0)
    else:
        k_out, Y = key, task.target_output(h0)
    return Y + jnp.sqrt(task.noise_out) * jax.random.normal(k_out, Y.shape, Y.dtype)


def check_bayes_model(task, what: str) -> None:
    """``ValueError`` naming ``beta0`` or ``noise_out`` where ``what`` (a Bayes-optimal
    computation) assumes the statistician's model is the teacher's with one noise:
    ``beta0 != beta`` (the posterior would be the teacher's alone: build the task with
    ``beta = beta0``) or ``noise_out > 0`` (the posterior of two noises at once is not
    implemented)."""
    if task.target_scale != 1.0:
        raise ValueError(
            f"beta0 must be None or equal to beta for {what} (the Bayes-optimal "
            f"statistician knows the teacher: use beta = beta0 = {task.beta0!r}), got "
            f"beta0 = {task.beta0!r}, beta = {task.beta!r}"
        )
    if task.noise_out > 0.0:
        raise ValueError(
            f"noise_out must be 0 for {what} (the posterior of noise on the logits and "
            f"the outputs at once is not implemented), got noise_out = {task.noise_out!r}"
        )


class Teacher:
    """What every task has of its teacher (the base of ``attnlib.tasks.Task``): the
    teacher's output (the student's own by default) and the checks on it."""

    noise_out = 0.0  # a dataclass field of the tasks that take it (after their own fields)
    _no_noise_out = ""  # why noise_out > 0 is refused ("": it is taken)

    @property
    def target_scale(self) -> float:
        """``c = beta0 / beta``: the teacher's labels are the student's outputs at ``c h0``
        (1 for tasks without a separate teacher inverse temperature)."""
        return 1.0

    def target_output(self, h: jax.Array) -> jax.Array:
        """The teacher's output function ``g0`` (generates the labels); ``g`` itself
        unless the task has a teacher inverse temperature ``beta0 != beta``."""
        return self.output(h)

    def target_loss(self, Y: jax.Array, h0: jax.Array) -> jax.Array:
        """Per-sequence ``||Y - g0(h0)||^2``: the teacher's own error against labels ``Y``."""
        r = Y - self.target_output(h0)
        return jnp.sum(r.reshape(r.shape[: r.ndim - len(self.out_shape)] + (-1,)) ** 2, axis=-1)

    def check_bayes_model(self, what: str) -> None:
        """``ValueError`` naming ``beta0`` or ``noise_out`` where ``what`` (a Bayes-optimal
        computation) cannot take them (:func:`check_bayes_model`)."""
        check_bayes_model(self, what)


class TeacherBeta(Teacher):
    """The teacher inverse temperature ``beta0`` of the softmax tasks (a mixin): the task
    defines ``_output_at(beta, h)``, its output at inverse temperature ``beta``; its
    ``__post_init__`` checks ``beta`` and ``beta0`` after the task's."""

    def __post_init__(self):
        super().__post_init__()
        _checks.positive("beta", self.beta)
        if self.beta0 is not None:
            _checks.positive("beta0", self.beta0)

    @property
    def target_scale(self) -> float:
        """``c = beta0 / beta`` (exactly 1.0 where ``beta0`` is None or equal to ``beta``)."""
        if self.beta0 is None or self.beta0 == self.beta:
            return 1.0
        return float(self.beta0) / float(self.beta)

    def output(self, h):
        """The student's output ``g(h)``, at ``beta``."""
        return self._output_at(self.beta, h)

    def target_output(self, h):
        """The teacher's output ``g0(h)``, at ``beta0`` (``g`` where ``beta0`` is None)."""
        return self.output(h) if self.beta0 is None else self._output_at(self.beta0, h)
