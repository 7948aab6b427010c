"""The state-evolution map and its fixed point, jitted (one compilation per task and penalty).

One map for every ERM state evolution: the task's output side composed with a denoiser
(:class:`attnlib.gamp.SpectralProx`), the input side of the penalty (nuclear + PSD,
Frobenius, or the nuclear map cut at ``x_kappa`` for a student of width ``kappa``).
Frobenius penalty: the whole iteration is one compiled ``lax.while_loop``. Nuclear
penalty, constrained or not: the input side is numpy (:func:`attnlib.se.input.host_input`),
so the same iteration is driven from the host, one compiled output side and one compiled
Anderson update per map (:func:`attnlib.iterate.update`): no host callback in a compiled
program, so that JAX's persistent compilation cache keeps them all, and the target stays
a Python object on the host (no registry naming targets inside compiled code).
In the host-driven loop the number of QMC points is a runtime size: the output side runs
on pieces of :data:`attnlib.qmc.CHUNK` points per scrambling, and the prox points (one
per QMC point) stay on the host, out of the compiled Anderson state, so that doubling
``n_qmc`` (``se.solve(..., rtol=)``) compiles nothing new. The Frobenius device loop
holds all points in one program (one compilation per ``n_qmc``).

The unknowns are ``y = (m / Q0, log(q / Q0), log v)`` (comparable scales; ``q, v`` stay
positive); the map is ``y -> output side -> input side -> y`` with the prox points of
the output side carried along as warm starts. The fixed point is found by the generic
:func:`attnlib.iterate.anderson`; the map reports ``ok = False`` outside its domain
(``m^2 >= q Q0``, ``a_hat <= 0``, ``m_hat <= 0``, non-finite values) and when the input
side thresholds the whole spectrum away (``S_hat = 0``, remembered in ``saw_zero``).
"""

from __future__ import annotations

import functools
import logging
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import _compiled_programs, _limits, iterate, qmc
from attnlib.gamp import SpectralProx
from attnlib.se.input import frobenius_arrays, host_input
from attnlib.se.output import _join, _rows, output_arrays

__all__ = [
    "Data",
    "to_y",
    "to_x",
    "se_map",
    "solve_fixed_point",
    "no_history",
    "in_domain",
]

log = logging.getLogger("attnlib.se")


class Data(NamedTuple):
    """Arrays of one solve: QMC points ``z`` and the scalars of the problem."""

    z: jax.Array
    alpha: jax.Array
    lam: jax.Array
    Q0: jax.Array


class LoopSettings(NamedTuple):
    """Dynamic settings of the fixed-point iteration (no recompilation when they change):
    internal, the loop's part of :class:`attnlib.se.SESettings` (:func:`loop_settings`)."""

    tol: float = 1e-6
    max_iter: int = 300
    damping: float = 0.5
    max_step: float = 1.0


def loop_settings(s) -> LoopSettings:
    """The loop's part of an :class:`attnlib.se.SESettings` ``s`` (strongly typed scalars)."""
    return LoopSettings(np.float64(s.tol), np.int64(s.max_iter), np.float64(s.damping))


def _xp(a):
    """numpy for numpy arrays (no dispatch on the host), else jax.numpy (traceable)."""
    return np if isinstance(a, np.ndarray) else jnp


def to_y(x, Q0, ray=False):
    """``(m, q, v) -> (m / Q0, log(q / Q0), log v)``; ``ray``: ``-> (artanh(m / sqrt(q
    Q0)), log(v / sqrt q))`` (the direction and scale-free width; the cosine capped at
    ``1 - 1e-15``)."""
    xp = _xp(x)
    if ray:
        cos = xp.minimum(x[0] / xp.sqrt(x[1] * Q0), 1 - 1e-15)
        return xp.stack([xp.arctanh(cos), xp.log(x[2] / xp.sqrt(x[1]))])
    return xp.stack([x[0] / Q0, xp.log(x[1] / Q0), xp.log(x[2])])


def to_x(y, Q0, ray=False):
    """The inverse of :func:`to_y` (``y`` clipped to ``[-50, 50]``; ``ray``: at ``q = Q0``)."""
    xp = _xp(y)
    y = xp.clip(y, -50.0, 50.0)
    if ray:
        return xp.stack([xp.tanh(y[0]) * Q0, Q0 * xp.ones_like(y[0]), xp.exp(y[1]) * xp.sqrt(Q0)])
    return xp.stack([y[0] * Q0, Q0 * xp.exp(y[1]), xp.exp(y[2])])


