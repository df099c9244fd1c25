"""Dawid-Skene at scale, every engine in one run: in memory (1 and all threads), Dask with 1, 2, 4, ... workers,
streaming, crowd-kit; seconds per iteration, preparation, peak memory, and issue 29's targets beside the figures.

    .venv/bin/python benchmarks/bench_dask.py                           # 10^6 and 10^7 labels, workers 1, 2, ..
    .venv/bin/python benchmarks/bench_dask.py --sizes 1e6 --workers 1,2 --iters 10
    .venv/bin/python benchmarks/bench_dask.py --sizes 1e7,1e8 --workers 1,4,16 --engines memory,dask --json r.json

The data (the generator of `bench_stream.py`): ``n`` labels, K = 5, 5 labels per item (N = n / 5 items), 1,000
workers, written as ``--files`` Parquet files partitioned by item (each cut at an item boundary; the Dask engine
reads the glob with ``by_item=True``, no shuffle) and, for the streaming engine, as one Parquet file.

Each engine runs in a fresh process (its peak memory is its own: VmHWM; for Dask, the client's plus every worker
process's peak, an upper bound of the cluster's peak):

- ``arrow``: reading the Parquet files with pyarrow into code arrays (``read_table`` + ``dictionary_encode`` of
  the three columns): the yardstick of the Dask engine's preparation (target: within 2x);
- ``memory``: those arrays as `Annotations`, then ``Run.step`` timed per EM iteration (``--n-jobs`` threads: 1,
  and the cores present; `crowdlab.models.parallel`);
- ``dask W``: `crowdlab.engines.distributed.fit` on a LocalCluster of W single-threaded worker processes:
  ``prepare`` is everything before the first EM round (reading, dictionaries, coding, the check of by_item), then
  seconds per round (one round = one EM iteration, from a round's start to the next one's, the client's M-step
  included; the cluster's start is not counted), the round trip of an actor call to every worker (what a round's
  messages cost: the engine runs each worker's share of a round as one call to an actor there), and the round
  trip of a task that does nothing (the cluster's
  latency, which a busy machine stretches from a few ms to 100+ ms);
- ``stream``: `crowdlab.engines.stream.fit_file` on the one Parquet file: the first pass, then seconds per pass;

``s/iter`` compares like with like: in memory it is the mean ``Run.step`` after the first step (which loads the
compiled kernels and builds the count matrix); for Dask and streaming, the mean round after the first two (the
majority-vote round and the first EM round, which load and compile the same kernels in every worker process:
`crowdlab.engines.blocks.round_times`). The mean over every round, those two included, is printed beside it.
- ``crowd-kit``: ``crowdkit.aggregation.DawidSkene(n_iter)`` on a pandas frame (task, worker, label): its fit
  time over its iterations (installed from requirements-bench.txt; skipped with a note when missing).

Every crowdlab engine runs ``--iters`` iterations (tol = 0) and reports its final objective: they agree to
rounding (``dobj``, relative to in memory).

First, the machine's own yardstick (``machine_scaling``): how much faster W processes get through W copies of the
same numpy work than one process through one, for work that stays in the cache and for work that streams through
memory (as EM over 10^7 labels does). No engine can scale past the second figure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

TARGETS = {
    "dask1": "one Dask worker <= 1.5x in memory (Run.step, one thread)",
    "daskW": "W workers >= 0.6 W x one worker (2 cores: 2 workers >= 1.6x)",
    "prepare": "Dask preparation <= 2x pyarrow's read into arrays",
    "stream": "streaming <= 1.5x in memory per iteration; 10^8 labels under 2 GB",
    "n_jobs": "in memory, n_jobs = 2 on 2 cores >= 1.7x n_jobs = 1 (at 10^7)",
}


def peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM; reset by exec)."""
    try:
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) / 1024 for line in fh if line.startswith("VmHWM"))
    except (OSError, StopIteration):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---------------------------------------------------------------------- one engine in this process
def _arrays(files: list[str]):
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(files, columns=["item", "worker", "label"])
    enc = [pc.dictionary_encode(table[c]).combine_chunks() for c in ("item", "worker", "label")]
    del table
    return [np.asarray(e.indices, dtype=np.int32) for e in enc], [e.dictionary for e in enc]


def one_arrow(folder: Path, args) -> dict:
    import pyarrow.compute  # noqa: F401  (imports are not the read)
    import pyarrow.parquet  # noqa: F401

    files = sorted(str(p) for p in folder.glob("part*.parquet"))
    t = time.perf_counter()
    codes, _ = _arrays(files)
    return {"read_s": time.perf_counter() - t, "rows": int(codes[0].size)}


