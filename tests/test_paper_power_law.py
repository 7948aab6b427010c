"""The paper's power-law regime (arXiv:2509.24914 v2, Appendix E): the target with
eigenvalues ``sqrt(d) i^{-gamma}``, its finite-``d`` state evolution, the rates of its
excess error and its simulations."""

import math

import jax
import numpy as np
import pytest
from scipy import special

from attnlib import targets


@pytest.mark.parametrize("gamma", [0.75, 1.0, 2.0])
def test_paper_power_law_sample(gamma):
    """A sampled ``S0``: eigenvalues ``sqrt(d) i^{-gamma}`` (eigvalsh of the matrix, to
    1e-10 relative), ``Tr(S0^2)/d`` equal to the Hurwitz-zeta partial sum
    ``zeta(2 gamma) - zeta(2 gamma, d + 1)`` and to ``Q0``; Haar eigenvectors: the top
    eigenvector of two keys overlap like ``1/d`` (mean of 16 squared overlaps, bound 4/d)."""
    d = 40
    tg = targets.PaperPowerLaw(gamma)
    S = np.asarray(tg.sample(jax.random.PRNGKey(0), d))
    ev = np.sort(np.linalg.eigvalsh(S))[::-1]
    want = math.sqrt(d) * np.arange(1, d + 1) ** (-gamma)
    np.testing.assert_allclose(ev, want, rtol=1e-10, atol=1e-10 * math.sqrt(d))
    zeta_sum = special.zeta(2 * gamma) - special.zeta(2 * gamma, d + 1)
    assert math.isclose(np.trace(S @ S) / d, zeta_sum, rel_tol=1e-10)
    assert math.isclose(tg.at(d).Q0, zeta_sum, rel_tol=1e-12)
    tops = []
    for k in range(16):
        U = [
            np.linalg.eigh(np.asarray(tg.sample(jax.random.PRNGKey(100 + 2 * k + j), d)))[1]
            for j in range(2)
        ]
        tops.append(float(U[0][:, -1] @ U[1][:, -1]) ** 2)
    assert np.mean(tops) < 4.0 / d


def test_paper_power_law_needs_d():
    with pytest.raises(ValueError, match="d"):
        targets.PaperPowerLaw(1.0).measure()
    mu = targets.PaperPowerLaw(1.5).at(7).measure()
    assert mu.atoms.size == 7 and math.isclose(mu.weights.sum(), 1.0)
