r"""Quasi-Monte Carlo normal points: one generator, one cache, one seeding rule.

Every Gaussian expectation that attnlib computes by quasi-Monte Carlo (the state
evolution's output side, the test error from the overlaps, the nested integrals of the
Bayes posterior and of the Bayes-optimal test error) averages over the points of
:func:`normals`: scrambled Sobol points in ``[0, 1)^dim`` mapped through the normal
inverse CDF (clipped to ``[1e-15, 1 - 1e-15]``), in ``n_rep`` independent scramblings of
``n / n_rep`` points each (their spread gives the standard error).

The seeding rule. Each integral draws its points from a named *stream*
(:data:`STREAMS`). Scrambling ``r`` of stream ``s`` with seed ``seed`` is scrambled by
``numpy.random.default_rng([seed + STREAMS[s], r])``. A single set is scrambling
``r = 0``, which numpy seeds exactly as the plain integer ``seed + STREAMS[s]`` (a
``SeedSequence`` pads its entropy with zeros to four words, so ``[k, 0]``, ``[k]`` and
``k`` are one seed). Two streams whose offsets differ by ``k`` share their points
between seeds ``k`` apart (``"inner"`` at seed 0 is ``"outer"`` at seed 1): streams are
independent at one seed, not across seeds.

The sample count is a runtime size: an integral over ``n`` points per scrambling runs
through one compiled program on pieces of :data:`CHUNK` points (:func:`chunks`; the
library's default, 8192 points in 4 scramblings, is one piece) and averages the pieces'
means, so that doubling ``n`` (``se.solve(..., rtol=)``) compiles nothing new.

Points are cached (one bounded cache for the whole library; the arrays are read-only).
This module imports nothing of attnlib but the argument checks, so every package
(channels, the state evolution, the Bayes-optimal limit) can use it.
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.stats

from attnlib import _checks

__all__ = ["CHUNK", "STREAMS", "block_error", "chunks", "normals", "qmc_normals", "sobol_normals"]

CHUNK = 2048
"""Points per scrambling that one compiled program integrates at a time (:func:`chunks`)."""

STREAMS = {
    "output": 0,  # the state evolution's output side (ERM, hardmax)
    "test_error": 7919,  # the test error from the overlaps (channels.Channel.test_errors)
    "outer": 0,  # outer points of the Bayes posterior's nested integrals
    "inner": 1,  # their inner points
    "bayes_test_outer": 11,  # outer points of the Bayes-optimal test error
    "bayes_test_inner": 12,  # its inner points
}
"""The streams of :func:`normals` and their seed offsets (module docstring)."""


def sobol_normals(dim: int, n: int, seed) -> np.ndarray:
    """``n`` standard normal points ``(n, dim)`` from one scrambled Sobol set, scrambled by
    ``np.random.default_rng(seed)`` (``seed``: an integer or a sequence of integers, as
    numpy seeds): the one generator of the library's QMC normals (not cached; the
    library calls it through :func:`normals`)."""
    dim = _checks.integer("dim", dim, 1)
    n = _checks.integer("n", n, 1)
    eng = scipy.stats.qmc.Sobol(dim, scramble=True, seed=np.random.default_rng(seed))
    return scipy.stats.norm.ppf(np.clip(eng.random(n), 1e-15, 1 - 1e-15))


@functools.lru_cache(maxsize=48)
def _cached(dim: int, n: int, n_rep: int, key: int) -> np.ndarray:
    per = n // n_rep
    out = np.empty((n_rep, per, dim))
    for r in range(n_rep):
        out[r] = sobol_normals(dim, per, [key, r])
    out.setflags(write=False)
    return out


def normals(
    dim: int,
    n: int,
    *,
    n_rep: int = 1,
    seed: int = 0,
    stream: str = "output",
    balanced: bool = False,
) -> np.ndarray:
    """``n`` standard normal points in ``dim`` dimensions from ``n_rep`` scramblings of
    stream ``stream`` (:data:`STREAMS`): shape ``(n_rep, n / n_rep, dim)``, scrambling
    ``r`` seeded by ``[seed + STREAMS[stream], r]`` (the module's seeding rule). ``n`` a
    multiple of ``n_rep``; Sobol sets are balanced when ``n / n_rep`` is a power of 2,
    which ``balanced=True`` requires (a ValueError otherwise). Cached (bounded; the
    array is read-only)."""
    dim = _checks.integer("dim", dim, 1)
    n_rep = _checks.integer("n_rep", n_rep, 1)
    n = _checks.integer("n", n, n_rep)
    seed = _checks.integer("seed", seed, 0)
    _checks.choice("stream", stream, tuple(STREAMS))
    if n % n_rep:
        raise ValueError(f"n must be a multiple of n_rep = {n_rep}, got n={n}")
    balanced = _checks.boolean("balanced", balanced)
    per = n // n_rep
    if balanced and (per < 2 or per & (per - 1)):
        raise ValueError(f"n / n_rep must be a power of 2 >= 2, got n={n}, n_rep={n_rep}")
    return _cached(dim, n, n_rep, seed + STREAMS[stream])


def qmc_normals(dim: int, n: int, n_rep: int = 4, seed: int = 0) -> np.ndarray:
    """``n`` standard normal points in ``dim`` dimensions from ``n_rep`` scrambled Sobol sets
    of the state evolution's output side (stream ``"output"`` of :func:`normals`).

    Returns shape ``(n_rep, n / n_rep, dim)``; ``n / n_rep`` must be a power of 2
    (balanced Sobol sets). Cached (bounded; the array is read-only).
    """
    n_rep = _checks.integer("n_rep", n_rep, 1)
    n = _checks.integer("n", n, 2)
    if n % n_rep:
        raise ValueError(f"n / n_rep must be a power of 2 >= 2, got n={n}, n_rep={n_rep}")
    return normals(dim, n, n_rep=n_rep, seed=seed, stream="output", balanced=True)


def chunks(n: int) -> list[slice]:
    """The pieces of ``n`` points (per scrambling) that one compiled program integrates:
    ``[slice(0, n)]`` for ``n <= CHUNK`` (or ``n`` not a multiple of :data:`CHUNK`), else
    ``n / CHUNK`` pieces of :data:`CHUNK` points. Equal pieces: the mean over ``n``
    points is the mean of the pieces' means."""
    n = _checks.integer("n", n, 1)
    if n <= CHUNK or n % CHUNK:
        return [slice(0, n)]
    return [slice(s, s + CHUNK) for s in range(0, n, CHUNK)]


def block_error(x, n_blocks: int = 8) -> float:
    """Standard error of ``mean(x)`` over the points of one scrambled Sobol sequence: the
    standard deviation (``ddof = 1``) of the means of ``n_blocks`` consecutive blocks over
    ``sqrt(n_blocks)`` (each block a scrambled net; the error of a Monte Carlo mean of the
    blocks, which overstates the whole set's where QMC beats ``n^-1/2``). ``x``: the
    integrand at the points, in their order ``(n,)``. Below ``2 n_blocks`` points: the
    plain Monte Carlo ``std(x) / sqrt(n)``."""
    x = np.asarray(_checks.finite_array("x", x, ndim=1, max_abs=_checks.MAX_ABS), dtype=float)
    n_blocks = _checks.integer("n_blocks", n_blocks, 2)
    if x.size < 2:
        raise ValueError(f"x needs at least 2 points, got {x.size}")
    if x.size < 2 * n_blocks:
        return float(np.std(x) / np.sqrt(x.size))
    means = x[: x.size - x.size % n_blocks].reshape(n_blocks, -1).mean(axis=1)
    return float(np.std(means, ddof=1) / np.sqrt(n_blocks))
