r"""Finite-size study of the convex ERM (``book/methods_finite_size.ipynb``): one seq2seq point.

Run from ``book/``::

    python -m data.make_finite_size          # everything: finite_size.npz, finite_size_lam.npz,
                                             # finite_size_se.json (about 30 CPU-minutes)
    python -m data.make_finite_size --lams   # only the study at lam = 1e-2 and 1e-1
    python -m data.make_finite_size --se     # only the state-evolution references
    python -m data.make_finite_size --quick  # small grids, prints the runs

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

import attnlib
from attnlib import se, targets, tasks, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

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
# measured CPU time per run: about 0.4 s at d = 40, 4 s at d = 80, 20 s at d = 120 and
# 100 s at d = 160 (single-threaded). A run at d = 240 would take about 8 CPU-minutes: on
# the shared two-core machine the data sets went where they shrink the error bar of the
# d -> infinity intercept most per CPU-minute (d <= 120), and the grid stops at d = 160.
FULL = {
    "dims": (40, 60, 80, 120, 160),
    "seeds": {40: 60, 60: 12, 80: 28, 120: 19, 160: 2},
}
QUICK = {"dims": (16, 24), "seeds": {16: 4, 24: 3}}
N_TEST = 20000

# The same study at larger penalties, where the solver is cheaper (same data sets: the
# keys depend on d and the seed only), written to finite_size_lam.npz.
LAM_STUDY = {
    "lams": (1e-2, 1e-1),
    "dims": (40, 60, 80, 120),
    "seeds": {40: 20, 60: 12, 80: 8, 120: 4},
}
LAM_QUICK = {"lams": (1e-2, 1e-1), "dims": (16, 24), "seeds": {16: 3, 24: 2}}
LAM_OUT = HERE / "finite_size_lam.npz"


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
    ov = train.overlaps(res.S, S0)
    ev = np.linalg.eigvalsh(res.S)
    return {
        "train_loss": float(res.train_loss),
        "test_error": te.mean,
        "test_stderr": te.stderr,
        "mse": train.mse(res.S, S0),
        "m": ov.m,
        "q": ov.q,
        "Q0": ov.Q0,
        "rank_fraction": float(np.mean(ev > 1e-8 * max(ev.max(), 1e-300))),
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


def lam_points(quick: bool = False) -> list[tuple[float, int, int]]:
    """``(lam, d, seed)`` of the larger-penalty study, cheapest first."""
    g = LAM_QUICK if quick else LAM_STUDY
    return [(lam, d, s) for d in g["dims"] for lam in g["lams"] for s in range(g["seeds"][d])]


EXTRA = ("m", "q", "Q0", "rank_fraction")  # absent from runs made before they were added


def collect(rows, lam=LAM) -> dict:
    """Stack ``(d, seed, run_point dict)`` or ``(d, seed, dict, lam)`` rows into arrays.

    The first run of each ``(lam, d, seed)`` is kept; a per-run ``lam`` array is stored
    when the rows carry one (else the scalar ``lam``). Metrics missing from a run are NaN.
    """
    rows = [(*r, lam) if len(r) == 3 else tuple(r) for r in rows]
    unique = {(r[3], r[0], r[1]): r for r in reversed(rows)}
    rows = sorted(unique.values(), key=lambda r: (r[3], r[0], r[1]))
    out = {"d": np.array([r[0] for r in rows]), "seed": np.array([r[1] for r in rows])}
    for name in (*METRICS, *EXTRA, "converged"):
        out[name] = np.array([r[2].get(name, np.nan) for r in rows])
    lams = np.array([r[3] for r in rows])
    out.update(alpha=ALPHA, noise=NOISE, kappa0=KAPPA0, n_test=N_TEST)
    out["lam"] = lams if np.unique(lams).size > 1 else float(lams[0])
    return out


def _log_row(log, row, verbose):
    d, seed, r, lam = row
    if verbose:
        items = ", ".join(f"{k}={v:.5g}" for k, v in r.items())
        print(f"lam={lam:g} d={d:4d} seed={seed}: {items}", flush=True)
    if log is not None:
        log.write(json.dumps({"d": d, "seed": seed, "lam": lam, **r}) + "\n")
        log.flush()


def run(quick: bool = False, verbose: bool = False, log=None) -> dict:
    """The whole grid at ``LAM``: ``{"d": (N,), "seed": (N,), metric: (N,)}`` over every run.

    ``log``: an open text file that receives one JSON line per run (partial results
    survive an interrupted run; :func:`from_log` rebuilds the arrays)."""
    rows = []
    for d, seed in grid_points(quick):
        rows.append((d, seed, run_point(d, seed), LAM))
        _log_row(log, rows[-1], verbose)
    return collect(rows)


def run_lams(quick: bool = False, verbose: bool = False, log=None) -> dict:
    """The study at the larger penalties of ``LAM_STUDY`` (per-run ``lam`` array)."""
    rows = []
    for lam, d, seed in lam_points(quick):
        rows.append((d, seed, run_point(d, seed, lam=lam), lam))
        _log_row(log, rows[-1], verbose)
    return collect(rows)


def from_log(path: Path, lams=None) -> dict:
    """Arrays from a JSON-lines log written by :func:`run` (rows without ``lam`` are at
    ``LAM``); ``lams``: keep only these penalties."""
    rows = []
    for line in Path(path).read_text().splitlines():
        r = json.loads(line)
        row = (r.pop("d"), r.pop("seed"), r, r.pop("lam", LAM))
        if lams is None or any(abs(row[3] - x) <= 1e-12 * x for x in lams):
            rows.append(row)
    return collect(rows)


# The state evolution at small lam is sensitive to its quasi-Monte Carlo (QMC)
# integration. Each penalty gets the mean over SE_SEEDS scramblings at several QMC
# sizes (every seed warm-started from the previous one's fixed point); the largest size
# is the reference, its error the standard error over the seeds.
SE_LEVELS = {LAM: (8192, 32768, 131072), **{lam: (32768,) for lam in LAM_STUDY["lams"]}}
SE_SEEDS = (0, 1, 2, 3)
SE_FIELDS = ("test_error", "train_loss", "mse", "m", "q", "v")


def se_level(n_qmc: int, lam: float, seeds=SE_SEEDS) -> dict:
    """State evolution at the study's point for each QMC seed: ``{field: [per seed]}``."""
    task = tasks.Seq2Seq(T=2, noise=NOISE)
    target = targets.Wishart(KAPPA0)
    rows, init = [], None
    for s in seeds:
        r, w = se.solve(task, target, ALPHA, lam, n_qmc=n_qmc, seed=s, init=init, return_warm=True)
        if not r.converged:
            raise RuntimeError(f"finite_size: no SE fixed point (lam={lam}, n_qmc={n_qmc})")
        rows.append(r)
        init = w.x
    return {f: [float(getattr(r, f)) for r in rows] for f in SE_FIELDS}


