"""Tests of attnlib.spectrum: learned spectra and the four-part error decomposition.

Independent references: sampled random matrices ``R = S0 + sqrt(Delta) W_goe`` at
``d = 1000`` (eigenvector overlaps, the spectral map ``F(R)``, outliers), direct
quadrature over the target's spectral measure (closed forms), the exact algebraic
identity behind the finite-``d`` decomposition, the state evolution's own ``m, q``,
and (slow) matrices trained by the proximal solver.
"""

import math

import jax
import numpy as np
import pytest

import attnlib  # noqa: F401
from attnlib import rmt, se, spectrum, targets, tasks, train

D = 1000  # overlap checks
D_MAP = 600  # spectral-map checks


def goe(key, d):
    """GOE with off-diagonal variance 1/d and diagonal variance 2/d."""
    A = np.asarray(jax.random.normal(key, (d, d)))
    return (A + A.T) / math.sqrt(2 * d)


def spectral_map(R, slope, shift, penalty):
    x, U = np.linalg.eigh(R)
    f = slope * x - shift
    if penalty == "nuclear":
        f = np.maximum(f, 0.0)
    return (U * f) @ U.T


def binned(x, values, n_bins):
    """Means and standard errors of ``values`` in ``n_bins`` equal-count bins of ``x``."""
    order = np.argsort(x)
    out = []
    for idx in np.array_split(order, n_bins):
        v = values[idx]
        out.append((x[idx].mean(), v.mean(), v.std(ddof=1) / math.sqrt(v.size)))
    return np.array(out)


@pytest.fixture(scope="module")
def wishart_sample():
    """S0 ~ Wishart(kappa0 = 0.5), R = S0 + sqrt(0.5) W_goe at d = 1000, eigendecomposed."""
    tg = targets.Wishart(0.5)
    Delta = 0.5
    k0, k1 = jax.random.split(jax.random.PRNGKey(1))
    S0 = np.asarray(tg.sample(k0, D))
    R = S0 + math.sqrt(Delta) * goe(k1, D)
    x, U = np.linalg.eigh(R)
    lam, V = np.linalg.eigh(S0)
    return tg, Delta, S0, R, x, U, lam, V


@pytest.fixture(scope="module")
def linear_se():
    """SE fixed points of the linear task (closed-form output side: fast)."""
    task = tasks.Linear(T=1, noise=0.1)
    tg = targets.Wishart(0.5)
    nuc = se.solve(task, tg, 0.3, 0.05, "nuclear")
    fro = se.solve(task, tg, 0.3, 0.05, "frobenius")
    assert nuc.converged and fro.converged
    return task, tg, nuc, fro


# ----------------------------------------------------------------------------
# Eigenvector overlaps of R with S0
# ----------------------------------------------------------------------------


def test_profile_matches_sampled_eigenvectors(wishart_sample):
    tg, Delta, S0, R, x, U, lam, V = wishart_sample
    SU = S0 @ U
    a = np.sum(U * SU, axis=0)
    b = np.sum(SU * SU, axis=0)
    w = np.sum((V[:, np.abs(lam) > 1e-8].T @ U) ** 2, axis=0)
    prof = spectrum.direction_profile(tg, Delta, x)
    for emp, th in ((a, prof.a), (b, prof.b), (w, prof.w)):
        # 10 bins of 100 eigenvectors: the bin mean of emp - th has the printed standard
        # error (eigenvector fluctuations); finite-d bias is O(1/d) relative to the scale.
        res = binned(x, emp - th, 10)
        scale = np.mean(np.abs(th))
        assert np.all(np.abs(res[:, 1]) < 4 * res[:, 2] + 5 * scale / D), res


