r"""The integrals of a spectral map against ``rho_R``, once for every penalty.

A spectral denoiser keeps the eigenvectors of ``R = S0 + sqrt(Delta) W_goe`` and maps each
eigenvalue ``x`` through a scalar ``f``; its large-``d`` overlaps ``q``, ``m``, ``div``,
``trace`` and ``rank`` are the integrals of :mod:`attnlib.rmt.integrals`. Every input side
of attnlib is this integrator with its own ``f`` (:mod:`attnlib.denoisers.nuclear`,
:mod:`attnlib.denoisers.rie`, or any callable: :func:`attnlib.rmt.spectral_integrals`).
The integrator lives in :mod:`attnlib.rmt` so that rmt imports nothing of denoisers.
"""

from attnlib.rmt.integrals import Integrals, integrate

__all__ = ["Integrals", "integrate"]
