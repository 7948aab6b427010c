"""Time limits and progress of the theory's host loops (internal).

A call given ``time_limit=`` (seconds) runs inside :func:`limit`, which sets a deadline
for everything it calls (context-local: a nested limit can only shorten it). The host
loops call :func:`check` between steps (an SE map, a fixed-point attempt, a probe of a
search): past the deadline it raises :class:`TimeUp`, which the call that set the limit
catches and turns into its unfinished result (NaN, ``converged=False`` and a warning:
the theory failure policy). Without a limit :func:`check` only reads a context variable,
so no number changes.

:func:`tick` logs at INFO, at most every :data:`LOG_EVERY_S` seconds, what a long loop
is doing (logger of the calling module): every call that can run past about 10 s says
what it does at INFO (``logging.basicConfig(level=logging.INFO)`` shows it).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import time

from attnlib import _checks

__all__ = ["TimeUp", "limit", "check", "expired", "tick", "time_limit", "LOG_EVERY_S"]

LOG_EVERY_S = 10.0
"""Seconds between two progress lines of one loop."""

_DEADLINE: contextvars.ContextVar = contextvars.ContextVar("attnlib_deadline", default=None)
_LAST_LOG: contextvars.ContextVar = contextvars.ContextVar("attnlib_last_log", default=None)


class TimeUp(Exception):
    """The deadline of the innermost :func:`limit` has passed (internal: caught by the
    call that set it)."""


def time_limit(value) -> float | None:
    """A checked ``time_limit``: ``None`` (no limit) or seconds ``> 0``."""
    return None if value is None else _checks.positive("time_limit", value)


@contextlib.contextmanager
def limit(seconds: float | None):
    """Run the block with a deadline ``seconds`` from now (``None``: the enclosing one,
    if any); a deadline already set further out is shortened, never extended."""
    end = None if seconds is None else time.perf_counter() + seconds
    outer = _DEADLINE.get()
    if outer is not None and (end is None or outer < end):
        end = outer
    token = _DEADLINE.set(end)
    log_token = _LAST_LOG.set(time.perf_counter()) if _LAST_LOG.get() is None else None
    try:
        yield
    finally:
        _DEADLINE.reset(token)
        if log_token is not None:
            _LAST_LOG.reset(log_token)


def expired() -> bool:
    """Whether the current deadline (if any) has passed."""
    end = _DEADLINE.get()
    return end is not None and time.perf_counter() >= end


def check() -> None:
    """Raise :class:`TimeUp` when the current deadline has passed."""
    if expired():
        raise TimeUp


def left() -> float:
    """Seconds left before the current deadline (``inf`` without one)."""
    end = _DEADLINE.get()
    return math.inf if end is None else end - time.perf_counter()


def tick(logger, msg: str, *args) -> None:
    """``logger.info(msg, *args)`` if the last progress line of this call is at least
    :data:`LOG_EVERY_S` seconds old (inside :func:`limit`; outside it, never)."""
    last = _LAST_LOG.get()
    now = time.perf_counter()
    if last is not None and now - last >= LOG_EVERY_S:
        _LAST_LOG.set(now)
        logger.info(msg, *args)
