r"""The paper's power-law regime: decay exponents measured on the state evolution.

For the page methods_paper_power_law. One point inside each regime of
:func:`attnlib.scaling.paper_exponent` (the points of tests/test_paper_power_law.py):
the finite-``d`` state evolution (:func:`attnlib.se.solve` on
``PaperPowerLaw(gamma).at(d)``, linear task ``T = 1``, label noise 0.5, nuclear
penalty) along ``n = d^a``, ``lam = d^b`` at ``d = 100, 200, 400``, its ``mse`` and the
log-log slope (:func:`attnlib.scaling.fit_power_law`) beside the predicted exponent
``zeta``. It rests on the paper's Conjecture E.1 (arXiv:2509.24914 v2, Appendix E).

Run from ``book/``::

    python -m data.make_paper_rates          # -> data/paper_rates.npz (a few CPU-minutes)
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from data import _common as C

import attnlib
from attnlib import scaling, se, targets, tasks

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

NOISE = 0.5
DS = (100, 200, 400)
# (gamma, a, b): one point inside each regime
POINTS = (
    (1.0, 1.5, -1.5),  # minimax
    (1.0, 2.5, -1.0),  # variance
    (1.0, 1.5, -0.2),  # threshold
    (1.0, 2.5, 0.6),  # threshold, above n = d^2
    (0.75, 3.0, 0.625),  # shrinkage
)


def mse_along(gamma: float, a: float, b: float) -> np.ndarray:
    """The state evolution's ``mse`` at ``d`` in DS along ``n = d^a``, ``lam = d^b``."""
    out = []
    for d in DS:
        alpha, lam, _ = scaling.paper_point(d, a, b)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = se.solve(tasks.Linear(T=1, noise=NOISE), targets.PaperPowerLaw(gamma).at(d),
                         alpha, lam)  # fmt: skip
        out.append(r.mse if r.converged else np.nan)
    return np.asarray(out)


def run() -> dict:
    t0 = time.time()
    mse = np.stack([mse_along(*p) for p in POINTS])
    slopes = [scaling.fit_power_law(DS, row).exponent for row in mse]
    pred = [scaling.paper_exponent(*p) for p in POINTS]
    C.log(f"paper rates: {time.time() - t0:.0f} s")
    return dict(points=np.asarray(POINTS), d=np.asarray(DS), mse=mse,
                slope=np.asarray(slopes), zeta=np.asarray([p.zeta for p in pred]),
                regime=np.asarray([p.regime for p in pred]),
                rates=np.asarray([p.rates for p in pred]), noise=NOISE,
                seconds=round(time.time() - t0, 1))  # fmt: skip


if __name__ == "__main__":
    arrays = run()
    C.save_npz(Path(__file__).resolve().parent / "paper_rates.npz", arrays)
    for p, s, z, g in zip(POINTS, arrays["slope"], arrays["zeta"], arrays["regime"], strict=True):
        C.log(f"gamma {p[0]:g} a {p[1]:g} b {p[2]:g}: slope {s:.3f}, predicted {z:.3f} ({g})")
