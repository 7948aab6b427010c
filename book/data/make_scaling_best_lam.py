"""The best fixed penalty at each alpha, noisy labels (book/08_scaling_laws).

The noisy scaling curves of the chapter follow a penalty schedule ``lam0 alpha^{-nu}``
with a hand-picked ``lam0``. Here the state evolution of the linear-scores task
(``Linear(T=2, noise=0.1)``) on the 200-mode target with ``gamma = 2`` is run along
``ALPHAS`` for every ``lam`` of the grid ``LAMS``; at each ``alpha`` the smallest
excess test error over the grid is the envelope that any schedule lies above, and
its ``lam`` says how the best penalty scales with ``alpha``.

Run from ``book/`` (a few CPU-minutes)::

    python -m data.make_scaling_best_lam                    # -> data/scaling_best_lam.npz
    python -m data.make_scaling_best_lam --quick --out DIR  # a 3 x 3 grid, elsewhere

The grid is an :class:`attnlib.sweep.Grid` over ``lam`` of :func:`curve_point` (one
state-evolution curve along ``alpha``, :func:`attnlib.scaling.excess_risk_curve`, warm
started by the library), cached and run on Dask (``--serial``: in this process).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from data import _common as C

import attnlib
from attnlib import scaling, sweep, tasks

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

HERE = Path(__file__).resolve().parent
TASK = tasks.Linear(T=2, noise=0.1)
TARGET = scaling.PowerLawModes(gamma=2.0, n_modes=200)
ALPHAS = np.geomspace(0.1, 30.0, 6)
LAMS = np.geomspace(0.1, 30.0, 21)  # neighbouring values differ by a factor 1.33
QUICK = {"alphas": np.geomspace(0.1, 30.0, 3), "lams": np.geomspace(0.1, 30.0, 3)}


def curve_point(*, lam: float, alphas) -> dict:
    """Excess test error along ``alphas`` at the fixed penalty ``lam``; NaN where a point
    did not converge."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        c = scaling.excess_risk_curve(TASK, TARGET, np.asarray(alphas), float(lam))
    excess = np.where(c.converged, c.excess, np.nan)
    C.log(f"lam = {lam:.4g}: {np.round(excess, 5)}")
    return {"excess": excess}


def run(alphas=ALPHAS, lams=LAMS, runner=None) -> dict:
    """Excess test error (``lam``, ``alpha``) on the grids."""
    grid = sweep.Grid(curve_point, {"lam": list(lams), "alphas": [list(alphas)]})
    t = (runner or C.Runner())(grid)
    excess = sweep.pivot(t, "excess", {"lam": list(lams)})
    return {"alpha": np.asarray(alphas), "lam": np.asarray(lams), "excess": excess}


def compute(part: str, quick: bool = False, runner=None) -> dict:
    return run(QUICK["alphas"], QUICK["lams"], runner) if quick else run(runner=runner)


def load(path: Path = HERE / "scaling_best_lam.npz") -> dict:
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


PARTS = C.npz_parts({"best_lam": "scaling_best_lam.npz"}, compute)


def main(argv=None) -> None:
    args = C.parser(__doc__, PARTS).parse_args(argv)
    C.run_parts(args, PARTS, lambda *a: None)


if __name__ == "__main__":
    from data import make_scaling_best_lam  # the importable module: workers load it by name

    make_scaling_best_lam.main()
