"""The narrow student's error control: ``integration_error`` of a rank-constrained fixed
point is the QMC error propagated through the constrained map's Jacobian, and ``rtol=``
doubles ``n_qmc`` until it is met (as :func:`attnlib.se.solve` does).

Independent computations: central differences of the constrained input side (for its
closed-form Jacobian), the spread of the fixed point over independent QMC seeds, and
references solved at 8 to 16 times more points with other seeds. Setting: seq2seq
``T = 2`` (no noise), Wishart(0.5), ``alpha = 0.3``, ``lam = 0.1``, where the convex
minimiser has rank fraction 0.38: the constraint binds at ``kappa = 0.1`` and ``0.2``.
"""

import functools
import importlib
import math
import types
import warnings

import numpy as np
import pytest

from attnlib import se, targets, tasks, width
from attnlib.se import accuracy, propagation
from attnlib.se.input import host_input

W05 = targets.Wishart(0.5)
TASK = tasks.Seq2Seq(T=2)
POINT = (TASK, W05, 0.3, 0.1)
METRICS = ("mse", "test_error", "train_loss")
width_solve = importlib.import_module("attnlib.width.solve")  # the module, not the function


@functools.lru_cache(maxsize=4)
def _reference(kappa, n_qmc, seed):
    """A plain constrained solve (no ``rtol``) at ``n_qmc`` points with its own seed."""
    r = width.solve_constrained(*POINT, kappa, n_qmc=n_qmc, seed=seed)
    assert r.converged
    return r


def _within(r, ref, k=3.0):
    """Each metric of ``r`` within ``k`` combined relative errors of ``ref``."""
    comb = math.hypot(r.integration_error, ref.integration_error)
    for f in METRICS:
        dev = abs(getattr(r, f) - getattr(ref, f)) / abs(getattr(ref, f))
        assert dev <= k * comb, (f, dev, comb)


@pytest.mark.parametrize("conj, kappa", [((1.0, 0.5, 1.0), 0.2), ((2.0, 3.0, 1.5), 0.1)])
def test_constrained_input_jacobian_matches_central_differences(conj, kappa):
    """The closed-form ``d (m, q, v) / d (m_hat, q_hat, a_hat)`` of the map cut at
    ``x_kappa`` against central differences of the input side (step 1e-3 relative:
    truncation ~1e-6; the cut comes from a cdf accurate to ~1e-6 in mass, which moves
    the differences by 4e-5 of the largest entry, measured). The boundary term of the
    moving cut is 6e-3 of the largest entry here: without it the test fails."""
    conj, lam = np.array(conj), 0.1
    pb = types.SimpleNamespace(penalty="nuclear", target=W05, kappa=kappa)  # what it reads
    closed = propagation._input_jacobian(pb, lam, conj)
    h = 1e-3 * conj
    cols = [
        (host_input(W05, conj + e, lam, kappa) - host_input(W05, conj - e, lam, kappa))[:3]
        / (2 * e[k])
        for k, e in enumerate(np.eye(3) * h)
    ]
    numeric = np.stack(cols, axis=1)
    assert host_input(W05, conj, lam, kappa)[3] == pytest.approx(kappa, abs=1e-5)  # binds
    np.testing.assert_allclose(closed, numeric, rtol=0, atol=3e-4 * np.abs(numeric).max())


def test_rtol_doubles_n_qmc_warm_started_until_met(monkeypatch):
    """``rtol = 2.5e-3`` at ``kappa = 0.2`` (3.0e-3 reported at the default 8192 points):
    one doubling, the second solve started from the first one's warm start, the error
    met (its accuracy against a reference: the slow tests below)."""
    starts = []
    once = width_solve._constrained_once
    monkeypatch.setattr(
        width_solve, "_constrained_once", lambda *a: starts.append(a[3]) or once(*a)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        r, warm = width.solve_constrained(*POINT, 0.2, rtol=2.5e-3, return_warm=True)
    assert r.converged and r.integration_error <= 2.5e-3
    assert warm.key[1] == 16384 and len(starts) == 2 and starts[1].key[1] == 8192


def test_rtol_warns_at_max_n_qmc_and_checks_its_arguments():
    """``max_n_qmc`` equal to ``n_qmc``: no doubling, a ``RuntimeWarning`` at the caller
    naming the error reached, and the one solve's result; bad ``rtol`` or ``max_n_qmc``
    raise a ``ValueError`` naming them."""
    one = width.solve_constrained(*POINT, 0.2)
    with pytest.warns(RuntimeWarning, match=r"relative error of the metrics .* > rtol") as rec:
        r = width.solve_constrained(*POINT, 0.2, rtol=1e-5, max_n_qmc=8192)
    assert rec[0].filename == __file__ and "max_n_qmc = 8192" in str(rec[0].message)
    assert r == one
    with pytest.warns(RuntimeWarning, match="max_n_qmc = 8192") as rec:
        width.solve(*POINT, 0.2, convex=se.solve(*POINT), rtol=1e-5, max_n_qmc=8192)
    assert rec[0].filename == __file__
    with pytest.raises(ValueError, match="rtol"):
        width.solve(*POINT, 0.2, rtol=0.0)
    with pytest.raises(ValueError, match="max_n_qmc"):
        width.solve_constrained(*POINT, 0.2, rtol=1e-3, max_n_qmc=4096)


@pytest.mark.slow
@pytest.mark.parametrize("kappa", [0.1, 0.2])
def test_reported_error_covers_the_spread_over_seeds(kappa):
    """16 seeds at 2048 points: the observed relative standard deviation of the metrics
    (largest of mse, test error, train loss) against the root mean square of the
    reported error; a factor 2 either way fails with probability below 0.5 % for a
    correct error bar (the chi-square bounds of ``tests/test_se_accuracy.py``). Measured:
    0.76 (kappa 0.1) and 0.91 (0.2); the integrals' own error that it replaces: 0.53
    and 1.17."""
    rs = [width.solve_constrained(*POINT, kappa, n_qmc=2048, seed=s) for s in range(16)]
    assert all(r.converged for r in rs)
    observed = accuracy.fixed_point_error(rs)
    reported = float(np.sqrt(np.mean([r.integration_error**2 for r in rs])))
    assert reported / 2 < observed < 2 * reported, (observed, reported)


@pytest.mark.slow
def test_rtol_within_its_error_of_a_reference_over_seeds():
    """:func:`width.solve` at ``rtol = 2.5e-3``, ``kappa = 0.2``: the convex point and
    the constrained one meet it, and the constrained one lies within 3 combined errors
    of a plain solve at 2^17 points with seed 50 (its own error 3.9e-4; seeds 51, 52 at
    2^17 agree with it to 1.7e-4 in the mse); so do eight seeds of
    :func:`width.solve_constrained` at ``rtol = 1.5e-3`` (16384 or 32768 points).
    Measured: largest deviation 0.58 combined errors for :func:`width.solve`, 2.75 over
    the seeds (seed 3, whose 4 scramblings, 3 degrees of freedom, reported 6.6e-4 at
    16384 points where the others report 1.1-1.3e-3: a doubling stops on a low
    estimate more often than on a high one)."""
    ref = _reference(0.2, 2**17, 50)
    r = width.solve(*POINT, 0.2, rtol=2.5e-3)
    assert r.constrained and r.integration_error <= 2.5e-3
    assert r.convex.integration_error <= 2.5e-3
    _within(r.se, ref)
    for seed in range(8):
        r = width.solve_constrained(*POINT, 0.2, rtol=1.5e-3, seed=seed)
        assert r.integration_error <= 1.5e-3
        _within(r, ref)
