r"""Random-matrix toolkit: free convolution of a target spectrum with the semicircle.

Conventions (the book's "Notation and conventions" page, ``book/notation.md``):

- ``W_goe`` is symmetric with off-diagonal variance ``1/d`` and diagonal variance
  ``2/d``; its spectrum tends to the semicircle on ``[-2, 2]``.
- ``R = S0 + sqrt(Delta) W_goe``. Its limiting eigenvalue density ``rho_R`` is the
  free convolution of the target's spectral measure ``mu`` with the semicircle of
  variance ``Delta``.
- Stieltjes transforms are ``G(z) = int rho(t) / (z - t) dt`` (so ``G ~ 1/z`` at
  infinity and ``Im G < 0`` for ``Im z > 0``); on the real line
  ``rho_R(x) = -Im G_R(x + i0) / pi`` and ``h_R(x) = Re G_R(x + i0)`` (principal value).

Subordination: ``G_R(z) = G_mu(omega(z))`` with ``omega(z) = z - Delta G_R(z)``, i.e.
``omega`` solves ``H(omega) = z`` for ``H(w) = w + Delta G_mu(w)``. For real ``x`` we use
Biane's description of the boundary values: with
``F(u, v) = int mu(dt) / ((u - t)^2 + v^2)``, the set ``U = {u : F(u, 0) > 1/Delta}``
(which contains the support of ``mu``) is mapped by ``u -> x(u) = Re H(u + i v(u))``
increasingly onto the support of ``rho_R``, where ``v(u) > 0`` solves
``F(u, v) = 1/Delta``. On that curve::

    rho_R(x(u)) = v(u) / (pi Delta),    h_R(x(u)) = Re G_mu(u + i v(u)),
    dx/du = |H'(w)|^2 / Re H'(w),  w = u + i v(u).

The edges of ``rho_R`` are ``H(u)`` at the boundary points of ``U`` (``F(u, 0) = 1/Delta``),
and each connected piece of the support carries the ``mu``-mass of the matching
piece of ``U``. The curve parameter ``u`` is smooth across square-root edges.

A target enters through its limiting measure (:mod:`~attnlib.rmt.law`: closed form for
the Wishart family, else the atoms of ``target.measure(n_atoms)``, which for small
``Delta`` become separate small bumps of ``rho_R``); its isolated eigenvalues (spikes)
through :func:`outliers`.

References: P. Biane, "On the free convolution with a semi-circular distribution",
Indiana Univ. Math. J. 46 (1997); M. Capitaine, C. Donati-Martin, D. Feral, M. Fevrier,
"Free convolution with a semicircular distribution and eigenvalues of spiked
deformations of Wigner matrices", Electron. J. Probab. 16 (2011).
"""

from __future__ import annotations

from attnlib.rmt.divergence import (
    SpectralIntegrals,
    conditional_overlap,
    spectral_divergence,
    spectral_integrals,
    stein_mse,
)
from attnlib.rmt.outliers import Outlier, isolated_eigenvalues, outliers
from attnlib.rmt.quadrature import DeformedSpectrum, deformed_spectrum
from attnlib.rmt.semicircle import semicircle_density, semicircle_stieltjes
from attnlib.rmt.stieltjes import cdf, density, stieltjes
from attnlib.rmt.support import support

__all__ = [
    "DeformedSpectrum",
    "Outlier",
    "SpectralIntegrals",
    "cdf",
    "conditional_overlap",
    "deformed_spectrum",
    "density",
    "isolated_eigenvalues",
    "outliers",
    "semicircle_density",
    "semicircle_stieltjes",
    "spectral_divergence",
    "spectral_integrals",
    "stein_mse",
    "stieltjes",
    "support",
]
