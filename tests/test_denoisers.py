"""The one spectral integrator (attnlib.denoisers) and the input sides that call it.

Exact identities of ``rho_R`` check the integrator itself; the four former copies
(the state evolution's nuclear input side and trace, the rank-constrained input side,
``rmt.spectral_integrals`` and the RIE's ``mmse_den``) must return its numbers.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnlib import denoisers, rmt
from attnlib.denoisers import rie
from attnlib.se import input as se_input
from attnlib.targets import Wishart
from attnlib.width import input as width_input

TARGET = Wishart(kappa0=0.5)
DELTA = 0.4


def test_identity_map_gives_the_gaussian_identities():
    """f(x) = x: q = Q0 + Delta, m = Q0 (Stein), div = 1/2, trace = Tr S0 / d, rank = 1."""
    spec = rmt.deformed_spectrum(TARGET, DELTA)
    s = denoisers.integrate(spec, spec.x)
    # the quadrature is spectrally accurate for smooth f (mass 1 to ~1e-12)
    assert s.q == pytest.approx(TARGET.Q0 + DELTA, rel=1e-8)
    assert s.m == pytest.approx(TARGET.Q0, rel=1e-8)
    assert s.div == pytest.approx(0.5, rel=1e-8)
    assert s.trace == pytest.approx(math.sqrt(TARGET.kappa0), rel=1e-8)
    assert s.rank == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("cut", [-math.inf, 1.2])
def test_soft_threshold_rank_is_the_mass_above_the_kinks(cut):
    c, tau = 1.5, 0.9
    s = denoisers.nuclear_integrals(TARGET, DELTA, c, tau, cut)
    edge = max(tau / c, cut)
    mass_above = 1.0 - float(rmt.cdf(TARGET, DELTA, np.array([edge]))[0])
    assert 0.0 < s.rank < 1.0
    assert s.rank == pytest.approx(mass_above, abs=1e-6)  # the cdf's accuracy
    assert s.q > 0 and s.trace > 0 and s.m**2 < s.q * TARGET.Q0  # Cauchy-Schwarz


def test_the_input_sides_return_the_integrator_numbers():
    m_hat, q_hat, a_hat, lam = 1.2, 0.6, 0.8, 0.3
    Delta, c, tau = q_hat / m_hat**2, m_hat / a_hat, lam / a_hat
    s = denoisers.nuclear_integrals(TARGET, Delta, c, tau)
    side = se_input.input_side(TARGET, m_hat, q_hat, a_hat, lam)
    assert (side.m, side.q, side.v, side.rank_fraction) == (s.m, s.q, s.div / m_hat, s.rank)
    assert se_input.input_trace(TARGET, Delta, c, tau) == s.trace
    cut = 1.1
    sc = denoisers.nuclear_integrals(TARGET, Delta, c, tau, cut)
    assert width_input.spectral_integrals(TARGET, Delta, c, tau, cut) == (
        sc.m,
        sc.q,
        sc.div,
        sc.rank,
    )
    assert sc.rank < s.rank


def test_rmt_and_rie_use_the_integrator():
    spec = rmt.deformed_spectrum(TARGET, DELTA)
    f = rmt.conditional_overlap(spec)  # the RIE's map at the nodes
    s = denoisers.integrate(spec, f)
    assert tuple(rmt.spectral_integrals(spec, lambda x: x - 2 * DELTA * spec.hilbert)) == (
        s.q,
        s.m,
        s.div,
    )
    parts = rie.mmse_den_parts(TARGET, DELTA)
    assert parts.overlap == TARGET.Q0 - s.q
    assert s.m == pytest.approx(s.q, rel=1e-12)  # the RIE is its own conditional overlap
    assert parts.overlap == pytest.approx(parts.cubic, abs=1e-8)
