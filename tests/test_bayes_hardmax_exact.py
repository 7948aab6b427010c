"""The exact T = 2 hardmax Bayes channel (attnlib.channels.posterior_hardmax_exact)
against independent computations: scipy's bivariate normal CDF, plain Monte Carlo of
the posterior by rejection, finite differences, the nested QMC channel at large sizes,
and the state evolution at alpha = 2 (where the nested channel was 4-7 % low and did
not converge)."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from attnlib import bayes, qmc, targets, tasks
from attnlib.bayes import prediction
from attnlib.channels import posterior_hardmax_exact as hx

TG = targets.Wishart(kappa0=0.5)
S2 = np.array([2.0, 1.0, 2.0])


def test_bvn_cdf_against_scipy():
    rng = np.random.default_rng(0)
    h, k = 2.0 * rng.normal(size=(2, 200))
    for r in (-0.7, -1.0 / 3.0, 0.0, 0.5):
        ref = scipy.stats.multivariate_normal([0.0, 0.0], [[1.0, r], [r, 1.0]]).cdf(
            np.stack([h, k], axis=1)
        )
        assert np.max(np.abs(hx.bvn_cdf(h, k, r) - ref)) < 1e-7  # scipy's own accuracy
    # the axes: Phi_2(0, 0; r) = 1/4 + arcsin(r) / (2 pi) (Sheppard), Phi_2(0, k; 0) = Phi(k) / 2
    assert abs(hx.bvn_cdf(0.0, 0.0, 0.3) - (0.25 + np.arcsin(0.3) / (2 * np.pi))) < 1e-15
    assert abs(hx.bvn_cdf(0.0, -1.2, 0.0) - scipy.stats.norm.cdf(-1.2) / 2) < 1e-15


def _posterior_mc(omega, V, noise, n, seed):
    """Label frequencies and, per label, E[(h - omega) / sqrt(V)] and Var[h] by rejection."""
    rng = np.random.default_rng(seed)
    h = omega + rng.normal(size=(n, 3)) * np.sqrt(V)
    u = h + rng.normal(size=(n, 3)) * np.sqrt(noise)
    Y = np.asarray(tasks.Hardmax(T=2).output(tasks.to_matrix(u, 2)))
    lab = 2 * (Y[:, 0, 0] < 0.5) + (Y[:, 1, 1] < 0.5)  # the order (+,+), (+,-), (-,+), (-,-)
    return h, lab, Y


@pytest.mark.parametrize("noise", [0.0, 0.2])
def test_label_probabilities_and_posterior_mean_against_rejection(noise):
    """At one omega, 400000 draws of (h, xi): the frequency of each label and the mean and
    variance of h among the draws with that label (rejection: the exact posterior) against
    Z, g and dg of the closed forms. Tolerance: 5 standard errors of each MC average."""
    task = tasks.Hardmax(T=2, noise=noise, noise_on="logits")
    omega, V, n = np.array([0.4, 0.1, -0.2]), S2 * 0.3, 400_000
    h, lab, Y = _posterior_mc(omega, V, noise, n, 1)
    Sigma = (hx.A * (V + noise)) @ hx.A.T
    Z, _ = hx.orthants(hx.A @ omega, Sigma)
    freq = np.bincount(lab, minlength=4) / n
    assert np.all(np.abs(freq - Z) < 5 * np.sqrt(Z * (1 - Z) / n)), (freq, Z)
    for e in range(4):
        sel = lab == e
        g, dg = hx.output(task, Y[sel][:1], omega[None], V)
        mean_mc = h[sel].mean(axis=0) - omega
        se = h[sel].std(axis=0) / np.sqrt(sel.sum())
        assert np.all(np.abs(V * g[0] - mean_mc) < 5 * se), (e, V * g[0], mean_mc, se)
        var_mc = h[sel].var(axis=0)
        se_var = var_mc * np.sqrt(2.0 / sel.sum()) * 2  # (x2: tails of truncated laws)
        assert np.all(np.abs(V + V**2 * dg[0] - var_mc) < 5 * se_var), (e, dg[0], var_mc)


def test_output_is_the_gradient_of_log_z():
    """g and dg against central differences of log Z in omega (steps 1e-5 and 1e-3), at 32
    (omega, label) pairs, many of them improbable; compared where Z > 1e-8 (27 of 32)."""
    task = tasks.Hardmax(T=2, noise=0.1, noise_on="logits")
    V = S2 * 0.2
    Sigma = (hx.A * (V + 0.1)) @ hx.A.T
    rng = np.random.default_rng(3)
    omega = 2.0 * rng.normal(size=(8, 3))
    for e, (e1, e2) in enumerate(hx._SIGNS):
        Y = np.zeros((8, 2, 2))
        Y[:, 0, 0 if e1 > 0 else 1] = 1.0
        Y[:, 1, 1 if e2 > 0 else 0] = 1.0
        g, dg = hx.output(task, Y, omega, V)
        assert np.all(np.isfinite(g)) and np.all(np.isfinite(dg))  # the tail fallback

        def logz(om, e=e):
            return np.log(np.maximum(hx.orthants(om @ hx.A.T, Sigma)[0][e], 1e-300))

        step, step2 = 1e-5, 1e-3  # second differences: rounding ~ 1e-16 / step2^2
        for k in range(3):
            dk, dk2 = np.eye(3)[k] * step, np.eye(3)[k] * step2
            fd = (logz(omega + dk) - logz(omega - dk)) / (2 * step)
            fd2 = (logz(omega + dk2) - 2 * logz(omega) + logz(omega - dk2)) / step2**2
            ok = np.exp(logz(omega)) > 1e-8  # bvn_cdf's relative accuracy 1e-9 there
            fd2 = np.where(ok, fd2, 0.0)
            assert np.allclose(g[ok, k], fd[ok], rtol=1e-5, atol=1e-6), (e, k, g[:, k], fd)
            assert np.allclose(dg[ok, k], fd2[ok], rtol=1e-3, atol=1e-3), (e, k, dg[:, k], fd2)


@pytest.mark.parametrize("mmse", [1.0, 0.1, 0.02])
def test_information_against_monte_carlo(mmse):
    """J mmse against plain Monte Carlo over (omega, h) of sum V g^2 with g from scipy's
    bivariate normal CDF (finite differences of its log, step 1e-4 of sd): 20000 draws,
    tolerance 4 standard errors; the quadrature's own error is below 1e-9."""
    task = tasks.Hardmax(T=2)
    J, dof, err = hx.information(task, mmse, TG.Q0)
    assert err * mmse < 1e-9 * dof
    rng = np.random.default_rng(7)
    n = 20_000
    om = rng.normal(size=(n, 3)) * np.sqrt(S2 * (TG.Q0 - mmse))
    h = om + rng.normal(size=(n, 3)) * np.sqrt(S2 * mmse)
    Sigma = (hx.A * (S2 * mmse)) @ hx.A.T
    eps = np.sign(h @ hx.A.T)  # the label's orthant
    mvn = scipy.stats.multivariate_normal([0.0, 0.0], Sigma)

    def logz(o):  # P(eps * s > 0) = P(-eps * (s - mu) < eps * mu)
        mu = o @ hx.A.T
        out = np.empty(n)
        for sgn in {tuple(x) for x in eps}:
            sel = np.all(eps == sgn, axis=1)
            cov = Sigma * np.outer(sgn, sgn)
            out[sel] = scipy.stats.multivariate_normal([0, 0], cov).logcdf(mu[sel] * sgn)
        return out

    del mvn
    step = 1e-4 * np.sqrt(mmse)
    g = np.stack([(logz(om + d) - logz(om - d)) / (2 * step) for d in np.eye(3) * step], 1)
    per = np.sum(S2 * mmse * g**2, axis=1)
    assert abs(dof - per.mean()) < 4 * per.std() / np.sqrt(n), (dof, per.mean())


