"""Running a grid on Dask (or in this process), through the cache, with a progress bar.

Where the work runs, in the order tried:

1. ``serial=True``: in this process, one point after another (no Dask);
2. ``client=``: an existing :class:`distributed.Client`, unchanged;
3. ``address=`` or the ``DASK_SCHEDULER_ADDRESS`` environment variable: the Dask
   scheduler at that address (a cluster; the workers must be able to import the
   grid's function and attnlib);
4. otherwise an embedded local cluster, started for this call and closed after
   it: :func:`local_client` (one single-threaded worker process per core).

The cache is read and written here, in the calling process, as results come
back: the workers need no shared file system. A point is written as soon as its
task finishes (a chain stretch when its last point finishes), so a run killed
half-way loses at most the tasks in flight. Points whose function raised are not
cached (they are retried on the next run); points that returned
``converged=False`` are (they are a result).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import sys
import time
from collections.abc import Iterator
from typing import NamedTuple

from distributed import Client, LocalCluster, as_completed
from tqdm.auto import tqdm

from attnlib import _jax_config

from .cache import Cache, default_cache_dir
from .execute import ERROR, OK, run_task
from .grid import Grid
from .table import SweepResult, make_table

__all__ = ["local_client", "run"]

log = logging.getLogger(__name__)


def _default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@contextlib.contextmanager
def local_client(
    n_workers: int | None = None, *, processes: bool = True, env: dict | None = None
) -> Iterator:
    """An embedded Dask cluster on this machine and a client to it (closed on exit).

    ``n_workers`` single-threaded workers (default: one per available core). With
    ``processes=True`` (the default) each worker is a separate process: the
    solvers are mostly Python and numpy between JAX calls and hold the GIL, so
    threads would run one at a time, and each process has its own JAX runtime
    (compilation caches, device). Reuse one client across several :func:`run`
    calls to pay the start-up (a few seconds) once. ``env``: environment variables
    of the worker processes, e.g. ``{"XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false
    intra_op_parallelism_threads=1"}`` so that each worker uses one core (Dask
    already sets ``OMP_NUM_THREADS=1`` and the like).
    """
    n = _default_workers() if n_workers is None else int(n_workers)
    if n < 1:
        raise ValueError(f"n_workers must be an integer >= 1, got {n_workers!r}")
    if processes and _in_spawned_import():
        raise RuntimeError(_GUARD_ADVICE)
    try:
        cluster = LocalCluster(
            n_workers=n,
            threads_per_worker=1,
            processes=processes,
            dashboard_address=None,
            silence_logs=logging.ERROR,
            **({"env": dict(env)} if env and processes else {}),
        )
    except Exception as err:  # Dask's "Nanny failed to start" (RuntimeError, TimeoutError)
        if processes and _unguarded_script() and "Nanny failed to start" in _chain(err):
            raise RuntimeError(_GUARD_ADVICE) from None
        raise
    client = Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


_GUARD_ADVICE = (
    'Dask could not start its worker processes ("Nanny failed to start"): each worker '
    "imports the main script again, so a script that calls sweep.run must call it under "
    "'if __name__ == \"__main__\":' (or pass serial=True)"
)


def _in_spawned_import() -> bool:
    """Whether this is a new process still importing the main script (spawn start method):
    the flag with which ``multiprocessing`` itself refuses to start processes then."""
    return bool(getattr(multiprocessing.current_process(), "_inheriting", False))


def _unguarded_script() -> bool:
    """Whether the main module is a script file (the case the ``__main__`` guard is for)."""
    main = sys.modules.get("__main__")
    return bool(getattr(main, "__file__", None))


def _chain(err: BaseException) -> str:
    """The messages of ``err`` and of the exceptions it came from."""
    parts, seen = [], set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        parts.append(str(err))
        err = err.__cause__ or err.__context__
    return " | ".join(parts)


@contextlib.contextmanager
def _client_for(client, address, n_workers) -> Iterator:
    if client is not None:
        yield client
        return
    address = address or os.environ.get("DASK_SCHEDULER_ADDRESS")
    if address:
        with Client(address) as remote:
            yield remote
        return
    with local_client(n_workers) as local:
        yield local


def _plan(grid: Grid, records: list) -> list[tuple[list[int], object]]:
    """Tasks to run: ``(point indices, initial state)``. Without a chain, one task per
    missing point; along a chain, one task per stretch of consecutive missing points,
    starting from the state of the cached point before it."""
    tasks = []
    for chain in grid.chains():
        stretch, init = [], None
        for i in chain:
            if records[i] is None:
                stretch.append(i)
                continue
            if stretch:
                tasks.append((stretch, init))
                stretch = []
            init = records[i]["state"]
        if stretch:
            tasks.append((stretch, init))
    return tasks


class _Progress:
    """A tqdm bar over the points, with the count of failed ones; logs every failure."""

    def __init__(self, grid: Grid, n_cached: int, enabled: bool):
        self.failed = 0
        self.bar = tqdm(
            total=len(grid),
            initial=n_cached,
            desc=grid.name.rsplit(".", 1)[-1],
            unit="pt",
            disable=not enabled,
            dynamic_ncols=True,
        )

    def update(self, grid: Grid, indices, records) -> None:
        for i, rec in zip(indices, records, strict=True):
            if rec["status"] != OK:
                self.failed += 1
                log.warning(
                    "%s failed at %s: %s",
                    grid.name,
                    grid.points[i],
                    (rec["error"] or "converged = False").splitlines()[0],
                )
        self.bar.set_postfix(failed=self.failed, refresh=False)
        self.bar.update(len(indices))

    def close(self) -> None:
        self.bar.close()


class _Sink(NamedTuple):
    """Where finished records go: the list of records, the cache and its keys, the bar."""

    records: list
    cache: Cache | None
    keys: list
    progress: _Progress

    def take(self, grid: Grid, indices, new) -> None:
        for i, rec in zip(indices, new, strict=True):
            rec["cached"] = False
            self.records[i] = rec
            if self.cache is not None and rec["status"] != ERROR:
                self.cache.store(self.keys[i], rec)
        self.progress.update(grid, indices, new)


def _execute(grid: Grid, tasks, sink: _Sink, dask) -> None:
    chained = grid.chain is not None
    if dask is None:
        for indices, init in tasks:
            sink.take(
                grid, indices, run_task(grid.fn, [grid.points[i] for i in indices], chained, init)
            )
        return
    futures = {}
    float64 = _jax_config.float64_enabled()  # the workers compute in this process's precision
    for indices, init in tasks:
        points = [grid.points[i] for i in indices]
        futures[
            dask.submit(run_task, grid.fn, points, chained, init, float64=float64, pure=False)
        ] = indices
    for fut in as_completed(futures):
        indices = futures.pop(fut)
        try:
            new = fut.result()
        except Exception as err:  # the worker died, or the task could not be unpickled
            new = [_lost(err) for _ in indices]
        sink.take(grid, indices, new)


def _lost(err) -> dict:
    return {
        "row": {},
        "state": None,
        "status": ERROR,
        "seconds": float("nan"),
        "error": f"{type(err).__name__} (task lost): {err}",
    }


def run(
    grid: Grid,
    *,
    client=None,
    address: str | None = None,
    n_workers: int | None = None,
    serial: bool = False,
    cache: bool = True,
    cache_dir=None,
    progress: bool = True,
) -> SweepResult:
    """Evaluate every point of ``grid`` that is not in the cache; return the full table.

    Args:
      grid: the :class:`Grid`.
      client: an existing Dask client to run on (e.g. from :func:`local_client`).
      address: a Dask scheduler's address (default ``$DASK_SCHEDULER_ADDRESS``).
      n_workers: size of the embedded local cluster (default: one per core).
      serial: run in this process without Dask (debugging, tiny grids).
      cache: read and write the on-disk cache (``False``: compute everything, store
        nothing).
      cache_dir: the cache's root (default :func:`attnlib.sweep.default_cache_dir`).
      progress: show a progress bar (terminal or notebook) and print the summary.

    Returns:
      :class:`SweepResult` (``.table``, ``.failures``, ``.summary()``).
    """
    if not isinstance(grid, Grid):
        raise ValueError(f"grid must be an attnlib.sweep.Grid, got {type(grid).__name__}")
    t0 = time.perf_counter()
    store = Cache(cache_dir or default_cache_dir(), grid.name) if cache else None
    keys = grid.keys()
    records = [store.load(k) if store is not None else None for k in keys]
    for rec in records:
        if rec is not None:
            rec["cached"] = True
    n_cached = sum(rec is not None for rec in records)
    tasks = _plan(grid, records)
    sink = _Sink(records, store, keys, _Progress(grid, n_cached, progress))
    try:
        if tasks and serial:
            _execute(grid, tasks, sink, None)
        elif tasks:
            with _client_for(client, address, n_workers) as dask:
                _execute(grid, tasks, sink, dask)
    finally:
        sink.progress.close()
    result = SweepResult(
        name=grid.name,
        table=make_table(grid.points, records),
        n_cached=n_cached,
        n_computed=len(grid) - n_cached,
        seconds=time.perf_counter() - t0,
        params=tuple(grid.points[0]),
    )
    if progress:
        print(result.summary(), flush=True)
    return result
