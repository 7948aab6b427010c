"""The renamed spellings of issue 37 ("one name for each thing") and issue 36 (the code
follows the notation page): the new spelling works, the old one still gives the same
numbers for one release with a ``DeprecationWarning`` naming the new one."""

import math
import warnings

import pytest

from attnlib import se, targets, tasks

TARGET = targets.Wishart(0.5)


def _quiet(fn, *args, **kw):
    """``fn(...)`` with every warning recorded, and the warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(*args, **kw)
    return out, caught


def _deprecations(caught):
    return [w for w in caught if issubclass(w.category, DeprecationWarning)]


def test_one_result_type_for_the_optimal_lam():
    """``search_lambda`` is the one search (a ``LambdaSearch``). Linear ``T = 1``: a few
    closed-form solves."""
    task = tasks.Linear(T=1, noise=0.3)
    kw = dict(bounds=(0.2, 1.0), xatol=0.5)
    found, caught = _quiet(se.search_lambda, task, TARGET, 0.5, "frobenius", **kw)
    assert isinstance(found, se.LambdaSearch) and _deprecations(caught) == []
    assert 0.2 <= found.lam <= 1.0 and math.isfinite(found.result.test_error)


def test_on_fail_is_deprecated_and_the_one_policy_holds():
    """The one failure policy: NaN, ``converged=False`` and an ``SEConvergenceWarning``,
    with no ``on_fail``; ``on_fail="raise"`` (and the keyword itself) still work for one
    release with a ``DeprecationWarning``. One SE map of the linear task."""
    task = tasks.Linear(T=1, noise=0.1)
    r, caught = _quiet(se.solve, task, TARGET, 0.5, 0.1, max_iter=1)
    assert not r.converged and math.isnan(r.mse)
    assert any(issubclass(w.category, se.SEConvergenceWarning) for w in caught)
    assert _deprecations(caught) == []
    with pytest.warns(DeprecationWarning, match="on_fail"), pytest.raises(RuntimeError):
        se.solve(task, TARGET, 0.5, 0.1, max_iter=1, on_fail="raise")
    with pytest.warns(DeprecationWarning, match="on_fail"):
        se.solve(task, TARGET, 0.5, 0.1, max_iter=1, settings=se.SESettings(on_fail="raise"),
                 on_fail="warn")  # fmt: skip
    assert "deprecated" in se.SESettings.__doc__.split("on_fail")[1][:80]


def test_gamp_starts_are_spelled_s_init():
    """GAMP's start is ``S_init`` wherever a GAMP takes one (``amp.gamp``,
    ``amp.robust_gamp`` through its keywords, ``hardmax.gamp``, ``train.train_convex``);
    ``S0`` is the target's symbol only (``bayes.gamp_rie``'s ``S0`` is the true target,
    recorded in its trace)."""
    import inspect

    from attnlib import amp, bayes, hardmax, train

    for fn in (amp.gamp, hardmax.gamp, train.train_convex):
        params = inspect.signature(fn).parameters
        assert "S_init" in params and "S0" not in params, fn.__qualname__
    assert "S_init" not in inspect.signature(bayes.gamp_rie).parameters
    assert "true target" in bayes.gamp_rie.__doc__


def test_projection_output_is_the_zero_scale_channel_output():
    """GAMP's output step is a channel's method: the hardmax projection is
    ``Channel.gamp_output`` of the zero-scale channel (the channel of the hardmax state
    evolution); its output equals the channel's projection computed by hand
    (``channels.hardmax.projection``) on random inputs."""
    import numpy as np

    from attnlib import channels

    task = tasks.Hardmax(T=2)
    zero_scale = channels.for_task(task).at_zero_scale()
    assert zero_scale.gamp_budgets(4) == (None,)
    rng = np.random.default_rng(0)
    omega = rng.normal(size=(50, 3))
    Y, _ = zero_scale.labels(rng.normal(size=(50, 3)), np.zeros((50, 0)))
    V = np.array([2.0, 1.0, 2.0]) * 0.3
    ref = channels.hardmax.projection(task, Y, omega, np.broadcast_to(V, omega.shape))
    out, ok = zero_scale.gamp_output(Y, omega, V, None)
    assert bool(ok) and np.array_equal(out.g, ref.g) and np.array_equal(out.dg, ref.dg)


def test_overlap_density_takes_theta_for_the_target_eigenvalue():
    """``spectrum.overlap_density(target, Delta, x, theta)``: ``theta`` is a target
    eigenvalue (the notation page's theta_i; ``lam`` is the penalty only)."""
    import numpy as np

    from attnlib import spectrum

    x = np.linspace(0.2, 2.0, 7)
    new, caught = _quiet(spectrum.overlap_density, TARGET, 0.5, x, theta=1.3)
    assert _deprecations(caught) == [] and np.all(new > 0)
    assert (spectrum.overlap_density(TARGET, 0.5, x, 1.3) == new).all()
    with pytest.raises(TypeError, match="lam"):
        spectrum.overlap_density(TARGET, 0.5, x, lam=1.3)


def test_hardmax_cosine_is_cos_theta():
    """The hardmax ray's cosine ``m / sqrt(q Q0)`` is ``cos_theta`` (cos Theta of the
    notation page; gamma is the power-law exponent only). The cosine is checked against the
    ray's own overlaps: ``test_error_from_overlaps`` at ``m = cos_theta Q0`` is its test
    error."""
    from attnlib import hardmax

    task = tasks.Hardmax(T=2)
    r = hardmax.solve(task, TARGET, 0.5, 1.0, n_qmc=1024, max_iter=10, tol=0.05)
    assert "cos_theta" in r._fields and "gamma" not in r._fields and 0 < r.cos_theta < 1
    q0 = TARGET.Q0
    assert r.test_error == se.test_error_from_overlaps(
        task, q0, r.cos_theta * q0, q0, n_qmc=1 << 15
    )
    tr = hardmax.trajectory(task, TARGET, 0.5, 1.0, 1, start=(0.5, 0.3), n_qmc=1024)
    assert tr._fields == ("cos_theta", "rho")


def test_scaling_exponents_are_nu_and_zeta():
    """The notation page's nu (penalty schedule ``lam ~ alpha^{-nu}``) and zeta
    (``e - e0 ~ alpha^{-zeta}``) are the code's names: ``LamSchedule.nu``,
    ``threshold_window(target, nu, ...)``, ``ExponentPrediction.zeta``. Values checked
    against the closed forms: ``lam0 (alpha / alpha_ref)^{-nu}`` and the threshold phase
    ``zeta = (1 + nu)(2 - 1/gamma)``."""
    from attnlib import scaling

    s, caught = _quiet(scaling.LamSchedule, 2.0, nu=0.5, alpha_ref=4.0)
    assert _deprecations(caught) == [] and s.nu == 0.5 and s == scaling.LamSchedule(2.0, 0.5, 4.0)
    assert math.isclose(s(16.0), 2.0 * 4.0**-0.5) and not hasattr(s, "ell")
    p, caught = _quiet(scaling.predicted_exponent, 2.0, s)
    assert _deprecations(caught) == [] and p.phase == "threshold"
    assert math.isclose(p.zeta, 1.5 * 1.5) and "f" not in p._fields
    tg = scaling.PowerLawModes(gamma=1.5, n_modes=3)
    new = scaling.threshold_window(tg, 0.0, 3, 1, 2, ratio=4.0)
    assert scaling.threshold_window(tg, nu=0.0, m_eff=3, k_lo=1, k_hi=2, ratio=4.0) == new


def test_train_settings_one_type_and_max_iter_for_every_solver():
    """``TrainSettings`` holds the settings of the three training solvers, and their
    keywords are shorthands for its fields: the same run, bitwise, whichever way it is
    given. The iteration budget is ``max_iter`` everywhere. d = 4, 12 sequences, 20
    steps."""
    import jax
    import numpy as np

    from attnlib import train

    key = jax.random.PRNGKey(0)
    task = tasks.Linear(T=1, noise=0.1)
    data = tasks.make_dataset(key, task, np.asarray(TARGET.sample(key, 4)), 12)
    s = train.TrainSettings(max_iter=20, chunk=10, tol=0.0)
    runs = {
        "factorized": lambda **kw: train.train_factorized(key, task, data, 2, 0.1, **kw),
        "direct": lambda **kw: train.train_direct(task, data, 0.1, **kw),
        "convex": lambda **kw: train.train_convex(task, data, 0.1, **kw),
    }
    for name, run in runs.items():
        a, caught = _quiet(run, settings=s)
        b, _ = _quiet(run, max_iter=20, chunk=10, tol=0.0)
        assert _deprecations(caught) == [] and a.n_iter == 20, name
        assert (a.S == b.S).all() and a.residual == b.residual, name
    with pytest.raises(ValueError, match="settings"):
        runs["convex"](settings={"max_iter": 20})


def test_one_name_for_the_bayes_optimal_threshold():
    """``bayes.perfect_recovery`` is the Bayes-optimal threshold ``(kappa0 - kappa0^2/2) /
    m_eff`` (``inf`` for hardmax) and ``bayes.perfect_recovery_from_mmse`` its value from
    the state evolution; ``thresholds.perfect_recovery_se`` is the convex ERM's, another
    number; the old names ``thresholds.perfect_recovery_bayes`` and
    ``bayes.perfect_recovery_se`` are gone.
    The values are checked against the count at ``kappa0 = 0.5``, ``m_eff = 2``."""
    from attnlib import bayes, thresholds

    task = tasks.Seq2Seq(T=2)
    bo, caught = _quiet(bayes.perfect_recovery, task, TARGET)
    assert _deprecations(caught) == [] and bo == (0.5 - 0.125) / 2
    assert bayes.perfect_recovery(tasks.Hardmax(T=2), TARGET) == math.inf
    assert not hasattr(thresholds, "perfect_recovery_bayes")
    se_bo, caught = _quiet(bayes.perfect_recovery_from_mmse, task, TARGET)
    assert _deprecations(caught) == [] and abs(se_bo / bo - 1) < 1e-3
    assert thresholds.perfect_recovery_se(task, TARGET) > 1.1 * bo  # the ERM's: later