@pytest.mark.slow
@pytest.mark.parametrize(("noise", "n_outer", "n_inner"), [(0.0, 16384, 32768), (0.1, 8192, 8192)])
def test_information_against_the_nested_qmc_at_large_sizes(noise, n_outer, n_inner):
    """At mmse = 0.3 (mmse / Q0 = 0.2) the nested QMC channel at large sizes is unbiased
    within its reported error (measured: 0.01 of it with logit noise 0.1); the exact value
    must lie within twice that error."""
    task = tasks.Hardmax(T=2, noise=noise, noise_on="logits")
    exact = hx.information(task, 0.3, TG.Q0)[1]
    nested = bayes.information(task, 0.3, TG.Q0, method="qmc", n_outer=n_outer, n_inner=n_inner)
    assert abs(nested.dof - exact) < 2 * nested.error * 0.3, (nested, exact)


def test_bayes_test_error_closed_form_against_the_nested_average():
    """1 - (2/pi) arcsin(1 - mmse/Q0) against the nested QMC average of
    ||Y(h0) - E[Y(h) | omega]||^2 (4096 outer, 4096 inner points; its bias is about
    +(2/n_inner) E[p(1 - p)] per row, below its standard error)."""
    task = tasks.Hardmax(T=2)
    for mmse in (0.05, 0.5):
        closed = hx.test_error(mmse, TG.Q0)
        z_out = jnp.asarray(qmc.normals(6, 4096, seed=0, stream="bayes_test_outer")[0])
        z_in = jnp.asarray(qmc.normals(3, 4096, seed=0, stream="bayes_test_inner")[0])
        e = np.asarray(prediction._bayes_error(task, z_out, z_in, mmse, TG.Q0))
        assert abs(e.mean() - closed) < 4 * e.std() / np.sqrt(e.size) + 1e-3 * closed


