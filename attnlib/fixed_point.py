"""A generic fixed-point solver: damped Anderson acceleration in one ``lax.while_loop``.

:func:`anderson` looks for ``x = F(x)`` for a map ``F(x, aux) -> (F(x), aux', ok)`` of
a vector ``x`` (shape ``(n,)``) that may carry a memory ``aux`` (any pytree, for
example warm starts of an inner solver; it is updated at every evaluation) and may
report that ``x`` lies outside its domain (``ok = False``). It knows nothing of the
map it solves.

Iteration (type-II Anderson with memory ``memory`` and damping ``damping``), with the
residual ``r = F(x) - x`` and ``beta = 1 - damping``::

    x_new = x + beta r - (dX + beta dR) gamma,   gamma = argmin ||r - dR gamma||,

``dX, dR`` the differences of the last iterates and residuals. Safeguards: a step
longer than ``max_step`` (max norm) is scaled down; a non-finite Anderson step falls
back to the damped one; where ``F`` is not ``ok`` (or not finite) the solver steps
back half way towards the last good point, halves the step length and forgets its
history, and gives up (status ``STALLED``) when the step length falls below
``min_step``. It stops when ``max |F(x) - x| < tol`` (status ``CONVERGED``) or after
``max_iter`` evaluations of ``F`` (status ``MAX_ITER``). It never raises: the caller
reads the status and the residual.

:func:`start`, :func:`advance` and :func:`result` are the same iteration one evaluation
at a time, for a map that must be evaluated outside ``jax.jit`` (on the host).

Warm history: a solve of a neighbouring map (e.g. the same map at a nearby parameter)
ends with the differences of its last iterates and residuals, a secant model of
``(I - F')^{-1}``. Passed as ``history`` (the ``history`` of its :class:`FixedPoint`),
the history is translated so that its newest row is the first evaluation, ``(x0,
F(x0) - x0)``: the differences are kept and the first step is already a quasi-Newton
step. The stopping test is unchanged (``max |F(x) - x| < tol`` at an evaluated point).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from attnlib import _checks

# start / advance / result (one evaluation at a time, for host-driven maps) are helpers
# of attnlib.se, not exported: their arguments are the solver's own state
__all__ = ["AndersonConfig", "FixedPoint", "anderson", "CONVERGED", "MAX_ITER", "STALLED"]

CONVERGED, MAX_ITER, STALLED = 0, 1, 2


class AndersonConfig(NamedTuple):
    """Settings of :func:`anderson` (``0 <= damping < 1``; ``memory = 0``: damped iteration)."""

    tol: float = 1e-6
    max_iter: int = 300
    damping: float = 0.5
    memory: int = 5
    max_step: float = 1.0
    min_step: float = 1e-4


class FixedPoint(NamedTuple):
    """Result of :func:`anderson`.

    ``x``: the last point where ``F`` was ok with the smallest residual seen (the fixed
    point when ``status == CONVERGED``); ``fx = F(x)``; ``aux``: the map's memory after
    the last evaluation; ``residual = max |F(x) - x|``; ``n_iter``: evaluations of ``F``;
    ``status``: ``CONVERGED``, ``MAX_ITER`` or ``STALLED``; ``history = (hx, hr, k)``:
    the last ``memory + 1`` good iterates and residuals (newest last, ``k`` valid rows),
    the warm history of a neighbouring solve (see the module docstring).
    """

    x: jax.Array
    fx: jax.Array
    aux: Any
    residual: jax.Array
    n_iter: jax.Array
    status: jax.Array
    history: Any = None


class _State(NamedTuple):
    x: jax.Array  # point to evaluate next
    aux: Any
    hx: jax.Array  # (memory + 1, n) last good iterates, newest last
    hr: jax.Array  # (memory + 1, n) their residuals
    k: jax.Array  # number of valid history rows
    step: jax.Array  # current damped step length (<= beta)
    good: jax.Array  # whether a good point has been seen
    best_x: jax.Array
    best_fx: jax.Array
    best_res: jax.Array
    it: jax.Array
    status: jax.Array  # -1 while running
    seeded: jax.Array  # the history comes from another solve: translate it, do not push


def _anderson_step(st, x, r, beta, cfg):
    """Next point from the history (already containing ``x, r``)."""
    m = cfg.memory
    damped = x + st.step * r
    if m == 0:
        return damped
    dX = jnp.diff(st.hx, axis=0)  # (m, n)
    dR = jnp.diff(st.hr, axis=0)
    use = jnp.arange(m) >= m + 1 - st.k  # rows whose two ends are both valid
    dX = jnp.where(use[:, None], dX, 0.0)
    dR = jnp.where(use[:, None], dR, 0.0)
    gamma = jnp.linalg.lstsq(dR.T, r, rcond=1e-12)[0]
    x_aa = damped - (dX + st.step * dR).T @ gamma
    ok = jnp.all(jnp.isfinite(x_aa)) & (st.k >= 2)
    return jnp.where(ok, x_aa, damped)


def _push(h, row):
    return jnp.roll(h, -1, axis=0).at[-1].set(row)


def _record(st, x, r, cfg):
    """History with ``(x, r)`` as its newest row: pushed, or (a warm history from another
    solve) the valid rows translated so that their newest one becomes ``(x, r)``."""
    valid = (jnp.arange(cfg.memory + 1) >= cfg.memory + 1 - st.k)[:, None]
    tx = jnp.where(valid, st.hx + (x - st.hx[-1]), 0.0)
    tr = jnp.where(valid, st.hr + (r - st.hr[-1]), 0.0)
    hx = jnp.where(st.seeded, tx, _push(st.hx, x))
    hr = jnp.where(st.seeded, tr, _push(st.hr, r))
    return hx, hr, jnp.where(st.seeded, st.k, jnp.minimum(st.k + 1, cfg.memory + 1))


def _on_good(st, x, fx, aux, cfg):
    beta = 1.0 - cfg.damping
    r = fx - x
    res = jnp.max(jnp.abs(r))
    better = res < st.best_res
    hx, hr, k = _record(st, x, r, cfg)
    st = st._replace(hx=hx, hr=hr, k=k, aux=aux, seeded=jnp.asarray(False))
    st = st._replace(step=jnp.minimum(beta, 2.0 * st.step), good=jnp.asarray(True))
    x_new = _anderson_step(st, x, r, beta, cfg)
    dx = x_new - x
    big = jnp.max(jnp.abs(dx))
    x_new = jnp.where(big > cfg.max_step, x + dx * (cfg.max_step / big), x_new)
    status = jnp.where(res < cfg.tol, CONVERGED, -1)
    return st._replace(
        x=jnp.where(res < cfg.tol, x, x_new),
        best_x=jnp.where(better, x, st.best_x),
        best_fx=jnp.where(better, fx, st.best_fx),
        best_res=jnp.minimum(res, st.best_res),
        status=status,
    )


def _on_bad(st, x, aux, cfg):
    """Half way back towards the last good point, shorter steps, no history."""
    last = st.hx[-1]
    step = 0.5 * st.step
    x_new = jnp.where(st.good, last + 0.5 * (x - last), x)
    stalled = (step < cfg.min_step) | ~st.good
    return st._replace(
        x=x_new, aux=aux, k=jnp.zeros_like(st.k), step=step,
        status=jnp.where(stalled, STALLED, -1),
        seeded=jnp.asarray(False),
    )  # fmt: skip


def _check_args(F, x0, cfg):
    """ValueError naming ``F``, ``x0`` or ``config`` if one is not usable (shapes only
    for traced ``x0``: its values are checked by the iteration, not here)."""
    if not callable(F):
        raise ValueError(f"F must be a callable F(x, aux) -> (F(x), aux, ok), got {F!r}")
    if not isinstance(cfg, AndersonConfig):
        raise ValueError(f"config must be an AndersonConfig or None, got {cfg!r}")
    if isinstance(x0, jax.core.Tracer):
        shape = x0.shape
    else:
        a = _checks.numeric_array("x0", x0, kinds="biuf")
        _checks.finite_array("x0", a, max_abs=_checks.MAX_ABS)
        shape = a.shape
    if len(shape) != 1 or shape[0] < 1:
        raise ValueError(f"x0 must be a non-empty vector (n,), got shape {shape}")


def _history(x0, cfg, history):
    """``(hx, hr, k)`` of a warm history (zero rows where ``k = 0`` or ``None``); ``k`` a
    strongly typed integer whatever was passed, so that every start shares one trace."""
    shape = (cfg.memory + 1, x0.shape[0])
    if history is None:
        return jnp.zeros(shape, x0.dtype), jnp.zeros(shape, x0.dtype), jnp.zeros((), int)
    hx, hr, k = history
    if jnp.shape(hx) != shape or jnp.shape(hr) != shape or jnp.ndim(k) != 0:
        raise ValueError(
            f"history must be (hx, hr, k) with hx, hr of shape {shape} (memory + 1, n) "
            f"and k a scalar, got shapes {jnp.shape(hx)}, {jnp.shape(hr)}, {jnp.shape(k)}"
        )
    k = jnp.asarray(k, dtype=int)
    ok = jnp.all(jnp.isfinite(hx)) & jnp.all(jnp.isfinite(hr)) & (k >= 0) & (k <= shape[0])
    k = jnp.where(ok, k, 0)
    return jnp.asarray(hx, x0.dtype), jnp.asarray(hr, x0.dtype), k


def start(x0, aux0=None, config: AndersonConfig | None = None, history=None):
    """The iteration's state before the first evaluation of ``F`` at ``x0`` (for a loop
    driven from the host: ``state.x`` is the next point to evaluate; see :func:`advance`);
    ``history``: an optional warm history (:attr:`FixedPoint.history`)."""
    cfg = AndersonConfig() if config is None else config
    x0 = jnp.asarray(x0, dtype=jnp.float64)
    hx, hr, k = _history(x0, cfg, history)
    return _State(
        x0, aux0, hx, hr, k, jnp.asarray(1.0 - cfg.damping, x0.dtype),
        jnp.asarray(False), x0, jnp.full_like(x0, jnp.nan), jnp.asarray(jnp.inf, x0.dtype),
        jnp.asarray(0), jnp.asarray(-1), k > 0,
    )  # fmt: skip


def advance(st, fx, aux, ok, config: AndersonConfig):
    """The state after ``F(st.x) = (fx, aux, ok)``; ``st.status >= 0`` once finished
    (traceable; ``config`` concrete). :func:`anderson` is ``start``, then ``advance``
    in a ``lax.while_loop`` while ``status < 0``."""
    cfg = config
    ok = ok & jnp.all(jnp.isfinite(fx))
    st = st._replace(it=st.it + 1)
    st = jax.lax.cond(
        ok, lambda s: _on_good(s, s.x, fx, aux, cfg), lambda s: _on_bad(s, s.x, aux, cfg), st
    )
    out_of_budget = (st.status < 0) & (st.it >= cfg.max_iter)
    return st._replace(status=jnp.where(out_of_budget, MAX_ITER, st.status))


def result(st) -> FixedPoint:
    """:class:`FixedPoint` of a finished state."""
    return FixedPoint(
        st.best_x, st.best_fx, st.aux, st.best_res, st.it, st.status, (st.hx, st.hr, st.k)
    )


def anderson(F, x0, aux0=None, config: AndersonConfig | None = None, history=None) -> FixedPoint:
    """Damped Anderson iteration of ``F(x, aux) -> (F(x), aux', ok)`` from ``x0``.

    Traceable (call it inside ``jax.jit``); ``config`` must be concrete. See the module
    docstring for the iteration, its safeguards, the returned status and the optional
    warm ``history`` of a neighbouring solve.
    """
    cfg = AndersonConfig() if config is None else config
    _check_args(F, x0, cfg)
    st = start(x0, aux0, cfg, history)

    def body(st):
        fx, aux, ok = F(st.x, st.aux)
        return advance(st, fx, aux, ok, cfg)

    st = jax.lax.while_loop(lambda s: s.status < 0, body, st)
    return result(st)
