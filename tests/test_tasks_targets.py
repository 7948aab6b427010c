r"""Tests of attnlib.tasks (the attention-indexed model) and attnlib.targets.

Every statistical check compares sampled quantities with an exact or limiting
formula; the tolerance is a stated number of standard errors (estimated from
the same sample) plus, where the formula is a large-d limit, the known O(1/d)
finite-size term.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attnlib  # noqa: F401
from attnlib import targets, tasks

# ----------------------------------------------------------------------------
# Pairs
# ----------------------------------------------------------------------------


@pytest.mark.parametrize("T", [1, 2, 3, 5])
def test_pair_helpers_round_trip(T):
    K = tasks.n_pairs(T)
    assert K == T * (T + 1) // 2
    ia, ib = tasks.pair_indices(T)
    assert len(ia) == K and np.all(ia <= ib)
    # row-by-row order: (0,0), (0,1), ..., (0,T-1), (1,1), ...
    assert list(zip(ia.tolist(), ib.tolist(), strict=True)) == [
        (a, b) for a in range(T) for b in range(a, T)
    ]
    np.testing.assert_array_equal(tasks.pair_variances(T), np.where(ia == ib, 2.0, 1.0))
    p = jax.random.normal(jax.random.PRNGKey(T), (4, K))
    h = tasks.to_matrix(p, T)
    assert h.shape == (4, T, T)
    np.testing.assert_array_equal(h, jnp.swapaxes(h, -1, -2))
    np.testing.assert_array_equal(tasks.to_pairs(h), p)
    A = jax.random.normal(jax.random.PRNGKey(10 + T), (3, T, T))
    hs = A + jnp.swapaxes(A, -1, -2)
    np.testing.assert_array_equal(tasks.to_matrix(tasks.to_pairs(hs), T), hs)


def test_to_matrix_rejects_wrong_length():
    with pytest.raises(ValueError, match="pairs"):
        tasks.to_matrix(jnp.zeros((2, 4)), 2)


# ----------------------------------------------------------------------------
# Pre-activations: definition and variances
# ----------------------------------------------------------------------------


def test_preactivations_definition():
    """Against the formula written with explicit loops (numpy)."""
    d, T = 7, 3
    X = np.asarray(jax.random.normal(jax.random.PRNGKey(0), (5, T, d)))
    S = np.asarray(targets.Wishart(0.5).sample(jax.random.PRNGKey(1), d))
    h = np.asarray(tasks.preactivations(jnp.asarray(X), jnp.asarray(S)))
    for mu in range(5):
        for a in range(T):
            for b in range(T):
                want = (X[mu, a] @ S @ X[mu, b] - (a == b) * np.trace(S)) / np.sqrt(d)
                assert h[mu, a, b] == pytest.approx(want, rel=1e-12, abs=1e-12)
    # a single (T, d) sequence works too
    np.testing.assert_allclose(tasks.preactivations(jnp.asarray(X[0]), jnp.asarray(S)), h[0])


def test_preactivation_covariances_against_sampling():
    """Var h_ab(S) = sigma_ab^2 Q(S), Cov(h_ab(S), h_ab(S')) = sigma_ab^2 M, pairs uncorrelated.

    These moments are exact at any d (not only in the limit). Each sample moment
    is compared with its formula within 5 standard errors, the standard error
    estimated from the same n = 40000 sequences.
    """
    d, T, n = 40, 3, 40000
    k1, k2, kx = jax.random.split(jax.random.PRNGKey(0), 3)
    S = np.asarray(targets.Wishart(0.5).sample(k1, d))
    S2 = np.asarray(targets.PowerLaw(0.25, 1.0).sample(k2, d))
    X = tasks.sample_sequences(kx, n, T, d)
    P = np.asarray(tasks.to_pairs(tasks.preactivations(X, jnp.asarray(S))))
    P2 = np.asarray(tasks.to_pairs(tasks.preactivations(X, jnp.asarray(S2))))
    Q, M = np.sum(S * S) / d, np.sum(S * S2) / d
    sig2 = tasks.pair_variances(T)

    def close(samples, want):
        se = samples.std() / math.sqrt(samples.size)
        assert abs(samples.mean() - want) < 5 * se, (samples.mean(), want, se)

    for k in range(tasks.n_pairs(T)):
        close(P[:, k], 0.0)
        close(P[:, k] ** 2, sig2[k] * Q)
        close(P[:, k] * P2[:, k], sig2[k] * M)
        for j in range(k):
            close(P[:, k] * P[:, j], 0.0)


def test_preactivations_become_gaussian():
    """Excess kurtosis of h_aa is 12 Tr S^4 / (Tr S^2)^2 = O(1/d) (cumulants of a Gaussian
    quadratic form): small at d = 200 and matching the formula within 5 standard errors."""
    d, n = 200, 20000
    S = np.asarray(targets.Wishart(0.5).sample(jax.random.PRNGKey(3), d))
    X = tasks.sample_sequences(jax.random.PRNGKey(4), n, 1, d)
    h = np.asarray(tasks.preactivations(X, jnp.asarray(S)))[:, 0, 0]
    S2 = S @ S
    want = 12 * np.trace(S2 @ S2) / np.trace(S2) ** 2
    z = h / h.std()
    kurt = np.mean(z**4) - 3
    se = np.std(z**4) / math.sqrt(n)
    assert want < 100 / d  # O(1/d): Gaussian in the limit
    assert abs(kurt - want) < 5 * se


# ----------------------------------------------------------------------------
# Tasks
# ----------------------------------------------------------------------------


def test_softmax_shift_invariance_and_rows():
    task = tasks.Seq2Seq(T=4, beta=1.7)
    h = tasks.to_matrix(jax.random.normal(jax.random.PRNGKey(0), (5, 10)), 4)
    A = task.output(h)
    np.testing.assert_allclose(A.sum(-1), 1.0, atol=1e-14)
    # a global shift h + c 11^T keeps h symmetric and leaves every row unchanged
    np.testing.assert_allclose(task.output(h + 0.83), A, atol=1e-14)
    # the definition
    want = np.exp(1.7 * np.asarray(h))
    want /= want.sum(-1, keepdims=True)
    np.testing.assert_allclose(A, want, rtol=1e-12)


@pytest.mark.parametrize("T", [2, 3])
def test_m_eff_matches_effective_constraints(T):
    assert tasks.Seq2Seq(T=T).m_eff == tasks.effective_constraints(tasks.Seq2Seq(T=T))
    assert tasks.Seq2Seq(T=T).m_eff == tasks.n_pairs(T) - 1
    assert tasks.Linear(T=T).m_eff == tasks.effective_constraints(tasks.Linear(T=T))
    assert tasks.Linear(T=T).m_eff == tasks.n_pairs(T)
    assert tasks.Seq2Lab(T=T).m_eff == 1  # a scalar label: one constraint


def test_custom_task_and_loss():
    def g(h):  # the row-wise log-sum-exp: a (..., T) output
        return jax.nn.logsumexp(h, axis=-1)

    task = tasks.Custom(T=3, g=g)
    assert task.out_shape == (3,)
    assert task.m_eff == tasks.effective_constraints(task)
    h = tasks.to_matrix(jax.random.normal(jax.random.PRNGKey(0), (4, 6)), 3)
    Y = jax.random.normal(jax.random.PRNGKey(1), (4, 3))
    np.testing.assert_allclose(task.loss(Y, h), np.sum((np.asarray(Y) - g(h)) ** 2, -1))
    lab = tasks.Seq2Lab(T=2)
    assert lab.out_shape == ()
    want = np.mean(np.diagonal(np.asarray(jax.nn.softmax(h[:, :2, :2], -1)), 0, -2, -1), -1)
    np.testing.assert_allclose(lab.output(h[:, :2, :2]), want, rtol=1e-12)


def test_label_noise_variances():
    """Noise of variance Delta where the task says: logits (symmetric, per pair) or outputs."""
    n, d, delta = 20000, 10, 0.3
    S0 = targets.Wishart(0.5).sample(jax.random.PRNGKey(0), d)
    key = jax.random.PRNGKey(1)

    def close(samples, want):
        se = samples.std() / math.sqrt(samples.size)
        assert abs(samples.mean() - want) < 5 * se, (samples.mean(), want, se)

    # linear, T = 2: Y - h0 is symmetric with variance Delta on each pair
    data = tasks.make_dataset(key, tasks.Linear(T=2, noise=delta), S0, n)
    E = np.asarray(data.Y - data.h0)
    np.testing.assert_allclose(E, np.swapaxes(E, -1, -2))
    for a, b in [(0, 0), (0, 1), (1, 1)]:
        close(E[:, a, b] ** 2, delta)
    # seq2seq, outputs: Y - softmax(h0) has variance Delta on every entry
    task = tasks.Seq2Seq(T=2, noise=delta, noise_on="outputs")
    data = tasks.make_dataset(key, task, S0, n)
    E = np.asarray(data.Y - task.output(data.h0))
    for a in range(2):
        for b in range(2):
            close(E[:, a, b] ** 2, delta)
    # seq2seq, logits: rows stay attention rows, and the logit differences recovered
    # from the labels carry noise xi_a0 - xi_a1 of variance 2 Delta (rows share xi_01)
    task = tasks.Seq2Seq(T=2, beta=1.3, noise=delta)
    data = tasks.make_dataset(key, task, S0, n)
    Y, h0 = np.asarray(data.Y), np.asarray(data.h0)
    np.testing.assert_allclose(Y.sum(-1), 1.0, atol=1e-12)
    r = np.log(Y[:, :, 0] / Y[:, :, 1]) / 1.3 - (h0[:, :, 0] - h0[:, :, 1])
    close(r[:, 0] ** 2, 2 * delta)
    close(r[:, 1] ** 2, 2 * delta)
    close(r[:, 0] * r[:, 1], -delta)
    # no noise: labels are exactly g(h0)
    clean = tasks.make_dataset(key, tasks.Seq2Seq(T=2), S0, 50)
    np.testing.assert_array_equal(clean.Y, tasks.Seq2Seq(T=2).output(clean.h0))


def test_make_dataset_shapes_and_determinism():
    S0 = targets.Wishart(0.5).sample(jax.random.PRNGKey(0), 8)
    task = tasks.Seq2Lab(T=3, noise=0.1)
    a = tasks.make_dataset(jax.random.PRNGKey(5), task, S0, 17)
    b = tasks.make_dataset(jax.random.PRNGKey(5), task, S0, 17)
    assert a.X.shape == (17, 3, 8) and a.Y.shape == (17,) and a.h0.shape == (17, 3, 3)
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_allclose(a.h0, tasks.preactivations(a.X, S0))
    assert tasks.n_samples(0.5, 40) == 800
    assert tasks.n_samples(1e-6, 3) == 1


# ----------------------------------------------------------------------------
# Targets
# ----------------------------------------------------------------------------

_KAPPA0S = [0.2, 0.5, 1.0, 2.0]  # 1.0: the hard edge at 0; 2.0: full rank, no atom


@pytest.mark.parametrize("kappa0", [0.2, 0.5, 1.0, 2.0])
def test_wishart_trace_and_norm(kappa0):
    """Tr S0/d -> sqrt(kappa0), Q0 -> 1 + kappa0 at d = 1000.

    Tr S0/d = ||W0||^2/(d sqrt(p0 d)) has mean sqrt(p0/d) exactly and standard
    deviation sqrt(2)/d; E Q0 = 1 + p0/d + 1/d and its standard deviation is
    about 7/d (measured over 10 seeds). One sample, 5 standard deviations.
    """
    d = 1000
    t = targets.Wishart(kappa0)
    p0 = t.width(d)
    S = np.asarray(t.sample(jax.random.PRNGKey(int(10 * kappa0)), d))
    assert np.array_equal(S, S.T)
    tr, q = np.trace(S) / d, np.sum(S * S) / d
    assert abs(tr - math.sqrt(p0 / d)) < 5 * math.sqrt(2) / d
    assert abs(tr - math.sqrt(kappa0)) < 5 * math.sqrt(2) / d
    assert abs(q - (1 + kappa0)) < 1 / d + 5 * 7 / d
    assert t.Q0 == 1 + kappa0


@pytest.mark.parametrize("kappa0", _KAPPA0S)
def test_wishart_measure_moments(kappa0):
    mu = targets.Wishart(kappa0).measure()
    assert mu.weights.sum() == pytest.approx(1.0, abs=1e-12)
    assert mu.moment(1) == pytest.approx(math.sqrt(kappa0), rel=1e-3)
    assert mu.moment(2) == pytest.approx(1 + kappa0, rel=1e-3)
    assert targets.Wishart(kappa0).kappa0 == kappa0


@pytest.mark.parametrize("kappa0", _KAPPA0S)
def test_wishart_stieltjes_three_ways(kappa0):
    """Closed form vs the discretised measure (4000 atoms) vs sampled eigenvalues (d = 1000).

    At Im z >= 0.3 the discretisation error is below 1e-4; the sampled Stieltjes
    transform fluctuates by O(1/(d Im(z)^2)) ~ 1e-2 at most (largest deviation
    seen over 10 seeds: 6e-3), hence the tolerance 2e-2.
    """
    t = targets.Wishart(kappa0)
    z = np.array([0.5 + 0.3j, 1.5 + 0.3j, -0.5 + 0.3j, 3.0 + 0.5j, 1j, 2.5 + 0.3j, -2 - 0.4j])
    g = t.stieltjes(z)
    np.testing.assert_allclose(g, t.measure().stieltjes(z), atol=1e-3)
    ev = np.linalg.eigvalsh(np.asarray(t.sample(jax.random.PRNGKey(7), 1000)))
    g_emp = np.mean(1.0 / (z[:, None] - ev[None, :]), axis=1)
    np.testing.assert_allclose(g, g_emp, atol=2e-2)
    assert np.sum(ev > 1e-8 * ev.max()) == min(t.width(1000), 1000)  # rank min(p0, d)
    # Herglotz sign and 1/z decay
    assert np.all(np.sign(g.imag) == -np.sign(z.imag))
    assert t.stieltjes(1e6 + 1j) == pytest.approx(1e-6, rel=1e-4)


def test_powerlaw_spectrum():
    t = targets.PowerLaw(gamma=0.25, kappa0=0.5)
    d = 200
    ev = np.sort(np.linalg.eigvalsh(np.asarray(t.sample(jax.random.PRNGKey(0), d))))[::-1]
    np.testing.assert_allclose(ev[:100], t.rank_eigenvalues(100), rtol=1e-10)
    np.testing.assert_allclose(ev[100:], 0.0, atol=1e-10)
    # eigenvalue of rank k proportional to k^-gamma (asymptotically in k)
    r = t.rank_eigenvalues(1000)
    assert r[99] / r[199] == pytest.approx(((199.5) / (99.5)) ** 0.25, rel=1e-12)
    # Q0 = 1 in the limit; the discretised measure converges slowly (the u^(-2 gamma)
    # singularity): error ~ n_atoms^-(1 - 2 gamma)
    assert abs(t.measure(4000).moment(2) - 1) < 4000**-0.5
    assert abs(t.measure(64000).moment(2) - 1) < 64000**-0.5
    assert t.kappa0 == 0.5


def test_spiked_and_explicit_targets():
    sp = targets.Spiked((3.0, 2.0))
    S = np.asarray(sp.sample(jax.random.PRNGKey(1), 50))
    ev = np.sort(np.linalg.eigvalsh(S))
    np.testing.assert_allclose(ev[-2:], [2.0, 3.0], rtol=1e-12)
    np.testing.assert_allclose(ev[:-2], 0.0, atol=1e-12)
    U = np.asarray(sp.spike_directions(jax.random.PRNGKey(1), 50))
    np.testing.assert_allclose(U.T @ S @ U, np.diag([3.0, 2.0]), atol=1e-12)
    assert sp.outliers() == (3.0, 2.0)
    sb = targets.Spiked((4.0,), bulk=targets.Wishart(0.5))
    assert sb.measure().moment(2) == pytest.approx(1.5, rel=1e-3)
    ex = targets.Explicit((1.0, 2.0, 3.0))
    np.testing.assert_allclose(
        np.sort(np.linalg.eigvalsh(np.asarray(ex.sample(jax.random.PRNGKey(2), 3)))),
        [1, 2, 3],
        rtol=1e-12,
    )
    np.testing.assert_allclose(ex.eigenvalues(6), [1, 1, 2, 2, 3, 3])
    assert ex.Q0 == pytest.approx(14 / 3)


def test_haar_orthogonal():
    U = np.asarray(targets.haar_orthogonal(jax.random.PRNGKey(0), 30))
    np.testing.assert_allclose(U @ U.T, np.eye(30), atol=1e-12)
    # Haar: E O_11^2 = 1/d; sample over keys
    vals = [float(targets.haar_orthogonal(jax.random.PRNGKey(k), 5)[0, 0]) ** 2 for k in range(400)]
    assert abs(np.mean(vals) - 0.2) < 5 * np.std(vals) / math.sqrt(400)


# ----------------------------------------------------------------------------
# Argument checks
# ----------------------------------------------------------------------------


BAD = [
    ("T", lambda: tasks.Seq2Seq(T=1)),
    ("T", lambda: tasks.Linear(T=0)),
    ("noise", lambda: tasks.Seq2Seq(noise=-0.1)),
    ("noise_on", lambda: tasks.Seq2Seq(noise_on="inputs")),
    ("beta", lambda: tasks.Seq2Lab(beta=0.0)),
    ("g", lambda: tasks.Custom(T=2, g=None)),
    ("alpha", lambda: tasks.n_samples(0.0, 10)),
    ("d", lambda: tasks.n_samples(1.0, 0)),
    ("n", lambda: tasks.sample_sequences(jax.random.PRNGKey(0), 0, 2, 3)),
    ("S0", lambda: tasks.make_dataset(jax.random.PRNGKey(0), tasks.Linear(), np.ones((3, 4)), 5)),
    (
        "S0",
        lambda: tasks.make_dataset(jax.random.PRNGKey(0), tasks.Linear(), np.eye(3) * np.nan, 5),
    ),
    ("kappa0", lambda: targets.Wishart(0.0)),
    ("kappa0", lambda: targets.Wishart(2e4)),
    ("gamma", lambda: targets.PowerLaw(gamma=0.5)),
    ("kappa0", lambda: targets.PowerLaw(kappa0=-1.0)),
    ("values", lambda: targets.Explicit(())),
    ("values", lambda: targets.Explicit((1.0, float("nan")))),
    ("spikes", lambda: targets.Spiked(())),
    ("d", lambda: targets.Wishart(0.5).eigenvalues(0)),
]


@pytest.mark.parametrize("name,call", BAD, ids=[f"{i}-{b[0]}" for i, b in enumerate(BAD)])
def test_invalid_arguments_raise_value_error(name, call):
    with pytest.raises(ValueError, match=name):
        call()
