r"""The replicon: replica-symmetric (de Almeida-Thouless) stability of an ERM fixed point.

Where the output channel is not convex (softmax seq2seq and seq2lab) the state evolution
can have several fixed points and the engine returns the one of lowest objective
(:mod:`attnlib.se.several`). That fixed point describes the global minimiser only where
the replica-symmetric saddle point is stable against replica-symmetry breaking, the
condition that :cite:t:`boncoraglio2025attention` state as their Eq. 11. It is derived
below, independently, in the form that :cite:t:`gerace2020generalisation`,
:cite:t:`aubin2020perceptrons` and :cite:t:`loureiro2021curves` give for generalised
linear ERM (``alpha E[(d_omega g)^2] E[(d_B f)^2] < 1``). In attnlib's normalisation it
reads ``replicon < 1`` with

    replicon  = out_factor * in_factor,
    out_factor = (alpha / 2) sum_{ab, cd} sigma_ab^2 sigma_cd^2 E[(d g_ab / d omega_cd)^2],
    in_factor  = (1 / m_hat^2) int int rho_R(x) rho_R(y) [(f(x) - f(y)) / (x - y)]^2 dx dy,

``g = (h* - omega) / V`` the output step of the prox (:mod:`attnlib.channels.prox`) at
the fixed point, ``J = dg/domega`` its full ``K x K`` Jacobian (``D = diag V``, ``H`` the
loss Hessian at ``h*``: ``J = D^-1 [(H + D^-1)^-1 D^-1 - I]``), ``sigma_ab^2 = 1 +
delta_ab``, and ``f`` the input side's spectral map of ``R = S0 + sqrt(Delta_eff)
W_goe`` (``(c x - tau)_+``; Frobenius ``c x / (1 + tau)``); the divided difference is
``f'(x)`` on the diagonal.

Why this quantity, and why ``< 1`` is stable. The replicon mode is a perturbation
``delta S`` of the estimator uncorrelated with everything else (the direction in which
two replicas separate); write ``eps = ||delta S||_F^2 / d``. Follow it once around the
GAMP fixed point, whose Onsager terms remove the reaction, so each step sees fresh
Gaussian fluctuations:

1. each pair of each sequence moves by ``delta omega_ab`` of variance ``sigma_ab^2 eps``,
   independent across pairs (the law of ``h_ab(delta S)``);
2. the output step moves by ``delta g = J delta omega``;
3. ``B = S_hat + (1 / (d a_hat)) sum_mu g_mu . Z_mu`` moves by a GOE matrix of variance
   ``eps out_factor / a_hat^2`` (``||W_goe||_F^2 / d = 1``): the same sum that makes the
   noise of ``B`` equal to ``q_hat / a_hat^2`` with ``q_hat = (alpha / 2) sum_ab
   sigma_ab^2 E g_ab^2``;
4. the spectral map ``S_hat = F(B)``, ``B = c R``, has the Frechet derivative ``U [F^[1]
   o (U^T . U)] U^T`` (Daleckii-Krein: divided differences of ``F`` on the eigenvalues,
   ``U`` the eigenvectors of ``B``); on a GOE perturbation ``||DF[W]||_F^2 / d ->
   int int rho_B rho_B (F^[1])^2``, and with ``F^[1]_B = f^[1]_R / c`` and ``a_hat c =
   m_hat`` this makes ``||delta S'||_F^2 / d = eps * replicon``.

The perturbation shrinks (the saddle point is a local maximum of the replicated free
energy in the replicon direction, and GAMP is stable in it) where ``replicon < 1``. The
same chain at first order gives the state evolution's own ``v``: ``V_ab / sigma_ab^2 =
(1 / (2 a_hat)) int int rho_B rho_B F^[1] = (1 / m_hat) int rho_R f h_R`` (the identity
``int int rho rho f^[1] = 2 int rho f h_R``), the library's ``v`` (:mod:`attnlib.se.input`);
the factor ``1/2`` and ``alpha / 2`` come from the symmetric-matrix coordinates
(:mod:`attnlib.se`: ``n / D = 2 alpha``, ``V_hat = 2 a_hat``). In the textbook form
``alpha_std E[(d_omega g)^2] E[(d_B f_in)^2] < 1`` of a GLM with ``D = d (d + 1) / 2``
unknowns and ``n K`` rows: ``alpha_std = 2 alpha`` rows per unknown weighted by
``sigma^2``, ``d_B f_in = F^[1] / V_hat``.

Special cases (they test the normalisation). Linear task, ``T = 1``, nuclear penalty:
``J = -1 / (1 + 2 v)``, ``a_hat = 2 alpha / (1 + 2 v)``, so ``replicon = I / (2 alpha)``
with ``I = int int rho rho (phi^[1])^2``, ``phi = f / c``, ``0 <= phi^[1] <= 1``; the
fixed point's own equation for ``v`` gives ``int int rho rho phi^[1] = 2 alpha (2 v) /
(1 + 2 v) < 2 alpha`` and ``I`` is at most that: ``replicon < 1`` at every convex fixed
point, as it must. At ``lam -> 0+`` and ``phi^[1]`` in ``{0, 1}`` it is the count of
degrees of freedom of the kept block, ``rank^2 d^2 / 2``, against the ``n = alpha d^2``
equations. The zero phase (``S_hat = 0``: ``f = 0`` on a neighbourhood of the whole
spectrum) has ``in_factor = 0``: ``replicon = 0``, strictly stable.

A bound: where the loss Hessian is positive semi-definite at (almost) every prox point,
``replicon <= 1``. Then ``-D^-1 <= J <= 0``, so ``A = sigma J sigma`` has eigenvalues in
``[-1/v, 0]`` and ``tr A^2 <= tr(-A) / v``: ``out_factor <= a_hat / (2 v)``; the soft
threshold's divided differences in ``B`` lie in ``[0, 1]``, so ``in_factor <= (1 /
a_hat^2) int int rho_B rho_B F^[1] = 2 v / a_hat``. Replica symmetry can break only
through prox points where the loss curves down (``H`` not PSD: the square loss of a
softmax with a residual, i.e. noisy labels or no interpolation) or through jumps.

Jumps of the prox. For a non-convex loss the global prox minimiser can jump from one
local minimum to another as ``omega`` crosses a surface; ``J`` is the derivative away
from such surfaces. A jump of size O(1) crossed with probability O(|delta omega|) adds
O(eps^(1/2)) to ``E[delta g^2]``, not O(eps): where the global prox minimiser jumps with
positive density, the zero-temperature replicon of the linearised argument above is
infinite (as for other non-convex zero-temperature problems), and ``replicon < 1`` is a
necessary condition there, not a sufficient one. ``replicon`` is the smooth part.

Not computed (NaN): piecewise-constant losses (:class:`attnlib.tasks.Hardmax`: ``g``
jumps, the a.e. derivative misses the jump part) and rank-constrained students
(:mod:`attnlib.width`, ``kappa < 1``: the map is cut to zero at ``x_kappa`` inside the
bulk, and the double integral of ``[jump / (x - y)]^2`` diverges, logarithmically in
``d``).
"""

