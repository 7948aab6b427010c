"""The one fixed-point solver of attnlib: damped Anderson acceleration, optax-style.

A solve of ``x = F(x)`` is an ``(init, update)`` pair over a NamedTuple :class:`State`:
:func:`init` builds the state before the first evaluation (``state.x`` is the point to
evaluate next), :func:`update` takes the state and one evaluation ``F(state.x) = (fx,
aux, ok)`` to the next state, :func:`result` reads a finished state as a
:class:`FixedPoint`. The map ``F(x, aux) -> (F(x), aux', ok)`` acts on a vector ``x``
(shape ``(n,)``), may carry a memory ``aux`` (any pytree, for example warm starts of an
inner solver; updated at every evaluation) and may report that ``x`` lies outside its
domain (``ok = False``). The solver knows nothing of the map. Two drivers run the pair:
:func:`anderson`, traceable (one ``lax.while_loop``, for a map written in JAX), and
:func:`run`, a loop on the host (for a map in numpy), with the same iterates.

Iteration (type-II Anderson with memory ``memory`` and damping ``damping``), with the
residual ``r = F(x) - x`` and ``beta = 1 - damping``::

    x_new = x + beta r - (dX + beta dR) gamma,   gamma = argmin ||r - dR gamma||,

``dX, dR`` the differences of the last iterates and residuals; ``memory = 0`` is the
damped iteration ``x_new = x + beta r``. Safeguards: a step longer than ``max_step``
(max norm) is scaled down; a non-finite Anderson step falls back to the damped one;
where ``F`` is not ``ok`` (or not finite) the solver steps back half way towards the
last good point, halves the step length and forgets its history, and gives up (status
``STALLED``) when the step length falls below ``min_step``. It stops when ``max |F(x) -
x| < tol`` (status ``CONVERGED``) or after ``max_iter`` evaluations of ``F`` (status
``MAX_ITER``). It never raises on the map's account: the caller reads the status and
the residual. ``observe(x, fx, state)``, an optional hook, sees every evaluation (the
point, its image and the state after the update): the trajectory of a solve.

Warm history: a solve of a neighbouring map (e.g. the same map at a nearby parameter)
ends with the differences of its last iterates and residuals, a secant model of
``(I - F')^{-1}``. Passed as ``history`` (the ``history`` of its :class:`FixedPoint`),
the history is translated so that its newest row is the first evaluation, ``(x0,
F(x0) - x0)``: the differences are kept and the first step is already a quasi-Newton
step. The stopping test is unchanged (``max |F(x) - x| < tol`` at an evaluated point).

One-scalar equations ``G(x) = 0`` whose largest root is wanted (the Bayes-optimal
effective noise, :mod:`attnlib.bayes.state_evolution`): :func:`largest_root` brackets
it by steps down from a start where ``G >= 0`` and refines it with Brent's method.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import brentq

from attnlib import _checks

__all__ = [
    "AndersonConfig",
    "State",
    "FixedPoint",
    "Root",
    "init",
    "update",
    "result",
    "anderson",
    "run",
    "largest_root",
    "CONVERGED",
    "MAX_ITER",
    "STALLED",
    "NO_ROOT",
    "BAD_START",
]

# statuses: CONVERGED, MAX_ITER, STALLED (fixed points and roots); NO_ROOT, BAD_START (roots)
CONVERGED, MAX_ITER, STALLED, NO_ROOT, BAD_START = 0, 1, 2, 3, 4


class AndersonConfig(NamedTuple):
    """Settings of the solver (``0 <= damping < 1``; ``memory = 0``: damped iteration)."""

    tol: float = 1e-6
    max_iter: int = 300
    damping: float = 0.5
    memory: int = 5
    max_step: float = 1.0
    min_step: float = 1e-4


class FixedPoint(NamedTuple):
    """Result of a solve.

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


class State(NamedTuple):
    """The solver's state between two evaluations (:func:`init`, :func:`update`)."""

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


def _anderson_step(st, x, r, cfg):
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


def _on_good(st, x, fx, aux, cfg, res):
    beta = 1.0 - cfg.damping
    r = fx - x
    res = jnp.max(jnp.abs(r)) if res is None else res
    better = res < st.best_res
    hx, hr, k = _record(st, x, r, cfg)
    st = st._replace(hx=hx, hr=hr, k=k, aux=aux, seeded=jnp.asarray(False))
    st = st._replace(step=jnp.minimum(beta, 2.0 * st.step), good=jnp.asarray(True))
    x_new = _anderson_step(st, x, r, cfg)
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
        x=x_new,
        aux=aux,
        k=jnp.zeros_like(st.k),
        step=step,
        status=jnp.where(stalled, STALLED, -1),
        seeded=jnp.asarray(False),
    )


