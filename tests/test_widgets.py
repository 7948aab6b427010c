"""The explorers draw the state-evolution predictions they claim and react to their sliders.

These are wiring tests: the numbers on the axes must be those of independent
calls to attnlib.se / attnlib.spectrum with the same settings, so a figure that
silently plots the wrong quantity (or stale data after a slider moves) fails.
The linear task keeps them fast (closed-form channel).
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from attnlib import scaling, se, spectrum, targets, tasks, thresholds, widgets  # noqa: E402

LINEAR = widgets.ERMSettings(task="linear", T=1, alpha=0.4, lam=0.1, n_alpha=4, alpha_max=0.8)


def test_erm_figure_plots_the_se_curve_and_threshold():
    fig = widgets.erm_figure(LINEAR)
    ax = fig.axes[0]
    test_line = ax.get_lines()[0]
    alphas = test_line.get_xdata()
    np.testing.assert_allclose(alphas, [0.2, 0.4, 0.6, 0.8])
    task, target = tasks.Linear(T=1), targets.Wishart(0.5)
    expected = [se.solve(task, target, a, 0.1).test_error for a in alphas]
    # The curve is warm-started along alpha, these are cold solves: both stop when
    # (m, q, v) change by less than the SE tolerance 1e-6 (relative) per map, so they
    # may differ at ~1e-5; a wrong quantity or stale data would differ at O(1).
    np.testing.assert_allclose(test_line.get_ydata(), expected, rtol=1e-4)
    vlines = [ln.get_xdata()[0] for ln in ax.get_lines() if ln.get_linestyle() == ":"]
    assert pytest.approx(thresholds.perfect_recovery(task, target)) in vlines
    plt.close(fig)


def test_erm_figure_spectrum_panel_matches_learned_spectrum():
    fig = widgets.erm_figure(LINEAR)
    law = spectrum.learned_spectrum(
        targets.Wishart(0.5), se.solve(tasks.Linear(T=1), targets.Wishart(0.5), 0.4, 0.1)
    )
    line = fig.axes[1].get_lines()[0]
    # the explorer warm-starts its point from the curve: agreement to the SE tolerance
    np.testing.assert_allclose(line.get_ydata(), law.density, rtol=1e-4, atol=1e-6)
    assert f"{law.atom_at_zero:.2f}" in fig.axes[1].get_title()
    plt.close(fig)


def test_explorer_redraws_on_slider_change():
    pytest.importorskip("ipywidgets")
    explorer = widgets.ERMExplorer(LINEAR)
    drawn = []
    original = explorer.figure

    def spy(settings, fig=None):
        drawn.append(settings)
        return original(settings, fig)

    explorer.figure = spy
    try:
        box = explorer.widget()
        sliders = {c.description: c for row in box.children[:2] for c in row.children}
        assert {"alpha", "lambda", "kappa0", "noise", "T", "beta", "penalty", "task"} <= set(
            sliders
        )
        sliders["alpha"].value = 0.5
    finally:
        plt.close("all")
    assert drawn and drawn[-1].alpha == pytest.approx(0.5)


def test_explorer_cache_is_bounded_and_owned():
    """Each explorer owns its cache; it never holds more than its size."""
    a, b = widgets.ERMExplorer(LINEAR, cache_size=2), widgets.ERMExplorer(LINEAR)
    for lam in (0.1, 0.2, 0.3):
        plt.close(a.figure(LINEAR._replace(lam=lam)))
    assert len(a.solver.curves) == 2 and len(b.solver.curves) == 0
    cache = widgets.BoundedCache(2)
    for k in range(5):
        cache.put(k, k)
    assert len(cache) == 2 and cache.get(4) == 4 and cache.get(0) is None


def test_make_task_rejects_unknown_kind():
    with pytest.raises(ValueError, match="kind"):
        widgets.make_task("regression", 2, 1.0, 0.0)


def test_scaling_explorer_warm_start_from_another_lam_keeps_the_fixed_points():
    """Moving lam starts each alpha from the cached point at the previous lam: the curve
    must be the one a fresh explorer computes along alpha. Tolerance 1e-4 relative on
    the excess risk: the SE stops at a change of 1e-6 per map in (m/Q0, log q, log v),
    which moved the excess by at most 3e-5 on this grid (against tol 1e-10). The grid
    reaches full rank, where starts from another lam were once accepted 3 % (lam 0.02)
    and a factor 10 (lam 0.001) away from the fixed point; full-rank points now start
    from the other lam too, so this is the test that the mse check holds them."""
    s = widgets.ScalingSettings()
    moved = widgets.ScalingExplorer(s)
    moved.curve(s)
    for lam in (0.02, 0.001):
        warm = moved.curve(s._replace(lam=lam))
        fresh = widgets.ScalingExplorer().curve(s._replace(lam=lam))
        assert warm.converged.all() and fresh.converged.all()
        np.testing.assert_allclose(warm.excess, fresh.excess, rtol=1e-4)
        np.testing.assert_array_equal(warm.n_recovered, fresh.n_recovered)
    assert len(moved.curves) == 3


def test_lam_starts_move_v_below_full_rank_and_keep_it_at_full_rank():
    """The scaling explorer's starts at a new lam: v scales like 1 / lam where the learned
    matrix is not full rank, is kept at full rank, and a point that did not converge
    gives no start. The warm start's prox points and history travel with the new x."""
    target, task = scaling.PowerLawModes(gamma=1.5, n_modes=8), tasks.Linear(T=1)
    (low, low_warm), (full, full_warm) = (
        se.solve(task, target, a, 0.01, return_warm=True) for a in (0.1, 1.0)
    )
    assert low.rank_fraction < 0.999 and full.rank_fraction >= 0.999
    failed = low._replace(converged=False)
    points = [(low, low_warm), (full, full_warm), (failed, None)]
    starts = widgets._lam_starts(points, 0.01, 0.02)
    assert starts[2] is None
    np.testing.assert_allclose(starts[0].x, (low.m, low.q, low.v / 2), rtol=1e-15)
    np.testing.assert_allclose(starts[1].x, (full.m, full.q, full.v), rtol=1e-15)
    assert starts[0].history is low_warm.history and starts[1].prox is full_warm.prox
