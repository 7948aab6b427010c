"""attnlib.scaling: power-law mode targets, recovered modes, exponents, LASSO comparison.

Every check compares with an independent computation: sampled matrices, a convex
solver on data, a FISTA LASSO solver on data, Monte Carlo for the fit's error model,
or the closed-form exponent derived in the book (08_scaling_laws).
"""

import math
import warnings

import jax
import numpy as np
import pytest

import attnlib  # noqa: F401
from attnlib import scaling, se, targets, tasks, train
from attnlib.scaling import (
    LamSchedule,
    PowerLawModes,
    count_recovered,
    fit_power_law,
    lasso_data,
    lasso_se,
    lasso_solve,
    predicted_exponent,
)

# ----------------------------------------------------------------------------
# The target family
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("beta", [0.0, 0.5])
@pytest.mark.parametrize("kappa0", [1.0, 0.5])
def test_modes_normalisation_and_limit(beta, kappa0):
    tg = PowerLawModes(gamma=1.5, n_modes=6, kappa0=kappa0, share_exponent=beta)
    lam, pi = tg.mode_eigenvalues(), tg.mode_weights()
    assert np.all(np.diff(lam) < 0)
    np.testing.assert_allclose(lam / lam[0], np.arange(1, 7) ** -1.5, rtol=1e-13)
    np.testing.assert_allclose(pi / pi[0], np.arange(1, 7) ** -beta, rtol=1e-13)
    assert math.isclose(pi.sum(), kappa0, rel_tol=1e-13)
    mu = tg.measure()
    assert math.isclose(mu.weights.sum(), 1.0, rel_tol=1e-13)
    assert math.isclose(mu.moment(2), 1.0, rel_tol=1e-12)
    assert math.isclose(tg.kappa0, kappa0) and tg.outliers() == ()
    assert math.isclose(tg.r, (1 - beta) / 1.5)


def test_modes_sample_has_the_limit_spectrum():
    tg = PowerLawModes(gamma=1.0, n_modes=4, kappa0=0.5)
    d = 80  # 40 non-zero eigenvalues, 10 per mode: the finite-d spectrum is exact
    S0 = np.asarray(tg.sample(jax.random.PRNGKey(3), d))
    e = np.linalg.eigvalsh(S0)
    np.testing.assert_allclose(e, tg.eigenvalues(d), atol=1e-12)
    assert np.all(tg.mode_dims(d) == 10)
    assert math.isclose(np.sum(S0 * S0) / d, 1.0, rel_tol=1e-10)
    labels = tg.mode_labels(d)
    assert np.sum(labels == -1) == 40
    # counting function and threshold bias against direct sums over the eigenvalues
    for t in (0.1, 0.9, 5.0):
        assert math.isclose(tg.counting(t), np.mean(e > t + 1e-12), abs_tol=1e-12)
        assert math.isclose(tg.threshold_bias(t), np.mean(np.minimum(e, t) ** 2), rel_tol=1e-10)


def test_modes_errors():
    with pytest.raises(ValueError, match="gamma"):
        PowerLawModes(gamma=0.0)
    with pytest.raises(ValueError, match="n_modes"):
        PowerLawModes(n_modes=0)
    with pytest.raises(ValueError, match="kappa0"):
        PowerLawModes(kappa0=1.5)
    with pytest.raises(ValueError, match="share_exponent"):
        PowerLawModes(share_exponent=float("nan"))
    with pytest.raises(ValueError, match="d must be large enough"):
        PowerLawModes(n_modes=8, kappa0=0.5).mode_dims(10)


# ----------------------------------------------------------------------------
# Spectral components of the modes: theory vs sampled matrices
# ----------------------------------------------------------------------------


