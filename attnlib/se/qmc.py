"""Deprecated: the QMC points moved to :mod:`attnlib.qmc` (one generator, one cache, one
seeding rule for the whole library). This module re-exports its two former names for one
release; import them from :mod:`attnlib.qmc`."""

from __future__ import annotations

from attnlib.qmc import qmc_normals, sobol_normals

__all__ = ["qmc_normals", "sobol_normals"]
