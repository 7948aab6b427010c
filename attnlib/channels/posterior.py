r"""Bayes posterior of each task's output channel given the Gaussian ``(omega, V)``.

Conventions (see the book's "Notation and conventions" page, ``book/notation.md``):
a sequence has ``K = T (T + 1) / 2`` pairs ``a <= b`` (ordered as in
:func:`attnlib.tasks.pair_indices`), ``sigma_ab^2 = 1 + delta_ab``. On the
Nishimori line the pre-activations of the target given the current estimate are
``h_ab ~ N(omega_ab, V_ab)`` independently, with ``V_ab = sigma_ab^2 mmse`` and
``omega_ab ~ N(0, sigma_ab^2 (Q0 - mmse))``. The channel's output function is

    g_ab = d/d omega_ab log Z_out(Y; omega, V),   Z_out = int P(Y | h) N(h; omega, V) dh,
    g = V^{-1} (E[h | Y, omega] - omega),

and the state evolution needs the information per sequence
``J(mmse) = sum_ab sigma_ab^2 E[g_ab^2]`` (:func:`information`), reported as the
*effective number of measurements* ``J mmse`` (between 0 and ``K``).

Gaussian channels, in closed form (:func:`is_gaussian`):

- linear, ``Y = h + sqrt(Delta) xi`` (``xi`` symmetric, i.i.d. ``N(0, 1)`` per pair):
  ``g = (y - omega) / (V + Delta)``, ``J = sum_ab sigma_ab^2 / (sigma_ab^2 mmse + Delta)``;
- seq2seq ``Y = softmax_rows(beta (h + sqrt(Delta) xi))`` (noise-free, or noise on the
  logits): ``Y`` gives ``u = h + sqrt(Delta) xi`` up to one global shift ``c (1, ..., 1)``
  (symmetry fixes the row constants up to a common one; see :func:`logits_from_attention`).
  With ``P = diag(1 / (V + Delta))`` and ``Pi = P - P 1 1^T P / (1^T P 1)``:
  ``g = Pi (u - omega)``, ``dg/domega = -Pi``, ``J = sum_ab sigma_ab^2 Pi_ab,ab``. Without
  noise ``J mmse = K - 1 = m_eff``: ``m_eff`` linear measurements per sequence.

Other channels (noise on the outputs, ``Y = g(h) + sqrt(Delta) xi`` with ``Delta > 0``,
for seq2seq, seq2lab or a custom task): a nested integral. Outer quasi-Monte Carlo
over ``(omega, h, xi)``, inner self-normalised importance sampling of the posterior
``E[h | Y, omega]`` from ``N(omega, V)`` with ``n_inner`` fixed Sobol points. Two
estimators of ``E[g^2]`` (``E[g^2]`` and, by the Nishimori identity,
``E[g (h - omega)] / V``) have opposite finite-``n_inner`` biases; their mean is
returned and the reported ``error`` is half their gap plus the outer standard error
(from the spread of 8 consecutive blocks of the outer Sobol points, ``attnlib.qmc.block_error``).
Hardmax without noise or with noise on the logits: ``Y`` tells which polyhedral region
the (noisy) logits fell in, ``Z_out`` is a Gaussian probability of that region; at
``T = 2`` a bivariate Gaussian orthant, in closed form, with a two-dimensional outer
quadrature (:mod:`attnlib.channels.posterior_hardmax_exact`, exact to about ``1e-10``); at ``T = 3``
by rejection on fixed inner Sobol points (:mod:`attnlib.channels.posterior_hardmax`).
Noise-free seq2lab (or seq2lab with noise on the logits) is a delta channel on a
``(K-1)``-dimensional level set (:mod:`attnlib.channels.posterior_level_set`): the limit of a narrow
Gaussian likelihood around it, with its ``O(eps^2)`` bias estimated and reported.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import _checks
from attnlib import channels as _channels
from attnlib import tasks as _tasks
from attnlib.qmc import block_error, normals

__all__ = [
    "Information",
    "is_gaussian",
    "information",
    "logits_from_attention",
    "gaussian_output",
]


class Information(NamedTuple):
    """``J(mmse) = sum_ab sigma_ab^2 E[g_ab^2]``, ``dof = J mmse``, integration error of ``J``."""

    J: float
    dof: float
    error: float


def _check_task(task) -> _tasks.Task:
    _channels.require_task(task).check_bayes_model("the Bayes posterior")
    return task


def is_gaussian(task) -> bool:
    """True for the closed-form channels: linear (any noise) and seq2seq with no
    noise or noise on the logits (:attr:`attnlib.channels.Channel.gaussian`)."""
    return _channels.for_task(_channels.require_task(task)).gaussian


@functools.partial(jax.jit, static_argnames=("task", "chunk"))
def _nested(task, z_out, z_in, mmse, Q0, chunk):
    """Per outer point: ``(sum_ab s2 E[g^2] mmse, sum_ab s2 g (h - omega) ...)`` estimators."""
    K, T = task.n_pairs, task.T
    s = jnp.sqrt(jnp.asarray(_tasks.pair_variances(T)))
    sd_w, sd_v = s * jnp.sqrt(jnp.maximum(Q0 - mmse, 0.0)), s * jnp.sqrt(mmse)

    def one(z):
        omega = sd_w * z[:K]
        h0 = omega + sd_v * z[K : 2 * K]
        clean = task.output(_tasks.to_matrix(h0, T))
        Y = clean + jnp.sqrt(task.noise) * z[2 * K :].reshape(clean.shape)
        hs = omega[None, :] + sd_v[None, :] * z_in
        pred = task.output(_tasks.to_matrix(hs, T)).reshape(z_in.shape[0], -1)
        logw = -jnp.sum((Y.reshape(1, -1) - pred) ** 2, axis=1) / (2 * task.noise)
        w = jax.nn.softmax(logw)
        zhat = w @ z_in  # E[(h - omega) / sd_v | Y, omega]
        return jnp.sum(zhat**2), jnp.sum(zhat * z[K : 2 * K])

    a, b = jax.lax.map(one, z_out, batch_size=chunk)
    return a, b


def _qmc_information(task, mmse, Q0, n_outer, n_inner, seed) -> Information:
    if task.noise == 0.0 or task.noise_on != "outputs":
        raise ValueError(
            f"{task.name}: the Bayes channel is implemented for noise on the outputs with "
            f"noise > 0 only (got noise={task.noise}, noise_on={task.noise_on!r})"
        )
    if not mmse > 0.0:
        raise ValueError(f"mmse must be > 0 for the integrated channel, got {mmse}")
    n_out_dim = int(np.prod(task.out_shape))
    K = task.n_pairs
    z_out = jnp.asarray(normals(2 * K + n_out_dim, n_outer, seed=seed, stream="outer")[0])
    z_in = jnp.asarray(normals(K, n_inner, seed=seed, stream="inner")[0])
    a, b = _nested(task, z_out, z_in, jnp.float64(mmse), jnp.float64(Q0), 64)
    a, b = np.asarray(a), np.asarray(b)
    dof = 0.5 * (a.mean() + b.mean())
    err = 0.5 * abs(a.mean() - b.mean()) + block_error(0.5 * (a + b))
    return Information(float(dof / mmse), float(dof), float(err / mmse))


def information(
    task,
    mmse: float,
    Q0: float,
    *,
    method: str = "auto",
    n_outer: int = 4096,
    n_inner: int = 4096,
    seed: int = 0,
) -> Information:
    r"""``J(mmse) = sum_ab sigma_ab^2 E[g_ab^2]`` of the task's channel (module docstring).

    Args:
      task: :class:`attnlib.tasks.Task` (its noise model defines the channel).
      mmse: posterior variance per unit ``sigma^2``, ``0 <= mmse <= Q0``
        (``V_ab = sigma_ab^2 mmse``).
      Q0: ``Tr(S0^2)/d`` (sets the spread of ``omega``; unused by Gaussian channels).
      method: ``"auto"`` (closed form where :func:`is_gaussian`, the exact orthant
        integrals of :mod:`attnlib.channels.posterior_hardmax_exact` for ``T = 2`` hardmax, else the
        nested integral) or ``"qmc"`` (the nested integral always; needs noise on the
        outputs, or a hardmax or seq2lab channel).
      n_outer, n_inner: Sobol points (powers of 2) of the nested integral (other channels).
      seed: scrambling seed.
    """
    task = _check_task(task)
    Q0 = _checks.positive("Q0", Q0)
    mmse = _checks.nonnegative("mmse", mmse)
    if not mmse <= Q0:
        raise ValueError(f"mmse must lie in [0, Q0] with Q0 = {Q0!r}, got {mmse!r}")
    _checks.choice("method", method, ("auto", "qmc"))
    channel = _channels.for_task(task)
    if method == "auto" and channel.gaussian:
        return Information(*channel.gaussian_information(mmse))
    for name, n in (("n_outer", n_outer), ("n_inner", n_inner)):
        n = _checks.integer(name, n, 2)
        if n & (n - 1):
            raise ValueError(f"{name} must be a power of 2 >= 2, got {n}")
    return Information(*channel.information(mmse, Q0, method, (n_outer, n_inner, int(seed))))


def logits_from_attention(Y, beta: float) -> np.ndarray:
    r"""Pairs ``u_ab`` (shape ``(..., K)``) of symmetric logits with ``softmax_rows(beta u) = Y``,
    up to one global shift.

    ``log Y_ab = beta u_ab - L_a``; symmetry gives ``L_a - L_0 = log Y_0a - log Y_a0``, so
    ``(log Y_ab + log Y_0a - log Y_a0) / beta = u_ab - L_0 / beta``.
    """
    beta = _checks.positive("beta", beta)
    logY = np.log(np.asarray(Y, dtype=float))
    c = logY[..., 0, :] - logY[..., :, 0]  # L_a - L_0, shape (..., T)
    u = (logY + c[..., :, None]) / beta
    return np.asarray(_tasks.to_pairs(u))


def gaussian_output(task, Y, omega, V):
    r"""GAMP output step of a Gaussian channel: ``(g, dg)``, each ``(n, K)``.

    ``Y``: labels ``(n, *task.out_shape)``; ``omega``: ``(n, K)``; ``V``: ``(K,)``
    (``V_ab = sigma_ab^2 v``). ``g = Pi (u - omega)`` with ``u`` the observed logits
    (linear: the pairs of ``Y``) and ``dg = diag(dg/domega) = -diag(Pi)``.
    """
    task = _check_task(task)
    if not is_gaussian(task):
        raise ValueError(f"task must have a Gaussian channel (see is_gaussian), got {task!r}")
    V = np.asarray(_checks.finite_array("V", V, ndim=1), dtype=float)
    return _channels.for_task(task).posterior_output(Y, omega, V)
