r"""Target matrices ``S0`` of the attention-indexed model and their limiting spectra.

Every target is a frozen dataclass that can

- :meth:`Target.sample` a symmetric ``d x d`` matrix ``S0`` from an explicit PRNG key,
- describe the large-``d`` limit of its eigenvalue distribution as a
  :class:`SpectralMeasure` (atoms and weights) through :meth:`Target.measure`,
  plus a tuple of isolated eigenvalues :meth:`Target.outliers` that carry no mass
  in the limit (spiked targets),
- report ``Q0 = lim Tr(S0^2) / d`` and its rank fraction :attr:`Target.rank_fraction`.

Random-matrix routines (:mod:`attnlib.rmt`) work with any target through
:meth:`Target.measure`; the Wishart family also has a closed-form Stieltjes
transform used to test them.
"""

from attnlib.targets.base import (
    SpectralMeasure,
    Target,
    atoms_and_weights,
    haar_orthogonal,
    quantile_atoms,
)
from attnlib.targets.families import Explicit, PowerLaw, PowerLawModes, Spiked, Wishart
from attnlib.targets.paper_power_law import PaperPowerLaw

__all__ = [
    "Explicit",
    "PaperPowerLaw",
    "PowerLaw",
    "PowerLawModes",
    "SpectralMeasure",
    "Spiked",
    "Target",
    "Wishart",
    "atoms_and_weights",
    "haar_orthogonal",
    "quantile_atoms",
]

# The public names live at ``attnlib.targets`` (their documented and pickled address),
# whichever file of the package defines them.
for _name in __all__:
    globals()[_name].__module__ = __name__
del _name
