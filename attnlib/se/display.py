"""Compact text for state-evolution results: ``repr``, ``summary()``, a DataFrame.

The ``repr`` of :class:`~attnlib.se.SEResult` and :class:`~attnlib.se.LearningCurve`
lists every scalar field (numbers to 6 significant digits) and elides the rest:
arrays as ``<array (N, K) float64>``, named tuples by their type, other tuples by
their length (a :class:`~attnlib.se.WarmStart`'s prox points and history elided). The
functions read the fields generically (``_fields``), so a field added to a result type
shows up without a change here.
"""

from __future__ import annotations

import numbers

import numpy as np
import pandas as pd

__all__ = [
    "brief",
    "result_repr",
    "result_summary",
    "curve_repr",
    "curve_summary",
    "curve_dataframe",
]

# fields shown first by summary(), in this order; every other scalar field follows
_SUMMARY_ROWS = (
    ("metrics", ("test_error", "test_error_noisy", "e0", "mse", "train_loss", "objective")),
    ("order parameters", ("m", "q", "v", "Q0")),
    ("conjugates", ("m_hat", "q_hat", "a_hat", "Delta_eff", "c", "tau")),
    ("spectrum", ("rank_fraction", "trace")),
    ("solver", ("converged", "residual", "n_iter", "integration_error")),
)
_CURVE_COLUMNS = ("alpha", "test_error", "mse", "train_loss", "converged")
# fields that summary() shows only where their test holds: e0 where positive (noisy
# labels), the replicon where the replica-symmetric fixed point is unstable (> 1)
_SHOWN_WHEN = {
    "e0": lambda value: isinstance(value, numbers.Real) and np.isfinite(value) and value != 0,
    "replicon": lambda value: isinstance(value, numbers.Real) and value > 1.0,
}


def _shown(result, name) -> bool:
    """Whether ``summary()`` lists the field ``name`` of ``result``."""
    if name not in result._fields:
        return False
    test = _SHOWN_WHEN.get(name)
    return test is None or bool(test(getattr(result, name)))


def _is_scalar(value) -> bool:
    if isinstance(value, (str, bool, numbers.Number, np.generic)) or value is None:
        return True
    return getattr(value, "shape", None) == ()


def _scalar(value) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, (bool, np.bool_)) or value is None:
        return str(value)
    if getattr(value, "shape", None) == ():
        value = value.item()
    if isinstance(value, numbers.Integral):
        return str(int(value))
    return f"{float(value):.6g}"


def brief(value) -> str:
    """A short text for any value: scalars in full, arrays and containers elided."""
    if _is_scalar(value):
        return _scalar(value)
    shape = getattr(value, "shape", None)
    if shape is not None:
        return f"<array {tuple(shape)} {getattr(value, 'dtype', '')}>".replace(" >", ">")
    if hasattr(value, "_fields"):  # a NamedTuple, e.g. a WarmStart
        return f"<{type(value).__name__}>"
    if isinstance(value, (tuple, list)):
        if len(value) <= 3 and all(_is_scalar(v) for v in value):
            inner = ", ".join(_scalar(v) for v in value)
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        return f"<{type(value).__name__} of {len(value)}>"
    text = repr(value)
    return text if len(text) <= 40 else f"<{type(value).__name__}>"


def result_repr(result) -> str:
    """``SEResult(alpha=0.3, lam=0.1, penalty='nuclear', m=..., alternatives=())``."""
    parts = [f"{name}={brief(getattr(result, name))}" for name in result._fields]
    return f"{type(result).__name__}({', '.join(parts)})"


def result_summary(result) -> str:
    """A few lines: the inputs, then the metrics, order parameters, conjugates,
    spectrum and solver diagnostics, then any other scalar field (``e0`` only where
    positive, ``replicon`` only where it is above 1: the replica-symmetric fixed point
    is unstable)."""
    title = (
        f"{type(result).__name__}: alpha {_scalar(result.alpha)}, lam {_scalar(result.lam)}, "
        f"penalty {result.penalty}"
    )
    lines, shown = [title], {"alpha", "lam", "penalty"}
    for label, names in _SUMMARY_ROWS:
        shown.update(n for n in names if n in result._fields)
        present = [n for n in names if _shown(result, n)]
        if present:
            lines.append(
                f"  {label}: " + ", ".join(f"{n} {_scalar(getattr(result, n))}" for n in present)
            )
    others = [n for n in result._fields if n not in shown and _shown(result, n)]
    scalars = [n for n in others if _is_scalar(getattr(result, n))]
    if scalars:
        lines.append("  other: " + ", ".join(f"{n} {_scalar(getattr(result, n))}" for n in scalars))
    elided = [f"{n} {brief(getattr(result, n))}" for n in others if n not in scalars]
    if elided:
        lines.append("  not shown: " + ", ".join(elided))
    return "\n".join(lines)


def _array_fields(curve):
    """The fields holding one value per alpha (arrays of the length of ``alpha``)."""
    n = len(np.atleast_1d(curve.alpha))
    shapes = {name: getattr(getattr(curve, name), "shape", None) for name in curve._fields}
    return [name for name, shape in shapes.items() if shape == (n,)]


def curve_dataframe(curve):
    """One row per alpha, one column per array field (``penalty`` repeated as a column;
    the warm start left out)."""
    columns = {name: np.asarray(getattr(curve, name)) for name in _array_fields(curve)}
    frame = pd.DataFrame(columns)
    frame["penalty"] = curve.penalty
    return frame


def curve_repr(curve) -> str:
    """``LearningCurve(40 points, alpha 0.05..2, converged 40, penalty='nuclear', ...)``
    followed by the array fields' names."""
    alpha = np.atleast_1d(np.asarray(curve.alpha, dtype=float))
    n_conv = int(np.sum(np.asarray(curve.converged, dtype=bool)))
    head = f"{len(alpha)} points"
    if len(alpha):
        head += f", alpha {alpha.min():.4g}..{alpha.max():.4g}, converged {n_conv}"
    arrays = _array_fields(curve)
    rest = [f"{n}={brief(getattr(curve, n))}" for n in curve._fields if n not in arrays]
    return f"{type(curve).__name__}({head}, {', '.join(rest)}; arrays: {', '.join(arrays)})"


def curve_summary(curve, max_rows: int = 12) -> str:
    """The repr's first line, then a table of alpha, test error, mse, train loss and
    convergence (at most ``max_rows`` rows, the middle elided)."""
    frame = curve_dataframe(curve)
    columns = [c for c in _CURVE_COLUMNS if c in frame.columns]
    table = frame[columns].to_string(index=False, max_rows=max_rows, float_format="{:.6g}".format)
    lam = np.unique(np.asarray(curve.lam, dtype=float))
    lam_text = _scalar(lam[0]) if len(lam) == 1 else f"{lam.min():.4g}..{lam.max():.4g}"
    n_conv = int(frame["converged"].sum()) if "converged" in frame else 0
    title = (
        f"{type(curve).__name__}: {len(frame)} points, lam {lam_text}, penalty {curve.penalty}, "
        f"{n_conv} converged"
    )
    return title + "\n" + table