def test_overlap_density_matches_sampled_eigenvectors(wishart_sample):
    tg, Delta, S0, R, x, U, lam, V = wishart_sample
    M = D * (U.T @ V) ** 2  # M[i, j] = d (u_i . v_j)^2, rows: R, columns: S0
    zero = np.abs(lam) < 1e-8
    x_bins = np.array_split(np.arange(D), 8)
    lam_bins = [np.flatnonzero(zero)] + np.array_split(np.flatnonzero(~zero), 4)
    dens = spectrum.overlap_density(tg, Delta, x[:, None], lam[None, :])
    for ix in x_bins:
        for il in lam_bins:
            emp = M[np.ix_(ix, il)].mean()
            th = dens[np.ix_(ix, il)].mean()
            # 125 x 125 (or 125 x 500) entries ~ O chi^2_1: relative error ~ 1 % per cell,
            # plus O(1/d) bias; 8 % leaves room for the correlations between entries.
            assert abs(emp - th) < 0.08 * th + 0.02, (x[ix].mean(), lam[il].mean(), emp, th)


def test_profile_closed_forms_against_quadrature():
    """a, b, w closed forms vs the defining integrals over the target's spectral measure."""
    tg = targets.Wishart(0.5)
    Delta = 0.4
    mu = tg.measure(4000)
    x = np.linspace(-0.8, 3.5, 9)
    prof = spectrum.direction_profile(tg, Delta, x)
    dens = spectrum.overlap_density(tg, Delta, x[:, None], mu.atoms[None, :])
    a = dens @ (mu.weights * mu.atoms)
    b = dens @ (mu.weights * mu.atoms**2)
    w = dens @ (mu.weights * (mu.atoms != 0))
    norm = dens @ mu.weights
    np.testing.assert_allclose(norm, 1.0, atol=2e-3)  # int rho_S0 O = 1
    np.testing.assert_allclose(prof.a, a, atol=2e-3)  # x - 2 Delta h_R = int rho lambda O
    np.testing.assert_allclose(prof.b, b, atol=5e-3)
    np.testing.assert_allclose(prof.w, w, atol=2e-3)
    # and in x: int rho_R(x) O(x, lambda) dx = 1 for every lambda
    ds = rmt.deformed_spectrum(tg, Delta, 400)
    for lam0 in (0.0, 0.7, 2.5):
        tot = np.sum(ds.w * spectrum.overlap_density(tg, Delta, ds.x, lam0))
        assert abs(tot - 1.0) < 2e-3


# ----------------------------------------------------------------------------
# Learned spectrum
# ----------------------------------------------------------------------------


def test_learned_spectrum_consistent_with_se(linear_se):
    task, tg, nuc, fro = linear_se
    for r in (nuc, fro):
        sp = spectrum.learned_spectrum(tg, r)
        prof = spectrum.direction_profile(tg, r.Delta_eff, sp.r_nodes)
        f = sp.f(sp.r_nodes)
        # the SE's own q = int rho_R f^2 and m = int rho_R f (x - 2 Delta h_R)
        assert abs(np.sum(sp.r_weights * f * f) - r.q) < 2e-3 * r.q
        assert abs(np.sum(sp.r_weights * f * prof.a) - r.m) < 2e-3 * r.m
        assert abs(sp.rank_fraction - r.rank_fraction) < 5e-3
        # the bulk density carries the non-atomic mass
        mass = np.trapezoid(sp.density, sp.y)  # numpy >= 2 (pyproject.toml)
        assert abs(mass - sp.rank_fraction) < 1e-2
    assert spectrum.learned_spectrum(tg, fro).atom_at_zero == 0.0


def test_learned_spectrum_matches_sampled_spectral_map(linear_se):
    """Eigenvalues of F(S0 + sqrt(Delta_eff) W_goe) at d = 600 vs the predicted law."""
    task, tg, nuc, fro = linear_se
    k0, k1 = jax.random.split(jax.random.PRNGKey(7))
    S0 = np.asarray(tg.sample(k0, D_MAP))
    for r in (nuc, fro):
        sp = spectrum.learned_spectrum(tg, r)
        R = S0 + math.sqrt(r.Delta_eff) * goe(k1, D_MAP)
        s = np.linalg.eigvalsh(spectral_map(R, sp.slope, sp.shift, r.penalty))
        # eigenvalue rigidity: counts deviate by O(log d) eigenvalues, edges by O(d^-2/3)
        assert abs(np.mean(np.abs(s) < 1e-12) - sp.atom_at_zero) < 0.015
        assert abs(s.max() - sp.edges[-1][1]) < 0.05 * sp.edges[-1][1]
        assert np.mean(np.abs(s - sp.quantiles(D_MAP))) < 0.015
        if r.penalty == "frobenius":
            assert abs(s.min() - sp.edges[0][0]) < 0.05 * abs(sp.edges[0][0]) + 0.02


