r"""Phase transitions of the convex ERM: perfect recovery, interpolation, minimal width.

Conventions (the book's "Notation and conventions" page, ``book/notation.md``):
``alpha = n / d^2`` sequences per squared dimension; ``m_eff``
(:attr:`attnlib.tasks.Task.m_eff`) is the number of independent linear constraints that
one exactly fitted sequence puts on ``S`` (linear task: ``K = T (T + 1) / 2``; softmax
seq2seq: ``K - 1``, the global shift of the logits is lost); ``kappa0`` is the rank
fraction of the target and ``kappa = p / d`` the width of the factorised student.
Symmetric ``d x d`` matrices form a space of dimension ``D = d (d + 1) / 2 ~ d^2 / 2``;
``n`` exactly fitted sequences are ``n m_eff = alpha m_eff d^2`` linear equations in it.

Thresholds (all in the limit ``d -> infinity``, ``lam -> 0+``):

- :func:`statistical_dimension` ``delta(kappa0)``: statistical dimension of the
  descent cone of ``Tr S + indicator(S PSD)`` at a PSD matrix of rank ``kappa0 d``,
  divided by ``d^2`` (closed form).
- :func:`perfect_recovery` ``alpha_PR = delta(kappa0) / m_eff``: noise-free labels
  are fitted by ``S0`` only, and the minimum-trace interpolator is ``S0``, beyond it
  (Amelunxen, Lotz, McCoy, Tropp 2014). :func:`perfect_recovery_se` recomputes
  ``delta`` from the free-probability formulas of the state evolution, for any
  target spectrum; the information-theoretic (Bayes-optimal) count ``(kappa0 -
  kappa0^2 / 2) / m_eff`` is :func:`attnlib.bayes.perfect_recovery`.
- :func:`interpolation_se` ``alpha_interp(Delta)``: largest ``alpha`` at which noisy
  labels are fitted exactly, at the task's noise ``Delta`` (state evolution at
  ``lam = 0``, bisected; :func:`interpolation_se_bracket` gives the bracket). It lies
  between its noise-dominated value :func:`interpolation` ``= 1/(4 m_eff)``
  (``Delta -> infinity``; exact for ``S0 = 0``) and its small-noise limit
  :func:`interpolation_small_noise` (``Delta -> 0+``: the tangent cone of the PSD
  cone at ``S0``, :func:`tangent_cone_dimension`).
- :func:`interpolation_formula`: ``alpha_interp(Delta)`` in closed form from the free
  convolution (Corollary 3.2 of arXiv:2509.24914, in this library's conventions), for
  the linear task and softmax seq2seq; an independent check of :func:`interpolation_se`.
- :func:`minimal_width`: rank fraction of the convex minimiser (state evolution).
- :func:`ridgeless_limit`, :func:`ridgeless_curve`: the ``lam -> 0+`` limit of the state
  evolution on both sides of ``alpha_interp`` (the minimum-trace interpolator below it);
  :func:`ridgeless_peak`: the height of the interpolation peak, finite.
"""

from attnlib.spectral_map import PENALTIES
from attnlib.thresholds.geometry import (
    perfect_recovery,
    semicircle_moment2,
    statistical_dimension,
    tangent_cone_dimension,
)
from attnlib.thresholds.interpolation import (
    InterpolationThreshold,
    interpolation,
    interpolation_se,
    interpolation_se_bracket,
    interpolation_small_noise,
    minimal_width,
)
from attnlib.thresholds.interpolator import ridgeless_curve, ridgeless_limit, ridgeless_peak
from attnlib.thresholds.recovery_se import perfect_recovery_se, recovery_mse_ratio
from attnlib.thresholds.ridgeless import (
    RidgelessThreshold,
    equivalent_noise,
    interpolation_formula,
)

__all__ = [
    "PENALTIES",
    "semicircle_moment2",
    "statistical_dimension",
    "perfect_recovery",
    "perfect_recovery_se",
    "recovery_mse_ratio",
    "interpolation",
    "tangent_cone_dimension",
    "interpolation_small_noise",
    "interpolation_se",
    "interpolation_se_bracket",
    "InterpolationThreshold",
    "minimal_width",
    "interpolation_formula",
    "equivalent_noise",
    "RidgelessThreshold",
    "ridgeless_limit",
    "ridgeless_curve",
    "ridgeless_peak",
]
