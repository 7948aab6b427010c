r"""Power-law targets, sequential recovery of their modes, and scaling laws.

The target family (:class:`PowerLawModes`). ``S0`` has ``n_modes`` eigenvalue groups
("modes") ``k = 1..n_modes`` with eigenvalue ``lambda_k = A k^{-gamma}`` and multiplicity
``pi_k d``, ``pi_k = kappa0 k^{-beta} / sum_j j^{-beta}`` (``beta = share_exponent``; the
default ``beta = 0`` splits the rank ``kappa0 d`` equally), the remaining ``(1 - kappa0) d``
eigenvalues zero, Haar eigenvectors, and ``A`` fixed by ``Q0 = sum_k pi_k lambda_k^2 = 1``.
Every group is extensive, so the large-``d`` limit at fixed ``n_modes`` is an atomic
spectral measure (no outliers) and the state evolution applies unchanged. The
counting function ``rho(t) = sum_{lambda_k > t} pi_k`` grows like ``t^{-r}`` with

    r = (1 - beta) / gamma,

which is the only property of the family that the exponents below depend on, in the
window ``1 << k*(t) << n_modes`` of thresholds ``t`` (``k*(t)`` the number of modes
above ``t``).

Recovered modes. In the state evolution the learned matrix is ``S_hat = F(R)`` with
``R = S0 + sqrt(Delta_eff) W_goe`` and ``f(x) = (c x - tau)_+``: the eigenvectors of ``R``
with eigenvalue above ``t = tau / c`` are kept. Writing ``omega(x) = u + i v`` for the
subordination function at ``x + i0`` (``u = x - Delta h_R(x)``, ``v = pi Delta rho_R(x)``),
``G_R(x) = sum_k pi_k / (omega - lambda_k)`` (plus the zero eigenvalues), so the density
of ``R`` splits into the spectral components of the modes, ``rho_R = sum_k rho_k + rho_null``
with

    rho_k(x) / rho_R(x) = pi_k Delta / ((u - lambda_k)^2 + v^2) = E[ ||P_k v_x||^2 | x ],

``P_k`` the projector on the eigenspace of mode ``k`` and ``v_x`` a unit eigenvector of ``R``
at ``x`` (the share of mode ``k`` among the eigenvectors at ``x``). The learned fraction of
mode ``k`` is ``phi_k = int_{x > t} rho_k / pi_k``, the limit of
``||P_+ P_k||_F^2 / (pi_k d)`` with ``P_+`` the projector on the range of ``S_hat``. A mode
is *recovered* when ``phi_k > 1/2`` (:func:`recovered_modes`); the same
fractions of a trained matrix are :func:`recovered_modes_trained`.

Scaling laws. :func:`excess_risk_curve` runs the state evolution along ``alpha`` with a
penalty schedule ``lam = lam0 (alpha / alpha_ref)^{-ell}`` (:class:`LamSchedule`; at fixed
``d``, ``n = alpha d^2`` so this is ``lam ~ n^{-ell}``), :func:`fit_power_law` fits
``e - e0 ~ C alpha^{-f}`` by least squares in log-log coordinates, and
:func:`predicted_exponent` gives the derived ``f`` (derivation in the book's chapter 5).

LASSO comparison (vector compressed sensing). ``y = A x0 + sqrt(noise) w`` with ``A`` an
``n x N`` matrix of i.i.d. ``N(0, 1/N)`` entries (each measurement has variance
``||x0||^2 / N``, like a pre-activation ``h``), ``delta = n / N``, and the LASSO
``min_x (1/2) ||y - A x||^2 + lam ||x||_1``. The entries of ``x0`` follow the target's
spectral measure (a fraction ``pi_k`` of the entries equals ``lambda_k``), so the vector
and the matrix problems share their "spectrum". The state evolution of Bayati and
Montanari / Donoho, Maleki and Montanari (:func:`lasso_se`) reads, with the soft
threshold ``eta(x; theta) = sign(x) (|x| - theta)_+`` and ``X = X0 + tau Z``::

    tau^2 = (noise + E[(eta(X; theta) - X0)^2]) / delta,
    theta = lam / (delta - P(|X| > theta)),

the second line being the calibration between ``lam`` and the threshold (the LASSO
normalisation above is the textbook one with ``A -> A / sqrt(delta)``,
``lam -> lam / delta``, ``noise -> noise / delta``). :func:`lasso_solve` is a small
FISTA solver used to check it at finite ``N``.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.optimize
import scipy.special

from attnlib import _checks
from attnlib.targets import SpectralMeasure, Target, haar_orthogonal

__all__ = [
    "PowerLawModes",
    "RecoveredModes",
    "recovered_modes",
    "recovered_modes_trained",
    "LamSchedule",
    "ExcessRiskCurve",
    "excess_risk_curve",
    "PowerLawFit",
    "fit_power_law",
    "ExponentPrediction",
    "predicted_exponent",
    "LassoSE",
    "LassoFit",
    "lasso_se",
    "lasso_curve",
    "lasso_solve",
    "lasso_data",
    "lasso_recovered_fractions",
]


# ----------------------------------------------------------------------------
# The target family
# ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PowerLawModes(Target):
    r"""``n_modes`` extensive eigenvalue groups with ``lambda_k = A k^{-gamma}``, ``Q0 = 1``.

    Mode ``k`` (``k = 1..n_modes``, largest first) has eigenvalue ``lambda_k = A k^{-gamma}``
    and multiplicity ``pi_k d`` with ``pi_k = kappa0 k^{-share_exponent} / Z``,
    ``Z = sum_j j^{-share_exponent}`` (equal shares of the rank ``kappa0 d`` by default);
    the other ``(1 - kappa0) d`` eigenvalues are 0; eigenvectors are Haar. The scale ``A``
    makes ``Q0 = sum_k pi_k lambda_k^2 = 1``. The large-``d`` limit at fixed ``n_modes``
    is the atomic measure :meth:`measure` (no outliers).

    Attributes:
      gamma: decay exponent of the eigenvalues, ``> 0``.
      n_modes: number of groups, ``>= 1``.
      kappa0: rank fraction in ``(0, 1]``.
      share_exponent: ``beta`` in ``pi_k ~ k^{-beta}``, finite (0: equal shares).
    """

    gamma: float = 1.5
    n_modes: int = 8
    kappa0: float = 1.0
    share_exponent: float = 0.0

    def __post_init__(self):
        _checks.positive("gamma", self.gamma)
        _checks.integer("n_modes", self.n_modes, 1)
        _checks.in_interval("kappa0", self.kappa0, 0.0, 1.0)
        b = float(self.share_exponent)
        if not math.isfinite(b):
            raise ValueError(f"share_exponent must be a finite real number, got {b!r}")

    # --- the modes -------------------------------------------------------------------------

    @property
    def r(self) -> float:
        """Counting exponent ``r = (1 - share_exponent) / gamma``.

        The rank fraction of the modes above ``t`` grows like ``t^{-r}``.
        """
        return (1.0 - self.share_exponent) / self.gamma

    def mode_weights(self) -> np.ndarray:
        """``pi_k`` (``n_modes``,), summing to ``kappa0``."""
        k = np.arange(1, self.n_modes + 1, dtype=float)
        w = k ** (-float(self.share_exponent))
        return self.kappa0 * w / w.sum()

    def mode_eigenvalues(self) -> np.ndarray:
        """``lambda_k = A k^{-gamma}`` (``n_modes``,), decreasing; ``sum pi_k lambda_k^2 = 1``."""
        k = np.arange(1, self.n_modes + 1, dtype=float)
        shape = k ** (-float(self.gamma))
        A = 1.0 / math.sqrt(float(np.sum(self.mode_weights() * shape**2)))
        return A * shape

    def mode_dims(self, d: int) -> np.ndarray:
        """Integer multiplicities ``m_k`` at size ``d`` (largest remainders of ``pi_k d``).

        Raises ``ValueError`` if ``d`` is too small for every mode to get a dimension.
        """
        d = _checks.integer("d", d, 1)
        p0 = max(1, int(round(self.kappa0 * d)))
        share = self.mode_weights() / self.kappa0 * p0
        m = np.floor(share).astype(int)
        rest = p0 - int(m.sum())
        if rest > 0:
            order = np.argsort(-(share - m), kind="stable")
            m[order[:rest]] += 1
        if np.any(m < 1):
            raise ValueError(
                f"d must be large enough for every mode to have dimension >= 1 "
                f"(n_modes={self.n_modes}, kappa0={self.kappa0}), got d={d}"
            )
        return m

    def mode_labels(self, d: int) -> np.ndarray:
        """Mode index (0-based) of each eigenvector column used by :meth:`sample`; ``-1`` for 0."""
        m = self.mode_dims(d)
        lab = np.full(d, -1, dtype=int)
        lab[: m.sum()] = np.repeat(np.arange(self.n_modes), m)
        return lab

    def sample_eigenvalues(self, d: int) -> np.ndarray:
        """The ``d`` eigenvalues of :meth:`sample`, in the column order of :meth:`mode_labels`."""
        lab = self.mode_labels(d)
        lam = np.zeros(d)
        nz = lab >= 0
        lam[nz] = self.mode_eigenvalues()[lab[nz]]
        return lam

    # --- Target interface ------------------------------------------------------------------

    def sample(self, key, d):
        """``S0 = O diag(sample_eigenvalues(d)) O^T`` with ``O = haar_orthogonal(key, d)``."""
        lam = jnp.asarray(self.sample_eigenvalues(d))
        U = haar_orthogonal(key, d)
        S = (U * lam[None, :]) @ U.T
        return (S + S.T) / 2

    def measure(self, n_atoms: int = 4000) -> SpectralMeasure:
        """The exact limit (``n_atoms`` is ignored): ``pi_k`` at ``lambda_k``, the rest at 0."""
        atoms = self.mode_eigenvalues()[::-1]
        weights = self.mode_weights()[::-1]
        if self.kappa0 < 1.0:
            atoms = np.concatenate([[0.0], atoms])
            weights = np.concatenate([[1.0 - self.kappa0], weights])
        return SpectralMeasure(atoms, weights)

    def eigenvalues(self, d: int) -> np.ndarray:
        """The ``d`` eigenvalues of :meth:`sample`, ascending."""
        return np.sort(self.sample_eigenvalues(d))

    @property
    def Q0(self) -> float:
        return 1.0

    def counting(self, t) -> np.ndarray:
        """``rho(t) = sum_{lambda_k > t} pi_k``: the rank fraction of the modes above ``t``."""
        t = np.asarray(t, dtype=float)
        lam, pi = self.mode_eigenvalues(), self.mode_weights()
        return np.sum(pi * (lam > t[..., None]), axis=-1)

    def threshold_bias(self, t) -> np.ndarray:
        """``B(t) = sum_k pi_k min(lambda_k, t)^2``: the soft-threshold error at noise 0."""
        t = np.asarray(t, dtype=float)
        lam, pi = self.mode_eigenvalues(), self.mode_weights()
        return np.sum(pi * np.minimum(lam, t[..., None]) ** 2, axis=-1)


# ----------------------------------------------------------------------------
# Recovered modes: theory (state evolution) and trained matrices
# ----------------------------------------------------------------------------


def _modes_of(target) -> tuple[np.ndarray, np.ndarray]:
    """Non-zero atoms of the target's measure (the modes), decreasing, and their masses."""
    if isinstance(target, PowerLawModes):
        return target.mode_eigenvalues(), target.mode_weights()
    a, w = _law_of(target)
    keep = (a != 0) & (w > 0)
    if not keep.any():
        raise ValueError("target has no non-zero eigenvalue group (no modes to recover)")
    if keep.sum() > 5000:
        raise ValueError("target must have an atomic spectrum with at most 5000 distinct modes")
    a, w = a[keep], w[keep]
    order = np.argsort(-a, kind="stable")
    return a[order], w[order]


