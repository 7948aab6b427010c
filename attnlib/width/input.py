r"""Input side of the rank-constrained state evolution: the proximal map of trace + PSD +
rank ``<= kappa d``.

For a symmetric ``B`` with eigenvalues ``b_1 >= b_2 >= ...`` the problem
``min_S (a_hat / 2) ||S - B||_F^2 + d lam Tr S`` over PSD ``S`` of rank ``<= p`` is
solved by ``S = sum_{i <= p} (b_i - d lam / a_hat)_+ u_i u_i^T``: the objective of a
spectral ``S`` with the eigenvectors of ``B`` is a sum of independent terms, each
eigenvalue kept gains ``(b_i - t)_+^2 / 2`` with ``t = d lam / a_hat``, and von Neumann's
trace inequality shows that other eigenvectors do no better; the ``p`` largest gains
belong to the ``p`` largest ``b_i``. In the state evolution ``B = c R`` with
``R = S0 + sqrt(Delta_eff) W_goe``, ``c = m_hat / a_hat``, ``tau = lam / a_hat``, so the
scalar map is the soft threshold of :mod:`attnlib.se.input` cut at the top-``kappa``
quantile ``x_kappa`` of ``rho_R``::

    f(x) = (c x - tau)_+ 1[x > x_kappa],   int_{x_kappa}^inf rho_R = kappa,
    q = int rho_R f^2,  m = int rho_R f (x - 2 Delta_eff h_R),  v = (1/m_hat) int rho_R f h_R.

The overlaps ``m, q`` only use the conditional overlap ``E[v^T S0 v | x]`` of
:mod:`attnlib.rmt`, valid for any ``f``. For ``v`` the divergence of the spectral map is
``sum_i f'(x_i) + sum_{i != j} (f(x_i) - f(x_j)) / (x_i - x_j)``; the first sum is
``O(d)`` (also with the jump of ``f`` at ``x_kappa``: one eigenvalue per spacing
``1/d`` there), the second is ``d^2 int rho_R f h_R`` at leading order (the jump
makes its integrand ``~ 1/(x - y)`` across ``x_kappa``, which is integrable in two
dimensions). So the formula of the convex state evolution holds unchanged at leading
order; tests compare it with sampled matrices.
"""

from __future__ import annotations

import math

from attnlib import _checks
from attnlib.denoisers.constrained import binding_cut, constrained_integrals, rank_cutoff
from attnlib.denoisers.nuclear import nuclear_integrals
from attnlib.se.input import InputSide, input_trace, map_parameters

__all__ = ["rank_cutoff", "constrained_input_side", "constrained_trace", "spectral_integrals"]


def spectral_integrals(target, Delta, c, tau, cut):
    """``(m, q, int rho_R f h_R, rank_fraction)`` of ``f(x) = (c x - tau)_+ 1[x > cut]``
    (:func:`attnlib.denoisers.nuclear_integrals`); ``c`` in ``(0, 1e100]``, ``tau >= 0``,
    ``cut`` real or ``+-inf`` (``-inf``: no cut)."""
    _checks.target(target)
    c = _checks.in_interval("c", c, 0.0, _checks.MAX_ABS)
    tau = _checks.nonnegative("tau", tau)
    cut = _checks.real("cut", cut)
    if math.isnan(cut):
        raise ValueError(f"cut must be a real number or +-inf, got {cut!r}")
    s = nuclear_integrals(target, Delta, c, tau, cut)
    return s.m, s.q, s.div, s.rank


def constrained_input_side(target, m_hat, q_hat, a_hat, lam, kappa) -> InputSide:
    """Input side of the nuclear + PSD + rank ``<= kappa d`` estimator (module docstring).

    Args:
      target: :class:`attnlib.targets.Target`; m_hat, q_hat, a_hat: the conjugates
        (``m_hat > 0``, ``q_hat > 0``, ``a_hat > 0``, with ``c = m_hat / a_hat <= 1e100``
        and ``Delta_eff = q_hat / m_hat^2`` in the range :mod:`attnlib.rmt` resolves for
        ``target``); lam: penalty ``>= 0``;
      kappa: width ``p / d`` of the student, in ``(0, 1]``.

    Returns:
      :class:`attnlib.se.InputSide` ``(m, q, v, rank_fraction, Delta_eff, c, tau)``;
      ``rank_fraction = min(kappa, mass of rho_R above tau / c)``.
    """
    _checks.target(target)
    q_hat = _checks.in_interval("q_hat", q_hat, 0.0, _checks.MAX_ABS)
    kappa = _checks.in_interval("kappa", kappa, 0.0, 1.0)
    m_hat, Delta, c, tau = map_parameters(m_hat, q_hat, a_hat, lam)
    try:
        s = constrained_integrals(target, Delta, c, tau, kappa)
    except ValueError as err:  # rmt refuses this Delta for the target
        raise ValueError(
            f"Delta_eff = q_hat / m_hat**2 = {Delta:g} (q_hat={q_hat!r}, m_hat={m_hat!r}): {err}"
        ) from err
    return InputSide(s.m, s.q, s.div / m_hat, s.rank, Delta, c, tau)


def constrained_trace(target, Delta, c, tau, kappa) -> float:
    """``lim Tr S_hat / d = int rho_R f`` of the rank-constrained map (module docstring)."""
    cut = binding_cut(target, Delta, c, tau, kappa)
    return input_trace(target, Delta, c, tau, "nuclear", cut=cut)
