r"""State evolution, trained models and LASSO runs for book/08_scaling_laws.ipynb.

Run from ``book/`` (``make data`` runs every script)::

    python -m data.make_scaling_data                     # every part, on a local Dask cluster
    python -m data.make_scaling_data --part curves       # one part
    python -m data.make_scaling_data --quick --out DIR   # the quick grids, elsewhere

Every grid is an :class:`attnlib.sweep.Grid` over a point function below (cached
on disk, resumable; each state-evolution curve is one task, warm-started inside
:func:`attnlib.scaling.excess_risk_curve`, the curves run in parallel). In a chapter,
``make_scaling_data.compute("lasso", quick=True)`` returns a part's arrays (the quick
grid, in this process) without writing.

Parts and the files they write next to this script (``book/data/``):

- ``emergence``  a target with 5 modes: the state evolution on a fine ``alpha`` grid
  (test error, learned fraction of every mode) and the convex solver
  (:func:`attnlib.train.train_convex`) at ``d = 80`` on a few ``alpha``, the learned
  fractions of its modes measured from its eigenvectors. -> ``scaling_emergence.npz``
- ``curves``  excess-risk curves of the state evolution for 200-mode targets on a grid
  of ``(gamma, ell)`` (penalty ``lam = lam0 alpha^{-ell}``), noise-free and noisy
  labels; each curve covers the window where 4 to 50 modes are recovered.
  -> ``scaling_curves.npz``
- ``softmax``  one curve of the same kind for the softmax seq2seq task.
  -> ``scaling_softmax.npz``
- ``lasso``  the LASSO solver (:func:`attnlib.scaling.lasso_solve`) on data at
  ``N = 2000`` along ``delta`` (three seeds), to check the LASSO state evolution.
  -> ``scaling_lasso.npz``

``scaling_meta.json`` records the parameters and run times. All randomness comes
from explicit PRNG keys derived from ``SEED``.
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

# ----------------------------------------------------------------------------
# Parameters (the chapter reads them back from scaling_meta.json)
# ----------------------------------------------------------------------------

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
    "clean": [(2.0, 0.0, 40, 10)],
    "n_points": 4,
    "noise": 0.1,
    "noisy": [(2.0, -0.5, 3.0, 0.3, 3.0)],
    "softmax": {"gamma": 2.0, "ell": 0.0, "n_modes": 24, "lam0": 1.0, "alpha_lo": 1.0,
                "alpha_hi": 2.0, "n_points": 2},
    "lasso": {"gamma": 1.5, "n_modes": 5, "kappa0": 0.5, "lam": 0.05, "N": 300, "seeds": 2,
              "deltas": [0.2, 0.45, 1.0, 1.7]},
}
# fmt: on


def config(quick: bool) -> dict:
    return QUICK if quick else FULL


def threshold_window(target, ell: float, m_eff: int, k_lo: int, k_hi: int, ratio: float):
    """``(lam0, alpha_lo, alpha_hi)`` of a noise-free curve in the threshold phase.

    At large ``alpha`` the linear task has ``a_hat ~ 4 m_eff alpha`` (so the threshold is
    ``t ~ lam / (4 m_eff alpha)``) and ``Delta_eff ~ e / (2 m_eff alpha)`` with
    ``e ~ B(t) = 2 t^2 rho(t) / (2 - r)``, hence ``t^2 / Delta_eff ~ m_eff alpha (2 - r) / rho(t)``.
    The window starts where mode ``k_lo`` sits at the threshold with
    ``t / sqrt(Delta_eff) = ratio`` and ends where mode ``k_hi`` does.
    """
    lam_k = target.mode_eigenvalues()
    t_lo, t_hi = lam_k[k_lo - 1], lam_k[k_hi - 1]
    rho_lo = float(np.sum(target.mode_weights()[:k_lo]))
    a_lo = ratio**2 * rho_lo / (m_eff * (2.0 - target.r))
    lam0 = 4 * m_eff * t_lo * a_lo ** (1.0 + ell)
    a_hi = (lam0 / (4 * m_eff * t_hi)) ** (1.0 / (1.0 + ell))
    return lam0, a_lo, a_hi


# ----------------------------------------------------------------------------
# Point functions
# ----------------------------------------------------------------------------


def _progress(name: str, t0: float, extra: dict | None = None):
    def show(i, alpha, res):
        C.log(
            f"  {name} [{i}] alpha={alpha:.4g} Delta_eff={res.Delta_eff:.3e} "
            f"t={res.tau / res.c:.3e} iters={res.n_iter} ({time.time() - t0:.0f}s)"
        )
        for field in extra or {}:  # per-point SE quantities kept beside the curve
            extra[field].append(getattr(res, field))

    return show


def curve_point(*, name, task, noise, gamma, n_modes, alphas, lam0, ell):
    """One excess-risk curve of the state evolution (``lam = lam0 alpha^{-ell}``) as a dict
    of arrays; for ``task="seq2seq"`` also the SE's ``c``, ``v`` and QMC error per point."""
    task_ = tasks.Linear(T=T, noise=noise) if task == "linear" else tasks.Seq2Seq(T=2)
    tg = scaling.PowerLawModes(gamma=gamma, n_modes=n_modes)
    extra = {"c": [], "v": [], "integration_error": []} if task == "seq2seq" else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", se.SEConvergenceWarning)
        c = scaling.excess_risk_curve(
            task_,
            tg,
            np.asarray(alphas),
            scaling.LamSchedule(lam0, ell),
            progress=_progress(name, time.time(), extra),
        )
    out = {f: np.asarray(getattr(c, f)) for f in c._fields}
    return out | {f"se_{k}": np.asarray(v) for k, v in (extra or {}).items()}


