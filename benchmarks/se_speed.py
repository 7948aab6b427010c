"""Time the state evolution against its budgets (DESIGN.md) and against one finite-d run.

Seq2seq softmax, T = 2, Wishart target kappa0 = 0.5, nuclear penalty lam = 0.1:

- one SE point (cold start, after JIT warm-up): budget 1 s;
- a 40-point learning curve (warm-started along alpha): budget 30 s;
- one convex-solver run (attnlib.train.train_convex) at d = 100 and the same alpha,
  and the ratio of that run to one SE point.

    python benchmarks/se_speed.py
"""

import time

import jax
import numpy as np

from attnlib import se, tasks, train
from attnlib.targets import Wishart

ALPHA = 0.3
LAM = 0.1


def main():
    task, target = tasks.Seq2Seq(T=2), Wishart(0.5)

    t0 = time.perf_counter()
    se.solve(task, target, ALPHA, LAM)
    warmup = time.perf_counter() - t0
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        r = se.solve(task, target, ALPHA, LAM)
        times.append(time.perf_counter() - t0)
    point = float(np.median(times))
    print(f"SE warm-up (JIT compilation + first solve): {warmup:.1f} s")
    print(
        f"SE point (alpha={ALPHA}, lam={LAM}): {point:.2f} s  "
        f"[{r.n_iter} SE maps, budget 1 s: ratio {point / 1.0:.2f}]"
    )

    alphas = np.linspace(0.05, 2.0, 40)
    t0 = time.perf_counter()
    lc = se.learning_curve(task, target, alphas, LAM)
    curve = time.perf_counter() - t0
    print(
        f"SE learning curve (40 points): {curve:.1f} s  "
        f"[{int(lc.n_iter.sum())} SE maps, all converged: {bool(lc.converged.all())}, "
        f"budget 30 s: ratio {curve / 30.0:.2f}]"
    )

    d = 100
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    S0 = target.sample(k1, d)
    data = tasks.make_dataset(k2, task, S0, tasks.n_samples(ALPHA, d))
    train.train_convex(task, data, LAM)  # JIT warm-up
    t0 = time.perf_counter()
    res = train.train_convex(task, data, LAM)
    convex = time.perf_counter() - t0
    print(
        f"train_convex at d={d} (n={data.X.shape[0]}): {convex:.1f} s "
        f"({res.n_steps} steps); SE point / convex run = {point / convex:.3f}"
    )


if __name__ == "__main__":
    main()
