"""The probe of :func:`attnlib.thresholds.interpolation_se_bracket` below the threshold:
whether the ``lam = 0`` state evolution runs away (:mod:`attnlib.se.runaway`), decided in
a few maps instead of a solve that runs to its iteration limit."""

from __future__ import annotations

import logging

from attnlib.se import SESettings, runaway

log = logging.getLogger("attnlib.thresholds")

# the rate is iterated until its change still to come is below this (the sign of rate - 1
# is the verdict: at 2 % of rate change per 1 % of alpha, 1e-5 is 5e-6 relative in alpha)
_TOL = 1e-5
_MAX_MAPS = 80


def interpolates(task, target, alpha, se_kwargs) -> bool:
    """Whether the ``lam = 0`` state evolution at ``alpha`` has no fixed point: its ``v``
    runs away at a rate above 1 (at the QMC points ``n_qmc``, ``n_rep``, ``seed`` of
    ``se_kwargs``, the solves' own). False where the rate is below 1, or not finite."""
    qmc = {k: se_kwargs[k] for k in ("n_qmc", "n_rep", "seed") if se_kwargs.get(k) is not None}
    qmc.setdefault("n_qmc", SESettings().n_qmc)  # the solves' default
    # every probe starts cold: a warm start from the probe below follows the running-away
    # branch (the limit map can have two fixed points) and gives wrong rates; cold starts
    # agree with the closed form (test_lam0_runaway)
    r = runaway.growth_rate(task, target, alpha, tol=_TOL, max_maps=_MAX_MAPS, **qmc)
    msg = "interpolation_se: alpha %.5g: v runs away at the rate %.5f +- %.1e per map (%d maps)"
    log.info(msg, alpha, r.rate, r.stderr, r.n_maps)
    return bool(r.rate > 1.0)
