"""The book's figure style and the plots every chapter shares.

Theory is drawn as lines, simulations as markers with error bars, thresholds as
dotted vertical lines; every function draws on a given ``matplotlib`` axis and
returns it, so chapters compose figures freely.
"""

from __future__ import annotations

import matplotlib as mpl
import numpy as np

BOOK_STYLE = {
    "figure.figsize": (6.0, 3.8),
    "figure.dpi": 100,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": mpl.cycler(
        color=["#1b6ca8", "#d1495b", "#2e8b57", "#edae49", "#6a4c93", "#555555"]
    ),
    "lines.linewidth": 1.8,
    "lines.markersize": 5,
    "legend.frameon": False,
    "font.size": 10,
}


def use_book_style() -> None:
    """Apply the book's matplotlib style to the current session."""
    mpl.rcParams.update(BOOK_STYLE)


def theory_and_simulation(
    ax,
    x_theory,
    y_theory,
    x_sim=None,
    y_sim=None,
    y_err=None,
    *,
    label=None,
    color=None,
    marker="o",
):
    """Draw a theory curve and, if given, simulation means with error bars in the same colour.

    ``y_sim`` may be a 1-d array of means (then ``y_err`` are their error bars)
    or a 2-d array ``(n_seeds, len(x_sim))`` from which the mean and the
    standard error of the mean are computed.
    """
    (line,) = ax.plot(x_theory, y_theory, color=color, label=label)
    if x_sim is not None and y_sim is not None:
        y_sim = np.asarray(y_sim, dtype=float)
        if y_sim.ndim == 2:
            n = y_sim.shape[0]
            y_err = y_sim.std(axis=0, ddof=1) / np.sqrt(n) if n > 1 else None
            y_sim = y_sim.mean(axis=0)
        ax.errorbar(
            x_sim,
            y_sim,
            yerr=y_err,
            fmt=marker,
            color=line.get_color(),
            capsize=2,
            linestyle="none",
        )
    return ax


def mark_threshold(ax, x, label=None, color="0.35"):
    """A dotted vertical line at a threshold, labelled in the legend."""
    ax.axvline(x, linestyle=":", color=color, linewidth=1.2, label=label)
    return ax


def eigenvalue_histogram(
    ax, eigenvalues, *, bins=40, label=None, color=None, zero_tol=1e-6, value_range=None
):
    """Density histogram of eigenvalues; the fraction at (numerically) zero goes in the label.

    Eigenvalues with ``|x| <= zero_tol * max|x|`` are counted as the atom at
    zero and left out of the histogram, whose area is then the non-zero fraction.
    """
    ev = np.asarray(eigenvalues, dtype=float)
    scale = np.max(np.abs(ev)) if ev.size else 1.0
    zero = np.abs(ev) <= zero_tol * scale
    frac0 = float(np.mean(zero))
    rest = ev[~zero]
    weights = np.full(rest.shape, 1.0 / (ev.size * 1.0))
    text = label if label is not None else "eigenvalues"
    if frac0 > 0:
        text = f"{text} (atom at 0: {frac0:.2f})"
    if rest.size:
        width_bins = np.histogram_bin_edges(rest, bins=bins, range=value_range)
        widths = np.diff(width_bins)[0]
        ax.hist(
            rest, bins=width_bins, weights=weights / widths, alpha=0.45, color=color, label=text
        )
    return ax
