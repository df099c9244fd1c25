"""Raykar et al. (2010) "learning from crowds" against two-step baselines, and the cost of one EM iteration.

Run from the repository root::

    .venv/bin/python benchmarks/bench_raykar.py                      # N = 500, 2000, 10000; 5 seeds; d = 10
    .venv/bin/python benchmarks/bench_raykar.py --sizes 2000 --seeds 20 --d 2
    .venv/bin/python benchmarks/bench_raykar.py --skip-table         # timing only

Data: :func:`crowdlab.teaching.simulate.simulate_raykar` -- features x ~ N(0, I_d), truth ~ Bernoulli(sigma(w^T [1, x]))
(slopes of length 2, intercept ~ U(-0.5, 0.5)), 5 annotators of whom 3 are novices (alpha, beta ~ U(0.55, 0.7);
experts U(0.85, 0.95)), every annotator labels every item.

Methods, each giving a linear classifier w on [1, x] (L2 = 1 on the slopes, intercept free):

- ``raykar``: :class:`crowdlab.models.raykar.RaykarModel` by EM from majority vote to tol 1e-10;
- ``mv-lr``: logistic regression on the hard majority-vote labels (no ties with 5 annotators);
- ``ds-lr``: logistic regression on the soft Dawid-Skene posterior (EM to tol 1e-10), i.e. "first aggregate,
  then learn".

Columns: ``auc``: AUC of w^T x against the truth of the training items; ``auc new``: the same on 20,000 fresh
items; ``acc``: accuracy of the classifier's 0/1 predictions against the truth of the training items;
``lab acc``: accuracy of the labels the method infers for the training items (Raykar and DS: posterior arg-max;
MV: the vote); ``|da|``, ``|db|``: largest |alpha_j - alpha_j true|, |beta_j - beta_j true| over the annotators
(MV: the rates of each annotator against the MV labels; DS: Gamma[1, 1], Gamma[0, 0]). Means over seeds
(standard deviation in brackets).

Timing: N = 10^5 items, d = 10, 5 annotators (5 x 10^5 labels): time per EM iteration of the bare model
(``e_step`` + ``m_step``) and of ``crowdlab.engines.run.Run.step`` (which also evaluates the objective and the bound and
keeps snapshots), and the Newton steps per M-step. The script prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crowdlab.engines.run import Run  # noqa: E402
from crowdlab.io.metrics import accuracy, auc  # noqa: E402
from crowdlab.models import DawidSkene, RaykarModel  # noqa: E402
from crowdlab.models.majority import majority_labels  # noqa: E402
from crowdlab.models.raykar import logistic_regression  # noqa: E402
from crowdlab.teaching.simulate import simulate_raykar  # noqa: E402

L2 = 1.0
TOL = 1e-10
N_NEW = 20000


def _rates(data, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(alpha, beta) of every annotator against the 0/1 ``labels`` of the items."""
    y = labels[data.item]
    M = data.n_workers
    ones = np.bincount(data.worker, weights=(data.label == 1) & (y == 1), minlength=M)
    zeros = np.bincount(data.worker, weights=(data.label == 0) & (y == 0), minlength=M)
    n1 = np.bincount(data.worker, weights=y == 1, minlength=M)
    n0 = np.bincount(data.worker, weights=y == 0, minlength=M)
    return ones / np.maximum(n1, 1), zeros / np.maximum(n0, 1)


