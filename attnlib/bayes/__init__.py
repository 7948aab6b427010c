r"""The Bayes-optimal limit of the attention-indexed model (one idea per module).

- :mod:`attnlib.bayes.prediction`       Bayes-optimal and plug-in test errors
- :mod:`attnlib.bayes.state_evolution`  :func:`solve`, :func:`perfect_recovery`,
  :func:`perfect_recovery_from_mmse`
- :mod:`attnlib.bayes.gamp_rie`         GAMP-RIE on a finite data set

Its two parts live with their kind (``attnlib/ARCHITECTURE.md``) and are re-exported
here: the Bayes posterior of each task's output channel in :mod:`attnlib.channels`
(:mod:`~attnlib.channels.posterior`: :func:`information`, :func:`is_gaussian`; the
nested integrals and ``T = 2`` hardmax in closed form in the ``posterior_*`` modules),
the rotationally invariant estimator in :mod:`attnlib.denoisers.rie` (:func:`mmse_den`,
:func:`rie_function`, :func:`rie_denoise`).

Conventions: see the book's "Notation and conventions" page (``book/notation.md``).
References: arXiv:2506.01582 (Bayes-optimal attention-indexed models) and
arXiv:2408.03733 (GAMP-RIE).
"""

from attnlib.bayes.gamp_rie import gamp_rie
from attnlib.bayes.state_evolution import (
    BayesResult,
    BayesSettings,
    perfect_recovery,
    perfect_recovery_from_mmse,
    solve,
)
from attnlib.channels.posterior import information, is_gaussian
from attnlib.denoisers.rie import mmse_den, rie_denoise, rie_function

__all__ = [
    "BayesSettings",
    "BayesResult",
    "gamp_rie",
    "information",
    "is_gaussian",
    "mmse_den",
    "perfect_recovery",
    "perfect_recovery_from_mmse",
    "rie_denoise",
    "rie_function",
    "solve",
]
