"""Proximal maps of the penalties: spectral maps with ``c = 1`` and ``tau = t``.

``prox_{t Tr + PSD}(B)`` maps the eigenvalues ``x -> (x - t)_+`` and
``prox_{(t/2)||.||_F^2}(B) = B / (1 + t)``: :class:`attnlib.spectral_map.SpectralMap`
with ``c = 1``, ``tau = t`` and the penalty.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from attnlib import _checks
from attnlib.spectral_map import SpectralMap
from attnlib.train.objective import _sym

__all__ = ["prox_nuclear_psd", "prox_frobenius"]


@jax.jit
def _prox_nuclear_psd(B, t):
    w, V = jnp.linalg.eigh(_sym(B))
    return _sym((V * SpectralMap(1.0, t, "nuclear").f(w)[None, :]) @ V.T)


def prox_nuclear_psd(B, t: float) -> jax.Array:
    """Proximal map of ``t Tr S + indicator(S PSD)`` at the symmetric ``B``.

    ``argmin_{S PSD} (1/2)||S - B||_F^2 + t Tr S``: eigenvalues ``x -> max(x - t, 0)``,
    eigenvectors kept. ``B`` is symmetrised first.
    """
    t = _checks.nonnegative("t", t)
    B = jnp.asarray(_checks.square_matrix("B", B))
    return _prox_nuclear_psd(B, t)


def prox_frobenius(B, t: float) -> jax.Array:
    """Proximal map of ``(t/2)||S||_F^2`` at ``B``: ``B / (1 + t)``.

    Eigenvalues ``x -> x / (1 + t)``; ``B`` is symmetrised first.
    """
    t = _checks.nonnegative("t", t)
    B = jnp.asarray(_checks.square_matrix("B", B))
    return _sym(B) / (1.0 + t)


def _prox(B, t, penalty: str):
    if penalty == "nuclear":
        return _prox_nuclear_psd(B, t)
    return _sym(B) / (1.0 + t)
