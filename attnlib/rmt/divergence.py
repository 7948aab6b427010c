"""Spectral maps against ``rho_R``: overlaps, divergence, and the Stein form of the error.

Large ``d`` (:func:`spectral_integrals`, :func:`stein_mse`): integrals against the
quadrature of :func:`attnlib.rmt.deformed_spectrum`. Finite ``d``
(:func:`spectral_divergence`): the divergence of a spectral map at a matrix with
given eigenvalues, in numpy or in jax.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import numpy as np

from attnlib import _checks
from attnlib.rmt.integrals import integrate
from attnlib.rmt.law import _chunks
from attnlib.rmt.quadrature import DeformedSpectrum
from attnlib.spectral_map import array_namespace as _xp

__all__ = [
    "conditional_overlap",
    "SpectralIntegrals",
    "spectral_integrals",
    "stein_mse",
    "spectral_divergence",
]


def conditional_overlap(spec: DeformedSpectrum) -> np.ndarray:
    """``E[v^T S0 v | x] = x - 2 Delta h_R(x)`` at the nodes of ``spec`` (v: eigenvector of R)."""
    _check_spec(spec)
    return spec.x - 2 * spec.Delta * spec.hilbert


class SpectralIntegrals(NamedTuple):
    """Limits for a spectral map ``F(R)`` with scalar ``f`` (see :func:`spectral_integrals`)."""

    q: float  # Tr F(R)^2 / d       -> int rho_R f^2
    m: float  # Tr F(R) S0 / d      -> int rho_R f (x - 2 Delta h_R)
    div: float  # div F / d^2        -> int rho_R f h_R


def _check_spec(spec):
    if not isinstance(spec, DeformedSpectrum):
        raise ValueError(f"spec must be an attnlib.rmt.DeformedSpectrum, got {type(spec)!r}")
    return spec


def _values(spec: DeformedSpectrum, f) -> np.ndarray:
    _check_spec(spec)
    if not callable(f):
        raise ValueError(f"f must be a vectorized callable, got {f!r}")
    fx = np.asarray(f(spec.x), dtype=float)
    if fx.shape != np.shape(spec.x):
        raise ValueError(
            f"f must map the nodes {np.shape(spec.x)} to the same shape, got {fx.shape}"
        )
    return np.asarray(_checks.finite_array("f(spec.x)", fx), dtype=float)


def spectral_integrals(spec: DeformedSpectrum, f: Callable) -> SpectralIntegrals:
    """``q, m, div`` of the spectral map with scalar function ``f`` (vectorized callable);
    :func:`attnlib.denoisers.integrate` also gives the trace and the rank."""
    s = integrate(spec, _values(spec, f))
    return SpectralIntegrals(s.q, s.m, s.div)


def stein_mse(spec: DeformedSpectrum, f: Callable) -> float:
    r"""Large-``d`` error ``||F(R) - S0||_F^2 / d`` of a spectral map, in Stein's form.

    ``R = S0 + sqrt(Delta) W_goe``. Writing ``mse = Q0 - 2 m + q`` with
    ``q = int rho_R f^2``, ``m = int rho_R f (x - 2 Delta h_R)`` and using the exact
    identities ``int rho_R x^2 = Q0 + Delta`` and ``int rho_R x (x - 2 Delta h_R) = Q0``
    (Stein's lemma for the Gaussian noise) gives

    .. math:: \mathrm{mse} = \int \rho_R (f(x) - x)^2 + 4 \Delta \int \rho_R f h_R - \Delta,

    whose terms are each of order ``Delta`` when ``f`` is close to the identity, so
    there is no cancellation between the ``O(1)`` quantities ``Q0``, ``m`` and ``q``.
    ``spec``: a :class:`~attnlib.rmt.DeformedSpectrum`; ``f``: a vectorized callable.
    """
    fx = _values(spec, f)
    x, w, D = spec.x, spec.w, float(spec.Delta)
    return float(np.sum(w * (fx - x) ** 2) + 4.0 * D * integrate(spec, fx).div - D)


def _eigen_values(xp, name, values):
    """A 1-d real array (checked for finite values unless traced under jax)."""
    if isinstance(values, jax.core.Tracer):
        a = values
    else:
        a = _checks.finite_array(name, _checks.numeric_array(name, values, kinds="biuf"))
    if np.ndim(a) != 1:
        raise ValueError(f"{name} must be a 1-d array, got shape {np.shape(a)}")
    return xp.asarray(a) if xp is not np else np.asarray(a, dtype=float)


def _apply_maps(x, f, fprime):
    """``(x, f(x), fprime(x))`` for callables ``f`` and ``fprime`` (numpy unless ``x`` is
    a jax array)."""
    if not (callable(f) and callable(fprime)):
        raise ValueError("f and fprime must both be arrays of shape (d,) or both callables")
    if not isinstance(x, jax.Array):
        x = np.asarray(_checks.finite_array("x", x, ndim=1), dtype=float)
        return x, np.asarray(f(x), dtype=float), np.asarray(fprime(x), dtype=float)
    return x, f(x), fprime(x)


def spectral_divergence(x, f, fprime, *, block: int = 1 << 22):
    r"""Divergence of the spectral map ``F(B) = O f(diag(x)) O^T`` at a symmetric ``B``.

    ``x`` (``(d,)``): the eigenvalues of ``B``; ``f``, ``fprime``: the values ``f(x_i)``
    and ``f'(x_i)`` (arrays ``(d,)``), or vectorized callables mapping ``(d,)`` to
    ``(d,)``, applied to ``x``. Over the ``D = d(d+1)/2`` orthonormal coordinates of
    symmetric matrices
    ``div F = sum_i f'(x_i) + sum_{i<j} (f(x_i) - f(x_j)) / (x_i - x_j)``; eigenvalues
    closer than ``1e-12 max(1, max|x|)`` count as tied and use ``(f'(x_i) + f'(x_j)) / 2``.
    Works on numpy arrays (returns a float) and on jax arrays (returns a jax scalar,
    also under ``jax.jit``); memory ``O(block)`` per row block.
    """
    if callable(f) or callable(fprime):
        x, f, fprime = _apply_maps(x, f, fprime)
    xp = _xp(x, f, fprime)
    x, f, fprime = (_eigen_values(xp, n, v) for n, v in (("x", x), ("f", f), ("fprime", fprime)))
    d = x.shape[0]
    if f.shape != (d,) or fprime.shape != (d,):
        raise ValueError(f"f and fprime must have the shape (d,) = {x.shape} of x")
    tol = 1e-12 * xp.maximum(1.0, xp.max(xp.abs(x))) if d else 0.0
    total = xp.sum(fprime)
    for sl in _chunks(d, d, budget=block):
        rows = np.arange(sl.start, sl.stop)
        den = x[sl, None] - x[None, :]
        close = xp.abs(den) <= tol
        q = xp.where(
            close,
            0.5 * (fprime[sl, None] + fprime[None, :]),
            (f[sl, None] - f[None, :]) / xp.where(close, 1.0, den),
        )
        upper = np.arange(d)[None, :] > rows[:, None]
        total = total + xp.sum(xp.where(upper, q, 0.0))
    return float(total) if xp is np else total
