"""Impossible requests raise at once with advice; long loops report progress through
logging ("attnlib") and stop at a time or evaluation limit."""

import logging
import time
import warnings

import jax
import numpy as np
import pytest

from attnlib import _checks, se, targets, tasks
from attnlib.targets import Wishart


def test_lam0_below_the_interpolation_bound_raises_at_once():
    """Seq2seq T = 3 (m_eff 5), noise 0.1: below 1/(4 m_eff) = 0.05 the lam = 0 state
    evolution has no fixed point (the issue's request ran 265 s before returning NaN)."""
    task, target = tasks.Seq2Seq(T=3, noise=0.1), Wishart(0.3)
    t0 = time.process_time()
    with pytest.raises(ValueError, match=r"lam = 0 at alpha = 0.03 < 1/\(4 m_eff\) = 0.05"):
        se.solve(task, target, 0.03, 0.0)
    with pytest.raises(ValueError, match="Use lam > 0"):
        se.learning_curve(task, target, [0.3, 0.03], 0.0)
    with pytest.raises(ValueError, match=r"1/\(2 m_eff\) = 0.1"):
        se.solve(task, target, 0.09, 0.0, "frobenius")
    assert time.process_time() - t0 < 5.0  # no state-evolution map was run


def test_lam0_without_a_unique_minimiser_is_refused_with_alpha_interp():
    """The other lam = 0 points the theory knows to be unsolvable, each refused in well
    under a second with the threshold named:
    - Frobenius below 1/(2 m_eff), at any noise (fewer equations than entries of S: the
      loss is flat along a null space; the old code returned "converged" points with
      v = 5e21 for noise-free labels);
    - nuclear + PSD, noise-free labels, below tangent_cone_dimension(kappa0) / m_eff
      (0.41 for Wishart(0.4), m_eff = 1): the PSD matrices fitting the data are not S0
      alone (old code: converged=True, v = 5e21, mse 1.5 at alpha = 0.3);
    - noisy logits below 1/(4 m_eff): the message gives the bracket of alpha_interp.
    Independent check of the thresholds: the closed forms 1/(2 m_eff) and
    kappa0 - kappa0^2/2 + (1 - kappa0)^2/4 written out here."""
    target = Wishart(0.4)
    k = 0.4
    free = k - k * k / 2 + (1 - k) ** 2 / 4  # 0.41
    t0 = time.process_time()
    with pytest.raises(ValueError, match=rf"alpha = 0.3 < alpha_interp = {free:.4g} \(noise-free"):
        se.solve(tasks.Linear(T=1), target, 0.3, 0.0)
    with pytest.raises(ValueError, match=r"alpha = 0.2 < 1/\(2 m_eff\) = 0.25: fewer equations"):
        se.solve(tasks.Seq2Seq(T=2, noise=0.1, noise_on="outputs"), target, 0.2, 0.0, "frobenius")
    with pytest.raises(ValueError, match=r"< 1/\(2 m_eff\) = 0.5"):
        se.learning_curve(tasks.Linear(T=1), target, [0.6, 0.45], 0.0, "frobenius")
    with pytest.raises(ValueError, match=rf"lies in \[0.125, {free / 2:.4g}\]"):
        se.solve(tasks.Seq2Seq(T=2, noise=0.1), target, 0.1, 0.0)
    assert time.process_time() - t0 < 1.0
    # at and above the thresholds nothing is refused: the noise-free nuclear point is S0
    r = se.solve(tasks.Linear(T=1), target, 1.1 * free, 0.0)
    assert r.converged and r.mse < 1e-8


@pytest.mark.parametrize(
    "task",
    [tasks.Seq2Seq(T=3), tasks.Seq2Seq(T=3, noise=0.1, noise_on="outputs")],
    ids=["noise-free", "noise-on-outputs"],
)
def test_lam0_check_applies_to_noisy_logits_only(task):
    assert se.drivers._interpolation_bound(task, "nuclear") == 0.0