def test_spectral_summary_matches_sampled_matrices():
    """mse, learned fractions and strengths of F(S0 + sqrt(Delta) W) at d = 500.

    Finite-size errors: the normalised traces fluctuate by O(1/d) around their limits
    (1/d = 2e-3) and the per-mode fractions average over 125 eigenvectors each (their
    spread is a few 1e-3); tolerances of 0.03 (fractions, strengths) and 4 % (mse) leave
    room for the O(1/d) bias near the edges of the groups.
    """
    tg = PowerLawModes(gamma=1.0, n_modes=4, kappa0=0.75)
    Delta, tau = 0.05, 0.7
    th = scaling.spectral_summary(tg, Delta, tau)
    d = 500
    rng = np.random.default_rng(0)  # numpy sampling: independent of the library's sampler
    Q, Rq = np.linalg.qr(rng.standard_normal((d, d)))
    Q = Q * np.sign(np.diag(Rq))  # Haar orthogonal
    S0 = (Q * tg.sample_eigenvalues(d)) @ Q.T
    G = rng.standard_normal((d, d))
    W = (G + G.T) / math.sqrt(2 * d)  # GOE: off-diagonal variance 1/d, diagonal 2/d
    e, V = np.linalg.eigh(S0 + math.sqrt(Delta) * W)
    f = np.maximum(e - tau, 0.0)
    F = (V * f) @ V.T
    mse = np.sum((F - S0) ** 2) / d
    assert math.isclose(th.mse, mse, rel_tol=0.04)
    assert math.isclose(th.rank_fraction, np.mean(e > tau), abs_tol=0.01)
    rm = scaling.recovered_modes_trained(F, S0, tg)
    np.testing.assert_allclose(th.fractions, rm.fractions, atol=0.03)
    np.testing.assert_allclose(th.strengths, rm.strengths, atol=0.03)
    # the group fractions are not trivial here: some modes are partly kept
    assert np.any((th.fractions > 0.05) & (th.fractions < 0.95))


# ----------------------------------------------------------------------------
# Fits and derived exponents
# ----------------------------------------------------------------------------


def test_fit_power_law_exact_and_error_model():
    x = np.logspace(-1, 2, 20)
    fit = fit_power_law(x, 3.0 * x**-1.7)
    assert math.isclose(fit.exponent, 1.7, rel_tol=1e-12) and fit.stderr < 1e-10
    assert math.isclose(fit.prefactor, 3.0, rel_tol=1e-10)
    # the error model: i.i.d. Gaussian noise in log y. Over 400 synthetic data sets
    # |f - 1.7| < 1.96 stderr must hold 95 % of the time (t with 18 dof: 94 %);
    # the binomial standard deviation of the coverage is 1.2 %, so [0.90, 0.98].
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(400):
        y = 3.0 * x**-1.7 * np.exp(0.3 * rng.standard_normal(x.size))
        f = fit_power_law(x, y)
        hits += abs(f.exponent - 1.7) < 1.96 * f.stderr
    assert 0.90 <= hits / 400 <= 0.98
    sub = fit_power_law(x, 3.0 * x**-1.7, x_min=1.0, x_max=10.0)
    assert sub.n == int(np.sum((x >= 1) & (x <= 10)))


