"""Streaming batch EM (crowdlab.engines.stream) on a long CSV far larger than a classroom file: time and peak memory.

    .venv/bin/python benchmarks/bench_stream.py                         # 10^7 labels, streaming vs in memory
    .venv/bin/python benchmarks/bench_stream.py --labels 1e8 --no-memory --iters 1   # 10^8: read + one EM pass
    .venv/bin/python benchmarks/bench_stream.py --labels 1e6 --chunk-rows 200000
    .venv/bin/python benchmarks/bench_stream.py --file /tmp/labels.csv --no-memory --iters 1   # a file made before
    .venv/bin/python benchmarks/bench_stream.py --sizes 1e6,1e7   # every engine (bench_dask.py's table, targets)
    .venv/bin/python benchmarks/bench_stream.py --accel [--crowds million,weak] [--models ds,mace,ibcc]

The file: ``--labels`` rows (default 10^7) of item,worker,label with string ids ("it0001234", "w0042"), K = 5
classes ("c0" .. "c4"), 5 labels per item (so N = labels / 5 items: 2 x 10^6 at 10^7, 2 x 10^7 at 10^8), 1,000
workers with accuracies ~ U(0.55, 0.95) and errors spread evenly, rows grouped by item in a random item order. It
is generated into a temporary folder (``--dir``) with pyarrow and removed at the end.

Each engine runs in a fresh subprocess; its peak RSS is VmHWM from /proc/self/status (the interpreter and
imports, ~120 MB, included; ``ru_maxrss`` would not do: it survives fork + exec, so a child reports at least the
parent's peak, the generator's). Streaming: ``read s`` is the first pass (chunks through the reading path, the
dictionaries, the bucket files), ``s/pass`` the seconds per EM pass over the bucket files (one pass = one EM
iteration). In memory: ``read s`` is `read_annotations`, ``s/iter`` the seconds per iteration of ``cl.fit``.
With both, the posteriors are compared (max |difference|; the engines agree to rounding). These runs are plain EM
at ``--iters`` iterations (``accelerate=False`` on both engines): the seconds per pass.

``--accel`` (issue 40, section 1): the streaming engine's plain EM against its accelerated EM (SQUAREM, the
default), each run to its own stop in a fresh process, on 10^6-label files of simulated crowds (`CROWDS`:
"million", the crowd of tests/unit/test_engine_models.py's test_million_labels_both_engines; "weak", as many
labels from novices of accuracy 0.55-0.7, where plain EM creeps), ``chunk_rows`` 200,000 (5 buckets): passes over
the bucket files (the majority-vote pass and the reported posterior's included), EM-map evaluations, EM seconds,
why it stopped, and the accelerated objective against plain EM's (relative).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def tables(
    n_labels: int, K: int = 5, per_item: int = 5, n_workers: int = 1000, seed: int = 0, part: tuple[int, int] = (0, 1)
):
    """The generated rows as Arrow tables (item, worker, label) of up to 10^6 items each, every item's
    ``per_item`` rows next to each other (vectorised). ``part=(i, P)``: only the i-th of P contiguous ranges of
    the item order, drawn from its own seed (the workers' accuracies are the same in every part), so P processes
    can write P files by item at once."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed)
    n_items = n_labels // per_item
    acc = rng.uniform(0.55, 0.95, n_workers)
    i, P = part
    if P > 1:
        lo_i, hi_i = n_items * i // P, n_items * (i + 1) // P
        rng = np.random.default_rng([seed, i])
        order = lo_i + rng.permutation(hi_i - lo_i)
    else:
        order = rng.permutation(n_items)
    block = 1_000_000
    for lo in range(0, order.size, block):
        ids = order[lo : lo + block]
        n = ids.size
        truth = rng.integers(0, K, n)
        # per_item distinct workers per item: a random start and stride over the worker ring
        start = rng.integers(0, n_workers, n)
        w = (start[:, None] + np.arange(per_item)[None, :] * 7) % n_workers
        right = rng.random((n, per_item)) < acc[w]
        wrong = (truth[:, None] + rng.integers(1, K, (n, per_item))) % K
        lab = np.where(right, truth[:, None], wrong)
        item = pc.binary_join_element_wise(
            "it", pc.utf8_lpad(pa.array(np.repeat(ids, per_item).astype(str)), 8, "0"), ""
        )
        worker = pc.binary_join_element_wise("w", pc.utf8_lpad(pa.array(w.ravel().astype(str)), 4, "0"), "")
        label = pc.binary_join_element_wise("c", pa.array(lab.ravel().astype(str)), "")
        yield pa.table({"item": item, "worker": worker, "label": label})


def generate(path: Path, n_labels: int, K: int = 5, per_item: int = 5, n_workers: int = 1000, seed: int = 0) -> None:
    """Write the long CSV in blocks of 10^6 items (pyarrow's CSV writer)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    with pacsv.CSVWriter(
        path, pa.schema([("item", pa.string()), ("worker", pa.string()), ("label", pa.string())])
    ) as out:
        for t in tables(n_labels, K, per_item, n_workers, seed):
            out.write_table(t)


def _write_part(folder: str, n_labels: int, i: int, files: int) -> str:
    import pyarrow.parquet as pq

    path = Path(folder) / f"part{i:03d}.parquet"
    writer = None
    for t in tables(n_labels, part=(i, files)):
        writer = writer or pq.ParquetWriter(path, t.schema)
        writer.write_table(t)
    if writer is not None:
        writer.close()
    return str(path)


def generate_parquet(folder: Path, n_labels: int, files: int, one_file: bool = False) -> list[Path]:
    """``files`` Parquet files partitioned by item (file i: the i-th range of items, in a random order), written
    by as many processes as there are cores; ``one_file``: also all of them as one file (all.parquet)."""
    from concurrent.futures import ProcessPoolExecutor

    import pyarrow.parquet as pq

    with ProcessPoolExecutor(max_workers=min(files, os.cpu_count() or 1)) as pool:
        out = [
            Path(p)
            for p in pool.map(_write_part, [str(folder)] * files, [n_labels] * files, range(files), [files] * files)
        ]
    out = [p for p in out if p.exists()]
    if one_file:
        writer = None
        for p in out:
            for batch in pq.ParquetFile(p).iter_batches(batch_size=1 << 20):
                writer = writer or pq.ParquetWriter(folder / "all.parquet", batch.schema)
                writer.write_batch(batch)
        if writer is not None:
            writer.close()
    return out


def peak_rss_mb() -> float:
    """This process's peak resident memory: VmHWM on Linux (reset by exec; ru_maxrss is not: a child started by
    fork + exec keeps its parent's peak, here the generator's), else ru_maxrss."""
    try:
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) / 1024 for line in fh if line.startswith("VmHWM"))
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker(engine: str, path: str, out: str, chunk_rows: int, iters: int) -> None:
    """Run one engine in this (fresh) process and print its figures as JSON (``engine`` "accel:METHOD:0|1": the
    streaming engine, plain (0) or accelerated (1), to its own stop)."""
    sys.path.insert(0, str(ROOT))
    t0 = time.perf_counter()
    if engine.startswith("accel:"):
        from crowdlab.engines.stream import fit_file

        _, method, fast = engine.split(":")
        run = fit_file(
            path, method, chunk_rows=chunk_rows, max_iter=iters, workdir=os.path.dirname(out), accelerate=fast == "1"
        )
        acc = run.acceleration
        fig = {"read_s": run.timings["read_s"], "em_s": run.timings["em_s"], "passes": run.timings["rounds"]}
        fig.update(stop=run.stop_reason, evaluations=acc.evaluations if acc else int(run.last.iteration))
        fig.update(check=acc.check.get("evaluations", 0) if acc else 0, fallbacks=acc.fallbacks if acc else 0)
    elif engine == "stream":
        from crowdlab.engines.stream import fit_file

        run = fit_file(
            path, "ds", chunk_rows=chunk_rows, max_iter=iters, workdir=os.path.dirname(out), accelerate=False
        )
        fig = {"read_s": run.timings["read_s"], "em_s": run.timings["em_s"], "passes": run.timings["rounds"]}
        fig["buckets"] = run.timings["buckets"]
    else:
        import crowdlab as cl
        from crowdlab.io.data import read_annotations
        from crowdlab.io.limits import override

        with override(max_file_mb=1e9, max_rows=10**9, max_items=10**9):
            data = read_annotations(path)
        t1 = time.perf_counter()
        run = cl.fit(data, "ds", max_iter=iters, accelerate=False)
        fig = {"read_s": t1 - t0, "em_s": time.perf_counter() - t1, "passes": run.last.iteration}
    fig.update(
        total_s=time.perf_counter() - t0,
        iterations=int(run.last.iteration),
        objective=float(run.objective_history()[-1]),
        maxrss_mb=peak_rss_mb(),
        items=len(run.data.item_names),
    )
    np.save(out, run.posterior)
    print(json.dumps(fig))


def run_engine(engine: str, path: Path, folder: Path, chunk_rows: int, iters: int) -> tuple[dict, np.ndarray]:
    out = folder / f"{engine}.npy"
    cmd = [sys.executable, __file__, "--worker", engine, str(path), str(out), str(chunk_rows), str(iters)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode:
        raise SystemExit(f"{engine} failed:\n{res.stderr[-3000:]}")
    fig = json.loads(res.stdout.strip().splitlines()[-1])
    q = np.load(out, mmap_mode="r")
    return fig, q


CROWDS = {
    # tests/unit/test_engine_models.py, test_million_labels_both_engines: 10^6 labels, 3 classes, good workers
    "million": dict(n_items=100_000, n_workers=400, n_classes=3, labels_per_item=10, seed=3),
    # as many labels from a crowd of novices (accuracy 0.55-0.7), two classes: plain EM creeps
    "weak": dict(
        n_items=100_000,
        n_workers=400,
        n_classes=2,
        labels_per_item=10,
        mix={"novice": 1.0},
        novice_accuracy=(0.55, 0.7),
        seed=3,
    ),
}


def accel_table(crowds: list[str], models: list[str], chunk_rows: int, max_iter: int, folder: Path) -> None:
    """``--accel``: the streaming engine's plain and accelerated EM on each crowd's file (module docstring)."""
    sys.path.insert(0, str(ROOT))
    from crowdlab.io.data import to_long_dataframe
    from crowdlab.teaching.simulate import simulate_crowd

    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (2 cores, shared)")
    print(
        "| crowd | model | plain: passes, EM s, stop | accelerated: passes (evaluations, check), EM s, stop "
        "| passes | EM s | objective (acc - plain, rel) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for crowd in crowds:
        path = folder / f"{crowd}.csv"
        to_long_dataframe(simulate_crowd(**CROWDS[crowd]).annotations)[["item", "worker", "label"]].to_csv(
            path, index=False
        )
        for method in models:
            fp, _ = run_engine(f"accel:{method}:0", path, folder, chunk_rows, max_iter)
            fa, _ = run_engine(f"accel:{method}:1", path, folder, chunk_rows, max_iter)
            rel = (fa["objective"] - fp["objective"]) / abs(fp["objective"])
            print(
                f"| {crowd} | {method} | {fp['passes']:,}, {fp['em_s']:.1f}, {fp['stop']} "
                f"| {fa['passes']:,} ({fa['evaluations']}, {fa['check']}), {fa['em_s']:.1f}, {fa['stop']} "
                f"| {fp['passes'] / fa['passes']:.2f}x | {fp['em_s'] / fa['em_s']:.2f}x | {rel:+.1e} |",
                flush=True,
            )
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main() -> None:
    if "--sizes" in sys.argv:  # every engine at these sizes: bench_dask.py's table (its options pass through)
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import bench_dask

        return bench_dask.main()
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _, _, engine, path, out, chunk_rows, iters = sys.argv
        return worker(engine, path, out, int(chunk_rows), int(iters))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--labels", type=float, default=1e7, help="rows of the generated CSV (default 1e7)")
    p.add_argument("--chunk-rows", type=int, default=1_000_000)
    p.add_argument("--iters", type=int, default=20, help="EM iterations (max_iter; default 20)")
    p.add_argument("--no-memory", action="store_true", help="skip the in-memory fit (e.g. at 10^8)")
    p.add_argument("--dir", default=None, help="where the temporary CSV goes (default: the system's temp folder)")
    p.add_argument("--file", default=None, help="an existing CSV made by an earlier run's generator (not removed)")
    p.add_argument("--accel", action="store_true", help="plain against accelerated EM, streaming, to their stops")
    p.add_argument("--crowds", default="million,weak", help="with --accel: simulated crowds (CROWDS)")
    p.add_argument("--models", default="ds,mace,ibcc", help="with --accel: the methods")
    args = p.parse_args()
    n = int(args.labels)
    folder = Path(tempfile.mkdtemp(prefix="crowdlab-bench-stream-", dir=args.dir))
    if args.accel:
        try:
            rows = 200_000 if args.chunk_rows == 1_000_000 else args.chunk_rows
            return accel_table(args.crowds.split(","), args.models.split(","), rows, 10_000, folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    try:
        if args.file:
            path = Path(args.file)
            print(f"reading {path} ({path.stat().st_size / 1e9:.2f} GB)")
        else:
            path = folder / "labels.csv"
            t = time.perf_counter()
            generate(path, n)
            print(f"generated {n:,} labels ({path.stat().st_size / 1e9:.2f} GB) in {time.perf_counter() - t:.1f} s")
        print(f"load average: {os.getloadavg()[0]:.2f} (2 cores shared with other work)")
        fs, qs = run_engine("stream", path, folder, args.chunk_rows, args.iters)
        per = fs["em_s"] / max(fs["passes"], 1)
        print(
            f"stream  : read {fs['read_s']:.1f} s ({fs['buckets']} buckets), {fs['passes']} EM passes in "
            f"{fs['em_s']:.1f} s = {per:.2f} s/pass; peak RSS {fs['maxrss_mb']:.0f} MB; objective {fs['objective']:.6f}"
        )
        if not args.no_memory:
            fm, qm = run_engine("memory", path, folder, args.chunk_rows, args.iters)
            per_m = fm["em_s"] / max(fm["passes"], 1)
            print(
                f"memory  : read {fm['read_s']:.1f} s, {fm['passes']} iterations in {fm['em_s']:.1f} s = "
                f"{per_m:.2f} s/iter; peak RSS {fm['maxrss_mb']:.0f} MB; objective {fm['objective']:.6f}"
            )
            diff = float(np.abs(np.asarray(qs) - np.asarray(qm)).max())
            rel = abs(fs["objective"] - fm["objective"]) / abs(fm["objective"])
            print(f"agreement: max |q_stream - q_memory| = {diff:.2e}; relative objective difference {rel:.1e}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
