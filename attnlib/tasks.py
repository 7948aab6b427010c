r"""The attention-indexed model (AIM): sequences, tasks, labels.

Conventions (the book's "Notation and conventions" page, ``book/notation.md``):

- A sequence is ``X`` of shape ``(T, d)`` whose tokens are i.i.d. ``N(0, I_d)``;
  a data set stacks ``n`` of them, shape ``(n, T, d)``.
- For a symmetric ``d x d`` matrix ``S`` the pre-activations are the symmetric
  ``T x T`` matrix ``h_ab(S) = (x_a^T S x_b - delta_ab Tr S) / sqrt(d)``.
  The ``K = T (T + 1) / 2`` entries with ``a <= b`` are the *pairs*, ordered
  row by row: ``(0,0), (0,1), ..., (0,T-1), (1,1), ...``. For fixed ``S`` the
  pairs are independent centred Gaussians with variance ``sigma_ab^2 Q(S)``,
  ``sigma_ab^2 = 1 + delta_ab`` and ``Q(S) = Tr(S^2) / d``.
- A task is an output function ``g`` of ``h``; the per-sequence loss is the
  square loss ``||Y - g(h)||^2`` summed over every output entry.
- Label noise of variance ``Delta = noise`` sits in one of three places
  (``noise_on``, :data:`NOISE_PLACEMENTS`), drawn afresh for every sequence:

  - ``"logits"``: ``Y = g(h + sqrt(Delta) xi)`` with ``xi`` symmetric and i.i.d.
    ``N(0, 1)`` on each pair (variance ``Delta`` on every pair);
  - ``"target"``: ``Y = g(h + xi)`` with ``xi`` symmetric, independent across pairs, of
    pair variance ``(Delta / 2) sigma_ab^2`` (``Delta`` on the diagonal, ``Delta / 2`` off
    it): the shape of ``h`` itself, as if ``S0`` were perturbed afresh for each sequence
    (a target with ``Q0 + Delta / 2``): the model of arXiv:2509.24914;
  - ``"outputs"``: ``Y = g(h) + sqrt(Delta) xi`` with ``xi`` i.i.d. ``N(0, 1)`` on
    every output entry.

  :func:`pair_noise_variances` gives the per-pair variance of the first two. At
  ``T = 1`` (one diagonal pair) ``"logits"`` and ``"target"`` are the same model. For
  :class:`Linear` the outputs are the symmetric ``h`` itself and ``"outputs"`` adds the
  same symmetric noise as ``"logits"``.

- ``noise_out`` (output noise on top of the logit noise) and ``beta0`` (the softmax
  teacher's inverse temperature): :mod:`attnlib._teacher`, the book's notation page.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attnlib import _checks
from attnlib._teacher import Teacher, TeacherBeta, add_output_noise, check_noise_out

NOISE_PLACEMENTS = ("logits", "outputs", "target")

__all__ = [
    "NOISE_PLACEMENTS",
    "Custom",
    "Dataset",
    "Hardmax",
    "Linear",
    "Seq2Lab",
    "Seq2Seq",
    "Task",
    "effective_constraints",
    "make_dataset",
    "mean_self_attention",
    "n_pairs",
    "n_samples",
    "pair_indices",
    "pair_noise_variances",
    "pair_variances",
    "preactivations",
    "sample_sequences",
    "to_matrix",
    "to_pairs",
]


def _array(name: str, x, min_ndim: int):
    """``x`` as an array with at least ``min_ndim`` axes; finite unless traced under jax."""
    if isinstance(x, jax.core.Tracer):
        a = x
    else:
        a = jnp.asarray(_checks.finite_array(name, _checks.numeric_array(name, x, kinds="biuf")))
    if a.ndim < min_ndim or 0 in a.shape[-min_ndim:]:
        raise ValueError(f"{name} must have at least {min_ndim} non-empty axes, got {a.shape}")
    return a


def _square(name: str, x):
    a = _array(name, x, 2)
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name} must be square in its last two axes, got shape {a.shape}")
    return a


# ----------------------------------------------------------------------------
# Pair bookkeeping
# ----------------------------------------------------------------------------


def n_pairs(T: int) -> int:
    """Number ``K = T (T + 1) / 2`` of independent pre-activations per sequence."""
    T = _checks.integer("T", T, 1)
    return T * (T + 1) // 2


def pair_indices(T: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices ``(a, b)``, ``a <= b``, of the ``K`` pairs in order."""
    ia, ib = np.triu_indices(_checks.integer("T", T, 1))
    return ia, ib


