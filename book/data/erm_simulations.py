r"""The simulation parts of ``make_erm_data``: the convex (nuclear + PSD) solver on the
learning-curve grid (-> ``erm_curves.npz``), Adam on the factorised model at ``kappa = 1``
(-> ``erm_adam.npz``) and at widths below and above the minimal one
(-> ``erm_width.npz``), factorised (nuclear) against direct (Frobenius) training at the
theory's optimal ``lam`` (-> ``erm_compare.npz``). Point functions of
:mod:`attnlib.train` calls on :mod:`attnlib.sweep` grids; every data set comes from a
PRNG key derived from ``SEED``."""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import math

import jax
import numpy as np
from data import _common as C
from data.erm_config import KAPPA0, NOISE, NOISES, RANK_CUTOFF, SEED, TASKS, make_task, scaled

import attnlib
from attnlib import sweep, targets, tasks, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles


def _data(task, target, alpha, d, key, n_keys):
    keys = jax.random.split(C.key_for(SEED, *key), n_keys)
    S0 = target.sample(keys[0], d)
    return S0, tasks.make_dataset(keys[1], task, S0, tasks.n_samples(alpha, d)), keys[2:]


def convex_chain_point(*, task, noise, alpha, lam, d, n_test, key, seed, init=None):
    """Convex solver on one data set (``key + [seed]``), warm-started along ``lam``."""
    task_ = make_task(task, noise)
    S0, data, (k_test,) = _data(task_, targets.Wishart(KAPPA0), alpha, d, [*key, seed], 3)
    r, notes = C.quiet(train.train_convex, task_, data, lam, S_init=init, tol=1e-7)
    if notes:
        C.log(f"    [convex] {notes} (lam={lam:g}, residual {r.residual:.1e})")
    row = {
        "train_loss": float(r.train_loss),
        "test_error": float(train.test_error(k_test, task_, S0, r.S, n_test=n_test)),
        "rank_fraction": C.rank_fraction(r.S, 1e-6),
    }
    return row, r.S


def adam(task, data, p, lam, key, *, steps, W_init=None):
    """Adam on W with weight decay lam_W = lam / sqrt(kappa); returns (TrainResult, notes)."""
    lam_W = lam / math.sqrt(p / data.X.shape[2])
    return C.quiet(train.train_factorized, key, task, data, p, lam_W, max_iter=steps, W_init=W_init)


def adam_point(*, task, alpha, d, lam, steps, n_test, key, seed):
    """Adam at ``kappa = 1``; at seed 0 also its distance to the convex minimiser."""
    task_ = make_task(task, NOISE)
    S0, data, (k_test, k_init) = _data(task_, targets.Wishart(KAPPA0), alpha, d, [*key, seed], 4)
    r, notes = adam(task_, data, d, lam, k_init, steps=steps)
    if notes:
        C.log(f"    [adam] {notes} (residual {r.residual:.1e})")
    row = {
        "train_loss": float(r.train_loss),
        "test_error": float(train.test_error(k_test, task_, S0, r.S, n_test=n_test)),
        "rank_fraction": C.rank_fraction(r.S, RANK_CUTOFF),
        "n_steps": float(r.n_iter),
        "rel_dist_convex": math.nan,
    }
    if seed == 0:
        c, _ = C.quiet(train.train_convex, task_, data, lam, tol=1e-8)
        row["rel_dist_convex"] = float(np.linalg.norm(r.S - c.S) / np.linalg.norm(c.S))
    return row


def width_p(kappa, d) -> int:
    return max(1, int(round(kappa * d)))


def _width_metrics(task, data, r, S0, lam, *, k_test, n_test, cutoff) -> dict:
    """Per-sequence nuclear objective, train loss, test error and rank of ``r.S``."""
    return {
        "objective": float(train.objective(task, data, r.S, lam, "nuclear") / data.X.shape[0]),
        "train_loss": float(r.train_loss),
        "test_error": float(train.test_error(k_test, task, S0, r.S, n_test=n_test)),
        "rank_fraction": C.rank_fraction(r.S, cutoff),
    }


def width_adam_point(*, alpha, lam, d, n_test, ik, kappa, steps, seed):
    """Adam at width ``kappa`` on the data set of ``seed`` (shared by every width)."""
    task = make_task("seq2seq", NOISE)
    S0, data, (k_test, k_init) = _data(task, targets.Wishart(KAPPA0), alpha, d, [3, seed], 4)
    r, notes = adam(task, data, width_p(kappa, d), lam, jax.random.fold_in(k_init, ik), steps=steps)
    if notes:
        C.log(f"    [adam] {notes} (kappa={kappa}, residual {r.residual:.1e})")
    return _width_metrics(task, data, r, S0, lam, k_test=k_test, n_test=n_test, cutoff=RANK_CUTOFF)