class SpectralSummary(NamedTuple):
    """Large-``d`` quantities of ``F(R)``, ``R = S0 + sqrt(Delta) W_goe``, ``f(x) = (c x - tau)_+``.

    ``mse = ||F(R) - S0||_F^2 / d`` (Stein form, no cancellation between ``O(1)`` terms),
    ``div = div F / d^2 = int rho_R f h_R``, ``rank_fraction`` (mass above ``tau / c``);
    per mode (decreasing eigenvalue order): ``fractions`` ``phi_k``, the fraction of
    mode ``k``'s spectral component above ``tau / c`` (the limit of
    ``||P_+ P_k||_F^2 / Tr P_k``), and ``strengths``, the learned part of the mode,
    ``Tr(P_k F(R)) / Tr(P_k S0)``.
    """

    Delta: float
    threshold: float
    mse: float
    div: float
    rank_fraction: float
    fractions: np.ndarray
    strengths: np.ndarray


def spectral_summary(
    target, Delta: float, tau: float, c: float = 1.0, *, n_nodes: int = 400
) -> SpectralSummary:
    r"""Error, divergence and per-mode recovered fractions of the spectral soft threshold.

    With ``u = x - Delta h_R(x)`` and ``v = pi Delta rho_R(x)`` (``omega(x + i0) = u + i v``)
    the share of mode ``k`` among the eigenvectors of ``R`` at ``x`` is
    ``pi_k Delta / ((u - lambda_k)^2 + v^2)`` (the shares of all atoms sum to 1 on the
    support: that is the equation defining ``v``). The error uses Stein's identity for
    the GOE noise, ``mse = int rho_R (f - x)^2 + 4 Delta int rho_R f h_R - Delta``.
    Quadrature: :func:`attnlib.rmt.deformed_spectrum` with a breakpoint at ``tau / c``.
    """
    from attnlib import rmt

    Delta = _checks.positive("Delta", Delta)
    tau = _checks.nonnegative("tau", tau)
    c = _checks.positive("c", c)
    n_nodes = _checks.integer("n_nodes", n_nodes, 8)
    lam_k, pi_k = _modes_of(target)
    t = tau / c
    spec = rmt.deformed_spectrum(target, Delta, n_nodes, breakpoints=(t,))
    x, w, rho, h = (
        np.asarray(a, dtype=float) for a in (spec.x, spec.w, spec.density, spec.hilbert)
    )
    f = np.maximum(c * x - tau, 0.0)
    div = float(np.sum(w * f * h))
    mse = float(np.sum(w * (f - x) ** 2) + 4.0 * Delta * div - Delta)
    above = x > t
    u = x[above] - Delta * h[above]
    v = np.pi * Delta * rho[above]
    share = pi_k[None, :] * Delta / ((u[:, None] - lam_k[None, :]) ** 2 + v[:, None] ** 2)
    fractions = np.clip((w[above] @ share) / pi_k, 0.0, 1.0)
    strengths = ((w[above] * f[above]) @ share) / (pi_k * lam_k)
    return SpectralSummary(Delta, t, mse, div, float(np.sum(w[above])), fractions, strengths)


