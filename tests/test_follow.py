"""attnlib.follow on stand-in solvers whose answers are known in closed form: the
bisection against sqrt(2), the retry ladder's order, the continuation's predictor and its
fallback, the finished work it keeps, and the one rule that turns ``init`` into a start.
The state-evolution callers are checked in test_keep_finished_work.py, test_se.py,
test_thresholds.py and test_data_helpers.py."""

import math
from typing import NamedTuple

import numpy as np
import pytest

from attnlib import follow


class R(NamedTuple):
    """A stand-in result."""

    x: float
    value: float
    converged: bool


def test_bisect_brackets_sqrt2_and_warm_starts_each_probe_from_the_upper_end():
    seen = []

    def probe(x, at_hi):
        seen.append(at_hi)
        return x if x * x > 2.0 else None  # yes above sqrt(2)

    b = follow.bisect(probe, 1.0, 2.0, xtol=1e-6, at_hi="top")
    assert b.lo < math.sqrt(2.0) <= b.hi and b.hi - b.lo <= 1e-6 and b.stopped is None
    assert b.n_probes == math.ceil(math.log2(1.0 / 1e-6)) and b.at_hi == b.hi
    assert seen[0] == "top" and all(s == "top" or s * s > 2.0 for s in seen)
    # a budget of 5 probes, then an interrupt on the 3rd: the finished bracket is kept
    five = follow.bisect(probe, 1.0, 2.0, xtol=1e-6, spent=lambda n: "budget" if n >= 5 else None)
    assert five.n_probes == 5 and five.stopped == "budget" and five.hi - five.lo == 2.0**-5

    def interrupted(x, at_hi):
        if len(seen) >= 10:
            raise KeyboardInterrupt
        return probe(x, at_hi)

    seen.clear()
    cut = follow.bisect(interrupted, 1.0, 2.0, xtol=1e-12)
    assert isinstance(cut.stopped, KeyboardInterrupt) and cut.lo < math.sqrt(2.0) <= cut.hi
    assert cut.n_probes == 10 and cut.hi - cut.lo == 2.0**-10  # the 11th probe interrupted
    tiny = follow.bisect(probe, 1.0, 2.0, xtol=1e-300)  # stops at the float resolution
    assert tiny.hi == np.nextafter(tiny.lo, 3.0)


def test_retry_takes_the_rungs_in_order_until_one_is_accepted():
    failed = []
    t = follow.retry(
        lambda d: R(d, 0.0, d >= 0.8), [0.5, 0.8, 0.95], failed=lambda d, r: failed.append(d)
    )
    assert t.accepted and t.rung == 0.8 and [r.x for r in t.tried] == [0.5, 0.8] and failed == [0.5]
    none = follow.retry(lambda d: R(d, 0.0, False), [0.5, 0.9])
    assert not none.accepted and none.result.x == 0.9 and len(none.tried) == 2
    empty = follow.retry(lambda d: R(d, 0.0, True), [])
    assert empty.result is None and not empty.accepted


def _parabola_solver(calls, tol=0.22):
    """Converges where the start is within ``tol`` of the answer ``x^2``."""

    def solve_at(i, x, start):
        calls.append((x, start))
        ok = start is not None and abs(start - x * x) < tol
        return R(x, x * x if ok else math.nan, ok), (x * x if ok else None)

    return solve_at


def _secant(prev, x):
    if len(prev) < 2:
        return prev[-1][1]
    (x1, w1), (x2, w2) = prev[-1], prev[-2]
    return w1 + (x - x1) * (w1 - w2) / (x1 - x2)


def test_follow_uses_the_prediction_and_falls_back_to_the_last_warm_start():
    """Steps of 0.1 in x: the last answer is 0.21 to 0.27 off x^2 (within the solver's
    0.22 only for the first step), the secant 0.01 off (the second difference)."""
    points = [1.0, 1.1, 1.2, 1.3, 1.4]
    calls = []
    out = follow.follow(_parabola_solver(calls), points, init=1.0, predict=_secant)
    assert all(r.converged for r in out.results) and len(calls) == len(points)
    np.testing.assert_allclose([r.value for r in out.results], np.square(points), rtol=0)
    plain = follow.follow(_parabola_solver([]), points, init=1.0)
    assert [r.converged for r in plain.results] == [True, True, False, False, False]
    stop = follow.follow(_parabola_solver([]), points, init=1.0, stop_at_failure=True)
    assert len(stop.results) == 3 and not stop.results[-1].converged
    # a prediction that never converges: each point solved again from the last warm start
    calls.clear()
    half = [1.0, 1.05, 1.1, 1.15]  # steps of 0.05: the last answer is at most 0.11 off
    back = follow.follow(_parabola_solver(calls), half, init=1.0, predict=lambda prev, x: 100.0)
    assert all(r.converged for r in back.results) and len(calls) == 1 + 2 * 3
    assert [s for _, s in calls[1::2]] == [100.0] * 3


def test_follow_keeps_finished_points_and_marks_failures():
    def solve_at(i, x, start):
        if i == 1:
            raise ValueError("no")
        if i == 3:
            raise KeyboardInterrupt
        return R(x, 2 * x, True), x

    unfinished = lambda x: R(x, math.nan, False)  # noqa: E731
    with pytest.warns(RuntimeWarning) as caught:
        out = follow.follow(solve_at, [1, 2, 3, 4, 5], unfinished=unfinished, failures="mark")
    assert [r.converged for r in out.results] == [True, False, True, False, False]
    assert [r.value for r in out.results][::2][:2] == [2.0, 6.0] and out.warms[1] is None
    text = " ".join(str(w.message) for w in caught)
    assert "point 2/5 (alpha 2) failed" in text and "interrupted at point 4/5" in text
    with pytest.raises(ValueError, match="no"):
        follow.follow(solve_at, [1, 2, 3], unfinished=unfinished)  # failures="raise"


class Warm(NamedTuple):
    x: tuple
    key: tuple = ()


class Result(NamedTuple):
    m: float
    q: float
    v: float
    converged: bool


class Width(NamedTuple):
    kappa: float
    se: Result
    converged: bool


def test_one_rule_turns_init_into_a_start():
    cold = (0.3, 0.5, 1.0)
    for init in (None, Result(0.1, 0.2, math.nan, False), Result(0.0, 0.0, 0.0, True)):
        x, warm = follow.start(init, cold)
        assert tuple(x) == cold and warm is None
    w = Warm((0.2, 0.3, 0.4), key=("task",))
    x, warm = follow.start(w, cold)
    assert tuple(x) == w.x and warm is w
    for init in (
        (0.2, 0.3, 0.4),
        Result(0.2, 0.3, 0.4, True),
        Width(0.5, Result(0.2, 0.3, 0.4, True), True),
    ):
        assert tuple(follow.start(init, cold)[0]) == (0.2, 0.3, 0.4)
    with pytest.raises(ValueError, match="init"):
        follow.start((0.2, -0.3, 0.4), cold)
    with pytest.raises(ValueError, match="m\\^2 < q Q0"):
        follow.start((0.9, 0.3, 0.4), cold, Q0=1.0)  # m^2 = 0.81 > q Q0 = 0.3
    assert tuple(follow.start((0.9, 0.3, 0.4), cold)[0]) == (0.9, 0.3, 0.4)  # no Q0: no domain
