"""The paper's power-law target ``sqrt(d) i^{-gamma}`` (public as
:class:`attnlib.targets.PaperPowerLaw`; arXiv:2509.24914 v2, Appendix E)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from attnlib import _checks
from attnlib.targets.base import SpectralMeasure, Target, _from_eigen

__all__ = ["PaperPowerLaw"]


@dataclasses.dataclass(frozen=True)
class PaperPowerLaw(Target):
    r"""The power-law target of the paper's scaling laws: eigenvalues ``sqrt(d) i^{-gamma}``.

    At size ``d`` the eigenvalues are ``lambda_i = sqrt(d) i^{-gamma}``, ``i = 1..d``, with
    Haar eigenvectors (arXiv:2509.24914 v2, Appendix E, boncoraglio2025attention).
    ``Q0 = Tr(S0^2) / d = sum_{i <= d} i^{-2 gamma}`` stays ``O(1)`` for ``gamma > 1/2``
    (it tends to ``zeta(2 gamma)``): the target is *effectively low rank*. Its eigenvalues
    are ``O(sqrt(d))``, so it has **no** ``O(1)`` limiting spectral density: its state
    evolution is the finite-``d`` one, fed with the ``d`` atoms of its empirical spectrum
    (the paper's Conjecture E.1: :mod:`attnlib.scaling.paper`). Unlike :class:`PowerLaw`
    (a limiting density) and :class:`PowerLawModes` (extensive groups, ``alpha = O(1)``),
    every eigenvalue is its own direction and the regime is ``d << n << d^2``.

    ``PaperPowerLaw(gamma).at(d)`` is the target at size ``d``; ``measure()`` needs ``d``
    (``ValueError`` without it); :meth:`sample` takes any ``d``.

    Attributes:
      gamma: decay exponent, in ``(1/2, GAMMA_MAX]``.
      d: the size whose spectrum :meth:`measure` returns (``None``: not fixed yet).
    """

    gamma: float = 1.0
    d: int | None = None

    GAMMA_MAX = 50.0  # beyond it every eigenvalue but the first underflows

    def __post_init__(self):
        _checks.in_interval("gamma", self.gamma, 0.5, self.GAMMA_MAX)
        if self.d is not None:
            _checks.integer("d", self.d, 1)

    def at(self, d: int) -> PaperPowerLaw:
        """The same target at size ``d`` (whose :meth:`measure` is the ``d`` atoms)."""
        return dataclasses.replace(self, d=_checks.integer("d", d, 1))

    def rank_eigenvalues(self, d: int) -> np.ndarray:
        """``sqrt(d) i^{-gamma}``, ``i = 1..d``: the ``d`` eigenvalues, largest first."""
        d = _checks.integer("d", d, 1)
        return math.sqrt(d) * np.arange(1, d + 1, dtype=float) ** (-float(self.gamma))

    def eigenvalues(self, d: int) -> np.ndarray:
        """The ``d`` eigenvalues of :meth:`sample`, ascending."""
        return self.rank_eigenvalues(d)[::-1].copy()

    def sample(self, key, d):
        """``S0 = O diag(sqrt(d) i^{-gamma}) O^T`` with ``O = haar_orthogonal(key, d)``."""
        return _from_eigen(key, self.rank_eigenvalues(d))

    def measure(self, n_atoms: int = 4000) -> SpectralMeasure:
        """The empirical spectrum at size :attr:`d`: ``d`` atoms of weight ``1/d``
        (``n_atoms`` is ignored). ``ValueError`` when :attr:`d` is ``None``."""
        if self.d is None:
            raise ValueError(
                "d: PaperPowerLaw has no O(1) limiting spectrum; fix the size with .at(d) "
                "(an integer >= 1) before asking for its measure"
            )
        lam = self.eigenvalues(self.d)
        return SpectralMeasure(lam, np.full(lam.size, 1.0 / lam.size))

    @property
    def Q0(self) -> float:
        """``Tr(S0^2) / d = sum_{i <= d} i^{-2 gamma}`` at size :attr:`d`."""
        return float(self.measure().moment(2))
