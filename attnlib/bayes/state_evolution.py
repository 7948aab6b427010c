r"""Bayes-optimal state evolution of the attention-indexed model on the Nishimori line.

Conventions (see the book's "Notation and conventions" page, ``book/notation.md``):
``alpha = n / d^2``; ``sigma_ab^2 = 1 + delta_ab``; ``W_goe`` has off-diagonal variance
``1/d``; ``mse = ||S_post - S0||_F^2 / d`` for the posterior mean ``S_post``.

On the Nishimori line the overlaps satisfy ``m = q`` and the state evolution closes
on one scalar, the effective noise ``Delta_eff = 1 / q_hat`` of the input problem
``R = S0 + sqrt(Delta_eff) W_goe`` (arXiv:2506.01582; T = 1: arXiv:2408.03733):

    mmse = mmse_den(Delta_eff)                      (input side: the denoiser rie.RIE)
    1 / Delta_eff = q_hat = 2 alpha J(mmse)          (output side: the channel's posterior)

with ``J = sum_ab sigma_ab^2 E[g_ab^2]`` the information per sequence of the
task's channel at posterior variances ``V_ab = sigma_ab^2 mmse``. Where the ``2``
comes from: the GOE observation has precision ``d / (2 Delta_eff)`` per orthonormal
coordinate of symmetric matrices, and each pair ``h_ab = <S, Z_ab>_F`` has
``E[Z_ab Z_ab^T] = (sigma_ab^2 / d) Id``, so ``n = alpha d^2`` sequences give precision
``(n / d) J``. For ``J mmse = m_eff`` (noise-free seq2seq or linear) the fixed point
reads ``2 alpha m_eff Delta_eff = mmse_den(Delta_eff)``; for the linear task at
``T = 1`` with label noise ``Delta``: ``2 alpha Delta_eff = mmse_den(Delta_eff) + Delta/2``.

Solver: the map ``Delta -> 1 / (2 alpha J(mmse_den(Delta)))`` is increasing, and
iterating it from no information (``mmse`` = the prior variance) decreases to its
largest fixed point, the one GAMP-RIE reaches. :func:`solve` brackets that root by
halving ``Delta`` from the first iterate and refines it with Brent's method on
``log Delta`` (:func:`attnlib.iterate.largest_root`); if no root exists above
``1e-9 Q0`` the fixed point is ``Delta_eff = 0`` (perfect recovery). It then keeps
scanning down to ``1e-9 Q0`` (Gaussian channels) and reports whether a second, better
fixed point exists (``other_fixed_point``): the Bayes-optimal one would then be chosen
by the free entropy, which is not computed.

Accuracy: ``integration_error`` bounds the relative errors of ``mse`` (``m``, ``q``,
``Delta_eff`` move with it) and of ``test_error``: ``eps``, the relative QMC error of
``J`` at the root (the outer standard error plus half the gap of the channel's two
estimators, :func:`attnlib.bayes.information`) plus the root's residual, moves
``log Delta_eff`` by ``eps / G'`` with ``G' = d(2 alpha Delta J)/d log Delta`` (a
central difference, step 0.05, on the same points; below 1 where ``J`` falls with
``Delta``: the fixed point amplifies ``eps``), and the mse by that times
``d log mse / d log Delta``; the test error's is its own outer standard error plus
the mse's times ``d log test_error / d log mse`` (a difference on the same points).
The outer standard errors come from the spread of 8 consecutive blocks of the outer
Sobol points (a Monte Carlo formula over the blocks, which overstates the whole set's
error where QMC beats ``n^-1/2``); ``test_error_plugin``'s own QMC error (8192 points,
:func:`attnlib.se.test_error_from_overlaps`) and ``e0``'s are not in it. The level-set
channel (seq2lab without noise) has an inner-integral bias at few points that this error
does not cover.
"""

from __future__ import annotations

import logging
import math
import warnings
from typing import NamedTuple

from attnlib import _checks, _compiled_programs, _doubling, _limits, iterate
from attnlib import channels as _channels
from attnlib.bayes import prediction
from attnlib.channels import posterior
from attnlib.denoisers import rie
from attnlib.se.results import SEConvergenceWarning
from attnlib.width.counting import counting_bound

log = logging.getLogger("attnlib.bayes")

__all__ = [
    "BayesResult",
    "BayesSettings",
    "solve",
    "perfect_recovery",
    "perfect_recovery_from_mmse",
]

