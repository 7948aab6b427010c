r"""Spectrum chapter: how much of the outliers' finite-size gap is the spikes' own mass.

Run from ``book/``::

    python -m data.make_spike_mass   # -> data/spike_mass.json (a few minutes on two cores)

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
transition and the fluctuations of the outlier at finite ``d``).
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
try:
    import attnlib
except ImportError:  # a checkout without `pip install -e .`: use the repository's copy
    sys.path.insert(0, str(HERE.parents[1]))
    import attnlib
from attnlib import rmt, se, spectrum, targets, tasks  # noqa: E402

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

SIZES = (150, 300)  # the sizes of spectrum_spiked_small.npz and spectrum_spiked.npz


def outliers(spiked, r) -> list[list[float]]:
    """``[position, overlap2]`` of the learned outlier of each spike (nan if not learned)."""
    t_iso = np.array(rmt.isolated_eigenvalues(spiked))
    found = [[float("nan"), 0.0] for _ in t_iso]
    for o in spectrum.learned_spectrum(spiked, r).outliers:
        found[int(np.argmin(np.abs(t_iso - o.theta)))] = [float(o.position), float(o.overlap2)]
    return found


def run() -> dict:
    meta = json.loads((HERE / "spectrum_meta.json").read_text())
    task = tasks.Seq2Seq(T=2, noise=meta["noise"])
    bulk = targets.Wishart(meta["kappa0"])
    spiked = targets.Spiked(spikes=tuple(meta["spikes"]), bulk=bulk)
    t_iso = np.array(rmt.isolated_eigenvalues(spiked))
    alphas = [float(a) for a in np.load(HERE / "spectrum_spiked.npz")["alpha"]]
    rows = []
    for d in SIZES:
        finite = targets.Explicit(tuple(np.concatenate([bulk.eigenvalues(d - 2), t_iso])))
        for alpha in alphas:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = se.solve(task, finite, alpha, meta["lam"])
            rows.append(
                dict(d=d, alpha=alpha, Q0=float(finite.Q0), Delta_eff=float(r.Delta_eff),
                     c=float(r.c), tau=float(r.tau), outliers=outliers(spiked, r))
            )  # fmt: skip
            print(f"d = {d}, alpha = {alpha}: {rows[-1]['outliers']}", flush=True)
    return {"spikes": list(meta["spikes"]), "lam": meta["lam"], "rows": rows}


def main() -> None:
    t0 = time.time()
    out = run()
    out["seconds"] = round(time.time() - t0, 1)
    (HERE / "spike_mass.json").write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote spike_mass.json in {out['seconds']} s")


if __name__ == "__main__":
    main()
