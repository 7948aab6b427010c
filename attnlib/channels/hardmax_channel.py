"""The hardmax channel (:class:`attnlib.tasks.Hardmax`): piecewise-constant loss.

The ERM prox is exact, by enumeration of regions and faces
(:mod:`attnlib.channels.hardmax`). At ``T = 2`` the test error has a closed form
(Sheppard's formula, :meth:`HardmaxChannel.test_errors`), and so do the Bayes
posterior without noise or with noise on the logits and its test error
(:mod:`attnlib.channels.posterior_hardmax_exact`); at ``T = 3``, or with noise on the target
(``noise_on="target"``), the posterior is a nested integral
(:mod:`attnlib.channels.posterior_hardmax`), and GAMP-RIE's output step refuses the
latter (a ``ValueError`` naming ``noise_on``).
"""

from __future__ import annotations

import dataclasses
import math

import jax.numpy as jnp

from attnlib.channels import hardmax as _hardmax
from attnlib.channels import posterior_hardmax as _bayes_hardmax
from attnlib.channels import posterior_hardmax_exact as _hardmax_exact
from attnlib.channels.channel import Channel, TestErrors
from attnlib.channels.prox import Prox

__all__ = ["HardmaxChannel"]


@dataclasses.dataclass(frozen=True)
class HardmaxChannel(Channel):
    """The channel of :class:`attnlib.tasks.Hardmax`; ``zero_scale``: its limit at zero
    scale (:meth:`at_zero_scale`), where the loss is scale-free and the output step is
    the projection on the region of the labels (the channel of :mod:`attnlib.hardmax`)."""

    zero_scale: bool = False
    exact_prox = True

    def at_zero_scale(self) -> HardmaxChannel:
        """The channel at zero scale: prox and output step are :meth:`projection`."""
        return dataclasses.replace(self, zero_scale=True)

    def prox(self, Y, omega, V, starts, *, tol=1e-12, max_iter: int = 100):
        if self.zero_scale:
            out = self.projection(Y, omega, V)
            return Prox(out.h, out.loss, jnp.asarray(0))
        h, obj = _hardmax.prox(self.task, Y, omega, V)  # exact: the starts are not needed
        return Prox(h, obj, jnp.asarray(0))

    def finish(self, Y, omega, V, h):
        out = self.output_step(Y, omega, V, None)  # ``h`` is recomputed by the exact prox
        return out, jnp.ones(out.loss.shape, dtype=bool)

    def output_step(self, Y, omega, V, starts, *, tol: float = 1e-12, max_iter: int = 100):
        if self.zero_scale:
            return self.projection(Y, omega, V)
        return _hardmax.finish(self.task, Y, omega, V)

    def projection(self, Y, omega, V):
        """The zero-scale output step (:func:`attnlib.channels.hardmax.projection`): the
        ``1/V``-weighted projection of ``omega`` on the closed region of the lowest cost,
        the output step of the hardmax state evolution and GAMP. Unchecked and traceable,
        like the other methods: arrays ``(n, K)`` of float64 (``V`` of the same shape)."""
        return _hardmax._projection(self.task, Y, omega, V)

    def a_hat_terms(self, pairs, out, x, Q0) -> tuple:
        """At finite scale ``g`` jumps on surfaces of positive probability flux: the Stein
        form (:func:`attnlib.channels.hardmax.stein_a_hat`); at zero scale the projection
        is Lipschitz: the almost-everywhere derivative, then the Stein form as a check."""
        stein = _hardmax.stein_a_hat(out.g, pairs.omega, pairs.h0, x[0], x[1], Q0)
        return (*super().a_hat_terms(pairs, out, x, Q0), stein) if self.zero_scale else (stein,)

    def replicon_factor(self, alpha: float, v: float):
        """Not defined (no fixed point at finite scale): NaN."""
        return math.nan, math.nan

    def test_errors(self, Q0, m, q, qmc) -> TestErrors:
        """At ``T = 2`` in closed form: row ``a`` attends wrongly (cost 2) when the
        differences ``h_aa - h_12`` of the prediction and of the label have opposite
        signs; they are jointly Gaussian with variances ``3 q`` and ``3 Q0 + 2 Delta``
        (logit noise) and covariance ``3 m``, so each row errs with probability
        ``arccos(rho) / pi`` (Sheppard's formula); noise on the target gives ``3 Q0 + 3
        Delta / 2`` (``Delta`` on ``h_aa``, ``Delta / 2`` on ``h_12``). Its indicator
        integrand converges slowly in QMC (+1 % at 8192 points)."""
        if self.task.T != 2:
            return super().test_errors(Q0, m, q, qmc)

        def err(label_var):
            rho = 3.0 * m / math.sqrt(label_var * 3.0 * q) if q > 0 else 0.0
            return 2.0 * 2.0 * math.acos(min(max(rho, -1.0), 1.0)) / math.pi

        e0 = err(3.0 * Q0)
        if self.task.noise_on == "outputs":  # independent noise on the 4 outputs: adds 4 Delta
            return TestErrors(e0, e0 + 4.0 * self.task.noise, (0.0, 0.0))
        if self.task.noise_on == "target":  # noise variances Delta (diagonal) + Delta/2
            return TestErrors(e0, err(3.0 * Q0 + 1.5 * self.task.noise), (0.0, 0.0))
        return TestErrors(e0, err(3.0 * Q0 + 2.0 * self.task.noise), (0.0, 0.0))

    def information(self, mmse, Q0, method, qmc):
        task = self.task
        if task.noise == 0.0 or self.noise_on_pairs:
            if not mmse > 0.0:
                raise ValueError(f"mmse must be > 0 for the hardmax channel, got {mmse}")
            if task.T == 2 and method == "auto" and task.noise_on != "target":
                return tuple(_hardmax_exact.information(task, mmse, Q0))
            n_outer, n_inner, seed = qmc
            return tuple(
                _bayes_hardmax.hardmax_information(task, mmse, Q0, n_outer, n_inner, seed)[:3]
            )
        return super().information(mmse, Q0, method, qmc)

    @property
    def exact_posterior_output(self) -> bool:
        task = self.task
        return task.T == 2 and (task.noise == 0.0 or task.noise_on == "logits")

    def posterior_output(self, Y, omega, V):
        if self.task.noise > 0 and self.task.noise_on == "target":
            raise ValueError(
                "noise_on='target' is not implemented for the Bayes posterior of the "
                "hardmax channel (use noise_on='logits')"
            )
        if self.exact_posterior_output:
            return _hardmax_exact.output(self.task, Y, omega, V)
        return super().posterior_output(Y, omega, V)

    def bayes_test_error(self, mmse: float, Q0: float, plugin: float):
        if self.task.T == 2:
            return _hardmax_exact.test_error(mmse, Q0)
        return None
