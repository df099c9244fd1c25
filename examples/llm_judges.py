"""A panel of LLM judges: soft votes from their confidences, and the dependence check.

Five judges (a rule checker, an outcome judge, two step-level judges and a self-consistency judge) say whether each
of 400 agent trajectories is faulty, each with a confidence (Mohammadi 2026, ``sample_data/
mohammadi2026_trajectory_judges``, gold by construction). The source calls the two qwen2.5:14b step and
self-consistency judges strongly correlated. The script

1. reads the verdicts twice: as soft votes (a verdict with confidence c counts c for its class and 1 - c for the
   other) and as hard votes (the verdict only);
2. fits majority vote, Dawid-Skene, MACE and EBCC (which models judges who err together) to both and scores them
   against the gold;
3. runs the dependence check (``crowdlab.dependence``): for every pair of judges, do they agree more than the
   fitted model says independent judges would? and how many independent judges is the panel worth?

    python examples/llm_judges.py          # a few seconds; CI runs it as is (tests/unit/test_docs.py)

What it shows (measured): soft votes lift majority vote from 0.8975 to 0.9075 and leave the EM models at about
0.89. On hard votes the two qwen2.5 judges agree on 393 of 400 trajectories, the most of any pair, and Dawid-Skene's
fit expects 393.0 from two judges that accurate and that alike in their errors: with five judges a fitted confusion
matrix can absorb a pair's copying, so the check cannot tell it from two good judges. What it does flag, on hard
votes, is the outcome judge and the rule checker (267 agreements where 238 were expected; Holm p = 0.017); on soft
votes no pair is flagged.
"""

# %% [markdown]
# ## Soft votes and hard votes

# %%
from __future__ import annotations

import numpy as np
import pandas as pd

import crowdlab as cl
from crowdlab.io.metrics import accuracy
from crowdlab.io.samples import sample_root

FOLDER = sample_root() / "mohammadi2026_trajectory_judges"
METHODS = ("mv", "ds", "mace", "ebcc")


def read(soft: bool) -> cl.Annotations:
    return cl.read_annotations(FOLDER / "labels.csv", gold=FOLDER / "gold.csv", soft=soft)


def scores(data: cl.Annotations) -> dict[str, float]:
    out = {}
    for method in METHODS:
        run = cl.fit(data, method, seed=0) if method == "ebcc" else cl.fit(data, method)
        mask = data.gold_mask
        out[method] = accuracy(run.labels()[mask], data.gold[mask])
    return out


# %% [markdown]
# ## The dependence check


# %%
def main() -> dict:
    soft, hard = read(soft=True), read(soft=False)
    print(f"{soft.n_items} trajectories, {soft.n_workers} judges; soft votes: {soft.summary()['soft votes']}")
    table = pd.DataFrame({"soft votes": scores(soft), "hard votes": scores(hard)})
    print("\naccuracy against the gold\n" + table.round(4).to_string())

    reports = {}
    for name, data in (("soft", soft), ("hard", hard)):
        report = cl.dependence(cl.fit(data, "ds"))
        reports[name] = report
        print(f"\nDawid-Skene on {name} votes: {report.summary()}")
        print(report.frame(top=3).round(3).to_string(index=False))

    # raw agreement between the judges: high agreement alone is no evidence of dependence, when both are accurate
    frame = cl.to_long_dataframe(hard).pivot_table(index="item", columns="worker", values="label", aggfunc="first")
    names = list(frame.columns)
    same = np.array([[float((frame[a] == frame[b]).mean()) if a != b else np.nan for b in names] for a in names])
    agree = pd.DataFrame(same, index=names, columns=names)
    print("\nhow often two judges give the same verdict\n" + agree.round(2).to_string())
    return {"accuracy": table, "reports": reports}


if __name__ == "__main__":
    main()
