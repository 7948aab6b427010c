"""Reproducer: a long JAX process dies of a segmentation fault at ``vm.max_map_count``.

What grows when one process compiles many distinct programs with JAX's persistent
compilation cache on, first cold (compiled, then written to the cache), then warm
(loaded from the cache): the memory maps (``/proc/self/maps``), the open file
descriptors, the resident memory and the live executables. Each stage runs in a fresh
interpreter on one fresh cache folder, the program ``k`` being ``sin(k x) + k`` jitted
with ``k`` static (one distinct program each), every program stored in the cache.

    python benchmarks/long_process_maps.py                  # growth, cold then warm
    python benchmarks/long_process_maps.py --programs 3000
    python benchmarks/long_process_maps.py --solves 6       # se.solve of new QMC sizes
    python benchmarks/long_process_maps.py --at-limit       # the crash, then the guard

Measured (JAX 0.10.2, CPU, 2 cores, vm.max_map_count 65530; December 2026): 3 maps
per program of this kind, cold and warm alike (1000 programs: 497 -> 3498 maps cold,
487 -> 3484 warm), no file descriptor (6 throughout), about 1.4 MB of resident memory
per program; the maps go when the executables go (``jax.clear_caches()``: 3498 -> 519).
Programs with many kernels take more, three maps per kernel: the state-evolution
engine's 50 to 550 per program, 1400 to 2900 per ``se.solve`` of a new task or QMC
size (18 distinct solves, Seq2Seq T = 2, 3, 4, n_qmc = 128, 256, 512, both penalties:
26745 maps, 116 live executables). JAX's in-memory caches keep them all, so a process
running a few dozen distinct solves reaches the limit.

``--at-limit`` fills the map table (one-page ``mprotect`` regions) to within
``--room`` maps of the limit, as a long process would have, then compiles: XLA
prints "LLVM compilation error: Cannot allocate memory" and the process dies of
SIGSEGV, cold (a compilation) and warm (a cache load) alike. With attnlib's guard
(``attnlib._compiled_programs.release_if_needed`` between programs), which empties
JAX's caches past half the limit, the same loop completes.
"""

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time

CHILD = "child"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this checkout


def _maps() -> int:
    with open("/proc/self/maps", "rb") as f:
        return f.read().count(b"\n")


def _rss_mb() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmRSS"))


def _limit() -> int:
    with open("/proc/sys/vm/max_map_count") as f:
        return int(f.read())


def fill_maps(room: int) -> int:
    """Map one-page regions, every other page readable (one map each, no merging), until
    the process has ``limit - room`` maps; returns the count reached."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t] + [ctypes.c_int] * 3 + [ctypes.c_long]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    page, pairs = 4096, max(0, (_limit() - room - _maps()) // 2)
    base = libc.mmap(None, 2 * pairs * page + page, 0, 0x22, -1, 0)  # PROT_NONE, private anon
    for i in range(pairs):
        libc.mprotect(base + (2 * i + 1) * page, page, 1)  # PROT_READ: splits off 2 maps
    return _maps()


def _sample(i, t0, client):
    row = dict(programs=i, maps=_maps(), fds=len(os.listdir("/proc/self/fd")), rss_mb=_rss_mb())
    row.update(executables=len(client.live_executables()), s=round(time.perf_counter() - t0, 1))
    print(json.dumps(row), flush=True)


def _jit_programs(first: int):
    """Program ``i``: ``sin(k x) + k`` jitted with ``k = first + i`` static."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)  # store them all
    program = jax.jit(lambda x, k: jnp.sin(k * x) + k, static_argnames="k")
    return lambda i: program(jnp.ones(3), k=first + i).block_until_ready()


def _solves(first: int):
    """Program ``i``: ``se.solve`` (Seq2Seq T = 2, nuclear) at ``n_qmc = 2^(7 + first + i)``,
    a new QMC size, so that its programs are new to the process."""
    from attnlib import se, targets, tasks

    task, target = tasks.Seq2Seq(T=2), targets.Wishart(0.5)
    return lambda i: se.solve(task, target, 0.3, 0.1, n_qmc=2 ** (7 + first + i))


