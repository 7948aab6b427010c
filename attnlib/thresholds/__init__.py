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

- :func:`perfect_recovery` ``alpha_PR = delta(kappa0) / m_eff`` (:func:`statistical_dimension`
  of the trace + PSD descent cone; Amelunxen, Lotz, McCoy, Tropp 2014), and
  :func:`perfect_recovery_se` from the state evolution for any target spectrum (the
  Bayes-optimal count is :func:`attnlib.bayes.perfect_recovery`);
- the interpolation threshold ``alpha_interp(Delta)`` of noisy labels:
  :func:`interpolation_se` (state evolution at ``lam = 0``, bisected), between
  :func:`interpolation` ``= 1/(4 m_eff)`` (``Delta -> infinity``) and
  :func:`interpolation_small_noise` (``Delta -> 0+``, :func:`tangent_cone_dimension`);
  :func:`interpolation_formula`, its closed form from the free convolution (Corollary 3.2
  of arXiv:2509.24914) for the linear task and softmax seq2seq;
- :func:`minimal_width`: rank fraction of the convex minimiser (state evolution);
- :func:`ridgeless_limit`, :func:`ridgeless_curve`, :func:`ridgeless_peak`: the ``lam ->
  0+`` limit on both sides of ``alpha_interp`` and the (finite) interpolation peak.
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
