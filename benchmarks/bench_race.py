"""To the optimum against the peers' early stop (issue 40, section 4): crowdlab's default fit beside crowd-kit's.

For every real set with gold under ``shared/datasets`` (class labels; sequences, scores and sets without gold
skipped) and Dawid-Skene, one-coin, GLAD and MACE, one run, side by side:

- **crowdlab**: the DataFrame estimator at its defaults (``cl.DawidSkene().fit(df)``, ...: accelerated EM to its
  fixed point), wall time from the DataFrame to the fitted estimator, and its objective (``est.run_``);
- **crowd-kit** (1.4.2) at its defaults (``DawidSkene(n_iter=100)``, ``OneCoinDawidSkene(n_iter=100)``, ``GLAD()``,
  ``MACE()``; MACE fed codes in order of first appearance, the "aligned" call of ``bench_peers.py``, which
  sidesteps its code-order mix-up), wall time of ``fit_predict`` on the same DataFrame;
- the **objective of crowd-kit's answer** under the same model: crowdlab's log-likelihood at the parameters one
  M-step makes from crowd-kit's final posterior ``probas_``. For Dawid-Skene and one-coin that *is* crowd-kit's own
  final parameter set (its loop ends with that M-step); for GLAD and MACE it is the best parameter set for
  crowd-kit's posterior, so if anything above crowd-kit's own: the gap it shows is a lower bound of how far
  crowd-kit stopped from the fixed point.
- **crowdlab to crowd-kit's objective**: the EM-map evaluations crowdlab's fit took to first reach the objective of
  crowd-kit's answer, and that share of its wall time (where crowd-kit stops early, how long crowdlab takes to be
  as good);
- **plain**: crowdlab's plain EM (``accelerate=False``) for its iteration count and time (the same fixed point,
  the iterations it takes; ``bench_accel.py`` has the per-model tables).

``gap`` columns: the fixed point's objective (crowdlab's) minus each fit's, in nats (>= 0 up to rounding where
crowdlab is at the optimum). Not a test: it prints figures and a Markdown table.

    /work/benchvenv/bin/python benchmarks/bench_race.py [--sets a,b] [--models ds,glad] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

import crowdlab as cl

ROOT = Path(__file__).resolve().parents[1]
SKIP = {"snow2008_affect", "snow2008_wordsim", "rodrigues2014_conll_ner", "dawid_skene1979_patients"}
MODELS = ("ds", "one_coin", "glad", "mace")
OURS = {"ds": "DawidSkene", "one_coin": "OneCoin", "glad": "GLAD", "mace": "MACE"}
NAMES = {"ds": "DS", "one_coin": "one-coin", "glad": "GLAD", "mace": "MACE"}


def find_shared() -> Path:
    for base in ROOT.parents:
        if (base / "shared" / "datasets").is_dir():
            return base / "shared" / "datasets"
    return ROOT.parent / "shared" / "datasets"


def datasets(only: list[str] | None) -> list[Path]:
    root = find_shared()
    out = []
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        if d.name in SKIP or (only and d.name not in only):
            continue
        if (d / "labels.csv").exists() and (d / "gold.csv").exists():
            out.append(d)
    return out


def frame_of(path: Path) -> pd.DataFrame:
    """The set's labels as crowd-kit's DataFrame (task, worker, label), read once through crowdlab's reader (so
    both libraries see the same rows: integer codes of items, workers and classes)."""
    data = cl.read_annotations(path / "labels.csv")
    return pd.DataFrame({"task": data.item, "worker": data.worker, "label": data.label})


def peer(df: pd.DataFrame, method: str):
    """crowd-kit's fit at its defaults: (seconds, probas DataFrame with crowdlab's class codes as columns, iters)."""
    from crowdkit import aggregation as ck

    data = df
    names = None
    if method == "mace":  # codes in order of first appearance (bench_peers.py's "aligned" call)
        label, names = pd.factorize(df["label"])
        data = pd.DataFrame({"task": df["task"], "worker": pd.factorize(df["worker"])[0], "label": label})
    make = {
        "ds": lambda: ck.DawidSkene(n_iter=100),
        "one_coin": lambda: ck.OneCoinDawidSkene(n_iter=100),
        "glad": ck.GLAD,
        "mace": ck.MACE,
    }[method]
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agg = make()
        agg.fit_predict(data)
    seconds = time.perf_counter() - t
    probas = agg.probas_
    if names is not None:
        probas = probas.set_axis(np.asarray(names)[probas.columns.to_numpy(dtype=np.int64)], axis=1)
    iters = len(getattr(agg, "loss_history_", []) or [])
    return seconds, probas, iters


def objective_at(run, probas: pd.DataFrame, items: pd.Index, classes: pd.Index) -> float:
    """crowdlab's objective at the M-step from a posterior given as a DataFrame (items x classes)."""
    q = probas.reindex(index=items, columns=classes).fillna(0.0).to_numpy(dtype=float)
    q = q / np.maximum(q.sum(axis=1, keepdims=True), 1e-300)
    model, data = run.model, run.data
    params = model.m_step(data, model.as_posterior(data, q))
    return float(model.objective(data, None, params))


