r"""The paper's power-law regime: the convex solver beside the finite-``d`` state evolution.

Run from ``book/``::

    python -m data.make_paper_power_law                    # -> data/paper_power_law.npz
    python -m data.make_paper_power_law --quick --serial   # d = 100, 2 seeds -> data/quick/

Target :class:`attnlib.targets.PaperPowerLaw` (eigenvalues ``sqrt(d) i^{-gamma}``,
arXiv:2509.24914 v2, Appendix E), linear task ``T = 1`` with label noise, nuclear penalty.
Along the line ``lam = d^b`` (``b = LINE_B``) at several ``n = d^a``, each point is trained
with :func:`attnlib.train.train_convex` on ``SEEDS`` data sets (fresh ``S0`` each) and
compared with the state evolution fed with the target's ``d`` atoms (the paper's
Conjecture E.1). Stored per ``(d, a, rep)``: ``n``, ``lam``, the trained ``mse =
||S - S0||_F^2 / d`` and Monte Carlo test error (noise-free labels) with its standard
error, the top eigenvalues of ``S``; and per ``(d, a)`` the state evolution's ``mse``,
``test_error``, ``rank_fraction``, ``Delta_eff``, ``c``, ``tau`` and ``top``, the top
eigenvalues of the learned spectrum at size ``d`` (the mid-point quantiles
:meth:`attnlib.spectrum.LearnedSpectrum.quantiles`: at finite ``d`` each large target
eigenvalue is a bump of mass ``1/d`` of ``rho_R``, so the quantiles place the learned
outliers one by one). The grid is an
:class:`attnlib.sweep.Grid` of :func:`point` (simulations) and :func:`theory`.
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

GAMMA, NOISE, LINE_B = 1.0, 0.5, -0.5
FULL = dict(d=[100, 150], a=[1.3, 1.5, 1.7], seeds=4)
QUICK = dict(d=[100], a=[1.3, 1.5, 1.7], seeds=2)
N_TOP = 12  # top eigenvalues of S stored
SEED = 33


def _task():
    return tasks.Linear(T=1, noise=NOISE)


def point(*, d: int, a: float, rep: int) -> dict:
    """One trained ``S`` on a fresh data set at ``n = d^a``, ``lam = d^LINE_B``."""
    _, lam, n = scaling.paper_point(d, a, LINE_B)
    key = C.key_for(SEED, d, int(round(100 * a)), rep)
    S0 = targets.PaperPowerLaw(GAMMA).sample(jax.random.fold_in(key, 0), d)
    data = tasks.make_dataset(jax.random.fold_in(key, 1), _task(), S0, n)
    res = train.train_convex(_task(), data, lam, tol=1e-7)
    te = train.test_error_stats(jax.random.fold_in(key, 2), _task(), S0, res.S, n_test=10000)
    top = np.sort(np.linalg.eigvalsh(res.S))[::-1][:N_TOP]
    C.log(f"d={d} a={a} rep={rep}: mse {train.mse(res.S, S0):.4f}, n_iter {res.n_iter}")
    return dict(n=n, lam=lam, mse=train.mse(res.S, S0), test_error=te.mean,
                test_error_stderr=te.stderr, converged=bool(res.converged), top=top)  # fmt: skip


def theory(*, d: int, a: float) -> dict:
    """The finite-``d`` state evolution at the same point."""
    alpha, lam, n = scaling.paper_point(d, a, LINE_B)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = se.solve(_task(), tg := targets.PaperPowerLaw(GAMMA).at(d), alpha, lam)
    top = np.sort(spectrum.learned_spectrum(tg, r).quantiles(d))[::-1][:N_TOP]
    return dict(n=n, lam=lam, mse=r.mse, test_error=r.test_error, rank_fraction=r.rank_fraction,
                Delta_eff=r.Delta_eff, c=r.c, tau=r.tau, converged=bool(r.converged),
                top=top)  # fmt: skip


def compute(name, quick, runner) -> dict:
    cfg = QUICK if quick else FULL
    grid = {"d": cfg["d"], "a": cfg["a"]}
    sims = C.records(runner(sweep.Grid(point, {**grid, "rep": list(range(cfg["seeds"]))})))
    th = C.records(runner(sweep.Grid(theory, grid)))
    out = {f"sim_{k}": np.array([r[k] for r in sims]) for k in sims[0]}
    out.update({f"se_{k}": np.array([r[k] for r in th]) for k in th[0]})
    out.update(gamma=GAMMA, noise=NOISE, line_b=LINE_B)
    return out


def main(argv=None) -> None:
    parts = C.npz_parts({"paper_power_law": "paper_power_law.npz"}, compute)
    params = dict(gamma=GAMMA, noise=NOISE, line_b=LINE_B, task="linear T=1", seed=SEED)
    args = C.parser(__doc__, parts).parse_args(argv)
    C.run_parts(args, parts, C.meta_recorder("paper_power_law_meta.json", params, FULL, QUICK))


if __name__ == "__main__":
    from data import make_paper_power_law  # the importable module: workers load it by name

    make_paper_power_law.main()
