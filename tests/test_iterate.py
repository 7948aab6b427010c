"""The one fixed-point solver (attnlib.iterate) on maps with known answers.

References: the Dottie number ``x = cos x`` (0.7390851332151607), a damped iteration
written out by hand, a polynomial with known roots; and, for the configurations of the
solver in the library, the loops they replaced written out here (the damped loop of the
hardmax state evolution).
"""

import contextlib
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attnlib  # noqa: F401
from attnlib import channels, iterate, se, targets, tasks
from attnlib.hardmax import state_evolution as hse

DOTTIE = 0.7390851332151607


def _cos(x, aux):
    return jnp.cos(x), aux + 1, jnp.asarray(True)


def _np_cos(x, aux):
    return np.cos(x), aux + 1, True


def test_anderson_finds_a_known_fixed_point_and_reports_failure():
    """x = cos(x) and a map without a fixed point."""
    cfg = iterate.AndersonConfig(tol=1e-13)
    fp = jax.jit(lambda x0: iterate.anderson(_cos, x0, jnp.asarray(0), cfg))(jnp.ones(2))
    assert int(fp.status) == iterate.CONVERGED and int(fp.aux) == int(fp.n_iter)
    np.testing.assert_allclose(fp.x, DOTTIE, rtol=1e-12)

    def G(x, aux):  # x + 1 has no fixed point; defined only for x < 5
        return x + 1.0, aux, jnp.all(x < 5.0)

    bad = iterate.anderson(G, jnp.zeros(1), None, cfg._replace(max_iter=50))
    assert int(bad.status) in (iterate.MAX_ITER, iterate.STALLED)
    assert float(bad.residual) >= 1.0


def test_statuses_max_iter_and_stalled():
    cfg = iterate.AndersonConfig(tol=1e-13, max_iter=3)
    assert int(iterate.anderson(_cos, jnp.ones(1), jnp.asarray(0), cfg).status) == iterate.MAX_ITER

    def never(x, aux):
        return x, aux, jnp.asarray(False)

    fp = iterate.anderson(never, jnp.ones(1), None, cfg)
    assert int(fp.status) == iterate.STALLED and int(fp.n_iter) == 1
    assert np.isnan(fp.fx).all()  # no good point: no image