def test_make_dataset_estimates_memory_before_allocating(monkeypatch):
    task = tasks.Seq2Seq(T=3)
    S0 = Wishart(0.3).sample(jax.random.PRNGKey(0), 40)
    monkeypatch.setattr(_checks, "available_memory", lambda: 10 * 2**20)  # 10 MiB
    with pytest.raises(ValueError, match=r"n: a data set of n = 7500000 .* needs about 14.9 GiB"):
        tasks.make_dataset(jax.random.PRNGKey(1), task, S0, 7_500_000)  # ~15 GiB at d = 40
    with pytest.raises(ValueError, match=r"more than 80% of the 0.00977 GiB"):
        tasks.make_dataset(jax.random.PRNGKey(1), task, S0, 20_000)  # ~21 MiB
    assert tasks.make_dataset(jax.random.PRNGKey(1), task, S0, 1000).X.shape == (1000, 3, 40)


@pytest.mark.parametrize(
    "target",
    [
        Wishart(0.4),
        targets.PowerLaw(),
        targets.Explicit((1.0, 2.0)),
        targets.Spiked((3.0,), Wishart(0.5)),
        targets.PowerLawModes(2.0, 20),
    ],
    ids=lambda t: type(t).__name__,
)
def test_target_sample_estimates_memory_before_allocating(target, monkeypatch):
    """Wishart(0.4).sample(key, 200000) (four 320 GB matrices) aborted the interpreter in
    XLA; every target now refuses a sample beyond the available memory with a ValueError
    naming d. With 10 MiB available, d = 1000 (8 MB a matrix) is refused, d = 20 is not."""
    key = jax.random.PRNGKey(0)
    t0 = time.process_time()
    with pytest.raises(ValueError, match=r"d: a target sample S0 .* \(d = 200000\) needs about"):
        target.sample(key, 200_000)
    monkeypatch.setattr(_checks, "available_memory", lambda: 10 * 2**20)
    with pytest.raises(ValueError, match=r"more than 80% of the 0.00977 GiB .*; reduce d$"):
        target.sample(key, 1000)
    assert time.process_time() - t0 < 2.0  # refused before any allocation
    assert target.sample(key, 20).shape == (20, 20)


def test_other_large_allocations_estimate_memory(monkeypatch):
    """Sequences, the Haar matrix, the factor W of Adam and the LASSO matrix: a ValueError
    naming the size argument, at 10 MiB available."""
    from attnlib import scaling, train

    monkeypatch.setattr(_checks, "available_memory", lambda: 10 * 2**20)
    key = jax.random.PRNGKey(0)
    with pytest.raises(ValueError, match=r"^n: n = 100000 sequences"):
        tasks.sample_sequences(key, 100_000, 3, 40)
    with pytest.raises(ValueError, match=r"^d: a Haar orthogonal"):
        targets.haar_orthogonal(key, 2000)
    with pytest.raises(ValueError, match=r"^N: the matrix A \(2000 x 4000\)"):
        scaling.lasso_data(key, scaling.PowerLawModes(2.0, 4), 4000, 0.5)
    task = tasks.Linear(T=1)
    data = tasks.make_dataset(key, task, np.eye(12), 20)
    with pytest.raises(ValueError, match=r"^p: the factor W \(d = 12, p = 100000\)"):
        train.train_factorized(key, task, data, 100_000, 0.1, max_iter=1)


def test_learning_curve_logs_its_progress(caplog):
    with caplog.at_level(logging.INFO, logger="attnlib"):
        se.learning_curve(tasks.Linear(T=1, noise=0.1), Wishart(0.5), [0.3, 0.35], 0.01)
    assert any("learning_curve: point 2/2" in r.getMessage() for r in caplog.records)


