r"""01_model: does training reach the same solution from different starts?

Run from ``book/``::

    python -m data.make_multistart --serial   # full size -> data/multistart.npz
    python -m data.make_multistart --quick --serial --out DIR  # small d -> multistart_quick.npz

The softmax empirical risk is not convex in ``S``, so nothing guarantees that two
optimisers, or one optimiser from two starting points, end at the same minimiser.
This script measures it on the first trained head of 01_model (seq2seq, ``T = 2``,
noise ``Delta = 0.1`` on the logits, Wishart target ``kappa0 = 0.5``, ``lam = 0.02``):
one data set, and

- Adam on the factor ``W`` (``p = d``, :func:`attnlib.train.train_factorized`) from
  random Gaussian factors of several seeds and scales;
- the proximal solver on ``S`` (:func:`attnlib.train.train_convex`) from several
  ``S_init`` (zero, a multiple of the identity, random Wishart matrices).

``start`` is a pure function of one start's parameters returning a dict of numbers; the
starts are one :class:`attnlib.sweep.Grid` of it (cached on disk, Dask or serial;
``--help`` for the options; ``ATTNLIB_QUICK=1`` runs the quick grid live). Every start is
compared with the same fresh test sequences (one key), so the spread of the test errors
is that of the solutions, not Monte Carlo noise.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import numpy as np
from data import _common as C

import attnlib
from attnlib import sweep, targets, tasks, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

SEED = 101
KAPPA0, NOISE, LAM, ALPHA, T = 0.5, 0.1, 0.02, 0.4, 2

# (solver, init seed, init scale); for "convex" the scale multiplies the initial matrix
STARTS = (
    ("adam", 0, 1.0),
    ("adam", 1, 1.0),
    ("adam", 2, 0.3),
    ("adam", 3, 3.0),
    ("convex", 0, 0.0),  # S_init = 0
    ("convex", 1, 3.0),  # S_init = 3 I
    ("convex", 2, 1.0),  # S_init = random Wishart (width d)
    ("convex", 3, 5.0),  # S_init = 5 x random Wishart
)
FULL = {"d": 70, "n_test": 20000}
QUICK = {"d": 30, "n_test": 5000}


def problem(d: int):
    """The task, the target matrix ``S0`` and the training set (fixed by ``SEED``)."""
    k_s0, k_data = jax.random.split(jax.random.PRNGKey(SEED))
    task = tasks.Seq2Seq(T=T, noise=NOISE)
    S0 = np.asarray(targets.Wishart(KAPPA0).sample(k_s0, d))
    data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(ALPHA, d))
    return task, S0, data


def initial_S(index: int, scale: float, d: int) -> np.ndarray:
    """Starting matrix of the proximal solver: ``scale * I`` or a random Wishart."""
    if index in (0, 1):
        return scale * np.eye(d)
    G = np.asarray(jax.random.normal(jax.random.PRNGKey(SEED + 10 + index), (d, d)), float)
    return scale * G @ G.T / d


def start(solver: str, index: int, scale: float, d: int, n_test: int) -> dict:
    """Train from one start; return its metrics and the learned ``S`` (key ``"S"``)."""
    task, S0, data = problem(d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if solver == "adam":
            key = jax.random.PRNGKey(SEED + 100 + index)
            res = train.train_factorized(key, task, data, p=d, lam_W=LAM, init_scale=scale)
        elif solver == "convex":
            res = train.train_convex(task, data, LAM, tol=1e-8, S_init=initial_S(index, scale, d))
        else:
            raise ValueError(f"solver must be 'adam' or 'convex', got {solver!r}")
    k_test = jax.random.PRNGKey(SEED + 1)
    ev = np.linalg.eigvalsh(res.S)
    st = train.test_error_stats(k_test, task, S0, res.S, n_test=n_test)
    return {
        "converged": bool(res.converged),
        "n_steps": int(res.n_iter),
        "train_loss": float(res.train_loss),
        "objective": float(train.objective(task, data, res.S, LAM)) / data.X.shape[0],
        "test_error": st.mean,
        "test_stderr": st.stderr,
        "mse": float(train.mse(res.S, S0)),
        "rank_fraction": float(np.mean(ev > 1e-3 * ev.max())),
        "S": res.S,
    }


# the columns of the file, in order, with their dtypes
COLUMNS = {
    "converged": bool,
    "n_steps": int,
    "train_loss": float,
    "objective": float,
    "test_error": float,
    "test_stderr": float,
    "mse": float,
    "rank_fraction": float,
}


def grid(cfg) -> sweep.Grid:
    pts = [dict(solver=s, index=i, scale=c, **cfg) for s, i, c in STARTS]
    return sweep.Grid(start, pts)


def run(quick: bool = False, runner=None) -> dict:
    """Every start: arrays over ``STARTS`` plus the distances between the learned matrices."""
    cfg = QUICK if quick else FULL
    table = (runner or C.Runner())(grid(cfg))
    S = np.array(table["S"].tolist(), dtype=float)
    ref = S[[i for i, s in enumerate(STARTS) if s[0] == "convex"][0]]
    out = {k: np.array(table[k].tolist(), dtype=dt) for k, dt in COLUMNS.items()}
    out["rel_dist"] = np.linalg.norm(S - ref, axis=(1, 2)) / np.linalg.norm(ref)
    out["solver"] = np.array([s[0] for s in STARTS])
    out["init_scale"] = np.array([s[2] for s in STARTS])
    out["d"] = cfg["d"]
    out["n_test"] = cfg["n_test"]
    return out


def main(argv=None) -> None:
    args = C.parser(__doc__, ["starts"]).parse_args(argv)
    name = "multistart_quick.npz" if args.quick else "multistart.npz"
    parts = C.npz_parts({"starts": name}, lambda _, quick, runner: run(quick, runner))
    C.run_parts(args, parts, lambda *a: None)


if __name__ == "__main__":
    main()