def test_outliers_match_sampled_spiked_target(linear_se):
    task, _, nuc, _ = linear_se
    tg = targets.Spiked(spikes=(4.0,), bulk=targets.Wishart(0.5))
    r = nuc._replace(Delta_eff=0.4, c=1.1, tau=0.3)
    sp = spectrum.learned_spectrum(tg, r)
    assert len(sp.outliers) == 1 and sp.outliers[0].learned
    out = sp.outliers[0]
    k0, k1 = jax.random.split(jax.random.PRNGKey(3))
    S0 = np.asarray(tg.sample(k0, D_MAP))
    lam, V = np.linalg.eigh(S0)
    R = S0 + math.sqrt(r.Delta_eff) * goe(k1, D_MAP)
    s, U = np.linalg.eigh(spectral_map(R, sp.slope, sp.shift, "nuclear"))
    assert abs(lam[-1] - out.theta) < 0.05 * out.theta  # isolated eigenvalue of S0
    # outlier eigenvalues and overlaps fluctuate by O(1/sqrt(d)) ~ 0.04
    assert abs(s[-1] - out.position) < 0.1
    assert abs((U[:, -1] @ V[:, -1]) ** 2 - out.overlap2) < 0.06
    assert s[-1] > sp.edges[-1][1] + 0.2  # it is separated from the bulk
    # an outlier thresholded away: f(z) <= 0
    r2 = nuc._replace(Delta_eff=0.4, c=1.0, tau=10.0)
    o2 = spectrum.learned_spectrum(tg, r2).outliers[0]
    assert not o2.learned and o2.position == 0.0


def test_singular_values_of_factor(linear_se):
    task, tg, nuc, _ = linear_se
    sp = spectrum.learned_spectrum(tg, nuc)
    kappa = 0.75
    law = spectrum.singular_values_W(sp, kappa)
    d = 400
    p = int(kappa * d)
    k0, k1, k2 = jax.random.split(jax.random.PRNGKey(5), 3)
    S0 = np.asarray(tg.sample(k0, d))
    R = S0 + math.sqrt(nuc.Delta_eff) * goe(k1, d)
    s, U = np.linalg.eigh(spectral_map(R, sp.slope, sp.shift, "nuclear"))
    s, U = s[::-1][:p], U[:, ::-1][:, :p]  # the p largest (the rank is < p)
    Q = np.asarray(targets.haar_orthogonal(k2, p))
    W = (U * np.sqrt(math.sqrt(p * d) * np.maximum(s, 0))) @ Q  # W W^T = sqrt(pd) S_hat
    sv = np.sort(np.linalg.svd(W / math.sqrt(d), compute_uv=False))
    # rigidity of the eigenvalue counting function, as in the spectral-map test
    assert abs(np.mean(sv < 1e-6) - law.atom_at_zero) < 0.015
    assert np.mean(np.abs(sv - law.quantiles(p))) < 0.015
    assert abs(sv.max() - law.edges[-1][1]) < 0.05 * law.edges[-1][1]
    # the density integrates to the non-zero fraction
    assert abs(np.trapezoid(law.density, law.sigma) - (1 - law.atom_at_zero)) < 1e-2
    with pytest.raises(ValueError, match="kappa"):
        spectrum.singular_values_W(sp, 0.5 * sp.rank_fraction)
    with pytest.raises(ValueError, match="nuclear"):
        spectrum.singular_values_W(spectrum.learned_spectrum(tg, linear_se[3]), 1.0)


# ----------------------------------------------------------------------------
# Decomposition
# ----------------------------------------------------------------------------


