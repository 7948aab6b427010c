r"""Factorised against direct training and the learned spectra, in the paper's conventions,
for ``paper_figures_training``.

Conventions of :cite:`boncoraglio2025attention`: noise on the target
(``noise_on="target"``, pair variance ``(Delta/2)(1 + delta_ab)``, ``Delta = 1/4``), the
test error against noisy test labels (``test_error_noisy``, floor ``e0``), Wishart target
``kappa0 = 0.5``, softmax seq2seq ``T = 2``, ``beta = 1``, ``alpha = n/d^2``. The
factorised student is the nuclear + PSD problem (weight decay on a tied ``W``); the direct
student is ``S`` trained element-wise with ``d (lam/2) ||S||_F^2`` and no PSD constraint.

Parts:

- ``theory``: for each penalty, the ``lam`` minimising the state evolution's
  ``test_error_noisy`` (:func:`attnlib.se.search_lambda` with ``noisy=True``, chained
  along ``alpha``) and the metrics there; the fixed points at ``SPEC_LAM`` and the
  spectrum alphas with their predicted eigenvalue law
  (:func:`attnlib.spectrum.learned_spectrum`), and that law sampled at the simulations'
  ``d`` (the spectral map applied to a sampled noisy target); the closed-form
  interpolation threshold (:func:`attnlib.thresholds.interpolation_formula`).
  -> ``paper_training_theory.npz``
- ``sims``: the convex solver (:func:`attnlib.train.train_convex`, penalty ``"nuclear"``
  or ``"frobenius"``) on fresh data sets at the theory's optimal ``lam`` of each penalty
  (both students on the same data sets); the nuclear solver at ``SPEC_LAM`` on larger
  data sets, keeping the eigenvalues of the learned ``S``. Each minimiser's train loss,
  ``mse``, and its ``test_error_noisy``, ``e0`` and ``test_error`` on a fresh noisy test
  set (:func:`attnlib.train.test_errors`). -> ``paper_training_sims.npz``
  (the optimal ``lam`` come from the theory file of the same output folder, else from
  ``book/data``: run ``theory`` first; every simulated ``alpha`` is on its grid).

Run from ``book/``::

    python -m data.make_paper_training --serial          # -> data/paper_training_*.npz
    python -m data.make_paper_training --quick --serial  # smoke run -> data/quick/

Run times of each part go to ``paper_training_meta.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax
import numpy as np
from data import _common as C

import attnlib
from attnlib import se, spectrum, sweep, targets, tasks, thresholds, train

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

SEED = 3301
KAPPA0, NOISE, T, BETA = 0.5, 0.25, 2, 1.0
PENALTIES = ("nuclear", "frobenius")
SPEC_LAM = 0.01
LAM_BOUNDS, LAM_XATOL = (1e-4, 10.0), 0.05
SE_FIELDS = ("test_error_noisy", "e0", "test_error", "train_loss", "mse", "rank_fraction",
             "replicon", "converged")  # fmt: skip
SIM_FIELDS = ("test_error_noisy", "e0", "test_error", "train_loss", "mse", "converged")
FULL = dict(
    alpha=(0.05, 0.07, 0.1, 0.14, 0.2, 0.25, 0.3, 0.4, 0.5, 0.7, 1.0, 1.5, 2.0),
    sim_alpha=(0.1, 0.25, 0.5, 1.0), d=60, reps=4,
    spec_alpha=(0.05, 0.16, 0.4, 1.0), spec_d=80, spec_reps=4, draws=40, n_test=20000,
)  # fmt: skip
QUICK = dict(
    alpha=(0.1, 0.5), sim_alpha=(0.1, 0.5), d=20, reps=2,
    spec_alpha=(0.16, 1.0), spec_d=24, spec_reps=2, draws=4, n_test=4000,
)  # fmt: skip
PARAMS = dict(kappa0=KAPPA0, noise=NOISE, noise_on="target", T=T, beta=BETA,
              spec_lam=SPEC_LAM, lam_bounds=LAM_BOUNDS, lam_xatol=LAM_XATOL, seed=SEED,
              tol=1e-8)  # fmt: skip

TASK = tasks.Seq2Seq(T=T, noise=NOISE, noise_on="target", beta=BETA)
TARGET = targets.Wishart(KAPPA0)


def _se_row(r) -> dict:
    return {f: float(getattr(r, f)) for f in SE_FIELDS}


def optimal_point(*, penalty: str, alpha: float, init=None):
    """The ``lam`` minimising ``test_error_noisy`` at ``alpha`` and the SE metrics there;
    chained along ``alpha`` (the SE warm start and the previous optimum travel on)."""
    se_init, previous = init if init is not None else (None, None)
    s, notes = C.quiet(se.search_lambda, TASK, TARGET, alpha, penalty, bounds=LAM_BOUNDS,
                       xatol=LAM_XATOL, noisy=True, previous=previous, init=se_init)  # fmt: skip
    if notes:
        C.log(f"    [optimal lam] alpha={alpha:g}, {penalty}: {notes}")
    return {"lam": float(s.lam), **_se_row(s.result)}, (s.warm, s.lam)


def sampled_spectrum(sp, alpha: float, d: int, draws: int) -> np.ndarray:
    """The predicted law at finite ``d``: ``draws`` samples of the eigenvalues of
    ``f(R)``, ``R = S0 + sqrt(Delta_eff) W_goe`` (``S0`` a fresh target, ``W_goe`` of
    off-diagonal variance ``1/d``), ``f`` the fixed point's spectral map; ``(draws, d)``."""
    out = np.empty((draws, d))
    for k in range(draws):
        k_target, k_goe = jax.random.split(C.key_for(SEED, 3, int(round(1e3 * alpha)), k, d))
        A = np.asarray(jax.random.normal(k_goe, (d, d)))
        W_goe = (A + A.T) / np.sqrt(2 * d)
        R = np.asarray(TARGET.sample(k_target, d)) + np.sqrt(sp.Delta_eff) * W_goe
        out[k] = np.sort(sp.f(np.linalg.eigvalsh(R)))
    return out


