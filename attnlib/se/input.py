r"""Input side of the state evolution: the spectral denoiser of ``R = S0 + sqrt(Delta_eff) W``.

With ``rho_R`` the limiting spectrum of ``R`` (free convolution of the target with a
semicircle, :func:`attnlib.rmt.deformed_spectrum`) and ``h_R`` its Hilbert transform::

    Delta_eff = q_hat / m_hat^2,  c = m_hat / a_hat,  tau = lam / a_hat,
    f(x) = (c x - tau)_+ (nuclear + PSD)  or  c x / (1 + lam / a_hat) (Frobenius),
    q = int rho_R f^2,  m = int rho_R f (x - 2 Delta_eff h_R),  v = (1/m_hat) int rho_R f h_R.

The Frobenius penalty is Gaussian and has closed forms (``int rho_R x^2 = Q0 + Delta``,
``int rho_R x h_R = 1/2``). The nuclear input side needs the free convolution: its
integrals are those of the one spectral integrator (:mod:`attnlib.denoisers`), computed
on the host (numpy, :func:`host_input`, also for the rank-constrained map of
:mod:`attnlib.width`; why: :mod:`attnlib.se.engine`). The Frobenius side is traceable
(:func:`frobenius_arrays`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from attnlib import _checks
from attnlib.denoisers.constrained import constrained_integrals
from attnlib.denoisers.nuclear import nuclear_integrals
from attnlib.spectral_map import PENALTIES, SpectralMap

__all__ = [
    "InputSide",
    "input_side",
    "input_trace",
    "host_input",
    "map_parameters",
    "frobenius_arrays",
]


class InputSide(NamedTuple):
    m: float
    q: float
    v: float
    rank_fraction: float
    Delta_eff: float
    c: float
    tau: float


def _nuclear(target, Delta, c, tau, m_hat):
    s = nuclear_integrals(target, Delta, c, tau)
    return s.m, s.q, s.div / m_hat, s.rank


def map_parameters(m_hat, q_hat, a_hat, lam) -> tuple[float, float, float, float]:
    """``(m_hat, Delta_eff, c, tau) = (m_hat, q_hat / m_hat^2, m_hat / a_hat, lam / a_hat)``
    from the conjugates and ``lam``, checked (a ``ValueError`` naming them, also where
    ``Delta_eff`` or ``c`` would exceed ``1e100``)."""
    m_hat = _checks.in_interval("m_hat", m_hat, 0.0, _checks.MAX_ABS)
    q_hat = _checks.nonnegative("q_hat", q_hat)
    a_hat = _checks.positive("a_hat", a_hat)
    lam = _checks.nonnegative("lam", lam)
    if m_hat**2 == 0.0 or not q_hat <= _checks.MAX_ABS * m_hat**2:
        raise ValueError(
            f"q_hat / m_hat**2 (the effective noise) must be <= {_checks.MAX_ABS:g}, "
            f"got q_hat={q_hat!r}, m_hat={m_hat!r}"
        )
    if not m_hat <= _checks.MAX_ABS * a_hat:  # else q = O(c^2) overflows
        raise ValueError(
            f"c = m_hat / a_hat must be <= {_checks.MAX_ABS:g}, got m_hat={m_hat!r}, "
            f"a_hat={a_hat!r}"
        )
    return m_hat, q_hat / m_hat**2, m_hat / a_hat, lam / a_hat


def input_side(target, m_hat, q_hat, a_hat, lam, penalty="nuclear", *, Q0=None) -> InputSide:
    """Input side: overlaps of the spectral estimator ``F(c (S0 + sqrt(Delta_eff) W))``."""
    m_hat, Delta, c, tau = map_parameters(m_hat, q_hat, a_hat, lam)
    _checks.choice("penalty", penalty, PENALTIES)
    if penalty == "frobenius":
        Q0 = target.Q0 if Q0 is None else Q0
        k = SpectralMap(c, tau, "frobenius").slope
        return InputSide(k * Q0, k * k * (Q0 + Delta), k / (2.0 * m_hat), 1.0, Delta, c, tau)
    return InputSide(*_nuclear(target, Delta, c, tau, m_hat), Delta, c, tau)


def input_trace(target, Delta, c, tau, penalty="nuclear", *, cut=-np.inf) -> float:
    """``lim Tr S_hat / d = int rho_R f``: the trace per dimension of the spectral estimator.

    ``f`` is the input side's map at ``(c, tau)``: ``(c x - tau)_+`` (nuclear + PSD; set to
    zero below ``cut``, the rank constraint of :mod:`attnlib.width`) or
    ``c x / (1 + tau)`` (Frobenius, where ``int rho_R x = Tr S0 / d``). 0 where the
    spectral map thresholds the whole spectrum.
    """
    _checks.choice("penalty", penalty, PENALTIES)
    fmap = SpectralMap(c, tau, penalty)
    if penalty == "frobenius":
        return float(fmap.slope * target.measure().moment(1))
    return nuclear_integrals(target, Delta, c, tau, cut).trace


def host_input(target, conj, lam, kappa=1.0) -> np.ndarray:
    """The nuclear input side on the host from ``conj = (m_hat, q_hat, a_hat)``: ``(m, q,
    v, rank_fraction)`` (float64 numpy array), NaN where undefined; ``kappa < 1``: the map
    cut at ``x_kappa`` where the rank constraint binds
    (:mod:`attnlib.denoisers.constrained`, which needs ``q_hat > 0``)."""
    m_hat, q_hat, a_hat = (float(t) for t in np.asarray(conj))
    lam, kappa = float(lam), float(kappa)
    if not (m_hat > 0 and a_hat > 0 and q_hat >= 0 and np.isfinite(q_hat)):
        return np.full(4, np.nan)
    if kappa < 1.0 and not q_hat > 0:
        return np.full(4, np.nan)
    Delta, c, tau = q_hat / m_hat**2, m_hat / a_hat, lam / a_hat
    try:
        s = constrained_integrals(target, Delta, c, tau, kappa)
    except (ValueError, FloatingPointError, ArithmeticError):
        return np.full(4, np.nan)
    return np.asarray((s.m, s.q, s.div / m_hat, s.rank), dtype=np.float64)


def frobenius_arrays(conj, lam, Q0):
    """The Frobenius input side, traceable: ``(m, q, v, rank_fraction)`` from ``conj =
    (m_hat, q_hat, a_hat)`` (closed forms, no integral against ``rho_R``)."""
    m_hat, q_hat, a_hat = conj[0], conj[1], conj[2]
    Delta = q_hat / m_hat**2
    k = SpectralMap(m_hat / a_hat, lam / a_hat, "frobenius").slope
    return jnp.stack([k * Q0, k * k * (Q0 + Delta), k / (2.0 * m_hat), jnp.ones_like(k)])