def se_reference(lam: float = LAM) -> dict:
    """``{"lam", "seeds", "levels": {n_qmc: se_level}, "reference": largest n_qmc}``."""
    levels = {str(n): se_level(n, lam) for n in SE_LEVELS[lam]}
    return {"lam": lam, "seeds": list(SE_SEEDS), "levels": levels,
            "reference": str(max(SE_LEVELS[lam]))}  # fmt: skip


def load(path: Path = OUT) -> dict:
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def write_se(lams) -> None:
    """Write the references of ``lams`` into ``SE_OUT`` (a list, one entry per lam)."""
    old = json.loads(SE_OUT.read_text()) if SE_OUT.exists() else []
    refs = {r["lam"]: r for r in (old if isinstance(old, list) else [])}
    refs.update({lam: se_reference(lam) for lam in lams})
    SE_OUT.write_text(json.dumps([refs[k] for k in sorted(refs)], indent=1) + "\n")
    print(f"wrote {SE_OUT}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small grid, no file written")
    ap.add_argument("--from-log", help="only rebuild the .npz from a JSON-lines log")
    ap.add_argument("--se", action="store_true", help="only the state-evolution references")
    ap.add_argument("--lams", action="store_true", help="the study at LAM_STUDY's penalties")
    args = ap.parse_args()
    if args.se:
        write_se([LAM, *LAM_STUDY["lams"]])
        return
    if args.lams:
        with open(HERE / "finite_size_lam.log.jsonl", "a") as log:
            out = from_log(args.from_log) if args.from_log else run_lams(False, True, log)
        np.savez(LAM_OUT, **out)
        write_se(LAM_STUDY["lams"])
        return
    if args.quick:
        run(quick=True, verbose=True)
        run_lams(quick=True, verbose=True)
        return
    if args.from_log:
        out = from_log(Path(args.from_log), lams=[LAM])
    else:
        with open(HERE / "finite_size.log.jsonl", "a") as log:
            out = run(verbose=True, log=log)
    np.savez(OUT, **out)
    print(f"wrote {OUT}")
    with open(HERE / "finite_size_lam.log.jsonl", "a") as log:
        np.savez(LAM_OUT, **run_lams(False, True, log))
    print(f"wrote {LAM_OUT}")
    write_se([LAM, *LAM_STUDY["lams"]])


if __name__ == "__main__":
    main()
