r"""One GAMP loop on a data set: a channel's output step composed with a spectral denoiser.

The ERM of the attention-indexed model on ``n`` sequences ``X_mu`` of shape ``(T, d)`` is a
generalised linear model in the ``D = d (d + 1) / 2`` orthonormal coordinates of
symmetric matrices: ``h_ab(S) = <S, Z_ab>_F`` with

    Z_aa = (x_a x_a^T - I) / sqrt(d),   Z_ab = (x_a x_b^T + x_b x_a^T) / (2 sqrt(d))  (a < b),

whose coordinates are nearly i.i.d. with variance ``sigma_ab^2 / d``,
``sigma_ab^2 = 1 + delta_ab`` (the book's 04_gamp chapter and its notation page). GAMP
with one scalar variance ``v`` iterates, with ``alpha = n / d^2``:

1. output step (the *channel*), for every sequence and pair: ``V_ab = sigma_ab^2 v``,
   ``omega = h(S_hat) - V g_old`` (Onsager term), then ``(g, dg)``: for the ERM
   ``h* = argmin_h loss(Y, h) + sum_ab (h_ab - omega_ab)^2 / (2 V_ab)``, ``g = (h* -
   omega) / V``, ``dg = diag dg/domega`` (:meth:`attnlib.channels.Channel.gamp_output` of
   the task's channel, or of the zero-scale one of hardmax attention, the channel of its
   state evolution); the Bayes posterior (:meth:`~attnlib.channels.Channel.posterior_output`);
2. ``a_hat = alpha sum_ab sigma_ab^2 mean_mu(-dg_ab)``;
3. ``B = S_hat + (1 / (d a_hat)) sum_mu sum_ab g_ab Z_ab`` (:func:`data_gradient_sum`,
   without forming the ``Z``);
4. ``S_hat, v = F(B)`` (the *denoiser*, a spectral map on the matrix ``B``): the
   proximal map of the penalty with threshold ``tau = lam / a_hat``, eigenvalues ``x ->
   max(x - tau, 0)`` (nuclear + PSD) or ``x -> x / (1 + tau)`` (Frobenius), with ``v =
   div F(B) / (d^2 a_hat)`` (:class:`SpectralProx`); or the RIE of a prior
   (:class:`attnlib.denoisers.rie.RIE`). The divergence is over the ``D`` orthonormal
   coordinates, ``sum_i f'(x_i) + sum_{i<j} (f(x_i) - f(x_j)) / (x_i - x_j)``.

Then, with a ray denoiser (hardmax), ``S_hat`` and ``v`` are divided by ``sqrt(Tr(S_hat^2)
/ (d Q0))``. The residual is ``||S_new - S_old||_F / max(||S_new||_F, 1e-12)``. :func:`run`
iterates this map of ``x = (S_hat, v, g)`` for the pair ``(channel, denoiser)`` of the
state evolution (:class:`attnlib.se.point.Problem`) with :func:`attnlib.iterate.init` and
:func:`~attnlib.iterate.update` at memory 0, ``x_new = x + (1 - damping) (F(x) - x)``
(damping does not move a fixed point); :func:`attnlib.amp.gamp` (ERM),
:func:`attnlib.hardmax.gamp` and :func:`attnlib.bayes.gamp_rie` configure it. One
iteration is one compiled call where both sides are JAX, else (posterior, RIE) it runs
on the host. Not converged in ``max_iter`` iterations: the last iterate; a breakdown (a
non-finite residual or ``a_hat``, or ``a_hat <= 0``): NaN ``S``, ``v``, ``a_hat``; both
warn (``RuntimeWarning``) and set :attr:`GAMPResult.status`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import _checks, channels, iterate
from attnlib import _gamp_checks as _args
from attnlib.rmt import spectral_divergence
from attnlib.spectral_map import SpectralMap, check_penalty
from attnlib.tasks import pair_indices, pair_variances, preactivations, to_pairs

__all__ = [
    "GAMPResult",
    "GAMPSettings",
    "GAMPTrajectory",
    "SpectralProx",
    "Start",
    "data_gradient_sum",
    "resolve_settings",
    "run",
    "sequence_weights",
    "spectral_prox",
]


class GAMPTrajectory(NamedTuple):
    """Per-iteration scalars of a run, each ``(n_iter,)``: ``v`` (after damping),
    ``a_hat`` (of the output step), ``loss`` (mean output-step loss ``mean_mu loss(Y_mu,
    h*_mu)``; ``None`` for an output step without one, the posterior) and ``scale`` (the
    renormalisation factor; ``None`` when the run is not renormalised)."""

    v: np.ndarray
    a_hat: np.ndarray
    loss: np.ndarray | None
    scale: np.ndarray | None


class GAMPResult(NamedTuple):
    """Result of every GAMP of attnlib (:func:`run` and its configurations).

    Attributes:
      S, v: the estimate ``S_hat`` ``(d, d)`` (numpy float64) and the scalar GAMP variance
        after the last iteration (NaN after a breakdown); a_hat: ``alpha sum_ab sigma_ab^2
        mean(-dg_ab)`` of the last iteration.
      history: the residual of each iteration (relative change of ``S_hat`` before
        damping), ``(n_iter,)``; residual: the last one; n_iter: iterations run.
      converged: whether the residual fell below ``tol``.
      n_fallback: iterations whose output step needed its last fallback (the multi-start
        of :meth:`attnlib.channels.Channel.gamp_output` for the ERM).
      trace: the values of ``observe(S_hat)`` after each iteration (``(n_iter,)``, or
        ``(n_iter, k)`` for ``k`` values), empty without ``observe``.
      trajectory: :class:`GAMPTrajectory`, the per-iteration scalars.
      status: ``"converged"``, ``"max_iter"`` or ``"breakdown"``.
    """

    S: np.ndarray
    v: float
    a_hat: float
    history: np.ndarray
    converged: bool
    n_iter: int
    residual: float
    n_fallback: int = 0
    trace: np.ndarray = np.zeros(0)
    trajectory: GAMPTrajectory | None = None
    status: str = "converged"


class GAMPSettings(NamedTuple):
    """Settings of :func:`run`: ``damping`` in ``[0, 1)`` (weight of the old ``S_hat``,
    ``v``, ``g``), ``max_iter >= 1``, ``tol > 0`` (on the residual), ``observe`` (``None``
    or a callable of the numpy ``S_hat`` returning a float or a tuple of floats, recorded
    after each iteration), ``name`` (in the warnings); the output step: ``n_newton >= 1``
    (the channel's :meth:`~attnlib.channels.Channel.gamp_output`, then its fallbacks;
    ``None``: the multi-start at once) from the previous ``h*`` (``warm``) or ``h(S_hat)``,
    or (``posterior``) the channel's Bayes posterior."""

    damping: float = 0.5
    max_iter: int = 2000
    tol: float = 1e-8
    observe: Callable | None = None
    name: str = "gamp"
    n_newton: int | None = 4
    warm: bool = True
    posterior: bool = False


