"""Hardmax attention: the task, its exact proximal map, derivatives, state evolution.

Independent references: a generic QP solver (SLSQP) region by region for the prox,
dense random sampling of the true (argmax) objective as a lower-bound check, finite
differences for ``dg``, Gaussian integration by parts (Stein) for the average
derivative, and the finite-scale prox of the state-evolution engine for the zero-scale
channel.
"""

from __future__ import annotations

import logging
import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize
import scipy.stats

import attnlib  # noqa: F401
from attnlib import amp, bayes, channels, hardmax, se, targets, tasks, thresholds
from attnlib.channels import hardmax as hm
from attnlib.se import output as se_output


def _problem(T, n, seed, noise_out=0.0):
    rng = np.random.default_rng(seed)
    K = tasks.n_pairs(T)
    s2 = tasks.pair_variances(T)
    h0 = rng.normal(size=(n, K)) * np.sqrt(s2)
    Y = np.asarray(tasks.Hardmax(T=T).output(tasks.to_matrix(jnp.asarray(h0), T)))
    Y = Y + noise_out * rng.normal(size=Y.shape)
    omega = 1.5 * rng.normal(size=(n, K))
    V = rng.uniform(0.3, 2.0, size=(n, K))
    return Y, omega, V


def test_output_one_hot_rows_and_ties():
    h = jnp.array([[0.3, 1.2], [1.2, -0.5]])
    A = tasks.Hardmax(T=2).output(h)
    np.testing.assert_array_equal(np.asarray(A), [[0.0, 1.0], [1.0, 0.0]])
    tie = tasks.Hardmax(T=2).output(jnp.zeros((2, 2)))  # documented: smallest index
    np.testing.assert_array_equal(np.asarray(tie), [[1.0, 0.0], [1.0, 0.0]])
    assert tasks.Hardmax(T=3).m_eff == 0


@pytest.mark.parametrize("T, count", [(2, 4), (3, 25)])
def test_regions_are_the_argmax_patterns_of_symmetric_matrices(T, count):
    """The realisable assignments are exactly those seen on random symmetric matrices
    (T = 3: the two 3-cycles are missing, 27 - 2 = 25)."""
    J, _ = hm.regions(T)
    assert len(J) == count
    h = np.random.default_rng(0).normal(size=(200_000, T, T))
    seen = np.unique(np.argmax(h + np.swapaxes(h, 1, 2), axis=-1), axis=0)
    assert {tuple(j) for j in seen} == {tuple(j) for j in J}


def _qp_reference(T, Y, om, V):
    """min over realisable regions of c(j) + min_{A_j h >= 0} sum (h - om)^2 / (2V) (SLSQP)."""
    J, A = hm.regions(T)
    best = np.inf
    for j, Aj in zip(J, A, strict=True):
        c = np.sum((Y - np.eye(T)[j]) ** 2)
        res = scipy.optimize.minimize(
            lambda x: 0.5 * np.sum((x - om) ** 2 / V),
            np.zeros(len(om)),
            jac=lambda x: (x - om) / V,
            constraints=[{"type": "ineq", "fun": lambda x, A=Aj: A @ x, "jac": lambda x, A=Aj: A}],
            method="SLSQP",
            options={"ftol": 1e-14, "maxiter": 500},
        )
        best = min(best, c + res.fun)
    return best


@pytest.mark.parametrize("T, noise_out", [(2, 0.0), (3, 0.0), (2, 0.3)])
def test_prox_against_a_qp_solver_region_by_region(T, noise_out):
    """Exact enumeration = the best region's convex QP (SLSQP, converged to ~1e-12)."""
    task = tasks.Hardmax(T=T)
    Y, om, V = _problem(T, 15, 1 + T, noise_out)
    h, obj = hm.prox(task, Y, om, V)
    ref = np.array([_qp_reference(T, Y[i], om[i], V[i]) for i in range(len(om))])
    np.testing.assert_allclose(np.asarray(obj), ref, atol=1e-9)
    # the minimiser's objective, with the loss at its (possibly tied) point taken in
    # the envelope convention, is the minimum
    quad = 0.5 * np.sum((np.asarray(h) - om) ** 2 / V, axis=-1)
    out = hm.finish(task, Y, om, V)
    np.testing.assert_allclose(np.asarray(out.loss) + quad, np.asarray(obj), atol=1e-12)