def _check_parts(dec, rtol=1e-10):
    parts = dec.parts()
    assert np.all(parts >= 0), parts
    assert abs(parts.sum() - dec.e_test) <= rtol * max(dec.e_test, 1e-12)
    assert abs(dec.over + dec.under + dec.approx - dec.e_test_star) <= rtol * dec.e_test


def test_decompose_theory_adds_up(linear_se):
    task, tg, nuc, fro = linear_se
    for r in (nuc, fro):
        dec = spectrum.decompose(task, tg, r)
        _check_parts(dec)
        assert dec.e_test == pytest.approx(r.test_error, rel=1e-12)
        assert dec.c_star == pytest.approx(r.m / r.q, rel=1e-12)  # linear task
        # the three mse parts integrate e(x) against rho_R; their sum must equal the
        # independent Q0 - 2 c* m + c*^2 q built from the SE overlaps (quadrature error only)
        tot = dec.mse_over + dec.mse_under + dec.mse_approx
        assert tot == pytest.approx(dec.mse_star, rel=2e-3)
        # linear task: e_test is proportional to the mse, with the same factor
        assert dec.e_test_star / dec.mse_star == pytest.approx(dec.e_test / dec.mse, rel=1e-10)
    assert spectrum.decompose(task, tg, fro).under == 0.0
    # full-rank target: every kept direction lies in the target's range, nothing is "over"
    full = targets.Wishart(1.0)
    r = se.solve(task, full, 0.3, 0.05, "nuclear")
    dec = spectrum.decompose(task, full, r)
    _check_parts(dec)
    assert dec.over == 0.0 and dec.under > 0


def test_decompose_trained_exact_identity():
    """For any S_hat: parts >= 0, the mse parts add up to ||c* S_hat - S0||^2/d exactly."""
    d = 120
    tg = targets.Wishart(0.4)
    k0, k1 = jax.random.split(jax.random.PRNGKey(11))
    S0 = np.asarray(tg.sample(k0, d))
    B = S0 + 0.6 * goe(k1, d)
    for task in (tasks.Linear(T=1), tasks.Seq2Seq(T=2)):
        for S in (
            np.asarray(train.prox_nuclear_psd(B, 0.4)),
            np.asarray(train.prox_frobenius(B, 0.3)),
        ):
            dec = spectrum.decompose_trained(task, S, S0)
            _check_parts(dec)
            D_star = dec.c_star * S - S0
            direct = np.sum(D_star * D_star) / d
            assert dec.mse_over + dec.mse_under + dec.mse_approx == pytest.approx(direct, rel=1e-10)
            assert dec.mse_star == pytest.approx(direct, rel=1e-10)
            # c* does at least as well as any other scale
            for c in (0.5 * dec.c_star, 1.0, 1.5 * dec.c_star):
                m, q = c * dec.m, c * c * dec.q
                assert se.test_error_from_overlaps(task, dec.Q0, m, q) >= dec.e_test_star - 1e-12
        # discarded directions carry their target energy b_i
        S = np.asarray(train.prox_nuclear_psd(B, 0.4))
        s, a, b, w = spectrum.direction_statistics(S, S0)
        dec = spectrum.decompose_trained(task, S, S0)
        assert dec.mse_under == pytest.approx(np.sum(b[np.abs(s) < 1e-8]) / d, rel=1e-8)


def test_decompose_theory_matches_sampled_spectral_map(linear_se):
    """Theory parts vs the finite-d parts of F(S0 + sqrt(Delta_eff) W_goe) at d = 600."""
    task, tg, nuc, fro = linear_se
    k0, k1 = jax.random.split(jax.random.PRNGKey(13))
    S0 = np.asarray(tg.sample(k0, D_MAP))
    Wg = goe(k1, D_MAP)
    for r in (nuc, fro):
        th = spectrum.decompose(task, tg, r)
        sp = spectrum.learned_spectrum(tg, r)
        S = spectral_map(S0 + math.sqrt(r.Delta_eff) * Wg, sp.slope, sp.shift, r.penalty)
        emp = spectrum.decompose_trained(task, S, S0)
        # (1/d) sums of O(1) terms over d = 600 directions: O(d^-1/2) ~ 4 % fluctuations
        for name in ("mse_over", "mse_under", "mse_approx", "mse"):
            t, e = getattr(th, name), getattr(emp, name)
            assert abs(t - e) < 0.05 * th.mse + 1e-12, (r.penalty, name, t, e)
        assert abs(emp.kept_fraction - th.kept_fraction) < 0.015
        assert abs(emp.kept_in_range - th.kept_in_range) < 0.015


