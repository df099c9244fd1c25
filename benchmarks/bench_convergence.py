"""Does the default stopping rule stop at a stationary point? Dawid-Skene on every real class dataset with gold.

For each set in ../shared/datasets (class labels, gold present): the objective and iterations of

- ``old``: the rule before (relative objective change <= 1e-8 alone, 500 iterations at most);
- ``fit``: today's default ``crowdlab.fit(data, "ds")`` (objective change <= 1e-8 *and* the parameters contracting
  to within 1e-7 for 10 iterations running, Aitken's estimate; 10,000 iterations at most), with its ``stop_reason``;
- ``ref``: ``Run(data, DawidSkene(), tol=1e-13, max_iter=20000).run()`` on the objective test alone,

and the gaps ``ref - old`` and ``ref - fit`` in nats (the target: ``ref - fit`` <= 0.5 on every set).

    .venv/bin/python benchmarks/bench_convergence.py [--datasets a,b] [--shared ../shared/datasets]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import crowdlab as cl
from crowdlab.engines.run import Run
from crowdlab.models import DawidSkene

ROOT = Path(__file__).resolve().parents[1]


def find_shared() -> Path:
    """The shared datasets folder: ``shared/datasets`` beside the checkout (or beside one of its parents)."""
    for base in ROOT.parents:
        if (base / "shared" / "datasets").is_dir():
            return base / "shared" / "datasets"
    return ROOT.parent / "shared" / "datasets"


def class_sets(shared: Path) -> list[str]:
    out = []
    for d in sorted(shared.iterdir()):
        if (d / "labels.csv").exists() and (d / "gold.csv").exists():
            head = (d / "labels.csv").open().readline()
            if head.startswith("item,worker,label") and d.name not in ("snow2008_affect", "snow2008_wordsim"):
                out.append(d.name)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default=str(find_shared()))
    ap.add_argument("--datasets", default="")
    args = ap.parse_args()
    shared = Path(args.shared)
    names = args.datasets.split(",") if args.datasets else class_sets(shared)
    print(f"{'dataset':34s} {'old it':>6s} {'fit it':>6s} {'ref it':>6s} {'ref-old':>9s} {'ref-fit':>8s} "
          f"{'fit s':>6s} {'ref s':>6s}  fit stop reason")  # fmt: skip
    for name in names:
        data = cl.read_annotations(shared / name / "labels.csv", gold=shared / name / "gold.csv")
        old = Run(data, DawidSkene(), tol=1e-8, max_iter=500, keep_posteriors=2, param_tol=None)
        old.run()
        t = time.perf_counter()
        fit = cl.fit(data, "ds")
        t_fit = time.perf_counter() - t
        t = time.perf_counter()
        ref = Run(data, DawidSkene(), tol=1e-13, max_iter=20000, keep_posteriors=2, param_tol=None)
        ref.run()
        t_ref = time.perf_counter() - t
        o, f, r = old.last.objective, fit.last.objective, ref.last.objective
        print(
            f"{name:34s} {old.last.iteration:6d} {fit.last.iteration:6d} {ref.last.iteration:6d} {r - o:9.3f} "
            f"{r - f:8.3f} {t_fit:6.2f} {t_ref:6.2f}  {fit.stop_reason}",
            flush=True,
        )


if __name__ == "__main__":
    main()
