"""attnlib.sweep: Dask against a plain loop, resume after a kill, corrupt cache files,
failure records, warm-start chains.

One two-worker local cluster serves the whole module (its start-up, a few seconds,
is paid once). The workers are processes, as in production: the point functions
below are module-level so that the workers import them by name.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import attnlib
from attnlib import sweep, targets

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


# ---------------------------------------------------------------------------
# Point functions (module level: imported by the workers and the subprocess)
# ---------------------------------------------------------------------------


def jax_point(alpha, d, seed):
    """A Wishart target and a Gaussian design from explicit keys (JAX in the worker)."""
    k_s0, k_x = jax.random.split(jax.random.fold_in(jax.random.PRNGKey(7), seed))
    S0 = targets.Wishart(0.5).sample(k_s0, d)
    X = jax.random.normal(k_x, (16, d), dtype=jnp.float64)
    h = jnp.einsum("ni,ij,nj->n", X, S0, X) / d
    eigs = np.linalg.eigvalsh(np.asarray(S0))
    return {"loss": float(alpha * jnp.mean(h**2)), "eigs": eigs[-3:]}


def echo_point(x, lam):
    """Returns a parameter's name with another value (an array) and with the same value."""
    return {"lam": np.full(2, lam), "x": x}


def counted_point(x, seed, calls, sleep=0.0):
    """``x**2 + seed``; writes one file into the folder ``calls`` per call."""
    Path(calls, f"{x}-{seed}-{uuid.uuid4().hex}").touch()
    time.sleep(sleep)
    return {"y": x * x + seed}


def failing_point(x, seed):
    if x == 2 and seed == 1:
        raise FloatingPointError("diverged")
    if x == 4:  # a curve of points, one of which did not converge
        return {"y": float(x + seed), "converged": np.array([True, seed == 1, True])}
    return {"y": float(x + seed), "converged": x != 3}


def chained_point(alpha, lam, init=None):
    """A warm-started recursion: state_k = state_{k-1} / 2 + alpha * lam."""
    state = (0.0 if init is None else init) / 2 + alpha * lam
    return {"state": state}, state


def chained_counted(alpha, calls, init=None):
    Path(calls, f"{alpha}-{uuid.uuid4().hex}").touch()
    state = (0.0 if init is None else init) + alpha
    return {"s": state}, state


def n_calls(folder) -> int:
    return len(list(Path(folder).iterdir()))


@pytest.fixture(scope="module")
def client():
    with sweep.local_client(2) as c:
        yield c


# ---------------------------------------------------------------------------
# Dask against a serial loop
# ---------------------------------------------------------------------------


def test_two_workers_equal_a_serial_loop(client, tmp_path):
    alphas, ds = [0.2, 0.5, 1.0], [6]  # one d: one JAX compilation per worker
    grid = sweep.Grid(jax_point, {"alpha": alphas, "d": ds}, seeds=2)
    res = sweep.run(grid, client=client, cache_dir=tmp_path, progress=False)
    assert res.ok and res.n_computed == 6 and len(res.table) == 6
    # the same points by hand, in this process: identical numbers (same keys, float64)
    for _, row in res.table.iterrows():
        direct = jax_point(row["alpha"], row["d"], row["seed"])
        assert row["loss"] == direct["loss"]
        np.testing.assert_array_equal(row["eigs"], direct["eigs"])
    loss = sweep.pivot(res.table, "loss", {"d": ds, "seed": range(2), "alpha": alphas})
    assert loss.shape == (1, 2, 3)
    assert loss[0, 1, 0] == jax_point(0.2, 6, 1)["loss"]
    eigs = sweep.pivot(res.table, "eigs", {"alpha": alphas, "seed": [0, 1]})
    assert eigs.shape == (3, 2, 3)


def test_chains_warm_start_in_order_on_the_cluster(client, tmp_path):
    alphas, lams = [0.3, 0.1, 0.2], [1.0, 2.0]
    grid = sweep.Grid(chained_point, {"lam": lams, "alpha": alphas}, chain="alpha")
    assert len(grid.chains()) == 2  # one chain per lam, run as one task each
    res = sweep.run(grid, client=client, cache_dir=tmp_path, progress=False)
    for lam in lams:
        state = 0.0
        for alpha in alphas:  # declared order, not sorted
            state = state / 2 + alpha * lam
            got = res.table.query("lam == @lam and alpha == @alpha")["state"].item()
            assert got == state


