r"""Several fixed points: the state evolution of a non-convex output channel.

Where the loss is not convex in the pre-activations (seq2seq and seq2lab softmax at
large ``v``) the state-evolution map can have several fixed points. Under replica
symmetry the ERM's is the one of lowest minimised objective
(:attr:`attnlib.se.SEResult.objective`). After the robust search of
:mod:`attnlib.se.robust` has found one fixed point, :func:`others` looks for more
where the channel is non-convex there (:func:`needs_search`: a task other than the
linear one, at a fixed point where the multi-start check of the proximal problems
found lower minima on the way: the signature of several prox minima, hence of a
map that may have several fixed points; a search at every large ``v`` would multiply
the cost of the interpolating softmax points), from

- continuation in ``lam``: the fixed point at ``lam * 10^k`` (``k`` in ``WALK``, from
  the default start), walked back down to ``lam`` one decade at a time, warm-started;
- scaled starts: the found ``(m, q, v)`` with ``q`` multiplied by ``Q_SCALES``;
- where these found another fixed point (the map has several there), continuation
  from the neighbour ``NEIGHBOUR * lam``: every fixed point the same search finds
  there, each warm-started at ``lam``. A branch that starts between ``lam`` and the
  walk's ``10 lam`` is missed by the walk.

Small ``lam`` (``0 < lam <= SMALL_LAM``, a non-linear task) is always searched, with the
walk and one more start: the ``lam -> 0`` branch, the fixed point at ``lam = 0`` (where
:mod:`attnlib.se.lam0` does not refuse it; at most ``robust._PROBE`` maps from the
default start) continued to ``lam``.

Deciding. The candidates are compared by objective, each with its error
``integration_error * |objective|`` (the propagated QMC error of the metrics,
:mod:`attnlib.se.propagation`; 0 for the closed forms): where the lowest is below
another by less than ``DECIDE`` times their combined error (``hypot``), the search
cannot say which is the minimiser, and the result is not converged (NaN fields,
``converged=False``) with an :class:`attnlib.se.SEConvergenceWarning` naming every
candidate and its objective (all of them in ``alternatives``); unless the tied
candidates also agree in test error and mse within their errors, where the lowest is
returned with its ``integration_error`` widened to the candidates' spread.

The linear task (a convex channel) is never searched: its fixed point is unique.
``n_iter`` of the result counts the search's maps only when it found another point
(so that results without alternatives are those of the plain search).
"""

from __future__ import annotations

import logging
import math
import warnings

import numpy as np

from attnlib import follow
from attnlib.se import point, robust
from attnlib.se.engine import LoopSettings, in_domain
from attnlib.se.lam0 import _lam0_refusal
from attnlib.se.results import (
    SEConvergenceWarning,
    SEMultipleFixedPointsWarning,
    SEResult,
    WarmStart,
)

__all__ = ["needs_search", "distinct", "others", "objective_error", "decide", "lowest"]

log = logging.getLogger("attnlib.se")

WALK = (4, 3, 2, 1)  # continuation from lam * 10^4 down to lam, one decade a step
Q_SCALES = (1.5, 0.67)  # scaled starts (m, s q, v)
NEIGHBOUR = 2.0  # the second round continues from NEIGHBOUR * lam
DISTINCT = 1e-3  # fixed points differing by more than this in m/Q0 or log q are distinct
SMALL_LAM = 1e-3  # 0 < lam <= SMALL_LAM: always searched, also from the lam -> 0 branch
DECIDE = 2.0  # objectives closer than DECIDE combined errors: the search cannot decide


def _small_lam(pb: point.Problem) -> bool:
    return bool(0.0 < float(pb.data.lam) <= SMALL_LAM)


def needs_search(pb: point.Problem, a: point.Attempt) -> bool:
    """Whether to look for other fixed points next to the attempt ``a``: a non-linear
    task where the prox check found lower minima on the way, or at small ``lam``."""
    if pb.channel.global_prox:
        return False
    return bool(a.checks > 0 or _small_lam(pb))


def _from_lam0(pb, settings):
    """The ``lam -> 0`` branch: the fixed point at ``lam = 0`` (one attempt of at most
    ``robust._PROBE`` maps from the default start; None where the theory refuses
    ``lam = 0`` or it does not converge) continued to the ``lam`` of ``pb``: an Attempt or
    None."""
    alpha = float(pb.data.alpha)
    if _lam0_refusal(pb.task, pb.target, alpha, pb.penalty) is not None:
        return None
    probe = settings._replace(max_iter=min(int(settings.max_iter), robust._PROBE))
    a0 = point.attempt(robust._at_lam(pb, 0.0), robust.default_x0(float(pb.data.Q0)), None, probe)
    if not a0.converged:
        return None
    b = point.attempt(pb, a0.x, a0.prox, settings)
    return b._replace(n_iter=a0.n_iter + b.n_iter)