def resolve_settings(settings=None, default: GAMPSettings | None = None, **given) -> GAMPSettings:
    """``settings`` (``None``: ``default``, or ``GAMPSettings()``) with the keywords ``given``
    that are not ``None`` in place of its fields, validated (``ValueError`` naming a field)."""
    return _args.resolve(GAMPSettings, settings, default, given)


class Start(NamedTuple):
    """Where :func:`run` starts: symmetric ``S`` ``(d, d)``, ``v > 0``, ``g`` ``(n, K)``
    (default zero: no Onsager term at the first step)."""

    S: Any
    v: float
    g: Any = None


def data_gradient_sum(X: jax.Array, g: jax.Array) -> jax.Array:
    r"""``sum_mu sum_{a<=b} g_ab Z_ab`` for ``X`` ``(n, T, d)`` and pair values ``g`` ``(n, K)``.

    Equal to ``(sum_mu X_mu^T G_mu X_mu - sum_mu Tr(G_mu) I) / sqrt(d)`` with
    ``G_aa = g_aa``, ``G_ab = G_ba = g_ab / 2``, because ``X^T G X = sum_a g_aa x_a x_a^T
    + sum_{a<b} (g_ab / 2)(x_a x_b^T + x_b x_a^T)``; the sum over ``mu`` is one ``(d, n
    T) @ (n T, d)`` product. With ``g = dloss/dh`` it is the gradient (in ``S``) of
    ``sum_mu loss(h_mu(S))``.
    """
    if not isinstance(X, jax.core.Tracer) and not isinstance(g, jax.core.Tracer):
        Xa = _checks.finite_array("X", X, ndim=3, max_abs=_checks.MAX_ABS)
        Xa = np.asarray(Xa)
        if min(Xa.shape) < 1:
            raise ValueError(f"X must have shape (n, T, d) with n, T, d >= 1, got {Xa.shape}")
        K = Xa.shape[1] * (Xa.shape[1] + 1) // 2
        want = (Xa.shape[0], K)
        _checks.finite_array("g", g, ndim=2, shape=want, against="X", max_abs=_checks.MAX_ABS)
    return _data_gradient_sum(jnp.asarray(X), jnp.asarray(g))


