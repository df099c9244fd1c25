"""Accelerated EM (SQUAREM, `crowdlab.engines.accel`) against plain EM, per model and real set.

For each model and set (default: the slow sets of issue 40, every model of its section 1):

- ``fit plain``: ``cl.fit(data, method, accelerate=False)``, the plain default: iterations, objective, seconds;
- ``stepped``: plain EM stepped on ``--stepped`` times whatever its stopping rule says (plain EM sits on saddles
  for thousands of iterations, exactly still to rounding, before it slides off: its stopping rules stop there),
  the highest objective it reached ``l_step``;
- ``accel``: ``cl.fit(data, method)`` (the default now): EM-map evaluations (the confirmation steps and the maximum
  check included), seconds, objective, fallback steps, stops the maximum check rejected (``sad``) and the gap
  estimate;
- ``to 1e-6``: EM-map evaluations and seconds until plain EM stepped on, and the accelerated fit, first came within
  1e-6 relative of ``max(l_step, accelerated objective)``: the same objective for both ("-": never).

``acc - step`` is the accelerated objective minus ``l_step``: within 1e-6 relative is the same fixed point.

    .venv/bin/python benchmarks/bench_accel.py [--datasets a,b] [--models ds,glad] [--stepped 20000]
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


def reach(trace, target: float):
    """(evaluations, seconds) of the first entry of ``trace`` ((evaluations, seconds, objective)) at or above
    ``target``; (None, None) when none."""
    for it, sec, obj in trace:
        if obj >= target:
            return it, sec
    return None, None


def stepped(data, method: str, steps: int):
    """Plain EM stepped ``steps`` times: the trace (evaluations, seconds, objective) after every step."""
    model = make_model(method)
    run = Run(data, model, max_iter=1)  # the default start, as the fits have it
    params, trace = run.snapshots[0].params, []
    t0 = time.perf_counter()
    if run.next_kind == "M":
        params = model.m_step(data, run.snapshots[0].post)
    for t in range(1, steps + 1):
        full = model.e_step(data, params)
        trace.append((t - 1, time.perf_counter() - t0, float(model.log_likelihood(data, params))))
        params = model.m_step(data, full)
    return trace


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=str(find_shared()))
    ap.add_argument("--datasets", default=",".join(SETS))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--stepped", type=int, default=20000)
    args = ap.parse_args()
    shared = Path(args.shared)
    print(
        f"{'set':<30} {'model':<9} | {'fit it':>6} {'fit obj':>13} {'s':>5} | {'l_step':>13} {'to 1e-6':>7} {'s':>6} | "
        f"{'acc ev':>6} {'to 1e-6':>7} {'s':>5} {'acc obj':>13} {'fb':>3} {'sad':>3} {'gap':>7} | acc - step"
    )
    for name in args.datasets.split(","):
        data = cl.read_annotations(shared / name / "labels.csv")
        for method in args.models.split(","):
            if method == "two_coin" and data.n_classes != 2:
                continue
            cl.fit(data, method, max_iter=3)  # warm: compiled kernels, memo
            t0 = time.perf_counter()
            plain = cl.fit(data, method, accelerate=False)
            t_plain = time.perf_counter() - t0
            strace = stepped(data, method, args.stepped)
            l_step = max(o for _, _, o in strace)
            box = []
            t0 = time.perf_counter()
            fast = cl.fit(data, method, progress=lambda it, _n, b=box, t=t0: b.append((it, time.perf_counter() - t)))
            wall = time.perf_counter() - t0
            objs = {s.iteration: s.objective for s in fast.snapshots if s.kind == "M"}
            atrace = [(it, sec, objs.get(it, float("-inf"))) for it, sec in box]
            top = max(l_step, fast.last.objective)
            target = top - REL * abs(top)
            s_ev, s_s = reach(strace, target)
            a_ev, a_s = reach(atrace, target)
            acc = fast.acceleration
            dash = "-"
            print(
                f"{name:<30} {method:<9} | {plain.last.iteration:>6} {plain.last.objective:>13.4f} {t_plain:>5.2f} | "
                f"{l_step:>13.4f} {s_ev if s_ev is not None else dash:>7} {(s_s or 0):>6.2f} | "
                f"{acc.evaluations:>6} {a_ev if a_ev is not None else dash:>7} {wall:>5.2f} "
                f"{fast.last.objective:>13.4f} {acc.fallbacks:>3} {acc.saddles:>3} {acc.gap:>7.1g} | "
                f"{fast.last.objective - l_step:+.3g} ({(fast.last.objective - l_step) / abs(l_step):+.1g})",
                flush=True,
            )


if __name__ == "__main__":
    main()
