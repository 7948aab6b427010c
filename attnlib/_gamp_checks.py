"""Argument validation of :mod:`attnlib.gamp` (its settings, :func:`attnlib.gamp.run`'s
arguments and the fields of its output and denoiser classes): a ``ValueError`` naming the
argument or field and its accepted range."""

from __future__ import annotations

import numpy as np

from attnlib import _checks, channels
from attnlib.tasks import Hardmax

__all__ = ["erm_task", "pair", "posterior_task", "resolve", "run_arguments"]


def erm_task(task) -> None:
    """The task of GAMP's ERM output step: hardmax at a ``T`` the exact prox solves."""
    if isinstance(task, Hardmax):
        channels.hardmax.regions(task.T)  # a ValueError naming T beyond it


def pair(pair):
    """:func:`attnlib.gamp.run`'s ``(channel, denoiser)`` (the first two entries of ``pair``)."""
    ok = isinstance(pair, tuple) and len(pair) >= 2 and isinstance(pair[0], channels.Channel)
    if not ok:
        raise ValueError(f"pair must be (channel, denoiser), a Channel first, got {pair!r}")
    return pair[0], pair[1]


def posterior_task(task) -> None:
    """The task of GAMP's Bayes output step: one whose channel has an exact posterior."""
    accepted = (
        "a Task with a Gaussian channel (is_gaussian) or T = 2 hardmax without noise or "
        "with noise_on='logits'"
    )
    channels.require_task(task, accepted=accepted)
    if not channels.for_task(task).exact_posterior_output:
        raise ValueError(f"task must be {accepted}, got {task!r}")


def _fields(settings):
    damping = _checks.in_interval(
        "damping", settings.damping, 0.0, 1.0, low_open=False, high_open=True
    )
    n_newton = settings.n_newton
    if settings.observe is not None and not callable(settings.observe):
        raise ValueError(f"observe must be None or a callable of S, got {settings.observe!r}")
    if not isinstance(settings.name, str):
        raise ValueError(f"name must be a str, got {settings.name!r}")
    return settings._replace(
        damping=damping,
        max_iter=_checks.integer("max_iter", settings.max_iter, 1),
        tol=_checks.positive("tol", settings.tol),
        n_newton=None if n_newton is None else _checks.integer("n_newton", n_newton, 1),
        warm=_checks.boolean("warm", settings.warm),
        posterior=_checks.boolean("posterior", settings.posterior),
    )


def resolve(cls, settings, default, given: dict):
    """``settings`` (an instance of ``cls``; ``None``: ``default``, or ``cls()``) with the
    entries of ``given`` that are not ``None`` in place of its fields, validated."""
    return _fields(_checks.settings(cls, settings, given, default))


def run_arguments(output, denoiser, data, start, lam, weights):
    """Check :func:`attnlib.gamp.run`'s output step (its channel), ``denoiser``, ``data``,
    ``start``, ``lam`` and ``weights``: ``(lam, Q0, weights)``, checked (``Q0``: a ray
    denoiser's target's, else ``None``)."""
    task = output.channel.task
    (posterior_task if output.posterior else erm_task)(task)
    maps = "a callable (B, a_hat, lam) -> (S, v) with a jittable attribute (SpectralProx, RIE)"
    if not callable(denoiser) or not hasattr(denoiser, "jittable"):
        raise ValueError(f"denoiser must be {maps}, got {denoiser!r}")
    if getattr(denoiser, "kappa", 1.0) != 1.0:  # a cut of rho_R's integrals, not of a matrix
        raise ValueError(f"denoiser.kappa must be 1 in GAMP, got {denoiser.kappa!r}")
    _, _, d = _checks.dataset(task, data)
    if not (isinstance(start, tuple) and hasattr(start, "S") and hasattr(start, "v")):
        raise ValueError(f"start must be an attnlib.gamp.Start, got {start!r}")
    _checks.square_matrix("start.S", start.S, d, True, against="data.X")
    _checks.in_interval("start.v", start.v, 0.0, _checks.MAX_ABS)
    per_pair = dict(ndim=2, shape=(np.shape(data.X)[0], task.n_pairs), against="data")
    g = getattr(start, "g", None)
    if g is not None:
        _checks.finite_array("start.g", g, **per_pair, max_abs=_checks.MAX_ABS)
    lam = _checks.in_interval("lam", lam, 0.0, _checks.MAX_ABS, low_open=False)
    Q0 = None
    if getattr(denoiser, "ray", False):  # renormalised to the target's Q0
        Q0 = denoiser.target.Q0
        Q0 = _checks.in_interval("Q0", Q0, 1.0 / _checks.MAX_ABS, _checks.MAX_ABS, low_open=False)
    if weights is not None:
        w = _checks.finite_array("weights", weights, **per_pair, max_abs=_checks.MAX_ABS)
        if not np.all(np.asarray(w) > 0):
            raise ValueError("weights must be positive")
    return lam, Q0, weights
