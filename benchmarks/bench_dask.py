"""Dawid-Skene on a Dask LocalCluster (crowdlab.engines.distributed) vs in memory (crowdlab.fit): seconds per iteration.

    .venv/bin/python benchmarks/bench_dask.py                       # 10^6 and 10^7 labels, 20 iterations
    .venv/bin/python benchmarks/bench_dask.py --sizes 1e6 --partitions 4 --workers 2

The data: ``n`` labels, K = 5, 5 labels per item (N = n / 5 items), 1,000 workers (the generator of
`bench_stream.py`), written as ``--files`` Parquet files in a temporary folder (removed at the end). The Dask
engine reads the Parquet glob, factorises workers and classes, shuffles the rows by item into ``--partitions``
partitions and runs ``--iters`` iterations on a LocalCluster of ``--workers`` single-threaded worker processes.
``prepare s`` is everything before the first EM round (reading, dictionaries, shuffle, encoding; the cluster's
start is not counted), ``s/iter`` the EM time over the rounds (one round = one iteration). The in-memory fit
reads the same rows from Parquet into `Annotations` (pandas + factorise, not timed as a CSV read) and runs
``cl.fit``. Posteriors are compared by item name.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> None:
    import distributed
    import pandas as pd
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq
    from bench_stream import generate

    import crowdlab as cl
    from crowdlab.engines.distributed import NO_DASHBOARD, fit
    from crowdlab.io.data import read_annotations
    from crowdlab.io.limits import override

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1e6,1e7")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--files", type=int, default=8)
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args()
    cluster = distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, **NO_DASHBOARD)
    client = distributed.Client(cluster)
    print(f"LocalCluster: {args.workers} worker processes x 1 thread; load average {os.getloadavg()[0]:.2f}")
    try:
        for size in (int(float(s)) for s in args.sizes.split(",")):
            folder = Path(tempfile.mkdtemp(prefix="crowdlab-bench-dask-"))
            try:
                csv = folder / "labels.csv"
                generate(csv, size)
                table = pacsv.read_csv(csv)
                rows = table.num_rows
                step = -(-rows // args.files)
                for i in range(args.files):
                    pq.write_table(table.slice(i * step, step), folder / f"part{i:03d}.parquet")
                del table
                t = time.perf_counter()
                with override(max_file_mb=1e9, max_rows=10**9, max_items=10**9):
                    data = read_annotations(csv)
                t_read = time.perf_counter() - t
                csv.unlink()
                t = time.perf_counter()
                mem = cl.fit(data, "ds", max_iter=args.iters)
                t_mem = (time.perf_counter() - t) / max(mem.last.iteration, 1)
                t = time.perf_counter()
                run = fit(
                    str(folder / "*.parquet"), "ds", client=client, npartitions=args.partitions, max_iter=args.iters
                )
                frame = run.posterior_frame()
                t_total = time.perf_counter() - t
                tm = run.timings
                per = tm["em_s"] / max(tm["rounds"], 1)
                q_mem = pd.DataFrame(mem.posterior, index=pd.Index(data.item_names, dtype=object))
                q_dask = frame.set_index("item")[[f"p_{c}" for c in data.class_names]].reindex(q_mem.index)
                diff = float(np.abs(q_dask.to_numpy() - q_mem.to_numpy()).max())
                print(
                    f"{size:>11,} labels: in memory {t_mem:.2f} s/iter (read CSV {t_read:.1f} s) | dask "
                    f"{per:.2f} s/iter over {tm['partitions']} partitions, prepare {tm['read_s']:.1f} s, "
                    f"total {t_total:.1f} s ({mem.last.iteration} iterations) | max |dq| {diff:.1e}"
                )
            finally:
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
