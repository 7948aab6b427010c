"""The spectral map f, its divergence and the Stein form of its error.

Each quantity is compared with an independent computation: f' with a finite
difference of f, the divergence with a finite-difference Jacobian of the matrix
map over the d(d+1)/2 orthonormal coordinates of symmetric matrices, the Stein
form with Q0 - 2 m + q from the same quadrature.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attnlib  # noqa: F401
from attnlib import rmt, targets
from attnlib.spectral_map import PENALTIES, SpectralMap


@pytest.mark.parametrize("penalty", PENALTIES)
def test_f_fprime_threshold(penalty):
    sm = SpectralMap(1.7, 0.4, penalty)
    x = np.linspace(-2.0, 3.0, 101)
    if penalty == "nuclear":
        np.testing.assert_array_equal(sm.f(x), np.maximum(1.7 * x - 0.4, 0.0))
        assert sm.threshold == pytest.approx(0.4 / 1.7, rel=1e-15)
        assert (sm.slope, sm.shift) == (1.7, 0.4)
    else:
        np.testing.assert_allclose(sm.f(x), 1.7 * x / 1.4, rtol=1e-15)
        assert sm.threshold == -math.inf
    # f' against a central difference, away from the kink (step 1e-6: error ~ 1e-10)
    h = 1e-6
    far = np.abs(x - sm.threshold) > 1e-3
    fd = (sm.f(x + h) - sm.f(x - h)) / (2 * h)
    np.testing.assert_allclose(sm.fprime(x)[far], fd[far], atol=1e-8)
    np.testing.assert_array_equal(sm.kept(x), sm.f(x) > 0 if penalty == "nuclear" else True)


@pytest.mark.parametrize("penalty", PENALTIES)
def test_jax_and_numpy_agree_under_jit(penalty):
    x = np.linspace(-2.0, 3.0, 17)

    @jax.jit
    def fj(x, c, tau):
        sm = SpectralMap(c, tau, penalty)
        return sm.f(x), sm.fprime(x)

    f_j, fp_j = fj(jnp.asarray(x), 1.3, 0.2)
    sm = SpectralMap(1.3, 0.2, penalty)
    np.testing.assert_allclose(np.asarray(f_j), sm.f(x), rtol=1e-15)
    np.testing.assert_allclose(np.asarray(fp_j), sm.fprime(x), rtol=1e-15)


@pytest.mark.parametrize("bad", [dict(c=0.0), dict(c=-1.0), dict(tau=-0.1), dict(c=np.nan)])
def test_bad_parameters_name_the_argument(bad):
    name = next(iter(bad))
    with pytest.raises(ValueError, match=name):
        SpectralMap(**bad)
    with pytest.raises(ValueError, match="penalty"):
        SpectralMap(1.0, 0.0, "lasso")


def _fd_divergence(B, F, basis, eps=1e-6):
    """sum_k <E_k, dF(B)[E_k]> over an orthonormal basis E_k of symmetric matrices."""
    return sum(np.sum(E * (F(B + eps * E) - F(B - eps * E))) / (2 * eps) for E in basis)


@pytest.mark.parametrize("penalty", PENALTIES)
def test_divergence_matches_finite_differences(penalty, symmetric_basis):
    rng = np.random.default_rng(0)
    d = 6
    A = rng.standard_normal((d, d))
    B = (A + A.T) / 2
    sm = SpectralMap(1.2, 0.3, penalty)

    def F(M):
        x, U = np.linalg.eigh(M)
        return (U * sm.f(x)) @ U.T

    x = np.linalg.eigvalsh(B)
    div_np = rmt.spectral_divergence(x, sm.f(x), sm.fprime(x))
    div_j = float(rmt.spectral_divergence(jnp.asarray(x), sm.f(jnp.asarray(x)), sm.fprime(x)))
    div_cb = rmt.spectral_divergence(x, sm.f, sm.fprime)  # f, f' as callables
    # central differences with step 1e-6 on an O(1) matrix: error ~ 1e-9 (eigenvalues
    # are >= 1e-2 from the kink for this seed)
    assert div_np == pytest.approx(_fd_divergence(B, F, symmetric_basis(B.shape[0])), abs=1e-6)
    assert div_j == pytest.approx(div_np, rel=1e-13)
    assert div_cb == div_np


def test_stein_form_equals_overlap_form():
    """mse = Q0 - 2m + q, with Q0 of the Wishart target known in closed form (Q0 = 1)."""
    target = targets.Wishart(0.5)
    spec = rmt.deformed_spectrum(target, 0.3, 200, breakpoints=(0.8,))
    sm = SpectralMap(0.9, 0.72)
    integ = rmt.spectral_integrals(spec, sm.f)
    direct = float(target.Q0) - 2 * integ.m + integ.q
    # both are quadratures of smooth integrands on the same nodes (tol 1e-11)
    assert rmt.stein_mse(spec, sm.f) == pytest.approx(direct, abs=1e-8)
