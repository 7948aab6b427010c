r"""State evolution, trained models and LASSO runs for book/08_scaling_laws.ipynb.

Run from ``book/`` (``make data`` runs every script)::

    python -m data.make_scaling_data                     # every part, on a local Dask cluster
    python -m data.make_scaling_data --part curves       # one part
    python -m data.make_scaling_data --quick --out DIR   # the quick grids, elsewhere

Every grid is an :class:`attnlib.sweep.Grid` over a point function below (cached on
disk, resumable; a state-evolution curve, :func:`attnlib.scaling.excess_risk_curve`, is
one task, the curves run in parallel); ``compute(part, quick=True)`` returns a part's
arrays (the quick grid, in this process) without writing. Parts and files
(``book/data/``; ``scaling_meta.json``: parameters and run times; PRNG keys from ``SEED``):

- ``emergence``  a target with 5 modes: the state evolution on a fine ``alpha`` grid and
  the convex solver at ``d = 80`` on a few ``alpha``, the learned fractions of its modes
  from its eigenvectors (:func:`attnlib.scaling.recovered_modes_trained`).
  -> ``scaling_emergence.npz``
- ``curves``  excess-risk curves of the state evolution for 200-mode targets on a grid of
  ``(gamma, ell)`` (``lam = lam0 alpha^{-ell}``), noise-free (the window where modes 4 to
  50 are recovered, :func:`attnlib.scaling.threshold_window`) and noisy labels.
  -> ``scaling_curves.npz``
- ``softmax``  one such curve for the softmax seq2seq task, with the state evolution's
  ``c``, ``v`` and ``integration_error`` at each point (``softmax_se/``). -> ``scaling_softmax.npz``
- ``lasso``  the LASSO solver (:func:`attnlib.scaling.lasso_solve`) on data at ``N = 2000``
  along ``delta`` (three seeds), to check the LASSO state evolution. -> ``scaling_lasso.npz``

``softmax_se/integration_error`` is :attr:`attnlib.se.SEResult.integration_error`: the
relative error of the SE's own metrics (train loss, test error, mse), their QMC error
propagated through the fixed point.
"""

from __future__ import annotations

import json
import math
import sys
import time
import warnings
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import numpy as np
from data import _common as C

import attnlib
from attnlib import scaling, se, sweep, tasks, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

SEED = 505
# Parameters (the chapter reads them back from scaling_meta.json)
T = 2  # the linear-scores task Linear(T=2): labels are the T x T attention scores h
N_MODES = 200  # modes of the noisy scaling targets
K_LO, K_HI = 4, 50  # default window of recovered modes of each curve
RATIO = 4.0  # threshold / sqrt(Delta_eff) at the start of a noise-free window

