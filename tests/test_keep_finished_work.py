"""Long calls keep their finished work and stop on time: curves and searches return the
finished points on a KeyboardInterrupt, at their time limit or where a point fails (the
others NaN with converged=False, and a warning); every theory solver takes a
time_limit (the theory failure policy: NaN, converged=False, a warning)."""

import math
import time

import numpy as np
import pytest

from attnlib import se, tasks
from attnlib.se import drivers
from attnlib.targets import Wishart

TASK, TARGET, LAM = tasks.Linear(T=1, noise=0.1), Wishart(0.5), 0.05
ALPHAS = [0.3, 0.4, 0.5, 0.6, 0.7]


def _raise_at(monkeypatch, n, exc):
    """Make the n-th point of a learning curve raise ``exc`` (1-based)."""
    calls = []
    original = drivers._solve_quiet

    def patched(*args, **kwargs):
        calls.append(1)
        if len(calls) == n:
            raise exc
        return original(*args, **kwargs)

    monkeypatch.setattr(drivers, "_solve_quiet", patched)


def _check_kept(curve, full, done):
    """The first ``done`` points equal the uninterrupted curve's, the rest are unfinished."""
    for name in ("m", "q", "v", "test_error", "mse", "train_loss"):
        np.testing.assert_array_equal(getattr(curve, name)[:done], getattr(full, name)[:done])
        assert np.all(np.isnan(getattr(curve, name)[done:])), name
    assert list(curve.converged) == [True] * done + [False] * (len(ALPHAS) - done)
    np.testing.assert_array_equal(curve.alpha, ALPHAS)


@pytest.fixture(scope="module")
def full_curve():
    return se.learning_curve(TASK, TARGET, ALPHAS, LAM)


def test_learning_curve_keeps_finished_points_on_an_interrupt(monkeypatch, full_curve):
    _raise_at(monkeypatch, 3, KeyboardInterrupt())
    with pytest.warns(se.SEConvergenceWarning, match=r"interrupted at point 3/5 .* the 2 fin"):
        curve = se.learning_curve(TASK, TARGET, ALPHAS, LAM)
    _check_kept(curve, full_curve, 2)


def test_learning_curve_marks_a_failed_point_and_goes_on(monkeypatch, full_curve):
    _raise_at(monkeypatch, 2, ValueError("m must satisfy m^2 <= q Q0"))
    with pytest.warns(se.SEConvergenceWarning, match=r"point 2/5 \(alpha 0.4\) failed"):
        curve = se.learning_curve(TASK, TARGET, ALPHAS, LAM)
    assert list(curve.converged) == [True, False, True, True, True]
    assert math.isnan(curve.mse[1]) and np.all(np.isfinite(curve.mse[[0, 2, 3, 4]]))
    np.testing.assert_allclose(curve.mse[[0, 2, 3, 4]], full_curve.mse[[0, 2, 3, 4]], rtol=1e-5)
    # on_fail="raise" (deprecated, with a DeprecationWarning): it propagates
    with pytest.raises(ValueError, match="m must satisfy"), pytest.warns(DeprecationWarning):
        _raise_at(monkeypatch, 1, ValueError("m must satisfy"))
        se.learning_curve(TASK, TARGET, ALPHAS, LAM, on_fail="raise")


