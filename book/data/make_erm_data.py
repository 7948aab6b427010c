r"""Theory curves and simulations for chapter 2 (``book/02_erm_asymptotics.ipynb``).

Run from the repository root::

    python book/data/make_erm_data.py                 # every part, in order
    python book/data/make_erm_data.py --part adam     # one part
    python book/data/make_erm_data.py --quick --out DIR   # tiny smoke run elsewhere

Parts and the files they write next to this script (``book/data/``):

- ``theory``  state evolution (:mod:`attnlib.se`) for every figure: learning curves
  for several ``lam``, optimal ``lam`` against ``alpha`` and ``kappa0`` for both
  penalties, a scan in ``lam``. -> ``erm_theory.npz``
- ``curves``  the convex (nuclear + PSD) solver, :func:`attnlib.train.train_convex`,
  on the learning-curve grid. -> ``erm_curves.npz``
- ``adam``    Adam on the factorised model of width ``kappa = 1``
  (:func:`attnlib.train.train_factorized`). -> ``erm_adam.npz``
- ``width``   Adam for widths ``kappa`` below and above the minimal width. -> ``erm_width.npz``
- ``compare`` factorised (nuclear) against direct (Frobenius) training, each at the
  optimal ``lam`` of the theory (needs ``erm_theory.npz``). -> ``erm_compare.npz``

``erm_meta.json`` records the parameters and the run time of every part. All
randomness comes from explicit PRNG keys derived from ``SEED``; the files are small
(a few kB each). Every array is stored under a flat key ``"<group>.<name>"``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
import warnings
from pathlib import Path

import jax
import numpy as np
import scipy.optimize

HERE = Path(__file__).resolve().parent
try:
    import attnlib
except ImportError:  # a checkout without `pip install -e .`: use the repository's copy
    sys.path.insert(0, str(HERE.parents[1]))
    import attnlib
from attnlib import se, targets, tasks, train  # noqa: E402

SEED = 2025

# ----------------------------------------------------------------------------
# Parameters (the chapter reads them back from erm_meta.json)
# ----------------------------------------------------------------------------

KAPPA0 = 0.5  # target rank fraction (Wishart)
NOISE = 0.25  # label-noise variance Delta, on the logits, for the noisy experiments


def make_tasks(noise: float) -> dict[str, tasks.Task]:
    return {"seq2seq": tasks.Seq2Seq(T=2, noise=noise), "linear": tasks.Linear(T=1, noise=noise)}


# alpha scales with 1 / m_eff (seq2seq T=2: m_eff = 2, linear T=1: m_eff = 1)
ALPHA_SCALE = {"seq2seq": 1.0, "linear": 2.0}

FULL = {
    # learning curves (theory grid, convex-solver points)
    # (seq2seq values; the linear task uses twice these alphas, see ALPHA_SCALE)
    "theory_alphas": [0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.135, 0.15, 0.18, 0.2, 0.215]
    + [0.23, 0.26, 0.3, 0.36, 0.43, 0.5],
    "lams": {"clean": [1e-3, 1e-2, 1e-1], "noisy": [1e-3, 1e-2, 1e-1, 1.0]},
    "sim_alphas": [0.05, 0.1, 0.15, 0.2, 0.3, 0.45],
    "d_convex": 60,
    "seeds": 3,
    # Adam, kappa = 1
    "adam_lam": 0.1,
    "adam_alphas": [0.05, 0.1, 0.2, 0.3, 0.45],
    "d_adam": 80,
    "adam_steps": 6000,
    # minimal width
    "width_alpha": 0.3,
    "width_lam": 0.1,
    "width_kappas": [0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0],
    "d_width": 60,
    # factorised vs direct
    "cmp_alphas": [0.05, 0.1, 0.15, 0.2, 0.3, 0.5],
    "cmp_sim_alphas": [0.05, 0.15, 0.3, 0.5],
    "cmp_alpha_kappa0": 0.15,
    "cmp_kappa0s": [0.1, 0.25, 0.5, 0.75, 1.0],
    "cmp_sim_kappa0s": [0.1, 0.5, 1.0],
    "d_cmp": 60,
    # test error against lam at one alpha
    "scan_alpha": 0.2,
    "scan_lams": [1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, 3.0],
    "scan_lams_theory": np.round(np.logspace(-3, 0.5, 15), 6).tolist(),
    "n_test": 10000,
}

QUICK = {
    **FULL,
    "theory_alphas": [0.05, 0.2],
    "lams": {"clean": [1e-2], "noisy": [1e-1]},
    "sim_alphas": [0.2],
    "d_convex": 20,
    "seeds": 2,
    "adam_alphas": [0.2],
    "d_adam": 20,
    "adam_steps": 1000,
    "width_kappas": [0.2, 1.0],
    "d_width": 20,
    "cmp_alphas": [0.15],
    "cmp_sim_alphas": [0.15],
    "cmp_kappa0s": [0.5],
    "cmp_sim_kappa0s": [0.5],
    "d_cmp": 20,
    "scan_lams": [0.1],
    "scan_lams_theory": [0.1],
    "n_test": 2000,
}

RANK_CUTOFF = 1e-3  # an eigenvalue counts towards the rank if > RANK_CUTOFF * largest one


# ----------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------


def log(msg: str) -> None:
    print(msg, flush=True)


def key_for(*path: int) -> jax.Array:
    """A PRNG key derived from SEED and a path of small integers."""
    k = jax.random.PRNGKey(SEED)
    for i in path:
        k = jax.random.fold_in(k, int(i))
    return k


def rank_fraction(S, cutoff: float = RANK_CUTOFF) -> float:
    """Fraction of eigenvalues of ``S`` above ``cutoff`` times the largest one."""
    ev = np.linalg.eigvalsh(np.asarray(S, float))
    top = ev.max()
    return float(np.mean(ev > cutoff * top)) if top > 0 else 0.0


def per_sequence_objective(task, data, S, lam) -> float:
    """Nuclear objective per training sequence (``sum loss + d lam Tr S``) / n."""
    return train.objective(task, data, S, lam, "nuclear") / data.X.shape[0]


def quiet(fn, *args, **kwargs):
    """Call ``fn``; turn convergence warnings into a flag printed with the progress."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args, **kwargs)
    notes = sorted({str(w.message).split(":")[0] for w in caught})
    return out, notes