def one_memory(folder: Path, args) -> dict:
    import pyarrow.compute  # noqa: F401  (imports are not the read)
    import pyarrow.parquet  # noqa: F401

    from crowdlab.engines.run import Run
    from crowdlab.io.annotations import Annotations
    from crowdlab.models import make_model

    files = sorted(str(p) for p in folder.glob("part*.parquet"))
    t = time.perf_counter()
    codes, names = _arrays(files)
    data = Annotations(*codes, *(n.to_pylist() for n in names))
    t_read = time.perf_counter() - t
    run = Run(data, make_model("ds"), "majority", keep_posteriors=2, params_budget=1 << 28, n_jobs=args.n_jobs)
    run.step()  # the first iteration loads the kernels (and builds the count matrix): not timed
    t = time.perf_counter()
    for _ in range(args.iters - 1):
        run.step()
    per = (time.perf_counter() - t) / max(args.iters - 1, 1)
    return {"read_s": t_read, "per_iter_s": per, "objective": run.last.objective, "iterations": run.last.iteration}


def one_dask(folder: Path, args) -> dict:
    import distributed

    from crowdlab.engines.distributed import NO_DASHBOARD, fit

    cluster = distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, memory_limit=0, **NO_DASHBOARD)
    client = distributed.Client(cluster)
    try:
        client.gather(client.submit(_noop, 0, pure=False))
        t = time.perf_counter()
        for i in range(10):  # the cluster's latency alone: a task that does nothing, there and back
            client.gather(client.submit(_noop, i, pure=False))
        rt = (time.perf_counter() - t) / 10
        echoes = [client.submit(_Echo, actor=True, workers=[w]).result() for w in client.scheduler_info()["workers"]]
        t = time.perf_counter()
        for i in range(10):  # what a round's messages cost now: one actor call to every worker, there and back
            [call.result() for call in [e.echo(i) for e in echoes]]
        rt_actor = (time.perf_counter() - t) / 10
        del echoes
        t = time.perf_counter()
        run = fit(
            str(folder / "part*.parquet"),
            "ds",
            client=client,
            by_item=True,
            max_iter=args.iters,
            tol=0,
            accelerate=False,
        )
        total = time.perf_counter() - t
        tm = run.timings
        workers = client.run(peak_rss_mb)
        return {
            "prepare_s": tm["read_s"],
            "per_iter_s": tm.get("steady_s") or tm["em_s"] / max(tm["rounds"], 1),
            "all_rounds_s": tm["em_s"] / max(tm["rounds"], 1),
            "round_s": tm.get("round_s"),
            "rounds": tm["rounds"],
            "partitions": tm["partitions"],
            "total_s": total,
            "objective": run.objective_history()[-1],
            "iterations": run.last.iteration,
            "workers_peak_mb": float(sum(workers.values())),
            "round_trip_s": rt,
            "actor_round_trip_s": rt_actor,
        }
    finally:
        client.close()
        cluster.close()


def _noop(x):
    return x


class _Echo:
    def echo(self, x):
        return x


def one_stream(folder: Path, args) -> dict:
    from crowdlab.engines.stream import fit_file

    run = fit_file(str(folder / "all.parquet"), "ds", max_iter=args.iters, tol=0, workdir=str(folder), accelerate=False)
    tm = run.timings
    return {
        "prepare_s": tm["read_s"],
        "per_iter_s": tm.get("steady_s") or tm["em_s"] / max(tm["rounds"], 1),
        "all_rounds_s": tm["em_s"] / max(tm["rounds"], 1),
        "round_s": tm.get("round_s"),
        "objective": run.objective_history()[-1],
        "iterations": run.last.iteration,
    }


def one_crowdkit(folder: Path, args) -> dict:
    import pandas as pd
    from crowdkit.aggregation import DawidSkene

    frame = pd.read_parquet(folder / "all.parquet").rename(columns={"item": "task"})
    t = time.perf_counter()
    DawidSkene(n_iter=args.iters, tol=0.0).fit(frame)
    return {"per_iter_s": (time.perf_counter() - t) / args.iters}


ENGINES = {"arrow": one_arrow, "memory": one_memory, "dask": one_dask, "stream": one_stream, "crowdkit": one_crowdkit}


def child(argv: list[str]) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("engine")
    p.add_argument("folder")
    p.add_argument("--iters", type=int)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--n-jobs", type=int, default=1)
    a = p.parse_args(argv)
    fig = ENGINES[a.engine](Path(a.folder), a)
    fig["peak_mb"] = peak_rss_mb() + fig.pop("workers_peak_mb", 0.0)
    print("RESULT " + json.dumps(fig))


