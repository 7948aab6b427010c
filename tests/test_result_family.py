"""One result family: every public solver reports the same diagnostics and follows one
of two failure policies (attnlib/ARCHITECTURE.md, "Conventions").

The diagnostics are ``converged``, ``residual``, ``n_iter`` and ``integration_error``
(the error of the metrics at the fixed point; 0 for closed forms).

- Theory solvers (state evolutions: ``se.solve``, ``se.learning_curve``,
  ``se.solve_accurate``, ``width.solve``, ``hardmax.solve``, ``bayes.solve``): a point
  not reached is ``converged=False``, NaN in every order parameter and metric (the
  inputs and the diagnostics stay), and an ``se.SEConvergenceWarning``.
- Algorithms on data (``amp.gamp``, ``hardmax.gamp``, ``bayes.gamp_rie``; training:
  ``train.train_factorized`` (Adam on ``W``), ``train_direct``, ``train_convex``): their
  result is an estimator, so a run stopped by its iteration budget returns its last
  iterate (finite) with ``converged=False`` and a ``RuntimeWarning``; NaN only on a
  breakdown (GAMP: ``tests/test_amp.py::test_breakdown_stops_with_nan_and_a_warning``;
  training: a step size that makes Adam's objective non-finite is refused as a bad
  argument, a ``ValueError`` naming ``learning_rate``, and FISTA backtracks).
  Not applicable on data: ``integration_error`` (nothing is integrated: the metrics are
  those of the data set at hand, their sampling error is not the solver's).

Every failure is driven cheaply (``max_iter`` 1 or 2, the linear task's closed-form
output side, small ``n_qmc``, ``d = 8``); :func:`test_the_check_fails_on_a_missing_field`
shows that the diagnostics check fails on a result type without one of them.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import NamedTuple

import jax
import numpy as np
import pytest

import attnlib  # noqa: F401
from attnlib import amp, bayes, hardmax, se, targets, tasks, train, width

DIAGNOSTICS = ("converged", "residual", "n_iter", "integration_error")
# per result type, what is not an order parameter or a metric: inputs, labels, diagnostics
# (the replicon is a stability diagnostic, NaN where not defined: rank-constrained students)
NOT_METRICS = {"alpha", "lam", "Q0", "kappa", "penalty", "alternatives", "other_fixed_point",
               "replicon", *DIAGNOSTICS}  # fmt: skip

W05 = targets.Wishart(0.5)
LIN = tasks.Linear(T=1, noise=0.25)
HM = tasks.Hardmax(T=2)
ALPHA, LAM = 0.5, 0.1
D = 8


def missing_diagnostics(result, names=DIAGNOSTICS) -> list:
    """The names of ``names`` that ``result`` (a result or a result type) does not carry."""
    return [n for n in names if not hasattr(result, n)]


def _theory(fail: bool):
    """``{name: call}`` of every theory solver; ``fail``: driven to a failure (max_iter 1
    or 2; Bayes: Brent's tolerance on ``log Delta`` 1.0, far above the residual's 1e-6)."""
    f = dict(max_iter=1) if fail else {}
    kappa = 0.2  # below kappa* = 0.61 of the convex point: the constraint binds
    return {
        "se.solve": lambda: se.solve(LIN, W05, ALPHA, LAM, **f),
        "se.learning_curve": lambda: se.learning_curve(LIN, W05, [0.4, ALPHA], LAM, **f),
        "se.solve_accurate": lambda: se.solve_accurate(LIN, W05, ALPHA, LAM, **f),
        "width.solve": lambda: width.solve(LIN, W05, ALPHA, LAM, kappa, **f),
        "hardmax.solve": lambda: hardmax.solve(
            HM, W05, ALPHA, 1.0, n_qmc=1024, **(dict(max_iter=2) if fail else dict(tol=0.05))
        ),
        "bayes.solve": lambda: bayes.solve(LIN, W05, 0.2, **(dict(xtol=1.0) if fail else {})),
    }


def _metrics(result) -> dict:
    """The order parameters and metrics of a theory result (``width``: those of ``se``, the
    fixed point it describes)."""
    if isinstance(result, width.WidthResult):
        return {f"se.{k}": v for k, v in _metrics(result.se).items()}
    out = {}
    for name in result._fields:
        value = getattr(result, name)
        if name not in NOT_METRICS and not isinstance(value, str):
            out[name] = np.asarray(value, dtype=float)
    return out


def _diagnostics_ok(result):
    """Each diagnostic of a converged theory result has its type and range."""
    conv, res, n, err = (np.asarray(getattr(result, d)) for d in DIAGNOSTICS)
    assert conv.dtype == bool and np.all(conv)
    assert np.all(np.isfinite(res)) and np.all(res >= 0)
    assert np.issubdtype(n.dtype, np.integer) and np.all(n >= 1)
    assert np.all(np.isfinite(err)) and np.all(err >= 0)


@pytest.mark.parametrize("name", sorted(_theory(False)))
def test_theory_result_has_the_diagnostics(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error", se.SEConvergenceWarning)
        r = _theory(False)[name]()
    assert not missing_diagnostics(type(r)), name
    _diagnostics_ok(r)
    assert all(np.all(np.isfinite(v)) for v in _metrics(r).values()), name


@pytest.mark.parametrize("name", sorted(_theory(True)))
def test_theory_failure_is_nan_and_a_warning(name):
    with pytest.warns(se.SEConvergenceWarning):
        r = _theory(True)[name]()
    assert not np.any(np.asarray(r.converged)), name
    metrics = _metrics(r)
    assert metrics and all(np.all(np.isnan(v)) for v in metrics.values()), {
        k: v for k, v in metrics.items() if not np.all(np.isnan(v))
    }
    n_iter = np.asarray(r.n_iter)
    assert np.issubdtype(n_iter.dtype, np.integer) and np.all(n_iter >= 1)
    assert np.all(~np.isnan(np.asarray(r.residual, dtype=float)))  # the best residual seen


def test_width_result_diagnostics_are_those_of_its_fixed_point():
    """Where only the constrained map fails (the convex point given, ``max_iter=1``: both
    attempts, 1 and 5 maps, too short), ``se`` is NaN and ``convex`` keeps its point."""
    convex, warm = se.solve(LIN, W05, ALPHA, LAM, return_warm=True)
    ok = width.solve(LIN, W05, ALPHA, LAM, 0.2, convex=convex, init=warm)
    assert ok.constrained and ok.converged
    assert (ok.residual, ok.n_iter, ok.integration_error) == (
        ok.se.residual, ok.se.n_iter, ok.se.integration_error)  # fmt: skip
    with pytest.warns(se.SEConvergenceWarning):
        r = width.solve(LIN, W05, ALPHA, LAM, 0.2, convex=convex, init=warm, max_iter=1)
    assert r.constrained and not r.converged and r.n_iter == 1 + 5
    assert all(np.isnan(v) for v in _metrics(r).values())
    assert r.convex is convex and r.kappa_star == convex.rank_fraction


def _data_solvers():
    """``{name: (call(max_iter), diagnostics that apply)}`` of the algorithms on data."""
    key = jax.random.PRNGKey(0)
    S0 = np.asarray(W05.sample(key, D))
    ldata = tasks.make_dataset(key, LIN, S0, round(ALPHA * D * D))
    hdata = tasks.make_dataset(key, HM, S0, round(ALPHA * D * D))
    gamp_diag = ("converged", "residual", "n_iter")
    train_diag = ("converged", "residual", "n_iter")
    return {
        "amp.gamp": (lambda k: amp.gamp(LIN, ldata, 0.3, max_iter=k), gamp_diag),
        "hardmax.gamp": (lambda k: hardmax.gamp(HM, hdata, W05, max_iter=k), gamp_diag),
        "bayes.gamp_rie": (lambda k: bayes.gamp_rie(LIN, ldata, W05, max_iter=k), gamp_diag),
        "train.train_factorized": (
            lambda k: train.train_factorized(key, LIN, ldata, 2, 0.1, max_iter=10 * k, chunk=10),
            train_diag,
        ),
        "train.train_direct": (
            lambda k: train.train_direct(LIN, ldata, 0.1, max_iter=10 * k, chunk=10),
            train_diag,
        ),
        "train.train_convex": (
            lambda k: train.train_convex(LIN, ldata, 0.1, max_iter=10 * k, chunk=10),
            train_diag,
        ),
    }


@pytest.mark.parametrize("name", sorted(_data_solvers()))
def test_data_result_has_its_diagnostics_and_keeps_the_last_iterate(name):
    """One iteration (GAMP) or one chunk of 10 steps (training): not converged, a
    ``RuntimeWarning``, the last iterate finite, the diagnostics set."""
    call, names = _data_solvers()[name]
    with pytest.warns(RuntimeWarning, match="converge"):
        r = call(1)
    assert not missing_diagnostics(type(r), names), name
    assert "integration_error" not in type(r)._fields  # not applicable on data (docstring)
    assert r.converged is False
    assert math.isfinite(r.residual) and r.residual > 0
    count = getattr(r, names[2])
    assert isinstance(count, numbers.Integral) and count == (1 if "gamp" in name else 10)
    assert np.all(np.isfinite(r.S)), name
    if "gamp" in name:
        assert r.status == "max_iter" and np.isfinite(r.v) and np.isfinite(r.a_hat)


class _NoIntegrationError(NamedTuple):
    converged: bool
    residual: float
    n_iter: int


def test_the_check_fails_on_a_missing_field(monkeypatch):
    """The checks above can fail: a result type without ``integration_error`` is reported,
    and so is ``WidthResult`` with its ``converged`` property removed."""
    assert missing_diagnostics(_NoIntegrationError) == ["integration_error"]
    assert missing_diagnostics(_NoIntegrationError(True, 0.0, 1)) == ["integration_error"]
    monkeypatch.delattr(width.WidthResult, "converged")
    assert missing_diagnostics(width.WidthResult) == ["converged"]
    with pytest.raises(AssertionError):
        test_theory_result_has_the_diagnostics("width.solve")
