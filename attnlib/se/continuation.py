"""The one continuation in ``alpha`` of the library (:func:`continuation`): each point
warm-started from the last converged ones, with what a long curve needs: the finished
points kept on an interrupt (``KeyboardInterrupt``), at the time limit of the call
(:mod:`attnlib._limits`) or where a point fails, the others marked unfinished (NaN,
``converged=False``) with a warning."""

from __future__ import annotations

import logging
import math
import warnings

import numpy as np

from attnlib import _checks, _limits
from attnlib.se.results import SEConvergenceWarning, SEResult, WarmStart

__all__ = ["continuation", "unfinished_result"]

log = logging.getLogger("attnlib.se")

FAILURES = ("raise", "mark")


def unfinished_result(alpha, lam, penalty, Q0) -> SEResult:
    """The result of a point that was not finished (interrupted, past the time limit, or
    failed): every order parameter and metric NaN, ``converged=False``."""
    fields = {f: math.nan for f in SEResult._fields}
    fields.update(alpha=float(alpha), lam=float(lam), penalty=penalty, Q0=float(Q0),
                  converged=False, n_iter=0, alternatives=())  # fmt: skip
    return SEResult(**fields)


# secant predictions only for steps at most this many times the last one
_MAX_SECANT = 3.0


def _predict(prev, alpha, Q0):
    """Warm start at ``alpha`` extrapolated linearly (secant) from the last two converged
    points ``prev = [(alpha, WarmStart), ...]``: ``(m/Q0, log q, log v)`` and the prox
    points; the last warm start where that is not possible or leaves the domain."""
    if not prev:
        return None
    a1, w1 = prev[-1]
    if len(prev) < 2:
        return w1
    a2, w2 = prev[-2]
    t = (alpha - a1) / (a1 - a2) if a1 != a2 else 0.0
    if not 0.0 < t <= _MAX_SECANT or w2.key != w1.key:
        return w1
    y1, y2 = (np.array([w.x[0] / Q0, math.log(w.x[1]), math.log(w.x[2])]) for w in (w1, w2))
    y = y1 + t * (y1 - y2)
    x = (y[0] * Q0, math.exp(y[1]), math.exp(y[2]))
    if not (np.all(np.isfinite(x)) and x[0] ** 2 < 0.999 * x[1] * Q0):
        return w1
    prox = None
    if w1.prox is not None and w2.prox is not None:
        prox = w1.prox + t * (w1.prox - w2.prox)
    return WarmStart(x, prox if prox is not None else w1.prox, w1.key, w1.history)


def _start_for(i, a, starts, prev, init, secant_Q0):
    """The start of point ``i`` and whether it is a secant prediction."""
    given = starts[i] if starts is not None else None
    secant = given is None and bool(prev) and secant_Q0 is not None
    if given is not None:
        return given, secant
    if prev:
        return (_predict(prev, a, secant_Q0) if secant else prev[-1][1]), secant
    return init, secant


def _check_args(solve_at, alphas, starts, after, secant_Q0, failures):
    if not callable(solve_at):
        raise ValueError(f"solve_at must be a callable (i, alpha, start), got {solve_at!r}")
    alphas = _checks.finite_array("alphas", alphas)
    alphas = [float(a) for a in np.asarray(alphas, dtype=float).reshape(-1)]
    if starts is not None and (isinstance(starts, (str, bytes)) or not hasattr(starts, "__len__")
                               or len(starts) != len(alphas)):  # fmt: skip
        raise ValueError(f"starts must have one entry per alpha ({len(alphas)}), got {starts!r}")
    if after is not None and not callable(after):
        raise ValueError(f"after must be None or a callable (i, alpha, result), got {after!r}")
    _checks.choice("failures", failures, FAILURES)
    return alphas, (None if secant_Q0 is None else _checks.positive("secant_Q0", secant_Q0))


def continuation(
    solve_at, alphas, *, init=None, starts=None, secant_Q0=None, after=None,
    return_warm: bool = False, unfinished=None, failures: str = "raise",
    name: str = "continuation",
):  # fmt: skip
    """Results of ``solve_at(i, alpha, start) -> (SEResult, WarmStart | None)`` along
    ``alphas`` (in the given order), each point warm-started from the last converged ones
    (their warm starts): the one continuation in ``alpha`` of the library
    (:func:`learning_curve`, the explorers, :func:`attnlib.scaling.excess_risk_curve`).

    The start of point ``i`` is ``starts[i]`` where given (``starts``: one entry per
    alpha, ``None`` for none); else, once a point has converged, the last converged
    point's warm start or, with ``secant_Q0`` (the target's ``Q0``), the secant
    prediction from the last two (``(m/Q0, log q, log v)`` and the prox points), solved
    again from the last warm start where the prediction does not converge; before that,
    ``init``. ``after(i, alpha, result)`` (optional) is called after each point. Returns
    the list of results; with ``return_warm``, ``(results, warm starts)`` (two lists).

    Keeping finished work: with ``unfinished`` (a callable ``alpha -> result`` giving the
    result of a point not finished), a ``KeyboardInterrupt`` or the time limit of the
    enclosing call (:mod:`attnlib._limits`) stops the curve: the finished points are
    returned, the others are ``unfinished(alpha)`` (NaN, ``converged=False``), and an
    :class:`attnlib.se.SEConvergenceWarning` says where and why it stopped. With
    ``failures="mark"`` a point after the first that raises an exception is marked the
    same way (with a warning giving the error) and the curve goes on; ``"raise"`` (default) lets it
    propagate. Without ``unfinished`` every exception propagates."""
    alphas, secant_Q0 = _check_args(solve_at, alphas, starts, after, secant_Q0, failures)
    results, warms, prev = [], [], []
    for i, a in enumerate(alphas):
        try:
            _limits.check()
            start, secant = _start_for(i, a, starts, prev, init, secant_Q0)
            r, w = solve_at(i, a, start)
            if secant and not r.converged and start is not prev[-1][1]:  # without the secant
                r, w = solve_at(i, a, prev[-1][1])
            if after is not None:
                after(i, a, r)
        except (KeyboardInterrupt, _limits.TimeUp) as err:
            if unfinished is None:
                raise
            _stopped(name, alphas, i, err, unfinished, (results, warms))
            break
        except Exception as err:
            if unfinished is None or failures == "raise" or not results:
                raise  # the first point failing is most likely a bad argument: raised
            warnings.warn(f"{name}: point {i + 1}/{len(alphas)} (alpha {a:.4g}) failed "
                          f"({type(err).__name__}: {err}); marked NaN, converged=False",
                          SEConvergenceWarning, stacklevel=3)  # fmt: skip
            r, w = unfinished(a), None
        results.append(r)
        warms.append(w)
        if w is not None:
            prev = [*prev[-1:], (a, w)]
    return (results, warms) if return_warm else results


def _stopped(name, alphas, i, err, unfinished, lists) -> None:
    """Mark points ``i, i + 1, ...`` unfinished and warn why the curve stopped."""
    results, warms = lists
    why = "interrupted" if isinstance(err, KeyboardInterrupt) else "stopped at its time limit"
    n = len(alphas)
    for a in alphas[i:]:
        results.append(unfinished(a))
        warms.append(None)
    warnings.warn(
        f"{name}: {why} at point {i + 1}/{n} (alpha {alphas[i]:.4g}): the {i} finished "
        f"points are returned, the other {n - i} are NaN with converged=False",
        SEConvergenceWarning,
        stacklevel=4,
    )
