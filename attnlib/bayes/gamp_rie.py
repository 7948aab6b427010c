r"""GAMP-RIE: Bayes-optimal message passing on a finite data set (arXiv:2408.03733 at T = 1).

Conventions (see the book's "Notation and conventions" page, ``book/notation.md``):
``h_ab(S) = <S, Z_ab>_F`` for the ``K`` pairs of each sequence, ``sigma_ab^2 = 1 + delta_ab``,
``alpha = n / d^2``. A configuration of the one GAMP loop (:func:`attnlib.gamp.run`, its
steps 1-4 in the module docstring there): the matrix GAMP of the ERM with the two
proximal maps replaced by Bayes-optimal ones. The output step's ``g = d/d omega log
Z_out`` and ``dg = diag dg/domega`` are the task channel's posterior
(:meth:`attnlib.channels.Channel.posterior_output`); ``B`` behaves like ``S0 +
sqrt(Delta_eff) W_goe`` with ``Delta_eff = 1 / (2 a_hat)``; the denoiser is the RIE
``f(x) = x - 2 Delta_eff h_R(x)`` of the prior's limiting ``rho_R``
(:class:`attnlib.denoisers.rie.RIE`, which applies
:func:`~attnlib.denoisers.rie.rie_denoise`), with ``v = 2 Delta_eff div F(B) / d^2``
(``= mmse_den(Delta_eff)`` in the limit). Start: the prior mean ``S_hat = (Tr S0 / d) I``
with ``v`` the prior variance (no information). Implemented channels: the Gaussian ones
(linear; seq2seq without noise or with noise on the logits) and ``T = 2`` hardmax
(:func:`attnlib.channels.posterior_hardmax_exact.output`). Each iteration costs one ``(d,
nT) @ (nT, d)`` product and one ``d x d`` eigendecomposition.
"""

from __future__ import annotations

import numpy as np

from attnlib import _checks, _gamp_checks
from attnlib import channels as _channels
from attnlib import gamp as _gamp
from attnlib import tasks as _tasks
from attnlib.denoisers import rie

__all__ = ["gamp_rie"]


def _check_inputs(task, data, target):
    _gamp_checks.posterior_task(task)  # a channel with an exact posterior
    task.check_bayes_model("gamp_rie")
    _checks.target(target)
    X, _, _ = _checks.dataset(task, data)
    return np.asarray(X, dtype=float)


_SETTINGS = _gamp.GAMPSettings(max_iter=50, tol=1e-5, name="gamp_rie")  # the default settings


def gamp_rie(
    task, data, target, *, settings: _gamp.GAMPSettings | None = None, S0=None,
    max_iter: int | None = None, tol: float | None = None, damping: float | None = None,
) -> _gamp.GAMPResult:  # fmt: skip
    r"""Run GAMP-RIE on ``data`` (:class:`attnlib.tasks.Dataset`) with the prior of ``target``.

    Args:
      task: a task with a Gaussian channel (:func:`attnlib.channels.posterior.is_gaussian`)
        or ``T = 2`` hardmax without noise or with noise on the logits.
      data: the data set (``X`` of shape ``(n, T, d)``, labels ``Y``).
      target: the prior of ``S0`` (its limiting spectrum enters the RIE).
      settings: :class:`attnlib.gamp.GAMPSettings` (default: ``max_iter``
        50 iterations, ``tol`` ``1e-5`` on the relative change of ``S``, ``damping`` 0.5, the
        weight of the old ``S``, ``v`` and ``g`` in each update, in ``[0, 1)``: undamped
        iterations diverge at ``d = 100``; damping does not move the fixed point).
      S0: the true target ``(d, d)``, only to record the mse ``||S - S0||_F^2 / d`` after
        each iteration, in ``trace`` (optional; it replaces ``settings.observe``).
      max_iter, tol, damping: shorthands for the fields of ``settings`` (``None``: the
        field of ``settings``).

    Returns:
      :class:`attnlib.gamp.GAMPResult`: ``Delta_eff = 1 / (2 a_hat)`` per iteration from
      ``trajectory.a_hat``, ``v`` per iteration in ``trajectory.v``, the mse in ``trace``.
      Warns when it did not converge or broke down (``a_hat`` not finite and positive).
    """
    X = _check_inputs(task, data, target)
    settings = _gamp.resolve_settings(settings, _SETTINGS, max_iter=max_iter, tol=tol,
                                      damping=damping)  # fmt: skip
    d = X.shape[2]
    observe = settings.observe
    if S0 is not None:
        S0 = np.asarray(_checks.square_matrix("S0", S0, d, True), float)

        def observe(S):
            return float(np.sum((S - S0) ** 2) / d)

    settings = settings._replace(observe=observe, posterior=True)
    start = _gamp.Start(np.eye(d) * target.measure().moment(1), rie.prior_variance(target))
    data = _tasks.Dataset(X, data.Y, None)
    return _gamp.run((_channels.for_task(task), rie.RIE(target)), data, start, settings=settings)