def test_bad_arguments(linear_se):
    task, tg, nuc, _ = linear_se
    with pytest.raises(ValueError, match="se_result"):
        spectrum.learned_spectrum(tg, object())
    with pytest.raises(ValueError, match="penalty"):
        spectrum.learned_spectrum(tg, nuc._replace(penalty="lasso"))
    with pytest.raises(ValueError, match="kappa"):
        spectrum.singular_values_W(spectrum.learned_spectrum(tg, nuc), -1.0)
    with pytest.raises(ValueError, match="S"):
        spectrum.decompose_trained(task, np.ones((3, 4)), np.eye(3))
    with pytest.raises(ValueError, match="Delta"):
        spectrum.overlap_density(tg, 0.0, 1.0, 1.0)


# ----------------------------------------------------------------------------
# Trained models (slow)
# ----------------------------------------------------------------------------


@pytest.mark.slow
def test_decomposition_matches_trained_convex():
    """Theory vs finite-d decomposition of the proximal solver's minimiser at d = 120 (2 seeds)."""
    task = tasks.Linear(T=1, noise=0.1)
    tg = targets.Wishart(0.5)
    alpha, lam, d = 0.3, 0.05, 120
    r = se.solve(task, tg, alpha, lam, "nuclear")
    th = spectrum.decompose(task, tg, r)
    emps = []
    for seed in range(2):
        k0, k1 = jax.random.split(jax.random.PRNGKey(100 + seed))
        S0 = np.asarray(tg.sample(k0, d))
        data = tasks.make_dataset(k1, task, S0, tasks.n_samples(alpha, d))
        res = train.train_convex(task, data, lam, tol=1e-8)
        emps.append(spectrum.decompose_trained(task, res.S, S0).parts())
    emp = np.mean(emps, axis=0)
    # at d = 120 the test error itself deviates from its limit by O(1/d) ~ 5-10 %
    # (finite-size corrections of the ERM), the parts likewise
    np.testing.assert_allclose(emp, th.parts(), rtol=0.15, atol=0.02 * th.e_test)


@pytest.mark.slow
def test_spectrum_matches_trained_convex_spiked():
    """Rank fraction, bulk edge, outlier position and overlap of the ERM at d = 200."""
    task = tasks.Linear(T=1, noise=0.1)
    tg = targets.Spiked(spikes=(5.0,), bulk=targets.Wishart(0.5))
    alpha, lam, d = 0.3, 0.05, 200
    r = se.solve(task, tg, alpha, lam, "nuclear")
    sp = spectrum.learned_spectrum(tg, r)
    out = sp.outliers[0]
    assert out.learned
    k0, k1 = jax.random.split(jax.random.PRNGKey(21))
    S0 = np.asarray(tg.sample(k0, d))
    data = tasks.make_dataset(k1, task, S0, tasks.n_samples(alpha, d))
    res = train.train_convex(task, data, lam, tol=1e-8)
    s, U = np.linalg.eigh(res.S)
    lam0, V = np.linalg.eigh(S0)
    rank = np.mean(s > 1e-8 * s.max())
    # finite-size tolerances: counts O(1/d) plus ERM corrections; edge O(d^-2/3);
    # outlier O(d^-1/2)
    assert abs(rank - sp.rank_fraction) < 0.03
    assert abs(s[-2] - sp.edges[-1][1]) < 0.1 * sp.edges[-1][1]
    assert abs(s[-1] - out.position) < 0.1 * out.position
    assert abs((U[:, -1] @ V[:, -1]) ** 2 - out.overlap2) < 0.1
