"""Accuracy of single state-evolution solves against converged references (issue 34).

For chapter settings (softmax seq2seq and seq2lab, T = 2 and 3, Wishart targets, lam
0.01 and 1e-3, alpha 0.3 and 1, noise 0 and 0.1) and each configuration of
``SESettings`` below, 16 solves with the QMC seeds 0..15 (each started from the
reference's ``(m, q, v)``): per metric (test error, mse) the relative deviation of each
solve from the reference, its own reported ``integration_error`` and their ratio, and
the CPU time of a solve relative to the old default (``refine=1``, 8192 points).

The reference of a point: plain solves (``refine=1``, no Newton correction) at
``N_REF`` points in 4 scramblings, with ``REF_SEEDS`` independent seeds (1000, 1001,
...), averaged; its error is the standard deviation over those seeds over sqrt(their
number). References are stored in ``se_accuracy_reference.json`` beside this script and
reused (delete it to recompute).

    python benchmarks/se_accuracy.py [POINT ...] [--configs NAME,...] [--seeds S] [--save]
                                     [--stein]

``--stein``: every solve, the references' too, with the Stein form of ``m_hat``
(``SESettings(m_hat="stein")``; the form of the table below) instead of the default.

Measured with the default solve (derivative form of ``m_hat``, ``refine=4``), 16 seeds,
against references solved the same way at 2^17 points (max |dev|/rep over test error and
mse; CPU relative to ``refine=1`` in the same run):

- s2s T2 W0.5 a2 l0.1: mse median 0.096 %, max 0.28 %; max |dev|/rep 3.26; CPU 1.55x.
- s2s T3 n0.1 W0.3 a0.3 l1e-2: mse median 0.35 %, max 1.6 %; max |dev|/rep 2.66; 1.58x.
- s2l T2 W0.5 a1 l1e-2: test error / mse median 0.145 / 0.121 %, max 0.36 / 0.24 %;
  max |dev|/rep 2.92; 1.6x (``refine=1``: median 0.46 / 0.33 %, max 1.1 / 0.87 %).

With 4 scramblings the reported error is a 3-degree-of-freedom estimate: even where it is
exact, a deviation beyond 3 of it has probability 5.8 % (Student's t), so one seed in 16
beyond 3 is expected about once in two runs.

The fine stage's scramblings (``SESettings.refine_rep``; configs ``r8``, ``r16``: the
same 4 x 8192 points in 8 scramblings of 4096 or 16 of 2048, the coarse 4 extended or
kept), same runs (mse median / max deviation; max |dev|/rep; CPU against the default):

- s2s T3 n0.1 W0.3 a0.3 l1e-2: default 0.35 / 1.6 %, 2.66; r8 0.28 / 1.07 %, 2.28, 1.15x;
  r16 0.29 / 1.0 %, 2.03, 1.13x (test error median 0.38, 0.47, 0.35 %).
- s2s T2 W0.5 a2 l0.1: default 0.096 / 0.28 %, 3.26; r8 0.14 / 0.41 %, 2.21, 1.05x;
  r16 0.17 / 0.42 %, 1.69, 1.12x.
- s2l T2 W0.5 a1 l1e-2: default 0.12 / 0.24 %, 2.92; r8 0.11 / 0.25 %, 0.91, 1.08x;
  r16 0.11 / 0.43 %, 1.41, 1.0x (test error median 0.145, 0.115, 0.19 %).

Long scrambled Sobol sets integrate better in the 6 dimensions of T = 2 seq2seq (the
deviations grow 1.5-1.8x when split), not in the 18 of T = 3; the reported error is
larger with more scramblings and covers the tails (every seed within 2.3x at every
point, 0.9 % of solves beyond 3x expected at 16 scramblings). The default keeps 4 long
ones. ``se_error_budget.py`` splits the error by conjugate (at T = 3, q_hat's).

Measured earlier with the Stein form of ``m_hat`` (one run each on a shared 2-core machine
at load 10-15; CPU seconds are medians; "before" = the code before refine existed):

================================  =======  ===========  ===========  =======  =========
point, config                     ref mse  median dev   max dev      max      CPU
                                           te / mse     te / mse     dev/rep  (ratio)
================================  =======  ===========  ===========  =======  =========
s2s T3 n0.1 W0.3 a0.3 l1e-2 bef.  0.038141 0.99 / 2.0 % 2.8 / 6.4 %  7.8      0.64 s
  refine=1 (new Jacobian)                  same         same         7.3      0.73 (1)
  refine=4                                 0.51/0.87 %  1.3 / 2.2 %  4.7      1.24 (1.7)
  refine=8                                 0.18/0.28 %  0.83/1.4 %   3.3      1.88 (2.6)
s2s T2 n0.1 W0.5 a0.3 l1e-3       0.170691 1.8 / 2.6 %  3.8 / 7.2 %  3.7      2.88 (1)
  refine=4                                 0.47/0.67 %  0.74/1.4 %   3.4      3.22 (1.12)
  refine=8                                 0.20/0.35 %  0.57/0.86 %  2.7      3.42 (1.19)
  refine=16                                0.18/0.28 %  0.52/0.76 %  6.0      4.19 (1.46)
  refine=8, refine_steps=2                 0.15/0.24 %  0.49/0.73 %  2.8      3.58 (1.24)
s2s T2 W0.5 a1 l1e-2 (mse 0.0015  0.002232 49 / 54 %   166 / 180 %  16       0.27 (1)
  Q0)  refine=8 (before the                14 / 13 %    same (3 of   16       0.48 (1.8)
  backtracking step)                                    16 not refined)
================================  =======  ===========  ===========  =======  =========

The references' own errors (relative): 1.4e-3 (T3 mse), 1.6e-3 (T2 lam 1e-3 mse): below
about 2e-3 the deviations measure the reference as much as the solve.

Seq2lab T = 2, Wishart(0.5), alpha 1, lam 1e-3 (``s2l_T2_a1_l1e-3``; mse 0.0019, 0.13 %
of Q0; test error 3.4e-5; reference spread 0.02 %), default solve, 16 seeds: test error
/ mse median deviation 0.30 / 0.18 %, max 0.71 / 0.55 %; max |dev|/rep 3.25; 8.2 CPU-s a
solve (the search for several fixed points). ``r16``: 0.26 / 0.19 %, max 0.95 / 0.96 %;
max |dev|/rep 1.90; 1.16x. The T = 3 refine=4 row is with the final code (median
reported error 0.97 %; the largest deviation over the reported error and the reference's
combined: 4.5); the others were measured before the Newton step's own error was added to
the reported one (which moves the reported error a little, not the deviations). Seq2seq
T = 2, Wishart(0.5), alpha 2, lam 0.1 (not in the table, one seed): the old default's
mse 0.03499 (reported 0.13 %), plain solves at 32768 points 0.02988 and 0.02999 (seeds
0, 1), at 2^16 points 0.03024 and 0.02898 (seeds 1000, 1001), refine=4 0.02972.

``--save`` writes every solve's deviations, reported errors and CPU times to
``se_accuracy_runs.json``. "max |dev|/rep": the largest deviation over the solve's own
reported error; "w/ ref err": over that error combined with the reference's.
"""