class RecoveredModes(NamedTuple):
    """Which modes are learned.

    ``count``: number of modes with ``fractions > level``; ``fractions`` (``n_modes``,
    decreasing eigenvalue order): learned fraction ``phi_k`` of each mode (share of its
    eigenspace inside the range of ``S_hat``); ``strengths``: ``Tr(P_k S_hat) / Tr(P_k S0)``;
    ``threshold``: ``tau / c`` (theory) or the eigenvalue cut used (trained); ``level``.
    """

    count: int
    fractions: np.ndarray
    strengths: np.ndarray
    threshold: float
    level: float


def recovered_modes(target, se_result, *, level: float = 0.5, n_nodes: int = 400) -> RecoveredModes:
    """Modes recovered at a state-evolution fixed point (:func:`attnlib.se.solve` result).

    Mode ``k`` is recovered when more than ``level`` of its spectral component in
    ``R = S0 + sqrt(Delta_eff) W_goe`` lies above ``tau / c`` (module docstring).
    """
    level = _checks.in_interval("level", level, 0.0, 1.0, high_open=True)
    for name in ("Delta_eff", "tau", "c"):
        if not hasattr(se_result, name):
            raise ValueError(f"se_result must be an attnlib.se.SEResult, got {type(se_result)!r}")
    if getattr(se_result, "penalty", "nuclear") != "nuclear":
        raise ValueError("recovered_modes needs the nuclear penalty (a threshold tau / c)")
    s = spectral_summary(target, se_result.Delta_eff, se_result.tau, se_result.c, n_nodes=n_nodes)
    return RecoveredModes(
        int(np.sum(s.fractions > level)), s.fractions, s.strengths, s.threshold, level
    )


def recovered_modes_trained(
    S_hat, S0, target, *, level: float = 0.5, rtol: float = 1e-6
) -> RecoveredModes:
    """Modes recovered by a trained matrix ``S_hat`` for the target matrix ``S0``.

    The eigenvectors of ``S0`` are grouped by the mode eigenvalue they are closest to
    (``target``'s non-zero atoms; eigenvalues closer to 0 are the null space); ``P_+``
    projects on the eigenvectors of ``S_hat`` with eigenvalue above ``rtol`` times its
    largest one; ``fractions[k] = ||P_+ U_k||_F^2 / m_k`` with ``U_k`` the ``m_k``
    eigenvectors of mode ``k``: the finite-``d`` version of ``phi_k``.
    """
    level = _checks.in_interval("level", level, 0.0, 1.0, high_open=True)
    rtol = _checks.positive("rtol", rtol)
    S0 = np.asarray(_checks.finite_array("S0", S0, ndim=2), dtype=float)
    d = S0.shape[0]
    S_hat = np.asarray(_checks.finite_array("S_hat", S_hat, ndim=2, shape=(d, d)), dtype=float)
    if S0.shape != (d, d):
        raise ValueError(f"S0 must be square, got shape {S0.shape}")
    lam_k, _ = _modes_of(target)
    S_hat = (S_hat + S_hat.T) / 2
    e0, U0 = np.linalg.eigh((S0 + S0.T) / 2)
    cand = np.concatenate([lam_k, [0.0]])
    lab = np.argmin(np.abs(e0[:, None] - cand[None, :]), axis=1)
    e1, U1 = np.linalg.eigh(S_hat)
    top = float(np.max(np.abs(e1))) if e1.size else 0.0
    cut = rtol * top
    Up = U1[:, e1 > cut]
    proj = (Up.T @ U0) ** 2  # (n_kept, d): squared overlaps
    col = proj.sum(axis=0)
    diag = np.einsum("ij,ik,kj->j", U0, S_hat, U0)  # u_i^T S_hat u_i
    fr = np.full(lam_k.size, np.nan)
    st = np.full(lam_k.size, np.nan)
    for k in range(lam_k.size):
        sel = lab == k
        if sel.any():
            fr[k] = float(col[sel].mean())
            st[k] = float(diag[sel].mean() / lam_k[k])
    return RecoveredModes(int(np.sum(fr > level)), fr, st, cut, level)