def one_seed(n_items: int, d: int, seed: int) -> dict[str, dict[str, float]]:
    sim = simulate_raykar(n_items, d=d, n_annotators=5, n_novices=3, seed=seed)
    data, X, pen = sim.annotations, sim.features.X, sim.features.penalised
    X_new, _, y_new = sim.draw_items(N_NEW, seed=10_000 + seed)
    out = {}

    def row(w, labels, alpha, beta):
        return {
            "auc": auc(X @ w, sim.truth),
            "auc new": auc(X_new @ w, y_new),
            "acc": accuracy((X @ w > 0).astype(int), sim.truth),
            "lab acc": accuracy(labels, sim.truth),
            "|da|": float(np.abs(alpha - sim.alpha).max()),
            "|db|": float(np.abs(beta - sim.beta).max()),
        }

    run = Run(data, RaykarModel(sim.features, l2=L2), tol=TOL, max_iter=1000)
    run.run()
    out["raykar"] = row(run.params.w, run.labels(), run.params.alpha, run.params.beta)

    mv = majority_labels(data)
    a_mv, b_mv = _rates(data, mv)
    out["mv-lr"] = row(logistic_regression(X, mv.astype(float), L2, penalised=pen), mv, a_mv, b_mv)

    ds = Run(data, DawidSkene(), tol=TOL, max_iter=1000)
    ds.run()
    g = ds.params.gamma
    w_ds = logistic_regression(X, ds.posterior[:, 1], L2, penalised=pen)
    out["ds-lr"] = row(w_ds, ds.labels(), g[:, 1, 1], g[:, 0, 0])
    return out


def table(sizes: list[int], seeds: int, d: int) -> None:
    cols = ["auc", "auc new", "acc", "lab acc", "|da|", "|db|"]
    print(f"\nd = {d}, 5 annotators (3 novices), {seeds} seeds; mean (sd)")
    print(f"{'N':>6} {'method':<7} " + " ".join(f"{c:>16}" for c in cols) + f" {'wins auc':>9}")
    for n in sizes:
        res = [one_seed(n, d, s) for s in range(seeds)]
        for method in ("raykar", "mv-lr", "ds-lr"):
            cells = []
            for c in cols:
                v = [r[method][c] for r in res]
                sd = statistics.stdev(v) if len(v) > 1 else 0.0
                cells.append(f"{statistics.mean(v):.4f} ({sd:.4f})")
            wins = sum(r["raykar"]["auc"] > r[method]["auc"] for r in res) if method != "raykar" else ""
            wins = f"{wins}/{seeds}" if wins != "" else ""
            print(f"{n:>6} {method:<7} " + " ".join(f"{c:>16}" for c in cells) + f" {wins:>9}")
    print("wins auc: seeds where Raykar's training AUC is higher than this method's.")


def timing(n_items: int, d: int, iters: int) -> None:
    sim = simulate_raykar(n_items, d=d, n_annotators=5, n_novices=3, seed=0)
    data = sim.annotations
    model = RaykarModel(sim.features, l2=L2)
    t0 = time.perf_counter()
    run = Run(data, model, tol=0.0, max_iter=iters)
    t_init = time.perf_counter() - t0
    steps = []
    bare = []
    newton = []
    params = run.params
    for _ in range(iters):
        t = time.perf_counter()
        q = model.e_step(data, params)
        params = model.m_step(data, q)
        bare.append(time.perf_counter() - t)
        newton.append(model.last_newton.steps)
    model.reset_warm_start()
    run = Run(data, model, tol=0.0, max_iter=iters)
    for _ in range(iters):
        t = time.perf_counter()
        run.step()
        steps.append(time.perf_counter() - t)
    print(f"\nTiming: N = {n_items:,} items, d = {d} (+ intercept), 5 annotators, {data.n_obs:,} labels")
    print(f"  Run construction (majority start = one M-step from w = 0): {t_init * 1e3:.1f} ms")
    print(
        f"  bare e_step + m_step: median {statistics.median(bare) * 1e3:.1f} ms/iteration "
        f"(first {bare[0] * 1e3:.1f} ms); Newton steps per M-step: {newton}"
    )
    print(f"  Run.step (E + M + objective and bound + snapshots): median {statistics.median(steps) * 1e3:.1f} ms")
    print(f"  violations: {run.violations or 'none'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="500,2000,10000")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--time-n", type=int, default=100_000)
    ap.add_argument("--time-d", type=int, default=10)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--skip-table", action="store_true")
    ap.add_argument("--skip-timing", action="store_true")
    args = ap.parse_args()
    if not args.skip_table:
        table([int(float(s)) for s in args.sizes.split(",")], args.seeds, args.d)
    if not args.skip_timing:
        timing(args.time_n, args.time_d, args.iters)


if __name__ == "__main__":
    main()
