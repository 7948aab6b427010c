r"""Spectrum chapter: how much of the outliers' finite-size gap is the spikes' own mass.

Run from ``book/``::

    python -m data.make_spike_mass                    # -> data/spike_mass.json (a few minutes)
    python -m data.make_spike_mass --quick --out DIR  # d = 150 only -> DIR/spike_mass.json

In the limit a spike carries no mass, so the state evolution of the spiked target is that
of its Wishart bulk. At finite ``d`` the two spikes of the chapter add
``sum_k theta_bar_k^2 / d`` to ``Tr(S0^2)/d`` (0.279 at ``d = 300`` against the bulk's
``Q0 = 1.2``). This script solves the state evolution for the target the simulations
actually have at each ``d``: the bulk's ``d - 2`` mid-point quantiles and the two
isolated eigenvalues ``theta_bar_k``, each an atom of mass ``1/d``
(:class:`attnlib.targets.Explicit`), and reads the outliers off that fixed point with
the same formulas (:func:`attnlib.spectrum.learned_spectrum`). Comparing the trained
matrices with this "finite-mass" prediction and with the zero-mass one separates the
part of the gap that the spike's mass explains from the rest (the smoothing of the
transition and the fluctuations of the outlier at finite ``d``). The ``(d, alpha)`` grid
is an :class:`attnlib.sweep.Grid` of :func:`point`, run by ``C.Runner`` (cached, on Dask;
``--serial``: in this process).
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from data import _common as C

import attnlib
from attnlib import rmt, se, spectrum, sweep, targets, tasks

HERE = Path(__file__).resolve().parent

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

SIZES = (150, 300)  # the sizes of spectrum_spiked_small.npz and spectrum_spiked.npz
QUICK_SIZES = (150,)


def outliers(spiked, r) -> list[list[float]]:
    """``[position, overlap2]`` of the learned outlier of each spike (nan if not learned)."""
    t_iso = np.array(rmt.isolated_eigenvalues(spiked))
    found = [[float("nan"), 0.0] for _ in t_iso]
    for o in spectrum.learned_spectrum(spiked, r).outliers:
        found[int(np.argmin(np.abs(t_iso - o.theta)))] = [float(o.position), float(o.overlap2)]
    return found


def point(*, d: int, alpha: float, noise: float, kappa0: float, spikes, lam: float) -> dict:
    """The state evolution of the finite-mass spiked target at ``d``; its outliers."""
    task = tasks.Seq2Seq(T=2, noise=noise)
    bulk = targets.Wishart(kappa0)
    spiked = targets.Spiked(spikes=tuple(spikes), bulk=bulk)
    t_iso = np.array(rmt.isolated_eigenvalues(spiked))
    finite = targets.Explicit(tuple(np.concatenate([bulk.eigenvalues(d - 2), t_iso])))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = se.solve(task, finite, alpha, lam)
    row = dict(Q0=float(finite.Q0), Delta_eff=float(r.Delta_eff), c=float(r.c), tau=float(r.tau),
               outliers=np.array(outliers(spiked, r)))  # fmt: skip
    C.log(f"d = {d}, alpha = {alpha}: {row['outliers'].tolist()}")
    return row


def run(sizes=SIZES, runner=None) -> dict:
    meta = json.loads((HERE / "spectrum_meta.json").read_text())
    alphas = [float(a) for a in np.load(HERE / "spectrum_spiked.npz")["alpha"]]
    fixed = {"noise": meta["noise"], "kappa0": meta["kappa0"], "spikes": [list(meta["spikes"])],
             "lam": meta["lam"]}  # fmt: skip
    t = (runner or C.Runner())(sweep.Grid(point, {"d": list(sizes), "alpha": alphas, **fixed}))
    rows = [dict(d=int(r["d"]), alpha=float(r["alpha"]), Q0=r["Q0"], Delta_eff=r["Delta_eff"],
                 c=r["c"], tau=r["tau"], outliers=np.asarray(r["outliers"]).tolist())
            for _, r in t.iterrows()]  # fmt: skip
    return {"spikes": list(meta["spikes"]), "lam": meta["lam"], "rows": rows}


def _write(quick, out, runner) -> None:
    t0 = time.time()
    res = run(QUICK_SIZES if quick else SIZES, runner)
    res["seconds"] = round(time.time() - t0, 1)
    (Path(out) / "spike_mass.json").write_text(json.dumps(res, indent=1) + "\n")
    C.log(f"wrote spike_mass.json in {res['seconds']} s")


def main(argv=None) -> None:
    parts = {"spike_mass": _write}
    args = C.parser(__doc__, parts).parse_args(argv)
    C.run_parts(args, parts, lambda *a: None)


if __name__ == "__main__":
    from data import make_spike_mass  # the importable module: workers load it by name

    make_spike_mass.main()
