r"""Output side of the state evolution, as jitted functions of arrays.

``K`` independent pairs with ``sigma_ab^2 = 1 + delta_ab``::

    (h0_ab, omega_ab) ~ N(0, sigma_ab^2 [[Q0, m], [m, q]]),  Y = labels(h0, noise),
    h* = prox (attnlib.channels.prox) with V_ab = sigma_ab^2 v,  g = (h* - omega) / V,
    a_hat = alpha sum_ab sigma_ab^2 E[-dg_ab / domega_ab]
    q_hat = (alpha / 2) sum_ab sigma_ab^2 E[g_ab^2]
    m_hat = alpha sum_ab sigma_ab^2 E[d g_ab / d h0_ab]                      (pathwise)
          = alpha sum_ab E[g_ab (h0_ab - (m/q) omega_ab)] / (Q0 - m^2/q)     (Stein form)

With ``omega = sigma sqrt(q) u2`` and ``h0 = (m/q) omega + sigma sqrt(Q0 - m^2/q) u1``
the Stein form is ``sigma E[g u1] / csd``, ``csd = sqrt(Q0 - m^2/q)``; it stays exact
when ``h*`` jumps between minima, but its per-point variance grows like ``1 / csd^2``
as the mse ``Q0 - 2m + q`` (and with it ``csd``) gets small, where the fixed point
amplifies the error of ``m_hat`` most (``benchmarks/se_bias.py``: seq2seq T = 2,
alpha 2, lam 0.1, mse 0.02 Q0, ``csd = 0.047``: the Stein form's relative error at
8192 points was 0.39 %, which moved the mse by 14 %; the pathwise form's 0.027 %).
By default (``SESettings(m_hat="derivative")``) the channels with a Newton prox (a
smooth loss, labels differentiable in ``h0``) use the pathwise form, the implicit
derivative of the prox (:func:`attnlib.channels.prox.target_derivative`), exact where
``h*`` does not jump, as their pointwise ``a_hat``; the hardmax channels, and a channel
with ``stein_form`` (``SESettings(m_hat="stein")``), the Stein form
(:func:`pathwise_m_hat`). The channel gives ``a_hat`` in the form its ``g`` needs
(:meth:`attnlib.channels.Channel.a_hat_terms`: the hardmax loss is piecewise constant,
``g`` jumps on surfaces of positive probability flux and ``a_hat`` takes its Stein form
too, :func:`attnlib.channels.hardmax.stein_a_hat`; the channel of its zero-scale limit,
the projection, has no jumps and adds the Stein form as a check). Every function taking
a ``task`` here also takes a channel (:func:`attnlib.channels.for_task`, e.g.
``channels.for_task(task).at_zero_scale()``). Expectations use the fixed QMC points
``z`` ``(R, N, 2K + noise dims)`` of :func:`attnlib.qmc.qmc_normals`; the ``R``
scramblings give standard errors.
The linear task is Gaussian and uses closed forms (its channel's
:meth:`~attnlib.channels.Channel.output_means`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import _checks, channels
from attnlib import qmc as _qmc
from attnlib import tasks as _tasks
from attnlib.channels.prox import target_derivative
from attnlib.qmc import qmc_normals
from attnlib.se.settings import M_HAT

__all__ = [
    "OutputSide",
    "OutputArrays",
    "output_arrays",
    "output_chunks",
    "output_side",
    "noise_dim",
    "Pairs",
    "pairs",
    "cold_prox",
    "lower_minima",
    "pathwise_m_hat",
    "m_hat_channel",
]


class OutputSide(NamedTuple):
    """Output-side averages: conjugates, train loss, and their QMC standard errors."""

    a_hat: float
    q_hat: float
    m_hat: float
    train_loss: float
    stderr: tuple  # (a_hat, q_hat, m_hat, train_loss) standard errors


class OutputArrays(NamedTuple):
    """Per-replicate ``(a_hat, q_hat, m_hat, train_loss)`` ``(R, 4)``, prox points and
    their objectives (``(N, K)``, ``(N,)``), and how many problems found a lower minimum
    from the cold starts than from the warm ones (``mode="full"``)."""

    means: jax.Array
    prox: jax.Array
    objective: jax.Array
    n_better: jax.Array


def check_task(task) -> _tasks.Task:
    return channels.require_task(task)


def _channel_of(task) -> channels.Channel:
    """``task``'s channel (:func:`attnlib.channels.for_task`), or ``task`` itself if it is
    one (e.g. the zero-scale hardmax channel of :mod:`attnlib.hardmax`)."""
    return task if isinstance(task, channels.Channel) else channels.for_task(task)


def noise_dim(task) -> int:
    """Number of noise normals per sequence in the QMC points."""
    return _channel_of(task).noise_dim


def labels(task, h0, xi):
    """Labels from target pairs ``h0`` (N, K) and standard normals ``xi`` (N, noise_dim);
    returns ``(Y, start)`` with ``start`` the noisy logits (fit ``Y`` exactly when the
    noise is on the logits; :meth:`attnlib.channels.Channel.labels`)."""
    return _channel_of(task).labels(h0, xi)


def _sigmas(task):
    s2 = jnp.asarray(_tasks.pair_variances(task.T), dtype=jnp.float64)
    return s2, jnp.sqrt(s2)


class Pairs(NamedTuple):
    """The output side's Gaussian pairs on QMC points ``z`` ``(n, 2K + noise_dim)``:
    labels ``Y``, ``omega`` ``(n, K)``, the prox starts ``lab`` (noisy logits or ``h0``),
    variances ``V = sigma^2 v``, the conditional sd ``csd = sqrt(Q0 - m^2/q)`` and the
    target pairs ``h0``."""

    Y: jax.Array
    omega: jax.Array
    lab: jax.Array
    V: jax.Array
    csd: jax.Array
    h0: jax.Array


def pairs(task, z, Q0, x) -> Pairs:
    """:class:`Pairs` at ``x = (m, q, v)`` (traceable; see the module docstring)."""
    K = _channel_of(task).task.n_pairs
    s2, s = _sigmas(_channel_of(task).task)
    m, q, v = x[0], x[1], x[2]
    u1, u2, u3 = z[:, :K], z[:, K : 2 * K], z[:, 2 * K :]
    csd = jnp.sqrt(jnp.maximum(Q0 - m * m / q, 1e-300))
    omega = s * jnp.sqrt(q) * u2
    h0 = (m / q) * omega + s * csd * u1
    Y, lab = labels(task, h0, u3)
    V = jnp.broadcast_to(s2 * v, omega.shape)
    return Pairs(Y, omega, lab, V, csd, h0)


def _solve_prox(channel, Y, omega, V, starts, prox, *, mode):
    """Prox points: warm (Newton from ``prox``), cold (from omega and the logits), multi
    (from all three) or full (the best of the cold minima and the points ``prox``)."""
    task = channel.task
    if channel.exact_prox:  # exact (enumerating) prox: no starts, nothing to compare
        p = channel.prox(Y, omega, V, starts)
        return p.h, p.objective, jnp.asarray(0)
    if mode == "warm":
        p = channels.prox(task, Y, omega, V, prox[:, None, :])
        return p.h, p.objective, jnp.asarray(0)
    if mode == "multi":
        p = channels.prox(task, Y, omega, V, jnp.concatenate([prox[:, None, :], starts], 1))
        return p.h, p.objective, jnp.asarray(0)
    p = channels.prox(task, Y, omega, V, starts)
    if mode == "cold":
        return p.h, p.objective, jnp.asarray(0)
    f_warm = channels.prox_objective(task, Y, prox, omega, V)
    better = p.objective < f_warm - 1e-10 * (1.0 + jnp.abs(f_warm))
    h = jnp.where(better[:, None], p.h, prox)
    return h, jnp.where(better, p.objective, f_warm), jnp.sum(better)


def pathwise_m_hat(channel) -> bool:
    """Whether ``m_hat`` takes its pathwise form (module docstring): the channel's prox is
    the Newton one (a smooth loss, like the pointwise ``a_hat`` of
    :meth:`~attnlib.channels.Channel.a_hat_terms`), its labels are differentiable in
    ``h0`` and it does not ask for the Stein form (``stein_form``: ``SESettings(m_hat=
    "stein")``, or the fallback of :func:`attnlib.se.solve`); else (hardmax: a
    piecewise-constant loss) the Stein form."""
    return not (channel.stein_form or channel.exact_prox or channel.scale_free)


def m_hat_channel(task, m_hat: str = "derivative") -> channels.Channel:
    """The output channel of ``task`` (a task, or a channel) with the form of ``m_hat``
    named as in :class:`attnlib.se.SESettings`: ``"derivative"`` (the channel as it is)
    or ``"stein"`` (``stein_form`` set: the Stein form everywhere). The channel of a
    solve's problem; the compiled code reads the form from it (a static argument)."""
    channel = _channel_of(task)
    if _checks.choice("m_hat", m_hat, M_HAT) == "stein":
        return dataclasses.replace(channel, stein_form=True)
    return channel


