"""Library functions the book/data scripts call, moved out of those scripts (issue 27,
step 7): each checked against a direct computation of what it stands for."""

from __future__ import annotations

import math
import warnings

import jax
import numpy as np
import pytest

from attnlib import amp, gamp, scaling, se, spectrum, targets, tasks, train, width
from attnlib.width import capacity


def test_se_trajectory_is_the_undamped_map():
    """Each row is the (m, q, v) the output side sees, then the input side's output."""
    task, target = tasks.Linear(T=1, noise=0.1), targets.Wishart(0.5)
    t = se.trajectory(task, target, 0.5, 0.1, 3, start=(0.0, 0.0, 1.0), n_qmc=256)
    m, q, v = 0.0, 0.0, 1.0
    for it in range(3):
        assert (t.m[it], t.q[it], t.v[it]) == (m, q, v)
        o = se.output_side(task, 0.5, target.Q0, m, max(q, 1e-12), v, n_qmc=256)
        assert t.train_loss[it] == o.train_loss
        i = se.input_side(target, o.m_hat, o.q_hat, o.a_hat, 0.1)
        m, q, v = i.m, i.q, i.v
    with pytest.raises(ValueError, match="n_iter"):
        se.trajectory(task, target, 0.5, 0.1, 0)


def test_sequence_weights_are_the_squared_norms_of_the_sensing_matrices():
    """``r_ab = d ||Z_ab||_F^2 / (sigma_ab^2 D)`` from the matrices ``Z_ab`` themselves."""
    n, T, d = 5, 3, 7
    X = np.asarray(tasks.sample_sequences(jax.random.PRNGKey(1), n, T, d))
    r = np.asarray(gamp.sequence_weights(X))
    ia, ib = tasks.pair_indices(T)
    sig2 = np.asarray(tasks.pair_variances(T))
    for mu in range(n):
        for k, (a, b) in enumerate(zip(ia, ib, strict=True)):
            xa, xb = X[mu, a], X[mu, b]
            Z = (np.outer(xa, xb) + np.outer(xb, xa)) / (2 * math.sqrt(d))
            Z -= (a == b) * np.eye(d) / math.sqrt(d)
            want = d * np.sum(Z * Z) / (sig2[k] * d * (d + 1) / 2)
            assert r[mu, k] == pytest.approx(want, rel=1e-12)
    with pytest.raises(ValueError, match="X"):
        gamp.sequence_weights(np.ones((3, d)))


def _linear_data(d=12, alpha=0.5, seed=0):
    task = tasks.Linear(T=1, noise=0.1)
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    S0 = targets.Wishart(0.5).sample(k1, d)
    return task, S0, tasks.make_dataset(k2, task, S0, tasks.n_samples(alpha, d))


def test_robust_gamp_tries_the_dampings_in_turn():
    task, _, data = _linear_data()
    one = amp.robust_gamp(task, data, 0.3, dampings=(0.5,), max_iter=3000)
    ref = amp.gamp(task, data, 0.3, damping=0.5, max_iter=3000)
    assert one.converged and np.array_equal(one.S, ref.S) and one.n_iter == ref.n_iter
    with pytest.warns(RuntimeWarning, match="no damping"):  # none converges in 2 iterations
        r = amp.robust_gamp(task, data, 0.3, dampings=(0.5, 0.9), max_iter=2)
    assert not r.converged and r.status != "breakdown"
    with pytest.warns(RuntimeWarning):
        last = amp.gamp(task, data, 0.3, damping=0.9, max_iter=2)  # the last damping's result
    assert np.array_equal(r.S, last.S)
    for bad in ((), (0.5, 1.0), "0.5"):
        with pytest.raises(ValueError, match="dampings"):
            amp.robust_gamp(task, data, 0.3, dampings=bad)


def test_evaluate_is_the_three_metrics():
    task, S0, data = _linear_data()
    S = 0.5 * np.asarray(S0)
    key = jax.random.PRNGKey(3)
    e = train.evaluate(key, task, data, S, S0, n_test=200)
    ov, te = train.overlaps(S, S0), train.test_error_stats(key, task, S0, S, n_test=200)
    assert e == (ov.m, ov.q, ov.Q0, train.train_loss(task, data, S), te.mean, te.stderr)


