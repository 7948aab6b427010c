"""Helpers the book's chapters share (not needed to use the library itself).

:func:`glue` stores a number for the prose with myst-nb's glue, as a plain Python number
(a numpy scalar would print as ``np.float64(...)`` and break formatted pastes such as
``{glue:text}`name:.3f```), floats rounded to eight significant digits: nbval compares
the stored text exactly, and the last bits of a result differ between machines and thread
counts. A change of the engine moves a fixed point within its tolerance, so after one the
chapters are executed again (``make execute``). tests/test_book_structure.py checks that
every formatted paste needs at most ``SIGNIFICANT_DIGITS - 2`` digits.
"""

import numbers

import numpy as np

__all__ = ["plain_number", "glue"]

try:
    from myst_nb import glue as _myst_glue
except ImportError:  # attnlib installed without the book extra
    _myst_glue = None

SIGNIFICANT_DIGITS = 8


def plain_number(value):
    """``value`` as a plain Python number; floats rounded to ``SIGNIFICANT_DIGITS``.

    Raises:
      ValueError: if ``value`` is not a real number (bool, int or float, numpy or not).
    """
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool | numbers.Integral):
        return int(value) if not isinstance(value, bool) else value
    if isinstance(value, numbers.Real):
        return float(f"{float(value):.{SIGNIFICANT_DIGITS}g}")
    raise ValueError(f"value must be a real number, got {value!r}")


def glue(name: str, value, display: bool = False) -> None:
    """Glue ``value`` under ``name``: a string as it is, a number via :func:`plain_number`.

    Raises:
      ValueError: if ``name`` is not a non-empty string or ``value`` is neither a
        string nor a real number.
      ImportError: if myst-nb (the ``book`` extra) is not installed.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    number = value if isinstance(value, str) else plain_number(value)
    if _myst_glue is None:
        raise ImportError("attnlib.book.glue needs myst-nb: pip install 'attnlib[book]'")
    _myst_glue(name, number, display=display)
