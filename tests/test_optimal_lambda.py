"""The one search for the optimal ``lam`` (:mod:`attnlib.se.optimal`), the zero phase
and the cold-start fallback (:func:`attnlib.se.drivers.solve_nearby`), and the book/data
scripts that call them instead of carrying their own copies (issue 27, step 7).

The searches are checked on a stand-in for the state evolution whose test error is a
known function of ``log lam`` (each solve a microsecond), so the minimiser, the number
of solves and the warm starts each solve receives are known exactly."""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

from attnlib import se, targets, tasks
from attnlib.se import drivers, optimal

DATA = Path(__file__).resolve().parents[1] / "book" / "data"
LOG_OPT = math.log(0.05)


class Fake(NamedTuple):
    """The fields of an SEResult the search reads."""

    lam: float
    converged: bool
    q: float
    rank_fraction: float
    test_error: float
    test_error_noisy: float
    residual: float = 1.0
    n_iter: int = 1


def quadratic(lam: float, zero_above: float = math.inf, fail=()) -> Fake:
    """Test error ``1 + (log lam - log 0.05)^2``; the zero phase above ``zero_above``
    (a flat test error, ``q = 0``); no fixed point at the ``lam`` in ``fail``."""
    if lam in fail:
        return Fake(lam, False, math.nan, math.nan, math.nan, math.nan)
    if lam > zero_above:
        return Fake(lam, True, 0.0, 0.0, 5.0, 6.0)
    e = 1.0 + (math.log(lam) - LOG_OPT) ** 2
    return Fake(lam, True, 0.5, 0.3, e, e + 1.0)


def warm_of(r):
    """The stand-in's warm start, returned beside ``r``: None in the zero phase and where
    it failed (as :func:`attnlib.se.solve` returns)."""
    return ("warm", r.lam) if r.converged and r.q > 0 else None


class Recorder:
    """``solve_at`` that records the ``lam`` and the warm start of every solve; returns
    ``(result, warm start)``."""

    def __init__(self, **kw):
        self.calls, self.kw = [], kw

    def __call__(self, lam, init):
        self.calls.append((lam, init))
        r = quadratic(lam, **self.kw)
        return r, warm_of(r)


def test_bounded_search_finds_the_minimum_within_xatol():
    f = Recorder()
    s = optimal.search(f, bounds=(1e-4, 10.0), xatol=1e-3)
    assert abs(math.log(s.lam) - LOG_OPT) < 2e-3
    assert s.result.lam == s.lam and s.n_solves == len(f.calls)


def test_chained_search_is_the_parabola_vertex_in_few_solves():
    """Three points around a neighbouring optimum are shifted downhill to a bracket and
    the vertex of the parabola through them is the minimum of a quadratic exactly: three
    solves, one per shift of 0.4 in log lam, one at the vertex."""
    for previous in (0.04, 0.2, 0.01):  # the bracket moves up or down
        s = optimal.search(Recorder(), bounds=(1e-4, 10.0), xatol=0.15, previous=previous)
        assert math.log(s.lam) == pytest.approx(LOG_OPT, abs=1e-12)
        shifts = math.ceil(abs(math.log(previous) - LOG_OPT) / 0.4 - 0.5)
        assert s.n_solves == 3 + shifts + 1
    # the bracket would leave the bounds: Brent on the bounds instead
    s = optimal.search(Recorder(), bounds=(1e-4, 0.06), xatol=1e-3, previous=0.02)
    assert s.lam == pytest.approx(0.05, rel=3e-3) and s.n_solves > 6


def test_grid_search_returns_the_best_point_solved():
    grid = np.logspace(-3.0, -0.5, 5)
    f = Recorder()
    s = optimal.search(f, grid=grid, xatol=0.05)
    assert [lam for lam, _ in f.calls[:5]] == list(grid)
    assert s.lam == min((lam for lam, _ in f.calls), key=lambda x: quadratic(x).test_error)
    assert abs(math.log(s.lam) - LOG_OPT) < 0.05


def test_warm_starts_follow_converged_points_off_the_zero_phase():
    """Each solve starts from the last converged point with q > 0; the zero phase and
    failures are solved and compared but never passed on as warm starts."""
    f = Recorder(zero_above=1.0)
    # a flat zero phase around the previous optimum: no parabola, then Brent
    s = optimal.search(f, bounds=(1e-4, 10.0), xatol=0.15, init="init", previous=2.0)
    last = "init"
    assert any(lam > 1.0 for lam, _ in f.calls)  # the zero phase was met
    for lam, init in f.calls:
        assert init == last
        r = quadratic(lam, zero_above=1.0)
        if r.q > 0:
            last = ("warm", lam)
    assert s.warm == last and optimal.is_zero_phase(quadratic(5.0, zero_above=1.0))
    assert s.result_warm == warm_of(s.result)
    # a failed point counts as +inf: the search avoids it
    fail = tuple(lam for lam, _ in f.calls[:2])
    s = optimal.search(Recorder(fail=fail), bounds=(1e-4, 10.0), xatol=0.15)
    assert s.result.converged and s.lam not in fail
    # noisy=True minimises test_error_noisy (here the same minimiser)
    s = optimal.search(Recorder(), bounds=(1e-4, 10.0), xatol=1e-3, noisy=True)
    assert s.result.test_error_noisy == pytest.approx(2.0, abs=1e-5)


