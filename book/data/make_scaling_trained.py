"""Trained points on a scaling curve (book/08_scaling_laws).

The linear-scores task (``Linear(T=2)``, noise-free labels) on a power-law target
with 16 extensive modes (``gamma = 2``, equal shares, ``kappa0 = 1``) and a fixed
nuclear penalty ``LAM``, chosen so that the window ``ALPHA_SIM`` sees the threshold
move from mode 2 to mode 8 (the threshold phase of the chapter, derived exponent
``zeta = 2 - r = 1.5``). :func:`run_point` trains one model with the convex solver
(:func:`attnlib.train.train_convex`) and returns its excess test error (noise-free
test labels, so ``e_0 = 0``), its matrix error and its number of recovered modes;
:func:`theory` is the state-evolution curve on a dense grid.

Run from ``book/`` (a few CPU-minutes)::

    python -m data.make_scaling_trained                    # -> data/scaling_trained.npz
    python -m data.make_scaling_trained --quick --out DIR  # the quick grid, elsewhere

the chapter calls ``run(quick=True)`` in class mode. The trained points are an
:class:`attnlib.sweep.Grid` of :func:`run_point` over ``(d, alpha)`` and seeds, the
theory a grid of one point (:func:`theory_point`), both run by ``C.Runner`` (cached, on
Dask; ``--serial``: in this process).
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import numpy as np
from data import _common as C

import attnlib
from attnlib import scaling, se, sweep, tasks, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

HERE = Path(__file__).resolve().parent
TASK = tasks.Linear(T=2)
TARGET = scaling.PowerLawModes(gamma=2.0, n_modes=16)
LAM = 1.25  # threshold lam / (12 alpha) crosses mode 2 at alpha ~ 0.1 and mode 8 at ~ 1.8
KEY = jax.random.PRNGKey(5051)
# sizes d (multiples of 16: every mode gets d/16 eigenvalues), seeds, trained and SE grids
FULL = dict(
    d=(48, 64, 96),
    seeds=(0, 1, 2),
    alpha_sim=np.geomspace(0.12, 1.8, 5),
    alpha_th=np.geomspace(0.05, 4.0, 48),
)
QUICK = dict(
    d=(32,),
    seeds=(0, 1),
    alpha_sim=np.geomspace(0.15, 1.2, 3),
    alpha_th=np.geomspace(0.05, 4.0, 16),
)


def run_point(*, alpha: float, d: int, seed: int) -> dict:
    """One trained model: excess test error, mse_S, recovered modes, solver convergence."""
    k = jax.random.fold_in(jax.random.fold_in(KEY, d), seed)
    k = jax.random.fold_in(k, int(round(1e4 * alpha)))
    S0 = TARGET.sample(jax.random.fold_in(k, 0), d)
    data = tasks.make_dataset(jax.random.fold_in(k, 1), TASK, S0, tasks.n_samples(alpha, d))
    res = train.train_convex(TASK, data, LAM, tol=1e-8)
    ov = train.overlaps(res.S, S0)
    return dict(
        excess=se.test_error_from_overlaps(TASK, ov.Q0, ov.m, ov.q),
        mse=ov.Q0 - 2 * ov.m + ov.q,
        n_recovered=scaling.recovered_modes_trained(res.S, S0, TARGET).count,
        converged=float(res.converged),
    )


def theory(alphas) -> scaling.ExcessRiskCurve:
    """The state-evolution excess-risk curve at the same penalty (warm-started along alpha)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", se.SEConvergenceWarning)  # no unconverged point
        return scaling.excess_risk_curve(TASK, TARGET, np.asarray(alphas), LAM)


TH_FIELDS = ("alpha", "excess", "n_recovered", "threshold", "Delta_eff", "converged")
SIM_FIELDS = ("excess", "mse", "n_recovered", "converged")


def theory_point(*, alphas) -> dict:
    """:func:`theory` as a grid point: the curve's fields as arrays."""
    th = theory(alphas)
    return {f: np.asarray(getattr(th, f)) for f in TH_FIELDS}


def run(quick: bool = False, runner=None) -> dict:
    """Trained points (len(d), len(seeds), len(alpha_sim)) per field, and the theory curve."""
    P, run_ = QUICK if quick else FULL, runner or C.Runner()
    t0 = time.time()
    out = {"d": np.array(P["d"]), "alpha_sim": P["alpha_sim"], "lam": LAM}
    alphas = [float(a) for a in P["alpha_sim"]]
    assert tuple(P["seeds"]) == tuple(range(len(P["seeds"])))  # the grid's seeds 0 .. n - 1
    sims = sweep.Grid(run_point, {"d": list(P["d"]), "alpha": alphas}, seeds=len(P["seeds"]))
    t = run_(sims)
    axes = {"d": list(P["d"]), "seed": list(P["seeds"]), "alpha": alphas}
    for f in SIM_FIELDS:
        out[f"sim_{f}"] = sweep.pivot(t, f, axes)
    out["sim_n_recovered"] = out["sim_n_recovered"].astype(int)
    row = run_(sweep.Grid(theory_point, {"alphas": [list(P["alpha_th"])]})).iloc[0]
    for f in TH_FIELDS:
        out[f"th_{f}"] = np.asarray(row[f])
    print(f"[scaling_trained] {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    return out


def load(path: Path = HERE / "scaling_trained.npz") -> dict:
    """The stored full run (what ``run(quick=False)`` returns)."""
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def _write(quick, out, runner) -> None:  # np.savez (not compressed), as before
    np.savez(Path(out) / "scaling_trained.npz", **run(quick, runner))


def main(argv=None) -> None:
    parts = {"trained": _write}
    args = C.parser(__doc__, parts).parse_args(argv)
    C.run_parts(args, parts, lambda *a: None)


if __name__ == "__main__":
    from data import make_scaling_trained  # the importable module: workers load it by name

    make_scaling_trained.main()
