"""The coarse-to-fine solve (attnlib.se.refine): a Newton correction of the fixed point on
more QMC points moves it towards an independent, converged reference, within its own
reported error, and that error is smaller than the uncorrected one."""

import numpy as np
import pytest

from attnlib import se, tasks
from attnlib.targets import Wishart

METRICS = ("test_error", "mse")


def _within(r, ref, k=3.0):
    """Whether ``r`` lies within ``k`` combined errors (``r``'s reported error and the
    reference's) of ``ref`` on the test error and the mse."""
    for f in METRICS:
        a, b = getattr(r, f), getattr(ref, f)
        err = np.hypot(r.integration_error * abs(a), ref.integration_error * abs(b))
        if not abs(a - b) <= k * err:
            return False
    return True


POINT = (tasks.Seq2Seq(T=2), Wishart(0.5), 0.3, 0.1)


@pytest.fixture(scope="module")
def reference():
    """A plain solve (no correction) of ``POINT`` with an independent seed (1000) at 2^17
    points, and the warm start of the uncorrected default solve."""
    task, target, alpha, lam = POINT
    plain = se.SESettings(refine=1)
    coarse, warm = se.solve(task, target, alpha, lam, settings=plain, return_warm=True)
    ref = se.solve(task, target, alpha, lam, settings=plain._replace(n_qmc=2**17, seed=1000),
                   init=warm)  # fmt: skip
    assert coarse.converged and ref.converged
    return coarse, warm, ref


def test_refined_point_is_within_its_error_of_a_converged_reference(reference):
    """Seq2seq T = 2, Wishart(0.5), alpha 0.3, lam 0.1 at the default 8192 points (4
    scramblings), corrected on 4 x 8192 points, against a plain solve (no correction)
    with an independent seed (1000) at 2^17 points (at 2^16, with the pathwise m_hat,
    its error equalled the corrected one's: 1.13e-3 against 1.15e-3): the reference's
    own error is below the corrected one's, and the combined error covers the deviation
    with a factor 3 (a normal deviate beyond 3 sigma: 0.3 %). The corrected error must
    fall below the uncorrected one by a factor 1.5 (expected 2 for the n^-1/2 rate of the
    scramblings' spread). The shapes are the default solve's (no new program)."""
    task, target, alpha, lam = POINT
    coarse, warm, ref = reference
    fine = se.solve(task, target, alpha, lam, refine=4, init=warm)
    assert fine.converged
    assert ref.integration_error < fine.integration_error
    assert _within(fine, ref), (fine.mse, ref.mse, fine.integration_error, ref.integration_error)
    assert fine.integration_error < coarse.integration_error / 1.5
    # the correction moved the point (by more than rounding)
    assert abs(fine.mse - coarse.mse) > 1e-6 * coarse.mse


def test_default_is_the_corrected_solve_and_rtol_composes_with_it(reference):
    """The default settings correct the fixed point (``SESettings().refine == 4``: the same
    result as ``refine=4``, not the plain one), and ``rtol=`` doubles the coarse points
    of the corrected solve: from 512 points (4 scramblings) to ``rtol = 5e-3`` (measured:
    8192 points, 6 s with compilation; the plain solve at 512 points reports 0.09) the
    result reports at most that error, its warm start holds the coarse points (a power
    of 2 times 512, at most ``max_n_qmc``), and it lies within 3 combined errors of the
    independent reference (its own reported error and the reference's)."""
    task, target, alpha, lam = POINT
    coarse, warm, ref = reference
    assert se.SESettings().refine == 4
    default = se.solve(task, target, alpha, lam, init=warm)
    assert default == se.solve(task, target, alpha, lam, refine=4, init=warm)
    assert default.mse != coarse.mse
    r, w = se.solve(task, target, alpha, lam, n_qmc=512, rtol=5e-3, return_warm=True)
    n = w.key[1]  # (task, n_qmc, n_rep, seed) of the coarse QMC points
    assert r.converged and r.integration_error <= 5e-3
    assert n > 512 and n & (n - 1) == 0 and n <= se.SESettings().max_n_qmc
    assert _within(r, ref), (r.mse, ref.mse, r.integration_error, ref.integration_error)


