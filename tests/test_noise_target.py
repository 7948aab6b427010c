"""The paper's noise placement ``noise_on="target"`` and the three test errors.

``noise_on="target"`` adds to the target's pairs a symmetric Gaussian of pair variance
``(Delta/2) sigma_ab^2`` (arXiv:2509.24914): checked here against its definition on
sampled labels, against the other placements at ``T = 1`` (the same model), and through
the noisy test error, whose floor ``e0`` and formulas from the overlaps are compared with
fresh noisy test sets at ``d = 200``. The closed-form ridgeless interpolation threshold
(:func:`attnlib.thresholds.interpolation_formula`, the free convolution) is compared with
the state evolution's own bisection probes and with the convex solver on data.
"""

from __future__ import annotations

import math
import warnings

import jax
import numpy as np
import pytest

from attnlib import bayes, channels, se, targets, tasks, thresholds, train
from attnlib.thresholds.interpolation import _lam0_fixed_point
from attnlib.thresholds.ridgeless import _J

TARGET = targets.Wishart(0.5)
DELTA = 0.25


def _pairs_noise(task, n=200_000, seed=0):
    """Noise ``u - h0`` on the pairs of ``n`` labels of a linear-output task."""
    T = task.T
    h0 = np.zeros((n, T, T))
    Y = task.labels(jax.random.PRNGKey(seed), h0)
    return np.asarray(tasks.to_pairs(Y))


@pytest.mark.parametrize("T", [2, 3])
def test_target_noise_has_the_pair_variances_of_h(T):
    """Labels of ``Linear(noise_on="target")`` at ``h0 = 0`` are the noise itself: its
    pair variances are ``Delta`` on the diagonal and ``Delta/2`` off it, the pairs
    uncorrelated (sample of 2e5; tolerance 5 standard errors, ``sqrt(2/n) var``)."""
    xi = _pairs_noise(tasks.Linear(T=T, noise=DELTA, noise_on="target"))
    n = len(xi)
    ia, ib = tasks.pair_indices(T)
    want = np.where(ia == ib, DELTA, DELTA / 2)
    var = xi.var(axis=0)
    np.testing.assert_allclose(var, want, atol=5 * math.sqrt(2 / n) * DELTA)
    cov = np.cov(xi.T) - np.diag(var)
    assert np.max(np.abs(cov)) < 5 * DELTA / math.sqrt(n)


def test_seq2seq_target_noise_is_logit_noise_of_that_law():
    """Seq2seq labels with target noise are softmax rows of ``h0 + xi`` with the same
    ``xi`` law: the logits recovered from the attention (up to the global shift) have
    pair differences of variance ``Delta + Delta/2`` (``xi_00 - xi_01``) at ``h0 = 0``."""
    task = tasks.Seq2Seq(T=2, noise=DELTA, noise_on="target")
    n = 200_000
    Y = np.asarray(task.labels(jax.random.PRNGKey(1), np.zeros((n, 2, 2))))
    u = channels.posterior.logits_from_attention(Y, task.beta)  # shift-free differences
    diff = u[:, 0] - u[:, 1]
    assert abs(diff.var() - 1.5 * DELTA) < 5 * math.sqrt(2 / n) * 1.5 * DELTA
    assert abs(np.mean(u[:, 0] - u[:, 2])) < 5 * math.sqrt(2 * DELTA / n)


