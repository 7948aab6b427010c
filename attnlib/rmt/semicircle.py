"""The semicircle law of variance ``Delta`` (the spectrum of ``sqrt(Delta) W_goe``).

Conventions: the book's "Notation and conventions" page (``book/notation.md``);
``W_goe`` has off-diagonal variance ``1/d``, diagonal variance ``2/d``.
"""

from __future__ import annotations

import math

import numpy as np

from attnlib import _checks

__all__ = ["semicircle_density", "semicircle_stieltjes"]


def semicircle_density(x, Delta):
    """Density of the semicircle law of variance ``Delta`` (support ``|x| <= 2 sqrt(Delta)``)."""
    Delta = _checks.positive("Delta", Delta)
    x = np.asarray(_checks.finite_array("x", x), dtype=float)
    return np.sqrt(np.clip(4 * Delta - x**2, 0.0, None)) / (2 * np.pi * Delta)


def semicircle_stieltjes(z, Delta):
    """``G(z) = (z - sqrt(z^2 - 4 Delta)) / (2 Delta)``: semicircle of variance ``Delta``.

    The branch has ``G ~ 1/z`` at infinity and ``Im G < 0`` for ``Im z > 0``; on the
    real axis it returns the boundary value from above.
    """
    Delta = _checks.positive("Delta", Delta)
    z = np.asarray(_checks.finite_array("z", z), dtype=complex)
    r = 2 * math.sqrt(Delta)
    s = np.sqrt(z - r) * np.sqrt(z + r)
    return (z - s) / (2 * Delta)