def emergence_theory_point(*, gamma, n_modes, alphas, lam):
    """The state evolution of the emergence figure on a fine ``alpha`` grid."""
    tg = scaling.PowerLawModes(gamma=gamma, n_modes=n_modes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", se.SEConvergenceWarning)
        c = scaling.excess_risk_curve(tasks.Linear(T=T), tg, np.asarray(alphas), lam)
    return {f: np.asarray(getattr(c, f)) for f in c._fields}


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
    C.log(
        f"  emergence sim alpha={alpha} seed={seed}: count={rm.count} "
        f"fractions={np.round(rm.fractions, 3)} converged={res.converged}"
    )
    return {
        "fractions": np.asarray(rm.fractions),
        "count": rm.count,
        "test_error": float(se.test_error_from_overlaps(task, ov.Q0, ov.m, ov.q)),
    }


def lasso_point(*, gamma, n_modes, kappa0, lam, N, i, delta, seed):
    """The LASSO solver on data at ``N``: mse, fraction of non-zeros, recovered fractions."""
    tg = scaling.PowerLawModes(gamma=gamma, n_modes=n_modes, kappa0=kappa0)
    A, y, x0 = scaling.lasso_data(C.key_for(SEED, 4, i, seed), tg, N, delta)
    fit = scaling.lasso_solve(A, y, lam)
    return {
        "mse": float(np.mean((fit.x - x0) ** 2)),
        "dof": float(np.mean(fit.x != 0)),
        "fractions": np.asarray(scaling.lasso_recovered_fractions(fit.x, x0, tg)),
    }


# ----------------------------------------------------------------------------
# Grids and parts
# ----------------------------------------------------------------------------


def _logspace(lo, hi, n) -> list:
    return np.logspace(math.log10(lo), math.log10(hi), n).tolist()


def grid_curves(P) -> sweep.Grid:
    """Every excess-risk curve (clean: threshold-phase windows; noisy: given windows)."""
    points = []
    for j, (gamma, ell, n_modes, k_hi) in enumerate(P["clean"]):
        tg = scaling.PowerLawModes(gamma=gamma, n_modes=n_modes)
        lam0, a_lo, a_hi = threshold_window(tg, ell, tasks.Linear(T=T).m_eff, K_LO, k_hi, RATIO)
        points.append(
            {
                "name": f"clean{j}",
                "task": "linear",
                "noise": 0.0,
                "gamma": gamma,
                "n_modes": n_modes,
                "alphas": _logspace(a_lo, a_hi, P["n_points"]),
                "lam0": lam0,
                "ell": ell,
            }
        )
    for j, (gamma, ell, lam0, a_lo, a_hi) in enumerate(P["noisy"]):
        points.append(
            {
                "name": f"noisy{j}",
                "task": "linear",
                "noise": P["noise"],
                "gamma": gamma,
                "n_modes": N_MODES,
                "alphas": _logspace(a_lo, a_hi, P["n_points"]),
                "lam0": lam0,
                "ell": ell,
            }
        )
    return sweep.Grid(curve_point, points)


def grid_softmax(P) -> sweep.Grid:
    p = P["softmax"]
    point = {
        "name": "softmax",
        "task": "seq2seq",
        "noise": 0.0,
        "gamma": p["gamma"],
        "n_modes": p["n_modes"],
        "alphas": _logspace(p["alpha_lo"], p["alpha_hi"], p["n_points"]),
        "lam0": p["lam0"],
        "ell": p["ell"],
    }
    return sweep.Grid(curve_point, [point])


def grids_emergence(P) -> tuple[sweep.Grid, sweep.Grid]:
    p = P["emergence"]
    common = {"gamma": p["gamma"], "n_modes": p["n_modes"], "lam": p["lam"]}
    theory = sweep.Grid(emergence_theory_point, [{**common, "alphas": list(p["alphas"])}])
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
    # the curve's own lam (an array over alpha) comes back as "lam_out": lam is a parameter
    fields = scaling.ExcessRiskCurve._fields
    arrays = {f"theory/{f}": np.asarray(row.get(f"{f}_out", row[f])) for f in fields}
    return arrays | arrays_emergence_sims(P, run)


def arrays_emergence_sims(P, run) -> dict:
    t = run(grids_emergence(P)[1])
    sims = {
        "alpha": t["alpha"],
        "seed": t["seed"],
        "fractions": list(t["fractions"]),
        "count": t["count"],
        "test_error": t["test_error"],
    }
    return {f"sim/{k}": np.asarray(list(v)) for k, v in sims.items()}


def arrays_curves(P, run) -> tuple[dict, list]:
    t, arrays, cases = run(grid_curves(P)), {}, []
    for _, row in t.iterrows():
        name = row["name"]
        fields = [f for f in scaling.ExcessRiskCurve._fields if f not in CURVE_SKIP]
        arrays.update({f"{name}/{f}": np.asarray(row[f]) for f in fields})
        cases.append(
            {
                "name": name,
                "gamma": row["gamma"],
                "ell": row["ell"],
                "lam0": row["lam0"],
                "noise": row["noise"],
                "n_modes": int(row["n_modes"]),
                "seconds": round(row["seconds"]),
            }
        )
    return arrays, cases


def arrays_softmax(P, run) -> dict:
    row = run(grid_softmax(P)).iloc[0]
    arrays = {f"softmax/{f}": np.asarray(row[f]) for f in scaling.ExcessRiskCurve._fields}
    extra = ("c", "v", "integration_error")
    return arrays | {f"softmax_se/{k}": np.asarray(row[f"se_{k}"]) for k in extra}


def arrays_lasso(P, run) -> dict:
    t = run(grid_lasso(P))
    cols = {
        "delta": t["delta"],
        "seed": t["seed"],
        "mse": t["mse"],
        "dof": t["dof"],
        "fractions": list(t["fractions"]),
    }
    return {k: np.asarray(list(v)) for k, v in cols.items()}


def compute(part: str, quick: bool = True, runner=None) -> dict:
    """The arrays of one part (the quick grids by default), computed without writing."""
    P, run = config(quick), runner or C.Runner()
    if part == "curves":
        return arrays_curves(P, run)[0]
    return {"emergence": arrays_emergence, "softmax": arrays_softmax, "lasso": arrays_lasso}[part](
        P, run
    )


# QUICK mode in the scaling-laws chapter: each returns the dict of arrays of its file (same keys and
# layout as np.load of it), computed live in this process on the quick grid.
def run_emergence(quick: bool = True) -> dict:
    """``scaling_emergence.npz``: SE of the 5-mode target and convex runs (quick: d = 30).

    Quick: the convex runs are live; the SE curve (theory) is the stored one."""
    if not quick:
        return compute("emergence", quick)
    P, run = config(quick), C.Runner()
    sims = arrays_emergence_sims(P, run)
    stored = C.load_npz(C.HERE / "scaling_emergence.npz")
    return {k: v for k, v in stored.items() if k.startswith("theory/")} | sims


def run_lasso(quick: bool = True) -> dict:
    """``scaling_lasso.npz``: the LASSO solver along delta (quick: N = 300)."""
    return compute("lasso", quick)


def part_emergence(quick, out, runner) -> dict:
    C.save_npz(Path(out) / "scaling_emergence.npz", compute("emergence", quick, runner))
    p = config(quick)["emergence"]
    info = {k: p[k] for k in ("gamma", "n_modes", "lam", "d", "seeds")}
    return {"task": f"Linear(T={T})", **info}


def part_curves(quick, out, runner) -> dict:
    arrays, cases = arrays_curves(config(quick), runner)
    C.save_npz(Path(out) / "scaling_curves.npz", arrays)
    return {"task": f"Linear(T={T})", "k_window": [K_LO, K_HI], "ratio": RATIO, "cases": cases}


def part_softmax(quick, out, runner) -> dict:
    C.save_npz(Path(out) / "scaling_softmax.npz", compute("softmax", quick, runner))
    return {"task": "Seq2Seq(T=2)", **config(quick)["softmax"]}


def part_lasso(quick, out, runner) -> dict:
    C.save_npz(Path(out) / "scaling_lasso.npz", compute("lasso", quick, runner))
    return dict(config(quick)["lasso"])


PARTS = {
    "emergence": part_emergence,
    "curves": part_curves,
    "softmax": part_softmax,
    "lasso": part_lasso,
}


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