def spectrum_point(*, alpha: float, d: int, draws: int) -> dict:
    """The nuclear fixed point at ``SPEC_LAM`` and its predicted eigenvalue law of ``S``:
    atom at zero, top of the bulk, bulk density on a grid (``y``, ``density``); the same
    law sampled at ``d`` (``draws`` matrices, :func:`sampled_spectrum`)."""
    r, notes = C.quiet(se.solve_nearby, TASK, TARGET, alpha, SPEC_LAM, "nuclear")
    if notes:
        C.log(f"    [SE] alpha={alpha:g}: {notes}")
    sp = spectrum.learned_spectrum(TARGET, r)
    return {**_se_row(r), "atom": float(sp.atom_at_zero), "top": float(sp.edges[-1][1]),
            "threshold": float(sp.threshold), "Delta_eff": float(sp.Delta_eff),
            "y": np.asarray(sp.y), "density": np.asarray(sp.density),
            "sampled": sampled_spectrum(sp, alpha, d, draws)}  # fmt: skip


def _fit(penalty, lam, alpha, rep, d, n_test, part):
    """The convex solver on the data set ``(part, alpha, rep, d)`` (shared by the two
    penalties) and its metrics; the learned ``S`` beside them."""
    key = C.key_for(SEED, part, int(round(1e3 * alpha)), rep, d)
    k_target, k_data, k_test = jax.random.split(key, 3)
    S0 = TARGET.sample(k_target, d)
    data = tasks.make_dataset(k_data, TASK, S0, tasks.n_samples(alpha, d))
    res, notes = C.quiet(train.train_convex, TASK, data, lam, penalty=penalty, tol=1e-8)
    if notes:
        C.log(f"    [convex] {penalty}, alpha={alpha:g}, rep={rep}: {notes}")
    te = train.test_errors(k_test, TASK, S0, res.S, n_test=n_test)
    row = {"test_error_noisy": te.test_error_noisy, "e0": te.e0, "test_error": te.test_error,
           "train_loss": float(res.train_loss), "mse": train.mse(res.S, S0),
           "converged": float(res.converged)}  # fmt: skip
    return row, res.S


def compare_point(*, penalty: str, lam: float, alpha: float, rep: int, d: int, n_test: int):
    """One student (``penalty``) at its optimal ``lam`` on one data set."""
    return _fit(penalty, lam, alpha, rep, d, n_test, part=1)[0]


