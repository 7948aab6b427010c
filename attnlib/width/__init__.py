r"""Students narrower than the convex solution: the rank-constrained state evolution.

Conventions (the book's "Notation and conventions" page, ``book/notation.md``). The
factorised student ``S = W W^T / sqrt(p d)``, ``W`` of shape ``(d, p)``, ``kappa = p / d``,
trained with weight decay ``lam_W`` minimises the nuclear + PSD objective
``sum_mu loss + d lam Tr S`` with ``lam = sqrt(kappa) lam_W`` over PSD ``S`` of rank
``<= kappa d``. Where the convex minimiser has rank fraction ``kappa_star`` above
``kappa`` the constraint binds. Its state evolution is the convex one
(:mod:`attnlib.se`) with the proximal map of trace + PSD + rank ``<= kappa d`` on the
input side: ``f(x) = (c x - tau)_+`` restricted to the top ``kappa`` fraction of
``rho_R`` (:mod:`attnlib.width.input`).

- :func:`solve`: the fixed point at ``(alpha, lam, kappa)`` (a :class:`WidthResult`).
- :func:`solve_constrained`: the same fixed point from a given start (no convex solve).
- :func:`counting_bound`: no width-``kappa`` student fits more than
  ``(kappa - kappa^2/2) / m_eff`` noisy sequences per ``d^2``.
- :func:`constrained_input_side`, :func:`rank_cutoff`: the input side and its cut.

That this fixed point describes what gradient training of ``W`` reaches is a numerical
finding (the problem is not convex); the tests and the book compare it with Adam on
``W``. It fails at ``lam = 0`` with noisy labels: the fixed point exists only down to an
``alpha`` above :func:`counting_bound`, with a train loss far below Adam's. The
interpolation threshold of the width-``kappa`` student is not computed here; Adam on
``W`` interpolates up to the smaller of :func:`counting_bound` and the convex threshold
(:func:`attnlib.thresholds.interpolation_se`; book/03_factorisation).
"""

from attnlib.width.counting import counting_bound
from attnlib.width.input import constrained_input_side, rank_cutoff, spectral_integrals
from attnlib.width.solve import WidthResult, solve, solve_constrained

__all__ = [
    "WidthResult",
    "constrained_input_side",
    "counting_bound",
    "rank_cutoff",
    "solve",
    "solve_constrained",
    "spectral_integrals",
]
