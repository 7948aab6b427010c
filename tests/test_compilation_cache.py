"""Importing attnlib changes no JAX setting; ``attnlib.configure_jax()`` turns on float64
and JAX's persistent compilation cache in the user's cache directory (unless the user
configured one or set ``ATTNLIB_JAX_CACHE=off``), and the theory refuses float32 with
an error naming that switch. Each case runs in a fresh interpreter (JAX reads its
configuration once per process)."""

import json
import os
import subprocess
import sys

import pytest

PROBE = (
    "import json, attnlib, jax; attnlib.configure_jax();"
    "print(json.dumps([jax.config.jax_compilation_cache_dir,"
    " jax.config.jax_persistent_cache_min_compile_time_secs]))"
)


# Imports attnlib and every module in it, and prints the JAX settings that changed.
IMPORT_ALL = """
import importlib, json, pkgutil, jax
before = dict(jax.config.values)
import attnlib
for m in pkgutil.walk_packages(attnlib.__path__, "attnlib."):
    importlib.import_module(m.name)
after = dict(jax.config.values)
changed = sorted(k for k in set(before) | set(after) if before.get(k, 0) != after.get(k, 0))
print(json.dumps(changed))
"""

# Every theory entry point in float32 mode, then after the switch.
FLOAT32 = """
import json, attnlib, jax
from attnlib import bayes, channels, se, targets, tasks
task, target = tasks.Seq2Seq(T=2), targets.Wishart(0.5)
calls = {
    "se.solve": lambda: se.solve(task, target, 0.3, 0.1, n_qmc=256),
    "bayes.solve": lambda: bayes.solve(task, target, 0.3),
    "channels.for_task": lambda: channels.for_task(tasks.Linear(T=1)),
}
out = {}
for name, call in calls.items():
    try:
        call()
        out[name] = "ran"
    except RuntimeError as err:
        out[name] = str(err)
attnlib.configure_jax()
out["after"] = bool(jax.config.jax_enable_x64) and channels.for_task(task) is not None
print(json.dumps(out))
"""


def _run(code, tmp_path, **env_vars):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "ATTNLIB_JAX"))}
    env.update(JAX_PLATFORMS="cpu", XDG_CACHE_HOME=str(tmp_path / "xdg"), **env_vars)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _probe(tmp_path, **env_vars):
    return _run(PROBE, tmp_path, **env_vars)


def test_importing_attnlib_changes_no_jax_setting(tmp_path):
    assert _run(IMPORT_ALL, tmp_path) == []
    assert not (tmp_path / "xdg" / "attnlib").exists()  # no cache folder made either


def test_the_probe_sees_a_changed_setting(tmp_path):
    """The import check can fail: a module that flips a setting on import is seen."""
    flip = IMPORT_ALL.replace(
        "import attnlib\n", "import attnlib\njax.config.update('jax_enable_x64', True)\n"
    )
    assert _run(flip, tmp_path) == ["jax_enable_x64"]


def test_theory_in_float32_names_the_switch(tmp_path):
    out = _run(FLOAT32, tmp_path)
    assert out.pop("after") is True
    for name, message in out.items():
        assert "attnlib.configure_jax()" in message, (name, message)
        assert "float32" in message, (name, message)


def test_configure_jax_turns_on_float64(tmp_path):
    code = (
        "import json, attnlib, jax; attnlib.configure_jax();"
        "print(json.dumps(jax.numpy.ones(1).dtype.name))"
    )
    assert _run(code, tmp_path) == "float64"


def test_import_sets_the_cache_in_the_user_cache_directory(tmp_path):
    folder, min_time = _probe(tmp_path)
    assert folder == str(tmp_path / "xdg" / "attnlib" / "jax")
    assert min_time == pytest.approx(0.2)
    assert (tmp_path / "xdg" / "attnlib" / "jax").is_dir()


def test_environment_variable_turns_it_off(tmp_path):
    folder, _ = _probe(tmp_path, ATTNLIB_JAX_CACHE="off")
    assert folder is None
    assert not (tmp_path / "xdg" / "attnlib").exists()


def test_environment_variable_names_a_folder(tmp_path):
    folder, _ = _probe(tmp_path, ATTNLIB_JAX_CACHE=str(tmp_path / "mine"))
    assert folder == str(tmp_path / "mine")


def test_a_cache_configured_through_jax_is_left_alone(tmp_path):
    folder, min_time = _probe(
        tmp_path,
        JAX_COMPILATION_CACHE_DIR=str(tmp_path / "theirs"),
        JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="3",
    )
    assert folder == str(tmp_path / "theirs")
    assert min_time == pytest.approx(3.0)
