"""Time one explorer update (budget: under 1 s, DESIGN.md) and print it as a ratio to the budget.

An update after moving ``alpha`` re-solves one state-evolution point (warm-started)
and redraws; the learning curve is cached per task, target and ``lam``. Moving ``lam``
in the scaling explorer recomputes its whole (closed-form) curve. We time the second
draw (the first includes JIT compilation and fills the caches) for each explorer.

    python benchmarks/widget_speed.py
"""

import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from attnlib import widgets  # noqa: E402

BUDGET_S = 1.0


def timed(draw, settings):
    t0 = time.perf_counter()
    plt.close(draw(settings))
    return time.perf_counter() - t0


def main():
    cases = [
        ("erm (seq2seq T=2)", widgets.erm_figure, widgets.ERMSettings(), "alpha", 0.35),
        (
            "erm (linear T=1)",
            widgets.erm_figure,
            widgets.ERMSettings(task="linear", T=1),
            "alpha",
            0.35,
        ),
        (
            "spectrum (seq2seq T=2)",
            widgets.spectrum_figure,
            widgets.SpectrumSettings(),
            "alpha",
            0.35,
        ),
        ("scaling (linear)", widgets.scaling_figure, widgets.ScalingSettings(), "lam", 0.02),
    ]
    for name, draw, settings, field, new in cases:
        first = timed(draw, settings)
        update = timed(draw, settings._replace(**{field: new}))
        print(
            f"{name:26s} first draw {first:6.2f} s   update {update:6.2f} s   "
            f"update / budget = {update / BUDGET_S:5.2f}"
        )


if __name__ == "__main__":
    main()
