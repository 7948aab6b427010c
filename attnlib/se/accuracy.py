"""The error of a state-evolution fixed point, and a solve to a requested accuracy.

``SEResult.integration_error`` of :func:`attnlib.se.solve` is the QMC standard error of
the output-side integrals at the returned point. The fixed point amplifies it: the
map's QMC noise moves the point itself, roughly by ``1/(1 - rho)`` with ``rho`` the
map's contraction factor, so the metrics can move much more than the integrals' error
says (softmax ``T = 3``: the mse moved 7-8 % between QMC seeds at 8192 points, with
integrals accurate to 0.6 %). :func:`solve_accurate` measures the error of the metrics
themselves: it solves the same point with independent QMC scramblings (``seed``),
each to its own fixed point, and takes the spread; it doubles ``n_qmc`` until the
spread is below ``rtol``. Opt-in: :func:`attnlib.se.solve` is unchanged.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np

from attnlib import _checks
from attnlib.se.drivers import solve
from attnlib.se.results import SEResult

__all__ = ["METRICS", "fixed_point_error", "solve_accurate"]

log = logging.getLogger("attnlib.se")

METRICS = ("train_loss", "test_error", "mse")
"""The metrics whose relative error :func:`fixed_point_error` bounds."""


def fixed_point_error(results) -> float:
    """Largest relative standard deviation (``ddof = 1``) over :data:`METRICS` among
    converged results of the same point solved with independent QMC seeds: the error of
    one of them. NaN when fewer than two converged."""
    vals = np.array([[getattr(r, f) for f in METRICS] for r in results if r.converged], float)
    if len(vals) < 2:
        return float("nan")
    scale = np.maximum(np.abs(vals.mean(axis=0)), 1e-300)
    return float(np.max(vals.std(axis=0, ddof=1) / scale))


def solve_accurate(
    task, target, alpha: float, lam: float, penalty: str = "nuclear", *,
    rtol: float = 1e-3, n_seeds: int = 4, n_qmc: int = 8192, max_n_qmc: int = 2**17, **kw,
) -> SEResult:  # fmt: skip
    """:func:`attnlib.se.solve` whose ``integration_error`` is the error of the metrics at
    the fixed point, at most ``rtol`` (relative) where ``max_n_qmc`` allows.

    The point is solved with ``n_seeds`` independent QMC scramblings (``seed = 0, 1,
    ...``; the later ones warm-started from the first), each to its own fixed point;
    the relative standard deviation of the metrics over them
    (:func:`fixed_point_error`) is the error of one solve. While it exceeds ``rtol``,
    ``n_qmc`` doubles (up to ``max_n_qmc``; then a ``RuntimeWarning`` says which
    accuracy was reached). Returns the ``seed = 0`` result at the last ``n_qmc``, with
    ``integration_error`` replaced by that spread (0 for closed forms: the linear
    task has no QMC). Costs ``n_seeds`` solves per ``n_qmc``, each about twice the
    previous; progress is logged at INFO on ``attnlib.se``. Other keywords go to
    :func:`attnlib.se.solve`.
    """
    rtol = _checks.positive("rtol", rtol)
    n_seeds = _checks.integer("n_seeds", n_seeds, 2)
    n_qmc = _checks.integer("n_qmc", n_qmc, 1)
    max_n_qmc = _checks.integer("max_n_qmc", max_n_qmc, n_qmc)
    if "seed" in kw:
        raise ValueError("seed is chosen by solve_accurate (0 .. n_seeds - 1); leave it out")
    while True:
        first = solve(task, target, alpha, lam, penalty, n_qmc=n_qmc, seed=0, **kw)
        if not first.converged or first.integration_error == 0.0:
            return first
        kw_warm = {**kw, "init": first}
        others = [
            solve(task, target, alpha, lam, penalty, n_qmc=n_qmc, seed=s, **kw_warm)
            for s in range(1, n_seeds)
        ]
        err = fixed_point_error([first, *others])
        log.info("solve_accurate: n_qmc %d, error of the metrics %.2e (rtol %.1e)",
                 n_qmc, err, rtol)  # fmt: skip
        if err <= rtol or 2 * n_qmc > max_n_qmc:
            break
        n_qmc *= 2
    if not err <= rtol:
        warnings.warn(
            f"solve_accurate: relative error {err:.2e} > rtol = {rtol:g} at n_qmc = {n_qmc} "
            f"(max_n_qmc = {max_n_qmc})",
            RuntimeWarning,
            stacklevel=2,
        )
    return first._replace(integration_error=err)
