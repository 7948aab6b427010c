r"""Train loss (and test error, ``||S - S0||_F^2 / d``) at finite ``d``: the points where
the learning curves of ``book/02_erm_asymptotics.ipynb`` sit furthest from the state
evolution, at several ``d`` for an extrapolation in ``1/d``.

Run from ``book/``::

    python -m data.make_train_loss          # -> data/train_loss_fs.npz (about 10 CPU-minutes)
    python -m data.make_train_loss --quick  # small grid, prints the runs
    python -m data.make_train_loss --study linear  # one study, cached (run the rest later)

Three studies, each a pure function :func:`run_point` of ``(study, lam, d, seed)``:

- ``linear``: linear task ``T = 1``, label noise ``Delta = 0.25``, ``alpha = 0.1``
  (deep in the interpolating regime, ``alpha_interp(Delta) = 0.324``), penalties
  ``1e-3, 1e-2, 1e-1``. At the smallest penalties the stored learning curves at
  ``d = 60`` have a train loss 20-60 times the state evolution's.
- ``seq2seq``: softmax seq2seq ``T = 2``, noise-free labels, ``alpha = 0.45`` (about
  twice ``alpha_PR = 0.211``), penalties ``1e-3, 1e-2``: the train loss at ``1e-3`` is
  three times below the state evolution at ``d = 60``, the test error at ``1e-2`` 17 %
  below it.
- ``peak``: the linear task with noise at ``alpha = 0.335``, ``lam = 1e-3``, where the
  state-evolution test error peaks (no point of the learning-curve grid is there).

The convex solver (:func:`attnlib.train.train_convex`, tolerance ``1e-11``, at most
``MAX_ITER`` iterations, started from ``S = 0``) runs on the same data sets for every
penalty (keys depend on the study, ``d`` and the seed only). Every run also records the
fraction of eigenvalues of ``S_hat`` at zero (below ``1e-8`` times the largest). The
state-evolution value at each point is stored with the runs (:func:`se_references`; a
chapter in class mode runs the quick grid and reads them from the file). Finished runs
are cached (``CACHE``), so an interrupted run resumes.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import jax
import numpy as np

import attnlib
from attnlib import se, targets, tasks, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

HERE = Path(__file__).resolve().parent
OUT = HERE / "train_loss_fs.npz"
SEED = 2027
KAPPA0 = 0.5
TOL = 1e-11
MAX_ITER = 50000
# finished runs, one JSON line each: an interrupted run resumes (the points are pure functions)
CACHE_HOME = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
CACHE = CACHE_HOME / "attnlib" / "train_loss.jsonl"
N_TEST = 20000
STUDIES = {
    "linear": {"task": tasks.Linear(T=1, noise=0.25), "alpha": 0.1, "lams": (1e-3, 1e-2, 1e-1)},
    "seq2seq": {"task": tasks.Seq2Seq(T=2, noise=0.0), "alpha": 0.45, "lams": (1e-3, 1e-2)},
    "peak": {"task": tasks.Linear(T=1, noise=0.25), "alpha": 0.335, "lams": (1e-3,)},
}
FULL = {
    "linear": {20: 4, 30: 4, 40: 4, 60: 4},
    "seq2seq": {20: 4, 30: 4, 40: 4, 60: 3},
    "peak": {20: 4, 30: 4, 40: 4, 60: 3},
}
QUICK = {"linear": {12: 2, 16: 2}, "seq2seq": {12: 2, 16: 1}, "peak": {12: 2, 16: 1}}
FIELDS = ("train_loss", "test_error", "mse", "null_fraction", "converged", "seconds")
STUDY_ID = {name: i for i, name in enumerate(STUDIES)}


def dataset(study: str, d: int, seed: int):
    """``(task, S0, training set, test key)`` of data set ``seed`` at dimension ``d``."""
    if study not in STUDIES:
        raise ValueError(f"study must be one of {sorted(STUDIES)}, got {study!r}")
    spec = STUDIES[study]
    key = jax.random.PRNGKey(SEED)
    for part in (STUDY_ID[study], d, seed):
        key = jax.random.fold_in(key, part)
    k_s0, k_data, k_test = jax.random.split(key, 3)
    S0 = targets.Wishart(KAPPA0).sample(k_s0, d)
    return (
        spec["task"],
        S0,
        tasks.make_dataset(k_data, spec["task"], S0, tasks.n_samples(spec["alpha"], d)),
        k_test,
    )


def run_point(study: str, lam: float, d: int, seed: int) -> dict:
    """The convex solver on data set ``seed`` at dimension ``d``; a dict of FIELDS."""
    if study not in STUDIES:
        raise ValueError(f"study must be one of {sorted(STUDIES)}, got {study!r}")
    task, S0, data, k_test = dataset(study, d, seed)
    t0 = time.process_time()
    r = train.train_convex(task, data, lam, tol=TOL, max_iter=MAX_ITER)
    S = np.asarray(r.S)
    ev = np.linalg.eigvalsh(S)
    return {
        "train_loss": float(r.train_loss),
        "test_error": float(train.test_error(k_test, task, S0, r.S, n_test=N_TEST)),
        "mse": float(np.sum((S - np.asarray(S0)) ** 2) / d),
        "null_fraction": float(np.mean(ev <= 1e-8 * max(ev.max(), 1e-300))),
        "converged": float(r.residual <= TOL),
        "seconds": time.process_time() - t0,
    }


def _cached(study, lam, d, seed, use_cache=True) -> dict:
    key = f"{study} {lam:g} {d} {seed} {TOL:g} {MAX_ITER}"
    if use_cache and CACHE.exists():
        for line in CACHE.read_text().splitlines():
            entry = json.loads(line)
            if entry["key"] == key:
                return entry["row"]
    row = {"d": d, "seed": seed, "lam": lam, **run_point(study, lam, d, seed)}
    print(study, row, flush=True)
    if use_cache:
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        with CACHE.open("a") as f:
            f.write(json.dumps({"key": key, "row": row}) + "\n")
    return row


def se_point(study: str, lam: float) -> dict:
    spec = STUDIES[study]
    r = se.solve(spec["task"], targets.Wishart(KAPPA0), alpha=spec["alpha"], lam=lam)
    if not r.converged:
        raise RuntimeError(f"state evolution did not converge ({study}, lam = {lam})")
    return {f: float(getattr(r, f)) for f in ("train_loss", "test_error", "mse")}


def run(quick: bool = False, studies=tuple(STUDIES)) -> dict:
    """The runs of ``studies``; flat arrays keyed ``<study>.<field>`` (and ``.d``, ``.lam``)."""
    grid = QUICK if quick else FULL
    out = {}
    for study in studies:
        dims = grid[study]
        rows = []
        for d, n_seeds in dims.items():
            for seed in range(n_seeds):
                for lam in STUDIES[study]["lams"]:
                    rows.append(_cached(study, lam, d, seed, use_cache=not quick))
        for key in ("d", "seed", "lam", *FIELDS):
            out[f"{study}.{key}"] = np.array([r[key] for r in rows])
        out[f"{study}.alpha"] = np.array(STUDIES[study]["alpha"])
    return out


def se_references(studies=tuple(STUDIES)) -> dict:
    """The state evolution at every point, keyed ``<study>.se.<lam>.<field>``."""
    return {
        f"{study}.se.{lam:g}.{f}": np.array(v)
        for study in studies
        for lam in STUDIES[study]["lams"]
        for f, v in se_point(study, lam).items()
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small grid, nothing written")
    ap.add_argument("--study", choices=sorted(STUDIES), help="only run (and cache) one study")
    args = ap.parse_args(argv)
    studies = (args.study,) if args.study else tuple(STUDIES)
    out = run(quick=args.quick, studies=studies)
    if not (args.quick or args.study):
        out.update(se_references(studies))
        np.savez(OUT, **out)
        print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
