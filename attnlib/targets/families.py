"""The families of targets: Wishart, power law, explicit spectrum, spiked bulk, and
extensive power-law modes (the book's scaling-law target)."""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import _checks
from attnlib.targets.base import (
    SpectralMeasure,
    Target,
    _from_eigen,
    haar_orthogonal,
    quantile_atoms,
)

__all__ = ["Explicit", "PowerLaw", "PowerLawModes", "Spiked", "Wishart"]


@dataclasses.dataclass(frozen=True)
class Wishart(Target):
    r"""``S0 = W0 W0^T / sqrt(p0 d)`` with ``W0`` a ``d x p0`` standard Gaussian, ``p0 = kappa0 d``.

    ``kappa0 = p0 / d`` is the *width* ratio of the target, in ``(0, KAPPA0_MAX]``; its
    rank fraction is ``min(kappa0, 1)`` (:attr:`rank_fraction`). For every ``kappa0``:
    ``Tr(S0)/d -> sqrt(kappa0)``, ``Q0 = 1 + kappa0``, and the non-zero eigenvalues fill
    ``[(1 - sqrt(kappa0))^2, (1 + sqrt(kappa0))^2] / sqrt(kappa0)``. Limit:

    - ``kappa0 <= 1`` (low rank): an atom ``1 - kappa0`` at 0 and mass ``kappa0`` on a
      Marchenko-Pastur law of ratio ``kappa0`` scaled by ``1 / sqrt(kappa0)``;
    - ``kappa0 > 1`` (full rank): no atom; ``S0`` is ``sqrt(kappa0)`` times a
      Marchenko-Pastur law of ratio ``1 / kappa0`` (the law of ``W0 W0^T / p0``), whose
      smallest eigenvalue ``(sqrt(kappa0) - 1)^2 / sqrt(kappa0)`` is positive.

    One closed-form Stieltjes transform covers both (:meth:`stieltjes`).
    """

    kappa0: float = 0.5

    KAPPA0_MAX = 1e4  # beyond it the spectrum is a semicircle of radius 2 around sqrt(kappa0)

    def __post_init__(self):
        _checks.in_interval("kappa0", self.kappa0, 0.0, self.KAPPA0_MAX)

    @property
    def rank_fraction(self) -> float:
        """``min(kappa0, 1)``: the fraction of non-zero eigenvalues in the limit."""
        return min(float(self.kappa0), 1.0)

    def width(self, d: int) -> int:
        """``p0 = max(1, round(kappa0 d))``."""
        return max(1, int(round(self.kappa0 * _checks.integer("d", d, 1))))

    def sample(self, key, d):
        p0 = self.width(_checks.target_sample_size(d))
        W0 = jax.random.normal(key, (d, p0), dtype=jnp.float64)
        S = W0 @ W0.T / jnp.sqrt(p0 * d)
        return (S + S.T) / 2

    @staticmethod
    def _mp_quantile(ratio, u):
        # Marchenko-Pastur law of ratio ``ratio <= 1`` (unit variance): invert its CDF
        # numerically. x = lo + (hi - lo)(1 - cos t)/2 turns the square-root edges (and the
        # 1/sqrt(x) divergence at lo = 0 when ratio = 1) into a smooth integrand in t.
        c = ratio
        lo, hi = (1 - np.sqrt(c)) ** 2, (1 + np.sqrt(c)) ** 2
        t = np.linspace(0.0, np.pi, 20001)
        x = lo + (hi - lo) * (1 - np.cos(t)) / 2
        num = (hi - lo) ** 2 * np.sin(t) ** 2
        with np.errstate(invalid="ignore", divide="ignore"):
            dens_dt = num / (8 * np.pi * c * x)
        dens_dt[0] = hi / (2 * np.pi * c) if lo == 0 else 0.0
        cdf = np.concatenate([[0], np.cumsum((dens_dt[1:] + dens_dt[:-1]) / 2 * np.diff(t))])
        cdf /= cdf[-1]
        return np.interp(u, cdf, x)

    def measure(self, n_atoms: int = 4000):
        c = float(self.kappa0)
        if c >= 1.0:  # full rank: sqrt(c) times Marchenko-Pastur of ratio 1/c
            bulk = quantile_atoms(lambda u: self._mp_quantile(1.0 / c, u), n_atoms) * np.sqrt(c)
            return SpectralMeasure(bulk, np.full(n_atoms, 1.0 / n_atoms))
        n_bulk = max(1, int(round(c * n_atoms)))
        bulk = quantile_atoms(lambda u: self._mp_quantile(c, u), n_bulk) / np.sqrt(c)
        atoms = np.concatenate([[0.0], bulk])
        weights = np.concatenate([[1 - c], np.full(n_bulk, c / n_bulk)])
        return SpectralMeasure(atoms, weights)

    def stieltjes(self, z):
        """Closed form, every ``kappa0``: ``(1 - kappa0)/z + kappa0^{3/2} G_MP(sqrt(kappa0) z)``,
        ``G_MP`` the law of ``W0^T W0 / d`` (for ``kappa0 > 1`` its atom ``1 - 1/kappa0`` at 0
        cancels the pole ``(1 - kappa0)/z``)."""
        c = self.kappa0
        z = np.asarray(z, dtype=complex)
        w = np.sqrt(c) * z
        # G_MP(w) = (w + c - 1 - sqrt((w - 1 - c)^2 - 4c)) / (2 c w) with ratio c on the
        # p0 non-zero eigenvalues: here the law of W0^T W0 / d, ratio c = p0 / d.
        # sqrt((w - lo)(w - hi)) as a product of principal roots behaves like w at infinity
        # and is continuous off [lo, hi]: the branch with G ~ 1/w, on and off the real axis.
        lo, hi = (1 - np.sqrt(c)) ** 2, (1 + np.sqrt(c)) ** 2
        disc = np.sqrt(w - lo) * np.sqrt(w - hi)
        g_mp = (w - 1 + c - disc) / (2 * c * w)
        return (1 - c) / z + c * np.sqrt(c) * g_mp

    @property
    def Q0(self) -> float:
        return 1.0 + self.kappa0