_DELTA_MIN = 1e-9


class BayesResult(NamedTuple):
    """The Bayes-optimal fixed point at ``alpha`` and the errors it predicts.

    ``mse``: ``||S_post - S0||_F^2 / d = mmse_den(Delta_eff)``; ``m = q = Q0 - mse``;
    ``test_error``: error of the Bayes-optimal predictor of the noise-free label
    (``prediction.py``); ``test_error_plugin``: test error of the matrix ``S_post``;
    ``Delta_eff`` and ``q_hat = 1 / Delta_eff`` (``inf`` at perfect recovery);
    ``dof = J mse``: effective measurements per sequence; ``converged``; ``residual``:
    ``|Delta - 1/(2 alpha J)| / Delta`` at the root; ``n_iter``: evaluations of the map
    ``Delta -> 1/(2 alpha J(mmse_den(Delta)))`` (the first iterate, the root's scan and
    Brent's steps); ``integration_error``: the relative QMC error of the fixed point's
    ``mse`` and ``test_error``, the larger (:func:`solve`; 0 where ``J`` and the test
    error are in closed form); ``other_fixed_point``: a second fixed
    point below ``Delta_eff`` was found (``None``: not searched); ``e0``: the floor of the
    test error against noisy labels, ``E||Y - g(h0)||^2`` (0 without noise; it depends on
    the task and ``Q0`` only, :func:`attnlib.se.noise_floor`). Not converged: every
    field but ``alpha``, ``Q0`` and the diagnostics is NaN (:func:`solve`).
    """

    alpha: float
    mse: float
    m: float
    q: float
    Q0: float
    test_error: float
    test_error_plugin: float
    Delta_eff: float
    q_hat: float
    dof: float
    converged: bool
    residual: float
    n_iter: int
    integration_error: float
    other_fixed_point: bool | None
    e0: float = math.nan


class BayesSettings(NamedTuple):
    """Numerical settings of :func:`solve` (each validated there, a ``ValueError`` naming the
    field): ``xtol > 0``, Brent's tolerance on ``log Delta``; ``n_outer``, ``n_inner >= 2``,
    the Sobol points of the channel integral (non-Gaussian channels); ``n_test >= 2``, those
    of the Bayes test error; ``seed >= 0``; ``check_unique`` (a bool): scan below the root
    for a second fixed point (Gaussian channels); ``time_limit``: seconds (``None``: no
    limit), past which :func:`solve` returns NaN, ``converged=False`` and a warning;
    ``rtol > 0``: the accuracy of ``integration_error`` (the QMC sizes double until it is
    met, :func:`solve`; ``None``: one solve at the sizes given); ``max_n_qmc >= 2``: the
    largest ``n_outer``, ``n_inner`` and ``n_test`` that ``rtol`` may reach (with ``rtol``
    at least each of them)."""

    xtol: float = 1e-10
    n_outer: int = 2048
    n_inner: int = 2048
    n_test: int = 4096
    seed: int = 0
    check_unique: bool = True
    time_limit: float | None = None
    rtol: float | None = None
    max_n_qmc: int = 2**15


def _check(task, target):
    _channels.require_task(task)
    task.check_bayes_model("the Bayes-optimal state evolution")
    _checks.target(target)


def _info(channel, denoiser, mmse, cfg):
    """The output side: ``J(mmse)`` of the channel's posterior (``channels.posterior``)."""
    Q0, qmc = denoiser.target.Q0, dict(n_outer=cfg.n_outer, n_inner=cfg.n_inner, seed=cfg.seed)
    return posterior.information(channel.task, mmse, Q0, **qmc)


def _gap_fn(channel, denoiser, alpha, cfg):
    """``G(log Delta) = 2 alpha Delta J(denoiser.mmse(Delta)) - 1`` (zero at a fixed point),
    and its cache ``{log Delta: (mmse, information)}`` (``len(cache)`` evaluations)."""
    cache = {}

    def G(logD):
        _limits.tick(log, "bayes.solve at alpha %.4g: %d evaluations so far", alpha, len(cache))
        _limits.check()  # the caller's time limit, between two evaluations
        D = math.exp(logD)
        mm = denoiser.mmse(D)
        info = _info(channel, denoiser, mm, cfg)
        cache[logD] = (mm, info)
        return 2 * alpha * D * info.J - 1.0

    return G, cache


