r"""The state evolution's default solve with its Newton correction (``SESettings.refine =
4``), for the section "The default solve" of ``book/methods_finite_size.ipynb``.

Run from ``book/``::

    python -m data.make_se_default --serial               # -> data/se_default.json
    python -m data.make_se_default --serial --part t3     # one part
    python -m data.make_se_default --quick --serial --out DIR

Parts (one file, ``se_default.json``, a key per part):

- ``t3``: the default solve (8192 QMC points corrected on 4 x 8192) at the ``T = 3``
  point of :mod:`data.make_t3_gap`, cold, for the QMC seeds ``0 .. SEEDS - 1``: train
  loss, test error, mse, reported ``integration_error`` and CPU seconds, to set beside
  that study's reference (``t3_gap.npz``: the mean of 4 plain solves at ``2^19``
  points) and its plain solves at 8192 points (``refine=1``, the old default).
- ``moved``: for each stored learning curve that was regenerated with the new default
  (``REGENERATED``: file, curves and how the script solved them), the same curves solved
  again with ``refine=1`` (the old default; these reproduce the numbers stored before,
  which ``git show`` of an older commit gives) with their reported
  ``integration_error``, and the new stored values: per curve and field the relative
  change ``new / old - 1`` and that change over the old reported error (the old error
  bar). Points past a script's time limit (NaN in either) are left out.
  The old curves are solved as they were: ``refine=1``, ``OLD_N_QMC`` points and the
  Stein form of ``m_hat`` (``OLD``: ``m_hat="stein"``), so that they
  reproduce the stored numbers of before; the new ones are the default solve (the
  Newton correction and the pathwise ``m_hat``).
- ``check`` (after ``moved``): for the ``CHECK_TOP`` numbers that moved most over their
  old error bar and the ``CHECK_TOP`` that moved most relative to their value (one per
  curve each), plain solves at ``CHECK_N`` points with two
  independent seeds: which of the old and the new number is nearer.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file: make `data` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from data import _common as C
from data import make_paper_figures as F
from data import make_paper_variants as V
from data import make_t3_gap as G

import attnlib
from attnlib import se, sweep

attnlib.configure_jax()  # float64 and JAX's compilation cache, before anything compiles

# the default before the Newton correction and the pathwise m_hat
OLD = se.SESettings(refine=1, m_hat="stein")
OLD_N_QMC = 2048  # the paper scripts' n_qmc before (8192 since: make_paper_figures.FULL)
T3_FIELDS = ("train_loss", "test_error", "mse", "integration_error", "converged")
FULL = {"seeds": 16}
QUICK = {"seeds": 2}


def t3_point(*, n_qmc: int, seed: int) -> dict:
    """The default solve at the ``T = 3`` point on ``n_qmc`` points with QMC seed ``seed``
    (cold), corrected on ``SESettings().refine`` times as many."""
    c0 = time.process_time()
    r, notes = C.quiet(se.solve, G.task(), G.target(), G.ALPHA, G.LAM, n_qmc=n_qmc, seed=seed)
    if notes:
        C.log(f"    [SE] seed={seed}: {notes}")
    row = {f: float(getattr(r, f)) for f in T3_FIELDS}
    row["cpu_seconds"] = time.process_time() - c0
    return row


def _paper_curve(script: str, curve: str):
    """``(task, target, alphas, lam, keywords)`` of a learning curve of
    :mod:`data.make_paper_figures` (``"figures"``) or :mod:`data.make_paper_variants`
    (``"variants"``), as the script solved it before (``OLD_N_QMC`` points)."""
    name, T, beta, lam = F.CURVES[curve]
    if script == "figures":
        kw = {"n_qmc": OLD_N_QMC, "time_limit": 60.0}  # the old run's time limit per curve
        return F.make_task(name, T, beta), F.TARGET, F.FULL["alpha"], lam, kw
    kw = {"n_qmc": OLD_N_QMC, "time_limit": V.FULL["time_limit"]}
    return V._task(curve), V.TARGET, V.FULL["alpha"], lam, kw


# file -> (script, key of a curve's field in the file, fields, curves)
REGENERATED = {
    "paper_figures_theory.npz": ("figures", "{curve}.{field}",
                                 ("test_error", "test_error_noisy"), tuple(F.CURVES)),
    "paper_variants_se.npz": ("variants", "se.{curve}.{field}",
                              ("mse", "train_loss", "test_error_noisy"), (*V.VARIANTS, "lam1e-2")),
}  # fmt: skip


def old_curve(*, file: str, curve: str) -> dict:
    """One regenerated curve solved as before (``refine=1``, the Stein form of ``m_hat``):
    its fields and reported errors."""
    script, _, fields, _ = REGENERATED[file]
    task, target, alphas, lam, kw = _paper_curve(script, curve)
    lc, _ = C.quiet(se.learning_curve, task, target, list(alphas), lam, settings=OLD, **kw)
    out = {f: np.asarray(getattr(lc, f), float).tolist() for f in fields}
    out["integration_error"] = np.asarray(lc.integration_error, float).tolist()
    return out


def _moved(file: str, row: dict, new: dict) -> list[dict]:
    """Per field of one curve: the new values against ``row`` (the old ones)."""
    _, key, fields, _ = REGENERATED[file]
    err = np.asarray(row["integration_error"])
    out = []
    for f in fields:
        old, now = np.asarray(row[f]), np.asarray(new[key.format(curve=row["curve"], field=f)])
        rel = now / old - 1
        out.append({"curve": row["curve"], "field": f, "old": old.tolist(),
                    "new": now.tolist(), "old_error": err.tolist(), "rel": rel.tolist(),
                    "over_old_error": (np.abs(rel) / err).tolist()})  # fmt: skip
    return out


def _t3(quick, out, runner) -> dict:
    cfg = QUICK if quick else FULL
    n_qmc = se.SESettings().n_qmc
    t = runner(sweep.Grid(t3_point, {"n_qmc": [n_qmc]}, seeds=cfg["seeds"]))
    rows = sorted(C.records(t), key=lambda r: r["seed"])
    return {"t3": {"settings": se.SESettings()._asdict(), "rows": rows}}


def _moved_all(quick, out, runner) -> dict:
    """Every regenerated curve of the files present in ``out``."""
    res = {}
    for file, (_, _, _, curves) in REGENERATED.items():
        path = Path(out) / file
        if not path.exists():
            continue
        new = C.load_npz(path)
        t = runner(sweep.Grid(old_curve, sweep.product(file=file, curve=curves)))
        res[file] = [m for row in C.records(t) for m in _moved(file, row, new)]
        res[file + ".alpha"] = np.asarray(new["alpha"], float).tolist()
    return {"moved": res}


CHECK_TOP, CHECK_N, CHECK_SEEDS = 4, 2**15, (1000, 1001)


def check_point(*, file: str, curve: str, alpha: float, field: str) -> dict:
    """A reference for one moved number: plain solves (``refine=1``, the Stein form of
    ``m_hat``) at ``CHECK_N`` points with the seeds ``CHECK_SEEDS`` (independent of the
    stored ones), cold; and
    the corrected solve from ``OLD_N_QMC`` points (cold) with its reported error."""
    script = REGENERATED[file][0]
    task, target, _, lam, kw = _paper_curve(script, curve)
    vals = []
    for seed in CHECK_SEEDS:  # OLD: the Stein form, exact across jumps of the prox
        r, _ = C.quiet(se.solve, task, target, alpha, lam, settings=OLD, n_qmc=CHECK_N,
                       seed=seed)  # fmt: skip
        vals.append(float(getattr(r, field)) if r.converged else float("nan"))
    r, _ = C.quiet(se.solve, task, target, alpha, lam, n_qmc=OLD_N_QMC)  # corrected, cold
    coarse = {"coarse_corrected": float(getattr(r, field)),
              "coarse_corrected_error": float(r.integration_error)}  # fmt: skip
    return {"ref": float(np.mean(vals)), "ref_values": vals, **coarse}


def _top(moved: dict, key: str, count: int) -> list[tuple]:
    """The ``count`` numbers (one per curve) of largest ``key(row, i)`` in ``moved``:
    ``(file, curve, alpha, field, old, new, old error, over old error)``."""
    cands = []
    for file, rows in moved.items():
        if file.endswith(".alpha"):
            continue
        alphas = moved[file + ".alpha"]
        for m in rows:
            score = np.nan_to_num(np.abs(np.asarray(m[key], float)), nan=-1.0)
            i = int(np.argmax(score))
            cands.append((score[i], file, m["curve"], alphas[i], m["field"], m["old"][i],
                          m["new"][i], m["old_error"][i], m["over_old_error"][i]))  # fmt: skip
    cands.sort(key=lambda c: -c[0])
    seen, top = set(), []
    for c in cands:
        if c[2] not in seen and len(top) < count:
            seen.add(c[2])
            top.append(c[1:])
    return top


# checked whatever moved: where the correction from 2048 points went wrong (beta = 2,
# large alpha, a small mse)
CHECK_ALWAYS = (
    ("paper_figures_theory.npz", "beta2", 2.0, "test_error"),
    ("paper_figures_theory.npz", "T3", 2.0, "test_error_noisy"),  # paper_conventions' gap
)


def _always(moved: dict) -> list[tuple]:
    """The numbers of ``CHECK_ALWAYS`` present in ``moved``, as :func:`_top` gives them."""
    out = []
    for file, curve, alpha, field in CHECK_ALWAYS:
        if file not in moved:
            continue
        i = int(np.argmin(np.abs(np.asarray(moved[file + ".alpha"]) - alpha)))
        m = next(m for m in moved[file] if m["curve"] == curve and m["field"] == field)
        out.append((file, curve, alpha, field, m["old"][i], m["new"][i], m["old_error"][i],
                    m["over_old_error"][i]))  # fmt: skip
    return out


def _checks(quick, out, runner) -> dict:
    """References for the ``CHECK_TOP`` numbers that moved most over their old error,
    and the ``CHECK_TOP`` that moved most relative to their value (one per curve each),
    from the ``moved`` part."""
    path = Path(out) / "se_default.json"
    moved = json.loads(path.read_text())["moved"]
    count = 1 if quick else CHECK_TOP
    top = _top(moved, "over_old_error", count)
    top += [c for c in _top(moved, "rel", count) if c[:4] not in {t[:4] for t in top}]
    top += [c for c in _always(moved) if c[:4] not in {t[:4] for t in top}]
    rows = []
    for file, curve, alpha, field, old, new, err, ratio in top:
        ref = check_point(file=file, curve=curve, alpha=alpha, field=field)
        rows.append(dict(file=file, curve=curve, alpha=alpha, field=field, old=old, new=new,
                         old_error=err, over_old_error=ratio, n_qmc=CHECK_N, **ref))  # fmt: skip
    return {"check": rows}


def _part(fn):
    def run(quick, out, runner):
        path = Path(out) / "se_default.json"
        stored = json.loads(path.read_text()) if path.exists() else {}
        stored.update(fn(quick, out, runner))
        C.save_json(path, stored, indent=1)

    return run


PARTS = {"t3": _part(_t3), "moved": _part(_moved_all), "check": _part(_checks)}


def main(argv=None) -> None:
    args = C.parser(__doc__, PARTS).parse_args(argv)
    C.run_parts(args, PARTS, lambda *a: None)


if __name__ == "__main__":
    main()
