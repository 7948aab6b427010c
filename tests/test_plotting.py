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


def _luminance(colour) -> float:
    r, g, b, _ = matplotlib.colors.to_rgba(colour)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_palette_colours_are_valid_and_tell_curves_apart():
    """Each semantic colour parses; the penalties' colours differ pairwise by a visible
    amount (no two near-identical greens), the sizes' colours darken monotonically with d,
    and theory, simulation and threshold are three different colours."""
    pal = plotting.PALETTE
    rgb = {c: np.array(matplotlib.colors.to_rgb(c)) for c in (*pal.lam, *pal.d, pal.theory)}
    assert len(pal.lam) >= 4 and len(pal.d) >= 4
    gaps = [
        np.linalg.norm(rgb[a] - rgb[b]) for i, a in enumerate(pal.lam) for b in pal.lam[i + 1 :]
    ]
    assert min(gaps) > 0.3, gaps
    lum = [_luminance(c) for c in pal.d]
    assert all(a > b + 0.05 for a, b in zip(lum[:-1], lum[1:], strict=True)), lum
    colours = {matplotlib.colors.to_hex(c) for c in (pal.theory, pal.simulation, pal.threshold)}
    assert len(colours) == 3
    assert pal.lam[0] == matplotlib.colors.to_hex(
        plotting.BOOK_STYLE["axes.prop_cycle"].by_key()["color"][0]
    )
