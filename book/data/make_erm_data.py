r"""Theory curves and simulations for ``book/02_erm_asymptotics.ipynb`` and
``book/03_factorisation.ipynb``.

Run from ``book/`` (``make data`` runs every script)::

    python -m data.make_erm_data                    # every part, on a local Dask cluster
    python -m data.make_erm_data --part adam        # one part
    python -m data.make_erm_data --quick --out DIR  # the quick grids, elsewhere
    python -m data.make_erm_data --address tcp://scheduler:8786   # on a Dask cluster

Every grid is an :class:`attnlib.sweep.Grid` over a point function of ``erm_theory``
(state evolution) or ``erm_simulations`` (training on data), with the parameters of
``erm_config``: points are cached on disk, so an interrupted run resumes and a
finished one computes nothing.
In a chapter, ``make_erm_data.compute("curves", quick=True)`` returns the arrays of a
part (the quick grid, in this process) without writing anything.

Parts and the files they write (``book/data/``):

- ``theory``  state evolution (:mod:`attnlib.se`) for every figure: learning curves
  for several ``lam``, optimal ``lam`` against ``alpha`` and ``kappa0`` for both
  penalties, a scan in ``lam``. -> ``erm_theory.npz``
- ``curves``  the convex (nuclear + PSD) solver, :func:`attnlib.train.train_convex`,
  on the learning-curve grid. -> ``erm_curves.npz``
- ``adam``    Adam on the factorised model of width ``kappa = 1``
  (:func:`attnlib.train.train_factorized`). -> ``erm_adam.npz``
- ``width``   Adam for widths ``kappa`` below and above the minimal width. -> ``erm_width.npz``
- ``compare`` factorised (nuclear) against direct (Frobenius) training, each at the
  optimal ``lam`` of the theory (needs ``erm_theory.npz``). -> ``erm_compare.npz``

``erm_meta.json`` records the parameters and the run time of every part. All
randomness comes from explicit PRNG keys derived from ``SEED``; every array is stored
under a flat key ``"<group>.<name>"``.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from data import _common as C
from data.erm_config import KAPPA0, NOISE, RANK_CUTOFF, SEED, config
from data.erm_simulations import arrays_adam, arrays_compare, arrays_curves, arrays_width
from data.erm_theory import arrays_theory

import attnlib

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles


def compute(part: str, quick: bool = True, runner=None, out: Path = C.HERE) -> dict:
    """The arrays of one part (the quick grid by default), computed without writing.
    ``compare`` reads the optimal ``lam``s from ``out/erm_theory.npz``."""
    cfg, run = config(quick), runner or C.Runner()
    if part == "compare":
        path = Path(out) / "erm_theory.npz"
        if not path.exists():
            raise SystemExit(f"{path} missing: run --part theory first")
        return arrays_compare(cfg, run, C.load_npz(path))
    return ARRAYS[part](cfg, run)


ARRAYS = {
    "theory": arrays_theory,
    "curves": arrays_curves,
    "adam": arrays_adam,
    "width": arrays_width,
}
FILES = {p: f"erm_{p}.npz" for p in ("theory", "curves", "adam", "width", "compare")}


def _part(name):
    def part(quick, out, runner):
        C.save_npz(Path(out) / FILES[name], compute(name, quick, runner, out))

    return part


PARTS = {name: _part(name) for name in FILES}


def meta_update(args, name, seconds, info=None) -> None:
    updates = {
        "attnlib_version": attnlib.__version__,
        "seed": SEED,
        "kappa0": KAPPA0,
        "noise": NOISE,
        "noise_on": "logits",
        "rank_cutoff": RANK_CUTOFF,
        "quick": bool(args.quick),
        "config": config(args.quick),
    }
    C.update_meta(args.out / "erm_meta.json", updates, "runtime_s", name, seconds)


def main(argv=None) -> None:
    args = C.parser(__doc__, PARTS).parse_args(argv)
    C.run_parts(args, PARTS, meta_update)


if __name__ == "__main__":
    from data import make_erm_data  # the importable module: workers load its functions by name

    make_erm_data.main()
