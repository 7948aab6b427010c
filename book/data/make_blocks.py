r"""Block targets for the spectrum lecture: strong directions of finite mass, one block at a time.

Run from ``book/``::

    python -m data.make_blocks                # -> data/blocks_theory.json, data/blocks_sims.npz
    python -m data.make_blocks --part sims    # theory | sims
    python -m data.make_blocks --quick --serial --out DIR   # small d, six SE points

The target (:func:`make_target`) has a null space of mass ``1 - 3 * BLOCK_MASS`` and three
blocks of ``BLOCK_MASS * d`` equal eigenvalues ``theta_k = a * (1, 2, 4)``, with ``a``
fixed by ``Q0 = Tr(S0^2)/d = 1``. Unlike a spike, each block carries a finite fraction of
``Q0``: ``theta_k^2 * BLOCK_MASS``.

Recovery of block ``k`` by a learned ``S_hat`` (eigenvectors ``u_i``, projector ``P_k`` on
the block):

    r_k = (1 / (BLOCK_MASS d)) * sum_{i kept} ||P_k u_i||^2      (finite d)
    r_k = int_{x > tau/c} rho_R(x) O(x, theta_k) dx               (limit)

with ``O`` the eigenvector-overlap density of :func:`attnlib.spectrum.overlap_density`.
The under-fitting part of the mse is then exactly ``sum_k theta_k^2 BLOCK_MASS (1 - r_k)``.

:func:`point` (the convex solver on one data set) and :func:`theory_point` (the state
evolution at one ``alpha``, warm-started along ``alpha``) are pure functions of one point's
parameters (and seed); :func:`grids` declares them as :class:`attnlib.sweep.Grid` objects
(cached on disk). ``run(quick=True)`` gives the simulations' arrays in this process (what
ATTNLIB_QUICK=1 runs live). A point that fails (the solver or the SE not converged) stops
the script, as before.
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
    import attnlib
from data import _common as C  # noqa: E402

from attnlib import rmt, se, spectrum, sweep, targets, tasks, train  # noqa: E402

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

SEED = 411
NOISE = 0.25  # label-noise variance on the logits (as in the rest of the spectrum lecture)
LAM = 0.05  # nuclear penalty
BLOCK_MASS = 0.1  # fraction of the spectrum in each block
BLOCK_RATIOS = (1.0, 2.0, 4.0)

# fmt: off
FULL = {
    "theory_alphas": [float(a) for a in np.geomspace(0.02, 3.0, 41)],
    "sim_alphas": [0.05, 0.1, 0.2, 0.4, 0.8, 1.6],
    "d": 80,
    "seeds": 3,
    "n_test": 10000,
}
QUICK = {
    **FULL,
    "theory_alphas": FULL["theory_alphas"][:6],  # the first points of the chain
    "sim_alphas": [0.1, 0.4, 1.6],
    "d": 30,
    "seeds": 2,
    "n_test": 2000,
}
# fmt: on


def block_values() -> np.ndarray:
    """The three block eigenvalues ``theta_k``, scaled so that ``Q0 = 1``."""
    r = np.asarray(BLOCK_RATIOS)
    return r / math.sqrt(BLOCK_MASS * np.sum(r**2))


def make_target() -> targets.Explicit:
    """Ten equal-mass atoms: seven at zero and the three block eigenvalues."""
    n_zero = int(round((1 - len(BLOCK_RATIOS) * BLOCK_MASS) / BLOCK_MASS))
    return targets.Explicit(tuple([0.0] * n_zero + [float(t) for t in block_values()]))


def make_task() -> tasks.Task:
    return tasks.Seq2Seq(T=2, noise=NOISE)


def recovered_theory(se_result, n_nodes: int = 400) -> np.ndarray:
    """``r_k``, the limiting fraction of block ``k`` in the kept directions of ``S_hat``."""
    target = make_target()
    thr = se_result.tau / se_result.c
    ds = rmt.deformed_spectrum(target, se_result.Delta_eff, n_nodes, breakpoints=(thr,))
    kept = ds.x > thr
    out = []
    for theta in block_values():
        o = spectrum.overlap_density(target, se_result.Delta_eff, ds.x[kept], theta)
        out.append(float(np.sum(ds.w[kept] * o)))
    return np.array(out)


def recovered_trained(S_hat, S0, zero_tol: float = 1e-8) -> np.ndarray:
    """``r_k`` of a trained matrix: kept mass of each block's eigenspace, per block size."""
    s, U = np.linalg.eigh(np.asarray(S_hat, float))
    l0, V = np.linalg.eigh(np.asarray(S0, float))
    kept = s > zero_tol * max(np.abs(s).max(), 1e-300)
    out = []
    for theta in block_values():
        block = np.abs(l0 - theta) < 1e-6 * theta
        overlap2 = (V[:, block].T @ U[:, kept]) ** 2
        out.append(float(overlap2.sum() / block.sum()))
    return np.array(out)


