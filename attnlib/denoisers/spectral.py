r"""The integrals of a spectral map against ``rho_R``, once for every penalty.

A spectral denoiser keeps the eigenvectors of ``R = S0 + sqrt(Delta) W_goe`` and maps
each eigenvalue ``x`` through a scalar ``f``. At large ``d`` its overlaps ``q``, ``m``,
``div``, ``trace`` and ``rank`` are integrals against the limiting spectrum ``rho_R``
(formulas in :mod:`attnlib.rmt.integrals`), with ``x - 2 Delta h_R(x)`` the conditional
overlap ``E[v^T S0 v | x]`` of an eigenvector ``v`` of ``R``.

Every input side of attnlib is this integrator with its own ``f``: the soft threshold of
the nuclear + PSD penalty, cut at a quantile of ``rho_R`` for the rank-constrained
student (:mod:`attnlib.denoisers.nuclear`), the RIE ``x - 2 Delta h_R`` of the
Bayes-optimal denoiser (:mod:`attnlib.denoisers.rie`), or any callable
(:func:`attnlib.rmt.spectral_integrals`).

The integrator itself lives in :mod:`attnlib.rmt.integrals` (numpy only, beside the
quadrature it sums over), so that :mod:`attnlib.rmt` imports nothing of
:mod:`attnlib.denoisers`; this module is where the denoisers take it from.
"""

from attnlib.rmt.integrals import Integrals, integrate

__all__ = ["Integrals", "integrate"]
