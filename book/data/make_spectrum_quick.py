r"""Class mode for the spectrum lecture: its trained-matrix simulations at small ``d``, run live.

``ATTNLIB_QUICK=1`` makes the lecture call :func:`convex_runs`, :func:`spiked_runs` and
:func:`adam_run` instead of reading ``spectrum_convex.npz``, ``spectrum_spiked*.npz`` and
``spectrum_adam.npz`` (written by ``make_spectrum_data.py`` at ``d = 100`` to ``300``).
Each returns the structure the chapter builds from those files, at a dimension small
enough for the whole chapter to run in about a minute; the figures are the same with
larger finite-size effects. Nothing is written to disk.

``convex_point`` is a pure function of one point's parameters and seed returning a dict.
"""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path

import jax
import numpy as np

HERE = Path(__file__).resolve().parent
try:
    import attnlib
except ImportError:  # a checkout without `pip install -e .`: use the repository's copy
    sys.path.insert(0, str(HERE.parents[1]))
from attnlib import spectrum, targets, tasks, train  # noqa: E402

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

SEED = 404
DEC_FIELDS = (
    "over",
    "under",
    "approx",
    "mismatch",
    "e_test",
    "c_star",
    "kept_fraction",
    "kept_in_range",
)


def _train(task, target, alpha, lam, *, penalty, d, key):
    k_s0, k_data = jax.random.split(key)
    S0 = np.asarray(target.sample(k_s0, d))
    data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(alpha, d))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = train.train_convex(task, data, lam, penalty=penalty, tol=1e-6)
    return S0, data, res


def convex_point(
    task, target, *, penalty: str, alpha: float, lam: float, d: int, seed: int
) -> dict:
    """Proximal solver once: eigenvalues of ``S_hat`` and its error decomposition."""
    key = jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(SEED), int(1000 * alpha)), seed)
    S0, _, res = _train(task, target, alpha, lam, penalty=penalty, d=d, key=key)
    dec = spectrum.decompose_trained(task, res.S, S0)
    return {"eigs": np.linalg.eigvalsh(res.S), **{f: getattr(dec, f) for f in DEC_FIELDS}}


def convex_runs(task, kappa0: float, lam: float, d: int = 30, seeds: int = 2):
    """The chapter's grid of convex runs: ``(runs, d)`` as the chapter's ``load_runs``."""
    target = targets.Wishart(kappa0)
    grid = [("nuclear", a, lam) for a in (0.1, 0.2, 0.4, 0.8)]
    grid += [("frobenius", 0.4, lam)]
    grid += [("nuclear", 0.4, x) for x in (0.01, 1.0)]
    runs = []
    for penalty, alpha, lam_ in grid:
        pts = [
            convex_point(task, target, penalty=penalty, alpha=alpha, lam=lam_, d=d, seed=s)
            for s in range(seeds)
        ]
        runs.append(
            dict(
                penalty=penalty,
                alpha=alpha,
                lam=lam_,
                eigs=np.array([p["eigs"] for p in pts]),
                dec={f: np.array([p[f] for p in pts]) for f in DEC_FIELDS},
            )
        )
    return runs, d


def spiked_runs(task, kappa0: float, lam: float, spikes, d: int = 30, seeds: int = 1) -> dict:
    """Top eigenvalues of ``S_hat`` and squared overlaps with the target's top eigenvectors."""
    target = targets.Spiked(spikes=tuple(spikes), bulk=targets.Wishart(kappa0))
    alphas = [0.02, 0.04, 0.07, 0.12]
    k = len(spikes)
    top, ov = np.zeros((len(alphas), seeds, k)), np.zeros((len(alphas), seeds, k))
    for ia, alpha in enumerate(alphas):
        for s in range(seeds):
            key = jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(SEED + 2), ia), s)
            S0, _, res = _train(task, target, alpha, lam, penalty="nuclear", d=d, key=key)
            ev, U = np.linalg.eigh(res.S)
            _, V = np.linalg.eigh(S0)
            top[ia, s] = ev[::-1][:k]
            ov[ia, s] = [(U[:, -1 - j] @ V[:, -1 - j]) ** 2 for j in range(k)]
    return {"alpha": np.array(alphas), "top": top, "overlap2": ov, "d": d}


def adam_run(task, kappa0: float, lam: float, d: int = 30, kappa: float = 0.5) -> dict:
    """Adam on the factor ``W`` (``p = kappa d``) and the proximal solver on the same data."""
    alpha, p = 0.4, int(round(kappa * d))
    k_data, k_init = jax.random.split(jax.random.PRNGKey(SEED + 3))
    S0, data, conv = _train(
        task, targets.Wishart(kappa0), alpha, lam, penalty="nuclear", d=d, key=k_data
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = train.train_factorized(
            k_init,
            task,
            data,
            p,
            lam / math.sqrt(p / d),
            steps=2000,
            learning_rate=0.02,
            dtype=jax.numpy.float64,
        )
    W = np.asarray(res.W, float)
    return {
        "d": d,
        "p": p,
        "alpha": alpha,
        "sv": np.sort(np.linalg.svd(W / math.sqrt(d), compute_uv=False)),
        "eigs_convex": np.linalg.eigvalsh(conv.S),
        "rel_dist": float(np.linalg.norm(res.S - conv.S) / np.linalg.norm(conv.S)),
    }
