"""Which tests cost the most on a cold compilation cache, measured from a warm run.

A pytest plugin: ``python -m pytest -p benchmarks.cold_compile_profile -m "not slow and
not quick" tests``. JAX reports, for each program it loads from the persistent cache,
the compile time the cache saved, and, for each program it compiles, the backend compile
time. Their sum per test is that test's compilation cost on an empty cache (up to the
load of the machine when the program was first compiled). At the end of the session the
plugin prints the twenty most expensive test files and tests, and the totals; with
``COLD_PROFILE_OUT=FILE`` it also writes one line per test (seconds saved, seconds
compiled, programs loaded, programs compiled, test id) to FILE.
"""

from __future__ import annotations

import collections
import os

import jax
import pytest
from jax._src import compiler as _compiler  # private: only its cache-hit log is wrapped

_SAVED = "/jax/compilation_cache/compile_time_saved_sec"
_COMPILED = "/jax/core/compile/backend_compile_duration"

_current = ["(collection)"]
_last_key = [None]
_seen_keys: set = set()
_log_hit = _compiler.log_persistent_cache_hit


def _recording_hit(module_name, cache_key):
    _last_key[0] = cache_key
    return _log_hit(module_name, cache_key)


_compiler.log_persistent_cache_hit = _recording_hit
_per_test = collections.defaultdict(lambda: [0.0, 0.0, 0, 0])


def _on_duration(event: str, duration: float, **_) -> None:
    if event == _SAVED:
        if _last_key[0] in _seen_keys:
            return
        _seen_keys.add(_last_key[0])
        row = _per_test[_current[0]]
        row[0] += duration
        row[2] += 1
    elif event == _COMPILED:
        row = _per_test[_current[0]]
        row[1] += duration
        row[3] += 1


jax.monitoring.register_event_duration_secs_listener(_on_duration)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _current[0] = item.nodeid
    yield
    _current[0] = "(between tests)"


def _table(title: str, rows: dict, terminal) -> None:
    terminal.write_line(title)
    terminal.write_line(f"{'saved s':>9} {'compiled s':>10} {'loaded':>7} {'compiled':>8}  name")
    ranked = sorted(rows.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))
    for name, (saved, compiled, n_loaded, n_compiled) in ranked[:20]:
        terminal.write_line(f"{saved:9.1f} {compiled:10.1f} {n_loaded:7d} {n_compiled:8d}  {name}")


def pytest_terminal_summary(terminalreporter):
    per_file = collections.defaultdict(lambda: [0.0, 0.0, 0, 0])
    for nodeid, row in _per_test.items():
        acc = per_file[nodeid.split("::")[0]]
        for i, value in enumerate(row):
            acc[i] += value
    total = [sum(row[i] for row in _per_test.values()) for i in range(4)]
    terminalreporter.write_sep("=", "cold-cache compilation cost (from a warm run)")
    terminalreporter.write_line(
        f"total: {total[0]:.0f} s saved by the cache ({total[2]} programs), "
        f"{total[1]:.0f} s compiled ({total[3]} programs)"
    )
    _table("by file:", per_file, terminalreporter)
    _table("by test:", _per_test, terminalreporter)
    out = os.environ.get("COLD_PROFILE_OUT")
    if out:
        with open(out, "w") as fh:
            for nodeid, (saved, compiled, n_loaded, n_compiled) in sorted(_per_test.items()):
                fh.write(f"{saved:.2f}\t{compiled:.2f}\t{n_loaded}\t{n_compiled}\t{nodeid}\n")