def _walk(pb, lam, settings):
    """Continuation from ``lam * 10^WALK[0]`` down to ``lam``: an Attempt or None (the
    first ``lam`` of the walk where the default start converges within
    ``robust._PROBE`` maps starts it; :func:`attnlib.se.robust._descend` the rest)."""
    Q0 = float(pb.data.Q0)
    base = lam if lam > 0 else 1e-6
    probe = settings._replace(max_iter=min(int(settings.max_iter), robust._PROBE))
    lams = [*(base * 10.0**k for k in WALK), lam]
    first = follow.retry(
        lambda lam_k: point.attempt(robust._at_lam(pb, lam_k), robust.default_x0(Q0), None, probe),
        lams,
    )
    if not first.accepted:
        return None
    return robust._descend(pb, first.result, lams[len(first.tried) :], (settings,))[0]


def distinct(x, y, Q0) -> bool:
    """Whether two fixed points ``(m, q, v)`` differ (in ``m / Q0`` or ``log q``)."""
    if x[1] <= 0 or y[1] <= 0:
        return bool(abs(x[1] - y[1]) > DISTINCT * Q0 or abs(x[0] - y[0]) > DISTINCT * Q0)
    dm = abs(x[0] - y[0]) / Q0
    dq = abs(math.log(x[1]) - math.log(y[1]))
    return bool(max(dm, dq) > DISTINCT)


def _first_round(pb, lam, a, settings):
    """The walk and the scaled starts (where the prox check found lower minima), and the
    ``lam -> 0`` branch at small ``lam``: ``(converged attempts, n_iter)``."""
    Q0 = float(pb.data.Q0)
    candidates = [_walk(pb, lam, settings)]
    if _small_lam(pb):
        candidates.append(_from_lam0(pb, settings))
    for s in Q_SCALES if a.checks > 0 else ():
        x0 = np.asarray(a.x, dtype=float) * np.array([1.0, s, 1.0])
        if in_domain(x0, Q0):
            candidates.append(point.attempt(pb, x0, None, settings))
    n_iter = sum(b.n_iter for b in candidates if b is not None)
    return [b for b in candidates if b is not None and b.converged], n_iter


def _from_neighbour(pb, lam, settings):
    """Every fixed point the first round finds at ``NEIGHBOUR * lam`` (from the default
    start), each continued to ``lam``: ``(converged attempts, n_iter)``."""
    Q0 = float(pb.data.Q0)
    lam_nb = NEIGHBOUR * (lam if lam > 0 else 1e-6)
    pb_nb = robust._at_lam(pb, lam_nb)
    nb = robust.find(pb_nb, lam_nb, (robust.default_x0(Q0), None, None), settings)
    n_iter = nb.n_iter
    if nb.attempt is None:
        return [], n_iter
    there, k = _first_round(pb_nb, lam_nb, nb.attempt, settings)
    n_iter += k
    starts = [nb.attempt]
    for b in there:  # each distinct fixed point at lam_nb is continued once
        if all(distinct(b.x, c.x, Q0) for c in starts):
            starts.append(b)
    back = [point.attempt(pb, b.x, b.prox, settings) for b in starts]
    n_iter += sum(b.n_iter for b in back)
    return [b for b in back if b.converged], n_iter


def others(pb: point.Problem, lam, a: point.Attempt, settings: LoopSettings) -> tuple[list, int]:
    """Converged attempts other than ``a`` (distinct from it and from each other) and the
    SE maps spent: ``(attempts, n_iter)``."""
    Q0 = float(pb.data.Q0)

    def new(candidates, found):
        for b in candidates:
            if all(distinct(b.x, c.x, Q0) for c in [a, *found]):
                log.info("another fixed point: (m, q, v) = %s", np.round(b.x, 5))
                found.append(b)
        return found

    candidates, n_iter = _first_round(pb, lam, a, settings)
    found = new(candidates, [])
    if found:  # several fixed points here: a second round, from the neighbour
        candidates, k = _from_neighbour(pb, lam, settings)
        found, n_iter = new(candidates, found), n_iter + k
    return found, n_iter


def objective_error(r: SEResult) -> float:
    """The QMC error of ``r.objective``: ``integration_error * |objective|`` (the
    propagated relative error of the metrics; a NaN error counts as infinite)."""
    err = float(r.integration_error) * abs(float(r.objective))
    return err if math.isfinite(err) else math.inf


def _same_metrics(r, b) -> bool:
    """Whether ``r`` and ``b`` agree in test error and mse within ``DECIDE`` combined
    errors (``integration_error`` relative to each)."""
    for f in ("test_error", "mse"):
        x, y = float(getattr(r, f)), float(getattr(b, f))
        err = math.hypot(r.integration_error * abs(x), b.integration_error * abs(y))
        if not abs(x - y) <= DECIDE * err:  # False for NaN
            return False
    return True