def width_convex_point(*, alpha, lam, d, n_test, seed):
    """The convex minimiser on the data set of ``seed``."""
    task = make_task("seq2seq", NOISE)
    S0, data, (k_test, _) = _data(task, targets.Wishart(KAPPA0), alpha, d, [3, seed], 4)
    c, _ = C.quiet(train.train_convex, task, data, lam, tol=1e-8)
    return _width_metrics(task, data, c, S0, lam, k_test=k_test, n_test=n_test, cutoff=1e-6)


def interp_lam(theory, group, x, key="alpha"):
    xs, lams = theory[f"{group}.{key}"], theory[f"{group}.lam"]
    return float(np.exp(np.interp(x, xs, np.log(lams))))


def compare_point(*, task, kappa0, alpha, d, lam_nuc, lam_fro, steps, n_test, key, seed):
    """Test errors of factorised Adam (nuclear, kappa = 1) and direct Adam (Frobenius)."""
    task_ = make_task(task, NOISE)
    S0, data, (k_test, k_init) = _data(task_, targets.Wishart(kappa0), alpha, d, [*key, seed], 4)
    fac, n1 = adam(task_, data, d, lam_nuc, k_init, steps=steps)
    dirc, n2 = C.quiet(train.train_direct, task_, data, lam_fro, max_iter=steps)
    for note in n1 + n2:
        C.log(f"    [{note}]")
    return {
        "e_fac": float(train.test_error(k_test, task_, S0, fac.S, n_test=n_test)),
        "e_dir": float(train.test_error(k_test, task_, S0, dirc.S, n_test=n_test)),
    }


def grid_curves(cfg) -> sweep.Grid:
    """Convex solver on the learning-curve grid, warm-started along ``lam`` (downwards)."""
    points = []
    for i_noise, (noise_name, noise) in enumerate(NOISES.items()):
        for i_task, task in enumerate(TASKS):
            for ia, alpha in enumerate(scaled(cfg, "sim_alphas", task)):
                points += sweep.product(
                    task=task,
                    noise=noise,
                    alpha=alpha,
                    d=cfg["d_convex"],
                    n_test=cfg["n_test"],
                    key=[[1, i_noise, i_task, ia]],
                    lam=sorted(cfg["lams"][noise_name], reverse=True),
                )
    return sweep.Grid(convex_chain_point, points, seeds=cfg["seeds"], chain="lam")


def grid_adam(cfg) -> sweep.Grid:
    points = []
    for i_task, task in enumerate(TASKS):
        for ia, alpha in enumerate(scaled(cfg, "adam_alphas", task)):
            points += sweep.product(
                task=task,
                alpha=alpha,
                d=cfg["d_adam"],
                lam=cfg["adam_lam"],
                steps=cfg["adam_steps"],
                n_test=cfg["n_test"],
                key=[[2, i_task, ia]],
            )
    return sweep.Grid(adam_point, points, seeds=cfg["seeds"])


def grid_width(cfg) -> tuple[sweep.Grid, sweep.Grid]:
    """Adam at every width and the convex solver, on one data set per seed."""
    common = {
        "alpha": cfg["width_alpha"],
        "lam": cfg["width_lam"],
        "d": cfg["d_width"],
        "n_test": cfg["n_test"],
    }
    adam = [
        {**common, "ik": ik, "kappa": k, "steps": cfg["adam_steps"]}
        for ik, k in enumerate(cfg["width_kappas"])
    ]
    return (
        sweep.Grid(width_adam_point, adam, seeds=cfg["seeds"]),
        sweep.Grid(width_convex_point, [common], seeds=cfg["seeds"]),
    )