def solve(
    task, target, alpha: float, *, settings: BayesSettings | None = None,
    xtol: float | None = None, n_outer: int | None = None, n_inner: int | None = None,
    n_test: int | None = None, seed: int | None = None, check_unique: bool | None = None,
    time_limit: float | None = None, rtol: float | None = None, max_n_qmc: int | None = None,
) -> BayesResult:  # fmt: skip
    r"""Bayes-optimal state evolution at ``alpha = n/d^2 > 0`` (module docstring).

    Args:
      task: :class:`attnlib.tasks.Task`; its noise model sets the output channel
        (closed forms: linear with any noise, seq2seq without noise or with noise on
        the logits or the target; a nested integral for noise on the outputs).
      target: :class:`attnlib.targets.Target` (the prior of ``S0``, rotationally invariant).
      alpha: sample ratio ``n / d^2 > 0``.
      settings: :class:`BayesSettings` (default ``BayesSettings()``).
      xtol, n_outer, n_inner, n_test, seed, check_unique, time_limit, rtol, max_n_qmc:
        shorthands for the fields of ``settings`` (``None``: the field of ``settings``).
        Past ``time_limit`` (checked between evaluations of the map) the result is NaN
        with ``converged=False`` and an :class:`attnlib.se.SEConvergenceWarning`.
        Progress: INFO on the logger ``attnlib.bayes`` every 10 s. With ``rtol``,
        ``n_outer`` and ``n_test`` double (and ``n_inner`` too where the last doubling
        cut the error by less than ``2^(1/4)``, the inner integral's bias dominating),
        each time a new solve, until ``integration_error <= rtol``, or up to
        ``max_n_qmc`` (then a ``RuntimeWarning`` states the error reached). Closed forms
        (``integration_error = 0``) return after the first solve. What
        ``integration_error`` bounds: the module docstring, "Accuracy".

    Returns:
      :class:`BayesResult`: the largest fixed point (``converged=True``; ``Delta_eff = 0``
      at perfect recovery), or ``converged=False`` with NaN fields and an
      :class:`attnlib.se.SEConvergenceWarning` where the root is not resolved (residual
      above ``1e-6``, ``1e-3`` for QMC channels) or the first iterate is already below the
      map (not monotone). A second fixed point warns with a ``RuntimeWarning``.

    Raises:
      ValueError: for invalid arguments, and for an ``alpha`` so small or so large that
        the effective noise ``Delta_eff`` leaves the range the spectral quadrature of
        :mod:`attnlib.rmt` resolves for this target (the message says which).
    """
    _check(task, target)
    alpha = _checks.alpha(alpha)
    cfg = _settings(settings, {k: v for k, v in locals().items() if k in BayesSettings._fields})
    try:
        with _limits.limit(cfg.time_limit):
            if cfg.rtol is not None:
                return _solve_to_rtol(task, target, alpha, cfg)
            return _solve(task, target, alpha, cfg)
    except _limits.TimeUp:
        if cfg.time_limit is None:  # the limit of an enclosing call: its to handle
            raise
        why = f"stopped at time_limit = {cfg.time_limit:g} s"
        return _failed(alpha, float(target.Q0), math.nan, 0, why)
    except ValueError as err:  # raised by rmt for a Delta_eff it cannot resolve
        raise ValueError(
            f"alpha = {alpha:g} is outside the range this target's state evolution resolves ({err})"
        ) from err


