"""Speed of one EM iteration on dependent data (issue targets, this 2-core machine):

- HMM-crowd: 10^6 positions, K = 9, 47 workers, 5 labels per position: one iteration under 2 s;
- MRF-crowd: a 10^5-node stochastic block model with average degree 5 (10 workers): one iteration under 1 s.

Run: .venv/bin/python benchmarks/bench_dependent.py [--repeat 5]
Prints the median and the spread of the wall time of one full iteration (E-step + M-step, including the
objective the engine records), after a warm-up iteration. Not a test: it prints what it measured.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from crowdlab.engines.run import Run  # noqa: E402
from crowdlab.models import HMMCrowd, NetworkCrowd  # noqa: E402
from crowdlab.teaching.simulate import mix_from_counts, simulate_sbm, simulate_sequences  # noqa: E402


def time_iterations(run: Run, repeat: int) -> np.ndarray:
    run.step()  # warm-up (caches: sparse transposes, colourings)
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        run.step()
        out.append(time.perf_counter() - t)
    return np.array(out)


def hmm_case(repeat: int) -> None:
    t = time.perf_counter()
    sim = simulate_sequences(25_000, 40, 9, 47, self_transition=0.8, labels_per_item=5, seed=0)
    data = sim.annotations
    build = time.perf_counter() - t
    run = Run(data, HMMCrowd())
    ts = time_iterations(run, repeat)
    print(
        f"HMM-crowd  positions={data.n_items:,} labels={data.n_obs:,} K=9 M=47 (simulate {build:.1f} s): "
        f"one iteration median {np.median(ts):.2f} s (min {ts.min():.2f}, max {ts.max():.2f}); target < 2 s"
    )


def mrf_case(repeat: int, crowd: str) -> None:
    kw = {}
    if crowd == "paper":  # Traganitis & Giannakis's harder crowd: 6 weak workers, 4 answering at random
        kw = {"mix": mix_from_counts({"expert": 6, "spammer": 4}), "expert_accuracy": (0.35, 0.6)}
    net = simulate_sbm(100_000, 4, 10, avg_degree=5.0, seed=0, **kw)
    data = net.annotations
    for e_step in ("icm", "mean_field"):
        run = Run(data, NetworkCrowd(e_step=e_step))
        ts = time_iterations(run, repeat)
        sweeps = run.current.params.state.sweeps
        print(
            f"MRF-crowd  nodes={data.n_items:,} edges={data.graph.nnz // 2:,} crowd={crowd} E-step={e_step}: "
            "one iteration "
            f"median {np.median(ts):.2f} s (min {ts.min():.2f}, max {ts.max():.2f}), {sweeps} sweeps; target < 1 s"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    hmm_case(args.repeat)
    mrf_case(args.repeat, "default")
    mrf_case(args.repeat, "paper")


if __name__ == "__main__":
    main()
