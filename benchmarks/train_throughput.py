"""Throughput of one full-batch Adam step of the factorised student, as a fraction of matmul.

Setting: seq2seq, T = 2, d = 100, alpha = 1 (n = alpha d^2 = 10^4 sequences),
p = d, float32, CPU.

FLOP count of one step (analytic; element-wise work, softmax and the Adam
update are O(n T^2 + d p) and left out):

    forward   X W            (nT x d) @ (d x p)           2 n T d p
              (XW)(XW)^T     n blocks (T x p) @ (p x T)   2 n T^2 p
    backward  dL/d(XW)       n blocks (T x T) @ (T x p)   2 n T^2 p
              dL/dW = X^T .  (d x nT) @ (nT x p)          2 n T d p
    total                                                 4 n T d p + 4 n T^2 p

The reference is a plain float32 matmul of the same size, (nT x d) @ (d x p),
2 n T d p FLOPs, timed in the same run. The printed ratio is

    (FLOPs of a step / time of a step) / (FLOPs of the matmul / time of the matmul).

Steps are timed inside the library's jit-compiled ``lax.scan`` chunk (the hot
loop of :func:`attnlib.train.train_factorized`), after a warm-up call that
compiles it. Run: ``python benchmarks/train_throughput.py``.
"""

from __future__ import annotations

import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

import attnlib
from attnlib import targets, tasks, train
from attnlib.train.adam import _optax_chunk, _optimizer, _Static

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

D, T, ALPHA = 100, 2, 1.0
CHUNK = 10  # Adam steps per timed call
REPEATS = 15


def best_time(fn, repeats=REPEATS):
    """Smallest wall time of ``fn()`` (which must block until its result is ready)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    key = jax.random.PRNGKey(0)
    k_s0, k_data, k_w, k_a, k_b = jax.random.split(key, 5)
    task = tasks.Seq2Seq(T=T)
    d, p = D, D
    n = tasks.n_samples(ALPHA, d)
    S0 = targets.Wishart(kappa0=0.5).sample(k_s0, d)
    data = tasks.make_dataset(k_data, task, S0, n)

    dt = jnp.float32
    X = jnp.asarray(data.X, dt)
    Y = jnp.asarray(data.Y, dt)
    W = jax.random.normal(k_w, (d, p), dt)
    lam_W = jnp.asarray(0.05, dt)
    lr = (jnp.asarray(0.05, dt), jnp.asarray(0.01, dt), jnp.asarray(1000.0, dt))
    opt_state = _optimizer("adam", None, *lr).init(W)

    static = _Static(task, "factorized", "adam", None, CHUNK)

    def run_steps():
        out = _optax_chunk(static, (W, opt_state), X, Y, lam_W, lr)
        jax.block_until_ready(out)

    A = jax.random.normal(k_a, (n * T, d), dt)
    B = jax.random.normal(k_b, (d, p), dt)
    matmul = jax.jit(jnp.matmul)

    def run_matmul():
        matmul(A, B).block_until_ready()

    run_steps()  # compile
    run_matmul()
    t_step = best_time(run_steps) / CHUNK
    t_mm = best_time(lambda: [run_matmul() for _ in range(10)]) / 10

    flops_step = 4 * n * T * d * p + 4 * n * T * T * p
    flops_mm = 2 * n * T * d * p
    rate_step = flops_step / t_step
    rate_mm = flops_mm / t_mm
    # the same steps through the public entry point (host loop, checks, final float64 loss)
    steps = 20 * CHUNK
    kwargs = dict(steps=steps, chunk=CHUNK, tol=0.0, learning_rate=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # tol = 0: "did not converge"
        train.train_factorized(k_w, task, data, p, 0.05, **kwargs)  # compile
        t0 = time.perf_counter()
        train.train_factorized(k_w, task, data, p, 0.05, **kwargs)
        t_public = (time.perf_counter() - t0) / steps

    gflops = 1e-9
    print(f"setting: seq2seq T={T}, d={d}, p={p}, n={n}, float32, {jax.default_backend()}")
    print(
        f"Adam step: {flops_step:.3e} FLOP, {t_step * 1e3:.2f} ms, {rate_step * gflops:.1f} GFLOP/s"
    )
    print(f"matmul:    {flops_mm:.3e} FLOP, {t_mm * 1e3:.2f} ms, {rate_mm * gflops:.1f} GFLOP/s")
    print(f"throughput ratio (Adam step rate / matmul rate): {rate_step / rate_mm:.2f}")
    print(f"train_factorized, {steps} steps: {t_public * 1e3:.2f} ms per step (incl. overheads)")
    return rate_step / rate_mm


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
