"""The engine path at kernel speed: every figure beside its peer, measured in one run of this script.

Run from the repository root::

    .venv/bin/python benchmarks/bench_engine.py                  # everything (about 3 minutes on 2 busy cores)
    .venv/bin/python benchmarks/bench_engine.py --parts ds,hmm   # some of: ds, onecoin, models, memory, mv, import, hmm
    .venv/bin/python benchmarks/bench_engine.py --parts glad     # GLAD beside DS at 10^6 labels (issue 40, section 3)
    .venv/bin/python benchmarks/bench_engine.py --root /path/to/other/checkout   # measure another crowdlab

Parts (each timing is the best and the median of ``--repeat`` interleaved repetitions, wall clock, so that load on a
shared machine hits both sides of a pair alike):

- ``ds``: Dawid-Skene at 10^6 labels (10^5 items x 500 workers, 10 labels per item, K = 5; the crowd of
  ``bench_ds.py``): one bare iteration (``model.e_step`` + ``model.m_step``), one ``Run.step()`` (with its
  objective, bound, checks and snapshots), and crowd-kit's ``DawidSkene`` per iteration ((fit with n_iter = 11 -
  fit with n_iter = 1) / 10, tol = -inf so it runs them all). Ratios: Run / bare (target <= 1.3), crowd-kit / bare
  (target >= 30).
- ``onecoin``: the same for the one-coin model against crowd-kit's ``OneCoinDawidSkene`` (n_iter 2 - n_iter 1).
- ``models``: ``Run.step()`` against bare ``e_step`` + ``m_step`` for every class model of the stepper (DS,
  one-coin, two-coin at K = 2, MACE, IBCC, GLAD) at 10^5 and 10^6 labels (target <= 1.3 for each).
- ``memory``: tracemalloc peak and peak RSS of 50 iterations at 10^6 labels, K = 5, in fresh subprocesses: bare,
  ``Run`` keeping every posterior, and ``Run`` with the app's window (``em.posterior_window``: the last 8).
- ``mv``: majority vote at 10^7 labels (``MajorityVote().labels`` on fresh data, the vote counts included) against
  a bare numpy ``bincount`` + ``argmax`` (target <= 1.2x).
- ``import``: ``import crowdlab`` (``-X importtime`` total) and the wall time of ``python -m crowdlab --help``,
  beside ``import numpy`` and ``import pandas`` (target: under 0.4 s).
- ``glad``: GLAD beside Dawid-Skene at 10^6 labels, one EM iteration each (``Run.step()``, E + M with the
  objective and the checks, as ``cl.fit(..., accelerate=False)`` steps), on two crowds: the one of the engine test
  ``test_million_labels_both_engines`` (``simulate_crowd``: 10^5 items x 10 labels, 400 workers, K = 3, seed 3)
  and the ``ds`` part's (K = 5, 500 workers): the mean of the first 15 iterations, then the best and median of
  ``--repeat`` interleaved ones (and their CPU time). Ratio GLAD / DS (issue 40, section 3's target: <= 5). With
  ``--root`` on an older checkout it measures that one ("before").
- ``hmm``: HMM-crowd, 10^6 positions in 28,600 sequences (lengths 20 to 50), one worker labelling every position
  (the model of hmmlearn's ``CategoricalHMM``), K = 5 and 9: one EM iteration, bare (``e_step`` + ``m_step``),
  through ``Run.step()`` (keeping two posteriors, as ``crowdlab.fit`` does), and hmmlearn (``fit`` with n_iter = 1
  from the same parameters, ``init_params = ""``, ``implementation = "scaling"``: its fast path, the same scaled
  forward-backward as crowdlab's; the default "log" takes about 6x longer); each in a fresh subprocess for its
  peak RSS, and the tracemalloc peak of one iteration. Targets: peak RSS within 2x hmmlearn's, Run within 1.3x
  bare, faster than hmmlearn.

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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[0]
MB = 1024.0 * 1024.0


def _setup_path(root: Path) -> None:
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(root))


def _rss_mb() -> float:
    """Peak resident set size of this process (VmHWM: unlike ``ru_maxrss``, not inherited from the parent
    across exec, so a child's figure is its own)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _fmt(v: list[float]) -> str:
    return f"best {min(v):.4f} s, median {statistics.median(v):.4f} s"


def _interleaved(fns: dict, repeat: int) -> dict[str, list[float]]:
    """Wall times of each callable, called in turn ``repeat`` times (after one untimed warm-up call each)."""
    for f in fns.values():
        f()
    out = {k: [] for k in fns}
    for _ in range(repeat):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            out[k].append(time.perf_counter() - t)
    return out


# ---------------------------------------------------------------------------- class models
def _class_data(n_obs: int, K: int):
    from bench_ds import simulate

    return simulate(n_obs, K, seed=0), K


def _bare_and_run(sim: dict, K: int, method: str):
    """(data, one bare iteration as a callable, a Run after its first step) for ``method`` on a simulated crowd:
    the bare loop and the Run start from the same parameters and each keeps its own model."""
    from bench_ds import to_annotations

    from crowdlab.engines.run import Run
    from crowdlab.models import make_model

    data = to_annotations(sim, K)
    bare_model = make_model(method)
    run = Run(data, make_model(method), max_iter=10**6)
    run.step()
    state = {"p": run.current.params}

    def bare():
        state["p"] = bare_model.m_step(data, bare_model.e_step(data, state["p"]))

    return data, bare, run


def class_part(method: str, repeat: int, n_obs: int = 10**6, K: int = 5) -> dict:
    import pandas as pd
    from crowdkit.aggregation import DawidSkene as CKDawidSkene
    from crowdkit.aggregation import OneCoinDawidSkene

    sim, K = _class_data(n_obs, K)
    data, bare, run = _bare_and_run(sim, K, method)
    times = _interleaved({"bare": bare, "run": run.step}, repeat)
    frame = pd.DataFrame({"task": sim["item"], "worker": sim["worker"], "label": sim["label"]})
    ck_cls, (lo, hi) = (CKDawidSkene, (1, 11)) if method == "ds" else (OneCoinDawidSkene, (1, 2))

    def ck(n):
        t = time.perf_counter()
        ck_cls(n_iter=n, tol=float("-inf")).fit(frame)
        return time.perf_counter() - t

    ck_lo, ck_hi = ck(lo), ck(hi)
    ck_iter = (ck_hi - ck_lo) / (hi - lo)
    b, r = times["bare"], times["run"]
    name = "Dawid-Skene" if method == "ds" else "one-coin"
    print(f"\n{name}, {data.n_obs:,} labels, {data.n_items:,} items x {data.n_workers} workers, K = {K}")
    print(f"  bare E + M           {_fmt(b)}")
    print(f"  Run.step()           {_fmt(r)}")
    print(
        f"  crowd-kit {ck_cls.__name__}: {ck_iter:.3f} s per iteration "
        f"(fit n_iter={lo}: {ck_lo:.2f} s, n_iter={hi}: {ck_hi:.2f} s)"
    )
    print(
        f"  Run / bare: {min(r) / min(b):.2f} (best), {statistics.median(r) / statistics.median(b):.2f} (median); "
        f"crowd-kit / bare: {ck_iter / min(b):.0f}x (best), {ck_iter / statistics.median(b):.0f}x (median)"
    )
    return {"bare": b, "run": r, "crowdkit_per_iter": ck_iter}


# ---------------------------------------------------------------------------- every class model, Run / bare
MODELS = (("ds", 5), ("one_coin", 5), ("two_coin", 2), ("mace", 5), ("ibcc", 5), ("glad", 5))


def models_part(repeat: int, sizes: tuple[int, ...] = (10**5, 10**6)) -> None:
    """``Run.step()`` against a bare ``e_step`` + ``m_step`` for every class model the stepper offers."""
    print("\nRun.step() / bare E + M for every class model (K = 5; two-coin K = 2)")
    head = ("model", "labels", "bare best", "Run best", "ratio best", "ratio median")
    print("  {:10s} {:>10s} {:>10s} {:>10s} {:>10s} {:>12s}".format(*head))
    for n_obs in sizes:
        for method, K in MODELS:
            sim, K = _class_data(n_obs, K)
            _, bare, run = _bare_and_run(sim, K, method)
            reps = repeat if n_obs <= 10**5 or method != "glad" else max(3, repeat // 3)
            t = _interleaved({"bare": bare, "run": run.step}, reps)
            b, r = t["bare"], t["run"]
            print(
                f"  {method:10s} {n_obs:>10,d} {min(b):>9.4f}s {min(r):>9.4f}s {min(r) / min(b):>10.2f} "
                f"{statistics.median(r) / statistics.median(b):>12.2f}"
            )


# ---------------------------------------------------------------------------- GLAD beside DS
def glad_part(repeat: int, start: int = 15) -> None:
    """One EM iteration of GLAD and of Dawid-Skene at 10^6 labels, side by side (issue 40, section 3): the mean of
    the first ``start`` iterations (where GLAD's safeguard still falls back to values for some steps), then the
    best and median of ``repeat`` interleaved iterations after them, wall clock and this process's CPU time."""
    from bench_ds import to_annotations

    from crowdlab.engines.run import Run
    from crowdlab.models import make_model
    from crowdlab.teaching.simulate import simulate_crowd

    crowds = {
        "the engine test's crowd (10^5 items x 10 labels, 400 workers, K = 3)": lambda: (
            simulate_crowd(n_items=100_000, n_workers=400, n_classes=3, labels_per_item=10, seed=3).annotations
        ),
        "bench_ds's crowd (10^5 items x 10 labels, 500 workers, K = 5)": lambda: to_annotations(
            _class_data(10**6, 5)[0], 5
        ),
    }
    print("\nGLAD beside Dawid-Skene, one EM iteration (Run.step(), E + M) at 10^6 labels, seconds")
    head = ("crowd", "model", f"iter. 1-{start} mean", "then best", "median", "CPU median")
    print("  {:5s} {:6s} {:>16s} {:>10s} {:>9s} {:>11s}".format(*head))
    for n, (name, make) in enumerate(crowds.items(), start=1):
        data = make()
        runs = {m: Run(data, make_model(m), max_iter=10**6) for m in ("ds", "glad")}
        first = {m: [] for m in runs}
        for _ in range(start):
            for m, run in runs.items():
                t = time.perf_counter()
                run.step()
                first[m].append(time.perf_counter() - t)
        wall = {m: [] for m in runs}
        cpu = {m: [] for m in runs}
        for _ in range(repeat):
            for m, run in runs.items():
                t, c = time.perf_counter(), time.process_time()
                run.step()
                wall[m].append(time.perf_counter() - t)
                cpu[m].append(time.process_time() - c)
        for m in runs:
            print(
                f"  {n:<5d} {m:6s} {statistics.mean(first[m]):>16.4f} {min(wall[m]):>10.4f} "
                f"{statistics.median(wall[m]):>9.4f} {statistics.median(cpu[m]):>11.4f}"
            )
        ratio = {
            "start": statistics.mean(first["glad"]) / statistics.mean(first["ds"]),
            "best": min(wall["glad"]) / min(wall["ds"]),
            "median": statistics.median(wall["glad"]) / statistics.median(wall["ds"]),
            "CPU": statistics.median(cpu["glad"]) / statistics.median(cpu["ds"]),
        }
        print(
            f"  crowd {n}: {name}, {data.n_obs:,} labels; GLAD / DS: "
            + ", ".join(f"{v:.1f}x {k}" for k, v in ratio.items())
        )


# ---------------------------------------------------------------------------- memory of a long run
def memory_child(mode: str, iters: int = 50, n_obs: int = 10**6, K: int = 5) -> dict:
    from bench_ds import to_annotations

    from crowdlab.engines.run import Run
    from crowdlab.models import make_model

    sim, K = _class_data(n_obs, K)
    data = to_annotations(sim, K)
    del sim
    _ = data.label_counts
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    model = make_model("ds")
    if mode == "bare":
        run = Run(data, model, keep_posteriors=2)
        p = run.current.params
        for _ in range(iters):
            p = model.m_step(data, model.e_step(data, p))
    else:
        run = Run(data, model, max_iter=10**6, keep_posteriors=None if mode == "run-all" else 8)
        for _ in range(iters):
            run.step()
    held, peak = tracemalloc.get_traced_memory()
    return {"held_mb": (held - base) / MB, "peak_mb": (peak - base) / MB, "rss_mb": _rss_mb()}


def memory_part(python: str, root: Path) -> None:
    print("\nMemory of 50 Dawid-Skene iterations at 10^6 labels, K = 5 (fresh subprocess each; tracemalloc from the")
    print("data on; RSS includes the interpreter, the data and the imports)")
    for mode, what in (("bare", "bare E + M"), ("run-all", "Run, every posterior"), ("run-window", "Run, window 8")):
        res = _child(python, root, ["--child", f"memory:{mode}"])
        print(
            f"  {what:22s} held after {res['held_mb']:7.0f} MB, peak {res['peak_mb']:7.0f} MB, "
            f"peak RSS {res['rss_mb']:6.0f} MB"
        )


# ---------------------------------------------------------------------------- majority vote
def mv_part(repeat: int, n_obs: int = 10**7, K: int = 5) -> None:
    from bench_ds import to_annotations

    from crowdlab.models.majority import MajorityVote

    sim, K = _class_data(n_obs, K)
    template = to_annotations(sim, K)
    item, label, N = sim["item"], sim["label"], sim["truth"].size

    def ours():
        template.__dict__.pop("vote_counts", None)  # not cached: the counting is part of the timing
        MajorityVote().labels(template)

    def numpy_bincount():
        v = np.bincount(item.astype(np.int64) * K + label, minlength=N * K).reshape(N, K)
        return v.argmax(axis=1)

    t = _interleaved({"crowdlab": ours, "numpy": numpy_bincount}, repeat)
    print(f"\nMajority vote, {n_obs:,} labels, K = {K}")
    print(f"  crowdlab MajorityVote().labels  {_fmt(t['crowdlab'])}")
    print(f"  numpy bincount + argmax         {_fmt(t['numpy'])}")
    print(f"  ratio {min(t['crowdlab']) / min(t['numpy']):.2f} (best)")


# ---------------------------------------------------------------------------- import time
def import_part(python: str, root: Path, repeat: int = 5) -> None:
    env = dict(os.environ, PYTHONPATH=str(root))

    def wall(args):
        best = float("inf")
        for _ in range(repeat):
            t = time.perf_counter()
            subprocess.run([python, *args], cwd=root, env=env, capture_output=True, check=True)
            best = min(best, time.perf_counter() - t)
        return best

    def importtime(mod):
        best = float("inf")
        for _ in range(repeat):
            out = subprocess.run(
                [python, "-X", "importtime", "-c", f"import {mod}"], cwd=root, env=env, capture_output=True, text=True
            ).stderr
            last = [ln for ln in out.splitlines() if ln.rstrip().endswith(f"| {mod}")]
            best = min(best, int(last[-1].split("|")[1]) / 1e6)
        return best

    print(f"\nImport time (best of {repeat}; -X importtime cumulative, seconds)")
    for mod in ("numpy", "pandas", "crowdlab"):
        print(f"  import {mod:10s} {importtime(mod):.3f} s")
    print(f"  python -c pass               {wall(['-c', 'pass']):.3f} s wall")
    print(f"  python -m crowdlab --help    {wall(['-m', 'crowdlab', '--help']):.3f} s wall")
    probe = "import crowdlab, sys; print(sorted(m for m in ('pandas','plotly','scipy.optimize') if m in sys.modules))"
    out = subprocess.run([python, "-c", probe], cwd=root, env=env, capture_output=True, text=True).stdout.strip()
    print(f"  loaded by import crowdlab: {out}")


# ---------------------------------------------------------------------------- HMM-crowd vs hmmlearn
def _hmm_data(K: int, path: Path) -> None:
    """Simulate the chains once (in the parent) and save the arrays the children load (so that the children's peak
    RSS is the data, the imports and the iteration, not the simulation)."""
    from crowdlab.engines.run import Run
    from crowdlab.models import HMMCrowd
    from crowdlab.teaching.simulate import simulate_sequences

    rng = np.random.default_rng(0)
    lengths = rng.integers(20, 51, size=28_600)
    diff = 10**6 - int(lengths.sum())
    np.add.at(lengths, np.arange(abs(diff)) % lengths.size, np.sign(diff))  # exactly 10^6 positions
    data = simulate_sequences(lengths.size, lengths, K, 1, self_transition=0.8, seed=0).annotations
    start = Run(data, HMMCrowd()).current.params  # crowdlab's start (majority vote, then an M-step), for both
    order = np.argsort(data.item, kind="stable")
    np.savez(
        path,
        item=data.item,
        worker=data.worker,
        label=data.label,
        starts=data.sequence_starts,
        lengths=lengths,
        pi=start.pi,
        T=start.T,
        gamma=start.gamma,
        X=np.asarray(data.label)[order],
    )


def _load_hmm(path: str):
    from crowdlab.io.annotations import Annotations
    from crowdlab.models.hmm import HMMParams

    z = np.load(path)
    N, K = int(z["starts"][-1]), z["pi"].size
    data = Annotations(
        item=z["item"],
        worker=z["worker"],
        label=z["label"],
        item_names=tuple(map(str, range(N))),
        worker_names=("w0",),
        class_names=tuple(map(str, range(K))),
        sequence_starts=z["starts"],
        name="bench chains",
    )
    return data, HMMParams(pi=z["pi"], gamma=z["gamma"], T=z["T"]), z["X"][:, None].astype(np.int64), z["lengths"]


def hmm_child(impl: str, path: str, repeat: int) -> dict:
    if impl == "hmmlearn":
        from hmmlearn.hmm import CategoricalHMM

        z = np.load(path)
        X, lengths, K = z["X"][:, None].astype(np.int64), z["lengths"], z["pi"].size
        start_pi, start_T, start_gamma = z["pi"], z["T"], z["gamma"]

        def one():
            h = CategoricalHMM(
                n_components=K, n_iter=1, init_params="", tol=-np.inf, n_features=K, implementation="scaling"
            )
            h.startprob_, h.transmat_ = start_pi, start_T.T
            h.emissionprob_ = start_gamma[0].T
            h.fit(X, lengths)

    else:
        from crowdlab.engines.run import Run
        from crowdlab.models import HMMCrowd

        data, start, _, _ = _load_hmm(path)
        _ = data.label_counts
        if impl == "bare":
            model = HMMCrowd()
            state = {"p": start}

            def one():
                state["p"] = model.m_step(data, model.e_step(data, state["p"]))

        else:
            run = Run(data, HMMCrowd(), "params", max_iter=10**6, keep_posteriors=2, params=start)
            one = run.step
    times = []
    one()
    for _ in range(repeat):
        t = time.perf_counter()
        one()
        times.append(time.perf_counter() - t)
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    one()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return {"times": times, "peak_mb": peak / MB, "rss_mb": _rss_mb()}


def hmm_part(python: str, root: Path, repeat: int) -> None:
    print("\nHMM-crowd, 10^6 positions in 28,600 sequences, one worker (hmmlearn's CategoricalHMM model); one EM")
    print("iteration; each line a fresh subprocess (peak RSS: data and imports included; tracemalloc: one iteration)")
    import tempfile

    for K in (5, 9):
        res = {}
        path = Path(tempfile.mkdtemp()) / f"chains{K}.npz"
        _hmm_data(K, path)
        for impl in ("bare", "run", "hmmlearn"):
            res[impl] = r = _child(python, root, ["--child", f"hmm:{impl}:{path}", "--repeat", str(repeat)])
            print(
                f"  K = {K} {impl:9s} {_fmt(r['times'])}; tracemalloc peak {r['peak_mb']:6.0f} MB, "
                f"peak RSS {r['rss_mb']:6.0f} MB"
            )
        path.unlink()
        path.parent.rmdir()
        b, r, h = (min(res[k]["times"]) for k in ("bare", "run", "hmmlearn"))
        print(
            f"  K = {K}: Run / bare {r / b:.2f}, hmmlearn / Run {h / r:.2f}, peak RSS Run / hmmlearn "
            f"{res['run']['rss_mb'] / res['hmmlearn']['rss_mb']:.2f}, bare / hmmlearn "
            f"{res['bare']['rss_mb'] / res['hmmlearn']['rss_mb']:.2f}"
        )


# ---------------------------------------------------------------------------- plumbing
def _child(python: str, root: Path, args: list[str]) -> dict:
    out = subprocess.run(
        [python, str(Path(__file__).resolve()), "--root", str(root), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="ds,onecoin,models,memory,mv,import,hmm")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--root", default=str(ROOT), help="the crowdlab checkout to measure (default: this one)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    root = Path(args.root).resolve()
    _setup_path(root)
    if args.child:
        kind, *rest = args.child.split(":")
        if kind == "memory":
            res = memory_child(rest[0])
        else:
            res = hmm_child(rest[0], ":".join(rest[1:]), args.repeat)
        print(json.dumps(res))
        return
    parts = args.parts.split(",")
    import numpy  # noqa: F401

    load = os.getloadavg()[0]
    print(f"crowdlab at {root}; python {sys.version.split()[0]}, numpy {np.__version__}; {os.cpu_count()} cores,")
    print(f"load average {load:.1f} at the start (timings on a busy machine are upper bounds)")
    python = sys.executable
    if "ds" in parts:
        class_part("ds", args.repeat)
    if "onecoin" in parts:
        class_part("one_coin", args.repeat)
    if "models" in parts:
        models_part(args.repeat)
    if "memory" in parts:
        memory_part(python, root)
    if "mv" in parts:
        mv_part(max(args.repeat // 3, 3))
    if "import" in parts:
        import_part(python, root)
    if "hmm" in parts:
        hmm_part(python, root, max(args.repeat // 5, 2))
    if "glad" in parts:
        glad_part(args.repeat)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