def _solve(task, target, alpha: float, cfg: BayesSettings) -> BayesResult:
    _compiled_programs.release_if_needed()  # a long process: JAX's caches bounded
    Q0 = float(target.Q0)
    # the composition of GAMP-RIE (bayes.gamp_rie): the channel's posterior x the RIE
    channel, denoiser = _channels.for_task(task), rie.RIE(target)
    var0 = rie.prior_variance(target)
    D0 = 1.0 / (2 * alpha * _info(channel, denoiser, var0, cfg).J)  # from no information
    G, cache = _gap_fn(channel, denoiser, alpha, cfg)
    gauss = posterior.is_gaussian(task)
    scan_all = gauss and cfg.check_unique
    root = iterate.largest_root(
        G, math.log(D0), math.log(_DELTA_MIN * Q0), xtol=cfg.xtol, scan_all=scan_all
    )
    other, n_iter = root.other, 1 + len(cache)
    e0 = float(_channels.for_task(task).noise_floor(Q0, (cfg.n_test, 4, cfg.seed))[0])
    if root.status == iterate.BAD_START:
        msg = f"the first iterate has G = {root.g0:.3e} < 0 (not monotone)"
        return _failed(alpha, Q0, math.inf, n_iter, msg)
    common = dict(n_iter=n_iter, other_fixed_point=other, e0=e0)
    if root.status == iterate.NO_ROOT:  # no fixed point with Delta_eff > 0: perfect recovery
        te = prediction.test_errors(task, 0.0, Q0, seed=cfg.seed)
        return _result(alpha, Q0, te, 0.0, 0.0, dof=float(task.m_eff), **common)
    logD = root.x
    G(logD)
    D = math.exp(logD)
    mm, info = cache[logD]
    residual = abs(D - 1.0 / (2 * alpha * info.J)) / D
    converged = residual < 1e-6 or (not gauss and residual < 1e-3)
    if not converged:
        return _failed(alpha, Q0, residual, n_iter, f"residual {residual:.2e}")
    _warn_other(alpha, D, other)
    te = prediction.test_errors(task, mm, Q0, n_outer=cfg.n_test, seed=cfg.seed)
    ierr = _errors(task, Q0, te, cfg, alpha=alpha, logD=logD, residual=residual, G=G, cache=cache)
    return _result(
        alpha, Q0, te, mm, D, dof=info.dof, residual=residual, integration_error=ierr, **common
    )


_H = 0.05  # log Delta step of the central differences of the error's propagation


def _errors(task, Q0, te, cfg, *, alpha, logD, residual, G, cache) -> float:
    """The larger relative error of ``mse`` and ``test_error`` at the root ``logD = log
    Delta`` with its ``residual`` (:func:`solve`'s docstring); ``G``, ``cache``:
    :func:`_gap_fn`'s."""
    mm, info = cache[logD]
    e_te = te.error / te.bayes if te.bayes > 0 else 0.0
    if not info.error > 0.0:  # J in closed form: the root is exact
        return e_te
    G(logD + _H), G(logD - _H)  # the same points: a smooth difference
    (m_hi, i_hi), (m_lo, i_lo) = cache[logD + _H], cache[logD - _H]
    slope = alpha * (math.exp(logD + _H) * i_hi.J - math.exp(logD - _H) * i_lo.J) / _H
    if not slope > 0.0 or not m_hi > m_lo:  # no resolved root: unbounded error
        return math.inf
    e_mse = (info.error / info.J + residual) / slope * math.log(m_hi / m_lo) / (2 * _H)
    if te.bayes > 0:
        hi = prediction.test_errors(task, m_hi, Q0, n_outer=cfg.n_test, seed=cfg.seed)
        e_te += abs(math.log(hi.bayes / te.bayes)) / math.log(m_hi / mm) * e_mse
    return float(max(e_mse, e_te))


def _solve_to_rtol(task, target, alpha: float, cfg: BayesSettings) -> BayesResult:
    """:func:`_solve` with ``n_outer``, ``n_test`` doubled (and ``n_inner`` where the last
    doubling cut the error by less than ``2^(1/4)``), each at most ``max_n_qmc``, until
    ``integration_error <= rtol`` (``_doubling.until_accurate``)."""

    def grow(c, r, prev):
        inner = prev is not None and not r.integration_error * 2**0.25 <= prev.integration_error
        top = c.max_n_qmc
        nxt = c._replace(
            n_outer=min(2 * c.n_outer, top),
            n_test=min(2 * c.n_test, top),
            n_inner=min(2 * c.n_inner, top) if inner else c.n_inner,
        )
        return None if nxt == c else nxt

    return _doubling.until_accurate(
        lambda c, last: (_solve(task, target, alpha, c), None),
        cfg,
        rtol=cfg.rtol,
        grow=grow,
        name=f"bayes.solve at alpha={alpha}",
        what="integration error",
        sizes=("n_outer", "n_inner", "n_test"),
    )[0]


def _settings(settings, given: dict) -> BayesSettings:
    """``settings`` (default :class:`BayesSettings`) with the shorthand keywords ``given``
    that are not ``None`` in place of its fields, validated."""
    s = _checks.settings(BayesSettings, settings, given)
    return BayesSettings(
        xtol=_checks.positive("xtol", s.xtol),
        n_outer=_checks.integer("n_outer", s.n_outer, 2),
        n_inner=_checks.integer("n_inner", s.n_inner, 2),
        n_test=_checks.integer("n_test", s.n_test, 2),
        seed=_checks.integer("seed", s.seed, 0),
        check_unique=_checks.boolean("check_unique", s.check_unique),
        time_limit=_limits.time_limit(s.time_limit),
        rtol=None if s.rtol is None else _checks.positive("rtol", s.rtol),
        max_n_qmc=_max_n_qmc(s),
    )