import json
import os
import sys
import time
import warnings

import numpy as np

import attnlib
from attnlib import se, tasks
from attnlib.targets import Wishart

attnlib.configure_jax()
warnings.simplefilter("ignore")

N_REF, REF_SEEDS = 2**17, 4
POINTS = {
    # name: (task, target, alpha, lam)
    "s2s_T2_a1_l1e-2": (tasks.Seq2Seq(T=2), Wishart(0.5), 1.0, 1e-2),
    "s2s_T2_a2_l0.1": (tasks.Seq2Seq(T=2), Wishart(0.5), 2.0, 0.1),
    "s2s_T2_n0.1_a0.3_l1e-3": (tasks.Seq2Seq(T=2, noise=0.1), Wishart(0.5), 0.3, 1e-3),
    "s2l_T2_a1_l1e-2": (tasks.Seq2Lab(T=2), Wishart(0.5), 1.0, 1e-2),
    "s2l_T2_a1_l1e-3": (tasks.Seq2Lab(T=2), Wishart(0.5), 1.0, 1e-3),
    "s2s_T3_n0.1_a0.3_l1e-2": (tasks.Seq2Seq(T=3, noise=0.1), Wishart(0.3), 0.3, 1e-2),
    "s2l_T3_a1_l1e-3": (tasks.Seq2Lab(T=3), Wishart(0.4), 1.0, 1e-3),
}
CONFIGS = {
    "default": dict(),
    "old": dict(refine=1),
    "x4": dict(refine=4),
    "x8": dict(refine=8),
    "x16": dict(refine=16),
    "x8s2": dict(refine=8, refine_steps=2),
    "r8": dict(refine_rep=8),
    "r16": dict(refine_rep=16),
    "x8r32": dict(refine=8, refine_rep=32),
}
METRICS = ("test_error", "mse")
M_HAT = "derivative"  # the form of m_hat of every solve (--stein: "stein")
REF_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "se_accuracy_reference.json")


def _load():
    if os.path.exists(REF_FILE):
        with open(REF_FILE) as f:
            return json.load(f)
    return {}


def _key(name):
    """A reference's key: the point and the form of ``m_hat`` its solves used (the stored
    references without a suffix are of the Stein form, from before the pathwise one)."""
    return name if M_HAT == "stein" else f"{name}|pathwise"


