"""Hardmax attention: GAMP on data against the state evolution, iteration by iteration.

Run from ``book/``::

    python -m data.make_hardmax                    # the full grid -> data/hardmax_gamp.npz
    python -m data.make_hardmax --quick --out DIR  # the quick grid -> DIR/hardmax_gamp_quick.npz

Setting: hardmax seq2seq, T = 2, no noise, Wishart target kappa0 = 0.5, nuclear
penalty (the direction does not depend on lam), alpha = 0.5. GAMP with the
zero-scale (projection) channel, renormalised after each step, undamped, started
from the identity with v = 0.3 (:func:`attnlib.hardmax.gamp`); the state evolution
from the same start (cosine sqrt(kappa0 / Q0), rho = 0.3 / sqrt(Q0)), undamped.
Stored: the cosine with the target after each iteration, per (d, seed), and the
state-evolution trajectory and fixed ray. GAMP runs are an :class:`attnlib.sweep.Grid` of
:func:`point` over ``d`` and seeds, the state-evolution iterates a one-point grid of
:func:`data.make_hardmax_theory.se_iterates` (the same map from the same start), run by
``C.Runner`` (cached, on Dask; ``--serial``: in this process).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import numpy as np
from data import _common as C
from data import make_hardmax_theory as HT

import attnlib
from attnlib import hardmax, sweep, tasks

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

# the setting of make_hardmax_theory (whose se_iterates gives the SE trajectory here)
TASK, TARGET = HT.task(), HT.target()  # Hardmax(T=2), Wishart(0.5)
ALPHA = HT.ITER_ALPHA  # 0.5
V0 = HT.V0  # 0.3
N_ITER = HT.N_ITER  # 15
FULL = {"d": (100, 200, 300), "seeds": (0, 1, 2, 3)}
QUICK = {"d": (40,), "seeds": (0, 1)}
OUT = Path(__file__).resolve().parent / "hardmax_gamp.npz"


def se_trajectory(n_iter: int = N_ITER, n_qmc: int = 65536, runner=None) -> np.ndarray:
    """Cosines of the undamped state evolution from GAMP's start, ``(n_iter,)``."""
    params = {"alpha": ALPHA, "n_qmc": n_qmc, "n_iter": n_iter}
    grid = sweep.Grid(HT.se_iterates, params, seeds=1)  # the QMC points of seed 0
    row = (runner or C.Runner())(grid).iloc[0]
    return np.array([row[f"cosine_{t}"] for t in range(n_iter)])


def point(*, d: int, seed: int, n_iter: int = N_ITER) -> dict:
    """GAMP on one data set: the cosine with the target after each iteration."""
    k_target, k_data = jax.random.split(jax.random.PRNGKey(seed))
    S0 = np.asarray(TARGET.sample(k_target, d))
    data = tasks.make_dataset(k_data, TASK, S0, tasks.n_samples(ALPHA, d))

    def cosine(S):
        return float(np.sum(S * S0) / np.sqrt(np.sum(S**2) * np.sum(S0**2)))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no convergence asked for
        r = hardmax.gamp(TASK, data, TARGET, max_iter=n_iter, tol=1e-300, damping=0.0,
                         v_init=V0, observe=cosine)  # fmt: skip
    return {"cosine": r.trace, "kappa_scale": r.trajectory.scale[-1]}


def run(quick: bool = False, runner=None) -> dict:
    grid, run_ = QUICK if quick else FULL, runner or C.Runner()
    # the grid's seeds are 0 .. n - 1, as FULL's and QUICK's
    t = run_(sweep.Grid(point, {"d": list(grid["d"])}, seeds=len(grid["seeds"])))
    cos = sweep.pivot(t, "cosine", {"d": list(grid["d"]), "seed": list(grid["seeds"])})
    ray = hardmax.solve(TASK, TARGET, ALPHA, 1.0)
    return {"d": np.array(grid["d"]), "seeds": np.array(grid["seeds"]), "gamp_cosine": cos,
            "se_cosine": se_trajectory(runner=run_), "se_ray": ray.cos_theta,
            "se_test_error": ray.test_error, "alpha": ALPHA}  # fmt: skip


def _write(quick, out, runner) -> None:  # np.savez (not compressed), as before
    np.savez(Path(out) / ("hardmax_gamp_quick.npz" if quick else OUT.name), **run(quick, runner))


def main(argv=None) -> None:
    parts = {"gamp": _write}
    args = C.parser(__doc__, parts).parse_args(argv)
    C.run_parts(args, parts, lambda *a: None)


if __name__ == "__main__":
    from data import make_hardmax  # the importable module: workers load it by name

    make_hardmax.main()
