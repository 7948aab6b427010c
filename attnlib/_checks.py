"""Argument validation shared by the public functions of attnlib.

Every public function checks its arguments with these helpers so that a bad
value raises ``ValueError`` naming the argument and the accepted range.
"""

from __future__ import annotations

import math
import os
from collections.abc import Hashable

import jax
import numpy as np

MAX_ABS = 1e100
"""Largest magnitude accepted for matrix entries and data: squares and products of such
numbers (traces, Gram matrices) stay far from float64 overflow."""


def _fmt(x) -> str:
    r = repr(x)
    return r if len(r) <= 80 else r[:77] + "..."


def real(name: str, value) -> float:
    """Return ``float(value)`` for a real number (not a string, not complex); may be inf/NaN."""
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{name} must be a real number, got {_fmt(value)}")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {_fmt(value)}") from None


def positive(name: str, value, *, allow_zero: bool = False) -> float:
    """Return ``float(value)`` if it is finite and > 0 (>= 0 with ``allow_zero``)."""
    x = real(name, value)
    ok = math.isfinite(x) and (x >= 0 if allow_zero else x > 0)
    if not ok:
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {bound}, got {_fmt(value)}")
    return x


def finite(name: str, value) -> float:
    """Return ``float(value)`` if it is a finite real number."""
    x = real(name, value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be a finite real number, got {_fmt(value)}")
    return x


def nonnegative(name: str, value) -> float:
    """Return ``float(value)`` if it is finite and >= 0."""
    return positive(name, value, allow_zero=True)


def in_interval(name: str, value, low: float, high: float, *, low_open=True, high_open=False):
    """Return ``float(value)`` if it lies in the interval (low, high] (openness configurable)."""
    x = real(name, value)
    lo_ok = x > low if low_open else x >= low
    hi_ok = x < high if high_open else x <= high
    if not (math.isfinite(x) and lo_ok and hi_ok):
        lb = "(" if low_open else "["
        hb = ")" if high_open else "]"
        raise ValueError(f"{name} must lie in {lb}{low}, {high}{hb}, got {_fmt(value)}")
    return x


ALPHA_RANGE = (1e-100, MAX_ABS)
"""Accepted sample ratios ``alpha = n / d^2`` (or ``n / d``): every function says it the
same way, ``alpha must lie in [1e-100, 1e+100]``."""


def alpha(value, name: str = "alpha") -> float:
    """Return ``float(value)`` for a sample ratio in :data:`ALPHA_RANGE` (finite, > 0)."""
    return in_interval(name, value, *ALPHA_RANGE, low_open=False)


def integer(name: str, value, minimum: int = 1) -> int:
    """Return ``int(value)`` if it is an integer >= minimum."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {_fmt(value)}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {_fmt(value)}")
    return int(value)


def boolean(name: str, value) -> bool:
    """``value`` as a bool (a ``ValueError`` naming ``name`` if it is not one)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a bool, got {_fmt(value)}")
    return bool(value)


def choice(name: str, value, options) -> str:
    """Return ``value`` if it is one of ``options``."""
    if not isinstance(value, Hashable) or value not in options:
        raise ValueError(f"{name} must be one of {sorted(options)}, got {_fmt(value)}")
    return value


def numeric_array(name: str, array, kinds: str = "biufc") -> np.ndarray:
    """``np.asarray(array)`` if it is an array of numbers (dtype kinds ``kinds``)."""
    try:
        a = np.asarray(array)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers, got {_fmt(array)}") from None
    if a.dtype.kind not in kinds:
        what = "real numbers" if "c" not in kinds else "numbers"
        raise ValueError(f"{name} must be an array of {what}, got dtype {a.dtype}")
    return a


def finite_array(
    name: str, array, ndim: int | None = None, shape=None, *, against=None, max_abs=None
):
    """Check that ``array`` is a numeric array, finite (no NaN or inf), with the given ndim / shape.

    Returns ``array`` itself (not a copy). ``against``: the name of the argument that
    fixes ``shape`` (named in the message). ``max_abs``: largest accepted magnitude.
    """
    a = numeric_array(name, array)
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {a.shape}")
    if shape is not None:
        for i, (got, want) in enumerate(zip(a.shape, shape, strict=False)):
            if want is not None and got != want:
                to = f" to match {against}" if against else ""
                raise ValueError(
                    f"{name} has shape {a.shape}, expected {tuple(shape)}{to} (axis {i})"
                )
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or inf")
    if max_abs is not None and a.size and np.max(np.abs(a)) > max_abs:
        raise ValueError(f"{name} has entries larger than {max_abs:g} in magnitude")
    return array


def task(value):
    """Return ``value`` if it is an attnlib task (an object with ``T``, ``out_shape``, ``loss``).

    Checked by its interface rather than its class so that this module imports nothing
    from attnlib (every other module imports it).
    """
    ok = all(hasattr(value, k) for k in ("T", "out_shape", "loss", "output"))
    if not ok or isinstance(value, type):
        raise ValueError(f"task must be an attnlib.tasks.Task, got {_fmt(value)}")
    return value


def target(value):
    """Return ``value`` if it is an :class:`attnlib.targets.Target` (by its interface, as
    :func:`task`: ``measure`` and ``Q0``), else a ValueError naming ``target``."""
    if not hasattr(value, "measure") or not hasattr(value, "Q0"):
        raise ValueError(f"target must be an attnlib.targets.Target, got {value!r}")
    return value


def dataset(task_, data, d: int | None = None):
    """Validate a data set against a task; return ``(data.X, data.Y, d)``.

    ``data.X``: ``(n, T, d)`` sequences (``T = task.T``; ``d`` as given, if given);
    ``data.Y``: ``(n, *task.out_shape)`` labels; both finite.
    """
    task(task_)
    if not hasattr(data, "X") or not hasattr(data, "Y"):
        raise ValueError("data must be an attnlib.tasks.Dataset with fields X and Y")
    X = np.asarray(data.X)
    Y = np.asarray(data.Y)
    if X.ndim != 3 or X.shape[1] != task_.T or X.shape[0] < 1 or X.shape[2] < 1:
        raise ValueError(f"data.X must have shape (n, T={task_.T}, d), got {X.shape}")
    if d is not None and X.shape[2] != d:
        raise ValueError(f"data.X has d = {X.shape[2]}, but the matrix has d = {d}")
    want = (X.shape[0], *task_.out_shape)
    if Y.shape != want:
        raise ValueError(f"data.Y must have shape {want} for this task, got {Y.shape}")
    finite_array("data.X", X, max_abs=MAX_ABS)
    finite_array("data.Y", Y, max_abs=MAX_ABS)
    return data.X, data.Y, X.shape[2]


def square_matrix(
    name: str, S, d: int | None = None, symmetric: bool = False, *, against: str = "the data"
):
    """Check a finite square ``(d, d)`` matrix, ``d >= 1``, entries at most :data:`MAX_ABS`
    in magnitude (symmetric to ``1e-6`` relative if asked); ``against`` names what fixes ``d``.
    """
    a = numeric_array(name, S, kinds="biuf")
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] < 1:
        raise ValueError(f"{name} must be a square (d, d) matrix, got shape {a.shape}")
    if d is not None and a.shape[0] != d:
        raise ValueError(f"{name} must have shape ({d}, {d}) to match {against}, got {a.shape}")
    finite_array(name, a, max_abs=MAX_ABS)
    if symmetric:
        scale = float(np.max(np.abs(a))) if a.size else 0.0
        if np.max(np.abs(a - a.T), initial=0.0) > 1e-6 * scale:
            raise ValueError(f"{name} must be symmetric (|{name} - {name}^T| > 1e-6 max|{name}|)")
    return a