# fmt: off
FULL = {
    "emergence": {"gamma": 2.0, "n_modes": 5, "lam": 0.5, "alphas": np.logspace(-1.5, 0.5, 61),
                  "d": 80, "seeds": 2, "sim_alphas": [0.1, 0.2, 0.4, 0.8, 1.6]},
    # (gamma, ell, n_modes, k_hi) of the noise-free curves (threshold phase); the last
    # recovered mode k_hi stays below n_modes / 4 (gamma = 1 feels the end of the
    # spectrum most: its tail sum converges like k^{1 - 2 gamma}) and its eigenvalue
    # above 1e-3 (smaller Delta_eff makes the free convolution slow)
    "clean": [(1.0, -0.5, 400, 50), (1.5, -0.5, 200, 50), (2.0, -0.5, 200, 50),
              (1.5, 0.0, 200, 50), (2.0, 0.0, 200, 50), (2.5, 0.0, 200, 30),
              (2.0, 0.5, 200, 50), (2.5, 0.5, 200, 30), (2.5, 1.0, 200, 30)],
    "n_points": 12,
    # noisy labels: (gamma, ell, lam0, alpha_lo, alpha_hi)
    "noise": 0.1,
    "noisy": [(2.0, -0.75, 3.0, 0.03, 30.0), (2.0, -0.5, 3.0, 0.1, 30.0),
              (2.0, 0.0, 1.0, 0.1, 10.0)],
    # softmax: the threshold is lam / a_hat with a task-specific a_hat, so the window is
    # given directly (about 3 to 25 recovered modes)
    "softmax": {"gamma": 2.0, "ell": 0.0, "n_modes": 100, "lam0": 1.0, "alpha_lo": 1.0,
                "alpha_hi": 100.0, "n_points": 10},
    "lasso": {"gamma": 1.5, "n_modes": 5, "kappa0": 0.5, "lam": 0.05, "N": 2000, "seeds": 3,
              "deltas": [0.2, 0.3, 0.45, 0.7, 1.0, 1.7]},
}
# QUICK: small grids, run live by the chapter (ATTNLIB_QUICK=1) and as a smoke run
QUICK = {
    "emergence": {"gamma": 2.0, "n_modes": 5, "lam": 0.5, "alphas": np.logspace(-1.5, 0.5, 9),
                  "d": 30, "seeds": 2, "sim_alphas": [0.1, 0.4, 1.6]},
    "clean": [(2.0, 0.0, 40, 10)], "n_points": 4,
    "noise": 0.1, "noisy": [(2.0, -0.5, 3.0, 0.3, 3.0)],
    "softmax": {"gamma": 2.0, "ell": 0.0, "n_modes": 24, "lam0": 1.0, "alpha_lo": 1.0,
                "alpha_hi": 2.0, "n_points": 2},
    "lasso": {"gamma": 1.5, "n_modes": 5, "kappa0": 0.5, "lam": 0.05, "N": 300, "seeds": 2,
              "deltas": [0.2, 0.45, 1.0, 1.7]},
}
# fmt: on


def config(quick: bool) -> dict:
    return QUICK if quick else FULL


def curve_point(*, name, task, noise, gamma, n_modes, alphas, lam0, ell):
    """One excess-risk curve of the state evolution (``lam = lam0 alpha^{-ell}``) as a dict of
    arrays; for ``task="seq2seq"`` also the SE's ``c``, ``v``, ``integration_error`` per point."""
    task_ = tasks.Linear(T=T, noise=noise) if task == "linear" else tasks.Seq2Seq(T=2)
    tg = scaling.PowerLawModes(gamma=gamma, n_modes=n_modes)
    extra = {"c": [], "v": [], "integration_error": []} if task == "seq2seq" else {}
    t0 = time.time()

    def progress(i, alpha, res):
        C.log(f"  {name} [{i}] alpha={alpha:.4g} Delta_eff={res.Delta_eff:.3e} "
              f"t={res.tau / res.c:.3e} iters={res.n_iter} ({time.time() - t0:.0f}s)")  # fmt: skip
        for field in extra:  # per-point SE quantities kept beside the curve
            extra[field].append(getattr(res, field))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", se.SEConvergenceWarning)
        c = scaling.excess_risk_curve(task_, tg, np.asarray(alphas), scaling.LamSchedule(lam0, ell),
                                      progress=progress)  # fmt: skip
    out = {f: np.asarray(getattr(c, f)) for f in c._fields}
    return out | {f"se_{k}": np.asarray(v) for k, v in extra.items()}


def emergence_sim_point(*, gamma, n_modes, lam, d, i, alpha, seed):
    """The convex solver; learned fractions of the target's modes from its eigenvectors."""
    task = tasks.Linear(T=T)
    tg = scaling.PowerLawModes(gamma=gamma, n_modes=n_modes)
    k1, k2 = jax.random.split(C.key_for(SEED, 1, i, seed))
    S0 = tg.sample(k1, d)
    data = tasks.make_dataset(k2, task, S0, tasks.n_samples(alpha, d))
    res = train.train_convex(task, data, lam)
    rm = scaling.recovered_modes_trained(res.S, S0, tg)
    ov = train.overlaps(res.S, S0)
    C.log(f"  emergence sim alpha={alpha} seed={seed}: count={rm.count} converged={res.converged}")
    te = float(se.test_error_from_overlaps(task, ov.Q0, ov.m, ov.q))
    return {"fractions": np.asarray(rm.fractions), "count": rm.count, "test_error": te}


