"""The stored T = 3 gap study (book/data/t3_gap.npz, book/data/make_t3_gap.py) against a
fresh state-evolution solve: the record fails when the engine's fixed point moves."""

import json
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from attnlib import finite_size
from attnlib.se import accuracy

RECORD = Path(__file__).resolve().parents[1] / "book" / "data" / "t3_gap.npz"
METRICS = ("train_loss", "test_error", "mse")
# the setting of book/data/make_t3_gap.py (a user's, issue 26)
SETTING = {"T": 3, "noise": 0.1, "kappa0": 0.3, "lam": 0.01, "alpha": 0.3}


@pytest.fixture(scope="module")
def record() -> dict:
    with np.load(RECORD) as f:
        return {k: f[k] for k in f.files}


# The fresh solve runs in a child process. In the long unit-test process JAX 0.10.2
# crashed while (de)serialising this 32768-point program for its persistent compilation
# cache (a segmentation fault reading the entry, an abort writing it into an empty
# cache), deterministically at this point of a full `make test` and never in a fresh
# process or with the cache off. The fault lies in JAX's serialisation and has not been
# isolated further.
_SOLVE = """
import json, sys
import attnlib
from attnlib import se, targets, tasks
attnlib.configure_jax()
s = json.loads(sys.argv[1])
task, target = tasks.Seq2Seq(T=s["T"], noise=s["noise"]), targets.Wishart(s["kappa0"])
# the record was made before the Newton correction (SESettings.refine) and the pathwise
# form of m_hat existed: refine=1 and the Stein form
r = se.solve(task, target, s["alpha"], s["lam"], n_qmc=s["n_qmc"], seed=0, refine=1,
             m_hat="stein")
fields = ("train_loss", "test_error", "mse", "objective")
print(json.dumps({"converged": bool(r.converged), **{k: float(getattr(r, k)) for k in fields}}))
"""


@pytest.fixture(scope="module")
def fresh(record):
    """se.solve at the record's second QMC level (32768 points), seed 0, cold, in a
    child process: a few seconds."""
    settings = {**SETTING, "n_qmc": int(record["theory.n_qmc"][1])}
    out = subprocess.run(
        [sys.executable, "-c", _SOLVE, json.dumps(settings)],
        capture_output=True, text=True, check=True, timeout=900,
    )  # fmt: skip
    r = types.SimpleNamespace(**json.loads(out.stdout.strip().splitlines()[-1]))
    assert r.converged
    return r


def test_record_holds_the_scripts_setting(record):
    for k, v in SETTING.items():
        assert record[f"params.{k}"] == pytest.approx(v), k


@pytest.mark.parametrize("field", [*METRICS, "objective"])
def test_fresh_solve_reproduces_the_stored_one(record, fresh, field):
    """Same QMC points, same seed: equal up to the fixed point's tolerance (1e-6 on
    (m/Q0, log q, log v), so 1e-4 relative on the metrics with margin)."""
    stored = record[f"theory.{field}"][1, 0]
    assert getattr(fresh, field) == pytest.approx(stored, rel=1e-4)


def test_fresh_solve_lies_within_the_stored_spread_of_the_reference(record, fresh):
    """The 32768-point solve against the reference (mean over seeds at the largest
    level): within 4 standard deviations of one solve at 32768 points (the spread of the
    stored seeds there, itself uncertain by a factor ~2 with 4 seeds: 4 sigma is wide)."""
    for field in METRICS:
        vals = record[f"theory.{field}"]
        ref = vals[-1].mean()
        sd = vals[1].std(ddof=1)
        assert abs(getattr(fresh, field) - ref) < 4 * sd, (field, getattr(fresh, field), ref, sd)


def test_reference_error_shrinks_with_n_qmc(record):
    """The spread over seeds at the largest QMC level is below the one at the smallest:
    the reference is more accurate than the default solve (one solve's error, relative)."""
    spread = [accuracy.fixed_point_error([_Row(record, i, s) for s in range(4)])
              for i in (0, -1)]  # fmt: skip
    assert spread[1] < spread[0] / 2, spread


def test_simulations_converged_and_fit(record):
    """Every run stopped on its tolerance, the restarted ones moved their objective by
    less than 1e-9, and the 1/d fit of each metric is defined (at least 3 sizes)."""
    assert np.all(record["sims.residual"] <= record["params.tol"])
    moved = record["sims.d_objective"]
    checked = moved[np.isfinite(moved)]
    assert checked.size >= 3 and np.all(checked < 1e-9), checked
    d = record["sims.d"]
    ds = np.unique(d)
    assert ds.size >= 3
    for field in METRICS:
        stats = [finite_size.mean_and_sem(record[f"sims.{field}"][d == x]) for x in ds]
        fit = finite_size.fit_inverse_d(ds, *np.array(stats).T)
        assert np.isfinite(fit.a) and fit.a_err > 0


class _Row:
    """An SEResult-like view of the stored seed ``s`` at QMC level ``i``."""

    def __init__(self, record, i, s):
        self.converged = bool(record["theory.converged"][i, s])
        for f in METRICS:
            setattr(self, f, float(record[f"theory.{f}"][i, s]))
