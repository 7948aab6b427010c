r"""The integrals of a spectral map against ``rho_R``, once for every penalty.

A spectral denoiser keeps the eigenvectors of ``R = S0 + sqrt(Delta) W_goe`` and maps
each eigenvalue ``x`` through a scalar ``f``. At large ``d`` its overlaps are integrals
against the limiting spectrum ``rho_R`` (:func:`attnlib.rmt.deformed_spectrum`), with
``h_R`` the Hilbert transform of ``rho_R`` and ``x - 2 Delta h_R(x)`` the conditional
overlap ``E[v^T S0 v | x]`` of an eigenvector ``v`` of ``R``::

    q     = int rho_R f^2                    (lim Tr F(R)^2 / d)
    m     = int rho_R f (x - 2 Delta h_R)    (lim Tr F(R) S0 / d)
    div   = int rho_R f h_R                  (lim div F / d^2)
    trace = int rho_R f                      (lim Tr F(R) / d)
    rank  = int_{f != 0} rho_R               (lim rank F(R) / d)

Every input side of attnlib is this integrator with its own ``f``: the soft threshold of
the nuclear + PSD penalty, cut at a quantile of ``rho_R`` for the rank-constrained
student (:mod:`attnlib.denoisers.nuclear`), the RIE ``x - 2 Delta h_R`` of the
Bayes-optimal denoiser (:mod:`attnlib.denoisers.rie`), or any callable
(:func:`attnlib.rmt.spectral_integrals`).

This module is numpy only (no import of :mod:`attnlib.rmt`, which calls it): the
quadrature comes in as an argument.
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
