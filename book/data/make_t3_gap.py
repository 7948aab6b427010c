r"""The ``T = 3`` gap (``book/methods_finite_size.ipynb``): convex-solver simulations at
several ``d``, extrapolated in ``1/d``, against the state evolution at a stated accuracy.

Run from ``book/``::

    python -m data.make_t3_gap --serial               # both parts -> data/t3_gap.npz
    python -m data.make_t3_gap --serial --part sims   # only the simulations (cached)
    python -m data.make_t3_gap --quick --serial --out DIR

Setting (a user's, issue 26): softmax seq2seq ``T = 3``, label noise ``Delta = 0.1`` on
the logits, Wishart target ``kappa0 = 0.3``, nuclear + PSD penalty ``lam = 0.01``,
``alpha = 0.3``. With the default ``n_qmc = 8192`` the state evolution's mse moves by up
to 8 % between QMC seeds, and simulations at ``d = 60`` and ``100`` sat 4-8 % above it.

Parts (one file, ``t3_gap.npz``; keys prefixed ``theory.`` and ``sims.``):

- ``theory``: :func:`attnlib.se.solve` at ``n_qmc`` in ``qmc_levels`` for the QMC seeds
  ``0 .. se_seeds - 1`` (independent scramblings, each solved to its own fixed point,
  cold). The spread over seeds is the error of one solve (what
  :func:`attnlib.se.solve_accurate` measures; its ``rtol = 1e-3`` is met where the
  spread is below it); the mean over seeds at the largest level is the reference, its
  error the standard error over the seeds. Arrays ``(level, seed)``: ``train_loss``,
  ``test_error``, ``mse``, ``objective``, ``m``, ``q``, ``v``, ``integration_error``,
  ``converged``, ``cpu_seconds``; ``theory.n_qmc`` ``(level,)``.
- ``sims``: :func:`attnlib.train.train_convex` (FISTA on ``S``, from ``S = 0``,
  tolerance ``TOL``) on data set ``seed`` at dimension ``d`` (:func:`sim_point`); data
  set 0 at each ``d`` is then restarted from the answer for ``EXTRA_STEPS`` more
  iterations (no stopping rule): the change of the objective and of the metrics under
  them says whether the solver had converged (NaN for the other data sets). CPU time:
  about 100 iterations a run, ``O(alpha T^2 d^4)``; measured on the loaded two-core
  machine, 8 s at ``d = 80``, about 5 CPU-minutes for the grid (23 minutes of wall
  time at a load of 15). Flat arrays over the runs: ``d``, ``seed``, ``train_loss``,
  ``test_error`` (noise-free, ``N_TEST`` fresh sequences), ``test_stderr``, ``mse``
  (``||S - S0||_F^2 / d``), ``objective`` (per sequence), ``m``, ``q``, ``Q0``,
  ``n_steps``, ``residual``, ``d_objective`` / ``d_train`` / ``d_test`` / ``d_mse``
  (relative changes under the restart), ``cpu_seconds``.

Point functions are pure functions of one point's parameters (and seed) returning a
dict of numbers; grids are :class:`attnlib.sweep.Grid` objects (cached on disk).
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import numpy as np
from data import _common as C

import attnlib
from attnlib import se, sweep, targets, tasks, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

SEED = 2609
T = 3
NOISE = 0.1
KAPPA0 = 0.3
LAM = 0.01
ALPHA = 0.3
TOL = 1e-10  # the solver's tolerance (relative gradient mapping)
EXTRA_STEPS = 100  # the restart that checks convergence (data set 0 at each d)
N_TEST = 20000

FULL = {
    "qmc_levels": [8192, 32768, 131072, 524288],
    "se_seeds": 4,
    "seeds": {40: 24, 60: 16, 80: 10, 100: 6, 120: 3},
}
QUICK = {"qmc_levels": [4096, 8192], "se_seeds": 2, "seeds": {16: 3, 24: 2}}
SE_FIELDS = ("train_loss", "test_error", "mse", "objective", "m", "q", "v",
             "integration_error", "converged")  # fmt: skip
SIM_FIELDS = ("train_loss", "test_error", "test_stderr", "mse", "objective", "m", "q", "Q0",
              "n_steps", "residual", "d_objective", "d_train", "d_test", "d_mse",
              "cpu_seconds")  # fmt: skip


def task() -> tasks.Task:
    return tasks.Seq2Seq(T=T, noise=NOISE)


def target() -> targets.Target:
    return targets.Wishart(KAPPA0)


# ----------------------------------------------------------------------------
# Theory
# ----------------------------------------------------------------------------


def se_point(*, n_qmc: int, seed: int) -> dict:
    """The state evolution with ``n_qmc`` QMC points of scrambling ``seed`` (cold start),
    as it was when this study was made: without the Newton correction (``refine=1``) and
    with the Stein form of ``m_hat`` (``m_hat="stein"``, :class:`attnlib.se.SESettings`).
    It measures that plain solve's convergence in ``n_qmc``; :mod:`data.make_se_default`
    has the default solve at this point."""
    c0 = time.process_time()
    r, notes = C.quiet(
        se.solve, task(), target(), ALPHA, LAM, n_qmc=n_qmc, seed=seed, refine=1, m_hat="stein"
    )
    if notes:
        C.log(f"    [SE] n_qmc={n_qmc}, seed={seed}: {notes}")
    row = {f: float(getattr(r, f)) for f in SE_FIELDS}
    row["cpu_seconds"] = time.process_time() - c0
    return row


def grid_theory(cfg) -> sweep.Grid:
    return sweep.Grid(se_point, {"n_qmc": cfg["qmc_levels"]}, seeds=cfg["se_seeds"])


# ----------------------------------------------------------------------------
# Simulations
# ----------------------------------------------------------------------------


def problem(d: int, seed: int):
    """``(S0, training set, test key)`` of data set ``seed`` at dimension ``d``."""
    k_s0, k_data, k_test = jax.random.split(C.key_for(SEED, d, seed), 3)
    S0 = np.asarray(target().sample(k_s0, d))
    data = tasks.make_dataset(k_data, task(), S0, tasks.n_samples(ALPHA, d))
    return S0, data, k_test


def _metrics(S, S0, data, k_test) -> dict:
    te = train.test_error_stats(k_test, task(), S0, S, n_test=N_TEST)
    ov = train.overlaps(S, S0)
    n = data.X.shape[0]
    return {
        "objective": float(train.objective(task(), data, S, LAM)) / n,
        "test_error": te.mean,
        "test_stderr": te.stderr,
        "mse": train.mse(S, S0),
        "m": ov.m,
        "q": ov.q,
        "Q0": ov.Q0,
    }


def _restarted(S, S0, data, k_test) -> dict:
    """The metrics after ``EXTRA_STEPS`` more iterations from ``S``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tol = 0: never converged by its own rule
        r = train.train_convex(task(), data, LAM, tol=0.0, max_iter=EXTRA_STEPS, S_init=S)
    return {"train_loss": float(r.train_loss), **_metrics(r.S, S0, data, k_test)}


