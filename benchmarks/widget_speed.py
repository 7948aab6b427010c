"""Time the explorers: first draw (budget 5 s) and one update (budget 0.3 s), as ratios.

Each explorer is a fresh object (its own empty cache): the first draw computes its
learning curve (or point) and includes JIT compilation unless JAX's persistent
compilation cache is enabled; an update moves ``alpha`` (or ``lam`` in the scaling
explorer) and re-solves one state-evolution point warm-started from the explorer's
cache. The load average is printed (the machine may be shared). "with PNG" adds what
a live widget also pays: rendering the figure (``display`` in a kernel), so that work
moved from ``figure()`` to the renderer is still counted.

The scaling explorer's warm starts at a new ``lam`` (``widgets._lam_starts``), measured
on the default curve (12 alphas, lam 0.01 to 0.02, 0.005, 0.001 and 0.05): 62, 62, 96
and 78 state-evolution maps, against 87, 81, 102 and 91 when the full-rank points were
continued along ``alpha``; the mse within 6.3e-5 (relative) of fixed points solved to
``tol = 1e-10``, against 8.6e-5; ``v`` below full rank moved by a ratio 0.49-0.51 when
``lam`` doubles.

    python benchmarks/widget_speed.py
"""

import io
import os
import time

import jax
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import attnlib  # noqa: E402
from attnlib import widgets  # noqa: E402

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

FIRST_BUDGET_S = 5.0
UPDATE_BUDGET_S = 0.3


def timed(draw, settings, render=False):
    t0 = time.perf_counter()
    fig = draw(settings)
    if render:
        fig.savefig(io.BytesIO(), format="png")
    plt.close(fig)
    return time.perf_counter() - t0


def main():
    print(f"load average at start: {os.getloadavg()}")
    cache = jax.config.jax_compilation_cache_dir
    print(f"JAX persistent compilation cache: {cache or 'off (set JAX_COMPILATION_CACHE_DIR)'}")
    cases = [
        ("erm (seq2seq T=2)", widgets.ERMExplorer, widgets.ERMSettings(), "alpha", 0.35),
        ("erm (linear T=1)", widgets.ERMExplorer, widgets.ERMSettings(task="linear", T=1),
         "alpha", 0.35),
        ("spectrum (seq2seq T=2)", widgets.SpectrumExplorer, widgets.SpectrumSettings(),
         "alpha", 0.35),
        ("scaling (linear)", widgets.ScalingExplorer, widgets.ScalingSettings(), "lam", 0.02),
    ]  # fmt: skip
    for name, cls, settings, field, new in cases:
        explorer = cls(settings)
        first = timed(explorer.figure, settings)
        update = timed(explorer.figure, settings._replace(**{field: new}))
        rendered = timed(explorer.figure, settings._replace(**{field: 2 * new}), render=True)
        print(
            f"{name:24s} first draw {first:6.2f} s (/ budget {first / FIRST_BUDGET_S:5.2f})   "
            f"update {update:6.2f} s (/ budget {update / UPDATE_BUDGET_S:5.2f})   "
            f"next update with PNG {rendered:5.2f} s"
        )
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
