"""The closed-form Wishart Stieltjes transform takes the physical branch everywhere.

Independent computation: the atom sum of the limiting measure (4000 quantile
atoms; its error is O(1/n_atoms) away from the support) and, on the real axis
outside the support, the sign of 1/z (G is real there and behaves like 1/z).
"""

import numpy as np
import pytest

import attnlib  # noqa: F401
from attnlib import targets


@pytest.mark.parametrize("kappa0", [0.2, 0.5, 1.0, 2.0, 4.0])
def test_closed_form_matches_atom_sum_on_and_off_axis(kappa0):
    target = targets.Wishart(kappa0)
    edge = (1 + np.sqrt(kappa0)) ** 2 / np.sqrt(kappa0)
    z = np.array([-3.0, -1.0, -0.2, edge + 0.5, edge + 5, 0.3 + 0.05j, 2 + 1j, -0.5 + 0.2j])
    closed = target.stieltjes(z)
    atoms = target.measure().stieltjes(z)
    np.testing.assert_allclose(closed, atoms, rtol=2e-4, atol=2e-4)
    real = np.isreal(z)
    assert np.all(np.sign(closed[real].real) == np.sign(z[real].real))
