"""Monte-Carlo checks of the Fisher information (Donmez et al. 2010, Sec. 5) and of the per-worker intervals.

Run from the repository root::

    .venv/bin/python benchmarks/bench_fisher.py            # everything (about a minute)
    .venv/bin/python benchmarks/bench_fisher.py --quick    # fewer repetitions

Tables printed:

1. k = 1, two classes, symmetric noise: over a grid of theta and alpha = p(y = code 0), ``reps`` simulations of
   n outputs each; n Var(theta_hat) of eq. (9) (clipped to [0, 1]) against 1 / J(theta) from
   :func:`crowdlab.analysis.fisher.fisher_symmetric` (E[score^2]) and from eq. (24) as printed; the ratios should be 1
   for
   the former (within Monte-Carlo error, about 3% at 2,000 repetitions).
2. Collaborative estimation (eq. (12), Fig. 6): n Var(theta_hat_1) of the EM estimate for k classifiers against
   [J^-1]_11 from :func:`crowdlab.analysis.fisher.fisher_collaborative` and against the classifier-alone 1 / J.
3. Coverage of the 95% intervals of :func:`crowdlab.analysis.fisher.worker_intervals` for worker accuracy on simulated
   Dawid-Skene crowds (fitted with DS, one-coin and two-coin), linear and logit scale, and the time per fit.
4. Time of :func:`crowdlab.analysis.fisher.observed_information` at a few crowd sizes (full matrix and per-worker
blocks).

Nothing is asserted; the tests in tests/unit/test_fisher.py hold the pass/fail versions.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from crowdlab.analysis import fisher, risk  # noqa: E402
from crowdlab.engines.fit import fit  # noqa: E402
from crowdlab.teaching.simulate import simulate_crowd  # noqa: E402


def table_k1(n: int, reps: int) -> None:
    print(f"\n1. k = 1, eq. (9): n Var(theta_hat) vs 1/J   (n = {n}, {reps} simulations per cell)")
    print(f"{'theta':>6} {'alpha':>6} {'n Var':>9} {'1/J':>9} {'1/J(24)':>9} {'ratio':>7} {'ratio(24)':>9}")
    seed = 0
    worst = 0.0
    for alpha in (0.6, 0.7, 0.8, 0.9):
        for theta in (0.55, 0.65, 0.75, 0.85, 0.95):
            seed += 1
            out, _ = risk.simulate_classifier_outputs(n * reps, [theta], alpha, seed=seed)
            m = (out[:, 0].reshape(reps, n) == 1).sum(axis=1)
            est = np.clip(risk.closed_form_theta(m, n, alpha), 0.0, 1.0)
            nvar = est.var() * n
            inv_j = 1.0 / float(fisher.fisher_symmetric(theta, alpha))
            inv_p = 1.0 / float(fisher.fisher_symmetric_printed(theta, alpha))
            worst = max(worst, abs(nvar / inv_j - 1))
            r, rp = nvar / inv_j, nvar / inv_p
            print(f"{theta:6.2f} {alpha:6.2f} {nvar:9.4f} {inv_j:9.4f} {inv_p:9.4f} {r:7.3f} {rp:9.3f}")
    print(f"   largest |ratio - 1| against E[score^2]: {worst:.3f}")


def table_collaborative(n: int, reps: int) -> None:
    print(f"\n2. collaborative EM (eq. (12)), theta_j = 0.75, p(y = 0) = 0.75, n = {n}, {reps} simulations")
    print(f"{'k':>3} {'n Var(th_1)':>12} {'[J^-1]_11':>10} {'alone 1/J':>10} {'ratio':>7} {'s/fit':>8}")
    alone = 1.0 / float(fisher.fisher_symmetric(0.75, 0.75))
    for k in (1, 3, 5, 10):
        theta = np.full(k, 0.75)
        J = fisher.fisher_collaborative(theta, 0.75)
        pred = float(np.linalg.inv(J)[0, 0])
        t0 = time.perf_counter()
        est = np.array(
            [
                risk.collaborative_mle(
                    risk.simulate_classifier_outputs(n, theta, 0.75, seed=10_000 + r)[0], 0.75
                ).theta[0]
                for r in range(reps)
            ]
        )
        dt = (time.perf_counter() - t0) / reps
        nvar = est.var() * n
        print(f"{k:3d} {nvar:12.4f} {pred:10.4f} {alone:10.4f} {nvar / pred:7.3f} {dt:8.4f}")


def table_coverage(reps: int) -> None:
    print(
        f"\n3. coverage of 95% intervals for worker accuracy ({reps} seeded crowds each; N = 300, M = 5, 5 labels/item)"
    )
    print(f"{'method':>9} {'K':>2} {'linear':>7} {'logit':>7} {'width':>7} {'boundary':>8} {'ms/fit':>7}")
    for method, K in (("ds", 2), ("ds", 3), ("one_coin", 3), ("two_coin", 2), ("mace", 2), ("mace", 3)):
        hits_lin, hits_log, widths, edge, secs = [], [], [], 0, 0.0
        prior = np.r_[0.6, np.full(K - 1, 0.4 / (K - 1))]
        for rep in range(reps):
            sim = simulate_crowd(
                300, 5, K, labels_per_item=5, class_prior=prior, expert_accuracy=(0.7, 0.9), seed=1000 + rep
            )
            run = fit(sim.annotations, method)
            t0 = time.perf_counter()
            if method == "mace":  # its own per-worker information, on the logit scale only
                lin = log = fisher.mace_worker_intervals(run.model, run.data, run.params)
            else:
                lin = fisher.worker_intervals(run)
            secs += time.perf_counter() - t0
            if method != "mace":
                log = fisher.worker_intervals(run, scale="logit")
            truth = np.diagonal(sim.gamma, axis1=1, axis2=2) @ sim.pi
            hits_lin.append((lin.lower.to_numpy() <= truth) & (truth <= lin.upper.to_numpy()))
            hits_log.append((log.lower.to_numpy() <= truth) & (truth <= log.upper.to_numpy()))
            widths.append((lin.upper - lin.lower).mean())
            edge += int((lin.note != "").sum())
        print(
            f"{method:>9} {K:2d} {np.mean(hits_lin):7.3f} {np.mean(hits_log):7.3f} {np.mean(widths):7.3f} "
            f"{edge:8d} {1e3 * secs / reps:7.1f}"
        )
    print("   (one-coin, two-coin and MACE are fitted to Dawid-Skene data, so they are misspecified there; MACE's")
    print("   interval is on the logit scale only, so both columns show it)")


def table_timing() -> None:
    print("\n4. observed_information time")
    print(f"{'N':>7} {'M':>5} {'K':>2} {'free':>6} {'full s':>8} {'worker s':>9}")
    for N, M, K in ((1000, 10, 3), (10_000, 50, 3), (20_000, 200, 5)):
        sim = simulate_crowd(N, M, K, labels_per_item=5, seed=1)
        run = fit(sim.annotations, "ds")
        times = {}
        free = 0
        for block in ("full", "worker"):
            if block == "full" and M * K * (K - 1) > fisher.FULL_LIMIT:
                times[block] = float("nan")
                continue
            t0 = time.perf_counter()
            info = fisher.observed_information(run.model, run.data, run.params, block=block)
            times[block] = time.perf_counter() - t0
            free = info.phi.size
        print(f"{N:7d} {M:5d} {K:2d} {free:6d} {times['full']:8.3f} {times['worker']:9.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = ap.parse_args()
    reps = 500 if args.quick else 2000
    table_k1(2000, reps)
    table_collaborative(500, 100 if args.quick else 400)
    table_coverage(50 if args.quick else 200)
    table_timing()


if __name__ == "__main__":
    main()
