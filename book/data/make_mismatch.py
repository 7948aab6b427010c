r"""Spectrum lecture: the test error of a rescaled learned matrix ``e_test(c S_hat)`` against ``c``.

Run from ``book/``::

    python -m data.make_mismatch                    # full size -> data/mismatch.npz
    python -m data.make_mismatch --quick --out DIR  # small d (what ATTNLIB_QUICK=1 runs
                                                    # live) -> DIR/mismatch_quick.npz

Setting of the spectrum lecture's running example (seq2seq, ``T = 2``, noise ``Delta = 0.25`` on the
logits, Wishart target ``kappa0 = 0.2``, ``alpha = 0.4``), at a small and a large nuclear
penalty. For each trained ``S_hat`` (:func:`attnlib.train.train_convex`) the Monte Carlo
test error of ``c S_hat`` is measured on one set of fresh sequences for every ``c`` of a
grid, so that the curve's shape is not blurred by Monte Carlo noise. ``E_mismatch`` is the
drop from ``c = 1`` to the minimum of that curve.

``point`` is a pure function of one grid point and seed returning a dict of numbers; the
grid (``lam`` and seeds) is an :class:`attnlib.sweep.Grid` run by ``C.Runner`` (cached, on
Dask; ``--serial``: in this process).
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

import attnlib
from attnlib import spectrum, sweep, targets, tasks, train

HERE = Path(__file__).resolve().parent

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

SEED = 421
KAPPA0, NOISE, ALPHA = 0.2, 0.25, 0.4  # the spectrum lecture's running example
SCALES = tuple(float(c) for c in np.round(np.linspace(0.4, 2.2, 19), 3))
FULL = {"lams": [0.005, 0.1], "d": 100, "seeds": 2, "n_test": 20000}
QUICK = {"lams": [0.005, 0.1], "d": 30, "seeds": 1, "n_test": 2000}


def make_task() -> tasks.Task:
    return tasks.Seq2Seq(T=2, noise=NOISE)


def point(*, lam: float, seed: int, d: int, n_test: int) -> dict:
    """Train at penalty ``lam``; MC test error of ``c S_hat`` for every ``c`` in ``SCALES``."""
    task = make_task()
    key = jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(SEED), d), seed)
    k_s0, k_data, k_test = jax.random.split(key, 3)  # same data for every lam
    S0 = np.asarray(targets.Wishart(KAPPA0).sample(k_s0, d))
    data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(ALPHA, d))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = train.train_convex(task, data, lam, tol=1e-7)
    if not res.converged:
        raise RuntimeError(f"train_convex did not converge (residual {res.residual:.1e})")
    stats = [train.test_error_stats(k_test, task, S0, c * res.S, n_test=n_test) for c in SCALES]
    dec = spectrum.decompose_trained(task, res.S, S0)
    return {
        "e_mc": [s.mean for s in stats],
        "e_mc_stderr": [s.stderr for s in stats],
        "c_star": dec.c_star,
        "mismatch": dec.mismatch,
        "e_test": dec.e_test,
    }


FIELDS = ("e_mc", "e_mc_stderr", "c_star", "mismatch", "e_test")


def run(quick: bool = False, runner=None) -> dict:
    """Every (lam, seed): arrays of shape ``(n_lams, seeds[, n_scales])``."""
    cfg = QUICK if quick else FULL
    lams, seeds = list(cfg["lams"]), range(cfg["seeds"])
    grid = sweep.Grid(point, {"lam": lams, "d": cfg["d"], "n_test": cfg["n_test"]},
                      seeds=cfg["seeds"])  # fmt: skip
    t = (runner or C.Runner())(grid)
    out = {"lam": np.array([[lam for _ in seeds] for lam in lams]),
           "seed": np.array([list(seeds) for _ in lams])}  # fmt: skip
    out |= {k: sweep.pivot(t, k, {"lam": lams, "seed": seeds}) for k in FIELDS}
    out["scales"] = np.array(SCALES)
    out["d"] = cfg["d"]
    return out


def _write(quick, out, runner) -> None:
    name = "mismatch_quick.npz" if quick else "mismatch.npz"
    res = run(quick, runner)
    np.savez_compressed(Path(out) / name, **res)
    C.log(f"wrote {name}: c* = {np.round(res['c_star'], 3).tolist()}")


def main(argv=None) -> None:
    parts = {"mismatch": _write}
    args = C.parser(__doc__, parts).parse_args(argv)
    C.run_parts(args, parts, lambda *a: None)


if __name__ == "__main__":
    from data import make_mismatch  # the importable module: workers load it by name

    make_mismatch.main()
