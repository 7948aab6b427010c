"""attnlib's one switch of JAX's process configuration: :func:`configure_jax`.

Importing attnlib changes no JAX setting. The theory computes in double precision,
so it needs ``jax_enable_x64``; :func:`configure_jax` turns it on, together with
JAX's persistent compilation cache, and :func:`require_float64` is the check with
which the theory refuses to run in float32 (naming the switch).
"""

from __future__ import annotations

import os
import pathlib
import warnings

import jax

try:  # JAX's compilation-cache module (private: its state is read, never changed)
    from jax._src import compilation_cache as _jax_cache
except ImportError:  # pragma: no cover - another JAX layout
    _jax_cache = None

from attnlib import _compiled_programs

__all__ = ["configure_jax", "float64_enabled", "require_float64"]

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


def _enable_compilation_cache() -> None:
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


def configure_jax() -> None:
    """Set this process up for attnlib's theory: float64 and the compilation cache.

    Call it once, at the top of a script or notebook, before anything is compiled with
    JAX. It turns on ``jax_enable_x64`` (the theory computes in double precision; the
    training routines take an explicit ``dtype``) and JAX's persistent compilation cache
    in ``$XDG_CACHE_HOME/attnlib/jax`` (default ``~/.cache/attnlib/jax``), or in
    ``$ATTNLIB_JAX_CACHE`` when that names a folder (``off``: no cache); programs that take
    at least 0.2 s to compile are stored (unless
    ``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS`` says otherwise). A cache configured
    through JAX (``JAX_COMPILATION_CACHE_DIR`` or ``jax_compilation_cache_dir``) is left as
    it is. It also starts the guard of :mod:`attnlib._compiled_programs`. Calling it again
    changes nothing.

    Called after JAX has compiled something in this process, it still switches, but warns
    (``RuntimeWarning``): arrays made before keep their float32 dtype, and programs
    compiled before are not in the cache (or the cache is not used at all).
    """
    compiled = _compiled_before()
    changes = not jax.config.jax_enable_x64 or _default_cache_dir() is not None
    jax.config.update("jax_enable_x64", True)
    _enable_compilation_cache()
    _compiled_programs.install()
    if compiled and changes:
        warnings.warn(
            "attnlib.configure_jax() was called after JAX compiled its first program in "
            f"this process: arrays made before keep their float32 dtype, {_cache_state()}. "
            "Call it first, before any JAX work (the top of the script, the notebook's first "
            "cell).",
            RuntimeWarning,
            stacklevel=2,
        )


def _compiled_before() -> bool:
    """Whether JAX has compiled a program in this process: JAX decides whether it uses its
    persistent cache at its first compilation and records that it did (``_cache_checked``)."""
    cc = _jax_cache
    return bool(getattr(cc, "_cache_checked", False))


def _cache_state() -> str:
    """What the late switch means for the compilation cache, read from JAX's state."""
    cc = _jax_cache
    folder = jax.config.jax_compilation_cache_dir
    if cc is None or folder is None:
        return "and the compilation cache is off"
    if getattr(cc, "_cache_checked", False) and not getattr(cc, "_cache_used", True):
        return "and JAX has turned its compilation cache off for this process (not used)"
    cache = getattr(cc, "_cache", None)
    path = getattr(cache, "_path", None)
    if path is not None and str(path).rstrip("/") != str(folder).rstrip("/"):
        return f"and JAX keeps its compilation cache in {path}, not in {folder}"
    return "and programs compiled before are not in the compilation cache"


def require_float64(what: str) -> None:
    """Raise a RuntimeError naming :func:`configure_jax` unless JAX is in float64 mode."""
    if not float64_enabled():
        raise RuntimeError(
            f"attnlib's theory computes in float64 ({what}), but JAX is in float32 mode "
            "(jax_enable_x64 is off): call attnlib.configure_jax() once at the start of "
            "the program (or jax.config.update('jax_enable_x64', True))"
        )


def float64_enabled() -> bool:
    """Whether JAX is in float64 mode (``jax_enable_x64``) in this process."""
    return bool(jax.config.jax_enable_x64)