@dataclasses.dataclass(frozen=True)
class PowerLaw(Target):
    r"""Power-law spectrum with Haar eigenvectors.

    A fraction ``kappa0`` of the eigenvalues is non-zero; the one at relative rank ``u = k /
    p0`` (``k = 1..p0``, ``p0 = kappa0 d``) is ``c u^{-gamma}``, ``c = sqrt((1 - 2 gamma) /
    kappa0)`` so that ``Q0 = 1`` in the limit (``0 <= gamma < 1/2``). The atomic
    :meth:`measure` (mid-point quantiles) misses part of the divergence at the top: its
    ``Q0`` is slightly below 1; theory and sampling both use it.
    """

    gamma: float = 0.25
    kappa0: float = 1.0

    def __post_init__(self):
        _checks.in_interval("gamma", self.gamma, 0.0, 0.5, low_open=False, high_open=True)
        _checks.in_interval("kappa0", self.kappa0, 0.0, 1.0)

    @property
    def scale(self) -> float:
        return float(np.sqrt((1 - 2 * self.gamma) / self.kappa0))

    def rank_eigenvalues(self, p0: int) -> np.ndarray:
        """The ``p0`` non-zero eigenvalues, largest first: ``c ((k - 1/2) / p0)^{-gamma}``."""
        u = (np.arange(1, p0 + 1) - 0.5) / p0
        return self.scale * u ** (-self.gamma)

    def sample(self, key, d):
        d = _checks.target_sample_size(d)
        p0 = max(1, int(round(self.kappa0 * d)))
        lam = np.zeros(d)
        lam[:p0] = self.rank_eigenvalues(p0)
        return _from_eigen(key, lam)

    def measure(self, n_atoms: int = 4000):
        n_nz = max(1, int(round(self.kappa0 * n_atoms)))
        nz = self.rank_eigenvalues(n_nz)
        if self.kappa0 == 1.0:
            return SpectralMeasure(nz, np.full(n_nz, 1.0 / n_nz))
        return SpectralMeasure(
            np.concatenate([[0.0], nz]),
            np.concatenate([[1 - self.kappa0], np.full(n_nz, self.kappa0 / n_nz)]),
        )


