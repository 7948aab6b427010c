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

__all__ = ["nuclear_integrals"]


def nuclear_integrals(target, Delta: float, c: float, tau: float, cut=-math.inf) -> Integrals:
    """:class:`~attnlib.denoisers.spectral.Integrals` of ``f(x) = (c x - tau)_+ 1[x > cut]``
    against ``rho_R`` of ``S0 + sqrt(Delta) W_goe`` (``c > 0``, ``tau >= 0``)."""
    fmap = SpectralMap(c, tau, "nuclear")
    cuts = (tau / c, cut) if math.isfinite(cut) else (tau / c,)
    spec = deformed_spectrum(target, Delta, breakpoints=cuts)
    x = np.asarray(spec.x)
    return integrate(spec, fmap.f(x) * (x > cut))
