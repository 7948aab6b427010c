"""Interactive explorers (ipywidgets) of the chapters 03, 07 and 08.

Each explorer is one object (:class:`ERMExplorer`, :class:`SpectrumExplorer`,
:class:`ScalingExplorer`) that owns a small bounded cache (:class:`BoundedCache`) of
the state-evolution results it has computed, and has two faces:

- ``figure(settings, fig)``: draws the state-evolution predictions for a settings
  tuple on a matplotlib figure (what the static HTML book shows; the module functions
  :func:`erm_figure`, :func:`spectrum_figure`, :func:`scaling_figure` draw once with a
  fresh explorer);
- ``widget()``: sliders that redraw that figure live in a running kernel
  (:func:`erm_explorer`, ...). Sliders update on release; moving ``alpha`` (or ``lam``
  in the spectrum explorer) re-solves one state-evolution point, warm-started from the
  nearest cached point (order parameters and prox points), while changing the task or
  target computes a new learning curve (kept in the cache, least recently used out).

There is no module-level state. The sliders are built by :mod:`attnlib.sliders`;
``ipywidgets`` is optional (the ``book`` extra): without it the figures work and
building a widget raises ``ImportError``.
"""

from __future__ import annotations

import collections
import math
import warnings
from typing import NamedTuple

import matplotlib.pyplot as plt
import numpy as np

from attnlib import _checks, follow, plotting, scaling, se, sliders, spectrum, targets, thresholds
from attnlib import tasks as _tasks

__all__ = [
    "make_task",
    "BoundedCache",
    "ERMSettings",
    "ERMExplorer",
    "erm_figure",
    "SpectrumSettings",
    "SpectrumExplorer",
    "spectrum_figure",
    "ScalingSettings",
    "ScalingExplorer",
    "scaling_figure",
    "erm_explorer",
    "spectrum_explorer",
    "scaling_explorer",
]

TASK_KINDS = sliders.TASK_KINDS


def make_task(kind: str, T: int, beta: float, noise: float) -> _tasks.Task:
    """The task named ``kind`` (``"seq2seq"``, ``"seq2lab"``, ``"linear"``)."""
    _checks.choice("kind", kind, TASK_KINDS)
    if kind == "seq2seq":
        return _tasks.Seq2Seq(T=T, beta=beta, noise=noise)
    if kind == "seq2lab":
        return _tasks.Seq2Lab(T=T, beta=beta, noise=noise)
    return _tasks.Linear(T=T, noise=noise)


# QMC points of the explorers' state evolution: a quarter of the default, for an
# integration error of about 1 % (invisible on the figures) at a quarter of the cost
_EXPLORER_QMC = 2048


class BoundedCache:
    """A least-recently-used mapping holding at most ``maxsize`` entries."""

    def __init__(self, maxsize: int = 16):
        self.maxsize = _checks.integer("maxsize", maxsize, 1)
        self._data: collections.OrderedDict = collections.OrderedDict()

    def get(self, key, default=None):
        if key not in self._data:
            return default
        self._data.move_to_end(key)
        return self._data[key]

    def put(self, key, value):
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self.maxsize:
            self._data.popitem(last=False)
        return value

    def items(self):
        """``(key, value)`` pairs, least recently used first (the order is not changed)."""
        return list(self._data.items())

    def __len__(self):
        return len(self._data)


def _axes(fig, **kwargs):
    """``fig`` (a new 10 x 3.6 inch figure for ``None``) cleared, and its two panels."""
    if fig is None:
        fig = plt.figure(figsize=(10, 3.6))
    fig.clear()
    return fig, fig.subplots(1, 2, **kwargs)


def _layout(fig):
    """Fixed margins for the two panels (no text measurement, unlike ``tight_layout``)."""
    fig.subplots_adjust(left=0.07, right=0.98, bottom=0.14, top=0.9, wspace=0.25)