def _config(config) -> AndersonConfig:
    cfg = AndersonConfig() if config is None else config
    if not isinstance(cfg, AndersonConfig):
        raise ValueError(f"config must be an AndersonConfig or None, got {config!r}")
    return cfg


def _check_x0(x0):
    """ValueError naming ``x0`` unless it is a finite non-empty vector (shapes only for a
    traced ``x0``: its values are checked by the iteration, not here)."""
    if isinstance(x0, jax.core.Tracer):
        shape = x0.shape
    else:
        a = _checks.numeric_array("x0", x0, kinds="biuf")
        _checks.finite_array("x0", a, max_abs=_checks.MAX_ABS)
        shape = a.shape
    if len(shape) != 1 or shape[0] < 1:
        raise ValueError(f"x0 must be a non-empty vector (n,), got shape {shape}")


def _check_hooks(F, observe, residual=None):
    if not callable(F):
        raise ValueError(f"F must be a callable F(x, aux) -> (F(x), aux, ok), got {F!r}")
    if observe is not None and not callable(observe):
        raise ValueError(
            f"observe must be a callable observe(x, fx, state) or None, got {observe!r}"
        )
    if residual is not None and not callable(residual):
        raise ValueError(
            f"residual must be a callable residual(x, fx, aux) or None, got {residual!r}"
        )


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


def init(x0, aux0=None, config: AndersonConfig | None = None, history=None) -> State:
    """The solver's state before the first evaluation of ``F`` at ``x0`` (``state.x`` is
    the next point to evaluate; see :func:`update`); ``aux0``: the map's initial memory;
    ``history``: an optional warm history (:attr:`FixedPoint.history`). Traceable."""
    cfg = _config(config)
    _check_x0(x0)
    x0 = jnp.asarray(x0, dtype=jnp.float64)
    hx, hr, k = _history(x0, cfg, history)
    return State(
        x0,
        aux0,
        hx,
        hr,
        k,
        jnp.asarray(1.0 - cfg.damping, x0.dtype),
        jnp.asarray(False),
        x0,
        jnp.full_like(x0, jnp.nan),
        jnp.asarray(jnp.inf, x0.dtype),
        jnp.asarray(0),
        jnp.asarray(-1),
        k > 0,
    )


def update(state: State, fx, aux, ok, config: AndersonConfig | None = None, residual=None):
    """The state after one evaluation ``F(state.x) = (fx, aux, ok)``; ``state.status >= 0``
    once finished. Traceable (the fields of ``config`` may be traced but for ``memory``).
    ``residual``: the stopping test's residual of this evaluation in place of ``max |fx -
    x|`` (``None``: that one)."""
    if not isinstance(state, State):
        raise ValueError(f"state must be an attnlib.iterate.State (from init), got {state!r}")
    cfg = _config(config)
    if jnp.shape(fx) != jnp.shape(state.x):
        raise ValueError(
            f"fx must have the shape of state.x {jnp.shape(state.x)}, got {jnp.shape(fx)}"
        )
    ok = ok & jnp.all(jnp.isfinite(fx))
    st = state._replace(it=state.it + 1)
    st = jax.lax.cond(
        ok,
        lambda s: _on_good(s, s.x, fx, aux, cfg, residual),
        lambda s: _on_bad(s, s.x, aux, cfg),
        st,
    )
    out_of_budget = (st.status < 0) & (st.it >= cfg.max_iter)
    return st._replace(status=jnp.where(out_of_budget, MAX_ITER, st.status))


def result(state: State) -> FixedPoint:
    """:class:`FixedPoint` of a finished state."""
    if not isinstance(state, State):
        raise ValueError(f"state must be an attnlib.iterate.State (from init), got {state!r}")
    st = state
    return FixedPoint(
        st.best_x, st.best_fx, st.aux, st.best_res, st.it, st.status, (st.hx, st.hr, st.k)
    )


def anderson(
    F, x0, aux0=None, config: AndersonConfig | None = None, history=None, *, observe=None
) -> FixedPoint:
    """Damped Anderson iteration of ``F(x, aux) -> (F(x), aux', ok)`` from ``x0``, in one
    ``lax.while_loop``.

    Traceable (call it inside ``jax.jit``); ``config`` must be concrete. ``observe(x, fx,
    state)`` is called on the host after every evaluation (``jax.debug.callback``). See
    the module docstring for the iteration, its safeguards, the returned status and the
    optional warm ``history`` of a neighbouring solve.
    """
    cfg = _config(config)
    _check_hooks(F, observe)
    _check_x0(x0)
    st = init(x0, aux0, cfg, history)

    def body(st):
        fx, aux, ok = F(st.x, st.aux)
        new = update(st, fx, aux, ok, cfg)
        if observe is not None:
            jax.debug.callback(observe, st.x, fx, new, ordered=True)
        return new

    st = jax.lax.while_loop(lambda s: s.status < 0, body, st)
    return result(st)


