"""A bound on the compiled programs that JAX holds in one process.

Why. JAX keeps every program it compiles or loads, and XLA's CPU backend maps three
memory regions per compiled kernel (hundreds to thousands per state-evolution program).
A process that solves a few dozen different problems reaches Linux's
``vm.max_map_count`` (usually 65530), and XLA then dies of a segmentation fault with no
Python exception to catch.

The guard. A listener of JAX's compile events counts the programs made, and the
process's memory maps as they near ``FRACTION`` of ``vm.max_map_count``. Past it, the
next :func:`release_if_needed` (called by attnlib's solvers from host code before they
dispatch compiled programs) empties JAX's in-memory caches (``jax.clear_caches()``); the
next calls load their programs again from the disk cache. The maps left after a release
are held by something else: the next threshold is ``FRACTION`` of the room above them,
and a warning says when that room is nearly gone.
"""

from __future__ import annotations

import logging
import pathlib

import jax

try:  # whether host code runs inside a trace (a private function of JAX)
    from jax._src.core import trace_state_clean as _trace_state_clean
except ImportError:  # pragma: no cover - a JAX without it: the callers are host code
    _trace_state_clean = None

log = logging.getLogger(__name__)

FRACTION = 0.5  # of vm.max_map_count: past it, JAX's caches are emptied
MAPS_PER_PROGRAM = 1000  # a bound on one program's maps (the engine's largest: 552)
CALLS_EVERY = 200  # safe points between two counts taken by release_if_needed itself
DEFAULT_LIMIT = 65530  # Linux's default vm.max_map_count
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"  # one per program made

_RELEASED = (
    "%d memory maps (vm.max_map_count %d): JAX's in-memory compilation caches emptied, "
    "%d maps left; programs are loaded again from the disk cache"
)
_NO_ROOM = (
    "%d of vm.max_map_count = %d memory maps are held outside JAX's caches: the next "
    "compilations may crash the process (raise vm.max_map_count)"
)
_state = {"programs": 0, "calls": 0, "counts": 0, "releases": 0, "maps": 0, "floor": 0}
_next = {"programs": 0, "calls": CALLS_EVERY}
_flags = {"installed": False, "due": False}


def map_count() -> int | None:
    """The number of memory maps of this process (None where ``/proc`` is absent)."""
    try:
        with open("/proc/self/maps", "rb") as f:
            return f.read().count(b"\n")
    except OSError:
        return None


def map_limit() -> int:
    """``vm.max_map_count`` (Linux's default where it cannot be read)."""
    try:
        return int(pathlib.Path("/proc/sys/vm/max_map_count").read_text())
    except (OSError, ValueError):
        return DEFAULT_LIMIT


def threshold() -> int:
    """The map count past which JAX's caches are emptied: ``FRACTION`` of the room
    above the maps that the last release left (maps that JAX's caches do not hold;
    none before the first release), so ``FRACTION`` of ``vm.max_map_count`` at first."""
    floor = _state["floor"]
    return int(floor + FRACTION * (map_limit() - floor))


def _measure() -> None:
    """Count the maps; flag a release past the threshold; schedule the next count."""
    count = map_count()
    _state["counts"] += 1
    _next["calls"] = _state["calls"] + CALLS_EVERY
    if count is None:  # no /proc: nothing to measure, never again
        _next["programs"] = float("inf")
        return
    _state["maps"] = count
    room = threshold() - count
    _flags["due"] = _flags["due"] or room < 0
    _next["programs"] = _state["programs"] + max(1, room // MAPS_PER_PROGRAM)


def _on_duration(event: str, duration_secs: float, **kwargs) -> None:
    if event != COMPILE_EVENT:
        return
    _state["programs"] += 1
    if _state["programs"] >= _next["programs"]:
        _measure()


def install() -> None:
    """Start counting the programs JAX makes (once per process; idempotent)."""
    if not _flags["installed"]:
        jax.monitoring.register_event_duration_secs_listener(_on_duration)
        _flags["installed"] = True


def _outside_any_trace() -> bool:
    return True if _trace_state_clean is None else bool(_trace_state_clean())


def release_if_needed() -> bool:
    """Empty JAX's in-memory compilation caches when this process's memory maps have
    passed ``FRACTION`` of ``vm.max_map_count``; returns whether it did.

    Cheap: integer comparisons, except every ``CALLS_EVERY`` calls (a count of the
    maps, should JAX's compile events stop reaching the listener). Call it from host
    code between computations; inside a trace it does nothing."""
    install()
    _state["calls"] += 1
    if _state["calls"] >= _next["calls"]:
        _measure()
    if not _flags["due"] or not _outside_any_trace():
        return False
    before = _state["maps"]
    jax.clear_caches()
    _flags["due"] = False
    _state["releases"] += 1
    _state["floor"] = map_count() or 0  # the maps that JAX's caches do not hold
    _measure()
    limit, left = map_limit(), _state["maps"]
    log.info(_RELEASED, before, limit, left)
    if limit - left < 4 * MAPS_PER_PROGRAM:
        log.warning(_NO_ROOM, left, limit)
    return True


def stats() -> dict:
    """Counters of this process: programs made (seen since :func:`install`), calls of
    :func:`release_if_needed`, map counts taken, releases, the last map count."""
    return dict(_state)
