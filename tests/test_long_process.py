"""A long process: JAX's compiled programs stay under ``vm.max_map_count``.

XLA's CPU backend maps every compiled kernel into memory (three maps each) and JAX's
caches keep every program; at ``vm.max_map_count`` (usually 65530) the process dies
of a segmentation fault (``benchmarks/long_process_maps.py``, whose child processes
these tests run). :mod:`attnlib._compiled_programs` empties JAX's caches first. The
child processes fill the map table with one-page regions to within a few thousand
maps of the limit, as a long process would have, so that a few hundred programs
reach it.
"""

import importlib.util
import pathlib

import jax
import jax.numpy as jnp
import pytest

from attnlib import _compiled_programs

ROOT = pathlib.Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(
    _compiled_programs.map_count() is None, reason="needs /proc (Linux)"
)


def _reproducer():
    spec = importlib.util.spec_from_file_location(
        "long_process_maps", ROOT / "benchmarks" / "long_process_maps.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_without_the_guard_the_process_dies_at_the_map_limit(tmp_path):
    """The root cause: 100 maps from the limit, about 30 small programs crash XLA (the
    test can fail: a JAX that raised instead would fail it, and the guard could go)."""
    rc, rows, err = _reproducer().run_child(str(tmp_path), 200, room=100)
    assert rc != 0 and "done" not in rows[-1], rows[-2:]
    assert "Cannot allocate memory" in err, err[-2000:]
    assert rows[-1]["maps"] > rows[0]["filled_to"]  # it died while the maps grew


def test_the_guard_empties_jax_caches_past_the_threshold(monkeypatch):
    """In this process: a limit 100 maps above the current count (so the threshold is
    50 maps above it); 40 distinct small programs (3 maps each) cross it, the guard
    empties JAX's caches, and each release unmaps at least 2 maps per program made
    since the previous one (none of them is held elsewhere)."""
    programs_before = _compiled_programs.stats()["programs"]
    _compiled_programs.install()
    count = _compiled_programs.map_count()
    monkeypatch.setattr(_compiled_programs, "map_limit", lambda: count + 100)
    monkeypatch.setitem(_compiled_programs._state, "floor", count)
    _compiled_programs._measure()  # schedule the next counts against the patched limit
    program = jax.jit(lambda x, k: jnp.cos(k * x) - k, static_argnames="k")
    releases, since = [], 0
    for k in range(40):
        program(jnp.ones(2), k=0.5 + k).block_until_ready()
        since += 1
        before = _compiled_programs.map_count()
        if _compiled_programs.release_if_needed():
            releases.append((before, _compiled_programs.map_count(), since))
            since = 0
    assert _compiled_programs.stats()["programs"] - programs_before >= 40  # events seen
    assert releases and releases[0][0] > count + 50, releases  # past the threshold
    for before, after, made in releases:
        assert after <= before - 2 * made, releases


@pytest.mark.slow
def test_two_thousand_distinct_programs_in_one_process(tmp_path):
    """2000 distinct programs, 3000 maps from the limit: without the guard the process
    dies (after about 1000), with it the same loop completes, cold (compiled, written
    to the persistent cache) and warm (loaded from it). About 6 min on 2 shared cores."""
    run_child = _reproducer().run_child
    rc, rows, _ = run_child(str(tmp_path / "control"), 2000, room=3000)
    assert rc != 0 and rows[-1]["programs"] < 2000, rows[-2:]
    for stage in ("cold", "warm"):
        rc, rows, err = run_child(str(tmp_path / "cache"), 2000, room=3000, guard=True)
        assert rc == 0, (stage, err[-2000:])
        assert rows[-1]["done"] == 2000 and rows[-1]["guard"]["releases"] >= 1, rows[-1]


@pytest.mark.slow
def test_distinct_solves_near_the_map_limit():
    """se.solve at four new QMC sizes, 6000 maps from the limit (a solve maps 1400 to
    2900): the engine's guard keeps the process alive; turned off, it dies."""
    cache = jax.config.jax_compilation_cache_dir or "off"
    run_child = _reproducer().run_child
    rc, rows, err = run_child(cache, 4, room=6000, kind="solve")
    assert rc != 0, rows[-2:]
    rc, rows, err = run_child(cache, 4, room=6000, guard=True, kind="solve")
    assert rc == 0, err[-2000:]
    assert rows[-1]["guard"]["releases"] >= 1, rows[-1]
