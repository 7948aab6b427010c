"""Why the default solve missed seq2seq T = 2, Wishart(0.5), alpha 2, lam 0.1 (issue 34).

    python benchmarks/se_bias.py diagnose          # (a)-(d) and the two m_hat forms
    python benchmarks/se_bias.py seeds POINT [--stein] [--n-seeds S]
    python benchmarks/se_bias.py reference POINT   # plain solve at 2^16 points, seed 1000

``--stein`` solves with the Stein form of ``m_hat`` (``SESettings(m_hat="stein")``, the
code before the pathwise form). Measured on a shared 2-core machine (one run each).

The symptom (Stein form, before): default solves (8192 points, 4 scramblings) at seeds
0-3 gave mse 0.03499, 0.02940, 0.03417, 0.02451 with reported errors 2.0, 3.7, 4.4,
14 %; plain solves at 2^16 points 0.03024 and 0.02898 (seeds 1000, 1001).

What it was not (``diagnose``, at the default fixed point, 64 scramblings of 2048; the
first numbers below were taken at the Stein solve's fixed point, mse 0.03499, the
script's output at the pathwise one, mse 0.03062, in brackets):

(a) several minima: the prox from the two cold starts (``omega``, the label-consistent
    point) reached the same minimum at all 131072 points (none differs by 1e-5), here
    and at five chapter points (seq2seq T = 2 alpha 0.5 lam 0.1, alpha 1 lam 1e-2,
    noise 0.1 alpha 0.3 lam 1e-3; T = 3 noise 0.1 Wishart(0.3) alpha 0.3 lam 1e-2;
    seq2lab T = 2 alpha 1 lam 1e-3; 65536 points each);
(b) heavy tails: the 10 largest of 65536 per-point terms carry 0.03 % (a_hat), 0.15 %
    (q_hat), 0.2 % (m_hat) of the sums [of 2048: 0.9 %, 3.2 %, 4.2 % (Stein), 1.0 %
    (pathwise), against 0.5 % for equal terms]; the scramblings' means have kurtosis
    0.8 or less;
(c) the Newton prox: the strict-local-minimum check of ``channels.finish`` (positive
    definite, gradient below 1e-7) passed at every point;
(d) a slowly contracting map: the map's Jacobian has eigenvalues 0.68, 0.13, 0.13
    (``(I - J)^{-1}`` at most 3.1), and one Newton step with it from the seed-0 fixed
    point on seed 3's points lands on seed 3's fixed point (mse 0.02469 against
    0.02451): the propagation is linear and right; nor the stopping tolerance
    (``tol = 1e-9`` moved the mse by 1e-9).

The mechanism: the mse ``Q0 - 2m + q`` is 0.023 ``Q0``, and the fixed point turns a
relative error of ``m_hat`` into a 36 times larger one of the mse (of ``a_hat``: 34
times; of ``q_hat``: 0.009 times). The Stein form ``m_hat = alpha sum sigma E[g u1] /
csd`` divides by ``csd = sqrt(Q0 - m^2/q) = 0.047``: its per-point standard deviation is
2.26 for a mean of 1.21, and the relative spread of its means over 2048-point
scramblings 0.79 % [0.62 %] (QMC gains a factor 4 over Monte Carlo), so 0.39 % at 8192
points, 14 % on the mse. The pathwise form ``alpha sum sigma^2 E[d g / d h0]`` (the
implicit derivative of the prox through the labels, no ``1 / csd``): per-point sd 0.64,
spread 0.053 % [0.055 %] per scrambling, the same mean (1.21344 +- 0.00008 against
Stein's 1.21235 +- 0.0012 [1.208081 +- 0.00008 and 1.208209 +- 0.00093]). The error
estimate itself has 3 degrees of freedom (4 scramblings): at seed 0 it put the Stein
``m_hat``'s error at 0.086 %, 4.5 times below its spread over scramblings, so that
solve reported 2 % for a 15 % deviation.

Per-scrambling relative spread of the two forms at the chapter points (32 scramblings
of 2048; csd; gap of the means over their combined error): seq2seq T = 2 alpha 0.5
lam 0.1 (csd 0.27): Stein 0.42 %, pathwise 0.075 % (gap -0.3); alpha 1 lam 1e-2 (csd
0.018): 0.58 %, 0.05 % (-0.1); noise 0.1 alpha 0.3 lam 1e-3 (csd 0.39): 0.98 %,
0.35 % (-1.1); T = 3 noise 0.1 Wishart(0.3) alpha 0.3 lam 1e-2 (csd 0.19): 0.99 %,
0.12 % (0.4); seq2lab T = 2 alpha 1 lam 1e-3 (csd 0.021): 0.74 %, 0.065 % (-0.6).

The default solve before and after (``seeds``, 8 seeds 0-7, 8192 points; relative sd
of the mse over the seeds, root mean square of the reported error; reference: a plain
solve at 2^16 points, seed 1000, with the pathwise form):

========================  ==========================  ==========================  =========
point                     Stein (before)              pathwise (after)            reference
                          mse mean, sd / rms rep.     mse mean, sd / rms rep.     mse (rep.)
========================  ==========================  ==========================  =========
s2s T2 a2 lam 0.1         0.03112, 17 % / 11 %        0.030584, 0.24 % / 0.46 %   0.030576
                                                                                  (0.15 %)
s2s T2 a0.5 lam 0.1       0.25856, 1.2 % / 0.91 %     0.258469, 0.19 % / 0.30 %   0.258363
                                                                                  (0.12 %)
s2l T2 a1 lam 1e-3        0.00240, 77 % / 86 %        0.001886, 0.72 % / 0.83 %
                          (0.0003 to 0.0053)
========================  ==========================  ==========================  =========

Cost: the warm output side at 8192 points, T = 2: 0.014 s (Stein form: 0.016 s); a warm
default solve at alpha 2: 0.2-0.5 s either way.

Not measured: the T = 3 point over seeds (``seeds s2s_T3_n0.1_a0.3_l1e-2``). In this
session solves there stopped with every thread in a futex wait and no CPU use, at
several places of the solve, with this code and, later, with the code before it (one
solve of the code before finished in 4.5 s, the next one hung): a stall of the machine
or of JAX's compilation cache, not of the pathwise form.
"""

