"""Time the state evolution against one finite-d experiment, as ratios measured in one run.

Seq2seq softmax, T = 2, Wishart target kappa0 = 0.5, nuclear penalty lam = 0.1, and as
the unit of cost one convex-solver run (attnlib.train.train_convex) at d = 100 and the
same alpha. Prints the load average (the machine may be shared: ratios measured in the
same run are what counts; the convex unit, the warm point and the curve are medians of
three runs) and:

- a warm SE point (alpha = 0.3 warm-started from alpha = 0.32, its warm start returned
  beside it): target <= 0.02 convex runs;
- a 40-point learning curve (warm-started along alpha): target <= 3 s;
- the first point in a fresh process, with JAX's persistent compilation cache (a fresh
  cache folder, filled by a first process, read by a second) and without: targets 5 s
  and 20 s;
- the cost of one warm point against T = 2..T_MAX (K = T (T + 1) / 2 pairs; softmax needs
  T >= 2).

    python benchmarks/se_speed.py [T_MAX]          # everything
    python benchmarks/se_speed.py T_MAX --only-T   # the convex unit and the T sweep only
"""

import os
import subprocess
import sys
import tempfile
import time

import jax
import numpy as np

import attnlib
from attnlib import se, tasks, train
from attnlib.targets import Wishart

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

ALPHA = 0.3
LAM = 0.1
REPEATS = 3  # timings are medians of this many runs
FIRST_POINT = (
    "import time; t0 = time.perf_counter(); import attnlib; from attnlib import se, tasks;"
    "from attnlib.targets import Wishart; attnlib.configure_jax();"
    "r = se.solve(tasks.Seq2Seq(T=2), Wishart(0.5), 0.3, 0.1);"
    "print(time.perf_counter() - t0, r.converged)"
)


def _timed(fun, *args, **kw):
    t0 = time.perf_counter()
    out = fun(*args, **kw)
    return time.perf_counter() - t0, out


def _median_timed(fun, *args, **kw):
    """Median wall time of ``REPEATS`` calls (a shared machine's load comes and goes) and
    the first call's output."""
    runs = [_timed(fun, *args, **kw) for _ in range(REPEATS)]
    return float(np.median([t for t, _ in runs])), runs[0][1]


def convex_run(task, target):
    d = 100
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    data = tasks.make_dataset(k2, task, target.sample(k1, d), tasks.n_samples(ALPHA, d))
    train.train_convex(task, data, LAM)  # JIT warm-up
    t, res = _median_timed(train.train_convex, task, data, LAM)
    print(
        f"train_convex at d={d} (n={data.X.shape[0]}, {res.n_iter} steps): {t:.2f} s "
        f"(median of {REPEATS})"
    )
    return t


def first_point(cache_dir):
    env = dict(os.environ)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    env["ATTNLIB_JAX_CACHE"] = "off"  # importing attnlib would turn on its own cache
    if cache_dir is not None:
        env["JAX_COMPILATION_CACHE_DIR"] = cache_dir
        env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", FIRST_POINT], env=env, capture_output=True)
    wall = time.perf_counter() - t0
    if out.returncode:
        raise RuntimeError(out.stderr.decode()[-2000:])
    return wall


def cost_vs_T(t_max, convex):
    for T in range(2, t_max + 1):
        task, target = tasks.Seq2Seq(T=T), Wishart(0.5)
        t_cold, (_, warm) = _timed(se.solve, task, target, 0.32, LAM, return_warm=True)
        t_warm, w = _timed(se.solve, task, target, ALPHA, LAM, init=warm)
        print(
            f"T={T} (K={task.n_pairs:2d}): first point {t_cold:6.1f} s (with compilation), "
            f"warm point {t_warm:6.2f} s = {t_warm / convex:.3f} convex runs "
            f"[{w.n_iter} maps, converged {w.converged}]"
        )


def main():
    t_max = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    print(f"load average at start: {os.getloadavg()}")
    task, target = tasks.Seq2Seq(T=2), Wishart(0.5)
    convex = convex_run(task, target)
    if "--only-T" in sys.argv:
        cost_vs_T(t_max, convex)
        print(f"load average at end: {os.getloadavg()}")
        return
    warmup, (_, near) = _timed(se.solve, task, target, 0.32, LAM, return_warm=True)
    print(f"SE first point in this process (compilation included): {warmup:.1f} s")
    point, r = _median_timed(se.solve, task, target, ALPHA, LAM, init=near)
    print(
        f"SE warm point (alpha={ALPHA} from {0.32}, median of {REPEATS}): {point:.3f} s "
        f"[{r.n_iter} maps] = "
        f"{point / convex:.3f} convex runs (target <= 0.02: ratio {point / convex / 0.02:.2f})"
    )
    alphas = np.linspace(0.05, 2.0, 40)
    curve, lc = _median_timed(se.learning_curve, task, target, alphas, LAM)
    print(
        f"SE learning curve (40 points, median of {REPEATS}): {curve:.1f} s = "
        f"{curve / convex:.2f} convex runs "
        f"[{int(lc.n_iter.sum())} maps, all converged {bool(lc.converged.all())}] "
        f"(target <= 3 s: ratio {curve / 3.0:.2f})"
    )
    with tempfile.TemporaryDirectory() as cache:
        cold = first_point(None)
        first_point(cache)  # fills the cache
        cached = first_point(cache)
    print(
        f"first point in a fresh process: {cold:.1f} s without the persistent cache "
        f"(target 20 s: ratio {cold / 20:.2f}), {cached:.1f} s with it "
        f"(target 5 s: ratio {cached / 5:.2f}); = {cold / convex:.1f} / {cached / convex:.1f} "
        "convex runs"
    )
    cost_vs_T(t_max, convex)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
