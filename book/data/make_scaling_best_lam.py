"""The best fixed penalty at each alpha, noisy labels (book/08_scaling_laws).

The noisy scaling curves of the chapter follow a penalty schedule ``lam0 alpha^{-nu}``
with a hand-picked ``lam0``. Here the state evolution of the linear-scores task
(``Linear(T=2, noise=0.1)``) on the 200-mode target with ``gamma = 2`` is run along
``ALPHAS`` for every ``lam`` of the grid ``LAMS``; at each ``alpha`` the smallest
excess test error over the grid is the envelope that any schedule lies above, and
its ``lam`` says how the best penalty scales with ``alpha``.

Run from book/ as ``python -m data.make_scaling_best_lam`` (writes
``scaling_best_lam.npz``, a few CPU-minutes).
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np

import attnlib
from attnlib import scaling, tasks

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

HERE = Path(__file__).resolve().parent
TASK = tasks.Linear(T=2, noise=0.1)
TARGET = scaling.PowerLawModes(gamma=2.0, n_modes=200)
ALPHAS = np.geomspace(0.1, 30.0, 6)
LAMS = np.geomspace(0.1, 30.0, 21)  # neighbouring values differ by a factor 1.33


def run(alphas=ALPHAS, lams=LAMS) -> dict:
    """Excess test error (``lam``, ``alpha``) on the grids; NaN where a point did not converge."""
    excess = np.full((len(lams), len(alphas)), np.nan)
    for i, lam in enumerate(lams):
        t0 = time.time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            c = scaling.excess_risk_curve(TASK, TARGET, np.asarray(alphas), float(lam))
        excess[i] = np.where(c.converged, c.excess, np.nan)
        print(f"lam = {lam:.4g}: {np.round(excess[i], 5)} ({time.time() - t0:.0f} s)", flush=True)
    return {"alpha": np.asarray(alphas), "lam": np.asarray(lams), "excess": excess}


def load(path: Path = HERE / "scaling_best_lam.npz") -> dict:
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


if __name__ == "__main__":
    np.savez_compressed(HERE / "scaling_best_lam.npz", **run())