CURVE_FIELDS = ("train_loss", "test_error", "rank_fraction", "mse", "converged")


def _zero_estimator(task, target, alpha, lam, penalty):
    """Metrics of S_hat = 0: the minimiser when the threshold lam / a_hat exceeds the whole
    spectrum (large lam, small alpha). ``se.solve`` raises there (its input side returns
    m = q = v = 0); train loss = E||Y - g(0)||^2, test error = E||g(h0) - g(0)||^2."""
    Q0 = float(target.Q0)
    return {
        "train_loss": se.test_error_from_overlaps(task, Q0, 0.0, 0.0, noisy=True),
        "test_error": se.test_error_from_overlaps(task, Q0, 0.0, 0.0),
        "rank_fraction": 0.0,
        "mse": Q0,
        "converged": True,
    }


def se_point(task, target, alpha, lam, penalty="nuclear", init=None):
    """One state-evolution point as a dict of CURVE_FIELDS, and the SEResult (or None)."""
    try:
        r, notes = quiet(se.solve, task, target, alpha, lam, penalty, init=init)
    except RuntimeError as err:
        numbers = re.findall(r"\(([-+0-9.e]+)\)", str(err))
        if "input side gave" in str(err) and numbers and all(float(x) == 0 for x in numbers):
            log(f"    [SE] alpha={alpha:g}, lam={lam:g}: S_hat = 0 (all eigenvalues thresholded)")
            return _zero_estimator(task, target, alpha, lam, penalty), None
        raise
    if notes or not r.converged:
        log(
            f"    [SE] alpha={alpha:g}, lam={lam:g}, {penalty}: {notes} (residual {r.residual:.1e})"
        )
    return {f: getattr(r, f) for f in CURVE_FIELDS}, r


