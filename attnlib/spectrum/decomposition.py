"""The four-part decomposition of the test error: over, under, approx, mismatch.

See :mod:`attnlib.spectrum` for the definitions.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.optimize

from attnlib import _checks, channels, se, train
from attnlib.spectrum.common import (
    _DEFAULT_NODES,
    _check_se,
    _deformed,
    _profile,
    _zero_mass,
    spectral_map,
)
from attnlib.spectrum.directions import direction_statistics

__all__ = ["ErrorDecomposition", "optimal_scale", "decompose", "decompose_trained"]


class ErrorDecomposition(NamedTuple):
    r"""``e_test(S_hat) = over + under + approx + mismatch`` (module docstring).

    Attributes:
      over, under, approx, mismatch: the four parts in units of the test error.
      e_test: ``e_test(S_hat)``.
      e_test_star: ``e_test(c* S_hat) = over + under + approx``.
      c_star: the test-optimal rescaling ``c*``.
      mse_over, mse_under, mse_approx: the three parts in units of the mse
        (they add up to ``mse_star``).
      mse: ``||S_hat - S0||_F^2 / d``.
      mse_star: ``||c* S_hat - S0||_F^2 / d``.
      kept_fraction: fraction of kept directions (``s_i != 0``).
      kept_in_range: ``(1/d) sum_{kept} w_i``: the part of ``kept_fraction`` that lies in
        the range of ``S0`` (the rest, ``kept_fraction - kept_in_range``, is kept noise).
      Q0, m, q: overlaps of ``S_hat``: ``Tr(S0^2)/d``, ``Tr(S_hat S0)/d``, ``Tr(S_hat^2)/d``.
      e_test_mc, e_test_mc_stderr: Monte Carlo estimate of ``e_test(S_hat)`` on fresh
        sequences and its standard error (:func:`decompose_trained` with a key; else ``None``).
    """

    over: float
    under: float
    approx: float
    mismatch: float
    e_test: float
    e_test_star: float
    c_star: float
    mse_over: float
    mse_under: float
    mse_approx: float
    mse: float
    mse_star: float
    kept_fraction: float
    kept_in_range: float
    Q0: float
    m: float
    q: float
    e_test_mc: float | None = None
    e_test_mc_stderr: float | None = None

    def parts(self) -> np.ndarray:
        """``[over, under, approx, mismatch]`` as an array."""
        return np.array([self.over, self.under, self.approx, self.mismatch])


def optimal_scale(task, Q0: float, m: float, q: float) -> tuple[float, float]:
    r"""The test-optimal rescaling ``c* = argmin_{c >= 0} e_test(c S)`` and ``e_test(c* S)``.

    ``e_test(c S)`` is :func:`attnlib.se.test_error_from_overlaps` at ``(Q0, c m, c^2 q)``.
    Linear task: ``c* = max(m, 0) / q`` in closed form. Otherwise a log-spaced scan
    (which includes ``c = 1``, so that ``e_test(c* S) <= e_test(S)``) refined by a
    bounded Brent search.
    """
    task = _checks.task(task)
    Q0 = _checks.positive("Q0", Q0)
    q = _checks.nonnegative("q", q)
    m = _checks.finite("m", m)

    def e(c):
        return se.test_error_from_overlaps(task, Q0, c * m, c * c * q)

    if q == 0.0:
        return 1.0, e(1.0)
    c = channels.for_task(task).best_scale(m, q)  # closed form (linear), or None
    if c is not None:
        return c, e(c)
    ref = max(abs(m) / q, 1e-3)
    grid = np.unique(np.concatenate([[0.0, 1.0], ref * np.geomspace(0.05, 20.0, 27)]))
    vals = np.array([e(c) for c in grid])
    i = int(np.argmin(vals))
    best_c, best_e = float(grid[i]), float(vals[i])
    lo = grid[max(i - 1, 0)]
    hi = grid[min(i + 1, len(grid) - 1)]
    if hi > lo:
        res = scipy.optimize.minimize_scalar(
            e, bounds=(lo, hi), method="bounded", options={"xatol": 1e-6 * max(hi, 1e-3)}
        )
        if res.fun < best_e:
            best_c, best_e = float(res.x), float(res.fun)
    return best_c, best_e


def _assemble(task, Q0, m, q, *, c_star, e_star, parts_mse, kept, **extra):
    """The decomposition from the overlaps ``(Q0, m, q)`` of ``S_hat``, ``c*`` and
    ``e_test(c* S_hat)``, the mse parts ``(over, under, approx)`` and the kept masses."""
    e_hat = se.test_error_from_overlaps(task, Q0, m, q)
    mse_star = Q0 - 2 * c_star * m + c_star**2 * q
    tot = float(np.sum(parts_mse))
    share = np.asarray(parts_mse) / tot if tot > 0 else np.zeros(3)
    over, under, approx = (float(e_star * s) for s in share)
    mismatch = max(float(e_hat - e_star), 0.0)
    return ErrorDecomposition(
        over=over,
        under=under,
        approx=approx,
        mismatch=mismatch,
        e_test=float(e_hat),
        e_test_star=float(e_star),
        c_star=float(c_star),
        mse_over=float(parts_mse[0]),
        mse_under=float(parts_mse[1]),
        mse_approx=float(parts_mse[2]),
        mse=float(Q0 - 2 * m + q),
        mse_star=float(mse_star),
        kept_fraction=float(kept[0]),
        kept_in_range=float(kept[1]),
        Q0=float(Q0),
        m=float(m),
        q=float(q),
        **extra,
    )


def decompose(task, target, se_result, *, n_nodes: int = _DEFAULT_NODES) -> ErrorDecomposition:
    r"""The four-part decomposition of the asymptotic test error (module docstring).

    Integrates ``e(x) = (c* f(x) - a(x))^2 + b(x) - a(x)^2`` against ``rho_R``
    (:func:`attnlib.rmt.deformed_spectrum`): discarded nodes (``f(x) = 0``) give
    ``E_under``, kept ones ``E_over`` (weight ``1 - w(x)``) and ``E_approx`` (weight
    ``w(x)``). ``m, q`` are the SE result's; the three mse parts add up to ``Q0 - 2 c* m +
    c*^2 q`` up to the quadrature error.
    """
    task = _checks.task(task)
    target = _checks.target(target)
    r = _check_se(se_result)
    n_nodes = _checks.integer("n_nodes", n_nodes, 16)
    Q0 = float(target.Q0)
    c_star, e_star = optimal_scale(task, Q0, r.m, r.q)
    sm = spectral_map(r)
    Delta = float(r.Delta_eff)
    x, w, rho, h, _ = _deformed(target, Delta, n_nodes, sm.threshold)
    a, b, wr = _profile(x, rho, h, Delta, _zero_mass(target))
    f = sm.f(x)
    kept = sm.kept(x)
    e = (c_star * f - a) ** 2 + (b - a * a)
    under = float(np.sum(w[~kept] * e[~kept]))
    over = float(np.sum(w[kept] * (1 - wr[kept]) * e[kept]))
    approx = float(np.sum(w[kept] * wr[kept] * e[kept]))
    kept_mass = (float(np.sum(w[kept])), float(np.sum(w[kept] * wr[kept])))
    parts = (over, under, approx)
    return _assemble(
        task, Q0, r.m, r.q, c_star=c_star, e_star=e_star, parts_mse=parts, kept=kept_mass
    )


def decompose_trained(
    task,
    S_hat,
    S0,
    key=None,
    *,
    zero_tol: float = 1e-8,
    rank_tol: float = 1e-8,
    n_test: int = 20000,
) -> ErrorDecomposition:
    r"""The four-part decomposition of the test error of a trained ``S_hat`` (finite ``d``).

    Args:
      task: the task (its test error through :func:`attnlib.se.test_error_from_overlaps`).
      S_hat: the learned symmetric ``(d, d)`` matrix.
      S0: the target ``(d, d)``.
      key: optional PRNG key: also estimate ``e_test(S_hat)`` by Monte Carlo on
        ``n_test`` fresh sequences (:func:`attnlib.train.test_error_stats`), a check
        of the overlap formula reported in ``e_test_mc``.
      zero_tol: eigenvalues of ``S_hat`` with ``|s| <= zero_tol max|s|`` count as
        discarded directions (the proximal solver gives exact zeros; Adam on the
        factor needs a looser value such as ``1e-3``).
      rank_tol: relative tolerance defining the range of ``S0`` (for ``w_i``).

    The parts use ``e_i = (s*_i - a_i)^2 + b_i - a_i^2`` for every direction
    (``= b_i`` when ``s_i = 0``), so ``mse_over + mse_under + mse_approx`` equals
    ``||c* S_hat - S0||_F^2 / d`` to rounding.
    """
    task = _checks.task(task)
    zero_tol = _checks.nonnegative("zero_tol", zero_tol)
    S0a = np.asarray(_checks.square_matrix("S0", S0, symmetric=True), float)
    Sa = np.asarray(_checks.square_matrix("S_hat", S_hat, S0a.shape[0], against="S0"), float)
    s, a, b, wr = direction_statistics(Sa, S0a, rank_tol=rank_tol)
    d = s.size
    Q0 = float(np.sum(S0a * S0a) / d)
    if not Q0 > 0:
        raise ValueError("S0 must be a non-zero matrix (Q0 = Tr(S0^2)/d = 0)")
    m = float(np.sum(Sa * S0a) / d)
    q = float(np.sum(Sa * Sa) / d)
    c_star, e_star = optimal_scale(task, Q0, m, q)
    kept = np.abs(s) > zero_tol * max(np.max(np.abs(s)), 1e-300)
    e = (c_star * s - a) ** 2 + (b - a * a)
    under = float(np.sum(e[~kept]) / d)
    over = float(np.sum((1 - wr[kept]) * e[kept]) / d)
    approx = float(np.sum(wr[kept] * e[kept]) / d)
    extra = {}
    if key is not None:
        st = train.test_error_stats(key, task, S0a, Sa, n_test=_checks.integer("n_test", n_test, 2))
        extra = {"e_test_mc": st.mean, "e_test_mc_stderr": st.stderr}
    kept_mass = (float(np.mean(kept)), float(np.sum(wr[kept]) / d))
    parts = (over, under, approx)
    return _assemble(
        task, Q0, m, q, c_star=c_star, e_star=e_star, parts_mse=parts, kept=kept_mass, **extra
    )
