"""attnlib: high-dimensional theory of single-head tied attention.

Importing attnlib changes no JAX configuration. The theory computes in double
precision: call :func:`attnlib.configure_jax` once, at the top of a script or
notebook and before anything is compiled, to turn on ``jax_enable_x64`` and JAX's
persistent compilation cache. A theory function called in float32 mode raises a
RuntimeError that names the switch; the data and training routines run in either mode.

::

    import attnlib

    attnlib.configure_jax()  # float64 and the compilation cache, for this process

A process-wide switch, not float64 scoped to each call: arrays made inside
``jax.enable_x64(True)`` are cut to float32 outside it, and the simulations need
float64 as much as the state evolution does.

Modules and packages (one idea per file; every public name is importable from the
module or package named here):

- :mod:`attnlib.tasks`        the attention-indexed model: tasks, noise, sampling
- :mod:`attnlib.targets`      target matrices S0 and their limiting spectra
- :mod:`attnlib.spectral_map` the spectral map f(x) = (c x - tau)_+ (or c x / (1 + tau))
- :mod:`attnlib.train`        ERM solvers on data (Adam on W, direct S, proximal S)
- :mod:`attnlib.rmt`          free convolution with the semicircle, outliers, divergence
- :mod:`attnlib.channels`     output channels: proximal maps and their derivatives
- :mod:`attnlib.amp`          GAMP on a finite data set
- :mod:`attnlib.se`           state evolution and learning curves
- :mod:`attnlib.iterate`      the one fixed-point solver (damped Anderson) and a scalar root finder
- :mod:`attnlib.qmc`          quasi-Monte Carlo normal points: one cache, one seeding rule
- :mod:`attnlib.thresholds`   perfect recovery, interpolation, minimal width
- :mod:`attnlib.spectrum`     predicted spectra of the learned weights
- :mod:`attnlib.scaling`      recovered modes, scaling laws, the LASSO comparison
- :mod:`attnlib.sweep`        parameter grids run on Dask, with a result cache
- :mod:`attnlib.finite_size`  extrapolation of simulations in 1/d (a + b/d, its error, chi2)
- :mod:`attnlib.bayes`        the Bayes-optimal limit: state evolution, RIE denoiser, GAMP-RIE
- :mod:`attnlib.book`         helpers of the book's chapters (numbers glued into the prose)

Conventions and notation: the book's "Notation and conventions" page (``book/notation.md``).
"""

from attnlib._jax_config import configure_jax

__all__ = ["__version__", "configure_jax"]

__version__ = "0.1.0"
