"""What the book's data scripts share: keys, warnings, SE points, files, the command line.

Every ``make_<name>.py`` script declares its experiments as :class:`attnlib.sweep.Grid`
objects over pure point functions and assembles the tables into the files the
chapters read. Run one from ``book/`` as ``python -m data.make_<name>`` (``--help``
for the options: parts, ``--quick``, ``--out``, ``--workers``, ``--address``,
``--serial``, ``--no-cache``).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import warnings
from pathlib import Path

import jax
import numpy as np
from distributed import Client

from attnlib import se, sweep
from attnlib.se import optimal

HERE = Path(__file__).resolve().parent


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def key_for(seed: int, *path: int) -> jax.Array:
    """A PRNG key derived from the script's ``seed`` and a path of small integers."""
    k = jax.random.PRNGKey(seed)
    for i in path:
        k = jax.random.fold_in(k, int(i))
    return k


def quiet(fn, *args, **kwargs):
    """Call ``fn``; return its output and the distinct warning messages it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args, **kwargs)
    return out, sorted({str(w.message).split(":")[0] for w in caught})


def rank_fraction(S, cutoff: float) -> float:
    """Fraction of eigenvalues of ``S`` above ``cutoff`` times the largest one."""
    ev = np.linalg.eigvalsh(np.asarray(S, float))
    top = ev.max()
    return float(np.mean(ev > cutoff * top)) if top > 0 else 0.0


# ----------------------------------------------------------------------------
# State evolution: one point, its warm start for the next
# ----------------------------------------------------------------------------


def se_solve(task, target, alpha, lam, penalty="nuclear", init=None):
    """``(SEResult, warm start, zero)``: :func:`attnlib.se.solve` with its warnings logged
    and its warm start, ``zero=True`` in the zero phase ``S_hat = 0``
    (:func:`attnlib.se.optimal.is_zero_phase`)."""
    (r, w), notes = quiet(se.solve, task, target, alpha, lam, penalty, init=init, return_warm=True)
    if notes or not r.converged:
        log(
            f"    [SE] alpha={alpha:g}, lam={lam:g}, {penalty}: {notes} (residual {r.residual:.1e})"
        )
    return r, w, optimal.is_zero_phase(r)


# SEResult fields that are not numbers: the other fixed points found
_NOT_STORED = ("alternatives",)


def se_dict(r) -> dict:
    """The numeric fields of an SEResult (strings, booleans and integers as they are)."""
    return {
        k: (v if isinstance(v, (str, bool, int)) else float(v))
        for k, v in r._asdict().items()
        if k not in _NOT_STORED
    }


def warm(r, w, zero: bool, init):
    """The warm start for the next point: ``w`` (returned beside ``r``) if ``r`` converged
    off the zero phase (:func:`attnlib.se.optimal.warm_start`)."""
    return init if zero else optimal.warm_start(r, w, init)


# ----------------------------------------------------------------------------
# Files: atomic writes
# ----------------------------------------------------------------------------


def _atomic(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=path.suffix)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def save_npz(path: Path, arrays: dict) -> None:
    """``np.savez_compressed`` to ``path``, atomically (never a half-written file)."""
    _atomic(
        Path(path),
        lambda tmp: np.savez_compressed(tmp, **{k: np.asarray(v) for k, v in arrays.items()}),
    )
    log(f"  wrote {Path(path).name} ({Path(path).stat().st_size / 1024:.1f} kB)")


def load_npz(path: Path) -> dict:
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def save_json(path: Path, obj, **kwargs) -> None:
    _atomic(Path(path), lambda tmp: Path(tmp).write_text(json.dumps(obj, **kwargs)))


def update_meta(path: Path, updates: dict, seconds_key: str, part: str, seconds: float) -> None:
    """Merge ``updates`` into the JSON file ``path`` and record ``seconds`` of ``part``."""
    meta = json.loads(Path(path).read_text()) if Path(path).exists() else {}
    meta.update(updates)
    meta.setdefault(seconds_key, {})[part] = round(seconds, 1)
    save_json(path, meta, indent=1, sort_keys=True)


# ----------------------------------------------------------------------------
# Running grids from the command line
# ----------------------------------------------------------------------------


def parser(doc: str, parts) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    ap.add_argument("--part", choices=list(parts), action="append", help="default: all")
    ap.add_argument("--quick", action="store_true", help="the quick grids (a smoke run)")
    out_help = "output folder (default book/data; with --quick book/data/quick)"
    ap.add_argument("--out", type=Path, default=None, help=out_help)
    ap.add_argument("--workers", type=int, default=None, help="local Dask workers (default: cores)")
    ap.add_argument("--address", default=None, help="a Dask scheduler (or DASK_SCHEDULER_ADDRESS)")
    ap.add_argument("--serial", action="store_true", help="run in this process, without Dask")
    ap.add_argument("--no-cache", action="store_true", help="recompute every point")
    return ap


class Runner:
    """Runs grids with the command line's options; one Dask client for the whole script."""

    def __init__(self, args=None, client=None):
        self.serial = True if args is None else bool(args.serial)
        self.cache = False if args is None else not args.no_cache
        self.progress = args is not None
        self.client = client

    def __call__(self, grid: sweep.Grid):
        """The table of ``grid``; a failed point is logged (summary) and stays NaN."""
        res = sweep.run(
            grid,
            client=self.client,
            serial=self.serial or self.client is None,
            cache=self.cache,
            progress=self.progress,
        )
        if not res.ok and not self.progress:
            log(res.summary())
        return res.table