def _m_hat_terms(channel, p: Pairs, out, zf):
    """Per-sequence ``m_hat / alpha`` on the points ``zf`` ``(n, dim)``: the pathwise
    form ``sum_ab sigma_ab^2 d g_ab / d h0_ab`` (:func:`attnlib.channels.prox.target_derivative`)
    or the Stein form ``sum_ab sigma_ab g_ab u1_ab / csd`` (:func:`pathwise_m_hat`; also
    where the derivative is not finite at some point of the batch)."""
    K = channel.task.n_pairs
    s2, s = _sigmas(channel.task)
    stein = jnp.sum(s * out.g * zf[:, :K], axis=-1) / p.csd
    if not pathwise_m_hat(channel):
        return stein
    path = jnp.sum(s2 * target_derivative(channel, out.h, p.h0, zf[:, 2 * K :], p.V), axis=-1)
    # the derivative needs a strict local minimum (H + 1/V positive definite); where the
    # factorisation fails at some point (e.g. v ~ 1e6 in attnlib.se.runaway, with the
    # loss's Hessian singular), the whole batch takes the Stein form, unbiased too
    return jnp.where(jnp.all(jnp.isfinite(path)), path, stein)


@functools.partial(jax.jit, static_argnames=("task", "mode"))
def output_arrays(task, z, alpha, Q0, x, prox, *, mode="warm") -> OutputArrays:
    """Output side at ``x = (m, q, v)`` on the QMC points ``z`` ``(R, N, dim)``.

    ``prox``: ``(R N, K)`` warm-start prox points (ignored by ``mode="cold"``, which
    starts from ``omega`` and the noisy logits; ``"multi"`` starts from all three and
    keeps the lowest minimum; ``"full"`` keeps the better of the cold minima and the
    points ``prox`` themselves, for ``prox`` already minimised at ``x``). Returns
    :class:`OutputArrays` (means scaled by ``alpha``; ``m_hat`` in the form of
    :func:`pathwise_m_hat`;
    the checks of :meth:`~attnlib.channels.Channel.a_hat_terms` as further columns).
    """
    channel = _channel_of(task)
    R, N, _ = z.shape
    means = channel.output_means(alpha, Q0, x, R)  # closed form, or None
    if means is not None:
        return OutputArrays(means, prox, jnp.zeros(prox.shape[0]), jnp.asarray(0))
    zf = z.reshape(R * N, -1)
    p = pairs(channel, zf, Q0, x)
    starts = jnp.stack([p.omega, p.lab], axis=1)
    h, obj, n_better = _solve_prox(channel, p.Y, p.omega, p.V, starts, prox, mode=mode)
    out, _ = channel.finish(p.Y, p.omega, p.V, h)
    s2, _ = _sigmas(channel.task)
    a_hat, *checks = (alpha * a for a in channel.a_hat_terms(p, out, x, Q0))
    cols = [
        a_hat,
        0.5 * alpha * jnp.sum(s2 * out.g**2, axis=-1),
        alpha * _m_hat_terms(channel, p, out, zf),
        out.loss,
        *checks,
    ]
    per = jnp.stack(cols, axis=-1)
    return OutputArrays(jnp.mean(per.reshape(R, N, len(cols)), axis=1), h, obj, n_better)