def _data_gradient_sum(X, g):
    n, T, d = X.shape
    ia, ib = np.triu_indices(T)
    half = jnp.where(jnp.asarray(ia == ib), 1.0, 0.5).astype(g.dtype)
    G = jnp.zeros((n, T, T), g.dtype).at[:, ia, ib].set(g * half).at[:, ib, ia].set(g * half)
    GX = jnp.einsum("nab,nbi->nai", G, X)
    M = X.reshape(n * T, d).T @ GX.reshape(n * T, d)
    tr = jnp.sum(g * (ia == ib))
    return (0.5 * (M + M.T) - tr * jnp.eye(d, dtype=g.dtype)) / math.sqrt(d)


def sequence_weights(X) -> jax.Array:
    """Per-sequence variance weights ``r_{mu,ab} = d ||Z_{mu,ab}||_F^2 / (sigma_ab^2 D)``, shape
    ``(n, K)``, mean about 1 (``D = d(d+1)/2``): :func:`run`'s ``weights`` for GAMP as Rangan
    wrote it, each measurement weighted by its sensing vector's squared entries. From
    ``d ||Z_ab||_F^2 = (|x_a|^2 |x_b|^2 + (x_a . x_b)^2)/2 - delta_ab (2 |x_a|^2 - d)``."""
    _checks.finite_array("X", X, ndim=3, max_abs=_checks.MAX_ABS)
    d = X.shape[2]
    ia, ib = pair_indices(X.shape[1])
    na, nb = jnp.sum(X[:, ia] ** 2, -1), jnp.sum(X[:, ib] ** 2, -1)
    dot = jnp.sum(X[:, ia] * X[:, ib], -1)
    fro = (0.5 * (na * nb + dot**2) - jnp.where(jnp.asarray(ia == ib), 2 * na - d, 0.0)) / d
    return fro * 2 / (jnp.asarray(pair_variances(X.shape[1])) * (d + 1))


def spectral_prox(B: jax.Array, tau: float, penalty: str = "nuclear"):
    """``(F(B), div F(B))`` for the penalty's spectral prox with threshold ``tau >= 0``:
    eigenvalues ``x -> max(x - tau, 0)`` (nuclear + PSD) or ``x / (1 + tau)`` (Frobenius)."""
    check_penalty(penalty)
    tau = _checks.nonnegative("tau", tau)
    B = jnp.asarray(B)
    if B.ndim != 2 or B.shape[0] != B.shape[1]:
        raise ValueError(f"B must be a square (d, d) matrix, got shape {B.shape}")
    if not isinstance(B, jax.core.Tracer):  # stays differentiable under jax transforms
        _checks.finite_array("B", np.asarray(B))
    return _spectral_prox(B, tau, penalty)


@functools.partial(jax.jit, static_argnames=("penalty",))
def _spectral_prox(B, tau, penalty):
    x, U = jnp.linalg.eigh(0.5 * (B + B.T))
    fmap = SpectralMap(1.0, tau, penalty)
    f, fp = fmap.f(x), fmap.fprime(x)
    S = (U * f[None, :]) @ U.T
    return 0.5 * (S + S.T), spectral_divergence(x, f, fp)