def lasso_point(*, gamma, n_modes, kappa0, lam, N, i, delta, seed):
    """The LASSO solver on data at ``N``: mse, fraction of non-zeros, recovered fractions."""
    tg = scaling.PowerLawModes(gamma=gamma, n_modes=n_modes, kappa0=kappa0)
    A, y, x0 = scaling.lasso_data(C.key_for(SEED, 4, i, seed), tg, N, delta)
    fit = scaling.lasso_solve(A, y, lam)
    fr, mse = scaling.lasso_recovered_fractions(fit.x, x0, tg), float(np.mean((fit.x - x0) ** 2))
    return {"mse": mse, "dof": float(np.mean(fit.x != 0)), "fractions": np.asarray(fr)}


def _curve(name, task, noise, gamma, n_modes, alphas, lam0, ell) -> dict:
    """A point of :func:`curve_point`; ``alphas`` or a window ``(lo, hi, n)``, log-spaced."""
    if isinstance(alphas, tuple):
        alphas = np.logspace(math.log10(alphas[0]), math.log10(alphas[1]), alphas[2]).tolist()
    return {"name": name, "task": task, "noise": noise, "gamma": gamma, "n_modes": n_modes,
            "alphas": alphas, "lam0": lam0, "ell": ell}  # fmt: skip


def grid_curves(P) -> sweep.Grid:
    """Every excess-risk curve (clean: threshold-phase windows; noisy: given windows)."""
    points, n, m_eff = [], P["n_points"], tasks.Linear(T=T).m_eff
    for j, (gamma, ell, n_modes, k_hi) in enumerate(P["clean"]):
        tg = scaling.PowerLawModes(gamma=gamma, n_modes=n_modes)
        lam0, a_lo, a_hi = scaling.threshold_window(tg, ell, m_eff, K_LO, k_hi, ratio=RATIO)
        window = (a_lo, a_hi, n)
        points.append(_curve(f"clean{j}", "linear", 0.0, gamma, n_modes, window, lam0, ell))
    for j, (gamma, ell, lam0, a_lo, a_hi) in enumerate(P["noisy"]):
        window = (a_lo, a_hi, n)
        points.append(_curve(f"noisy{j}", "linear", P["noise"], gamma, N_MODES, window, lam0, ell))
    return sweep.Grid(curve_point, points)


def grid_softmax(P) -> sweep.Grid:
    p = P["softmax"]
    window = (p["alpha_lo"], p["alpha_hi"], p["n_points"])
    point = _curve("softmax", "seq2seq", 0.0, p["gamma"], p["n_modes"], window, p["lam0"], p["ell"])
    return sweep.Grid(curve_point, [point])


def grids_emergence(P) -> tuple[sweep.Grid, sweep.Grid]:
    p = P["emergence"]
    common = {"gamma": p["gamma"], "n_modes": p["n_modes"], "lam": p["lam"]}
    alphas = list(p["alphas"])  # below, lam = lam0 alpha^0: the numbers of a fixed lam
    theory = sweep.Grid(curve_point, [_curve("emergence", "linear", 0.0, p["gamma"], p["n_modes"],
                                             alphas, p["lam"], 0.0)])  # fmt: skip
    sims = [{**common, "d": p["d"], "i": i, "alpha": a} for i, a in enumerate(p["sim_alphas"])]
    return theory, sweep.Grid(emergence_sim_point, sims, seeds=p["seeds"])


def grid_lasso(P) -> sweep.Grid:
    p = P["lasso"]
    common = {k: p[k] for k in ("gamma", "n_modes", "kappa0", "lam", "N")}
    points = [{**common, "i": i, "delta": dl} for i, dl in enumerate(p["deltas"])]
    return sweep.Grid(lasso_point, points, seeds=p["seeds"])


CURVE_SKIP = ("fractions",)  # per-mode arrays of the noisy/clean curves: large


def arrays_emergence(P, run) -> dict:
    g_theory, _ = grids_emergence(P)
    row = run(g_theory).iloc[0]
    arrays = {f"theory/{f}": np.asarray(row[f]) for f in scaling.ExcessRiskCurve._fields}
    return arrays | arrays_emergence_sims(P, run)


