"""GAMP on a finite data set (attnlib.amp).

The reference is the accelerated proximal-gradient ERM solver
(attnlib.train.train_convex), an independent algorithm: GAMP's fixed point must
be the ERM minimiser on the same data. The ERM optimality check below uses JAX
autodiff of the objective, not GAMP's own gradient formula.
"""

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attnlib  # noqa: F401
from attnlib import amp, bayes, channels, gamp, hardmax, tasks, train
from attnlib.denoisers.rie import RIE
from attnlib.targets import Wishart

D = 60
ALPHA = 0.5
LAM = 0.1


@functools.cache
def _problem(kind: str):
    task = tasks.Linear(T=1, noise=0.1) if kind == "linear" else tasks.Seq2Seq(T=2, noise=0.1)
    S0 = Wishart(0.5).sample(jax.random.PRNGKey(1), D)
    data = tasks.make_dataset(jax.random.PRNGKey(2), task, S0, tasks.n_samples(ALPHA, D))
    return task, data


@functools.cache
def _solutions(kind: str, penalty: str):
    task, data = _problem(kind)
    res = amp.gamp(task, data, LAM, penalty)
    ref = train.train_convex(task, data, LAM, penalty=penalty, tol=1e-10, max_iter=20000)
    return res, ref


CASES = [(k, p) for k in ("linear", "seq2seq") for p in ("nuclear", "frobenius")]


@pytest.mark.parametrize("kind,penalty", CASES)
def test_fixed_point_is_convex_minimiser(kind, penalty):
    # Both solvers stop at relative residuals <= 1e-8 (GAMP: change of S per
    # update; FISTA: gradient mapping 1e-10), so on a well-conditioned problem
    # (lam = 0.1, alpha = 0.5 away from every threshold) they agree to ~1e-7;
    # 1e-3 is the required agreement and leaves four orders of margin.
    res, ref = _solutions(kind, penalty)
    assert res.converged and ref.converged
    rel = np.linalg.norm(res.S - ref.S) / np.linalg.norm(ref.S)
    assert rel < 1e-3, rel
    assert res.a_hat > 0 and res.v > 0
    if penalty == "nuclear":
        # PSD with a rank deficiency (lam thresholds part of the spectrum)
        ev = np.linalg.eigvalsh(res.S)
        assert ev.min() > -1e-10
        assert np.sum(ev > 1e-8) < D


def _prox_gradient_residual(task, data, S, lam, penalty):
    """||S - prox(S - eta grad)||_F / ||S||_F with the gradient from JAX autodiff."""
    X, Y = jnp.asarray(data.X), jnp.asarray(data.Y)
    d = S.shape[0]

    def L(A):
        return jnp.sum(task.loss(Y, tasks.preactivations(X, A)))

    G = np.asarray(jax.grad(L)(jnp.asarray(S)))
    G = (G + G.T) / 2
    eta = 1.0 / (np.linalg.norm(G) / np.linalg.norm(S) + d * lam)  # any eta > 0 works
    if penalty == "nuclear":
        T = np.asarray(train.prox_nuclear_psd(S - eta * G, eta * d * lam))
    else:
        T = np.asarray(train.prox_frobenius(S - eta * G, eta * d * lam))
    return np.linalg.norm(S - T) / np.linalg.norm(S)


@pytest.mark.parametrize("kind,penalty", CASES)
def test_fixed_point_satisfies_erm_optimality(kind, penalty):
    # KKT of the ERM <=> S is a fixed point of proximal gradient for any step;
    # GAMP's own residual is 1e-8, so the KKT residual is of that order (1e-6 bound).
    task, data = _problem(kind)
    res, _ = _solutions(kind, penalty)
    assert _prox_gradient_residual(task, data, res.S, LAM, penalty) < 1e-6
    # and it is not trivially satisfied: a perturbed S fails it clearly
    rng = np.random.default_rng(0)
    P = rng.standard_normal((D, D))
    S_bad = res.S + 0.05 * np.linalg.norm(res.S) * (P + P.T) / np.linalg.norm(P + P.T)
    if penalty == "nuclear":
        S_bad = np.asarray(train.prox_nuclear_psd(S_bad, 0.0))
    assert _prox_gradient_residual(task, data, S_bad, LAM, penalty) > 1e-3


