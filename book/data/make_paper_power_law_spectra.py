r"""The learned spectrum of the paper's power-law target: outliers recovered one by one.

Run from ``book/``::

    python -m data.make_paper_power_law_spectra --serial   # -> data/paper_power_law_spectra.npz
    python -m data.make_paper_power_law_spectra --quick --serial   # d = 40 -> data/quick/

Target :class:`attnlib.targets.PaperPowerLaw` (eigenvalues ``sqrt(d) i^{-gamma}``,
arXiv:2509.24914 v2, Appendix E), linear task ``T = 1`` with label noise, nuclear penalty,
at one ``d`` along ``lam = d^b`` (``b = LINE_B``) and several ``n = d^a``, ``d << n < d^2``.

- ``sims``: :func:`attnlib.train.train_convex` on ``reps`` data sets per ``a`` (fresh
  ``S0`` each); stored per ``(a, rep)``: the top ``N_TOP`` eigenvalues of the trained
  ``S`` and the squared overlaps ``(v_j . e_i)^2`` of its top ``N_TOP`` eigenvectors
  ``v_j`` with the target's top ``N_TOP`` eigenvectors ``e_i`` (a ``N_TOP x N_TOP``
  matrix, rows ``i``), and ``mse``.
- ``theory``: the state evolution fed with the target's ``d`` atoms (the paper's
  Conjecture E.1) at the same points: ``mse``, the top quantiles of the learned spectrum
  at size ``d`` (:meth:`attnlib.spectrum.LearnedSpectrum.quantiles`), the learned
  support's intervals (``edges``, padded with NaN) and the mass of each (in units of
  ``1/d``), the threshold and ``Delta_eff``.
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
from attnlib import scaling, se, spectrum, sweep, targets, tasks, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

GAMMA, NOISE, LINE_B = 1.0, 0.5, 0.0
FULL = dict(d=100, a=(1.3, 1.45, 1.6, 1.75, 1.9), reps=3)
QUICK = dict(d=40, a=(1.4, 1.8), reps=2)
N_TOP = 12  # eigenvalues and eigenvectors stored per trained S
N_EDGES = 40  # learned-support intervals stored (NaN-padded)
SEED = 3303


def _task():
    return tasks.Linear(T=1, noise=NOISE)


def point(*, d: int, a: float, rep: int) -> dict:
    """One trained ``S`` on a fresh data set at ``n = d^a``, ``lam = d^LINE_B``."""
    _, lam, n = scaling.paper_point(d, a, LINE_B)
    key = C.key_for(SEED, d, int(round(100 * a)), rep)
    k_target, k_data = jax.random.split(key)
    S0 = np.asarray(targets.PaperPowerLaw(GAMMA).sample(k_target, d))
    data = tasks.make_dataset(k_data, _task(), S0, n)
    res = train.train_convex(_task(), data, lam, tol=1e-8)
    ev, vec = np.linalg.eigh(res.S)
    ev0, vec0 = np.linalg.eigh(S0)
    top, top0 = vec[:, ::-1][:, :N_TOP], vec0[:, ::-1][:, :N_TOP]
    C.log(f"d={d} a={a} rep={rep}: n {n}, n_iter {res.n_iter}, converged {res.converged}")
    return dict(n=n, lam=lam, mse=train.mse(res.S, S0), top=ev[::-1][:N_TOP],
                overlap2=(top0.T @ top) ** 2, converged=bool(res.converged),
                n_iter=int(res.n_iter))  # fmt: skip


def _interval_masses(ls, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The learned support's intervals (rows ``(lo, hi)``) and the mass of each in units
    of ``1/d`` (the quadrature of ``rho_R`` over the interval's preimage)."""
    edges = np.asarray(ls.edges, float).reshape(-1, 2)
    x = ls.f(ls.r_nodes)
    w = ls.r_weights / np.sum(ls.r_weights)
    kept = x > 0
    mass = [d * np.sum(w[kept & (x >= lo - 1e-9) & (x <= hi + 1e-9)]) for lo, hi in edges]
    return edges, np.asarray(mass, float)


def theory(*, d: int, a: float) -> dict:
    """The finite-``d`` state evolution at the same point and its learned spectrum."""
    alpha, lam, n = scaling.paper_point(d, a, LINE_B)
    tg = targets.PaperPowerLaw(GAMMA).at(d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = se.solve(_task(), tg, alpha, lam)
    ls = spectrum.learned_spectrum(tg, r)
    edges, mass = _interval_masses(ls, d)
    pad = np.full((N_EDGES, 2), np.nan)
    pad[: min(len(edges), N_EDGES)] = edges[-N_EDGES:]
    pad_m = np.full(N_EDGES, np.nan)
    pad_m[: min(len(mass), N_EDGES)] = mass[-N_EDGES:]
    return dict(n=n, lam=lam, mse=r.mse, top=np.sort(ls.quantiles(d))[::-1][:N_TOP],
                edges=pad, mass=pad_m, threshold=ls.threshold, Delta_eff=r.Delta_eff,
                rank=r.rank_fraction * d, converged=bool(r.converged))  # fmt: skip


def compute(name, quick, runner) -> dict:
    cfg = QUICK if quick else FULL
    grid = {"d": cfg["d"], "a": list(cfg["a"])}
    sims = C.records(runner(sweep.Grid(point, {**grid, "rep": list(range(cfg["reps"]))})))
    th = C.records(runner(sweep.Grid(theory, grid)))
    out = {f"sim_{k}": np.array([r[k] for r in sims]) for k in sims[0]}
    out.update({f"se_{k}": np.array([r[k] for r in th]) for k in th[0]})
    out.update(gamma=GAMMA, noise=NOISE, line_b=LINE_B, target_top=np.sqrt(cfg["d"])
               * np.arange(1, N_TOP + 1) ** -GAMMA)  # fmt: skip
    return out


def main(argv=None) -> None:
    parts = C.npz_parts({"paper_power_law_spectra": "paper_power_law_spectra.npz"}, compute)
    params = dict(gamma=GAMMA, noise=NOISE, line_b=LINE_B, task="linear T=1", seed=SEED)
    args = C.parser(__doc__, parts).parse_args(argv)
    meta = C.meta_recorder("paper_power_law_spectra_meta.json", params, FULL, QUICK)
    C.run_parts(args, parts, meta)


if __name__ == "__main__":
    from data import make_paper_power_law_spectra  # the importable module: workers load it

    make_paper_power_law_spectra.main()
