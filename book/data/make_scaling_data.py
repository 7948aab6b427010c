r"""State evolution, trained models and LASSO runs for chapter 5 (``book/05_scaling_laws.ipynb``).

Run from the repository root::

    python book/data/make_scaling_data.py                     # every part, in order
    python book/data/make_scaling_data.py --part curves       # one part
    python book/data/make_scaling_data.py --quick --out DIR   # tiny smoke run elsewhere

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

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path

import jax
import numpy as np

HERE = Path(__file__).resolve().parent
try:
    import attnlib
except ImportError:  # a checkout without `pip install -e .`: use the repository's copy
    sys.path.insert(0, str(HERE.parents[1]))
    import attnlib
from attnlib import scaling, se, tasks, train  # noqa: E402

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
QUICK = {
    "emergence": {"gamma": 2.0, "n_modes": 3, "lam": 0.5, "alphas": np.logspace(-1, 0, 4),
                  "d": 30, "seeds": 1, "sim_alphas": [0.3]},
    "clean": [(2.0, 0.0, 40, 10)],
    "n_points": 4,
    "noise": 0.1,
    "noisy": [(2.0, -0.5, 3.0, 0.3, 3.0)],
    "softmax": {"gamma": 2.0, "ell": 0.0, "n_modes": 24, "lam0": 1.0, "alpha_lo": 1.0,
                "alpha_hi": 2.0, "n_points": 2},
    "lasso": {"gamma": 1.5, "n_modes": 5, "kappa0": 0.5, "lam": 0.05, "N": 200, "seeds": 2,
              "deltas": [0.5, 1.0]},
}
# fmt: on


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def key(*path: int) -> jax.Array:
    k = jax.random.PRNGKey(SEED)
    for p in path:
        k = jax.random.fold_in(k, p)
    return k


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


def curve_arrays(c: scaling.ExcessRiskCurve, prefix: str, skip=()) -> dict:
    return {
        f"{prefix}/{name}": np.asarray(getattr(c, name)) for name in c._fields if name not in skip
    }


def progress_printer(name: str, t0: float):
    def show(i, alpha, res):
        log(
            f"  {name} [{i}] alpha={alpha:.4g} Delta_eff={res.Delta_eff:.3e} "
            f"t={res.tau / res.c:.3e} iters={res.n_iter} ({time.time() - t0:.0f}s)"
        )

    return show


# ----------------------------------------------------------------------------
# Parts
# ----------------------------------------------------------------------------


def part_emergence(P, out: Path, meta: dict) -> None:
    p = P["emergence"]
    task = tasks.Linear(T=T)
    tg = scaling.PowerLawModes(gamma=p["gamma"], n_modes=p["n_modes"])
    t0 = time.time()
    log(f"emergence: state evolution, {len(p['alphas'])} alphas")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", se.SEConvergenceWarning)
        c = scaling.excess_risk_curve(task, tg, p["alphas"], p["lam"])
    arrays = curve_arrays(c, "theory")
    log(f"emergence: theory done ({time.time() - t0:.0f}s)")
    sims = {"alpha": [], "seed": [], "fractions": [], "count": [], "test_error": []}
    for i, alpha in enumerate(p["sim_alphas"]):
        for s in range(p["seeds"]):
            k1, k2 = jax.random.split(key(1, i, s))
            S0 = tg.sample(k1, p["d"])
            data = tasks.make_dataset(k2, task, S0, tasks.n_samples(alpha, p["d"]))
            res = train.train_convex(task, data, p["lam"])
            rm = scaling.recovered_modes_trained(res.S, S0, tg)
            ov = train.overlaps(res.S, S0)
            te = se.test_error_from_overlaps(task, ov.Q0, ov.m, ov.q)
            sims["alpha"].append(alpha)
            sims["seed"].append(s)
            sims["fractions"].append(rm.fractions)
            sims["count"].append(rm.count)
            sims["test_error"].append(te)
            log(
                f"  emergence sim alpha={alpha} seed={s}: count={rm.count} "
                f"fractions={np.round(rm.fractions, 3)} converged={res.converged} "
                f"({time.time() - t0:.0f}s)"
            )
    arrays.update({f"sim/{k}": np.asarray(v) for k, v in sims.items()})
    np.savez_compressed(out / "scaling_emergence.npz", **arrays)
    meta["emergence"] = {
        "task": f"Linear(T={T})",
        "gamma": p["gamma"],
        "n_modes": p["n_modes"],
        "lam": p["lam"],
        "d": p["d"],
        "seeds": p["seeds"],
        "seconds": round(time.time() - t0),
    }


def run_curve(name, task, tg, alphas, lam0, ell, arrays, cases) -> None:
    """One excess-risk curve of the state evolution; stores its arrays and its case."""
    t0 = time.time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", se.SEConvergenceWarning)
        c = scaling.excess_risk_curve(
            task, tg, alphas, scaling.LamSchedule(lam0, ell), progress=progress_printer(name, t0)
        )
    arrays.update(curve_arrays(c, name, skip=("fractions",)))  # per-mode arrays: large
    cases.append(
        {
            "name": name,
            "gamma": tg.gamma,
            "ell": ell,
            "lam0": lam0,
            "noise": task.noise,
            "n_modes": tg.n_modes,
            "seconds": round(time.time() - t0),
        }
    )


def part_curves(P, out: Path, meta: dict) -> None:
    arrays, cases = {}, []
    t_all = time.time()
    clean = tasks.Linear(T=T)
    for j, (gamma, ell, n_modes, k_hi) in enumerate(P["clean"]):
        tg = scaling.PowerLawModes(gamma=gamma, n_modes=n_modes)
        lam0, a_lo, a_hi = threshold_window(tg, ell, clean.m_eff, K_LO, k_hi, RATIO)
        alphas = np.logspace(math.log10(a_lo), math.log10(a_hi), P["n_points"])
        log(
            f"curves: clean{j} gamma={gamma} ell={ell} lam0={lam0:.4g} "
            f"alpha in [{a_lo:.3g}, {a_hi:.3g}]"
        )
        run_curve(f"clean{j}", clean, tg, alphas, lam0, ell, arrays, cases)
    noisy = tasks.Linear(T=T, noise=P["noise"])
    for j, (gamma, ell, lam0, a_lo, a_hi) in enumerate(P["noisy"]):
        tg = scaling.PowerLawModes(gamma=gamma, n_modes=N_MODES)
        alphas = np.logspace(math.log10(a_lo), math.log10(a_hi), P["n_points"])
        log(f"curves: noisy{j} gamma={gamma} ell={ell} lam0={lam0} noise={P['noise']}")
        run_curve(f"noisy{j}", noisy, tg, alphas, lam0, ell, arrays, cases)
    np.savez_compressed(out / "scaling_curves.npz", **arrays)
    meta["curves"] = {
        "task": f"Linear(T={T})",
        "k_window": [K_LO, K_HI],
        "ratio": RATIO,
        "cases": cases,
        "seconds": round(time.time() - t_all),
    }


def part_softmax(P, out: Path, meta: dict) -> None:
    p = P["softmax"]
    task = tasks.Seq2Seq(T=2)
    tg = scaling.PowerLawModes(gamma=p["gamma"], n_modes=p["n_modes"])
    lam0 = p["lam0"]
    alphas = np.logspace(math.log10(p["alpha_lo"]), math.log10(p["alpha_hi"]), p["n_points"])
    t0 = time.time()
    log(f"softmax: seq2seq T=2, gamma={p['gamma']} ell={p['ell']} lam0={lam0:.4g}")
    show = progress_printer("softmax", t0)
    extra = {"c": [], "v": [], "integration_error": []}

    def keep(i, alpha, res):  # the scale c of the learned map and the QMC error, per point
        show(i, alpha, res)
        for name in extra:
            extra[name].append(getattr(res, name))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", se.SEConvergenceWarning)
        c = scaling.excess_risk_curve(
            task, tg, alphas, scaling.LamSchedule(lam0, p["ell"]), progress=keep
        )
    arrays = curve_arrays(c, "softmax")
    arrays.update({f"softmax_se/{k}": np.asarray(v) for k, v in extra.items()})
    np.savez_compressed(out / "scaling_softmax.npz", **arrays)
    meta["softmax"] = {
        "task": "Seq2Seq(T=2)",
        **p,
        "seconds": round(time.time() - t0),
    }


def part_lasso(P, out: Path, meta: dict) -> None:
    p = P["lasso"]
    tg = scaling.PowerLawModes(gamma=p["gamma"], n_modes=p["n_modes"], kappa0=p["kappa0"])
    t0 = time.time()
    rows = {"delta": [], "seed": [], "mse": [], "dof": [], "fractions": []}
    for i, delta in enumerate(p["deltas"]):
        for s in range(p["seeds"]):
            A, y, x0 = scaling.lasso_data(key(4, i, s), tg, p["N"], delta)
            fit = scaling.lasso_solve(A, y, p["lam"])
            rows["delta"].append(delta)
            rows["seed"].append(s)
            rows["mse"].append(float(np.mean((fit.x - x0) ** 2)))
            rows["dof"].append(float(np.mean(fit.x != 0)))
            rows["fractions"].append(scaling.lasso_recovered_fractions(fit.x, x0, tg))
            log(
                f"  lasso delta={delta} seed={s}: mse={rows['mse'][-1]:.4g} "
                f"({time.time() - t0:.0f}s)"
            )
    np.savez_compressed(out / "scaling_lasso.npz", **{k: np.asarray(v) for k, v in rows.items()})
    meta["lasso"] = {**p, "seconds": round(time.time() - t0)}


PARTS = {
    "emergence": part_emergence,
    "curves": part_curves,
    "softmax": part_softmax,
    "lasso": part_lasso,
}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=sorted(PARTS), action="append")
    ap.add_argument("--quick", action="store_true", help="tiny smoke run")
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args(argv)
    P = QUICK if args.quick else FULL
    args.out.mkdir(parents=True, exist_ok=True)
    meta_path = args.out / "scaling_meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    meta.update({"seed": SEED, "T": T, "quick": bool(args.quick), "attnlib": attnlib.__version__})
    for name in args.part or list(PARTS):
        t0 = time.time()
        log(f"part {name}")
        PARTS[name](P, args.out, meta)
        meta_path.write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
        log(f"part {name} done in {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