@functools.partial(jax.jit, static_argnames=("task",))
def _cold_prox(task, z, Q0, x):
    """:func:`cold_prox` on one piece of the QMC points (one compiled program)."""
    zf = z.reshape(z.shape[0] * z.shape[1], -1)
    Y, omega, lab, V, _, _ = pairs(task, zf, Q0, x)
    starts = jnp.stack([omega, lab], axis=1)
    h, obj, _ = _solve_prox(_channel_of(task), Y, omega, V, starts, None, mode="cold")
    return h, obj


@functools.partial(jax.jit, static_argnames=("task",))
def _lower_minima(task, z, Q0, x, prox, cold):
    """:func:`lower_minima` on one piece of the QMC points (one compiled program)."""
    zf = z.reshape(z.shape[0] * z.shape[1], -1)
    Y, omega, _, V, _, _ = pairs(task, zf, Q0, x)
    f_warm = channels.prox_objective(task, Y, prox, omega, V)
    better = cold[1] < f_warm - 1e-10 * (1.0 + jnp.abs(f_warm))
    return jnp.where(better[:, None], cold[0], prox), jnp.sum(better)


def _rows(a, n_rep: int, sl: slice) -> np.ndarray:
    """The rows of a per-point array ``(n_rep N, ...)`` (scrambling-major, as the prox
    points) in the piece ``sl`` of every scrambling: ``(n_rep len(sl), ...)``."""
    a = np.asarray(a)
    return a.reshape(n_rep, -1, *a.shape[1:])[:, sl].reshape(-1, *a.shape[1:])


