"""``lam = 0`` points the theory knows to be unsolvable (no unique minimiser), refused
at once by the drivers with the threshold named (:func:`check_lam0`).

Three tests, cheapest first: the proven bounds (fewer equations than unknowns,
Frobenius; noisy labels below ``1/(4 m_eff)``, nuclear), the noise-free tangent-cone
threshold, and, between ``1/(4 m_eff)`` and the small-noise bound (where
``alpha_interp`` lies), the rate at which the ``lam = 0`` state evolution's ``v`` runs
away (:mod:`attnlib.se.runaway`): a point is refused only where that rate is above 1 by
more than its QMC error, the change still to come and a margin of 0.02, so a point above
the threshold is never refused; within about 0.01 in ``alpha`` below it the verdict is
left open and the solve runs (and fails slowly). That test costs 5-20 state-evolution
maps at 2048 QMC points.
"""

from __future__ import annotations

import numpy as np

from attnlib import channels
from attnlib.se import runaway

__all__ = ["check_lam0"]


def _interpolation_bound(task, penalty) -> float:
    """The proven interpolation bound: with noisy labels (on the logits) and ``lam = 0``
    the ERM fits the data exactly below ``1/(4 m_eff)`` (nuclear + PSD; ``1/(2 m_eff)``
    Frobenius), so the ``lam = 0`` state evolution has no fixed point there (its ``v``
    runs off to infinity). 0 where that does not apply (noise-free labels, labels
    outside the range of the readout)."""
    if task.noise == 0.0 or task.m_eff <= 0:
        return 0.0
    if channels.for_task(task).labels_leave_range:
        return 0.0  # labels off the readout's range: the train loss stays positive
    return (0.25 if penalty == "nuclear" else 0.5) / task.m_eff


def _small_noise_bound(task, target) -> float:
    """``alpha_interp`` of noise-free labels at ``lam = 0``, nuclear + PSD: the PSD matrices
    that fit the data are S0 alone iff ``alpha > tangent_cone_dimension(kappa0) / m_eff``
    (:func:`attnlib.thresholds.interpolation_small_noise`; with noisy labels the upper end
    of the bracket of ``alpha_interp``); 0 where it does not apply (a target that is not
    PSD, labels outside the readout's range)."""
    if task.m_eff <= 0 or channels.for_task(task).labels_leave_range:
        return 0.0
    kappa0 = _psd_rank_fraction(target)
    if kappa0 is None:
        return 0.0
    # tangent_cone_dimension(kappa0) of attnlib.thresholds (which imports se: not imported
    # here), the statistical dimension over d^2 of the PSD cone's tangent cone at S0
    return (kappa0 - kappa0**2 / 2 + (1 - kappa0) ** 2 / 4) / task.m_eff


def _psd_rank_fraction(target) -> float | None:
    """The rank fraction in ``(0, 1]`` of a PSD target, None for another target."""
    if not all(hasattr(target, a) for a in ("measure", "outliers", "rank_fraction")):
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        atoms = np.asarray(target.measure().atoms)
    if np.any(atoms < -1e-12) or any(x < 0 for x in target.outliers()):
        return None
    k = float(target.rank_fraction)
    return k if 0.0 < k <= 1.0 else None