class _Output(NamedTuple):
    """GAMP's output step: the ``channel``'s :meth:`~attnlib.channels.Channel.gamp_output`
    at one Newton budget ``n_newton`` (``None``: the multi-start), started at the previous
    ``h*`` (``warm``) or ``h(S_hat)``, or (``posterior``) its Bayes posterior, on the host."""

    channel: channels.Channel
    n_newton: int | None = 4
    warm: bool = True
    posterior: bool = False
    jittable = property(lambda self: not self.posterior)

    def __call__(self, Y, omega, V, start):
        if self.posterior:
            g, dg = self.channel.posterior_output(Y, omega, V)  # numpy
            return SimpleNamespace(g=g, dg=dg, h=None, loss=None), True
        return self.channel.gamp_output(Y, omega, V, start, self.n_newton)

    def chain(self) -> tuple:
        """This step, then its fallbacks (the channel's :meth:`gamp_budgets`), in order."""
        budgets = (self.n_newton,) if self.posterior else self.channel.gamp_budgets(self.n_newton)
        return tuple(self._replace(n_newton=b) for b in budgets)


@dataclasses.dataclass(frozen=True)
class SpectralProx:
    """The ERM denoiser of GAMP and the state evolution: the penalty's spectral prox at
    ``tau = lam / a_hat`` on ``B``, ``v = div F(B) / (d^2 a_hat)`` (GAMP), or integrated
    against ``rho_R`` of ``target`` (:mod:`attnlib.se.engine`; ``kappa < 1``: cut where a
    width-``kappa`` student's rank binds); ``ray``: renormalised to ``Tr S^2 / d = Q0``."""

    penalty: str = "nuclear"
    target: Any = dataclasses.field(default=None, compare=False)  # GAMP compiles without it
    kappa: float = 1.0
    ray: bool = False
    jittable = True

    def __post_init__(self):
        check_penalty(self.penalty)
        if self.ray:  # renormalised to the target's Q0
            _checks.target(self.target)

    def __call__(self, B, a_hat, lam):
        S, div = _spectral_prox(B, lam / a_hat, self.penalty)
        return S, div / (B.shape[0] ** 2 * a_hat)


class _Aux(NamedTuple):
    res: Any
    a_hat: Any
    loss: Any
    scale: Any


class _Operands(NamedTuple):
    X: Any
    Y: Any
    lam: Any
    Q0: Any  # renormalise Tr S^2 / d to Q0 (None: no renormalisation)
    r: Any  # per-sequence variance weights (n, K), or None


def _iteration(output, denoiser, ops, x, hstar):
    """One GAMP iteration before damping on ``x = (S, v, g)`` (one vector): ``(F(x),
    hstar', aux, ok)``; on the host (numpy) where a side is not JAX. On the host a
    breakdown of ``a_hat`` stops before the denoiser (NaN residual)."""
    xp = jnp if output.jittable and denoiser.jittable else np
    X, r = ops.X, ops.r
    n, T, d = X.shape
    S, v, g = x[: d * d].reshape(d, d), x[d * d], x[d * d + 1 :].reshape(n, -1)
    sig2 = xp.asarray(pair_variances(T), X.dtype)
    h = to_pairs(preactivations(X, S))
    h = h if xp is jnp else np.asarray(h)
    V = sig2 * v if r is None else sig2 * v * r
    omega = h - V * g
    out, ok = output(ops.Y, omega, V, hstar if output.warm else h)
    a_hat = (n / d**2) * xp.sum(sig2 * xp.mean(-out.dg if r is None else -out.dg * r, axis=0))
    if xp is np and not (math.isfinite(a_hat) and a_hat > 0):
        return x, hstar, _Aux(math.nan, a_hat, math.nan, math.nan), ok
    dgs = _data_gradient_sum(X, out.g if xp is jnp else jnp.asarray(out.g))
    B = S + (dgs if xp is jnp else np.asarray(dgs)) / (d * a_hat)
    S_new, v_new = denoiser(B, a_hat, ops.lam)
    scale = xp.nan
    if ops.Q0 is not None:  # renormalised: Tr S^2 / d = Q0
        scale = xp.sqrt(xp.sum(S_new**2) / (d * ops.Q0))
        S_new, v_new = S_new / scale, v_new / scale
    res = xp.linalg.norm(S_new - S) / xp.maximum(xp.linalg.norm(S_new), 1e-12)
    loss = xp.nan if out.loss is None else xp.mean(out.loss)
    fx = xp.concatenate([S_new.ravel(), xp.reshape(v_new, (1,)), xp.ravel(out.g)])
    return fx, out.h, _Aux(res, a_hat, loss, scale), ok


