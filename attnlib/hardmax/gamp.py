r"""GAMP on a finite data set for hardmax attention, renormalised (the nuclear + PSD penalty).

A configuration of the one GAMP loop :func:`attnlib.gamp.run` (module docstring there)
with the output channel of the zero-scale limit, the ``1/V``-weighted projection of
``omega`` on the closed region of each sequence's labels
(``channels.for_task(task).at_zero_scale()``, the channel of the state evolution; exact
derivatives, no jumps). Each step is
positively homogeneous of degree one in ``(S_hat, v)`` at fixed ``g`` (see
:mod:`attnlib.hardmax.state_evolution`), and the scale of ``S_hat`` contracts to zero, so
after each step ``S_hat`` and ``v`` are divided by ``sqrt(Tr(S_hat^2) / (d Q0))``
(``Q0`` the target's ``Tr S0^2 / d``, the normalisation of the state evolution); this
does not change the directions visited. The direction does not depend on ``lam > 0``
(``lam = 1`` is used). Convergence: the relative change of the normalised ``S_hat``.
"""

from __future__ import annotations

import math

import numpy as np

from attnlib import _checks, channels
from attnlib import gamp as _gamp
from attnlib.gamp import GAMPResult, GAMPSettings
from attnlib.tasks import Dataset, Hardmax

__all__ = ["gamp"]


def _start(d, Q0, S_init, v_init):
    v = _checks.in_interval("v_init", v_init, 1e-100, 1e100, low_open=False)
    S = np.eye(d) if S_init is None else _checks.square_matrix("S_init", S_init, d)
    S = np.asarray(S, dtype=np.float64)
    return _gamp.Start(0.5 * (S + S.T) / math.sqrt(np.sum(S**2) / (d * Q0)), v)


_SETTINGS = GAMPSettings(max_iter=500, tol=1e-6, name="hardmax gamp")  # the default settings


def gamp(
    task, data, target, *, settings: GAMPSettings | None = None, damping: float | None = None,
    max_iter: int | None = None, tol: float | None = None, S_init=None, v_init: float = 0.3,
    observe=None,
) -> GAMPResult:  # fmt: skip
    """Renormalised GAMP for hardmax attention on ``data`` (``X`` ``(n, T, d)``, ``Y``
    ``(n, T, T)``); ``target`` gives the normalisation ``Tr S^2 / d = Q0`` (its ``Q0``, in
    ``[1e-100, 1e100]``, that of the state evolution; ``v_init`` in the same range, default
    ``0.3``). ``S_init``: symmetric ``(d, d)`` start (default the identity: no
    information). ``settings``: :class:`attnlib.gamp.GAMPSettings` (default: damping
    ``0.5``, ``max_iter`` 500, ``tol`` ``1e-6``); ``damping``,
    ``max_iter``, ``tol``, ``observe``: shorthands for its fields (``None``: the field of
    ``settings``). Warns with the residual if ``max_iter`` iterations do not reach ``tol``.
    ``observe``: optional callable of the normalised ``S`` (numpy ``(d, d)``) returning a
    float, recorded after every iteration in ``trace`` (e.g. the cosine with the target: at
    finite ``d`` the iterate fluctuates around the state evolution's ray, average over
    iterations). Returns :class:`attnlib.gamp.GAMPResult`; the last scale factor (``< 1``:
    contraction per step) is ``trajectory.scale[-1]``, ``a_hat`` is before the rescaling."""
    channels.require_task(task, Hardmax)
    X, Y, d = _checks.dataset(task, data)
    _checks.target(target)
    Q0 = _checks.in_interval("target.Q0", target.Q0, 1e-100, 1e100, low_open=False)
    given = dict(damping=damping, max_iter=max_iter, tol=tol, observe=observe)
    settings = _gamp.resolve_settings(settings, _SETTINGS, **given)
    start = _start(d, Q0, S_init, v_init)
    channel = channels.for_task(task).at_zero_scale()
    denoiser = _gamp.SpectralProx("nuclear", target, ray=True)  # that of the state evolution
    r = _gamp.run((channel, denoiser), Dataset(X, Y, None), start, 1.0, settings=settings)
    if r.status == "breakdown" and r.n_iter == 1 and not r.trajectory.scale[0] > 0:
        why = f"v_init = {v_init!r}: the first step thresholds the whole spectrum (S_hat = 0)"
        raise ValueError(why + "; start from a smaller v_init")
    return r
