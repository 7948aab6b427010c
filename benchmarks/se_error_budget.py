"""Where the state evolution's QMC error comes from (issue 34): per conjugate, and how
much of it a low-degree control variate could remove.

At a converged reference point of ``se_accuracy.py`` (its ``x = (m, q, v)``), the output
side is evaluated on ``N`` QMC points in scramblings of 2048 (the fine stage's pieces).
For each conjugate ``(m_hat, q_hat, a_hat)`` it prints

- the relative spread of the scramblings' means;
- the relative spread of the mse that this conjugate's deviations alone give through
  ``(I - J)^{-1} G`` (:mod:`attnlib.se.propagation`); their sum (with the
  correlations) is the error of the fixed point;

and, on one set of 8192 points, the share of each integrand's variance that is left
after a least-squares fit by Hermite polynomials of the QMC normals of degree 1 and 2
(a regression control variate: its expectation is known, so only the residual's
variance would remain), and the share of the variance in the largest 1 % of points.

    python benchmarks/se_error_budget.py [POINT ...] [--taylor]

Measured (seeds 0 and 1, 16 scramblings of 2048; mse relative spread per scrambling):

- s2s T3 n0.1 W0.3 a0.3 l1e-2 (18 dimensions): q_hat dominates: 1.6 % / 0.95 % through
  q_hat, 0.67 % / 0.92 % through m_hat, 0.26 % / 0.28 % through a_hat; all together
  1.9 % / 1.2 % (0.48 % / 0.29 % for the mean of the 16). Degree-2 fits leave 45-49 % of
  each integrand's variance (degree 1: 99 %); q_hat's integrand has sd/mean 1.0 and 25 %
  of its variance in the top 1 % of points.
- s2s T2 W0.5 a2 l0.1 (6 dimensions): m_hat and a_hat, 2.2-2.6 % and 1.7-1.9 %, largely
  cancelling (0.9 % together); q_hat 5e-5. Degree-2 fits leave 37-66 %.

So a polynomial control variate of low degree gains at most about 1.4x in standard
error at T = 3, short of the 3.5x that 1e-3 would need there.

A conditional one does not either (``--taylor``): with ``zeta`` the label-side normals
(the teacher's part independent of ``omega`` and the label noise) and ``F`` q_hat's
integrand, ``b . zeta + (zeta' H zeta - tr H) / 2`` with ``b``, ``H`` the gradient and
Hessian of ``F`` in ``zeta`` at ``zeta = 0`` (forward-mode through the prox) has
expectation 0 given ``omega``. Measured on 1024 points: at T = 3 ``F`` at ``zeta = 0``
is 0.3 % of its mean (q_hat comes from the label side), the linear term removes nothing
and the quadratic one leaves 27 % of the variance (1.9x in standard error); at T = 2
(``F`` at ``zeta = 0``: 66 % of its mean) they leave 46 % and 22 %. Its cost, a second
prox solve and 12 x 13 / 2 second derivatives a point at T = 3, is far above the 1.25x
that the budget leaves.
"""

import json
import os
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np

import attnlib
from attnlib.se import drivers, propagation
from attnlib.se.output import output_arrays

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from se_accuracy import POINTS, REF_FILE  # noqa: E402

attnlib.configure_jax()
warnings.simplefilter("ignore")

CONJ = ("m_hat", "q_hat", "a_hat")
N_SPREAD, PER = 32768, 2048


def _means(pb, x, n_points, n_rep):
    """Output means ``(n_rep, 3)`` in the order ``(m_hat, q_hat, a_hat)`` and prox points."""
    o = output_arrays(pb.channel, pb.data.z, pb.data.alpha, pb.data.Q0, jnp.asarray(x),
                      jnp.zeros((n_points, pb.task.n_pairs)), mode="cold")  # fmt: skip
    return np.asarray(o.means)[:, [2, 1, 0]], o.prox