def test_prox_is_a_lower_bound_of_the_sampled_objective():
    """Dense sampling of the true objective (argmax loss) around omega never goes below the
    exact minimum, and comes within the sampling resolution of it."""
    T, task = 2, tasks.Hardmax(T=2)
    Y, om, V = _problem(T, 6, 7)
    _, obj = hm.prox(task, Y, om, V)
    rng = np.random.default_rng(3)
    for i in range(len(om)):
        pts = om[i] + rng.uniform(-4, 4, size=(400_000, 3)) * np.sqrt(V[i])
        A = task.output(tasks.to_matrix(jnp.asarray(pts), T))
        f = np.sum((Y[i] - np.asarray(A)) ** 2, axis=(1, 2)) + 0.5 * np.sum(
            (pts - om[i]) ** 2 / V[i], axis=-1
        )
        assert f.min() >= float(obj[i]) - 1e-12
        # resolution: 400k points in a box of side 8 sqrt(V): spacing ~0.11 sqrt(V), the
        # objective's slope ~ 4 / sqrt(V) at most within the box: 0.5 is generous
        assert f.min() <= float(obj[i]) + 0.5


def _fd_dg(fn, Y, om, V, eps=1e-6):
    n, K = om.shape
    fd = np.zeros((n, K))
    jump = np.zeros((n, K), dtype=bool)
    for k in range(K):
        e = np.zeros(K)
        e[k] = eps
        gp, gm = np.asarray(fn(Y, om + e, V).g)[:, k], np.asarray(fn(Y, om - e, V).g)[:, k]
        fd[:, k] = (gp - gm) / (2 * eps)
        jump[:, k] = np.abs(gp - gm) > 1e-3  # a jump of g (size O(1/sqrt V)) in the interval
    return fd, jump


@pytest.mark.parametrize("T", [2, 3])
def test_dg_against_finite_differences_away_from_jumps(T):
    task = tasks.Hardmax(T=T)
    Y, om, V = _problem(T, 300, 11)
    for fn in (hm.finish, hm.projection):
        out = fn(task, Y, om, V)
        fd, jump = _fd_dg(lambda y, o, v, fn=fn: fn(task, y, o, v), Y, om, V)
        assert jump.mean() < 0.01
        np.testing.assert_allclose(np.asarray(out.dg)[~jump], fd[~jump], atol=1e-6)
        assert np.all(np.asarray(out.dg) <= 1e-12)


