r"""The Bayes-optimal limit of the attention-indexed model (one idea per module).

- :mod:`attnlib.bayes.denoiser`         the rotationally invariant estimator and ``mmse_den``
- :mod:`attnlib.bayes.channels`         the Bayes posterior of each task's output channel
- :mod:`attnlib.bayes.hardmax_exact`    ``T = 2`` hardmax in closed form (Gaussian orthants)
- :mod:`attnlib.bayes.prediction`       Bayes-optimal and plug-in test errors
- :mod:`attnlib.bayes.state_evolution`  :func:`solve`, :func:`perfect_recovery`
- :mod:`attnlib.bayes.gamp_rie`         GAMP-RIE on a finite data set

Conventions: see the book's "Notation and conventions" page (``book/notation.md``).
References: arXiv:2506.01582 (Bayes-optimal attention-indexed models) and
arXiv:2408.03733 (GAMP-RIE).
"""

from attnlib.bayes.channels import information, is_gaussian
from attnlib.bayes.denoiser import mmse_den, rie_denoise, rie_function
from attnlib.bayes.gamp_rie import gamp_rie
from attnlib.bayes.state_evolution import (
    BayesResult,
    BayesSettings,
    perfect_recovery,
    perfect_recovery_se,
    solve,
)

__all__ = [
    "BayesSettings",
    "BayesResult",
    "gamp_rie",
    "information",
    "is_gaussian",
    "mmse_den",
    "perfect_recovery",
    "perfect_recovery_se",
    "rie_denoise",
    "rie_function",
    "solve",
]
