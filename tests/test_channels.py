"""Output channels (attnlib.channels): the K-dimensional proximal map and its derivatives.

Independent references: first-order optimality by JAX autodiff of the prox
objective written out here, random perturbations, scipy.optimize.minimize from
several starts (BFGS, a different algorithm), finite differences of g in omega,
and the closed form of the linear task.
"""

import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

import attnlib  # noqa: F401
from attnlib import channels, tasks
from attnlib.channels import losses, small
from attnlib.channels.losses import grad_hess_batch


def _readout_first_row(A):
    return A[..., 0, :]


CASES = {
    "seq2seq_T2": tasks.Seq2Seq(T=2),
    "seq2seq_T3_beta2": tasks.Seq2Seq(T=3, beta=2.0),
    "seq2lab_T2": tasks.Seq2Lab(T=2),
    "custom_tanh": tasks.Custom(T=2, g=lambda h: jnp.tanh(h)),
    "seq2lab_vector_readout": tasks.Seq2Lab(T=3, readout=_readout_first_row),
}


def _problem(task, n=48, v=4.0, seed=0, noise=0.2, with_logits=False):
    """Labels from random logits (plus logit noise), prox centres correlated with them."""
    K = task.n_pairs
    k1, k2, k3 = jax.random.split(jax.random.PRNGKey(seed), 3)
    s2 = jnp.asarray(tasks.pair_variances(task.T))
    h0 = jax.random.normal(k1, (n, K)) * jnp.sqrt(1.5 * s2)
    logits = h0 + jax.random.normal(k3, (n, K)) * np.sqrt(noise)
    Y = task.output(tasks.to_matrix(logits, task.T))
    omega = 0.6 * h0 + jax.random.normal(k2, (n, K)) * jnp.sqrt(s2)
    V = v * s2
    return (Y, omega, V, logits) if with_logits else (Y, omega, V)


def _objective(task, y, omega, V, p):
    """Prox objective written independently of channels (square loss of the task's output)."""
    r = y - task.output(tasks.to_matrix(p, task.T))
    return jnp.sum(r**2) + jnp.sum((p - omega) ** 2 / (2 * V))


@pytest.mark.parametrize("name", list(CASES))
def test_prox_is_stationary_and_not_improvable(name):
    """Global minimum over omega, the built-in label-consistent start (Seq2Seq) and the
    logits that generated Y (passed as ``starts``, as the state evolution does)."""
    task = CASES[name]
    Y, omega, V, logits = _problem(task, v=6.0, with_logits=True)
    out = channels.output_step(task, Y, omega, V, starts=logits)
    obj = jax.jit(jax.vmap(lambda p, y, om: _objective(task, y, om, V, p)))
    grad = jax.vmap(jax.grad(lambda p, y, om: _objective(task, y, om, V, p)))(out.h, Y, omega)
    # Newton converged to relative step 1e-12: gradients are at rounding level
    assert float(jnp.max(jnp.abs(grad))) < 1e-7
    f_star = obj(out.h, Y, omega)
    # the reported loss is the task's loss at h*
    loss = jax.vmap(lambda p, y: channels.pair_loss(task, y, p))(out.h, Y)
    np.testing.assert_allclose(out.loss, loss, rtol=1e-12, atol=1e-14)
    rng = np.random.default_rng(1)
    for scale in (1e-3, 1e-1, 1.0):
        pert = out.h + scale * rng.standard_normal(out.h.shape)
        assert bool(jnp.all(obj(pert, Y, omega) >= f_star - 1e-12))
    # a different optimiser (BFGS) from several starts never finds a lower objective
    fun = jax.jit(lambda p, y, om: _objective(task, y, om, V, p))
    jac = jax.jit(jax.grad(lambda p, y, om: _objective(task, y, om, V, p)))
    for i in range(0, Y.shape[0], 6):
        y, om = Y[i], omega[i]
        for start in (om, jnp.zeros(task.n_pairs), 3 * rng.standard_normal(task.n_pairs)):
            res = scipy.optimize.minimize(
                lambda p, y=y, om=om: float(fun(p, y, om)),
                np.asarray(start),
                jac=lambda p, y=y, om=om: np.asarray(jac(p, y, om)),
            )
            assert res.fun >= float(f_star[i]) - 1e-9, (name, i, res.fun, float(f_star[i]))
    if isinstance(task, tasks.Seq2Seq):
        # the built-in label-consistent start alone finds the same minima
        plain = channels.output_step(task, Y, omega, V)
        np.testing.assert_allclose(obj(plain.h, Y, omega), f_star, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["seq2seq_T2", "seq2seq_T3_beta2", "custom_tanh"])