# ----------------------------------------------------------------------------
# Power-law fits and derived exponents
# ----------------------------------------------------------------------------


class PowerLawFit(NamedTuple):
    """Least-squares fit of ``y = C x^{-exponent}`` in log-log coordinates.

    Error model: ``log y_i = log C - exponent log x_i + eps_i`` with i.i.d. centred
    ``eps_i`` of unknown variance ``s^2``, estimated from the residuals with ``n - 2``
    degrees of freedom; ``stderr = s / sqrt(sum_i (log x_i - mean log x)^2)`` is the
    ordinary-least-squares standard error of the slope. A deterministic curve (state
    evolution) is not a pure power law: it has steps where modes enter (correlated
    residuals) and a slowly drifting local slope (corrections to scaling at the ends of
    the window). ``drift`` measures the latter: half the difference between the
    exponents fitted on the first and on the second half of the points (``0`` for fewer
    than 6 points). ``uncertainty = sqrt(stderr^2 + drift^2)`` is the error bar to
    compare a derived exponent with.

    Attributes: ``exponent``, ``stderr``, ``drift``, ``uncertainty``, ``prefactor`` (``C``),
    ``n`` (points), ``log_residual_rms`` (``s``), ``x_range`` (``(min x, max x)``).
    """

    exponent: float
    stderr: float
    drift: float
    uncertainty: float
    prefactor: float
    n: int
    log_residual_rms: float
    x_range: tuple


def _ols(lx, ly):
    mx = lx.mean()
    sxx = float(np.sum((lx - mx) ** 2))
    if sxx <= 0:
        raise ValueError("x must take at least two distinct values in the window")
    slope = float(np.sum((lx - mx) * (ly - ly.mean())) / sxx)
    icpt = float(ly.mean() - slope * mx)
    res = ly - (icpt + slope * lx)
    s = float(math.sqrt(np.sum(res**2) / (lx.size - 2)))
    return slope, icpt, s, s / math.sqrt(sxx)


def fit_power_law(x, y, *, x_min: float | None = None, x_max: float | None = None) -> PowerLawFit:
    """Fit ``y ~ C x^{-exponent}`` (decay exponent, positive for decreasing ``y``).

    Args:
      x, y: 1-d arrays of the same length, ``x > 0`` and ``y > 0`` (finite).
      x_min, x_max: optional window; only points with ``x_min <= x <= x_max`` are used.

    Returns:
      :class:`PowerLawFit` (see it for the error model). Needs at least 3 points.
    """
    x = np.asarray(_checks.finite_array("x", x, ndim=1), dtype=float)
    y = np.asarray(_checks.finite_array("y", y, ndim=1, shape=(x.shape[0],)), dtype=float)
    if np.any(x <= 0):
        raise ValueError("x must be > 0 for a log-log fit")
    if np.any(y <= 0):
        raise ValueError("y must be > 0 for a log-log fit (subtract e0 only where e > e0)")
    keep = np.ones(x.shape, dtype=bool)
    if x_min is not None:
        keep &= x >= _checks.positive("x_min", x_min)
    if x_max is not None:
        keep &= x <= _checks.positive("x_max", x_max)
    if keep.sum() < 3:
        raise ValueError(f"fit_power_law needs at least 3 points in the window, got {keep.sum()}")
    order = np.argsort(x[keep])
    lx, ly = np.log(x[keep][order]), np.log(y[keep][order])
    n = lx.size
    slope, icpt, s, se_ = _ols(lx, ly)
    drift = 0.0
    if n >= 6:
        h = (n + 1) // 2
        drift = 0.5 * abs(_ols(lx[:h], ly[:h])[0] - _ols(lx[n - h :], ly[n - h :])[0])
    return PowerLawFit(
        exponent=-slope,
        stderr=se_,
        drift=drift,
        uncertainty=math.sqrt(se_**2 + drift**2),
        prefactor=math.exp(icpt),
        n=int(n),
        log_residual_rms=s,
        x_range=(float(np.exp(lx[0])), float(np.exp(lx[-1]))),
    )


@dataclasses.dataclass(frozen=True)
class LamSchedule:
    """Penalty schedule ``lam(alpha) = lam0 (alpha / alpha_ref)^{-ell}``.

    At fixed ``d`` the number of sequences is ``n = alpha d^2``, so this is
    ``lam ~ n^{-ell}``: ``ell = 0`` keeps ``lam`` fixed, ``ell > 0`` lets it decay,
    ``ell = -1/2`` grows it like ``sqrt(n)``.
    """

    lam0: float = 1.0
    ell: float = 0.0
    alpha_ref: float = 1.0

    def __post_init__(self):
        _checks.positive("lam0", self.lam0)
        e = float(self.ell)
        if not math.isfinite(e):
            raise ValueError(f"ell must be a finite real number, got {self.ell!r}")
        _checks.positive("alpha_ref", self.alpha_ref)

    def __call__(self, alpha):
        a = np.asarray(alpha, dtype=float)
        if np.any(~np.isfinite(a)) or np.any(a <= 0):
            raise ValueError(f"alpha must be finite and > 0, got {alpha!r}")
        out = self.lam0 * (a / self.alpha_ref) ** (-float(self.ell))
        return float(out) if out.ndim == 0 else out


