r"""Empirical risk minimisation on a data set of the attention-indexed model.

Conventions (the book's "Notation and conventions" page, ``book/notation.md``). For
a data set ``(X, Y)`` of ``n`` sequences (:class:`attnlib.tasks.Dataset`) and a
symmetric ``d x d`` matrix ``S``:

- the data term is ``L(S) = sum_mu ||Y_mu - g(h_mu(S))||^2`` (a *sum* over
  sequences, each the task's square loss :meth:`attnlib.tasks.Task.loss`);
- the nuclear objective is ``L(S) + d * lam * Tr S`` over PSD ``S``;
- the Frobenius objective is ``L(S) + d * (lam / 2) * ||S||_F^2`` over symmetric ``S``;
- the factorised student has ``W`` of shape ``(d, p)``, ``S = W W^T / sqrt(p d)``
  and objective ``L(S) + lam_W ||W||_F^2``. Since ``||W||_F^2 = sqrt(p d) Tr S``
  ``= sqrt(kappa) d Tr S`` it equals the nuclear objective with
  ``lam = sqrt(kappa) lam_W`` (``kappa = p / d``), restricted to rank ``<= p``.

Three solvers, all jit-compiled and run in chunks of steps:

- :func:`train_factorized`: full-batch Adam (optax) on ``W``;
- :func:`train_direct`: full-batch Adam or gradient descent on a symmetric ``S``
  with the Frobenius penalty;
- :func:`train_convex`: accelerated proximal gradient (FISTA with backtracking
  and adaptive restart) on ``S`` with the nuclear + PSD proximal map (or the
  Frobenius one). It converges to the minimiser to near machine precision and is
  the reference the other solvers and GAMP are compared with.

Each returns a :class:`TrainResult`. Metrics: :func:`train_loss`, :func:`test_error`,
:func:`mse`, :func:`overlaps`.
"""

from __future__ import annotations

from attnlib.spectral_map import PENALTIES
from attnlib.train.adam import OptaxConfig
from attnlib.train.direct import train_direct
from attnlib.train.factorized import train_factorized
from attnlib.train.fista import train_convex
from attnlib.train.metrics import (
    Evaluation,
    Overlaps,
    TestError,
    TestErrors,
    evaluate,
    mse,
    overlaps,
    test_error,
    test_error_stats,
    test_errors,
    train_loss,
)
from attnlib.train.objective import factorized_preactivations, objective
from attnlib.train.proximal import prox_frobenius, prox_nuclear_psd
from attnlib.train.result import TrainResult
from attnlib.train.settings import TrainSettings

__all__ = [
    "PENALTIES",
    "OptaxConfig",
    "TrainResult",
    "TrainSettings",
    "Overlaps",
    "TestError",
    "TestErrors",
    "objective",
    "prox_nuclear_psd",
    "prox_frobenius",
    "factorized_preactivations",
    "train_factorized",
    "train_direct",
    "train_convex",
    "train_loss",
    "test_error",
    "test_error_stats",
    "test_errors",
    "mse",
    "overlaps",
    "Evaluation",
    "evaluate",
]
