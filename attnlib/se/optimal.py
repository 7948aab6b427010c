"""The optimal penalty: the ``lam`` that minimises the state evolution's test error.

One search on ``log lam`` for every caller (:func:`attnlib.se.search_lambda`, the
book's data scripts), over a function
``solve_at(lam, init) -> (SEResult, WarmStart | None)`` (a result and its warm start
beside it). Three ways to find the minimum:

- by default, bounded Brent on ``log lam`` over ``bounds`` (``scipy.optimize.
  minimize_scalar``) to within ``xatol``;
- from ``previous``, the optimum of a neighbouring problem (the last ``alpha`` or target
  of a chain): three points ``step`` apart around it, shifted downhill until the middle
  one is lowest (at most ``moves`` shifts, inside ``bounds``), then the vertex of the
  parabola through them; Brent on ``bounds`` where no such bracket is found;
- over a ``grid`` of ``lam`` (ascending): the grid first, then Brent between the grid
  neighbours of its best point, every solve warm-started from that point; the answer
  is the best point evaluated.

Each solve is warm-started from the warm start of the last converged point off the
zero phase (before the first one, from ``init``); a point that does not converge counts
as ``+inf``. The zero phase (``S_hat = 0``: every eigenvalue thresholded) is a
converged fixed point of :func:`attnlib.se.solve` with ``q = 0`` and ``rank_fraction =
0`` (:func:`is_zero_phase`); it is evaluated like any other point but never gives a
warm start.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from typing import Any, NamedTuple

import numpy as np
import scipy.optimize

from attnlib import _limits
from attnlib.se.results import SEConvergenceWarning

__all__ = ["LambdaSearch", "is_zero_phase", "warm_start", "search"]

log = logging.getLogger("attnlib.se")


class LambdaSearch(NamedTuple):
    """The outcome of :func:`search`.

    ``lam``: the optimal ``lam``; ``result``: the :class:`~attnlib.se.SEResult` there;
    ``warm``: the warm start (:class:`~attnlib.se.WarmStart`) of the last converged
    result off the zero phase met by the search (the start for a neighbouring search;
    ``init`` if there was none); ``n_solves``: the number of values of ``lam`` solved;
    ``result_warm``: the warm start of ``result`` itself (``None`` in the zero phase or
    where it did not converge)."""

    lam: float
    result: Any
    warm: Any
    n_solves: int
    result_warm: Any = None


def is_zero_phase(r) -> bool:
    """Whether the :class:`~attnlib.se.SEResult` ``r`` is the trivial fixed point
    ``S_hat = 0`` (all eigenvalues thresholded: ``q = 0``, ``rank_fraction = 0``)."""
    return bool(r.rank_fraction == 0.0 and r.q == 0.0)


def warm_start(r, warm, init):
    """``warm`` (the warm start returned beside the result ``r``) where ``r`` converged
    off the zero phase (a start for a neighbouring solve), else ``init``."""
    return warm if (r is not None and r.converged and not is_zero_phase(r)) else init


class _Objective:
    """The test error as a function of ``lam``, each ``lam`` solved once; the warm start
    follows the search while ``chain`` is true."""

    def __init__(self, solve_at, init, noisy: bool):
        self.solve_at, self.warm, self.noisy = solve_at, init, noisy
        self.seen: dict = {}
        self.chain = True
        self.t0 = time.perf_counter()

    def __call__(self, lam: float) -> float:
        if lam not in self.seen:
            r, w = self.solve_at(lam, self.warm)
            self.seen[lam] = (r, w)
            if self.chain:
                self.warm = warm_start(r, w, self.warm)
            log.info("lambda search: solve %d at lam %.4g: test error %.4g, %.0f s so far",
                     len(self.seen), lam, r.test_error, time.perf_counter() - self.t0)  # fmt: skip
        r = self.seen[lam][0]
        val = r.test_error_noisy if self.noisy else r.test_error
        return val if math.isfinite(val) else math.inf

    def log(self, x: float) -> float:
        return self(math.exp(x))

    def best(self) -> float:
        """The ``lam`` of lowest test error solved so far (the first one on ties)."""
        return min(self.seen, key=self)


def _brent(f, lo: float, hi: float, xatol: float) -> float:
    """Bounded Brent on ``[lo, hi]`` (log lam): the minimiser it returns."""
    res = scipy.optimize.minimize_scalar(
        f, bounds=(lo, hi), method="bounded", options={"xatol": xatol}
    )
    return float(res.x)


def _parabola(f, x0: float, bounds, step: float, moves: int):
    """Minimum of ``f`` (of ``log lam``) near ``x0``: a bracket of three points ``step``
    apart is shifted downhill until its middle is lowest, then the vertex of the
    parabola through them. ``None`` when no bracket is found within ``moves`` shifts
    or it leaves ``bounds``."""
    lo, hi = bounds
    xs = [x0 - step, x0, x0 + step]
    fs = [f(x) for x in xs]
    for _ in range(moves):
        if fs[1] <= min(fs[0], fs[2]):
            break
        shift = -step if fs[0] < fs[2] else step
        xs = [x + shift for x in xs]
        if not (lo <= xs[0] and xs[2] <= hi):
            return None
        fs = [fs[0], fs[0], fs[1]] if shift < 0 else [fs[1], fs[2], fs[2]]
        k = 0 if shift < 0 else 2
        fs[k] = f(xs[k])
    else:
        return None
    curv = fs[0] - 2 * fs[1] + fs[2]
    if not curv > 0:
        return None
    return xs[1] + 0.5 * step * (fs[0] - fs[2]) / curv


def _over_grid(f: _Objective, grid, xatol: float) -> float:
    """The grid, then Brent between the grid neighbours of its best point (warm-started
    from that point): the best ``lam`` solved."""
    for lam in grid:
        f(float(lam))
    best = f.best()
    i = int(np.argmin(np.abs(grid - best)))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]
    f.warm, f.chain = warm_start(*f.seen[best], f.warm), False
    _brent(f.log, math.log(lo), math.log(hi), xatol)
    return f.best()


def _check_grid(grid):
    grid = np.asarray(grid, dtype=float).reshape(-1)
    if grid.size < 2 or not np.all(grid > 0) or not np.all(np.diff(grid) > 0):
        raise ValueError(f"grid must hold at least two increasing values of lam > 0, got {grid}")
    return grid


def search(
    solve_at, *, bounds=(1e-4, 10.0), xatol: float = 0.02, previous: float | None = None,
    grid=None, init=None, noisy: bool = False, step: float = 0.4, moves: int = 6,
) -> LambdaSearch:  # fmt: skip
    """The ``lam`` of lowest test error of ``solve_at(lam, init) -> (SEResult, WarmStart
    | None)``.

    Args:
      bounds: ``(low, high)``, ``0 < low < high``: the range of ``lam`` searched
        (with ``grid``: the grid's range).
      xatol: Brent's tolerance on ``log lam``.
      previous: a neighbouring optimum to search around (the chained search), or None.
      grid: ascending values of ``lam`` to evaluate first (then Brent between the
        neighbours of the best), or None; not together with ``previous``.
      init: warm start of the first solve; noisy: minimise ``test_error_noisy``.
      step, moves: the bracket of the chained search (``log lam`` spacing, shifts).
    """
    lo, hi = (float(b) for b in bounds)
    if not 0 < lo < hi:
        raise ValueError(f"bounds must satisfy 0 < low < high, got {bounds}")
    if not (xatol > 0 and step > 0 and moves >= 0):
        raise ValueError(f"xatol > 0, step > 0 and moves >= 0 needed, got {xatol}, {step}, {moves}")
    if previous is not None and grid is not None:
        raise ValueError("give previous (a chained search) or grid, not both")
    if previous is not None and not previous > 0:
        raise ValueError(f"previous must be a lam > 0 or None, got {previous}")
    if grid is not None:
        grid = _check_grid(grid)
    f = _Objective(solve_at, init, noisy)
    try:
        lam = _find(f, (lo, hi), xatol, previous, grid, (step, moves))
    except (KeyboardInterrupt, _limits.TimeUp) as err:
        return _stopped(f, err)
    r, w = f.seen[lam]
    return LambdaSearch(lam, r, f.warm, len(f.seen), w)


def _find(f, bounds, xatol, previous, grid, bracket) -> float:
    """The ``lam`` the search settles on (every value solved through ``f``)."""
    if grid is not None:
        return _over_grid(f, grid, xatol)
    lo, hi = bounds
    x = None
    if previous is not None:
        x = _parabola(f.log, math.log(previous), (math.log(lo), math.log(hi)), *bracket)
    if x is None:
        x = _brent(f.log, math.log(lo), math.log(hi), xatol)
    lam = math.exp(x)
    f(lam)
    return lam


def _stopped(f, err) -> LambdaSearch:
    """The search cut short (interrupt, time limit): the best of the finished solves
    (``lam`` NaN and ``result`` None before the first), with a warning."""
    why = "interrupted" if isinstance(err, KeyboardInterrupt) else "stopped at its time limit"
    if not f.seen:
        warnings.warn(f"lambda search: {why} before its first solve finished (lam NaN)",
                      SEConvergenceWarning, stacklevel=4)  # fmt: skip
        return LambdaSearch(math.nan, None, f.warm, 0, None)
    lam = f.best()
    warnings.warn(
        f"lambda search: {why} after {len(f.seen)} solves: lam = {lam:.4g} is the best of the "
        "finished solves, not the optimum to xatol",
        SEConvergenceWarning,
        stacklevel=4,
    )
    r, w = f.seen[lam]
    return LambdaSearch(lam, r, f.warm, len(f.seen), w)
