"""Does the fit check pick a model that gets the truth right? (issue 38, section 2)

For every real set with gold in /work/shared/datasets (class labels; the scores, sequence and gold-less sets are
skipped, and so are the three largest, TREC 2010 (98,453 labels), AdultContent (92,721) and CrowdScale 2013
(216,725), to keep the run within minutes on a 2-core machine; ``--all`` keeps them) and on simulated crowds with
an error the workers share on one class (crowdlab.teaching.simulate.simulate_shared_error: 600 items, 20 workers,
10 labels an item, 22 % class 1, 40 % of the class-0 items hard, where every worker says 1 with probability 0.45),
:func:`crowdlab.analysis.fit_check.fit_check` runs with its defaults (5 folds over the labels stratified by worker,
eps = 0.01, warm starts from the full fit) and ``--replicates`` predictive replicates. Printed per set: every
model's held-out mean log score, the recommended model (rec: the best held-out score, or of the models tied with it
the one whose labels agree most with theirs) and the model with the best held-out score alone (top), and the gold
accuracy of the recommended model beside
always-Dawid-Skene, always-majority-vote (crowdlab's tie rule) and the best model in hindsight (the best gold accuracy
among the models the check compared); then the means. The recommendation under eps = 0.001 and 0.1 (the same
held-out probabilities, smoothed otherwise) shows whether the ranking hinges on the smoothing; Spearman's rank
correlation between the models' held-out scores and their gold accuracies, whether the ranking tracks the truth;
"DS unsmoothed" is Dawid-Skene's raw mean log score (log p floored at 1e-300), the trap of a maximum-likelihood fit.

Run from the repository root::

    .venv/bin/python benchmarks/bench_fit_check.py                    # real sets, then 5 simulated crowds
    .venv/bin/python benchmarks/bench_fit_check.py --only snow2008_rte --crowds 0

The script prints figures; it asserts nothing. Gold is never used by the check, only to score its pick.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import crowdlab as cl  # noqa: E402
from crowdlab.analysis.fit_check import clustered_mean, fit_check, score  # noqa: E402
from crowdlab.io.data import read_annotations  # noqa: E402
from crowdlab.io.metrics import accuracy  # noqa: E402
from crowdlab.teaching.simulate import simulate_shared_error  # noqa: E402

ROOT = Path("/work/shared/datasets")
SKIP = {"snow2008_affect", "snow2008_wordsim", "rodrigues2014_conll_ner", "dawid_skene1979_patients"}
LARGE = {"trec2010_relevance", "ipeirotis_adultcontent", "crowdscale2013_fact_eval"}
SHORT = {
    "ds": "DS",
    "one_coin": "1coin",
    "two_coin": "2coin",
    "glad": "GLAD",
    "mace": "MACE",
    "mace_vb": "MACEvb",
    "ibcc": "IBCC",
    "ebcc": "EBCC",
    "ordinal": "ord",
}


def datasets(only, everything: bool):
    for d in sorted(p for p in ROOT.iterdir() if p.is_dir()):
        if d.name in SKIP or (only and d.name not in only) or (d.name in LARGE and not everything and not only):
            continue
        if (d / "labels.csv").exists() and (d / "gold.csv").exists():
            yield d


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation (average ranks for ties)."""
    from scipy.stats import rankdata

    ra, rb = rankdata(a), rankdata(b)
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def pick(result, data, eps: float) -> str:
    scored = np.isfinite(next(iter(result.probabilities.values())))
    R = data.n_responses
    means = {
        k: clustered_mean(score(p[scored], eps, R), data.item[scored], data.obs_weight[scored])[0]
        for k, p in result.probabilities.items()
    }
    return max(means, key=means.get)


def one(name: str, data, replicates: int, rows: list) -> None:
    t = time.perf_counter()
    res = fit_check(data, replicates=replicates, max_iter=500)
    secs = time.perf_counter() - t
    acc = {k: accuracy(run.labels(), data.gold) for k, run in res.runs.items()}
    mv = accuracy(cl.fit(data, "mv").labels(), data.gold)
    rec = res.recommended
    top = res.table["key"].iloc[0]
    hind = max(acc, key=acc.get)
    alt = {e: pick(res, data, e) for e in (0.001, 0.1)}
    keys = list(res.table["key"])
    rho = spearman(res.table["held-out"].to_numpy(), np.array([acc[k] for k in keys]))
    raw_ds = float(res.table.set_index("key").loc["ds", "raw"]) if "ds" in keys else float("nan")
    scores = "  ".join(f"{SHORT[r['key']]} {r['held-out']:.3f}" for _, r in res.table.iterrows())
    print(
        f"{name:34s} {data.n_obs:7d}  rec {SHORT[rec]:6s} {acc[rec]:.3f}  top {SHORT[top]:6s} {acc[top]:.3f}  "
        f"DS {acc.get('ds', float('nan')):.3f}  "
        f"MV {mv:.3f}  best {SHORT[hind]:6s} {acc[hind]:.3f}  eps.001/.1: {SHORT[alt[0.001]]}/{SHORT[alt[0.1]]}  "
        f"{secs:5.0f} s\n    held-out (nats/label): {scores}\n    Spearman(held-out, gold accuracy) over the "
        f"models {rho:+.2f}; DS unsmoothed {raw_ds:.2f}",
        flush=True,
    )
    rows.append((name, acc[rec], acc.get("ds", np.nan), mv, acc[hind], acc[top], rho))


def summary(title: str, rows: list) -> None:
    if not rows:
        return
    a = np.array([r[1:] for r in rows], dtype=float)
    m = np.nanmean(a, axis=0)
    print(
        f"{title}: mean gold accuracy over {len(rows)} sets: recommended {m[0]:.4f}, always-DS {m[1]:.4f}, "
        f"always-MV {m[2]:.4f}, best in hindsight {m[3]:.4f}, best held-out score alone {m[4]:.4f}; "
        f"mean Spearman(held-out, accuracy) {m[5]:+.2f}; recommended = best on "
        f"{int((np.abs(a[:, 0] - a[:, 3]) < 1e-12).sum())} of {len(rows)}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--crowds", type=int, default=5)
    ap.add_argument("--replicates", type=int, default=50)
    ap.add_argument("--all", action="store_true", help="also the three largest sets")
    args = ap.parse_args()
    rows: list = []
    for d in datasets(args.only, args.all):
        data = read_annotations(d / "labels.csv", gold=d / "gold.csv")
        if data.is_continuous:
            continue
        one(d.name, data, args.replicates, rows)
    summary("real sets", rows)
    sim_rows: list = []
    for seed in range(args.crowds):
        sim = simulate_shared_error(seed=seed)
        one(f"shared error, seed {seed}", sim.annotations, args.replicates, sim_rows)
    summary("simulated shared error", sim_rows)


if __name__ == "__main__":
    main()