def test_state_evolution_converges_at_alpha_2():
    """With the exact channel the fixed point is found to Brent's tolerance (residual below
    1e-8, no warning), and the QMC path's mse at alpha = 2 (0.026-0.028, not converged) is
    replaced by the exact one; the dof and Bayes test error match the exact formulas."""
    task = tasks.Hardmax(T=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        r = bayes.solve(task, TG, 2.0, check_unique=False)
    assert r.converged and r.residual < 1e-8 and r.integration_error < 1e-8
    J = hx.information(task, r.mse, TG.Q0)[0]
    assert abs(2 * 2.0 * r.Delta_eff * J - 1) < 1e-8
    assert r.test_error == hx.test_error(r.mse, TG.Q0)


def test_argument_checks():
    with pytest.raises(ValueError, match="task"):
        hx.information(tasks.Hardmax(T=3), 0.1, 1.5)
    with pytest.raises(ValueError, match="task"):
        hx.information(tasks.Hardmax(T=2, noise=0.1, noise_on="outputs"), 0.1, 1.5)
    with pytest.raises(ValueError, match="mmse"):
        hx.information(tasks.Hardmax(T=2), 0.0, 1.5)
    with pytest.raises(ValueError, match="n_nodes"):
        hx.information(tasks.Hardmax(T=2), 0.1, 1.5, n_nodes=3)
    with pytest.raises(ValueError, match="mmse"):
        hx.test_error(2.0, 1.5)


def test_gamp_rie_on_hardmax_data():
    """GAMP-RIE with the exact output step on one data set (alpha = 2, d = 50, seed 0, 30
    iterations). Measured (4 seeds each, 60 iterations): Delta_eff 0.0300-0.0327 at d = 50
    and 0.0302-0.0326 at d = 100 against the SE's 0.0330; mse 0.021-0.050 (d = 50),
    0.024-0.030 (d = 100), 1/d intercept 0.023 +- 0.008 against the SE's 0.0238.
    Tolerance: Delta_eff within 15 % of the SE (its largest gap at d = 50 is 9 %), mse
    within a factor 2.5 of the SE (the largest d = 50 run is 2.1 times it)."""

    task = tasks.Hardmax(T=2)
    se = bayes.solve(task, TG, 2.0, check_unique=False)
    k1, k2 = jax.random.split(jax.random.PRNGKey(100))
    S0 = TG.sample(k1, 50)
    data = tasks.make_dataset(k2, task, S0, tasks.n_samples(2.0, 50))
    r = bayes.gamp_rie(task, data, TG, S0=S0, max_iter=30, tol=1e-5)
    mse, Delta_eff = r.trace, 1.0 / (2 * r.trajectory.a_hat)  # per iteration
    assert np.all(np.isfinite(mse)) and mse[-1] < 0.2 * mse[0]
    assert abs(Delta_eff[-1] / se.Delta_eff - 1) < 0.15, (Delta_eff[-1], se.Delta_eff)
    assert se.mse / 2.5 < mse[-1] < 2.5 * se.mse, (mse[-1], se.mse)
    with pytest.raises(ValueError, match="task"):
        bayes.gamp_rie(tasks.Hardmax(T=3), data, TG)
