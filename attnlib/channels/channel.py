r"""The output channel of one task, as one object: :class:`Channel`.

A channel is everything the theory needs from the output side of a task:

- the labels from the pre-activations (:meth:`Channel.labels`, with the noise normals
  it needs per sequence, :attr:`Channel.noise_dim`);
- the ERM proximal step and its output update (:meth:`Channel.prox`,
  :meth:`Channel.finish`, :meth:`Channel.output_step`; the numerics are those of
  :mod:`attnlib.channels.prox` and :mod:`attnlib.channels.newton`), and the closed form
  of the state evolution's output side where it exists (:meth:`Channel.output_means`);
- the test error from the overlaps ``(Q0, m, q)`` (:meth:`Channel.test_errors`, closed
  forms where they exist, quasi-Monte Carlo otherwise);
- the Bayes posterior: whether it is Gaussian, its information ``J(mmse)``
  (:meth:`Channel.information`) and the Bayes-optimal test error where it has a closed
  form;
- ``m_eff``, the number of independent constraints one sequence puts on ``S``.

This class is the generic channel (any differentiable task, e.g.
:class:`attnlib.tasks.Custom`); the built-in tasks override what they compute in closed
form (:mod:`attnlib.channels.linear`, :mod:`attnlib.channels.softmax`,
:mod:`attnlib.channels.hardmax_channel`). :func:`attnlib.channels.for_task` picks the
channel of a task; it is the one place that asks which task it is.

Every theory computation in JAX goes through a channel, so a channel is where the
theory asks for float64: making one in float32 mode raises a RuntimeError that names
:func:`attnlib.configure_jax`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import _checks, _jax_config
from attnlib import tasks as _tasks
from attnlib.channels import posterior as _posterior
from attnlib.channels.prox import Prox, _all_starts, _finish_jit, _prox_jit
from attnlib.qmc import chunks, normals

__all__ = ["Channel", "TestErrors", "projected_precision"]


class TestErrors(NamedTuple):
    """Noise-free and noisy test errors from the overlaps, and their QMC standard errors."""

    test_error: float
    test_error_noisy: float
    stderr: tuple


TestErrors.__test__ = False  # not a pytest test


def projected_precision(P: np.ndarray, shift: bool) -> np.ndarray:
    """``Pi = P - P 1 1^T P / (1^T P 1)`` (``shift``) or ``diag(P)``; precisions ``P`` (..., K)."""
    Pi = np.zeros(P.shape + (P.shape[-1],))
    idx = np.arange(P.shape[-1])
    Pi[..., idx, idx] = P
    if shift:
        Pi = Pi - P[..., :, None] * P[..., None, :] / np.sum(P, axis=-1)[..., None, None]
    return Pi


def _stderr(x: np.ndarray) -> float:
    return float(np.std(x, ddof=1) / math.sqrt(len(x))) if len(x) > 1 else 0.0


@dataclasses.dataclass(frozen=True)
class Channel:
    """The output channel of ``task`` (frozen and hashable, like the task: a static
    argument of compiled code, one compilation per task)."""

    task: _tasks.Task
    # the state evolution's m_hat in its Stein form even where the derivative through the
    # labels exists (attnlib.se.output): SESettings(m_hat="stein") sets it
    # (attnlib.se.output.m_hat_channel), as does the fallback where that form finds no fixed point
    stein_form: bool = False

    def __post_init__(self):
        if not isinstance(self.task, _tasks.Task):
            raise ValueError(f"task must be an attnlib.tasks.Task, got {self.task!r}")
        _jax_config.require_float64(f"the output channel of {self.task!r}")

    closed_form_output = False  # the output step and the output side in closed form
    exact_prox = False  # the prox by enumeration (no starts, no Newton)
    gaussian = False  # the Bayes posterior in closed form
    shift_invariant = True  # the labels lose a global shift of the logits

    # ---------------------------------------------------------------- labels
    @property
    def noise_on_pairs(self) -> bool:
        """Whether the label noise enters as one normal per pair (on the logits:
        ``noise_on`` ``"logits"`` or ``"target"``)."""
        return self.task.noise_on in ("logits", "target")

    @property
    def pair_noise(self):
        """The logit noise's variance: the scalar ``Delta`` when it is the same on every
        pair (``"logits"``), else the per-pair array ``(K,)``
        (:func:`attnlib.tasks.pair_noise_variances`; ``"target"``: ``(Delta/2)
        sigma_ab^2``). Only where :attr:`noise_on_pairs`."""
        if self.task.noise_on == "target":
            return _tasks.pair_noise_variances(self.task)
        return self.task.noise

    @property
    def noise_dim(self) -> int:
        """Number of noise normals per sequence in the QMC points: the logit noise's
        (one per pair) first, then the output noise's (one per output entry)."""
        task = self.task
        n_logits = task.n_pairs if task.noise > 0.0 and self.noise_on_pairs else 0
        on_out = task.noise_out > 0.0 or (task.noise > 0.0 and not self.noise_on_pairs)
        return n_logits + (int(np.prod(task.out_shape)) if on_out else 0)

    def labels(self, h0, xi):
        """Labels from target pairs ``h0`` (N, K) and standard normals ``xi``
        (N, :attr:`noise_dim`); returns ``(Y, start)`` with ``start`` the noisy logits
        times ``task.target_scale`` (they fit ``Y`` exactly when the noise is on the
        logits alone). The labels are the teacher's (:meth:`attnlib.tasks.Task.labels`)."""
        task = self.task
        if task.noise_out > 0.0:
            return _labels_both(self, h0, xi)
        Y, logits = self._labels(h0, xi)
        c = task.target_scale
        return Y, (logits if c == 1.0 else c * logits)

    def _labels(self, h0, xi):
        task = self.task
        T = task.T
        if task.noise == 0.0:
            return task.target_output(_tasks.to_matrix(h0, T)), h0
        sd = math.sqrt(task.noise)
        if self.noise_on_pairs:
            if task.noise_on == "target":
                sd = jnp.sqrt(jnp.asarray(self.pair_noise, dtype=h0.dtype))
            logits = h0 + sd * xi
            return task.target_output(_tasks.to_matrix(logits, T)), logits
        clean = task.target_output(_tasks.to_matrix(h0, T))
        return clean + sd * xi.reshape(clean.shape), h0

    @property
    def m_eff(self) -> int:
        """Independent linear constraints one exactly fitted sequence puts on ``S``."""
        return self.task.m_eff

    @property
    def labels_leave_range(self) -> bool:
        """Whether additive output noise puts labels outside the range of ``g``."""
        task = self.task
        return task.noise_out > 0.0 or (task.noise != 0.0 and task.noise_on == "outputs")

    # ---------------------------------------------------------------- ERM output step
    def label_start(self, Y, omega, V):
        """A point fitting the labels exactly when one is known in closed form, else ``None``."""
        return None

    def prox(self, Y, omega, V, starts, *, tol=1e-12, max_iter: int = 100) -> Prox:
        """Multi-start safeguarded Newton (arguments checked by :func:`attnlib.channels.prox`)."""
        return _prox_jit(self.task, Y, omega, V, starts, tol=tol, max_iter=max_iter)

    def finish(self, Y, omega, V, h):
        """``(OutputStep, ok)`` at prox points ``h`` (see :func:`attnlib.channels.finish`)."""
        return _finish_jit(self.task, Y, omega, V, h)

    def output_step(self, Y, omega, V, starts, *, tol: float = 1e-12, max_iter: int = 100):
        """Prox and derivatives from ``omega``, the label-consistent point and ``starts``
        (arguments checked by :func:`attnlib.channels.output_step`)."""
        st = _all_starts(self, Y, omega, V, starts)
        p = _prox_jit(self.task, Y, omega, V, st, tol=float(tol), max_iter=int(max_iter))
        return _finish_jit(self.task, Y, omega, V, p.h)[0]

    def gamp_output(self, Y, omega, V, start, n_newton: int | None = 4):
        """GAMP's ERM output step, ``(OutputStep, ok)``, ``V`` broadcast to ``omega``'s ``(n,
        K)``: the closed form or exact prox where the channel has one (:attr:`global_prox`);
        else ``n_newton`` safeguarded Newton steps of :meth:`prox` from ``start`` ``(n, K)``
        (``ok``: every sequence ends at a strict local minimum), or (``None``) the
        multi-start :meth:`output_step` with ``start`` among its starts."""
        V = jnp.broadcast_to(V, omega.shape)
        if self.global_prox or n_newton is None:
            starts = None if self.global_prox else start
            return self.output_step(Y, omega, V, starts), jnp.asarray(True)
        p = self.prox(Y, omega, V, start[:, None, :], max_iter=n_newton)
        out, ok = self.finish(Y, omega, V, p.h)
        return out, jnp.all(ok)

    def gamp_budgets(self, n_newton: int | None) -> tuple:
        """The budgets of :meth:`gamp_output` GAMP tries in turn while a step is not trusted:
        ``n_newton``, ``8 n_newton``, then ``None`` (the multi-start); ``(None,)`` where the
        prox is global or ``n_newton`` is ``None``."""
        return (None,) if self.global_prox or n_newton is None else (n_newton, 8 * n_newton, None)

    def output_means(self, alpha, Q0, x, n_rep):
        """Per-replicate ``(a_hat, q_hat, m_hat, train_loss)`` ``(n_rep, 4)`` in closed form,
        or ``None`` (then the state evolution averages the prox on QMC points)."""
        return None

    @property
    def scale_free(self) -> bool:
        """Whether the loss is invariant under ``h -> c h`` (piecewise constant, the task's
        ``piecewise_constant``): no state-evolution fixed point at finite scale (the scale
        contracts to zero, :mod:`attnlib.hardmax`), ``m_eff = 0``, no replicon."""
        return self.task.piecewise_constant

    @property
    def global_prox(self) -> bool:
        """Whether the prox is the global minimum as computed (closed form, or exact
        enumeration): the state evolution then needs no multi-start check."""
        return self.closed_form_output or self.exact_prox

    def a_hat_terms(self, pairs, out, x, Q0) -> tuple:
        """Per-sequence estimators of ``a_hat / alpha`` at the output step ``out`` on the
        Gaussian ``pairs`` (:class:`attnlib.se.output.Pairs`) at ``x = (m, q, v)``: the
        state evolution's first, then independent checks that it averages beside it.
        Here ``sum_k sigma_k^2 (-dg_k/domega_k)``, exact where ``g`` does not jump."""
        s2 = jnp.asarray(_tasks.pair_variances(self.task.T), dtype=jnp.float64)
        return (jnp.sum(s2 * (-out.dg), axis=-1),)

    def replicon_factor(self, alpha: float, v: float):
        """``(out_factor, stderr)`` of the replicon (:mod:`attnlib.se.replicon`) in closed
        form, or ``None`` (then averaged on the QMC points)."""
        return None

    # ---------------------------------------------------------------- test error
    def test_errors(self, Q0, m, q, qmc) -> TestErrors:
        """Noise-free and noisy test errors at the overlaps; ``qmc = (n_qmc, n_rep, seed)``
        (the points of stream ``"test_error"`` of :func:`attnlib.qmc.normals`)."""
        n_qmc, n_rep, seed = _checks.qmc_sizes(*qmc)
        dim = 2 * self.task.n_pairs + self.noise_dim
        z = normals(dim, n_qmc, n_rep=n_rep, seed=seed, stream="test_error")
        args = (jnp.float64(Q0), jnp.float64(m), jnp.float64(q))
        parts = [_test_error_jit(self, z[:, sl], *args) for sl in chunks(z.shape[1])]
        e0, e1 = (np.mean([np.asarray(p[i]) for p in parts], axis=0) for i in (0, 1))
        return TestErrors(float(e0.mean()), float(e1.mean()), (_stderr(e0), _stderr(e1)))

    def noise_floor(self, Q0, qmc) -> tuple:
        """``(e0, stderr)``: the floor of the noisy test error, ``E||Y - g0(h0)||^2`` (the
        error of the teacher's own clean output against its noisy labels; with
        ``beta0 != beta`` the student attains it at ``S = (beta0/beta) S0``): 0 without
        noise, ``Delta`` times the number of output entries for noise on the outputs (and
        ``noise_out`` times it added to the logit noise's floor), else :meth:`test_errors`
        at ``m = c Q0``, ``q = c^2 Q0``, ``c = task.target_scale`` (closed forms where
        they exist)."""
        task = self.task
        if task.noise_out > 0.0:
            n_out = float(np.prod(task.out_shape))
            logit_part = type(self)(dataclasses.replace(task, noise_out=0.0))
            e, err = logit_part.noise_floor(Q0, qmc)
            return e + float(task.noise_out) * n_out, err
        if task.noise == 0.0:
            return 0.0, 0.0
        if not self.noise_on_pairs:
            return float(task.noise) * float(np.prod(task.out_shape)), 0.0
        c = task.target_scale
        te = self.test_errors(Q0, c * Q0, c * c * Q0, qmc)
        return te.test_error_noisy, te.stderr[1]

    def mse_test_error(self, mse: float):
        """The test error from the mean squared error alone where it depends on nothing
        else (a closed form), else ``None``."""
        return None

    def best_scale(self, m: float, q: float):
        """The rescaling ``c`` of ``S`` that minimises the test error, in closed form, or
        ``None`` (then it is searched numerically)."""
        return None

    # ---------------------------------------------------------------- Bayes posterior
    def gaussian_information(self, mmse: float):
        """``(J, J mmse, 0)`` of a Gaussian channel (:attr:`gaussian`)."""
        task = self.task
        s2 = _tasks.pair_variances(task.T)
        if mmse == 0.0 and task.noise == 0.0:
            raise ValueError(
                "mmse must be > 0 for a noise-free channel (the information is infinite)"
            )
        P = 1.0 / (s2 * mmse + self.pair_noise)
        Pi = projected_precision(P, self.shift_invariant)
        J = float(np.sum(s2 * np.diagonal(Pi)))
        return J, J * mmse, 0.0

    def information(self, mmse, Q0, method, qmc):
        """``(J, dof, error)`` of the Bayes channel by the nested integral; ``qmc =
        (n_outer, n_inner, seed)``, arguments checked by :func:`attnlib.bayes.information`."""
        n_outer, n_inner, seed = qmc
        return tuple(_posterior._qmc_information(self.task, mmse, Q0, n_outer, n_inner, seed))

    @property
    def exact_posterior_output(self) -> bool:
        """Whether :meth:`posterior_output` is available (closed form or exact integral)."""
        return self.gaussian

    def observed_logits(self, Y):
        """The pairs ``u`` a Gaussian channel observes (``Y = u`` up to its invariances)."""
        raise ValueError(f"task must have a Gaussian channel (see is_gaussian), got {self.task!r}")

    def posterior_output(self, Y, omega, V):
        """GAMP output step of the Bayes channel, ``(g, dg)`` each ``(n, K)``; here the
        Gaussian one: ``g = Pi (u - omega)``, ``dg = -diag(Pi)`` with ``u`` the observed
        logits and ``Pi`` the (shift-projected) precision of ``V + Delta``; ``V`` ``(K,)``."""
        if not self.gaussian:
            raise ValueError(f"task must have a Gaussian channel, got {self.task!r}")
        omega = np.asarray(omega, dtype=float)
        u = self.observed_logits(Y)
        Pi = projected_precision(1.0 / (V + self.pair_noise), self.shift_invariant)
        g = (u - omega) @ Pi  # Pi symmetric
        dg = np.broadcast_to(-np.diagonal(Pi), omega.shape)
        return g, dg

    def bayes_test_error(self, mmse: float, Q0: float, plugin: float):
        """The Bayes-optimal test error in closed form, or ``None``."""
        return None


