"""attnlib.bayes.solve with ``rtol=``: the QMC sizes double until ``integration_error``
(the relative error of mse and test error, propagated through the fixed point) meets it.

The independent computation is the spread of the same solve over QMC seeds: a
reference averaged over other seeds at more points, against which each single solve
must lie within 3 times its own reported error. Setting: seq2seq ``T = 2`` with noise
0.1 on the outputs (the nested QMC channel), Wishart(0.5), ``alpha = 0.5``.
"""

import functools
import warnings

import numpy as np
import pytest

from attnlib import bayes, targets, tasks
from attnlib.bayes import state_evolution

W05 = targets.Wishart(0.5)
NOISY = tasks.Seq2Seq(T=2, noise=0.1, noise_on="outputs")
SMALL = dict(n_outer=256, n_inner=256, n_test=512)


@functools.lru_cache(maxsize=2)
def _reference(seeds, n_outer, n_inner, n_test):
    """Mean ``(mse, test_error)`` over ``seeds`` at the given QMC sizes."""
    rs = [bayes.solve(NOISY, W05, 0.5, seed=s, n_outer=n_outer, n_inner=n_inner,
                      n_test=n_test) for s in seeds]  # fmt: skip
    return np.mean([r.mse for r in rs]), np.mean([r.test_error for r in rs])


@pytest.mark.slow
def test_rtol_met_on_a_qmc_channel():
    """``rtol`` = 2/3 of the error reported at 256 points (5 % for seed 3) is met without
    a warning, and the answer lies within 3 rtol of a reference (seeds 50, 51 at 1024
    outer points, 256 inner: its own error about 2 %)."""
    one = bayes.solve(NOISY, W05, 0.5, seed=3, **SMALL)
    rtol = one.integration_error / 1.5
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        r = bayes.solve(NOISY, W05, 0.5, seed=3, rtol=rtol, **SMALL)
    assert r.converged and r.integration_error <= rtol and r.mse != one.mse
    mse, te = _reference((50, 51), 1024, 256, 2048)
    assert abs(r.mse - mse) / mse <= 3 * rtol
    assert abs(r.test_error - te) / te <= 3 * rtol


def test_rtol_that_cannot_be_met_warns():
    """``max_n_qmc`` equal to the sizes: no doubling, a ``RuntimeWarning`` naming the
    error reached, and the one solve's result (as without ``rtol``)."""
    one = bayes.solve(NOISY, W05, 0.5, **SMALL)
    with pytest.warns(RuntimeWarning, match=r"integration error [0-9.e+-]+ > rtol = 0.0001"):
        r = bayes.solve(NOISY, W05, 0.5, rtol=1e-4, max_n_qmc=512, **SMALL)
    assert r.converged and r.integration_error > 1e-4
    s = bayes.BayesSettings(n_outer=512, n_inner=256, n_test=512, max_n_qmc=512, rtol=1e-4)
    with pytest.warns(RuntimeWarning, match="max_n_qmc = 512") as rec:
        bayes.solve(NOISY, W05, 0.5, settings=s)
    assert rec[0].filename == __file__  # the warning points at the caller
    assert one.mse != r.mse  # n_outer doubled once (256 -> 512) before the cap


def test_closed_form_channel_returns_without_doubling(monkeypatch):
    """Linear task with label noise (``J`` and the test error in closed form): one solve,
    ``integration_error = 0``, the result of the solve without ``rtol``."""
    calls = []
    solve_once = state_evolution._solve
    monkeypatch.setattr(state_evolution, "_solve", lambda *a: calls.append(a) or solve_once(*a))
    task = tasks.Linear(T=2, noise=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        r = bayes.solve(task, W05, 0.5, rtol=1e-12)
    assert len(calls) == 1 and r.integration_error == 0.0
    assert r == bayes.solve(task, W05, 0.5)


def test_reported_error_covers_the_spread_fast():
    """Four seeds at 256 points: each mse and test error within 3 times its own reported
    error of a reference (seeds 50, 51 at 1024 outer points, 256 inner)."""
    mse, te = _reference((50, 51), 1024, 256, 2048)
    for seed in range(4):
        r = bayes.solve(NOISY, W05, 0.5, seed=seed, **SMALL)
        assert abs(r.mse - mse) / mse <= 3 * r.integration_error, seed
        assert abs(r.test_error - te) / te <= 3 * r.integration_error, seed


@pytest.mark.slow
def test_reported_error_covers_the_spread_at_rtol():
    """Eight seeds at ``rtol = 0.02`` (from 512 points): each within 3 times its reported
    error of a reference (seeds 50, 51 at 8192 outer points, 1024 inner)."""
    mse, te = _reference((50, 51), 8192, 1024, 16384)
    for seed in range(8):
        r = bayes.solve(NOISY, W05, 0.5, seed=seed, rtol=0.02, n_outer=512, n_inner=512,
                        n_test=1024)  # fmt: skip
        assert r.integration_error <= 0.02
        assert abs(r.mse - mse) / mse <= 3 * r.integration_error, seed
        assert abs(r.test_error - te) / te <= 3 * r.integration_error, seed