def arrays_emergence_sims(P, run) -> dict:
    t = run(grids_emergence(P)[1])
    sims = {k: t[k] for k in ("alpha", "seed", "fractions", "count", "test_error")}
    return {f"sim/{k}": np.asarray(list(v)) for k, v in sims.items()}


def arrays_curves(P, run) -> tuple[dict, list]:
    t, arrays, cases = run(grid_curves(P)), {}, []
    for _, row in t.iterrows():
        name = row["name"]
        fields = [f for f in scaling.ExcessRiskCurve._fields if f not in CURVE_SKIP]
        arrays.update({f"{name}/{f}": np.asarray(row[f]) for f in fields})
        case = {k: row[k] for k in ("name", "gamma", "ell", "lam0", "noise")}
        cases.append(case | {"n_modes": int(row["n_modes"]), "seconds": round(row["seconds"])})
    return arrays, cases


def arrays_softmax(P, run) -> dict:
    row = run(grid_softmax(P)).iloc[0]
    arrays = {f"softmax/{f}": np.asarray(row[f]) for f in scaling.ExcessRiskCurve._fields}
    extra = ("c", "v", "integration_error")
    return arrays | {f"softmax_se/{k}": np.asarray(row[f"se_{k}"]) for k in extra}


def arrays_lasso(P, run) -> dict:
    t = run(grid_lasso(P))
    return {k: np.asarray(list(t[k])) for k in ("delta", "seed", "mse", "dof", "fractions")}


def compute(part: str, quick: bool = True, runner=None) -> dict:
    """The arrays of one part (the quick grids by default), computed without writing."""
    P, run = config(quick), runner or C.Runner()
    if part == "curves":
        return arrays_curves(P, run)[0]
    arrays = {"emergence": arrays_emergence, "softmax": arrays_softmax, "lasso": arrays_lasso}
    return arrays[part](P, run)


# QUICK mode in the scaling-laws chapter: the arrays of a file (the keys and layout of
# np.load of it), computed live in this process on the quick grid.
def run_emergence(quick: bool = True) -> dict:
    """``scaling_emergence.npz``: SE of the 5-mode target and convex runs (quick: d = 30;
    the convex runs are live, the SE curve, theory, is the stored one)."""
    if not quick:
        return compute("emergence", quick)
    P, run = config(quick), C.Runner()
    sims = arrays_emergence_sims(P, run)
    stored = C.load_npz(C.HERE / "scaling_emergence.npz")
    return {k: v for k, v in stored.items() if k.startswith("theory/")} | sims


INFO = {  # what scaling_meta.json records of each part besides its run time
    "emergence": lambda P, _: {"task": f"Linear(T={T})"}
    | {k: P["emergence"][k] for k in ("gamma", "n_modes", "lam", "d", "seeds")},
    "curves": lambda P, cases: {"task": f"Linear(T={T})", "k_window": [K_LO, K_HI],
                                "ratio": RATIO, "cases": cases},
    "softmax": lambda P, _: {"task": "Seq2Seq(T=2)", **P["softmax"]},
    "lasso": lambda P, _: dict(P["lasso"]),
}  # fmt: skip


def _part(name: str):
    def part(quick, out, runner) -> dict:  # writes scaling_<name>.npz
        P, cases = config(quick), None
        if name == "curves":
            arrays, cases = arrays_curves(P, runner)
        else:
            arrays = compute(name, quick, runner)
        C.save_npz(Path(out) / f"scaling_{name}.npz", arrays)
        return INFO[name](P, cases)

    return part


PARTS = {name: _part(name) for name in INFO}


def meta_update(args, name, seconds, info) -> None:
    path = args.out / "scaling_meta.json"
    meta = json.loads(path.read_text()) if path.exists() else {}
    meta.update({"seed": SEED, "T": T, "quick": bool(args.quick), "attnlib": attnlib.__version__})
    meta[name] = {**info, "seconds": round(seconds)}
    C.save_json(path, meta, indent=1, sort_keys=True)


def main(argv=None) -> None:
    args = C.parser(__doc__, PARTS).parse_args(argv)
    C.run_parts(args, PARTS, meta_update)


if __name__ == "__main__":
    from data import make_scaling_data  # the importable module: workers load it by name

    make_scaling_data.main()
