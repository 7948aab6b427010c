"""Quasi-Monte Carlo normal points of the output side (scrambled Sobol, fixed seeds)."""

from __future__ import annotations

import functools

import numpy as np
import scipy.stats

from attnlib import _checks

__all__ = ["qmc_normals", "sobol_normals"]


def sobol_normals(dim: int, n: int, seed) -> np.ndarray:
    """``n`` standard normal points ``(n, dim)`` from one scrambled Sobol set, scrambled by
    ``np.random.default_rng(seed)`` (``seed``: an integer or a sequence of integers, as
    numpy seeds): the one generator of the library's QMC normals. :func:`qmc_normals`
    seeds replicate ``r`` with ``[seed, r]``; the Bayes-optimal integrals
    (:mod:`attnlib.bayes`) seed their outer and inner sets with plain integers."""
    dim = _checks.integer("dim", dim, 1)
    n = _checks.integer("n", n, 1)
    eng = scipy.stats.qmc.Sobol(dim, scramble=True, seed=np.random.default_rng(seed))
    return scipy.stats.norm.ppf(np.clip(eng.random(n), 1e-15, 1 - 1e-15))


@functools.lru_cache(maxsize=32)
def _qmc_cached(dim: int, n: int, n_rep: int, seed: int) -> np.ndarray:
    per = n // n_rep
    out = np.empty((n_rep, per, dim))
    for r in range(n_rep):
        out[r] = sobol_normals(dim, per, [seed, r])
    out.setflags(write=False)
    return out


def qmc_normals(dim: int, n: int, n_rep: int = 4, seed: int = 0) -> np.ndarray:
    """``n`` standard normal points in ``dim`` dimensions from ``n_rep`` scrambled Sobol sets.

    Returns shape ``(n_rep, n / n_rep, dim)``; ``n / n_rep`` must be a power of 2
    (balanced Sobol sets). Cached (bounded; the array is read-only).
    """
    dim = _checks.integer("dim", dim, 1)
    n = _checks.integer("n", n, 2)
    n_rep = _checks.integer("n_rep", n_rep, 1)
    seed = _checks.integer("seed", seed, 0)
    per = n // n_rep
    if per * n_rep != n or per < 2 or per & (per - 1):
        raise ValueError(f"n / n_rep must be a power of 2 >= 2, got n={n}, n_rep={n_rep}")
    return _qmc_cached(dim, n, n_rep, int(seed))
