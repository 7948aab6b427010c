"""Test-wide settings: float64 JAX (theory is computed in double precision)
and a non-interactive matplotlib backend."""

import matplotlib

matplotlib.use("Agg")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
