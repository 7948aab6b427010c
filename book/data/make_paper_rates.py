r"""The paper's power-law regime: decay exponents measured on the state evolution.

For the page methods_paper_power_law. One point inside each regime of
:func:`attnlib.scaling.paper_exponent` (the points of tests/test_paper_power_law.py):
the finite-``d`` state evolution (:func:`attnlib.se.solve` on
``PaperPowerLaw(gamma).at(d)``, linear task ``T = 1``, label noise 0.5, nuclear
penalty) along ``n = d^a``, ``lam = d^b`` at ``d = 100, 200, 400``, its ``mse`` and the
log-log slope (:func:`attnlib.scaling.fit_power_law`) beside the predicted exponent
``zeta``. It rests on the paper's Conjecture E.1 (arXiv:2509.24914 v2, Appendix E).

Run from ``book/``::

    python -m data.make_paper_rates                    # -> data/paper_rates.npz (a few CPU-minutes)
    python -m data.make_paper_rates --quick --serial   # the same grid -> data/quick/

The solves are one :class:`attnlib.sweep.Grid` of :func:`se_point` over the regime's
index in ``POINTS`` and ``d`` (cached, parallel).
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
from attnlib import scaling, se, sweep, targets, tasks

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


def se_point(*, index: int, d: int) -> dict:
    """The state evolution's ``mse`` at size ``d`` along ``n = d^a``, ``lam = d^b`` of the
    regime ``POINTS[index] = (gamma, a, b)`` (NaN where it does not converge)."""
    gamma, a, b = POINTS[index]
    alpha, lam, _ = scaling.paper_point(d, a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = se.solve(tasks.Linear(T=1, noise=NOISE), targets.PaperPowerLaw(gamma).at(d),
                     alpha, lam)  # fmt: skip
    return dict(mse=r.mse if r.converged else np.nan)


def compute(name, quick, runner) -> dict:
    table = runner(sweep.Grid(se_point, {"index": list(range(len(POINTS))), "d": list(DS)}))
    rows = {(r["index"], r["d"]): r["mse"] for r in C.records(table)}
    mse = np.array([[rows[i, d] for d in DS] for i in range(len(POINTS))])
    slopes = [scaling.fit_power_law(DS, row).exponent for row in mse]
    pred = [scaling.paper_exponent(*p) for p in POINTS]
    for p, s_, z in zip(POINTS, slopes, pred, strict=True):
        C.log(f"gamma {p[0]:g} a {p[1]:g} b {p[2]:g}: slope {s_:.3f}, "
              f"predicted {z.zeta:.3f} ({z.regime})")  # fmt: skip
    return dict(points=np.asarray(POINTS), d=np.asarray(DS), mse=mse,
                slope=np.asarray(slopes), zeta=np.asarray([p.zeta for p in pred]),
                regime=np.asarray([p.regime for p in pred]),
                rates=np.asarray([p.rates for p in pred]), noise=NOISE,
                seconds=float(table["seconds"].sum()))  # fmt: skip


def main(argv=None) -> None:
    parts = C.npz_parts({"rates": "paper_rates.npz"}, compute)
    params = dict(noise=NOISE, task="linear T=1", points=[list(p) for p in POINTS])
    args = C.parser(__doc__, parts).parse_args(argv)
    grid = dict(d=list(DS))
    C.run_parts(args, parts, C.meta_recorder("paper_rates_meta.json", params, grid, grid))


if __name__ == "__main__":
    from data import make_paper_rates  # the importable module: workers load it by name

    make_paper_rates.main()