@pytest.mark.parametrize("memory", [0, 3])
def test_host_loop_and_compiled_loop_take_the_same_steps(memory):
    """run (numpy map on the host) and anderson (one while_loop) on the same map: the
    same trajectory, seen through observe, to rounding."""
    cfg = iterate.AndersonConfig(tol=1e-12, memory=memory, damping=0.3)
    seen_host, seen_jit = [], []
    host = iterate.run(
        _np_cos, np.array([1.0, -0.5]), 0, cfg, observe=lambda x, fx, st: seen_host.append(x)
    )
    jit = iterate.anderson(
        _cos, jnp.array([1.0, -0.5]), jnp.asarray(0), cfg,
        observe=lambda x, fx, st: seen_jit.append(np.asarray(x)),
    )  # fmt: skip
    assert int(host.status) == int(jit.status) == iterate.CONVERGED
    assert int(host.n_iter) == int(jit.n_iter) == len(seen_host) == len(seen_jit)
    assert host.aux == int(host.n_iter)
    np.testing.assert_allclose(np.array(seen_host), np.array(seen_jit), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(host.x, DOTTIE, rtol=1e-11)


def test_memory_zero_is_the_damped_iteration():
    """memory 0: x <- x + (1 - damping) (F(x) - x), step for step, as written by hand."""
    damping = 0.6
    cfg = iterate.AndersonConfig(tol=1e-10, memory=0, damping=damping, max_step=math.inf)
    seen = []
    fp = iterate.run(_np_cos, np.array([3.0]), 0, cfg, observe=lambda x, fx, st: seen.append(x))
    x, hand = np.array([3.0]), []
    while True:
        hand.append(x)
        fx = np.cos(x)
        if np.max(np.abs(fx - x)) < cfg.tol:
            break
        x = x + (1 - damping) * (fx - x)
    assert len(seen) == len(hand) == int(fp.n_iter)
    # to rounding: a compiled update may fuse the multiply-add (one rounding, not two)
    np.testing.assert_allclose(np.array(seen), np.array(hand), rtol=1e-13, atol=0)


def test_the_callers_residual_decides_when_to_stop():
    """``residual=``: the stopping test reads the caller's residual (here the relative
    change ``|F(x) - x| / |F(x)|`` of ``F(x) = x / 2`` from 1, which is 1 at every
    step: never below tol, MAX_ITER; ``max |F(x) - x|`` is ``2^-(k+1)`` at the ``k``-th
    point ``2^-k``, below 1e-3 first at ``k = 9``: 10 evaluations)."""
    cfg = iterate.AndersonConfig(tol=1e-3, memory=0, damping=0.0, max_iter=50)

    def half(x, aux):
        return x / 2, aux, True

    plain = iterate.run(half, np.ones(1), None, cfg)
    assert int(plain.status) == iterate.CONVERGED and int(plain.n_iter) == 10
    rel = iterate.run(half, np.ones(1), None, cfg, residual=lambda x, fx, a: abs(fx - x)[0] / fx[0])
    assert int(rel.status) == iterate.MAX_ITER and int(rel.n_iter) == 50
    assert float(rel.residual) == 1.0


def test_a_step_longer_than_max_step_is_shortened():
    cfg = iterate.AndersonConfig(memory=0, damping=0.0, max_step=0.25, max_iter=2)
    seen = []

    def far(x, aux):
        return x + 10.0, aux, True

    iterate.run(far, np.zeros(1), None, cfg, observe=lambda x, fx, st: seen.append(x))
    np.testing.assert_allclose(np.array(seen)[:, 0], [0.0, 0.25])


def test_exceptions_of_the_map_propagate_from_the_host_loop():
    def broken(x, aux):
        raise KeyError("the map failed")

    with pytest.raises(KeyError, match="the map failed"):
        iterate.run(broken, np.ones(1))


def test_bad_arguments_name_them():
    with pytest.raises(ValueError, match="config"):
        iterate.anderson(_cos, jnp.ones(1), None, (1e-6, 10))
    with pytest.raises(ValueError, match="x0"):
        iterate.run(_np_cos, [np.nan], 0)
    with pytest.raises(ValueError, match="observe"):
        iterate.run(_np_cos, [1.0], 0, observe=3)
    with pytest.raises(ValueError, match="state"):
        iterate.update((1.0,), np.ones(1), None, True)
    st = iterate.init(np.ones(2))
    with pytest.raises(ValueError, match="fx"):
        iterate.update(st, np.ones(3), None, True)


def _quadratic(x):
    return (x - 1.0) * (x + 2.0)  # >= 0 above 1, < 0 on (-2, 1), > 0 below -2


@pytest.mark.parametrize("scan_all, x_min, other", [(False, -10.0, None), (True, -10.0, True),
                                                    (True, -1.5, False)])  # fmt: skip
def test_largest_root_of_a_quadratic(scan_all, x_min, other):
    r = iterate.largest_root(_quadratic, 4.0, x_min, step=0.7, xtol=1e-13, scan_all=scan_all)
    assert r.status == iterate.CONVERGED and r.other is other
    assert r.lo < 1.0 <= r.hi and r.hi - r.lo == pytest.approx(0.7)
    assert r.x == pytest.approx(1.0, abs=1e-12)


def test_largest_root_reports_a_bad_start_and_no_root():
    bad = iterate.largest_root(_quadratic, 0.0, -10.0)
    assert bad.status == iterate.BAD_START and bad.g0 == -2.0 and math.isnan(bad.x)
    none = iterate.largest_root(math.exp, 0.0, -3.0, step=1.0)
    assert none.status == iterate.NO_ROOT and none.n_eval == 4 and none.other is None


def _old_hardmax_loop(task, target, alpha, lam, init, qmc, tol, max_iter, damping):
    """The damped loop that hardmax.solve ran on its own (attnlib before issue 37, when
    it became the state evolution's fixed point with a renormalised denoiser), written
    out from the public output side of the zero-scale channel and the input side."""
    y = np.array([np.arctanh(init[0]), math.log(init[1])])
    res, it, Q0 = math.inf, 0, target.Q0
    zero_scale = channels.for_task(task).at_zero_scale()
    while it < max_iter:
        it += 1
        c, rho = math.tanh(y[0]), math.exp(y[1])
        o = se.output_side(zero_scale, alpha, Q0, c * Q0, Q0, rho * math.sqrt(Q0),
                           n_qmc=qmc[0], n_rep=qmc[1], seed=qmc[2])  # fmt: skip
        i = se.input_side(target, o.m_hat, o.q_hat, o.a_hat, lam, "nuclear", Q0=Q0)
        cos = min(i.m / math.sqrt(i.q * Q0), 1 - 1e-15)
        y_new = np.array([np.arctanh(cos), math.log(i.v / math.sqrt(i.q))])
        res = float(np.max(np.abs(y_new - y)))
        y = damping * y + (1 - damping) * y_new
        if res < tol:
            break
    return y, res, it


@pytest.mark.parametrize("max_iter", [3, 40])
def test_hardmax_state_evolution_is_the_damped_loop_it_replaced(max_iter):
    """The fixed ray within 1e-12 of the old loop's; cut at max_iter, the same maps and
    residual, and NaN fields (the failure policy of the solvers)."""
    task, target = tasks.Hardmax(T=2), targets.Wishart(0.5)
    kw = dict(lam=0.5, init=(0.4, 0.5), tol=1e-3, max_iter=max_iter, damping=0.4)
    qmc = (2048, 4, 0)
    with pytest.warns(RuntimeWarning) if max_iter == 3 else contextlib.nullcontext():
        r = hse.solve(task, target, 0.6, n_qmc=qmc[0], n_rep=qmc[1], seed=qmc[2], **kw)
    y, res, it = _old_hardmax_loop(task, target, 0.6, kw["lam"], kw["init"], qmc, kw["tol"],
                                   max_iter, kw["damping"])  # fmt: skip
    assert r.n_iter == it and r.converged == (res < kw["tol"]) == (max_iter == 40)
    if max_iter == 40:
        np.testing.assert_allclose([r.cos_theta, r.rho], [np.tanh(y[0]), np.exp(y[1])], rtol=1e-12)
    else:
        assert math.isnan(r.cos_theta) and math.isnan(r.rho) and math.isnan(r.test_error)
    assert r.residual == pytest.approx(res, rel=1e-9, abs=1e-13)  # a difference of iterates