def test_failures_are_recorded_and_the_grid_continues(client, tmp_path):
    grid = sweep.Grid(failing_point, {"x": [1, 2, 3, 4]}, seeds=2)
    res = sweep.run(grid, client=client, cache_dir=tmp_path, progress=False)
    t = res.table
    status = {(x, s): st for x, s, st in zip(t["x"], t["seed"], t["status"], strict=True)}
    assert status == {
        (1, 0): "ok",
        (1, 1): "ok",
        (2, 0): "ok",
        (2, 1): "error",
        (3, 0): "not_converged",
        (3, 1): "not_converged",
        (4, 0): "not_converged",
        (4, 1): "ok",
    }
    err = res.failures.query("status == 'error'")["error"].item()
    assert err.startswith("FloatingPointError: diverged")
    assert np.isnan(res.table.query("x == 2 and seed == 1")["y"].item())
    assert res.table.query("x == 3 and seed == 1")["y"].item() == 4.0  # the row is kept
    text = res.summary()
    assert "4 failed" in text and "x=2, seed=1" in text and "diverged" in text
    # an error is not cached (retried next time); a non-converged point is a result
    again = sweep.run(grid, serial=True, cache_dir=tmp_path, progress=False)
    assert (again.n_cached, again.n_computed) == (7, 1)


# ---------------------------------------------------------------------------
# Cache: resume, corruption, invalidation
# ---------------------------------------------------------------------------

_KILLED_RUN = """
import sys
sys.path.insert(0, {tests!r})
from attnlib import sweep
from test_sweep import counted_point
grid = sweep.Grid(counted_point, {{"x": list(range(8)), "calls": {calls!r}, "sleep": 0.4}},
                  seeds=1)
sweep.run(grid, serial=True, cache_dir={cache!r}, progress=False)
"""


def test_a_killed_grid_resumes_with_only_the_missing_points(tmp_path):
    calls, cache = tmp_path / "calls", tmp_path / "cache"
    calls.mkdir()
    code = textwrap.dedent(_KILLED_RUN).format(tests=str(HERE), calls=str(calls), cache=str(cache))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(HERE)])}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env)
    grid = sweep.Grid(counted_point, {"x": list(range(8)), "calls": str(calls), "sleep": 0.4}, 1)
    store = sweep.Cache(cache, grid.name)
    deadline = time.time() + 120
    while len(store) < 3 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)  # no clean-up: as a killed job or a power cut
    proc.wait()
    n_stored = len(store)
    assert 3 <= n_stored < 8, "the first run must be killed half-way"
    first = n_calls(calls)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sweep.CorruptEntry)  # no torn entry after the kill
        res = sweep.run(grid, serial=True, cache_dir=cache, progress=False)
    assert res.n_cached == n_stored
    assert n_calls(calls) - first == 8 - n_stored  # only the missing points were computed
    assert list(res.table["y"]) == [x * x for x in range(8)]
    assert sweep.run(grid, serial=True, cache_dir=cache, progress=False).n_computed == 0