@dataclasses.dataclass(frozen=True)
class Explicit(Target):
    """A user-given list of eigenvalues with Haar eigenvectors.

    At size ``d`` equal to the list length the eigenvalues are used as given;
    at another ``d`` they are read as a distribution and its ``d`` mid-point
    quantiles are used. The limiting measure puts equal mass on each value.
    """

    values: tuple[float, ...] = (1.0,)

    def __post_init__(self):
        v = np.asarray(_checks.numeric_array("values", self.values, kinds="biuf"), dtype=float)
        if v.ndim != 1 or v.size == 0:
            raise ValueError(
                f"values must be a non-empty 1-d list of eigenvalues, got shape {v.shape}"
            )
        _checks.finite_array("values", v)
        object.__setattr__(self, "values", tuple(float(x) for x in v))

    def sample(self, key, d):
        d = _checks.target_sample_size(d)
        lam = np.asarray(self.values) if len(self.values) == d else self.eigenvalues(d)
        return _from_eigen(key, lam)

    def measure(self, n_atoms: int = 4000):
        v = np.asarray(self.values)
        return SpectralMeasure(v, np.full(v.size, 1.0 / v.size))


@dataclasses.dataclass(frozen=True)
class Spiked(Target):
    """Isolated eigenvalues ``spikes`` added along Haar directions to a bulk target.

    ``S0 = B + sum_k theta_k u_k u_k^T`` with ``u_k`` orthonormal and uniformly
    random. ``bulk=None`` means a zero bulk (a pure low-rank target). In the
    limit the spikes carry no mass: :meth:`measure` is the bulk's and
    :meth:`outliers` lists the spikes.
    """

    spikes: tuple[float, ...] = (3.0,)
    bulk: Target | None = None

    def __post_init__(self):
        s = np.asarray(_checks.numeric_array("spikes", self.spikes, kinds="biuf"), dtype=float)
        if self.bulk is not None and not isinstance(self.bulk, Target):
            raise ValueError(f"bulk must be an attnlib.targets.Target or None, got {self.bulk!r}")
        if s.ndim != 1 or s.size == 0:
            raise ValueError(f"spikes must be a non-empty 1-d list, got shape {s.shape}")
        _checks.finite_array("spikes", s)
        object.__setattr__(self, "spikes", tuple(float(x) for x in s))

    def sample(self, key, d):
        d = _checks.target_sample_size(_checks.integer("d", d, len(self.spikes)))
        k_b, _ = jax.random.split(key)
        B = jnp.zeros((d, d)) if self.bulk is None else self.bulk.sample(k_b, d)
        U = self.spike_directions(key, d)
        S = B + (U * jnp.asarray(self.spikes)[None, :]) @ U.T
        return (S + S.T) / 2

    def spike_directions(self, key, d) -> jax.Array:
        """The ``(d, k)`` spike directions used by :meth:`sample` with the same key."""
        _, k_u = jax.random.split(key)
        return haar_orthogonal(k_u, d)[:, : len(self.spikes)]

    def measure(self, n_atoms: int = 4000):
        if self.bulk is None:
            return SpectralMeasure(np.zeros(1), np.ones(1))
        return self.bulk.measure(n_atoms)

    def outliers(self):
        """The spike strengths ``theta_k``. With a non-zero bulk the isolated eigenvalues
        of ``S0`` itself are shifted by the bulk; :func:`attnlib.rmt.isolated_eigenvalues`
        gives them."""
        return self.spikes