@functools.partial(jax.jit, static_argnames=("memory",))
def _host_update(memory, state, fx, ok, config, residual):
    return update(state, fx, None, ok, config._replace(memory=memory), residual)


def run(F, x0, aux0=None, config=None, history=None, *, observe=None, residual=None) -> FixedPoint:
    """The iteration of :func:`anderson` driven from the host: ``F(x, aux)`` takes and
    returns numpy arrays (and any ``aux``: it stays on the host), one compiled
    :func:`update` per evaluation. An exception raised by ``F`` propagates. ``observe(x,
    fx, state)`` is called after every evaluation; the result's ``aux`` is the map's
    memory after the last one. ``residual(x, fx, aux) -> float``: the residual of the
    stopping test (``None``: ``max |F(x) - x|``), e.g. a relative change of a part of
    ``x``."""
    cfg = _config(config)
    _check_hooks(F, observe, residual)
    _check_x0(x0)
    st = init(x0, None, cfg, history)
    dynamic = cfg._replace(memory=0)  # memory is static (shapes): one compilation per memory
    aux = aux0
    while int(st.status) < 0:
        x = np.asarray(st.x)
        fx, aux, ok = F(x, aux)
        fx = np.asarray(fx, dtype=np.float64)
        res = None if residual is None else np.float64(residual(x, fx, aux))
        st = _host_update(cfg.memory, st, fx, np.bool_(ok), dynamic, res)
        if observe is not None:
            observe(x, fx, st)
    return result(st)._replace(aux=aux)


class Root(NamedTuple):
    """Result of :func:`largest_root`: the root ``x`` (NaN without one), its bracket
    ``(lo, hi)`` (``G(lo) < 0 <= G(hi)``), ``other``: a second sign change below the
    bracket was found (``None``: not searched, or no root), ``n_eval`` evaluations of
    ``G`` in the scan (Brent's are not counted), ``status``: ``CONVERGED``, ``MAX_ITER``
    (Brent did not converge), ``NO_ROOT`` (``G >= 0`` down to ``x_min``) or
    ``BAD_START`` (``G(x0) < 0``); ``g0 = G(x0)``."""

    x: float
    lo: float
    hi: float
    other: bool | None
    n_eval: int
    status: int
    g0: float


def _scan(G, x0, x_min, step, scan_all):
    """Largest sign change of ``G`` below ``x0`` by steps of ``step``: ``(bracket or None,
    other, evaluations, G(x0))``."""
    x, g = x0, G(x0)
    n, root, g0 = 1, None, g
    if g < 0:
        return None, None, n, g0
    while x > x_min:
        x_new = x - step
        g_new = G(x_new)
        n += 1
        if root is None and g_new < 0 <= g:
            root = (x_new, x)
            if not scan_all:
                return root, None, n, g0
        elif root is not None and g_new >= 0:
            return root, True, n, g0
        x, g = x_new, g_new
    return root, (False if root is not None else None), n, g0


def largest_root(
    G: Callable[[float], float],
    x0: float,
    x_min: float,
    *,
    step: float = math.log(2.0),
    xtol: float = 1e-10,
    scan_all: bool = False,
) -> Root:
    """The largest root of a scalar ``G`` below ``x0`` (where ``G(x0) >= 0``, else status
    ``BAD_START``): steps of ``step`` down from ``x0`` until ``G < 0`` or ``x <= x_min``
    (status ``NO_ROOT``), then Brent's method (:func:`scipy.optimize.brentq`, ``xtol``)
    on the bracket. ``scan_all``: keep stepping down to ``x_min`` to report whether
    ``G`` changes sign again (:attr:`Root.other`). Never raises on ``G``'s values."""
    if not callable(G):
        raise ValueError(f"G must be a callable G(x) -> float, got {G!r}")
    big = _checks.MAX_ABS
    x0 = _checks.in_interval("x0", x0, -big, big, low_open=False)
    x_min = _checks.in_interval("x_min", x_min, -big, big, low_open=False)
    step = _checks.positive("step", step)
    xtol = _checks.positive("xtol", xtol)
    bracket, other, n, g0 = _scan(G, x0, x_min, step, bool(scan_all))
    if bracket is None:
        status = BAD_START if g0 < 0 else NO_ROOT
        return Root(math.nan, math.nan, math.nan, other, n, status, g0)
    x, info = brentq(G, *bracket, xtol=xtol, full_output=True, disp=False)
    return Root(x, *bracket, other, n, CONVERGED if info.converged else MAX_ITER, g0)
