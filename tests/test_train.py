r"""Tests of attnlib.train: objectives, proximal maps, the three ERM solvers, metrics.

Independent references used here:

- gradients of the objectives: central finite differences of :func:`train.objective`
  (float64, step 1e-5: truncation error ~ 1e-10 and rounding error ~ 1e-11 relative,
  so a relative tolerance of 1e-6 leaves a wide margin and still catches any
  wrong factor);
- proximal maps: their optimality (KKT) conditions and random feasible
  perturbations, which can never decrease a strongly convex prox objective;
- solvers: the convex minimiser's own KKT conditions, and agreement between
  three different algorithms (FISTA on S, Adam on the factor W, Adam/GD on S);
- metrics: closed forms for the linear task (``e_test = 6 mse`` at T = 2,
  ``2 mse`` at T = 1) against Monte Carlo, with 5-standard-error bands.
"""

from __future__ import annotations

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attnlib  # noqa: F401
from attnlib import targets, tasks, train
from attnlib.train.objective import _factorized_objective, _preacts, _value_and_sym_grad

D = 40
KAPPA0 = 0.5


def _problem(task, alpha, seed, d=D):
    k_s0, k_data = jax.random.split(jax.random.PRNGKey(seed))
    S0 = targets.Wishart(KAPPA0).sample(k_s0, d)
    data = tasks.make_dataset(k_data, task, S0, tasks.n_samples(alpha, d))
    return S0, data


def _small(task, d=6, n=13):
    """A tiny data set shared by the exactness tests (one shape: few compilations)."""
    S0 = targets.Wishart(0.5).sample(jax.random.PRNGKey(1), d)
    return S0, tasks.make_dataset(jax.random.PRNGKey(2), task, S0, n)


def _sym_random(key, d, scale=1.0):
    A = scale * jax.random.normal(key, (d, d))
    return np.asarray((A + A.T) / 2)


# ----------------------------------------------------------------------------
# Shared problems (module scope: solvers and compilations are reused)
# ----------------------------------------------------------------------------

SEQ = (tasks.Seq2Seq(T=2, noise=0.1), 0.5, 0.05)  # (task, alpha, lam)
LIN = (tasks.Linear(T=1, noise=0.1), 0.5, 0.1)


@pytest.fixture(scope="module")
def seq_problem():
    task, alpha, lam = SEQ
    S0, data = _problem(task, alpha, seed=1)
    return task, lam, S0, data, train.train_convex(task, data, lam)


@pytest.fixture(scope="module")
def lin_problem():
    task, alpha, lam = LIN
    S0, data = _problem(task, alpha, seed=2)
    return task, lam, S0, data, train.train_convex(task, data, lam)


# ----------------------------------------------------------------------------
# Objectives and gradients
# ----------------------------------------------------------------------------

SMALL_TASKS = [
    tasks.Seq2Seq(T=2),
    tasks.Seq2Seq(T=3, beta=2.0),
    tasks.Seq2Lab(T=3),
    tasks.Linear(T=1),
    tasks.Linear(T=2),
]


