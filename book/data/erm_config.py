"""The parameters of ``make_erm_data`` (``book/02_erm_asymptotics.ipynb``,
``book/03_factorisation.ipynb``): the full and the quick grids, the tasks and their
``alpha`` scales. The chapters read them back from ``erm_meta.json``."""

from __future__ import annotations

import numpy as np

from attnlib import tasks

SEED = 2025

# ----------------------------------------------------------------------------
# Parameters (the chapter reads them back from erm_meta.json)
# ----------------------------------------------------------------------------

KAPPA0 = 0.5  # target rank fraction (Wishart)
NOISE = 0.25  # label-noise variance Delta, on the logits, for the noisy experiments
NOISES = {"clean": 0.0, "noisy": NOISE}
TASKS = ("seq2seq", "linear")
PENALTIES = ("nuclear", "frobenius")
# alpha scales with 1 / m_eff (seq2seq T=2: m_eff = 2, linear T=1: m_eff = 1)
ALPHA_SCALE = {"seq2seq": 1.0, "linear": 2.0}
RANK_CUTOFF = 1e-3  # an eigenvalue counts towards the rank if > RANK_CUTOFF * largest one
LAM_BOUNDS = (1e-4, 10.0)  # search range of the optimal lam
LAM_XATOL = 0.15  # tolerance on log(lam): the test error is flat near its minimum
CURVE_FIELDS = ("train_loss", "test_error", "rank_fraction", "mse", "converged")

FULL = {
    # learning curves (theory grid, convex-solver points)
    # (seq2seq values; the linear task uses twice these alphas, see ALPHA_SCALE)
    "theory_alphas": np.round(np.arange(0.02, 0.5001, 0.01), 2).tolist(),  # 49 points
    "lams": {"clean": [1e-3, 1e-2, 1e-1], "noisy": [1e-3, 1e-2, 1e-1, 1.0]},
    "sim_alphas": [0.05, 0.1, 0.15, 0.2, 0.3, 0.45],
    "d_convex": 60,
    "seeds": 3,
    # Adam, kappa = 1
    "adam_lam": 0.1,
    "adam_alphas": [0.05, 0.1, 0.2, 0.3, 0.45],
    "d_adam": 80,
    "adam_steps": 6000,
    # minimal width
    "width_alpha": 0.3,
    "width_lam": 0.1,
    "width_kappas": [0.1, 0.2, 0.3, 0.4, 0.5, 0.7, 1.0],
    "d_width": 60,
    # factorised vs direct
    # 27 points: every 0.02, and the simulated alphas
    "cmp_alphas": sorted({*np.round(np.arange(0.02, 0.5001, 0.02), 2).tolist(), 0.05, 0.15}),
    "cmp_sim_alphas": [0.05, 0.15, 0.3, 0.5],
    "cmp_alpha_kappa0": 0.15,
    "cmp_kappa0s": np.round(np.linspace(0.05, 1.0, 20), 2).tolist(),
    "cmp_sim_kappa0s": [0.1, 0.5, 1.0],
    "d_cmp": 60,
    # test error against lam at one alpha
    "scan_alpha": 0.2,
    "scan_lams": [1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, 3.0],
    "scan_lams_theory": np.round(np.logspace(-3, 0.5, 15), 6).tolist(),
    "n_test": 10000,
}

QUICK = {
    **FULL,
    "theory_alphas": [0.05, 0.2],
    "lams": {"clean": [1e-2], "noisy": [1e-1]},
    "sim_alphas": [0.2],
    "d_convex": 20,
    "seeds": 2,
    "adam_alphas": [0.2],
    "d_adam": 20,
    "adam_steps": 1000,
    "width_kappas": [0.2, 1.0],
    "d_width": 20,
    "cmp_alphas": [0.15],
    "cmp_sim_alphas": [0.15],
    "cmp_kappa0s": [0.5],
    "cmp_sim_kappa0s": [0.5],
    "d_cmp": 20,
    "scan_lams": [0.1],
    "scan_lams_theory": [0.1],
    "n_test": 2000,
}


def make_task(task: str, noise: float) -> tasks.Task:
    return {"seq2seq": tasks.Seq2Seq(T=2, noise=noise), "linear": tasks.Linear(T=1, noise=noise)}[
        task
    ]


def config(quick: bool) -> dict:
    return QUICK if quick else FULL


def scaled(cfg, name, task_name):
    return [a * ALPHA_SCALE[task_name] for a in cfg[name]]


def theory_lams(cfg, noise_name) -> list:
    lams = list(cfg["lams"][noise_name])
    if noise_name == "noisy" and cfg["adam_lam"] not in lams:
        lams.append(cfg["adam_lam"])
    return lams