@functools.partial(jax.jit, static_argnames=("channel",))
def _test_error_jit(channel, z, Q0, m, q):
    task = channel.task
    R, N, _ = z.shape
    K = task.n_pairs
    z = z.reshape(R * N, -1)
    s = jnp.sqrt(jnp.asarray(_tasks.pair_variances(task.T), dtype=jnp.float64))
    u1, u2, u3 = z[:, :K], z[:, K : 2 * K], z[:, 2 * K :]
    h0 = s * jnp.sqrt(Q0) * u1
    h = s * ((m / jnp.sqrt(Q0)) * u1 + jnp.sqrt(jnp.maximum(q - m * m / Q0, 0.0)) * u2)
    pred = task.output(_tasks.to_matrix(h, task.T))
    clean = task.target_output(_tasks.to_matrix(h0, task.T))
    noisy, _ = channel.labels(h0, u3)
    ax = tuple(range(1, pred.ndim))
    e0 = jnp.sum((clean - pred) ** 2, axis=ax) if ax else (clean - pred) ** 2
    e1 = jnp.sum((noisy - pred) ** 2, axis=ax) if ax else (noisy - pred) ** 2
    return jnp.mean(e0.reshape(R, N), axis=1), jnp.mean(e1.reshape(R, N), axis=1)


def _labels_both(channel, h0, xi):
    """:meth:`Channel.labels` with output noise ``noise_out`` on top of the logit noise:
    the first ``K`` normals (if ``noise > 0``) for the logits, the rest for the outputs."""
    task = channel.task
    k = task.n_pairs if task.noise > 0.0 else 0
    Y, logits = channel._labels(h0, xi[:, :k])
    Y = Y + math.sqrt(task.noise_out) * xi[:, k:].reshape(Y.shape)
    c = task.target_scale
    return Y, (logits if c == 1.0 else c * logits)