def test_a_corrupt_or_partial_cache_file_is_recomputed(tmp_path):
    calls = tmp_path / "calls"
    calls.mkdir()
    grid = sweep.Grid(counted_point, {"x": [1, 2, 3, 4], "calls": str(calls)}, seeds=1)
    first = sweep.run(grid, serial=True, cache_dir=tmp_path, progress=False)
    store = sweep.Cache(tmp_path, grid.name)
    keys = grid.keys()
    blob = store.path(keys[0]).read_bytes()
    store.path(keys[0]).write_bytes(blob[: len(blob) // 2])  # partial write
    flipped = bytearray(store.path(keys[1]).read_bytes())
    flipped[-5] ^= 0xFF  # one corrupted byte in the payload
    store.path(keys[1]).write_bytes(bytes(flipped))
    store.path(keys[2]).write_bytes(b"")  # empty file
    with pytest.warns(sweep.CorruptEntry) as caught:
        again = sweep.run(grid, serial=True, cache_dir=tmp_path, progress=False)
    assert len(caught) == 3
    assert (again.n_cached, again.n_computed) == (1, 3)
    assert n_calls(calls) == 4 + 3
    assert list(again.table["y"]) == list(first.table["y"]) == [1, 4, 9, 16]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the rewritten files are sound
        assert sweep.run(grid, serial=True, cache_dir=tmp_path, progress=False).n_computed == 0


def test_changing_one_value_recomputes_only_the_affected_points(tmp_path, monkeypatch):
    calls = tmp_path / "calls"
    calls.mkdir()

    def grid_of(xs):
        return sweep.Grid(counted_point, {"x": xs, "calls": str(calls)}, seeds=2)

    sweep.run(grid_of([1, 2, 3]), serial=True, cache_dir=tmp_path, progress=False)
    assert n_calls(calls) == 6
    res = sweep.run(grid_of([1, 2, 5]), serial=True, cache_dir=tmp_path, progress=False)
    assert n_calls(calls) == 8 and res.n_computed == 2
    # a chain: changing one alpha recomputes that point and the points after it only
    chain = {"alpha": [0.1, 0.2, 0.3, 0.4], "calls": str(calls)}
    sweep.run(
        sweep.Grid(chained_counted, chain, chain="alpha"),
        serial=True,
        cache_dir=tmp_path,
        progress=False,
    )
    assert n_calls(calls) == 12
    chain["alpha"] = [0.1, 0.2, 0.35, 0.4]
    res = sweep.run(
        sweep.Grid(chained_counted, chain, chain="alpha"),
        serial=True,
        cache_dir=tmp_path,
        progress=False,
    )
    assert n_calls(calls) == 14 and res.n_cached == 2
    np.testing.assert_allclose(res.table["s"], np.cumsum(chain["alpha"]), rtol=0, atol=1e-15)
    # a new attnlib version invalidates every entry
    monkeypatch.setattr(attnlib, "__version__", "0.0.0-test")
    assert sweep.run(grid_of([1]), serial=True, cache_dir=tmp_path, progress=False).n_cached == 0


def test_a_chain_resumes_from_the_cached_state(tmp_path):
    calls = tmp_path / "calls"
    calls.mkdir()
    alphas = [0.1, 0.2, 0.3, 0.4]
    grid = sweep.Grid(chained_counted, {"alpha": alphas, "calls": str(calls)}, chain="alpha")
    sweep.run(grid, serial=True, cache_dir=tmp_path, progress=False)
    store = sweep.Cache(tmp_path, grid.name)
    store.path(grid.keys()[2]).unlink()  # as if killed before the third point was written
    res = sweep.run(grid, serial=True, cache_dir=tmp_path, progress=False)
    assert n_calls(calls) == 5 and res.n_computed == 1
    np.testing.assert_allclose(res.table["s"], np.cumsum(alphas), rtol=0, atol=1e-15)


# ---------------------------------------------------------------------------
# Declaration
# ---------------------------------------------------------------------------


def test_grid_declaration_and_bad_arguments():
    g = sweep.Grid(failing_point, sweep.product(x=[1, 2]) + sweep.product(x=3), seeds=2)
    assert [p["x"] for p in g.points] == [1, 1, 2, 2, 3, 3]
    assert len(set(g.keys())) == 6
    assert g.name == "test_sweep.failing_point"
    with pytest.raises(ValueError, match="seeds"):
        sweep.Grid(failing_point, {"x": [1]}, seeds=0)
    with pytest.raises(ValueError, match="reserved"):
        sweep.Grid(failing_point, {"x": [1], "seed": [0]})
    with pytest.raises(ValueError, match="chain"):
        sweep.Grid(chained_point, {"lam": [1.0]}, chain="alpha")
    with pytest.raises(ValueError, match="parameter x"):
        sweep.Grid(failing_point, {"x": [object()]}).keys()
    with pytest.raises(ValueError, match="grid"):
        sweep.run("not a grid")


def test_an_output_named_like_a_parameter_is_kept():
    res = sweep.run(
        sweep.Grid(echo_point, {"x": [1], "lam": 0.5}), serial=True, cache=False, progress=False
    )
    assert res.table["lam"].item() == 0.5 and res.table["x"].item() == 1
    np.testing.assert_array_equal(res.table["lam_out"].item(), [0.5, 0.5])
    assert "x_out" not in res.table.columns


_EDITABLE_POINT = """
def point(x, seed):
    return {{"y": {value} * x + seed}}
"""


def _import_fresh(path: Path, name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_editing_the_point_function_or_the_library_recomputes(tmp_path, monkeypatch):
    """The cache key holds a hash of the source of the function's module and of attnlib,
    so a changed function (same name, same parameters) is not served stale numbers."""
    source = tmp_path / "editable_point.py"
    name = f"editable_point_{uuid.uuid4().hex}"
    cache = tmp_path / "cache"

    def run(value):
        source.write_text(_EDITABLE_POINT.format(value=value))
        fn = _import_fresh(source, name).point
        grid = sweep.Grid(fn, {"x": [1.0, 2.0]}, seeds=2, name="editable")
        return sweep.run(grid, serial=True, cache_dir=cache, progress=False)

    first = run(1.0)
    assert first.n_computed == 4
    assert run(1.0).n_cached == 4  # same code: served from the cache
    edited = run(3.0)
    assert edited.n_cached == 0 and edited.n_computed == 4
    np.testing.assert_array_equal(edited.table["y"], 3.0 * edited.table["x"] + edited.table["seed"])
    # a change anywhere in attnlib's source recomputes too
    monkeypatch.setattr(sweep.grid, "library_fingerprint", lambda: "edited-library")
    assert run(3.0).n_cached == 0


def test_library_fingerprint_follows_the_source(tmp_path, monkeypatch):
    fake = tmp_path / "attnlib"
    fake.mkdir()
    (fake / "__init__.py").write_text("x = 1\n")
    monkeypatch.setattr(attnlib, "__file__", str(fake / "__init__.py"))
    sweep.grid.library_fingerprint.cache_clear()
    try:
        before = sweep.grid.library_fingerprint()
        (fake / "__init__.py").write_text("x = 2\n")
        sweep.grid.library_fingerprint.cache_clear()
        assert sweep.grid.library_fingerprint() != before
    finally:
        monkeypatch.undo()
        sweep.grid.library_fingerprint.cache_clear()