def pair_variances(T: int) -> np.ndarray:
    """``sigma_ab^2 = 1 + delta_ab`` for the ``K`` pairs, shape ``(K,)``."""
    ia, ib = pair_indices(T)
    return np.where(ia == ib, 2.0, 1.0)


def pair_noise_variances(task) -> np.ndarray:
    """Per-pair variances ``(K,)`` of the noise added to the logits: ``Delta`` on every
    pair (``noise_on="logits"``; also :class:`Linear` with ``"outputs"``), ``(Delta / 2)
    sigma_ab^2`` (``"target"``), zeros for noise on the outputs of a non-linear task."""
    _checks.task(task)
    if task.noise_on == "target":
        return 0.5 * task.noise * pair_variances(task.T)
    if task.noise_on == "logits" or isinstance(task, Linear):
        return np.full(task.n_pairs, float(task.noise))
    return np.zeros(task.n_pairs)


def to_pairs(h: jax.Array) -> jax.Array:
    """Symmetric ``(..., T, T)`` matrices to their ``(..., K)`` upper-triangular pairs."""
    h = _square("h", h)
    ia, ib = pair_indices(h.shape[-1])
    return h[..., ia, ib]


def to_matrix(pairs: jax.Array, T: int) -> jax.Array:
    """``(..., K)`` pairs to the symmetric ``(..., T, T)`` matrices they describe."""
    ia, ib = pair_indices(T)
    pairs = _array("pairs", pairs, 1)
    if pairs.shape[-1] != len(ia):
        raise ValueError(f"pairs must have last axis K = {len(ia)} for T = {T}, got {pairs.shape}")
    h = jnp.zeros(pairs.shape[:-1] + (T, T), dtype=pairs.dtype)
    h = h.at[..., ia, ib].set(pairs)
    return h.at[..., ib, ia].set(pairs)


# ----------------------------------------------------------------------------
# Sequences and pre-activations
# ----------------------------------------------------------------------------


def sample_sequences(key: jax.Array, n: int, T: int, d: int, dtype=jnp.float64) -> jax.Array:
    """``n`` sequences of ``T`` i.i.d. ``N(0, I_d)`` tokens, shape ``(n, T, d)``."""
    key = _checks.prng_key("key", key)
    n = _checks.integer("n", n, 1)
    T = _checks.integer("T", T, 1)
    d = _checks.integer("d", d, 1)
    dtype = _checks.float_dtype("dtype", dtype)
    need = np.dtype(dtype).itemsize * float(n) * T * d
    _checks.fits_in_memory("n", need, f"n = {n} sequences (T = {T}, d = {d})")
    return jax.random.normal(key, (n, T, d), dtype=dtype)


def preactivations(X: jax.Array, S: jax.Array) -> jax.Array:
    r"""``h_ab = (x_a^T S x_b - delta_ab Tr S) / sqrt(d)``, shape ``(n, T, T)``.

    ``X`` has shape ``(n, T, d)`` (or ``(T, d)``), ``S`` is symmetric ``(d, d)``; entries
    finite and at most ``1e100`` in magnitude (checked unless traced under jax).
    """
    X = _array("X", X, 2)
    S = _square("S", S)
    if S.ndim != 2 or S.shape[0] != X.shape[-1]:
        raise ValueError(f"S must be (d, d) and X (n, T, d) with one d, got {S.shape}, {X.shape}")
    for name, a in (("X", X), ("S", S)):
        if not isinstance(a, jax.core.Tracer) and a.size and jnp.max(jnp.abs(a)) > _checks.MAX_ABS:
            raise ValueError(f"{name} has entries larger than {_checks.MAX_ABS:g} in magnitude")
    return _preactivations(X, S)