def records(table, drop=()) -> list[dict]:
    """A sweep table's rows as dicts (parameters, then outputs, in the table's order)
    without the status columns and the columns ``drop``; a point that raised raises."""
    bad = table[table["status"] == sweep.ERROR]
    if len(bad):
        raise RuntimeError(f"{len(bad)} point(s) failed: {bad['error'].iloc[0]}")
    return table.drop(columns=[*drop, *sweep.table.META_COLUMNS]).to_dict("records")


def npz_parts(files: dict, compute) -> dict:
    """:func:`run_parts` callables: part ``name`` writes ``compute(name, quick, runner)``
    (a dict of arrays) to ``files[name]`` in the output folder."""

    def part(name):
        def run(quick, out, runner):
            save_npz(out / files[name], compute(name, quick, runner))

        return run

    return {name: part(name) for name in files}


def meta_recorder(filename: str, params: dict, full: dict, quick: dict):
    """A ``meta_update`` for :func:`run_parts`: records ``params``, the grid used
    (``full`` or ``quick``) and each part's run time in ``filename``."""

    def record(args, name, seconds, info) -> None:
        cfg = quick if args.quick else full
        update_meta(args.out / filename, {"params": params, "config": cfg}, "seconds", name,
                    seconds)  # fmt: skip

    return record


def run_parts(args, parts: dict, meta_update) -> None:
    """Run the chosen parts (all by default) with one Dask client for all of them.

    ``parts[name](quick, out, runner)`` writes its files and returns a dict (or None)
    handed to ``meta_update(args, name, seconds, info)``. A quick run writes to
    ``book/data/quick`` (ignored by git) unless ``--out`` says otherwise, so that it
    never replaces the book's data."""
    if args.out is None:
        args.out = HERE / "quick" if args.quick else HERE
    args.out.mkdir(parents=True, exist_ok=True)
    if args.serial:
        _run_parts(args, parts, meta_update, Runner(args))
        return
    if args.address or os.environ.get("DASK_SCHEDULER_ADDRESS"):
        with Client(args.address or os.environ["DASK_SCHEDULER_ADDRESS"]) as client:
            _run_parts(args, parts, meta_update, Runner(args, client))
        return
    with sweep.local_client(args.workers) as client:
        _run_parts(args, parts, meta_update, Runner(args, client))


def _run_parts(args, parts, meta_update, runner) -> None:
    for name in args.part or list(parts):
        t0 = time.time()
        log(f"[{name}]")
        info = parts[name](args.quick, args.out, runner)
        meta_update(args, name, time.time() - t0, info)
        log(f"[{name}] done in {time.time() - t0:.0f} s")