def child(kind: str, cache: str, n: int, room: int | None, guard: bool, first: int) -> None:
    """Make ``n`` distinct programs of ``kind`` ("jit": one jitted program each; "solve":
    one ``se.solve`` each, whose engine calls the guard itself) with the persistent cache
    in ``cache``; print a JSON row of the counters every n/10. Without ``guard`` the
    guard is turned off (a no-op)."""
    import jax

    import attnlib
    from attnlib import _compiled_programs

    os.environ["ATTNLIB_JAX_CACHE"] = cache
    attnlib.configure_jax()
    step = (_jit_programs if kind == "jit" else _solves)(first)
    if not guard:
        _compiled_programs.release_if_needed = lambda: False
    if room is not None:
        print(json.dumps({"filled_to": fill_maps(room), "limit": _limit()}), flush=True)
    client, t0 = jax.devices()[0].client, time.perf_counter()
    for i in range(n):
        if kind == "jit":
            _compiled_programs.release_if_needed()
        step(i)
        if i % max(1, n // 10) == 0 or i == n - 1:
            _sample(i + 1, t0, client)
    print(json.dumps({"done": n, "guard": _compiled_programs.stats()}), flush=True)


def run_child(cache, n, room=None, guard=False, first=0, kind="jit"):
    """Run :func:`child` in a fresh interpreter; returns (return code, JSON rows, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "ATTNLIB_JAX"))}
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")]))
    args = [str(a) for a in (kind, cache, n, room, int(guard), first)]
    out = subprocess.run(
        [sys.executable, __file__, CHILD, *args], env=env, capture_output=True, text=True
    )
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return out.returncode, rows, out.stderr


def _growth(name, rows):
    first, last = rows[0], rows[-1]
    n = last["programs"] - first["programs"]
    per = {k: round((last[k] - first[k]) / n, 3) for k in ("maps", "fds", "rss_mb", "executables")}
    print(f"{name}: {first['maps']} -> {last['maps']} maps over {n} programs; per program {per}")


def growth(n):
    with tempfile.TemporaryDirectory() as cache:
        for name in ("cold", "warm"):
            rc, rows, err = run_child(cache, n)
            for row in rows:
                print(" ", row)
            _growth(name, [r for r in rows if "maps" in r])
            assert rc == 0, err[-2000:]


def at_limit(n, room):
    with tempfile.TemporaryDirectory() as cache:
        for name, guard in (("cold", False), ("warm", False), ("warm, guarded", True)):
            rc, rows, err = run_child(cache, n, room=room, guard=guard)
            why = [line for line in err.splitlines() if "Cannot allocate" in line][-1:]
            print(f"{name}: return code {rc}, last rows {rows[-2:]}", *why, sep="\n  ")
            if name == "cold":  # fill the cache with every program, for the warm runs
                run_child(cache, n)


def solves(n):
    """``se.solve`` at ``n`` new QMC sizes in one process: maps per distinct solve."""
    import attnlib
    from attnlib import se, targets, tasks

    attnlib.configure_jax()
    before = _maps()
    for i in range(n):
        t0 = time.perf_counter()
        se.solve(tasks.Seq2Seq(T=2), targets.Wishart(0.5), 0.3, 0.1, n_qmc=2 ** (7 + i))
        m = _maps()
        print(f"n_qmc 2^{7 + i}: {m} maps (+{m - before}), {time.perf_counter() - t0:.1f} s")
        before = m


def main():
    if sys.argv[1:2] == [CHILD]:
        kind, cache, n, room, guard, first = sys.argv[2:]
        room = None if room == "None" else int(room)
        return child(kind, cache, int(n), room, guard == "1", int(first))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--programs", type=int, default=1000)
    p.add_argument("--solves", type=int, default=0)
    p.add_argument("--at-limit", action="store_true")
    p.add_argument("--room", type=int, default=300, help="maps left free by --at-limit")
    a = p.parse_args()
    print(f"vm.max_map_count {_limit()}; load average {os.getloadavg()[0]:.1f}")
    if a.solves:
        return solves(a.solves)
    if a.at_limit:
        return at_limit(min(a.programs, 400), a.room)
    return growth(a.programs)


if __name__ == "__main__":
    main()