def float_dtype(name: str, dtype):
    """Return ``dtype`` as a numpy dtype if it is float32 or float64."""
    try:
        dt = None if dtype is None else np.dtype(dtype)
    except TypeError:
        dt = None
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"{name} must be float32 or float64, got {_fmt(dtype)}")
    return dt


def prng_key(name: str, key):
    """Return ``key`` if it is one jax PRNG key: a typed key (``jax.random.key``) of shape
    ``()`` or a raw ``uint32`` key of shape ``(2,)`` (``jax.random.PRNGKey``)."""
    if isinstance(key, jax.Array) and jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        if key.shape == ():
            return key
    elif isinstance(key, (jax.Array, np.ndarray)) and key.dtype == np.uint32 and key.shape == (2,):
        return key
    raise ValueError(
        f"{name} must be a jax PRNG key (jax.random.PRNGKey(seed) or jax.random.key(seed)), "
        f"got {_fmt(key)}"
    )


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation: ``MemAvailable`` of
    ``/proc/meminfo`` (Linux), else free pages times the page size, else ``None``."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def fits_in_memory(name: str, nbytes: float, what: str, fraction: float = 0.8) -> None:
    """``ValueError`` naming ``name`` when ``nbytes`` (an estimate made before allocating)
    exceeds ``fraction`` of the available memory (unknown availability: no check)."""
    free = available_memory()
    if free is not None and nbytes > fraction * free:
        raise ValueError(
            f"{name}: {what} needs about {nbytes / 2**30:.3g} GiB, more than "
            f"{fraction:.0%} of the {free / 2**30:.3g} GiB of memory available; "
            f"reduce {name}" + ("" if name == "d" else " (or d)")
        )