@jax.jit
def _preactivations(X, S):
    d = X.shape[-1]
    XS = X @ S
    h = jnp.einsum("...ai,...bi->...ab", XS, X)
    eye = jnp.eye(X.shape[-2], dtype=h.dtype)
    return (h - eye * jnp.trace(S)) / jnp.sqrt(d)


def n_samples(alpha: float, d: int) -> int:
    """Number of sequences ``n = round(alpha d^2)`` (at least 1)."""
    alpha = _checks.alpha(alpha)
    d = _checks.integer("d", d, 1)
    return max(1, int(round(alpha * d * d)))


# ----------------------------------------------------------------------------
# Tasks
# ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Task(Teacher):
    """Base class of the AIM tasks. Subclasses define :meth:`output`.

    Attributes:
      T: sequence length (number of tokens).
      noise: label-noise variance ``Delta >= 0``.
      noise_on: ``"logits"`` (the default), ``"target"`` (the paper's model) or
        ``"outputs"`` (module docstring).
      noise_out: output-noise variance on top of the logit noise (:mod:`attnlib._teacher`).
    """

    T: int = 2
    noise: float = 0.0
    noise_on: str = "logits"

    name = "task"
    piecewise_constant = False  # True: the loss jumps (Hardmax); read by its channel only

    def __post_init__(self):
        _checks.integer("T", self.T, self._min_T)
        _checks.nonnegative("noise", self.noise)
        _checks.choice("noise_on", self.noise_on, NOISE_PLACEMENTS)
        check_noise_out(self)

    _min_T = 1

    @property
    def n_pairs(self) -> int:
        """``K = T (T + 1) / 2``."""
        return n_pairs(self.T)

    @property
    def out_shape(self) -> tuple[int, ...]:
        """Shape of one label."""
        return tuple(jax.eval_shape(self.output, jnp.zeros((self.T, self.T))).shape)

    @property
    def m_eff(self) -> int:
        """Independent linear constraints one sequence puts on ``S`` when fitted exactly.

        Generic definition: rank of the Jacobian of ``g`` in the ``K`` pairs at a generic
        point (:func:`effective_constraints`, once per task; built-in tasks override it).
        """
        try:
            hash(self)
        except TypeError:  # a field that cannot be hashed: no cache
            return effective_constraints(self)
        return _generic_m_eff(self)

    def output(self, h: jax.Array) -> jax.Array:
        """The output function ``g``: symmetric ``(..., T, T)`` ``h`` to labels."""
        raise NotImplementedError

    def loss(self, Y: jax.Array, h: jax.Array) -> jax.Array:
        """Per-sequence square loss ``||Y - g(h)||^2`` summed over output entries."""
        r = Y - self.output(h)
        return jnp.sum(r.reshape(r.shape[: r.ndim - len(self.out_shape)] + (-1,)) ** 2, axis=-1)

    def labels(self, key: jax.Array, h0: jax.Array) -> jax.Array:
        """Noisy labels from the target pre-activations ``h0`` of shape ``(..., T, T)``: the
        teacher's output :meth:`target_output` of the noisy logits, plus output noise."""
        return add_output_noise(self, key, h0, self._labels)

    def _labels(self, key, h0):  # the labels of noise/noise_on alone
        if self.noise == 0.0:
            return self.target_output(h0)
        sd = jnp.sqrt(self.noise)
        if self.noise_on == "target":
            shape = h0.shape[:-2] + (self.n_pairs,)
            sd_pairs = jnp.sqrt(jnp.asarray(pair_noise_variances(self), h0.dtype))
            xi = to_matrix(sd_pairs * jax.random.normal(key, shape, h0.dtype), self.T)
            return self.target_output(h0 + xi)
        if self.noise_on == "logits" or isinstance(self, Linear):
            xi = to_matrix(
                jax.random.normal(key, h0.shape[:-2] + (self.n_pairs,), h0.dtype), self.T
            )
            return self.target_output(h0 + sd * xi)
        clean = self.target_output(h0)
        return clean + sd * jax.random.normal(key, clean.shape, clean.dtype)


