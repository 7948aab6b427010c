r"""Checks behind the finite-size study (``book/methods_finite_size.ipynb``): is each side right?

Run from ``book/``::

    python -m data.make_finite_size_checks           # -> data/finite_size_checks.json
    python -m data.make_finite_size_checks --quick --serial --out DIR   # small d, fewer QMC

At the point of :mod:`data.make_finite_size` (seq2seq ``T = 2``, Wishart ``kappa0 = 1/2``,
``Delta = 0.25`` on the logits, ``alpha = 0.3``, ``lam = 1e-3``) it measures:

- ``solver``: is the convex solver's answer the minimiser? On the study's data sets
  (:func:`solver_check`, a pure function of ``d`` and the seed) the solver is re-run
  with a tolerance ``1e-11`` instead of ``1e-7``, from ``S_init = 3 I`` and from a
  random Wishart matrix, and Adam on the factor ``W`` (``p = d``, float64) is trained;
  each answer's objective, train loss, test error (same test sequences for all) and
  relative distance to the ``1e-11`` solution are recorded, together with the test
  error from the Gaussian formula at the trained overlaps ``(Q0, m, q)``
  (:func:`attnlib.se.test_error_from_overlaps`), which has no Monte Carlo error.
- ``prox``: does the non-convex output channel matter? At the state-evolution fixed
  point (:func:`prox_check`) the proximal problems of the QMC points are re-solved
  from eight starts (omega, the label-consistent point and six shifted ones) and the
  number that find a lower minimum is counted; ``a_hat`` from the pointwise
  derivative ``E[-dg/domega]`` (what the engine uses, blind to jumps of the prox) is
  compared with its Stein form ``E[-g * score]`` (exact when the prox jumps).

Both are :class:`attnlib.sweep.Grid` objects (:func:`grids`: the seeds of the solver
check, the one QMC size of the prox check, each with the study's constants,
:func:`study`), cached on disk; ``seconds`` in the file is
the wall time of the run that wrote it. The prox check takes the engine's pairs and cold
prox points from :mod:`attnlib.se.output` (``pairs``, ``cold_prox``; until issue 27 the
private ``_pairs`` and ``_solve_prox``, which had been renamed under the script).
"""

from __future__ import annotations

import json
import math
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(HERE.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from data import _common as C  # noqa: E402
from data import make_finite_size as FS  # noqa: E402

import attnlib  # noqa: E402
from attnlib import channels, se, sweep, targets, tasks, train  # noqa: E402
from attnlib.se import output as se_output  # noqa: E402

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

FILE = "finite_size_checks.json"
FULL = {"solver": {"d": 40, "seeds": (0, 1, 2)}, "n_qmc": 32768}
QUICK = {"solver": {"d": 16, "seeds": (0,)}, "n_qmc": 4096}
ADAM_STEPS = 20000
N_QMC_TEST = 65536  # QMC points of the Gaussian test-error formula


def _problem(d, seed):
    """The study's target, data set and test key for ``(d, seed)``, as in ``run_point``."""
    task = tasks.Seq2Seq(T=2, noise=FS.NOISE)
    key = jax.random.fold_in(jax.random.fold_in(jax.random.PRNGKey(FS.SEED), d), seed)
    k_s0, k_data, k_test = jax.random.split(key, 3)
    S0 = np.asarray(targets.Wishart(FS.KAPPA0).sample(k_s0, d))
    data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(FS.ALPHA, d))
    return task, S0, data, k_test


def _solutions(task, data, d, seed) -> dict:
    """The learned ``S`` of every variant of the solver (and Adam on ``W``)."""
    lam = FS.LAM
    G = np.asarray(jax.random.normal(jax.random.PRNGKey(1000 + seed), (d, d)))
    runs = {
        "convex, tol 1e-7": dict(tol=1e-7),
        "convex, tol 1e-11": dict(tol=1e-11, max_iter=200000),
        "convex, S_init = 3 I": dict(tol=1e-9, S_init=3.0 * np.eye(d)),
        "convex, S_init = Wishart": dict(tol=1e-9, S_init=5.0 * G @ G.T / d),
    }
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence is recorded, not warned about
        for name, kw in runs.items():
            out[name] = train.train_convex(task, data, lam, **{"max_iter": 20000, **kw})
        key = jax.random.PRNGKey(2000 + seed)
        out["Adam on W"] = train.train_factorized(
            key, task, data, d, lam, max_iter=ADAM_STEPS, dtype=jnp.float64, tol=1e-13
        )
    return out


def solver_check(d: int, seed: int) -> dict:
    """Every solver variant on the data set ``(d, seed)``: ``{variant: metrics}``."""
    task, S0, data, k_test = _problem(d, seed)
    sols = _solutions(task, data, d, seed)
    ref = sols["convex, tol 1e-11"].S
    n = data.X.shape[0]
    rows = {}
    for name, r in sols.items():
        ov = train.overlaps(r.S, S0)
        rows[name] = {
            "objective": float(train.objective(task, data, r.S, FS.LAM)) / n,
            "train_loss": float(r.train_loss),
            "test_error": train.test_error_stats(k_test, task, S0, r.S, n_test=FS.N_TEST).mean,
            "test_error_gauss": se.test_error_from_overlaps(
                task, ov.Q0, ov.m, ov.q, n_qmc=N_QMC_TEST
            ),
            "rel_dist": float(np.linalg.norm(r.S - ref) / np.linalg.norm(ref)),
            "converged": bool(r.converged),
            "n_steps": int(r.n_iter),
        }
    return rows