# ---------------------------------------------------------------------- the driver
def run_child(engine: str, folder: Path, iters: int, timeout: float, **kw) -> dict:
    cmd = [sys.executable, __file__, "--child", engine, str(folder), "--iters", str(iters)]
    for k, v in kw.items():
        cmd += [f"--{k.replace('_', '-')}", str(v)]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"error": f"over {timeout:.0f} s"}
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")]
    if res.returncode or not lines:
        tail = (res.stderr or res.stdout).strip().splitlines()[-3:]
        return {"error": " | ".join(tail)[-300:] or f"exit {res.returncode}"}
    return json.loads(lines[-1][7:])


def default_workers() -> list[int]:
    cores = os.cpu_count() or 1
    out = [1]
    while out[-1] * 2 <= cores:
        out.append(out[-1] * 2)
    if out[-1] != cores:
        out.append(cores)
    return out


def fmt(x, unit="", digits=3) -> str:
    return "-" if x is None else f"{x:.{digits}f}{unit}"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        return child(sys.argv[2:])
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1e6,1e7", help="labels, comma-separated (default 1e6,1e7)")
    p.add_argument("--workers", default=None, help="Dask workers to try (default 1, 2, 4, ... up to the cores)")
    p.add_argument("--iters", type=int, default=10, help="EM iterations per engine (default 10)")
    p.add_argument("--files", type=int, default=16, help="Parquet files partitioned by item (default 16)")
    p.add_argument("--engines", default="memory,dask,stream,crowdkit", help="which engines (default: all)")
    p.add_argument("--dir", default=None, help="where the temporary files go (default: the system's temp folder)")
    p.add_argument("--timeout", type=float, default=1800, help="seconds allowed to one engine's run")
    p.add_argument("--json", default=None, help="also write every figure to this JSON file")
    args = p.parse_args()
    from bench_stream import generate_parquet

    cores = os.cpu_count() or 1
    workers = [int(w) for w in args.workers.split(",")] if args.workers else default_workers()
    engines = set(args.engines.split(","))
    try:
        import crowdkit  # noqa: F401
    except ImportError:
        if "crowdkit" in engines:
            print("crowd-kit is not installed (pip install -r requirements-bench.txt): its row is skipped")
        engines.discard("crowdkit")
    print(f"{cores} cores; load average {os.getloadavg()[0]:.2f}; Dask workers {workers}; {args.iters} iterations")
    print("targets (issue 29): " + "; ".join(TARGETS.values()))
    results = {"cores": cores, "load": os.getloadavg()[0], "iters": args.iters, "sizes": {}}
    procs = max(w for w in workers) if workers else cores
    if procs > 1:
        results["machine_scaling"] = sc = machine_scaling(min(procs, cores))
        print(
            f"this machine, {min(procs, cores)} processes at once against one: x{sc['cached']:.2f} throughput on "
            f"cache-resident numpy work, x{sc['streaming']:.2f} on work that streams through memory (the bound "
            "for EM on large data)"
        )
    for size in (int(float(s)) for s in args.sizes.split(",")):
        folder = Path(tempfile.mkdtemp(prefix="crowdlab-bench-dask-", dir=args.dir))
        out = results["sizes"][str(size)] = {}
        try:
            t = time.perf_counter()
            generate_parquet(folder, size, args.files, one_file="stream" in engines or "crowdkit" in engines)
            print(
                f"\n== {size:,} labels ({size // 5:,} items), {args.files} Parquet files by item, "
                f"generated in {time.perf_counter() - t:.1f} s; load {os.getloadavg()[0]:.2f}"
            )
            out["arrow"] = arrow = run_child("arrow", folder, args.iters, args.timeout)
            print(f"pyarrow read into arrays: {fmt(arrow.get('read_s'), ' s')}")
            print(HEADER)
            jobs = []
            if "memory" in engines:
                jobs += [
                    (f"memory_{nj}", f"in memory, n_jobs={nj}", "memory", {"n_jobs": nj}) for nj in sorted({1, cores})
                ]
            if "dask" in engines:
                jobs += [
                    (f"dask_{w}", f"Dask, {w} worker{'s' if w > 1 else ''}", "dask", {"workers": w}) for w in workers
                ]
            for e, name in (("stream", "streaming"), ("crowdkit", "crowd-kit")):
                if e in engines:
                    jobs.append((e, name, e, {}))
            for key, name, engine, kw in jobs:  # each row printed (and saved) as soon as it is measured
                out[key] = run_child(engine, folder, args.iters, args.timeout, **kw)
                print(row(name, out[key], out, arrow, cores), flush=True)
                save(args.json, results)
            out["load_after"] = os.getloadavg()[0]
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        save(args.json, results)
        print(f"\nwrote {args.json}")