def grid_compare(cfg, theory: dict) -> tuple[sweep.Grid, sweep.Grid, sweep.Grid]:
    """Factorised against direct training at the theory's optimal ``lam``s; the convex
    ``lam`` scan."""
    base = {"d": cfg["d_cmp"], "steps": cfg["adam_steps"], "n_test": cfg["n_test"]}
    along_alpha = []
    for i_task, task in enumerate(TASKS):
        for ia, alpha in enumerate(scaled(cfg, "cmp_sim_alphas", task)):
            along_alpha.append(
                {
                    **base,
                    "task": task,
                    "kappa0": KAPPA0,
                    "alpha": alpha,
                    "lam_nuc": interp_lam(theory, f"opt.{task}.nuclear", alpha),
                    "lam_fro": interp_lam(theory, f"opt.{task}.frobenius", alpha),
                    "key": [4, i_task, ia],
                }
            )
    along_k0 = []
    for ik, k0 in enumerate(cfg["cmp_sim_kappa0s"]):
        along_k0.append(
            {
                **base,
                "task": "seq2seq",
                "kappa0": k0,
                "alpha": cfg["cmp_alpha_kappa0"],
                "lam_nuc": interp_lam(theory, "kappa0.nuclear", k0, key="kappa0"),
                "lam_fro": interp_lam(theory, "kappa0.frobenius", k0, key="kappa0"),
                "key": [5, ik],
            }
        )
    scan = {
        "task": "seq2seq",
        "noise": NOISE,
        "alpha": cfg["scan_alpha"],
        "d": cfg["d_convex"],
        "n_test": cfg["n_test"],
        "key": [[6]],
        "lam": sorted(cfg["scan_lams"], reverse=True),
    }
    return (
        sweep.Grid(compare_point, along_alpha, seeds=cfg["seeds"]),
        sweep.Grid(compare_point, along_k0, seeds=cfg["seeds"]),
        sweep.Grid(convex_chain_point, scan, seeds=cfg["seeds"], chain="lam"),
    )


def arrays_curves(cfg, run) -> dict:
    arr, t = {}, run(grid_curves(cfg))
    for noise_name, noise in NOISES.items():
        for task in TASKS:
            alphas, lams = scaled(cfg, "sim_alphas", task), sorted(cfg["lams"][noise_name])
            sel, g = t[(t.task == task) & (t.noise == noise)], f"{task}.{noise_name}"
            axes = {"lam": lams, "seed": range(cfg["seeds"]), "alpha": alphas}
            arr[f"{g}.alpha"], arr[f"{g}.lam"] = np.array(alphas), np.array(lams)
            for f in ("train_loss", "test_error", "rank_fraction"):
                arr[f"{g}.{f}"] = sweep.pivot(sel, f, axes)
    return arr


def arrays_adam(cfg, run) -> dict:
    arr, t = {}, run(grid_adam(cfg))
    for task in TASKS:
        alphas, sel = scaled(cfg, "adam_alphas", task), t[t.task == task]
        axes = {"seed": range(cfg["seeds"]), "alpha": alphas}
        arr[f"{task}.alpha"] = np.array(alphas)
        for f in ("train_loss", "test_error", "rank_fraction", "n_steps"):
            arr[f"{task}.{f}"] = sweep.pivot(sel, f, axes)
        arr[f"{task}.rel_dist_convex"] = sweep.pivot(sel, "rel_dist_convex", axes)[0]
    return arr


def arrays_width(cfg, run) -> dict:
    g_adam, g_convex = grid_width(cfg)
    ta, tc = run(g_adam), run(g_convex)
    kappas, seeds = cfg["width_kappas"], range(cfg["seeds"])
    arr = {"kappa": np.array(kappas), "p": np.array([width_p(k, cfg["d_width"]) for k in kappas])}
    for f in ("objective", "train_loss", "test_error", "rank_fraction"):
        arr[f] = sweep.pivot(ta, f, {"seed": seeds, "kappa": kappas})
    for f in ("objective", "train_loss", "test_error", "rank_fraction"):
        arr[f"convex.{f}"] = sweep.pivot(tc, f, {"seed": seeds})
    return arr


def arrays_compare(cfg, run, theory: dict) -> dict:
    g_alpha, g_k0, g_scan = grid_compare(cfg, theory)
    ta, tk, ts = run(g_alpha), run(g_k0), run(g_scan)
    seeds, arr = range(cfg["seeds"]), {}
    for task in TASKS:
        alphas, sel = scaled(cfg, "cmp_sim_alphas", task), ta[ta.task == task]
        axes = {"seed": seeds, "alpha": alphas}
        arr[f"alpha.{task}.alpha"] = np.array(alphas)
        arr[f"alpha.{task}.lam"] = np.stack(
            [sweep.pivot(sel, f, axes)[0] for f in ("lam_nuc", "lam_fro")]
        )
        arr[f"alpha.{task}.test_error"] = np.stack(
            [sweep.pivot(sel, f, axes) for f in ("e_fac", "e_dir")]
        )
    k0s = cfg["cmp_sim_kappa0s"]
    arr["kappa0.kappa0"] = np.array(k0s)
    arr["kappa0.test_error"] = np.stack(
        [sweep.pivot(tk, f, {"seed": seeds, "kappa0": k0s}) for f in ("e_fac", "e_dir")]
    )
    lams = sorted(cfg["scan_lams"])
    arr["scan.lam"] = np.array(lams)
    arr["scan.test_error"] = sweep.pivot(ts, "test_error", {"seed": seeds, "lam": lams})
    return arr