class ExcessRiskCurve(NamedTuple):
    """State-evolution learning curve along ``alpha`` with a penalty schedule.

    Arrays over ``alpha``: ``lam``; ``test_error`` (noise-free labels); ``e0`` (the
    limit of ``test_error`` as ``S_hat -> S0``: 0 for noise-free test labels);
    ``excess = test_error - e0``; ``mse``; ``Delta_eff``; ``threshold = tau / c``;
    ``rank_fraction``; ``n_recovered`` and ``fractions`` (``(n_alpha, n_modes)``, see
    :func:`recovered_modes`); ``converged``. ``mse`` and ``excess`` are recomputed at
    the fixed point by :func:`spectral_summary` (Stein form), which keeps their relative
    accuracy when they are many decades below ``Q0``.
    """

    alpha: np.ndarray
    lam: np.ndarray
    test_error: np.ndarray
    e0: np.ndarray
    excess: np.ndarray
    mse: np.ndarray
    Delta_eff: np.ndarray
    threshold: np.ndarray
    rank_fraction: np.ndarray
    n_recovered: np.ndarray
    fractions: np.ndarray
    converged: np.ndarray


def excess_risk_curve(
    task,
    target,
    alphas,
    lam,
    *,
    level: float = 0.5,
    n_nodes: int = 400,
    progress=None,
    **se_kwargs,
) -> ExcessRiskCurve:
    """:func:`attnlib.se.solve` along increasing ``alphas`` (warm starts), nuclear penalty.

    Args:
      task: an :class:`attnlib.tasks.Task`.
      target: a target with an atomic spectrum (e.g. :class:`PowerLawModes`).
      alphas: increasing sample ratios ``> 0``.
      lam: a float (fixed penalty) or a :class:`LamSchedule`.
      level: recovery level of :func:`recovered_modes`.
      n_nodes: quadrature nodes of :func:`spectral_summary`.
      progress: optional callable ``progress(i, alpha, result)`` (e.g. a printer).
      **se_kwargs: passed to :func:`attnlib.se.solve`.

    The test error is ``test_error_from_overlaps(Q0, m, q)`` with ``m = (Q0 + q - mse)/2``
    and the accurate ``mse``; for the linear task it is ``sum_ab w_ab sigma_ab^2 mse``.
    """
    from attnlib import se
    from attnlib import tasks as _tasks

    alphas = np.asarray(_checks.finite_array("alphas", alphas), dtype=float).reshape(-1)
    if alphas.size == 0 or np.any(alphas <= 0) or np.any(np.diff(alphas) <= 0):
        raise ValueError(f"alphas must be a non-empty increasing list of values > 0, got {alphas}")
    if isinstance(lam, LamSchedule):
        lams = np.atleast_1d(lam(alphas))
    else:
        lams = np.full(alphas.shape, _checks.positive("lam", lam))
    if se_kwargs.get("penalty", "nuclear") != "nuclear":
        raise ValueError("excess_risk_curve uses the nuclear penalty")
    se_kwargs.pop("penalty", None)
    Q0 = float(target.Q0)
    init = se_kwargs.pop("init", None)
    rows = []
    for i, (a, lm) in enumerate(zip(alphas, lams, strict=True)):
        res = se.solve(task, target, float(a), float(lm), "nuclear", init=init, **se_kwargs)
        if res.converged:
            init = res
        summ = spectral_summary(target, res.Delta_eff, res.tau, res.c, n_nodes=n_nodes)
        mse = max(summ.mse, 0.0)
        if isinstance(task, _tasks.Linear):
            from attnlib import channels

            wts = channels.pair_weights(task.T) * _tasks.pair_variances(task.T)
            te, e0 = float(np.sum(wts)) * mse, 0.0
        else:
            m = 0.5 * (Q0 + res.q - mse)
            te = se.test_error_from_overlaps(task, Q0, m, res.q)
            e0 = se.test_error_from_overlaps(task, Q0, Q0, Q0)
        rows.append(
            (
                float(lm),
                te,
                e0,
                te - e0,
                mse,
                res.Delta_eff,
                summ.threshold,
                summ.rank_fraction,
                int(np.sum(summ.fractions > level)),
                summ.fractions,
                res.converged,
            )
        )
        if progress is not None:
            progress(i, float(a), res)
    cols = list(zip(*rows, strict=True))
    return ExcessRiskCurve(
        alpha=alphas,
        lam=np.array(cols[0]),
        test_error=np.array(cols[1]),
        e0=np.array(cols[2]),
        excess=np.array(cols[3]),
        mse=np.array(cols[4]),
        Delta_eff=np.array(cols[5]),
        threshold=np.array(cols[6]),
        rank_fraction=np.array(cols[7]),
        n_recovered=np.array(cols[8]),
        fractions=np.array(cols[9]),
        converged=np.array(cols[10]),
    )


class ExponentPrediction(NamedTuple):
    """Derived scaling exponent ``f`` of ``e_test - e_0 ~ alpha^{-f}`` and its phase.

    ``phase`` is ``"threshold"`` (the penalty's threshold limits which modes are
    learned: ``f = (1 + ell)(2 - r)``), ``"samples"`` (the effective noise of the
    state evolution sits above the threshold: ``f = 2/r - 1``), ``"optimal"``
    (noisy labels, ``ell = -1/2``: ``f = 1 - r/2``) or ``"variance"`` (noisy labels,
    ``ell > -1/2``: ``f = 1``). ``r = (1 - beta)/gamma`` is the counting exponent.
    """

    f: float
    phase: str
    r: float


