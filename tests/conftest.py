"""Test-wide settings: float64 JAX (theory is computed in double precision), a
non-interactive matplotlib backend, and JAX's persistent compilation cache.

The compilation cache keeps compiled XLA programs on disk between processes, so that
a fresh test run (or book build) does not recompile the state-evolution engine. It
lives in the user's cache directory: ``$ATTNLIB_JAX_CACHE`` if set, else
``$XDG_CACHE_HOME/attnlib/jax`` (default ``~/.cache/attnlib/jax``). Delete that
folder to clear it; set ``ATTNLIB_JAX_CACHE=off`` to run without it. The book build
uses the same folder through JAX's own variables (which kernels inherit)::

    export JAX_COMPILATION_CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/attnlib/jax"
    export JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0.5
"""

import math
import os
import pathlib

import matplotlib

matplotlib.use("Agg")

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

jax.config.update("jax_enable_x64", True)


def _cache_dir():
    explicit = os.environ.get("ATTNLIB_JAX_CACHE")
    if explicit:
        return None if explicit == "off" else pathlib.Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache"
    return pathlib.Path(base) / "attnlib" / "jax"


_CACHE = _cache_dir()
if _CACHE is not None and not os.environ.get("JAX_COMPILATION_CACHE_DIR"):
    _CACHE.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(_CACHE))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


def _symmetric_basis(d: int) -> list:
    """Orthonormal basis (Frobenius inner product) of symmetric d x d matrices: E_aa, and
    (e_a e_b^T + e_b e_a^T)/sqrt(2) for a < b; d(d+1)/2 matrices, the coordinates in
    which the book's divergences are taken."""
    basis = []
    for i in range(d):
        for j in range(i, d):
            E = np.zeros((d, d))
            E[i, j] = E[j, i] = 1.0 if i == j else 1 / math.sqrt(2)
            basis.append(E)
    return basis


@pytest.fixture
def symmetric_basis():
    """The function d -> orthonormal basis of symmetric d x d matrices."""
    return _symmetric_basis