from __future__ import annotations

import functools
import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import channels, qmc
from attnlib import tasks as _tasks
from attnlib.channels.losses import grad_hess_batch, loss_task
from attnlib.denoisers.nuclear import nuclear_spectrum
from attnlib.se.output import _rows, pairs
from attnlib.se.results import SEReplicaSymmetryWarning
from attnlib.spectral_map import SpectralMap

__all__ = [
    "output_jacobians",
    "output_factor",
    "input_factor",
    "divided_difference_mean",
    "replicon_at",
    "warn_if_unstable",
]


def output_jacobians(task, Y, omega, V, h):
    """The full Jacobians ``J = dg/domega`` ``(n, K, K)`` of the output step at prox
    points ``h`` (``Y`` ``(n, *out_shape)``, ``omega, V, h`` ``(n, K)``), from the exact
    loss Hessian: ``J_ij = ((H + D^-1)^-1_ij / V_j - delta_ij) / V_i``; the diagonal is
    :func:`attnlib.channels.finish`'s ``dg`` (traceable)."""
    _, H = grad_hess_batch(loss_task(task), Y, h)
    M = jnp.linalg.inv(H + jax.vmap(jnp.diag)(1.0 / V))
    K = V.shape[1]
    return (M / V[:, None, :] - jnp.eye(K)) / V[:, :, None]


@functools.partial(jax.jit, static_argnames=("task",))
def _jacobian_means(task, z, alpha, Q0, x, prox):
    """Per-scrambling means ``(R,)`` of ``(alpha/2) sum sigma^2 sigma^2 J^2``."""
    R, N, _ = z.shape
    p = pairs(task, z.reshape(R * N, -1), Q0, x)
    J = output_jacobians(task, p.Y, p.omega, p.V, prox)
    s2 = jnp.asarray(_tasks.pair_variances(task.T), dtype=jnp.float64)
    per = 0.5 * alpha * jnp.einsum("nij,i,j->n", J**2, s2, s2)
    return jnp.mean(per.reshape(R, N), axis=1)


