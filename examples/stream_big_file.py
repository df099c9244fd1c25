"""Fit Dawid-Skene to a file of 10^7 labels by streaming: the file is never held in memory.

The script first writes a simulated crowd (K = 3 classes, 10 labels an item, 1,000 workers of mixed quality, a
third of them spammers) to a CSV file chunk by chunk, then fits it with the streaming engine
(``crowdlab.engines.stream.fit_file``, the same as ``crowdlab fit FILE --stream``) and scores the result against
the simulated truth. Memory stays at about ``--chunk-rows`` x 100 bytes plus the N x K posteriors.

    python examples/stream_big_file.py                     # 10^7 labels (a ~130 MB CSV; about a minute, from 10^6 x 10)
    python examples/stream_big_file.py --labels 100000     # what CI runs (tests/unit/test_docs.py): 10^5 labels

The CSV goes to a temporary folder (``--workdir`` to choose one) and is deleted at the end.
"""

# %% [markdown]
# ## A large label file, written chunk by chunk

# %%
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from crowdlab.engines.stream import fit_file

K = 3
LABELS_PER_ITEM = 10
SCHEMA = pa.schema([("item", pa.int64()), ("worker", pa.int64()), ("label", pa.int64())])


def write_crowd(path: Path, n_labels: int, n_workers: int = 1000, seed: int = 0, chunk_items: int = 200_000):
    """Write ``n_labels`` rows item,worker,label (items in order, 10 labels each) and return the true classes."""
    rng = np.random.default_rng(seed)
    n_items = n_labels // LABELS_PER_ITEM
    truth = rng.integers(0, K, n_items)
    # each worker: accuracy a (spammers: 1/K), errors spread evenly over the other classes
    accuracy = np.where(rng.random(n_workers) < 1 / 3, 1 / K, rng.uniform(0.55, 0.95, n_workers))
    with pacsv.CSVWriter(path, SCHEMA) as writer:
        for start in range(0, n_items, chunk_items):
            t = truth[start : start + chunk_items]
            items = np.repeat(np.arange(start, start + t.size), LABELS_PER_ITEM)
            workers = rng.integers(0, n_workers, items.size)
            right = rng.random(items.size) < accuracy[workers]
            wrong = (np.repeat(t, LABELS_PER_ITEM) + rng.integers(1, K, items.size)) % K
            labels = np.where(right, np.repeat(t, LABELS_PER_ITEM), wrong)
            writer.write_table(pa.table({"item": items, "worker": workers, "label": labels}, schema=SCHEMA))
    return truth


# %% [markdown]
# ## Streaming EM, scored against the truth


# %%
def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--labels", type=int, default=10_000_000, help="number of labels (default 10^7)")
    ap.add_argument("--chunk-rows", type=int, default=1_000_000, help="rows per chunk read (memory ~ 100 B a row)")
    ap.add_argument("--max-iter", type=int, default=200)
    ap.add_argument("--workdir", help="where the CSV and the engine's temporary files go (default: a temp folder)")
    args = ap.parse_args(argv)
    if args.labels < 10 * LABELS_PER_ITEM:
        ap.error("--labels must be at least 100")

    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        path = Path(tmp, "labels.csv")
        t0 = time.perf_counter()
        truth = write_crowd(path, args.labels)
        print(f"wrote {args.labels:,} labels ({path.stat().st_size / 1e6:,.0f} MB) in {time.perf_counter() - t0:.1f} s")

        t0 = time.perf_counter()
        run = fit_file(path, "ds", chunk_rows=args.chunk_rows, max_iter=args.max_iter, workdir=tmp)
        seconds = time.perf_counter() - t0
    # the ids are numbers written as text: put the labels back in the truth's order
    order = np.array(run.data.item_names, dtype=np.int64)
    classes = np.array(run.data.class_names, dtype=np.int64)
    predicted = np.empty_like(truth)
    predicted[order] = classes[run.labels()]
    accuracy = float((predicted == truth).mean())
    print(f"Dawid-Skene by streaming: {len(run.objective_history())} passes, stop: {run.stop_reason}, {seconds:.1f} s")
    print(f"accuracy against the simulated truth: {accuracy:.4f} on {truth.size:,} items")
    return {"accuracy": accuracy, "stop_reason": run.stop_reason, "seconds": seconds}


if __name__ == "__main__":
    main()
