r"""The ridgeless curve on both sides of ``alpha_interp`` and the interpolation peak
(``book/methods_erm_checks.ipynb``).

Run from ``book/``::

    python -m data.make_ridgeless --serial           # -> data/ridgeless.npz
    python -m data.make_ridgeless --quick --serial   # fewer points, data/quick/

Linear task ``T = 1``, ``Wishart(0.5)``, ``Delta = 0.25``:

- the ridgeless curve :func:`attnlib.thresholds.ridgeless_curve`, below ``alpha_interp``
  (the minimum-trace interpolator) and above it (``lam = 0``);
- the ``lam = 1e-2`` and ``1e-3`` curves :func:`attnlib.se.learning_curve`, and the
  largest test error of the ``lam = 1e-2 ... 1e-5`` curves on a fine grid near the peak;
- the peak :func:`attnlib.thresholds.ridgeless_peak` and how the curve approaches it, as
  ``mse_peak - mse`` at ``alpha = alpha_interp (1 -+ eps)`` for three ``eps`` on each
  side.

Softmax seq2seq ``T = 2``, noise on the target (the paper's), ``Delta = 0.25``: the peak
at ``n_qmc = 2^18`` points in 8 scramblings (its QMC standard error stored beside it).
A minute or two of one core.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from data import _common as C

import attnlib
from attnlib import se, sweep, targets, tasks, thresholds

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

FILE = "ridgeless.npz"
LIN = tasks.Linear(T=1, noise=0.25)
S2S = tasks.Seq2Seq(T=2, noise=0.25, noise_on="target")
TARGET = targets.Wishart(0.5)
LAMS = (1e-2, 1e-3)
PEAK_LAMS = (1e-2, 1e-3, 1e-4, 1e-5)
EPS_BELOW = (1e-4, 1e-5, 1e-6)
EPS_ABOVE = (4e-3, 2e-3, 1e-3)


def _fractions(quick: bool) -> np.ndarray:
    """``alpha / alpha_interp`` of the curves."""
    if quick:
        return np.array([0.3, 0.9, 1.5])
    below = np.concatenate([np.linspace(0.1, 0.9, 9), [0.95, 0.98, 0.995, 0.999]])
    above = np.concatenate([[1.001, 1.005, 1.02, 1.05], np.linspace(1.1, 3.0, 8)])
    return np.concatenate([below, above])


def _curves(quick: bool) -> dict:
    a_int = thresholds.interpolation_formula(LIN, TARGET).alpha
    alphas = a_int * _fractions(quick)
    out = {"alpha_interp": a_int, "alpha": alphas}
    curve = C.quiet(thresholds.ridgeless_curve, LIN, TARGET, alphas)[0]
    for f in ("test_error", "test_error_noisy", "mse", "tau", "Delta_eff", "converged"):
        out[f"ridgeless.{f}"] = np.asarray(getattr(curve, f))
    for lam in LAMS:
        c = C.quiet(se.learning_curve, LIN, TARGET, alphas, lam)[0]
        out[f"lam{lam:g}.test_error"] = np.asarray(c.test_error)
    return out


def _finite_lam_peak(lam: float, quick: bool) -> dict:
    a_int = thresholds.interpolation_formula(LIN, TARGET).alpha
    fine = a_int * np.linspace(0.9, 1.1, 11 if quick else 81)
    cf = C.quiet(se.learning_curve, LIN, TARGET, fine, lam)[0]
    return {f"lam{lam:g}.peak": float(np.nanmax(cf.test_error)),
            f"lam{lam:g}.peak_alpha": float(fine[np.nanargmax(cf.test_error)])}  # fmt: skip


def _peak(quick: bool) -> dict:
    a_int = thresholds.interpolation_formula(LIN, TARGET).alpha
    peak = thresholds.ridgeless_peak(LIN, TARGET)
    out = {"peak.test_error": peak.test_error, "peak.mse": peak.mse,
           "peak.test_error_noisy": peak.test_error_noisy, "peak.q": peak.q,
           "peak.m": peak.m, "peak.Delta": peak.Delta_eff}  # fmt: skip
    out["eps_below"], out["eps_above"] = np.array(EPS_BELOW), np.array(EPS_ABOVE)

    def gap(scale):
        return peak.mse - thresholds.ridgeless_limit(LIN, TARGET, a_int * scale).mse

    out["gap_below"] = np.array([gap(1 - e) for e in EPS_BELOW])
    out["gap_above"] = np.array([gap(1 + e) for e in EPS_ABOVE])
    return out


def _softmax_peak(quick: bool) -> dict:
    s2s = thresholds.ridgeless_peak(S2S, TARGET, n_qmc=2**14 if quick else 2**18, n_rep=8)
    return {"s2s.alpha_interp": s2s.alpha, "s2s.test_error": s2s.test_error,
            "s2s.test_error_err": s2s.integration_error * s2s.test_error,
            "s2s.test_error_noisy": s2s.test_error_noisy, "s2s.e0": s2s.e0,
            "s2s.mse": s2s.mse}  # fmt: skip


PIECES = ["curves", "peak", "softmax_peak", *(f"lam_peak:{lam:g}" for lam in PEAK_LAMS)]


def piece(*, name: str, quick: bool) -> dict:
    """One independent piece of ``ridgeless.npz`` (a point of the sweep), by ``name``:
    the curves, the linear peak and its approach, the softmax peak, or the largest test
    error of one finite-``lam`` curve near the peak (``"lam_peak:<lam>"``)."""
    if name.startswith("lam_peak:"):
        out = _finite_lam_peak(float(name.split(":")[1]), quick)
    else:
        out = {"curves": _curves, "peak": _peak, "softmax_peak": _softmax_peak}[name](quick)
    return {"arrays": {k: np.asarray(v) for k, v in out.items()}}


def compute(name, quick, runner) -> dict:
    """The arrays of ``ridgeless.npz`` (nothing written): one sweep over the pieces."""
    rows = C.records(runner(sweep.Grid(piece, {"name": PIECES, "quick": [quick]})))
    out = {}
    for row in rows:
        out.update(row["arrays"])
    return out


def main(argv=None) -> None:
    parts = C.npz_parts({"ridgeless": FILE}, compute)
    args = C.parser(__doc__, parts).parse_args(argv)
    C.run_parts(args, parts, lambda *a: None)


if __name__ == "__main__":
    from data import make_ridgeless  # the importable module: workers load it by name

    make_ridgeless.main()