def test_data_gradient_sum_is_autodiff_gradient():
    # sum_mu sum_ab g_ab Z_ab = grad_S sum_mu sum_ab g_ab h_ab(S) (h is linear in S)
    T, d, n = 3, 7, 5
    kx, kg = jax.random.split(jax.random.PRNGKey(3))
    X = jax.random.normal(kx, (n, T, d))
    g = jax.random.normal(kg, (n, tasks.n_pairs(T)))

    def f(S):
        return jnp.sum(g * tasks.to_pairs(tasks.preactivations(X, S)))

    G = jax.grad(f)(jnp.zeros((d, d)))
    np.testing.assert_allclose(amp.data_gradient_sum(X, g), (G + G.T) / 2, atol=1e-12)


@pytest.mark.parametrize("penalty", ["nuclear", "frobenius"])
def test_spectral_divergence_matches_jacobian_trace(penalty, symmetric_basis):
    # div F over the d(d+1)/2 orthonormal coordinates of symmetric matrices,
    # computed as the trace of the Jacobian of F (JAX forward mode).
    d = 6
    A = np.random.default_rng(1).standard_normal((d, d))
    B = jnp.asarray((A + A.T) / 2)
    tau = 0.3
    basis = symmetric_basis(d)

    def F(M):
        return amp.spectral_prox(M, tau, penalty)[0]

    trace = sum(float(jnp.sum(jax.jvp(F, (B,), (jnp.asarray(E),))[1] * E)) for E in basis)
    _, div = amp.spectral_prox(B, tau, penalty)
    np.testing.assert_allclose(float(div), trace, rtol=1e-8)


def test_not_converged_warns_with_residual():
    task, data = _problem("linear")
    with pytest.warns(RuntimeWarning, match="residual"):
        res = amp.gamp(task, data, LAM, max_iter=2)
    assert not res.converged and res.n_iter == 2 and res.history.shape == (2,)
    assert math.isfinite(res.residual) and res.residual > 1e-8