@dataclasses.dataclass(frozen=True)
class Seq2Seq(TeacherBeta, Task):
    """Sequence-to-sequence: ``Y = softmax_rows(beta h)``, a ``T x T`` attention matrix.

    Softmax loses only a global shift of ``h`` (rows shifted alike keep ``h``
    symmetric only if every row moves by the same constant), so ``m_eff = K - 1``.
    ``beta0`` (default ``None``: ``beta``): the teacher's inverse temperature (labels);
    ``noise_out``: output noise beside the logit noise (:mod:`attnlib._teacher`).
    """

    beta: float = 1.0
    beta0: float | None = None
    noise_out: float = 0.0

    name = "seq2seq"
    _min_T = 2

    @property
    def m_eff(self) -> int:
        return self.n_pairs - 1

    def _output_at(self, beta, h):
        return jax.nn.softmax(beta * h, axis=-1)


def mean_self_attention(A: jax.Array) -> jax.Array:
    """Default seq2lab readout: ``(1/T) sum_a A_aa`` of a ``(..., T, T)`` attention matrix."""
    A = _square("A", A)
    return jnp.mean(jnp.diagonal(A, axis1=-2, axis2=-1), axis=-1)


@dataclasses.dataclass(frozen=True)
class Seq2Lab(TeacherBeta, Task):
    """Sequence-to-label: a scalar read off the attention matrix ``softmax_rows(beta h)``.

    ``readout`` maps ``(..., T, T)`` attention matrices to ``(...)`` labels; the
    default is the mean self-attention weight :func:`mean_self_attention`. ``beta0``,
    ``noise_out``: as :class:`Seq2Seq`.
    """

    beta: float = 1.0
    readout: Callable[[jax.Array], jax.Array] = mean_self_attention
    beta0: float | None = None
    noise_out: float = 0.0

    name = "seq2lab"
    _min_T = 2

    def __post_init__(self):
        super().__post_init__()
        if not callable(self.readout):
            raise ValueError(f"readout must be a callable, got {self.readout!r}")

    def _output_at(self, beta, h):
        return self.readout(jax.nn.softmax(beta * h, axis=-1))


@dataclasses.dataclass(frozen=True)
class Hardmax(Task):
    r"""Hardmax attention (``beta -> infinity``): row ``a`` of ``Y`` is the one-hot vector
    of ``argmax_b h_ab``, a ``T x T`` 0/1 attention matrix.

    Ties (probability zero) go to the smallest column index, as in
    :func:`jax.numpy.argmax` (the proximal map of :mod:`attnlib.channels.hardmax` lets a
    tied row take its cheapest maximal entry: the lower semicontinuous envelope). The
    square loss is piecewise constant, ``2`` per wrongly attended row, and invariant under
    ``h -> c h``, ``c > 0``: the labels carry no information on the scale of ``S0``, so
    ``m_eff = 0``; each sequence gives ``T (T - 1)`` linear *inequalities* on the pairs
    instead. State evolution and GAMP: :mod:`attnlib.hardmax`.
    """

    noise_out: float = 0.0

    name = "hardmax"
    _min_T = 2
    piecewise_constant = True
    _no_noise_out = "noise on the logits and the outputs at once is not implemented here"

    @property
    def m_eff(self) -> int:
        return 0

    def output(self, h):
        return jax.nn.one_hot(jnp.argmax(h, axis=-1), h.shape[-1], dtype=h.dtype)


