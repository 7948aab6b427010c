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

Recovered modes. In the state evolution the learned matrix is ``S_hat = F(R)`` with
``R = S0 + sqrt(Delta_eff) W_goe`` and ``f(x) = (c x - tau)_+``: the eigenvectors of ``R``
with eigenvalue above ``t = tau / c`` are kept. Writing ``omega(x) = u + i v`` for the
subordination function at ``x + i0`` (``u = x - Delta h_R(x)``, ``v = pi Delta rho_R(x)``),
``G_R(x) = sum_k pi_k / (omega - lambda_k)`` (plus the zero eigenvalues), so the density
of ``R`` splits into the spectral components of the modes, ``rho_R = sum_k rho_k + rho_null``
with

    rho_k(x) / rho_R(x) = pi_k Delta / ((u - lambda_k)^2 + v^2) = E[ ||P_k v_x||^2 | x ],

``P_k`` the projector on the eigenspace of mode ``k`` and ``v_x`` a unit eigenvector of ``R``
at ``x`` (the share of mode ``k`` among the eigenvectors at ``x``). The learned fraction of
mode ``k`` is ``phi_k = int_{x > t} rho_k / pi_k``, the limit of
``||P_+ P_k||_F^2 / (pi_k d)`` with ``P_+`` the projector on the range of ``S_hat``. A mode
is *recovered* when ``phi_k > 1/2`` (:func:`recovered_modes`); the same
fractions of a trained matrix are :func:`recovered_modes_trained`.

Scaling laws. :func:`excess_risk_curve` runs the state evolution along ``alpha`` with a
penalty schedule ``lam = lam0 (alpha / alpha_ref)^{-nu}`` (:class:`LamSchedule`; at fixed
``d``, ``n = alpha d^2`` so this is ``lam ~ n^{-nu}``), :func:`fit_power_law` fits
``e - e0 ~ C alpha^{-zeta}`` by least squares in log-log coordinates, and
:func:`predicted_exponent` gives the derived ``zeta`` (derivation in book/08_scaling_laws).

LASSO comparison (vector compressed sensing). ``y = A x0 + sqrt(noise) w`` with ``A`` an
``n x N`` matrix of i.i.d. ``N(0, 1/N)`` entries (each measurement has variance
``||x0||^2 / N``, like a pre-activation ``h``), ``delta = n / N``, and the LASSO
``min_x (1/2) ||y - A x||^2 + lam ||x||_1``. The entries of ``x0`` follow the target's
spectral measure (a fraction ``pi_k`` of the entries equals ``lambda_k``), so the vector
and the matrix problems share their "spectrum". The state evolution of Bayati and
Montanari / Donoho, Maleki and Montanari (:func:`lasso_se`) reads, with the soft
threshold ``eta(x; theta) = sign(x) (|x| - theta)_+`` and ``X = X0 + tau Z``::

    tau^2 = (noise + E[(eta(X; theta) - X0)^2]) / delta,
    theta = lam / (delta - P(|X| > theta)),

the second line being the calibration between ``lam`` and the threshold (the LASSO
normalisation above is the textbook one with ``A -> A / sqrt(delta)``,
``lam -> lam / delta``, ``noise -> noise / delta``). :func:`lasso_solve` is a small
FISTA solver used to check it at finite ``N``.
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
