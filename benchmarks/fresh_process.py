"""A script's first se.solve in a fresh process, with and without the compilation cache.

``attnlib.configure_jax()`` turns on JAX's persistent compilation cache (with float64;
see attnlib's package docstring). This script times, each in a new interpreter, the script

    import attnlib; from attnlib import se, tasks; from attnlib.targets import Wishart
    attnlib.configure_jax()
    se.solve(tasks.Seq2Seq(T=2), Wishart(0.5), 0.3, 0.1)

(wall time from before the import to the result, compilation included) with

- ``ATTNLIB_JAX_CACHE=off``: no cache, everything compiled;
- attnlib's default cache, in a fresh folder (``XDG_CACHE_HOME`` in a temporary
  directory): a first process fills it, the second (timed) reads it;
- the Makefile's settings (``JAX_COMPILATION_CACHE_DIR`` and
  ``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0.2``) on the same filled folder;

and prints the ratios (target: the default within 2x of the Makefile's). The load
average is printed too: on a shared machine compare ratios from the same run.

    python benchmarks/fresh_process.py
"""

import os
import subprocess
import sys
import tempfile
import time

SCRIPT = (
    "import attnlib; from attnlib import se, tasks; from attnlib.targets import Wishart;"
    "attnlib.configure_jax();"
    "r = se.solve(tasks.Seq2Seq(T=2), Wishart(0.5), 0.3, 0.1); print(r.converged)"
)


def fresh_process(**env_vars):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "ATTNLIB_JAX"))}
    env.update(JAX_PLATFORMS="cpu", **env_vars)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True)
    wall = time.perf_counter() - t0
    if out.returncode:
        raise RuntimeError(out.stderr.decode()[-2000:])
    return wall


def main():
    print(f"load average at start: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        off = fresh_process(ATTNLIB_JAX_CACHE="off", XDG_CACHE_HOME=tmp)
        print(f"no cache (ATTNLIB_JAX_CACHE=off): {off:.1f} s")
        fill = fresh_process(XDG_CACHE_HOME=tmp)
        print(f"attnlib's default cache, first process (fills it): {fill:.1f} s")
        default = fresh_process(XDG_CACHE_HOME=tmp)
        print(f"attnlib's default cache, filled: {default:.1f} s")
        folder = os.path.join(tmp, "attnlib", "jax")
        make = fresh_process(
            JAX_COMPILATION_CACHE_DIR=folder, JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0.2"
        )
        print(f"the Makefile's settings, same folder: {make:.1f} s")
    print(
        f"ratios: no cache / default {off / default:.1f}; "
        f"default / Makefile's {default / make:.2f} (target <= 2)"
    )
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
