"""The book's figure style and the plots every chapter shares.

Theory is drawn as lines, simulations as markers with error bars, thresholds as
dotted vertical lines; every function draws on a given ``matplotlib`` axis and
returns it, so chapters compose figures freely. :data:`PALETTE` gives each kind of
curve one colour across the book: the theory, the simulation, each penalty ``lam`` of
a family (in increasing order) and each size ``d`` (small to large, light to dark).
"""

from __future__ import annotations

from typing import NamedTuple

import matplotlib as mpl
import numpy as np

from attnlib import _checks

__all__ = [
    "BOOK_STYLE",
    "PALETTE",
    "Palette",
    "eigenvalue_histogram",
    "mark_threshold",
    "theory_and_simulation",
    "use_book_style",
]

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


class Palette(NamedTuple):
    """The book's semantic colours (matplotlib colour strings).

    Attributes:
        theory: a single theory curve (a line), e.g. the Bayes-optimal error.
        simulation: simulation markers when one data series is shown.
        threshold: dotted vertical lines marking a threshold.
        lam: one colour per penalty of a family, smallest ``lam`` first (distinct hues).
        d: one colour per size, smallest ``d`` first (one hue, light to dark).
    """

    theory: str = "#222222"
    simulation: str = "#1b6ca8"
    threshold: str = "0.35"
    lam: tuple[str, ...] = ("#1b6ca8", "#d1495b", "#2e8b57", "#edae49", "#6a4c93")
    d: tuple[str, ...] = ("#9ecae1", "#4292c6", "#2171b5", "#08519c", "#08306b")


PALETTE = Palette()


def use_book_style() -> None:
    """Apply the book's matplotlib style to the current session."""
    mpl.rcParams.update(BOOK_STYLE)


def _axes(ax):
    if not all(hasattr(ax, m) for m in ("plot", "errorbar", "axvline", "hist")):
        raise ValueError(f"ax must be a matplotlib Axes, got {type(ax)!r}")
    return ax


def _curve(name: str, values, n: int | None = None, ndim: int = 1, against: str = "") -> np.ndarray:
    a = np.asarray(_checks.finite_array(name, values), dtype=float)
    if a.ndim != ndim or a.shape[-1] < 1:
        raise ValueError(f"{name} must be a non-empty {ndim}-d array, got shape {a.shape}")
    if n is not None and a.shape[-1] != n:
        raise ValueError(
            f"{name} must have {n} points along its last axis (as {against}), got shape {a.shape}"
        )
    return a


def _simulation(x_sim, y_sim, y_err):
    """Checked ``(x, mean, error bar)`` of the simulation points (module docstring)."""
    x = _curve("x_sim", x_sim)
    y = np.asarray(_checks.numeric_array("y_sim", y_sim, kinds="biuf"), dtype=float)
    y = _curve("y_sim", y, x.size, ndim=y.ndim if y.ndim in (1, 2) else 1, against="x_sim")
    if y.ndim == 2:
        n = y.shape[0]
        y_err = y.std(axis=0, ddof=1) / np.sqrt(n) if n > 1 else None
        y = y.mean(axis=0)
    elif y_err is not None:
        y_err = np.asarray(_checks.finite_array("y_err", y_err), dtype=float)
        if np.any(y_err < 0) or y_err.shape not in ((), (x.size,), (2, x.size)):
            raise ValueError(f"y_err must be >= 0 with shape ({x.size},), got {y_err.shape}")
    return x, y, y_err


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
    _axes(ax)
    x_theory = _curve("x_theory", x_theory)
    y_theory = _curve("y_theory", y_theory, x_theory.size, against="x_theory")
    (line,) = ax.plot(x_theory, y_theory, color=color, label=label)
    if x_sim is not None and y_sim is not None:
        x_sim, y_sim, y_err = _simulation(x_sim, y_sim, y_err)
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
    """A dotted vertical line at a threshold ``x`` (finite), labelled in the legend."""
    x = _checks.real("x", x)
    if not np.isfinite(x):
        raise ValueError(f"x must be finite, got {x}")
    _axes(ax).axvline(x, linestyle=":", color=color, linewidth=1.2, label=label)
    return ax


def eigenvalue_histogram(
    ax, eigenvalues, *, bins=40, label=None, color=None, zero_tol=1e-6, value_range=None
):
    """Density histogram of eigenvalues; the fraction at (numerically) zero goes in the label.

    Eigenvalues with ``|x| <= zero_tol * max|x|`` are counted as the atom at
    zero and left out of the histogram, whose area is then the non-zero fraction.
    """
    _axes(ax)
    ev = _curve("eigenvalues", eigenvalues)
    bins = _checks.integer("bins", bins, 1)
    zero_tol = _checks.nonnegative("zero_tol", zero_tol)
    if value_range is not None:
        value_range = tuple(_curve("value_range", value_range, 2, against="(lo, hi)"))
        if not value_range[0] < value_range[1]:
            raise ValueError(f"value_range must be (lo, hi) with lo < hi, got {value_range}")
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
