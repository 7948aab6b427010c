"""A solve to a requested accuracy: the QMC sizes double until ``integration_error <= rtol``
(internal; the ``rtol=`` of :func:`attnlib.se.solve`, :func:`attnlib.bayes.solve` and
:func:`attnlib.hardmax.solve`).

One loop for every solver whose result carries ``converged`` and ``integration_error``:
solve, and while the result is converged with ``integration_error > rtol`` (or ``more``
says so) solve again at the settings ``grow`` returns, until ``grow`` returns ``None``
(the sizes reached ``max_n_qmc``); then a ``RuntimeWarning`` states the error reached.
"""

from __future__ import annotations

import logging
import warnings

__all__ = ["until_accurate", "doubling_n_qmc"]

log = logging.getLogger("attnlib")


def until_accurate(
    solve, settings, *, rtol, grow, name, sizes, what, more=None, hint="", stacklevel=3
):
    """``solve(settings, last)`` (``last``: the previous output, ``None`` the first time)
    returns ``(result, extra)``; it is called again at ``grow(settings, result,
    previous_result)`` (``None``: no larger sizes) while ``result.converged`` and
    ``result.integration_error > rtol``, or while ``more(result)``. ``sizes``: the names
    of the settings' QMC sizes, in the log and the warning; ``name``: the solver's, in
    both; ``what``: what the error is of, ``hint``: a last sentence, in the warning;
    ``stacklevel``: the warning's, counted from the caller of this function.
    Returns the last ``(result, extra)``."""
    out = solve(settings, None)
    prev = None
    while _short(out[0], rtol) or (more is not None and more(out[0])):
        nxt = grow(settings, out[0], prev)
        if nxt is None:
            break
        err, at = out[0].integration_error, _sizes(settings, sizes)
        log.info("%s: %s %.2e > rtol %.1e at %s: doubling", name, what, err, rtol, at)
        prev, settings = out[0], nxt
        out = solve(settings, out)
    if _short(out[0], rtol):
        warnings.warn(
            f"{name}: {what} {out[0].integration_error:.2e} > rtol = {rtol:g} at "
            f"{_sizes(settings, sizes)} (max_n_qmc = {settings.max_n_qmc}); raise max_n_qmc "
            f"for more{hint}",
            RuntimeWarning,
            stacklevel=stacklevel + 1,
        )
    return out


def _short(result, rtol) -> bool:
    return bool(result.converged) and not result.integration_error <= rtol


def _sizes(settings, names) -> str:
    return ", ".join(f"{k} = {getattr(settings, k)}" for k in names)


def doubling_n_qmc(solve, settings, *, name, more=None, stacklevel=3, **text):
    """:func:`until_accurate` for settings with one QMC size ``n_qmc`` and the fields
    ``rtol``, ``max_n_qmc`` (those of :func:`attnlib.se.solve`, :func:`attnlib.width.solve`
    and :func:`attnlib.hardmax.solve`): ``n_qmc`` doubled while the double is at most
    ``max_n_qmc``; ``text``: ``what`` and ``hint`` (default: the metrics' error)."""
    max_n_qmc = settings.max_n_qmc

    def grow(s, result, previous):
        return s._replace(n_qmc=2 * s.n_qmc) if 2 * s.n_qmc <= max_n_qmc else None

    text = dict(what="relative error of the metrics", hint=_HINT) | text
    s = settings._replace(rtol=None)
    size = ("n_qmc",)
    kw = dict(rtol=settings.rtol, grow=grow, name=name, sizes=size, more=more, **text)
    return until_accurate(solve, s, stacklevel=stacklevel + 1, **kw)


_HINT = " (the error falls like n_qmc^-1/2 to n_qmc^-3/4)"