def reference(name, refs):
    """The stored or computed reference ``{metric: (value, error), x: (m, q, v)}``."""
    if _key(name) in refs:
        return refs[_key(name)]
    task, target, alpha, lam = POINTS[name]
    t0 = time.process_time()
    first = se.solve(task, target, alpha, lam, settings=_settings(dict(refine=1)))
    plain = _settings(dict(refine=1))
    rs = [se.solve(task, target, alpha, lam, n_qmc=N_REF, seed=1000 + k, settings=plain,
                   init=(first.m, first.q, first.v)) for k in range(REF_SEEDS)]  # fmt: skip
    ref = {"x": [float(np.mean([getattr(r, f) for r in rs])) for f in ("m", "q", "v")]}
    for f in METRICS:
        v = np.array([getattr(r, f) for r in rs])
        ref[f] = [float(v.mean()), float(v.std(ddof=1) / np.sqrt(len(v)))]
    ref["reported"] = float(np.mean([r.integration_error for r in rs]))
    ref["cpu_s"] = time.process_time() - t0
    refs[_key(name)] = ref
    stored = _load()  # another run may have added references meanwhile
    stored[_key(name)] = ref
    with open(REF_FILE, "w") as f:
        json.dump(stored, f, indent=1)
    return ref


def _settings(config):
    """``SESettings`` of ``config`` and ``M_HAT``, without the fields this version lacks
    (so that ``refine=1`` runs on the code before the field existed: the "before"
    numbers)."""
    config = {**config, "m_hat": M_HAT}
    return se.SESettings(**{k: v for k, v in config.items() if k in se.SESettings._fields})


def run(name, ref, config, seeds):
    """Relative deviations ``(S, 2)``, reported errors ``(S,)``, CPU seconds ``(S,)``."""
    task, target, alpha, lam = POINTS[name]
    dev, rep, cpu = [], [], []
    for s in seeds:
        t0 = time.process_time()
        r = se.solve(
            task, target, alpha, lam, seed=s, init=tuple(ref["x"]), settings=_settings(config)
        )
        cpu.append(time.process_time() - t0)
        dev.append([(getattr(r, f) - ref[f][0]) / ref[f][0] for f in METRICS])
        rep.append(r.integration_error)
    return np.array(dev), np.array(rep), np.array(cpu)


def main():
    global M_HAT
    args = sys.argv[1:]
    if "--stein" in args:
        args.remove("--stein")
        M_HAT = "stein"
    seeds = range(16)
    configs = list(CONFIGS)
    if "--seeds" in args:
        i = args.index("--seeds")
        seeds = range(int(args[i + 1]))
        del args[i : i + 2]
    if "--save" in args:
        args.remove("--save")
    if "--configs" in args:
        i = args.index("--configs")
        configs = args[i + 1].split(",")
        del args[i : i + 2]
    names = args or list(POINTS)
    refs, raw = _load(), {}
    print(f"load average at start: {os.getloadavg()}")
    for name in names:
        ref = reference(name, refs)
        print(f"\n{name}: reference test_error {ref['test_error'][0]:.6g} +- "
              f"{ref['test_error'][1]:.1e}, mse {ref['mse'][0]:.6g} +- {ref['mse'][1]:.1e} "
              f"({REF_SEEDS} seeds at {N_REF} points, their reported error "
              f"{ref['reported']:.1e})")  # fmt: skip
        print(f"{'config':>6} | {'median |dev| te, mse':>22} | {'max |dev| te, mse':>20} | "
              f"{'median rep':>10} | {'max |dev|/rep':>13} | {'cpu ratio':>9}")  # fmt: skip
        base = None
        for c in configs:
            dev, rep, cpu = run(name, ref, CONFIGS[c], seeds)
            base = np.median(cpu) if base is None else base
            a = np.abs(dev)
            ratio = np.max(a / rep[:, None])
            ref_rel = np.array([ref[f][1] / abs(ref[f][0]) for f in METRICS])
            both = np.max(a / np.hypot(rep[:, None], ref_rel[None, :]))
            raw.setdefault(name, {})[c] = dict(dev=dev.tolist(), rep=rep.tolist(), cpu=cpu.tolist())
            print(f"{c:>6} | {np.median(a[:, 0]):10.2e} {np.median(a[:, 1]):10.2e} | "
                  f"{a[:, 0].max():9.2e} {a[:, 1].max():9.2e} | {np.median(rep):10.2e} | "
                  f"{ratio:13.2f} | {both:10.2f} | {np.median(cpu) / base:9.2f} | "
                  f"{np.median(cpu):6.2f}",
                  flush=True)  # fmt: skip
    if "--save" in sys.argv:
        with open(REF_FILE.replace("reference", "runs"), "w") as f:
            json.dump(raw, f)
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