def _quiet(fun, *args, **kwargs):
    """``fun(*args, **kwargs)`` at the explorers' QMC size, with its warm start."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", se.SEConvergenceWarning)
        return fun(*args, n_qmc=_EXPLORER_QMC, return_warm=True, **kwargs)


def _settings(cls, settings):
    """``cls(*settings)`` (``cls()`` for ``None``); ValueError naming ``settings`` otherwise."""
    if settings is None:
        return cls()
    if isinstance(settings, (str, bytes)) or not isinstance(settings, (tuple, list)):
        raise ValueError(f"settings must be a {cls.__name__} (or None), got {settings!r}")
    try:
        return cls(*settings)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"settings is not a valid {cls.__name__}: {exc}") from None


class _PointSolver:
    """SE points and curves of one explorer, warm-started from its own bounded caches."""

    def __init__(self, maxsize: int = 16):
        # (task, target, lam, penalty, alphas) -> (results, their warm starts): a Followed
        self.curves = BoundedCache(maxsize)
        self.points = BoundedCache(4 * maxsize)  # (task, target, penalty) -> last warm start

    def curve(self, task, target, lam, penalty, alphas) -> se.LearningCurve:
        key = (task, target, lam, penalty, alphas)
        found = self.curves.get(key)
        if found is None:

            def solve_at(i, a, start):
                return _quiet(se.solve, task, target, a, lam, penalty, init=start)

            found = self.curves.put(key, follow.follow(solve_at, alphas))
        fields = [f for f in se.LearningCurve._fields if f != "penalty"]
        columns = {f: np.array([getattr(r, f) for r in found[0]]) for f in fields}
        return se.LearningCurve(penalty=penalty, **columns)

    def point(self, task, target, alpha, lam, penalty, *, near=None):
        """One SE point, warm-started from the nearest point of the cached curve ``near``
        (same task, target, ``lam``) or else from the last point of this explorer."""
        key = (task, target, penalty)
        init = self.points.get(key)
        found = self.curves.get(near) if near is not None else None
        if found and found[0]:
            results, warms = found
            k = int(np.argmin([abs(np.log(r.alpha / alpha)) for r in results]))
            init = warms[k] if warms[k] is not None else init
        r, w = _quiet(se.solve, task, target, alpha, lam, penalty, init=init)
        if w is not None:
            self.points.put(key, w)
        return r


class _Explorer:
    """An explorer: its ``Settings``, bounded caches, :meth:`figure` and :meth:`widget`."""

    def __init__(self, settings=None, cache_size: int = 16):
        self.settings = _settings(self.Settings, settings)
        self.solver = _PointSolver(_checks.integer("cache_size", cache_size, 1))
        self.curves = self.solver.curves

    def _resolve(self, settings):
        return self.settings if settings is None else _settings(self.Settings, settings)

    def widget(self):
        """The sliders of this explorer (:mod:`attnlib.sliders`), redrawing :meth:`figure`."""
        return self._sliders(self.settings, self.figure)


# ----------------------------------------------------------------------------
# 03_factorisation: train and test error against alpha
# ----------------------------------------------------------------------------


class ERMSettings(NamedTuple):
    """Settings of the ERM explorer (defaults: the book's running example)."""

    task: str = "seq2seq"
    T: int = 2
    beta: float = 1.0
    noise: float = 0.0
    kappa0: float = 0.5
    lam: float = 0.1
    alpha: float = 0.3
    penalty: str = "nuclear"
    alpha_max: float = 1.0
    n_alpha: int = 8


class ERMExplorer(_Explorer):
    """03_factorisation's explorer: learning curves and the learned spectrum (bounded cache)."""

    Settings = ERMSettings
    _sliders = staticmethod(sliders.erm_sliders)

    def figure(self, settings: ERMSettings | None = None, fig=None):
        """:func:`erm_figure` with this explorer's cache."""
        s = self._resolve(settings)
        task = make_task(s.task, s.T, s.beta, s.noise)
        target = targets.Wishart(s.kappa0)
        alphas = tuple(np.round(np.linspace(s.alpha_max / s.n_alpha, s.alpha_max, s.n_alpha), 6))
        curve = self.solver.curve(task, target, s.lam, s.penalty, alphas)
        near = (task, target, s.lam, s.penalty, alphas)
        point = self.solver.point(task, target, s.alpha, s.lam, s.penalty, near=near)
        return _draw_erm(s, task, target, curve, point, fig)


def erm_figure(settings: ERMSettings | None = None, fig=None):
    """Learning curves (SE) with thresholds, and the predicted spectrum at ``settings.alpha``.

    Left: train loss and test error against ``alpha`` on a grid of
    ``n_alpha`` points up to ``alpha_max``, the perfect-recovery threshold
    (noise-free) or the interpolation threshold (noisy; for the nuclear penalty its
    noise-dominated limit ``1/(4 m_eff)``, a lower bound at finite noise), and the selected
    ``alpha``. Right: the limiting eigenvalue density of the learned ``S`` at
    the selected ``alpha`` (atom at zero in the title).
    """
    return ERMExplorer(settings).figure(settings, fig)


def _draw_erm(s, task, target, curve, point, fig):
    law = spectrum.learned_spectrum(target, point) if point.converged else None
    fig, (ax1, ax2) = _axes(fig)
    ax1.plot(curve.alpha, curve.test_error, label="test error")
    ax1.plot(curve.alpha, curve.train_loss, label="train loss")
    ax1.plot([point.alpha], [point.test_error], "o", color="C0")
    if s.noise == 0.0 and s.penalty == "nuclear":
        plotting.mark_threshold(ax1, thresholds.perfect_recovery(task, target), r"$\alpha_{PR}$")
    elif s.noise > 0.0:
        # Frobenius: exact at every noise level. Nuclear: the noise-dominated limit, a
        # lower bound on the noise-dependent threshold (thresholds.interpolation_se takes
        # minutes, too slow for a slider).
        a_int = thresholds.interpolation(task, penalty=s.penalty)
        label = r"$\alpha_{interp}$" if s.penalty == "frobenius" else r"$\alpha_{interp}(\infty)$"
        if a_int > 0:
            plotting.mark_threshold(ax1, a_int, label, color="C3")
    ax1.axvline(s.alpha, color="0.7", linewidth=0.8)
    ax1.set_xlabel(r"$\alpha = n/d^2$")
    ax1.set_title(f"{task.name}, T={s.T}, $\\lambda$={s.lam:g}, {s.penalty}")
    ax1.legend()
    ax2.set_xlabel("eigenvalue of learned $S$")
    ax2.set_ylabel("density")
    if law is None:
        ax2.set_title(f"$\\alpha$={s.alpha:g}: no fixed point found")
    else:
        ax2.plot(law.y, law.density, color="C2")
        ax2.fill_between(law.y, law.density, alpha=0.3, color="C2")
        ax2.set_title(f"$\\alpha$={s.alpha:g}: atom at 0 = {law.atom_at_zero:.2f}")
    _layout(fig)
    return fig


# ----------------------------------------------------------------------------
# 07_spectrum: learned spectrum and error decomposition
# ----------------------------------------------------------------------------


class SpectrumSettings(NamedTuple):
    """Settings of the spectrum explorer: a spike ``theta`` on a Wishart bulk."""

    task: str = "seq2seq"
    T: int = 2
    beta: float = 1.0
    noise: float = 0.0
    kappa0: float = 0.5
    theta: float = 4.0
    lam: float = 0.1
    alpha: float = 0.3
    penalty: str = "nuclear"


class SpectrumExplorer(_Explorer):
    """The explorer of 07_spectrum: learned spectrum and error decomposition (bounded cache)."""

    Settings = SpectrumSettings
    _sliders = staticmethod(sliders.spectrum_sliders)

    def figure(self, settings: SpectrumSettings | None = None, fig=None):
        """:func:`spectrum_figure` with this explorer's cache."""
        s = self._resolve(settings)
        task = make_task(s.task, s.T, s.beta, s.noise)
        target = targets.Spiked(spikes=(s.theta,), bulk=targets.Wishart(s.kappa0))
        point = self.solver.point(task, target, s.alpha, s.lam, s.penalty)
        return _draw_spectrum(s, task, target, point, fig)


def spectrum_figure(settings: SpectrumSettings | None = None, fig=None):
    """Predicted spectrum of the learned ``S`` (density, atom, outlier) and the error parts."""
    return SpectrumExplorer(settings).figure(settings, fig)


def _draw_spectrum(s, task, target, point, fig):
    fig, (ax1, ax2) = _axes(fig, gridspec_kw={"width_ratios": [2, 1]})
    if not point.converged:  # say so instead of drawing numbers that are not a fixed point
        ax1.set_title(f"$\\alpha$={s.alpha:g}, $\\lambda$={s.lam:g}: no fixed point found")
        return fig
    law = spectrum.learned_spectrum(target, point)
    parts = spectrum.decompose(task, target, point)
    ax1.plot(law.y, law.density, color="C0", label="bulk density")
    ax1.fill_between(law.y, law.density, alpha=0.3, color="C0")
    for o in law.outliers:
        if o.learned:
            ax1.axvline(o.position, color="C1", label=f"outlier, overlap$^2$={o.overlap2:.2f}")
    ax1.set_xlabel("eigenvalue of learned $S$")
    ax1.set_ylabel("density")
    ax1.set_title(
        f"$\\alpha$={s.alpha:g}, $\\lambda$={s.lam:g}: atom at 0 = {law.atom_at_zero:.2f}"
    )
    ax1.legend()
    names = ["over", "under", "approx", "mismatch"]
    ax2.bar(names, parts.parts(), color=["C3", "C4", "C2", "C5"])
    ax2.set_title(f"test error {parts.e_test:.3f}")
    ax2.set_ylabel("part of the test error")
    _layout(fig)
    return fig


# ----------------------------------------------------------------------------
# The scaling-laws chapter (book/08_scaling_laws): power-law targets
# ----------------------------------------------------------------------------


class ScalingSettings(NamedTuple):
    """Settings of the scaling explorer (linear task: closed-form channel, fast)."""

    gamma: float = 1.5
    n_modes: int = 8
    lam: float = 0.01
    noise: float = 0.0
    alpha_min: float = 0.02
    alpha_max: float = 2.0
    n_alpha: int = 12


class ScalingExplorer(_Explorer):
    """The scaling-laws chapter's explorer: excess risk and recovered modes of a power-law target.

    Its cache keeps each curve with its state-evolution points; a curve at a new ``lam``
    (same target, noise and ``alpha`` grid as a cached one) starts every ``alpha`` from
    the cached point at the nearest ``lam`` (:func:`_lam_starts`).
    """

    Settings = ScalingSettings
    _sliders = staticmethod(sliders.scaling_sliders)

    def curve(self, s: ScalingSettings):
        alphas = tuple(np.round(np.geomspace(s.alpha_min, s.alpha_max, s.n_alpha), 8))
        key = (s.gamma, s.n_modes, s.lam, s.noise, alphas)
        found = self.curves.get(key)
        if found is None:
            task = _tasks.Linear(T=1, noise=s.noise)
            target = scaling.PowerLawModes(gamma=s.gamma, n_modes=s.n_modes)
            results, starts = [], self._starts(key)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", se.SEConvergenceWarning)
                curve, warms = scaling.excess_risk_curve(
                    task,
                    target,
                    np.asarray(alphas),
                    s.lam,
                    starts=starts,
                    return_warm=True,
                    progress=lambda i, a, r: results.append(r),
                )
            found = self.curves.put(key, (curve, list(zip(results, warms, strict=True))))
        return found[0]

    def _starts(self, key):
        """Warm starts from the cached curve of the same target, noise and grid at the
        ``lam`` nearest to ``key``'s (``None`` if there is none)."""
        lam = key[2]
        near = [
            (abs(math.log(k[2] / lam)), k[2], points)
            for k, (_, points) in self.curves.items()
            if k[:2] == key[:2] and k[3:] == key[3:] and k[2] > 0 and lam > 0
        ]
        if not near:
            return None
        _, lam_near, points = min(near, key=lambda t: t[0])
        return _lam_starts(points, lam_near, lam)

    def figure(self, settings: ScalingSettings | None = None, fig=None):
        """:func:`scaling_figure` with this explorer's cache."""
        s = self._resolve(settings)
        return _draw_scaling(s, self.curve(s), fig)


def scaling_figure(settings: ScalingSettings | None = None, fig=None):
    """Excess risk (log-log) and recovered-mode count against ``alpha`` for a power-law target."""
    return ScalingExplorer(settings).figure(settings, fig)


def _draw_scaling(s, curve, fig):
    fig, (ax1, ax2) = _axes(fig)
    ax1.loglog(curve.alpha, curve.excess, "o-")
    ax1.set_xlabel(r"$\alpha$")
    ax1.set_ylabel("excess test error")
    ax1.set_title(f"$\\gamma$={s.gamma:g}, {s.n_modes} modes, $\\lambda$={s.lam:g}")
    ax2.step(curve.alpha, curve.n_recovered, where="post")
    ax2.set_xscale("log")
    ax2.set_xlabel(r"$\alpha$")
    ax2.set_ylabel("recovered modes")
    _layout(fig)
    return fig


def _lam_starts(points, lam_from, lam_to):
    """Warm starts at ``lam_to`` from SE points at ``lam_from`` (one per alpha, or None).

    ``points``: ``(SEResult, WarmStart | None)`` pairs. Each converged point gives its
    :class:`attnlib.se.WarmStart` with ``(m, q, v)`` moved to the new ``lam``: below full
    rank (``rank_fraction < 0.999``) ``v`` scales like ``1 / lam`` (``v = int rho_R f h_R /
    m_hat``, ``f = (c x - tau)_+``, ``tau = lam / a_hat``), at full rank it is kept.
    ``None`` where a point did not converge.
    """
    starts = []
    for r, warm in points:
        if not (r.converged and r.q > 0 and r.v > 0):
            starts.append(None)
            continue
        v = r.v * lam_from / lam_to if r.rank_fraction < 0.999 else r.v
        x = (r.m, r.q, v)
        starts.append(warm._replace(x=x) if warm is not None else x)
    return starts


# ----------------------------------------------------------------------------
# Widgets (the sliders are built by attnlib.sliders)
# ----------------------------------------------------------------------------


def erm_explorer(settings: ERMSettings | None = None):
    """Sliders for alpha, lam, kappa0, T, beta, noise and penalty (an :class:`ERMExplorer`)."""
    return ERMExplorer(settings).widget()


def spectrum_explorer(settings: SpectrumSettings | None = None):
    """Sliders for alpha, lam, kappa0, spike and noise (a :class:`SpectrumExplorer`)."""
    return SpectrumExplorer(settings).widget()


def scaling_explorer(settings: ScalingSettings | None = None):
    """Sliders for gamma, number of modes, lam and noise (a :class:`ScalingExplorer`)."""
    return ScalingExplorer(settings).widget()
