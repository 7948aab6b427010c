r"""Finite-size study of the convex ERM (``book/methods_finite_size.ipynb``): one seq2seq point.

Run from ``book/``::

    python -m data.make_finite_size                  # finite_size.npz, finite_size_lam.npz,
                                                     # finite_size_se.json (about 30 CPU-minutes)
    python -m data.make_finite_size --part lams      # only the study at lam = 1e-2 and 1e-1
    python -m data.make_finite_size --part se        # only the state-evolution references
    python -m data.make_finite_size --quick --serial --out DIR   # small grids (d = 16, 24)

One point of the chapter's setting (seq2seq softmax, ``T = 2``, Wishart target
``kappa0 = 1/2``, label noise ``Delta = 0.25`` on the logits, nuclear + PSD penalty)
is simulated with the convex solver (:func:`attnlib.train.train_convex`) at several
dimensions ``d`` and seeds. :func:`run_point` is a pure function of ``(d, seed, lam)``
returning a dict of numbers (train loss, test error with its Monte Carlo error,
``||S - S0||_F^2 / d``, solver diagnostics, CPU time); :func:`sim_grids` declares the
runs as :class:`attnlib.sweep.Grid` objects (one per ``d``, since the number of seeds
depends on ``d``), cached on disk; ``seconds`` in the files is the sweep's compute time
of each point. The state-evolution references are the grid of :func:`se_point`,
chained along the QMC scrambling seed (each seed warm-started from the previous one's
fixed point). The chapter fits each metric against ``1/d`` and extrapolates to
``d -> infinity``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import numpy as np
import pandas as pd
from data import _common as C

import attnlib
from attnlib import se, sweep, targets, tasks, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

HERE = Path(__file__).resolve().parent
OUT = HERE / "finite_size.npz"
SE_FILE = "finite_size_se.json"

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
EXTRA = ("m", "q", "Q0", "rank_fraction")

# (d, seeds): one solve costs about alpha d^4 per iteration (about 300 iterations here);
# measured CPU time per run: about 0.4 s at d = 40, 4 s at d = 80, 20 s at d = 120 and
# 100 s at d = 160 (single-threaded). A run at d = 240 would take about 8 CPU-minutes: on
# the shared two-core machine the data sets went where they shrink the error bar of the
# d -> infinity intercept most per CPU-minute (d <= 120), and the grid stops at d = 160.
FULL = {
    "lams": (LAM,),
    "dims": (40, 60, 80, 120, 160),
    "seeds": {40: 60, 60: 12, 80: 28, 120: 19, 160: 2},
}
QUICK = {"lams": (LAM,), "dims": (16, 24), "seeds": {16: 4, 24: 3}}
N_TEST = 20000

# The same study at larger penalties, where the solver is cheaper (same data sets: the
# keys depend on d and the seed only), written to finite_size_lam.npz.
LAM_STUDY = {
    "lams": (1e-2, 1e-1),
    "dims": (40, 60, 80, 120),
    "seeds": {40: 20, 60: 12, 80: 8, 120: 4},
}
LAM_QUICK = {"lams": (1e-2, 1e-1), "dims": (16, 24), "seeds": {16: 3, 24: 2}}

# The state evolution at small lam is sensitive to its quasi-Monte Carlo (QMC)
# integration. Each penalty gets the mean over SE_SEEDS scramblings at several QMC
# sizes (every seed warm-started from the previous one's fixed point); the largest size
# is the reference, its error the standard error over the seeds.
SE_LEVELS = {LAM: (8192, 32768, 131072), **{lam: (32768,) for lam in LAM_STUDY["lams"]}}
SE_SEEDS = (0, 1, 2, 3)
SE_QUICK = {"levels": {lam: (1024,) for lam in SE_LEVELS}, "seeds": (0, 1)}
SE_FIELDS = ("test_error", "train_loss", "mse", "m", "q", "v")


def run_point(d: int, seed: int, lam: float = LAM, alpha: float = ALPHA, noise: float = NOISE):
    """Train the convex ERM once at dimension ``d`` (data set ``seed``); a dict of numbers.

    Keys: ``train_loss`` (mean loss per training sequence), ``test_error`` and
    ``test_stderr`` (noise-free test error on ``N_TEST`` fresh sequences and its
    Monte Carlo standard error), ``mse = ||S - S0||_F^2 / d``, the overlaps, the rank
    fraction, the solver's ``residual``, ``n_steps``, ``converged`` and ``cpu_seconds``.
    """
    c0 = time.process_time()
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
        "n_steps": int(res.n_iter),
        "converged": bool(res.converged),
        "cpu_seconds": time.process_time() - c0,
    }


def sim_grids(cfg: dict) -> list[sweep.Grid]:
    """The runs of ``cfg`` (``lams``, ``dims``, ``seeds`` per d): one grid per ``d``."""
    return [
        sweep.Grid(run_point, {"lam": list(cfg["lams"]), "d": d}, seeds=cfg["seeds"][d])
        for d in cfg["dims"]
    ]


def collect(table) -> dict:
    """The runs of a sweep table as arrays sorted by ``(lam, d, seed)``; ``lam`` a per-run
    array when the table holds several penalties (else a scalar)."""
    C.records(table)  # raises on a point that raised
    t = table.sort_values(["lam", "d", "seed"], kind="stable")
    out = {name: t[name].to_numpy() for name in ("d", "seed", *METRICS, *EXTRA, "converged")}
    lams = t["lam"].to_numpy()
    out.update(alpha=ALPHA, noise=NOISE, kappa0=KAPPA0, n_test=N_TEST)
    out["lam"] = lams if np.unique(lams).size > 1 else float(lams[0])
    return out


def compute(name: str, quick: bool = False, runner=None) -> dict:
    """The arrays of ``finite_size.npz`` (``name == "main"``, at ``LAM``) or of
    ``finite_size_lam.npz`` (``"lams"``, the penalties of ``LAM_STUDY``)."""
    cfg = {"main": (FULL, QUICK), "lams": (LAM_STUDY, LAM_QUICK)}[name][bool(quick)]
    runner = runner or C.Runner()
    return collect(pd.concat([runner(g) for g in sim_grids(cfg)], ignore_index=True))


def se_point(lam: float, n_qmc: int, qmc_seed: int, init=None):
    """State evolution at the study's point with QMC scrambling ``qmc_seed``, warm-started
    from ``init`` (the previous seed's fixed point): ``({field: value}, warm start)``."""
    task, target = tasks.Seq2Seq(T=2, noise=NOISE), targets.Wishart(KAPPA0)
    r, w = se.solve(task, target, ALPHA, lam, n_qmc=n_qmc, seed=qmc_seed, init=init,
                    return_warm=True)  # fmt: skip
    if not r.converged:
        raise RuntimeError(f"finite_size: no SE fixed point (lam={lam}, n_qmc={n_qmc})")
    return {f: float(getattr(r, f)) for f in SE_FIELDS}, w.x


def se_references(quick: bool = False, runner=None) -> list[dict]:
    """Per penalty ``{"lam", "seeds", "levels": {n_qmc: {field: [per seed]}}, "reference":
    largest n_qmc}``."""
    levels, seeds = (SE_QUICK["levels"], SE_QUICK["seeds"]) if quick else (SE_LEVELS, SE_SEEDS)
    points = [{"lam": lam, "n_qmc": n, "qmc_seed": s} for lam in levels for n in levels[lam]
              for s in seeds]  # fmt: skip
    rows = C.records((runner or C.Runner())(sweep.Grid(se_point, points, chain="qmc_seed")))
    refs = []
    for lam, sizes in levels.items():
        lv = {}
        for n in sizes:
            mine = [r for r in rows if r["lam"] == lam and r["n_qmc"] == n]
            lv[str(n)] = {f: [float(r[f]) for r in mine] for f in SE_FIELDS}
        refs.append({"lam": lam, "seeds": list(seeds), "levels": lv, "reference": str(max(sizes))})
    return refs


def write_se(quick, out, runner) -> None:
    """Merge the references into ``finite_size_se.json`` in ``out`` (one entry per lam)."""
    path = out / SE_FILE
    old = json.loads(path.read_text()) if path.exists() else []
    refs = {r["lam"]: r for r in (old if isinstance(old, list) else [])}
    refs.update({r["lam"]: r for r in se_references(quick, runner)})
    path.write_text(json.dumps([refs[k] for k in sorted(refs)], indent=1) + "\n")


def load(path: Path = OUT) -> dict:
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def main(argv=None) -> None:
    files = {"main": "finite_size.npz", "lams": "finite_size_lam.npz"}
    parts = {**C.npz_parts(files, compute), "se": write_se}
    args = C.parser(__doc__, parts).parse_args(argv)
    C.run_parts(args, parts, lambda *a: None)


if __name__ == "__main__":
    from data import make_finite_size  # the importable module: workers load its functions

    make_finite_size.main()