def _cached(_=None) -> float:
    a = np.random.default_rng(0).random(200_000)  # 1.6 MB: stays in the cache
    t = time.perf_counter()
    for _ in range(3000):
        a = np.sqrt(a * a + 1.0)
    return time.perf_counter() - t


def _streaming(_=None) -> float:
    a = np.random.default_rng(0).random(20_000_000)  # 160 MB: every pass streams through memory
    t = time.perf_counter()
    for _ in range(20):
        a = np.sqrt(a * a + 1.0)
    return time.perf_counter() - t


def machine_scaling(procs: int) -> dict:
    """Throughput of ``procs`` processes running one copy each of the same numpy work, relative to one process
    alone (``procs`` = perfect scaling): cache-resident work and memory-streaming work."""
    from multiprocessing import Pool

    out = {}
    with Pool(procs) as pool:
        pool.map(_cached, range(procs))  # warm the processes
        for name, f in (("cached", _cached), ("streaming", _streaming)):
            alone = pool.map(f, [0])[0]
            together = max(pool.map(f, range(procs)))
            out[name] = procs * alone / together
    return out


def save(path: str | None, results: dict) -> None:
    if path:
        Path(path).write_text(json.dumps(results, indent=1))


HEADER = (
    f"{'engine':<24}{'s/iter':>9}{'x memory':>10}{'speed-up':>10}{'effic.':>8}{'prepare s':>11}{'peak MB':>9}"
    f"{'dobj':>10}  target"
)


def row(name: str, r: dict, out: dict, arrow: dict, cores: int) -> str:
    """One engine's line: s/iter, ratio to in memory, speed-up and efficiency (Dask: over one worker; n_jobs: over
    one thread), preparation, peak memory, the objective's relative difference to in memory, the target."""
    if "error" in r:
        return f"{name:<24} failed: {r['error']}"
    mem = out.get("memory_1", {}).get("per_iter_s")
    d1 = out.get("dask_1", {}).get("per_iter_s")
    obj = out.get("memory_1", {}).get("objective")
    per = r.get("per_iter_s")
    ratio = per / mem if per and mem else None
    speed = eff = None
    target = ""
    if name.startswith("Dask") and per:
        w = int(name.split()[1])
        if d1:
            speed, eff = d1 / per, d1 / per / w
        if w == 1:
            target = f"<= 1.5x memory: {'met' if ratio <= 1.5 else 'NOT met'}" if ratio else "<= 1.5x memory: not run"
        elif speed:
            need = 1.6 if (w == 2 and cores == 2) else 0.6 * w
            target = f">= {need:.1f}x one worker: {'met' if speed >= need else 'NOT met'}"
        prep, a = r.get("prepare_s"), arrow.get("read_s")
        if prep and a:
            target += f"; prepare {prep / a:.1f}x arrow (<= 2x: {'met' if prep <= 2 * a else 'NOT met'})"
    elif name.startswith("in memory") and mem and per and "n_jobs=1" not in name:
        nj = int(name.split("=")[1])
        speed = mem / per
        eff = speed / nj
        target = f">= 1.7x on 2 cores: {'met' if speed >= 1.7 else 'NOT met'}" if nj == 2 else ""
    elif name == "streaming" and ratio:
        target = f"<= 1.5x memory: {'met' if ratio <= 1.5 else 'NOT met'}"
    if r.get("round_trip_s") is not None:
        target += f"; no-op task round trip {1000 * r['round_trip_s']:.0f} ms"
        if r.get("actor_round_trip_s") is not None:
            target += f", actor call to every worker {1000 * r['actor_round_trip_s']:.0f} ms (a round's messages)"
    if r.get("all_rounds_s") is not None:
        target += f"; every round, the first two included: {r['all_rounds_s']:.3f} s"
    dobj = abs(r["objective"] - obj) / abs(obj) if obj and r.get("objective") is not None else None
    return (
        f"{name:<24}{fmt(per):>9}{fmt(ratio, 'x', 2):>10}{fmt(speed, 'x', 2):>10}{fmt(eff, '', 2):>8}"
        f"{fmt(r.get('prepare_s', r.get('read_s')), '', 2):>11}{fmt(r.get('peak_mb'), '', 0):>9}"
        f"{(f'{dobj:.0e}' if dobj is not None else '-'):>10}  {target}"
    )


if __name__ == "__main__":
    main()