@dataclasses.dataclass(frozen=True)
class PowerLawModes(Target):
    r"""``n_modes`` extensive eigenvalue groups with ``lambda_k = A k^{-gamma}``, ``Q0 = 1``.

    Mode ``k`` (``k = 1..n_modes``, largest first) has eigenvalue ``lambda_k = A k^{-gamma}``
    and multiplicity ``pi_k d`` with ``pi_k = kappa0 k^{-share_exponent} / Z``,
    ``Z = sum_j j^{-share_exponent}`` (equal shares of the rank ``kappa0 d`` by default);
    the other ``(1 - kappa0) d`` eigenvalues are 0; eigenvectors are Haar. The scale ``A``
    makes ``Q0 = sum_k pi_k lambda_k^2 = 1``. The large-``d`` limit at fixed ``n_modes``
    is the atomic measure :meth:`measure` (no outliers).

    Attributes:
      gamma: decay exponent of the eigenvalues, ``> 0``.
      n_modes: number of groups, ``>= 1``.
      kappa0: rank fraction in ``(0, 1]``.
      share_exponent: ``beta`` in ``pi_k ~ k^{-beta}``, finite (0: equal shares).
    """

    gamma: float = 1.5
    n_modes: int = 8
    kappa0: float = 1.0
    share_exponent: float = 0.0

    def __post_init__(self):
        _checks.positive("gamma", self.gamma)
        _checks.integer("n_modes", self.n_modes, 1)
        _checks.in_interval("kappa0", self.kappa0, 0.0, 1.0)
        _checks.finite("share_exponent", self.share_exponent)

    # --- the modes -------------------------------------------------------------------------

    @property
    def r(self) -> float:
        """Counting exponent ``r = (1 - share_exponent) / gamma``.

        The rank fraction of the modes above ``t`` grows like ``t^{-r}``.
        """
        return (1.0 - self.share_exponent) / self.gamma

    def mode_weights(self) -> np.ndarray:
        """``pi_k`` (``n_modes``,), summing to ``kappa0``."""
        k = np.arange(1, self.n_modes + 1, dtype=float)
        w = k ** (-float(self.share_exponent))
        return self.kappa0 * w / w.sum()

    def mode_eigenvalues(self) -> np.ndarray:
        """``lambda_k = A k^{-gamma}`` (``n_modes``,), decreasing; ``sum pi_k lambda_k^2 = 1``."""
        k = np.arange(1, self.n_modes + 1, dtype=float)
        shape = k ** (-float(self.gamma))
        A = 1.0 / math.sqrt(float(np.sum(self.mode_weights() * shape**2)))
        return A * shape

    def mode_dims(self, d: int) -> np.ndarray:
        """Integer multiplicities ``m_k`` at size ``d`` (largest remainders of ``pi_k d``).

        Raises ``ValueError`` if ``d`` is too small for every mode to get a dimension.
        """
        d = _checks.integer("d", d, 1)
        p0 = max(1, int(round(self.kappa0 * d)))
        share = self.mode_weights() / self.kappa0 * p0
        m = np.floor(share).astype(int)
        rest = p0 - int(m.sum())
        if rest > 0:
            order = np.argsort(-(share - m), kind="stable")
            m[order[:rest]] += 1
        if np.any(m < 1):
            raise ValueError(
                f"d must be large enough for every mode to have dimension >= 1 "
                f"(n_modes={self.n_modes}, kappa0={self.kappa0}), got d={d}"
            )
        return m

    def mode_labels(self, d: int) -> np.ndarray:
        """Mode index (0-based) of each eigenvector column used by :meth:`sample`; ``-1`` for 0."""
        m = self.mode_dims(d)
        lab = np.full(d, -1, dtype=int)
        lab[: m.sum()] = np.repeat(np.arange(self.n_modes), m)
        return lab

    def sample_eigenvalues(self, d: int) -> np.ndarray:
        """The ``d`` eigenvalues of :meth:`sample`, in the column order of :meth:`mode_labels`."""
        lab = self.mode_labels(d)
        lam = np.zeros(d)
        nz = lab >= 0
        lam[nz] = self.mode_eigenvalues()[lab[nz]]
        return lam

    # --- Target interface ------------------------------------------------------------------

    def sample(self, key, d):
        """``S0 = O diag(sample_eigenvalues(d)) O^T`` with ``O = haar_orthogonal(key, d)``."""
        return _from_eigen(key, self.sample_eigenvalues(_checks.target_sample_size(d)))

    def measure(self, n_atoms: int = 4000) -> SpectralMeasure:
        """The exact limit (``n_atoms`` is ignored): ``pi_k`` at ``lambda_k``, the rest at 0."""
        atoms = self.mode_eigenvalues()[::-1]
        weights = self.mode_weights()[::-1]
        if self.kappa0 < 1.0:
            atoms = np.concatenate([[0.0], atoms])
            weights = np.concatenate([[1.0 - self.kappa0], weights])
        return SpectralMeasure(atoms, weights)

    def eigenvalues(self, d: int) -> np.ndarray:
        """The ``d`` eigenvalues of :meth:`sample`, ascending."""
        return np.sort(self.sample_eigenvalues(d))

    @property
    def Q0(self) -> float:
        return 1.0

    def counting(self, t) -> np.ndarray:
        """``rho(t) = sum_{lambda_k > t} pi_k``: the rank fraction of the modes above ``t``."""
        t = np.asarray(t, dtype=float)
        lam, pi = self.mode_eigenvalues(), self.mode_weights()
        return np.sum(pi * (lam > t[..., None]), axis=-1)

    def threshold_bias(self, t) -> np.ndarray:
        """``B(t) = sum_k pi_k min(lambda_k, t)^2``: the soft-threshold error at noise 0."""
        t = np.asarray(t, dtype=float)
        lam, pi = self.mode_eigenvalues(), self.mode_weights()
        return np.sum(pi * np.minimum(lam, t[..., None]) ** 2, axis=-1)