def _join(parts, n_rep: int) -> np.ndarray:
    """The inverse of :func:`_rows` over all pieces: per-piece rows back to ``(n_rep N, ...)``."""
    parts = [np.asarray(p) for p in parts]
    out = np.concatenate([p.reshape(n_rep, -1, *p.shape[1:]) for p in parts], axis=1)
    return out.reshape(-1, *out.shape[2:])


def output_chunks(task, z, alpha, Q0, x, prox, *, mode="warm") -> OutputArrays:
    """:func:`output_arrays` on the pieces of :func:`attnlib.qmc.chunks` (one compiled
    program for every number of points ``N >= CHUNK``): the pieces' means averaged, the
    prox points and objectives joined. One piece (``N <= CHUNK``, the default): the
    compiled call itself."""
    pieces = _qmc.chunks(z.shape[1])
    if len(pieces) == 1:
        return output_arrays(task, z, alpha, Q0, x, prox, mode=mode)
    zn, R = np.asarray(z), z.shape[0]
    outs = [
        output_arrays(task, zn[:, sl], alpha, Q0, x, _rows(prox, R, sl), mode=mode) for sl in pieces
    ]
    means = np.mean([np.asarray(o.means) for o in outs], axis=0)
    h, obj = _join([o.prox for o in outs], R), _join([o.objective for o in outs], R)
    return OutputArrays(means, h, obj, sum(int(o.n_better) for o in outs))


def cold_prox(task, z, Q0, x):
    """Prox points ``(R N, K)`` at ``x`` from the cold starts (``omega`` and the noisy
    logits) on the QMC points ``z`` ``(R, N, dim)``, and their objectives ``(R N,)``:
    the prox of :func:`output_arrays` ``mode="cold"`` without the averages (compiled on
    the pieces of :func:`attnlib.qmc.chunks`)."""
    pieces = _qmc.chunks(z.shape[1])
    if len(pieces) == 1:
        return _cold_prox(task, z, Q0, x)
    zn, R = np.asarray(z), z.shape[0]
    outs = [_cold_prox(task, zn[:, sl], Q0, x) for sl in pieces]
    return _join([o[0] for o in outs], R), _join([o[1] for o in outs], R)


def lower_minima(task, z, Q0, x, prox, cold):
    """``(prox', n_better)``: per problem the better of the warm prox points ``prox`` and
    the cold ones ``cold = (h, objective)`` of :func:`cold_prox` at the same ``x``
    (the prox of :func:`output_arrays` ``mode="full"``, computed in two programs, each
    on the pieces of :func:`attnlib.qmc.chunks`)."""
    pieces = _qmc.chunks(z.shape[1])
    if len(pieces) == 1:
        return _lower_minima(task, z, Q0, x, prox, cold)
    zn, R = np.asarray(z), z.shape[0]
    outs = [
        _lower_minima(task, zn[:, sl], Q0, x, _rows(prox, R, sl),
                      (_rows(cold[0], R, sl), _rows(cold[1], R, sl)))
        for sl in pieces
    ]  # fmt: skip
    return _join([o[0] for o in outs], R), sum(int(o[1]) for o in outs)