def target_sample_size(d, what: str = "a target sample S0 (d x d)") -> int:
    """``d`` of a target's sample, checked: an integer ``>= 1`` such that the float64
    ``d x d`` matrices alive at once while sampling (four: a Gaussian matrix, its QR
    factors or the Wishart product, the result; an upper estimate) fit in the available
    memory (:func:`fits_in_memory`: a ValueError naming ``d``, not an abort in XLA)."""
    d = integer("d", d, 1)
    fits_in_memory("d", 8.0 * 4 * d * d, f"{what} (d = {d})")
    return d


def qmc_sizes(n_qmc, n_rep, seed) -> tuple[int, int, int]:
    """``(n_qmc, n_rep, seed)`` of a state evolution's QMC points, checked: ``n_qmc / n_rep``
    a power of 2 ``>= 2`` (balanced Sobol sets), ``n_rep >= 1``, ``seed >= 0``."""
    n_qmc = integer("n_qmc", n_qmc, 2)
    n_rep = integer("n_rep", n_rep, 1)
    per = n_qmc // n_rep
    if per * n_rep != n_qmc or per < 2 or per & (per - 1):
        raise ValueError(
            f"n_qmc / n_rep must be a power of 2 >= 2, got n_qmc={n_qmc}, n_rep={n_rep}"
        )
    return n_qmc, n_rep, integer("seed", seed, 0)


def settings(cls, value, given: dict, default=None):
    """The settings a solver runs with: ``value`` (an instance of the NamedTuple ``cls``;
    ``None``: ``default``, itself ``None`` for ``cls()``) with the entries of ``given``
    (shorthand keywords, fields of ``cls``) that are not ``None`` in place of its fields;
    ``ValueError`` naming ``settings`` (or ``default``, or an unknown field). The fields
    are not validated here: each solver checks its own."""
    if default is not None and not isinstance(default, cls):
        raise ValueError(f"default must be None or a {cls.__name__}, got {default!r}")
    if value is None:
        value = cls() if default is None else default
    elif not isinstance(value, cls):
        raise ValueError(f"settings must be None or a {cls.__name__}, got {value!r}")
    unknown = sorted(set(given) - set(cls._fields))
    if unknown:
        raise ValueError(f"given must name fields of {cls.__name__}, got {unknown}")
    return value._replace(**{k: v for k, v in given.items() if v is not None})