def output_factor(task, z, alpha, Q0, x, prox) -> tuple[float, float]:
    """``(out_factor, stderr)`` at ``x = (m, q, v)`` on the QMC points ``z`` ``(R, N,
    dim)`` of the output side, with its prox points ``prox`` ``(R N, K)`` there (those
    of the converged map: no new prox solve). Linear task: closed form, error 0;
    piecewise-constant losses: NaN."""
    closed = channels.for_task(task).replicon_factor(float(alpha), float(x[2]))
    if closed is not None:
        return closed
    xj, a, q0 = jnp.asarray(x, dtype=jnp.float64), jnp.float64(alpha), jnp.float64(Q0)
    pieces = qmc.chunks(z.shape[1])  # one compiled program for every number of points
    if len(pieces) == 1:
        means = np.asarray(_jacobian_means(task, z, a, q0, xj, prox))
    else:
        zn, R, p = np.asarray(z), z.shape[0], np.asarray(prox)
        parts = [_jacobian_means(task, zn[:, sl], a, q0, xj, _rows(p, R, sl)) for sl in pieces]
        means = np.mean([np.asarray(m) for m in parts], axis=0)
    err = float(np.std(means, ddof=1) / math.sqrt(len(means))) if len(means) > 1 else 0.0
    return float(np.mean(means)), err


def divided_difference_mean(x, w, fmap: SpectralMap) -> float:
    """``sum_ij w_i w_j [(f(x_i) - f(x_j)) / (x_i - x_j)]^2`` with ``f'(x_i)^2`` where
    ``x_i = x_j``: the double integral of the squared divided difference against a
    quadrature ``(x, w)`` of ``rho_R`` (or, with ``w = 1/d``, the sum over the
    eigenvalues of one matrix)."""
    x, w = np.asarray(x, dtype=float), np.asarray(w, dtype=float)
    f, fp = np.asarray(fmap.f(x)), np.asarray(fmap.fprime(x))
    dx = x[:, None] - x[None, :]
    same = dx == 0.0
    dd = np.where(same, fp[:, None], (f[:, None] - f[None, :]) / np.where(same, 1.0, dx))
    return float(w @ (dd**2) @ w)


def input_factor(target, Delta, c, tau, m_hat, penalty="nuclear", *, spec=None) -> float:
    """``in_factor = (1/m_hat^2) int int rho_R rho_R [f^[1]]^2`` of the map ``(c, tau)``
    (``penalty``) on ``rho_R`` of ``S0 + sqrt(Delta) W_goe``; ``spec``: the quadrature
    :func:`attnlib.denoisers.nuclear.nuclear_spectrum` at the same arguments, computed
    if None. Frobenius: ``f^[1]`` is the constant slope, no integral."""
    fmap = SpectralMap(c, tau, penalty)
    if penalty == "frobenius":
        return float(fmap.slope**2 / m_hat**2)
    if spec is None:
        spec = nuclear_spectrum(target, Delta, c, tau)
    return divided_difference_mean(spec.x, spec.w, fmap) / m_hat**2


def replicon_at(pb, x, o, i, prox, spec=None) -> float:
    """``replicon`` at a converged fixed point ``x`` of the problem ``pb``
    (:class:`attnlib.se.point.Problem`) with its output and input sides ``o``, ``i``
    (:func:`attnlib.se.point.sides_at`) and prox points ``prox``; ``spec``: the
    spectrum of the point's nuclear input side if already computed. NaN where not
    defined (module docstring); 0 in the zero phase (``x[1] = q = 0``)."""
    if pb.kappa < 1.0 or pb.channel.scale_free:
        return math.nan
    if float(x[1]) == 0.0:
        return 0.0
    out, _ = output_factor(pb.task, pb.data.z, pb.data.alpha, pb.data.Q0, x, prox)
    inp = input_factor(pb.target, i.Delta_eff, i.c, i.tau, o.m_hat, pb.penalty, spec=spec)
    return float(out * inp)


def warn_if_unstable(result, stacklevel: int = 3) -> None:
    """A :class:`SEReplicaSymmetryWarning` where ``result.replicon > 1``."""
    rep = getattr(result, "replicon", math.nan)
    if math.isfinite(rep) and rep > 1.0:
        warnings.warn(
            f"state evolution at alpha={result.alpha}, lam={result.lam}: replicon = "
            f"{rep:.4g} > 1, the replica-symmetric fixed point is unstable (replica "
            "symmetry breaking): it need not describe the minimiser of the ERM",
            SEReplicaSymmetryWarning,
            stacklevel=stacklevel,
        )
