"""Continuation, retries and bisection: the one driver of the library's curves, searches
and thresholds, and the one rule that turns ``init`` into a start (:func:`start`).

:func:`follow` walks a list of ``alpha`` or ``lam`` (the learning curves, the explorers,
the state evolution's walks in ``lam``), :func:`retry` is the ladder of one point (other
starts, heavier damping, a cold start: :mod:`attnlib.se.robust`,
:func:`attnlib.amp.robust_gamp`), :func:`bisect` halves the bracket of a threshold
(:func:`attnlib.thresholds.interpolation_se_bracket`). Each keeps its finished work on
an interrupt or at the time limit of the enclosing call (:mod:`attnlib._limits`).
Nothing here knows a solver: a solve is a callable returning a result with a
``converged`` field, and its warm start beside it (``None`` where there is none).
"""

from __future__ import annotations

import math
import warnings
from typing import Any, NamedTuple

import numpy as np

from attnlib import _checks, _limits

__all__ = ["Followed", "follow", "Retried", "retry", "Bisection", "bisect", "start"]

FAILURES = ("raise", "mark")


class Followed(NamedTuple):
    """The outcome of :func:`follow`: one result and one warm start (or ``None``) per
    point, in the order of the points."""

    results: list
    warms: list


def _callable(name: str, f, optional: bool = False):
    if not (callable(f) or (optional and f is None)):
        raise ValueError(f"{name} must be {'None or ' * optional}a callable, got {f!r}")
    return f


def _check_args(solve_at, points, starts, after, *, failures, what):
    _callable("solve_at", solve_at)
    points = _checks.finite_array("points", points)
    points = [float(a) for a in np.asarray(points, dtype=float).reshape(-1)]
    sized = starts is None or (hasattr(starts, "__len__") and not isinstance(starts, (str, bytes)))
    if not sized or (starts is not None and len(starts) != len(points)):
        raise ValueError(f"starts must have one entry per {what} ({len(points)}), got {starts!r}")
    _callable("after", after, optional=True)
    _checks.choice("failures", failures, FAILURES)
    return points


def _start_for(i, a, starts, prev, *, init, predict):
    """The start of point ``i`` and whether it is a prediction."""
    given = starts[i] if starts is not None else None
    if given is not None or not prev:
        return (init if given is None else given), False
    return (prev[-1][1], False) if predict is None else (predict(prev, a), True)


def follow(
    solve_at,
    points,
    *,
    init=None,
    starts=None,
    predict=None,
    after=None,
    unfinished=None,
    failures: str = "raise",
    stop_at_failure: bool = False,
    name: str = "follow",
    what: str = "alpha",
    warning=RuntimeWarning,
) -> Followed:
    """Results and warm starts of ``solve_at(i, x, start) -> (result, warm | None)`` along
    ``points`` (in order; ``what`` names the parameter, ``"alpha"`` or ``"lam"``).

    Start of point ``i``: ``starts[i]`` where given (one entry per point, ``None`` for
    none); else the last warm start given, or with ``predict`` the prediction
    ``predict(prev, x)`` from the last two ``prev = [(x, warm), ...]`` (then again from the
    last warm start where it does not converge); before any, ``init``. ``after(i, x,
    result)`` is called after each point; ``stop_at_failure``: stop after the first point
    that does not converge (shorter lists). With ``unfinished`` (``x -> result`` of a point
    not finished), an interrupt or the time limit of the enclosing call returns the
    finished points and ``unfinished(x)`` for the others, and with ``failures="mark"`` a
    point after the first that raises is marked so and the curve goes on; each time a
    ``warning`` (a category) says why. Else every exception propagates."""
    points = _check_args(solve_at, points, starts, after, failures=failures, what=what)
    results, warms, prev = [], [], []
    for i, a in enumerate(points):
        try:
            _limits.check()
            start, predicted = _start_for(i, a, starts, prev, init=init, predict=predict)
            r, w = solve_at(i, a, start)
            if predicted and not r.converged and start is not prev[-1][1]:  # the last one
                r, w = solve_at(i, a, prev[-1][1])
            if after is not None:
                after(i, a, r)
        except (KeyboardInterrupt, _limits.TimeUp) as err:
            if unfinished is None:
                raise
            tail = _stopped(err, points, i, unfinished, name=name, what=what, warning=warning)
            results += tail
            warms += [None] * len(tail)
            break
        except Exception as err:
            if unfinished is None or failures == "raise" or not results:
                raise  # the first point failing is most likely a bad argument: raised
            _failed(err, points, i, name=name, what=what, warning=warning)
            r, w = unfinished(a), None
        results.append(r)
        warms.append(w)
        if w is not None:
            prev = [*prev[-1:], (a, w)]
        if stop_at_failure and not r.converged:
            break
    return Followed(results, warms)


def _failed(err, points, i, *, name, what, warning) -> None:
    """Warn that point ``i`` raised ``err`` and is marked unfinished."""
    msg = f"{name}: point {i + 1}/{len(points)} ({what} {points[i]:.4g}) failed"
    warnings.warn(
        f"{msg} ({type(err).__name__}: {err}); marked NaN, converged=False", warning, stacklevel=4
    )


def _stopped(err, points, i, unfinished, *, name, what, warning) -> list:
    """The unfinished results of points ``i, i + 1, ...``, with a warning saying why the
    curve stopped."""
    why = "interrupted" if isinstance(err, KeyboardInterrupt) else "stopped at its time limit"
    n = len(points)
    warnings.warn(
        f"{name}: {why} at point {i + 1}/{n} ({what} {points[i]:.4g}): the {i} finished "
        f"points are returned, the other {n - i} are NaN with converged=False",
        warning,
        stacklevel=4,
    )
    return [unfinished(a) for a in points[i:]]


