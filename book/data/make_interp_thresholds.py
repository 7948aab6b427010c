r"""Noise-dependent interpolation threshold (``book/02_erm_asymptotics.ipynb``): SE at ``lam = 0``.

Run from ``book/``::

    python -m data.make_interp_thresholds                    # -> data/interp_thresholds.json
    python -m data.make_interp_thresholds --quick --serial --out DIR   # two linear points

:func:`attnlib.thresholds.interpolation_se_bracket` (bisection to ``1e-3`` in
``alpha`` on the existence of the ``lam = 0`` state-evolution fixed point) for the
linear task (``T = 1``) on a grid of label-noise variances ``Delta``, and for softmax
seq2seq (``T = 2``) at the chapter's ``Delta = 0.25``; Wishart target ``kappa0 = 1/2``,
noise on the logits. :func:`point` is a pure function of ``(task name, Delta)``, run on
the grid :func:`grid` (:class:`attnlib.sweep.Grid`, cached on disk). Each point is about
ten state-evolution solves: seconds for the linear task, minutes for seq2seq (measured
45-110 s and 21 min on a heavily loaded machine); ``seconds`` records each point's compute
time as the sweep measured it (that of the run that filled the cache).
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from data import _common as C

import attnlib
from attnlib import sweep, targets, tasks, thresholds

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

FILE = "interp_thresholds.json"
KAPPA0 = 0.5
XTOL = 1e-3
GRID = {"linear": (1e-3, 1e-2, 0.1, 0.25, 1.0, 10.0, 100.0), "seq2seq": (0.25,)}
QUICK = {"linear": (1.0, 10.0)}
FIELDS = ("task", "noise", "alpha", "lo", "hi", "v_hi", "train_loss_hi", "n_solves")


def make_task(name: str, noise: float) -> tasks.Task:
    return tasks.Linear(T=1, noise=noise) if name == "linear" else tasks.Seq2Seq(T=2, noise=noise)


def point(name: str, noise: float) -> dict:
    """Bracket ``lo < alpha_interp <= hi`` at label noise ``noise``; a dict of numbers."""
    b = thresholds.interpolation_se_bracket(
        make_task(name, noise), targets.Wishart(KAPPA0), xtol=XTOL
    )
    return {
        "task": name,
        "noise": noise,
        "alpha": b.alpha,
        "lo": b.lo,
        "hi": b.hi,
        "v_hi": float(b.fixed_point.v),
        "train_loss_hi": float(b.fixed_point.train_loss),
        "n_solves": b.n_solves,
    }


def grid(quick: bool = False) -> sweep.Grid:
    """One point per (task, noise) of ``GRID`` (``QUICK``), in that order."""
    cfg = QUICK if quick else GRID
    return sweep.Grid(
        point, [p for n, v in cfg.items() for p in sweep.product(name=n, noise=list(v))]
    )


def compute(quick: bool = False, runner=None) -> dict:
    """The contents of ``interp_thresholds.json`` (nothing written)."""
    table = (runner or C.Runner())(grid(quick))
    secs = table["seconds"].tolist()  # the sweep's compute time of each point
    rows = [{f: r[f] for f in FIELDS} for r in C.records(table)]
    rows = [{**r, "seconds": t} for r, t in zip(rows, secs, strict=True)]
    return {"kappa0": KAPPA0, "xtol": XTOL, "points": rows}


def write(quick, out, runner) -> None:
    C.save_json(out / FILE, compute(quick, runner), indent=1)


def main(argv=None) -> None:
    args = C.parser(__doc__, {"thresholds": write}).parse_args(argv)
    C.run_parts(args, {"thresholds": write}, lambda *a: None)


if __name__ == "__main__":
    from data import make_interp_thresholds  # the importable module: workers load its functions

    make_interp_thresholds.main()