def test_learning_curve_stops_at_its_time_limit(monkeypatch, full_curve):
    """The second point starts after the limit (a patched 2.1 s pause, limit 2 s; the
    first point takes about 0.3 s): the first point is kept, the other four are
    unfinished."""
    original = drivers._solve_quiet
    calls = []

    def slow(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            time.sleep(2.1)
        return original(*args, **kwargs)

    full_curve_first = se.solve(TASK, TARGET, ALPHAS[0], LAM)  # compiled: the first point is fast
    monkeypatch.setattr(drivers, "_solve_quiet", slow)
    with pytest.warns(se.SEConvergenceWarning, match=r"stopped at its time limit at point 2/5"):
        curve = se.learning_curve(TASK, TARGET, ALPHAS, LAM, time_limit=2.0)
    assert full_curve_first.converged
    _check_kept(curve, full_curve, 1)


def test_solve_stops_at_its_time_limit():
    """Past its limit a solve stops at the next check (within 5 s of CPU), once its
    programs are compiled: the first call compiles them (tens of seconds on an empty
    compilation cache, which no time limit interrupts)."""
    task = tasks.Seq2Seq(T=2, noise=0.1)
    with pytest.warns(se.SEConvergenceWarning):
        se.solve(task, TARGET, 0.3, 0.01, time_limit=1e-3)  # compiles
    t0 = time.process_time()
    with pytest.warns(se.SEConvergenceWarning, match=r"stopped at time_limit = 0.001 s"):
        r = se.solve(task, TARGET, 0.3, 0.01, time_limit=1e-3)
    assert time.process_time() - t0 < 5.0
    assert not r.converged and math.isnan(r.mse) and r.alpha == 0.3
    with pytest.raises(RuntimeError, match="time_limit"), pytest.warns(DeprecationWarning):
        se.solve(task, TARGET, 0.3, 0.01, time_limit=1e-3, on_fail="raise")  # deprecated
    with pytest.raises(ValueError, match="time_limit"):
        se.solve(task, TARGET, 0.3, 0.01, time_limit=-1.0)


def test_excess_risk_curve_keeps_finished_points_on_an_interrupt():
    """A progress callback that raises KeyboardInterrupt at the 3rd point: the first two
    rows equal the uninterrupted curve's, the others are unfinished (NaN)."""
    from attnlib import scaling

    task, target = tasks.Linear(T=1, noise=0.1), scaling.PowerLawModes(1.5, 4)
    alphas = [0.2, 0.4, 0.6, 0.8]
    full = scaling.excess_risk_curve(task, target, alphas, 0.05)

    def stop_at_third(i, a, res):
        if i == 2:
            raise KeyboardInterrupt

    with pytest.warns(se.SEConvergenceWarning, match=r"interrupted at point 3/4"):
        curve = scaling.excess_risk_curve(task, target, alphas, 0.05, progress=stop_at_third)
    np.testing.assert_array_equal(curve.test_error[:2], full.test_error[:2])
    np.testing.assert_array_equal(curve.fractions[:2], full.fractions[:2])
    assert np.all(np.isnan(curve.test_error[2:])) and np.all(np.isnan(curve.fractions[2:]))
    assert list(curve.converged) == [True, True, False, False]
    assert list(curve.n_recovered[2:]) == [-1, -1]


def test_lambda_search_keeps_its_best_finished_solve_on_an_interrupt():
    """A stand-in test error (1 + (log lam - log 0.05)^2) whose 3rd solve raises
    KeyboardInterrupt: the search returns the best of the two finished solves (the lower
    test error of the two, computed here) with a warning; before any solve finished, NaN."""
    from attnlib.se import optimal

    calls = []

    def solve_at(lam, init):
        calls.append(lam)
        if len(calls) == 3:
            raise KeyboardInterrupt
        e = 1.0 + (math.log(lam) - math.log(0.05)) ** 2
        r = se.SEResult(**{**{f: 0.5 for f in se.SEResult._fields}, "lam": lam,
                           "test_error": e, "converged": True})  # fmt: skip
        return r, None

    with pytest.warns(se.SEConvergenceWarning, match="interrupted after 2 solves"):
        s = optimal.search(solve_at, bounds=(1e-4, 10.0), xatol=1e-3)
    first, second = calls[:2]
    best = min((first, second), key=lambda x: abs(math.log(x) - math.log(0.05)))
    assert s.lam == best and s.n_solves == 2 and s.result.lam == best
    calls.clear()
    calls.append(None)
    calls.append(None)  # the next call is the 3rd: interrupted at once
    with pytest.warns(se.SEConvergenceWarning, match="before its first solve"):
        s = optimal.search(solve_at, bounds=(1e-4, 10.0))
    assert math.isnan(s.lam) and s.result is None


def test_search_lambda_stops_at_its_time_limit():
    with pytest.warns(se.SEConvergenceWarning, match="stopped at its time limit"):
        s = se.search_lambda(TASK, TARGET, 0.5, time_limit=1e-3)
    assert math.isnan(s.lam) and not s.result.converged and math.isnan(s.result.mse)


@pytest.mark.parametrize("solver", ["bayes", "hardmax", "width"])
def test_other_theory_solvers_stop_at_their_time_limit(solver):
    """bayes.solve, hardmax.solve and width.solve take time_limit (seconds): past it NaN,
    converged=False and an SEConvergenceWarning, within a second of the limit."""
    from attnlib import bayes, hardmax, width

    run = {
        "bayes": lambda **kw: bayes.solve(tasks.Seq2Seq(T=2, noise=0.1), TARGET, 0.3, **kw),
        "hardmax": lambda **kw: hardmax.solve(tasks.Hardmax(T=2), TARGET, 0.5, 1.0, **kw),
        "width": lambda **kw: width.solve(TASK, TARGET, 0.5, 0.01, 0.2, **kw),
    }[solver]
    t0 = time.process_time()
    with pytest.warns(se.SEConvergenceWarning, match="time_limit = 0.001 s"):
        r = run(time_limit=1e-3)
    assert time.process_time() - t0 < 5.0
    field = {"bayes": "mse", "hardmax": "cos_theta", "width": "kappa_star"}[solver]
    assert math.isnan(getattr(r, field)) and not r.converged
    with pytest.raises(ValueError, match="time_limit"):
        run(time_limit=0.0)
