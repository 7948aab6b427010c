r"""Power-law targets, sequential recovery of their modes, and scaling laws.

Every public name is importable from :mod:`attnlib.scaling`; one idea per module.

The target family :class:`PowerLawModes` (defined in :mod:`attnlib.targets`: ``n_modes``
extensive groups ``lambda_k = A k^{-gamma}`` of shares ``pi_k ~ k^{-beta}``,
``beta = share_exponent``) has the counting function ``rho(t) = sum_{lambda_k > t} pi_k
~ t^{-r}`` with

    r = (1 - beta) / gamma,

the only property of the family that the exponents depend on, in the window ``1 <<
k*(t) << n_modes`` of thresholds ``t`` (``k*(t)`` the number of modes above ``t``).

Recovered modes (:mod:`~attnlib.scaling.recovery`): a mode is *recovered* when more than
half of its eigenspace is learned (:func:`recovered_modes`,
:func:`recovered_modes_trained`).

Scaling laws. :func:`excess_risk_curve` (:mod:`~attnlib.scaling.curve`) runs the state
evolution along ``alpha`` with a penalty schedule ``lam = lam0 (alpha /
alpha_ref)^{-nu}`` (:class:`LamSchedule`; at fixed ``d`` this is ``lam ~ n^{-nu}``),
:func:`fit_power_law` fits ``e - e0 ~ C alpha^{-zeta}`` in log-log coordinates, and
:func:`predicted_exponent` gives the derived ``zeta`` (book/08_scaling_laws);
:func:`paper_exponent` (:mod:`~attnlib.scaling.paper`) the paper's power-law regime.

LASSO comparison (vector compressed sensing): the LASSO on a vector whose entries follow
the target's spectral measure, its state evolution :func:`lasso_se` and
:func:`lasso_solve`, a small FISTA solver that checks it at finite ``N``.
"""

from attnlib.scaling.curve import ExcessRiskCurve, excess_risk_curve
from attnlib.scaling.exponents import ExponentPrediction, predicted_exponent
from attnlib.scaling.fitting import PowerLawFit, fit_power_law
from attnlib.scaling.lasso_se import LassoSE, lasso_curve, lasso_se
from attnlib.scaling.lasso_solver import (
    LassoFit,
    lasso_data,
    lasso_recovered_fractions,
    lasso_solve,
)
from attnlib.scaling.paper import PaperExponent, paper_exponent, paper_point
from attnlib.scaling.recovery import (
    RecoveredModes,
    SpectralSummary,
    count_recovered,
    recovered_modes,
    recovered_modes_trained,
    spectral_summary,
)
from attnlib.scaling.schedule import LamSchedule, threshold_window
from attnlib.targets import PowerLawModes

__all__ = [
    "PowerLawModes",
    "RecoveredModes",
    "SpectralSummary",
    "count_recovered",
    "recovered_modes",
    "recovered_modes_trained",
    "spectral_summary",
    "LamSchedule",
    "threshold_window",
    "ExcessRiskCurve",
    "excess_risk_curve",
    "PowerLawFit",
    "fit_power_law",
    "ExponentPrediction",
    "predicted_exponent",
    "PaperExponent",
    "paper_exponent",
    "paper_point",
    "LassoSE",
    "LassoFit",
    "lasso_se",
    "lasso_curve",
    "lasso_solve",
    "lasso_data",
    "lasso_recovered_fractions",
]
