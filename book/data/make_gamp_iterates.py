"""GAMP iterate by iterate against the state evolution (05_state_evolution, methods_gamp_iterates).

For one setting (task, target, alpha, lam) and one seed, :func:`run_point` runs
undamped GAMP on a sampled data set from ``S_hat = 0``, ``v = V_INIT``, ``g = 0``
and records, at every iteration t, the overlaps ``m_t = Tr(S_t S0)/d`` and
``q_t = Tr(S_t^2)/d`` of its estimate, its variance ``v_t`` and the output-step loss
``mean_mu loss(Y_mu, h*_mu)`` (the training loss at a fixed point).
:func:`se_iterates` runs the state-evolution map from the same start
``(m, q, v) = (0, 0, V_INIT)`` with the same (zero) damping (:func:`attnlib.se.trajectory`:
output side, then input side, per iteration).

Two variants of GAMP (:func:`gamp_trajectory`): with *per-sequence variances* (the
default; weights :func:`attnlib.gamp.sequence_weights`) the output variance of pair
``ab`` of sequence ``mu`` is
``V_{mu,ab} = sigma_ab^2 v r_{mu,ab}`` and the input precision
``a_hat = alpha sum_ab sigma_ab^2 mean_mu(r_{mu,ab} (-dg_{mu,ab}))``, with
``r_{mu,ab} = ||Z_{mu,ab}||_F^2 d / (sigma_ab^2 D)`` (mean 1, ``D = d(d+1)/2``): GAMP
as Rangan wrote it, whose variances weight each measurement by the squared entries of
its sensing vector. With *uniform variances* (``r = 1``, as :func:`attnlib.amp.gamp`)
the variance, and with it the Onsager term, of a sequence ignores the fluctuation of
``||Z_{mu,ab}||^2``: ``2 sqrt(2/d)`` relative for a diagonal pair
(``Z_aa = (x_a x_a^T - I)/sqrt d``), against ``O(1/d)`` for i.i.d. Gaussian sensing
vectors. Both variants have the same fixed points and the same state evolution
(``r -> 1`` as ``d -> infinity``).

Run from ``book/``::

    python -m data.make_gamp_iterates --serial   # -> data/gamp_iterates.npz (CPU-minutes)
    python -m data.make_gamp_iterates --quick --serial --out DIR  # -> gamp_iterates_quick.npz

The trajectories are a :class:`attnlib.sweep.Grid` per setting of the pure point
function :func:`run_point` (sizes, variants and seeds; cached on disk, Dask or serial;
``--help`` for the options), the SE iterates one of :func:`se_iterates`; the chapter
calls ``run(quick=True)`` in class mode (small d, two seeds, seconds).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import jax.numpy as jnp
import numpy as np
from data import _common as C

import attnlib
from attnlib import channels, gamp, se, sweep, targets, tasks
from attnlib.gamp import sequence_weights  # the chapters' make_gamp_iterates.sequence_weights

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

HERE = Path(__file__).resolve().parent
TARGET = targets.Wishart(0.5)
LAM = 0.05
V_INIT = 1.0
Q_START = 1e-12  # q of the start S_hat = 0 for the SE output side (it divides by q)
SETTINGS = {
    "linear": dict(task=tasks.Linear(T=1, noise=0.1), alpha=0.3),
    "seq2seq": dict(task=tasks.Seq2Seq(T=2), alpha=0.15),
}
# per setting: sizes d, number of seeds, iterations; QMC points of the SE output side (non-linear
# tasks); "uniform": sizes at which GAMP with uniform variances also runs (the contrast)
FULL = {
    "seq2seq": dict(d=(200,), seeds=3, n_iter=15, n_qmc=8192, uniform=()),
    "linear": dict(d=(100, 200), seeds=4, n_iter=20, n_qmc=8192, uniform=(200,)),
}
QUICK = {
    "seq2seq": dict(d=(40,), seeds=2, n_iter=10, n_qmc=1024, uniform=()),
    "linear": dict(d=(40,), seeds=2, n_iter=10, n_qmc=1024, uniform=(40,)),
}
KEY = jax.random.PRNGKey(20261203)


def gamp_trajectory(task, data, S0, lam, n_iter, per_sequence=True):
    """Undamped GAMP from S_hat = 0; per-iteration (m, q, v, loss), each of shape (n_iter,).

    The loop is :func:`attnlib.gamp.run` with the multi-start ERM output step started at
    ``h(S_hat)``; ``(m, q)`` of each iterate come back through its ``observe`` hook, ``v``
    and the output-step loss in its trajectory. ``m``, ``q``, ``v`` at iteration ``t`` are
    those of the estimate the ``t``-th output step sees (the start at ``t = 0``).
    ``per_sequence``: variances weighted by :func:`sequence_weights` (else uniform)."""
    d = data.X.shape[2]
    S0 = jnp.asarray(S0)

    def overlaps(S):
        S = jnp.asarray(S)
        return float(jnp.sum(S * S0)) / d, float(jnp.sum(S * S)) / d

    settings = gamp.GAMPSettings(damping=0.0, max_iter=n_iter, tol=1e-300, observe=overlaps,
                                 n_newton=None, warm=False)  # fmt: skip
    weights = sequence_weights(jnp.asarray(data.X)) if per_sequence else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a fixed number of iterations
        start = gamp.Start(jnp.zeros((d, d)), V_INIT)
        pair = (channels.for_task(task), gamp.SpectralProx("nuclear"))
        r = gamp.run(pair, data, start, lam, settings=settings, weights=weights)
    if r.status == "breakdown":
        raise FloatingPointError(f"GAMP broke down: a_hat = {r.trajectory.a_hat[-1]}")
    m, q = np.concatenate([[[0.0, 0.0]], r.trace[:-1]]).T
    v = np.concatenate([[V_INIT], r.trajectory.v[:-1]])
    return {"m": m, "q": q, "v": v, "loss": r.trajectory.loss}


def run_point(name: str, d: int, seed: int, n_iter: int, per_sequence: bool = True) -> dict:
    """One GAMP trajectory at size d for setting ``name``; also the sampled Q0."""
    cfg = SETTINGS[name]
    k = jax.random.fold_in(jax.random.fold_in(KEY, list(SETTINGS).index(name)), seed)
    S0 = TARGET.sample(jax.random.fold_in(k, 0), d)
    data = tasks.make_dataset(
        jax.random.fold_in(k, 1), cfg["task"], S0, tasks.n_samples(cfg["alpha"], d)
    )
    out = gamp_trajectory(cfg["task"], data, S0, LAM, n_iter, per_sequence)
    out["Q0"] = float(jnp.sum(S0 * S0)) / d
    return out


def se_iterates(name: str, n_iter: int, n_qmc: int = 8192) -> dict:
    """The SE map iterated from (m, q, v) = (0, 0, V_INIT), undamped; same fields as GAMP."""
    cfg = SETTINGS[name]
    t = se.trajectory(cfg["task"], TARGET, cfg["alpha"], LAM, n_iter, start=(0.0, 0.0, V_INIT),
                      n_qmc=n_qmc, q_floor=Q_START)  # fmt: skip
    return {"m": t.m, "q": t.q, "v": t.v, "loss": t.train_loss}


FIELDS = ("m", "q", "v", "loss")


def grids(P: dict, name: str) -> tuple[sweep.Grid, sweep.Grid]:
    """GAMP at every size, variant and seed of setting ``name``; the SE iterates."""
    pts = sweep.product(name=name, d=P["d"], n_iter=P["n_iter"], per_sequence=True)
    pts += sweep.product(name=name, d=P["uniform"], n_iter=P["n_iter"], per_sequence=False)
    se_pt = {"name": name, "n_iter": P["n_iter"], "n_qmc": P["n_qmc"]}
    return sweep.Grid(run_point, pts, seeds=P["seeds"]), sweep.Grid(se_iterates, [se_pt])


def run(quick: bool = False, runner=None) -> dict:
    """Every setting and size: GAMP trajectories (seeds, n_iter) and the SE iterates (n_iter,).

    Keys: ``{name}_d{d}_gamp_{m,q,v,loss}``, ``{name}_d{d}_Q0`` (sampled targets),
    ``{name}_se_{m,q,v,loss}``, ``{name}_sizes``; GAMP with uniform variances under
    ``{name}_uniform_d{d}_...`` and ``{name}_uniform_sizes``.
    """
    runner, res = runner or C.Runner(), {}
    for name, P in (QUICK if quick else FULL).items():
        g_gamp, g_se = grids(P, name)
        t, t_se = runner(g_gamp), runner(g_se)
        variants = ((name, P["d"], True), (f"{name}_uniform", P["uniform"], False))
        for label, sizes, per_seq in variants:
            for d in sizes:
                axes = {"d": [d], "per_sequence": [per_seq], "seed": range(P["seeds"])}
                for k in (*FIELDS, "Q0"):
                    key = f"{label}_d{d}_Q0" if k == "Q0" else f"{label}_d{d}_gamp_{k}"
                    res[key] = sweep.pivot(t, k, axes)[0, 0]
            res[f"{label}_sizes"] = np.array(sizes, dtype=int)
        for k in FIELDS:
            res[f"{name}_se_{k}"] = sweep.pivot(t_se, k, {"name": [name]})[0]
    return res


def load(path: Path = HERE / "gamp_iterates.npz") -> dict:
    """The stored full run (what ``run(quick=False)`` returns)."""
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def main(argv=None) -> None:
    args = C.parser(__doc__, ["iterates"]).parse_args(argv)
    name = "gamp_iterates_quick.npz" if args.quick else "gamp_iterates.npz"
    parts = C.npz_parts({"iterates": name}, lambda _, quick, runner: run(quick, runner))
    C.run_parts(args, parts, lambda *a: None)


if __name__ == "__main__":
    main()