def _spread(results, k) -> float:
    """The largest relative gap in test error and mse between ``results[k]`` and the
    others (what a tie among them adds to its error)."""
    b = results[k]
    scale = {f: max(abs(getattr(b, f)), 1e-300) for f in ("test_error", "mse")}
    gaps = (abs(getattr(r, f) - getattr(b, f)) / s for r in results for f, s in scale.items())
    return float(max(gaps))


def decide(results) -> int | None:
    """The index of the lowest objective among ``results`` (:class:`SEResult`), or None
    where another is above it by no more than ``DECIDE`` times their combined error
    (:func:`objective_error`, errors taken as independent) and differs from it in test
    error or mse by more than their errors: the search cannot decide. Candidates tied
    in objective but equal in those metrics within their errors do not prevent the
    decision (:func:`lowest` widens the error to cover them)."""
    k = min(range(len(results)), key=lambda j: results[j].objective)
    best, e_best = results[k].objective, objective_error(results[k])
    for j, r in enumerate(results):
        tied = r.objective - best <= DECIDE * math.hypot(e_best, objective_error(r))
        if j != k and tied and not _same_metrics(r, results[k]):
            return None
    return k


def _listed(results) -> str:
    one = "({:.5g}, {:.5g}, {:.5g}, {:.6g} +- {:.2g})"
    return ", ".join(one.format(r.m, r.q, r.v, r.objective, objective_error(r)) for r in results)


def _undecided(pb, lam, results, n_iter, on_fail) -> SEResult:
    """The unfinished result where :func:`decide` cannot choose, every candidate in
    ``alternatives``; an :class:`SEConvergenceWarning` naming them (``on_fail="raise"``:
    ``RuntimeError``)."""
    msg = (f"state evolution at alpha={results[0].alpha}, lam={lam}, penalty={pb.penalty}: "
           f"{len(results)} fixed points whose objectives lie within {DECIDE:g} combined QMC "
           "errors: the search cannot decide which is the minimiser (fields are NaN; raise "
           "n_qmc). Candidates (m, q, v, objective +- error): " + _listed(results))  # fmt: skip
    if on_fail == "raise":
        raise RuntimeError(msg)
    warnings.warn(msg, SEConvergenceWarning, stacklevel=4)
    alts = tuple((r.m, r.q, r.v, r.objective) for r in results)
    residual = max(float(r.residual) for r in results)
    return point.failed(pb, lam, residual, n_iter)._replace(alternatives=alts)


def lowest(
    pb: point.Problem, lam, a: point.Attempt, extra: dict, settings, *, on_fail: str = "warn"
) -> tuple[SEResult, WarmStart | None]:
    """The :class:`SEResult` of lowest objective among ``a`` and :func:`others` (where
    :func:`needs_search`), the others in ``alternatives``, and its warm start; warns
    (:class:`SEMultipleFixedPointsWarning`) when there are several. Where
    :func:`decide` cannot choose: NaN with ``converged=False`` (:func:`_undecided`) and
    no warm start."""
    first = point.final(pb, lam, a, extra)
    if not needs_search(pb, a):
        return first, point.warm_start(pb, a.x, a.prox, a.history)
    more, n_more = others(pb, lam, a, settings)
    if not more:
        return first, point.warm_start(pb, a.x, a.prox, a.history)
    found = [a, *more]
    results = [first, *(point.final(pb, lam, b, {**extra, "residual": b.residual}) for b in more)]
    k = decide(results)
    if k is None:
        return _undecided(pb, lam, results, first.n_iter + n_more, on_fail), None
    best, b = results[k], found[k]
    best = best._replace(integration_error=max(best.integration_error, _spread(results, k)))
    alts = tuple((r.m, r.q, r.v, r.objective) for j, r in enumerate(results) if j != k)
    warnings.warn(
        f"state evolution at alpha={first.alpha}, lam={lam}, penalty={pb.penalty}: "
        f"{len(results)} fixed points; returned the lowest objective {best.objective:.6g} "
        f"at (m, q, v) = ({best.m:.5g}, {best.q:.5g}, {best.v:.5g}); others (m, q, v, "
        f"objective) in `alternatives`: "
        + ", ".join(f"({m:.5g}, {q:.5g}, {v:.5g}, {o:.6g})" for m, q, v, o in alts),
        SEMultipleFixedPointsWarning,
        stacklevel=3,
    )
    best = best._replace(alternatives=alts, n_iter=first.n_iter + n_more)
    return best, point.warm_start(pb, b.x, b.prox, b.history)
