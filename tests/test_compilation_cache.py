"""Importing attnlib turns on JAX's persistent compilation cache in the user's cache
directory, unless the user configured one or set ``ATTNLIB_JAX_CACHE=off``. Each case
runs in a fresh interpreter (JAX reads its configuration once per process)."""

import json
import os
import subprocess
import sys

import pytest

PROBE = (
    "import json, attnlib, jax;"
    "print(json.dumps([jax.config.jax_compilation_cache_dir,"
    " jax.config.jax_persistent_cache_min_compile_time_secs]))"
)


def _probe(tmp_path, **env_vars):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JAX_", "ATTNLIB_JAX"))}
    env.update(JAX_PLATFORMS="cpu", XDG_CACHE_HOME=str(tmp_path / "xdg"), **env_vars)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


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