def test_T1_placements_are_one_model():
    """At ``T = 1`` the one pair is diagonal: ``"target"`` and ``"logits"`` give the same
    labels from one key (a custom non-linear task too), the same QMC labels in the
    state evolution, and the same fixed point (closed forms: to 1e-12)."""
    h0 = np.asarray(jax.random.normal(jax.random.PRNGKey(2), (64, 1, 1)))
    key = jax.random.PRNGKey(3)
    for make in (
        lambda on: tasks.Linear(T=1, noise=DELTA, noise_on=on),
        lambda on: tasks.Custom(T=1, g=lambda h: h**3, noise=DELTA, noise_on=on),
    ):
        a, b = make("target"), make("logits")
        np.testing.assert_allclose(a.labels(key, h0), b.labels(key, h0), rtol=1e-15)
        z = np.asarray(jax.random.normal(key, (64, 2)))
        ya, sa = channels.for_task(a).labels(z[:, :1], z[:, 1:])
        yb, sb = channels.for_task(b).labels(z[:, :1], z[:, 1:])
        np.testing.assert_allclose(ya, yb, rtol=1e-15)
        np.testing.assert_allclose(sa, sb, rtol=1e-15)
    ra = se.solve(tasks.Linear(T=1, noise=DELTA, noise_on="target"), TARGET, 0.4, 0.05, tol=1e-12)
    rb = se.solve(tasks.Linear(T=1, noise=DELTA), TARGET, 0.4, 0.05, tol=1e-12)
    for f in ("m", "q", "v", "test_error", "test_error_noisy", "e0", "train_loss"):
        np.testing.assert_allclose(getattr(ra, f), getattr(rb, f), rtol=1e-12, err_msg=f)
    assert ra.e0 == pytest.approx(DELTA, rel=1e-14)  # the noise's variance


def _student(S0, key, shrink=0.8, noise=0.4):
    """A fixed estimate near ``S0``: ``shrink S0 + noise G``, ``G`` a GOE matrix."""
    d = S0.shape[0]
    G = np.asarray(jax.random.normal(key, (d, d))) / math.sqrt(d)
    return shrink * S0 + noise * (G + G.T) / math.sqrt(2)


CASES = {
    "seq2seq_target": tasks.Seq2Seq(T=2, noise=0.5, noise_on="target"),
    "seq2seq_logits": tasks.Seq2Seq(T=2, noise=0.5),
    "seq2seq_outputs": tasks.Seq2Seq(T=2, noise=0.05, noise_on="outputs"),
    "seq2lab_target": tasks.Seq2Lab(T=2, noise=0.5, noise_on="target"),
    "linear_target": tasks.Linear(T=2, noise=0.5, noise_on="target"),
    "hardmax_target": tasks.Hardmax(T=2, noise=0.5, noise_on="target"),
    # the rest of the paper's model: beta0 != beta, output noise (tests/test_teacher_model.py)
    "seq2seq_beta0": tasks.Seq2Seq(T=2, beta=1.0, beta0=2.0, noise=0.5),
    "seq2seq_both_noises": tasks.Seq2Seq(T=2, noise=0.5, noise_on="target", noise_out=0.02),
    "seq2lab_beta0_both": tasks.Seq2Lab(T=2, beta=1.0, beta0=0.5, noise=0.3, noise_out=0.01),
    "seq2seq_T3_beta0_out": tasks.Seq2Seq(T=3, beta=2.0, beta0=1.0, noise_out=0.01),
}
_SLOW_CASES = ("seq2lab_beta0_both", "seq2seq_T3_beta0_out")  # 10-11 s each, loaded machine


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=[pytest.mark.slow] if n in _SLOW_CASES else []) for n in CASES],
)
def test_test_errors_from_overlaps_match_fresh_noisy_test_sets(name):
    """For a fixed ``S`` at ``d = 200``, the formulas from the measured overlaps ``(Q0, m,
    q)`` (:meth:`attnlib.channels.Channel.test_errors`, ``noise_floor``) against
    :func:`attnlib.train.test_errors` on 20000 fresh sequences with fresh noisy labels:
    ``test_error``, ``test_error_noisy`` and ``e0`` within 4 Monte Carlo standard errors
    plus the formula's QMC error plus 1.5 % (the ``O(1/sqrt(d))`` non-Gaussianity of the
    pairs at ``d = 200``)."""
    task = CASES[name]
    d = 200
    S0 = np.asarray(TARGET.sample(jax.random.PRNGKey(4), d))
    S = _student(S0, jax.random.PRNGKey(5))
    ov = train.overlaps(S, S0)
    ch = channels.for_task(task)
    te = ch.test_errors(ov.Q0, ov.m, ov.q, (8192, 4, 0))
    e0, e0_err = ch.noise_floor(ov.Q0, (8192, 4, 0))
    emp = train.test_errors(jax.random.PRNGKey(6), task, S0, S, n_test=20000)
    want = (te.test_error, te.test_error_noisy, e0)
    qmc = (te.stderr[0], te.stderr[1], e0_err)
    for k, label in enumerate(("test_error", "test_error_noisy", "e0")):
        tol = 4 * emp.stderr[k] + 4 * qmc[k] + 0.015 * want[k]
        assert abs(emp[k] - want[k]) < tol, (label, emp[k], want[k], tol)
    assert emp.e0 > 0 and emp.test_error_noisy > emp.e0


