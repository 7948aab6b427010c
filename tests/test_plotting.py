"""The shared plotting helpers draw what they claim (checked on the artists they create)."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from attnlib import plotting  # noqa: E402


def test_histogram_area_is_nonzero_fraction():
    # 30 exact zeros and 70 spread values: the bars must integrate to 0.7 and the
    # label must report the atom at zero.
    ev = np.concatenate([np.zeros(30), np.linspace(1.0, 2.0, 70)])
    fig, ax = plt.subplots()
    plotting.eigenvalue_histogram(ax, ev, bins=10, label="S")
    area = sum(p.get_height() * p.get_width() for p in ax.patches)
    assert abs(area - 0.7) < 1e-12
    assert "atom at 0: 0.30" in ax.patches[0].get_label()
    plt.close(fig)


def test_theory_and_simulation_sem_from_seeds():
    rng = np.random.default_rng(0)
    sims = rng.normal(size=(5, 3))
    fig, ax = plt.subplots()
    plotting.theory_and_simulation(ax, [0, 1, 2], [0, 0, 0], [0, 1, 2], sims)
    bars = ax.containers[0]
    y = bars.lines[0].get_ydata()
    np.testing.assert_allclose(y, sims.mean(axis=0))
    segs = bars.lines[2][0].get_segments()
    half = np.array([abs(s[1, 1] - s[0, 1]) / 2 for s in segs])
    np.testing.assert_allclose(half, sims.std(axis=0, ddof=1) / np.sqrt(5))
    plt.close(fig)
