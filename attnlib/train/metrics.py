"""Metrics of a learned matrix: training loss, test error, mse and overlaps."""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import _checks
from attnlib.tasks import Dataset, Task, sample_sequences
from attnlib.train.objective import _mean_loss, _preacts

__all__ = [
    "Evaluation",
    "Overlaps",
    "TestError",
    "TestErrors",
    "evaluate",
    "train_loss",
    "test_error_stats",
    "test_error",
    "test_errors",
    "mse",
    "overlaps",
]


class Overlaps(NamedTuple):
    """``m = Tr(S S0)/d``, ``q = Tr(S^2)/d``, ``Q0 = Tr(S0^2)/d``."""

    m: float
    q: float
    Q0: float


class TestError(NamedTuple):
    """Monte Carlo estimate of a test error: ``mean`` and its standard error ``stderr``."""

    __test__ = False  # not a pytest test class

    mean: float
    stderr: float


def train_loss(task: Task, data: Dataset, S) -> float:
    """Mean per-sequence square loss ``(1/n) sum_mu ||Y_mu - g(h_mu(S))||^2``."""
    X, Y, d = _checks.dataset(task, data)
    S = jnp.asarray(_checks.square_matrix("S", S, d, symmetric=True), dtype=X.dtype)
    return float(_mean_loss(task, X, Y, S))


@functools.partial(jax.jit, static_argnames=("task", "noisy"))
def _test_batch(task, noisy, key, X, S0, S):
    h0 = _preacts(X, S0)
    target = task.labels(key, h0) if noisy else task.target_output(h0)
    return task.loss(target, _preacts(X, S))


def _test_batches(key, task, S0, S, n_test, batch, *, per_batch, flags=()):
    """The arguments checked, then ``per_batch(task, *flags, key_y, X, S0, S)`` on batches
    of at most ``batch`` fresh sequences, ``n_test`` in all: batch ``i`` draws its
    sequences and label noise from ``fold_in(key, i)`` (the same key, the same test set)."""
    n_test = _checks.integer("n_test", n_test, 2)
    batch = _checks.integer("batch", batch, 1)
    key = _checks.prng_key("key", key)
    S0 = _checks.square_matrix("S0", S0, symmetric=True)
    S = _checks.square_matrix("S", S, S0.shape[0], symmetric=True, against="S0")
    _checks.task(task)
    S0j, Sj = jnp.asarray(S0, jnp.float64), jnp.asarray(S, jnp.float64)
    for i, start in enumerate(range(0, n_test, batch)):
        kx, ky = jax.random.split(jax.random.fold_in(key, i))
        X = sample_sequences(kx, min(batch, n_test - start), task.T, S0.shape[0])
        yield np.asarray(per_batch(task, *flags, ky, X, S0j, Sj))


def test_error_stats(
    key: jax.Array,
    task: Task,
    S0,
    S,
    *,
    n_test: int = 20000,
    noisy: bool = False,
    batch: int = 5000,
) -> TestError:
    """Monte Carlo test error with its standard error (see :func:`test_error`)."""
    losses = np.concatenate(
        list(
            _test_batches(
                key, task, S0, S, n_test, batch, per_batch=_test_batch, flags=(bool(noisy),)
            )
        )
    )
    return TestError(float(losses.mean()), float(losses.std(ddof=1) / math.sqrt(losses.size)))


def test_error(
    key: jax.Array, task: Task, S0, S, *, n_test: int = 20000, noisy: bool = False
) -> float:
    """``e_test = E ||g(h(S0)) - g(h(S))||^2`` on ``n_test`` fresh sequences.

    The labels ``g(h(S0))`` are the teacher's: ``g0(h(S0))``, ``g0`` =
    :meth:`attnlib.tasks.Task.target_output`, where ``beta0 != beta``.

    With ``noisy=True`` the targets are the task's noisy labels instead,
    ``E ||Y - g(h(S))||^2`` (the label noise adds its own contribution).
    The same ``key`` gives the same test sequences, so two estimators compared
    with one key share their Monte Carlo error.
    """
    return test_error_stats(key, task, S0, S, n_test=n_test, noisy=noisy).mean


