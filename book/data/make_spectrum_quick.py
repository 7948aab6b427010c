r"""Class mode for the spectrum lecture: its trained-matrix simulations at small ``d``, run live.

``ATTNLIB_QUICK=1`` makes the lecture call :func:`convex_runs`, :func:`spiked_runs` and
:func:`adam_run` instead of reading ``spectrum_convex.npz``, ``spectrum_spiked*.npz`` and
``spectrum_adam.npz`` (written by ``make_spectrum_data.py`` at ``d = 100`` to ``300``).
Each returns the structure the chapter builds from those files, at a dimension small
enough for the whole chapter to run in about a minute; the figures are the same with
larger finite-size effects. Nothing is written to disk.

``convex_point`` and ``spiked_point`` are pure functions of one point's parameters and
seed returning a dict (the task as its class name and fields, the target as its
parameters); :func:`convex_runs` and :func:`spiked_runs` declare their grids as
:class:`attnlib.sweep.Grid` objects run by ``C.Runner`` (in this process, not cached,
unless a runner is given). :func:`adam_run` is one run, no grid.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import warnings
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import numpy as np
from data import _common as C

import attnlib
from attnlib import spectrum, sweep, targets, tasks, train

HERE = Path(__file__).resolve().parent

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


def task_params(task) -> dict:
    """A task as the parameters of a grid point: its class name and its fields."""
    fields = [[f.name, getattr(task, f.name)] for f in dataclasses.fields(task)]
    return {"task": type(task).__name__, "task_fields": fields}


def _task(task: str, task_fields) -> tasks.Task:
    return getattr(tasks, task)(**dict(task_fields))


def convex_point(
    *, task: str, task_fields, kappa0: float, penalty: str, alpha: float, lam: float, d: int,
    seed: int,
) -> dict:  # fmt: skip
    """Proximal solver once: eigenvalues of ``S_hat`` and its error decomposition."""
    task_ = _task(task, task_fields)
    key = jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(SEED), int(1000 * alpha)), seed)
    S0, _, res = _train(task_, targets.Wishart(kappa0), alpha, lam, penalty=penalty, d=d, key=key)
    dec = spectrum.decompose_trained(task_, res.S, S0)
    return {"eigs": np.linalg.eigvalsh(res.S), **{f: getattr(dec, f) for f in DEC_FIELDS}}


def convex_runs(task, kappa0: float, lam: float, d: int = 30, seeds: int = 2, runner=None):
    """The chapter's grid of convex runs: ``(runs, d)`` as the chapter's ``load_runs``."""
    grid = [("nuclear", a, lam) for a in (0.1, 0.2, 0.4, 0.8)]
    grid += [("frobenius", 0.4, lam)]
    grid += [("nuclear", 0.4, x) for x in (0.01, 1.0)]
    common = task_params(task) | {"kappa0": kappa0, "d": d}
    points = [common | {"penalty": pen, "alpha": a, "lam": x} for pen, a, x in grid]
    t = (runner or C.Runner())(sweep.Grid(convex_point, points, seeds=seeds))
    runs = []
    for penalty, alpha, lam_ in grid:
        sel = t[(t.penalty == penalty) & (t.alpha == alpha) & (t.lam == lam_)].sort_values("seed")
        runs.append(
            dict(
                penalty=penalty,
                alpha=alpha,
                lam=lam_,
                eigs=np.array(list(sel["eigs"])),
                dec={f: np.array(list(sel[f])) for f in DEC_FIELDS},
            )
        )
    return runs, d


def spiked_point(
    *, task: str, task_fields, kappa0: float, spikes, lam: float, d: int, ia: int, alpha: float,
    seed: int,
) -> dict:  # fmt: skip
    """Top eigenvalues of ``S_hat`` and squared overlaps with the target's top eigenvectors."""
    target = targets.Spiked(spikes=tuple(spikes), bulk=targets.Wishart(kappa0))
    key = jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(SEED + 2), ia), seed)
    S0, _, res = _train(_task(task, task_fields), target, alpha, lam, penalty="nuclear", d=d,
                        key=key)  # fmt: skip
    ev, U = np.linalg.eigh(res.S)
    _, V = np.linalg.eigh(S0)
    k = len(spikes)
    return {"top": ev[::-1][:k], "overlap2": [(U[:, -1 - j] @ V[:, -1 - j]) ** 2 for j in range(k)]}


def spiked_runs(task, kappa0: float, lam: float, spikes, d: int = 30, seeds: int = 1,
                runner=None) -> dict:  # fmt: skip
    """Top eigenvalues of ``S_hat`` and squared overlaps with the target's top eigenvectors."""
    alphas = [0.02, 0.04, 0.07, 0.12]
    common = task_params(task) | {"kappa0": kappa0, "spikes": list(spikes), "lam": lam, "d": d}
    points = [common | {"ia": ia, "alpha": a} for ia, a in enumerate(alphas)]
    t = (runner or C.Runner())(sweep.Grid(spiked_point, points, seeds=seeds))
    axes = {"alpha": alphas, "seed": range(seeds)}
    top, ov = sweep.pivot(t, "top", axes), sweep.pivot(t, "overlap2", axes)
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
            max_iter=2000,
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
