r"""Spectra of the learned weights and the four-part decomposition of the test error.

Conventions (THEORY.md sections 3, 5 and 7). The state evolution (:mod:`attnlib.se`)
says that the learned matrix behaves, in the limit ``d -> infinity``, like a
spectral map of a *deformed target*::

    S_hat = F(R),   R = S0 + sqrt(Delta_eff) W_goe,
    f(x) = (c x - tau)_+                    (nuclear penalty: factorised student, PSD)
    f(x) = c x / (1 + lam / a_hat)          (Frobenius penalty: direct student)

with ``(Delta_eff, c, tau, a_hat)`` read off an :class:`attnlib.se.SEResult`.
``F`` keeps the eigenvectors of ``R`` and maps its eigenvalues through ``f``.

Learned spectrum (:func:`learned_spectrum`). The law of the eigenvalues of
``S_hat`` is the push-forward of ``rho_R`` (the free convolution of the target
spectrum with a semicircle of variance ``Delta_eff``, :mod:`attnlib.rmt`) by
``f``:

- an atom at 0 of mass ``rho_R(x < tau / c)`` (nuclear only: low-rank collapse);
- a bulk of density ``rho_S(y) = rho_R(x) / f'(x)`` at ``x = f^{-1}(y)``;
- one outlier at ``f(z_k)`` for every isolated eigenvalue ``theta_k`` of the
  target whose deformed outlier ``z_k`` exists (``rmt.outliers``) and has
  ``f(z_k) > 0``; its eigenvector has squared overlap ``overlap2`` with the
  target direction (the eigenvectors of ``S_hat`` are those of ``R``).

Singular values of the factor ``W`` (:func:`singular_values_W`). The factorised
student has ``W`` of shape ``(d, p)``, ``kappa = p / d``, with
``W W^T = sqrt(p d) S_hat``. We normalise by ``sqrt(d)`` (at initialisation the
entries of ``W`` are ``O(1)``, so those of ``W / sqrt(d)`` have variance ``1/d``
and its singular values are ``O(1)``)::

    sigma_i(W / sqrt(d)) = kappa^(1/4) sqrt(s_i(S_hat)),   i = 1..p,

and the law over the ``p`` singular values has an atom at 0 of mass
``1 - rank_fraction / kappa`` (it needs ``kappa >= rank_fraction``: below that
the factorised model cannot reach the convex minimiser).

Error decomposition (:func:`decompose`, :func:`decompose_trained`). Let
``e(S) = e_test(S)``, which depends on ``S`` only through
``(Q0, m, q) = (Tr S0^2, Tr S S0, Tr S^2) / d``
(:func:`attnlib.se.test_error_from_overlaps`). Define

- ``c* = argmin_{c >= 0} e(c S_hat)`` and ``S* = c* S_hat``;
  ``E_mismatch = e(S_hat) - e(S*) >= 0`` (error due to the overall scale);
- for the eigenpairs ``(s*_i, u_i)`` of ``S*`` (null space included) let
  ``a_i = u_i^T S0 u_i``, ``b_i = ||S0 u_i||^2``, ``w_i = ||P0 u_i||^2`` (``P0``
  the projector on the range of ``S0``) and
  ``e_i = (s*_i - a_i)^2 + (b_i - a_i^2) >= 0``. Then, exactly,
  ``||S* - S0||_F^2 / d = (1/d) sum_i e_i``;
- *kept* directions have ``s_i != 0``, *discarded* ones ``s_i = 0`` (for which
  ``e_i = b_i``). In units of the mse:

  - ``E_under  = (1/d) sum_{discarded} e_i``: target energy not recovered;
  - ``E_over   = (1/d) sum_{kept} (1 - w_i) e_i``: error in kept directions that
    lie in the target's null space (fitted noise; 0 for a full-rank target);
  - ``E_approx = (1/d) sum_{kept} w_i e_i``: residual error along recovered
    target directions.

- Convention for the test error: ``e(S*)`` is distributed over the three parts in
  proportion to their mse shares (for the linear task ``e`` is proportional to
  the mse and this is the exact conversion). Hence
  ``e(S_hat) = E_over + E_under + E_approx + E_mismatch`` exactly, each ``>= 0``.

Theory side: given an eigenvalue ``x`` of ``R`` (in the bulk), the squared
overlap of its eigenvector with an eigenvector of ``S0`` of eigenvalue
``lambda`` is ``O(x, lambda) / d`` with (Ledoit-Peche; Bun, Bouchaud, Potters)::

    O(x, lambda) = Delta / ((lambda - x + Delta h_R(x))^2 + (pi Delta rho_R(x))^2),

and ``a, b, w`` concentrate on::

    a(x) = int rho_S0(l) l O(x, l) dl   = x - 2 Delta h_R(x)
    b(x) = int rho_S0(l) l^2 O(x, l) dl = a(x)^2 + Delta (1 - Delta |G_R(x + i0)|^2)
    w(x) = int_{l != 0} rho_S0(l) O(x, l) dl = 1 - rho_S0({0}) O(x, 0)

(the closed forms follow from ``O = Im[1/(omega - l)] / (pi rho_R)`` with the
subordination function ``omega = x - Delta G_R``). The decomposition is then an
integral against ``rho_R`` with ``s*(x) = c* f(x)``. Target outliers carry
``O(1/d)`` of the mse and do not enter the limit.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import scipy.optimize

from attnlib import _checks, rmt, se
from attnlib import tasks as _tasks

__all__ = [
    "PENALTIES",
    "LearnedOutlier",
    "LearnedSpectrum",
    "SingularValueLaw",
    "ErrorDecomposition",
    "DirectionProfile",
    "spectral_function",
    "learned_spectrum",
    "singular_values_W",
    "overlap_density",
    "direction_profile",
    "direction_statistics",
    "optimal_scale",
    "decompose",
    "decompose_trained",
]

PENALTIES = ("nuclear", "frobenius")
_DEFAULT_NODES = 400


# ----------------------------------------------------------------------------
# Results
# ----------------------------------------------------------------------------


class LearnedOutlier(NamedTuple):
    """An isolated eigenvalue of the target and what the learned matrix does with it.

    Attributes:
      theta: the target's isolated eigenvalue.
      r_position: the outlier ``z`` of ``R = S0 + sqrt(Delta_eff) W_goe``.
      position: ``f(z)``, the eigenvalue of ``S_hat`` (0 when it is thresholded away).
      overlap2: squared overlap of the eigenvector at ``z`` with the target's direction.
      learned: ``f(z) > 0``: the direction is kept by the estimator.
    """

    theta: float
    r_position: float
    position: float
    overlap2: float
    learned: bool


class LearnedSpectrum(NamedTuple):
    r"""Limiting eigenvalue law of ``S_hat = F(R)`` (see the module docstring).

    Attributes:
      penalty: ``"nuclear"`` or ``"frobenius"``.
      slope: ``f'(x)`` where ``f > 0``: ``c`` (nuclear) or ``c / (1 + lam/a_hat)``.
      shift: ``tau`` (nuclear) or 0: ``f(x) = slope x - shift`` where ``f > 0``.
      threshold: eigenvalue of ``R`` below which ``f = 0`` (``tau / c``; ``-inf``
        for Frobenius).
      atom_at_zero: mass of the atom of ``S_hat`` at 0 (0 for Frobenius).
      rank_fraction: ``1 - atom_at_zero``.
      y: bulk eigenvalues of ``S_hat`` on a grid, ascending (``f`` of the nodes of
        ``R``'s quadrature that are kept), shape ``(n,)``.
      density: bulk density of ``S_hat`` on ``y`` (integrates to ``rank_fraction``).
      edges: the bulk's intervals ``((lo, hi), ...)`` in eigenvalues of ``S_hat``.
      outliers: one :class:`LearnedOutlier` per target outlier that ``R`` separates.
      Delta_eff: the variance of the semicircle convolved with the target.
      r_nodes, r_weights: the quadrature of ``rho_R`` (``sum w g(x) = int rho_R g``)
        used for :meth:`quantiles`.
    """

    penalty: str
    slope: float
    shift: float
    threshold: float
    atom_at_zero: float
    rank_fraction: float
    y: np.ndarray
    density: np.ndarray
    edges: tuple
    outliers: tuple
    Delta_eff: float
    r_nodes: np.ndarray
    r_weights: np.ndarray

    def f(self, x):
        """The spectral map ``f`` applied to eigenvalues ``x`` of ``R``."""
        y = self.slope * np.asarray(x, dtype=float) - self.shift
        return np.maximum(y, 0.0) if self.penalty == "nuclear" else y

    def quantiles(self, d: int) -> np.ndarray:
        """``d`` predicted eigenvalues of ``S_hat``, ascending, to compare with a trained one.

        The ``k`` learned outliers sit at their positions; the other ``d - k``
        eigenvalues are the mid-point quantiles ``(i - 1/2) / (d - k)`` of the
        limiting law (atom and bulk).
        """
        d = _checks.integer("d", d, 1)
        out = [o.position for o in self.outliers if o.learned]
        k = min(len(out), d)
        u = (np.arange(d - k) + 0.5) / max(d - k, 1)
        xq = _quantile(self.r_nodes, self.r_weights, u)
        return np.sort(np.concatenate([self.f(xq), np.asarray(out[:k], dtype=float)]))


class SingularValueLaw(NamedTuple):
    r"""Limiting law of the ``p`` singular values of ``W / sqrt(d)`` (factorised student).

    ``sigma = kappa^(1/4) sqrt(s)`` for each eigenvalue ``s`` of ``S_hat``.

    Attributes:
      kappa: the width ratio ``p / d``.
      atom_at_zero: fraction of the ``p`` singular values at 0 (``1 - rank_fraction/kappa``).
      sigma: bulk singular values on a grid, ascending.
      density: their density over the ``p`` singular values (integrates to ``1 - atom``).
      edges: bulk intervals in singular values.
      outliers: singular values of the learned outliers.
      spectrum: the :class:`LearnedSpectrum` it comes from.
    """

    kappa: float
    atom_at_zero: float
    sigma: np.ndarray
    density: np.ndarray
    edges: tuple
    outliers: tuple
    spectrum: LearnedSpectrum

    def quantiles(self, p: int) -> np.ndarray:
        """``p`` predicted singular values of ``W / sqrt(d)``, ascending (``d = p / kappa``)."""
        p = _checks.integer("p", p, 1)
        d = max(p, int(round(p / self.kappa)))
        s = self.spectrum.quantiles(d)[d - p :]
        return self.kappa**0.25 * np.sqrt(np.maximum(s, 0.0))


class DirectionProfile(NamedTuple):
    r"""Large-``d`` statistics of the eigenvectors of ``R`` at eigenvalue ``x``.

    Attributes:
      x: eigenvalues of ``R`` (the nodes).
      a: ``E[u^T S0 u | x] = x - 2 Delta h_R(x)``.
      b: ``E[||S0 u||^2 | x]``.
      w: ``E[||P0 u||^2 | x]`` (``P0`` projector on the range of ``S0``).
      rho: ``rho_R(x)``.
      hilbert: ``h_R(x) = Re G_R(x + i0)``.
    """

    x: np.ndarray
    a: np.ndarray
    b: np.ndarray
    w: np.ndarray
    rho: np.ndarray
    hilbert: np.ndarray


class ErrorDecomposition(NamedTuple):
    r"""``e_test(S_hat) = over + under + approx + mismatch`` (module docstring).

    Attributes:
      over, under, approx, mismatch: the four parts in units of the test error.
      e_test: ``e_test(S_hat)``.
      e_test_star: ``e_test(c* S_hat) = over + under + approx``.
      c_star: the test-optimal rescaling ``c*``.
      mse_over, mse_under, mse_approx: the three parts in units of the mse
        (they add up to ``mse_star``).
      mse: ``||S_hat - S0||_F^2 / d``.
      mse_star: ``||c* S_hat - S0||_F^2 / d``.
      kept_fraction: fraction of kept directions (``s_i != 0``).
      kept_in_range: ``(1/d) sum_{kept} w_i``: the part of ``kept_fraction`` that lies in
        the range of ``S0`` (the rest, ``kept_fraction - kept_in_range``, is kept noise).
      Q0, m, q: overlaps of ``S_hat``: ``Tr(S0^2)/d``, ``Tr(S_hat S0)/d``, ``Tr(S_hat^2)/d``.
      e_test_mc, e_test_mc_stderr: Monte Carlo estimate of ``e_test(S_hat)`` on fresh
        sequences and its standard error (:func:`decompose_trained` with a key; else ``None``).
    """

    over: float
    under: float
    approx: float
    mismatch: float
    e_test: float
    e_test_star: float
    c_star: float
    mse_over: float
    mse_under: float
    mse_approx: float
    mse: float
    mse_star: float
    kept_fraction: float
    kept_in_range: float
    Q0: float
    m: float
    q: float
    e_test_mc: float | None = None
    e_test_mc_stderr: float | None = None

    def parts(self) -> np.ndarray:
        """``[over, under, approx, mismatch]`` as an array."""
        return np.array([self.over, self.under, self.approx, self.mismatch])


# ----------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------


def _check_se(se_result):
    need = ("Delta_eff", "c", "tau", "a_hat", "penalty", "lam", "m", "q")
    if not all(hasattr(se_result, k) for k in need):
        raise ValueError(f"se_result must be an attnlib.se.SEResult, got {type(se_result)!r}")
    _checks.choice("se_result.penalty", se_result.penalty, PENALTIES)
    _checks.positive("se_result.Delta_eff", se_result.Delta_eff)
    _checks.positive("se_result.c", se_result.c)
    _checks.nonnegative("se_result.tau", se_result.tau)
    return se_result


def _check_task(task):
    if not isinstance(task, _tasks.Task):
        raise ValueError(f"task must be an attnlib.tasks.Task, got {task!r}")
    return task


def _check_target(target):
    if not hasattr(target, "measure") or not hasattr(target, "outliers"):
        raise ValueError(f"target must be an attnlib.targets.Target, got {target!r}")
    return target


def spectral_function(se_result) -> tuple[float, float, float]:
    """``(slope, shift, threshold)`` of the learned spectral map ``f`` of an SE result.

    Nuclear: ``f(x) = (c x - tau)_+``: ``(c, tau, tau / c)``.
    Frobenius: ``f(x) = c x / (1 + lam / a_hat)``: ``(c / (1 + lam / a_hat), 0, -inf)``.
    """
    r = _check_se(se_result)
    if r.penalty == "nuclear":
        return float(r.c), float(r.tau), float(r.tau / r.c)
    return float(r.c / (1.0 + r.lam / r.a_hat)), 0.0, -math.inf


def _quantile(x, w, u):
    """Quantiles ``u`` of the discrete law ``sum_i w_i delta_{x_i}`` (linear interpolation).

    The cumulative distribution at node ``i`` is taken at the node's mid-mass
    ``sum_{j<i} w_j + w_i / 2``.
    """
    order = np.argsort(x)
    x, w = np.asarray(x, float)[order], np.asarray(w, float)[order]
    w = w / w.sum()
    cdf = np.cumsum(w) - w / 2
    return np.interp(u, cdf, x)


def _deformed(target, Delta, n_nodes, threshold=-math.inf):
    bps = (threshold,) if math.isfinite(threshold) else ()
    ds = rmt.deformed_spectrum(target, Delta, n_nodes, breakpoints=bps)
    x = np.asarray(ds.x, float)
    w = np.asarray(ds.w, float)
    rho = np.asarray(ds.density, float)
    h = np.asarray(ds.hilbert, float)
    intervals = tuple((float(lo), float(hi)) for lo, hi in ds.intervals)
    return x, w, rho, h, intervals


def _zero_mass(target) -> float:
    """Mass ``rho_S0({0})`` of the target's limiting spectrum at exactly zero."""
    mu = target.measure()
    return float(np.sum(np.asarray(mu.weights)[np.asarray(mu.atoms) == 0.0]))


def _profile(x, rho, h, Delta, p_zero):
    """Closed-form a, b, w at eigenvalues ``x`` of ``R`` (module docstring)."""
    a = x - 2.0 * Delta * h
    g2 = h * h + (math.pi * rho) ** 2  # |G_R(x + i0)|^2
    b = a * a + Delta * np.maximum(1.0 - Delta * g2, 0.0)
    om2 = (x - Delta * h) ** 2 + (math.pi * Delta * rho) ** 2  # |omega(x + i0)|^2
    w = 1.0 - p_zero * Delta / np.maximum(om2, 1e-300)
    return a, b, np.clip(w, 0.0, 1.0)


# ----------------------------------------------------------------------------
# Learned spectrum
# ----------------------------------------------------------------------------


def learned_spectrum(target, se_result, *, n_nodes: int = _DEFAULT_NODES) -> LearnedSpectrum:
    r"""Limiting spectrum of the learned matrix predicted by a state-evolution fixed point.

    Args:
      target: the :class:`attnlib.targets.Target` the SE was solved for.
      se_result: an :class:`attnlib.se.SEResult` (nuclear or Frobenius penalty).
      n_nodes: quadrature nodes for ``rho_R`` (:func:`attnlib.rmt.deformed_spectrum`).

    Returns:
      :class:`LearnedSpectrum`: atom at zero, bulk density and edges, outliers.
    """
    target = _check_target(target)
    r = _check_se(se_result)
    n_nodes = _checks.integer("n_nodes", n_nodes, 16)
    slope, shift, thr = spectral_function(r)
    Delta = float(r.Delta_eff)
    x, w, rho, _, intervals = _deformed(target, Delta, n_nodes, thr)
    order = np.argsort(x)
    x, w, rho = x[order], w[order], rho[order]
    kept = x > thr
    atom = float(np.sum(w[~kept]) / np.sum(w)) if r.penalty == "nuclear" else 0.0
    y = slope * x[kept] - shift
    dens = rho[kept] / slope
    edges = []
    for lo, hi in intervals:
        if hi <= thr:
            continue
        edges.append((float(slope * max(lo, thr) - shift), float(slope * hi - shift)))
    outs = []
    for o in rmt.outliers(target, Delta):
        z = float(o.position)
        pos = float(slope * z - shift)
        learned = pos > 0 if r.penalty == "nuclear" else True
        outs.append(
            LearnedOutlier(
                theta=float(o.theta),
                r_position=z,
                position=pos if learned else 0.0,
                overlap2=float(o.overlap2),
                learned=bool(learned),
            )
        )
    return LearnedSpectrum(
        penalty=r.penalty,
        slope=slope,
        shift=shift,
        threshold=thr,
        atom_at_zero=atom,
        rank_fraction=1.0 - atom,
        y=y,
        density=dens,
        edges=tuple(edges),
        outliers=tuple(outs),
        Delta_eff=Delta,
        r_nodes=x,
        r_weights=w,
    )


def singular_values_W(spectrum: LearnedSpectrum, kappa: float) -> SingularValueLaw:
    r"""Law of the singular values of ``W / sqrt(d)`` for a factorised student of width ``kappa``.

    ``W W^T = sqrt(p d) S_hat`` gives ``sigma(W / sqrt(d)) = kappa^(1/4) sqrt(s(S_hat))``;
    the density over the ``p`` singular values is
    ``2 sigma rho_S(sigma^2 / sqrt(kappa)) / kappa^(3/2)`` and the atom at 0 has
    mass ``1 - rank_fraction / kappa``.

    Raises:
      ValueError: for the Frobenius spectrum (no factorisation), or when
        ``kappa < rank_fraction`` (the factorised model cannot reach the convex
        minimiser, so the law does not apply).
    """
    if not isinstance(spectrum, LearnedSpectrum):
        raise ValueError(f"spectrum must be a LearnedSpectrum, got {type(spectrum)!r}")
    if spectrum.penalty != "nuclear":
        raise ValueError("singular_values_W needs the nuclear (factorised) spectrum, got frobenius")
    kappa = _checks.positive("kappa", kappa)
    if kappa < spectrum.rank_fraction * (1 - 1e-9):
        raise ValueError(
            f"kappa must be >= the rank fraction {spectrum.rank_fraction:.4g} of the convex "
            f"minimiser (else the factorised student cannot reach it), got {kappa}"
        )
    s = np.asarray(spectrum.y)
    sig = kappa**0.25 * np.sqrt(np.maximum(s, 0.0))
    dens = 2.0 * sig * np.asarray(spectrum.density) / kappa**1.5
    edges = tuple(
        (kappa**0.25 * math.sqrt(lo), kappa**0.25 * math.sqrt(hi)) for lo, hi in spectrum.edges
    )
    outs = tuple(kappa**0.25 * math.sqrt(o.position) for o in spectrum.outliers if o.learned)
    return SingularValueLaw(
        kappa=kappa,
        atom_at_zero=float(max(1.0 - spectrum.rank_fraction / kappa, 0.0)),
        sigma=sig,
        density=dens,
        edges=edges,
        outliers=outs,
        spectrum=spectrum,
    )


# ----------------------------------------------------------------------------
# Eigenvector overlaps
# ----------------------------------------------------------------------------


def _rho_h_at(target, Delta, x):
    """``rho_R(x)`` and ``h_R(x)`` at arbitrary real ``x``."""
    x = np.asarray(x, float)
    G = np.asarray(rmt.stieltjes(target, Delta, x + 0j), complex)  # boundary value G(x + i0)
    return np.maximum(-G.imag / math.pi, 0.0), G.real


def overlap_density(target, Delta: float, x, lam):
    r"""``O(x, lambda)``: ``d`` times the mean squared overlap of eigenvectors of ``R`` and ``S0``.

    For an eigenvector of ``R = S0 + sqrt(Delta) W_goe`` with eigenvalue ``x`` in
    the bulk and one of ``S0`` with eigenvalue ``lambda``:
    ``O = Delta / ((lambda - x + Delta h_R(x))^2 + (pi Delta rho_R(x))^2)``.
    ``x`` and ``lam`` broadcast against each other.
    """
    target = _check_target(target)
    Delta = _checks.positive("Delta", Delta)
    x = np.asarray(x, float)
    lam = np.asarray(lam, float)
    rho, h = _rho_h_at(target, Delta, x)
    return Delta / ((lam - x + Delta * h) ** 2 + (math.pi * Delta * rho) ** 2)


def direction_profile(target, Delta: float, x=None, *, n_nodes: int = _DEFAULT_NODES):
    r"""Closed-form ``a(x), b(x), w(x)`` of the eigenvectors of ``R`` (module docstring).

    ``x=None`` evaluates at the quadrature nodes of :func:`attnlib.rmt.deformed_spectrum`.
    Returns a :class:`DirectionProfile`.
    """
    target = _check_target(target)
    Delta = _checks.positive("Delta", Delta)
    if x is None:
        x, _, rho, h, _ = _deformed(target, Delta, _checks.integer("n_nodes", n_nodes, 16))
    else:
        x = np.asarray(x, float)
        rho, h = _rho_h_at(target, Delta, x)
    a, b, w = _profile(x, rho, h, Delta, _zero_mass(target))
    return DirectionProfile(x=x, a=a, b=b, w=w, rho=rho, hilbert=h)


def direction_statistics(S, S0, *, rank_tol: float = 1e-8):
    r"""Finite-``d`` eigen-statistics ``(s, a, b, w)`` of a symmetric ``S`` against ``S0``.

    ``S = sum_i s_i u_i u_i^T`` (ascending ``s``), ``a_i = u_i^T S0 u_i``,
    ``b_i = ||S0 u_i||^2``, ``w_i = ||P0 u_i||^2`` with ``P0`` the projector on the
    eigenvectors of ``S0`` with ``|lambda| > rank_tol max |lambda|``.
    Returns four ``(d,)`` arrays.
    """
    S0 = np.asarray(_checks.finite_array("S0", S0, ndim=2), float)
    d = S0.shape[0]
    S = np.asarray(_checks.finite_array("S", S, ndim=2, shape=(d, d)), float)
    if S0.shape != (d, d):
        raise ValueError(f"S0 must be square, got shape {S0.shape}")
    s, U = np.linalg.eigh((S + S.T) / 2)
    SU = S0 @ U
    a = np.sum(U * SU, axis=0)
    b = np.sum(SU * SU, axis=0)
    l0, V0 = np.linalg.eigh((S0 + S0.T) / 2)
    rng = np.abs(l0) > rank_tol * max(np.max(np.abs(l0)), 1e-300)
    w = np.sum((V0[:, rng].T @ U) ** 2, axis=0)
    return s, a, b, w


# ----------------------------------------------------------------------------
# Decomposition
# ----------------------------------------------------------------------------


def optimal_scale(task, Q0: float, m: float, q: float) -> tuple[float, float]:
    r"""The test-optimal rescaling ``c* = argmin_{c >= 0} e_test(c S)`` and ``e_test(c* S)``.

    ``e_test(c S)`` is :func:`attnlib.se.test_error_from_overlaps` at ``(Q0, c m, c^2 q)``.
    Linear task: ``c* = max(m, 0) / q`` in closed form. Otherwise a log-spaced scan
    (which includes ``c = 1``, so that ``e_test(c* S) <= e_test(S)``) refined by a
    bounded Brent search.
    """
    task = _check_task(task)
    Q0 = _checks.positive("Q0", Q0)
    q = _checks.nonnegative("q", q)
    m = float(m)

    def e(c):
        return se.test_error_from_overlaps(task, Q0, c * m, c * c * q)

    if q == 0.0:
        return 1.0, e(1.0)
    if isinstance(task, _tasks.Linear):
        c = max(m, 0.0) / q
        return c, e(c)
    ref = max(abs(m) / q, 1e-3)
    grid = np.unique(np.concatenate([[0.0, 1.0], ref * np.geomspace(0.05, 20.0, 27)]))
    vals = np.array([e(c) for c in grid])
    i = int(np.argmin(vals))
    best_c, best_e = float(grid[i]), float(vals[i])
    lo = grid[max(i - 1, 0)]
    hi = grid[min(i + 1, len(grid) - 1)]
    if hi > lo:
        res = scipy.optimize.minimize_scalar(
            e, bounds=(lo, hi), method="bounded", options={"xatol": 1e-6 * max(hi, 1e-3)}
        )
        if res.fun < best_e:
            best_c, best_e = float(res.x), float(res.fun)
    return best_c, best_e


def _assemble(task, Q0, m, q, c_star, e_star, parts_mse, kept, **extra):
    e_hat = se.test_error_from_overlaps(task, Q0, m, q)
    mse_star = Q0 - 2 * c_star * m + c_star**2 * q
    tot = float(np.sum(parts_mse))
    share = np.asarray(parts_mse) / tot if tot > 0 else np.zeros(3)
    over, under, approx = (float(e_star * s) for s in share)
    mismatch = max(float(e_hat - e_star), 0.0)
    return ErrorDecomposition(
        over=over,
        under=under,
        approx=approx,
        mismatch=mismatch,
        e_test=float(e_hat),
        e_test_star=float(e_star),
        c_star=float(c_star),
        mse_over=float(parts_mse[0]),
        mse_under=float(parts_mse[1]),
        mse_approx=float(parts_mse[2]),
        mse=float(Q0 - 2 * m + q),
        mse_star=float(mse_star),
        kept_fraction=float(kept[0]),
        kept_in_range=float(kept[1]),
        Q0=float(Q0),
        m=float(m),
        q=float(q),
        **extra,
    )


def decompose(task, target, se_result, *, n_nodes: int = _DEFAULT_NODES) -> ErrorDecomposition:
    r"""The four-part decomposition of the asymptotic test error (module docstring).

    Integrates ``e(x) = (c* f(x) - a(x))^2 + b(x) - a(x)^2`` against ``rho_R`` with
    the quadrature of :func:`attnlib.rmt.deformed_spectrum`: discarded
    (``f(x) = 0``) nodes give ``E_under``, kept ones ``E_over`` (weight
    ``1 - w(x)``) and ``E_approx`` (weight ``w(x)``). ``m, q`` are those of the
    SE result; the three mse parts add up to ``Q0 - 2 c* m + c*^2 q`` up to the
    quadrature error (a test checks it).
    """
    task = _check_task(task)
    target = _check_target(target)
    r = _check_se(se_result)
    n_nodes = _checks.integer("n_nodes", n_nodes, 16)
    Q0 = float(target.Q0)
    c_star, e_star = optimal_scale(task, Q0, r.m, r.q)
    slope, shift, thr = spectral_function(r)
    Delta = float(r.Delta_eff)
    x, w, rho, h, _ = _deformed(target, Delta, n_nodes, thr)
    a, b, wr = _profile(x, rho, h, Delta, _zero_mass(target))
    f = slope * x - shift
    if r.penalty == "nuclear":
        f = np.maximum(f, 0.0)
    kept = x > thr
    e = (c_star * f - a) ** 2 + (b - a * a)
    under = float(np.sum(w[~kept] * e[~kept]))
    over = float(np.sum(w[kept] * (1 - wr[kept]) * e[kept]))
    approx = float(np.sum(w[kept] * wr[kept] * e[kept]))
    kept_mass = (float(np.sum(w[kept])), float(np.sum(w[kept] * wr[kept])))
    return _assemble(task, Q0, r.m, r.q, c_star, e_star, (over, under, approx), kept_mass)


def decompose_trained(
    task,
    S_hat,
    S0,
    key=None,
    *,
    zero_tol: float = 1e-8,
    rank_tol: float = 1e-8,
    n_test: int = 20000,
) -> ErrorDecomposition:
    r"""The four-part decomposition of the test error of a trained ``S_hat`` (finite ``d``).

    Args:
      task: the task (its test error through :func:`attnlib.se.test_error_from_overlaps`).
      S_hat: the learned symmetric ``(d, d)`` matrix.
      S0: the target ``(d, d)``.
      key: optional PRNG key: also estimate ``e_test(S_hat)`` by Monte Carlo on
        ``n_test`` fresh sequences (:func:`attnlib.train.test_error_stats`), a check
        of the overlap formula reported in ``e_test_mc``.
      zero_tol: eigenvalues of ``S_hat`` with ``|s| <= zero_tol max|s|`` count as
        discarded directions (the proximal solver gives exact zeros; Adam on the
        factor needs a looser value such as ``1e-3``).
      rank_tol: relative tolerance defining the range of ``S0`` (for ``w_i``).

    The parts use ``e_i = (s*_i - a_i)^2 + b_i - a_i^2`` for every direction
    (``= b_i`` when ``s_i = 0``), so ``mse_over + mse_under + mse_approx`` equals
    ``||c* S_hat - S0||_F^2 / d`` to rounding.
    """
    task = _check_task(task)
    zero_tol = _checks.nonnegative("zero_tol", zero_tol)
    s, a, b, wr = direction_statistics(S_hat, S0, rank_tol=rank_tol)
    d = s.size
    S0a = np.asarray(S0, float)
    Sa = np.asarray(S_hat, float)
    Q0 = float(np.sum(S0a * S0a) / d)
    m = float(np.sum(Sa * S0a) / d)
    q = float(np.sum(Sa * Sa) / d)
    c_star, e_star = optimal_scale(task, Q0, m, q)
    kept = np.abs(s) > zero_tol * max(np.max(np.abs(s)), 1e-300)
    e = (c_star * s - a) ** 2 + (b - a * a)
    under = float(np.sum(e[~kept]) / d)
    over = float(np.sum((1 - wr[kept]) * e[kept]) / d)
    approx = float(np.sum(wr[kept] * e[kept]) / d)
    extra = {}
    if key is not None:
        from attnlib import train

        st = train.test_error_stats(key, task, S0a, Sa, n_test=_checks.integer("n_test", n_test, 2))
        extra = {"e_test_mc": st.mean, "e_test_mc_stderr": st.stderr}
    kept_mass = (float(np.mean(kept)), float(np.sum(wr[kept]) / d))
    return _assemble(task, Q0, m, q, c_star, e_star, (over, under, approx), kept_mass, **extra)
