r"""The nuclear + PSD denoiser: the soft threshold ``f(x) = (c x - tau)_+``, optionally cut.

In the state evolution ``c = m_hat / a_hat`` and ``tau = lam / a_hat``
(:mod:`attnlib.se.input`). The rank-constrained student (:mod:`attnlib.width`) keeps
only the eigenvalues above a cut ``x_kappa`` (the top-``kappa`` quantile of ``rho_R``):
``f(x) = (c x - tau)_+ 1[x > cut]``, ``cut = -inf`` for no constraint. The integrals
are those of :mod:`attnlib.denoisers.spectral`, with the kinks ``tau / c`` and ``cut``
passed to the quadrature as breakpoints.
"""

from __future__ import annotations

import math

import numpy as np

from attnlib.denoisers.spectral import Integrals, integrate
from attnlib.rmt.quadrature import deformed_spectrum
from attnlib.spectral_map import SpectralMap

__all__ = ["nuclear_integrals", "nuclear_spectrum"]


def nuclear_spectrum(target, Delta: float, c: float, tau: float, cut=-math.inf):
    """The quadrature of ``rho_R`` with the map's kinks ``tau / c`` (and ``cut``) as
    breakpoints: what :func:`nuclear_integrals` integrates, for callers that need the
    same spectrum for more (the Jacobian of :mod:`attnlib.se.propagation`)."""
    cuts = (tau / c, cut) if math.isfinite(cut) else (tau / c,)
    return deformed_spectrum(target, Delta, breakpoints=cuts)


def nuclear_integrals(
    target, Delta: float, c: float, tau: float, cut=-math.inf, *, spec=None
) -> Integrals:
    """:class:`~attnlib.denoisers.spectral.Integrals` of ``f(x) = (c x - tau)_+ 1[x > cut]``
    against ``rho_R`` of ``S0 + sqrt(Delta) W_goe`` (``c > 0``, ``tau >= 0``); ``spec``:
    :func:`nuclear_spectrum` at the same arguments, computed if None."""
    fmap = SpectralMap(c, tau, "nuclear")
    if spec is None:
        spec = nuclear_spectrum(target, Delta, c, tau, cut)
    x = np.asarray(spec.x)
    return integrate(spec, fmap.f(x) * (x > cut))
