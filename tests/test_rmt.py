"""Tests of attnlib.rmt against sampled random matrices, closed forms and exact identities.

Sampled checks use ``R = S0 + sqrt(Delta) W_goe`` at ``d = 1000`` (fast) or ``d = 2000``
(slow), one eigendecomposition per fixture. Finite-size error bars:

- eigenvalue rigidity makes the empirical distribution function of ``R`` deviate from
  its limit by ``O(log(d) / d)`` in the bulk plus the ``O(d^{-2/3})`` edge fluctuations
  (a few eigenvalues), i.e. a Kolmogorov distance of a few ``1e-3`` at ``d = 1000``;
- normalised traces ``Tr(F(R) A) / d`` of Lipschitz spectral maps fluctuate by ``O(1/d)``
  and have an ``O(1/d)`` bias;
- an outlier eigenvalue fluctuates by ``O(d^{-1/2})`` and so does its squared overlap.
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from scipy import integrate, linalg, special

import attnlib  # noqa: F401
from attnlib import rmt
from attnlib import targets as T
from attnlib.rmt.curve import _curve, _u_at_x, _u_of_x
from attnlib.rmt.law import _G, _law
from attnlib.rmt.roots import _bracketed_newton
from attnlib.rmt.support import _components, _prepare

D_FAST = 1000


def _goe(rng: np.random.Generator, d: int) -> np.ndarray:
    """Off-diagonal variance 1/d, diagonal variance 2/d."""
    g = rng.standard_normal((d, d))
    return (g + g.T) / np.sqrt(2 * d)


def _sample(target, Delta, d, seed):
    S0 = np.asarray(target.sample(jax.random.PRNGKey(seed), d), dtype=float)
    R = S0 + math.sqrt(Delta) * _goe(np.random.default_rng(seed), d)
    return S0, R


def _top_eigenpair(M):
    d = M.shape[0]
    lam, V = linalg.eigh(M, subset_by_index=[d - 1, d - 1])
    return lam[0], V[:, 0]


def _kolmogorov(eigs, target, Delta, n_atoms=1000):
    e = np.sort(eigs)
    n = e.size
    F = rmt.cdf(target, Delta, e, n_atoms=n_atoms)
    return max(np.max(np.abs(F - np.arange(1, n + 1) / n)), np.max(np.abs(F - np.arange(n) / n)))


# ---------------------------------------------------------------------------------------
# fixtures: one eigendecomposition each, shared by the tests of this module
# ---------------------------------------------------------------------------------------

KS_CASES = {
    "wishart-0.5-0.1": (T.Wishart(0.5), 0.1),
    "wishart-0.5-1": (T.Wishart(0.5), 1.0),
    "wishart-1-0.1": (T.Wishart(1.0), 0.1),
    "wishart-1-1": (T.Wishart(1.0), 1.0),
    "wishart-2-0.1": (T.Wishart(2.0), 0.1),  # full rank (kappa0 > 1): no atom, a soft edge
    "wishart-2-1": (T.Wishart(2.0), 1.0),
    "powerlaw": (T.PowerLaw(gamma=0.25, kappa0=0.5), 0.1),
    "explicit": (T.Explicit((-1.0, 0.5, 2.0)), 0.05),
}


@pytest.fixture(scope="module")
def sampled_eigs():
    cache = {}

    def get(name):
        if name not in cache:
            target, Delta = KS_CASES[name]
            _, R = _sample(target, Delta, D_FAST, seed=len(cache) + 1)
            cache[name] = np.linalg.eigvalsh(R)
        return cache[name]

    return get


@pytest.fixture(scope="module")
def wishart_eigh():
    """Eigen-decomposition of R for Wishart(0.5), Delta = 0.5 (eigenvectors needed)."""
    target, Delta = T.Wishart(0.5), 0.5
    S0, R = _sample(target, Delta, D_FAST, seed=11)
    x, V = np.linalg.eigh(R)
    return target, Delta, S0, x, V


# ---------------------------------------------------------------------------------------
# semicircle and argument checks
# ---------------------------------------------------------------------------------------


def test_semicircle_is_the_zero_target():
    Delta = 0.7
    x = np.linspace(-2, 2, 41) * math.sqrt(Delta) * 1.1
    zero = T.Spiked(spikes=(1e-9,), bulk=None)  # measure: a single atom at 0
    np.testing.assert_allclose(
        rmt.density(zero, Delta, x), rmt.semicircle_density(x, Delta), atol=1e-10
    )
    z = x + 0.3j
    np.testing.assert_allclose(
        rmt.stieltjes(zero, Delta, z), rmt.semicircle_stieltjes(z, Delta), rtol=1e-10
    )
    mass = integrate.quad(
        lambda t: rmt.semicircle_density(t, Delta),
        -3,
        3,
        points=[-2 * math.sqrt(Delta), 2 * math.sqrt(Delta)],
    )[0]
    assert abs(mass - 1) < 1e-8
    ((lo, hi),) = rmt.support(zero, Delta)
    assert abs(lo + 2 * math.sqrt(Delta)) < 1e-9 and abs(hi - 2 * math.sqrt(Delta)) < 1e-9


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_delta_raises(bad):
    target = T.Wishart(0.5)
    for fun in (
        lambda: rmt.deformed_spectrum(target, bad),
        lambda: rmt.support(target, bad),
        lambda: rmt.stieltjes(target, bad, 1j),
        lambda: rmt.density(target, bad, [0.0]),
        lambda: rmt.outliers(target, bad),
        lambda: rmt.semicircle_density([0.0], bad),
    ):
        with pytest.raises(ValueError, match="Delta"):
            fun()


def test_bad_arguments_raise():
    target = T.Wishart(0.5)
    with pytest.raises(ValueError, match="z"):
        rmt.stieltjes(target, 1.0, [1j, complex(float("nan"), 1.0)])
    with pytest.raises(ValueError, match="x"):
        rmt.density(target, 1.0, [0.0, float("nan")])
    with pytest.raises(ValueError, match="n_nodes"):
        rmt.deformed_spectrum(target, 1.0, n_nodes=0)
    with pytest.raises(ValueError, match="target"):
        rmt.deformed_spectrum("wishart", 1.0)
    with pytest.raises(ValueError, match="x"):
        rmt.spectral_divergence(np.ones((2, 2)), np.abs, np.sign)


# ---------------------------------------------------------------------------------------
# the Wishart closed form: cubic for G_R, quartic for the edges, atom-sum path
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kappa0", [0.2, 0.5, 1.0, 2.0, 4.0])
@pytest.mark.parametrize("Delta", [1.0, 0.05, 1e-4])
def test_wishart_cubic_and_quartic(kappa0, Delta):
    """G_R solves Delta G^3 - (z + Delta s) G^2 + (z s - c + 1) G - s = 0 (s = sqrt(c)),
    from the R-transform c / (s - g) + Delta g of R; the edges are critical values of its
    inverse z(G) = c / (s - G) + Delta G + 1 / G (a quartic in G)."""
    c, s = kappa0, math.sqrt(kappa0)
    target = T.Wishart(kappa0)
    (lo, _), *_ = rmt.support(target, Delta)
    hi = rmt.support(target, Delta)[-1][1]
    z = np.concatenate(
        [np.linspace(lo - 0.5, hi + 0.5, 57) + 0.2j, np.linspace(lo, hi, 31) + 1e-3j]
    )
    x = np.linspace(lo - 0.3, hi + 0.3, 57)
    for zz in (z, x + 0j):
        G = rmt.stieltjes(target, Delta, zz)
        res = Delta * G**3 - (zz + Delta * s) * G**2 + (zz * s - c + 1) * G - s
        scale = Delta * abs(G) ** 3 + abs(zz * G**2) + abs(G) + 1
        assert np.max(np.abs(res) / scale) < 1e-10
        assert np.all(G.imag[zz.imag > 0] < 0)
    # edges from the quartic  c G^2 + Delta G^2 (s - G)^2 - (s - G)^2 = 0
    p_s_minus_G = np.poly1d([-1.0, s])
    quartic = (
        c * np.poly1d([1, 0, 0]) + Delta * np.poly1d([1, 0, 0]) * p_s_minus_G**2 - p_s_minus_G**2
    )
    roots = quartic.roots
    roots = roots[np.abs(roots.imag) < 1e-9].real
    crit = c / (s - roots) + Delta * roots + 1 / roots
    edges = np.array(rmt.support(target, Delta)).ravel()
    for e in edges:
        assert np.min(np.abs(crit - e)) < 1e-9 * max(1.0, abs(e))


def test_wishart_closed_form_vs_atom_sum():
    """Subordination with the closed-form G_S0 and with the atom sum of target.measure()."""
    target = T.Wishart(0.5)
    Delta = 0.3
    z = np.concatenate([np.linspace(-1.5, 5, 40) + 0.05j, np.linspace(-1.5, 5, 40) + 1.0j])
    g_closed = rmt.stieltjes(target, Delta, z)
    g_atoms = rmt.stieltjes(target.measure(), Delta, z)
    # quantile atoms (4000) approximate the Marchenko-Pastur law to O(n^-1) near its edges
    np.testing.assert_allclose(g_atoms, g_closed, atol=2e-4)
    # the module's Wishart transform is the target's own one off the real axis
    law = _law(target)
    np.testing.assert_allclose(_G(law, z)[0], target.stieltjes(z), rtol=1e-12)
    # densities on the real line
    ((lo, hi),) = rmt.support(target, Delta)
    x = np.linspace(lo + 0.1, hi - 0.1, 60)  # away from the edges, where the top atom lags
    np.testing.assert_allclose(
        rmt.density(target.measure(), Delta, x), rmt.density(target, Delta, x), atol=1e-3
    )


# ---------------------------------------------------------------------------------------
# quadrature: exact moment identities of the free convolution
# ---------------------------------------------------------------------------------------


def _free_convolved_moments(m, Delta):
    """Moments 1..4 of mu (+) semicircle(Delta) from moments m[1..4] of mu (free cumulants)."""
    m1, m2, m3, m4 = m
    k1 = m1
    k2 = m2 - m1**2 + Delta
    k3 = m3 - 3 * m1 * m2 + 2 * m1**3
    k4 = m4 - 4 * m1 * m3 - 2 * m2**2 + 10 * m1**2 * m2 - 5 * m1**4
    return (
        k1,
        k2 + k1**2,
        k3 + 3 * k1 * k2 + k1**3,
        k4 + 4 * k1 * k3 + 2 * k2**2 + 6 * k1**2 * k2 + k1**4,
    )


def _check_moments(spec, m_mu, atol):
    x, w, h = spec.x, spec.w, spec.hilbert
    mR = _free_convolved_moments(m_mu, spec.Delta)
    got = [np.sum(w * x**k) for k in range(1, 5)]
    np.testing.assert_allclose(got, mR, atol=atol, rtol=0)
    # int rho x^k h = (1/2) sum_{j<k} m_j m_{k-1-j}  (symmetrised double integral)
    mm = (1.0, *mR)
    for k in range(0, 4):
        exact = 0.5 * sum(mm[j] * mm[k - 1 - j] for j in range(k))
        assert abs(np.sum(w * x**k * h) - exact) < atol * (1 + abs(exact))
    assert abs(spec.mass - 1) < atol


@pytest.mark.parametrize("kappa0", [0.2, 0.5, 1.0, 2.0])
@pytest.mark.parametrize("Delta", [1.0, 0.1, 0.01, 1e-5, 1e-6])
def test_quadrature_moments_wishart(kappa0, Delta):
    # Wishart free cumulants: R(g) = c / (sqrt(c) - g), kappa_{n+1} = c^{(1 - n)/2}
    c = kappa0
    k = [c ** ((1 - n) / 2) for n in range(4)]
    m = (
        k[0],
        k[1] + k[0] ** 2,
        k[2] + 3 * k[0] * k[1] + k[0] ** 3,
        k[3] + 4 * k[0] * k[2] + 2 * k[1] ** 2 + 6 * k[0] ** 2 * k[1] + k[0] ** 4,
    )
    spec = rmt.deformed_spectrum(T.Wishart(kappa0), Delta)
    _check_moments(spec, m, atol=1e-9)


@pytest.mark.parametrize(
    "target,Delta",
    [
        (T.Explicit((-1.0, 0.5, 2.0)), 0.05),
        (T.Explicit((-1.0, 0.5, 2.0)), 1e-5),
        (T.PowerLaw(gamma=0.25, kappa0=0.5), 0.3),
    ],
)
def test_quadrature_moments_atoms(target, Delta):
    n_atoms = 300
    mu = target.measure(n_atoms)
    m = tuple(mu.moment(k) for k in range(1, 5))
    spec = rmt.deformed_spectrum(target, Delta, n_atoms=n_atoms)
    _check_moments(spec, m, atol=1e-9)


def test_quadrature_kink_against_gauss_jacobi():
    """int rho_R (x - tau)_+^p with tau a breakpoint, vs a Gauss-Jacobi rule in x.

    On [tau, hi] the density is (hi - x)^{1/2} times an analytic function, so Gauss-Jacobi
    with weight (hi - x)^{1/2}, fed by density() (the x -> u inversion, not the nodes of
    deformed_spectrum), converges exponentially.
    """
    target, Delta, tau = T.Wishart(0.5), 0.05, 0.9
    spec = rmt.deformed_spectrum(target, Delta, breakpoints=(tau,))
    hi = spec.intervals[-1][1]
    s, ws = special.roots_jacobi(200, 0.5, 0.0)
    t = tau + (hi - tau) * (1 + s) / 2
    g = rmt.density(target, Delta, t) / np.sqrt((hi - t) / ((hi - tau) / 2))
    for p in (1, 2):
        ref = (hi - tau) / 2 * np.sum(ws * g * (t - tau) ** p)
        got = np.sum(spec.w * np.maximum(spec.x - tau, 0) ** p)
        assert abs(got - ref) < 1e-9


def test_density_and_hilbert_consistent_with_nodes():
    target, Delta = T.Wishart(0.5), 0.02
    spec = rmt.deformed_spectrum(target, Delta)
    idx = np.linspace(0, spec.x.size - 1, 40).astype(int)
    np.testing.assert_allclose(
        rmt.density(target, Delta, spec.x[idx]), spec.density[idx], rtol=1e-8, atol=1e-10
    )
    G = rmt.stieltjes(target, Delta, spec.x[idx] + 0j)
    np.testing.assert_allclose(G.real, spec.hilbert[idx], rtol=1e-8, atol=1e-10)
    # off the axis G_R is the Stieltjes transform of the quadrature measure
    z = np.linspace(-1, 5, 13) + 0.5j
    np.testing.assert_allclose(
        rmt.stieltjes(target, Delta, z), np.sum(spec.w / (z[:, None] - spec.x), axis=1), rtol=1e-9
    )


def test_small_delta_zero_atom_becomes_semicircle():
    """Wishart(kappa0 < 1) at tiny Delta: the atom at 0 becomes a bump of mass 1 - kappa0,
    close to a semicircle of variance Delta (1 - kappa0) (to first order, the rest of the
    spectrum is far away)."""
    kappa0, Delta = 0.5, 1e-6
    spec = rmt.deformed_spectrum(T.Wishart(kappa0), Delta)
    assert len(spec.intervals) == 2
    (lo, hi), _ = spec.intervals
    r = 2 * math.sqrt(Delta * (1 - kappa0))
    assert abs(hi - lo - 2 * r) < 0.05 * r
    bump = spec.x < spec.intervals[1][0]
    assert abs(np.sum(spec.w[bump]) - (1 - kappa0)) < 1e-10


# ---------------------------------------------------------------------------------------
# sampled matrices
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(KS_CASES))
def test_kolmogorov_distance(sampled_eigs, name):
    # d = 1000: bulk rigidity O(log d / d) + edges -> observed ~3.5e-3 for all cases
    target, Delta = KS_CASES[name]
    assert _kolmogorov(sampled_eigs(name), target, Delta) < 0.01


def test_support_contains_sampled_spectrum(sampled_eigs):
    target, Delta = KS_CASES["explicit"]
    eigs = sampled_eigs("explicit")
    ivals = rmt.support(target, Delta)
    assert len(ivals) == 3
    # every eigenvalue lies within O(d^{-2/3}) of the support
    dist = np.min([np.maximum(0, np.maximum(lo - eigs, eigs - hi)) for lo, hi in ivals], axis=0)
    assert np.max(dist) < 0.05


def test_conditional_overlap(wishart_eigh):
    """E[v^T S0 v | x] = x - 2 Delta h_R(x), per bin of 50 eigenvalues."""
    target, Delta, S0, x, V = wishart_eigh
    a = np.sum(V * (S0 @ V), axis=0)
    theory = x - 2 * Delta * rmt.stieltjes(target, Delta, x + 0j).real
    nb = 20
    for sl in np.array_split(np.arange(x.size), nb):
        diff = np.mean(a[sl] - theory[sl])
        se = np.std(a[sl] - theory[sl]) / math.sqrt(len(sl))
        # 5 standard errors of the bin mean plus an O(1/d) bias allowance
        assert abs(diff) < 5 * se + 0.01, (x[sl][0], diff, se)


def test_trace_identities_soft_threshold(wishart_eigh):
    """Tr(F(R) S0)/d and Tr(F(R)^2)/d for f(x) = sign(x) (|x| - tau)_+."""
    target, Delta, S0, x, V = wishart_eigh
    tau = 0.8
    f = lambda t: np.sign(t) * np.maximum(np.abs(t) - tau, 0)  # noqa: E731
    d = x.size
    FR = (V * f(x)) @ V.T
    m_emp = np.sum(FR * S0) / d
    q_emp = np.sum(f(x) ** 2) / d
    spec = rmt.deformed_spectrum(target, Delta, breakpoints=(-tau, tau))
    si = rmt.spectral_integrals(spec, f)
    # O(1/d) fluctuations and bias of normalised traces (observed ~2e-3 at d = 1000)
    assert abs(m_emp - si.m) < 1e-2
    assert abs(q_emp - si.q) < 1e-2


def test_divergence_formula_by_finite_differences(symmetric_basis):
    """div F over the d(d+1)/2 orthonormal coordinates of symmetric matrices, brute force."""
    d = 5
    rng = np.random.default_rng(3)
    B = _goe(rng, d) * 2
    f, fp = np.tanh, lambda t: 1 / np.cosh(t) ** 2

    def F(M):
        lam, vecs = np.linalg.eigh(M)
        return (vecs * f(lam)) @ vecs.T

    eps = 1e-6
    div = sum(np.sum(E * (F(B + eps * E) - F(B - eps * E))) / (2 * eps) for E in symmetric_basis(d))
    got = rmt.spectral_divergence(np.linalg.eigvalsh(B), f, fp)
    assert abs(got - div) < 1e-6


def test_divergence_identity(sampled_eigs):
    eigs = sampled_eigs("wishart-0.5-1")
    d = eigs.size
    ident = rmt.spectral_divergence(eigs, lambda t: t, np.ones_like)
    assert abs(ident / d**2 - (d + 1) / (2 * d)) < 1e-12
    target, Delta = KS_CASES["wishart-0.5-1"]
    tau = 1.0
    f = lambda t: np.maximum(t - tau, 0)  # noqa: E731
    fp = lambda t: (t > tau).astype(float)  # noqa: E731
    emp = rmt.spectral_divergence(eigs, f, fp) / d**2
    spec = rmt.deformed_spectrum(target, Delta, breakpoints=(tau,))
    # div/d^2 = (1/2) int int rho_d rho_d K + (1/(2d)) int rho_d f'; the second term is
    # kept explicitly, the first converges at rate O(1/d) (rigidity)
    theory = np.sum(spec.w * f(spec.x) * spec.hilbert) + np.sum(spec.w * fp(spec.x)) / (2 * d)
    assert abs(emp - theory) < 1.5e-3  # observed 3.6e-4


# ---------------------------------------------------------------------------------------
# outliers
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("theta", [3.0, -2.0, 1.2])
def test_outlier_pure_spike_closed_form(theta):
    Delta = 1.0
    (o,) = rmt.outliers(T.Spiked(spikes=(theta,)), Delta)
    assert abs(o.position - (theta + Delta / theta)) < 1e-12
    assert abs(o.overlap2 - (1 - Delta / theta**2)) < 1e-12
    assert rmt.outliers(T.Spiked(spikes=(0.9,)), Delta) == ()


def test_outlier_pure_spike_sampled():
    theta, Delta, d = 2.5, 1.0, D_FAST
    target = T.Spiked(spikes=(theta,))
    S0 = np.asarray(target.sample(jax.random.PRNGKey(5), d))
    j = np.argmax(np.diag(S0))  # S0 = theta u u^T: any column is proportional to u
    u = S0[:, j] / np.linalg.norm(S0[:, j])
    R = S0 + math.sqrt(Delta) * _goe(np.random.default_rng(5), d)
    lam, V = _top_eigenpair(R)
    (o,) = rmt.outliers(target, Delta)
    # O(d^{-1/2}) fluctuations: 0.1 on the position, 0.1 on the squared overlap
    assert abs(lam - o.position) < 0.1
    assert abs((V @ u) ** 2 - o.overlap2) < 0.1


def test_outlier_wishart_bulk_sampled():
    """Spike on a Wishart bulk: the isolated eigenvalue of S0 and the outlier of R."""
    Delta, d = 0.5, D_FAST
    target = T.Spiked(spikes=(5.0,), bulk=T.Wishart(0.5))
    S0 = np.asarray(target.sample(jax.random.PRNGKey(7), d))
    lam0, V0 = _top_eigenpair(S0)
    thetas = rmt.isolated_eigenvalues(target)
    top = max(thetas)
    assert abs(lam0 - top) < 0.1  # the spike 5.0 itself is not an eigenvalue of S0
    R = S0 + math.sqrt(Delta) * _goe(np.random.default_rng(7), d)
    lam, V = _top_eigenpair(R)
    outs = {round(o.theta, 9): o for o in rmt.outliers(target, Delta)}
    o = outs[round(top, 9)]
    assert o.position > rmt.support(target, Delta)[-1][1]
    assert abs(lam - o.position) < 0.1
    assert abs((V @ V0) ** 2 - o.overlap2) < 0.1


# ---------------------------------------------------------------------------------------
# slow: larger d, tighter tolerances, atom-comb regime
# ---------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("kappa0", [0.5, 1.0])
def test_kolmogorov_distance_d2000(kappa0):
    target, Delta, d = T.Wishart(kappa0), 0.1, 2000
    _, R = _sample(target, Delta, d, seed=21)
    # half of the d = 1000 bound
    assert _kolmogorov(np.linalg.eigvalsh(R), target, Delta) < 0.005


@pytest.mark.slow
def test_powerlaw_small_delta_comb():
    """Small Delta on an atomic target: many intervals, still exact moments."""
    target, Delta, n_atoms = T.PowerLaw(gamma=0.25, kappa0=1.0), 1e-4, 400
    mu = target.measure(n_atoms)
    m = tuple(mu.moment(k) for k in range(1, 5))
    spec = rmt.deformed_spectrum(target, Delta, n_atoms=n_atoms)
    assert len(spec.intervals) > 10
    _check_moments(spec, m, atol=1e-8)


def test_bracketed_newton_reports_its_residual():
    """After maxiter steps the root finder warns with its residual (no silent return)."""

    def fun(x, idx):
        return x**3 - 2.0, 3 * x**2

    with pytest.warns(RuntimeWarning, match="residual"):
        x = _bracketed_newton(fun, np.array([0.0]), np.array([10.0]), -1.0, maxiter=2)
    assert abs(x[0] ** 3 - 2.0) > 1e-3  # really unconverged
    x = _bracketed_newton(fun, np.array([0.0]), np.array([10.0]), -1.0)
    assert x[0] == pytest.approx(2.0 ** (1 / 3), rel=1e-13)


def test_delta_below_float_resolution_is_rejected():
    """A Delta that float64 cannot resolve raises (it used to renormalise a wrong mass)."""
    with pytest.raises(ValueError, match="Delta"):
        rmt.deformed_spectrum(T.Wishart(0.5), 1e-200)
    with pytest.raises(ValueError, match="Delta"):
        rmt.deformed_spectrum(T.Explicit((0.0, 1.0, 2.0)).measure(), 1e-40)


@pytest.mark.parametrize(
    "target, Delta",
    [
        (T.Wishart(1.0), 0.3),  # hard edge at 0
        (T.Wishart(0.5), 0.05),
        (T.PowerLawModes(gamma=1.5, n_modes=8), 1e-3),  # separate bumps
        (T.PowerLawModes(gamma=1.5, n_modes=8), 20.0),
    ],
)
def test_breakpoint_curve_parameter_by_complex_newton(target, Delta):
    """The quadrature's panel cut at a breakpoint x (u with x(u) = x) by Newton's method
    on H(omega) = x agrees with the bracketed real Newton on x(u) (an independent
    solver), including points next to the edges where it falls back; |x(u) - x| is at
    rounding (1e-12 relative to the interval)."""
    law, Delta = _prepare(target, Delta, 4000)
    comp = _components(law, Delta)
    for k in range(comp.x_lo.size):
        lo, hi = comp.x_lo[k], comp.x_hi[k]
        frac = np.array([1e-9, 1e-4, 0.013, 0.3, 0.5, 0.77, 0.999, 1 - 1e-9])
        x = lo + frac * (hi - lo)
        u_fast = _u_at_x(law, Delta, comp, x, k)
        u_ref = _u_of_x(law, Delta, comp, x, k)
        scale = comp.u_hi[k] - comp.u_lo[k]
        np.testing.assert_allclose(u_fast, u_ref, rtol=0, atol=1e-9 * scale)
        x_back = _curve(law, Delta, u_fast).x
        np.testing.assert_allclose(x_back, x, rtol=0, atol=1e-12 * max(hi - lo, 1.0))
