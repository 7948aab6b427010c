"""The settings of a training run: one NamedTuple for the three solvers.

:func:`attnlib.train.train_factorized`, :func:`attnlib.train.train_direct` and
:func:`attnlib.train.train_convex` take ``settings=TrainSettings(...)`` (keyword-only);
their keywords of the same names (``max_iter=``, ``tol=``, ...) are shorthands: ``None``
(their default) means "from ``settings``", any other value replaces that field. A field
left ``None`` takes the solver's own default (below). The iteration budget is
``max_iter`` everywhere (as in :class:`attnlib.se.SESettings` and
:class:`attnlib.gamp.GAMPSettings`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from attnlib import _checks

__all__ = ["TrainSettings", "resolve"]


class TrainSettings(NamedTuple):
    """Settings of one training run (``None``: the solver's default).

    - ``max_iter``: Adam or gradient-descent steps, or FISTA iterations, rounded up to a
      multiple of ``chunk`` (default 5000 steps; 20000 FISTA iterations);
    - ``tol``: the stopping tolerance (the relative change of the objective per step for
      Adam and gradient descent; the relative gradient mapping for FISTA);
    - ``chunk``: steps per jit-compiled call, between two checks (default 100; FISTA 50);
    - ``learning_rate``: peak rate or an optax schedule (default 0.1 for
      ``train_factorized``, :func:`attnlib.train.train_direct`'s rule for it); ``decay``:
      the rate decays to ``decay * learning_rate`` over ``max_iter`` steps;
    - ``dtype``: of the first-order iterates (default ``float32`` for the factor,
      ``float64`` for ``S``; FISTA always runs in float64);
    - ``keep_path``: also return the parameters after every chunk;
    - ``time_limit``: seconds (``None``: no limit; logger ``attnlib.train``).

    ``learning_rate``, ``decay``, ``dtype`` and ``keep_path`` do not apply to FISTA.
    """

    max_iter: int | None = None
    tol: float = 1e-9
    chunk: int | None = None
    learning_rate: float | Callable | None = None
    decay: float = 0.01
    dtype: Any = None
    keep_path: bool = False
    time_limit: float | None = None


def resolve(settings, given: dict, defaults: dict) -> TrainSettings:
    """``settings`` (default ``TrainSettings()``) with the shorthand keywords ``given``
    that are not ``None`` in place of its fields, then the fields still ``None`` from the
    solver's ``defaults``. The fields are validated by the solver."""
    s = _checks.settings(TrainSettings, settings, given)
    s = s._replace(**{k: v for k, v in defaults.items() if getattr(s, k) is None})
    _checks.integer("max_iter", s.max_iter, 1)
    return s
