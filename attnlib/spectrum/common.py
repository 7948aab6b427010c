"""Argument checks and shared quadrature helpers of :mod:`attnlib.spectrum`."""

from __future__ import annotations

import math

import numpy as np

from attnlib import _checks, rmt
from attnlib.spectral_map import SpectralMap, check_penalty

__all__ = ["spectral_map"]

_DEFAULT_NODES = 400


def _check_se(se_result):
    need = ("Delta_eff", "c", "tau", "a_hat", "penalty", "lam", "m", "q")
    if not all(hasattr(se_result, k) for k in need):
        raise ValueError(f"se_result must be an attnlib.se.SEResult, got {type(se_result)!r}")
    try:
        check_penalty(se_result.penalty)
    except ValueError:
        raise ValueError(
            f"se_result.penalty must be one of ['frobenius', 'nuclear'], got {se_result.penalty!r}"
        ) from None
    _checks.positive("se_result.Delta_eff", se_result.Delta_eff)
    _checks.positive("se_result.c", se_result.c)
    _checks.nonnegative("se_result.tau", se_result.tau)
    return se_result


def spectral_map(se_result) -> SpectralMap:
    """The learned spectral map of an SE result (checked: ``c > 0``, ``tau >= 0``)."""
    r = _check_se(se_result)
    return SpectralMap(float(r.c), float(r.tau), r.penalty)


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