def _counting_exponent(gamma, share_exponent) -> float:
    gamma = _checks.positive("gamma", gamma)
    b = float(share_exponent)
    if not math.isfinite(b):
        raise ValueError(f"share_exponent must be a finite real number, got {share_exponent!r}")
    r = (1.0 - b) / gamma
    if not 0.0 < r < 2.0:
        raise ValueError(
            "the counting exponent r = (1 - share_exponent) / gamma must lie in (0, 2) for a "
            f"power law to exist (equal shares: gamma > 1/2), got r={r:.4g}"
        )
    return r


def predicted_exponent(
    gamma, schedule=0.0, *, share_exponent: float = 0.0, noisy: bool = False
) -> ExponentPrediction:
    r"""The derived exponent ``f`` in ``e_test - e_0 ~ alpha^{-f}`` (window ``1 << k* << n_modes``).

    Derivation (book, chapter 5). With ``t ~ lam / alpha`` the state-evolution threshold
    and ``Delta_eff ~ (noise + C e) / alpha`` its effective noise, the error of the
    spectral soft threshold is the bias ``B(t) = sum_k pi_k min(lambda_k, t)^2 ~ t^{2-r}``
    plus ``Delta_eff`` times the recovered degrees of freedom ``~ rho(t) ~ t^{-r}``.

    - noise-free labels: ``f = min((1 + ell)(2 - r), 2/r - 1)``; the first branch
      (``(1 + ell) r < 1``) is limited by the threshold, the second by the samples
      (the threshold has fallen below the noise ``sqrt(Delta_eff)``);
    - noisy labels: ``f = (1 + ell)(2 - r)`` for ``ell < -1/2``, ``f = 1 - r/2`` at
      ``ell = -1/2`` (threshold above the edge of the noise bulk), ``f = 1`` for
      ``ell > -1/2`` (the kept noise bulk dominates: parametric rate).

    Args:
      gamma: eigenvalue decay exponent ``> 0``.
      schedule: ``ell`` (a float, ``> -1``) or a :class:`LamSchedule`.
      share_exponent: ``beta`` of :class:`PowerLawModes`; ``r = (1 - beta)/gamma`` must lie
        in ``(0, 2)``.
      noisy: whether the labels carry noise.
    """
    r = _counting_exponent(gamma, share_exponent)
    ell = float(schedule.ell) if isinstance(schedule, LamSchedule) else float(schedule)
    if not math.isfinite(ell) or ell <= -1.0:
        raise ValueError(f"ell must be > -1 (the threshold lam/alpha must vanish), got {ell!r}")
    if not noisy:
        f_thr = (1.0 + ell) * (2.0 - r)
        f_smp = 2.0 / r - 1.0
        if f_thr <= f_smp:
            return ExponentPrediction(f_thr, "threshold", r)
        return ExponentPrediction(f_smp, "samples", r)
    if ell < -0.5:
        return ExponentPrediction((1.0 + ell) * (2.0 - r), "threshold", r)
    if ell == -0.5:
        return ExponentPrediction(1.0 - r / 2.0, "optimal", r)
    return ExponentPrediction(1.0, "variance", r)


# ----------------------------------------------------------------------------
# LASSO: state evolution, solver, data
# ----------------------------------------------------------------------------


def _law_of(target) -> tuple[np.ndarray, np.ndarray]:
    """Atoms and weights of a target's limiting spectrum (the law of the entries of ``x0``)."""
    if isinstance(target, SpectralMeasure):
        mu = target
    elif isinstance(target, Target):
        mu = target.measure()
    else:
        raise ValueError(f"target must be a Target or a SpectralMeasure, got {type(target)!r}")
    a = np.asarray(mu.atoms, dtype=float)
    w = np.asarray(mu.weights, dtype=float)
    _checks.finite_array("target atoms", a)
    _checks.finite_array("target weights", w)
    if a.shape != w.shape or a.ndim != 1 or np.any(w < 0) or not np.isclose(w.sum(), 1.0):
        raise ValueError("target: the measure needs one weight >= 0 per atom, summing to 1")
    return a, w


def _soft_stats(s, tau, theta):
    """Per-atom ``(E[(eta(s + tau Z; theta) - s)^2], P(|s + tau Z| > theta))``, ``Z ~ N(0, 1)``."""
    s = np.abs(np.asarray(s, dtype=float))  # the soft threshold is odd: only |s| matters
    a = (theta - s) / tau  # upper crossing, Z > a
    b = (-theta - s) / tau  # lower crossing, Z < b
    Qa, Pb = scipy.special.ndtr(-a), scipy.special.ndtr(b)
    pa, pb = (
        np.exp(-0.5 * a * a) / math.sqrt(2 * math.pi),
        np.exp(-0.5 * b * b) / math.sqrt(2 * math.pi),
    )
    # Z > a: error tau Z - theta;  Z < b: error tau Z + theta;  in between: error -s
    up = tau**2 * (a * pa + Qa) - 2 * tau * theta * pa + theta**2 * Qa
    lo = tau**2 * (Pb - b * pb) - 2 * tau * theta * pb + theta**2 * Pb
    mid = s**2 * np.clip(1.0 - Qa - Pb, 0.0, 1.0)
    return np.maximum(up, 0.0) + np.maximum(lo, 0.0) + mid, Qa + Pb


class LassoSE(NamedTuple):
    """Fixed point of the LASSO state evolution (see the module docstring).

    ``delta = n / N``, ``lam``, ``noise`` (variance of the measurement noise); ``tau``
    (effective noise of the scalar problem ``X0 + tau Z``), ``theta`` (soft threshold);
    ``mse = ||x_hat - x0||^2 / N`` (also the test error ``E (a.(x_hat - x0))^2``),
    ``dof`` = fraction of non-zero entries of ``x_hat``; ``recovered`` (per atom of the
    target's measure, in its order): fraction of the entries equal to that atom that
    are non-zero in ``x_hat``; ``converged``, ``residual`` (relative residual of the
    ``tau`` equation).
    """

    delta: float
    lam: float
    noise: float
    tau: float
    theta: float
    mse: float
    dof: float
    recovered: np.ndarray
    converged: bool
    residual: float


