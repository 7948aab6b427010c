r"""The integrals of a spectral map against ``rho_R`` on a quadrature of it, numpy only.

``R = S0 + sqrt(Delta) W_goe``; a spectral map keeps the eigenvectors of ``R`` and maps
each eigenvalue ``x`` through a scalar ``f``. On the quadrature of
:func:`attnlib.rmt.deformed_spectrum` (nodes ``x``, weights ``w``, Hilbert transform
``h_R``), :func:`integrate` returns::

    q     = int rho_R f^2                    (lim Tr F(R)^2 / d)
    m     = int rho_R f (x - 2 Delta h_R)    (lim Tr F(R) S0 / d)
    div   = int rho_R f h_R                  (lim div F / d^2)
    trace = int rho_R f                      (lim Tr F(R) / d)
    rank  = int_{f != 0} rho_R               (lim rank F(R) / d)

The one integrator of the library against ``rho_R``: every denoiser
(:mod:`attnlib.denoisers`, which re-exports it from :mod:`attnlib.denoisers.spectral`)
and :func:`attnlib.rmt.spectral_integrals` call it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from attnlib.rmt.quadrature import DeformedSpectrum

__all__ = ["Integrals", "integrate"]


class Integrals(NamedTuple):
    """The integrals of a spectral map ``F(R)`` against ``rho_R`` (module docstring)."""

    q: float  # int rho_R f^2
    m: float  # int rho_R f (x - 2 Delta h_R)
    div: float  # int rho_R f h_R
    trace: float  # int rho_R f
    rank: float  # mass of rho_R where f != 0


def integrate(spec: DeformedSpectrum, fx) -> Integrals:
    """:class:`Integrals` on the quadrature ``spec`` from ``fx``, the values of ``f`` at
    its nodes ``spec.x`` (an array of their shape; not checked: callers validate)."""
    x, w, h = np.asarray(spec.x), np.asarray(spec.w), np.asarray(spec.hilbert)
    fx = np.asarray(fx, dtype=float)
    wf = w * fx
    return Integrals(
        float(np.sum(wf * fx)),
        float(np.sum(wf * (x - 2.0 * spec.Delta * h))),
        float(np.sum(wf * h)),
        float(np.sum(wf)),
        float(np.sum(w[fx != 0])),
    )