def reach(run, target: float) -> int | None:
    """The EM-map evaluations crowdlab's run took to first reach objective ``target`` (None: never)."""
    for snap in run.snapshots:
        if snap.objective is not None and snap.objective >= target:
            return int(snap.iteration)
    return None


def ours(df: pd.DataFrame, method: str, accelerate: bool = True):
    est = getattr(cl, OURS[method])(accelerate=accelerate)
    t = time.perf_counter()
    est.fit(df)
    return time.perf_counter() - t, est


def best_of(f, repeat: int):
    runs = [f() for _ in range(repeat)]
    return min(r[0] for r in runs), runs[-1]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", default="")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--repeat", type=int, default=1, help="best of this many wall times (both libraries)")
    ap.add_argument("--no-plain", action="store_true", help="skip the plain EM column (slow where EM crawls)")
    args = ap.parse_args(argv)
    only = [s for s in args.sets.split(",") if s] or None
    models = [m for m in args.models.split(",") if m]
    print(f"load average {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores", flush=True)
    rows = []
    for path in datasets(only):
        df = frame_of(path)
        for m in models:
            s_cl, (_, est) = best_of(lambda m=m, df=df: ours(df, m), args.repeat)
            plain_fit = (lambda: (np.nan, None)) if args.no_plain else (lambda m=m, df=df: ours(df, m, False))
            s_plain, (_, plain) = best_of(plain_fit, 1)
            s_ck, (_, probas, ck_it) = best_of(lambda m=m, df=df: peer(df, m), args.repeat)
            run = est.run_
            items, classes = est.probas_.index, est.probas_.columns
            obj_cl = float(run.last.objective)
            obj_ck = objective_at(run, probas, items, classes)
            obj_plain = float(plain.run_.last.objective) if plain is not None else -np.inf
            top = max(obj_cl, obj_plain)
            ev = run.acceleration.evaluations if run.acceleration else run.last.iteration
            at = reach(run, obj_ck)  # crowdlab's time to crowd-kit's answer: its share of the evaluations
            s_reach = s_cl * at / ev if at is not None else np.nan
            row = dict(
                set=path.name,
                model=m,
                n=len(df),
                s_cl=s_cl,
                ev=ev,
                at=at,
                s_reach=s_reach,
                gap_cl=top - obj_cl,
                s_ck=s_ck,
                it_ck=ck_it,
                gap_ck=top - obj_ck,
                s_plain=s_plain,
                it_plain=plain.run_.last.iteration if plain is not None else 0,
                gap_plain=top - obj_plain,
                stop=run.stop_reason,
            )
            rows.append(row)
            print(
                f"{path.name:32s} {NAMES[m]:8s} crowdlab {s_cl:7.2f} s ({row['ev']:>5} ev, gap {row['gap_cl']:.1e},"
                f" {row['stop']}; crowd-kit's objective after {at} ev, ~{s_reach:.2f} s)"
                f"  crowd-kit {s_ck:7.2f} s ({ck_it} it, gap {row['gap_ck']:.3g})  plain"
                f" {s_plain:7.2f} s ({row['it_plain']} it, gap {row['gap_plain']:.1e})",
                flush=True,
            )
    print(f"load average {os.getloadavg()[0]:.2f} (1 min)")
    print()
    print(markdown(rows))


def markdown(rows: list[dict]) -> str:
    out = [
        "| set | labels | model | crowdlab s (EM maps) | crowd-kit s (its iterations) | crowdlab / crowd-kit time |"
        " crowdlab gap | crowd-kit gap (nats) | crowdlab to crowd-kit's objective: EM maps (~s) |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        out.append(
            f"| {r['set']} | {r['n']:,} | {NAMES[r['model']]} | {r['s_cl']:.2f} ({r['ev']:,}) |"
            f" {r['s_ck']:.2f} ({r['it_ck'] or '-'}) | {r['s_cl'] / r['s_ck']:.2f} | {r['gap_cl']:.1e} |"
            f" {r['gap_ck']:.3g} |"
            f" {r['at'] if r['at'] is not None else '-'} ({r['s_reach']:.2f}) |"
        )
    for m in dict.fromkeys(r["model"] for r in rows):
        sel = [r for r in rows if r["model"] == m]
        t_cl, t_ck = sum(r["s_cl"] for r in sel), sum(r["s_ck"] for r in sel)
        slower = [r["set"] for r in sel if r["s_cl"] > r["s_ck"]]
        out.append(
            f"\n{NAMES[m]}: crowdlab {t_cl:.2f} s in total, crowd-kit {t_ck:.2f} s ({t_ck / t_cl:.1f}x);"
            f" crowdlab slower on: {', '.join(slower) or 'none'}"
        )
    t_cl, t_ck = sum(r["s_cl"] for r in rows), sum(r["s_ck"] for r in rows)
    out.append(f"\nAll: crowdlab {t_cl:.2f} s, crowd-kit {t_ck:.2f} s ({t_ck / t_cl:.1f}x)")
    return "\n".join(out)


if __name__ == "__main__":
    main()
