"""Time one GAMP iteration (attnlib.amp.gamp) as ratios to a calibration in the same process.

Nuclear-penalty ERM (lam = 0.1, alpha = 0.5, Wishart target kappa0 = 0.5), linear (T =
1) and seq2seq (T = 2) tasks at d = 40 and 80, ``N_ITER`` iterations per run (``tol =
1e-300``: none stops early; the first iterations, before the late ones near the fixed
point, whose cost varies). The unit of cost is one jitted ``(400, 400) @ (400, 400)``
float64 product, timed in the same process (the machine may be shared: ratios measured
side by side are what counts). Each tree is timed in its own process (``--worker TREE``,
that tree first on ``sys.path``); with ``--compare REV`` (repeatable) the trees of those
git revisions (temporary ``git worktree``s under the system's temporary folder) are
timed too, the processes interleaved, ``--repeats`` rounds; the table gives the medians
over rounds of the per-iteration time in units and in ms, and each tree's ratio to the
first ``--compare`` revision.

    python benchmarks/gamp_speed.py                            # this tree
    python benchmarks/gamp_speed.py --compare 915cb9f --repeats 5
    python benchmarks/gamp_speed.py --compare 915cb9f --repeats 7 --d 40   # d = 40 only
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

CASES = [("linear", 40), ("seq2seq", 40), ("linear", 80), ("seq2seq", 80)]
N_ITER = 40  # iterations per timed run
RUNS = 3  # timed runs per case and process (their median)
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _calibration(jax, jnp):
    """Median seconds of one jitted (400, 400) @ (400, 400) float64 product."""
    a = jnp.asarray(np.random.default_rng(0).standard_normal((400, 400)))
    f = jax.jit(lambda x: x @ x)
    f(a).block_until_ready()
    ts = []
    for _ in range(30):
        t0 = time.perf_counter()
        f(a).block_until_ready()
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts))


def _per_iteration(amp, tasks, Wishart, jax, kind, d):
    """Median seconds per iteration of ``N_ITER`` iterations of amp.gamp (after a warm-up
    run that compiles)."""
    task = tasks.Linear(T=1, noise=0.1) if kind == "linear" else tasks.Seq2Seq(T=2, noise=0.1)
    S0 = Wishart(0.5).sample(jax.random.PRNGKey(1), d)
    data = tasks.make_dataset(jax.random.PRNGKey(2), task, S0, tasks.n_samples(0.5, d))
    amp.gamp(task, data, 0.1, max_iter=3, tol=1e-300)
    ts = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        res = amp.gamp(task, data, 0.1, max_iter=N_ITER, tol=1e-300)
        ts.append((time.perf_counter() - t0) / res.n_iter)
    return float(np.median(ts))


def worker(tree: str, ds) -> dict:
    """Timings of ``tree``'s attnlib in this process: ``{"unit": s, "case": s / iteration}``."""
    import warnings

    sys.path.insert(0, tree)
    import jax
    import jax.numpy as jnp

    import attnlib
    from attnlib import amp, tasks
    from attnlib.targets import Wishart

    assert os.path.dirname(os.path.dirname(os.path.abspath(attnlib.__file__))) == tree
    attnlib.configure_jax()
    warnings.simplefilter("ignore", RuntimeWarning)  # max_iter runs warn
    out = {"unit": _calibration(jax, jnp)}
    for kind, d in [c for c in CASES if c[1] in ds]:
        out[f"{kind} d={d}"] = _per_iteration(amp, tasks, Wishart, jax, kind, d)
    out["unit"] = float(np.median([out["unit"], _calibration(jax, jnp)]))
    return out


def _trees(revs, stack):
    trees = {}
    for rev in revs:
        path = tempfile.mkdtemp(prefix=f"gamp_speed_{rev}_")
        subprocess.run(["git", "-C", HERE, "worktree", "add", "--detach", "-f", path, rev],
                       check=True, capture_output=True)  # fmt: skip
        stack.append(path)
        trees[rev] = path
    trees["this tree"] = HERE
    return trees


def _table(rounds, names, ds):
    keys = [f"{k} d={d}" for k, d in CASES if d in ds]
    print(f"\nmedians over {len(rounds)} rounds: ms per iteration, [units], ratio to {names[0]}")
    print(f"{'tree':>12s} {'unit ms':>8s} " + " ".join(f"{k:>26s}" for k in keys))
    med = {n: {k: float(np.median([r[n][k] / r[n]["unit"] for r in rounds])) for k in keys}
           for n in names}  # fmt: skip
    for n in names:
        unit = float(np.median([r[n]["unit"] for r in rounds]))
        cells = [
            f"{np.median([r[n][k] for r in rounds]) * 1e3:7.2f} [{med[n][k]:6.2f}] "
            f"x{med[n][k] / med[names[0]][k]:5.2f}"
            for k in keys
        ]
        print(f"{n[:12]:>12s} {unit * 1e3:8.3f} " + " ".join(f"{c:>26s}" for c in cells))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--compare", action="append", default=[], help="git revision (repeatable)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--d", type=int, action="append", help="only these d (repeatable)")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    a = p.parse_args()
    ds = a.d or sorted({d for _, d in CASES})
    if a.worker:
        print(json.dumps(worker(a.worker, ds)))
        return
    stack = []
    try:
        trees = _trees(a.compare, stack)
        rounds = []
        for i in range(a.repeats):
            row = {}
            for name, path in trees.items():
                cmd = [sys.executable, os.path.abspath(__file__), "--worker", path]
                cmd += [f"--d={d}" for d in ds]
                r = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=path)
                row[name] = json.loads(r.stdout.strip().splitlines()[-1])
                print(f"round {i + 1} {name}: " + json.dumps(row[name]), flush=True)
            rounds.append(row)
        print(f"load average {os.getloadavg()}")
        _table(rounds, list(trees), ds)
    finally:
        for path in stack:
            subprocess.run(["git", "-C", HERE, "worktree", "remove", "--force", path])


if __name__ == "__main__":
    main()
