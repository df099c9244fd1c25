"""Online (stepwise) EM against batch Dawid-Skene EM: seconds per pass and accuracy, side by side.

Run from the repository root::

    .venv/bin/python benchmarks/bench_online.py                      # bluebirds, RTE, a simulated 10^6-label set
    .venv/bin/python benchmarks/bench_online.py --obs 1e5 --batch-sizes 10,100
    .venv/bin/python benchmarks/bench_online.py --skip-large         # the two bundled sets only

For each dataset:

- batch DS: :func:`crowdlab.fit` (``"ds"``, majority-vote start, tol 1e-8): iterations, total seconds, seconds per
  iteration (one iteration reads every label once, like one online pass), accuracy against gold;
- online DS (:mod:`crowdlab.models.online`, default eta0 = 1, tau0 = 10, rho = 0.6, prior 1, one confusion matrix
  per worker) for each ``--batch-sizes`` value, on the fast path (:func:`crowdlab.engines.online.fast_fit`: no
  snapshots, progressive values kept): seconds per pass (median over the passes, after building the item-grouped
  arrays once) and accuracy after 1, 3 and ``--passes`` passes; for b <= 10 also with a step-size clock per
  worker (``worker_steps=True``).

The simulated set is :func:`benchmarks.bench_ds.simulate` (vectorised: 10 distinct workers per item, diagonal of
each confusion matrix ~ U(0.6, 0.95)), K = 3, n_items = obs / 10, 500 workers at 10^6 labels. The script prints
figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_ds import simulate, to_annotations  # noqa: E402
from crowdlab.engines.fit import fit  # noqa: E402
from crowdlab.io.metrics import accuracy  # noqa: E402
from crowdlab.io.samples import load_sample  # noqa: E402
from crowdlab.models.online import OnlineDawidSkene  # noqa: E402


def batch_row(data) -> dict:
    t = time.perf_counter()
    run = fit(data, "ds")
    total = time.perf_counter() - t
    it = max(run.last.iteration, 1)
    return {"iters": run.last.iteration, "total": total, "per": total / it, "acc": accuracy(run.labels(), data.gold)}


def online_row(data, batch_size: int, passes: int, worker_steps: bool = False) -> dict:
    model = OnlineDawidSkene(batch_size=batch_size, passes=passes, worker_steps=worker_steps)
    t = time.perf_counter()
    stream = model.stream(data)
    state = model.init_state(stream)
    setup = time.perf_counter() - t
    times, acc = [], {}
    for p in range(1, passes + 1):
        t = time.perf_counter()
        state = model.run_pass(stream, state)
        times.append(time.perf_counter() - t)
        if p in (1, 3, passes):
            q = model.e_step(data, model.params(stream, state))
            acc[p] = accuracy(np.argmax(q, axis=1), data.gold)
    return {"setup": setup, "per": statistics.median(times), "total": setup + sum(times), "acc": acc,
            "updates": state.t // passes}  # fmt: skip


def report(name: str, data, batch_sizes: list[int], passes: int) -> None:
    print(f"\n{name}: {data.n_items:,} items, {data.n_workers:,} workers, {data.n_obs:,} labels, K = {data.n_classes}")
    b = batch_row(data)
    print(
        f"  batch DS            {b['iters']:>4} iterations  {b['per']:.4f} s/iteration  total {b['total']:.3f} s"
        f"  accuracy {b['acc']:.4f}"
    )
    for bs in batch_sizes:
        for ws in (False, True) if bs <= 10 else (False,):
            o = online_row(data, bs, passes, ws)
            accs = "  ".join(f"after {p}: {a:.4f}" for p, a in o["acc"].items())
            print(
                f"  online DS, b = {bs:<5}{' worker clocks' if ws else ''} {o['updates']:>6} updates/pass  "
                f"{o['per']:.4f} s/pass  (setup {o['setup']:.3f} s, {passes} passes {o['total']:.3f} s)  "
                f"accuracy {accs}"
            )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--obs", type=float, default=1e6, help="labels in the simulated set (default 1e6)")
    ap.add_argument("--classes", type=int, default=3)
    ap.add_argument("--batch-sizes", default="1,10,100,1000", help="online mini-batch sizes (items per update)")
    ap.add_argument("--passes", type=int, default=10)
    ap.add_argument("--skip-large", action="store_true")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.batch_sizes.split(",")]
    for key in ("bluebirds", "rte"):
        report(key, load_sample(key), [s for s in sizes if s <= 100], args.passes)
    if not args.skip_large:
        sim = simulate(int(args.obs), args.classes, seed=0)
        data = to_annotations(sim, args.classes)
        report(f"simulated {int(args.obs):,} labels", data, [s for s in sizes if s >= 10], args.passes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
