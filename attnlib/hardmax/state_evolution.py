r"""State evolution of hardmax attention: a fixed ray, not a fixed point.

The hardmax loss is invariant under ``h -> c h`` (``c > 0``) while the penalty is not, so
the ERM has no minimiser at ``lam > 0`` (its infimum is approached as ``S -> 0`` along the
directions that fit the most labels) and the state evolution of :mod:`attnlib.se`, run with
the exact proximal map of :func:`attnlib.channels.hardmax.prox`, has no fixed point: the
scale of ``(m, q, v)`` contracts by a constant factor per map while the direction converges.
In that limit the output channel becomes the projection on the closed region of the labels
(:func:`attnlib.channels.hardmax.projection`) and the map is exactly homogeneous of degree
one, ``(m, q, v) -> (eps m, eps^2 q, eps v)``: ``g``, ``m_hat``, ``q_hat`` are unchanged,
``a_hat -> a_hat / eps``, hence ``c, tau -> eps c, eps tau`` and the spectral map
``f -> eps f``. The state evolution is therefore solved for the scale-free quantities, the
cosine ``cos_theta = m / sqrt(q Q0)`` (``cos Theta`` of the notation page) and
``rho = v / sqrt(q)``, with ``q = Q0`` fixed after each map; ``kappa_scale`` is the factor
by which one map shrinks the scale. The threshold of the spectral map in units of its slope
is ``tau / c = lam / m_hat``; with ``m_hat`` proportional to ``1 / rho`` the product
``lam rho`` is what enters, so the direction (``cos_theta``, rank fraction, test error,
``Delta_eff = q_hat / m_hat^2``) does not depend on ``lam > 0``; only ``rho`` does (``rho``
proportional to ``1 / lam``). The test error depends on ``S`` only through its direction
(``hardmax(c h) = hardmax(h)``).

The ray is a fixed point of the one state evolution,
:func:`attnlib.se.engine.solve_fixed_point` (memory 0, no step cap), composing the
zero-scale channel ``channels.for_task(task).at_zero_scale()`` (``a_hat`` from the exact
derivative of the projection, its Stein form as a check, ``m_hat`` in its Stein form:
``Y`` jumps with ``h0``) with the nuclear denoiser renormalised to ``q = Q0``
(``gamp.SpectralProx("nuclear", target, ray=True)``, the denoiser of :func:`attnlib.hardmax.gamp`
too: the unknowns are ``(artanh cos_theta, log rho)``).

``integration_error`` is the QMC error of the reported quantities, propagated through the
fixed point as :mod:`attnlib.se.propagation` does for ``(m, q, v)``: each of the ``R``
scramblings' conjugates gives its own image ``F_r(y)`` of the ray ``y``; the deviations
``F_r - mean F_r`` move the fixed point by ``(I - J)^{-1} (F_r - mean F_r)``, ``J`` the
map's ``2 x 2`` Jacobian by central differences on the same points (4 maps more per
solve), and the standard error over the ``R`` moved rays gives that of ``cos_theta``,
``rho`` and, through ``d test_error / d cos_theta``, of the test error (plus its own QMC
error). ``rtol=`` doubles ``n_qmc`` until that error meets it (``_doubling``, as
:func:`attnlib.se.solve`).
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np

from attnlib import _checks, _doubling, _limits, channels, iterate
from attnlib import tasks as _tasks
from attnlib.gamp import SpectralProx
from attnlib.se import SEConvergenceWarning, engine
from attnlib.se.input import host_input
from attnlib.se.output import qmc_points
from attnlib.se.test_error import test_errors

__all__ = [
    "HardmaxSE",
    "HardmaxSettings",
    "HardmaxTrajectory",
    "solve",
    "trajectory",
]

# the columns of the zero-scale output side (se.output.output_arrays of the channel)
_COLUMNS = ("a_hat", "q_hat", "m_hat", "train_loss", "a_hat_stein")
_BIG = 1e100  # accepted range of the scalar inputs: [1e-100, 1e100] (no overflow inside)


class HardmaxSE(NamedTuple):
    """The fixed ray of the hardmax state evolution (normalised to ``q = Q0``).

    Attributes:
      alpha, Q0: inputs; ``cos_theta = m / sqrt(q Q0)`` the cosine between ``S_hat`` and
        ``S0`` (``cos Theta`` in book/notation.md);
      rho: ``v / sqrt(q)`` (proportional to ``1 / lam``);
      m_hat, q_hat, a_hat: conjugates at ``q = Q0``, ``v = rho sqrt(Q0)``;
      a_hat_stein: the Stein form of ``a_hat`` (same quantity, independent estimator);
      Delta_eff: ``q_hat / m_hat^2``; threshold: ``tau / c = lam / m_hat`` (no ``lam``
        dependence);
      rank_fraction: fraction of non-zero eigenvalues of ``S_hat``;
      test_error: ``E||hardmax(h0) - hardmax(h)||^2`` per sequence (noise-free labels);
      train_loss: ``E c(j*)`` (0 without output noise: every label is fitted, ties allowed);
      kappa_scale: ``sqrt(q_new / q)`` per map (``< 1``: the scale contracts to 0);
      converged, residual, n_iter: the diagnostics of :class:`attnlib.iterate.FixedPoint`
        (``residual``: the smallest ``max |F(y) - y|`` seen; not converged: every other
        field but ``alpha`` and ``Q0`` is NaN);
      integration_error: largest relative standard error of ``cos_theta``, ``rho`` and
        ``test_error``: the conjugates' QMC error propagated through the ray's fixed point
        (module docstring; NaN with ``n_rep = 1``);
      trace, objective: the minimised objective in the normalisation of
        :class:`attnlib.se.SEResult`. The ERM has no minimiser: its infimum per sequence
        is approached along the ray as the scale goes to 0, where ``lim Tr S_hat / d``
        and the penalty vanish, so ``trace = 0`` and ``objective = train_loss``.
    """

    alpha: float
    Q0: float
    cos_theta: float
    rho: float
    m_hat: float
    q_hat: float
    a_hat: float
    a_hat_stein: float
    Delta_eff: float
    threshold: float
    rank_fraction: float
    test_error: float
    train_loss: float
    kappa_scale: float
    converged: bool
    residual: float
    n_iter: int
    integration_error: float
    trace: float = math.nan
    objective: float = math.nan


def _check_task(task):
    channels.require_task(task, _tasks.Hardmax)
    channels.hardmax.regions(task.T)  # ValueError naming T beyond the exact solver
    return task


class _Ray(NamedTuple):
    """One hardmax state evolution: the zero-scale channel, the renormalised nuclear
    denoiser, the arrays of :class:`attnlib.se.engine.Data` and the (unused: the
    projection is exact) prox points ``(R N, K)``."""

    channel: object
    denoiser: SpectralProx
    data: engine.Data
    prox0: np.ndarray


def _ray(task, target, alpha, lam, s: HardmaxSettings) -> _Ray:
    """:class:`_Ray` of ``task`` with the QMC points of the settings ``s``."""
    z = qmc_points(task, s.n_qmc, s.n_rep, s.seed)
    data = engine.Data(z, np.float64(alpha), np.float64(lam), np.float64(target.Q0))
    prox0 = np.zeros((s.n_qmc, task.n_pairs))
    zero_scale = channels.for_task(task).at_zero_scale()
    return _Ray(zero_scale, SpectralProx("nuclear", target, ray=True), data, prox0)


def _maps(pb: _Ray, y0, tol, max_iter, damping) -> iterate.FixedPoint:
    """:func:`attnlib.se.engine.solve_fixed_point` of the ray from ``y0 = (artanh
    cos_theta, log rho)``: the damped iteration (memory 0, no cap on the step)."""
    loop = engine.LoopSettings(tol, max_iter, damping, math.inf)
    start = (np.asarray(y0, dtype=np.float64), pb.prox0, engine.no_history(0, 2))
    return engine.solve_fixed_point(pb.channel, pb.denoiser, 0, pb.data, loop, start)[0]


class HardmaxTrajectory(NamedTuple):
    """Arrays over the maps ``t = 1 .. n_iter``: the cosine ``cos_theta`` between ``S_hat``
    and ``S0`` and ``rho = v / sqrt(q)`` after the ``t``-th map."""

    cos_theta: np.ndarray
    rho: np.ndarray


def _lam(lam):
    """``lam`` checked."""
    return _checks.in_interval("lam", lam, 1.0 / _BIG, _BIG, low_open=False)


def trajectory(
    task, target, alpha: float, lam: float, n_iter: int = 10, *, start=(0.5, 0.3),
    n_qmc: int | None = None, n_rep: int | None = None, seed: int | None = None,
) -> HardmaxTrajectory:  # fmt: skip
    """The undamped map of the hardmax state evolution iterated ``n_iter`` times from
    ``start``, as GAMP iterates (to set beside GAMP iterate by iterate; :func:`solve`
    looks for the fixed ray instead).

    Args:
      task, target, alpha, lam: as in :func:`solve`.
      n_iter: number of maps, ``>= 1``.
      start: ``(cos_theta, rho)`` of the first iterate, ``0 < cos_theta < 1``, ``rho > 0``.
      n_qmc, n_rep, seed: QMC points of each output side (``None``: the field of
        :class:`HardmaxSettings`, so that the defaults give :func:`solve`'s points).

    A map that leaves its domain (the input side cannot resolve it) raises a
    ``ValueError`` naming ``alpha`` and ``lam``.
    """
    task = _check_task(task)
    alpha = _checks.alpha(alpha)
    lam = _lam(lam)
    n_iter = _checks.integer("n_iter", n_iter, 1)
    s = _settings(None, dict(n_qmc=n_qmc, n_rep=n_rep, seed=seed))
    rows = [_start("start", start, target)]
    pb = _ray(task, target, alpha, lam, s)
    for _ in range(n_iter):  # one undamped map each
        rows.append(np.asarray(_maps(pb, rows[-1], 0.0, 1, 0.0).fx))
        if not np.all(np.isfinite(rows[-1])):
            raise ValueError(f"hardmax SE at alpha = {alpha!r}, lam = {lam!r} left its domain")
    rows = np.array(rows[1:])
    return HardmaxTrajectory(np.tanh(rows[:, 0]), np.exp(rows[:, 1]))


def _start(name: str, start, target):
    """``y0 = (artanh cos_theta, log rho)`` from ``start = (cos_theta, rho)``, checked (and
    the target's type)."""
    g0, r0 = (float(t) for t in start)
    if not (0.0 < g0 < 1.0 and 0.0 < r0 < math.inf):
        raise ValueError(
            f"{name} must be (cos_theta, rho) with 0 < cos_theta < 1 and rho > 0, got {start}"
        )
    _checks.target(target)
    return np.array([np.arctanh(g0), math.log(r0)])


class HardmaxSettings(NamedTuple):
    """Numerical settings of :func:`solve` (each validated there, a ``ValueError`` naming the
    field).

    Attributes:
      tol: stop when ``(artanh cos_theta, log rho)`` moves less than ``tol`` in one map, ``> 0``
        (the QMC average is piecewise smooth in its parameters: the iteration ends in a
        small cycle, of a few ``1e-4`` at ``n_qmc = 16384``).
      max_iter: maps of the damped iteration, ``>= 1``.
      damping: weight of the old iterate, in ``[0, 1)``.
      n_qmc, n_rep, seed: QMC points of the output side (``n_qmc / n_rep`` a power of 2,
        ``n_rep >= 1``, ``seed >= 0``).
      time_limit: seconds (``None``: no limit); past it :func:`solve` stops between two
        maps and returns NaN, ``converged=False`` and a warning.
      rtol: accuracy of ``integration_error`` (``> 0``; ``n_qmc`` doubles, each solve
        warm-started from the last ray, until ``integration_error <= rtol``, up to
        ``max_n_qmc``, then a ``RuntimeWarning``); ``None``: one solve at ``n_qmc``.
      max_n_qmc: the largest ``n_qmc`` that ``rtol`` may reach (``>= n_qmc`` with ``rtol``).
    """

    tol: float = 1e-3
    max_iter: int = 200
    damping: float = 0.5
    n_qmc: int = 65536
    n_rep: int = 8
    seed: int = 0
    time_limit: float | None = None
    rtol: float | None = None
    max_n_qmc: int = 2**19


def _settings(settings, given: dict) -> HardmaxSettings:
    """``settings`` (default :class:`HardmaxSettings`) with the shorthand keywords ``given``
    that are not ``None`` in place of its fields, validated."""
    s = _checks.settings(HardmaxSettings, settings, given)
    n_qmc, n_rep, seed = _checks.qmc_sizes(s.n_qmc, s.n_rep, s.seed)
    tol, max_iter = _checks.positive("tol", s.tol), _checks.integer("max_iter", s.max_iter, 1)
    damping = _checks.in_interval("damping", s.damping, 0.0, 1.0, low_open=False, high_open=True)
    time_limit = _limits.time_limit(s.time_limit)
    rtol = None if s.rtol is None else _checks.positive("rtol", s.rtol)
    max_n_qmc = _checks.integer("max_n_qmc", s.max_n_qmc, 2)
    if rtol is not None:
        _checks.integer("max_n_qmc", max_n_qmc, n_qmc)
    return HardmaxSettings(tol, max_iter, damping, n_qmc, n_rep, seed, time_limit, rtol, max_n_qmc)


def solve(
    task, target, alpha: float, lam: float, *, init=None,
    settings: HardmaxSettings | None = None, tol: float | None = None,
    max_iter: int | None = None, damping: float | None = None, n_qmc: int | None = None,
    n_rep: int | None = None, seed: int | None = None, time_limit: float | None = None,
    rtol: float | None = None, max_n_qmc: int | None = None,
) -> HardmaxSE:  # fmt: skip
    """Fixed ray of the hardmax state evolution at sample ratio ``alpha`` (nuclear + PSD).

    Args:
      task: :class:`attnlib.tasks.Hardmax` (``T <= 3``, any noise).
      target: an :class:`attnlib.targets.Target` (``Q0 = Tr S0^2 / d``).
      alpha: ``n / d^2`` in ``[1e-100, 1e100]``.
      lam: penalty strength in ``[1e-100, 1e100]``; the direction is the same for every
        ``lam`` (only ``rho``, proportional to ``1 / lam``, changes).
      init: starting ``(cos_theta, rho)`` with ``0 < cos_theta < 1``, ``rho > 0`` (default
        ``(0.5, 0.3 / lam)``).
      settings: :class:`HardmaxSettings` (default ``HardmaxSettings()``).
      tol, max_iter, damping, n_qmc, n_rep, seed, time_limit, rtol, max_n_qmc: shorthands
        for the fields of ``settings`` (``None``: the field of ``settings``);
        ``time_limit`` holds for all the solves of ``rtol``. Progress: INFO on the logger
        ``attnlib.se`` every 10 s.

    Returns:
      :class:`HardmaxSE`: the fixed ray (``converged=True``), or, if ``max_iter`` maps did
      not reach ``tol`` or the iteration left the map's domain (steps halved down to the
      solver's ``min_step``), ``converged=False`` with NaN fields (but ``alpha``, ``Q0`` and the
      diagnostics ``residual``, ``n_iter``) and an :class:`attnlib.se.SEConvergenceWarning`.
    """
    task = _check_task(task)
    alpha = _checks.alpha(alpha)
    lam = _lam(lam)
    given = dict(tol=tol, max_iter=max_iter, damping=damping, n_qmc=n_qmc, n_rep=n_rep, seed=seed)
    given.update(time_limit=time_limit, rtol=rtol, max_n_qmc=max_n_qmc)
    s = _settings(settings, given)
    y0 = _start("init", (0.5, 0.3 / lam) if init is None else init, target)
    try:
        with _limits.limit(s.time_limit):
            if s.rtol is None:
                return _solve_once(task, target, (alpha, lam), y0, s)
            return _solve_to_rtol(task, target, (alpha, lam), y0, s)
    except _limits.TimeUp:
        if s.time_limit is None:  # the limit of an enclosing call: its to handle
            raise
    why = f"stopped at time_limit = {s.time_limit:g} s (NaN)"
    return _failed(alpha, float(target.Q0), why, math.nan, 0)


def _solve_once(task, target, point, y0, s: HardmaxSettings) -> HardmaxSE:
    """One solve at the QMC sizes of ``s`` from ``y0``."""
    pb = _ray(task, target, *point, s)
    fp = _maps(pb, y0, s.tol, s.max_iter, s.damping)
    if int(fp.status) != iterate.CONVERGED:
        res, n = float(fp.residual), int(fp.n_iter)
        why = "left its domain" if int(fp.status) == iterate.STALLED else "residual"
        why = f"{why}: residual {res:.3g} >= tol after {n} maps"
        return _failed(float(pb.data.alpha), float(pb.data.Q0), why, res, n, stacklevel=4)
    return _result(pb, fp, s)


def _solve_to_rtol(task, target, point, y0, s: HardmaxSettings) -> HardmaxSE:
    """:func:`_solve_once` with ``n_qmc`` doubled until ``integration_error <= s.rtol``
    (``_doubling.until_accurate``), each solve started from the last converged ray; also
    doubled where the ray was not reached (at few points the QMC average is a step
    function of the ray, and the iteration can cycle above ``tol``): the warning of a
    ray not reached is given only if the last solve did not reach it."""

    def once(s1, last):
        r = None if last is None else last[0]
        y = y0 if r is None or not r.converged else _start("init", (r.cos_theta, r.rho), target)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SEConvergenceWarning)
            return _solve_once(task, target, point, y, s1), caught

    r, caught = _doubling.doubling_n_qmc(
        once,
        s,
        name=f"hardmax.solve at alpha={point[0]}",
        more=lambda r: not r.converged,
        what="relative error of cos_theta, rho and the test error",
        hint="",
    )
    for w in caught:  # the last solve's warnings (a ray not reached at max_n_qmc)
        warnings.warn(w.message, w.category, stacklevel=3)
    return r


def _failed(alpha, Q0, why: str, residual: float, n_iter: int, stacklevel=3) -> HardmaxSE:
    """A ray that was not reached: every order parameter and metric NaN, and a warning."""
    warnings.warn(f"hardmax SE: {why}", SEConvergenceWarning, stacklevel=stacklevel)
    fields = dict.fromkeys(HardmaxSE._fields, math.nan)
    fields.update(alpha=float(alpha), Q0=float(Q0), converged=False)
    return HardmaxSE(**fields)._replace(residual=residual, n_iter=n_iter)


_TEST_QMC = 1 << 15  # points of the test error (4 scramblings; T = 2: closed form)
_H = 1e-2  # step in y = (artanh cos_theta, log rho) of the map's Jacobian (central)


def _result(pb: _Ray, fp: iterate.FixedPoint, s: HardmaxSettings) -> HardmaxSE:
    """The ray one damped step past the converged map, ``damping y + (1 - damping) F(y)``,
    with the by-products of that map and the errors of :func:`_errors`."""
    _, means, image = (np.asarray(t) for t in fp.aux)
    y = s.damping * np.asarray(fp.x) + (1 - s.damping) * np.asarray(fp.fx)
    Q0, lam = float(pb.data.Q0), float(pb.data.lam)
    mean = means.mean(axis=0)
    cos_theta = float(np.tanh(y[0]))
    te = test_errors(pb.channel.task, Q0, cos_theta * Q0, Q0, (_TEST_QMC, 4, s.seed))
    f = dict(zip(_COLUMNS, map(float, mean), strict=True))
    f.update(alpha=float(pb.data.alpha), Q0=Q0, cos_theta=cos_theta, rho=float(np.exp(y[1])))
    f.update(Delta_eff=f["q_hat"] / f["m_hat"] ** 2, threshold=lam / f["m_hat"])
    f.update(test_error=te.test_error, rank_fraction=float(image[3]))
    f.update(kappa_scale=math.sqrt(image[1] / Q0), converged=True)
    f.update(residual=float(fp.residual), n_iter=int(fp.n_iter), trace=0.0)
    f.update(integration_error=float(np.max(_errors(pb, y, means, te, s.seed))))
    return HardmaxSE(**f, objective=f["train_loss"])


def _image(pb: _Ray, conj) -> np.ndarray:
    """``y`` of the input side at the conjugates ``conj = (m_hat, q_hat, a_hat)``."""
    x = host_input(pb.denoiser.target, conj, float(pb.data.lam))[:3]
    return np.asarray(engine.to_y(x, float(pb.data.Q0), ray=True))


def _errors(pb: _Ray, y, means, te, seed) -> np.ndarray:
    """Relative standard errors of ``(cos_theta, rho, test_error)`` at the ray ``y``: each
    scrambling's map ``F_r`` (the input side at that scrambling's conjugates, ``means``
    ``(R, 5)``) minus their mean, propagated through ``(I - J)^{-1}`` with ``J`` the
    map's Jacobian (central differences, step :data:`_H`, on the same QMC points), as
    :mod:`attnlib.se.propagation` does for a fixed point; the test error adds its own QMC
    error ``te.stderr``. NaN where a map leaves its domain or ``I - J`` is singular."""
    if len(means) < 2:
        return np.full(3, np.nan)
    per = np.array([_image(pb, m[[2, 1, 0]]) for m in means])
    dev = per - per.mean(axis=0)
    J = np.stack(
        [
            (_maps(pb, y + _H * e, 0.0, 1, 0.0).fx - _maps(pb, y - _H * e, 0.0, 1, 0.0).fx)
            / (2 * _H)
            for e in np.eye(2)
        ],
        axis=1,
    )
    try:
        dy = np.linalg.solve(np.eye(2) - np.asarray(J), dev.T).T  # (R, 2)
    except np.linalg.LinAlgError:
        return np.full(3, np.nan)
    cos = math.tanh(y[0])
    Q0, task, h = float(pb.data.Q0), pb.channel.task, _H * (1 - cos * cos)
    qmc = (_TEST_QMC, 4, seed)
    up = test_errors(task, Q0, min(cos + h, 1.0) * Q0, Q0, qmc).test_error
    down = test_errors(task, Q0, (cos - h) * Q0, Q0, qmc).test_error
    d_cos = (1 - cos * cos) * dy[:, 0]
    d_te = (up - down) / (min(cos + h, 1.0) - cos + h) * d_cos
    sem = dy.std(axis=0, ddof=1) / math.sqrt(len(dy))
    te_sem = math.hypot(float(np.std(d_te, ddof=1) / math.sqrt(len(dy))), te.stderr[0])
    return np.array([sem[0] * (1 - cos * cos) / cos, sem[1], te_sem / max(te.test_error, 1e-300)])