def _stderr(x: np.ndarray) -> float:
    return float(np.std(x, ddof=1) / math.sqrt(len(x))) if len(x) > 1 else 0.0


def summarize(means) -> OutputSide:
    """:class:`OutputSide` from per-replicate means ``(R, 4)`` (further columns, a
    channel's checks, are left out)."""
    means = np.asarray(means)[:, :4]
    mean = means.mean(axis=0)
    return OutputSide(*(float(t) for t in mean), tuple(_stderr(c) for c in means.T))


def qmc_points(task, n_qmc, n_rep, seed):
    """The output side's QMC points ``(R, N, 2K + noise_dim)`` as a JAX array."""
    channel = _channel_of(task)
    if channel.closed_form_output:  # no QMC average
        return jnp.zeros((n_rep, 1, 1))
    dim = 2 * channel.task.n_pairs + channel.noise_dim
    return jax.device_put(qmc_normals(dim, n_qmc, n_rep, seed))  # no program per shape


# rounding allowed in the Cauchy-Schwarz check, in units of the overlaps' magnitude Q0 + q:
# an ``m`` computed from sums of terms of that size (``m = (Q0 + q - mse) / 2`` at a zero
# phase, ``q = 0``) carries a few ulps of it
_CS_ULPS = 16


def check_overlaps(Q0, m, q):
    """``(m, q)`` after the checks ``q >= 0`` and Cauchy-Schwarz ``m^2 <= q Q0``.

    ``m^2 <= q Q0 (1 + 1e-9)`` passes unchanged; an ``|m|`` past ``sqrt(q Q0)`` by at most
    ``16 eps (Q0 + q)`` (rounding, e.g. ``m = -1.6e-15`` at ``q = 0``) is clipped to
    ``+-sqrt(q Q0)``; a larger violation is a ValueError."""
    q = _checks.nonnegative("q", q)
    m = _checks.real("m", m)
    if math.isfinite(m) and m * m <= q * Q0 * (1 + 1e-9) + 1e-300:
        return m, q
    bound = math.sqrt(q * Q0)
    if math.isfinite(m) and abs(m) - bound <= _CS_ULPS * np.finfo(float).eps * (Q0 + q):
        return math.copysign(bound, m), q
    raise ValueError(f"m must satisfy m^2 <= q Q0 (Cauchy-Schwarz), got m={m}, q={q}, Q0={Q0}")


def output_side(
    task, alpha, Q0, m, q, v, *, n_qmc: int = 8192, n_rep: int = 4, seed: int = 0,
    m_hat: str = "derivative",
) -> OutputSide:  # fmt: skip
    """One evaluation of the output side at ``(m, q, v)`` (cold-started prox).

    ``task``: a task or a channel (e.g. ``channels.for_task(hardmax_task).at_zero_scale()``,
    the output side of :func:`attnlib.hardmax.solve`, ``a_hat`` from the exact derivative).
    ``m_hat``: its form, as in :class:`attnlib.se.SESettings` (``"derivative"`` or
    ``"stein"``; :func:`m_hat_channel`).
    """
    task = m_hat_channel(task, m_hat)
    alpha = _checks.alpha(alpha)
    Q0 = _checks.positive("Q0", Q0)
    check_overlaps(Q0, m, q)
    v = _checks.positive("v", v)
    _checks.integer("n_qmc", n_qmc, 2)
    z = qmc_points(task, n_qmc, n_rep, seed)
    prox = np.zeros((z.shape[0] * z.shape[1], task.task.n_pairs))
    x = jnp.asarray([m, q, v], dtype=jnp.float64)
    out = output_chunks(task, z, jnp.float64(alpha), jnp.float64(Q0), x, prox, mode="cold")
    return summarize(out.means)
