"""Test-wide settings: float64 JAX (theory is computed in double precision), a
non-interactive matplotlib backend, and JAX's persistent compilation cache.

Both JAX settings are made by ``attnlib.configure_jax()`` (importing attnlib makes
none; see its package docstring): the compilation cache keeps compiled XLA programs on disk between
processes, so that a fresh test run (or book build, or script) does not recompile
the state-evolution engine. It lives in ``$XDG_CACHE_HOME/attnlib/jax`` (default
``~/.cache/attnlib/jax``), or in ``$ATTNLIB_JAX_CACHE`` when that names a folder;
``ATTNLIB_JAX_CACHE=off`` runs without it, and a cache configured through JAX
(``JAX_COMPILATION_CACHE_DIR``) is left as it is. Delete the folder to clear it.

The programs that JAX keeps in memory are bounded (see ``_bounded_compiled_programs``).
"""

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import attnlib  # noqa: E402
from attnlib import _compiled_programs  # noqa: E402

attnlib.configure_jax()  # float64 and the compilation cache, before any test compiles


@pytest.fixture(autouse=True)
def _bounded_compiled_programs():
    """After each test, JAX's in-memory caches are emptied if the process's memory maps
    have passed half of ``vm.max_map_count`` (:mod:`attnlib._compiled_programs`; the
    solvers do the same): XLA crashes at the limit, and one pytest process runs every
    test. Two integer comparisons in the common case."""
    yield
    _compiled_programs.release_if_needed()


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
