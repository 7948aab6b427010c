"""Deprecated spellings, kept for one release (internal).

A renamed keyword, field or policy keeps working for one release: it does what the new
spelling does and raises a :class:`DeprecationWarning` that names the new spelling. The
book's notebooks use the new spellings, so no warning shows in their outputs.
"""

from __future__ import annotations

import warnings

__all__ = ["warn"]


def warn(old: str, new: str, *, stacklevel: int = 3) -> None:
    """``DeprecationWarning``: ``old`` is deprecated, use ``new`` (attributed to the caller
    of the function that calls this one, with the default ``stacklevel``)."""
    warnings.warn(
        f"{old} is deprecated and will be removed in the next release; use {new}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