def se_curve(task, target, alphas, lam, penalty="nuclear"):
    """Learning curve along ``alphas`` with warm starts; dict of arrays."""
    rows, init = [], None
    for a in alphas:
        row, r = se_point(task, target, a, lam, penalty, init=init)
        if r is not None and r.converged:
            init = r
        rows.append(row)
    out = {f: np.array([row[f] for row in rows]) for f in CURVE_FIELDS}
    out["alpha"] = np.asarray(alphas, float)
    return out


def save(path: Path, arrays: dict, verbose: bool = True) -> None:
    np.savez_compressed(path, **{k: np.asarray(v) for k, v in arrays.items()})
    if verbose:
        log(f"  wrote {path.name} ({path.stat().st_size / 1024:.1f} kB)")


def load(path: Path) -> dict:
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def scaled(cfg, name, task_name):
    return [a * ALPHA_SCALE[task_name] for a in cfg[name]]


# ----------------------------------------------------------------------------
# Part 1: state evolution
# ----------------------------------------------------------------------------


def _cached(arr: dict, group: str, xs, key: str = "alpha") -> bool:
    """Whether ``arr`` (a resumed partial run) already holds ``group`` on the grid ``xs``."""
    k = f"{group}.{key}"
    return k in arr and np.array_equal(arr[k], np.asarray(xs, float))


def part_theory(cfg, out: Path) -> None:
    target = targets.Wishart(KAPPA0)
    partial = out / "erm_theory.partial.npz"  # resume an interrupted run
    arr = load(partial) if partial.exists() else {}
    for noise_name, noise in (("clean", 0.0), ("noisy", NOISE)):
        for task_name, task in make_tasks(noise).items():
            alphas = scaled(cfg, "theory_alphas", task_name)
            lams = list(cfg["lams"][noise_name])
            if noise_name == "noisy" and cfg["adam_lam"] not in lams:
                lams.append(cfg["adam_lam"])
            for lam in lams:
                g = f"curve.{task_name}.{noise_name}.{lam:g}"
                if _cached(arr, g, alphas):
                    continue
                t0 = time.time()
                lc = se_curve(task, target, alphas, lam)
                arr.update({f"{g}.{f}": v for f, v in lc.items()})
                save(partial, arr, verbose=False)
                log(
                    f"  theory curve {task_name:8s} {noise_name:5s} lam={lam:<6g} "
                    f"{len(alphas)} points, {time.time() - t0:.0f} s"
                )

    # optimal lam against alpha (noisy labels), both penalties
    for task_name, task in make_tasks(NOISE).items():
        alphas = scaled(cfg, "cmp_alphas", task_name)
        for penalty in PENALTIES:
            g = f"opt.{task_name}.{penalty}"
            if _cached(arr, g, alphas):
                continue
            t0 = time.time()
            rows, init = [], None
            for a in alphas:
                lam, row, init = optimal_point(task, target, a, penalty, init)
                rows.append((lam, row["test_error"], row["rank_fraction"]))
            arr[f"{g}.alpha"] = np.asarray(alphas, float)
            for i, f in enumerate(("lam", "test_error", "rank_fraction")):
                arr[f"{g}.{f}"] = np.array([r[i] for r in rows])
            save(partial, arr, verbose=False)
            log(
                f"  optimal lam {task_name:8s} {penalty:9s} {len(alphas)} alphas, "
                f"{time.time() - t0:.0f} s"
            )

    # optimal lam against kappa0 at fixed alpha (seq2seq)
    task = make_tasks(NOISE)["seq2seq"]
    alpha = cfg["cmp_alpha_kappa0"]
    for penalty in PENALTIES:
        g = f"kappa0.{penalty}"
        if _cached(arr, g, cfg["cmp_kappa0s"], key="kappa0"):
            continue
        t0 = time.time()
        rows = []
        for k0 in cfg["cmp_kappa0s"]:
            lam, row, _ = optimal_point(task, targets.Wishart(k0), alpha, penalty)
            rows.append((lam, row["test_error"]))
        arr[f"{g}.kappa0"] = np.asarray(cfg["cmp_kappa0s"], float)
        arr[f"{g}.lam"] = np.array([r[0] for r in rows])
        arr[f"{g}.test_error"] = np.array([r[1] for r in rows])
        save(partial, arr, verbose=False)
        log(f"  optimal lam against kappa0 {penalty:9s} {time.time() - t0:.0f} s")

    # test error against lam at one alpha (seq2seq, noisy)
    t0 = time.time()
    lams = sorted(cfg["scan_lams_theory"], reverse=True)
    rows, init = [], None
    for lam in lams:
        row, r = se_point(task, target, cfg["scan_alpha"], lam, init=init)
        init = r if r is not None and r.converged else init
        rows.append(row)
    arr["scan.lam"] = np.array(lams[::-1])
    arr["scan.test_error"] = np.array([r["test_error"] for r in rows[::-1]])
    arr["scan.train_loss"] = np.array([r["train_loss"] for r in rows[::-1]])
    log(f"  lam scan at alpha = {cfg['scan_alpha']}: {time.time() - t0:.0f} s")
    save(out / "erm_theory.npz", arr)
    partial.unlink(missing_ok=True)


