"""Traganitis & Giannakis's synthetic experiments (Sec. 6.1.1 and 6.2.1) and the CoNLL NER comparison, reproduced.

Run: .venv/bin/python benchmarks/experiments_traganitis_giannakis.py [--seeds 3] [--skip-ner]

Sequences: K = 4, M = 10 workers (6 better than random with accuracy ~ U(0.35, 0.6), 4 answering at random),
sequences of 40, random transition matrix, every worker labels every position. For N = 200 ... 10,000 it reports
the macro F-score (eq. 37) of majority vote, i.i.d. Dawid-Skene, HMM-crowd EM (from majority vote) and the
"oracle" Viterbi decoder that knows the true Gamma and T, and the errors ||T - T_hat||_1 and eq. (38).
Networks: the same crowd on a 1,000-node stochastic block model at average degree 0.5 and 5; macro F of MV, DS,
MRF-EM with ICM (Alg. 3) and with mean field. NER: token accuracy and macro F on the bundled CoNLL val split.
Averages over ``--seeds`` seeds. Prints tables; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import crowdlab as cl  # noqa: E402
from crowdlab.engines.run import Run  # noqa: E402
from crowdlab.io.metrics import accuracy, confusion_error, macro_f  # noqa: E402
from crowdlab.models import NetworkCrowd  # noqa: E402
from crowdlab.models.hmm import HMMParams, viterbi  # noqa: E402
from crowdlab.teaching.simulate import mix_from_counts, simulate_sbm, simulate_sequences  # noqa: E402

CROWD = {"mix": mix_from_counts({"expert": 6, "spammer": 4}), "expert_accuracy": (0.35, 0.6)}


def sequences(seeds: int) -> None:
    print("Sequences (K=4, M=10, length 40): macro F / transition error / confusion error (eq. 38)")
    print(f"{'N':>7} {'MV':>7} {'DS':>7} {'HMM':>7} {'oracle':>7} {'|T-T^|1':>8} {'eq38 DS':>8} {'eq38 HMM':>9}")
    for n in (200, 1000, 2000, 5000, 10000):
        rows = []
        for seed in range(seeds):
            sim = simulate_sequences(n // 40, 40, 4, 10, self_transition=None, seed=seed, **CROWD)
            d = sim.annotations
            ds, hmm = cl.fit(d, "ds"), cl.fit(d, "hmm")
            oracle = viterbi(d, HMMParams(pi=sim.pi0, gamma=sim.gamma, T=sim.T))
            rows.append(
                [
                    macro_f(cl.fit(d, "mv").labels(), sim.truth, 4),
                    macro_f(ds.labels(), sim.truth, 4),
                    macro_f(hmm.labels(), sim.truth, 4),
                    macro_f(oracle, sim.truth, 4),
                    np.abs(hmm.params.T - sim.T).sum(axis=0).max(),
                    confusion_error(sim.gamma, ds.params.gamma),
                    confusion_error(sim.gamma, hmm.params.gamma),
                ]
            )
        m = np.mean(rows, axis=0)
        print(f"{n:>7} " + " ".join(f"{v:7.3f}" for v in m[:4]) + f" {m[4]:8.3f} {m[5]:8.3f} {m[6]:9.3f}")


def networks(seeds: int) -> None:
    print("\nNetworks (SBM, 1,000 nodes, K=4, M=10): macro F")
    print(f"{'degree':>7} {'MV':>7} {'DS':>7} {'ICM-EM':>7} {'MF-EM':>7} {'gain MF-DS':>10}")
    for degree in (0.5, 5.0):
        rows = []
        for seed in range(seeds):
            net = simulate_sbm(1000, 4, 10, avg_degree=degree, seed=seed, **CROWD)
            d = net.annotations
            out = [macro_f(cl.fit(d, "mv").labels(), net.truth, 4), macro_f(cl.fit(d, "ds").labels(), net.truth, 4)]
            for e_step in ("icm", "mean_field"):
                run = Run(d, NetworkCrowd(e_step=e_step), max_iter=100)
                run.run()
                out.append(macro_f(run.labels(), net.truth, 4))
            rows.append(out)
        m = np.mean(rows, axis=0)
        print(f"{degree:>7} " + " ".join(f"{v:7.3f}" for v in m) + f" {m[3] - m[1]:10.3f}")


def ner() -> None:
    from crowdlab.io.samples import load_sample

    d = load_sample("ner")
    print(f"\nCoNLL NER val split: {d.n_items:,} tokens, {d.n_sequences:,} sentences, {d.n_obs:,} labels")
    print(f"{'method':>22} {'token acc':>10} {'macro F':>8} {'iters':>6} {'seconds':>8}")
    for key in ("mv", "ds", "hmm"):
        t = time.perf_counter()
        run = cl.fit(d, key, max_iter=200)
        secs = time.perf_counter() - t
        lab = run.labels()
        print(
            f"{run.model.info.title[:22]:>22} {accuracy(lab, d.gold):10.4f} {macro_f(lab, d.gold, 9):8.4f} "
            f"{run.last.iteration:>6} {secs:8.1f}"
        )
        if key == "hmm":
            v = run.model.decode(d, run.params)
            print(f"{'HMM (Viterbi)':>22} {accuracy(v, d.gold):10.4f} {macro_f(v, d.gold, 9):8.4f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--skip-ner", action="store_true")
    args = p.parse_args()
    sequences(args.seeds)
    networks(args.seeds)
    if not args.skip_ner:
        ner()


if __name__ == "__main__":
    main()