def in_domain(x, Q0) -> bool:
    """Whether ``x = (m, q, v)`` (host numbers) lies in the map's domain: finite,
    ``q, v > 0`` and ``m^2 < q Q0`` (the test of :func:`_input_half`, on the host)."""
    m, q, v = (float(t) for t in x)
    return bool(np.all(np.isfinite(x)) and q > 0 and v > 0 and m * m < q * Q0)


def _conjugates(means):
    """``(m_hat, q_hat, a_hat)`` from per-replicate ``(a_hat, q_hat, m_hat, loss)``."""
    mean = jnp.mean(means, axis=0)
    return jnp.stack([mean[2], mean[1], mean[0]])


class _Half(NamedTuple):
    """The output half of one map at ``y``: ``x``, its checks, the conjugates (``conj``,
    replaced by a harmless value where the output side failed), prox points, means."""

    x: jax.Array
    in_domain: jax.Array
    out_ok: jax.Array
    conj: jax.Array
    prox: jax.Array
    means: jax.Array


def _output_half(task, data: Data, y, aux, mode="warm", ray=False) -> _Half:
    prox = aux[0]
    Q0 = data.Q0
    x = to_x(y, Q0, ray)
    bound = 0.999 * jnp.sqrt(x[1] * Q0)
    inside = x[0] ** 2 < x[1] * Q0
    x_safe = jnp.where(inside, x, x.at[0].set(jnp.clip(x[0], -bound, bound)))
    out = output_arrays(task, data.z, data.alpha, Q0, x_safe, prox, mode=mode)
    conj = _conjugates(out.means)
    out_ok = (conj[0] > 0) & (conj[2] > 0) & (conj[1] >= 0) & jnp.all(jnp.isfinite(conj))
    safe = jnp.where(out_ok, conj, jnp.array([1.0, 0.0, 1.0]))
    new_prox = jnp.where(jnp.all(jnp.isfinite(out.prox)), out.prox, prox)
    return _Half(x, inside, out_ok, safe, new_prox, out.means)


def _input_half(half: _Half, inp, aux, Q0, ray=False):
    """``(F(y), aux', ok)`` from the output half and the input side's ``inp``."""
    zero = half.out_ok & (inp[3] == 0.0) & (inp[1] == 0.0)
    fx = inp[:3]
    fx_ok = jnp.all(jnp.isfinite(fx)) & (fx[1] > 0) & (fx[2] > 0) & (fx[0] ** 2 < fx[1] * Q0)
    ok = half.in_domain & half.out_ok & fx_ok
    fy = to_y(jnp.where(fx_ok, fx, half.x), Q0, ray)
    return fy, (half.prox, aux[1] | zero, half.means, inp), ok


def se_map(task, data: Data, y, aux, mode="warm"):
    """One SE map ``y -> F(y)`` of the Frobenius penalty (traceable; the nuclear map is
    the same with :func:`attnlib.se.input.host_input` between the halves): returns
    ``(F(y), aux', ok)``; ``aux = (prox, saw_zero, means, image)`` with the output
    side's per-replicate means at ``y`` and the input side's ``(m, q, v,
    rank_fraction)`` there (the metrics of a converged point).
    ``mode``: the prox of the output side, Newton from the carried prox points
    (``"warm"``) or from them and the cold starts (``"multi"``, see
    :func:`attnlib.se.output.output_arrays`)."""
    half = _output_half(task, data, y, aux, mode)
    inp = frobenius_arrays(half.conj, data.lam, data.Q0)
    return _input_half(half, inp, aux, data.Q0)


def _config(settings: LoopSettings, memory):
    return iterate.AndersonConfig(
        settings.tol, settings.max_iter, settings.damping, memory, settings.max_step
    )


def _aux0(data: Data, prox0):
    return (prox0, jnp.asarray(False), jnp.zeros((data.z.shape[0], 4)), jnp.zeros(4))


def no_history(memory, n=3):
    """An empty warm history of the Anderson solver (``k = 0``) for ``n`` unknowns (2 on
    a ray): arrays of the same shapes as a real one, so that both share one compilation."""
    h = np.zeros((memory + 1, n))
    return h, h, np.int64(0)


def _finish(fp):
    prox, saw_zero, means, image = fp.aux
    return fp._replace(aux=(prox, means, image)), saw_zero


@functools.partial(jax.jit, static_argnames=("task", "memory", "mode"))
def _device_loop(task, memory, data: Data, settings: LoopSettings, start, *, mode):
    """The whole iteration in one ``lax.while_loop`` (Frobenius: input side traceable)."""
    y0, prox0, history = start

    def F(y, aux):
        return se_map(task, data, y, aux, mode)

    cfg = _config(settings, memory)
    return _finish(iterate.anderson(F, y0, _aux0(data, prox0), cfg, history))