PENALTIES = ("nuclear", "frobenius")
LAM_BOUNDS = (1e-4, 10.0)  # search range of the optimal lam
LAM_XATOL = 0.15  # tolerance on log(lam): the test error is flat near its minimum


def optimal_point(task, target, alpha, penalty, init=None):
    """``lam`` minimising the SE test error (bounded Brent search on ``log lam``).

    Like :func:`attnlib.se.optimal_lambda`, but a ``lam`` large enough to make
    ``S_hat = 0`` is evaluated with :func:`_zero_estimator` instead of raising.
    Returns ``(lam, metrics dict, SEResult for warm starts)``.
    """
    state = {"init": init}
    cache = {}

    def objective(loglam):
        row, r = se_point(task, target, alpha, math.exp(loglam), penalty, init=state["init"])
        if r is not None and r.converged:
            state["init"] = r
        cache[loglam] = row
        return row["test_error"]

    res = scipy.optimize.minimize_scalar(
        objective,
        bounds=(math.log(LAM_BOUNDS[0]), math.log(LAM_BOUNDS[1])),
        method="bounded",
        options={"xatol": LAM_XATOL},
    )
    if res.x not in cache:
        objective(res.x)
    return math.exp(res.x), cache[res.x], state["init"]


# ----------------------------------------------------------------------------
# Part 2: convex solver on the learning-curve grid
# ----------------------------------------------------------------------------


def part_curves(cfg, out: Path) -> None:
    target = targets.Wishart(KAPPA0)
    d, seeds = cfg["d_convex"], cfg["seeds"]
    arr = {}
    for i_noise, (noise_name, noise) in enumerate((("clean", 0.0), ("noisy", NOISE))):
        for i_task, (task_name, task) in enumerate(make_tasks(noise).items()):
            alphas = scaled(cfg, "sim_alphas", task_name)
            lams = sorted(cfg["lams"][noise_name], reverse=True)  # warm start downwards
            shape = (len(lams), seeds, len(alphas))
            tr, te, rk = np.zeros(shape), np.zeros(shape), np.zeros(shape)
            for ia, alpha in enumerate(alphas):
                t0 = time.time()
                n = tasks.n_samples(alpha, d)
                for s in range(seeds):
                    k_s0, k_data, k_test = jax.random.split(key_for(1, i_noise, i_task, ia, s), 3)
                    S0 = target.sample(k_s0, d)
                    data = tasks.make_dataset(k_data, task, S0, n)
                    S = None
                    for il, lam in enumerate(lams):
                        r, notes = quiet(train.train_convex, task, data, lam, S_init=S, tol=1e-7)
                        if notes:
                            log(f"    [convex] {notes} (lam={lam:g}, residual {r.residual:.1e})")
                        S = r.S
                        tr[il, s, ia] = r.train_loss
                        te[il, s, ia] = train.test_error(k_test, task, S0, S, n_test=cfg["n_test"])
                        rk[il, s, ia] = rank_fraction(S, 1e-6)
                log(
                    f"  convex {task_name:8s} {noise_name:5s} alpha={alpha:<5g} n={n:5d} "
                    f"{time.time() - t0:.0f} s"
                )
            order = np.argsort(lams)
            g = f"{task_name}.{noise_name}"
            arr[f"{g}.alpha"] = np.array(alphas)
            arr[f"{g}.lam"] = np.array(lams)[order]
            arr[f"{g}.train_loss"] = tr[order]
            arr[f"{g}.test_error"] = te[order]
            arr[f"{g}.rank_fraction"] = rk[order]
    save(out / "erm_curves.npz", arr)