def test_search_bad_arguments_raise():
    f = Recorder()
    with pytest.raises(ValueError, match="bounds"):
        optimal.search(f, bounds=(1.0, 0.1))
    with pytest.raises(ValueError, match="not both"):
        optimal.search(f, previous=0.1, grid=[0.01, 0.1])
    with pytest.raises(ValueError, match="grid"):
        optimal.search(f, grid=[0.1, 0.01])
    with pytest.raises(ValueError, match="previous"):
        optimal.search(f, previous=-1.0)
    with pytest.raises(ValueError, match="xatol"):
        optimal.search(f, xatol=0.0)


def test_solve_nearby_retries_a_failed_cold_start_from_a_larger_alpha(monkeypatch):
    """A cold start that finds no fixed point is solved again from the fixed point at
    ``1.5 alpha``; a warm start is solved once, as given."""
    seen = []

    def fake_solve(task, target, point_, init, settings):
        alpha, lam, _ = point_
        seen.append((alpha, init))
        ok = init is not None or alpha > 0.25
        r = quadratic(lam) if ok else quadratic(lam, fail=(lam,))
        return r, warm_of(r)

    monkeypatch.setattr(drivers, "_solve", fake_solve)
    task, target = tasks.Linear(T=1), targets.Wishart(0.5)
    r = drivers.solve_nearby(task, target, 0.2, 0.05)
    assert r.converged and [a for a, _ in seen] == [0.2, 0.2 * 1.5, 0.2]
    assert seen[2][1] == ("warm", 0.05)  # the last solve starts from the one at 1.5 alpha
    seen.clear()
    drivers.solve_nearby(task, target, 0.2, 0.05, init=(0.1, 0.2, 1.0))
    assert len(seen) == 1
    seen.clear()
    with pytest.warns(se.SEConvergenceWarning):
        r = drivers.solve_nearby(task, target, 0.1, 0.05)  # 0.15 fails too
    assert not r.converged and len(seen) == 2


def test_search_lambda_on_the_state_evolution_and_its_zero_phase():
    """On the state evolution (linear task, Frobenius: the optimum is ``Delta / Q0``, see
    test_se): Brent and the chained search from a neighbouring optimum land on it within
    the tolerance on log lam; a lam in the zero phase is a converged ``S_hat = 0`` that is
    never a warm start."""
    task, target = tasks.Linear(T=1, noise=0.3), targets.Wishart(0.5)
    kw = {"bounds": (1e-3, 10.0), "xatol": 0.05}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        brent = drivers.search_lambda(task, target, 0.5, "frobenius", **kw)
        chained = drivers.search_lambda(task, target, 0.5, "frobenius", previous=0.3, **kw)
        zero = se.solve(task, target, 0.05, 10.0)
    for s in (brent, chained):
        assert abs(math.log(s.lam * float(target.Q0) / 0.3)) < 0.05 and s.result.converged
    assert optimal.is_zero_phase(zero) and zero.converged
    assert optimal.warm_start(zero, None, "before") == "before"
    r = brent.result
    assert isinstance(brent.result_warm, se.WarmStart) and brent.result_warm.x == (r.m, r.q, r.v)
    assert optimal.warm_start(brent.result, brent.result_warm, "before") is brent.result_warm
    assert isinstance(brent.warm, se.WarmStart)


# ----------------------------------------------------------------------------
# book/data: declarations on the library, not copies of its algorithms
# ----------------------------------------------------------------------------

SCRIPTS = sorted(p.name for p in DATA.glob("*.py"))


def test_the_data_scripts_are_found():
    assert len(SCRIPTS) > 20 and "make_erm_data.py" in SCRIPTS and "_common.py" in SCRIPTS


@pytest.mark.parametrize("name", SCRIPTS)
def test_data_scripts_are_short_and_search_no_lam_of_their_own(name):
    """Every book/data script (and helper module) is at most 300 lines, and none carries
    its own search for the optimal lam or its own zero-phase test: attnlib.se has them."""
    text = (DATA / name).read_text()
    assert len(text.splitlines()) <= 300, f"book/data/{name} is over 300 lines"
    assert not re.search(r"minimize_scalar|def _brent|def _parabola|def (is_)?zero_phase", text)


# One computation from stored weights (a part of make_spectrum_data): its loop runs over
# the network's layers and draws every layer's shuffled baseline from one generator, so
# it is not a grid of independent points.
NOT_A_GRID = {"make_spectrum_minilm.py"}


def _declares_grid(name: str, seen=()) -> bool:
    """``name`` builds an ``attnlib.sweep.Grid``, itself or in a book/data module it imports."""
    text = (DATA / name).read_text()
    if "sweep.Grid(" in text:
        return True
    local = set(re.findall(r"^from data\.(\w+) import", text, flags=re.M)) - {"_common"}
    return any(_declares_grid(f"{m}.py", (*seen, name)) for m in local if f"{m}.py" not in seen)


@pytest.mark.parametrize("name", [s for s in SCRIPTS if s.startswith("make_")])
def test_data_scripts_declare_their_experiments_on_sweep(name):
    """Every make_*.py runs its experiments as sweep.Grids of point functions (cached,
    parallel, one command line), except the one-computation scripts of NOT_A_GRID."""
    if name in NOT_A_GRID:
        assert not _declares_grid(name), f"{name} is a grid now: drop it from NOT_A_GRID"
    else:
        assert _declares_grid(name), f"book/data/{name} loops over its parameters itself"
