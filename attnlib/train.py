r"""Empirical risk minimisation on a data set of the attention-indexed model.

Conventions (THEORY.md section 2). For a data set ``(X, Y)`` of ``n`` sequences
(:class:`attnlib.tasks.Dataset`) and a symmetric ``d x d`` matrix ``S``:

- the data term is ``L(S) = sum_mu ||Y_mu - g(h_mu(S))||^2`` (a *sum* over
  sequences, each the task's square loss :meth:`attnlib.tasks.Task.loss`);
- the nuclear objective is ``L(S) + d * lam * Tr S`` over PSD ``S``;
- the Frobenius objective is ``L(S) + d * (lam / 2) * ||S||_F^2`` over symmetric ``S``;
- the factorised student has ``W`` of shape ``(d, p)``, ``S = W W^T / sqrt(p d)``
  and objective ``L(S) + lam_W ||W||_F^2``. Since ``||W||_F^2 = sqrt(p d) Tr S``
  ``= sqrt(kappa) d Tr S`` it equals the nuclear objective with
  ``lam = sqrt(kappa) lam_W`` (``kappa = p / d``), restricted to rank ``<= p``.

Three solvers, all jit-compiled and run in chunks of steps:

- :func:`train_factorized`: full-batch Adam (optax) on ``W``;
- :func:`train_direct`: full-batch Adam or gradient descent on a symmetric ``S``
  with the Frobenius penalty;
- :func:`train_convex`: accelerated proximal gradient (FISTA with backtracking
  and adaptive restart) on ``S`` with the nuclear + PSD proximal map (or the
  Frobenius one). It converges to the minimiser to near machine precision and is
  the reference the other solvers and GAMP are compared with.

Each returns a :class:`TrainResult`. Metrics: :func:`train_loss`, :func:`test_error`,
:func:`mse`, :func:`overlaps`.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from attnlib import _checks
from attnlib.tasks import Dataset, Task, sample_sequences

PENALTIES = ("nuclear", "frobenius")

__all__ = [
    "TrainResult",
    "Overlaps",
    "TestError",
    "objective",
    "prox_nuclear_psd",
    "prox_frobenius",
    "factorized_preactivations",
    "train_factorized",
    "train_direct",
    "train_convex",
    "train_loss",
    "test_error",
    "test_error_stats",
    "mse",
    "overlaps",
]


class TrainResult(NamedTuple):
    """Result of a training run.

    Attributes:
      S: the learned symmetric ``(d, d)`` matrix (float64 numpy array).
      W: the learned factor ``(d, p)`` for :func:`train_factorized`, else ``None``.
      history: objective value at every step (``(n_steps,)`` numpy array), in the
        units of :func:`objective` (a sum over sequences, not a mean).
      train_loss: mean per-sequence square loss of ``S`` on the training set.
      converged: whether the stopping criterion (``residual < tol``) was met.
      n_steps: number of optimisation steps taken.
      residual: the quantity compared with ``tol``. For the first-order solvers
        (:func:`train_factorized`, :func:`train_direct`) it is the relative
        change of the objective per step over the last chunk of steps; for
        :func:`train_convex` it is the relative norm of the gradient mapping
        ``||S - prox(S - grad/L)||_F / max(||S||_F, ||grad||_F / L)``.
      path: with ``keep_path=True``, the parameters (``W`` for
        :func:`train_factorized`, ``S`` for :func:`train_direct`) after every
        chunk of steps, shape ``(n_chunks, ...)``; step ``(i + 1) * chunk`` is
        ``path[i]``. Otherwise ``None``.
    """

    S: np.ndarray
    W: np.ndarray | None
    history: np.ndarray
    train_loss: float
    converged: bool
    n_steps: int
    residual: float
    path: np.ndarray | None = None


class Overlaps(NamedTuple):
    """``m = Tr(S S0)/d``, ``q = Tr(S^2)/d``, ``Q0 = Tr(S0^2)/d``."""

    m: float
    q: float
    Q0: float


class TestError(NamedTuple):
    """Monte Carlo estimate of a test error: ``mean`` and its standard error ``stderr``."""

    __test__ = False  # not a pytest test class

    mean: float
    stderr: float


# ----------------------------------------------------------------------------
# Argument checks
# ----------------------------------------------------------------------------


def _check_data(task: Task, data: Dataset, d: int | None = None):
    """Validate a data set against a task; return ``(X, Y)`` as jax arrays and ``d``."""
    if not isinstance(task, Task):
        raise ValueError(f"task must be an attnlib.tasks.Task, got {task!r}")
    if not hasattr(data, "X") or not hasattr(data, "Y"):
        raise ValueError("data must be an attnlib.tasks.Dataset with fields X and Y")
    X = np.asarray(data.X)
    Y = np.asarray(data.Y)
    if X.ndim != 3 or X.shape[1] != task.T:
        raise ValueError(f"data.X must have shape (n, T={task.T}, d), got {X.shape}")
    if d is not None and X.shape[2] != d:
        raise ValueError(f"data.X has d = {X.shape[2]}, but the matrix has d = {d}")
    want = (X.shape[0], *task.out_shape)
    if Y.shape != want:
        raise ValueError(f"data.Y must have shape {want} for this task, got {Y.shape}")
    _checks.finite_array("data.X", X)
    _checks.finite_array("data.Y", Y)
    return data.X, data.Y, X.shape[2]


def _check_square(name: str, S, d: int | None = None, symmetric: bool = False):
    a = np.asarray(S)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"{name} must be a square (d, d) matrix, got shape {a.shape}")
    if d is not None and a.shape[0] != d:
        raise ValueError(f"{name} must have shape ({d}, {d}) to match the data, got {a.shape}")
    _checks.finite_array(name, a)
    if symmetric:
        scale = float(np.max(np.abs(a))) if a.size else 0.0
        if np.max(np.abs(a - a.T), initial=0.0) > 1e-6 * scale:
            raise ValueError(f"{name} must be symmetric (|{name} - {name}^T| > 1e-6 max|{name}|)")
    return a


def _check_dtype(dtype):
    dt = jnp.dtype(dtype)
    if dt not in (jnp.dtype(jnp.float32), jnp.dtype(jnp.float64)):
        raise ValueError(f"dtype must be float32 or float64, got {dtype!r}")
    return dt


def _check_learning_rate(learning_rate):
    if callable(learning_rate):
        return learning_rate
    return _checks.positive("learning_rate", learning_rate)


# ----------------------------------------------------------------------------
# Objectives and proximal maps
# ----------------------------------------------------------------------------


def _sym(A):
    return (A + A.T) / 2


_UNROLL_MAX_T = 8  # up to this T the pair products are written out (see _pair_gram)


def _pair_gram(U, V):
    """``G_ab = <U_a, V_b>`` for ``(n, T, k)`` arrays, assuming ``G`` symmetric.

    For small ``T`` the ``K`` products ``a <= b`` are computed as element-wise
    products and row sums and mirrored: on CPU this is several times faster
    than a batched ``einsum`` of ``n`` tiny ``(T, k) @ (k, T)`` products.
    """
    T = U.shape[-2]
    if T > _UNROLL_MAX_T:
        return jnp.einsum("nak,nbk->nab", U, V)
    g = {}
    for a in range(T):
        for b in range(a, T):
            g[a, b] = jnp.sum(U[:, a, :] * V[:, b, :], axis=-1)
    rows = [jnp.stack([g[min(a, b), max(a, b)] for b in range(T)], axis=-1) for a in range(T)]
    return jnp.stack(rows, axis=-2)


def _preacts(X, S):
    """:func:`attnlib.tasks.preactivations` for ``(n, T, d)`` data and symmetric ``S``."""
    n, T, d = X.shape
    XS = (X.reshape(n * T, d) @ S).reshape(n, T, d)
    h = _pair_gram(XS, X)
    return (h - jnp.trace(S) * jnp.eye(T, dtype=h.dtype)) / math.sqrt(d)


def _data_term(task: Task, X, Y, S):
    """``sum_mu loss(Y_mu, h_mu(S))``."""
    return jnp.sum(task.loss(Y, _preacts(X, S)))


def _penalty(S, lam, penalty: str):
    d = S.shape[0]
    if penalty == "nuclear":
        return d * lam * jnp.trace(S)
    return d * (lam / 2) * jnp.sum(S * S)


def objective(task: Task, data: Dataset, S, lam: float, penalty: str = "nuclear") -> float:
    """``sum_mu loss(Y_mu, h_mu(S)) + d lam Tr S`` (nuclear) or ``+ d (lam/2) ||S||_F^2``.

    The nuclear objective is the one of PSD ``S``; this function evaluates the
    formula for any symmetric ``S`` (the PSD constraint is the solver's business).

    Args:
      task: the task (output function and loss).
      data: a :class:`attnlib.tasks.Dataset` with ``X`` of shape ``(n, T, d)``.
      S: symmetric ``(d, d)`` matrix.
      lam: penalty strength ``>= 0``.
      penalty: ``"nuclear"`` or ``"frobenius"``.
    """
    lam = _checks.nonnegative("lam", lam)
    _checks.choice("penalty", penalty, PENALTIES)
    X, Y, d = _check_data(task, data)
    S = jnp.asarray(_check_square("S", S, d, symmetric=True), dtype=X.dtype)
    return float(_objective_jit(task, X, Y, S, lam, penalty))


@functools.partial(jax.jit, static_argnames=("task", "penalty"))
def _objective_jit(task, X, Y, S, lam, penalty):
    return _data_term(task, X, Y, S) + _penalty(S, lam, penalty)


@jax.jit
def _prox_nuclear_psd(B, t):
    w, V = jnp.linalg.eigh(_sym(B))
    return _sym((V * jnp.maximum(w - t, 0.0)[None, :]) @ V.T)


def prox_nuclear_psd(B, t: float) -> jax.Array:
    """Proximal map of ``t Tr S + indicator(S PSD)`` at the symmetric ``B``.

    ``argmin_{S PSD} (1/2)||S - B||_F^2 + t Tr S``: eigenvalues ``x -> max(x - t, 0)``,
    eigenvectors kept. ``B`` is symmetrised first.
    """
    t = _checks.nonnegative("t", t)
    B = jnp.asarray(_check_square("B", B))
    return _prox_nuclear_psd(B, t)


def prox_frobenius(B, t: float) -> jax.Array:
    """Proximal map of ``(t/2)||S||_F^2`` at ``B``: ``B / (1 + t)``.

    Eigenvalues ``x -> x / (1 + t)``; ``B`` is symmetrised first.
    """
    t = _checks.nonnegative("t", t)
    B = jnp.asarray(_check_square("B", B))
    return _sym(B) / (1.0 + t)


def _prox(B, t, penalty: str):
    if penalty == "nuclear":
        return _prox_nuclear_psd(B, t)
    return _sym(B) / (1.0 + t)


# ----------------------------------------------------------------------------
# Factorised model
# ----------------------------------------------------------------------------


def factorized_preactivations(X, W):
    r"""Pre-activations of ``S = W W^T / sqrt(p d)`` without forming ``S``.

    ``h = [(X W)(X W)^T / sqrt(p d) - I Tr S] / sqrt(d)`` with
    ``Tr S = ||W||_F^2 / sqrt(p d)``: one ``(n T, d) @ (d, p)`` matmul dominates.
    ``X`` has shape ``(n, T, d)``, ``W`` ``(d, p)``; returns ``(n, T, T)``.
    """
    n, T, d = X.shape
    p = W.shape[1]
    c = 1.0 / math.sqrt(p * d)
    XW = (X.reshape(n * T, d) @ W).reshape(n, T, p)
    G = _pair_gram(XW, XW) * c
    tr = jnp.sum(W * W) * c
    return (G - tr * jnp.eye(T, dtype=G.dtype)) / math.sqrt(d)


def _factorized_objective(task, W, X, Y, lam_W):
    return jnp.sum(task.loss(Y, factorized_preactivations(X, W))) + lam_W * jnp.sum(W * W)


def _direct_objective(task, S, X, Y, lam):
    return _data_term(task, X, Y, S) + _penalty(S, lam, "frobenius")


_OBJECTIVES = {"factorized": _factorized_objective, "direct": _direct_objective}


def _optimizer(method, schedule, lr0, decay, total):
    """Adam or SGD with the user's schedule, or ``lr0 * decay ** (step / total)``.

    Built inside the jitted chunk from hashable static choices and traced
    numbers, so repeated calls reuse the compiled code.
    """
    if schedule is None:

        def schedule(count):
            return lr0 * decay ** (count / total)

    return optax.adam(schedule) if method == "adam" else optax.sgd(schedule)


@functools.partial(jax.jit, static_argnames=("task", "kind", "method", "schedule", "chunk"))
def _optax_chunk(task, kind, method, schedule, chunk, params, opt_state, X, Y, lam, lr):
    """``chunk`` optimiser steps; returns the new state and the objective before each step."""
    value_fn = functools.partial(_OBJECTIVES[kind], task)
    opt = _optimizer(method, schedule, *lr)

    def step(carry, _):
        params, opt_state = carry
        value, grad = jax.value_and_grad(value_fn)(params, X, Y, lam)
        if kind == "direct":
            grad = _sym(grad)
        updates, opt_state = opt.update(grad, opt_state, params)
        params = optax.apply_updates(params, updates)
        return (params, opt_state), value

    (params, opt_state), values = jax.lax.scan(step, (params, opt_state), None, length=chunk)
    return params, opt_state, values


def _run_optax(
    task, kind, method, learning_rate, decay, params, X, Y, lam, steps, tol, chunk, keep_path
):
    """Host loop over jit-compiled chunks; stop when the relative change per step < tol."""
    dt = params.dtype
    if callable(learning_rate):
        schedule, lr = learning_rate, (jnp.ones((), dt),) * 3
    else:
        schedule = None
        lr = (jnp.asarray(learning_rate, dt), jnp.asarray(decay, dt), jnp.asarray(steps, dt))
    opt_state = _optimizer(method, schedule, *lr).init(params)
    lam = jnp.asarray(lam, dt)
    history, path = [], []
    residual = math.inf
    done = 0
    while done < steps:
        params, opt_state, values = _optax_chunk(
            task, kind, method, schedule, chunk, params, opt_state, X, Y, lam, lr
        )
        values = np.asarray(values, dtype=float)
        done += chunk
        if not np.all(np.isfinite(values)):
            raise FloatingPointError(
                f"objective became non-finite within {done} steps; lower learning_rate"
            )
        # relative change per step over this chunk (from the last value of the previous one)
        prev, n_diff = (history[-1][-1], chunk) if history else (values[0], max(chunk - 1, 1))
        history.append(values)
        if keep_path:
            path.append(np.asarray(params))
        residual = abs(prev - values[-1]) / (max(abs(values[-1]), 1e-300) * n_diff)
        if residual < tol:
            break
    return params, np.concatenate(history), residual, done, (np.stack(path) if keep_path else None)


@functools.partial(jax.jit, static_argnames=("task",))
def _mean_loss(task, X, Y, S):
    return jnp.mean(task.loss(Y, _preacts(X, S)))


def _finish(result_S, W, history, task, X, Y, converged, n_steps, residual, solver, tol, path=None):
    S = np.asarray(result_S, dtype=np.float64)
    X64, Y64 = jnp.asarray(X, jnp.float64), jnp.asarray(Y, jnp.float64)
    tl = float(_mean_loss(task, X64, Y64, jnp.asarray(S)))
    if not np.all(np.isfinite(S)):
        raise FloatingPointError(f"{solver} produced a non-finite S")
    if not converged:
        warnings.warn(
            f"{solver} did not converge in {n_steps} steps: residual {residual:.3g} "
            f">= tol {tol:.3g}",
            RuntimeWarning,
            stacklevel=3,
        )
    return TrainResult(
        S=S,
        W=None if W is None else np.asarray(W),
        history=np.asarray(history, dtype=np.float64),
        train_loss=tl,
        converged=bool(converged),
        n_steps=int(n_steps),
        residual=float(residual),
        path=path,
    )


def train_factorized(
    key: jax.Array,
    task: Task,
    data: Dataset,
    p: int,
    lam_W: float,
    *,
    steps: int = 5000,
    learning_rate: float | Callable = 0.1,
    decay: float = 0.01,
    tol: float = 1e-9,
    chunk: int = 100,
    dtype=jnp.float32,
    W_init=None,
    init_scale: float = 1.0,
    keep_path: bool = False,
) -> TrainResult:
    r"""Full-batch Adam on the tied factor ``W`` (``d x p``), ``S = W W^T / sqrt(p d)``.

    Minimises ``sum_mu loss(Y_mu, h_mu(S)) + lam_W ||W||_F^2`` (equal to the
    nuclear objective with ``lam = sqrt(p/d) lam_W``). Pre-activations use
    :func:`factorized_preactivations`, so one step costs about ``4 n T d p``
    flops in matmuls.

    Args:
      key: PRNG key for the initialisation (ignored when ``W_init`` is given).
      task, data: the task and the training set.
      p: student width (``kappa = p / d``).
      lam_W: weight decay ``>= 0``.
      steps: maximal number of Adam steps (rounded up to a multiple of ``chunk``).
      learning_rate: peak Adam rate, or an optax schedule (then ``decay`` is ignored).
      decay: the rate decays exponentially from ``learning_rate`` to
        ``decay * learning_rate`` over ``steps`` (``1.0``: constant).
      tol: stop when the relative change of the objective per step, averaged
        over the last chunk, is below ``tol``.
      chunk: steps per jit-compiled ``lax.scan`` call (history is checked between chunks).
      dtype: ``float32`` (fast) or ``float64``.
      W_init: initial ``(d, p)`` factor; default i.i.d. ``N(0, init_scale^2)``.
      init_scale: standard deviation of the default initialisation.
      keep_path: also return ``W`` after every chunk (``TrainResult.path``), e.g.
        to draw test-error curves along training.

    Returns:
      :class:`TrainResult` with ``W`` set; ``S`` is computed in float64.
    """
    p = _checks.integer("p", p, 1)
    lam_W = _checks.nonnegative("lam_W", lam_W)
    steps = _checks.integer("steps", steps, 1)
    chunk = _checks.integer("chunk", chunk, 1)
    tol = _checks.nonnegative("tol", tol)
    decay = _checks.in_interval("decay", decay, 0.0, 1.0)
    learning_rate = _check_learning_rate(learning_rate)
    init_scale = _checks.positive("init_scale", init_scale)
    dt = _check_dtype(dtype)
    X, Y, d = _check_data(task, data)
    if W_init is None:
        W0 = init_scale * jax.random.normal(key, (d, p), dtype=dt)
    else:
        W0 = np.asarray(W_init)
        if W0.shape != (d, p):
            raise ValueError(f"W_init must have shape (d, p) = ({d}, {p}), got {W0.shape}")
        _checks.finite_array("W_init", W0)
        W0 = jnp.asarray(W0, dtype=dt)
    Xc, Yc = jnp.asarray(X, dtype=dt), jnp.asarray(Y, dtype=dt)
    n_chunks = -(-steps // chunk)
    W, history, residual, done, path = _run_optax(
        task,
        "factorized",
        "adam",
        learning_rate,
        decay,
        W0,
        Xc,
        Yc,
        lam_W,
        n_chunks * chunk,
        tol,
        chunk,
        keep_path,
    )
    W64 = np.asarray(W, dtype=np.float64)
    S = W64 @ W64.T / math.sqrt(p * d)
    return _finish(
        S, W, history, task, X, Y, residual < tol, done, residual, "train_factorized", tol, path
    )


def train_direct(
    task: Task,
    data: Dataset,
    lam: float,
    *,
    method: str = "adam",
    steps: int = 5000,
    learning_rate: float | Callable | None = None,
    decay: float = 0.01,
    tol: float = 1e-9,
    chunk: int = 100,
    dtype=jnp.float64,
    S_init=None,
    keep_path: bool = False,
) -> TrainResult:
    r"""Train a symmetric ``S`` element-wise with the Frobenius penalty (no PSD constraint).

    Minimises ``sum_mu loss(Y_mu, h_mu(S)) + d (lam/2) ||S||_F^2``; gradients are
    symmetrised so ``S`` stays symmetric.

    Args:
      task, data: the task and the training set.
      lam: penalty strength ``>= 0``.
      method: ``"adam"`` or ``"gd"`` (plain gradient descent).
      steps, decay, tol, chunk, dtype: as in :func:`train_factorized`.
      learning_rate: Adam peak rate (default ``0.02``) or gradient-descent step
        (default ``1 / L`` with ``L`` a power-iteration estimate of the
        curvature of the objective at ``S_init``); or an optax schedule.
      S_init: initial symmetric ``(d, d)`` matrix (default zero).
      keep_path: also return ``S`` after every chunk (``TrainResult.path``).
    """
    lam = _checks.nonnegative("lam", lam)
    _checks.choice("method", method, ("adam", "gd"))
    steps = _checks.integer("steps", steps, 1)
    chunk = _checks.integer("chunk", chunk, 1)
    tol = _checks.nonnegative("tol", tol)
    decay = _checks.in_interval("decay", decay, 0.0, 1.0)
    dt = _check_dtype(dtype)
    X, Y, d = _check_data(task, data)
    Xc, Yc = jnp.asarray(X, dtype=dt), jnp.asarray(Y, dtype=dt)
    S0 = (
        jnp.zeros((d, d), dt)
        if S_init is None
        else jnp.asarray(
            _sym(jnp.asarray(_check_square("S_init", S_init, d, symmetric=True))), dtype=dt
        )
    )
    n_chunks = -(-steps // chunk)
    if learning_rate is None:
        if method == "adam":
            learning_rate = 0.02
        else:
            X64, Y64 = jnp.asarray(X, jnp.float64), jnp.asarray(Y, jnp.float64)
            L = _curvature(task, X64, Y64, jnp.asarray(S0, jnp.float64)) + d * lam
            learning_rate = 1.0 / L
            decay = 1.0
    else:
        learning_rate = _check_learning_rate(learning_rate)
    S, history, residual, done, path = _run_optax(
        task,
        "direct",
        "adam" if method == "adam" else "sgd",
        learning_rate,
        decay,
        S0,
        Xc,
        Yc,
        lam,
        n_chunks * chunk,
        tol,
        chunk,
        keep_path,
    )
    return _finish(
        _sym(S),
        None,
        history,
        task,
        X,
        Y,
        residual < tol,
        done,
        residual,
        "train_direct",
        tol,
        path,
    )


# ----------------------------------------------------------------------------
# Accelerated proximal gradient
# ----------------------------------------------------------------------------


@functools.partial(jax.jit, static_argnames=("task",))
def _value_and_sym_grad(task, X, Y, S):
    """Data term and its gradient in the space of symmetric matrices."""
    f, g = jax.value_and_grad(functools.partial(_data_term, task, X, Y))(S)
    return f, _sym(g)


def _curvature(task, X, Y, S, iters: int = 20) -> float:
    """Power-iteration estimate of the largest curvature of the data term at ``S``.

    Hessian-vector products by finite differences of gradients (float64), which
    keeps the compiled code to the gradient alone.
    """
    S = jnp.asarray(S)
    g0 = _value_and_sym_grad(task, X, Y, S)[1]
    v = _sym(jax.random.normal(jax.random.PRNGKey(0), S.shape, S.dtype))
    v = v / jnp.linalg.norm(v)
    eps = 1e-5 * max(1.0, float(jnp.linalg.norm(S)))
    L = 0.0
    for _ in range(iters):
        hv = (_value_and_sym_grad(task, X, Y, S + eps * v)[1] - g0) / eps
        L = float(jnp.linalg.norm(hv))
        if not L > 0:
            return 1.0
        v = hv / L
    return L


class _FistaState(NamedTuple):
    x: jax.Array  # current iterate
    x_prev: jax.Array
    theta: jax.Array  # momentum parameter
    L: jax.Array  # current Lipschitz estimate
    Fx: jax.Array  # objective at x


@functools.partial(jax.jit, static_argnames=("task", "penalty", "chunk"))
def _fista_chunk(task, penalty, chunk, state: _FistaState, X, Y, lam):
    d = state.x.shape[0]
    vg = functools.partial(_value_and_sym_grad.__wrapped__, task, X, Y)
    # penalty in the prox: nuclear ``d lam Tr S`` -> threshold d lam / L;
    # Frobenius ``d (lam/2)||S||^2`` -> shrink factor 1 + d lam / L.
    pen = functools.partial(_penalty, lam=lam, penalty=penalty)

    def step(st: _FistaState, _):
        theta_next = (1 + jnp.sqrt(1 + 4 * st.theta**2)) / 2
        y = st.x + ((st.theta - 1.0) / theta_next) * (st.x - st.x_prev)
        fy, gy = vg(y)

        # backtracking: the first trial uses 0.9 L (the estimate may shrink slowly
        # where the curvature is smaller), then L doubles until both tests pass:
        # sufficient decrease f(z) <= f(y) + <g, dz> + L/2 |dz|^2 (up to rounding
        # errors of f) and its gradient form <grad f(z) - grad f(y), dz> <= L |dz|^2,
        # which stays accurate when |dz| is too small for differences of f.
        def cond(c):
            return (~c[3]) & (c[4] < 60)

        def body(c):
            L = jnp.where(c[4] == 0, c[0], 2.0 * c[0])
            z = _prox(y - gy / L, d * lam / L, penalty)
            dz = z - y
            fz, gz = vg(z)
            dz2 = jnp.sum(dz * dz)
            ok_f = fz - fy <= jnp.sum(gy * dz) + 0.5 * L * dz2 + 1e-13 * jnp.abs(fy)
            ok_g = jnp.sum((gz - gy) * dz) <= L * dz2
            return L, z, fz, ok_f & ok_g, c[4] + 1

        init = (0.9 * st.L, y, fy, jnp.asarray(False), 0)
        L, z, fz, _, _ = jax.lax.while_loop(cond, body, init)
        Fz = fz + pen(z)
        # monotone safeguard: if the momentum step increased the objective, restart
        # from x without momentum (the next step is a plain proximal-gradient step);
        # the slack of a few rounding errors matters only at the floor of float64.
        worse = Fz > st.Fx + 1e-13 * jnp.abs(st.Fx)
        # gradient-based adaptive restart (O'Donoghue and Candes)
        restart = jnp.sum((y - z) * (z - st.x)) > 0
        x_new = jnp.where(worse, st.x, z)
        x_prev = jnp.where(worse | restart, x_new, st.x)
        theta = jnp.where(worse | restart, 1.0, theta_next)
        Fx = jnp.where(worse, st.Fx, Fz)
        return _FistaState(x_new, x_prev, theta, L, Fx), Fx

    return jax.lax.scan(step, state, None, length=chunk)


def _gradient_mapping(task, penalty, S, L, X, Y, lam) -> float:
    d = S.shape[0]
    g = _value_and_sym_grad(task, X, Y, S)[1]
    T = _prox(S - g / L, d * lam / L, penalty)
    denom = max(float(jnp.linalg.norm(S)), float(jnp.linalg.norm(g)) / L, 1e-300)
    return float(jnp.linalg.norm(S - T)) / denom


def train_convex(
    task: Task,
    data: Dataset,
    lam: float,
    *,
    penalty: str = "nuclear",
    max_iter: int = 20000,
    tol: float = 1e-9,
    chunk: int = 50,
    S_init=None,
) -> TrainResult:
    r"""Accelerated proximal gradient on ``S`` (float64), the reference ERM solver.

    Nuclear: ``min_{S PSD} L(S) + d lam Tr S`` with the proximal map
    :func:`prox_nuclear_psd`; Frobenius: ``min_S L(S) + d (lam/2)||S||_F^2`` with
    :func:`prox_frobenius`. FISTA with backtracking on the Lipschitz constant
    (initialised by power iteration on the Hessian, allowed to shrink by 10 % per
    step), a monotone safeguard (a step that increases the objective is undone
    and the momentum reset) and gradient-based adaptive restart. For the softmax
    tasks ``L`` is not convex in ``S``; the solver then returns a stationary point
    reached monotonically from ``S_init``.

    Convergence is measured by the relative gradient mapping
    ``||S - prox(S - grad L(S)/L)||_F / max(||S||_F, ||grad||_F / L)``,
    checked every ``chunk`` iterations; ``tol = 1e-9`` gives ``S`` to about
    ``cond * 1e-9`` relative accuracy.

    Args:
      task, data: the task and the training set (computed in float64).
      lam: penalty strength ``>= 0``.
      penalty: ``"nuclear"`` or ``"frobenius"``.
      max_iter: maximal number of iterations (rounded up to a multiple of ``chunk``).
      tol: tolerance on the relative gradient mapping.
      chunk: iterations per jit-compiled call.
      S_init: starting symmetric matrix (default zero).
    """
    lam = _checks.nonnegative("lam", lam)
    _checks.choice("penalty", penalty, PENALTIES)
    max_iter = _checks.integer("max_iter", max_iter, 1)
    chunk = _checks.integer("chunk", chunk, 1)
    tol = _checks.nonnegative("tol", tol)
    X, Y, d = _check_data(task, data)
    X = jnp.asarray(X, jnp.float64)
    Y = jnp.asarray(Y, jnp.float64)
    lam_j = jnp.asarray(lam, jnp.float64)
    if S_init is None:
        x = jnp.zeros((d, d), jnp.float64)
    else:
        x = _prox(
            jnp.asarray(_check_square("S_init", S_init, d, symmetric=True), jnp.float64),
            0.0,
            penalty,
        )
    L = jnp.asarray(_curvature(task, X, Y, x), jnp.float64)
    Fx = _objective_jit(task, X, Y, x, lam_j, penalty)
    state = _FistaState(x, x, jnp.asarray(1.0), L, Fx)
    history = []
    done = 0
    residual = math.inf
    while done < max_iter:
        state, values = _fista_chunk(task, penalty, chunk, state, X, Y, lam_j)
        done += chunk
        history.append(np.asarray(values))
        residual = _gradient_mapping(task, penalty, state.x, float(state.L), X, Y, lam)
        if not math.isfinite(residual):
            raise FloatingPointError(f"train_convex: non-finite residual after {done} iterations")
        if residual < tol:
            break
    return _finish(
        state.x,
        None,
        np.concatenate(history),
        task,
        X,
        Y,
        residual < tol,
        done,
        residual,
        "train_convex",
        tol,
    )


# ----------------------------------------------------------------------------
# Metrics
# ----------------------------------------------------------------------------


def train_loss(task: Task, data: Dataset, S) -> float:
    """Mean per-sequence square loss ``(1/n) sum_mu ||Y_mu - g(h_mu(S))||^2``."""
    X, Y, d = _check_data(task, data)
    S = jnp.asarray(_check_square("S", S, d, symmetric=True), dtype=X.dtype)
    return float(_mean_loss(task, X, Y, S))


@functools.partial(jax.jit, static_argnames=("task", "noisy"))
def _test_batch(task, noisy, key, X, S0, S):
    h0 = _preacts(X, S0)
    target = task.labels(key, h0) if noisy else task.output(h0)
    return task.loss(target, _preacts(X, S))


def test_error_stats(
    key: jax.Array,
    task: Task,
    S0,
    S,
    *,
    n_test: int = 20000,
    noisy: bool = False,
    batch: int = 5000,
) -> TestError:
    """Monte Carlo test error with its standard error (see :func:`test_error`)."""
    n_test = _checks.integer("n_test", n_test, 2)
    batch = _checks.integer("batch", batch, 1)
    S0 = _check_square("S0", S0, symmetric=True)
    S = _check_square("S", S, S0.shape[0], symmetric=True)
    if not isinstance(task, Task):
        raise ValueError(f"task must be an attnlib.tasks.Task, got {task!r}")
    d = S0.shape[0]
    S0j, Sj = jnp.asarray(S0, jnp.float64), jnp.asarray(S, jnp.float64)
    losses = []
    for i, start in enumerate(range(0, n_test, batch)):
        m = min(batch, n_test - start)
        kx, ky = jax.random.split(jax.random.fold_in(key, i))
        X = sample_sequences(kx, m, task.T, d)
        losses.append(np.asarray(_test_batch(task, bool(noisy), ky, X, S0j, Sj)))
    losses = np.concatenate(losses)
    return TestError(float(losses.mean()), float(losses.std(ddof=1) / math.sqrt(losses.size)))


def test_error(
    key: jax.Array, task: Task, S0, S, *, n_test: int = 20000, noisy: bool = False
) -> float:
    """``e_test = E ||g(h(S0)) - g(h(S))||^2`` on ``n_test`` fresh sequences.

    With ``noisy=True`` the targets are the task's noisy labels instead,
    ``E ||Y - g(h(S))||^2`` (the label noise adds its own contribution).
    The same ``key`` gives the same test sequences, so two estimators compared
    with one key share their Monte Carlo error.
    """
    return test_error_stats(key, task, S0, S, n_test=n_test, noisy=noisy).mean


def mse(S, S0) -> float:
    """``||S - S0||_F^2 / d``."""
    S0 = _check_square("S0", S0)
    S = _check_square("S", S, S0.shape[0])
    D = np.asarray(S, np.float64) - np.asarray(S0, np.float64)
    return float(np.sum(D * D) / S0.shape[0])


def overlaps(S, S0) -> Overlaps:
    """``(m, q, Q0) = (Tr(S S0)/d, Tr(S^2)/d, Tr(S0^2)/d)``; ``mse = Q0 - 2 m + q``."""
    S0 = np.asarray(_check_square("S0", S0), np.float64)
    S = np.asarray(_check_square("S", S, S0.shape[0]), np.float64)
    d = S0.shape[0]
    return Overlaps(
        m=float(np.sum(S * S0) / d), q=float(np.sum(S * S) / d), Q0=float(np.sum(S0 * S0) / d)
    )


# the metric names start with "test_": keep pytest from collecting them when imported
test_error.__test__ = False
test_error_stats.__test__ = False
