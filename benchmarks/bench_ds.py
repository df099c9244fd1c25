"""Benchmark crowdlab's Dawid-Skene EM at 10^4 .. 10^7 observations (and, optionally, crowd-kit's).

Run from the repository root::

    .venv/bin/python benchmarks/bench_ds.py                        # 1e4..1e7 observations, K = 2 and 5
    .venv/bin/python benchmarks/bench_ds.py --sizes 1e4,1e5 --classes 5 --iters 20
    .venv/bin/python benchmarks/bench_ds.py --engine run           # time crowdlab.engines.run.Run.step() instead
    .venv/bin/python benchmarks/bench_ds.py --crowdkit             # also crowd-kit (needs .venv-bench)

For every (size, K) a fresh subprocess simulates a crowd (vectorised numpy: n_items = n_obs / 10, 10 distinct
workers per item, per-worker confusion matrices with diagonal ~ U(0.6, 0.95) and errors spread evenly), builds
:class:`crowdlab.io.data.Annotations` straight from the arrays, and times

- the sparse count matrix: first access of ``label_counts`` (X; the ``X^T s`` column is 0 since the M-step
  multiplies by the transposed view instead of caching X^T);
- the initialisation crowdlab uses by default: q0 = vote fractions, params0 = m_step(q0);
- ``--iters`` EM iterations: ``--engine model`` (default) times the bare ``DawidSkene.e_step`` +
  ``DawidSkene.m_step``; ``--engine run`` times :meth:`crowdlab.engines.run.Run.step`, which also evaluates the
  objective and the bound after every half-step and keeps every snapshot's parameters and the last two
  posteriors (as ``crowdlab.fit`` does; the app keeps every posterior for scrubbing);
- peak memory: tracemalloc's peak over the crowdlab phase (Python and numpy allocations; started after the data
  were simulated) and ``ru_maxrss`` of the subprocess (whole process, simulation included).

With ``--crowdkit`` a second fresh subprocess (run by the interpreter of ``--crowdkit-python``, by default
``.venv-bench/bin/python`` with the repository on PYTHONPATH) simulates the same data, fits
``crowdkit.aggregation.DawidSkene(n_iter=iters, tol=0)`` on a DataFrame (task, worker, label), then runs
crowdlab's bare EM for the same number of iterations from crowdlab's default start (which is crowd-kit's start:
majority-vote fractions, then an M-step) and reports the largest absolute difference between the posteriors,
rows aligned by task name.

The script prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
LABELS_PER_ITEM = 10
ACCURACY = (0.6, 0.95)
TARGET_S_PER_ITER = 0.1  # at 1e6 observations, K = 5
TARGET_RSS_MB = 2048.0  # at 1e7 observations
MB = 1024.0 * 1024.0


# ------------------------------------------------------------------ data
def n_workers_for(n_obs: int) -> int:
    """Crowd size for ``n_obs`` observations: 100 workers at 1e4, growing to 500 from 1e6 on."""
    return int(np.clip(round(n_obs / 2000), 100, 500))


def simulate(n_obs: int, K: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Simulate a Dawid-Skene crowd with ``n_obs`` observations, vectorised (no loop over items or labels).

    ``n_items = n_obs // 10``; each item gets 10 distinct workers drawn uniformly (rows with a repeated worker
    are redrawn); worker m answers the true class k correctly with probability ``diag[m, k] ~ U(0.6, 0.95)``
    and otherwise one of the other K - 1 classes uniformly. Returns int32 arrays item, worker, label, truth.
    """
    rng = np.random.default_rng(seed)
    N = max(n_obs // LABELS_PER_ITEM, 1)
    M = n_workers_for(n_obs)
    L = LABELS_PER_ITEM
    truth = rng.integers(0, K, size=N, dtype=np.int32)
    diag = rng.uniform(*ACCURACY, size=(M, K))
    workers = rng.integers(0, M, size=(N, L), dtype=np.int32)
    while True:
        s = np.sort(workers, axis=1)
        bad = np.flatnonzero((s[:, 1:] == s[:, :-1]).any(axis=1))
        if bad.size == 0:
            break
        workers[bad] = rng.integers(0, M, size=(bad.size, L), dtype=np.int32)
    del s
    item = np.repeat(np.arange(N, dtype=np.int32), L)
    worker = workers.ravel()
    true_k = truth[item]
    correct = rng.random(item.size, dtype=np.float32) < diag[worker, true_k]
    offset = rng.integers(1, K, size=item.size, dtype=np.int32)  # 1 .. K-1: a wrong class, uniformly
    label = np.where(correct, true_k, (true_k + offset) % K).astype(np.int32)
    return {"item": item, "worker": worker, "label": label, "truth": truth, "n_workers": M}


def to_annotations(sim: dict[str, np.ndarray], K: int):
    """Annotations straight from the simulated arrays (names "0".."N-1", "w0".., "0".."K-1")."""
    from crowdlab.io.annotations import Annotations

    N, M = sim["truth"].size, sim["n_workers"]
    return Annotations(
        item=sim["item"],
        worker=sim["worker"],
        label=sim["label"],
        item_names=tuple(map(str, range(N))),
        worker_names=tuple(f"w{m}" for m in range(M)),
        class_names=tuple(map(str, range(K))),
        gold=sim["truth"],
        name=f"bench {sim['item'].size} obs",
    )


# ------------------------------------------------------------------ measurements
def rss_peak_mb() -> float:
    """Peak resident set size of this process so far (Linux reports kilobytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def rss_now_mb() -> float:
    """Current resident set size (from /proc; 0 where unavailable)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / MB


def import_crowdlab() -> None:
    """Import what the benchmark uses (kept out of the timings; importing crowdlab pulls in pandas)."""
    import crowdlab.engines.run  # noqa: F401
    import crowdlab.io.data  # noqa: F401
    import crowdlab.models.dawid_skene  # noqa: F401


def timed(fn, *args):
    """(result, seconds) of one call."""
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def crowdlab_em(data, iters: int, engine: str) -> tuple[np.ndarray, list[float], float]:
    """Initialise as crowdlab does by default and time ``iters`` EM iterations.

    Returns the final posterior, the seconds of each iteration and the seconds of the initialisation.
    """
    from crowdlab.models.dawid_skene import DawidSkene
    from crowdlab.models.majority import vote_fractions

    model = DawidSkene()
    times = []
    if engine == "run":
        from crowdlab.engines.run import Run

        run, t_init = timed(lambda: Run(data, model, tol=0.0, max_iter=iters, keep_posteriors=2))
        for _ in range(iters):
            t0 = time.perf_counter()
            run.step()
            times.append(time.perf_counter() - t0)
        return run.posterior, times, t_init
    t0 = time.perf_counter()
    q = vote_fractions(data)
    params = model.m_step(data, q)
    t_init = time.perf_counter() - t0
    for _ in range(iters):
        t0 = time.perf_counter()
        q = model.e_step(data, params)
        params = model.m_step(data, q)
        times.append(time.perf_counter() - t0)
    return q, times, t_init


def bench_crowdlab(n_obs: int, K: int, iters: int, engine: str, seed: int) -> dict:
    """One size in this (fresh) process: simulation, count matrices, EM; timings and memory."""
    _, t_import = timed(import_crowdlab)
    rss_import = rss_now_mb()
    sim, t_sim = timed(simulate, n_obs, K, seed)
    rss_data = rss_now_mb()
    tracemalloc.start()
    data, t_ann = timed(to_annotations, sim, K)
    del sim
    _, t_x = timed(lambda: data.label_counts)
    t_xt = 0.0  # the EM no longer uses a cached X^T (expected_counts multiplies by label_counts.T)
    q, times, t_init = crowdlab_em(data, iters, engine)
    _, tm_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    acc = float((np.argmax(q, axis=1) == data.gold).mean())
    return {
        "n_obs": data.n_obs,
        "K": K,
        "n_items": data.n_items,
        "n_workers": data.n_workers,
        "engine": engine,
        "t_import": t_import,
        "rss_import_mb": rss_import,
        "t_sim": t_sim,
        "t_annotations": t_ann,
        "t_X": t_x,
        "t_XT": t_xt,
        "t_init": t_init,
        "iters": iters,
        "t_iter_median": statistics.median(times),
        "t_iter_min": min(times),
        "t_iter_total": sum(times),
        "tracemalloc_peak_mb": tm_peak / MB,
        "rss_after_sim_mb": rss_data,
        "rss_peak_mb": rss_peak_mb(),
        "accuracy": acc,
        "load_avg": os.getloadavg()[0],
    }


def crowdkit_like_em(data, iters: int, eps: float = 1e-10) -> np.ndarray:
    """crowdlab's E-step with crowd-kit's M-step conventions, to explain the remaining posterior difference.

    crowd-kit (``crowdkit/aggregation/classification/dawid_skene.py``) clips every expected count of an observed
    (worker, label) pair at ``_EPS = 1e-10`` before normalising, and clips the class prior at 1e-10 (without
    renormalising) before taking its log; and its ``_evidence_lower_bound`` clips the posterior it is given at
    1e-10 *in place*, so the returned ``probas_`` has no entry below 1e-10. crowdlab floors nothing but log(0).
    Same start: vote fractions. Returns the final posterior with that output clip applied too.
    """
    from crowdlab.models.dawid_skene import DawidSkene, expected_counts
    from crowdlab.models.majority import vote_fractions
    from crowdlab.models.params import ClassParams

    M, K = data.n_workers, data.n_classes
    seen = np.bincount(data.worker.astype(np.int64) * K + data.label, minlength=M * K).reshape(M, K, 1) > 0

    def m_step(q: np.ndarray) -> ClassParams:
        counts = np.where(seen, np.maximum(expected_counts(data, q), eps), 0.0)
        return ClassParams(pi=np.maximum(q.mean(axis=0), eps), gamma=counts / counts.sum(axis=1, keepdims=True))

    model = DawidSkene()
    q = vote_fractions(data)
    params = m_step(q)
    for _ in range(iters):
        q = model.e_step(data, params)
        params = m_step(q)
    return np.maximum(q, eps)


def crowdkit_init_seconds(df) -> float:
    """Seconds of the start crowd-kit's ``DawidSkene.fit`` makes before iterating (majority vote + M-step)."""
    from crowdkit.aggregation import DawidSkene as CKDawidSkene
    from crowdkit.aggregation import MajorityVote

    t0 = time.perf_counter()
    probas = MajorityVote().fit_predict_proba(df)
    probas.mean()
    CKDawidSkene._m_step(df, probas)
    return time.perf_counter() - t0


def bench_crowdkit(n_obs: int, K: int, iters: int, seed: int, tol: float) -> dict:
    """crowd-kit's DawidSkene on the same data, then crowdlab for as many iterations; compare posteriors."""
    import pandas as pd
    from crowdkit.aggregation import DawidSkene as CKDawidSkene

    sim = simulate(n_obs, K, seed)
    df = pd.DataFrame({"task": sim["item"], "worker": sim["worker"], "label": sim["label"]})
    ck = CKDawidSkene(n_iter=iters, tol=tol)
    _, t_fit = timed(ck.fit, df)
    ck_rss = rss_peak_mb()
    n_done = len(ck.loss_history_)
    t_init = crowdkit_init_seconds(df)
    data = to_annotations(sim, K)
    q_cl, times, _ = crowdlab_em(data, n_done, "model")
    probas = ck.probas_.reindex(index=np.arange(data.n_items), columns=np.arange(K))
    q_ck = probas.to_numpy(dtype=np.float64)
    diff = np.abs(q_ck - q_cl)
    diff_eps = np.abs(q_ck - crowdkit_like_em(data, n_done))
    return {
        "n_obs": n_obs,
        "K": K,
        "ck_iters": n_done,
        "ck_t_fit": t_fit,
        "ck_t_init": t_init,
        "ck_t_per_iter": max(t_fit - t_init, 0.0) / max(n_done, 1),
        "ck_rss_peak_mb": ck_rss,
        "cl_t_iter_median": statistics.median(times) if times else float("nan"),
        "max_abs_diff": float(np.nanmax(diff)),
        "max_abs_diff_ck_eps": float(np.nanmax(diff_eps)),
        "missing_rows": int(np.isnan(q_ck).any(axis=1).sum()),
        "argmax_disagree": int((np.argmax(q_ck, axis=1) != np.argmax(q_cl, axis=1)).sum()),
        "load_avg": os.getloadavg()[0],
    }


# ------------------------------------------------------------------ driver
def run_child(python: str, argv: list[str], env: dict | None = None) -> dict | None:
    """Run this script as a fresh subprocess in worker mode and parse its JSON line (None on failure)."""
    proc = subprocess.run([python, str(Path(__file__).resolve()), *argv], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        print(f"  ! subprocess {' '.join(argv)} failed (rc {proc.returncode}): {' | '.join(tail)}", flush=True)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def crowdkit_python(choice: str | None) -> str:
    """The interpreter that can import crowdkit: ``--crowdkit-python``, this one, or .venv-bench's."""
    if choice:
        return choice
    try:
        import crowdkit  # noqa: F401

        return sys.executable
    except ImportError:
        return str(ROOT / ".venv-bench" / "bin" / "python")


def fmt_table(rows: list[dict], cols: list[tuple[str, str, str]]) -> str:
    """Plain-text table: cols are (header, key, format spec)."""
    cells = [[h for h, _, _ in cols]]
    for r in rows:
        cells.append([format(r[k], f) if isinstance(r.get(k), int | float) else str(r.get(k, "")) for _, k, f in cols])
    widths = [max(len(c[i]) for c in cells) for i in range(len(cols))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths)) for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


CROWDLAB_COLS = [
    ("K", "K", "d"),
    ("obs", "n_obs", ".0e"),
    ("items", "n_items", "d"),
    ("workers", "n_workers", "d"),
    ("sim s", "t_sim", ".3f"),
    ("Annot s", "t_annotations", ".3f"),
    ("X s", "t_X", ".3f"),
    ("X^T s", "t_XT", ".3f"),
    ("init s", "t_init", ".3f"),
    ("s/iter (med)", "t_iter_median", ".4f"),
    ("s/iter (min)", "t_iter_min", ".4f"),
    ("EM total s", "t_iter_total", ".2f"),
    ("tracemalloc MB", "tracemalloc_peak_mb", ".0f"),
    ("RSS import MB", "rss_import_mb", ".0f"),
    ("RSS after sim MB", "rss_after_sim_mb", ".0f"),
    ("peak RSS MB", "rss_peak_mb", ".0f"),
    ("acc", "accuracy", ".3f"),
    ("load", "load_avg", ".1f"),
]

CROWDKIT_COLS = [
    ("K", "K", "d"),
    ("obs", "n_obs", ".0e"),
    ("ck iters", "ck_iters", "d"),
    ("ck fit s", "ck_t_fit", ".2f"),
    ("ck init s", "ck_t_init", ".2f"),
    ("ck s/iter", "ck_t_per_iter", ".4f"),
    ("crowdlab s/iter", "cl_t_iter_median", ".4f"),
    ("speed-up", "ratio", ".1f"),
    ("max |dq|", "max_abs_diff", ".2e"),
    ("max |dq| ck conventions", "max_abs_diff_ck_eps", ".2e"),
    ("argmax differs", "argmax_disagree", "d"),
    ("ck peak RSS MB", "ck_rss_peak_mb", ".0f"),
    ("load", "load_avg", ".1f"),
]


def parse_list(text: str, cast) -> list:
    """'1e4,1e5' -> [10000, 100000] (cast int via float so 1e6 works)."""
    return [cast(float(x)) if cast is int else cast(x) for x in text.split(",") if x.strip()]


def targets(rows: list[dict]) -> list[str]:
    """Lines stating each target and the measured figure (no assertion)."""
    out = []
    for r in rows:
        if r["n_obs"] == 10**6 and r["K"] == 5:
            ok = r["t_iter_median"] < TARGET_S_PER_ITER
            out.append(
                f"target 1e6 obs, K=5: < {TARGET_S_PER_ITER} s/iter -> {r['t_iter_median']:.4f} s/iter "
                f"({r['engine']}): {'met' if ok else 'MISSED'}"
            )
        if r["n_obs"] == 10**7:
            ok = r["rss_peak_mb"] < TARGET_RSS_MB
            out.append(
                f"target 1e7 obs, K={r['K']}: peak RSS < {TARGET_RSS_MB:.0f} MB -> {r['rss_peak_mb']:.0f} MB "
                f"({r['engine']}): {'met' if ok else 'MISSED'}"
            )
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1e4,1e5,1e6,1e7", help="observation counts, comma-separated")
    p.add_argument("--classes", default="2,5", help="numbers of classes K, comma-separated")
    p.add_argument("--iters", type=int, default=50, help="EM iterations to time")
    p.add_argument("--engine", choices=["model", "run"], default="model", help="bare e/m steps or em.Run.step()")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--crowdkit", action="store_true", help="also run crowd-kit's DawidSkene and compare")
    p.add_argument("--crowdkit-max", default="1e6", help="largest size given to crowd-kit")
    p.add_argument(
        "--crowdkit-tol",
        type=float,
        default=0.0,
        help="crowd-kit's tol (it stops when its ELBO gains < tol; write --crowdkit-tol=-inf to force --iters)",
    )
    p.add_argument("--crowdkit-python", default=None, help="interpreter with crowd-kit (default: .venv-bench)")
    p.add_argument("--json", type=Path, default=None, help="also write all figures to this JSON file")
    p.add_argument("--worker", choices=["crowdlab", "crowdkit"], help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    p.add_argument("--k", type=int, help=argparse.SUPPRESS)
    a = p.parse_args(argv)

    if a.worker == "crowdlab":
        print(json.dumps(bench_crowdlab(a.n, a.k, a.iters, a.engine, a.seed)))
        return
    if a.worker == "crowdkit":
        print(json.dumps(bench_crowdkit(a.n, a.k, a.iters, a.seed, a.crowdkit_tol)))
        return

    sizes, classes = parse_list(a.sizes, int), parse_list(a.classes, int)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    print(f"crowdlab Dawid-Skene benchmark: {os.cpu_count()} CPUs, numpy {np.__version__}, engine={a.engine}")
    rows = []
    for K in classes:
        for n in sizes:
            common = ["--n", str(n), "--k", str(K), "--iters", str(a.iters), "--seed", str(a.seed)]
            r = run_child(sys.executable, ["--worker", "crowdlab", "--engine", a.engine, *common], env)
            if r:
                rows.append(r)
                print(f"  K={K} obs={n:.0e}: {r['t_iter_median']:.4f} s/iter, peak RSS {r['rss_peak_mb']:.0f} MB")
    print()
    print(fmt_table(rows, CROWDLAB_COLS))
    print("load = 1-minute load average when the size finished (this machine has 2 cores; > 2 means contention)")
    for line in targets(rows):
        print(line)

    ck_rows = []
    if a.crowdkit:
        py = crowdkit_python(a.crowdkit_python)
        limit = int(float(a.crowdkit_max))
        print(f"\ncrowd-kit DawidSkene(n_iter={a.iters}, tol={a.crowdkit_tol}) via {py}")
        for K in classes:
            for n in (s for s in sizes if s <= limit):
                common = ["--n", str(n), "--k", str(K), "--iters", str(a.iters), "--seed", str(a.seed)]
                r = run_child(py, ["--worker", "crowdkit", f"--crowdkit-tol={a.crowdkit_tol}", *common], env)
                if r:
                    r["ratio"] = r["ck_t_per_iter"] / r["cl_t_iter_median"]
                    ck_rows.append(r)
                    print(f"  K={K} obs={n:.0e}: crowd-kit {r['ck_t_per_iter']:.4f} s/iter", flush=True)
        print()
        print(fmt_table(ck_rows, CROWDKIT_COLS))
        print("max |dq| ck conventions: crowdlab's E-step with crowd-kit's 1e-10 clips (counts, prior, output)")
        print("ck s/iter = (fit - its majority-vote start) / iterations run, its per-iteration ELBO included;")
        print("crowdlab s/iter: bare E + M, median, timed in the same subprocess right after crowd-kit;")
        print("speed-up = ck s/iter / crowdlab s/iter; ck iters < --iters: its ELBO stopped rising (tol)")
    if a.json:
        a.json.write_text(json.dumps({"crowdlab": rows, "crowdkit": ck_rows}, indent=1))


if __name__ == "__main__":
    main()
