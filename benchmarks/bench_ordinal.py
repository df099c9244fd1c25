"""Ordinal ratings on Snow et al. (2008)'s word similarity (30 word pairs of Miller & Charles, 10 Turk workers,
ratings 0-10; gold: the Miller-Charles means on 0-4): Pearson and Spearman correlation with gold of the consensus
rating of each aggregation. The ratings are read with ``kind="ordinal"``; a model's consensus is its posterior
mean rating sum_k q_ik r_k.

    .venv/bin/python benchmarks/bench_ordinal.py [path/to/snow2008_wordsim]
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import pearsonr, spearmanr

from crowdlab.engines.run import Run
from crowdlab.io.data import read_annotations
from crowdlab.models import DawidSkene, OneCoin
from crowdlab.models.majority import majority_labels
from crowdlab.models.ordinal import OrdinalDS, posterior_mean_rating

DEFAULT = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "snow2008_wordsim"


def main(folder: Path) -> None:
    data = read_annotations(folder / "labels.csv", kind="ordinal")
    gold = pd.read_csv(folder / "gold.csv").set_index("item")["label"].astype(float)
    g = gold.loc[list(data.item_names)].to_numpy()
    r = np.array([float(c) for c in data.class_names])
    raw = pd.DataFrame({"item": data.item, "r": r[data.label]}).groupby("item")["r"]
    rows = {
        "mean of the ratings": raw.mean().to_numpy(),
        "median of the ratings": raw.median().to_numpy(),
        "majority vote (a class)": r[majority_labels(data)],
    }
    for name, model in (
        ("Dawid-Skene (classes), posterior mean", DawidSkene(prior=1.0)),
        ("one-coin (classes), posterior mean", OneCoin(prior=1.0)),
        ("ordinal (discretised Gaussian), posterior mean", OrdinalDS()),
        ("ordinal, prior 1 on pi, posterior mean", OrdinalDS(prior=1.0)),
    ):
        run = Run(data, model, "majority")
        run.run()
        rows[name] = posterior_mean_rating(run.posterior, data.class_names)
        if isinstance(model, OrdinalDS) and model.prior == 0:
            rows["ordinal, arg-max level"] = r[run.labels()]
            bias, spread = run.params.extra["bias"], run.params.extra["spread"]
    print("| consensus | Pearson r | Spearman rho |")
    print("|---|---:|---:|")
    for name, v in rows.items():
        print(f"| {name} | {pearsonr(v, g)[0]:.3f} | {spearmanr(v, g)[0]:.3f} |")
    print()
    print("ordinal model, per worker: bias " + ", ".join(f"{b:+.2f}" for b in bias))
    print("                           spread " + ", ".join(f"{s:.2f}" for s in spread))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT)