def spectrum_sim_point(*, alpha: float, rep: int, d: int, n_test: int) -> dict:
    """The nuclear student at ``SPEC_LAM`` on one data set: metrics and eigenvalues of S."""
    row, S = _fit("nuclear", SPEC_LAM, alpha, rep, d, n_test, part=2)
    return {**row, "eigs": np.linalg.eigvalsh(np.asarray(S, float))}


def _theory(quick, out, runner) -> None:
    cfg = QUICK if quick else FULL
    arrays = {"alpha": np.asarray(cfg["alpha"], float)}
    table = runner(
        sweep.Grid(
            optimal_point, sweep.product(penalty=PENALTIES, alpha=cfg["alpha"]), chain="alpha"
        )
    )
    for pen in PENALTIES:
        sel = table[table.penalty == pen]
        for f in ("lam", *SE_FIELDS):
            arrays[f"opt.{pen}.{f}"] = sweep.pivot(sel, f, {"alpha": cfg["alpha"]})
    pts = sweep.product(alpha=cfg["spec_alpha"], d=cfg["spec_d"], draws=cfg["draws"])
    rows = C.records(runner(sweep.Grid(spectrum_point, pts)))
    arrays["spec.alpha"] = np.asarray(cfg["spec_alpha"], float)
    for i, row in enumerate(rows):
        for f in (*SE_FIELDS, "atom", "top", "threshold", "Delta_eff", "y", "density", "sampled"):
            arrays[f"spec.{i}.{f}"] = np.asarray(row[f], float)
    arrays["alpha_interp"] = np.asarray(thresholds.interpolation_formula(TASK, TARGET).alpha)
    arrays["meta"] = np.asarray(json.dumps({**PARAMS, **cfg}))
    C.save_npz(out / "paper_training_theory.npz", arrays)


def _sims(quick, out, runner) -> None:
    cfg = QUICK if quick else FULL
    name = "paper_training_theory.npz"  # this run's theory, else the book's
    theory = C.load_npz(out / name if (out / name).exists() else C.HERE / name)
    reps = tuple(range(cfg["reps"]))
    points, arrays = [], {"alpha": np.asarray(cfg["sim_alpha"], float)}
    for pen in PENALTIES:
        idx = [int(np.flatnonzero(np.isclose(theory["alpha"], a))[0]) for a in cfg["sim_alpha"]]
        arrays[f"cmp.{pen}.lam"] = theory[f"opt.{pen}.lam"][idx]  # the theory's optimal lam
        for a, lam in zip(cfg["sim_alpha"], arrays[f"cmp.{pen}.lam"], strict=True):
            points += sweep.product(penalty=pen, lam=float(lam), alpha=a, rep=reps, d=cfg["d"],
                                    n_test=cfg["n_test"])  # fmt: skip
    table = runner(sweep.Grid(compare_point, points))
    for pen in PENALTIES:
        sel = table[table.penalty == pen]
        for f in SIM_FIELDS:
            arrays[f"cmp.{pen}.{f}"] = sweep.pivot(sel, f, {"rep": reps, "alpha": cfg["sim_alpha"]})
    spec_reps = tuple(range(cfg["spec_reps"]))
    pts = sweep.product(alpha=cfg["spec_alpha"], rep=spec_reps, d=cfg["spec_d"],
                        n_test=cfg["n_test"])  # fmt: skip
    table = runner(sweep.Grid(spectrum_sim_point, pts))
    axes = {"alpha": cfg["spec_alpha"], "rep": spec_reps}
    for f in (*SIM_FIELDS, "eigs"):
        arrays[f"spec.{f}"] = sweep.pivot(table, f, axes)
    arrays["spec.alpha"] = np.asarray(cfg["spec_alpha"], float)
    arrays["meta"] = np.asarray(json.dumps({**PARAMS, **cfg}))
    C.save_npz(out / "paper_training_sims.npz", arrays)


PARTS = {"theory": _theory, "sims": _sims}


def main(argv=None) -> None:
    args = C.parser(__doc__, PARTS).parse_args(argv)
    C.run_parts(args, PARTS, C.meta_recorder("paper_training_meta.json", PARAMS, FULL, QUICK))


if __name__ == "__main__":
    main()
