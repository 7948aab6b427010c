"""attnlib: high-dimensional theory of single-head tied attention.

Importing attnlib switches JAX to float64 (``jax_enable_x64``): every theory
computation in the library is done in double precision. Training routines
take an explicit ``dtype`` when single precision is wanted for speed.

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
- :mod:`attnlib.thresholds`   perfect recovery, interpolation, minimal width
- :mod:`attnlib.spectrum`     predicted spectra of the learned weights
- :mod:`attnlib.scaling`      recovered modes, scaling laws, the LASSO comparison
- :mod:`attnlib.sweep`        parameter grids run on Dask, with a result cache
- :mod:`attnlib.bayes`        the Bayes-optimal limit: state evolution, RIE denoiser, GAMP-RIE
- :mod:`attnlib.book`         helpers of the book's chapters (numbers glued into the prose)

Conventions and notation: the book's "Notation and conventions" page (``book/notation.md``).
"""

import jax

jax.config.update("jax_enable_x64", True)

__version__ = "0.1.0"