def test_noise_floor_closed_forms_against_data():
    """The closed forms of ``e0``: the noise's total variance (linear, ``3 Delta`` at
    ``T = 2`` with target noise: ``Delta + 2 Delta/2 + Delta``) and ``Delta`` times the
    number of outputs (noise on the outputs), against data (the target itself)."""
    d = 60
    S0 = np.asarray(TARGET.sample(jax.random.PRNGKey(7), d))
    for task, e0 in ((tasks.Linear(T=2, noise=0.5, noise_on="target"), 1.5),
                     (tasks.Linear(T=2, noise=0.5), 2.0),
                     (tasks.Seq2Seq(T=3, noise=0.1, noise_on="outputs"), 0.9)):  # fmt: skip
        emp = train.test_errors(jax.random.PRNGKey(8), task, S0, S0, n_test=20000)
        assert emp.test_error == 0.0
        assert abs(emp.e0 - e0) < 4 * emp.stderr[2]
        assert se.noise_floor(task, float(TARGET.Q0)) == pytest.approx(e0, rel=1e-14)


def test_se_result_reports_e0():
    """``SEResult.e0`` and ``LearningCurve.e0`` (linear, closed forms): the floor at the
    target's ``Q0``, the noise's variance ``Delta`` at ``T = 1``, against the error of
    ``S0`` itself on fresh noisy labels (4 standard errors); 0 without noise, and
    ``summary()`` lists it only where it is positive."""
    task = tasks.Linear(T=1, noise=0.3)
    curve = se.learning_curve(task, TARGET, [0.4, 0.6], 0.1)
    S0 = np.asarray(TARGET.sample(jax.random.PRNGKey(9), 50))
    emp = train.test_errors(jax.random.PRNGKey(10), task, S0, S0, n_test=20000)
    assert np.all(np.abs(curve.e0 - emp.e0) < 4 * emp.stderr[2])
    r = se.solve(task, TARGET, 0.5, 0.1)
    assert r.test_error_noisy > r.e0 > 0 and "e0" in r.summary()
    clean = se.solve(tasks.Linear(T=1), TARGET, 0.5, 0.1)
    assert clean.e0 == 0.0 and "e0" not in clean.summary()


@pytest.mark.slow
def test_se_result_reports_e0_seq2seq_target():
    """``SEResult.e0`` of seq2seq with the paper's noise (QMC) against the error of
    ``S0`` itself on fresh noisy labels at ``d = 200`` (4 standard errors + 1.5 %)."""
    task = tasks.Seq2Seq(T=2, noise=0.5, noise_on="target")
    r = se.solve(task, TARGET, 0.5, 0.1)
    S0 = np.asarray(TARGET.sample(jax.random.PRNGKey(9), 200))
    emp = train.test_errors(jax.random.PRNGKey(10), task, S0, S0, n_test=20000)
    assert abs(r.e0 - emp.e0) < 4 * emp.stderr[2] + 0.015 * r.e0
    assert r.test_error_noisy > r.e0 > 0


