"""attnlib.qmc: the one seeding rule, checked against scipy's Sobol generator seeded by
hand, and the points' moments against the standard normal's."""

import numpy as np
import pytest
import scipy.stats

from attnlib import qmc


def _by_hand(dim, per, entropy):
    """Scrambled Sobol points seeded directly with numpy, through the normal quantile."""
    eng = scipy.stats.qmc.Sobol(dim, scramble=True, seed=np.random.default_rng(entropy))
    return scipy.stats.norm.ppf(np.clip(eng.random(per), 1e-15, 1 - 1e-15))


@pytest.mark.parametrize("stream", sorted(qmc.STREAMS))
def test_scrambling_r_is_seeded_by_seed_plus_offset_and_r(stream):
    z = qmc.normals(3, 64, n_rep=4, seed=5, stream=stream)
    assert z.shape == (4, 16, 3) and not z.flags.writeable
    for r in range(4):
        np.testing.assert_array_equal(z[r], _by_hand(3, 16, [5 + qmc.STREAMS[stream], r]))


def test_a_single_set_is_the_plain_integer_seed():
    """Scrambling 0 of a stream is the plain integer ``seed + offset`` (numpy pads a seed's
    entropy with zeros): the seeding of the Bayes integrals before the rule."""
    z = qmc.normals(4, 32, seed=2, stream="inner")[0]
    np.testing.assert_array_equal(z, _by_hand(4, 32, 2 + qmc.STREAMS["inner"]))


def test_streams_differ_at_one_seed_and_the_cache_returns_one_array():
    a = qmc.normals(2, 16, seed=0, stream="outer")
    b = qmc.normals(2, 16, seed=0, stream="inner")
    assert not np.array_equal(a, b)
    assert qmc.normals(2, 16, seed=0, stream="outer") is a
    assert qmc.qmc_normals(2, 16, 1, 0) is a  # "output" and "outer": both offset 0


def test_moments_of_the_points():
    """Mean 0 and covariance I within the QMC error: for 2^14 points the scrambled Sobol
    mean of a coordinate has sd well below the plain MC 1/sqrt(n) = 0.008; 5 sd of MC."""
    z = qmc.qmc_normals(5, 2**14, 4, 3).reshape(-1, 5)
    assert np.max(np.abs(z.mean(axis=0))) < 5 / np.sqrt(z.shape[0])
    assert np.max(np.abs(np.cov(z.T) - np.eye(5))) < 5 * np.sqrt(2 / z.shape[0])


def test_unbalanced_sets_are_refused_by_qmc_normals():
    with pytest.raises(ValueError, match="power of 2"):
        qmc.qmc_normals(2, 24, 4)
    with pytest.raises(ValueError, match="n must be a multiple of n_rep"):
        qmc.normals(2, 10, n_rep=4)