def test_interpolation_bracket_stops_at_its_limits_and_logs(caplog):
    """Linear T = 1, noise 0.25, Wishart(0.5): bisection to xtol 1e-4 would take about 12
    solves; max_solves = 4 stops it after two probes, with a warning and the bracket."""
    from attnlib import thresholds

    task, target = tasks.Linear(T=1, noise=0.25), Wishart(0.5)
    with caplog.at_level(logging.INFO, logger="attnlib"):
        with pytest.warns(RuntimeWarning, match="stopped at max_solves = 4"):
            r = thresholds.interpolation_se_bracket(task, target, xtol=1e-4, max_solves=4)
    assert r.n_solves == 4 and r.lo < r.alpha < r.hi and r.hi - r.lo > 1e-4
    probes = [x for x in caplog.records if "interpolation_se: probe" in x.getMessage()]
    assert len(probes) == 2
    with pytest.warns(RuntimeWarning, match="stopped at time_limit = 0.001 s"):
        thresholds.interpolation_se_bracket(task, target, xtol=1e-4, time_limit=1e-3)
    with pytest.raises(ValueError, match="max_solves"):
        thresholds.interpolation_se_bracket(task, target, max_solves=1)


@pytest.mark.parametrize("solver", ["convex", "factorized", "direct"])
def test_training_stops_at_its_time_limit_and_logs(solver, caplog, monkeypatch):
    from attnlib import train
    from attnlib.train import progress

    monkeypatch.setattr(progress, "LOG_EVERY_S", 0.0)  # log after every chunk
    task = tasks.Seq2Seq(T=2)
    S0 = Wishart(0.5).sample(jax.random.PRNGKey(0), 12)
    data = tasks.make_dataset(jax.random.PRNGKey(1), task, S0, tasks.n_samples(0.5, 12))
    run = {
        "convex": lambda **kw: train.train_convex(task, data, 0.1, tol=0.0, chunk=5, **kw),
        "factorized": lambda **kw: train.train_factorized(
            jax.random.PRNGKey(2), task, data, 12, lam=0.1, tol=0.0, chunk=5, **kw
        ),
        "direct": lambda **kw: train.train_direct(task, data, 0.1, tol=0.0, chunk=5, **kw),
    }[solver]
    with caplog.at_level(logging.INFO, logger="attnlib"):
        res = run(time_limit=1e-6)
    assert not res.converged and res.n_iter == 5  # one chunk, then the limit
    messages = [r.getMessage() for r in caplog.records]
    assert any("steps, residual" in m for m in messages)
    assert any("stopped at time_limit = 1e-06 s after 5 steps" in m for m in messages)
    with pytest.raises(ValueError, match="time_limit"):
        run(time_limit=-1.0)


@pytest.mark.parametrize("solver", ["se", "bayes", "hardmax", "search"])
def test_long_theory_calls_log_their_progress_at_info(solver, caplog, monkeypatch):
    """Every call that can run past about 10 s says what it does at INFO at least every
    LOG_EVERY_S = 10 s (here 0: every step) on its module's logger under "attnlib"."""
    from attnlib import _limits, bayes, hardmax

    monkeypatch.setattr(_limits, "LOG_EVERY_S", 0.0)
    target = Wishart(0.5)
    run, logger, text = {
        "se": (lambda: se.solve(tasks.Linear(T=1, noise=0.1), target, 0.3, 0.05),
               "attnlib.se", "state evolution at alpha 0.3"),
        "bayes": (lambda: bayes.solve(tasks.Seq2Seq(T=2, noise=0.1), target, 0.3),
                  "attnlib.bayes", "bayes.solve at alpha 0.3"),
        "hardmax": (lambda: hardmax.solve(tasks.Hardmax(T=2), target, 0.5, 1.0, max_iter=3,
                                          n_qmc=1024),
                    "attnlib.se", "state evolution at alpha 0.5"),
        "search": (lambda: se.search_lambda(tasks.Linear(T=1, noise=0.1), target, 0.5,
                                            grid=[0.01, 0.1]),
                   "attnlib.se", "lambda search: solve 2"),
    }[solver]  # fmt: skip
    with caplog.at_level(logging.INFO, logger="attnlib"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run()
    lines = [r.getMessage() for r in caplog.records if r.name == logger]
    assert any(text in m for m in lines), lines[:5]
    assert all(r.levelno == logging.INFO for r in caplog.records if text in r.getMessage())