def test_dg_matches_finite_differences(name):
    task = CASES[name]
    Y, omega, V = _problem(task, n=16, v=2.0, seed=3)
    out = channels.output_step(task, Y, omega, V)
    eps = 1e-5
    K = task.n_pairs
    fd = np.zeros((Y.shape[0], K))
    for k in range(K):
        e = jnp.zeros(K).at[k].set(eps)
        gp = channels.output_step(task, Y, omega + e, V).g[:, k]
        gm = channels.output_step(task, Y, omega - e, V).g[:, k]
        fd[:, k] = (gp - gm) / (2 * eps)
    # central differences: O(eps^2) truncation + O(1e-12/eps) Newton error
    np.testing.assert_allclose(out.dg, fd, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.g, (out.h - omega) / V, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("T", [1, 3])
def test_linear_closed_form_and_newton_path_agree(T):
    task = tasks.Linear(T=T, noise=0.1)
    Y, omega, V = _problem(task, n=32, v=1.5, seed=T)
    out = channels.output_step(task, Y, omega, V)
    # closed form written out here: minimise sum_ab w_ab (y_ab - h_ab)^2 + (h - omega)^2/(2V)
    w = np.where(np.equal(*tasks.pair_indices(T)), 1.0, 2.0)
    y = np.asarray(tasks.to_pairs(Y))
    h = (np.asarray(omega) + 2 * w * np.asarray(V) * y) / (1 + 2 * w * np.asarray(V))
    np.testing.assert_allclose(out.h, h, rtol=1e-12)
    np.testing.assert_allclose(
        out.dg, np.broadcast_to(-2 * w / (1 + 2 * w * V), h.shape), rtol=1e-12
    )
    # the general safeguarded Newton (channels.prox) on the same problems
    Vb = jnp.broadcast_to(V, omega.shape)
    p = channels.prox(task, Y, omega, Vb, omega[:, None, :])
    gen, ok = channels.finish(task, Y, omega, Vb, p.h)
    assert bool(jnp.all(ok))
    if True:
        np.testing.assert_allclose(gen.h, out.h, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(gen.dg, out.dg, rtol=1e-10)
        np.testing.assert_allclose(gen.loss, out.loss, rtol=1e-9, atol=1e-14)


def test_softmax_closed_form_derivatives_match_autodiff():
    task = tasks.Seq2Seq(T=3, beta=1.7)
    Y, omega, _ = _problem(task, n=8, seed=5)
    G, H = jax.jit(jax.vmap(lambda y, p: channels.softmax_grad_hess(task, y, p)))(Y, omega)
    f = lambda p, y: channels.pair_loss(task, y, p)  # noqa: E731
    np.testing.assert_allclose(G, jax.vmap(jax.grad(f))(omega, Y), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(H, jax.vmap(jax.hessian(f))(omega, Y), rtol=1e-10, atol=1e-13)


def test_shapes_variance_forms_and_traced_path():
    task = tasks.Seq2Seq(T=2)
    Y, omega, V = _problem(task, n=20, v=3.0, seed=7)
    a = channels.output_step(task, Y, omega, V)
    b = channels.output_step(task, Y, omega, jnp.broadcast_to(V, omega.shape))
    assert a.h.shape == a.g.shape == a.dg.shape == (20, 3) and a.loss.shape == (20,)
    np.testing.assert_allclose(a.h, b.h, rtol=1e-13)
    # per-sequence V: permuting the sequences permutes the results
    Vn = V * (1 + jnp.arange(20)[:, None] / 10)
    c = channels.output_step(task, Y, omega, Vn)
    perm = np.random.default_rng(0).permutation(20)
    d = channels.output_step(task, Y[perm], omega[perm], Vn[perm])
    np.testing.assert_allclose(c.h[perm], d.h, rtol=1e-10, atol=1e-12)
    assert float(jnp.max(jnp.abs(c.h - a.h))) > 1e-3  # V matters
    # under jit (tracers: the while_loop path) the result is the same
    traced = jax.jit(lambda Y, om, V: channels.output_step(task, Y, om, V))(Y, omega, V)
    for x, y in zip(a, traced, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)
    # extra starts are accepted in both layouts
    e = channels.output_step(task, Y, omega, V, starts=omega + 1.0)
    f = channels.output_step(task, Y, omega, V, starts=(omega + 1.0)[:, None, :])
    np.testing.assert_allclose(e.h, a.h, atol=1e-8)
    np.testing.assert_allclose(f.h, a.h, atol=1e-8)


def test_saturated_softmax_finds_the_minimum_between_labels_and_omega():
    """Large V, omega far from the logits that fit Y (issue 3): Newton from omega stays
    in the saturated basin around omega, the global minimum lies between the two points,
    and the built-in label-consistent start reaches it (the step rule must not hop back
    into the omega basin, as a full quadratic-model step from the saturated start does)."""
    task = tasks.Seq2Seq(T=2)
    h_true = jnp.array([[6.0, -4.0, 5.0]])
    Y = task.output(tasks.to_matrix(h_true, 2))
    omega = jnp.array([[-6.0, 5.0, -6.0]])
    V = jnp.array([40.0, 20.0, 40.0])
    out = channels.output_step(task, Y, omega, V)
    f = jax.jit(lambda p: _objective(task, Y[0], omega[0], V, p))
    g = jax.jit(jax.grad(lambda p: _objective(task, Y[0], omega[0], V, p)))
    best = min(
        scipy.optimize.minimize(lambda p: float(f(p)), s, jac=lambda p: np.asarray(g(p))).fun
        for s in (np.asarray(omega[0]), np.asarray(h_true[0]), np.zeros(3))
    )
    assert float(f(out.h[0])) <= best + 1e-9
    Vb = jnp.broadcast_to(V, omega.shape)
    only_omega = channels.prox(task, Y, omega, Vb, omega[:, None, :])
    assert float(f(only_omega.h[0])) > best + 1.0  # the omega basin is much worse here


def test_bad_arguments_raise():
    task = tasks.Seq2Seq(T=2)
    Y, omega, V = _problem(task, n=4)
    with pytest.raises(ValueError, match="omega"):
        channels.output_step(task, Y, omega[:, :2], V)
    with pytest.raises(ValueError, match="Y"):
        channels.output_step(task, Y[:, :1], omega, V)
    with pytest.raises(ValueError, match="V"):
        channels.output_step(task, Y, omega, -V)
    with pytest.raises(ValueError, match="V"):
        channels.output_step(task, Y, omega, V[:2])
    with pytest.raises(ValueError, match="omega"):
        channels.output_step(task, Y, omega.at[0, 0].set(jnp.nan), V)
    with pytest.raises(ValueError, match="max_iter"):
        channels.output_step(task, Y, omega, V, max_iter=0)
    with pytest.raises(ValueError, match="starts"):
        channels.output_step(task, Y, omega, V, starts=omega[:, :2])
    with pytest.raises(ValueError, match="pairs"):
        channels.pair_loss(task, Y, omega[:, :2])


@pytest.mark.parametrize("K", [3, 4, 6])
def test_small_linear_algebra_matches_lapack(K):
    """channels.small (written out for K <= UNROLL_MAX_K, column loops above) against
    jnp.linalg's LAPACK on random positive-definite and indefinite batches: rounding
    level; the factor of an indefinite matrix is not finite, as LAPACK's."""
    rng = np.random.default_rng(K)
    B = rng.normal(size=(200, K, K))
    pd = jnp.asarray(np.einsum("nij,nkj->nik", B, B) + 0.1 * np.eye(K))
    ind = jnp.asarray(B + B.transpose(0, 2, 1))
    b = jnp.asarray(rng.normal(size=(200, K)))
    L = small.cholesky(pd)
    np.testing.assert_allclose(L, jnp.linalg.cholesky(pd), rtol=1e-10, atol=1e-12)
    x = jnp.linalg.solve(pd, b[..., None])[..., 0]
    np.testing.assert_allclose(small.cho_solve(L, b), x, rtol=1e-8)
    for A in (pd, ind):
        diag, ok = small.inv_diag(A)
        inv = jnp.diagonal(jnp.linalg.inv(A), axis1=1, axis2=2)
        np.testing.assert_allclose(diag, inv, rtol=1e-8)
        expect = jnp.all(jnp.isfinite(jnp.linalg.cholesky(A)), axis=(1, 2))
        assert bool(jnp.all(ok == expect))
    assert not bool(jnp.all(small.inv_diag(ind)[1]))  # the indefinite batch is detected
    lapack_ok = jnp.all(jnp.isfinite(jnp.linalg.cholesky(ind)), axis=(1, 2))
    assert bool(jnp.all(jnp.all(jnp.isfinite(small.cholesky(ind)), axis=(1, 2)) == lapack_ok))


@pytest.mark.parametrize("T", [2, 3])
def test_objective_batch_matches_per_sequence(T):
    """losses.objective_batch (Seq2Seq written out on the batch axes) against the
    per-sequence prox_objective for one and several candidates per problem: rounding."""
    task = tasks.Seq2Seq(T=T, beta=1.7)
    K = task.n_pairs
    k = jax.random.split(jax.random.PRNGKey(T), 4)
    omega = jax.random.normal(k[0], (50, K))
    V = 0.2 + jnp.abs(jax.random.normal(k[1], (50, K)))
    Y = jax.nn.softmax(jax.random.normal(k[2], (50, T, T)), axis=-1)
    P = 3.0 * jax.random.normal(k[3], (50, 4, K))
    expect = channels.prox_objective(task, Y[:, None], P, omega[:, None], V[:, None])
    got = losses.objective_batch(task, Y, omega, V, P)
    np.testing.assert_allclose(got, expect, rtol=1e-13, atol=1e-14)
    got1 = losses.objective_batch(task, Y, omega, V, P[:, 0])
    np.testing.assert_allclose(got1, expect[:, 0], rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("K", [1, 2, 3, 6])
def test_small_eigh_matches_numpy(K):
    """channels.small.eigh (Jacobi rotations for K <= UNROLL_MAX_K) against numpy's LAPACK
    on random, diagonal, degenerate and badly scaled symmetric batches, jitted (XLA
    rewrites some float64 operations under jit): eigenvalues to rounding (1e-13 of the
    largest), eigenvectors orthonormal and reconstructing A; NaN stays NaN."""
    rng = np.random.default_rng(10 + K)
    B = rng.normal(size=(300, K, K))
    A = B + B.transpose(0, 2, 1)
    A[:5] = np.diag(np.arange(K, dtype=float))
    A[5:10] = np.ones((K, K))
    A[10:15] = 3 * np.eye(K) + 1e-12 * np.ones((K, K))
    A[15] = 1e8 * np.eye(K) + np.ones((K, K))
    A[16] = 1e-9 * A[20]
    lam, U = jax.jit(small.eigh)(jnp.asarray(A))
    scale = 1.0 + np.max(np.abs(np.linalg.eigvalsh(A)), axis=-1, keepdims=True)
    np.testing.assert_allclose(lam / scale, np.linalg.eigvalsh(A) / scale, rtol=0, atol=1e-13)
    assert np.all(np.diff(np.asarray(lam), axis=-1) >= 0)
    rec = np.einsum("nij,nj,nkj->nik", U, lam, U)
    np.testing.assert_allclose(rec / scale[..., None], A / scale[..., None], atol=1e-13)
    np.testing.assert_allclose(
        np.einsum("nji,njk->nik", U, U), np.broadcast_to(np.eye(K), A.shape), atol=1e-13
    )
    A[20, 0, 0] = np.nan
    lam_nan = small.eigh(jnp.asarray(A))[0]
    assert np.all(np.isnan(lam_nan[20])) and np.all(np.isfinite(lam_nan[21]))


@pytest.mark.parametrize("T", [2, 3, 4])
def test_batched_grad_hess_matches_per_sequence(T):
    """grad_hess_batch (written out entry by entry for T <= 3, broadcasting and two
    matrix products above) against the per-sequence closed form softmax_grad_hess,
    itself checked against autodiff above."""
    task = tasks.Seq2Seq(T=T, beta=1.3)
    rng = np.random.default_rng(T)
    Y = jax.nn.softmax(jnp.asarray(rng.normal(size=(100, T, T))), axis=-1)
    P = jnp.asarray(2.0 * rng.normal(size=(100, task.n_pairs)))
    G1, H1 = jax.vmap(lambda y, p: channels.softmax_grad_hess(task, y, p))(Y, P)
    G2, H2 = grad_hess_batch(task, Y, P)
    np.testing.assert_allclose(G2, G1, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(H2, H1, rtol=1e-12, atol=1e-13)


def test_problems_already_done_do_not_force_the_step_grid(monkeypatch):
    """Newton takes the full step for the whole batch when every active problem accepts
    it; problems already done (at their minimum, where no step decreases the objective)
    must not send the batch to the step grid. Counted at run time: the step grid is the
    only caller of ``_finish_step`` on a positive-definite batch. A strongly convex batch
    (small V), where every full step is accepted, must reach its minima without it."""
    newton = importlib.import_module("attnlib.channels.newton")
    prox_mod = importlib.import_module("attnlib.channels.prox")
    calls, traced = [], []
    finish = newton._finish_step

    def counted(*args):
        traced.append(1)  # at trace time: the counter is part of the compiled program
        jax.debug.callback(lambda: calls.append(1))
        return finish(*args)

    monkeypatch.setattr(newton, "_finish_step", counted)
    # a program compiled earlier in the run (same shapes) would skip the counter:
    # drop the jit cache so that this call traces the patched step
    prox_mod._prox_jit.clear_cache()
    task = tasks.Seq2Seq(T=2)
    Y, omega, V = _problem(task, n=41, v=0.05, seed=3)
    V = jnp.broadcast_to(V, omega.shape)
    out = prox_mod._prox_jit(task, Y, omega, V, omega[:, None, :], tol=1e-12, max_iter=100)
    jax.block_until_ready(out)
    prox_mod._prox_jit.clear_cache()  # later tests get the unpatched program
    assert traced, "the step grid was not traced into the program: the count checks nothing"
    assert int(out.n_steps) >= 3  # problems finish at different steps
    assert calls == []
    # the minima themselves: stationary (autodiff of the objective written out here)
    grad = jax.vmap(jax.grad(lambda y, o, v, p: _objective(task, y, o, v, p), argnums=3))
    assert float(jnp.max(jnp.abs(grad(Y, omega, V, out.h)))) < 1e-9
