r"""The minimised objective of the state evolution against the convex solver on data.

:class:`attnlib.se.SEResult` predicts ``lim min_S objective(S) / n`` (``objective``:
``train_loss + lam trace / alpha``, nuclear; ``train_loss + (lam/2) q / alpha``,
Frobenius) and ``trace = lim Tr S_hat / d``. Here :func:`attnlib.train.train_convex`
(FISTA on ``S``) minimises :func:`attnlib.train.objective` on ``seeds`` independent
data sets at several ``d``; the per-sequence objective and ``Tr S_hat / d`` are fitted
by ``a + b / d`` (weighted least squares, weights from the seed spread at each ``d``).

Tolerance: ``|a - SE| <= 3 err_a + 3 err_SE`` with ``err_a`` the standard error of the
intercept (propagated from the standard errors of the means at each ``d``, inflated
by the fit's ``sqrt(chi^2 / dof)`` when above 1) and ``err_SE`` the QMC error of the
prediction (``integration_error`` times the value; 0 for the linear task, which has
closed forms). For the softmax tasks the convex solver returns a stationary point of
a non-convex data term (from ``S = 0``), and a Frobenius-penalised softmax problem is
not convex at all; the comparison is still made, as a check that the solver and the
replica-symmetric prediction meet.

The fast test uses one small case (linear, ``T = 1``, noise 0.25, nuclear, ``d = 16,
24, 32, 48``, 8 seeds: the seed spread of the objective is about 3 % at ``d = 48`` and
the intercept's error bar about 3 %); the full set (three tasks, with and without
noise, both penalties, ``d = 30, 40, 60, 80``) is marked ``slow``.
"""

from __future__ import annotations

import functools
import math

import jax
import numpy as np
import pytest

import attnlib  # noqa: F401
from attnlib import finite_size, se, targets, tasks, train

KAPPA0 = 0.5


def _fit(ds, rows):
    """Intercept ``a`` and its standard error of ``a + b / d`` fitted to the per-``d``
    means of ``rows[d]`` (one value per seed), weighted by their standard errors
    (:func:`attnlib.finite_size.fit_inverse_d`, errors rescaled when chi^2/dof > 1)."""
    mean, sem = zip(*(finite_size.mean_and_sem(rows[d]) for d in ds), strict=True)
    fit = finite_size.fit_inverse_d(ds, mean, np.maximum(sem, 1e-12 + 1e-9 * np.abs(mean)))
    return float(fit.a), float(fit.a_err)


@functools.cache
def _simulate(task, alpha, lam, penalty, d, seeds):
    """``(objective / n, Tr S_hat / d)`` of the convex solver on ``seeds`` data sets."""
    target = targets.Wishart(KAPPA0)
    key = jax.random.PRNGKey(25)
    n = tasks.n_samples(alpha, d)
    out = []
    for s in range(seeds):
        k_s0, k_data = jax.random.split(jax.random.fold_in(jax.random.fold_in(key, d), s))
        S0 = target.sample(k_s0, d)
        data = tasks.make_dataset(k_data, task, S0, n)
        res = train.train_convex(task, data, lam, penalty=penalty, tol=1e-8)
        assert res.converged, f"convex solver: residual {res.residual:.2e}"
        obj = train.objective(task, data, res.S, lam, penalty) / n
        out.append((obj, float(np.trace(np.asarray(res.S))) / d))
    return np.array(out)


def _compare(case, ds, seeds):
    """``[(name, extrapolated, error, SE value, tolerance)]`` for objective and trace."""
    task, alpha, lam, penalty = case
    pred = se.solve(task, targets.Wishart(KAPPA0), alpha, lam, penalty)
    assert pred.converged
    sims = {d: _simulate(task, alpha, lam, penalty, d, seeds) for d in ds}
    out = []
    for k, name in enumerate(("objective", "trace")):
        a, err = _fit(ds, {d: sims[d][:, k] for d in ds})
        value = getattr(pred, name)
        err_se = pred.integration_error * abs(value)
        out.append((name, a, err, value, 3 * err + 3 * err_se))
    return out


def _report(rows):
    return "\n".join(
        f"{n}: extrapolated {a:.5f} +- {e:.5f}, SE {v:.5f}, tol {t:.5f}" for n, a, e, v, t in rows
    )


FAST = (tasks.Linear(T=1, noise=0.25), 0.6, 0.3, "nuclear")
FAST_DS, FAST_SEEDS = (16, 24, 32, 48), 8


def test_objective_and_trace_match_convex_solver_fast():
    rows = _compare(FAST, FAST_DS, FAST_SEEDS)
    assert all(abs(a - v) <= t for _, a, _, v, t in rows), _report(rows)


def test_objective_check_can_fail():
    """The band rejects the objective with the penalty term halved or doubled (a lost
    1/2 of the Frobenius term, or ``d lam Tr S`` counted per ``d^2`` instead of per ``n``)."""
    task, alpha, lam, penalty = FAST
    pred = se.solve(task, targets.Wishart(KAPPA0), alpha, lam, penalty)
    penalty_term = pred.objective - pred.train_loss
    assert penalty_term == pytest.approx(lam * pred.trace / alpha, rel=1e-12)
    a, err = _fit(FAST_DS, {d: _simulate(*FAST, d, FAST_SEEDS)[:, 0] for d in FAST_DS})
    for wrong in (pred.train_loss + 0.5 * penalty_term, pred.train_loss + 2 * penalty_term):
        assert abs(a - wrong) > 3 * err, (a, err, wrong)


