r"""Noise-dependent interpolation threshold (``book/02_erm_asymptotics.ipynb``): SE at ``lam = 0``.

Run from ``book/``::

    python -m data.make_interp_thresholds     # -> data/interp_thresholds.json

:func:`attnlib.thresholds.interpolation_se_bracket` (bisection to ``1e-3`` in
``alpha`` on the existence of the ``lam = 0`` state-evolution fixed point) for the
linear task (``T = 1``) on a grid of label-noise variances ``Delta``, and for softmax
seq2seq (``T = 2``) at the chapter's ``Delta = 0.25``; Wishart target ``kappa0 = 1/2``,
noise on the logits. :func:`point` is a pure function of ``(task name, Delta)``. Each
point is about ten state-evolution solves: seconds for the linear task, minutes for
seq2seq (measured 45-110 s and 21 min on a heavily loaded machine).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import attnlib
from attnlib import targets, tasks, thresholds

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

HERE = Path(__file__).resolve().parent
OUT = HERE / "interp_thresholds.json"
KAPPA0 = 0.5
XTOL = 1e-3
GRID = {"linear": (1e-3, 1e-2, 0.1, 0.25, 1.0, 10.0, 100.0), "seq2seq": (0.25,)}


def make_task(name: str, noise: float) -> tasks.Task:
    return tasks.Linear(T=1, noise=noise) if name == "linear" else tasks.Seq2Seq(T=2, noise=noise)


def point(name: str, noise: float) -> dict:
    """Bracket ``lo < alpha_interp <= hi`` at label noise ``noise``; a dict of numbers."""
    t0 = time.time()
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
        "seconds": time.time() - t0,
    }


def main() -> None:
    rows = []
    for name, noises in GRID.items():
        for noise in noises:
            rows.append(point(name, noise))
            print(rows[-1], flush=True)
    OUT.write_text(json.dumps({"kappa0": KAPPA0, "xtol": XTOL, "points": rows}, indent=1))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