class TestErrors(NamedTuple):
    """Monte Carlo test errors on one set of fresh sequences and one draw of their label
    noise (:func:`test_errors`), each with its standard error in ``stderr`` (same order)."""

    __test__ = False  # not a pytest test class

    test_error: float
    test_error_noisy: float
    e0: float
    stderr: tuple


@functools.partial(jax.jit, static_argnames=("task",))
def _test_batch3(task, key, X, S0, S):
    h0 = _preacts(X, S0)
    Y = task.labels(key, h0)
    h = _preacts(X, S)
    clean = task.target_output(h0)
    return jnp.stack([task.loss(clean, h), task.loss(Y, h), task.target_loss(Y, h0)])


def test_errors(
    key: jax.Array, task: Task, S0, S, *, n_test: int = 20000, batch: int = 5000
) -> TestErrors:
    """The three test errors of ``S`` (target ``S0``) on ``n_test`` fresh sequences:

    - ``test_error = E ||g0(h(S0)) - g(h(S))||^2`` (noise-free labels; ``g0`` the
      teacher's output, :meth:`attnlib.tasks.Task.target_output`: ``g`` itself unless
      ``beta0 != beta``);
    - ``test_error_noisy = E ||Y - g(h(S))||^2`` against fresh noisy labels ``Y`` (the
      task's placement of the noise, ``noise_out`` included; the paper's ``e_test``);
    - ``e0 = E ||Y - g0(h(S0))||^2``, the floor of ``test_error_noisy``: the error of the
      teacher's clean output against the same noisy labels.

    All three on the same sequences and noise, so their differences carry less Monte
    Carlo error than the errors themselves; the same ``key`` gives the same test set (as
    :func:`test_error_stats`, whose sequences are the same for the same ``key``).
    """
    losses = np.concatenate(
        list(_test_batches(key, task, S0, S, n_test, batch, per_batch=_test_batch3)), 1
    )
    means = losses.mean(axis=1)
    err = losses.std(axis=1, ddof=1) / math.sqrt(losses.shape[1])
    return TestErrors(*(float(x) for x in means), tuple(float(x) for x in err))


def mse(S, S0) -> float:
    """``||S - S0||_F^2 / d``."""
    S0 = _checks.square_matrix("S0", S0, symmetric=True)
    S = _checks.square_matrix("S", S, S0.shape[0], against="S0")
    D = np.asarray(S, np.float64) - np.asarray(S0, np.float64)
    return float(np.sum(D * D) / S0.shape[0])


def overlaps(S, S0) -> Overlaps:
    """``(m, q, Q0) = (Tr(S S0)/d, Tr(S^2)/d, Tr(S0^2)/d)``; ``mse = Q0 - 2 m + q``."""
    S0 = np.asarray(_checks.square_matrix("S0", S0, symmetric=True), np.float64)
    S = np.asarray(_checks.square_matrix("S", S, S0.shape[0], against="S0"), np.float64)
    d = S0.shape[0]
    return Overlaps(
        m=float(np.sum(S * S0) / d), q=float(np.sum(S * S) / d), Q0=float(np.sum(S0 * S0) / d)
    )


class Evaluation(NamedTuple):
    """An estimate ``S`` measured against the target ``S0`` on its data set: the overlaps
    ``(m, q, Q0)`` (:func:`overlaps`), ``train_loss`` (:func:`train_loss`) and the Monte
    Carlo ``test_error`` with its standard error (:func:`test_error_stats`)."""

    m: float
    q: float
    Q0: float
    train_loss: float
    test_error: float
    test_error_stderr: float


def evaluate(key: jax.Array, task: Task, data: Dataset, S, S0, *, n_test: int = 20000):
    """:class:`Evaluation` of ``S`` (trained on ``data``, target ``S0``); ``key`` draws the
    ``n_test`` test sequences (the same key gives two estimators the same test set)."""
    ov = overlaps(S, S0)
    te = test_error_stats(key, task, S0, S, n_test=n_test)
    return Evaluation(ov.m, ov.q, ov.Q0, train_loss(task, data, S), te.mean, te.stderr)


# the metric names start with "test_": keep pytest from collecting them when imported
test_error.__test__ = False
test_errors.__test__ = False
test_error_stats.__test__ = False