def test_factorized_preactivations_equal_direct():
    kx, kw = jax.random.split(jax.random.PRNGKey(0))
    d, p = 6, 4
    X = jax.random.normal(kx, (13, 3, d))
    W = jax.random.normal(kw, (d, p))
    S = W @ W.T / math.sqrt(p * d)
    np.testing.assert_allclose(
        train.factorized_preactivations(X, W), tasks.preactivations(X, S), rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize("T", [1, 2, 3, 10])
def test_fast_preactivations_equal_tasks_preactivations(T):
    """The solvers' pair-product pre-activations (unrolled for T <= 8, einsum above)."""
    d = 6
    X = jax.random.normal(jax.random.PRNGKey(T), (13, T, d))
    S = jnp.asarray(_sym_random(jax.random.PRNGKey(0), d))
    np.testing.assert_allclose(_preacts(X, S), tasks.preactivations(X, S), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("task", SMALL_TASKS, ids=lambda t: f"{t.name}-T{t.T}")
def test_weight_decay_is_trace_penalty(task):
    """sum loss + lam_W ||W||^2 = nuclear objective at S = W W^T/sqrt(pd), lam = sqrt(p/d) lam_W."""
    d, p, lam_W = 6, 4, 0.3
    S0, data = _small(task)
    W = jax.random.normal(jax.random.PRNGKey(3), (d, p))
    S = W @ W.T / math.sqrt(p * d)
    direct = float(_factorized_objective(task, W, data.X, data.Y, lam_W))
    via_S = train.objective(task, data, S, math.sqrt(p / d) * lam_W, "nuclear")
    assert direct == pytest.approx(via_S, rel=1e-12)


@pytest.mark.parametrize("penalty", train.PENALTIES)
@pytest.mark.parametrize("task", SMALL_TASKS, ids=lambda t: f"{t.name}-T{t.T}")
def test_gradient_matches_finite_differences(task, penalty):
    """The solvers' symmetric gradient against central differences of objective()."""
    d, lam, eps = 6, 0.2, 1e-5
    S0, data = _small(task)
    S = _sym_random(jax.random.PRNGKey(3), d, 0.5)
    _, g = _value_and_sym_grad(task, data.X, data.Y, jnp.asarray(S))
    g = np.asarray(g) + (d * lam * np.eye(d) if penalty == "nuclear" else d * lam * S)
    for i in range(3):
        E = _sym_random(jax.random.PRNGKey(10 + i), d)
        fd = (
            train.objective(task, data, S + eps * E, lam, penalty)
            - train.objective(task, data, S - eps * E, lam, penalty)
        ) / (2 * eps)
        assert np.sum(g * E) == pytest.approx(fd, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("task", SMALL_TASKS[:3], ids=lambda t: f"{t.name}-T{t.T}")
def test_factorized_gradient_matches_finite_differences(task):
    d, p, lam_W, eps = 6, 4, 0.3, 1e-5
    S0, data = _small(task)
    W = np.asarray(jax.random.normal(jax.random.PRNGKey(3), (d, p)))
    g = np.asarray(jax.grad(_factorized_objective, argnums=1)(task, W, data.X, data.Y, lam_W))

    def F(W):  # through the public objective on S
        return train.objective(task, data, W @ W.T / math.sqrt(p * d), math.sqrt(p / d) * lam_W)

    for i in range(3):
        V = np.asarray(jax.random.normal(jax.random.PRNGKey(10 + i), (d, p)))
        fd = (F(W + eps * V) - F(W - eps * V)) / (2 * eps)
        assert np.sum(g * V) == pytest.approx(fd, rel=1e-6, abs=1e-9)


# ----------------------------------------------------------------------------
# Proximal maps
# ----------------------------------------------------------------------------


def _prox_obj(S, B, t, penalty):
    pen = t * np.trace(S) if penalty == "nuclear" else 0.5 * t * np.sum(S * S)
    return 0.5 * np.sum((S - B) ** 2) + pen


def _psd_project(A):
    w, V = np.linalg.eigh((A + A.T) / 2)
    return (V * np.maximum(w, 0)) @ V.T


@pytest.mark.parametrize("seed", range(4))
def test_prox_nuclear_psd_optimality(seed):
    d = 12
    B = _sym_random(jax.random.PRNGKey(seed), d)
    t = 0.4
    S = np.asarray(train.prox_nuclear_psd(B, t))
    # feasibility: symmetric PSD, and some eigenvalues are thresholded away
    np.testing.assert_allclose(S, S.T, atol=1e-13)
    w = np.linalg.eigvalsh(S)
    assert w.min() > -1e-12
    # KKT: Lambda = S - B + t I is PSD and complementary to S (Lambda S = 0)
    Lam = S - B + t * np.eye(d)
    assert np.linalg.eigvalsh(Lam).min() > -1e-12
    assert np.linalg.norm(Lam @ S) < 1e-12 * max(1.0, np.linalg.norm(S) * np.linalg.norm(Lam))
    # no feasible perturbation decreases the prox objective
    f0 = _prox_obj(S, B, t, "nuclear")
    for i in range(50):
        E = _sym_random(jax.random.PRNGKey(1000 + i), d, 10.0 ** (-1 - i % 4))
        assert _prox_obj(_psd_project(S + E), B, t, "nuclear") >= f0 - 1e-12


def test_prox_nuclear_psd_closed_form_cases():
    B = np.diag([3.0, 1.0, -2.0])
    np.testing.assert_allclose(train.prox_nuclear_psd(B, 1.5), np.diag([1.5, 0.0, 0.0]))
    # t = 0 is the projection on the PSD cone
    A = _sym_random(jax.random.PRNGKey(7), 9)
    np.testing.assert_allclose(train.prox_nuclear_psd(A, 0.0), _psd_project(A), atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_prox_frobenius_optimality(seed):
    d, t = 10, 0.7
    B = _sym_random(jax.random.PRNGKey(seed), d)
    S = np.asarray(train.prox_frobenius(B, t))
    np.testing.assert_allclose(S - B + t * S, 0.0, atol=1e-13)  # stationarity
    f0 = _prox_obj(S, B, t, "frobenius")
    for i in range(20):
        E = _sym_random(jax.random.PRNGKey(100 + i), d, 10.0 ** (-1 - i % 4))
        assert _prox_obj(S + E, B, t, "frobenius") > f0


# ----------------------------------------------------------------------------
# The convex solver: optimality
# ----------------------------------------------------------------------------


def test_convex_nuclear_kkt(seq_problem):
    task, lam, S0, data, res = seq_problem
    assert res.converged and res.residual < 1e-9
    d = S0.shape[0]
    S = res.S
    assert np.linalg.eigvalsh(S).min() > -1e-12
    _, g = _value_and_sym_grad(task, data.X, data.Y, jnp.asarray(S))
    G = np.asarray(g) + d * lam * np.eye(d)  # gradient of the objective; must be PSD and G S = 0
    scale = np.linalg.norm(G)
    assert np.linalg.eigvalsh(G).min() > -1e-6 * scale
    assert np.linalg.norm(G @ S) < 1e-6 * scale * np.linalg.norm(S)
    # low-rank collapse at this lam: a sizeable fraction of eigenvalues are exactly zero
    assert 0.2 < np.mean(np.linalg.eigvalsh(S) > 1e-10) < 0.9
    # monotone history (safeguarded FISTA)
    h = res.history
    assert np.all(np.diff(h) <= 1e-12 * abs(h[0]))
    assert res.history[-1] == pytest.approx(train.objective(task, data, S, lam), rel=1e-12)


@pytest.fixture(scope="module")
def seq_frobenius(seq_problem):
    task, lam, S0, data, _ = seq_problem
    return train.train_convex(task, data, lam, penalty="frobenius")


def test_convex_frobenius_kkt(seq_problem, seq_frobenius):
    task, lam, S0, data, _ = seq_problem
    res = seq_frobenius
    assert res.converged
    d = S0.shape[0]
    _, g = _value_and_sym_grad(task, data.X, data.Y, jnp.asarray(res.S))
    G = np.asarray(g) + d * lam * res.S
    assert np.linalg.norm(G) < 1e-7 * np.linalg.norm(np.asarray(g))


def test_convex_lam_large_gives_zero(lin_problem):
    """Above lam_max = max(0, -lambda_min(grad L(0))) / d the nuclear minimiser is S = 0."""
    task, _, S0, data, _ = lin_problem
    d = S0.shape[0]
    _, g = _value_and_sym_grad(task, data.X, data.Y, jnp.zeros((d, d)))
    lam_max = max(0.0, -float(np.linalg.eigvalsh(np.asarray(g)).min())) / d
    res = train.train_convex(task, data, 1.01 * lam_max)
    assert res.converged and np.abs(res.S).max() < 1e-12
    res = train.train_convex(task, data, 0.9 * lam_max)
    assert res.converged and np.abs(res.S).max() > 1e-6


# ----------------------------------------------------------------------------
# Factorised Adam and direct training against the convex solver
# ----------------------------------------------------------------------------


def _compare(task, lam, S0, data, ref, other, key):
    """Relative differences of objective, train loss and test error (common test set)."""
    F_ref = train.objective(task, data, ref.S, lam)
    F_other = train.objective(task, data, other.S, lam)
    e_ref = train.test_error(key, task, S0, ref.S, n_test=20000)
    e_other = train.test_error(key, task, S0, other.S, n_test=20000)
    return abs(F_other / F_ref - 1), abs(e_other / e_ref - 1)


@pytest.mark.parametrize("which", ["seq2seq", "linear"])
def test_adam_factorized_matches_convex(which, seq_problem, lin_problem):
    """kappa = 1 >= rank fraction: Adam on W reaches the convex minimum.

    Measured (d = 40): objective within ~1e-7 (seq2seq) / ~1e-6 (linear), test
    error within ~1e-4. Asserted: objective 1e-4, test error 2 %.
    """
    task, lam, S0, data, ref = seq_problem if which == "seq2seq" else lin_problem
    d = S0.shape[0]
    res = train.train_factorized(jax.random.PRNGKey(5), task, data, d, lam)  # lam_W = lam
    assert res.converged
    dF, de = _compare(task, lam, S0, data, ref, res, jax.random.PRNGKey(6))
    assert dF < 1e-4
    assert de < 0.02
    assert res.W.shape == (d, d)
    assert res.train_loss == pytest.approx(ref.train_loss, rel=0.02)


@pytest.mark.slow
def test_adam_factorized_wider_student_float64(seq_problem):
    """kappa = 1.5, float64: same minimum (lam_W = lam / sqrt(kappa))."""
    task, lam, S0, data, ref = seq_problem
    d = S0.shape[0]
    p = 60
    res = train.train_factorized(
        jax.random.PRNGKey(8), task, data, p, lam / math.sqrt(p / d), dtype=jnp.float64
    )
    dF, de = _compare(task, lam, S0, data, ref, res, jax.random.PRNGKey(6))
    assert dF < 1e-4 and de < 0.02


def test_factorized_accepts_the_nuclear_equivalent_lam(seq_problem):
    """``lam=`` is ``lam_W = lam / sqrt(p/d)``: the same run, to the last bit."""
    task, lam, S0, data, _ = seq_problem
    d, p = S0.shape[0], 10
    key = jax.random.PRNGKey(8)
    r1 = train.train_factorized(key, task, data, p, lam=lam, max_iter=100)
    r2 = train.train_factorized(key, task, data, p, lam / math.sqrt(p / d), max_iter=100)
    np.testing.assert_array_equal(np.asarray(r1.W), np.asarray(r2.W))
    for both in ({"lam_W": 0.1, "lam": 0.1}, {}):
        with pytest.raises(ValueError, match="exactly one of lam_W .* and lam"):
            train.train_factorized(key, task, data, p, **both)
    with pytest.raises(ValueError, match="lam must be finite and >= 0"):
        train.train_factorized(key, task, data, p, lam=-1.0)


@pytest.mark.parametrize("method", ["adam", pytest.param("gd", marks=pytest.mark.slow)])
def test_direct_matches_convex_frobenius(method, seq_problem, seq_frobenius):
    task, lam, S0, data, _ = seq_problem
    ref = seq_frobenius
    res = train.train_direct(task, data, lam, method=method)
    assert res.converged and res.W is None
    F_ref = train.objective(task, data, ref.S, lam, "frobenius")
    F = train.objective(task, data, res.S, lam, "frobenius")
    assert F == pytest.approx(F_ref, rel=1e-6)
    assert np.linalg.norm(res.S - ref.S) < 1e-2 * np.linalg.norm(ref.S)
    # the Frobenius estimator is not PSD-constrained: it has negative eigenvalues
    assert np.linalg.eigvalsh(ref.S).min() < -1e-3


# ----------------------------------------------------------------------------
# Metrics
# ----------------------------------------------------------------------------


def _numpy_softmax_loss(X, Y, S, beta=1.0):
    """Independent numpy implementation of the seq2seq mean loss."""
    n, T, d = X.shape
    h = np.einsum("nai,ij,nbj->nab", X, S, X) - np.trace(S) * np.eye(T)
    h /= np.sqrt(d)
    A = np.exp(beta * (h - h.max(-1, keepdims=True)))
    A /= A.sum(-1, keepdims=True)
    return np.mean(np.sum((Y - A) ** 2, axis=(1, 2)))


def test_train_loss_against_numpy():
    task = tasks.Seq2Seq(T=3, beta=2.0, noise=0.2)
    S0, data = _small(task)
    S = _sym_random(jax.random.PRNGKey(9), 6, 0.3)
    ref = _numpy_softmax_loss(np.asarray(data.X), np.asarray(data.Y), S, beta=2.0)
    assert train.train_loss(task, data, S) == pytest.approx(ref, rel=1e-12)
    assert train.train_loss(task, data, S0) == pytest.approx(
        _numpy_softmax_loss(np.asarray(data.X), np.asarray(data.Y), np.asarray(S0), 2.0), rel=1e-12
    )


def test_overlaps_and_mse():
    S0 = np.asarray(targets.Wishart(0.5).sample(jax.random.PRNGKey(0), 20))
    S = _sym_random(jax.random.PRNGKey(1), 20, 0.2)
    ov = train.overlaps(S, S0)
    assert ov.m == pytest.approx(np.trace(S @ S0) / 20, rel=1e-12)
    assert ov.q == pytest.approx(np.trace(S @ S) / 20, rel=1e-12)
    assert ov.Q0 == pytest.approx(np.trace(S0 @ S0) / 20, rel=1e-12)
    assert train.mse(S, S0) == pytest.approx(ov.Q0 - 2 * ov.m + ov.q, rel=1e-10)


@pytest.mark.parametrize("T,factor", [(1, 2.0), (2, 6.0)])
def test_test_error_linear_closed_form(T, factor):
    """Linear task: e_test = sum over the T x T outputs of Var(h_ab(S - S0)) = factor * mse.

    T = 1: one diagonal entry, variance 2 Q; T = 2: two diagonal entries (2 Q each)
    and two off-diagonal entries (Q each) = 6 Q, with Q = mse(S, S0). With label
    noise on the logits every output entry gains Delta (T^2 Delta in all).
    """
    d, noise = 30, 0.3
    task = tasks.Linear(T=T, noise=noise)
    S0 = targets.Wishart(0.5).sample(jax.random.PRNGKey(0), d)
    S = np.asarray(S0) + _sym_random(jax.random.PRNGKey(1), d, 0.2)
    expected = factor * train.mse(S, S0)
    key = jax.random.PRNGKey(2)
    est = train.test_error_stats(key, task, S0, S, n_test=40000)
    assert abs(est.mean - expected) < 5 * est.stderr
    noisy = train.test_error_stats(key, task, S0, S, n_test=40000, noisy=True)
    assert abs(noisy.mean - (expected + T * T * noise)) < 5 * noisy.stderr
    assert train.test_error(key, task, S0, S0) == 0.0


# ----------------------------------------------------------------------------
# Determinism, warnings, argument checks
# ----------------------------------------------------------------------------


def test_same_key_same_data_and_training(seq_problem):
    task, lam, S0, data, _ = seq_problem
    n = data.X.shape[0]
    a = tasks.make_dataset(jax.random.PRNGKey(1), task, S0, n)
    b = tasks.make_dataset(jax.random.PRNGKey(1), task, S0, n)
    c = tasks.make_dataset(jax.random.PRNGKey(2), task, S0, n)
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(np.asarray(x), np.asarray(y))
    assert not np.array_equal(np.asarray(a.X), np.asarray(c.X))
    d = S0.shape[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r1 = train.train_factorized(jax.random.PRNGKey(3), task, a, d, lam, max_iter=200)
        r2 = train.train_factorized(jax.random.PRNGKey(3), task, b, d, lam, max_iter=200)
        r3 = train.train_factorized(
            jax.random.PRNGKey(3), task, a, d, lam, max_iter=200, tol=0.0, keep_path=True
        )
    assert np.array_equal(r1.W, r2.W) and np.array_equal(r1.history, r2.history)
    assert r3.path.shape == (2, d, d) and np.array_equal(r3.path[-1], r3.W)
    assert r1.path is None
    k = jax.random.PRNGKey(4)
    assert train.test_error(k, task, S0, r1.S, n_test=5000) == train.test_error(
        k, task, S0, r2.S, n_test=5000
    )


def test_breakdown_returns_nan_with_a_warning_not_an_exception():
    """The policy of the algorithms on data (issue 37, as GAMP): a breakdown of
    train_convex is a result (NaN ``S`` and train loss, ``converged=False``) with a
    ``RuntimeWarning``, not a ``FloatingPointError``. Tokens scaled by 1e90 (inside the
    accepted 1e100) overflow the float64 objective (``h^2 ~ 1e360``); by 1e30 they do not,
    and the same run converges to a finite minimiser (the old code raised for the first
    and returned this for the second)."""
    key = jax.random.PRNGKey(0)
    d, task = 6, tasks.Linear(T=1, noise=0.1)
    S0 = np.asarray(targets.Wishart(0.5).sample(key, d))
    data = tasks.make_dataset(key, task, S0, 40)
    huge = tasks.Dataset(data.X * 1e90, data.Y, data.h0)
    with pytest.warns(RuntimeWarning, match="broke down"):
        r = train.train_convex(task, huge, 0.1, max_iter=100)
    assert not r.converged and np.all(np.isnan(r.S)) and math.isnan(r.train_loss)
    big = tasks.Dataset(data.X * 1e30, data.Y, data.h0)
    ok = train.train_convex(task, big, 0.1, max_iter=100)
    assert ok.converged and np.all(np.isfinite(ok.S)) and math.isfinite(ok.train_loss)


def test_nonconvergence_warns_with_residual(lin_problem):
    task, lam, S0, data, _ = lin_problem
    with pytest.warns(RuntimeWarning, match="residual"):
        res = train.train_convex(task, data, lam, max_iter=50, tol=0.0)
    assert not res.converged and res.residual > 0 and np.all(np.isfinite(res.S))
    assert res.n_iter == 50 and res.history.shape == (50,)
    with pytest.warns(RuntimeWarning, match="residual"):
        res = train.train_factorized(
            jax.random.PRNGKey(0), task, data, 40, lam, max_iter=100, tol=0
        )
    assert not res.converged and res.n_iter == 100 and res.history.shape == (100,)


@pytest.mark.parametrize("kind", ["direct", "factorized"])
def test_chunk_of_one_step_never_converges_on_its_first_step(kind, lin_problem):
    """With ``chunk=1`` the first chunk has a single objective value: there is no change to
    measure, so no convergence after one step (the old loop compared the objective with
    itself: converged=True, residual 0 after one step). The residual reported at the stop
    is the relative change of the last step, recomputed here from the history."""
    task, lam, S0, data, _ = lin_problem
    run = {
        "direct": lambda: train.train_direct(task, data, lam, max_iter=4, chunk=1, tol=1e-12),
        "factorized": lambda: train.train_factorized(
            jax.random.PRNGKey(0), task, data, 40, lam, max_iter=4, chunk=1, tol=1e-12
        ),
    }[kind]
    with pytest.warns(RuntimeWarning, match="did not converge"):
        res = run()
    assert not res.converged and res.n_iter == 4
    h = res.history
    assert res.residual == pytest.approx(abs(h[-2] - h[-1]) / abs(h[-1]), rel=1e-12)
    assert res.residual > 0


def test_result_is_frozen(lin_problem):
    res = lin_problem[-1]
    assert isinstance(res, train.TrainResult)
    with pytest.raises(AttributeError):
        res.converged = False


def _bad_calls():
    task = tasks.Seq2Seq(T=2)
    S0 = targets.Wishart(0.5).sample(jax.random.PRNGKey(0), 6)
    data = tasks.make_dataset(jax.random.PRNGKey(1), task, S0, 8)
    nan_X = np.asarray(data.X).copy()
    nan_X[0, 0, 0] = np.nan
    nan_data = tasks.Dataset(nan_X, data.Y, data.h0)
    short_Y = tasks.Dataset(data.X, data.Y[:-1], data.h0)
    lin_data = tasks.make_dataset(jax.random.PRNGKey(1), tasks.Linear(T=1), S0, 8)
    key = jax.random.PRNGKey(2)
    S = np.eye(6)
    return [
        ("lam", lambda: train.objective(task, data, S, -0.1)),
        ("penalty", lambda: train.objective(task, data, S, 0.1, penalty="l1")),
        ("S", lambda: train.objective(task, data, np.eye(5), 0.1)),
        ("S", lambda: train.objective(task, data, np.triu(np.ones((6, 6))), 0.1)),
        ("data.X", lambda: train.train_convex(task, nan_data, 0.1)),
        ("data.Y", lambda: train.train_convex(task, short_Y, 0.1)),
        ("data.X", lambda: train.train_convex(task, lin_data, 0.1)),
        ("lam", lambda: train.train_convex(task, data, -1.0)),
        ("max_iter", lambda: train.train_convex(task, data, 0.1, max_iter=0)),
        ("S_init", lambda: train.train_convex(task, data, 0.1, S_init=np.eye(4))),
        ("p", lambda: train.train_factorized(key, task, data, 0, 0.1)),
        ("lam_W", lambda: train.train_factorized(key, task, data, 3, -0.1)),
        ("learning_rate", lambda: train.train_factorized(key, task, data, 3, 0.1, learning_rate=0)),
        ("dtype", lambda: train.train_factorized(key, task, data, 3, 0.1, dtype=jnp.int32)),
        ("W_init", lambda: train.train_factorized(key, task, data, 3, 0.1, W_init=np.ones((6, 2)))),
        ("max_iter", lambda: train.train_factorized(key, task, data, 3, 0.1, max_iter=0)),
        ("decay", lambda: train.train_factorized(key, task, data, 3, 0.1, decay=1.5)),
        ("method", lambda: train.train_direct(task, data, 0.1, method="lbfgs")),
        ("lam", lambda: train.train_direct(task, data, -0.1)),
        ("t", lambda: train.prox_nuclear_psd(S, -1.0)),
        ("B", lambda: train.prox_frobenius(np.ones((2, 3)), 1.0)),
        ("n_test", lambda: train.test_error(key, task, S, S, n_test=0)),
        ("S", lambda: train.mse(np.eye(3), S)),
        ("S0", lambda: train.overlaps(S, np.ones((6, 5)))),
        ("task", lambda: train.train_loss("seq2seq", data, S)),
    ]


@pytest.mark.parametrize("i", range(len(_bad_calls())))
def test_invalid_arguments_raise_value_error(i):
    name, call = _bad_calls()[i]
    with pytest.raises(ValueError, match=name.replace(".", r"\.")):
        call()