# ----------------------------------------------------------------------------
# Part 3: Adam on the factorised model, kappa = 1
# ----------------------------------------------------------------------------


def adam(task, data, p, lam, key, cfg, W_init=None):
    """Adam on W with weight decay lam_W = lam / sqrt(kappa); returns (TrainResult, notes)."""
    d = data.X.shape[2]
    lam_W = lam / math.sqrt(p / d)
    return quiet(
        train.train_factorized, key, task, data, p, lam_W, steps=cfg["adam_steps"], W_init=W_init
    )


def part_adam(cfg, out: Path) -> None:
    target = targets.Wishart(KAPPA0)
    d, seeds, lam = cfg["d_adam"], cfg["seeds"], cfg["adam_lam"]
    arr = {}
    for i_task, (task_name, task) in enumerate(make_tasks(NOISE).items()):
        alphas = scaled(cfg, "adam_alphas", task_name)
        shape = (seeds, len(alphas))
        tr, te, rk, steps, gap = (np.zeros(shape) for _ in range(5))
        for ia, alpha in enumerate(alphas):
            t0 = time.time()
            n = tasks.n_samples(alpha, d)
            for s in range(seeds):
                k_s0, k_data, k_test, k_init = jax.random.split(key_for(2, i_task, ia, s), 4)
                S0 = target.sample(k_s0, d)
                data = tasks.make_dataset(k_data, task, S0, n)
                r, notes = adam(task, data, d, lam, k_init, cfg)
                if notes:
                    log(f"    [adam] {notes} (residual {r.residual:.1e})")
                tr[s, ia] = r.train_loss
                te[s, ia] = train.test_error(k_test, task, S0, r.S, n_test=cfg["n_test"])
                rk[s, ia] = rank_fraction(r.S)
                steps[s, ia] = r.n_steps
                if s == 0:
                    # distance to the convex minimiser on the same data
                    c, _ = quiet(train.train_convex, task, data, lam, tol=1e-8)
                    gap[:, ia] = np.linalg.norm(r.S - c.S) / np.linalg.norm(c.S)
            log(
                f"  adam {task_name:8s} alpha={alpha:<5g} n={n:5d} d=p={d} "
                f"steps={int(steps[:, ia].max())} |S_adam - S_convex|/|S_convex|="
                f"{gap[0, ia]:.1e} {time.time() - t0:.0f} s"
            )
        g = task_name
        arr[f"{g}.alpha"] = np.array(alphas)
        arr[f"{g}.train_loss"] = tr
        arr[f"{g}.test_error"] = te
        arr[f"{g}.rank_fraction"] = rk
        arr[f"{g}.n_steps"] = steps
        arr[f"{g}.rel_dist_convex"] = gap[0]
    save(out / "erm_adam.npz", arr)


# ----------------------------------------------------------------------------
# Part 4: minimal width
# ----------------------------------------------------------------------------