def _lam0_refusal(task, target, alpha, penalty) -> str | None:
    """Why ``lam = 0`` at ``alpha`` has no unique minimiser (the state evolution no fixed
    point: its ``v`` runs off to infinity), or None where the theory does not say so."""
    bound = _interpolation_bound(task, penalty)
    if penalty == "frobenius" and task.m_eff > 0 and alpha < 0.5 / task.m_eff:
        return (
            f"lam = 0 at alpha = {alpha:.4g} < 1/(2 m_eff) = {0.5 / task.m_eff:.4g}: fewer "
            "equations than the d^2/2 entries of S, so the Frobenius ERM has no unique "
            "minimiser at any noise (the loss is flat along the null space of the data). "
            f"Use lam > 0 (e.g. 1e-4), or alpha >= {0.5 / task.m_eff:.4g}."
        )
    if alpha < bound:
        top = _small_noise_bound(task, target)
        where = f"; alpha_interp at this noise lies in [{bound:.4g}, {top:.4g}]" if top else ""
        return (
            f"lam = 0 at alpha = {alpha:.4g} < 1/(4 m_eff) = {bound:.4g} with noisy labels "
            "has no state-evolution fixed point: the ERM interpolates the data there (train "
            f"loss 0, no unique minimiser; attnlib.thresholds.interpolation){where}. Use "
            f"lam > 0 (e.g. 1e-4), or alpha >= {bound:.4g}; "
            "attnlib.thresholds.interpolation_se gives the threshold at this noise."
        )
    free = _small_noise_bound(task, target) if penalty == "nuclear" and task.noise == 0 else 0.0
    if alpha < free:
        return (
            f"lam = 0 at alpha = {alpha:.4g} < alpha_interp = {free:.4g} (noise-free labels: "
            "tangent_cone_dimension(kappa0) / m_eff, attnlib.thresholds."
            "interpolation_small_noise): the PSD matrices that fit the data are not S0 alone, "
            f"the minimiser is not unique. Use lam > 0 (e.g. 1e-4), or alpha >= {free:.4g}."
        )
    return None


# the runaway test of check_lam0: QMC points, margin on the rate, most maps
_QUICK = dict(n_qmc=2048, n_rep=4, seed=0, margin=0.02, max_maps=20)


def _runaway_refusal(task, target, alpha, penalty) -> str | None:
    """The refusal of the runaway test (module docstring), or None where it does not
    refuse (above the small-noise bound, undecided, or a fixed point)."""
    top = _small_noise_bound(task, target)
    if penalty != "nuclear" or task.noise == 0.0 or not alpha < top:
        return None
    if not _interpolation_bound(task, penalty) > 0:
        return None
    verdict = runaway.decided(task, target, alpha)
    rate = None
    if verdict == 0:
        try:
            rate = runaway.growth_rate(task, target, alpha, **_QUICK)
        except (ValueError, FloatingPointError, ArithmeticError):
            return None  # no verdict: the solve runs
        verdict = rate.verdict
    if verdict <= 0:
        return None
    measured = (
        ""
        if rate is None
        else (f" (the rate is {rate.rate:.3f} +- {rate.stderr:.1e} per map, > 1)")
    )
    return (
        f"lam = 0 at alpha = {alpha:.4g} is below the interpolation threshold: the ERM "
        "fits the noisy labels exactly there (train loss 0, no unique minimiser) and the "
        "lam = 0 state evolution has no fixed point, its v runs away geometrically"
        f"{measured}. alpha_interp lies in ({alpha:.4g}, {top:.4g}]: "
        "attnlib.thresholds.interpolation_se(task, target) computes it (for the linear "
        "task and seq2seq also in closed form, attnlib.thresholds.interpolation_formula). "
        "Use lam > 0 (e.g. 1e-4), alpha above alpha_interp, or "
        "attnlib.thresholds.ridgeless_limit (linear, seq2seq) for the lam -> 0+ limit."
    )


def check_lam0(task, target, alphas, lam, penalty):
    """``ValueError`` within seconds for ``lam = 0`` where the theory knows there is no
    unique minimiser (the solver would search for minutes and return NaN, or a point at
    ``v = 1e21``): the smallest ``alpha`` is checked and named, with where ``alpha_interp``
    lies (module docstring)."""
    if lam != 0.0:
        return
    for a in sorted(float(x) for x in np.asarray(alphas).reshape(-1)):
        why = _lam0_refusal(task, target, a, penalty)
        if why is None:
            why = _runaway_refusal(task, target, a, penalty)
        if why is not None:
            raise ValueError(why)
        return  # only the smallest alpha can be below a bound
