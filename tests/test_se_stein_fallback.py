"""Where the state evolution with the pathwise ``m_hat`` finds no fixed point, ``se.solve``
searches again with the Stein form (``Channel.stein_form``; :mod:`attnlib.se.output`),
and its answer is the Stein-form solve's (``SESettings(m_hat="stein")``), computed
independently of the fallback."""

import numpy as np
import pytest

from attnlib import se, tasks
from attnlib.se import drivers, robust
from attnlib.se import output as se_output
from attnlib.targets import Wishart

FIELDS = ("m", "q", "v", "test_error", "mse", "train_loss")


def test_failed_pathwise_search_is_retried_with_the_stein_form(monkeypatch):
    """A search that fails whenever ``m_hat`` is pathwise (``robust.find`` made to fail
    there, after 7 maps): the solve converges with the Stein form, to the numbers of the
    Stein-form solve, and counts the failed maps. Seq2seq T = 2 at 2048 points, no
    correction (a few seconds)."""
    task, target, kw = tasks.Seq2Seq(T=2), Wishart(0.5), dict(n_qmc=2048, refine=1)
    real_find, channels_seen = robust.find, []

    def find(pb, lam, start, settings):
        channels_seen.append(pb.channel)
        if se_output.pathwise_m_hat(pb.channel):
            return robust.Found(None, None, 7, 1e-3)
        return real_find(pb, lam, start, settings)

    monkeypatch.setattr(drivers.robust, "find", find)
    r = se.solve(task, target, 0.5, 0.1, **kw)
    monkeypatch.setattr(drivers.robust, "find", real_find)
    assert r.converged
    assert [c.stein_form for c in channels_seen] == [False, True]
    ref = se.solve(task, target, 0.5, 0.1, m_hat="stein", **kw)
    assert r.n_iter == ref.n_iter + 7
    for f in FIELDS:
        assert getattr(r, f) == getattr(ref, f), f


def test_a_converged_search_keeps_the_pathwise_form(monkeypatch):
    """Where the pathwise search converges, no second search is made."""
    real_find, calls = robust.find, []

    def find(pb, lam, start, settings):
        calls.append(pb.channel.stein_form)
        return real_find(pb, lam, start, settings)

    monkeypatch.setattr(drivers.robust, "find", find)
    r = se.solve(tasks.Seq2Seq(T=2), Wishart(0.5), 0.5, 0.1, n_qmc=2048, refine=1)
    assert r.converged and calls == [False]


def test_stein_setting_reaches_the_channel_and_skips_the_fallback(monkeypatch):
    """``m_hat="stein"``: the one search runs on a channel with ``stein_form`` (the form
    the engine reads when it traces), and a failed search is not searched again."""
    real_find, calls = robust.find, []

    def find(pb, lam, start, settings):
        calls.append(pb.channel.stein_form)
        return real_find(pb, lam, start, settings)

    monkeypatch.setattr(drivers.robust, "find", find)
    r = se.solve(tasks.Seq2Seq(T=2), Wishart(0.5), 0.5, 0.1, n_qmc=2048, refine=1, m_hat="stein")
    assert r.converged and calls == [True]
    monkeypatch.setattr(drivers.robust, "find", lambda *a: robust.Found(None, None, 7, 1e-3))
    with pytest.warns(se.SEConvergenceWarning):
        r = se.solve(tasks.Seq2Seq(T=2), Wishart(0.5), 0.5, 0.1, n_qmc=2048, m_hat="stein")
    assert not r.converged and r.n_iter == 7


@pytest.mark.slow
def test_paper_beta2_point_converges_through_the_fallback():
    """Seq2seq beta 2, noise 0.25 on the target, Wishart(1/2), lam 0.01, alpha 0.4 (a point
    of the paper's beta = 2 curve): the pathwise search stalls at a residual of about 5e-5
    (a prox that jumps between minima), and the default solve returns the Stein-form
    solve's fixed point (about 90 s)."""
    task = tasks.Seq2Seq(T=2, noise=0.25, noise_on="target", beta=2.0)
    r = se.solve(task, Wishart(0.5), 0.4, 0.01)
    assert r.converged
    ref = se.solve(task, Wishart(0.5), 0.4, 0.01, m_hat="stein")
    for f in FIELDS:
        assert np.isclose(getattr(r, f), getattr(ref, f), rtol=1e-12, atol=0), f