def test_channels_dispatch_to_the_exact_prox():
    task = tasks.Hardmax(T=2)
    Y, om, V = _problem(2, 20, 5)
    a = channels.output_step(task, Y, om, V)
    b = hm.finish(task, Y, om, V)
    p = channels.prox(task, Y, om, V, jnp.zeros((20, 1, 3)))
    for x, y in ((a.h, b.h), (a.dg, b.dg), (p.h, b.h)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_zero_scale_limit_is_the_projection():
    """prox(eps omega, eps V) / eps = projection(omega, V) once eps * dist^2 / V < loss gaps."""
    task = tasks.Hardmax(T=3)
    Y, om, V = _problem(3, 200, 2)
    pr = hm.projection(task, Y, om, V)
    eps = 1e-6
    h, _ = hm.prox(task, Y, eps * om, eps * V)
    np.testing.assert_allclose(np.asarray(h) / eps, np.asarray(pr.h), atol=1e-8)
    # the finite-scale output side of the SE engine (Stein a_hat) lands on the zero-scale one
    tg = targets.Wishart(kappa0=0.5)
    t2 = tasks.Hardmax(T=2)
    m, q, v = 0.75 * tg.Q0, tg.Q0, 0.3
    o = se.output_side(t2, 0.5, tg.Q0, eps * m, eps**2 * q, eps * v, n_qmc=4096)
    z = _zero_scale_means(t2, 0.5, tg.Q0, (m, q, v), 4096, 4).mean(axis=0)
    np.testing.assert_allclose([o.q_hat, o.m_hat, eps * o.a_hat], [z[1], z[2], z[4]], rtol=1e-8)
    # the public spelling: se.output_side of the zero-scale channel (a_hat: exact derivative)
    zs = se.output_side(channels.for_task(t2).at_zero_scale(), 0.5, tg.Q0, m, q, v, n_qmc=4096)
    assert (zs.a_hat, zs.q_hat, zs.m_hat) == tuple(float(t) for t in z[:3])


def _zero_scale_means(task, alpha, Q0, x, n_qmc, n_rep):
    """Per-replicate ``(a_hat, q_hat, m_hat, train_loss, a_hat_stein)`` of the zero-scale
    channel (the output side of hardmax.solve, the Stein form its check column)."""
    zc = channels.for_task(task).at_zero_scale()
    z = se_output.qmc_points(zc, n_qmc, n_rep, 0)
    x = jnp.asarray(x, dtype=jnp.float64)
    return np.asarray(se_output.output_arrays(zc, z, alpha, Q0, x, None).means)


def test_stein_and_pointwise_a_hat_agree_for_the_projection():
    """The projection is Lipschitz: E[dg] pointwise = Stein form, within QMC error bars."""
    task, tg = tasks.Hardmax(T=2), targets.Wishart(kappa0=0.5)
    r = _zero_scale_means(task, 0.5, tg.Q0, (0.75 * tg.Q0, tg.Q0, 0.35), 65536, 8)
    mean, err = r.mean(axis=0), r.std(axis=0, ddof=1) / np.sqrt(len(r))
    # 4 sigma of the two (correlated, hence conservatively added) standard errors
    assert abs(mean[0] - mean[4]) < 4 * (err[0] + err[4])


def test_smoothed_divergence_counts_the_jumps():
    """Averaged over omega ~ N(mu, s^2) (labels fixed), the smoothed derivative of the
    finite-scale channel matches Stein's E[g (omega - mu)] / s^2, which counts the jumps,
    and differs from the almost-everywhere derivative (the jump part is not small)."""
    T, task = 2, tasks.Hardmax(T=2)
    rng = np.random.default_rng(4)
    n, K = 40_000, 3
    Y, mu, _ = _problem(T, n, 9)
    V = np.full(K, 0.5)
    s = 0.8
    om = mu + s * rng.normal(size=(n, K))
    out = hm.finish(task, Y, om, V)
    g = np.asarray(out.g)
    stein = g * (om - mu) / s**2
    sm = np.asarray(hm.smoothed_divergence(task, Y, om, V, width=0.05))
    # relative bias of the smoothing: width^2 V / s^2 = 0.2 %; error bars from the samples
    err = np.sqrt(np.var(stein, axis=0) / n + np.var(sm, axis=0) / n)
    gap = np.abs(stein.mean(axis=0) - sm.mean(axis=0))
    assert np.all(gap < 4 * err + 0.01 * np.abs(stein.mean(axis=0)))
    jump_part = np.abs(stein.mean(axis=0) - np.asarray(out.dg).mean(axis=0))
    assert np.all(jump_part > 10 * err)


def test_bad_arguments_name_them():
    with pytest.raises(ValueError, match="T"):
        tasks.Hardmax(T=1)
    with pytest.raises(ValueError, match="width"):
        hm.smoothed_divergence(tasks.Hardmax(T=2), *_problem(2, 3, 0), width=0.0)
    Y, om, V = _problem(2, 3, 0)
    with pytest.raises(ValueError, match="T"):
        hm.prox(tasks.Hardmax(T=4), np.zeros((3, 4, 4)), np.zeros((3, 10)), 1.0)
    with pytest.raises(ValueError, match="task"):
        hm.prox(tasks.Seq2Seq(T=2), Y, om, V)
    with pytest.raises(ValueError, match="V"):
        hm.prox(tasks.Hardmax(T=2), Y, om, -V)
    with pytest.raises(ValueError, match="alpha"):
        hardmax.solve(tasks.Hardmax(T=2), targets.Wishart(kappa0=0.5), -1.0, 1.0)
    with pytest.raises(ValueError, match="task"):  # no finite fixed point: the ray solver
        se.solve(tasks.Hardmax(T=2), targets.Wishart(kappa0=0.5), 0.5, 0.1)
    data = tasks.make_dataset(jax.random.PRNGKey(0), tasks.Hardmax(T=2), np.eye(4), 8)
    with pytest.raises(ValueError, match="task"):
        amp.gamp(tasks.Hardmax(T=2), data, 0.1)
    with pytest.raises(ValueError, match="task"):
        thresholds.perfect_recovery(tasks.Hardmax(T=2), targets.Wishart(kappa0=0.5))
    assert bayes.perfect_recovery(tasks.Hardmax(T=2), targets.Wishart(kappa0=0.5)) == np.inf
    with pytest.raises(ValueError, match="init"):
        hardmax.solve(tasks.Hardmax(T=2), targets.Wishart(kappa0=0.5), 0.5, 1.0, init=(1.5, 1.0))


def test_state_evolution_settings_and_failure_policy():
    """One settings type (HardmaxSettings, its fields also as shorthand keywords, each
    validated by name); lam the 4th positional argument; a ray not reached in max_iter
    maps is converged=False with NaN fields and an SEConvergenceWarning (it was the last
    iterate)."""
    task, tg = tasks.Hardmax(T=2), targets.Wishart(kappa0=0.5)
    small = hardmax.HardmaxSettings(n_qmc=2048, n_rep=4, max_iter=2)
    with pytest.warns(se.SEConvergenceWarning, match="residual"):
        r = hardmax.solve(task, tg, 0.5, 1.0, settings=small)
    assert not r.converged and r.n_iter == 2 and r.residual > small.tol
    for field in ("cos_theta", "rho", "test_error", "rank_fraction", "kappa_scale", "objective"):
        assert np.isnan(getattr(r, field)), field
    with pytest.warns(se.SEConvergenceWarning):  # the shorthand wins over settings' field
        s = hardmax.solve(task, tg, 0.5, 1.0, settings=small._replace(max_iter=50), max_iter=2)
    assert s.residual == r.residual and s.n_iter == 2
    for field, bad in (("tol", 0.0), ("max_iter", 0), ("damping", 1.0), ("n_qmc", 3),
                       ("n_rep", 0), ("seed", -1), ("rtol", 0.0), ("rtol", np.nan),
                       ("max_n_qmc", 1)):  # fmt: skip
        with pytest.raises(ValueError, match=field):
            hardmax.solve(task, tg, 0.5, 1.0, settings=hardmax.HardmaxSettings(**{field: bad}))
    with pytest.raises(ValueError, match="settings"):
        hardmax.solve(task, tg, 0.5, 1.0, settings=(1e-3, 10))
    with pytest.raises(TypeError):  # settings are keyword-only
        hardmax.solve(task, tg, 0.5, 1.0, None, small)


def _rel_devs(r, ref):
    """Relative deviations of ``(cos_theta, rho, test_error)`` of ``r`` from ``ref``."""
    keys = ("cos_theta", "rho", "test_error")
    return np.array([abs(getattr(r, k) / getattr(ref, k) - 1) for k in keys])


def test_rtol_doubles_n_qmc_until_the_propagated_error_meets_it(caplog):
    """rtol = 1e-2 from 2048 points: n_qmc doubles (logged) until integration_error <=
    rtol, and cos_theta, rho and the test error are within 3 combined errors of an
    independent reference: the ray at 65536 points with another seed, tol 1e-4 (its own
    reported error about 2e-3). Beyond max_n_qmc a RuntimeWarning names rtol; a ray not
    reached (1024 points: the QMC cycle, residual 3e-3 > tol) is doubled too, silently."""
    task, tg = tasks.Hardmax(T=2), targets.Wishart(kappa0=0.5)
    with caplog.at_level(logging.INFO, logger="attnlib"):
        r = hardmax.solve(task, tg, 0.5, 1.0, n_qmc=2048, rtol=1e-2)
    assert "doubling" in caplog.text
    assert r.converged and r.integration_error <= 1e-2
    ref = hardmax.solve(task, tg, 0.5, 1.0, n_qmc=65536, seed=7, tol=1e-4, max_iter=400)
    assert ref.converged and ref.integration_error < 5e-3
    assert np.all(_rel_devs(r, ref) <= 3 * math.hypot(r.integration_error, ref.integration_error))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s = hardmax.solve(task, tg, 0.5, 1.0, n_qmc=1024, rtol=1e-6, max_n_qmc=2048)
    assert s.converged and [w.category for w in caught] == [RuntimeWarning]
    assert "rtol" in str(caught[0].message)


@pytest.mark.slow
def test_integration_error_covers_the_spread_over_seeds():
    """integration_error (the per-scrambling error propagated through the ray's fixed
    point) against the deviation of single solves from a reference: T = 2, alpha 0.5,
    8 seeds at 16384 points against the mean of two rays at 2^19 points (tol 1e-5).
    Every single solve's cos_theta, rho and test error lie within 3 combined errors
    (measured: within 1.9, rms 0.6-1.0 over 16 seeds)."""
    task, tg = tasks.Hardmax(T=2), targets.Wishart(kappa0=0.5)
    refs = [
        hardmax.solve(task, tg, 0.5, 1.0, n_qmc=2**19, seed=100 + k, tol=1e-5, max_iter=400)
        for k in range(2)
    ]
    ref = refs[0]._replace(**{k: (getattr(refs[0], k) + getattr(refs[1], k)) / 2
                              for k in ("cos_theta", "rho", "test_error")})  # fmt: skip
    ref_err = max(r.integration_error for r in refs) / math.sqrt(2)
    for seed in range(8):
        r = hardmax.solve(task, tg, 0.5, 1.0, n_qmc=16384, seed=seed)
        assert r.converged, seed
        bound = 3 * math.hypot(r.integration_error, ref_err)
        assert np.all(_rel_devs(r, ref) <= bound), (seed, _rel_devs(r, ref), bound)


def test_state_evolution_direction_does_not_depend_on_lam():
    """Homogeneity: lam only rescales rho = v / sqrt(q), map by map (same QMC points, the
    default start (0.5, 0.3 / lam) rescaled too), so the direction is the same to rounding
    and both runs stop after the same map; the scale contracts (no finite fixed point)."""
    task, tg = tasks.Hardmax(T=2), targets.Wishart(kappa0=0.5)
    settings = hardmax.HardmaxSettings(n_qmc=16384)
    a = hardmax.solve(task, tg, 0.5, 1.0, settings=settings)
    b = hardmax.solve(task, tg, 0.5, 0.1, settings=settings)
    assert a.converged and b.converged and a.n_iter == b.n_iter
    assert abs(a.cos_theta - b.cos_theta) < 1e-8
    assert abs(b.rho / a.rho - 10.0) < 1e-7
    assert a.residual < 1e-3  # the ray is reached (up to the QMC cycle)
    assert a.kappa_scale < 1.0
    assert abs(a.a_hat - a.a_hat_stein) < 0.05 * a.a_hat  # QMC error about 1 %


def test_trajectory_from_the_ray_stays_on_it():
    """hardmax.trajectory is the undamped map of hardmax.solve: started on the solved ray
    (same QMC points, solved to tol = 1e-4) it stays there (measured: gamma within 6e-5,
    rho within 1e-4 relative over 3 maps; bound: 5 tol per map), while from cosine 0.3 one
    map moves it to 0.71; a start outside 0 < gamma < 1, rho > 0 is named."""
    task, tg = tasks.Hardmax(T=2), targets.Wishart(kappa0=0.5)
    ray = hardmax.solve(task, tg, 0.5, 1.0, n_qmc=4096, tol=1e-4, max_iter=300)
    assert ray.converged
    tr = hardmax.trajectory(task, tg, 0.5, 1.0, 3, start=(ray.cos_theta, ray.rho), n_qmc=4096)
    assert tr.cos_theta.shape == tr.rho.shape == (3,)
    assert np.all(np.abs(tr.cos_theta - ray.cos_theta) < 5e-4) and np.all(
        np.abs(tr.rho / ray.rho - 1) < 1e-3
    )
    far = hardmax.trajectory(task, tg, 0.5, 1.0, 1, start=(0.3, ray.rho), n_qmc=4096)
    assert abs(far.cos_theta[0] - 0.3) > 0.1
    for bad in ((0.0, 1.0), (1.0, 1.0), (0.5, 0.0), (0.5, np.inf)):
        with pytest.raises(ValueError, match="start"):
            hardmax.trajectory(task, tg, 0.5, 1.0, 1, start=bad)


def _bvn_reference_dof(mmse, Q0, n, seed):
    """``J mmse`` of noise-free hardmax at T = 2 from the exact region probability
    ``Z = Phi_2(a, b; r)`` (two differences of pairs) and its analytic gradient; plain MC."""
    rng = np.random.default_rng(seed)
    s2 = np.array([2.0, 1.0, 2.0])
    om = rng.normal(size=(n, 3)) * np.sqrt(s2 * (Q0 - mmse))
    h = om + rng.normal(size=(n, 3)) * np.sqrt(s2 * mmse)
    V = s2 * mmse
    s0, s1 = np.sign(h[:, 1] - h[:, 0]), np.sign(h[:, 2] - h[:, 1])
    su, sw = np.sqrt(V[1] + V[0]), np.sqrt(V[2] + V[1])
    a = s0 * (om[:, 1] - om[:, 0]) / su
    b = s1 * (om[:, 2] - om[:, 1]) / sw
    r = s0 * s1 * (-V[1] / (su * sw))
    Z = np.empty(n)
    for rv in np.unique(r):
        sel = r == rv
        mvn = scipy.stats.multivariate_normal([0.0, 0.0], [[1.0, rv], [rv, 1.0]])
        Z[sel] = mvn.cdf(np.stack([a[sel], b[sel]], axis=1))
    c = np.sqrt(1 - r**2)
    dZa = scipy.stats.norm.pdf(a) * scipy.stats.norm.cdf((b - r * a) / c)
    dZb = scipy.stats.norm.pdf(b) * scipy.stats.norm.cdf((a - r * b) / c)
    g = (
        np.stack([-s0 / su * dZa, s0 / su * dZa - s1 / sw * dZb, s1 / sw * dZb], axis=1)
        / Z[:, None]
    )
    per = np.sum(s2 * g**2, axis=1) * mmse
    return per.mean(), per.std() / np.sqrt(n)


@pytest.mark.parametrize("mmse", [1.0, 0.3])
def test_bayes_hardmax_information_against_the_exact_region_probability(mmse):
    tg = targets.Wishart(kappa0=0.5)
    info = bayes.information(tasks.Hardmax(T=2), mmse, tg.Q0)
    ref, err = _bvn_reference_dof(mmse, tg.Q0, 40_000, 0)
    # the nested estimate's own error (inner rejection + outer QMC) plus 4 sigma of the MC
    assert abs(info.dof - ref) < info.error * mmse + 4 * err


@pytest.mark.slow
def test_gamp_on_data_follows_the_state_evolution_iteration_by_iteration():
    """Undamped renormalised GAMP at d = 200 (3 seeds) from the identity against the SE from
    the same start, iterations 1-6 (the SE overshoots to 0.802 at t = 2, then settles at
    0.773). Measured at d = 200 (4 seeds): gaps between -0.005 and +0.001, standard errors
    0.001-0.003; the plateau gap shrinks like 1/d (-0.007 at d = 100). Tolerance: 4
    standard errors over seeds plus 1/d (the finite-size offset, slope about -1)."""
    task, tg = tasks.Hardmax(T=2), targets.Wishart(kappa0=0.5)
    Q0, n_it, d = tg.Q0, 6, 200
    start = (float(np.sqrt(0.5 / Q0)), float(0.3 / np.sqrt(Q0)))  # GAMP's start
    se_traj = hardmax.trajectory(task, tg, 0.5, 1.0, n_it, start=start, n_qmc=16384).cos_theta
    runs = []
    for seed in range(3):
        k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
        S0 = np.asarray(tg.sample(k1, d))
        data = tasks.make_dataset(k2, task, S0, tasks.n_samples(0.5, d))

        def cosine(S, S0=S0):
            return np.sum(S * S0) / np.sqrt(np.sum(S**2) * np.sum(S0**2))

        with pytest.warns(RuntimeWarning, match="residual"):
            r = hardmax.gamp(task, data, tg, max_iter=n_it, tol=1e-300, damping=0.0,
                             v_init=0.3, observe=cosine)  # fmt: skip
        runs.append(r.trace)
    runs = np.array(runs)
    gap = runs.mean(axis=0) - se_traj
    sem = runs.std(axis=0, ddof=1) / np.sqrt(len(runs))
    assert np.all(np.abs(gap) < 4 * sem + 1.0 / d), (gap, sem)


@pytest.mark.slow
def test_bayes_optimal_test_error_below_the_gamp_ray():
    """No estimator beats Bayes: at alpha = 1 the Bayes-optimal test error (0.204 measured)
    and the test error of the Bayes posterior mean's direction (0.294) are below that of
    the GAMP ray (0.544); margins far beyond the QMC errors (a few %)."""
    task, tg = tasks.Hardmax(T=2), targets.Wishart(kappa0=0.5)
    ray = hardmax.solve(task, tg, 1.0, 1.0, n_qmc=16384)
    bo = bayes.solve(task, tg, 1.0)
    assert bo.test_error < bo.test_error_plugin < ray.test_error
    assert bo.mse < tg.Q0 * (1 - ray.cos_theta**2)  # the ray's error at its best scale


@pytest.mark.parametrize("noise, mmse", [(0.0, 1.0), (0.1, 0.3)])
def test_seq2lab_delta_channel_is_one_linear_measurement_at_small_beta(noise, mmse):
    """At small beta the mean self-attention is linear in the pairs, r = 1/2 + (beta/8)
    a.u with a = (1, -2, 1), so the delta channel is one linear measurement of u = h +
    sqrt(Delta) xi: J mmse = a'Va / a'(V + Delta)a (1 without noise). Nonlinearity: O(beta^2)."""
    task = tasks.Seq2Lab(T=2, beta=0.1, noise=noise)
    info = bayes.information(task, mmse, 1.5, n_outer=1024, n_inner=8192)
    V = np.array([2.0, 1.0, 2.0]) * mmse
    a = np.array([1.0, -2.0, 1.0])
    exact = a @ (V * a) / (a @ ((V + noise) * a))
    assert abs(info.dof - exact) < 4 * info.error * mmse + 0.01


@pytest.mark.parametrize(
    ("noise", "noise_on"), [(0.0, "logits"), (0.3, "logits"), (0.3, "outputs")]
)
def test_t2_test_error_closed_form_against_monte_carlo(noise, noise_on):
    """The T = 2 closed form (each row errs with probability arccos(rho)/pi) against plain
    Monte Carlo on 400000 sequences' pairs drawn from the joint Gaussian law of the
    prediction and the label (standard error about 0.002; tolerance 5 of them)."""
    task = tasks.Hardmax(T=2, noise=noise, noise_on=noise_on)
    Q0, m, q = 1.3, 0.9, 0.8
    n = 400_000
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(5), 3)
    s = jnp.sqrt(jnp.asarray(tasks.pair_variances(2)))
    u1, u2 = jax.random.normal(k1, (n, 3)), jax.random.normal(k2, (n, 3))
    h0 = s * jnp.sqrt(Q0) * u1
    h = s * (m / jnp.sqrt(Q0) * u1 + jnp.sqrt(q - m * m / Q0) * u2)
    pred = task.output(tasks.to_matrix(h, 2))
    xi = jax.random.normal(k3, (n, 3) if noise_on == "logits" else (n, 2, 2))
    if noise_on == "logits":
        label = task.output(tasks.to_matrix(h0 + jnp.sqrt(noise) * xi, 2))
    else:
        label = task.output(tasks.to_matrix(h0, 2)) + jnp.sqrt(noise) * xi
    err = np.asarray(jnp.sum((label - pred) ** 2, axis=(1, 2)))
    mc, sem = err.mean(), err.std() / np.sqrt(n)
    closed = se.test_error_from_overlaps(task, Q0, m, q, noisy=True)
    assert abs(closed - mc) < 5 * sem, (closed, mc, sem)
