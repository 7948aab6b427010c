r"""The perfect-recovery threshold from the state evolution (free probability).

Why the state evolution gives it. With noise-free labels and ``lam -> 0+`` every
fitted sequence imposes ``m_eff`` linear equations ``<S, Z_ab> = h0_ab`` (softmax: up
to the global shift), so the ERM is noiseless compressed sensing with ``N = d^2/2``
unknowns (orthonormal coordinates of symmetric matrices) and ``M = alpha m_eff d^2``
measurements, ratio ``M / N = 2 alpha m_eff``. In the state evolution the input
denoiser sees ``R = S0 + sqrt(Delta_eff) W_goe``, i.e. Gaussian noise of variance
``sigma^2 = 2 Delta_eff / d`` per orthonormal coordinate, and thresholds at
``tau = lam / a_hat``. The output side of a noiseless linear channel returns the
per-coordinate error divided by the measurement ratio,
``sigma_new^2 = (||F(R) - S0||_F^2 / N) / (M / N)``. Since
``||F(R) - S0||_F^2 / N = 2 mse / d``, this reads
``Delta_new = mse(Delta, tau) / (2 alpha m_eff)``. The fixed point ``Delta = 0``
(``S_hat = S0``) is stable iff the map contracts near ``0``, i.e. iff
``min_t lim_{Delta -> 0} mse(Delta, t sqrt(Delta)) / Delta < 2 alpha m_eff``, with the
threshold scale ``t = tau / sqrt(Delta)`` chosen by the ERM (``lam -> 0+`` leaves it
free; the minimum-trace solution realises the best one). Hence
``alpha_PR = delta_SE / m_eff``; that ``delta_SE = delta(kappa0)`` is the
Oymak-Hassibi identity between the minimax risk of a proximal denoiser and the
statistical dimension of the descent cone.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize_scalar

from attnlib import _checks, rmt
from attnlib.tasks import Task
from attnlib.thresholds._common import _check_psd_target, _check_task

__all__ = ["recovery_mse_ratio", "perfect_recovery_se"]


def _mse_ratio_fn(spec):
    """``t -> mse(Delta, t sqrt(Delta)) / Delta`` on one quadrature of ``rho_R``
    (:func:`attnlib.rmt.stein_mse`)."""
    D = float(spec.Delta)

    def ratio(t):
        return rmt.stein_mse(spec, lambda x: np.maximum(x - t * math.sqrt(D), 0.0)) / D

    return ratio


def recovery_mse_ratio(
    target, Delta: float, t: float, *, n_nodes: int = 90, n_atoms: int = 400
) -> float:
    r"""``mse(Delta, tau = t sqrt(Delta)) / Delta`` for the soft-threshold denoiser.

    ``mse = (1/d) ||F(S0 + sqrt(Delta) W_goe) - S0||_F^2`` with ``f(x) = (x - tau)_+``,
    in the large-``d`` limit, in Stein's form (:func:`attnlib.rmt.stein_mse`: its terms are
    of order ``Delta``, so the ratio has no cancellation between ``Q0``, ``m`` and ``q``),
    on the quadrature of :func:`attnlib.rmt.deformed_spectrum` (``n_nodes``, ``n_atoms``).
    """
    Delta = _checks.positive("Delta", Delta)
    t = _checks.nonnegative("t", t)
    _check_psd_target(target)
    return _mse_ratio_fn(rmt.deformed_spectrum(target, Delta, n_nodes, n_atoms=n_atoms))(t)


def _min_ratio(spec) -> tuple[float, float]:
    """``(min_t ratio(t), argmin)`` for one ``Delta`` (bounded Brent on ``t in [0, t_max]``)."""
    ratio = _mse_ratio_fn(spec)
    # beyond the top of the support f = 0 and the ratio only grows: bound t there
    t_max = max(float(np.max(spec.x)) / math.sqrt(spec.Delta), 1.0)
    t_max = min(t_max, 50.0)
    grid = np.linspace(0.0, t_max, 101)
    vals = np.array([ratio(t) for t in grid])
    i = int(np.argmin(vals))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    res = minimize_scalar(ratio, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10})
    best = min((res.fun, res.x), (vals[i], grid[i]))
    return float(best[0]), float(best[1])


def _delta_se(target, deltas, n_nodes, n_atoms) -> float:
    specs = [rmt.deformed_spectrum(target, D, n_nodes, n_atoms=n_atoms) for D in deltas]
    r = np.array([_min_ratio(s)[0] for s in specs]) / 2
    # r(Delta) = r0 + b Delta^p, Delta_{k+1} = Delta_k / s: (r1 - r2) / (r2 - r3) = s^p and
    # r3 - r0 = b Delta_3^p = (r2 - r3) / (s^p - 1)
    d12, d23 = r[0] - r[1], r[1] - r[2]
    if not (d12 * d23 > 0 and abs(d12) > abs(d23)):
        return float(r[2])  # no clean power law: report the smallest-Delta value
    sp = d12 / d23
    return float(r[2] - d23 / (sp - 1.0))


def perfect_recovery_se(
    task: Task,
    target,
    *,
    deltas: tuple[float, ...] = (1e-3, 1e-4, 1e-5),
    n_nodes: int = 90,
    n_atoms: int = 400,
) -> float:
    r"""Perfect-recovery threshold from the state evolution, for any PSD target spectrum.

    Returns ``delta_SE / m_eff`` with

    .. math:: \delta_{SE} = \frac12 \min_{t \ge 0} \lim_{\Delta \to 0}
              \frac{\mathrm{mse}(\Delta, t\sqrt{\Delta})}{\Delta},

    ``mse`` the large-``d`` error of the spectral soft threshold applied to ``R = S0 +
    sqrt(Delta) W_goe`` (:func:`recovery_mse_ratio`; not the closed form
    :func:`statistical_dimension`), for any target spectrum (module docstring: why).

    Numerics: for each of the three ``deltas`` the minimum over ``t`` of ``mse / Delta``
    (Stein form) by a grid and bounded Brent search; the minima extrapolated to ``Delta =
    0`` by ``a + b Delta^p`` through the three values (``p`` from their ratio: ``1/2`` for
    Wishart ``kappa0 < 1``, ``~ 2/3`` at ``kappa0 = 1``, a hard edge at 0), or the
    smallest-``Delta`` value where they follow no power law. (The minimum over ``t`` of a
    family converging uniformly on compacts converges to the minimum of the limit.)

    Args:
      task: the task (gives ``m_eff``).
      target: a PSD :class:`attnlib.targets.Target`.
      deltas: three decreasing noise levels, in a constant ratio, for the extrapolation.
        For an atomic description of the target (``target.measure(n_atoms)``), the
        smallest ``sqrt(Delta)`` must exceed the spacing of the atoms, or ``rho_R``
        is a comb of separate bumps: the defaults suit ``n_atoms = 400``.
      n_nodes, n_atoms: passed to :func:`attnlib.rmt.deformed_spectrum`.
    """
    task = _check_task(task)
    _check_psd_target(target)
    deltas = tuple(float(x) for x in deltas)
    if (
        len(deltas) != 3
        or not (0 < deltas[2] < deltas[1] < deltas[0])
        or not math.isclose(deltas[0] / deltas[1], deltas[1] / deltas[2], rel_tol=1e-9)
    ):
        raise ValueError(
            f"deltas must be three decreasing positive values in a constant ratio, got {deltas!r}"
        )
    n_nodes = _checks.integer("n_nodes", n_nodes, 1)
    n_atoms = _checks.integer("n_atoms", n_atoms, 1)
    return _delta_se(target, deltas, n_nodes, n_atoms) / task.m_eff