def _max_n_qmc(s: BayesSettings) -> int:
    """``max_n_qmc``: an integer ``>= 2``, with ``rtol`` at least each QMC size."""
    top = _checks.integer("max_n_qmc", s.max_n_qmc, 2)
    if s.rtol is not None:
        _checks.integer("max_n_qmc", top, max(s.n_outer, s.n_inner, s.n_test))
    return top


def _failed(alpha, Q0, residual, n_iter, why) -> BayesResult:
    """The failure policy: ``converged=False``, NaN fields, an ``SEConvergenceWarning``."""
    msg = f"bayes.solve at alpha={alpha}: {why}; no fixed point returned (NaN)"
    warnings.warn(msg, SEConvergenceWarning, stacklevel=4)
    nan = BayesResult(*[math.nan] * len(BayesResult._fields))
    return nan._replace(
        alpha=alpha,
        Q0=Q0,
        converged=False,
        residual=float(residual),
        n_iter=n_iter,
        other_fixed_point=None,
    )


def _warn_other(alpha, D, other) -> None:
    """Say when the fixed point is not unique (never silently)."""
    if other:
        warnings.warn(
            f"bayes.solve: a second fixed point below Delta_eff={D:.3g} at "
            f"alpha={alpha}; the free entropy decides which is Bayes-optimal",
            RuntimeWarning,
            stacklevel=4,
        )


def _result(alpha, Q0, te, mse, Delta_eff, *, residual=0.0, integration_error=0.0, **fields):
    """Assemble a :class:`BayesResult` on the Nishimori line (``m = q = Q0 - mse``)."""
    return BayesResult(
        alpha=alpha,
        mse=mse,
        m=Q0 - mse,
        q=Q0 - mse,
        Q0=Q0,
        test_error=te.bayes,
        test_error_plugin=te.plugin,
        Delta_eff=Delta_eff,
        q_hat=math.inf if Delta_eff == 0 else 1.0 / Delta_eff,
        converged=True,
        residual=float(residual),
        integration_error=float(integration_error),
        **fields,
    )


def perfect_recovery(task, target) -> float:
    r"""Bayes-optimal perfect-recovery threshold ``alpha_BO = (kappa0 - kappa0^2/2) / m_eff``.

    Noise-free labels: below it ``mse > 0``, above it ``mse = 0``. ``kappa0 d^2 -
    kappa0^2 d^2 / 2`` is the dimension of the rank-``kappa0 d`` symmetric matrices, and
    each sequence gives ``m_eff`` (:attr:`attnlib.tasks.Task.m_eff`) equations: the count
    of :func:`attnlib.width.counting_bound` at the rank fraction ``kappa0`` of the target
    (:attr:`attnlib.targets.Target.rank_fraction`; a full-rank target, ``Wishart(kappa0
    >= 1)``, gives ``1 / (2 m_eff)``). ``m_eff = 0`` (hardmax: the labels give
    inequalities, no equation): ``inf``, no finite ``alpha`` recovers ``S0`` exactly.
    :func:`perfect_recovery_from_mmse` finds the same threshold from the state evolution.
    """
    _check(task, target)
    return counting_bound(task, target.rank_fraction) if task.m_eff > 0 else math.inf


def perfect_recovery_from_mmse(task, target, Delta: float = 1e-8) -> float:
    r"""The threshold of :func:`perfect_recovery` from the state evolution: ``lim_{Delta
    -> 0} mmse_den(Delta) / (2 m_eff Delta)`` (the ``alpha`` at which the noise-free fixed
    point reaches ``Delta_eff = 0``), evaluated at a small ``Delta > 0``; ``inf`` when
    ``m_eff = 0``. (:func:`attnlib.thresholds.perfect_recovery_se` is the convex ERM's.)"""
    _check(task, target)
    Delta = _checks.in_interval("Delta", Delta, 0.0, 1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # quadrature at the rounding level
        ratio = rie.mmse_den(target, Delta) / Delta
    return ratio / (2 * task.m_eff) if task.m_eff > 0 else math.inf
