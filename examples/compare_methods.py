"""Aggregate a pandas DataFrame and compare methods against gold.

The labels are an ordinary DataFrame (item, worker, label), as from your own CSV or database; the gold is a Series
item -> label that covers some or all items. Every method is one call; the table is each method's accuracy on the
gold items, its disagreement with majority vote, and its time.

    python examples/compare_methods.py                  # bluebirds (Welinder et al. 2010), 108 items, 39 workers
    python examples/compare_methods.py --sample rte     # RTE (Snow et al. 2008), 800 items, 164 workers

Runs in CI on bluebirds (tests/unit/test_docs.py).
"""

# %% [markdown]
# ## The data: a DataFrame and a gold Series

# %%
from __future__ import annotations

import argparse
import time

import pandas as pd

import crowdlab as cl
from crowdlab.io.samples import sample_paths

METHODS = ("mv", "wawa", "zbs", "kos", "mmsr", "ds", "one_coin", "two_coin", "glad", "mace", "ibcc", "ebcc")


def load(sample: str) -> tuple[pd.DataFrame, pd.Series]:
    """The labels as a DataFrame and the gold as a Series item -> label, read with pandas from a bundled sample's
    CSV files: any DataFrame with item (or task), worker and label columns works the same."""
    labels_csv, gold_csv = sample_paths(sample)
    if gold_csv is None:
        raise SystemExit(f"{sample} has no gold; choose one that has (crowdlab samples)")
    df = pd.read_csv(labels_csv)
    gold = pd.read_csv(gold_csv, index_col="item")["label"]
    return df, gold


# %% [markdown]
# ## One call per method, and the comparison


# %%
def compare(df: pd.DataFrame, gold: pd.Series, methods=METHODS) -> pd.DataFrame:
    mv = cl.aggregate(df, "mv")
    rows = []
    for method in methods:
        t0 = time.perf_counter()
        try:
            labels = cl.aggregate(df, method)
        except (cl.DataError, cl.ModelError) as exc:  # e.g. KOS on more than two classes
            print(f"{method}: skipped ({exc})")
            continue
        on_gold = labels.reindex(gold.index)
        rows.append(
            {
                "method": method,
                "accuracy": float((on_gold == gold).mean()),
                "differs from mv": int((labels != mv).sum()),
                "seconds": round(time.perf_counter() - t0, 3),
            }
        )
    return pd.DataFrame(rows).set_index("method").sort_values("accuracy", ascending=False)


def main(argv: list[str] | None = None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", default="bluebirds", help="a bundled sample with gold (crowdlab samples)")
    args = ap.parse_args(argv)
    df, gold = load(args.sample)
    print(
        f"{len(df):,} labels, {df['item'].nunique():,} items, {df['worker'].nunique():,} workers; gold on {len(gold)}"
    )

    table = compare(df, gold)
    print(table.to_string())

    # the probabilities and the workers' skills from the best model
    best = table.index[0]
    probas = cl.proba(df, best)
    print(f"\n{best}: the 5 least certain items\n{probas.max(axis=1).nsmallest(5).to_string()}")
    ds = cl.DawidSkene().fit(df)
    print(f"\nDawid-Skene's 5 least reliable workers\n{ds.skills_.nsmallest(5).to_string()}")
    return table


if __name__ == "__main__":
    main()
