"""Spectra of the query-key maps of a trained multi-head attention layer.

Head ``h`` of a layer has its own softmax, so its logits are ``x_a^T M_h x_b`` with the
bilinear form ``M_h = W_Q^h (W_K^h)^T / sqrt(d_h)`` (rank at most the head dimension
``d_h``): the object a single-head theory describes, one per head. A tied head has
``M_h`` symmetric; a trained untied one need not, and its symmetric part is what a tied
theory can compare with (the book's 07_spectrum).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from attnlib import _checks

__all__ = ["HeadSpectra", "head_spectra", "layer_head_spectra"]


class HeadSpectra(NamedTuple):
    """``sv``: the singular values of ``M`` (the ``d_h`` largest); ``sym``: the ``2 d_h``
    eigenvalues of largest magnitude of its symmetric part ``(M + M^T)/2``, sorted
    ascending; ``anti``: the antisymmetric share ``||M - M^T||_F^2 / (4 ||M||_F^2)``."""

    sv: np.ndarray
    sym: np.ndarray
    anti: float


def _weights(name, W, shape=None) -> np.ndarray:
    against = None if shape is None else "Wq"
    W = _checks.finite_array(name, W, ndim=2, shape=shape, against=against, max_abs=_checks.MAX_ABS)
    if min(W.shape) < 1:
        raise ValueError(f"{name} must have shape (d_h, d) with d_h, d >= 1, got {W.shape}")
    return np.asarray(W, dtype=np.float64)


def head_spectra(Wq, Wk) -> HeadSpectra:
    """:class:`HeadSpectra` of one head's ``M = Wq^T Wk / sqrt(d_h)``.

    Args:
      Wq, Wk: the head's query and key weights, shape ``(d_h, d)`` each (the layout of a
        ``torch.nn.Linear`` weight: rows are the head's output coordinates).
    """
    Wq = _weights("Wq", Wq)
    Wk = _weights("Wk", Wk, Wq.shape)
    dh = Wq.shape[0]
    M = Wq.T @ Wk / math.sqrt(dh)
    sv = np.linalg.svd(M, compute_uv=False)[:dh]
    sym = np.linalg.eigvalsh((M + M.T) / 2)
    sym = np.sort(sym[np.argsort(-np.abs(sym))[: 2 * dh]])
    return HeadSpectra(sv, sym, _antisymmetric_share(M))


def _antisymmetric_share(M) -> float:
    num, den = np.sum((M - M.T) ** 2), 4 * np.sum(M**2)
    if not np.isfinite(den):  # entries near the overflow of their squares: rescale first
        M = M / np.max(np.abs(M))
        num, den = np.sum((M - M.T) ** 2), 4 * np.sum(M**2)
    return float(num / den) if den > 0 else 0.0


def layer_head_spectra(Wq, Wk, n_heads: int, rng: np.random.Generator):
    """Per-head :class:`HeadSpectra` of one layer, and of a shuffled baseline.

    Head ``h`` owns rows ``h d_h .. (h + 1) d_h - 1`` of the layer's query and key weights
    (``(n_heads d_h, d)`` each). The baseline puts each head's query and key entries in
    random positions (``rng.permutation``: no learned structure, the same entries).

    Returns:
      ``(heads, shuffled)``, two lists of ``n_heads`` :class:`HeadSpectra`.
    """
    Wq = _weights("Wq", Wq)
    Wk = _weights("Wk", Wk, Wq.shape)
    n_heads = _checks.integer("n_heads", n_heads, 1)
    if Wq.shape[0] % n_heads:
        raise ValueError(f"n_heads must divide the {Wq.shape[0]} rows of Wq, got {n_heads}")
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {rng!r}")
    dh, heads, shuffled = Wq.shape[0] // n_heads, [], []
    for h in range(n_heads):
        q, k = Wq[h * dh : (h + 1) * dh], Wk[h * dh : (h + 1) * dh]
        heads.append(head_spectra(q, k))
        q_s = rng.permutation(q.ravel()).reshape(q.shape)
        shuffled.append(head_spectra(q_s, rng.permutation(k.ravel()).reshape(k.shape)))
    return heads, shuffled
