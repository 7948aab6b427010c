"""Safe first steps: the late ``configure_jax()`` warns, a sweep script without the
``__main__`` guard gets a one-line explanation. Each case runs in a fresh interpreter."""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _python(code, tmp_path, script=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "ATTNLIB_JAX"))}
    env.update(
        JAX_PLATFORMS="cpu",
        XDG_CACHE_HOME=str(tmp_path / "xdg"),
        ATTNLIB_SWEEP_CACHE=str(tmp_path / "sweep"),
        PYTHONPATH=str(ROOT),
    )
    if script is None:
        args = [sys.executable, "-c", code]
    else:
        (tmp_path / script).write_text(code)
        args = [sys.executable, script]
    return subprocess.run(args, env=env, capture_output=True, text=True, cwd=tmp_path, timeout=300)


LATE = """
import jax, attnlib
x = jax.numpy.ones(2) + 1          # JAX compiles its first program here
attnlib.configure_jax()
print(x.dtype, jax.numpy.ones(2).dtype)
"""


def test_configure_jax_warns_when_called_after_a_compilation(tmp_path):
    out = _python(LATE, tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["float32", "float64"]  # what the warning is about
    assert "RuntimeWarning: attnlib.configure_jax() was called after JAX compiled" in out.stderr
    first = LATE.replace(
        "x = jax.numpy.ones(2) + 1", "attnlib.configure_jax()\nx = 1.0 + jax.numpy.ones(2)"
    )
    out = _python(first + "attnlib.configure_jax()\n", tmp_path)  # called first, then again
    assert out.returncode == 0 and "RuntimeWarning" not in out.stderr, out.stderr[-2000:]


SWEEP = """
from attnlib import sweep


def point(a, seed):
    return {"y": a + seed, "converged": True}


grid = sweep.Grid(point, {"a": [1.0, 2.0]}, seeds=1)
res = sweep.run(grid, n_workers=1)
print("rows", len(res.table))
"""


@pytest.mark.slow
def test_sweep_script_without_the_main_guard_is_explained_in_one_line(tmp_path):
    """Measured: 11 s unguarded (the error), 13 s guarded (two points on one worker)."""
    out = _python(SWEEP, tmp_path, script="unguarded.py")
    assert out.returncode != 0
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: Dask could not start its worker processes")
    assert 'if __name__ == "__main__":' in last
    call = 'res = sweep.run(grid, n_workers=1)\nprint("rows", len(res.table))'
    indented = "    " + call.replace("\n", "\n    ")
    guarded = SWEEP.replace(call, 'if __name__ == "__main__":\n' + indented)
    out = _python(guarded, tmp_path, script="guarded.py")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "rows 2" in out.stdout
