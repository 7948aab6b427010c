r"""State evolution (SE): exact asymptotic train and test errors of the ERM.

The ERM (THEORY.md section 2) is a generalised linear model in the
``D = d (d + 1) / 2`` orthonormal coordinates of symmetric matrices, with ``n K``
measurements (``K`` pairs per sequence) whose sensing vectors have i.i.d. entries
of variance ``sigma_ab^2 / d`` and a block-wise (per sequence) loss. Its state
evolution (THEORY.md section 5) is a fixed point in six scalars:

Output side (``K`` independent pairs, ``sigma_ab^2 = 1 + delta_ab``)::

    (h0_ab, omega_ab) ~ N(0, sigma_ab^2 [[Q0, m], [m, q]]),  Y = labels(h0, noise),
    h* = prox (channels.output_step) with V_ab = sigma_ab^2 v,  g = (h* - omega) / V,
    a_hat = alpha sum_ab sigma_ab^2 E[-dg_ab / domega_ab]
    q_hat = (alpha / 2) sum_ab sigma_ab^2 E[g_ab^2]
    m_hat = alpha sum_ab sigma_ab^2 E[dg_ab / dh0_ab]
          = alpha sum_ab E[g_ab (h0_ab - (m/q) omega_ab)] / (Q0 - m^2/q)     (Stein)

Input side (``R = S0 + sqrt(Delta_eff) W_goe``, ``rho_R``, ``h_R = Re G_R``)::

    Delta_eff = q_hat / m_hat^2,  c = m_hat / a_hat,  tau = lam / a_hat,
    f(x) = (c x - tau)_+ (nuclear + PSD)  or  c x / (1 + lam / a_hat) (Frobenius),
    q = int rho_R f^2,  m = int rho_R f (x - 2 Delta_eff h_R),  v = (1/m_hat) int rho_R f h_R.

Where the constants come from. Write ``x = sqrt(d/2) vec(S)`` (orthonormal
coordinates) so that each pair is ``h_ab = sigma_ab F . x`` with ``F`` of i.i.d.
entries of variance ``1/D``: the textbook GLM/ERM state evolution (with
``N = D`` unknowns and ``n K`` rows, ``n / D = 2 alpha``) then gives
``V_hat = 2 a_hat``, ``m_hat_std = 2 m_hat``, ``q_hat_std = 4 q_hat`` in the
notation above; the input denoiser is the prox of the penalty at
``B = (m_hat_std x0 + sqrt(q_hat_std) xi) / V_hat``, and ``xi / sqrt(d/2)`` is a
GOE matrix, which gives ``B = c (S0 + sqrt(Delta_eff) W_goe)``. The divergence of
a spectral map is ``d^2 int rho_R f h_R`` (Gaussian integration by parts). The
Stein form of ``m_hat`` is the one computed (it stays exact when ``h*`` jumps
between minima): with ``omega = sigma sqrt(q) u2`` and
``h0 = (m/q) omega + sigma sqrt(Q0 - m^2/q) u1``,
``E[g (h0 - (m/q) omega)] / (Q0 - m^2/q) = sigma E[g u1] / sqrt(Q0 - m^2/q)``.
The linear task and the Frobenius penalty are Gaussian and use closed forms
(``int rho_R x^2 = Q0 + Delta``, ``int rho_R x h_R = 1/2``); a test checks them
against the classical ridge-regression formulas.

Expectations over the pairs use scrambled Sobol points (fixed seeds) mapped
through the normal inverse CDF; ``R`` independent scramblings give the
standard error reported as ``integration_error``.
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize
import scipy.stats

from attnlib import _checks, channels, rmt
from attnlib import tasks as _tasks

__all__ = [
    "PENALTIES",
    "SEConvergenceWarning",
    "SEResult",
    "LearningCurve",
    "solve",
    "learning_curve",
    "optimal_lambda",
    "test_error_from_overlaps",
    "output_side",
    "input_side",
    "qmc_normals",
]

PENALTIES = ("nuclear", "frobenius")


class SEConvergenceWarning(RuntimeWarning):
    """The state-evolution fixed point was not reached within ``max_iter`` (residual given)."""


class SEResult(NamedTuple):
    """A state-evolution fixed point and the asymptotic metrics it predicts.

    Inputs: ``alpha``, ``lam``, ``penalty``.

    Order parameters: ``m = Tr(S_hat S0)/d``, ``q = Tr(S_hat^2)/d``, ``v`` (prox
    variance per unit ``sigma^2``), conjugates ``m_hat, q_hat, a_hat``, and the
    effective denoising problem ``Delta_eff = q_hat/m_hat^2``, ``c = m_hat/a_hat``,
    ``tau = lam/a_hat``; ``Q0 = Tr(S0^2)/d``.

    Metrics (per sequence): ``train_loss = E loss(Y, h*)``; ``test_error =
    E||g(h(S0)) - g(h(S_hat))||^2`` (noise-free labels); ``test_error_noisy`` the
    same against noisy labels; ``mse = Q0 - 2 m + q = ||S_hat - S0||_F^2 / d``;
    ``rank_fraction`` = fraction of non-zero eigenvalues of ``S_hat``
    (``rho_R`` mass above ``tau/c``; 1 for Frobenius).

    Diagnostics: ``converged``, ``residual`` (max relative change of
    ``(m, q, v)`` under one SE map), ``n_iter`` (SE maps evaluated),
    ``integration_error`` (largest relative QMC standard error among
    ``a_hat, q_hat, m_hat, train_loss, test_error``; 0 for closed forms).
    """

    alpha: float
    lam: float
    penalty: str
    m: float
    q: float
    v: float
    m_hat: float
    q_hat: float
    a_hat: float
    Delta_eff: float
    tau: float
    c: float
    Q0: float
    train_loss: float
    test_error: float
    test_error_noisy: float
    mse: float
    rank_fraction: float
    converged: bool
    residual: float
    n_iter: int
    integration_error: float


class LearningCurve(NamedTuple):
    """:class:`SEResult` fields as arrays over ``alpha`` (``penalty`` stays a string)."""

    alpha: np.ndarray
    lam: np.ndarray
    penalty: str
    m: np.ndarray
    q: np.ndarray
    v: np.ndarray
    m_hat: np.ndarray
    q_hat: np.ndarray
    a_hat: np.ndarray
    Delta_eff: np.ndarray
    tau: np.ndarray
    c: np.ndarray
    Q0: np.ndarray
    train_loss: np.ndarray
    test_error: np.ndarray
    test_error_noisy: np.ndarray
    mse: np.ndarray
    rank_fraction: np.ndarray
    converged: np.ndarray
    residual: np.ndarray
    n_iter: np.ndarray
    integration_error: np.ndarray


# ----------------------------------------------------------------------------
# Quasi-Monte Carlo points
# ----------------------------------------------------------------------------


@functools.lru_cache(maxsize=32)
def _qmc_cached(dim: int, n: int, n_rep: int, seed: int) -> np.ndarray:
    per = n // n_rep
    out = np.empty((n_rep, per, dim))
    for r in range(n_rep):
        eng = scipy.stats.qmc.Sobol(dim, scramble=True, seed=np.random.default_rng([seed, r]))
        u = eng.random(per)
        out[r] = scipy.stats.norm.ppf(np.clip(u, 1e-15, 1 - 1e-15))
    out.setflags(write=False)
    return out


def qmc_normals(dim: int, n: int, n_rep: int = 4, seed: int = 0) -> np.ndarray:
    """``n`` standard normal points in ``dim`` dimensions from ``n_rep`` scrambled Sobol sets.

    Returns shape ``(n_rep, n / n_rep, dim)``; ``n / n_rep`` must be a power of 2
    (balanced Sobol sets). Cached (read-only array).
    """
    dim = _checks.integer("dim", dim, 1)
    n = _checks.integer("n", n, 2)
    n_rep = _checks.integer("n_rep", n_rep, 1)
    per = n // n_rep
    if per * n_rep != n or per < 2 or per & (per - 1):
        raise ValueError(f"n / n_rep must be a power of 2 >= 2, got n={n}, n_rep={n_rep}")
    return _qmc_cached(dim, n, n_rep, int(seed))


# ----------------------------------------------------------------------------
# Task bookkeeping
# ----------------------------------------------------------------------------


def _check_task(task) -> _tasks.Task:
    if not isinstance(task, _tasks.Task):
        raise ValueError(f"task must be an attnlib.tasks.Task, got {task!r}")
    return task


def _noise_dim(task) -> int:
    if task.noise == 0.0:
        return 0
    if task.noise_on == "logits" or isinstance(task, _tasks.Linear):
        return task.n_pairs
    return int(np.prod(task.out_shape))


def _labels(task, h0, xi):
    """Labels from target pairs ``h0`` (N, K) and standard normals ``xi`` (N, noise_dim).

    Returns ``(Y, start)`` with ``start`` the noisy logits (a point fitting ``Y``
    exactly when the noise is on the logits).
    """
    T = task.T
    if task.noise == 0.0:
        return task.output(_tasks.to_matrix(h0, T)), h0
    sd = math.sqrt(task.noise)
    if task.noise_on == "logits" or isinstance(task, _tasks.Linear):
        logits = h0 + sd * xi
        return task.output(_tasks.to_matrix(logits, T)), logits
    clean = task.output(_tasks.to_matrix(h0, T))
    return clean + sd * xi.reshape(clean.shape), h0


def _sigmas(task):
    s2 = jnp.asarray(_tasks.pair_variances(task.T), dtype=jnp.float64)
    return s2, jnp.sqrt(s2)


# ----------------------------------------------------------------------------
# Output side
# ----------------------------------------------------------------------------


class OutputSide(NamedTuple):
    """Output-side averages: conjugates, train loss, and their QMC standard errors."""

    a_hat: float
    q_hat: float
    m_hat: float
    train_loss: float
    stderr: tuple  # (a_hat, q_hat, m_hat, train_loss) standard errors


_NEWTON_ITERS = 100
_NEWTON_TOL = 1e-12


@functools.partial(jax.jit, static_argnames=("task",))
def _pairs_from_normals(task, z, m, q, v, Q0):
    """Target pairs, prox centres, labels, label-consistent logits and ``V`` from normals.

    ``z``: (M, 2K + noise_dim) standard normals ``(u1, u2, xi)``;
    ``omega = sigma sqrt(q) u2``, ``h0 = (m/q) omega + sigma sqrt(Q0 - m^2/q) u1``.
    """
    K = task.n_pairs
    s2, s = _sigmas(task)
    u1, u2, u3 = z[:, :K], z[:, K : 2 * K], z[:, 2 * K :]
    csd = jnp.sqrt(jnp.maximum(Q0 - m * m / q, 1e-300))
    omega = s * jnp.sqrt(q) * u2
    h0 = (m / q) * omega + s * csd * u1
    Y, lab = _labels(task, h0, u3)
    V = jnp.broadcast_to(s2 * v, omega.shape)
    return Y, omega, lab, V, csd


@functools.partial(jax.jit, static_argnames=("task", "R"))
def _reduce(task, R, z, out):
    """Per-replicate means of ``sum s2 (-dg)``, ``sum s2 g^2``, ``sum s g u1`` and the loss."""
    K = task.n_pairs
    s2, s = _sigmas(task)
    u1 = z[:, :K]
    per = jnp.stack(
        [
            jnp.sum(s2 * (-out.dg), axis=-1),
            jnp.sum(s2 * out.g**2, axis=-1),
            jnp.sum(s * out.g * u1, axis=-1),
            out.loss,
        ],
        axis=-1,
    )
    return jnp.mean(per.reshape(R, -1, 4), axis=1)


def _output_side_raw(task, z, m, q, v, Q0, warm, mode):
    """Per-replicate means (R, 4), the prox points and objectives, ``sqrt(Q0 - m^2/q)``.

    ``z``: (R, N, 2K + noise_dim). ``mode``: ``"cold"`` (starts ``omega`` and the
    noisy logits), ``"warm"`` (start from ``warm = (h, f)`` of a previous call),
    ``"full"`` (cold, then the best of that and ``warm``, which must come from a call
    at the same ``(m, q, v)``; also returns how many problems found a lower
    minimum than ``warm``). ``warm = (h, objective, Hessian)``.
    """
    R, N, _ = z.shape
    zf = z.reshape(R * N, -1)
    f64 = jnp.float64
    Y, omega, lab, V, csd = _pairs_from_normals(task, zf, f64(m), f64(q), f64(v), f64(Q0))
    if mode == "warm":
        starts = warm[0][:, None, :]
    else:
        starts = jnp.stack([omega, lab], axis=1)
    P, Fv, H = channels._compact_minimize(task, Y, omega, V, starts, _NEWTON_ITERS, _NEWTON_TOL)
    n_better = 0
    if mode == "full":
        better = Fv < warm[1] - 1e-10 * (1.0 + jnp.abs(warm[1]))
        n_better = int(jnp.sum(better))
        if n_better == 0:
            P, Fv, H = warm
        else:
            P, Fv, H = channels._best_of(
                *(jnp.stack([a, b], 1) for a, b in zip((P, Fv, H), warm, strict=True))
            )
    out = channels._finish(channels._loss_task(task), Y, omega, V, P)  # exact Hessian at P
    return _reduce(task, R, zf, out), (P, Fv, H), csd, n_better


def _linear_output_side(task, alpha, Q0, m, q, v):
    """Closed form for the linear task (every average is Gaussian)."""
    w = channels.pair_weights(task.T)
    s2 = _tasks.pair_variances(task.T)
    den = 1.0 + 2.0 * w * s2 * v
    err = s2 * (Q0 - 2.0 * m + q) + task.noise  # E (y - omega)^2 per pair
    a_hat = alpha * float(np.sum(s2 * 2.0 * w / den))
    q_hat = 0.5 * alpha * float(np.sum(s2 * 4.0 * w**2 * err / den**2))
    train = float(np.sum(w * err / den**2))
    return OutputSide(a_hat, q_hat, a_hat, train, (0.0, 0.0, 0.0, 0.0))


def _stderr(x: np.ndarray) -> float:
    return float(np.std(x, ddof=1) / math.sqrt(len(x))) if len(x) > 1 else 0.0


class _OutputEvaluator:
    """Output side of a given task with fixed QMC points and a warm-started prox."""

    def __init__(self, task, alpha, Q0, n_qmc, n_rep, seed):
        self.task, self.alpha, self.Q0 = task, alpha, Q0
        self.linear = isinstance(task, _tasks.Linear)
        self.h = None
        self.n_better = 0
        self.n_calls = 0
        if not self.linear:
            dim = 2 * task.n_pairs + _noise_dim(task)
            self.z = jnp.asarray(qmc_normals(dim, n_qmc, n_rep, seed))

    def __call__(self, m, q, v, mode=None) -> OutputSide:
        self.n_calls += 1
        if self.linear:
            return _linear_output_side(self.task, self.alpha, self.Q0, m, q, v)
        if mode is None or self.h is None:
            mode = "cold" if self.h is None else "warm"
        means, self.h, csd, self.n_better = _output_side_raw(
            self.task, self.z, m, q, v, self.Q0, self.h, mode
        )
        means = np.asarray(means)
        csd = float(csd)
        a = self.alpha * means[:, 0]
        qh = 0.5 * self.alpha * means[:, 1]
        mh = self.alpha * means[:, 2] / csd
        lo = means[:, 3]
        return OutputSide(
            float(a.mean()),
            float(qh.mean()),
            float(mh.mean()),
            float(lo.mean()),
            (_stderr(a), _stderr(qh), _stderr(mh), _stderr(lo)),
        )


def output_side(
    task, alpha, Q0, m, q, v, *, n_qmc: int = 8192, n_rep: int = 4, seed: int = 0
) -> OutputSide:
    """One evaluation of the output side at ``(m, q, v)`` (see the module docstring)."""
    task = _check_task(task)
    alpha = _checks.positive("alpha", alpha)
    Q0 = _checks.positive("Q0", Q0)
    _check_overlaps(Q0, m, q)
    v = _checks.positive("v", v)
    return _OutputEvaluator(task, alpha, Q0, n_qmc, n_rep, seed)(m, q, v, mode="cold")


# ----------------------------------------------------------------------------
# Test error from overlaps
# ----------------------------------------------------------------------------


@functools.partial(jax.jit, static_argnames=("task",))
def _test_error_jit(task, z, Q0, m, q):
    R, N, _ = z.shape
    K = task.n_pairs
    z = z.reshape(R * N, -1)
    _, s = _sigmas(task)
    u1, u2, u3 = z[:, :K], z[:, K : 2 * K], z[:, 2 * K :]
    h0 = s * jnp.sqrt(Q0) * u1
    h = s * ((m / jnp.sqrt(Q0)) * u1 + jnp.sqrt(jnp.maximum(q - m * m / Q0, 0.0)) * u2)
    pred = task.output(_tasks.to_matrix(h, task.T))
    clean = task.output(_tasks.to_matrix(h0, task.T))
    noisy, _ = _labels(task, h0, u3)
    ax = tuple(range(1, pred.ndim))
    e0 = jnp.sum((clean - pred) ** 2, axis=ax) if ax else (clean - pred) ** 2
    e1 = jnp.sum((noisy - pred) ** 2, axis=ax) if ax else (noisy - pred) ** 2
    return jnp.mean(e0.reshape(R, N), axis=1), jnp.mean(e1.reshape(R, N), axis=1)


def _check_overlaps(Q0, m, q):
    q = _checks.nonnegative("q", q)
    m = float(m)
    if not math.isfinite(m) or m * m > q * Q0 * (1 + 1e-9) + 1e-300:
        raise ValueError(f"m must satisfy m^2 <= q Q0 (Cauchy-Schwarz), got m={m}, q={q}, Q0={Q0}")
    return m, q


class _TestErrors(NamedTuple):
    test_error: float
    test_error_noisy: float
    stderr: tuple


def _test_errors(task, Q0, m, q, n_qmc, n_rep, seed) -> _TestErrors:
    if isinstance(task, _tasks.Linear):
        w = channels.pair_weights(task.T)
        s2 = _tasks.pair_variances(task.T)
        e = float(np.sum(w * s2) * (Q0 - 2 * m + q))
        return _TestErrors(e, e + float(np.sum(w)) * task.noise, (0.0, 0.0))
    dim = 2 * task.n_pairs + _noise_dim(task)
    z = jnp.asarray(qmc_normals(dim, n_qmc, n_rep, seed + 7919))
    e0, e1 = _test_error_jit(task, z, jnp.float64(Q0), jnp.float64(m), jnp.float64(q))
    e0, e1 = np.asarray(e0), np.asarray(e1)
    return _TestErrors(float(e0.mean()), float(e1.mean()), (_stderr(e0), _stderr(e1)))


def test_error_from_overlaps(
    task, Q0: float, m: float, q: float, *, noisy: bool = False, n_qmc: int = 8192, seed: int = 0
) -> float:
    """``E||g(h0) - g(h)||^2`` with ``(h0_ab, h_ab) ~ N(0, sigma_ab^2 [[Q0, m], [m, q]])``.

    The test error of any symmetric ``S`` depends on it only through
    ``(Q0, m, q) = (Tr S0^2, Tr S S0, Tr S^2) / d`` (the pairs of fresh sequences
    are jointly Gaussian given ``S, S0``), so this also evaluates trained
    matrices. ``noisy=True`` compares with noisy labels instead. Closed form for
    the linear task, QMC (``n_qmc`` points) otherwise.
    """
    task = _check_task(task)
    Q0 = _checks.positive("Q0", Q0)
    m, q = _check_overlaps(Q0, m, q)
    te = _test_errors(task, Q0, m, q, n_qmc, 4, seed)
    return te.test_error_noisy if noisy else te.test_error


# ----------------------------------------------------------------------------
# Input side
# ----------------------------------------------------------------------------


class InputSide(NamedTuple):
    m: float
    q: float
    v: float
    rank_fraction: float
    Delta_eff: float
    c: float
    tau: float


def _spectrum(target, Delta, kink):
    return rmt.deformed_spectrum(target, Delta, breakpoints=(kink,))


def input_side(target, m_hat, q_hat, a_hat, lam, penalty="nuclear", *, Q0=None) -> InputSide:
    """Input side: overlaps of the spectral estimator ``F(c (S0 + sqrt(Delta_eff) W))``."""
    m_hat = _checks.positive("m_hat", m_hat)
    q_hat = _checks.nonnegative("q_hat", q_hat)
    a_hat = _checks.positive("a_hat", a_hat)
    lam = _checks.nonnegative("lam", lam)
    _checks.choice("penalty", penalty, PENALTIES)
    Delta = q_hat / m_hat**2
    c = m_hat / a_hat
    tau = lam / a_hat
    if penalty == "frobenius":
        Q0 = target.Q0 if Q0 is None else Q0
        k = c / (1.0 + tau)
        return InputSide(k * Q0, k * k * (Q0 + Delta), k / (2.0 * m_hat), 1.0, Delta, c, tau)
    spec = _spectrum(target, Delta, tau / c)
    x, w, h = np.asarray(spec.x), np.asarray(spec.w), np.asarray(spec.hilbert)
    f = np.maximum(c * x - tau, 0.0)
    q = float(np.sum(w * f * f))
    m = float(np.sum(w * f * (x - 2.0 * Delta * h)))
    v = float(np.sum(w * f * h)) / m_hat
    rank = float(np.sum(w[c * x > tau]))
    return InputSide(m, q, v, rank, Delta, c, tau)


# ----------------------------------------------------------------------------
# Fixed point
# ----------------------------------------------------------------------------


class _Invalid(Exception):
    pass


class _ZeroPhase(_Invalid):
    """The input side thresholds the whole spectrum of ``R`` away: ``S_hat = 0``."""

    def __init__(self, msg, output, inp):
        super().__init__(msg)
        self.output, self.input = output, inp


# ``(m, q, v)`` next to the origin, where the output side takes its ``S_hat -> 0`` limit
# (``omega -> 0``, ``V -> 0``: ``g`` becomes minus the loss gradient at zero preactivation)
_ORIGIN_EPS = 1e-8


def _origin(Q0):
    return np.array([0.0, _ORIGIN_EPS * Q0, _ORIGIN_EPS])


def _valid(x, Q0) -> bool:
    m, q, v = x
    return bool(np.all(np.isfinite(x)) and q > 0 and v > 0 and m * m < q * Q0)


def _relres(x, fx) -> float:
    return float(np.max(np.abs(fx - x) / np.maximum(np.abs(x), 1e-3)))


def _default_init(Q0):
    return np.array([0.3 * Q0, 0.5 * Q0, 1.0])


def _make_map(target, lam, penalty, Q0, out_eval):
    """The SE map ``(m, q, v) -> (m, q, v)``; raises ``_Invalid`` outside its domain."""

    def F(x, mode=None):
        o = out_eval(*x, mode=mode)
        if not (o.a_hat > 0 and o.m_hat > 0 and o.q_hat >= 0 and math.isfinite(o.q_hat)):
            raise _Invalid(f"a_hat={o.a_hat:.3g}, m_hat={o.m_hat:.3g}, q_hat={o.q_hat:.3g}")
        i = input_side(target, o.m_hat, o.q_hat, o.a_hat, lam, penalty, Q0=Q0)
        fx = np.array([i.m, i.q, i.v])
        if i.rank_fraction == 0.0 and i.q == 0.0:
            raise _ZeroPhase(f"input side gave S_hat = 0 (threshold {i.tau / i.c:.4g})", o, i)
        if not _valid(fx, Q0):
            raise _Invalid(f"input side gave (m, q, v) = {tuple(fx)}")
        return fx, o, i

    return F


_DEBUG = False


def _debug(*args):
    if _DEBUG:
        print("[se]", *args)


class _FixedPoint(NamedTuple):
    best: tuple | None  # (residual, x, OutputSide, InputSide)
    converged: bool
    n_iter: int
    fail_msg: str
    zero: tuple | None = None  # (OutputSide, InputSide) at the origin when S_hat = 0


_COARSE_PER_REP = 256
_MAX_STEP = 1.0
_COARSE_TOL = 1e-3


def _fixed_point(F, out_eval, x0, Q0, tol, max_iter, beta, anderson) -> _FixedPoint:
    """Damped Anderson iteration of the SE map ``F`` from ``x0 = (m, q, v)``.

    Steps that leave the domain (``q, v > 0``, ``m^2 < q Q0``) or make the output
    side invalid (``a_hat <= 0``...) are halved back towards the last valid point.
    Before accepting a fixed point, the prox is re-solved from the cold starts:
    if some QMC problem finds a lower minimum than its warm-started one, the
    iteration goes on from there (the SE needs the global prox minimum).

    The first time the input side thresholds everything away, the map is evaluated
    at the origin ``S_hat -> 0``: if the whole spectrum is thresholded there too,
    ``S_hat = 0`` is the fixed point (the zero phase, returned in ``zero``: the
    top eigenvalue of the loss gradient at ``S = 0`` is below ``lam``); otherwise,
    if no valid point has been seen yet, the iteration restarts from its image.
    """

    # Anderson mixing acts on y = (m / Q0, log(q / Q0), log v): comparable scales, and v
    # (which spans orders of magnitude at small lam) stays positive.
    def to_y(x):
        return np.array([x[0] / Q0, math.log(x[1] / Q0), math.log(x[2])])

    def to_x(y):
        y = np.clip(y, -50.0, 50.0)
        return np.array([y[0] * Q0, Q0 * math.exp(y[1]), math.exp(y[2])])

    x = x0.copy()
    hist_y, hist_r = [], []
    best = None
    n_iter = 0
    residual = math.inf
    converged = False
    last_good = None
    fail_msg = ""
    step = beta
    origin_tried = False
    while n_iter < max_iter:
        n_iter += 1
        try:
            fx, o, i = F(x)
        except _Invalid as err:
            fail_msg = str(err)
            _debug("invalid", x, fail_msg)
            hist_y, hist_r = [], []
            if isinstance(err, _ZeroPhase) and not origin_tried:
                origin_tried = True
                n_iter += 1
                try:
                    fx0, _, _ = F(_origin(Q0))
                except _ZeroPhase as zero:
                    return _FixedPoint(None, True, n_iter, "", (zero.output, zero.input))
                except _Invalid:
                    pass
                else:
                    if last_good is None:
                        x = fx0
                        continue
            if last_good is None:
                # shrink v and move towards a safer point
                x = np.array([x[0] * 0.5, x[1], x[2] * 0.5])
                continue
            step *= 0.5
            y0, fy0 = last_good
            x = to_x(y0 + step * (fy0 - y0))
            continue
        residual = _relres(x, fx)
        if best is None or residual < best[0]:
            best = (residual, x.copy(), o, i)
        y, fy = to_y(x), to_y(fx)
        last_good = (y, fy)
        if residual < tol:
            # confirm with a multi-start prox (global minimum) before accepting: if some
            # problems find a lower minimum from the cold starts, continue from there
            if not out_eval.linear and out_eval.h is not None:
                fx2, o2, i2 = F(x, mode="full")
                n_iter += 1
                if out_eval.n_better > 0:
                    residual = _relres(x, fx2)
                    x = to_x(y + beta * (to_y(fx2) - y))
                    hist_y, hist_r = [], []
                    continue
            converged = True
            best = (residual, x.copy(), o, i)
            break
        r = fy - y
        step = min(beta, 2 * step) if step < beta else beta
        hist_y.append(y)
        hist_r.append(r)
        if len(hist_y) > anderson + 1:
            hist_y.pop(0)
            hist_r.pop(0)
        y_new = y + step * r
        if anderson > 0 and len(hist_y) >= 2:
            dY = np.diff(np.array(hist_y), axis=0).T
            dR = np.diff(np.array(hist_r), axis=0).T
            gamma, *_ = np.linalg.lstsq(dR, r, rcond=None)
            y_aa = y + step * r - (dY + step * dR) @ gamma
            # outside the domain (typically m^2 >= q Q0 near perfect recovery): pull the
            # Anderson step back towards the damped one until it is valid
            t = 1.0
            while t > 1e-3 and not (
                np.all(np.isfinite(y_aa)) and _valid(to_x(y_new + t * (y_aa - y_new)), Q0)
            ):
                t *= 0.5
            if t > 1e-3:
                y_new = y_new + t * (y_aa - y_new)
            else:
                _debug("AA rejected", to_x(y_aa))
                hist_y, hist_r = hist_y[-1:], hist_r[-1:]
        # trust region: |dy| <= 1 per step (a factor e in q or v, Q0 in m)
        dy = y_new - y
        big = np.max(np.abs(dy))
        if big > _MAX_STEP:
            y_new = y + dy * (_MAX_STEP / big)
            hist_y, hist_r = hist_y[-1:], hist_r[-1:]
        x_new = to_x(y_new)
        if not _valid(x_new, Q0):
            _debug("step rejected", x_new)
            x_new = to_x(y + 0.5 * step * r)
            if not _valid(x_new, Q0):
                x_new = fx.copy()
        x = x_new

    return _FixedPoint(best, converged, n_iter, fail_msg)


def solve(
    task,
    target,
    alpha: float,
    lam: float,
    penalty: str = "nuclear",
    *,
    init=None,
    tol: float = 1e-6,
    max_iter: int = 300,
    damping: float = 0.5,
    anderson: int = 5,
    n_qmc: int = 8192,
    n_rep: int = 4,
    seed: int = 0,
    on_fail: str = "warn",
    _warm_prox: dict | None = None,
) -> SEResult:
    r"""Solve the state evolution at ``(alpha, lam)``: the ERM's asymptotic metrics.

    Args:
      task: :class:`attnlib.tasks.Task` (loss, output function, label noise).
      target: :class:`attnlib.targets.Target` (limiting spectrum of ``S0``).
      alpha: sample ratio ``n / d^2 > 0``.
      lam: penalty strength ``>= 0`` (``lam = 0`` with the nuclear penalty is the
        minimum-loss PSD problem; below interpolation its fixed point may not exist).
      penalty: ``"nuclear"`` (trace + PSD, the factorized student) or ``"frobenius"``.
      init: starting ``(m, q, v)`` or a previous :class:`SEResult` (warm start).
      tol: tolerance on the relative change of ``(m, q, v)`` under one SE map.
      max_iter: maximal number of SE maps.
      damping: weight of the old iterate in the damped step (``0 <= damping < 1``).
      anderson: Anderson-acceleration memory (0 = plain damped iteration).
      n_qmc, n_rep, seed: QMC points (``n_qmc / n_rep`` a power of 2), scramblings, seed.
      on_fail: ``"warn"`` (:class:`SEConvergenceWarning`) or ``"raise"``
        (``RuntimeError``) when the fixed point is not reached.

    Returns:
      :class:`SEResult`. Where ``lam`` is at least ``m_hat`` times the top edge of
      ``R`` at ``S_hat -> 0`` (the largest eigenvalue of the loss gradient at
      ``S = 0``), the minimiser is ``S_hat = 0``: the result then has
      ``m = q = v = 0``, ``rank_fraction = 0`` and the conjugates of that limit.
    """
    task = _check_task(task)
    alpha = _checks.positive("alpha", alpha)
    lam = _checks.nonnegative("lam", lam)
    _checks.choice("penalty", penalty, PENALTIES)
    tol = _checks.positive("tol", tol)
    max_iter = _checks.integer("max_iter", max_iter, 1)
    damping = _checks.in_interval("damping", damping, 0.0, 1.0, low_open=False, high_open=True)
    anderson = _checks.integer("anderson", anderson, 0)
    n_qmc = _checks.integer("n_qmc", n_qmc, 2)
    n_rep = _checks.integer("n_rep", n_rep, 1)
    _checks.choice("on_fail", on_fail, ("warn", "raise"))
    if not hasattr(target, "measure") or not hasattr(target, "Q0"):
        raise ValueError(f"target must be an attnlib.targets.Target, got {target!r}")
    Q0 = float(target.Q0)
    if not isinstance(task, _tasks.Linear):
        qmc_normals(2, n_qmc, n_rep)  # validates n_qmc / n_rep
    if init is None:
        x0 = _default_init(Q0)
    elif isinstance(init, SEResult):
        x0 = np.array([init.m, init.q, init.v], dtype=float)
    else:
        x0 = np.asarray(init, dtype=float).reshape(-1)
        if x0.shape != (3,):
            raise ValueError(f"init must be (m, q, v) or an SEResult, got {init!r}")
    if not _valid(x0, Q0):
        raise ValueError(f"init (m, q, v) = {tuple(x0)} must have q > 0, v > 0 and m^2 < q Q0")

    beta = 1.0 - damping

    def make_map(out_eval):
        return _make_map(target, lam, penalty, Q0, out_eval)

    n_used = 0
    if init is None and not isinstance(task, _tasks.Linear) and n_qmc // n_rep > _COARSE_PER_REP:
        # cold start: locate the fixed point roughly with few QMC points first
        coarse = _OutputEvaluator(task, alpha, Q0, _COARSE_PER_REP * n_rep, n_rep, seed)
        fp = _fixed_point(make_map(coarse), coarse, x0, Q0, _COARSE_TOL, max_iter, beta, anderson)
        n_used = fp.n_iter
        if fp.best is not None and fp.best[0] < 0.1:
            x0 = fp.best[1]
    out_eval = _OutputEvaluator(task, alpha, Q0, n_qmc, n_rep, seed)
    prox_key = (task, Q0, n_qmc, n_rep, seed)
    if _warm_prox is not None and _warm_prox.get("key") == (*prox_key, *x0):
        # the prox points do not depend on alpha: those of the previous point of a
        # learning curve, at exactly this (m, q, v), are the solution of the first map
        out_eval.h = _warm_prox["h"]
    fp = _fixed_point(
        make_map(out_eval), out_eval, x0, Q0, tol, max(1, max_iter - n_used), beta, anderson
    )
    if _warm_prox is not None and fp.converged and fp.zero is None and out_eval.h is not None:
        _warm_prox.update(key=(*prox_key, *fp.best[1]), h=out_eval.h)
    best, converged, n_iter, fail_msg = fp.best, fp.converged, fp.n_iter + n_used, fp.fail_msg
    if fp.zero is not None:  # the zero phase: S_hat = 0 exactly, m = q = v = 0
        best = (0.0, np.zeros(3), *fp.zero)
    if best is None:
        msg = f"state evolution failed at alpha={alpha}, lam={lam}: {fail_msg}"
        raise RuntimeError(msg)
    residual, x, o, i = best
    if not converged:
        msg = (
            f"state evolution did not converge at alpha={alpha}, lam={lam}, penalty={penalty}: "
            f"residual {residual:.2e} > tol {tol:.1e} after {n_iter} iterations"
        )
        if on_fail == "raise":
            raise RuntimeError(msg)
        warnings.warn(msg, SEConvergenceWarning, stacklevel=2)
    m, q, v = (float(t) for t in x)
    te = _test_errors(task, Q0, m, q, n_qmc, n_rep, seed)
    rel = [
        se / max(abs(val), 1e-12)
        for se, val in zip(o.stderr, (o.a_hat, o.q_hat, o.m_hat, o.train_loss), strict=True)
    ]
    rel.append(te.stderr[0] / max(te.test_error, 1e-12))
    return SEResult(
        alpha=alpha,
        lam=lam,
        penalty=penalty,
        m=m,
        q=q,
        v=v,
        m_hat=o.m_hat,
        q_hat=o.q_hat,
        a_hat=o.a_hat,
        Delta_eff=i.Delta_eff,
        tau=i.tau,
        c=i.c,
        Q0=Q0,
        train_loss=o.train_loss,
        test_error=te.test_error,
        test_error_noisy=te.test_error_noisy,
        mse=Q0 - 2 * m + q,
        rank_fraction=i.rank_fraction,
        converged=bool(converged),
        residual=float(residual),
        n_iter=int(n_iter),
        integration_error=float(max(rel)),
    )


def learning_curve(
    task, target, alphas, lam: float, penalty: str = "nuclear", **kw
) -> LearningCurve:
    """:func:`solve` along ``alphas`` (in the given order), warm-starting each point."""
    alphas = np.asarray(alphas, dtype=float).reshape(-1)
    if alphas.size == 0 or not np.all(np.isfinite(alphas)) or np.any(alphas <= 0):
        raise ValueError(f"alphas must be a non-empty list of finite values > 0, got {alphas}")
    init = kw.pop("init", None)
    results = []
    warm_prox = {}
    for a in alphas:
        r = solve(task, target, float(a), lam, penalty, init=init, _warm_prox=warm_prox, **kw)
        results.append(r)
        init = r if r.converged else init
    fields = {}
    for name in LearningCurve._fields:
        if name == "penalty":
            fields[name] = penalty
        else:
            fields[name] = np.array([getattr(r, name) for r in results])
    return LearningCurve(**fields)


def optimal_lambda(
    task,
    target,
    alpha: float,
    penalty: str = "nuclear",
    *,
    bounds=(1e-4, 10.0),
    xatol: float = 0.02,
    noisy: bool = False,
    **kw,
):
    """``lam`` minimising the SE test error at ``alpha`` (bounded search on ``log lam``).

    Returns ``(lam_opt, SEResult at lam_opt)``. ``noisy=True`` minimises
    ``test_error_noisy`` (the same minimiser: label noise adds a constant for
    noise on the outputs).
    """
    task = _check_task(task)
    alpha = _checks.positive("alpha", alpha)
    lo = _checks.positive("bounds[0]", bounds[0])
    hi = _checks.positive("bounds[1]", bounds[1])
    if not lo < hi:
        raise ValueError(f"bounds must satisfy 0 < low < high, got {bounds}")
    state = {"init": kw.pop("init", None)}
    cache = {}

    def objective(loglam):
        r = solve(task, target, alpha, math.exp(loglam), penalty, init=state["init"], **kw)
        if r.converged:
            state["init"] = r
        cache[loglam] = r
        return r.test_error_noisy if noisy else r.test_error

    res = scipy.optimize.minimize_scalar(
        objective, bounds=(math.log(lo), math.log(hi)), method="bounded", options={"xatol": xatol}
    )
    r = cache.get(res.x)
    if r is None:
        objective(res.x)
        r = cache[res.x]
    return math.exp(res.x), r