def _theta_of_tau(s, p, delta, lam, tau):
    """Calibrated threshold: the root of ``theta (delta - dof) = lam`` with ``dof < delta``."""

    def dof(th):
        return float(np.sum(p * _soft_stats(s, tau, th)[1]))

    smax = float(np.max(np.abs(s)))
    # theta_delta: where dof = delta (0 if delta >= 1); k(theta) increases beyond it
    lo = 0.0
    if delta < 1.0:
        hi = smax + 10 * tau
        while dof(hi) > delta:
            hi *= 2
        lo = scipy.optimize.brentq(lambda th: dof(th) - delta, 0.0, hi, xtol=1e-15, rtol=1e-14)
    hi = max(2 * lo, lam / delta + smax + 10 * tau, 1e-300)
    while hi * (delta - dof(hi)) < lam:
        hi *= 2
    return scipy.optimize.brentq(
        lambda th: th * (delta - dof(th)) - lam, lo, hi, xtol=1e-300, rtol=1e-14
    )


def lasso_se(
    target, delta: float, lam: float, noise: float = 0.0, *, tol: float = 1e-12
) -> LassoSE:
    r"""State evolution of the LASSO for a vector whose entries follow ``target``'s spectrum.

    Solves ``tau^2 = (noise + mse(tau, theta)) / delta`` with ``theta = theta(tau)`` the
    calibrated threshold, ``theta (delta - P(|X| > theta)) = lam`` on the branch
    ``P(|X| > theta) < delta`` (where the left side increases in ``theta``), by Brent's
    method in ``log tau``: the residual is positive as ``tau -> 0`` (the bias of the
    threshold, plus the noise) and negative as ``tau -> infinity``
    (``E eta(Z; c)^2 < P(|Z| > c)``). Closed Gaussian forms for the atoms
    (Bayati and Montanari 2011; Donoho, Maleki and Montanari 2009).

    Args:
      target: a :class:`~attnlib.targets.Target` or :class:`~attnlib.targets.SpectralMeasure`
        (the law of the entries of ``x0``; signs do not matter).
      delta: ``n / N > 0``.
      lam: penalty ``> 0``.
      noise: measurement-noise variance ``>= 0``.
      tol: relative tolerance on ``tau``.
    """
    s, p = _law_of(target)
    delta = _checks.positive("delta", delta)
    lam = _checks.positive("lam", lam)
    noise = _checks.nonnegative("noise", noise)
    tol = _checks.positive("tol", tol)
    Q = float(np.sum(p * s * s))
    scale = math.sqrt(max(Q, noise, 1e-300))

    def resid(logtau):
        tau = math.exp(logtau)
        th = _theta_of_tau(s, p, delta, lam, tau)
        m = float(np.sum(p * _soft_stats(s, tau, th)[0]))
        return (noise + m) / delta / tau**2 - 1.0

    lo, hi = math.log(1e-12 * scale), math.log(10 * scale / min(1.0, math.sqrt(delta)))
    while resid(hi) > 0:
        hi += math.log(10.0)
    while resid(lo) < 0:
        lo -= math.log(10.0)
        if lo < math.log(1e-250):
            raise RuntimeError(f"lasso_se: no fixed point bracketed (delta={delta}, lam={lam})")
    logtau = scipy.optimize.brentq(resid, lo, hi, xtol=tol, rtol=tol, maxiter=500)
    tau = math.exp(logtau)
    th = _theta_of_tau(s, p, delta, lam, tau)
    mse_k, dof_k = _soft_stats(s, tau, th)
    res = abs(resid(logtau))
    ok = res < 1e-6
    if not ok:
        warnings.warn(
            f"lasso_se: residual {res:.2e} at delta={delta}, lam={lam}",
            RuntimeWarning,
            stacklevel=2,
        )
    return LassoSE(
        delta=delta,
        lam=lam,
        noise=noise,
        tau=tau,
        theta=float(th),
        mse=float(np.sum(p * mse_k)),
        dof=float(np.sum(p * dof_k)),
        recovered=np.asarray(dof_k, dtype=float),
        converged=bool(ok),
        residual=float(res),
    )


def lasso_curve(target, deltas, lam, noise: float = 0.0) -> LassoSE:
    """:func:`lasso_se` along ``deltas``; ``lam`` a float or a :class:`LamSchedule` (of ``delta``).

    Returns a :class:`LassoSE` whose fields are arrays over ``deltas`` (``recovered``
    has shape ``(len(deltas), n_atoms)``).
    """
    deltas = np.asarray(_checks.finite_array("deltas", deltas), dtype=float).reshape(-1)
    if deltas.size == 0 or np.any(deltas <= 0):
        raise ValueError(f"deltas must be a non-empty list of values > 0, got {deltas}")
    lams = lam(deltas) if isinstance(lam, LamSchedule) else np.full(deltas.shape, float(lam))
    rs = [
        lasso_se(target, float(d_), float(l_), noise) for d_, l_ in zip(deltas, lams, strict=True)
    ]
    return LassoSE(*(np.array([getattr(r, f) for r in rs]) for f in LassoSE._fields))


def lasso_data(key: jax.Array, target, N: int, delta: float, noise: float = 0.0):
    """A LASSO instance: ``(A, y, x0)`` as float64 numpy arrays.

    ``x0`` has ``N`` entries, the atoms of ``target``'s measure repeated in proportion to
    their weights (largest remainders), in random order; ``A`` is ``n x N`` with
    i.i.d. ``N(0, 1/N)`` entries, ``n = round(delta N)``; ``y = A x0 + sqrt(noise) w``.
    """
    s, p = _law_of(target)
    N = _checks.integer("N", N, 2)
    delta = _checks.positive("delta", delta)
    noise = _checks.nonnegative("noise", noise)
    n = max(1, int(round(delta * N)))
    share = p * N
    cnt = np.floor(share).astype(int)
    rest = N - int(cnt.sum())
    if rest > 0:
        cnt[np.argsort(-(share - cnt), kind="stable")[:rest]] += 1
    k_perm, k_a, k_w = jax.random.split(key, 3)
    x0 = np.repeat(s, cnt)[np.asarray(jax.random.permutation(k_perm, N))]
    A = np.asarray(jax.random.normal(k_a, (n, N), dtype=jnp.float64)) / math.sqrt(N)
    y = A @ x0 + math.sqrt(noise) * np.asarray(jax.random.normal(k_w, (n,), dtype=jnp.float64))
    return A, y, x0


