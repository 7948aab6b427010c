"""Spectral denoisers: the input side of the state evolution, one integrator for all.

:mod:`~attnlib.denoisers.spectral` integrates any spectral map against ``rho_R``
(``q, m, div, trace, rank``); :mod:`~attnlib.denoisers.nuclear` is the soft threshold of
the nuclear + PSD penalty, :mod:`~attnlib.denoisers.constrained` the same cut at a
quantile of ``rho_R`` for the rank-constrained student, :mod:`~attnlib.denoisers.rie` the
rotationally invariant estimator (the Bayes-optimal denoiser: ``mmse_den``, the spectral
map and :class:`~attnlib.denoisers.rie.RIE`, GAMP-RIE's denoiser). The library's layout
is mapped in ``attnlib/ARCHITECTURE.md``.
"""

from __future__ import annotations

from attnlib.denoisers.spectral import Integrals, integrate  # isort: skip
from attnlib.denoisers.nuclear import nuclear_integrals, nuclear_spectrum  # isort: skip
from attnlib.denoisers.constrained import binding_cut, constrained_integrals

__all__ = [
    "Integrals",
    "integrate",
    "nuclear_integrals",
    "nuclear_spectrum",
    "binding_cut",
    "constrained_integrals",
]