def _advance(output, denoiser, ops, st, cfg):
    """One GAMP iteration at :mod:`attnlib.iterate`'s state ``st`` (``aux``: the last
    ``h*``), then its update at memory 0 (``ok``: no breakdown): ``(state', last, [ok of the
    output step, *aux, v, status'])`` (one array), ``last = x + (1 - damping) (F(x) - x)``
    the iterate after damping. One compiled call where both sides are JAX, else on the host."""
    jit = output.jittable and denoiser.jittable
    x = st.x if jit else np.asarray(st.x)
    fx, hstar, aux, ok = _iteration(output, denoiser, ops, x, st.aux)
    new = (_update if jit else _update_jit)(st, fx, hstar, aux, cfg)
    last = x + (1.0 - cfg.damping) * (fx - x)
    return new, last, jnp.array([ok, *aux, last[ops.X.shape[2] ** 2], new.status], float)


def _update(st, fx, hstar, aux, cfg):
    good = jnp.isfinite(aux.res) & jnp.isfinite(aux.a_hat) & (aux.a_hat > 0)
    return iterate.update(st, fx, hstar, good, cfg._replace(memory=0), aux.res)


_update_jit = jax.jit(_update)
_advance_jit = jax.jit(_advance, static_argnames=("output", "denoiser"))


def _step(chain, denoiser, ops, st, cfg):
    """:func:`_advance` with the output's fallbacks: ``(state', last, (aux, v, status), used
    the last)``."""
    for i, output in enumerate(chain):
        jit = output.jittable and denoiser.jittable
        new, last, scalars = (_advance_jit if jit else _advance)(output, denoiser, ops, st, cfg)
        ok, res, a_hat, loss, scale, v, status = np.asarray(scalars)  # one transfer
        final = i == len(chain) - 1
        if ok or final:
            return new, last, (_Aux(res, a_hat, loss, scale), v, int(status)), final and i > 0


def _operands(output, denoiser, data, lam, Q0, r):
    """Operands of the iteration, and the array module it runs in: ``(ops, xp)``."""
    jit = output.jittable and denoiser.jittable
    X = jnp.asarray(np.asarray(data.X, dtype=np.float64))
    Y = np.asarray(data.Y, dtype=np.float64)
    if jit:
        Y, lam = jnp.asarray(Y), jnp.asarray(lam)
        Q0 = None if Q0 is None else jnp.float64(Q0)
    r = None if r is None else (jnp.asarray(r) if jit else np.asarray(r))
    return _Operands(X, Y, lam, Q0, r), (jnp if jit else np)


def _iterate(chain, denoiser, ops, settings, x0, hstar):
    """:func:`attnlib.iterate.init` (memory 0, steps not capped, a breakdown STALLED), then
    :func:`_step` until a status: ``(status, record of each iteration)``."""
    d = ops.X.shape[2]
    rec = SimpleNamespace(res=[], v=[], a_hat=[], loss=[], scale=[], trace=[], n_fallback=0)
    cfg = iterate.AndersonConfig(settings.tol, settings.max_iter, settings.damping, 0, math.inf, 1)
    st = iterate.init(x0, hstar, cfg)
    cfg = iterate.AndersonConfig(*(jnp.asarray(c) for c in cfg))  # operands, not constants
    status = -1
    while status < 0:
        st, rec.last, (aux, v, status), fallback = _step(chain, denoiser, ops, st, cfg)
        rec.n_fallback += int(fallback)
        for field in ("res", "a_hat", "loss", "scale"):
            getattr(rec, field).append(float(getattr(aux, field)))
        rec.v.append(float(v))
        ok = math.isfinite(rec.res[-1]) and math.isfinite(rec.a_hat[-1]) and rec.a_hat[-1] > 0
        if ok and settings.observe is not None:
            S = np.asarray(rec.last)[: d * d].reshape(d, d)
            rec.trace.append(np.asarray(settings.observe(S), dtype=float))
    return int(status), rec