import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

import attnlib
from attnlib import channels, qmc, se, tasks
from attnlib.channels.prox import target_derivative
from attnlib.se import output as se_output
from attnlib.targets import Wishart

attnlib.configure_jax()
warnings.simplefilter("ignore")
M_HAT = "derivative"  # the form of m_hat of the solves (--stein: "stein")

POINTS = {
    "s2s_T2_a2_l0.1": (tasks.Seq2Seq(T=2), Wishart(0.5), 2.0, 0.1),
    "s2s_T2_a0.5_l0.1": (tasks.Seq2Seq(T=2), Wishart(0.5), 0.5, 0.1),
    "s2l_T2_a1_l1e-3": (tasks.Seq2Lab(T=2), Wishart(0.5), 1.0, 1e-3),
    "s2s_T3_n0.1_a0.3_l1e-2": (tasks.Seq2Seq(T=3, noise=0.1), Wishart(0.3), 0.3, 1e-2),
}


def _per_point(task, Q0, alpha, x):
    """Per-point ``(a_hat, q_hat, m_hat Stein, m_hat pathwise)`` terms, the gap between
    the two cold starts' minima and the prox check, on points ``z`` (jitted)."""
    ch = channels.for_task(task)
    K = task.n_pairs
    s2 = jnp.asarray(tasks.pair_variances(task.T))

    @jax.jit
    def per(z):
        p = se_output.pairs(ch, z, Q0, x)
        p1 = ch.prox(p.Y, p.omega, p.V, p.omega[:, None])
        p2 = ch.prox(p.Y, p.omega, p.V, p.lab[:, None])
        h = jnp.where((p1.objective <= p2.objective)[:, None], p1.h, p2.h)
        out, ok = ch.finish(p.Y, p.omega, p.V, h)
        dg = target_derivative(ch, h, p.h0, z[:, 2 * K :], p.V)
        return jnp.stack(
            [
                alpha * jnp.sum(s2 * -out.dg, -1),
                0.5 * alpha * jnp.sum(s2 * out.g**2, -1),
                alpha * jnp.sum(jnp.sqrt(s2) * out.g * z[:, :K], -1) / p.csd,
                alpha * jnp.sum(s2 * dg, -1),
                jnp.max(jnp.abs(p1.h - p2.h), -1),
                ok,
            ],
            -1,
        )

    return per


