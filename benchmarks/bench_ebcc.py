"""EBCC (Li, Rubinstein & Cohn 2019) against Dawid-Skene and majority vote, on every real set with gold and on
simulated cliques; with the dependence check (crowdlab/analysis/dependence.py) after Dawid-Skene.

Run from the repository root::

    .venv/bin/python benchmarks/bench_ebcc.py                 # real sets, then simulated cliques
    .venv/bin/python benchmarks/bench_ebcc.py --only zhou2012_dogs --crowds 20

Real sets: every folder of /work/shared/datasets with labels.csv and gold.csv read as classes (the sets
bench_peers.py skips are skipped here too: scores, sequences, a set without gold). Each method runs to
convergence (at most 500 iterations) with crowdlab.fit from the majority-vote start (EBCC: the paper's defaults,
10 subtypes, a_v = 4, b_v = 1, subtype mass 0.1; its subtype split seeded with 0). Printed: accuracy on the
items with gold, seconds, and the dependence check after Dawid-Skene (pairs tested / flagged, effective
independent annotators).

Simulated cliques (crowdlab.teaching.simulate.simulate_correlated): 500 items, 6 independent workers and one clique of 4
(every worker labels every item), K = 3, accuracies U(0.65, 0.85), rho in 0, 0.3, 0.6, 0.9, ``--crowds`` seeded
crowds each: mean accuracy of each method, and how often the check flags a clique pair (Holm, 0.05) and a pair
outside the clique, on 3,000-item crowds of 8 + 4 workers (the design of the slow test).

The script prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import crowdlab as cl  # noqa: E402
from crowdlab.analysis.dependence import dependence_check  # noqa: E402
from crowdlab.io.data import read_annotations  # noqa: E402
from crowdlab.io.metrics import accuracy  # noqa: E402
from crowdlab.models.majority import majority_labels  # noqa: E402
from crowdlab.teaching.simulate import simulate_correlated  # noqa: E402

ROOT = Path("/work/shared/datasets")
SKIP = {"snow2008_affect", "snow2008_wordsim", "rodrigues2014_conll_ner", "dawid_skene1979_patients"}
METHODS = ("mv", "ds", "ebcc")
MAX_ITER = 500  # EBCC's tail on the 216,725 labels of CrowdScale 2013 runs 0.1 s an iteration


def datasets(only):
    for d in sorted(p for p in ROOT.iterdir() if p.is_dir()):
        if d.name in SKIP or (only and d.name not in only):
            continue
        if (d / "labels.csv").exists() and (d / "gold.csv").exists():
            yield d


def fit(data, method):
    t = time.perf_counter()
    if method == "mv":
        return majority_labels(data), None, time.perf_counter() - t
    run = cl.fit(data, method, max_iter=MAX_ITER)
    return run.labels(), run, time.perf_counter() - t


def real(only) -> None:
    print(
        f"{'dataset':34s} {'items':>6s} {'labels':>7s} {'K':>3s}   MV     DS     EBCC   EBCC-DS  time DS/EBCC  "
        "pairs tested/flagged  eff. annotators (eigen / Kish / both) of M"
    )
    for d in datasets(only):
        data = read_annotations(d / "labels.csv", gold=d / "gold.csv")
        if data.is_continuous:
            continue
        acc, secs, runs = {}, {}, {}
        for m in METHODS:
            labels, runs[m], secs[m] = fit(data, m)
            acc[m] = accuracy(labels, data.gold)
        rep = dependence_check(data, runs["ds"].params, runs["ds"].posterior)
        e = rep.effective or {"eigen": float("nan"), "kish": float("nan"), "weighted": float("nan")}
        print(
            f"{d.name:34s} {data.n_items:6d} {data.n_obs:7d} {data.n_classes:3d}  {acc['mv']:.3f}  {acc['ds']:.3f}  "
            f"{acc['ebcc']:.3f}  {acc['ebcc'] - acc['ds']:+.3f}   {secs['ds']:5.1f}/{secs['ebcc']:5.1f}  "
            f"{rep.n_tested:8d}/{rep.n_flagged:<8d}  {e['eigen']:.1f} / {e['kish']:.1f} / {e['weighted']:.1f} of "
            f"{data.n_workers}",
            flush=True,
        )


def simulated(crowds: int) -> None:
    print(f"\nsimulated cliques ({crowds} crowds each): mean accuracy; copying check on 3,000-item crowds")
    for rho in (0.0, 0.3, 0.6, 0.9):
        acc = {m: [] for m in METHODS}
        hit = false = 0
        for seed in range(crowds):
            sim = simulate_correlated(500, 6, (4,), 3, rho=rho, seed=seed)
            for m in METHODS:
                acc[m].append(accuracy(fit(sim.annotations, m)[0], sim.truth))
            big = simulate_correlated(3000, 8, (4,), 3, rho=rho, seed=seed)
            run = cl.fit(big.annotations, "ds")
            rep = dependence_check(big.annotations, run.params, run.posterior)
            cp = big.copying_pairs()[rep.a, rep.b]
            hit += bool(rep.flagged[cp].any())
            false += bool(rep.flagged[~cp].any())
        mean = {m: float(np.mean(v)) for m, v in acc.items()}
        print(
            f"rho={rho:.1f}  MV {mean['mv']:.4f}  DS {mean['ds']:.4f}  EBCC {mean['ebcc']:.4f}  "
            f"(EBCC-DS {mean['ebcc'] - mean['ds']:+.4f})   clique flagged in {hit}/{crowds}, "
            f"a pair outside it in {false}/{crowds}",
            flush=True,
        )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="dataset folder names")
    ap.add_argument("--crowds", type=int, default=100, help="seeded crowds per rho (default 100)")
    ap.add_argument("--skip-real", action="store_true")
    ap.add_argument("--skip-simulated", action="store_true")
    args = ap.parse_args(argv)
    if not args.skip_real:
        real(args.only)
    if not args.skip_simulated:
        simulated(args.crowds)


if __name__ == "__main__":
    main()
