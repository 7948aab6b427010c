r"""State evolution and trained spectra for the spectrum chapter (``book/07_spectrum.ipynb``).

Run from ``book/`` (``make data`` runs every script)::

    python -m data.make_spectrum_data                    # every part, on a local Dask cluster
    python -m data.make_spectrum_data --part convex      # one part
    python -m data.make_spectrum_data --quick --out DIR  # the quick grids, elsewhere

Every grid is an :class:`attnlib.sweep.Grid` over a point function below (cached on
disk, resumable); ``compute(part, quick=True)`` returns a part's arrays (the quick grid,
in this process) without writing. Parts and files (``book/data/``; ``spectrum_meta.json``:
parameters and run times; PRNG keys from ``SEED``):

- ``theory``  SE fixed points (:func:`attnlib.se.solve`) along ``alpha`` (both penalties)
  and along ``lam``, every field of :class:`attnlib.se.SEResult` (the chapter rebuilds
  them and calls :mod:`attnlib.spectrum`). -> ``spectrum_theory.json``
- ``convex``  the proximal solver on a grid of ``alpha`` and ``lam``, both penalties:
  eigenvalues of ``S_hat``, the finite-``d`` decomposition
  (:func:`attnlib.spectrum.decompose_trained`, :func:`attnlib.spectrum.kept_mass_in_range`).
  -> ``spectrum_convex.npz``
- ``spiked``, ``spiked_small``  the same for a spiked target (at ``d`` and ``d / 2``): top
  eigenvalues of ``S_hat`` and their eigenvectors' overlaps with the target's
  (:func:`attnlib.spectrum.top_overlaps`). -> ``spectrum_spiked.npz``, ``spectrum_spiked_small.npz``
- ``adam``  Adam on the factorised model: singular values of ``W``, eigenvalues of ``S``.
  -> ``spectrum_adam.npz``
- ``minilm``  per-head query-key spectra of a small pretrained transformer
  (``data/make_spectrum_minilm.py``, which this script runs as a part).
  -> ``spectrum_minilm.npz``
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import numpy as np
from data import _common as C
from data.make_spectrum_minilm import part_minilm  # the part "minilm", in its own file

import attnlib
from attnlib import spectrum, sweep, targets, tasks, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

SEED = 404

# --- Parameters (the chapter reads them back from spectrum_meta.json)

KAPPA0 = 0.2  # rank fraction of the Wishart target (its spectrum has a gap above 0)
NOISE = 0.25  # label-noise variance on the logits
LAM = 0.1  # penalty of the running example
SPIKES = (4.0, 7.0)  # spiked target: Spiked(SPIKES, bulk=Wishart(KAPPA0))

# fmt: off
FULL = {
    "theory_alphas": [0.005, 0.0065, 0.008, 0.01, 0.0125, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04,
                      0.05, 0.06, 0.07, 0.08, 0.1, 0.12, 0.15, 0.2, 0.3, 0.4, 0.6, 0.8, 1.0, 1.5],
    "lam_alpha": 0.4, "theory_lams": [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0],
    "d": 100, "seeds": 2, "sim_alphas": [0.1, 0.2, 0.4, 0.8], "frob_alphas": [0.1, 0.4, 0.8],
    "sim_lams": [0.01, 0.03, 0.3, 1.0],
    "d_spiked": 300, "spiked_alphas": [0.01, 0.02, 0.04, 0.07, 0.12], "spiked_seeds": 2,
    "adam_alpha": 0.4, "adam_kappa": 0.5, "adam_steps": 8000, "n_test": 10000,
}
QUICK = {
    **FULL, "theory_alphas": [0.1, 0.4], "theory_lams": [0.1, 0.5],
    "d": 30, "seeds": 2, "sim_alphas": [0.4], "frob_alphas": [0.4], "sim_lams": [0.5],
    "d_spiked": 30, "spiked_alphas": [0.1], "spiked_seeds": 1, "adam_steps": 500, "n_test": 1000,
}
# fmt: on


def config(quick: bool) -> dict:
    return QUICK if quick else FULL


def make_task() -> tasks.Task:
    return tasks.Seq2Seq(T=2, noise=NOISE)


def make_target(kind: str):
    if kind == "wishart":
        return targets.Wishart(KAPPA0)
    return targets.Spiked(spikes=SPIKES, bulk=targets.Wishart(KAPPA0))


# --- Point functions


def se_point(*, alpha, lam, penalty, init=None):
    """One SE fixed point (all fields of SEResult under ``result``), chained; in the zero
    phase without a result from ``se.solve``, ``result`` is ``None`` (left out of the file)."""
    r, w, zero = C.se_solve(make_task(), targets.Wishart(KAPPA0), alpha, lam, penalty, init)
    if r is None:
        C.log(f"  SE {penalty:9s} alpha={alpha:<5g} lam={lam:<6g}: S_hat = 0 (zero phase)")
        return {"result": None}, init
    flag = "" if r.converged else f" NOT CONVERGED (residual {r.residual:.1e})"
    C.log(f"  SE {penalty:9s} alpha={alpha:<5g} lam={lam:<6g} e_test={r.test_error:.4f} "
          f"rank={r.rank_fraction:.3f}{flag}")  # fmt: skip
    return {"result": C.se_dict(r), "converged": r.converged}, C.warm(r, w, zero, init)


DEC_FIELDS = ("over", "under", "approx", "mismatch", "e_test", "c_star", "mse", "kept_fraction",
              "e_test_mc", "e_test_mc_stderr", "kept_in_range")  # fmt: skip


def run_convex(task, target, alpha, lam, penalty, *, d, key, n_test):
    """Train once; return (S0, TrainResult, decomposition dict)."""
    k_s0, k_data, k_test = jax.random.split(key, 3)
    S0 = np.asarray(target.sample(k_s0, d))
    data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(alpha, d))
    res, notes = C.quiet(train.train_convex, task, data, lam, penalty=penalty, tol=1e-7)
    if notes:
        C.log(f"    [convex] {notes}")
    dec = spectrum.decompose_trained(task, res.S, S0, k_test, n_test=n_test)
    return S0, res, dec._asdict() | {"kept_in_range": spectrum.kept_mass_in_range(res.S, S0)}


def convex_point(*, penalty, alpha, lam, d, n_test, seed):
    """Eigenvalues of S_hat and the finite-d decomposition; the same (S0, data) for a
    given (alpha, seed) whatever the penalty or lam."""
    key = C.key_for(SEED, 1, int(round(1000 * alpha)), seed)
    _, res, dec = run_convex(
        make_task(), make_target("wishart"), alpha, lam, penalty, d=d, key=key, n_test=n_test
    )
    return {"eigs": np.linalg.eigvalsh(res.S), "dec": np.array([dec[f] for f in DEC_FIELDS])}


def spiked_point(*, d, key_base, ia, alpha, n_test, seed):
    """Top eigenvalues of S_hat for a spiked target, and their eigenvector overlaps."""
    k = len(SPIKES)
    key = C.key_for(SEED, key_base, ia, seed)
    S0, res, _ = run_convex(make_task(), make_target("spiked"), alpha, LAM, "nuclear", d=d,
                            key=key, n_test=n_test)  # fmt: skip
    t = spectrum.top_overlaps(res.S, S0, k)
    return {"top": t.eigs[::-1][: k + 2], "theta": t.theta, "overlap2": t.overlap2, "eigs": t.eigs}


def adam_point(*, d, alpha, kappa, steps):
    """Adam on the factorised model: singular values of W, eigenvalues of S (and convex)."""
    task, target = make_task(), make_target("wishart")
    p = int(round(kappa * d))
    k_s0, k_data, k_init = jax.random.split(C.key_for(SEED, 3), 3)
    S0 = np.asarray(target.sample(k_s0, d))
    data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(alpha, d))
    res, notes = C.quiet(train.train_factorized, k_init, task, data, p, lam=LAM, max_iter=steps,
                         learning_rate=0.02, decay=0.01, dtype=jax.numpy.float64)  # fmt: skip
    if notes:
        C.log(f"    [adam] {notes}")
    conv, _ = C.quiet(train.train_convex, task, data, LAM, tol=1e-8)
    sv = np.linalg.svd(np.asarray(res.W, float) / math.sqrt(d), compute_uv=False)
    gap = float(np.linalg.norm(res.S - conv.S) / np.linalg.norm(conv.S))
    C.log(f"  adam d={d} p={p} alpha={alpha} steps={res.n_iter} rel. dist. to convex {gap:.2e}")
    eigs = {"eigs_adam": np.linalg.eigvalsh(res.S), "eigs_convex": np.linalg.eigvalsh(conv.S)}
    return {"p": p, "sv": np.sort(sv), **eigs, "rel_dist": gap}


# --- Grids and parts


def grids_theory(cfg) -> tuple[sweep.Grid, sweep.Grid]:
    """SE along ``alpha`` (both penalties) and along ``lam`` (from large ``lam`` down)."""
    pens, lams = ["nuclear", "frobenius"], sorted(cfg["theory_lams"], reverse=True)
    along_alpha = sweep.product(penalty=pens, lam=LAM, alpha=cfg["theory_alphas"])
    along_lam = sweep.product(penalty="nuclear", alpha=cfg["lam_alpha"], lam=lams)
    return (sweep.Grid(se_point, along_alpha, chain="alpha"),
            sweep.Grid(se_point, along_lam, chain="lam"))  # fmt: skip


def convex_runs(cfg) -> list[tuple]:
    runs = [("nuclear", a, LAM) for a in cfg["sim_alphas"]]
    runs += [("frobenius", a, LAM) for a in cfg["frob_alphas"]]
    return runs + [("nuclear", cfg["lam_alpha"], lam) for lam in cfg["sim_lams"]]


def grid_convex(cfg) -> sweep.Grid:
    common = {"d": cfg["d"], "n_test": cfg["n_test"]}
    points = [
        {"penalty": pen, "alpha": a, "lam": lam, **common} for pen, a, lam in convex_runs(cfg)
    ]
    return sweep.Grid(convex_point, points, seeds=cfg["seeds"])


def grid_spiked(cfg, d: int, key_base: int) -> sweep.Grid:
    points = [{"d": d, "key_base": key_base, "ia": ia, "alpha": a, "n_test": cfg["n_test"]}
              for ia, a in enumerate(cfg["spiked_alphas"])]  # fmt: skip
    return sweep.Grid(spiked_point, points, seeds=cfg["spiked_seeds"])


def grid_adam(cfg) -> sweep.Grid:
    point = {"d": cfg["d"], "alpha": cfg["adam_alpha"], "kappa": cfg["adam_kappa"]}
    return sweep.Grid(adam_point, point | {"steps": cfg["adam_steps"]})


def _results(table) -> list:
    return [r for r in table["result"] if isinstance(r, dict)]


def arrays_theory(cfg, run) -> dict:
    g_alpha, g_lam = grids_theory(cfg)
    t = run(g_alpha)
    return {
        "alpha_nuclear": _results(t[t.penalty == "nuclear"]),
        "alpha_frobenius": _results(t[t.penalty == "frobenius"]),
        "lam_nuclear": sorted(_results(run(g_lam)), key=lambda r: r["lam"]),
    }


def arrays_convex(cfg, run) -> dict:
    t, arr, seeds = run(grid_convex(cfg)), {"d": cfg["d"]}, range(cfg["seeds"])
    for i, (penalty, alpha, lam) in enumerate(convex_runs(cfg)):
        sel = t[(t.penalty == penalty) & (t.alpha == alpha) & (t.lam == lam)]
        g = f"run{i}"
        arr[f"{g}.penalty"], arr[f"{g}.alpha"], arr[f"{g}.lam"] = penalty, alpha, lam
        arr[f"{g}.eigs"] = sweep.pivot(sel, "eigs", {"seed": seeds})
        arr[f"{g}.dec"] = sweep.pivot(sel, "dec", {"seed": seeds})
    arr["n_runs"] = len(convex_runs(cfg))
    arr["dec_fields"] = np.array(DEC_FIELDS)
    return arr


def arrays_spiked(cfg, run, small: bool = False) -> dict:
    d = cfg["d_spiked"] // 2 if small else cfg["d_spiked"]
    t = run(grid_spiked(cfg, d, 4 if small else 2))
    alphas = cfg["spiked_alphas"]
    axes = {"alpha": alphas, "seed": range(cfg["spiked_seeds"])}
    arr = {f: sweep.pivot(t, f, axes) for f in ("top", "overlap2", "theta")}
    eigs = sweep.pivot(t, "eigs", axes)[:, 0]  # seed 0 of every alpha
    return {"alpha": alphas, **arr, "d": d, "eigs": eigs}


def arrays_adam(cfg, run) -> dict:
    row = run(grid_adam(cfg)).iloc[0]
    out = {"d": cfg["d"], "p": int(row["p"]), "alpha": cfg["adam_alpha"]}
    return out | {k: row[k] for k in ("sv", "eigs_adam", "eigs_convex", "rel_dist")}


ARRAYS = {"theory": arrays_theory, "convex": arrays_convex, "spiked": arrays_spiked,
          "spiked_small": lambda cfg, run: arrays_spiked(cfg, run, small=True),
          "adam": arrays_adam}  # fmt: skip
FILES = {"convex": "spectrum_convex.npz", "spiked": "spectrum_spiked.npz",
         "spiked_small": "spectrum_spiked_small.npz", "adam": "spectrum_adam.npz"}  # fmt: skip


def compute(part: str, quick: bool = True, runner=None) -> dict:
    """The arrays of one part (the quick grids by default), computed without writing."""
    return ARRAYS[part](config(quick), runner or C.Runner())


def _part(name):
    def part(quick, out, runner):
        arrays = compute(name, quick, runner)
        if name == "theory":
            path = Path(out) / "spectrum_theory.json"
            C.save_json(path, arrays, indent=1)
            C.log(f"  wrote {path.name} ({path.stat().st_size / 1024:.1f} kB)")
        else:
            C.save_npz(Path(out) / FILES[name], arrays)

    return part


PARTS = {name: _part(name) for name in ARRAYS} | {"minilm": part_minilm}


def meta_update(args, name, seconds, info=None) -> None:
    updates = {
        "kappa0": KAPPA0,
        "noise": NOISE,
        "lam": LAM,
        "spikes": list(SPIKES),
        "seed": SEED,
        "config": config(args.quick),
        "attnlib": attnlib.__version__,
    }
    C.update_meta(args.out / "spectrum_meta.json", updates, "seconds", name, seconds)


def main(argv=None) -> None:
    args = C.parser(__doc__, PARTS).parse_args(argv)
    C.run_parts(args, PARTS, meta_update)


if __name__ == "__main__":
    from data import make_spectrum_data  # the importable module: workers load it by name

    make_spectrum_data.main()
