r"""GAMP for the ERM of the attention-indexed model on a finite data set (matrix form).

The ERM (the book's chapters 04_gamp and 05_state_evolution, and its notation page) on
``n`` sequences ``X_mu`` of shape ``(T, d)``:

    nuclear:   min_{S PSD}  sum_mu ||Y_mu - g(h_mu(S))||^2 + d lam Tr S,
    frobenius: min_S        sum_mu ||Y_mu - g(h_mu(S))||^2 + d (lam/2) ||S||_F^2.

The iteration (the pairs ``Z_ab``, the output step ``g = (h* - omega) / V`` with ``h*``
the prox of the loss, ``a_hat``, ``B = S_hat + (1 / (d a_hat)) sum_mu sum_ab g_ab Z_ab``
and the spectral prox ``S_hat = F(B)`` with threshold ``tau = lam / a_hat``) is that of
:mod:`attnlib.gamp`; here it is configured with the task's ERM output step
(:meth:`attnlib.channels.Channel.gamp_output`) and the penalty's prox
(:class:`attnlib.gamp.SpectralProx`).

Fixed point = ERM minimiser. At a fixed point ``omega = h(S_hat) - V g`` and
``h* = omega + V g``, so ``h* = h(S_hat)`` and, by the optimality of the prox,
``g = -grad_h loss(Y, h(S_hat))``. Since ``grad_S L(S) = sum_mu sum_ab
(d loss / d h_ab) Z_ab``, ``B = S_hat - grad L(S_hat) / (d a_hat)`` and ``F`` is the
proximal-gradient step with step size ``eta = 1 / (d a_hat)``: the threshold ``eta d lam
= lam / a_hat`` (nuclear) and the shrinkage ``1 + eta d lam = 1 + lam / a_hat``
(Frobenius) are exactly those of the penalties above. A fixed point of GAMP (any ``a_hat
> 0``, any damping) is therefore a fixed point of proximal gradient: it satisfies the
KKT conditions of the ERM.

Numerics. ``S_hat``, ``v`` and ``g`` are damped (``new = beta old + (1 - beta) update``,
default ``beta = 0.5``; undamped iterations oscillate at ``d = 60``). For non-linear tasks
the ``K``-dimensional prox is a few steps of the safeguarded Newton method of
:func:`attnlib.channels.prox`, warm-started at the previous ``h*``; a batch in which some
sequence does not end at a verified strict local minimum is redone with more steps, then
with the multi-start solver of :func:`attnlib.channels.output_step`. The linear task uses
the closed form. Each iteration costs one ``(d, nT) @ (nT, d)`` product, one ``d x d``
eigendecomposition and the ``n`` small prox problems.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np

from attnlib import _checks, _compiled_programs, channels, follow
from attnlib import gamp as _gamp
from attnlib.gamp import GAMPResult, GAMPSettings
from attnlib.gamp import data_gradient_sum as data_gradient_sum  # the chapters' amp.* names
from attnlib.gamp import spectral_prox as spectral_prox
from attnlib.spectral_map import PENALTIES, check_penalty
from attnlib.tasks import Dataset, Task

# GAMPResult, data_gradient_sum and spectral_prox are attnlib.gamp's (documented there)
__all__ = ["PENALTIES", "gamp", "robust_gamp"]

_log = logging.getLogger(__name__)


def _check_gamp_args(task, lam, penalty):
    if channels.for_task(task).scale_free:  # the scale contracts to 0: see attnlib.hardmax
        raise ValueError(f"task {task!r}: piecewise-constant loss; use attnlib.hardmax.gamp")
    check_penalty(penalty)
    return (
        _checks.nonnegative("lam", lam) if penalty == "frobenius" else _checks.positive("lam", lam)
    )


def _initial_matrix(d, S_init, v_init):
    v_init = _checks.positive("v_init", v_init)
    if S_init is None:
        return np.zeros((d, d)), v_init
    S = np.asarray(_checks.square_matrix("S_init", S_init, d), dtype=np.float64)
    return 0.5 * (S + S.T), v_init


def gamp(
    task: Task,
    data: Dataset,
    lam: float,
    penalty: str = "nuclear",
    *,
    settings: GAMPSettings | None = None,
    damping: float | None = None,
    max_iter: int | None = None,
    tol: float | None = None,
    S_init=None,
    v_init: float = 1.0,
    n_newton: int | None = None,
) -> GAMPResult:
    r"""GAMP for the nuclear + PSD or Frobenius ERM on the data set ``data``.

    See the module docstring for the iteration and why its fixed point is the
    ERM minimiser (:func:`attnlib.train.train_convex` on the same data).

    Args:
      task: the task (loss and output function).
      data: :class:`attnlib.tasks.Dataset` with ``X`` ``(n, T, d)`` and ``Y``
        ``(n, *task.out_shape)``; ``alpha = n / d^2``.
      lam: penalty strength, ``> 0`` (nuclear) or ``>= 0`` (Frobenius).
      penalty: ``"nuclear"`` (PSD + trace) or ``"frobenius"``.
      settings: :class:`attnlib.gamp.GAMPSettings` (``damping``, ``max_iter``, ``tol``,
        ``observe``; default ``GAMPSettings()``).
      damping, max_iter, tol, n_newton: shorthands for the fields of ``settings`` (``None``:
        the field of ``settings``).
      S_init: starting symmetric matrix (default zero); v_init: starting ``v > 0``.
      n_newton: warm-started Newton steps of :func:`attnlib.channels.prox` per iteration
        (default 4; then 8 times more, then the multi-start :func:`~attnlib.channels.output_step`).

    Returns:
      :class:`attnlib.gamp.GAMPResult`. Warns (``RuntimeWarning``) with the residual if not
      converged; if the iteration produces NaN or a non-positive ``a_hat`` it stops, warns
      and returns NaN for ``S``, ``v`` and ``a_hat`` (``status = "breakdown"``).
    """
    lam = _check_gamp_args(task, lam, penalty)
    given = dict(damping=damping, max_iter=max_iter, tol=tol, n_newton=n_newton)
    settings = _gamp.resolve_settings(settings, **given)
    X, Y, d = _checks.dataset(task, data)
    S_start, v_init = _initial_matrix(d, S_init, v_init)  # S0 is the target's symbol only
    pair = (channels.for_task(task), _gamp.SpectralProx(penalty))
    start = _gamp.Start(S_start, v_init)
    _compiled_programs.release_if_needed()  # a long process: JAX's caches bounded
    return _gamp.run(pair, Dataset(X, Y, None), start, lam, settings=settings)


def robust_gamp(
    task: Task,
    data: Dataset,
    lam: float,
    penalty: str = "nuclear",
    *,
    dampings=(0.5, 0.85, 0.95),
    **gamp_kwargs,
) -> GAMPResult:
    """:func:`gamp` with heavier damping where it breaks down or does not converge.

    Runs :func:`gamp` with each damping of ``dampings`` in turn (its ``RuntimeWarning``
    silenced; each failure is logged on the ``attnlib.amp`` logger) and returns the first
    converged result, else the last one that did not break down (``converged=False``),
    else the last breakdown (NaN ``S``, ``v``, ``a_hat``; ``status="breakdown"``); both
    with a ``RuntimeWarning``. Damping does not move a fixed point, so the runs look for
    the same one.

    Args:
      task, data, lam, penalty: as in :func:`gamp`.
      dampings: the dampings tried, in order (a non-empty sequence of values in ``[0, 1)``).
      **gamp_kwargs: passed to :func:`gamp` (``max_iter``, ``tol``, ...).
    """
    if isinstance(dampings, (str, bytes)) or not hasattr(dampings, "__len__") or not dampings:
        raise ValueError(
            f"dampings must be a non-empty sequence of values in [0, 1), got {dampings!r}"
        )
    dampings = [
        _checks.in_interval("dampings", b, 0.0, 1.0, low_open=False, high_open=True)
        for b in dampings
    ]

    def attempt(damp):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return gamp(task, data, lam, penalty, damping=damp, **gamp_kwargs)

    def failed(damp, r):
        if r.status == "breakdown":
            _log.info("GAMP broke down with damping %s (after %d iterations)", damp, r.n_iter)
        else:
            _log.info("GAMP did not converge with damping %s (residual %.1e)", damp, r.residual)

    t = follow.retry(attempt, dampings, failed=failed)
    if t.accepted:
        return t.result
    res = next((r for r in reversed(t.tried) if r.status != "breakdown"), t.result)
    msg = f"robust_gamp: no damping of {dampings} converged ({res.status})"
    warnings.warn(msg, RuntimeWarning, stacklevel=2)
    return res
