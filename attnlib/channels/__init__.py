r"""Output channels: the per-sequence loss in pairs and its ``K``-dimensional proximal map.

Conventions (see the book's notation page):

- A sequence has ``K = T (T + 1) / 2`` pre-activation *pairs* ``h_ab``, ``a <= b``,
  ordered as in :func:`attnlib.tasks.pair_indices`; a symmetric ``T x T``
  matrix is rebuilt with :func:`attnlib.tasks.to_matrix`.
- The loss of a sequence is the task's square loss ``||Y - g(h)||^2`` summed over
  every output entry, seen as a function of the ``K`` pairs (:func:`pair_loss`).
- The output step of GAMP and of the state evolution (:func:`output_step`) is the
  proximal map of that loss with centres ``omega`` and variances ``V``, with
  ``g = (h* - omega) / V`` and ``dg = diag dg/domega``.

One idea per file:

- :mod:`attnlib.channels.losses`: the loss, its exact gradient and Hessian, the
  closed form of the linear task, the label-consistent start of Seq2Seq;
- :mod:`attnlib.channels.newton`: the safeguarded Newton step (non-convex softmax);
- :mod:`attnlib.channels.prox`: :func:`prox`, the jitted multi-start proximal solve
  used by the state evolution and by GAMP, and :func:`output_step`;
- :mod:`attnlib.channels.hardmax`: the exact prox of the piecewise-constant hardmax
  loss (enumeration of regions and faces); :func:`prox`, :func:`finish` and
  :func:`output_step` dispatch to it for :class:`attnlib.tasks.Hardmax`.
"""

from attnlib.channels import hardmax
from attnlib.channels.losses import (
    OutputStep,
    label_start,
    linear_step,
    loss_task,
    pair_loss,
    pair_weights,
    prox_objective,
    softmax_grad_hess,
)
from attnlib.channels.prox import Prox, finish, output_step, prox

__all__ = [
    "OutputStep",
    "Prox",
    "hardmax",
    "pair_loss",
    "prox_objective",
    "output_step",
    "pair_weights",
    "prox",
    "finish",
    "label_start",
    "linear_step",
    "loss_task",
    "softmax_grad_hess",
]