def lasso_recovered_fractions(x, x0, target) -> np.ndarray:
    """Per atom of ``target``'s measure: the fraction of its entries in ``x0`` kept (``x != 0``)."""
    s, _ = _law_of(target)
    x = np.asarray(_checks.finite_array("x", x, ndim=1), dtype=float)
    x0 = np.asarray(_checks.finite_array("x0", x0, ndim=1, shape=x.shape), dtype=float)
    out = np.full(s.shape, np.nan)
    for i, a in enumerate(s):
        sel = np.isclose(x0, a, rtol=1e-12, atol=1e-15)
        if sel.any():
            out[i] = float(np.mean(x[sel] != 0))
    return out


class LassoFit(NamedTuple):
    """LASSO minimiser from :func:`lasso_solve`: ``x``, iterations, convergence, residual."""

    x: np.ndarray
    n_iter: int
    converged: bool
    residual: float


def _soft(z, t):
    return np.sign(z) * np.maximum(np.abs(z) - t, 0.0)


def _lasso_polish(A, y, lam, x):
    """Exact minimiser on the support and signs of ``x`` if they satisfy the KKT conditions.

    On the support ``S`` with signs ``s`` the minimiser solves
    ``A_S^T A_S x_S = A_S^T y - lam s``; it is the global LASSO minimiser iff its
    signs are ``s`` and ``|A_j^T (y - A x)| <= lam`` off the support.
    """
    S = np.flatnonzero(x)
    if S.size == 0 or S.size > A.shape[0]:
        return None
    sg = np.sign(x[S])
    AS = A[:, S]
    try:
        xs = np.linalg.solve(AS.T @ AS, AS.T @ y - lam * sg)
    except np.linalg.LinAlgError:
        return None
    if np.any(np.sign(xs) != sg):
        return None
    out = np.zeros_like(x)
    out[S] = xs
    corr = A.T @ (y - A @ out)
    off = np.ones(x.size, dtype=bool)
    off[S] = False
    if np.any(np.abs(corr[off]) > lam * (1 + 1e-12)):
        return None
    return out


def lasso_solve(
    A, y, lam: float, *, tol: float = 1e-10, max_iter: int = 50000, x_init=None
) -> LassoFit:
    r"""``argmin_x (1/2)||y - A x||^2 + lam ||x||_1``: FISTA, then an exact polish.

    FISTA with step ``1/L``, ``L = 1.05 ||A||_2^2`` (power iteration) and a momentum
    reset whenever the objective increases (O'Donoghue and Candes' restart). Every
    50 steps the support and signs of the iterate are tried: the least-squares
    solution on the support with the ``lam * sign`` shift is returned if it satisfies
    the KKT conditions of the LASSO (it is then the exact minimiser). The residual
    is the relative gradient mapping ``||x - S(x - A^T(Ax - y)/L, lam/L)|| / ||x||``
    (``S`` the soft threshold); a run that ends above ``tol`` warns with it.
    """
    A = np.asarray(_checks.finite_array("A", A, ndim=2), dtype=float)
    y = np.asarray(_checks.finite_array("y", y, ndim=1, shape=(A.shape[0],)), dtype=float)
    lam = _checks.positive("lam", lam)
    tol = _checks.positive("tol", tol)
    max_iter = _checks.integer("max_iter", max_iter, 1)
    N = A.shape[1]
    v = np.ones(N) / math.sqrt(N)
    nv = 1.0
    for _ in range(30):
        w = A.T @ (A @ v)
        nv = float(np.linalg.norm(w))
        v = w / nv
    L = 1.1 * nv  # raised by backtracking below if a plain prox step ever fails to descend

    def gm(x, Ax):
        step = x - _soft(x - A.T @ (Ax - y) / L, lam / L)
        return float(np.linalg.norm(step) / max(float(np.linalg.norm(x)), 1e-300))

    if x_init is None:
        x = np.zeros(N)
    else:
        x = np.asarray(_checks.finite_array("x_init", x_init, 1, (N,)), dtype=float)
    Ax = A @ x
    fx = 0.5 * float((Ax - y) @ (Ax - y)) + lam * float(np.abs(x).sum())
    z, Az, t = x.copy(), Ax.copy(), 1.0
    residual = math.inf
    it = 0
    for it in range(1, max_iter + 1):
        x_new = _soft(z - A.T @ (Az - y) / L, lam / L)
        Ax_new = A @ x_new
        r = Ax_new - y
        f_new = 0.5 * float(r @ r) + lam * float(np.abs(x_new).sum())
        if f_new > fx * (1 + 1e-15):
            if t == 1.0:  # a plain prox-gradient step failed: L was too small
                L *= 1.5
            z, Az, t = x.copy(), Ax.copy(), 1.0  # restart the momentum from x
            continue
        t_new = 0.5 * (1 + math.sqrt(1 + 4 * t * t))
        mom = (t - 1) / t_new
        z = x_new + mom * (x_new - x)
        Az = Ax_new + mom * (Ax_new - Ax)
        x, Ax, t, fx = x_new, Ax_new, t_new, f_new
        if it % 50 == 0:
            xp = _lasso_polish(A, y, lam, x)
            if xp is not None:
                res_p = gm(xp, A @ xp)
                if res_p < tol:
                    return LassoFit(xp, it, True, res_p)
            residual = gm(x, Ax)
            if residual < tol:
                return LassoFit(x, it, True, residual)
    warnings.warn(
        f"lasso_solve: residual {residual:.2e} > tol {tol:.1e} after {max_iter} iterations",
        RuntimeWarning,
        stacklevel=2,
    )
    return LassoFit(x, it, False, residual)