def test_fine_points_extend_the_coarse_scramblings():
    """The fine stage reuses the coarse solve's prox points: in any layout of
    ``refine_rep`` scramblings, the first ``n_rep`` scramblings' first ``n_qmc / n_rep``
    points are the coarse points themselves (scrambled Sobol sequences are nested), and
    the added scramblings are others (independent scramblings)."""
    from attnlib.se import drivers, refine

    task, target, alpha, lam = POINT
    pb = drivers._problem(task, target, alpha, lam, "nuclear", ((8192, 4, 3), 5))
    coarse = np.asarray(pb.data.z)
    for rep in (4, 8, 16):
        z = refine._fine_points(pb, 4, rep)
        assert z.shape == (rep, 4 * 8192 // rep, coarse.shape[2])
        np.testing.assert_array_equal(z[:4, :2048], coarse)
        if rep > 4:
            assert not np.isclose(z[4:8, :2048], coarse).any()


def test_more_fine_scramblings_stay_within_their_error_of_the_reference(reference):
    """``refine_rep=16`` (the 4 x 8192 points of the correction in 16 scramblings of 2048,
    the coarse 4 among them) at ``POINT``: the same map on the same number of points,
    with an error estimate of 15 degrees of freedom instead of 3. Against the independent
    2^17-point reference: within 3 combined errors; its reported error is within a
    factor 3 of the default layout's (both estimate the error of 32768 points; measured
    at other points: 1.3-2.5x, larger where long scrambled Sobol sets beat Monte Carlo);
    ``refine_rep=4`` is the default itself."""
    task, target, alpha, lam = POINT
    coarse, warm, ref = reference
    default = se.solve(task, target, alpha, lam, init=warm)
    same = se.solve(task, target, alpha, lam, init=warm, settings=se.SESettings(refine_rep=4))
    many = se.solve(task, target, alpha, lam, init=warm, settings=se.SESettings(refine_rep=16))
    assert same == default
    assert many.converged and many.mse != default.mse
    assert _within(many, ref), (many.mse, ref.mse, many.integration_error, ref.integration_error)
    assert default.integration_error / 3 < many.integration_error < 3 * default.integration_error


_T3_XFAIL = pytest.mark.xfail(
    strict=False,
    reason="the default layout (4 scramblings, an error estimate of 3 degrees of freedom): "
    "before the pathwise m_hat (Stein form, refine=4) largest deviation 4.6x the combined "
    "error, 2 of 16 seeds beyond 3x; with it (benchmarks/se_accuracy.py) every seed within "
    "2.66x, which 4 scramblings give only by chance (Student's t(3): 5.8 % of solves beyond 3)",
)


@pytest.mark.slow
@pytest.mark.parametrize("refine_rep", [pytest.param(None, marks=_T3_XFAIL), 16])
def test_every_refined_solve_is_within_3x_its_error_over_16_seeds(refine_rep):
    """Seq2seq T = 3, noise 0.1, Wishart(0.3), alpha 0.3, lam 0.01 (the issue's tail
    example) at ``refine=4``, 16 seeds: every single solve's deviation from the
    reference is within 3 times its reported error combined with the reference's. The
    reference: plain solves (no correction) at 2^17 points with the seeds 1000..1003,
    averaged; its error is the standard deviation over them over 2. With
    ``refine_rep=16`` the error has 15 degrees of freedom (a deviation beyond 3 of it:
    0.9 % of solves where it is exact; measured with ``benchmarks/se_accuracy.py``: the
    largest 2.03x)."""
    task, target, alpha, lam = tasks.Seq2Seq(T=3, noise=0.1), Wishart(0.3), 0.3, 0.01
    first, warm = se.solve(task, target, alpha, lam, return_warm=True)
    plain = se.SESettings(n_qmc=2**17, refine=1)
    refs = [se.solve(task, target, alpha, lam, settings=plain._replace(seed=1000 + k),
                     init=(first.m, first.q, first.v)) for k in range(4)]  # fmt: skip
    assert all(r.converged for r in refs)
    settings = se.SESettings(refine=4, refine_rep=refine_rep)
    for s in range(16):
        r = se.solve(task, target, alpha, lam, init=(first.m, first.q, first.v),
                     settings=settings._replace(seed=s))  # fmt: skip
        assert r.converged
        for f in METRICS:
            vals = np.array([getattr(b, f) for b in refs])
            ref, ref_err = vals.mean(), vals.std(ddof=1) / 2.0
            err = np.hypot(r.integration_error * abs(getattr(r, f)), ref_err)
            assert abs(getattr(r, f) - ref) <= 3 * err, (s, f, getattr(r, f), ref, err)
