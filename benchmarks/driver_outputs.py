"""Record and compare the outputs of the library's drivers, to check a refactoring of
:mod:`attnlib.follow` or its callers bitwise against the code before it.

Recorded (about 2 minutes on two quiet cores): four learning curves (two with lam small
enough for the state evolution's fallbacks and its continuation in lam, one softmax
curve at lam = 1e-3 that runs the search for several fixed points), three lambda
searches (Brent, chained, grid), three interpolation-threshold bisections (one cut by
``max_solves``), the three explorers' caches and three ``amp.robust_gamp`` runs; with
each, the INFO lines of the fallbacks, walks and probes, and the warnings.

    PYTHONPATH=OLD python benchmarks/driver_outputs.py record old.pkl
    PYTHONPATH=NEW python benchmarks/driver_outputs.py record new.pkl
    python benchmarks/driver_outputs.py compare old.pkl new.pkl
"""

import logging
import pickle
import sys
import time
import warnings

import matplotlib

matplotlib.use("Agg")
import jax  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import attnlib  # noqa: E402
from attnlib import amp, se, targets, tasks, thresholds, widgets  # noqa: E402

KEPT = ("retry", "continuation", "probe", "GAMP")  # the log lines compared


def _plain(x):
    """Nested dicts, lists and arrays of ``x`` (NamedTuples as dicts)."""
    if hasattr(x, "_asdict"):
        return {k: _plain(v) for k, v in x._asdict().items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return np.asarray(x) if hasattr(x, "shape") else x


def _explorer(cls, settings, field, values):
    e = cls(settings)
    for v in values:
        plt.close(e.figure(e.settings._replace(**{field: v})))
    return [v for _, v in e.solver.curves.items()], [v for _, v in e.solver.points.items()]


def _scaling():
    e = widgets.ScalingExplorer(widgets.ScalingSettings(n_alpha=6))
    return [e.curve(e.settings._replace(lam=lam)) for lam in (0.01, 0.02, 0.005)]


def _robust_gamp(max_iter, dampings):
    task, d = tasks.Linear(T=1, noise=0.1), 12
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    S0 = targets.Wishart(0.5).sample(k1, d)
    data = tasks.make_dataset(k2, task, S0, tasks.n_samples(0.5, d))
    return amp.robust_gamp(task, data, 0.3, dampings=dampings, max_iter=max_iter)


def cases():
    lin, lin5, W = tasks.Linear(T=1, noise=0.1), tasks.Linear(T=1, noise=0.5), targets.Wishart(0.5)
    lc, search, bracket = se.learning_curve, se.search_lambda, thresholds.interpolation_se_bracket
    erm = widgets.ERMSettings(task="linear", T=1, n_alpha=5)
    spec = widgets.SpectrumSettings(task="linear", T=1)
    return {
        "lc_lin": lambda: lc(lin, W, [0.3, 0.4, 0.5, 0.6, 0.7], 0.05, return_warm=True),
        "lc_lin_smalllam": lambda: lc(lin, W, [0.2, 0.3, 0.45, 0.6, 0.8], 1e-4),
        "lc_lin_nonoise": lambda: lc(tasks.Linear(T=1), W, np.arange(1, 7) / 10, 1e-3),
        "lc_s2s": lambda: lc(tasks.Seq2Seq(T=2, noise=0.1), W, [0.2, 0.4, 0.6], 1e-3, n_qmc=1024),
        "search_lin": lambda: search(lin, W, 0.5),
        "search_lin_prev": lambda: search(lin, W, 0.6, previous=0.05),
        "search_lin_grid": lambda: search(lin, W, 0.4, grid=np.logspace(-3, 0, 4), xatol=0.05),
        "interp_bracket": lambda: bracket(lin5, W, xtol=1e-2),
        "interp_bracket_max": lambda: bracket(lin5, W, xtol=1e-3, max_solves=4),
        "interp_se": lambda: thresholds.interpolation_se(lin5, W, xtol=2e-2),
        "erm_widget": lambda: _explorer(widgets.ERMExplorer, erm, "alpha", (0.3, 0.35, 0.7)),
        "scaling_widget": _scaling,
        "spectrum_widget": lambda: _explorer(widgets.SpectrumExplorer, spec, "alpha", (0.3, 0.4)),
        "robust_gamp_ok": lambda: _robust_gamp(3000, (0.5, 0.9)),
        "robust_gamp_fail": lambda: _robust_gamp(2, (0.5, 0.9)),
        "robust_gamp_none": lambda: _robust_gamp(40, (0.2, 0.6, 0.9)),
    }


def record(path):
    attnlib.configure_jax()
    lines = []
    handler = logging.Handler()
    handler.emit = lambda rec: lines.append(rec.getMessage())
    logging.getLogger("attnlib").addHandler(handler)
    logging.getLogger("attnlib").setLevel(logging.INFO)
    out = {}
    for name, run in cases().items():
        t0, lines[:] = time.perf_counter(), []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = _plain(run())
        kept = [
            ln.rsplit(",", 1)[0] if "probe" in ln else ln
            for ln in lines
            if any(k in ln for k in KEPT)
        ]
        out[name] = dict(value=value, logs=kept, warns=[str(w.message) for w in caught])
        print(f"{name}: {time.perf_counter() - t0:.1f} s", flush=True)
    with open(path, "wb") as f:
        pickle.dump(out, f)
    print(f"{attnlib.__file__} -> {path}")


def _diffs(x, y, path):
    """``(path, what)`` of every difference between two ``_plain`` values."""
    if isinstance(y, dict) and set(y) == {"results", "warms"} and isinstance(x, list):
        y = [y["results"], y["warms"]]  # a follow.Followed: the (results, warms) pair it replaced
    if isinstance(x, dict) and isinstance(y, dict):
        for k in x:
            yield from _diffs(x[k], y.get(k), f"{path}.{k}")
    elif isinstance(x, list) and isinstance(y, list):
        if len(x) != len(y):
            yield path, f"length {len(x)} against {len(y)}"
        for i, (u, v) in enumerate(zip(x, y, strict=False)):
            yield from _diffs(u, v, f"{path}[{i}]")
    elif isinstance(x, (np.ndarray, float, np.floating)):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or not np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"):
            yield path, f"{x!r:.60} against {y!r:.60}"
    elif not (x == y if not isinstance(x, np.ndarray) else np.array_equal(x, y)):
        yield path, f"{x!r:.60} against {y!r:.60}"


def compare(old, new):
    with open(old, "rb") as f, open(new, "rb") as g:
        a, b = pickle.load(f), pickle.load(g)
    same = True
    for name in a:
        diffs = list(_diffs(a[name]["value"], b[name]["value"], name))
        logs, warns = a[name]["logs"] == b[name]["logs"], a[name]["warns"] == b[name]["warns"]
        same &= not diffs and logs and warns
        print(
            f"{name:20s} differences: {len(diffs)} {diffs[:2]}  logs and warnings equal: "
            f"{logs}, {warns}"
        )
    print("bitwise identical" if same else "DIFFERENT")


if __name__ == "__main__":
    record(sys.argv[2]) if sys.argv[1] == "record" else compare(sys.argv[2], sys.argv[3])
