"""The base of every target: :class:`Target`, its limiting :class:`SpectralMeasure`,
and the Haar eigenvectors that the families share."""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import _checks

__all__ = [
    "SpectralMeasure",
    "Target",
    "atoms_and_weights",
    "haar_orthogonal",
    "quantile_atoms",
]


class SpectralMeasure(NamedTuple):
    """A probability measure on the real line given by atoms and weights (sum 1)."""

    atoms: np.ndarray
    weights: np.ndarray

    def moment(self, k: int) -> float:
        """``int x^k d mu``."""
        return float(np.sum(self.weights * self.atoms**k))

    def stieltjes(self, z):
        """``G(z) = int mu(dt) / (z - t)`` for complex ``z`` (array or scalar)."""
        z = np.asarray(z, dtype=complex)
        return np.sum(self.weights / (z[..., None] - self.atoms), axis=-1)


def haar_orthogonal(key: jax.Array, d: int) -> jax.Array:
    """A Haar-distributed ``d x d`` orthogonal matrix (QR with sign correction)."""
    key = _checks.prng_key("key", key)
    d = _checks.target_sample_size(d, "a Haar orthogonal d x d matrix")
    g = jax.random.normal(key, (d, d), dtype=jnp.float64)
    q, r = jnp.linalg.qr(g)
    return q * jnp.sign(jnp.diagonal(r))[None, :]


def quantile_atoms(quantile, n_atoms: int) -> np.ndarray:
    """Atoms at the mid-point quantiles ``(k - 1/2) / n_atoms`` of a law (given its quantile)."""
    if not callable(quantile):
        raise ValueError(f"quantile must be a vectorized callable, got {quantile!r}")
    n_atoms = _checks.integer("n_atoms", n_atoms, 1)
    u = (np.arange(n_atoms) + 0.5) / n_atoms
    atoms = np.asarray(quantile(u), dtype=float)
    if atoms.shape != u.shape:
        raise ValueError(f"quantile must map ({n_atoms},) to ({n_atoms},), got {atoms.shape}")
    return np.asarray(_checks.finite_array("quantile(u)", atoms))


@dataclasses.dataclass(frozen=True)
class Target:
    """Base class: subclasses implement :meth:`sample` and :meth:`measure`."""

    def sample(self, key: jax.Array, d: int) -> jax.Array:
        """A ``d x d`` sample ``S0``; checks first that it fits in memory (ValueError)."""
        raise NotImplementedError

    def measure(self, n_atoms: int = 4000) -> SpectralMeasure:
        """Limiting eigenvalue distribution of ``S0`` (outliers excluded)."""
        raise NotImplementedError

    def outliers(self) -> tuple[float, ...]:
        """Isolated eigenvalues that survive the large-``d`` limit with zero mass."""
        return ()

    def stieltjes(self, z):
        """Stieltjes transform of :meth:`measure` (closed form where a subclass has one)."""
        return self.measure().stieltjes(z)

    @property
    def Q0(self) -> float:
        """``lim Tr(S0^2) / d``."""
        return self.measure().moment(2)

    @property
    def kappa0(self) -> float:
        """Fraction of non-zero eigenvalues in the limit (rank / d); a subclass may use the
        name for its width ratio (:class:`Wishart`), :attr:`rank_fraction` never does."""
        return self.rank_fraction

    @property
    def rank_fraction(self) -> float:
        """Fraction of non-zero eigenvalues in the limit (rank / d), in ``[0, 1]``."""
        mu = self.measure()
        return float(np.sum(mu.weights[np.abs(mu.atoms) > 0]))

    def eigenvalues(self, d: int) -> np.ndarray:
        """Deterministic ``d`` eigenvalues: the quantiles of :meth:`measure`, ascending."""
        d = _checks.integer("d", d, 1)
        mu = self.measure()
        order = np.argsort(mu.atoms)
        cdf = np.cumsum(mu.weights[order])
        u = (np.arange(d) + 0.5) / d
        idx = np.minimum(np.searchsorted(cdf, u), len(cdf) - 1)
        return mu.atoms[order][idx]


def _from_eigen(key: jax.Array, eigenvalues) -> jax.Array:
    """``O diag(eigenvalues) O^T`` with ``O`` Haar orthogonal."""
    lam = jnp.asarray(eigenvalues, dtype=jnp.float64)
    basis = haar_orthogonal(key, lam.shape[0])
    S = (basis * lam[None, :]) @ basis.T
    return (S + S.T) / 2


def atoms_and_weights(target) -> tuple[np.ndarray, np.ndarray]:
    """Atoms ``(n,)`` and weights ``(n,)`` (``>= 0``, summing to 1) of a target's limiting spectrum.

    ``target``: a :class:`Target` (its :meth:`Target.measure` with the default number of
    atoms) or a :class:`SpectralMeasure`. Raises ``ValueError`` for anything else or for
    a measure that is not a finite probability measure.
    """
    if isinstance(target, SpectralMeasure):
        mu = target
    elif isinstance(target, Target):
        mu = target.measure()
    else:
        raise ValueError(f"target must be a Target or a SpectralMeasure, got {type(target)!r}")
    a = np.asarray(mu.atoms, dtype=float)
    w = np.asarray(mu.weights, dtype=float)
    _checks.finite_array("target atoms", a)
    _checks.finite_array("target weights", w)
    if a.shape != w.shape or a.ndim != 1 or np.any(w < 0) or not np.isclose(w.sum(), 1.0):
        raise ValueError("target: the measure needs one weight >= 0 per atom, summing to 1")
    return a, w