@dataclasses.dataclass(frozen=True)
class Linear(Task):
    """Linear sanity case: ``Y = h`` (symmetric ``T x T``); ``T = 1`` is the quadratic network.

    The square loss over the ``T x T`` output counts each off-diagonal pair twice.
    """

    T: int = 1
    noise_out: float = 0.0

    name = "linear"
    _no_noise_out = "its outputs are the logits: put the whole variance in noise"

    @property
    def m_eff(self) -> int:
        return self.n_pairs

    def output(self, h):
        return h


@dataclasses.dataclass(frozen=True)
class Custom(Task):
    """A user-supplied differentiable output function ``g`` of the symmetric ``h``.

    ``g`` maps ``(T, T)`` to any label shape and must broadcast over leading axes
    (write it with ``...`` indexing or wrap it with ``jnp.vectorize``).
    """

    g: Callable[[jax.Array], jax.Array] | None = None
    noise_out: float = 0.0

    name = "custom"

    def __post_init__(self):
        super().__post_init__()
        if not callable(self.g):
            raise ValueError(
                f"g must be a callable mapping (T, T) arrays to labels, got {self.g!r}"
            )

    def output(self, h):
        return self.g(h)


@functools.lru_cache(maxsize=256)
def _generic_m_eff(task: Task) -> int:
    return effective_constraints(task)


def effective_constraints(task: Task, key: jax.Array | None = None, tol: float = 1e-8) -> int:
    """Numerical rank of ``d g / d pairs`` at a random point: the generic ``m_eff``."""
    _checks.task(task)
    key = jax.random.PRNGKey(0) if key is None else _checks.prng_key("key", key)
    tol = _checks.positive("tol", tol)
    hv = jax.random.normal(key, (task.n_pairs,), dtype=jnp.float64)
    jac = jax.jacfwd(lambda p: task.output(to_matrix(p, task.T)).reshape(-1))(hv)
    s = np.linalg.svd(np.asarray(jac), compute_uv=False)
    return int(np.sum(s > tol * max(1.0, s.max() if s.size else 0.0)))


# ----------------------------------------------------------------------------
# Data sets
# ----------------------------------------------------------------------------


class Dataset(NamedTuple):
    """A labelled data set.

    Attributes:
      X: sequences, ``(n, T, d)``.
      Y: labels, ``(n, *task.out_shape)``.
      h0: target pre-activations ``h(S0)``, ``(n, T, T)`` (noise-free).
    """

    X: jax.Array
    Y: jax.Array
    h0: jax.Array


def make_dataset(key: jax.Array, task: Task, S0: jax.Array, n: int, dtype=jnp.float64) -> Dataset:
    """Sample ``n`` sequences and label them with the teacher ``S0`` (shape ``(d, d)``).

    The memory it needs, about ``itemsize * n T (2 d + 3 T)`` bytes, is estimated first: a
    request beyond 80 % of the available memory raises ``ValueError`` with the estimate.
    """
    key = _checks.prng_key("key", key)
    _checks.task(task)
    dtype = _checks.float_dtype("dtype", dtype)
    S0 = _checks.square_matrix("S0", S0, symmetric=True)
    n = _checks.integer("n", n, 1)
    d, T = S0.shape[0], task.T
    need = np.dtype(dtype).itemsize * float(n) * T * (2 * d + 3 * T)
    _checks.fits_in_memory("n", need, f"a data set of n = {n} sequences (T = {T}, d = {d})")
    S0 = jnp.asarray(S0, dtype=dtype)
    k_x, k_y = jax.random.split(key)
    X = sample_sequences(k_x, n, task.T, S0.shape[0], dtype=dtype)
    h0 = preactivations(X, S0)
    return Dataset(X=X, Y=task.labels(k_y, h0), h0=h0)
