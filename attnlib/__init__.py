"""attnlib: high-dimensional theory of single-head tied attention.

Importing attnlib switches JAX to float64 (``jax_enable_x64``): every theory
computation in the library is done in double precision. Training routines
take an explicit ``dtype`` when single precision is wanted for speed.

Importing attnlib also turns on JAX's persistent compilation cache, so that a new
process reads the compiled state-evolution engine from disk instead of compiling
it again (the first ``se.solve`` of a script: tens of seconds of compilation
without the cache, a few with it; ``benchmarks/fresh_process.py`` measures it).
The cache lives in ``$XDG_CACHE_HOME/attnlib/jax`` (default
``~/.cache/attnlib/jax``), or in ``$ATTNLIB_JAX_CACHE`` when that names a folder;
programs that take at least 0.2 s to compile are stored (unless
``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS`` says otherwise). It is set only when
the user has not configured a cache (``JAX_COMPILATION_CACHE_DIR`` or
``jax.config.update("jax_compilation_cache_dir", ...)`` before importing attnlib),
and ``ATTNLIB_JAX_CACHE=off`` leaves it off. Import attnlib before compiling
anything: JAX fixes its cache at the first compilation. Delete the folder to clear it.

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
- :mod:`attnlib.finite_size`  extrapolation of simulations in 1/d (a + b/d, its error, chi2)
- :mod:`attnlib.bayes`        the Bayes-optimal limit: state evolution, RIE denoiser, GAMP-RIE
- :mod:`attnlib.book`         helpers of the book's chapters (numbers glued into the prose)

Conventions and notation: the book's "Notation and conventions" page (``book/notation.md``).
"""

import os
import pathlib

import jax

jax.config.update("jax_enable_x64", True)

_MIN_COMPILE_TIME_S = 0.2  # the Makefile's value: the engine's small programs too


def _default_cache_dir():
    """attnlib's compilation-cache folder, or None (turned off, or configured by the
    user through JAX)."""
    setting = os.environ.get("ATTNLIB_JAX_CACHE", "").strip()
    if setting.lower() == "off" or jax.config.jax_compilation_cache_dir:
        return None
    if setting:
        return pathlib.Path(setting).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache"
    return pathlib.Path(base) / "attnlib" / "jax"


def _enable_compilation_cache():
    folder = _default_cache_dir()
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only home: run without the cache
        return
    jax.config.update("jax_compilation_cache_dir", str(folder))
    if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", _MIN_COMPILE_TIME_S)


_enable_compilation_cache()

__version__ = "0.1.0"
