r"""The spectral map of the learned matrix: ``S_hat = F(B)`` with a scalar ``f``.

Conventions (the book's "Notation and conventions" page, ``book/notation.md``).
A spectral map ``F`` keeps the eigenvectors of a symmetric matrix ``B`` and maps
its eigenvalues ``x`` through a scalar function ``f``. The penalties of attnlib
give two families, both described by a slope ``c > 0`` and a shift ``tau >= 0``:

- ``"nuclear"`` (nuclear norm + PSD constraint; the factorised student)::

      f(x) = (c x - tau)_+,     f'(x) = c 1[x > tau / c],     threshold tau / c;

- ``"frobenius"`` (squared Frobenius norm; the direct student)::

      f(x) = c x / (1 + tau),   f'(x) = c / (1 + tau),        threshold -inf.

In the state evolution ``c = m_hat / a_hat`` and ``tau = lam / a_hat``
(:class:`attnlib.se.SEResult`); the proximal map of the penalty at step ``1/L``
is the case ``c = 1``, ``tau = d lam / L``.

:class:`SpectralMap` evaluates ``f`` and ``f'`` on numpy arrays and on jax arrays
(also inside ``jax.jit``, where ``c`` and ``tau`` may be traced).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal, get_args

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import _checks

__all__ = ["PENALTIES", "Penalty", "SpectralMap", "check_penalty"]

Penalty = Literal["nuclear", "frobenius"]
"""The penalties of attnlib: nuclear norm + PSD constraint, or squared Frobenius norm."""

PENALTIES: tuple[str, ...] = get_args(Penalty)


def check_penalty(penalty) -> str:
    """Return ``penalty`` if it is one of :data:`PENALTIES`, else raise ``ValueError``."""
    return _checks.choice("penalty", penalty, PENALTIES)


def array_namespace(*values):
    """``jax.numpy`` if any value is a jax array (or a tracer), else ``numpy``."""
    return jnp if any(isinstance(v, jax.Array) for v in values) else np


def _floats(xp, x):
    x = xp.asarray(x)
    return x if xp.issubdtype(x.dtype, xp.floating) else x.astype(float)


def _concrete(value) -> bool:
    return not isinstance(value, jax.core.Tracer)


@dataclasses.dataclass(frozen=True)
class SpectralMap:
    """Scalar function ``f`` of the spectral map ``F`` (module docstring).

    Attributes:
      c: slope ``> 0``.
      tau: shift ``>= 0`` (nuclear) or shrinkage ``tau`` of ``c x / (1 + tau)`` (Frobenius).
      penalty: ``"nuclear"`` or ``"frobenius"``.

    Concrete ``c`` and ``tau`` are checked (``ValueError`` naming the argument);
    traced values (inside ``jax.jit``) are taken as they are.
    """

    c: float = 1.0
    tau: float = 0.0
    penalty: Penalty = "nuclear"

    def __post_init__(self):
        check_penalty(self.penalty)
        if _concrete(self.c):
            _checks.positive("c", self.c)
        if _concrete(self.tau):
            _checks.nonnegative("tau", self.tau)

    @classmethod
    def from_se(cls, se_result) -> SpectralMap:
        """The map of a state-evolution fixed point (fields ``c``, ``tau``, ``penalty``)."""
        if not all(hasattr(se_result, k) for k in ("c", "tau", "penalty")):
            raise ValueError(f"se_result must be an attnlib.se.SEResult, got {type(se_result)!r}")
        return cls(se_result.c, se_result.tau, se_result.penalty)

    @property
    def slope(self):
        """``f'(x)`` where ``f > 0``: ``c`` (nuclear) or ``c / (1 + tau)`` (Frobenius)."""
        return self.c if self.penalty == "nuclear" else self.c / (1.0 + self.tau)

    @property
    def shift(self):
        """``tau`` (nuclear) or 0: ``f(x) = slope x - shift`` where ``f > 0``."""
        return self.tau if self.penalty == "nuclear" else 0.0 * self.tau

    @property
    def threshold(self) -> float:
        """Eigenvalue below which ``f = 0``: ``tau / c`` (nuclear), ``-inf`` (Frobenius)."""
        return self.tau / self.c if self.penalty == "nuclear" else -math.inf

    def f(self, x):
        """``f(x)`` element-wise (numpy in, numpy out; jax in, jax out)."""
        xp = array_namespace(x, self.c, self.tau)
        x = _floats(xp, x)
        y = self.slope * x - self.shift
        return xp.maximum(y, 0.0) if self.penalty == "nuclear" else y

    def fprime(self, x):
        """``f'(x)`` element-wise (``0`` at and below the threshold for the nuclear map)."""
        xp = array_namespace(x, self.c, self.tau)
        x = _floats(xp, x)
        if self.penalty == "nuclear":
            return self.c * (self.c * x > self.tau).astype(x.dtype)
        return self.slope * xp.ones_like(x)

    def kept(self, x):
        """Boolean mask of the eigenvalues ``x`` that ``f`` keeps (``f(x) > 0`` for nuclear)."""
        xp = array_namespace(x, self.c, self.tau)
        x = xp.asarray(x)
        if self.penalty == "nuclear":
            return self.c * x > self.tau
        return xp.ones(x.shape, dtype=bool)
