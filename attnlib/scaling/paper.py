r"""The paper's power-law regime: rates and phase diagram along ``n = d^a``, ``lam = d^b``.

Setting (arXiv:2509.24914 v2, Appendix E, its Conjecture E.1; cited in the book as
boncoraglio2025attention): the target :class:`attnlib.targets.PaperPowerLaw` has
eigenvalues ``lambda_i = sqrt(d) i^{-gamma}``, ``gamma > 1/2``, and the labels carry noise.
Conjecture E.1 states that the state evolution fed with the target's empirical spectrum
at finite ``d`` (``se.solve(task, PaperPowerLaw(gamma).at(d), n / d**2, lam)``) still
describes the ERM at large finite ``n, d`` with ``lam`` depending on ``d``; everything
here rests on it. Penalty: the paper writes ``lam_W ||W||_F^2`` for ``S = W W^T /
sqrt(p d)``, i.e. ``sqrt(kappa) lam_W d Tr S``; attnlib's ``lam`` (``d lam Tr S``) is the
paper's ``lam~ = sqrt(kappa) lam_W``.

Where the rates come from (our derivation, in units of the eigenvalues). The state
evolution thresholds the spectrum of ``R = S0 + sqrt(Delta_eff) W_goe`` at ``t = tau/c``,
which for ``n << d^2`` is ``t ~ lam d^2 / n``; the noise bulk of ``R`` has edge
``sigma ~ sqrt(Delta_eff) ~ d / sqrt(n)``; the smallest eigenvalue is ``sqrt(d) d^{-gamma}``.
Modes above ``max(t, sigma)`` are kept, the others lost:

- ``t`` above the noise edge and above the smallest eigenvalue: the bias of the lost tail
  and of the shrinkage, ``(t / sqrt(d))^{2 - 1/gamma} = (lam d^{3/2} / n)^{2 - 1/gamma}``
  (``"threshold"``);
- ``t`` above the noise edge but below every eigenvalue (needs ``n >> d^{1 + 2 gamma}``):
  every mode shrunk by ``t``, ``t^2 = (lam d^2 / n)^2`` (``"shrinkage"``);
- ``t`` below the noise edge and ``n < d^2``: interpolation puts the threshold at the
  noise edge, ``(sigma / sqrt(d))^{2 - 1/gamma} = (n / d)^{-1 + 1/(2 gamma)}``, the
  LASSO minimax rate (``"minimax"``; also the rate at the optimal ``lam``, ``t ~ sigma``);
- ``t`` below the noise edge and ``n > d^2``: the noise bulk is kept, ``d^2 / n``
  (``"variance"``);
- ``t`` above the top eigenvalue ``sqrt(d)``: ``S_hat = 0``, no decay (``"zero"``).

At ``n = d^2`` (``a = 2``) the small-``lam`` rates jump (the interpolation peak). The
rates in ``n`` at fixed ``d`` are :func:`attnlib.scaling.predicted_exponent` with
``interpolating`` / ``all_modes``.
"""

from __future__ import annotations

from typing import NamedTuple

from attnlib import _checks

__all__ = ["PaperExponent", "paper_exponent", "paper_point"]

REGIMES = ("minimax", "variance", "threshold", "shrinkage", "zero")


class PaperExponent(NamedTuple):
    """Decay exponent ``zeta`` of ``e_test - e0 ~ d^{-zeta}`` along ``n = d^a``, ``lam = d^b``.

    ``regime``: one of ``"minimax"``, ``"variance"``, ``"threshold"``, ``"shrinkage"``,
    ``"zero"`` (module docstring). ``rates``: the decay exponents in ``d`` of the paper's
    four rates at ``(a, b)``, in its order ``((n/d)^{-1+1/(2 gamma)}, d^2/n, (lam d^{3/2}/n)^{2 -
    1/gamma}, (lam d^2/n)^2)``, whether or not they apply there.
    """

    zeta: float
    regime: str
    rates: tuple


def paper_exponent(gamma, a, b) -> PaperExponent:
    """The phase diagram of the paper's power-law regime: which rate holds at ``(a, b)``.

    Args:
      gamma: decay exponent of the target, ``> 1/2``.
      a: ``n = d^a``, ``a > 1`` and ``a != 2`` (at ``a = 2`` the interpolation peak).
      b: ``lam = d^b`` (attnlib's ``lam``, the paper's ``lam~``), real.
    """
    gamma = _checks.in_interval("gamma", gamma, 0.5, 50.0)
    a = _checks.in_interval("a", a, 1.0, 1e3)
    b = _checks.in_interval("b", b, -1e3, 1e3)
    if a == 2.0:
        raise ValueError("a must differ from 2 (n = d^2 is the interpolation peak), got a=2")
    tau, s, mu = b + 2.0 - a, 1.0 - a / 2.0, 0.5 - gamma  # log_d of t, sigma, lambda_min
    rates = ((a - 1.0) * (1.0 - 0.5 / gamma), a - 2.0, (0.5 - tau) * (2.0 - 1.0 / gamma), -2 * tau)
    if tau >= 0.5:
        return PaperExponent(0.0, "zero", rates)
    if tau > s and tau > mu:
        return PaperExponent(rates[2], "threshold", rates)
    if tau > s:
        return PaperExponent(rates[3], "shrinkage", rates)
    if a < 2.0:
        return PaperExponent(rates[0], "minimax", rates)
    return PaperExponent(rates[1], "variance", rates)


def paper_point(d, a, b, *, n_min: int = 1) -> tuple[float, float, int]:
    """``(alpha, lam, n)`` of the point ``n = round(d^a)``, ``lam = d^b`` at size ``d``:
    ``alpha = n / d^2`` and ``lam`` as :func:`attnlib.se.solve` takes them."""
    d = _checks.integer("d", d, 2)
    a = _checks.in_interval("a", a, 1.0, 1e3, low_open=False)
    b = _checks.in_interval("b", b, -1e3, 1e3)
    n = max(_checks.integer("n_min", n_min, 1), int(round(d**a)))
    return n / d**2, float(d**b), n
