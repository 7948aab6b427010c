"""Test error of a symmetric ``S`` from its overlaps ``(Q0, m, q)`` with the target."""

from __future__ import annotations

from attnlib import _checks, channels
from attnlib.se.output import check_overlaps, check_task

__all__ = ["noise_floor", "test_error_from_overlaps"]


def test_errors(task, Q0, m, q, qmc) -> channels.TestErrors:
    """Noise-free and noisy test errors and their QMC standard errors; ``qmc = (n_qmc,
    n_rep, seed)`` (the points use ``seed + 7919``). Closed forms for the linear task and
    for hardmax at ``T = 2`` (:meth:`attnlib.channels.Channel.test_errors`)."""
    return channels.for_task(task).test_errors(Q0, m, q, qmc)


test_errors.__test__ = False  # not a pytest test


def test_error_from_overlaps(
    task, Q0: float, m: float, q: float, *, noisy: bool = False, n_qmc: int = 8192, seed: int = 0
) -> float:
    """``E||g(h0) - g(h)||^2`` with ``(h0_ab, h_ab) ~ N(0, sigma_ab^2 [[Q0, m], [m, q]])``.

    The test error of any symmetric ``S`` depends on it only through
    ``(Q0, m, q) = (Tr S0^2, Tr S S0, Tr S^2) / d`` (the pairs of fresh sequences
    are jointly Gaussian given ``S, S0``), so this also evaluates trained
    matrices. ``noisy=True`` compares with noisy labels instead. Closed forms for
    the linear task and for hardmax at ``T = 2``, QMC (``n_qmc`` points) otherwise.
    """
    task = check_task(task)
    Q0 = _checks.positive("Q0", Q0)
    m, q = check_overlaps(Q0, m, q)
    _checks.integer("n_qmc", n_qmc, 2)
    te = test_errors(task, Q0, m, q, (n_qmc, 4, seed))
    return te.test_error_noisy if noisy else te.test_error


test_error_from_overlaps.__test__ = False


def noise_floor(task, Q0: float, *, n_qmc: int = 8192, seed: int = 0) -> float:
    """``e0 = E||Y - g(h0)||^2``: the floor of the noisy test error, the error of the
    target itself (``S = S0``, i.e. ``m = q = Q0``) against its noisy labels. Closed
    forms: 0 without noise; ``Delta`` times the number of output entries for noise on
    the outputs; the noise's total variance ``sum_ab w_ab Delta_ab`` for the linear
    task; Sheppard's formula for ``T = 2`` hardmax; QMC (``n_qmc`` points) otherwise
    (:meth:`attnlib.channels.Channel.noise_floor`)."""
    task = check_task(task)
    Q0 = _checks.positive("Q0", Q0)
    _checks.integer("n_qmc", n_qmc, 2)
    return float(channels.for_task(task).noise_floor(Q0, (n_qmc, 4, seed))[0])