def _warn(name, status, rec, tol):
    n, res, a_hat = len(rec.res), rec.res[-1], rec.a_hat[-1]
    msg = f"did not converge in {n} iterations: residual {res:.3g} >= tol {tol:.3g}"
    if status == "breakdown":
        msg = f"broke down after {n} iterations (a_hat = {a_hat:.3g}, residual {res:.3g})"
        msg += "; increase damping"
    warnings.warn(f"{name} {msg}", RuntimeWarning, stacklevel=3)


_STATUS = {iterate.CONVERGED: "converged", iterate.MAX_ITER: "max_iter"}


def run(
    pair, data, start: Start, lam: float = 0.0, *, settings: GAMPSettings | None = None,
    weights=None,
) -> GAMPResult:  # fmt: skip
    """GAMP on ``data`` (``X`` ``(n, T, d)``, ``Y``) with a channel and a denoiser.

    Args:
      pair: ``(channel, denoiser)``, or a tuple that starts with them
        (:class:`attnlib.se.point.Problem`): the output side, an
        :class:`attnlib.channels.Channel` (its step as ``settings`` says), and the input
        side ``(B, a_hat, lam) -> (S_hat, v)``, :class:`SpectralProx` or
        :class:`attnlib.denoisers.rie.RIE` (a ray one renormalises to its target's ``Q0``).
      data: the data set; start: :class:`Start`; lam: the penalty (the denoiser's operand).
      settings: :class:`GAMPSettings` (default ``GAMPSettings()``).
      weights: optional ``(n, K)`` per-sequence factors ``r`` of the variances, ``V =
        sigma^2 v r`` and ``a_hat = alpha sum sigma^2 mean(-r dg)`` (``None``: ``r = 1``).

    Returns:
      :class:`GAMPResult`; warns (``RuntimeWarning``) when it did not converge or broke down.
    """
    settings = resolve_settings(settings)
    channel, denoiser = _args.pair(pair)
    output = _Output(channel, settings.n_newton, settings.warm, settings.posterior)
    lam, Q0, weights = _args.run_arguments(output, denoiser, data, start, lam, weights)
    ops, xp = _operands(output, denoiser, data, lam, Q0, weights)
    n, _, d = ops.X.shape
    g0 = np.zeros((n, output.channel.task.n_pairs)) if start.g is None else start.g
    hstar = to_pairs(preactivations(ops.X, jnp.asarray(start.S))) if xp is jnp else None
    x0 = np.concatenate([np.ravel(start.S), [start.v], np.ravel(g0)])
    status, rec = _iterate(output.chain(), denoiser, ops, settings, x0, hstar)
    status = _STATUS.get(status, "breakdown")
    if status != "converged":
        _warn(settings.name, status, rec, settings.tol)
    broke = status == "breakdown"
    loss = None if output.posterior else np.asarray(rec.loss)
    scale = None if Q0 is None else np.asarray(rec.scale)
    traj = GAMPTrajectory(np.asarray(rec.v), np.asarray(rec.a_hat), loss, scale)
    return GAMPResult(
        S=np.full((d, d), np.nan) if broke else np.asarray(rec.last)[: d * d].reshape(d, d),
        v=math.nan if broke else rec.v[-1],
        a_hat=math.nan if broke else rec.a_hat[-1],
        history=np.asarray(rec.res),
        converged=status == "converged",
        n_iter=len(rec.res),
        residual=rec.res[-1],
        n_fallback=rec.n_fallback,
        trace=np.asarray(rec.trace),
        trajectory=traj,
        status=status,
    )