def point(alpha: float, seed: int, d: int, n_test: int = 10000) -> dict:
    """Convex solver (nuclear, ``LAM``) on one data set; its recovery and test error."""
    task, target = make_task(), make_target()
    key = jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(SEED), d), seed)
    k_s0, k_data, k_test = jax.random.split(jax.random.fold_in(key, int(round(1e4 * alpha))), 3)
    S0 = np.asarray(target.sample(k_s0, d))
    data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(alpha, d))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = train.train_convex(task, data, LAM, tol=1e-7)
    if not res.converged:
        raise RuntimeError(f"train_convex did not converge (residual {res.residual:.1e})")
    dec = spectrum.decompose_trained(task, res.S, S0, k_test, n_test=n_test)
    r = recovered_trained(res.S, S0)
    return {
        "alpha": alpha,
        "seed": seed,
        "d": d,
        "e_test": dec.e_test,
        "e_test_mc": dec.e_test_mc,
        "e_test_mc_stderr": dec.e_test_mc_stderr,
        "train_loss": res.train_loss,
        "mse_under": dec.mse_under,
        "kept_fraction": dec.kept_fraction,
        **{f"r{k}": float(v) for k, v in enumerate(r)},
    }


def theory_point(alpha: float, init=None) -> tuple[dict, object]:
    """State evolution at ``alpha`` (warm start ``init``), with ``r_k``; and its warm start."""
    target = make_target()
    r, warm = se.solve(make_task(), target, alpha, LAM, init=init, return_warm=True)
    if not r.converged:
        raise RuntimeError(f"SE did not converge at alpha={alpha} (residual {r.residual:.1e})")
    row = C.se_dict(r)
    row["recovered"] = recovered_theory(r).tolist()
    row["support"] = [list(iv) for iv in rmt.support(target, r.Delta_eff)]
    return row, warm


def grids(cfg: dict) -> dict:
    sims = {"alpha": cfg["sim_alphas"], "d": cfg["d"], "n_test": cfg["n_test"]}
    return {
        "theory": sweep.Grid(theory_point, {"alpha": cfg["theory_alphas"]}, chain="alpha"),
        "sims": sweep.Grid(point, sims, seeds=cfg["seeds"]),  # alpha, then seed
    }


def theory(alphas, runner=None) -> list[dict]:
    """State evolution along ``alphas`` (warm-started), with ``r_k`` at every point."""
    return C.records((runner or C.Runner())(grids({**FULL, "theory_alphas": alphas})["theory"]))


def run(quick: bool = False, runner=None) -> dict:
    """Every simulation of the grid: a dict of arrays with one entry per (alpha, seed)."""
    rows = C.records((runner or C.Runner())(grids(QUICK if quick else FULL)["sims"]))
    keys = ["alpha", "seed", "d"] + [
        k for k in rows[0] if k not in ("alpha", "seed", "d", "n_test")
    ]
    return {k: np.array([row[k] for row in rows]) for k in keys}


def _theory_part(quick, out, runner) -> None:
    th = theory((QUICK if quick else FULL)["theory_alphas"], runner)
    C.save_json(out / "blocks_theory.json", th, indent=1)


def _sims_part(quick, out, runner) -> None:
    C.save_npz(out / "blocks_sims.npz", run(quick, runner))


PARTS = {"theory": _theory_part, "sims": _sims_part}


def main(argv=None) -> None:
    args = C.parser(__doc__, PARTS).parse_args(argv)
    C.run_parts(args, PARTS, lambda *a: None)


if __name__ == "__main__":
    from data import make_blocks  # the importable module: workers load its functions by name

    make_blocks.main()