def spread(name, x, seed):
    """Per conjugate: relative spread of the scramblings' means and of the mse through it."""
    task, target, alpha, lam = POINTS[name]
    qmc = (N_SPREAD, N_SPREAD // PER, seed)
    pb = drivers._problem(task, target, alpha, lam, "nuclear", (qmc, 5))
    means, prox = _means(pb, x, N_SPREAD, N_SPREAD // PER)
    C, G, _ = propagation.jacobians(pb, lam, x, prox, means.mean(axis=0))
    through = np.linalg.inv(np.eye(3) - G @ C[:3]) @ G
    dev = means - means.mean(axis=0)
    mse = float(pb.data.Q0) - 2.0 * x[0] + x[1]
    rel = lambda d: float(np.std(-2.0 * d[0] + d[1], ddof=1) / mse)  # noqa: E731
    parts = [rel(through[:, [j]] @ dev[:, [j]].T) for j in range(3)]
    return dev.std(axis=0, ddof=1) / np.abs(means.mean(axis=0)), parts, rel(through @ dev.T)


def control_variates(name, x, n=8192):
    """Per conjugate: the variance left after Hermite fits of degree 1 and 2, the top 1 %."""
    task, target, alpha, lam = POINTS[name]
    pb = drivers._problem(task, target, alpha, lam, "nuclear", ((n, 1, 0), 5))
    z = np.asarray(pb.data.z)[0]
    per_point = pb._replace(data=pb.data._replace(z=jnp.asarray(z[:, None, :])))
    f, _ = _means(per_point, x, n, n)  # one "scrambling" per point: the integrands
    D = z.shape[1]
    lin = [np.ones(n)] + [z[:, i] for i in range(D)]
    quad = [z[:, i] * z[:, j] - (i == j) for i in range(D) for j in range(i, D)]
    left = []
    for F in (np.stack(lin, 1), np.stack(lin + quad, 1)):
        beta = np.linalg.lstsq(F, f, rcond=None)[0]
        left.append((f - F @ beta).var(axis=0) / f.var(axis=0))
    sq = np.sort((f - f.mean(axis=0)) ** 2, axis=0)[::-1]
    top = sq[: n // 100].sum(axis=0) / sq.sum(axis=0)
    return D, left, top, f.std(axis=0) / np.abs(f.mean(axis=0))


def conditional_taylor(name, x, n=1024):
    """Variance of q_hat's integrand left by the conditional Taylor control variates in the
    label-side normals ``zeta`` (module docstring): ``(F(zeta=0) mean / F mean, linear,
    linear + quadratic)`` on ``n`` points of one scrambled Sobol set."""
    task, target, alpha, lam = POINTS[name]
    pb = drivers._problem(task, target, alpha, lam, "nuclear", ((n, 1, 0), 5))
    K, xj, blank = task.n_pairs, jnp.asarray(x), jnp.zeros((n, task.n_pairs))

    def q_hat_terms(zf):  # the output side's q_hat column at each point (one per "scrambling")
        o = output_arrays(pb.channel, zf[:, None, :], pb.data.alpha, pb.data.Q0, xj, blank,
                          mode="cold")  # fmt: skip
        return o.means[:, 1]

    z = jnp.asarray(np.asarray(pb.data.z)[0])
    side = [i for i in range(z.shape[1]) if not K <= i < 2 * K]  # u1 and the noise: zeta
    z0 = z.at[:, jnp.array(side)].set(0.0)
    unit = [jnp.zeros_like(z).at[:, i].set(1.0) for i in side]
    d1 = lambda t: lambda zz: jax.jvp(q_hat_terms, (zz,), (t,))[1]  # noqa: E731
    b = np.stack([np.asarray(d1(t)(z0)) for t in unit], axis=1)
    H = np.empty((n, len(side), len(side)))
    for a, ta in enumerate(unit):
        for c in range(a, len(side)):
            H[:, a, c] = H[:, c, a] = np.asarray(jax.jvp(d1(ta), (z0,), (unit[c],))[1])
    f, zeta = np.asarray(q_hat_terms(z)), np.asarray(z)[:, side]
    lin = np.sum(b * zeta, axis=1)
    quad = 0.5 * (np.einsum("ni,nij,nj->n", zeta, H, zeta) - np.trace(H, axis1=1, axis2=2))
    at_zero = float(np.mean(q_hat_terms(z0)) / f.mean())
    return at_zero, float(np.var(f - lin) / np.var(f)), float(np.var(f - lin - quad) / np.var(f))


def _fmt(values, digits=4) -> str:
    return ", ".join(f"{c} {v:.{digits}g}" for c, v in zip(CONJ, values, strict=True))


def main():
    with open(REF_FILE) as fh:
        refs = json.load(fh)
    args = [a for a in sys.argv[1:] if a != "--taylor"]
    names = args or ["s2s_T3_n0.1_a0.3_l1e-2", "s2s_T2_a2_l0.1"]
    for name in names:
        x = np.array(refs[f"{name}|pathwise"]["x"])
        print(f"\n{name}")
        for seed in (0, 1):
            own, parts, total = spread(name, x, seed)
            print(f"  seed {seed}: relative spread per scrambling: {_fmt(own)}")
            print(f"    of the mse through each: {_fmt(parts)}; all together {total:.4g}")
        D, left, top, cv = control_variates(name, x)
        print(f"  {D} dimensions; integrands' sd/mean: {_fmt(cv, 2)}")
        print(f"    variance left by Hermite fits of degree 1: {_fmt(left[0], 3)}")
        print(f"    variance left by Hermite fits of degree 2: {_fmt(left[1], 3)}")
        print(f"    variance in the top 1 % of points: {_fmt(top, 3)}")
        if "--taylor" in sys.argv:
            at_zero, lin, quad = conditional_taylor(name, x)
            print(f"  q_hat at zeta = 0: {at_zero:.3g} of its mean")
            print(f"    variance left by conditional Taylor terms: linear {lin:.3f}, "
                  f"+ quadratic {quad:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
