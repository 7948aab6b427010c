"""Limiting spectrum of the learned matrix and singular values of the factor ``W``.

See :mod:`attnlib.spectrum` for the push-forward of ``rho_R`` by the spectral map ``f``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from attnlib import _checks, rmt
from attnlib.spectral_map import SpectralMap
from attnlib.spectrum.common import (
    _DEFAULT_NODES,
    _check_se,
    _deformed,
    spectral_map,
)

__all__ = [
    "LearnedOutlier",
    "LearnedSpectrum",
    "SingularValueLaw",
    "spectral_function",
    "learned_spectrum",
    "singular_values_W",
]


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
        return SpectralMap(self.slope, self.shift, self.penalty).f(np.asarray(x, dtype=float))

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


def spectral_function(se_result) -> tuple[float, float, float]:
    """``(slope, shift, threshold)`` of the learned spectral map ``f`` of an SE result.

    Nuclear: ``f(x) = (c x - tau)_+``: ``(c, tau, tau / c)``.
    Frobenius: ``f(x) = c x / (1 + lam / a_hat)``: ``(c / (1 + lam / a_hat), 0, -inf)``.
    """
    sm = spectral_map(se_result)
    return float(sm.slope), float(sm.shift), float(sm.threshold)


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


def learned_spectrum(target, se_result, *, n_nodes: int = _DEFAULT_NODES) -> LearnedSpectrum:
    r"""Limiting spectrum of the learned matrix predicted by a state-evolution fixed point.

    Args:
      target: the :class:`attnlib.targets.Target` the SE was solved for.
      se_result: an :class:`attnlib.se.SEResult` (nuclear or Frobenius penalty).
      n_nodes: quadrature nodes for ``rho_R`` (:func:`attnlib.rmt.deformed_spectrum`).

    Returns:
      :class:`LearnedSpectrum`: atom at zero, bulk density and edges, outliers.
    """
    target = _checks.target(target)
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
    kappa = _checks.in_interval("kappa", kappa, 0.0, _checks.MAX_ABS)
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