@functools.partial(jax.jit, static_argnames=("task", "mode", "ray"))
def _host_output(task, data: Data, y, prox, mode, ray):
    return _output_half(task, data, y, (prox,), mode, ray)


def _pieces_output(task, data: Data, y, prox, mode, ray) -> _Half:
    """The output half at ``y`` on the pieces of :func:`attnlib.qmc.chunks` (one compiled
    program for every number of points): the pieces' means averaged, then the checks of
    :func:`_output_half` on them (on the host); one piece: the compiled half itself."""
    pieces = qmc.chunks(data.z.shape[1])
    if len(pieces) == 1:
        return _host_output(task, data, y, prox, mode, ray)
    zn, R, p = np.asarray(data.z), data.z.shape[0], np.asarray(prox)
    halves = [
        _host_output(task, data._replace(z=zn[:, sl]), y, _rows(p, R, sl), mode, ray)
        for sl in pieces
    ]
    means = np.mean([np.asarray(h.means) for h in halves], axis=0)
    mean = means.mean(axis=0)
    conj = np.array([mean[2], mean[1], mean[0]])
    out_ok = bool((conj[0] > 0) & (conj[2] > 0) & (conj[1] >= 0) & np.all(np.isfinite(conj)))
    safe = conj if out_ok else np.array([1.0, 0.0, 1.0])
    h0 = halves[0]
    return _Half(
        h0.x, h0.in_domain, np.bool_(out_ok), safe, _join([h.prox for h in halves], R), means
    )


@functools.partial(jax.jit, static_argnames=("memory", "ray"))
def _host_advance(memory, data: Data, settings: LoopSettings, st, half, inp, *, ray):
    fy, aux, ok = _input_half(half, inp, st.aux, data.Q0, ray)
    return iterate.update(st, fy, aux, ok, _config(settings, memory))


@functools.partial(jax.jit, static_argnames=("memory",))
def _host_start(memory, data: Data, settings: LoopSettings, start):
    y0, prox0, history = start
    return iterate.init(y0, _aux0(data, prox0), _config(settings, memory), history)


def _host_loop(
    task, denoiser: SpectralProx, memory, data: Data, settings: LoopSettings, start, *, mode
):
    """The same iteration driven from the host, two jitted calls per map around the
    nuclear input side (numpy, :mod:`attnlib.rmt`): no host callback inside the
    compiled programs, so that JAX's persistent compilation cache can keep them."""
    y0, prox, history = start
    # the prox points stay out of the compiled state (their number is a runtime size):
    # the programs below see a placeholder and the QMC points' pieces only
    none, ray = jnp.zeros((0, np.shape(prox)[1])), denoiser.ray
    scalars = data._replace(z=np.zeros((data.z.shape[0], 0, 0)))
    st = _host_start(memory, scalars, settings, (y0, none, history))
    n = 0
    while True:
        _limits.tick(log, "state evolution at alpha %.4g, lam %.3g: %d maps of this attempt",
                     float(data.alpha), float(data.lam), n)  # fmt: skip
        _limits.check()  # the caller's time limit, between two maps
        n += 1
        half = _pieces_output(task, data, st.x, prox, mode, ray)
        prox = half.prox
        inp = host_input(denoiser.target, np.asarray(half.conj), data.lam, denoiser.kappa)
        st = _host_advance(memory, scalars, settings, st, half._replace(prox=none), inp, ray=ray)
        if int(st.status) >= 0:
            fp, saw_zero = _finish(iterate.result(st))
            return fp._replace(aux=(prox, *fp.aux[1:])), saw_zero


def solve_fixed_point(
    task, denoiser: SpectralProx, memory, data: Data, settings: LoopSettings, start, *, mode="warm"
):
    """Anderson fixed point of :func:`se_map` from ``start = (y0, prox0, history)``
    (``history``: a warm Anderson history, :func:`no_history` for none; ``mode``: the
    output side's prox, see :func:`se_map`).

    Returns ``(FixedPoint, saw_zero)`` (see :func:`attnlib.iterate.anderson`); the
    ``aux`` of the result is ``(prox, means, image)`` of the last evaluation. The
    Frobenius penalty runs in one compiled loop; the nuclear one, rank-constrained or
    not, from the host (:func:`_host_loop`).
    """
    _compiled_programs.release_if_needed()  # a long process: JAX's caches bounded
    # strongly typed scalars: a Python float (weakly typed) would compile anew
    tol, n, damping, max_step = settings
    settings = LoopSettings(np.float64(tol), np.int64(n), np.float64(damping), np.float64(max_step))
    if denoiser.penalty == "nuclear":
        return _host_loop(task, denoiser, memory, data, settings, start, mode=mode)
    return _device_loop(task, memory, data, settings, start, mode=mode)
