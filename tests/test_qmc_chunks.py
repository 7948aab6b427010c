"""The state evolution's sample count as a runtime size: the output side on pieces of
``attnlib.qmc.CHUNK`` points per scrambling (one compiled program for every ``n``)
equals the same integral in one piece up to rounding, and a solve at a larger ``n``
compiles nothing new."""

import numpy as np
import pytest

from attnlib import _compiled_programs, qmc, se, tasks
from attnlib.se import output
from attnlib.targets import Wishart

TASK = tasks.Seq2Seq(T=2, noise=0.1)


def _setup(n):
    z = output.qmc_points(TASK, n, 4, 0)
    x = np.array([0.4, 0.5, 0.8])
    prox = np.zeros((z.shape[0] * z.shape[1], TASK.n_pairs))
    return z, x, prox


@pytest.mark.slow
def test_pieces_equal_one_piece_up_to_rounding():
    """16384 points in 4 scramblings = 2 pieces of 2048: the means of the pieces' means
    against the compiled output side on all points at once (the sums' order differs:
    rounding, 1e-13 relative); the prox points are the same problems, solved the same."""
    z, x, prox = _setup(16384)
    assert len(qmc.chunks(z.shape[1])) == 2
    args = (TASK, z, np.float64(0.5), np.float64(1.5), x, prox)
    whole = output.output_arrays(*args, mode="cold")
    pieces = output.output_chunks(*args, mode="cold")
    np.testing.assert_allclose(pieces.means, whole.means, rtol=1e-13, atol=0)
    np.testing.assert_allclose(pieces.prox, whole.prox, rtol=1e-12, atol=1e-14)
    cold = output.cold_prox(TASK, z, 1.5, x)
    np.testing.assert_allclose(cold[0], whole.prox, rtol=1e-12, atol=1e-14)
    h, n_better = output.lower_minima(TASK, z, 1.5, x, prox, cold)
    h_whole, n_whole = output._lower_minima(TASK, z, 1.5, x, prox, cold)  # one piece
    assert n_better == int(n_whole) > 0
    np.testing.assert_array_equal(h, h_whole)


def test_chunks_split_into_equal_pieces():
    assert qmc.chunks(2048) == [slice(0, 2048)]
    assert qmc.chunks(512) == [slice(0, 512)]
    assert qmc.chunks(3 * qmc.CHUNK) == [slice(i * 2048, (i + 1) * 2048) for i in range(3)]


@pytest.mark.slow
def test_a_larger_n_compiles_nothing_new():
    """A second rtol solve that doubles ``n_qmc`` further than the first makes no new
    compiled program (JAX's compile events, counted by attnlib._compiled_programs: a
    program compiled or loaded from the disk cache counts)."""
    _compiled_programs.install()
    kw = dict(rtol=1e-9, tol=1e-5)  # rtol never met: n_qmc doubles up to max_n_qmc
    task, target = tasks.Seq2Seq(T=2), Wishart(0.5)
    with pytest.warns(RuntimeWarning, match="rtol"):
        se.solve(task, target, 0.3, 0.1, max_n_qmc=16384, **kw)
    before = _compiled_programs._state["programs"]
    with pytest.warns(RuntimeWarning, match="n_qmc = 32768"):
        r = se.solve(task, target, 0.35, 0.1, max_n_qmc=32768, **kw)
    assert r.converged
    assert _compiled_programs._state["programs"] - before == 0