def test_J_derivative_is_the_free_heat_equation():
    """``J'(delta) = 2 int x_+ h_R rho_R`` (what the formula uses) against a central
    difference of ``J`` (step 1e-4 relative: error ~1e-8), and ``J`` itself against the
    eigenvalues of sampled ``R = S0 + sqrt(delta) W_goe`` at ``d = 600`` (3 draws; 2 %)."""
    delta = 0.8
    J, dJ = _J(TARGET, delta)
    h = 1e-4 * delta
    fd = (_J(TARGET, delta + h)[0] - _J(TARGET, delta - h)[0]) / (2 * h)
    assert dJ == pytest.approx(fd, rel=1e-6)
    d, vals = 600, []
    for k in range(3):
        S0 = np.asarray(TARGET.sample(jax.random.PRNGKey(20 + k), d))
        G = np.asarray(jax.random.normal(jax.random.PRNGKey(30 + k), (d, d)))
        W = (G + G.T) / math.sqrt(2 * d)
        ev = np.linalg.eigvalsh(S0 + math.sqrt(delta) * W)
        vals.append(np.sum(np.maximum(ev, 0) ** 2) / d)
    assert np.mean(vals) == pytest.approx(J, rel=0.02)


def test_equivalent_noise():
    """``Delta_e``: ``Delta`` for target noise (any ``T``), ``5 Delta / 4`` for logit noise
    on ``T = 2`` seq2seq (the whitened noise ``(Delta/2, Delta, Delta/2)`` less its part
    along the lost shift ``(1, 2, 1)/4``, over ``m_eff = 2``), ``Delta`` for linear ``T = 1``."""
    f = thresholds.equivalent_noise
    for T in (2, 3, 4):
        assert f(tasks.Seq2Seq(T=T, noise=0.3, noise_on="target")) == pytest.approx(0.3)
        assert f(tasks.Linear(T=T, noise=0.3, noise_on="target")) == pytest.approx(0.3)
    assert f(tasks.Seq2Seq(T=2, noise=0.4)) == pytest.approx(0.5)
    assert f(tasks.Linear(T=1, noise=0.4)) == pytest.approx(0.4)
    with pytest.raises(ValueError, match="task"):
        f(tasks.Seq2Lab(T=2, noise=0.4))
    with pytest.raises(ValueError, match="task"):
        thresholds.interpolation_formula(tasks.Linear(T=1), TARGET)
    out = thresholds.interpolation_formula(
        tasks.Seq2Seq(T=2, noise=0.3, noise_on="outputs"), TARGET
    )
    assert out.alpha == 0.0


