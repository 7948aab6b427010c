r"""Phase transitions of the convex ERM: perfect recovery, interpolation, minimal width.

Conventions (THEORY.md sections 2 and 6): ``alpha = n / d^2`` sequences per squared
dimension; ``m_eff`` (:attr:`attnlib.tasks.Task.m_eff`) is the number of independent
linear constraints that one exactly fitted sequence puts on ``S`` (linear task:
``K = T (T + 1) / 2``; softmax seq2seq: ``K - 1``, the global shift of the logits is
lost); ``kappa0`` is the rank fraction of the target and ``kappa = p / d`` the width
of the factorised student. Symmetric ``d x d`` matrices form a space of dimension
``D = d (d + 1) / 2 ~ d^2 / 2``; ``n`` exactly fitted sequences are ``n m_eff =
alpha m_eff d^2`` linear equations in it.

Thresholds (all in the limit ``d -> infinity``, ``lam -> 0+``):

- :func:`statistical_dimension` ``delta(kappa0)``: statistical dimension of the
  descent cone of ``Tr S + indicator(S PSD)`` at a PSD matrix of rank ``kappa0 d``,
  divided by ``d^2`` (closed form below).
- :func:`perfect_recovery` ``alpha_PR = delta(kappa0) / m_eff``: noise-free labels
  are fitted by ``S0`` only, and the minimum-trace interpolator is ``S0``, beyond it
  (Amelunxen, Lotz, McCoy, Tropp 2014). :func:`perfect_recovery_se` recomputes
  ``delta`` from the free-probability formulas of the state evolution, for any
  target spectrum; :func:`perfect_recovery_bayes` is the information-theoretic
  (Bayes-optimal) count ``(kappa0 - kappa0^2 / 2) / m_eff`` for comparison.
- :func:`interpolation`: largest ``alpha`` at which noisy labels are fitted exactly,
  for noise-dominated labels (``1/(4 m_eff)``; exact for ``S0 = 0``). With a PSD
  target the threshold grows as the noise shrinks, up to
  :func:`interpolation_small_noise` (``Delta -> 0+``); :func:`interpolation_se`
  computes it at the task's noise from the state evolution.
- :func:`minimal_width`: rank fraction of the convex minimiser (state evolution).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq, minimize_scalar

from attnlib import _checks
from attnlib.tasks import Linear, Task

__all__ = [
    "semicircle_moment2",
    "statistical_dimension",
    "perfect_recovery",
    "perfect_recovery_bayes",
    "perfect_recovery_se",
    "recovery_mse_ratio",
    "interpolation",
    "tangent_cone_dimension",
    "interpolation_small_noise",
    "interpolation_se",
    "minimal_width",
]

PENALTIES = ("nuclear", "frobenius")


# ----------------------------------------------------------------------------
# Statistical dimension of the trace-norm descent cone
# ----------------------------------------------------------------------------


def _semicircle_partial(a: float) -> tuple[float, float, float]:
    r"""``I_k(a) = int_a^1 s^k sqrt(1 - s^2) ds`` for ``k = 0, 1, 2`` and ``a in [-1, 1]``.

    With ``phi = arccos(a)``:
    ``I_0 = (phi - a sqrt(1 - a^2)) / 2``, ``I_1 = (1 - a^2)^{3/2} / 3``,
    ``I_2 = (phi + a sqrt(1 - a^2) (1 - 2 a^2)) / 8``
    (antiderivatives ``(s sqrt(1-s^2) + arcsin s)/2``, ``-(1-s^2)^{3/2}/3`` and
    ``(arcsin s - s sqrt(1-s^2)(1 - 2 s^2))/8``, and ``pi/2 - arcsin a = arccos a``).
    """
    a = min(max(a, -1.0), 1.0)
    phi = math.acos(a)
    s = math.sqrt(max(1.0 - a * a, 0.0))
    return (phi - a * s) / 2.0, s**3 / 3.0, (phi + a * s * (1.0 - 2.0 * a * a)) / 8.0


def semicircle_moment2(t: float, r: float) -> float:
    r"""``E_{u ~ SC(r)} (u - t)_+^2`` for the semicircle law of radius ``r`` (density
    ``2 sqrt(r^2 - u^2) / (pi r^2)`` on ``[-r, r]``).

    Writing ``u = r s`` and ``a = t / r``, ``E (u - t)_+^2 = r^2 (2/pi) (I_2 - 2 a I_1 + a^2 I_0)``
    with the partial moments ``I_k`` of :func:`_semicircle_partial`. Limits: ``r^2/4 + t^2``
    for ``t <= -r`` (the full second moment), ``0`` for ``t >= r``.
    """
    r = _checks.nonnegative("r", r)
    t = float(t)
    if r == 0.0:
        return max(-t, 0.0) ** 2
    if t <= -r:
        return r * r / 4.0 + t * t
    if t >= r:
        return 0.0
    a = t / r
    i0, i1, i2 = _semicircle_partial(a)
    return r * r * (2.0 / math.pi) * (i2 - 2.0 * a * i1 + a * a * i0)


def _semicircle_moment1(t: float, r: float) -> float:
    """``E_{u ~ SC(r)} (u - t)_+ = r (2/pi) (I_1 - a I_0)``, ``a = t / r`` in ``[-1, 1]``."""
    a = min(max(t / r, -1.0), 1.0)
    i0, i1, _ = _semicircle_partial(a)
    return r * (2.0 / math.pi) * (i1 - a * i0)


def statistical_dimension(kappa0: float) -> float:
    r"""``delta(kappa0)``: statistical dimension of the trace + PSD descent cone, over ``d^2``.

    .. math::

        \delta(\kappa_0) = \inf_{t \ge 0} \Big[\frac{\kappa_0^2}{2} + \kappa_0(1 - \kappa_0)
            + \kappa_0 t^2 + (1 - \kappa_0)\, E_{u \sim SC(r)} (u - t)_+^2\Big],
        \qquad r = \sqrt{2 (1 - \kappa_0)}.

    The first two terms are the tangent directions (the ``kappa0 d x kappa0 d``
    block and the off-diagonal block), ``kappa0 t^2`` the subgradient on the
    support, and the last term the distance of the GOE block on the null space to
    the scaled negative PSD cone (:func:`semicircle_moment2` in closed form). The
    objective is convex in ``t`` with derivative
    ``2 kappa0 t - 2 (1 - kappa0) E (u - t)_+``, negative at ``t = 0`` and positive at
    ``t = r`` for ``kappa0 < 1``: its root is found by Brent's method.

    Values: ``delta(0.2) = 0.25556``, ``delta(0.5) = 0.42217``, ``delta(1) = 1/2``.

    Args:
      kappa0: rank fraction of the PSD target, in ``(0, 1]``.
    """
    k = _checks.in_interval("kappa0", kappa0, 0.0, 1.0)
    if k == 1.0:
        return 0.5
    r = math.sqrt(2.0 * (1.0 - k))

    def value(t):
        return k * k / 2 + k * (1 - k) + k * t * t + (1 - k) * semicircle_moment2(t, r)

    def slope(t):
        return 2 * k * t - 2 * (1 - k) * _semicircle_moment1(t, r)

    t_star = brentq(slope, 0.0, r, xtol=1e-15, rtol=4 * np.finfo(float).eps)
    return float(value(t_star))


def _check_task(task) -> Task:
    if not isinstance(task, Task):
        raise ValueError(f"task must be an attnlib.tasks.Task, got {task!r}")
    return task


def _target_kappa0(target) -> float:
    k = getattr(target, "kappa0", None)
    if k is None:
        raise ValueError(f"target must be an attnlib.targets.Target, got {target!r}")
    k = float(k)
    if not (0.0 < k <= 1.0):
        raise ValueError(f"target rank fraction kappa0 must lie in (0, 1], got {k!r}")
    return k


def _check_psd_target(target) -> None:
    if not hasattr(target, "measure") or not hasattr(target, "outliers"):
        raise ValueError(f"target must be an attnlib.targets.Target, got {target!r}")
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = target.measure()
    if np.any(np.asarray(mu.atoms) < -1e-12) or any(x < 0 for x in target.outliers()):
        raise ValueError(
            "target must be positive semi-definite (the nuclear + PSD estimator cannot "
            "recover a matrix with negative eigenvalues)"
        )


def perfect_recovery(task: Task, target) -> float:
    r"""Perfect-recovery threshold ``alpha_PR = delta(kappa0) / m_eff`` (convex geometry).

    Noise-free labels, ``lam -> 0+``: the nuclear + PSD ERM returns the
    minimum-trace PSD matrix that fits the data, which is ``S0`` with probability
    tending to one iff the ``n m_eff`` generic linear measurements outnumber the
    statistical dimension ``delta(kappa0) d^2`` of the descent cone at ``S0``
    (Amelunxen et al. 2014). Depends on the target only through ``kappa0``.
    E.g. ``0.2111`` for ``Seq2Seq(T=2)`` with ``Wishart(0.5)``.
    """
    task = _check_task(task)
    _check_psd_target(target)
    return statistical_dimension(_target_kappa0(target)) / task.m_eff


def perfect_recovery_bayes(task: Task, target) -> float:
    r"""Counting bound ``(kappa0 - kappa0^2/2) / m_eff``: the dimension of the rank-``kappa0 d``
    PSD manifold per ``d^2`` divided by the constraints per sequence (Bayes-optimal
    recovery threshold). The convex ERM needs :func:`perfect_recovery` ``>=`` this."""
    task = _check_task(task)
    k = _target_kappa0(target)
    return (k - k * k / 2) / task.m_eff


# ----------------------------------------------------------------------------
# The same threshold from the state evolution (free probability)
# ----------------------------------------------------------------------------


def _mse_ratio_fn(spec):
    """``t -> mse(Delta, t sqrt(Delta)) / Delta`` on one quadrature of ``rho_R`` (Stein form)."""
    x = np.asarray(spec.x, float)
    w = np.asarray(spec.w, float)  # sum(w * phi) ~ int rho_R phi
    h = np.asarray(spec.hilbert, float)
    D = float(spec.Delta)

    def ratio(t):
        f = np.maximum(x - t * math.sqrt(D), 0.0)
        return float(np.sum(w * (f - x) ** 2) / D + 4.0 * np.sum(w * f * h) - 1.0)

    return ratio


def recovery_mse_ratio(
    target, Delta: float, t: float, *, n_nodes: int = 90, n_atoms: int = 400
) -> float:
    r"""``mse(Delta, tau = t sqrt(Delta)) / Delta`` for the soft-threshold denoiser.

    ``mse = (1/d) ||F(S0 + sqrt(Delta) W_goe) - S0||_F^2`` with ``f(x) = (x - tau)_+``,
    in the large-``d`` limit. Writing ``mse = Q0 - 2 m + q`` with
    ``q = int rho_R f^2`` and ``m = int rho_R f (x - 2 Delta h_R)`` (THEORY.md section 3)
    and using the exact identities ``int rho_R x^2 = Q0 + Delta`` and
    ``int rho_R x (x - 2 Delta h_R) = Tr(R S0)/d = Q0`` gives Stein's unbiased form

    .. math:: \mathrm{mse} = \int \rho_R (f(x) - x)^2 + 4 \Delta \int \rho_R f h_R - \Delta,

    whose terms are each of order ``Delta``, so ``mse / Delta`` is computed without the
    cancellation between the ``O(1)`` quantities ``Q0``, ``m`` and ``q``
    (``(f(x) - x)^2 = min(x, tau)^2`` for ``x >= 0``, ``x^2`` for ``x < 0``).
    Integrals use :func:`attnlib.rmt.deformed_spectrum` (``n_nodes``, ``n_atoms``).
    """
    from attnlib import rmt

    Delta = _checks.positive("Delta", Delta)
    t = _checks.nonnegative("t", t)
    _check_psd_target(target)
    return _mse_ratio_fn(rmt.deformed_spectrum(target, Delta, n_nodes, n_atoms=n_atoms))(t)


def _min_ratio(spec) -> tuple[float, float]:
    """``(min_t ratio(t), argmin)`` for one ``Delta`` (bounded Brent on ``t in [0, t_max]``)."""
    ratio = _mse_ratio_fn(spec)
    # beyond the top of the support f = 0 and the ratio only grows: bound t there
    t_max = max(float(np.max(spec.x)) / math.sqrt(spec.Delta), 1.0)
    t_max = min(t_max, 50.0)
    grid = np.linspace(0.0, t_max, 101)
    vals = np.array([ratio(t) for t in grid])
    i = int(np.argmin(vals))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    res = minimize_scalar(ratio, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10})
    best = min((res.fun, res.x), (vals[i], grid[i]))
    return float(best[0]), float(best[1])


def _delta_se(target, deltas, n_nodes, n_atoms) -> float:
    from attnlib import rmt

    specs = [rmt.deformed_spectrum(target, D, n_nodes, n_atoms=n_atoms) for D in deltas]
    r = np.array([_min_ratio(s)[0] for s in specs]) / 2
    # r(Delta) = r0 + b Delta^p, Delta_{k+1} = Delta_k / s: (r1 - r2) / (r2 - r3) = s^p and
    # r3 - r0 = b Delta_3^p = (r2 - r3) / (s^p - 1)
    d12, d23 = r[0] - r[1], r[1] - r[2]
    if not (d12 * d23 > 0 and abs(d12) > abs(d23)):
        return float(r[2])  # no clean power law: report the smallest-Delta value
    sp = d12 / d23
    return float(r[2] - d23 / (sp - 1.0))


def perfect_recovery_se(
    task: Task,
    target,
    *,
    deltas: tuple[float, ...] = (1e-3, 1e-4, 1e-5),
    n_nodes: int = 90,
    n_atoms: int = 400,
) -> float:
    r"""Perfect-recovery threshold from the state evolution, for any PSD target spectrum.

    Returns ``delta_SE / m_eff`` with

    .. math:: \delta_{SE} = \frac12 \min_{t \ge 0} \lim_{\Delta \to 0}
              \frac{\mathrm{mse}(\Delta, t\sqrt{\Delta})}{\Delta},

    ``mse`` the large-``d`` error of the spectral soft threshold applied to
    ``R = S0 + sqrt(Delta) W_goe`` (:func:`recovery_mse_ratio`, built on
    :func:`attnlib.rmt.deformed_spectrum`; no use of the closed formula of
    :func:`statistical_dimension`). ``kappa0`` never enters explicitly, so this
    works for power-law and explicit spectra as well.

    Why this is the state-evolution threshold. With noise-free labels and
    ``lam -> 0+`` every fitted sequence imposes ``m_eff`` linear equations
    ``<S, Z_ab> = h0_ab`` (softmax: up to the global shift), so the ERM is
    noiseless compressed sensing with ``N = d^2/2`` unknowns (orthonormal
    coordinates of symmetric matrices) and ``M = alpha m_eff d^2`` measurements,
    ratio ``M / N = 2 alpha m_eff``. In the state evolution the input denoiser sees
    ``R = S0 + sqrt(Delta_eff) W_goe``, i.e. Gaussian noise of variance
    ``sigma^2 = 2 Delta_eff / d`` per orthonormal coordinate, and thresholds at
    ``tau = lam / a_hat``. The output side of a noiseless linear channel returns
    the per-coordinate error divided by the measurement ratio,
    ``sigma_new^2 = (||F(R) - S0||_F^2 / N) / (M / N)``. Since
    ``||F(R) - S0||_F^2 / N = 2 mse / d``, this reads
    ``Delta_new = mse(Delta, tau) / (2 alpha m_eff)``. The fixed point
    ``Delta = 0`` (``S_hat = S0``) is stable iff the map contracts near ``0``,
    i.e. iff ``min_t lim_{Delta -> 0} mse(Delta, t sqrt(Delta)) / Delta < 2 alpha m_eff``,
    with the threshold scale ``t = tau / sqrt(Delta)`` chosen by the ERM
    (``lam -> 0+`` leaves it free; the minimum-trace solution realises the best one).
    Hence ``alpha_PR = delta_SE / m_eff``; that ``delta_SE = delta(kappa0)``
    is the Oymak-Hassibi identity between the minimax risk of a proximal
    denoiser and the statistical dimension of the descent cone.

    Numerics: for each of the three geometrically spaced ``deltas`` the minimum
    over ``t`` of ``mse / Delta`` (:func:`recovery_mse_ratio`, Stein form) is found
    by a grid and bounded Brent search; the minima are extrapolated to
    ``Delta = 0`` by fitting ``a + b Delta^p`` through the three values (``p`` from
    their ratio; measured ``p = 1/2`` for Wishart ``kappa0 < 1``, ``p ~ 2/3`` for
    ``kappa0 = 1`` whose spectrum has a hard edge at ``0``). If the three values
    do not follow a power law the smallest-``Delta`` value is returned.
    Minimising before extrapolating is legitimate: the minimum over ``t`` of a
    family converging uniformly on compacts converges to the minimum of the limit.

    Args:
      task: the task (gives ``m_eff``).
      target: a PSD :class:`attnlib.targets.Target`.
      deltas: three decreasing noise levels, in a constant ratio, for the extrapolation.
        For an atomic description of the target (``target.measure(n_atoms)``), the
        smallest ``sqrt(Delta)`` must exceed the spacing of the atoms, or ``rho_R``
        is a comb of separate bumps: the defaults suit ``n_atoms = 400``.
      n_nodes, n_atoms: passed to :func:`attnlib.rmt.deformed_spectrum`.
    """
    task = _check_task(task)
    _check_psd_target(target)
    deltas = tuple(float(x) for x in deltas)
    if (
        len(deltas) != 3
        or not (0 < deltas[2] < deltas[1] < deltas[0])
        or not math.isclose(deltas[0] / deltas[1], deltas[1] / deltas[2], rel_tol=1e-9)
    ):
        raise ValueError(
            f"deltas must be three decreasing positive values in a constant ratio, got {deltas!r}"
        )
    n_nodes = _checks.integer("n_nodes", n_nodes, 1)
    n_atoms = _checks.integer("n_atoms", n_atoms, 1)
    return _delta_se(target, deltas, n_nodes, n_atoms) / task.m_eff


# ----------------------------------------------------------------------------
# Interpolation and minimal width
# ----------------------------------------------------------------------------


def _labels_leave_range(task: Task) -> bool:
    """Whether additive output noise puts labels outside the range of ``g`` almost surely
    (output dimension above ``m_eff``) or with positive probability per sequence (the
    bounded softmax readouts)."""
    if isinstance(task, Linear) or task.noise == 0.0 or task.noise_on != "outputs":
        return False
    return True


def interpolation(task: Task, kappa: float | None = None, penalty: str = "nuclear") -> float:
    r"""Interpolation threshold for noise-dominated labels: ``1/(4 m_eff)`` (nuclear + PSD).

    Largest ``alpha`` at which the training loss reaches zero (``d -> infinity``,
    then ``lam -> 0+``) when the labels carry no usable signal: exact for a zero
    target ``S0 = 0`` at any noise level, and the limit of the true threshold when
    the noise variance is large compared with ``Q0``. For a non-zero PSD target the
    threshold depends on the noise: see :func:`interpolation_small_noise` (the
    other end of the range) and :func:`interpolation_se` (the exact value).

    Derivation. A training loss of zero means ``h_mu(S) = h0_mu + noise`` on every
    sequence (softmax: up to the lost global shift), i.e. ``M = n m_eff =
    alpha m_eff d^2`` linear equations ``A(S - S0) = e`` in the ``N = d^2/2``
    dimensional space of symmetric matrices, with ``e`` the label noise.

    - ``penalty="frobenius"`` (direct ``S``, no constraint): solvable iff ``M < N``,
      so ``alpha_interp = 1 / (2 m_eff)``, whatever the target and the noise.
    - ``penalty="nuclear"``, ``kappa=None`` (convex problem, ``S`` in the PSD cone
      ``C``): ``A(S - S0) = e`` with ``S - S0`` in ``C - S0``. By Gordon's
      comparison (CGMT) for Gaussian-like sensing, a solution exists iff
      ``sup_r [w(r)^2 - ||e||^2 / r^2] > M``, where ``w(r)^2`` is the squared
      Gaussian width of ``(C - S0) / r`` intersected with the unit sphere. ``w(r)``
      decreases from the statistical dimension of the tangent cone
      ``T_C(S0)`` (``r -> 0``) to that of ``C`` itself (``r -> infinity``;
      ``delta(C) = N/2 = d^2/4`` for the self-dual PSD cone). Noise-dominated labels
      (``||e|| -> infinity``) need ``r -> infinity``: ``alpha_interp = 1/(4 m_eff)``.
      With ``S0 = 0``, ``C - S0 = C`` and this holds at every noise level. (Zero
      noise gives the other end, :func:`interpolation_small_noise`.)
    - ``penalty="nuclear"`` with a factorised width ``kappa < 1``: the rank
      ``<= kappa d`` PSD matrices form a manifold of dimension
      ``kappa d^2 - (kappa d)^2 / 2 = d^2 (kappa - kappa^2/2)``, so the dimension
      count predicts ``alpha_interp = min(1/4, kappa - kappa^2/2) / m_eff`` for
      noise-dominated labels (a count, not a theorem: it assumes generic equations
      can be met on the manifold whenever its dimension exceeds their number).

    Checked by simulation (tests): ``train_convex`` at ``lam -> 0`` fits pure-noise
    labels at ``0.7 alpha_interp`` and not at ``1.3 alpha_interp`` (linear ``T = 1``
    and seq2seq ``T = 2``, ``d = 40``).

    Noise placement. With ``noise_on="outputs"`` on a non-linear task the labels
    ``g(h0) + sqrt(Delta) xi`` leave the range of ``g`` (for softmax seq2seq the
    ``T^2`` outputs of ``g`` lie on a ``K - 1`` dimensional manifold of row-stochastic
    matrices; for the softmax readouts the range is bounded), so a positive fraction
    of the sequences cannot be fitted and the training loss stays positive at every
    ``alpha``: the function returns ``0.0``.

    Args:
      task: the task (gives ``m_eff`` and the noise placement).
      kappa: width ``p / d`` of the factorised student in ``(0, 1]``, or ``None`` for the
        convex problem (unbounded rank). Only with ``penalty="nuclear"``.
      penalty: ``"nuclear"`` (PSD, factorised student) or ``"frobenius"`` (direct ``S``).
    """
    task = _check_task(task)
    _checks.choice("penalty", penalty, PENALTIES)
    if kappa is not None:
        if penalty != "nuclear":
            raise ValueError(
                "kappa applies to the factorised (nuclear) student only; use kappa=None"
            )
        kappa = _checks.in_interval("kappa", kappa, 0.0, 1.0)
    if _labels_leave_range(task):
        return 0.0
    if penalty == "frobenius":
        return 1.0 / (2.0 * task.m_eff)
    dim = 0.25 if kappa is None else min(0.25, kappa - kappa * kappa / 2)
    return dim / task.m_eff


def tangent_cone_dimension(kappa0: float) -> float:
    r"""Statistical dimension over ``d^2`` of the tangent cone of the PSD cone at a PSD
    matrix of rank ``kappa0 d``: ``kappa0 - kappa0^2/2 + (1 - kappa0)^2 / 4``.

    The tangent cone is ``{D symmetric : P D P PSD}`` with ``P`` the projector on the
    null space of ``S0``: a linear space (the range block, ``kappa0^2 d^2 / 2``, and
    the off-diagonal block, ``kappa0 (1 - kappa0) d^2``) times a PSD cone of size
    ``(1 - kappa0) d`` (half its dimension, ``(1 - kappa0)^2 d^2 / 4``).
    """
    k = _checks.in_interval("kappa0", kappa0, 0.0, 1.0)
    return k - k * k / 2 + (1 - k) ** 2 / 4


def interpolation_small_noise(task: Task, target) -> float:
    r"""Interpolation threshold for vanishing label noise, ``Delta -> 0+`` (nuclear + PSD).

    With ``||e|| -> 0`` the comparison of :func:`interpolation` is decided at
    ``r -> 0``, where ``(C - S0)/r`` becomes the tangent cone ``T_C(S0)``:
    ``alpha = tangent_cone_dimension(kappa0) / m_eff`` (``0.4375`` for the linear
    ``T = 1`` task and ``kappa0 = 1/2``). For ``0 < Delta < infinity`` the threshold lies
    between :func:`interpolation` and this value and decreases with ``Delta``
    (:func:`interpolation_se`). It exceeds :func:`perfect_recovery`, since the
    descent cone of the trace at ``S0`` is contained in ``T_C(S0)``.
    """
    task = _check_task(task)
    _check_psd_target(target)
    if _labels_leave_range(task):
        return 0.0
    return tangent_cone_dimension(_target_kappa0(target)) / task.m_eff


def interpolation_se(
    task: Task,
    target,
    *,
    lam: float = 1e-6,
    rel_loss: float = 1e-4,
    xtol: float = 2e-3,
    **se_kwargs,
) -> float:
    r"""Interpolation threshold at the task's noise level, from the state evolution.

    Bisection in ``alpha`` between :func:`interpolation` and
    :func:`interpolation_small_noise` (slightly widened) on the criterion
    ``train_loss < rel_loss * test_error_noisy`` of ``se.solve(task, target, alpha, lam)``:
    below the threshold the training loss vanishes as ``lam -> 0+`` (like ``lam^2``),
    above it stays of the order of the noise. ``xtol`` is the relative width of the
    final bracket; each step is one state-evolution solve (seconds), so expect
    about a minute. Extra keyword arguments go to :func:`attnlib.se.solve`.
    """
    import warnings

    from attnlib import se

    task = _check_task(task)
    _check_psd_target(target)
    lam = _checks.positive("lam", lam)
    rel_loss = _checks.positive("rel_loss", rel_loss)
    xtol = _checks.positive("xtol", xtol)
    if _labels_leave_range(task):
        return 0.0
    if task.noise == 0.0:
        raise ValueError("interpolation_se needs noisy labels (task.noise > 0)")

    def fits(alpha):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            r = se.solve(task, target, alpha, lam, **se_kwargs)
        return r.train_loss < rel_loss * max(r.test_error_noisy, 1e-300)

    lo = 0.95 * interpolation(task)
    hi = 1.02 * interpolation_small_noise(task, target)
    if not fits(lo) or fits(hi):
        warnings.warn(
            "interpolation_se: the state evolution does not bracket the threshold between "
            f"{lo:.4g} and {hi:.4g}; returning the nearer end",
            RuntimeWarning,
            stacklevel=2,
        )
        return lo if not fits(lo) else hi
    while hi - lo > xtol * lo:
        mid = 0.5 * (lo + hi)
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def minimal_width(task: Task, target, alpha: float, lam: float, **se_kwargs) -> float:
    r"""``kappa*(alpha, lam)``: rank fraction of the convex (nuclear + PSD) minimiser.

    From the state evolution, ``kappa* = int_{x > tau / c} rho_R(x) dx``
    (``se.solve(...).rank_fraction``). Since every PSD matrix of rank ``<= p`` is a
    ``W W^T / sqrt(p d)`` with ``W`` of width ``p``, the factorised student of width
    ``kappa = p / d`` can reach the convex minimum iff ``kappa >= kappa*``; below it
    the rank constraint binds. Extra keyword arguments go to :func:`attnlib.se.solve`.
    """
    from attnlib import se

    task = _check_task(task)
    alpha = _checks.positive("alpha", alpha)
    lam = _checks.positive("lam", lam)
    res = se.solve(task, target, alpha, lam, penalty="nuclear", **se_kwargs)
    return float(res.rank_fraction)
