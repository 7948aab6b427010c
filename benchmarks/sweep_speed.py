"""attnlib.sweep: speed-up of two Dask workers over one, and overhead per point.

The grid: the convex (nuclear + PSD) solver, :func:`attnlib.train.train_convex`,
on seq2seq T = 2 data (Wishart kappa0 = 0.5 target, noise 0.25) at one
``(alpha, lam, d)`` and ``--points`` seeds. Every timing excludes JAX's
compilation (each process first solves one point of the same shapes), so that it
measures steady-state throughput, and is the best of ``--repeat`` runs. Printed:

- the plain loop (the function called in this process), ``sweep.run`` in this
  process, and on local clusters of one and two workers;
- the speed-up of two workers over one (target: at least 1.7 on two free cores);
- the overhead per point of the machinery, on 200 points that do no work: a plain
  loop, ``sweep.run`` in this process (without the cache, writing it, reading a
  finished grid back) and on a one-worker cluster;
- the load average before and after (the machine may be shared: a load above
  the number of cores means the workers wait for CPU and the speed-up is
  capped by what is free).

XLA's CPU backend is made single-threaded in every process
(``--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1``) so that
one worker uses one core, as a cluster sized to the machine assumes.

Run from the repository root::

    python benchmarks/sweep_speed.py [--points 16] [--d 50] [--alpha 0.3] [--repeat 3]
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

import attnlib  # noqa: E402
from attnlib import sweep, targets, tasks, train  # noqa: E402

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

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


def noop_point(x, seed):
    """No work: isolates the machinery's cost per point."""
    return {"y": float(x + seed)}


def best(fn, repeat: int) -> float:
    """The smallest wall time of ``repeat`` calls (the least disturbed by other load)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def overheads(n: int, client) -> dict:
    """Seconds per point of sweep's machinery on a grid of ``n`` no-op points."""
    grid = sweep.Grid(noop_point, {"x": list(range(n))}, seeds=1)
    loop = best(lambda: [noop_point(**p) for p in grid.points], 3) / n
    out = {"loop": loop}
    out["in process"] = (
        best(lambda: sweep.run(grid, serial=True, cache=False, progress=False), 3) / n
    )
    with tempfile.TemporaryDirectory() as tmp:  # first run writes, later runs read
        out["in process, writing the cache"] = (
            best(lambda: sweep.run(grid, serial=True, cache_dir=tmp, progress=False), 1) / n
        )
        out["finished grid, read from the cache"] = (
            best(lambda: sweep.run(grid, serial=True, cache_dir=tmp, progress=False), 3) / n
        )
    out["Dask, 1 worker"] = (
        best(lambda: sweep.run(grid, client=client, cache=False, progress=False), 3) / n
    )
    return out


def on_cluster(args, n_workers: int, overhead_points: int = 0):
    """Best wall time for the convex grid on ``n_workers`` warmed-up workers (and the
    no-op overheads on the same cluster when ``overhead_points``)."""
    with sweep.local_client(n_workers) as client:
        # warm-up: every worker compiles the solver for these shapes (at another seed)
        client.run(convex_point, args.alpha, LAM, args.d, 999)
        grid = grid_of(args, LAM, args.points)
        t = best(lambda: sweep.run(grid, client=client, cache=False, progress=False), args.repeat)
        return t, (overheads(overhead_points, client) if overhead_points else None)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=16)
    ap.add_argument("--d", type=int, default=50)
    ap.add_argument("--alpha", type=float, default=0.3)
    ap.add_argument("--repeat", type=int, default=3, help="timings are the best of these")
    args = ap.parse_args(argv)
    n = args.points
    print(f"cores: {os.cpu_count()}, load average (1, 5, 15 min): {os.getloadavg()}")
    print(
        f"grid: {n} convex-solver runs, seq2seq T=2, d={args.d}, alpha={args.alpha}; "
        f"best of {args.repeat}"
    )
    convex_point(args.alpha, LAM, args.d, 999)  # compile in this process
    grid = grid_of(args, LAM, n)
    t_loop = best(lambda: [convex_point(**p) for p in grid.points], args.repeat)
    t_serial = best(lambda: sweep.run(grid, serial=True, cache=False, progress=False), args.repeat)
    t1, over = on_cluster(args, 1, overhead_points=200)
    t2, _ = on_cluster(args, 2)
    print(f"{'plain loop':34s}{t_loop:8.2f} s  ({t_loop / n:.3f} s/point)")
    print(f"{'sweep, in process':34s}{t_serial:8.2f} s")
    print(f"{'Dask, 1 worker':34s}{t1:8.2f} s")
    print(f"{'Dask, 2 workers':34s}{t2:8.2f} s")
    print(f"{'speed-up 2 workers / 1':34s}{t1 / t2:8.2f}    (target >= 1.7 on two free cores)")
    print("overhead per point, 200 no-op points (ms):")
    for name, sec in over.items():
        print(f"  {name:32s}{1e3 * sec:8.3f}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
