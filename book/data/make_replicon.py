r"""Where the replica-symmetric fixed point is stable: the replicon over ``(alpha, lam)``.

Setting: softmax seq2seq and seq2lab, ``T = 2``, no noise, and seq2seq with noise 0.5
on the outputs; Wishart target ``kappa0 = 0.5``, nuclear + PSD penalty. At each
``(alpha, lam)`` the state evolution
(:func:`attnlib.se.solve`: the fixed point of lowest objective) and its ``replicon``
(:mod:`attnlib.se.replicon`, stable where ``replicon < 1``), with the test error, the
objective, ``(m, q, v)``, the rank fraction and the number of other fixed points found
(``n_alternatives``). For the chapter 06_replica.

Run from ``book/``::

    python -m data.make_replicon --serial          # -> data/replicon.npz
    python -m data.make_replicon --quick --serial  # coarse grid -> data/quick/replicon.npz

One :class:`attnlib.sweep.Grid` of the pure point function :func:`run_point` over
``(task, lam, alpha)`` (cached on disk, Dask or serial; ``--help`` for the options).
The arrays have shape ``(task, lam, alpha)``; ``meta`` holds the parameters and the
run time.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from data import _common as C

import attnlib
from attnlib import se, sweep, targets, tasks

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

TARGET = targets.Wishart(0.5)
TASKS = {
    "seq2seq": tasks.Seq2Seq(T=2),
    "seq2lab": tasks.Seq2Lab(T=2),
    # noisy outputs: the softmax's square loss curves down at the prox points, and the
    # replicon exceeds 1 at small lam and large alpha (1.09 at alpha 2.5, lam 1e-4)
    "seq2seq_noisy_outputs": tasks.Seq2Seq(T=2, noise=0.5, noise_on="outputs"),
}
FIELDS = ("replicon", "test_error", "objective", "m", "q", "v", "rank_fraction")
FULL = dict(
    alpha=(0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0),
    lam=(1e-4, 1e-3, 1e-2, 0.03, 0.1, 0.3),
    n_qmc=8192,
)
QUICK = dict(alpha=(0.1, 0.3, 1.0, 3.0), lam=(1e-3, 1e-2, 0.1), n_qmc=2048)


def run_point(task: str, alpha: float, lam: float, n_qmc: int) -> dict:
    """The state evolution at one point: FIELDS, ``n_alternatives`` and ``converged``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", se.SEMultipleFixedPointsWarning)
        warnings.simplefilter("ignore", se.SEReplicaSymmetryWarning)
        r = se.solve(TASKS[task], TARGET, alpha, lam, n_qmc=n_qmc)
    out = {f: float(getattr(r, f)) for f in FIELDS}
    return dict(out, n_alternatives=len(r.alternatives), converged=bool(r.converged))


def grid(cfg) -> sweep.Grid:
    pts = sweep.product(task=tuple(TASKS), lam=cfg["lam"], alpha=cfg["alpha"],
                        n_qmc=cfg["n_qmc"])  # fmt: skip
    return sweep.Grid(run_point, pts)


def run(quick: bool = False, runner=None) -> dict:
    """Arrays ``(task, lam, alpha)`` of FIELDS and ``n_alternatives``, the axes, ``meta``."""
    cfg = QUICK if quick else FULL
    t0 = time.time()
    table = (runner or C.Runner())(grid(cfg))
    axes = {"task": tuple(TASKS), "lam": cfg["lam"], "alpha": cfg["alpha"]}
    arrays = {f: sweep.pivot(table, f, axes) for f in (*FIELDS, "n_alternatives")}
    meta = dict(kappa0=0.5, T=2, penalty="nuclear", tasks={k: repr(t) for k, t in TASKS.items()},
                n_qmc=cfg["n_qmc"], seconds=round(time.time() - t0, 1))  # fmt: skip
    return {"alpha": np.asarray(cfg["alpha"]), "lam": np.asarray(cfg["lam"]), **arrays,
            "meta": np.asarray(json.dumps(meta))}  # fmt: skip


def _path(out: Path, quick: bool) -> Path:
    return out / ("replicon" + ("_quick" if quick else "") + ".npz")


def _runs(quick, out, runner) -> None:
    arrays = run(quick, runner)
    C.save_npz(_path(out, quick), arrays)
    rep = arrays["replicon"]
    C.log(f"replicon: max {np.nanmax(rep):.4g}, points above 1: {int(np.sum(rep > 1))}")


PARTS = {"runs": _runs}


def main(argv=None) -> None:
    args = C.parser(__doc__, PARTS).parse_args(argv)
    C.run_parts(args, PARTS, lambda *a: None)


if __name__ == "__main__":
    main()
