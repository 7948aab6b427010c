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
- :func:`interpolation_bracket`: the interpolation threshold against ``kappa``.
- :func:`constrained_input_side`, :func:`rank_cutoff`: the input side and its cut.

That this fixed point describes what gradient training of ``W`` at width ``kappa``
reaches is a numerical finding (the rank-constrained problem is not convex); the tests
and the book compare it with Adam on ``W``.
"""

from attnlib.width.input import constrained_input_side, rank_cutoff, spectral_integrals
from attnlib.width.interpolation import WidthInterpolation, interpolation_bracket
from attnlib.width.solve import WidthResult, solve, solve_constrained

__all__ = [
    "WidthInterpolation",
    "WidthResult",
    "constrained_input_side",
    "interpolation_bracket",
    "rank_cutoff",
    "solve",
    "solve_constrained",
    "spectral_integrals",
]
