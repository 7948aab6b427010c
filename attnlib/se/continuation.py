"""The state evolution's continuation in ``alpha`` (:func:`continuation`):
:func:`attnlib.follow.follow` with the secant prediction of a :class:`WarmStart`
(:func:`secant`) and the unfinished point of a curve (:func:`unfinished_result`: NaN,
``converged=False``)."""

from __future__ import annotations

import math

import numpy as np

from attnlib import _checks, follow
from attnlib.se.results import SEConvergenceWarning, SEResult, WarmStart

__all__ = ["continuation", "secant", "unfinished_result"]


def unfinished_result(alpha, lam, penalty, Q0) -> SEResult:
    """The result of a point that was not finished (interrupted, past the time limit, or
    failed): every order parameter and metric NaN, ``converged=False``."""
    fields = {f: math.nan for f in SEResult._fields}
    fields.update(alpha=float(alpha), lam=float(lam), penalty=penalty, Q0=float(Q0),
                  converged=False, n_iter=0, alternatives=())  # fmt: skip
    return SEResult(**fields)


# secant predictions only for steps at most this many times the last one
_MAX_SECANT = 3.0


def secant(Q0):
    """The predictor of :func:`attnlib.follow.follow` for state-evolution points of a
    target with ``Q0``: the warm start at ``alpha`` extrapolated linearly (secant) from
    the last two ``prev = [(alpha, WarmStart), ...]`` in ``(m/Q0, log q, log v)`` and the
    prox points; the last warm start where that is not possible or leaves the domain."""

    def predict(prev, alpha):
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

    return predict


def continuation(
    solve_at, alphas, *, init=None, starts=None, secant_Q0=None, after=None,
    return_warm: bool = False, unfinished=None, failures: str = "raise",
    name: str = "continuation",
):  # fmt: skip
    """Results of ``solve_at(i, alpha, start) -> (SEResult, WarmStart | None)`` along
    ``alphas``: :func:`attnlib.follow.follow` in ``alpha`` (the continuation of
    :func:`learning_curve`, the explorers, :func:`attnlib.scaling.excess_risk_curve`),
    with, where ``secant_Q0`` (the target's ``Q0``) is given, the secant prediction
    (:func:`secant`); warnings are :class:`SEConvergenceWarning`. ``init``, ``starts``,
    ``after``, ``unfinished``, ``failures`` and ``name`` as in
    :func:`attnlib.follow.follow`. Returns the list of results; with ``return_warm``,
    ``(results, warm starts)`` (two lists)."""
    _checks.finite_array("alphas", alphas)
    predict = None if secant_Q0 is None else secant(_checks.positive("secant_Q0", secant_Q0))
    kw = dict(init=init, starts=starts, after=after, unfinished=unfinished, failures=failures)
    out = follow.follow(
        solve_at, alphas, predict=predict, name=name, warning=SEConvergenceWarning, **kw
    )
    return tuple(out) if return_warm else out.results