def diagnose(name="s2s_T2_a2_l0.1", R=64, n=2048):
    task, target, alpha, lam = POINTS[name]
    r = se.solve(task, target, alpha, lam, m_hat=M_HAT)
    Q0 = float(target.Q0)
    x = jnp.asarray([r.m, r.q, r.v])
    print(f"{name}: mse {r.mse:.5f} (reported {r.integration_error:.2%}), "
          f"csd {np.sqrt(Q0 - r.m**2 / r.q):.4f}")  # fmt: skip
    per = _per_point(task, Q0, alpha, x)
    dim = 2 * task.n_pairs + se_output.noise_dim(task)
    means, n_differ, n_bad, tops = [], 0, 0, []
    for k in range(R):
        P = np.asarray(per(jnp.asarray(qmc.sobol_normals(dim, n, [777, k]))))
        means.append(P[:, :4].mean(0))
        n_differ += int(np.sum(P[:, 4] > 1e-5))
        n_bad += int(np.sum(P[:, 5] == 0))
        if k == 0:
            srt = np.sort(np.abs(P[:, :4]), axis=0)[::-1]
            tops = srt[:10].sum(0) / srt.sum(0)
            print("  per-point sd (a, q, m Stein, m pathwise):", P[:, :4].std(0).round(4))
    M = np.array(means)
    mean, sd = M.mean(0), M.std(0, ddof=1)
    print(f"  points: {R * n}; cold minima differ at {n_differ}; prox check failed at {n_bad}")
    print("  share of the 10 largest terms (first scrambling):", tops.round(5))
    for j, lab in enumerate(("a_hat", "q_hat", "m_hat Stein", "m_hat pathwise")):
        print(f"  {lab:15s} {mean[j]:.6f} +- {sd[j] / np.sqrt(R):.2g}, "
              f"relative spread per scrambling {sd[j] / abs(mean[j]):.3g}")  # fmt: skip


def seeds(name, n_seeds=8):
    task, target, alpha, lam = POINTS[name]
    init = None
    rows = []
    for seed in range(n_seeds):
        t = time.perf_counter()
        r = se.solve(task, target, alpha, lam, seed=seed, init=init, m_hat=M_HAT)
        init = init or r
        rows.append((r.mse, r.test_error, r.integration_error))
        el = time.perf_counter() - t
        print(f"  seed {seed}: mse {r.mse:.6f} test {r.test_error:.6f} reported "
              f"{r.integration_error:.3%} ({el:.1f} s)", flush=True)  # fmt: skip
    a = np.array(rows)
    mean, sd = a.mean(0), a.std(0, ddof=1)
    print(f"{name}: mse {mean[0]:.6f}, relative sd over seeds {sd[0] / mean[0]:.3%}; "
          f"test {mean[1]:.6f} ({sd[1] / mean[1]:.3%}); rms reported "
          f"{np.sqrt(np.mean(a[:, 2] ** 2)):.3%}")  # fmt: skip


def reference(name):
    task, target, alpha, lam = POINTS[name]
    t = time.perf_counter()
    r = se.solve(task, target, alpha, lam, n_qmc=2**16, seed=1000, m_hat=M_HAT)
    print(f"{name} reference (2^16 points, seed 1000): mse {r.mse:.6f} test {r.test_error:.6f}"
          f" reported {r.integration_error:.3%} ({time.perf_counter() - t:.0f} s)")  # fmt: skip


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--stein" in args:  # the Stein form of m_hat everywhere (the code before)
        M_HAT = "stein"
        args.remove("--stein")
    n_seeds = 8
    if "--n-seeds" in args:
        i = args.index("--n-seeds")
        n_seeds = int(args[i + 1])
        del args[i : i + 2]
    cmd = args[0] if args else "diagnose"
    if cmd == "diagnose":
        diagnose(*args[1:2])
    elif cmd == "seeds":
        seeds(args[1], n_seeds)
    else:
        reference(args[1])
