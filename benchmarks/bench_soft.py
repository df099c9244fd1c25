"""Soft votes on the LLM-judge panel (Mohammadi 2026, sample "judges"): accuracy against gold of every class model
with the judges' confidences read as soft votes, and with the labels alone (``soft=False``).

    .venv/bin/python benchmarks/bench_soft.py
"""

from __future__ import annotations

import numpy as np

import crowdlab as cl
from crowdlab.io.data import read_annotations
from crowdlab.io.samples import sample_paths
from crowdlab.models.majority import majority_posterior

METHODS = ("mv", "ds", "one_coin", "two_coin", "glad", "mace", "mace_vb", "ibcc")


def main() -> None:
    labels, gold = sample_paths("judges")
    rows = []
    for soft in (False, True):
        data = read_annotations(labels, gold=gold, soft=soft)
        g = data.gold
        row = {
            "votes": "soft" if soft else "hard",
            "mv (ties split)": majority_posterior(data)[np.arange(len(g)), g].mean(),
        }
        for m in METHODS:
            run = cl.fit(data, m)
            q = run.posterior
            row[m] = float((run.labels() == g).mean())
            row[m + " log loss"] = float(-np.mean(np.log(np.clip(q[np.arange(len(g)), g], 1e-15, 1))))
        rows.append(row)
    keys = ["mv (ties split)", *METHODS]
    print("| votes | " + " | ".join(keys) + " |")
    print("|---|" + "---:|" * len(keys))
    for r in rows:
        print(f"| {r['votes']} | " + " | ".join(f"{r[k]:.4f}" for k in keys) + " |")
    print()
    print("| votes | " + " | ".join(f"{m} log loss" for m in METHODS[1:]) + " |")
    print("|---|" + "---:|" * (len(METHODS) - 1))
    for r in rows:
        print(f"| {r['votes']} | " + " | ".join(f"{r[m + ' log loss']:.3f}" for m in METHODS[1:]) + " |")


if __name__ == "__main__":
    main()