def _probe(task, alpha):
    """Whether the ``lam = 0`` state evolution has a fixed point at ``alpha`` (the probe
    of :func:`attnlib.thresholds.interpolation_se`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _lam0_fixed_point(task, TARGET, alpha, None, {}) is not None


@pytest.mark.parametrize(
    "task",
    [
        tasks.Linear(T=1, noise=0.25),
        pytest.param(tasks.Linear(T=2, noise=0.5, noise_on="target"), marks=pytest.mark.slow),
        pytest.param(tasks.Linear(T=2, noise=0.5), marks=pytest.mark.slow),
    ],
    ids=["linear_T1", "linear_T2_target", "linear_T2_logits"],
)
def test_formula_brackets_the_se_threshold_linear(task):
    """The closed form against the state evolution's bisection probes: the ``lam = 0``
    fixed point exists 0.5 % above the formula's threshold and not 0.5 % below it
    (``interpolation_se``'s ``xtol = 1e-3`` is 0.3 % of these thresholds)."""
    a = thresholds.interpolation_formula(task, TARGET).alpha
    assert _probe(task, 1.005 * a)
    assert not _probe(task, 0.995 * a)


@pytest.mark.slow
@pytest.mark.parametrize("noise", [0.1, 0.25, 1.0])
def test_formula_brackets_the_se_threshold_seq2seq(noise):
    """As above for softmax seq2seq ``T = 2`` with the paper's noise at ``Delta`` in
    ``{0.1, 0.25, 1}``, and with logit noise at ``Delta = 0.25`` (``Delta_e = 5 Delta /
    4``): fixed point 1 % above, none 1 % below (the probes of ``interpolation_se``)."""
    for task in (tasks.Seq2Seq(T=2, noise=noise, noise_on="target"),
                 *([tasks.Seq2Seq(T=2, noise=noise)] if noise == 0.25 else [])):  # fmt: skip
        a = thresholds.interpolation_formula(task, TARGET).alpha
        assert _probe(task, 1.01 * a), task
        assert not _probe(task, 0.99 * a), task


def test_bayes_information_of_target_noise_in_closed_form():
    """Seq2seq with the paper's noise: the noisy logits' whitened pairs ``u_ab / sigma_ab``
    have isotropic variance ``mmse + Delta/2`` given ``omega``, so the channel is ``m_eff``
    isotropic Gaussian measurements: ``J mmse = m_eff mmse / (mmse + Delta/2)`` (derived by
    hand; the library computes the shift-projected precision). At ``T = 1`` the Bayes fixed
    point is the same for both placements (linear task)."""
    for T in (2, 3):
        task = tasks.Seq2Seq(T=T, noise=0.5, noise_on="target")
        for mmse in (0.05, 0.3, 1.2):
            dof = bayes.information(task, mmse, 1.5).dof
            assert dof == pytest.approx(task.m_eff * mmse / (mmse + 0.25), rel=1e-12)
    a = bayes.solve(tasks.Linear(T=1, noise=0.3, noise_on="target"), TARGET, 0.4)
    b = bayes.solve(tasks.Linear(T=1, noise=0.3), TARGET, 0.4)
    for f in ("mse", "test_error", "Delta_eff", "e0"):
        assert getattr(a, f) == pytest.approx(getattr(b, f), rel=1e-10), f


@pytest.mark.slow
def test_gamp_rie_on_target_noise_data():
    """GAMP-RIE on seq2seq data with the paper's noise (``Delta = 0.5``, ``alpha = 0.5``,
    ``d = 150``, two seeds) against the Bayes-optimal state evolution's mse with the same
    placement (0.111; logit noise at the same Delta gives 0.130): below it by at most 3
    seed spreads (at least 0.005), above by 3 spreads plus a finite-size excess of 0.02
    (as for the noise-free seq2seq test of test_bayes.py)."""
    task = tasks.Seq2Seq(T=2, noise=0.5, noise_on="target")
    ref = bayes.solve(task, TARGET, 0.5).mse
    out = []
    for seed in (0, 1):
        k1, k2 = jax.random.split(jax.random.PRNGKey(200 + seed))
        S0 = TARGET.sample(k1, 150)
        data = tasks.make_dataset(k2, task, S0, tasks.n_samples(0.5, 150))
        out.append(bayes.gamp_rie(task, data, TARGET, S0=S0, max_iter=100, tol=1e-4).trace[-1])
    m = np.array(out)
    spread = max(m.std(ddof=1), 0.005)
    assert ref - 3 * spread < m.mean() < ref + 3 * spread + 0.02, (m, ref)


@pytest.mark.slow
def test_formula_against_the_convex_solver_on_data():
    """Seq2seq ``T = 2`` with the paper's noise ``Delta = 0.25``, ``d = 50``: the convex
    solver's train loss at ``lam = 1e-3`` and ``1e-4``. Below the closed-form threshold
    (``0.7 alpha_interp``) the data are interpolated and the train loss falls like
    ``lam^2`` (measured ratio 21-27 over two seeds, 100 in the limit); above it
    (``1.4 alpha_interp``) it stays (ratio 1.2). Asserted: ratio > 8 below, < 2 above."""
    task = tasks.Seq2Seq(T=2, noise=0.25, noise_on="target")
    a = thresholds.interpolation_formula(task, TARGET).alpha
    d = 50
    for fac, below in ((0.7, True), (1.4, False)):
        k1, k2 = jax.random.split(jax.random.PRNGKey(40))
        S0 = TARGET.sample(k1, d)
        data = tasks.make_dataset(k2, task, S0, tasks.n_samples(fac * a, d))
        loss = [
            train.train_loss(task, data, train.train_convex(task, data, lam, tol=1e-8).S)
            for lam in (1e-3, 1e-4)
        ]
        ratio = loss[0] / loss[1]
        assert (ratio > 8) if below else (ratio < 2), (fac, loss)