def part_width(cfg, out: Path) -> None:
    target = targets.Wishart(KAPPA0)
    task = make_tasks(NOISE)["seq2seq"]
    d, seeds = cfg["d_width"], cfg["seeds"]
    alpha, lam = cfg["width_alpha"], cfg["width_lam"]
    kappas = cfg["width_kappas"]
    n = tasks.n_samples(alpha, d)
    shape = (seeds, len(kappas))
    obj, tr, te, rk = (np.zeros(shape) for _ in range(4))
    c_obj, c_tr, c_te, c_rk = (np.zeros(seeds) for _ in range(4))
    for s in range(seeds):
        t0 = time.time()
        k_s0, k_data, k_test, k_init = jax.random.split(key_for(3, s), 4)
        S0 = target.sample(k_s0, d)
        data = tasks.make_dataset(k_data, task, S0, n)
        c, _ = quiet(train.train_convex, task, data, lam, tol=1e-8)
        c_obj[s] = per_sequence_objective(task, data, c.S, lam)
        c_tr[s] = c.train_loss
        c_te[s] = train.test_error(k_test, task, S0, c.S, n_test=cfg["n_test"])
        c_rk[s] = rank_fraction(c.S, 1e-6)
        for ik, kappa in enumerate(kappas):
            p = max(1, int(round(kappa * d)))
            r, notes = adam(task, data, p, lam, jax.random.fold_in(k_init, ik), cfg)
            if notes:
                log(f"    [adam] {notes} (kappa={kappa}, residual {r.residual:.1e})")
            obj[s, ik] = per_sequence_objective(task, data, r.S, lam)
            tr[s, ik] = r.train_loss
            te[s, ik] = train.test_error(k_test, task, S0, r.S, n_test=cfg["n_test"])
            rk[s, ik] = rank_fraction(r.S)
        log(
            f"  width seed {s}: convex rank {c_rk[s]:.3f}, Adam objective gaps "
            f"{np.round(obj[s] - c_obj[s], 5).tolist()} {time.time() - t0:.0f} s"
        )
    arr = {
        "kappa": np.array(kappas),
        "p": np.array([max(1, int(round(k * d))) for k in kappas]),
        "objective": obj,
        "train_loss": tr,
        "test_error": te,
        "rank_fraction": rk,
        "convex.objective": c_obj,
        "convex.train_loss": c_tr,
        "convex.test_error": c_te,
        "convex.rank_fraction": c_rk,
    }
    save(out / "erm_width.npz", arr)


# ----------------------------------------------------------------------------
# Part 5: factorised (nuclear) vs direct (Frobenius) at their optimal lam
# ----------------------------------------------------------------------------


def _interp_lam(theory, group, x, key="alpha"):
    xs, lams = theory[f"{group}.{key}"], theory[f"{group}.lam"]
    return float(np.exp(np.interp(x, xs, np.log(lams))))


def _cmp_pair(task, target, d, alpha, lam_nuc, lam_fro, key, cfg):
    """Test errors of factorised Adam (nuclear, kappa = 1) and direct Adam (Frobenius)."""
    k_s0, k_data, k_test, k_init = jax.random.split(key, 4)
    S0 = target.sample(k_s0, d)
    data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(alpha, d))
    fac, n1 = adam(task, data, d, lam_nuc, k_init, cfg)
    dirc, n2 = quiet(train.train_direct, task, data, lam_fro, steps=cfg["adam_steps"])
    for note in n1 + n2:
        log(f"    [{note}]")
    e_fac = train.test_error(k_test, task, S0, fac.S, n_test=cfg["n_test"])
    e_dir = train.test_error(k_test, task, S0, dirc.S, n_test=cfg["n_test"])
    return e_fac, e_dir


