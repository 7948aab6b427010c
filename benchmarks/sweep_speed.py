"""attnlib.sweep: speed-up of two Dask workers over one, and overhead per point.

The grid: the convex (nuclear + PSD) solver, :func:`attnlib.train.train_convex`,
on seq2seq T = 2 data (Wishart kappa0 = 0.5 target, noise 0.25) at one
``(alpha, lam, d)`` and ``--points`` seeds. Every timing excludes JAX's
compilation (each process first solves one point of the same shapes), so that it
measures steady-state throughput. Printed:

- the plain loop (the function called in this process): seconds per point;
- the overhead per point of ``sweep.run`` in this process (``serial=True``),
  without and with the on-disk cache, and on a one-worker local cluster;
- the speed-up of two workers over one (target: at least 1.7 on two free cores);
- the load average before and after (the machine may be shared: a load above
  the number of cores means the workers wait for CPU and the speed-up is
  capped by what is free).

XLA's CPU backend is made single-threaded in every process
(``--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1``) so that
one worker uses one core, as a cluster sized to the machine assumes.

Run from the repository root::

    python benchmarks/sweep_speed.py [--points 16] [--d 50] [--alpha 0.3]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

os.environ.setdefault(
    "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
)

import jax  # noqa: E402

from attnlib import sweep, targets, tasks, train  # noqa: E402

LAM = 0.1


def convex_point(alpha, lam, d, seed):
    """One convex-solver run: training loss, test error and convergence."""
    k_s0, k_data, k_test = jax.random.split(jax.random.fold_in(jax.random.PRNGKey(11), seed), 3)
    task = tasks.Seq2Seq(T=2, noise=0.25)
    S0 = targets.Wishart(0.5).sample(k_s0, d)
    data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(alpha, d))
    r = train.train_convex(task, data, lam, tol=1e-7)
    e = train.test_error(k_test, task, S0, r.S, n_test=2000)
    return {"train_loss": float(r.train_loss), "test_error": float(e), "converged": r.converged}


def grid_of(args, lam: float, seeds: int) -> sweep.Grid:
    return sweep.Grid(convex_point, {"alpha": args.alpha, "lam": lam, "d": args.d}, seeds=seeds)


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def on_cluster(args, n_workers: int) -> float:
    """Seconds for the timed grid on a local cluster of ``n_workers`` warmed-up workers."""
    with sweep.local_client(n_workers) as client:
        # warm-up: every worker compiles the solver for these shapes (at another seed)
        client.run(convex_point, args.alpha, LAM, args.d, 999)
        grid = grid_of(args, LAM, args.points)
        return timed(lambda: sweep.run(grid, client=client, cache=False, progress=False))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=16)
    ap.add_argument("--d", type=int, default=50)
    ap.add_argument("--alpha", type=float, default=0.3)
    args = ap.parse_args(argv)
    n = args.points
    load0 = os.getloadavg()
    print(f"cores: {os.cpu_count()}, load average (1, 5, 15 min): {load0}")
    print(f"grid: {n} convex-solver runs, seq2seq T=2, d={args.d}, alpha={args.alpha}")
    convex_point(args.alpha, LAM, args.d, 999)  # compile in this process
    grid = grid_of(args, LAM, n)
    t_loop = timed(lambda: [convex_point(**p) for p in grid.points])
    t_serial = timed(lambda: sweep.run(grid, serial=True, cache=False, progress=False))
    with tempfile.TemporaryDirectory() as tmp:
        t_cached = timed(lambda: sweep.run(grid, serial=True, cache_dir=tmp, progress=False))
        t_reread = timed(lambda: sweep.run(grid, serial=True, cache_dir=tmp, progress=False))
    t1 = on_cluster(args, 1)
    t2 = on_cluster(args, 2)
    per = t_loop / n
    rows = [
        ("plain loop", t_loop, f"{per:.3f} s/point"),
        ("sweep, in process", t_serial, f"overhead {(t_serial - t_loop) / n:+.4f} s/point"),
        ("sweep, in process + cache", t_cached, f"overhead {(t_cached - t_loop) / n:+.4f} s/point"),
        ("finished grid re-run", t_reread, f"all {n} points from the cache"),
        ("Dask, 1 worker", t1, f"overhead {(t1 - t_loop) / n:+.4f} s/point"),
        ("Dask, 2 workers", t2, ""),
    ]
    for name, t, note in rows:
        print(f"{name:28s}{t:8.2f} s  {note}")
    print(f"{'speed-up 2 workers / 1':28s}{t1 / t2:8.2f}    (target >= 1.7 on two free cores)")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
