r"""Which of two state-evolution fixed points the ERM reaches (seq2lab, ``T = 2``).

Setting: seq2lab (mean self-attention weight), ``T = 2``, no noise, Wishart target
``kappa0 = 0.2``, nuclear + PSD penalty, ``alpha = 0.1``, ``lam = 1e-6``. The state
evolution has two fixed points there (a direct solve and continuation in ``lam`` end
at different ``(m, q, v)``); the lower objective is the replica-symmetric prediction
of the ERM. This script measures what the ERM reaches on data.

For each size ``d`` and seed: a target with the ``d`` quantiles of the Wishart spectrum
as eigenvalues (Haar eigenvectors, so its norm does not fluctuate), ``n = alpha d^2``
sequences, and several minimisations of ``sum_mu loss + d lam Tr S``:

- ``fista0``: :func:`attnlib.train.train_convex` from ``S = 0`` (the data term is not
  convex: a stationary point reached monotonically);
- ``fista_rand``: the same from a random Wishart ``S`` (``W W^T / d``, ``W`` ``d x d``);
- ``adam_small``, ``adam_unit``: Adam on the factor ``W`` (``p = d``,
  :func:`attnlib.train.train_factorized`, float64) from random ``W`` of entry scale
  0.1 and 1 (at this ``lam`` weight decay is too weak to undo in the given steps what
  the start put in ``W``: ``adam_unit`` shows the start's imprint).

Per start: the objective per sequence, the train loss, ``Tr S / d``,
``m = Tr(S S0) / d``, ``q = Tr(S^2) / d``, and the solver's residual.

Run from ``book/``::

    python -m data.make_seq2lab_fixed_points --serial  # -> data/seq2lab_fixed_points.npz
                                                       # (about 10 CPU-minutes; d = 80
                                                       # took over 13 CPU-minutes a seed)
    python -m data.make_seq2lab_fixed_points --quick --serial --out DIR  # small d, seconds

The minimisations are one :class:`attnlib.sweep.Grid` of the pure point function
:func:`run_point` over ``(d, start)`` and seeds (cached on disk, Dask or serial;
``--help`` for the options). The arrays have shape ``(d, seed, start)``; ``meta`` holds
the parameters, the run time and, under ``se``, the state evolution's fixed point
(:func:`attnlib.se.solve`, which returns the lowest objective and the other fixed points
it found). Part ``runs`` writes the arrays, part ``se`` (run after it by default) adds
that record to the file; ``--part se`` recomputes only the record.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import jax.numpy as jnp
import numpy as np
from data import _common as C

import attnlib
from attnlib import se, sweep, targets, tasks, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

HERE = Path(__file__).resolve().parent
KEY = jax.random.PRNGKey(2525)
TARGET = targets.Wishart(0.2)
TASK = tasks.Seq2Lab(T=2)
ALPHA, LAM = 0.1, 1e-6
STARTS = ("fista0", "fista_rand", "adam_small", "adam_unit")
FIELDS = ("objective", "train_loss", "trace", "m", "q", "residual")
FULL = dict(d=(30, 40, 60), seeds=3, max_iter=20000, steps=20000)
QUICK = dict(d=(16, 24), seeds=2, max_iter=2000, steps=2000)


def _minimise(start: str, data, d: int, k, max_iter: int, steps: int):
    key = jax.random.fold_in(k, 10 + STARTS.index(start))
    if start.startswith("fista"):
        W = jax.random.normal(key, (d, d))
        S_init = None if start == "fista0" else W @ W.T / d
        return train.train_convex(TASK, data, LAM, S_init=S_init, tol=1e-9,
                                  max_iter=max_iter)  # fmt: skip
    scale = 0.1 if start == "adam_small" else 1.0
    return train.train_factorized(key, TASK, data, d, lam=LAM, max_iter=steps,
                                  learning_rate=0.02, dtype=jnp.float64,
                                  init_scale=scale)  # fmt: skip


def run_point(d: int, start: str, max_iter: int, steps: int, seed: int) -> dict:
    """One minimisation (``start``) on data set ``seed`` at size ``d``: a dict of FIELDS."""
    k = jax.random.fold_in(jax.random.fold_in(KEY, d), seed)
    S0 = targets.Explicit(tuple(TARGET.eigenvalues(d))).sample(jax.random.fold_in(k, 0), d)
    n = tasks.n_samples(ALPHA, d)
    data = tasks.make_dataset(jax.random.fold_in(k, 1), TASK, S0, n)
    res = _minimise(start, data, d, k, max_iter, steps)
    S = np.asarray(res.S, dtype=np.float64)
    S = (S + S.T) / 2
    return dict(
        objective=float(train.objective(TASK, data, S, LAM) / n),
        train_loss=float(train.train_loss(TASK, data, S)),
        trace=float(np.trace(S) / d),
        m=float(np.sum(S * np.asarray(S0)) / d),
        q=float(np.sum(S * S) / d),
        residual=float(res.residual),
    )


def grid(cfg) -> sweep.Grid:
    pts = sweep.product(d=cfg["d"], start=STARTS, max_iter=cfg["max_iter"], steps=cfg["steps"])
    return sweep.Grid(run_point, pts, seeds=cfg["seeds"])


def run(quick: bool = False, runner=None) -> dict:
    """Arrays ``(d, seed, start)`` of FIELDS, the sizes ``d`` and ``meta`` (JSON)."""
    cfg = QUICK if quick else FULL
    t0 = time.time()
    table = (runner or C.Runner())(grid(cfg))
    axes = {"d": cfg["d"], "seed": range(cfg["seeds"]), "start": STARTS}
    arrays = {f: sweep.pivot(table, f, axes) for f in FIELDS}
    meta = dict(alpha=ALPHA, lam=LAM, kappa0=0.2, T=2, d=list(cfg["d"]), seeds=cfg["seeds"],
                starts=list(STARTS), seconds=round(time.time() - t0, 1))  # fmt: skip
    return {"d": np.asarray(cfg["d"]), **arrays, "meta": np.asarray(json.dumps(meta))}


def se_record() -> dict:
    """The state evolution at this point: the returned fixed point (lowest objective)
    and the others found (``alternatives``: ``(m, q, v, objective)``)."""
    t0 = time.time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", se.SEMultipleFixedPointsWarning)
        r = se.solve(TASK, TARGET, ALPHA, LAM)
    if not r.converged:
        raise RuntimeError(f"no state-evolution fixed point at alpha {ALPHA}, lam {LAM}")
    rec = {k: float(getattr(r, k)) for k in ("m", "q", "v", "train_loss", "trace", "objective")}
    rec["alternatives"] = [list(map(float, a)) for a in r.alternatives]
    rec["seconds"] = round(time.time() - t0, 1)
    return rec


def _path(out: Path, quick: bool) -> Path:
    return out / ("seq2lab_fixed_points" + ("_quick" if quick else "") + ".npz")


def _runs(quick, out, runner) -> None:
    C.save_npz(_path(out, quick), run(quick, runner))


def _se(quick, out, runner) -> None:
    """Add the state evolution's record to the file's ``meta``."""
    arrays = C.load_npz(_path(out, quick))
    meta = json.loads(str(arrays["meta"]))
    meta["se"] = se_record()
    arrays["meta"] = np.asarray(json.dumps(meta))
    C.save_npz(_path(out, quick), arrays)
    C.log(f"SE {meta['se']}")


PARTS = {"runs": _runs, "se": _se}


def main(argv=None) -> None:
    args = C.parser(__doc__, PARTS).parse_args(argv)
    C.run_parts(args, PARTS, lambda *a: None)


if __name__ == "__main__":
    main()
