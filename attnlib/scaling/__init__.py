r"""Power-law targets, sequential recovery of their modes, and scaling laws.

Package layout (one idea per module; every public name is importable from
:mod:`attnlib.scaling`): the target family :class:`PowerLawModes` lives in
:mod:`attnlib.targets`; :mod:`~attnlib.scaling.recovery` (recovered modes),
:mod:`~attnlib.scaling.schedule` (:class:`LamSchedule`), :mod:`~attnlib.scaling.curve`
(:func:`excess_risk_curve`), :mod:`~attnlib.scaling.fitting` (:func:`fit_power_law`),
:mod:`~attnlib.scaling.exponents` (:func:`predicted_exponent`),
:mod:`~attnlib.scaling.paper` (the paper's power-law regime, :func:`paper_exponent`),
:mod:`~attnlib.scaling.lasso_se` and :mod:`~attnlib.scaling.lasso_solver` (the LASSO
comparison).

The target family (:class:`PowerLawModes`). ``S0`` has ``n_modes`` eigenvalue groups
("modes") ``k = 1..n_modes`` with eigenvalue ``lambda_k = A k^{-gamma}`` and multiplicity
``pi_k d``, ``pi_k = kappa0 k^{-beta} / sum_j j^{-beta}`` (``beta = share_exponent``; the
default ``beta = 0`` splits the rank ``kappa0 d`` equally), the remaining ``(1 - kappa0) d``
eigenvalues zero, Haar eigenvectors, and ``A`` fixed by ``Q0 = sum_k pi_k lambda_k^2 = 1``.
Every group is extensive, so the large-``d`` limit at fixed ``n_modes`` is an atomic
spectral measure (no outliers) and the state evolution applies unchanged. The
counting function ``rho(t) = sum_{lambda_k > t} pi_k`` grows like ``t^{-r}`` with

    r = (1 - beta) / gamma,

which is the only property of the family that the exponents below depend on, in the
window ``1 << k*(t) << n_modes`` of thresholds ``t`` (``k*(t)`` the number of modes
above ``t``).

Recovered modes. The eigenvectors of ``R`` kept by the learned spectral map split into
the spectral components of the modes; a mode is *recovered* when more than half of its
eigenspace is learned (:func:`recovered_modes`, :func:`recovered_modes_trained`; the
derivation in :mod:`attnlib.scaling.recovery`).

Scaling laws. :func:`excess_risk_curve` runs the state evolution along ``alpha`` with a
penalty schedule ``lam = lam0 (alpha / alpha_ref)^{-nu}`` (:class:`LamSchedule`; at fixed
``d``, ``n = alpha d^2`` so this is ``lam ~ n^{-nu}``), :func:`fit_power_law` fits
``e - e0 ~ C alpha^{-zeta}`` by least squares in log-log coordinates, and
:func:`predicted_exponent` gives the derived ``zeta`` (derivation in book/08_scaling_laws).

LASSO comparison (vector compressed sensing): the LASSO on a vector whose entries
follow the target's spectral measure, its state evolution :func:`lasso_se` (the
equations in :mod:`attnlib.scaling.lasso_se`) and :func:`lasso_solve`, a small FISTA
solver used to check it at finite ``N``.
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