def part_compare(cfg, out: Path) -> None:
    path = out / "erm_theory.npz"
    if not path.exists():
        raise SystemExit(f"{path} missing: run --part theory first")
    theory = load(path)
    d, seeds = cfg["d_cmp"], cfg["seeds"]
    arr = {}
    target = targets.Wishart(KAPPA0)
    for i_task, (task_name, task) in enumerate(make_tasks(NOISE).items()):
        alphas = scaled(cfg, "cmp_sim_alphas", task_name)
        e = np.zeros((2, seeds, len(alphas)))
        lams = np.zeros((2, len(alphas)))
        for ia, alpha in enumerate(alphas):
            t0 = time.time()
            lams[0, ia] = _interp_lam(theory, f"opt.{task_name}.nuclear", alpha)
            lams[1, ia] = _interp_lam(theory, f"opt.{task_name}.frobenius", alpha)
            for s in range(seeds):
                e[:, s, ia] = _cmp_pair(
                    task, target, d, alpha, *lams[:, ia], key_for(4, i_task, ia, s), cfg
                )
            log(
                f"  compare {task_name:8s} alpha={alpha:<5g} lam_opt nuc/fro = "
                f"{lams[0, ia]:.3g}/{lams[1, ia]:.3g}  e_test {e[0, :, ia].mean():.4f} / "
                f"{e[1, :, ia].mean():.4f} {time.time() - t0:.0f} s"
            )
        arr[f"alpha.{task_name}.alpha"] = np.array(alphas)
        arr[f"alpha.{task_name}.lam"] = lams
        arr[f"alpha.{task_name}.test_error"] = e

    task = make_tasks(NOISE)["seq2seq"]
    alpha = cfg["cmp_alpha_kappa0"]
    k0s = cfg["cmp_sim_kappa0s"]
    e = np.zeros((2, seeds, len(k0s)))
    for ik, k0 in enumerate(k0s):
        t0 = time.time()
        lam_n = _interp_lam(theory, "kappa0.nuclear", k0, key="kappa0")
        lam_f = _interp_lam(theory, "kappa0.frobenius", k0, key="kappa0")
        for s in range(seeds):
            e[:, s, ik] = _cmp_pair(
                task, targets.Wishart(k0), d, alpha, lam_n, lam_f, key_for(5, ik, s), cfg
            )
        log(
            f"  compare kappa0={k0:<5g} e_test {e[0, :, ik].mean():.4f} / "
            f"{e[1, :, ik].mean():.4f} {time.time() - t0:.0f} s"
        )
    arr["kappa0.kappa0"] = np.array(k0s)
    arr["kappa0.test_error"] = e

    # test error against lam at one alpha: convex solver, one data set per seed
    lams = sorted(cfg["scan_lams"], reverse=True)
    d, alpha = cfg["d_convex"], cfg["scan_alpha"]
    e = np.zeros((seeds, len(lams)))
    t0 = time.time()
    for s in range(seeds):
        k_s0, k_data, k_test = jax.random.split(key_for(6, s), 3)
        S0 = target.sample(k_s0, d)
        data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(alpha, d))
        S = None
        for il, lam in enumerate(lams):
            r, notes = quiet(train.train_convex, task, data, lam, S_init=S, tol=1e-7)
            S = r.S
            e[s, il] = train.test_error(k_test, task, S0, S, n_test=cfg["n_test"])
    log(f"  lam scan at alpha = {alpha}: {time.time() - t0:.0f} s")
    arr["scan.lam"] = np.array(lams)[::-1]
    arr["scan.test_error"] = e[:, ::-1]
    save(out / "erm_compare.npz", arr)


# ----------------------------------------------------------------------------
# Driver
# ----------------------------------------------------------------------------

PARTS = {
    "theory": part_theory,
    "curves": part_curves,
    "adam": part_adam,
    "width": part_width,
    "compare": part_compare,
}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["all", *PARTS], default="all")
    ap.add_argument("--quick", action="store_true", help="tiny sizes (smoke test)")
    ap.add_argument("--out", type=Path, default=HERE, help="output folder (default book/data)")
    args = ap.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    args.out.mkdir(parents=True, exist_ok=True)
    meta_path = args.out / "erm_meta.json"
    parts = list(PARTS) if args.part == "all" else [args.part]
    t_all = time.time()
    for name in parts:
        log(f"[{name}]")
        t0 = time.time()
        PARTS[name](cfg, args.out)
        # re-read: parts may run as separate processes
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
        meta.update(
            {
                "attnlib_version": attnlib.__version__,
                "seed": SEED,
                "kappa0": KAPPA0,
                "noise": NOISE,
                "noise_on": "logits",
                "rank_cutoff": RANK_CUTOFF,
                "quick": bool(args.quick),
                "config": cfg,
            }
        )
        meta.setdefault("runtime_s", {})[name] = round(time.time() - t0, 1)
        meta_path.write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
        log(f"[{name}] done in {time.time() - t0:.0f} s")
    log(f"all done in {time.time() - t_all:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
