r"""Spectra of the learned weights and the four-part decomposition of the test error.

Conventions: the book's "Notation and conventions" page (``book/notation.md``).
The state evolution (:mod:`attnlib.se`) says that the learned matrix behaves, in
the limit ``d -> infinity``, like a spectral map of a *deformed target*::

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

Singular values of the factor ``W`` ``(d, p)`` of the factorised student
(:func:`singular_values_W`): ``W W^T = sqrt(p d) S_hat`` gives ``sigma_i(W / sqrt(d)) =
kappa^(1/4) sqrt(s_i(S_hat))`` (``W / sqrt(d)``: ``O(1)`` singular values at
initialisation).

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

from attnlib.spectral_map import PENALTIES
from attnlib.spectrum.decomposition import (
    ErrorDecomposition,
    decompose,
    decompose_trained,
    optimal_scale,
)
from attnlib.spectrum.directions import (
    DirectionProfile,
    TopOverlaps,
    direction_profile,
    direction_statistics,
    kept_mass_in_range,
    overlap_density,
    top_overlaps,
)
from attnlib.spectrum.heads import HeadSpectra, head_spectra, layer_head_spectra
from attnlib.spectrum.learned import (
    LearnedOutlier,
    LearnedSpectrum,
    SingularValueLaw,
    learned_spectrum,
    singular_values_W,
    spectral_function,
)

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
    "TopOverlaps",
    "kept_mass_in_range",
    "top_overlaps",
    "HeadSpectra",
    "head_spectra",
    "layer_head_spectra",
]