def test_fit_power_law_errors():
    with pytest.raises(ValueError, match="x must be > 0"):
        fit_power_law([0.0, 1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="y must be > 0"):
        fit_power_law([1.0, 2.0, 3.0], [1.0, -2.0, 3.0])
    with pytest.raises(ValueError, match="at least 3 points"):
        fit_power_law([1.0, 2.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="y has shape"):
        fit_power_law([1.0, 2.0, 3.0], [1.0, 2.0])


def test_predicted_exponent_phases():
    # noise-free: threshold phase while (1 + ell) r < 1, then samples phase; continuous
    p = predicted_exponent(2.0, 0.0)
    assert p.phase == "threshold" and math.isclose(p.zeta, 1.5)
    p = predicted_exponent(2.0, LamSchedule(1.0, 2.0))
    assert p.phase == "samples" and math.isclose(p.zeta, 3.0)
    for gamma in (0.75, 1.0, 1.5, 3.0):
        ell_c = gamma - 1.0  # boundary (1 + ell) / gamma = 1
        if ell_c > -1:
            lo = predicted_exponent(gamma, ell_c - 1e-9).zeta
            hi = predicted_exponent(gamma, ell_c + 1e-9).zeta
            assert math.isclose(lo, hi, abs_tol=1e-8)
    # noisy labels
    assert math.isclose(predicted_exponent(2.0, -0.5, noisy=True).zeta, 0.75)
    assert predicted_exponent(2.0, 0.0, noisy=True).zeta == 1.0
    assert math.isclose(predicted_exponent(2.0, -0.75, noisy=True).zeta, 0.25 * 1.5)
    # r = (1 - beta)/gamma is all that matters
    a = predicted_exponent(1.0, 0.3, share_exponent=0.5)
    b = predicted_exponent(2.0, 0.3)
    assert math.isclose(a.zeta, b.zeta)
    with pytest.raises(ValueError, match="counting exponent"):
        predicted_exponent(0.4, 0.0)
    with pytest.raises(ValueError, match="nu must be > -1"):
        predicted_exponent(2.0, -1.0)
    with pytest.raises(ValueError, match="lam0"):
        LamSchedule(0.0, 0.0)


# ----------------------------------------------------------------------------
# LASSO: state evolution vs FISTA on data
# ----------------------------------------------------------------------------


def _kkt_violation(A, y, x, lam):
    c = A.T @ (y - A @ x)
    on = x != 0
    v_on = np.max(np.abs(c[on] - lam * np.sign(x[on]))) if on.any() else 0.0
    v_off = np.max(np.abs(c[~on])) - lam if (~on).any() else -1.0
    return max(v_on, v_off)


def test_lasso_solver_kkt():
    tg = PowerLawModes(gamma=1.0, n_modes=4, kappa0=0.5)
    A, y, x0 = lasso_data(jax.random.PRNGKey(0), tg, 200, 0.6, noise=0.01)
    fit = lasso_solve(A, y, 0.05)
    assert fit.converged
    # optimality of the LASSO checked directly (subgradient conditions)
    assert _kkt_violation(A, y, fit.x, 0.05) < 1e-8


@pytest.mark.parametrize(
    "delta, lam, noise",
    [(0.5, 0.1, 0.0), (1.5, 0.05, 0.01)],
)
def test_lasso_se_matches_solver(delta, lam, noise):
    """SE vs FISTA at N = 800, 3 seeds.

    The per-seed mse and support fraction fluctuate by O(N^{-1/2}); the tolerance is
    4 standard errors of the seed mean plus 2 % (the O(1/N) finite-size bias).
    """
    tg = PowerLawModes(gamma=1.0, n_modes=5, kappa0=0.5)
    th = lasso_se(tg, delta, lam, noise)
    assert th.converged
    mses, dofs = [], []
    for seed in range(3):
        A, y, x0 = lasso_data(jax.random.PRNGKey(seed), tg, 800, delta, noise)
        x = lasso_solve(A, y, lam).x
        mses.append(np.mean((x - x0) ** 2))
        dofs.append(np.mean(x != 0))
    for sim, val in ((mses, th.mse), (dofs, th.dof)):
        sem = np.std(sim, ddof=1) / math.sqrt(len(sim))
        assert abs(np.mean(sim) - val) < 4 * sem + 0.02 * val


def test_lasso_se_limits_and_errors():
    tg = PowerLawModes(gamma=1.0, n_modes=5, kappa0=0.5)
    # a huge penalty returns x = 0: mse = Q0 = 1, tau^2 = (noise + Q0) / delta
    big = lasso_se(tg, 0.5, 1e3, noise=0.1)
    assert math.isclose(big.mse, 1.0, rel_tol=1e-6) and big.dof < 1e-6
    assert math.isclose(big.tau**2, 1.1 / 0.5, rel_tol=1e-6)
    # recovered fractions: mode k is mostly kept iff its value exceeds the threshold
    r = lasso_se(tg, 2.0, 0.2)
    atoms = tg.measure().atoms
    np.testing.assert_array_equal(r.recovered[1:] > 0.5, atoms[1:] > r.theta)
    with pytest.raises(ValueError, match="delta"):
        lasso_se(tg, 0.0, 0.1)
    with pytest.raises(ValueError, match="lam"):
        lasso_se(tg, 1.0, 0.0)
    with pytest.raises(ValueError, match="noise"):
        lasso_se(tg, 1.0, 0.1, noise=-1.0)
    with pytest.raises(ValueError, match="target"):
        lasso_se("not a target", 1.0, 0.1)


def test_lasso_se_failure_policy_nan_not_finite_numbers():
    """The theory failure policy (issue 37): a solve stopped before the fixed point (a
    Brent tolerance of 0.3 in ``log tau`` leaves a relative residual of 7e-2) returns NaN
    fields, ``converged=False``, its residual, and a warning; never finite numbers that
    are not a fixed point. The converged solve is unchanged and satisfies its equation."""
    tg = PowerLawModes(gamma=1.0, n_modes=5, kappa0=0.5)
    with pytest.warns(RuntimeWarning, match="fields are NaN"):
        bad = lasso_se(tg, 0.5, 0.1, 0.1, tol=0.3)
    assert not bad.converged and bad.residual > 1e-6
    assert all(np.all(np.isnan(x)) for x in (bad.tau, bad.theta, bad.mse, bad.dof, bad.recovered))
    assert (bad.delta, bad.lam, bad.noise) == (0.5, 0.1, 0.1)
    good = lasso_se(tg, 0.5, 0.1, 0.1)
    assert good.converged and np.isfinite(good.mse)
    # tau^2 = (noise + mse) / delta at the fixed point, recomputed from its fields
    assert math.isclose(good.tau**2, (0.1 + good.mse) / 0.5, rel_tol=1e-9)
    with pytest.raises(ValueError, match="lam"):
        lasso_solve(np.eye(3), np.ones(3), -1.0)
    with pytest.raises(ValueError, match="y has shape"):
        lasso_solve(np.eye(3), np.ones(2), 0.1)


# ----------------------------------------------------------------------------
# State evolution: recovered modes vs trained models, fitted vs derived exponents
# ----------------------------------------------------------------------------


def test_recovered_modes_theory_vs_trained():
    """Mode counts of the state evolution vs the convex solver at d = 50 (10 dims per mode).

    At each alpha the theory fractions are at least 0.18 away from the level 1/2, while
    the learned fractions of a trained matrix fluctuate by O(1/sqrt(dims of a mode)) and
    are biased by O(1/d) (measured spread about 0.05 at d = 60): the counts must agree
    exactly and the fractions within 0.12.
    """
    task = tasks.Linear(T=2)
    tg = PowerLawModes(gamma=2.0, n_modes=5)
    lam, d = 0.5, 50
    init = None
    for i, alpha in enumerate((0.08, 0.2, 0.35)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", se.SEConvergenceWarning)
            res, init = se.solve(task, tg, alpha, lam, init=init, return_warm=True)
        th = scaling.recovered_modes(tg, res)
        assert np.all(np.abs(th.fractions - 0.5) > 0.18), th.fractions  # a clear-cut count
        k1, k2 = jax.random.split(jax.random.PRNGKey(10 + i))
        S0 = tg.sample(k1, d)
        data = tasks.make_dataset(k2, task, S0, tasks.n_samples(alpha, d))
        fit = train.train_convex(task, data, lam, tol=1e-8)
        sim = scaling.recovered_modes_trained(fit.S, S0, tg)
        assert sim.count == th.count, (alpha, th.fractions, sim.fractions)
        np.testing.assert_allclose(sim.fractions, th.fractions, atol=0.12)


def _exponent_case(gamma, ell, n_modes, k_lo, k_hi, n_points):
    """Noise-free excess-risk curve in the threshold phase and its fit.

    Window: the threshold t ~ lam / (4 m_eff alpha) runs from the eigenvalue of mode
    k_lo to that of mode k_hi, starting where t / sqrt(Delta_eff) ~ 4 (the threshold
    phase of the derivation); m_eff = 3 for Linear(T=2).
    """
    task = tasks.Linear(T=2)
    tg = PowerLawModes(gamma=gamma, n_modes=n_modes)
    lk = tg.mode_eigenvalues()
    rho = float(np.sum(tg.mode_weights()[:k_lo]))
    a_lo = 16 * rho / (3 * (2 - tg.r))
    lam0 = 12 * lk[k_lo - 1] * a_lo ** (1 + ell)
    a_hi = (lam0 / (12 * lk[k_hi - 1])) ** (1 / (1 + ell))
    alphas = np.logspace(math.log10(a_lo), math.log10(a_hi), n_points)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", se.SEConvergenceWarning)
        c = scaling.excess_risk_curve(task, tg, alphas, LamSchedule(lam0, ell))
    assert c.converged.all()
    assert np.all(c.threshold / np.sqrt(c.Delta_eff) > 3.0)  # threshold phase throughout
    return c, fit_power_law(c.alpha, c.excess)


def test_fitted_exponent_matches_derived_fixed_penalty():
    """gamma = 2, fixed penalty: derived f = 2 - 1/gamma = 1.5 (threshold phase).

    Fails if the fit drifts from the derived exponent by more than twice its error bar
    (OLS standard error and half-window drift combined). The alternatives that a wrong
    derivation would give differ by much more (e.g. 2 - r/2 = 1.75, 2 = no mode effect).
    """
    c, fit = _exponent_case(2.0, 0.0, 100, 4, 25, 8)
    pred = predicted_exponent(2.0, 0.0)
    assert pred.phase == "threshold"
    assert abs(fit.exponent - pred.zeta) < 2 * fit.uncertainty + 1e-3, fit
    assert fit.uncertainty < 0.1  # the test has power: the error bar is small
    # the recovered-mode count grows like t^{-1/gamma}, i.e. alpha^{1/gamma}
    cnt = fit_power_law(c.alpha, 1.0 / c.n_recovered)
    assert abs(cnt.exponent - 0.5) < 0.1


@pytest.mark.slow
@pytest.mark.parametrize("gamma, ell", [(1.5, -0.5), (2.0, 0.5)])
def test_fitted_exponent_matches_derived_schedules(gamma, ell):
    """Growing and decaying penalties: derived f = (1 + ell)(2 - 1/gamma), 200 modes."""
    c, fit = _exponent_case(gamma, ell, 200, 4, 50, 12)
    pred = predicted_exponent(gamma, ell)
    assert pred.phase == "threshold"
    assert abs(fit.exponent - pred.zeta) < 2 * fit.uncertainty + 1e-3, fit
    assert math.log10(c.alpha[-1] / c.alpha[0]) > 1.4


def test_excess_risk_curve_errors():
    tg = PowerLawModes(gamma=2.0, n_modes=5)
    task = tasks.Linear(T=2)
    with pytest.raises(ValueError, match="increasing"):
        scaling.excess_risk_curve(task, tg, [0.5, 0.2], 0.5)
    with pytest.raises(ValueError, match="lam"):
        scaling.excess_risk_curve(task, tg, [0.2, 0.5], -1.0)
    with pytest.raises(ValueError, match="nuclear"):
        scaling.excess_risk_curve(task, tg, [0.2, 0.5], 0.5, penalty="frobenius")
    for bad in ([None], "ab", 3):  # one warm start per alpha, or None
        with pytest.raises(ValueError, match="starts"):
            scaling.excess_risk_curve(task, tg, [0.2, 0.5], 0.5, starts=bad)
    with pytest.raises(ValueError, match="se_result"):
        scaling.recovered_modes(tg, object())
    with pytest.raises(ValueError, match="level"):
        scaling.recovered_modes_trained(np.eye(10), np.eye(10), tg, level=1.5)
    with pytest.raises(ValueError, match="S_hat has shape"):
        scaling.recovered_modes_trained(np.eye(9), np.eye(10), tg)


def test_a_nan_fraction_is_never_counted_as_not_recovered():
    """count_recovered raises on a NaN fraction instead of counting it as "not recovered"."""
    assert count_recovered([0.9, 0.6, 0.2], 0.5) == 2
    with pytest.raises(ValueError, match="NaN"):
        count_recovered([0.9, np.nan, 0.2], 0.5)
    # a trained matrix that does not sample the target's modes: no eigenvector of S0 near
    # the second mode, so its fraction is undefined and the count raises
    target = PowerLawModes(gamma=1.5, n_modes=3)
    S0 = np.diag([target.mode_eigenvalues()[0]] * 4 + [0.0] * 8)
    with pytest.raises(ValueError, match="mode"):
        scaling.recovered_modes_trained(S0, S0, target)


@pytest.mark.slow
def test_zero_phase_point_is_a_result_not_a_rounding_error():
    """Seq2lab T = 3, 200 power-law modes, alpha = 0.2, lam = 5: the estimator is S = 0
    (zero phase). The curve's m = (Q0 + q - mse)/2 came out as -1.6e-15 at q = 0 and the
    Cauchy-Schwarz check raised, losing the curve; now the point is a result. Independent
    check: mse = Q0 = 1 for S = 0, and the test error of S = 0 by Monte Carlo on sampled
    sequences (20000 sequences, 5 standard errors). In the large-d limit the test error of
    S = 0 depends on S0 only through Q0 (h0 is Gaussian); the power law's top modes hold a
    few eigenvalues at d = 400 (h0 far from Gaussian), so the Monte Carlo uses a Wishart(1)
    sample at d = 300 scaled to Q0 = 1."""
    task, target = tasks.Seq2Lab(T=3), PowerLawModes(2.0, 200)
    curve = scaling.excess_risk_curve(task, target, [0.2], 5.0)
    assert curve.converged[0] and curve.rank_fraction[0] == 0.0
    assert curve.mse[0] == pytest.approx(1.0, abs=1e-12)
    d = 300
    S0 = np.asarray(targets.Wishart(1.0).sample(jax.random.PRNGKey(3), d))
    S0 = S0 / math.sqrt(np.sum(S0**2) / d)
    mc = train.test_error_stats(jax.random.PRNGKey(4), task, S0, np.zeros((d, d)))
    assert abs(curve.test_error[0] - mc.mean) < 5 * mc.stderr


def test_cauchy_schwarz_check_allows_rounding_only():
    """m a few ulps past sqrt(q Q0) is rounding (clipped, same test error as on the
    boundary: the zero phase's m = -1.55e-15 at q = 0 raised before); a violation of 1e-6
    is an error."""
    task = tasks.Seq2Lab(T=3)
    at_zero = se.test_error_from_overlaps(task, 1.0, 0.0, 0.0)
    assert se.test_error_from_overlaps(task, 1.0, -1.55e-15, 0.0) == at_zero
    edge = se.test_error_from_overlaps(task, 1.0, 0.5, 0.25)
    assert se.test_error_from_overlaps(task, 1.0, 0.5 + 4e-16, 0.25) == pytest.approx(edge, 1e-12)
    with pytest.raises(ValueError, match=r"m must satisfy m\^2 <= q Q0"):
        se.test_error_from_overlaps(task, 1.0, 1e-6, 0.0)
    with pytest.raises(ValueError, match=r"m must satisfy m\^2 <= q Q0"):
        se.test_error_from_overlaps(task, 1.0, 0.5 + 1e-6, 0.25)
