"""Argument validation shared by the public functions of attnlib.

Every public function checks its arguments with these helpers so that a bad
value raises ``ValueError`` naming the argument and the accepted range.
"""

from __future__ import annotations

import math

import numpy as np


def _fmt(x) -> str:
    return repr(x)


def positive(name: str, value, *, allow_zero: bool = False) -> float:
    """Return ``float(value)`` if it is finite and > 0 (>= 0 with ``allow_zero``)."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {_fmt(value)}") from None
    ok = math.isfinite(x) and (x >= 0 if allow_zero else x > 0)
    if not ok:
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {bound}, got {_fmt(value)}")
    return x


def nonnegative(name: str, value) -> float:
    """Return ``float(value)`` if it is finite and >= 0."""
    return positive(name, value, allow_zero=True)


def in_interval(name: str, value, low: float, high: float, *, low_open=True, high_open=False):
    """Return ``float(value)`` if it lies in the interval (low, high] (openness configurable)."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {_fmt(value)}") from None
    lo_ok = x > low if low_open else x >= low
    hi_ok = x < high if high_open else x <= high
    if not (math.isfinite(x) and lo_ok and hi_ok):
        lb = "(" if low_open else "["
        hb = ")" if high_open else "]"
        raise ValueError(f"{name} must lie in {lb}{low}, {high}{hb}, got {_fmt(value)}")
    return x


def integer(name: str, value, minimum: int = 1) -> int:
    """Return ``int(value)`` if it is an integer >= minimum."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {_fmt(value)}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {_fmt(value)}")
    return int(value)


def choice(name: str, value, options) -> str:
    """Return ``value`` if it is one of ``options``."""
    if value not in options:
        raise ValueError(f"{name} must be one of {sorted(options)}, got {_fmt(value)}")
    return value


def finite_array(name: str, array, ndim: int | None = None, shape=None):
    """Check that ``array`` is finite (no NaN or inf) with the given ndim / shape."""
    a = np.asarray(array)
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {a.shape}")
    if shape is not None:
        for i, (got, want) in enumerate(zip(a.shape, shape, strict=False)):
            if want is not None and got != want:
                raise ValueError(f"{name} has shape {a.shape}, expected {tuple(shape)} (axis {i})")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or inf")
    return array
