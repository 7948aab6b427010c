r"""Finite-size study of the convex ERM (chapter 2): one seq2seq point, d from 40 to 160.

Run from ``book/``::

    python -m data.make_finite_size            # full grid -> data/finite_size.npz
    python -m data.make_finite_size --quick    # small grid, prints the table

One point of the chapter's setting (seq2seq softmax, ``T = 2``, Wishart target
``kappa0 = 1/2``, label noise ``Delta = 0.25`` on the logits, nuclear + PSD penalty)
is simulated with the convex solver (:func:`attnlib.train.train_convex`) at several
dimensions ``d`` and seeds. :func:`run_point` is a pure function of ``(d, seed)``
and the point's parameters returning a dict of numbers (train loss, test error
with its Monte Carlo error, ``||S - S0||_F^2 / d``, solver diagnostics, wall time),
so that the grid maps directly onto a sweep. The chapter fits each metric
against ``1/d`` and extrapolates to ``d -> infinity``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import jax
import numpy as np

import attnlib  # noqa: F401  (float64)
from attnlib import se, targets, tasks, train

HERE = Path(__file__).resolve().parent
OUT = HERE / "finite_size.npz"
SE_OUT = HERE / "finite_size_se.json"

SEED = 2026
KAPPA0 = 0.5
NOISE = 0.25
ALPHA = 0.3
LAM = 1e-3
METRICS = (
    "train_loss",
    "test_error",
    "test_stderr",
    "mse",
    "residual",
    "n_steps",
    "seconds",
    "cpu_seconds",
)

# (d, seeds): one solve costs about alpha d^4 per iteration (about 300 iterations here);
# measured CPU time: 10 s at d = 80, 100 s at d = 160 (compilation included). d = 240 would
# take about 8 CPU-minutes per seed: one run did not finish within 4 CPU-minutes on the
# shared machine, so the stored grid stops at d = 160.
FULL = {
    "dims": (40, 60, 80, 120, 160),
    "seeds": {40: 20, 60: 12, 80: 8, 120: 3, 160: 2},
}
QUICK = {"dims": (16, 24, 32), "seeds": {16: 4, 24: 3, 32: 2}}
N_TEST = 20000


def run_point(d: int, seed: int, alpha: float = ALPHA, lam: float = LAM, noise: float = NOISE):
    """Train the convex ERM once at dimension ``d`` (data set ``seed``); a dict of numbers.

    Keys: ``train_loss`` (mean loss per training sequence), ``test_error`` and
    ``test_stderr`` (noise-free test error on ``N_TEST`` fresh sequences and its
    Monte Carlo standard error), ``mse = ||S - S0||_F^2 / d``, the solver's
    ``residual``, ``n_steps``, ``converged`` and the wall time ``seconds``.
    """
    t0, c0 = time.time(), time.process_time()
    task = tasks.Seq2Seq(T=2, noise=noise)
    key = jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(SEED), d), seed)
    k_s0, k_data, k_test = jax.random.split(key, 3)
    S0 = targets.Wishart(KAPPA0).sample(k_s0, d)
    data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(alpha, d))
    res = train.train_convex(task, data, lam, tol=1e-7, max_iter=20000)
    te = train.test_error_stats(k_test, task, S0, res.S, n_test=N_TEST)
    return {
        "train_loss": float(res.train_loss),
        "test_error": te.mean,
        "test_stderr": te.stderr,
        "mse": train.mse(res.S, S0),
        "residual": float(res.residual),
        "n_steps": int(res.n_steps),
        "converged": bool(res.converged),
        "seconds": time.time() - t0,
        "cpu_seconds": time.process_time() - c0,
    }


def grid_points(quick: bool = False) -> list[tuple[int, int]]:
    """``(d, seed)`` pairs of the quick or full grid; the full grid starts with one run at
    the largest ``d`` (the expensive one, timed first)."""
    grid = QUICK if quick else FULL
    pts = [(d, s) for d in grid["dims"] for s in range(grid["seeds"][d])]
    if not quick:
        pts.insert(0, pts.pop(pts.index((max(grid["dims"]), 0))))
    return pts


def collect(rows) -> dict:
    """Stack ``(d, seed, run_point dict)`` rows into arrays (the stored format)."""
    unique = {(r[0], r[1]): r for r in reversed(list(rows))}  # first run of each (d, seed)
    rows = sorted(unique.values(), key=lambda r: (r[0], r[1]))
    out = {"d": np.array([r[0] for r in rows]), "seed": np.array([r[1] for r in rows])}
    for name in (*METRICS, "converged"):
        out[name] = np.array([r[2][name] for r in rows])
    out.update(alpha=ALPHA, lam=LAM, noise=NOISE, kappa0=KAPPA0, n_test=N_TEST)
    return out


def run(quick: bool = False, verbose: bool = False, log=None) -> dict:
    """The whole grid: ``{"d": (N,), "seed": (N,), metric: (N,)}`` over every run.

    ``log``: an open text file that receives one JSON line per run (partial results
    survive an interrupted run; :func:`from_log` rebuilds the arrays)."""
    rows = []
    for d, seed in grid_points(quick):
        r = run_point(d, seed)
        rows.append((d, seed, r))
        if verbose:
            print(
                f"d={d:4d} seed={seed}: " + ", ".join(f"{k}={v:.5g}" for k, v in r.items()),
                flush=True,
            )
        if log is not None:
            log.write(json.dumps({"d": d, "seed": seed, **r}) + "\n")
            log.flush()
    return collect(rows)


def from_log(path: Path) -> dict:
    """Arrays from a JSON-lines log written by :func:`run`."""
    rows = []
    for line in Path(path).read_text().splitlines():
        r = json.loads(line)
        rows.append((r.pop("d"), r.pop("seed"), r))
    return collect(rows)


# The state evolution at this small lam is sensitive to its quasi-Monte Carlo (QMC)
# integration: the reference value is the mean over SE_SEEDS scramblings of SE_N_QMC
# points, its error the standard error over them.
SE_N_QMC = 32768
SE_SEEDS = (0, 1, 2, 3)


def se_reference(n_qmc: int = SE_N_QMC, seeds=SE_SEEDS) -> dict:
    """State evolution at the study's point for several QMC seeds.

    Returns ``{"n_qmc", "seeds", field: [value per seed], ...}`` for ``test_error``,
    ``train_loss`` and ``mse``, and the same at the book's default 8192 points, seed 0.
    """
    task = tasks.Seq2Seq(T=2, noise=NOISE)
    target = targets.Wishart(KAPPA0)
    fields = ("test_error", "train_loss", "mse")
    rows = [se.solve(task, target, ALPHA, LAM, n_qmc=n_qmc, seed=s) for s in seeds]
    if not all(r.converged for r in rows):
        raise RuntimeError("finite_size: the state evolution did not converge")
    default = se.solve(task, target, ALPHA, LAM)
    out = {"n_qmc": n_qmc, "seeds": list(seeds)}
    out.update({f: [float(getattr(r, f)) for r in rows] for f in fields})
    out.update({f"default_{f}": float(getattr(default, f)) for f in fields})
    return out


def load(path: Path = OUT) -> dict:
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small grid, no file written")
    ap.add_argument("--from-log", help="only rebuild the .npz from a JSON-lines log")
    ap.add_argument("--se", action="store_true", help="only the state-evolution reference")
    args = ap.parse_args()
    if args.se:
        SE_OUT.write_text(json.dumps(se_reference(), indent=1) + "\n")
        print(f"wrote {SE_OUT}")
        return
    if args.from_log:
        out = from_log(Path(args.from_log))
    else:
        with open(HERE / "finite_size.log.jsonl", "a") as log:
            out = run(quick=args.quick, verbose=True, log=None if args.quick else log)
    if not args.quick:
        np.savez(OUT, **out)
        SE_OUT.write_text(json.dumps(se_reference(), indent=1) + "\n")
        print(f"wrote {OUT} and {SE_OUT}")


if __name__ == "__main__":
    main()