def _prox_arrays(task, z, fixed_point):
    """Labels, omega, V, the engine's cold prox points and their objectives at ``x``."""
    m, q, v, Q0 = fixed_point
    R, N, _ = z.shape
    zf = z.reshape(R * N, -1)
    x = jnp.asarray([m, q, v])
    Y, omega, lab, V, csd, _ = se_output.pairs(task, zf, Q0, x)
    h, obj = se_output.cold_prox(task, z, Q0, x)
    return zf, Y, omega, lab, V, csd, h, obj


def prox_check(n_qmc: int) -> dict:
    """Multi-start prox and the Stein form of ``a_hat`` at the SE fixed point."""
    task, target = tasks.Seq2Seq(T=2, noise=FS.NOISE), targets.Wishart(FS.KAPPA0)
    r = se.solve(task, target, FS.ALPHA, FS.LAM, n_qmc=n_qmc, seed=0)
    z = se_output.qmc_points(task, n_qmc, 4, 0)
    zf, Y, omega, lab, V, csd, h, obj = _prox_arrays(task, z, (r.m, r.q, r.v, r.Q0))
    out, ok = channels.finish(task, Y, omega, V, h)
    K = task.n_pairs
    s2 = jnp.asarray(tasks.pair_variances(task.T))
    s = jnp.sqrt(s2)
    u1, u2 = zf[:, :K], zf[:, K : 2 * K]
    score = u2 / (s * math.sqrt(r.q)) - (r.m / (r.q * csd)) * u1 / s  # d log p / d omega
    per = {
        "pointwise": FS.ALPHA * jnp.sum(s2 * (-out.dg), axis=-1),
        "stein": FS.ALPHA * jnp.sum(s2 * (-out.g * score), axis=-1),
    }
    shifted = [omega + c for c in (-6.0, -3.0, 3.0, 6.0)] + [lab + c for c in (-3.0, 3.0)]
    starts = jnp.stack([omega, lab, *shifted], axis=1)
    multi = channels.prox(task, Y, omega, V, starts)
    lower = multi.objective < obj - 1e-9 * (1.0 + jnp.abs(obj))
    res = {"n_qmc": n_qmc, "m": r.m, "q": r.q, "v": r.v, "a_hat_engine": r.a_hat}
    for name, a in per.items():
        reps = np.asarray(a).reshape(z.shape[0], -1).mean(axis=1)
        res[f"a_hat_{name}"] = float(reps.mean())
        res[f"a_hat_{name}_err"] = float(reps.std(ddof=1) / math.sqrt(reps.size))
    res.update(
        n_problems=int(zf.shape[0]),
        n_starts=int(starts.shape[1]),
        n_lower=int(jnp.sum(lower)),
        n_not_local_min=int(jnp.sum(~ok)),
    )
    return res


def study() -> str:
    """The constants of :mod:`data.make_finite_size` that the checks use: a parameter of
    both grids, so that a change of them changes the cache keys (which hash this module's
    source and attnlib's, not make_finite_size's)."""
    return (f"seed {FS.SEED}, noise {FS.NOISE}, kappa0 {FS.KAPPA0}, alpha {FS.ALPHA}, "
            f"lam {FS.LAM}, n_test {FS.N_TEST}")  # fmt: skip


def _check_study(given: str) -> None:
    if given != study():
        raise ValueError(f"study must be {study()!r} (make_finite_size's), got {given!r}")


def solver_point(d: int, seed: int, study: str) -> dict:
    """:func:`solver_check` flattened: ``"<variant>/<metric>"`` (a row of the sweep table)."""
    _check_study(study)
    rows = solver_check(d, seed)
    return {f"{name}/{k}": v for name, row in rows.items() for k, v in row.items()}


def prox_point(n_qmc: int, study: str) -> dict:
    """:func:`prox_check` (a row of the sweep table)."""
    _check_study(study)
    return prox_check(n_qmc)


def grids(cfg: dict) -> tuple[sweep.Grid, sweep.Grid]:
    n_seeds = len(cfg["solver"]["seeds"])
    solver = sweep.Grid(solver_point, {"d": cfg["solver"]["d"], "study": study()}, seeds=n_seeds)
    return solver, sweep.Grid(prox_point, {"n_qmc": cfg["n_qmc"], "study": study()})


def _nest(flat: dict) -> dict:
    out: dict = {}
    for key, v in flat.items():
        if "/" in key:
            name, k = key.rsplit("/", 1)
            out.setdefault(name, {})[k] = v
    return out


def run(quick: bool = False, runner=None) -> dict:
    """The contents of ``finite_size_checks.json`` (nothing written)."""
    cfg = QUICK if quick else FULL
    assert tuple(cfg["solver"]["seeds"]) == tuple(range(len(cfg["solver"]["seeds"])))
    runner = runner or C.Runner()
    t0 = time.time()
    g_solver, g_prox = grids(cfg)
    d = cfg["solver"]["d"]
    out = {"d": d, "lam": FS.LAM, "alpha": FS.ALPHA, "noise": FS.NOISE, "kappa0": FS.KAPPA0}
    out["solver"] = {str(r["seed"]): _nest(r) for r in C.records(runner(g_solver), drop=["study"])}
    out["prox"] = C.records(runner(g_prox), drop=["study"])[0]
    out["seconds"] = time.time() - t0
    return out


def _write(quick, out, runner) -> None:
    (out / FILE).write_text(json.dumps(run(quick, runner), indent=1) + "\n")


def main(argv=None) -> None:
    args = C.parser(__doc__, {"checks": _write}).parse_args(argv)
    C.run_parts(args, {"checks": _write}, lambda *a: None)


if __name__ == "__main__":
    from data import make_finite_size_checks  # the importable module: workers load it by name

    make_finite_size_checks.main()
