"""Sliders (ipywidgets) of the explorers in :mod:`attnlib.widgets`.

Each builder takes a settings tuple and ``draw(settings, fig)`` and returns a ``VBox`` of
sliders over the figure, redrawn on release (``continuous_update=False``).
``ipywidgets`` is optional (the ``book`` extra): without it building sliders raises
``ImportError``.
"""

from __future__ import annotations

import matplotlib.pyplot as plt

from attnlib.spectral_map import PENALTIES

__all__ = ["erm_sliders", "spectrum_sliders", "scaling_sliders"]

try:  # optional: the figures work without it, the sliders need it (the "book" extra)
    import ipywidgets
    from IPython.display import display as _display
except ImportError:  # pragma: no cover
    ipywidgets = _display = None

TASK_KINDS = ("seq2seq", "seq2lab", "linear")


def _ipywidgets():
    if ipywidgets is None:
        raise ImportError("the explorers' sliders need ipywidgets (pip install ipywidgets)")
    return ipywidgets, _display


def _slider(kind, value, low, high, step, description):
    """A slider that updates on release; ``kind`` ``"log"``: ``low``, ``high`` and
    ``step`` in ``log10``."""
    w, _ = _ipywidgets()
    cls = {"float": w.FloatSlider, "int": w.IntSlider, "log": w.FloatLogSlider}[kind]
    log = {"base": 10} if kind == "log" else {}
    opts = dict(value=value, min=low, max=high, step=step, description=description, **log)
    return cls(continuous_update=False, **opts)


def _dropdown(options, value, description):
    w, _ = _ipywidgets()
    return w.Dropdown(options=list(options), value=value, description=description)


def _explorer(settings, controls, draw):
    """Wire ``controls`` (field name -> widget) to ``draw(settings, fig)``; returns a VBox."""
    w, display = _ipywidgets()

    def update(**values):
        fig = draw(settings._replace(**values), None)
        display(fig)
        plt.close(fig)

    shown = w.interactive_output(update, controls)
    widgets = list(controls.values())
    return w.VBox([w.HBox(widgets[:4]), w.HBox(widgets[4:]), shown])


def erm_sliders(s, draw):
    """Sliders of :class:`attnlib.widgets.ERMExplorer` (alpha, lam, kappa0, noise, T, beta,
    penalty, task) over ``draw(settings, fig)``, starting at the settings ``s``."""
    controls = {
        "alpha": _slider("float", s.alpha, 0.02, s.alpha_max, 0.01, "alpha"),
        "lam": _slider("log", s.lam, -3, 0, 0.1, "lambda"),
        "kappa0": _slider("float", s.kappa0, 0.05, 1.0, 0.05, "kappa0"),
        "noise": _slider("float", s.noise, 0.0, 1.0, 0.05, "noise"),
        "T": _slider("int", s.T, 2, 4, 1, "T"),
        "beta": _slider("float", s.beta, 0.25, 4.0, 0.25, "beta"),
        "penalty": _dropdown(PENALTIES, s.penalty, "penalty"),
        "task": _dropdown(TASK_KINDS, s.task, "task"),
    }
    return _explorer(s, controls, draw)


def spectrum_sliders(s, draw):
    """Sliders of :class:`attnlib.widgets.SpectrumExplorer` (alpha, lam, kappa0, spike,
    noise, beta, penalty) over ``draw(settings, fig)``, starting at the settings ``s``."""
    controls = {
        "alpha": _slider("float", s.alpha, 0.02, 1.5, 0.01, "alpha"),
        "lam": _slider("log", s.lam, -3, 0, 0.1, "lambda"),
        "kappa0": _slider("float", s.kappa0, 0.05, 1.0, 0.05, "kappa0"),
        "theta": _slider("float", s.theta, 0.5, 10.0, 0.25, "spike"),
        "noise": _slider("float", s.noise, 0.0, 1.0, 0.05, "noise"),
        "beta": _slider("float", s.beta, 0.25, 4.0, 0.25, "beta"),
        "penalty": _dropdown(PENALTIES, s.penalty, "penalty"),
    }
    return _explorer(s, controls, draw)


def scaling_sliders(s, draw):
    """Sliders of :class:`attnlib.widgets.ScalingExplorer` (gamma, number of modes, lam,
    noise) over ``draw(settings, fig)``, starting at the settings ``s``."""
    controls = {
        "gamma": _slider("float", s.gamma, 0.5, 3.0, 0.1, "gamma"),
        "n_modes": _slider("int", s.n_modes, 2, 16, 1, "modes"),
        "lam": _slider("log", s.lam, -4, 0, 0.1, "lambda"),
        "noise": _slider("float", s.noise, 0.0, 1.0, 0.05, "noise"),
    }
    return _explorer(s, controls, draw)