def sim_point(*, d: int, seed: int) -> dict:
    """The convex solver on data set ``seed`` at ``d``, and its convergence check."""
    S0, data, k_test = problem(d, seed)
    c0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence is recorded, not warned about
        r = train.train_convex(task(), data, LAM, tol=TOL, max_iter=20000)
    row = {"train_loss": float(r.train_loss), **_metrics(r.S, S0, data, k_test)}
    row.update(n_steps=float(r.n_iter), residual=float(r.residual))
    ref = _restarted(r.S, S0, data, k_test) if seed == 0 else None
    for key, f in (("d_objective", "objective"), ("d_train", "train_loss"),
                   ("d_test", "test_error"), ("d_mse", "mse")):  # fmt: skip
        row[key] = abs(row[f] - ref[f]) / abs(ref[f]) if ref else float("nan")
    row["cpu_seconds"] = time.process_time() - c0
    row["converged"] = bool(r.converged)
    return row


def grids_sims(cfg) -> list[sweep.Grid]:
    """One grid per ``d`` (its own number of data sets), cheapest first."""
    return [sweep.Grid(sim_point, {"d": d}, seeds=n) for d, n in sorted(cfg["seeds"].items())]


# ----------------------------------------------------------------------------
# Assembling the file
# ----------------------------------------------------------------------------


def arrays_theory(cfg, run) -> dict:
    t = run(grid_theory(cfg))
    axes = {"n_qmc": cfg["qmc_levels"], "seed": range(cfg["se_seeds"])}
    out = {"theory.n_qmc": np.array(cfg["qmc_levels"])}
    for f in (*SE_FIELDS, "cpu_seconds"):
        out[f"theory.{f}"] = sweep.pivot(t, f, axes)  # (level, seed)
    return out


def arrays_sims(cfg, run) -> dict:
    rows = []
    for grid in grids_sims(cfg):
        t = run(grid)
        d = grid.points[0]["d"]
        seeds = range(cfg["seeds"][d])
        vals = {f: sweep.pivot(t, f, {"d": [d], "seed": seeds})[0] for f in SIM_FIELDS}
        rows.append({"d": np.full(len(seeds), d), "seed": np.array(seeds), **vals})
    return {f"sims.{k}": np.concatenate([r[k] for r in rows]) for k in rows[0]}


def params() -> dict:
    return {"T": T, "noise": NOISE, "kappa0": KAPPA0, "lam": LAM, "alpha": ALPHA,
            "tol": TOL, "extra_steps": EXTRA_STEPS, "n_test": N_TEST, "seed": SEED}  # fmt: skip


BUILDERS = {"theory": arrays_theory, "sims": arrays_sims}
OUT = "t3_gap.npz"


def compute(part: str, quick: bool = False, runner=None) -> dict:
    """The arrays of one part (in this process, nothing written)."""
    return BUILDERS[part](QUICK if quick else FULL, runner or C.Runner())


def _write_part(part: str):
    """Part ``part`` replaces its own keys in ``t3_gap.npz`` and keeps the other part's."""

    def run(quick, out, runner):
        path = out / OUT
        old = C.load_npz(path) if path.exists() else {}
        kept = {k: v for k, v in old.items() if not k.startswith(f"{part}.")}
        new = compute(part, quick, runner)
        C.save_npz(path, {**kept, **new, **{f"params.{k}": v for k, v in params().items()}})

    return run


def main(argv=None) -> None:
    args = C.parser(__doc__, BUILDERS).parse_args(argv)
    meta = C.meta_recorder("t3_gap_meta.json", params(), FULL, QUICK)
    C.run_parts(args, {p: _write_part(p) for p in BUILDERS}, meta)


if __name__ == "__main__":
    main()