class Retried(NamedTuple):
    """The outcome of :func:`retry`: ``result``, the first accepted result (else the last
    one tried; ``None`` when there was no rung); ``rung``, the rung that gave it;
    ``accepted``; ``tried``, every result in the order tried."""

    result: Any
    rung: Any
    accepted: bool
    tried: list


def _converged(result) -> bool:
    return bool(result.converged)


def retry(attempt, rungs, *, accept=_converged, failed=None) -> Retried:
    """``attempt(rung)`` for each rung of ``rungs`` in turn (another start, a heavier
    damping, a cold start) until ``accept(result)`` (default: ``result.converged``);
    ``failed(rung, result)`` (optional) is called after each rejected attempt."""
    _callable("attempt", attempt)
    _callable("accept", accept)
    _callable("failed", failed, optional=True)
    if isinstance(rungs, (str, bytes)) or not hasattr(rungs, "__iter__"):
        raise ValueError(f"rungs must be a sequence, got {_checks._fmt(rungs)}")
    tried, rung = [], None
    for rung in rungs:
        r = attempt(rung)
        tried.append(r)
        if accept(r):
            return Retried(r, rung, True, tried)
        if failed is not None:
            failed(rung, r)
    return Retried(tried[-1] if tried else None, rung, False, tried)


class Bisection(NamedTuple):
    """The outcome of :func:`bisect`: the bracket ``lo < x* <= hi``, ``at_hi`` (the
    result of the last probe answered yes, or the ``at_hi`` given), ``n_probes`` and
    ``stopped``: ``None`` where ``hi - lo <= xtol``, else why it stopped (the reason
    ``spent`` gave, or the ``KeyboardInterrupt`` / :class:`attnlib._limits.TimeUp`)."""

    lo: float
    hi: float
    at_hi: Any
    n_probes: int
    stopped: Any


def bisect(probe, lo, hi, *, xtol, at_hi=None, spent=None, after=None) -> Bisection:
    """Halve ``[lo, hi]`` on a yes/no question until ``hi - lo <= xtol``.

    ``probe(x, at_hi)`` answers at ``x``, warm-started from ``at_hi`` (the result at the
    current upper end): a result where the answer is yes (``x`` becomes ``hi``), ``None``
    where it is no (``x`` becomes ``lo``). ``spent(n)`` (optional), asked before each
    probe with the number of probes done, returns why to stop (a string) or ``None``; a
    ``KeyboardInterrupt`` or the time limit of the enclosing call during a probe stops
    too. ``after(n, x, result, lo, hi)`` (optional) is called after each probe. It stops
    too where the midpoint is no longer inside the bracket (at the float resolution)."""
    lo, hi, xtol = _checks.real("lo", lo), _checks.real("hi", hi), _checks.positive("xtol", xtol)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"lo and hi must be finite with lo < hi, got lo={lo}, hi={hi}")
    for name, f in (("probe", probe), ("spent", spent), ("after", after)):
        _callable(name, f, optional=name != "probe")
    n, stopped = 0, None
    while hi - lo > xtol and lo < 0.5 * (lo + hi) < hi:
        mid = 0.5 * (lo + hi)
        stopped = None if spent is None else spent(n)
        try:
            r = None if stopped else probe(mid, at_hi)
        except (KeyboardInterrupt, _limits.TimeUp) as err:
            stopped = err
        if stopped is not None:
            break
        n += 1
        if r is None:
            lo = mid
        else:
            hi, at_hi = mid, r
        if after is not None:
            after(n, mid, r, lo, hi)
    return Bisection(lo, hi, at_hi, n, stopped)


def start(init, cold, Q0=None):
    """The one rule that turns ``init`` into a start ``(x, warm)``: ``x = (m, q, v)`` (a
    float array) and the warm start it came from (or ``None``).

    ``None``, or a result that did not converge or is the zero phase (``v = 0``): the
    ``cold`` start. A result (a field ``converged`` and ``m, q, v``; or a field ``se``
    holding one, a width result): its ``(m, q, v)``. A warm start (fields ``x`` and
    ``key``): its ``x``, and the warm start itself as ``warm`` (its prox points and
    solver history are the caller's to use where they fit). Else ``(m, q, v)``. The
    start must be finite with ``q > 0``, ``v > 0`` and, with ``Q0``, ``m^2 < q Q0``
    (inside the domain of the map); else a ``ValueError`` naming ``init``."""
    given, warm = init, None
    if Q0 is not None:
        Q0 = _checks.positive("Q0", Q0)
    if hasattr(init, "se") and hasattr(init, "kappa"):  # a width result
        init = init.se
    if hasattr(init, "converged") and hasattr(init, "v"):  # a result
        if not (init.converged and init.v > 0):  # zero phase or no fixed point
            return np.asarray(cold, dtype=float), None
        init = (init.m, init.q, init.v)
    if hasattr(init, "x") and hasattr(init, "key"):  # a warm start
        warm, init = init, init.x
    if init is None:
        return np.asarray(cold, dtype=float), None
    try:
        x = np.asarray(init, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        x = np.zeros(0)
    if x.shape != (3,):
        raise ValueError(
            f"init must be (m, q, v), a result or a WarmStart, got {_checks._fmt(given)}"
        )
    m, q, v = x
    if not (np.all(np.isfinite(x)) and q > 0 and v > 0 and (Q0 is None or m * m < q * Q0)):
        domain = "" if Q0 is None else " and m^2 < q Q0"
        raise ValueError(f"init (m, q, v) = {tuple(x)} must have q > 0, v > 0{domain}")
    return x, warm