def test_bad_arguments():
    task, data = _problem("linear")
    with pytest.raises(ValueError, match="lam"):
        amp.gamp(task, data, -1.0)
    with pytest.raises(ValueError, match="lam"):
        amp.gamp(task, data, 0.0, "nuclear")
    with pytest.raises(ValueError, match="penalty"):
        amp.gamp(task, data, LAM, "l1")
    with pytest.raises(ValueError, match="damping"):
        amp.gamp(task, data, LAM, damping=1.0)
    with pytest.raises(ValueError, match="max_iter"):
        amp.gamp(task, data, LAM, max_iter=0)
    with pytest.raises(ValueError, match="S_init"):
        amp.gamp(task, data, LAM, S_init=np.zeros((3, 3)))
    with pytest.raises(ValueError, match="data.Y"):
        amp.gamp(task, tasks.Dataset(data.X, data.Y[:-1], data.h0), LAM)
    with pytest.raises(ValueError, match="data.X"):
        amp.gamp(tasks.Seq2Seq(T=2), data, LAM)
    Xnan = np.array(data.X)
    Xnan[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        amp.gamp(task, tasks.Dataset(Xnan, data.Y, data.h0), LAM)
    with pytest.raises(ValueError, match="task"):
        amp.gamp("linear", data, LAM)


# ----------------------------------------------------------------------------
# the one GAMP loop (attnlib.gamp): its configurations, hooks and failure policy
# ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Blowup:
    """A denoiser that breaks the iteration down at once (NaN estimate)."""

    jittable = True

    def __call__(self, B, a_hat, lam):
        return B * jnp.nan, jnp.nan


def test_gamp_runs_on_the_state_evolution_problem():
    """GAMP and the state evolution are one composition: ``gamp.run`` takes the state
    evolution's ``se.point.Problem`` (its ``(channel, denoiser)`` pair) and, on the data of
    ``test_fixed_point_is_convex_minimiser``, reaches the minimiser of the independent
    convex solver (same bound, 1e-3 relative)."""
    from attnlib.se.point import Problem

    task, data = _problem("seq2seq")
    pb = Problem(channels.for_task(task), gamp.SpectralProx("nuclear", Wishart(0.5)), None, (), 0)
    start = gamp.Start(np.zeros((D, D)), 1.0)
    res = gamp.run(pb, data, start, LAM)
    ref = _solutions("seq2seq", "nuclear")[1]
    assert res.converged and np.linalg.norm(res.S - ref.S) < 1e-3 * np.linalg.norm(ref.S)


def test_breakdown_stops_with_nan_and_a_warning():
    task, data = _problem("linear")
    start = gamp.Start(np.zeros((D, D)), 1.0)
    with pytest.warns(RuntimeWarning, match="broke down after 1 iterations"):
        r = gamp.run((channels.for_task(task), _Blowup()), data, start, LAM,
                     settings=gamp.GAMPSettings(max_iter=5))  # fmt: skip
    assert r.status == "breakdown" and not r.converged and r.n_iter == 1
    assert np.all(np.isnan(r.S)) and math.isnan(r.v) and math.isnan(r.a_hat)


def test_unit_weights_and_the_observe_hook():
    """Per-sequence weights ``r = 1`` give the uniform-variance run (multiplications by
    one are exact; the two compiled programs differ in rounding only: measured 2e-15 of
    ``||S||``, bound 1e-12); ``observe`` sees each iterate and ``trajectory`` has one
    entry per iteration."""
    task, data = _problem("linear")
    n, K = data.X.shape[0], task.n_pairs
    start = gamp.Start(np.zeros((D, D)), 1.0)
    settings = gamp.GAMPSettings(damping=0.5, max_iter=4, tol=1e-300, observe=np.trace)
    pair = (channels.for_task(task), gamp.SpectralProx("nuclear"))
    with pytest.warns(RuntimeWarning, match="residual"):
        a = gamp.run(pair, data, start, LAM, settings=settings)
    with pytest.warns(RuntimeWarning, match="residual"):
        b = gamp.run(pair, data, start, LAM, settings=settings, weights=np.ones((n, K)))
    assert a.status == "max_iter" and a.n_iter == 4
    assert np.linalg.norm(b.S - a.S) < 1e-12 * np.linalg.norm(a.S)
    np.testing.assert_allclose(a.trace[-1], np.trace(a.S), rtol=1e-14)
    assert all(len(x) == 4 for x in a.trajectory if x is not None)
    assert a.trajectory.v[-1] == a.v and a.trajectory.a_hat[-1] == a.a_hat
    assert a.trajectory.scale is None and np.all(a.trajectory.loss > 0)  # not renormalised


def test_the_three_gamps_return_one_result_type():
    """ERM, renormalised hardmax and GAMP-RIE: the same result type and diagnostics."""
    W = Wishart(0.5)
    S0 = W.sample(jax.random.PRNGKey(5), 12)
    hm = tasks.Hardmax(T=2)
    hdata = tasks.make_dataset(jax.random.PRNGKey(6), hm, S0, tasks.n_samples(0.5, 12))
    ldata = tasks.make_dataset(jax.random.PRNGKey(7), tasks.Linear(T=1, noise=0.1), S0, 60)
    with pytest.warns(RuntimeWarning, match="did not converge"):
        runs = (
            amp.gamp(tasks.Linear(T=1, noise=0.1), ldata, LAM, max_iter=3),
            hardmax.gamp(hm, hdata, W, max_iter=3, tol=1e-300, damping=0.0),
            bayes.gamp_rie(tasks.Linear(T=1, noise=0.1), ldata, W, S0=S0, max_iter=3, tol=1e-300),
        )
    for r in runs:
        assert isinstance(r, gamp.GAMPResult) and r.n_iter == 3 and r.status == "max_iter"
        assert r.history.shape == (3,) and isinstance(r.v, float)
    h = runs[1]
    assert np.sum(h.S**2) / 12 == pytest.approx(W.Q0, rel=1e-12)  # renormalised (undamped)
    assert 0 < h.trajectory.scale[-1] < np.inf
    assert runs[2].trace.shape == (3,)  # the mse per iteration
    assert runs[2].trajectory.loss is None and runs[0].trajectory.scale is None  # no such thing
    # the first step thresholds the whole spectrum: the breakdown's warning, then the error
    with (
        pytest.warns(RuntimeWarning, match="broke down"),
        pytest.raises(ValueError, match="v_init"),
    ):
        hardmax.gamp(hm, hdata, W, max_iter=3, v_init=1e90)


def test_the_three_gamps_take_one_settings_type():
    """``(task, data, lam | target)``, then keyword-only ``settings`` (a GAMPSettings) whose
    fields the shorthand keywords replace; the same run either way; a bad ``settings`` or
    field is a ValueError naming it; the output steps and denoisers check their fields."""
    W = Wishart(0.5)
    S0 = W.sample(jax.random.PRNGKey(5), 12)
    lin = tasks.Linear(T=1, noise=0.1)
    ldata = tasks.make_dataset(jax.random.PRNGKey(7), lin, S0, 60)
    hm = tasks.Hardmax(T=2)
    hdata = tasks.make_dataset(jax.random.PRNGKey(6), hm, S0, tasks.n_samples(0.5, 12))
    three = (
        lambda **kw: amp.gamp(lin, ldata, LAM, **kw),
        lambda **kw: hardmax.gamp(hm, hdata, W, **kw),
        lambda **kw: bayes.gamp_rie(lin, ldata, W, **kw),
    )
    settings = gamp.GAMPSettings(damping=0.3, max_iter=3, tol=1e-300)
    for run in three:
        with pytest.warns(RuntimeWarning, match="did not converge"):
            a = run(settings=settings)
            b = run(settings=settings._replace(max_iter=50), max_iter=3)
            c = run(damping=0.3, max_iter=3, tol=1e-300)
        assert a.n_iter == b.n_iter == c.n_iter == 3
        np.testing.assert_array_equal(a.S, b.S)
        np.testing.assert_array_equal(a.S, c.S)
        with pytest.raises(ValueError, match="settings"):
            run(settings=(0.5, 3))
        with pytest.raises(ValueError, match="damping"):
            run(settings=settings._replace(damping=1.0))
    with pytest.raises(TypeError):  # settings are keyword-only
        amp.gamp(lin, ldata, LAM, "nuclear", settings)
    lin_ch, den, start = channels.for_task(lin), gamp.SpectralProx(), gamp.Start(np.eye(12), 1.0)
    with pytest.raises(TypeError):  # a 5th positional
        gamp.run((lin_ch, den), ldata, start, LAM, 2.0)
    bad_bayes = tasks.Seq2Seq(T=2, noise=0.1, noise_on="outputs")
    bayes_gs = gamp.GAMPSettings(posterior=True)
    for make, name in (
        (lambda: gamp.run(("linear", den), ldata, start), "pair"),
        (lambda: gamp.run((lin_ch, gamp.SpectralProx(kappa=0.5)), ldata, start), "kappa"),
        (lambda: gamp.resolve_settings(n_newton=0), "n_newton"),
        (lambda: gamp.resolve_settings(warm="yes"), "warm"),
        (lambda: gamp.resolve_settings(posterior=1), "posterior"),
        (lambda: gamp.run((channels.for_task(tasks.Hardmax(T=5)).at_zero_scale(), den), 0, 0), "T"),
        (lambda: gamp.run((channels.for_task(bad_bayes), den), 0, 0, settings=bayes_gs), "task"),
        (lambda: gamp.SpectralProx("lasso"), "penalty"),
        (lambda: RIE("wishart"), "target"),
    ):
        with pytest.raises(ValueError, match=name):
            make()