def test_objective_fields_nan_when_not_converged_and_zero_phase():
    task, target = tasks.Linear(T=1, noise=0.25), targets.Wishart(KAPPA0)
    r = se.solve(task, target, 0.6, 1e3)  # S_hat = 0: the zero phase
    assert r.converged and r.q == 0.0 and r.trace == 0.0
    assert r.objective == pytest.approx(r.train_loss)
    pb = se.drivers._problem(task, target, 0.6, 0.3, "nuclear", ((8192, 4, 0), 5))
    bad = se.point.failed(pb, 0.3, 1.0, 10)
    assert math.isnan(bad.objective) and math.isnan(bad.trace) and bad.alternatives == ()


def test_frobenius_trace_closed_form():
    """Frobenius: ``trace = c Tr(S0)/d / (1 + tau)`` and the penalty term ``(lam/2) q / alpha``."""
    target = targets.Wishart(KAPPA0)
    r = se.solve(tasks.Linear(T=1, noise=0.25), target, 0.6, 0.3, "frobenius")
    assert r.trace == pytest.approx(r.c / (1 + r.tau) * math.sqrt(KAPPA0), rel=1e-5)
    assert r.objective == pytest.approx(r.train_loss + 0.15 * r.q / 0.6, rel=1e-12)


NOISY, CLEAN = 0.25, 0.0
# Measured (d = 30, 40, 60, 80, 4 seeds; extrapolated objective +- error against SE):
# linear noisy nuclear 0.4415 +- 0.0081 / 0.4458, Frobenius 0.3757 +- 0.0162 / 0.3750,
# clean nuclear 0.1985 +- 0.0047 / 0.1975, Frobenius 0.1429 +- 0.0081 / 0.1353;
# seq2seq noisy nuclear 0.1613 +- 0.0021 / 0.1638, Frobenius 0.0987 +- 0.0022 / 0.0997,
# clean nuclear 0.1252 +- 0.0023 / 0.1241, Frobenius 0.0634 +- 0.0020 / 0.0621;
# seq2lab noisy nuclear 0.02013 +- 0.00048 / 0.02018, Frobenius 0.01304 +- 0.00024 /
# 0.01309, clean nuclear 0.01581 +- 0.00033 / 0.01604, Frobenius 0.01012 +- 0.00036 /
# 0.01018. Every trace within its band too (largest gap 1.4 sigma, linear clean Frobenius).
SLOW_CASES = {
    "linear-noisy-nuclear": (tasks.Linear(T=1, noise=NOISY), 0.6, 0.3, "nuclear"),
    "linear-noisy-frobenius": (tasks.Linear(T=1, noise=NOISY), 0.6, 0.3, "frobenius"),
    "linear-clean-nuclear": (tasks.Linear(T=1, noise=CLEAN), 0.3, 0.1, "nuclear"),
    "linear-clean-frobenius": (tasks.Linear(T=1, noise=CLEAN), 0.3, 0.1, "frobenius"),
    "seq2seq-noisy-nuclear": (tasks.Seq2Seq(T=2, noise=NOISY), 0.3, 0.1, "nuclear"),
    "seq2seq-noisy-frobenius": (tasks.Seq2Seq(T=2, noise=NOISY), 0.3, 0.1, "frobenius"),
    "seq2seq-clean-nuclear": (tasks.Seq2Seq(T=2, noise=CLEAN), 0.15, 0.05, "nuclear"),
    "seq2seq-clean-frobenius": (tasks.Seq2Seq(T=2, noise=CLEAN), 0.15, 0.05, "frobenius"),
    "seq2lab-noisy-nuclear": (tasks.Seq2Lab(T=2, noise=NOISY), 0.6, 0.02, "nuclear"),
    "seq2lab-noisy-frobenius": (tasks.Seq2Lab(T=2, noise=NOISY), 0.6, 0.02, "frobenius"),
    "seq2lab-clean-nuclear": (tasks.Seq2Lab(T=2, noise=CLEAN), 0.6, 0.02, "nuclear"),
    "seq2lab-clean-frobenius": (tasks.Seq2Lab(T=2, noise=CLEAN), 0.6, 0.02, "frobenius"),
}
SLOW_DS, SLOW_SEEDS = (30, 40, 60, 80), 4


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SLOW_CASES))
def test_objective_and_trace_match_convex_solver(name):
    rows = _compare(SLOW_CASES[name], SLOW_DS, SLOW_SEEDS)
    assert all(abs(a - v) <= t for _, a, _, v, t in rows), f"{name}\n" + _report(rows)


def test_rank_constraint_raises_the_objective():
    """The width-``kappa`` fixed point minimises over fewer matrices: its objective is
    above the convex one and its trace is that of the cut map (linear, Wishart 0.5,
    alpha 0.6, lam 0.3, kappa 0.2: 0.657 against 0.446)."""
    from attnlib import width

    w = width.solve(tasks.Linear(T=1, noise=0.25), targets.Wishart(KAPPA0), 0.6, 0.3, 0.2)
    assert w.constrained and w.se.objective > w.convex.objective
    assert w.se.objective == pytest.approx(w.se.train_loss + 0.3 * w.se.trace / 0.6, rel=1e-12)
    assert 0 < w.se.trace < w.convex.trace
