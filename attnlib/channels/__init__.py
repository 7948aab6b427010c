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

- :mod:`attnlib.channels.channel`: :class:`Channel`, the output channel of one task
  (labels, ERM prox and output step, the test error from the overlaps, the Bayes
  posterior, ``m_eff``); :mod:`attnlib.channels.linear`, :mod:`attnlib.channels.softmax`
  and :mod:`attnlib.channels.hardmax_channel` hold the built-in tasks' channels and
  :func:`for_task` (:mod:`attnlib.channels.dispatch`) picks one: the one dispatch on
  the task type;
- :mod:`attnlib.channels.losses`: the loss, its exact gradient and Hessian, the
  closed form of the linear task;
- :mod:`attnlib.channels.newton`: the safeguarded Newton step (non-convex softmax);
- :mod:`attnlib.channels.prox`: :func:`prox`, the jitted multi-start proximal solve
  used by the state evolution and by GAMP, :func:`output_step` and :func:`label_start`,
  each through the task's channel;
- :mod:`attnlib.channels.hardmax`: the exact prox of the piecewise-constant hardmax
  loss (enumeration of regions and faces); :class:`HardmaxChannel`
  (:mod:`attnlib.channels.hardmax_channel`) uses it;
- the Bayes posterior (``J(mmse)``, the output step of GAMP-RIE; re-exported by
  :mod:`attnlib.bayes`): :mod:`attnlib.channels.posterior` (the Gaussian channels in
  closed form, the nested integral for noise on the outputs, :func:`attnlib.bayes.information`),
  :mod:`attnlib.channels.posterior_nested` (the pieces of the nested integrals),
  :mod:`attnlib.channels.posterior_hardmax` (hardmax by rejection),
  :mod:`attnlib.channels.posterior_hardmax_exact` (``T = 2`` hardmax: Gaussian orthants),
  :mod:`attnlib.channels.posterior_level_set` (seq2lab: a delta channel on a level set).
"""

from attnlib.channels import hardmax
from attnlib.channels.losses import (
    OutputStep,
    linear_step,
    loss_task,
    pair_loss,
    pair_weights,
    prox_objective,
    softmax_grad_hess,
)
from attnlib.channels.prox import Prox, finish, label_start, output_step, prox

# isort: split
# last: the channels use the numerics above (and the posterior modules, attnlib.qmc)
from attnlib.channels.channel import Channel, TestErrors
from attnlib.channels.dispatch import for_task, require_task

__all__ = [
    "Channel",
    "TestErrors",
    "for_task",
    "require_task",
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