def test_rank_manifold_dimension_and_its_large_d_limit():
    d = 40
    assert capacity.rank_manifold_dim(d, d) == d * (d + 1) // 2  # every symmetric matrix
    for p in (4, 10, 25):
        kappa = p / d  # p d - p (p - 1) / 2 = d^2 (kappa - kappa^2 / 2) + kappa d / 2
        limit = width.counting_bound(tasks.Linear(T=1), kappa)  # m_eff = 1
        assert capacity.rank_manifold_dim(d, p) / d**2 == pytest.approx(limit + kappa / (2 * d))
    assert capacity.fit_capacity(d, 4, 0.5) == capacity.rank_manifold_dim(d, 4)
    assert capacity.fit_capacity(d, 30, 0.2) == pytest.approx(0.2 * d * d)
    with pytest.raises(ValueError, match="p"):
        capacity.rank_manifold_dim(d, d + 1)


def test_threshold_window_puts_the_modes_at_the_threshold():
    """At ``alpha_lo`` the threshold ``lam / (4 m_eff alpha)`` sits at mode ``k_lo`` with
    ``t^2 / Delta_eff = ratio^2``; at ``alpha_hi`` at mode ``k_hi``."""
    tg = scaling.PowerLawModes(gamma=2.0, n_modes=40)
    m_eff, ell, k_lo, k_hi, ratio = 3, 0.5, 4, 10, 4.0
    lam0, a_lo, a_hi = scaling.threshold_window(tg, ell, m_eff, k_lo, k_hi, ratio=ratio)
    lam = scaling.LamSchedule(lam0, ell)
    lam_k, r = tg.mode_eigenvalues(), tg.r
    assert lam(a_lo) / (4 * m_eff * a_lo) == pytest.approx(lam_k[k_lo - 1], rel=1e-12)
    assert lam(a_hi) / (4 * m_eff * a_hi) == pytest.approx(lam_k[k_hi - 1], rel=1e-12)
    rho = float(np.sum(tg.mode_weights()[:k_lo]))
    assert m_eff * a_lo * (2 - r) / rho == pytest.approx(ratio**2, rel=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="k_lo"):
            scaling.threshold_window(tg, ell, m_eff, 5, 4, ratio=ratio)


def _psd(rng, d, r):
    G = rng.normal(size=(d, r))
    return G @ G.T / d


def test_kept_mass_and_top_overlaps():
    rng = np.random.default_rng(0)
    d = 30
    S0 = _psd(rng, d, 10)
    S_in = S0 @ S0  # its range lies in that of S0: the kept mass is its rank fraction
    assert spectrum.kept_mass_in_range(S_in, S0) == pytest.approx(10 / d, rel=1e-12)
    P_out = np.eye(d) - np.linalg.pinv(S0) @ S0  # the complement of S0's range
    assert spectrum.kept_mass_in_range(P_out, S0) == pytest.approx(0.0, abs=1e-12)
    t = spectrum.top_overlaps(S0, S0, 3)
    np.testing.assert_allclose(t.overlap2, 1.0, rtol=1e-12)
    np.testing.assert_allclose(t.theta, np.sort(np.linalg.eigvalsh(S0))[::-1][:3], rtol=1e-12)
    with pytest.raises(ValueError, match="k"):
        spectrum.top_overlaps(S0, S0, d + 1)


def test_head_spectra():
    rng = np.random.default_rng(1)
    dh, d = 4, 12
    Wq = rng.normal(size=(dh, d))
    tied = spectrum.head_spectra(Wq, Wq)  # M = Wq^T Wq / sqrt(dh): symmetric PSD
    assert tied.anti == pytest.approx(0.0, abs=1e-15)
    M = Wq.T @ Wq / math.sqrt(dh)
    np.testing.assert_allclose(tied.sv, np.sort(np.linalg.eigvalsh(M))[::-1][:dh], rtol=1e-10)
    Wk = rng.normal(size=(dh, d))
    M = Wq.T @ Wk / math.sqrt(dh)
    h = spectrum.head_spectra(Wq, Wk)
    A, Sym = (M - M.T) / 2, (M + M.T) / 2
    assert h.anti == pytest.approx(np.sum(A * A) / np.sum(M * M), rel=1e-12)
    ev = np.linalg.eigvalsh(Sym)
    np.testing.assert_allclose(h.sym, np.sort(ev[np.argsort(-np.abs(ev))[: 2 * dh]]), rtol=1e-12)
    heads, shuffled = spectrum.layer_head_spectra(
        np.vstack([Wq, Wk]), np.vstack([Wk, Wq]), 2, np.random.default_rng(2)
    )
    np.testing.assert_array_equal(heads[0].sv, h.sv)
    assert heads[1].anti == pytest.approx(h.anti, rel=1e-12)  # M_2 = M^T
    assert len(shuffled) == 2 and shuffled[0].anti > 0.1  # no learned symmetry left
    with pytest.raises(ValueError, match="n_heads"):
        spectrum.layer_head_spectra(Wq, Wk, 3, np.random.default_rng(0))
