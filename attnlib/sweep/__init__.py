"""Sweeps: grids of experiments run on Dask, cached on disk, resumable, with progress.

Declare a grid by the function of one point, its parameters and its seeds, and
run it::

    from attnlib import sweep

    def point(alpha, lam, d, seed):          # module level: workers import it
        ...                                   # explicit PRNG keys from ``seed``
        return {"test_error": e, "converged": ok}

    grid = sweep.Grid(point, {"alpha": [0.1, 0.2], "lam": [0.01, 0.1], "d": 60}, seeds=3)

    if __name__ == "__main__":                # in a script: the workers import it again
        res = sweep.run(grid)                 # embedded local cluster, one worker per core
        res.table                             # pandas DataFrame: alpha, lam, d, seed, outputs
        print(res.summary())                  # cached / computed / failed, and which
        sweep.pivot(res.table, "test_error", {"lam": [0.01, 0.1], "seed": range(3),
                                              "alpha": [0.1, 0.2]})   # array (2, 3, 2)

In a script, call :func:`run` under ``if __name__ == "__main__":``: the embedded
cluster's worker processes import the script again, and without the guard each would
start a cluster of its own (Dask's "Nanny failed to start"; :func:`run` then says so in
one line). A notebook needs no guard.

Warm starts along an axis: ``Grid(fn, params, chain="alpha")`` runs each chain
(the points differing only in ``alpha``, in declared order) as one task, chains
in parallel; ``fn`` then takes ``init`` (the previous point's state, ``None``
first) and returns ``(row, state)``.

Where it runs: :mod:`attnlib.sweep.runner`. Every point is cached on disk
(:func:`default_cache_dir`) under a key made of its parameters, the function's
qualified name, attnlib's version and a hash of the code it runs (the source of
the function's module and of attnlib: :func:`~attnlib.sweep.grid.code_fingerprint`):
re-running computes only what is missing, and editing the code recomputes.
"""

from .cache import Cache, CorruptEntry, default_cache_dir
from .execute import ERROR, NOT_CONVERGED, OK
from .grid import Grid, product
from .runner import local_client, run
from .table import SweepResult, pivot

__all__ = [
    "ERROR",
    "NOT_CONVERGED",
    "OK",
    "Cache",
    "CorruptEntry",
    "Grid",
    "SweepResult",
    "default_cache_dir",
    "local_client",
    "pivot",
    "product",
    "run",
]
