"""Accelerated EM (SQUAREM, `crowdlab.engines.accel`) against plain EM, per model and real set.

For each model and set (default: the slow sets of issue 40, every model of its section 1):

- ``plain``: plain EM run to its own fixed point (``Run(..., tol=0, param_tol=None, max_iter=--plain-max)``: it
  stops only when the objective has not risen above rounding for 20 iterations, or at the limit), its final
  objective ``l_plain``, and the EM-map evaluations and wall time until it first came within 1e-6 relative of
  ``l_plain``;
- ``fit (plain)``: ``cl.fit(data, method, accelerate=False)``, today's plain default: iterations, objective;
- ``accel``: ``cl.fit(data, method)`` (the default now): EM-map evaluations (the maximum check's included), wall
  time, the evaluations and time until it first came within 1e-6 relative of ``l_plain``, its final objective,
  fallback steps, stops the maximum check rejected (saddles) and the gap estimate.

A final objective of the accelerated fit above ``l_plain`` by more than 1e-6 relative means it ended at another,
higher optimum (after leaving a point where plain EM sits); the table says so in ``note``.

    .venv/bin/python benchmarks/bench_accel.py [--datasets a,b] [--models ds,glad] [--plain-max 20000]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import crowdlab as cl
from crowdlab.engines.run import Run
from crowdlab.models import make_model

ROOT = Path(__file__).resolve().parents[1]
SETS = ("crowdflower_weather_sentiment", "rodrigues2014_music_genre", "rodrigues2018_labelme", "ipeirotis_adultcontent")
MODELS = ("ds", "one_coin", "two_coin", "mace", "mace_vb", "ibcc", "ebcc", "glad")
REL = 1e-6


def find_shared() -> Path:
    for base in ROOT.parents:
        if (base / "shared" / "datasets").is_dir():
            return base / "shared" / "datasets"
    return ROOT.parent / "shared" / "datasets"


def traced(make, accelerate: bool):
    """(run, trace of (evaluations, seconds, objective) after each iteration or cycle, wall seconds)."""
    trace = []
    t0 = time.perf_counter()
    holder = {}

    def progress(it, _limit):
        trace.append((it, time.perf_counter() - t0, holder["run"].last.objective))

    run = make()
    holder["run"] = run
    run.run(progress=progress, accelerate=accelerate)
    return run, trace, time.perf_counter() - t0


def reach(trace, target: float):
    """(evaluations, seconds) of the first entry at or above ``target``; (None, None) when none."""
    for it, sec, obj in trace:
        if obj >= target:
            return it, sec
    return None, None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=str(find_shared()))
    ap.add_argument("--datasets", default=",".join(SETS))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--plain-max", type=int, default=20000)
    args = ap.parse_args()
    shared = Path(args.shared)
    head = (
        f"{'set':<30} {'model':<9} {'plain ev':>8} {'to 1e-6':>8} {'s':>6} {'l_plain':>14} | {'fit it':>6} "
        f"{'fit obj':>14} | {'acc ev':>6} {'to 1e-6':>7} {'s':>6} {'acc obj':>14} {'fb':>4} {'sad':>3} {'gap':>8}  note"
    )
    print(head)
    for name in args.datasets.split(","):
        data = cl.read_annotations(shared / name / "labels.csv")
        for method in args.models.split(","):
            if method == "two_coin" and data.n_classes != 2:
                continue
            cl.fit(data, method, max_iter=3)  # warm: compiled kernels, memo
            plain, ptrace, _ = traced(
                lambda m=method, d=data: Run(
                    d,
                    make_model(m),
                    tol=0.0,
                    param_tol=None,
                    max_iter=args.plain_max,
                    keep_posteriors=2,
                    params_budget=2**26,
                ),
                False,
            )
            l_plain = plain.last.objective
            target = l_plain - REL * abs(l_plain)
            p_ev, p_s = reach(ptrace, target)
            fitp = cl.fit(data, method, accelerate=False)
            t0 = time.perf_counter()
            acc_trace = []

            def progress(it, _lim, box=acc_trace, t=t0):
                box.append((it, time.perf_counter() - t, None))

            fast = cl.fit(data, method, progress=progress)
            wall = time.perf_counter() - t0
            # objectives along the accelerated run: its M snapshots (iteration = evaluations so far)
            objs = {s.iteration: s.objective for s in fast.snapshots if s.kind == "M"}
            atrace = [(it, sec, objs.get(it, float("-inf"))) for it, sec, _ in acc_trace]
            a_ev, a_s = reach(atrace, target)
            acc = fast.acceleration
            note = ""
            if fast.last.objective > l_plain + REL * abs(l_plain):
                note = f"higher optimum (+{fast.last.objective - l_plain:.3g})"
            elif fast.last.objective < target:
                note = f"below plain ({fast.last.objective - l_plain:.3g})"
            print(
                f"{name:<30} {method:<9} {plain.last.iteration:>8} {p_ev if p_ev is not None else '-':>8} "
                f"{(p_s or 0):>6.2f} {l_plain:>14.4f} | {fitp.last.iteration:>6} {fitp.last.objective:>14.4f} | "
                f"{acc.evaluations:>6} {a_ev if a_ev is not None else '-':>7} {wall:>6.2f} "
                f"{fast.last.objective:>14.4f} "
                f"{acc.fallbacks:>4} {acc.saddles:>3} {acc.gap:>8.2g}  {note}",
                flush=True,
            )


if __name__ == "__main__":
    main()
