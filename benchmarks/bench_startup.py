"""A fast first fit: start-up times against their targets, and where numba's compiled kernels start to pay.

Run from the repository root::

    .venv/bin/python benchmarks/bench_startup.py                    # both parts (about 2 minutes on 2 busy cores)
    .venv/bin/python benchmarks/bench_startup.py --parts startup    # or: kernels

Parts (every figure is one fresh process per run, the median of ``--repeat`` runs (5), wall clock; CPU seconds
(user + system of the child, from ``getrusage``) beside it, which load on a shared machine disturbs less):

- ``startup``: ``python -c "import crowdlab"`` (target <= 0.3 s) and ``python -m crowdlab fit`` on the bundled
  bluebirds into a scratch folder (target <= 1.0 s), beside ``python -c pass`` and ``import numpy``.
- ``kernels``: a one-off Dawid-Skene fit (``crowdlab.fit(data, "ds")``, K = 5, 10 labels per item, the crowd of
  ``bench_ds.py``) in a fresh process, timed from just before ``fit`` (the simulation is not timed) to its end,
  with ``CROWDLAB_KERNELS=numpy`` against ``CROWDLAB_KERNELS=numba`` (compiled kernels from the first E-step on,
  numba's import and cache load included; numba's on-disk cache is warmed first) and the default (the gate in
  ``crowdlab/models/kernels.py``: compiled only from ``FIRST_USE_CELLS`` cells of the (items x classes) E-step on).
  The crossing point (where numba's fit becomes faster than numpy's, first use included) is what the gate is set
  from.

The script prints figures beside their targets; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLUEBIRDS = ROOT / "sample_data" / "welinder2010_bluebirds" / "labels.csv"
TARGETS = {"import crowdlab": 0.3, "crowdlab fit bluebirds": 1.0}


def run_once(args: list[str], env: dict | None = None) -> tuple[float, float, str]:
    """(wall s, CPU s of the child, its stdout) of one fresh process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"{' '.join(args)} failed:\n{err}")
    return wall, _child_cpu(), out


_LAST_CPU = [0.0]


def _child_cpu() -> float:
    """CPU seconds of the last waited-for child (children's rusage is cumulative: take the difference)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = r.ru_utime + r.ru_stime
    delta, _LAST_CPU[0] = total - _LAST_CPU[0], total
    return delta


def median_of(args: list[str], repeat: int, env: dict | None = None) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu, _ = run_once(args, env)
        walls.append(wall)
        cpus.append(cpu)
    return statistics.median(walls), statistics.median(cpus)


def part_startup(repeat: int) -> None:
    py = sys.executable
    _child_cpu()
    with tempfile.TemporaryDirectory() as out:
        cases = {
            "python -c pass": [py, "-c", "pass"],
            "import numpy": [py, "-c", "import numpy"],
            "import crowdlab": [py, "-c", "import crowdlab"],
            "crowdlab fit bluebirds": [py, "-m", "crowdlab", "fit", str(BLUEBIRDS), "--out", out],
        }
        print(f"start-up, one process per run, median of {repeat} (wall s; CPU s)")
        for name, args in cases.items():
            wall, cpu = median_of(args, repeat)
            target = TARGETS.get(name)
            verdict = "" if target is None else f"   target <= {target:.1f} s: {'met' if wall <= target else 'MISSED'}"
            print(f"  {name:24s} {wall:6.3f} s wall  {cpu:6.3f} s CPU{verdict}")


KERNEL_CODE = """
import sys, time
sys.path.insert(0, {bench!r})
from bench_ds import simulate, to_annotations
import crowdlab as cl
from crowdlab import kernels
data = to_annotations(simulate({n}, 5), 5)
t0 = time.perf_counter()
run = cl.fit(data, "ds", max_iter=10_000)
print(time.perf_counter() - t0, run.last.iteration, kernels._KERNELS is not None)
"""


def part_kernels(repeat: int, sizes: list[int]) -> None:
    bench = str(ROOT / "benchmarks")
    base = {k: v for k, v in os.environ.items() if k != "CROWDLAB_KERNELS"}
    warm = [sys.executable, "-c", KERNEL_CODE.format(bench=bench, n=200_000)]
    run_once(warm, {**base, "CROWDLAB_KERNELS": "numba"})  # numba's on-disk cache, compiled once
    print(f"one-off Dawid-Skene fit in a fresh process, K = 5, median of {repeat} (fit s, first use included)")
    print(f"  {'labels':>10s} {'cells N*K':>10s} {'iter':>5s} {'numpy':>8s} {'numba':>8s} {'default':>8s} compiled?")
    for n in sizes:
        row = {}
        for mode in ("numpy", "numba", ""):
            env = {**base, "CROWDLAB_KERNELS": mode} if mode else base
            times, it, used = [], 0, False
            for _ in range(repeat):
                _, _, out = run_once([sys.executable, "-c", KERNEL_CODE.format(bench=bench, n=n)], env)
                t, it, used = out.split()
                times.append(float(t))
            row[mode or "default"] = (statistics.median(times), int(it), used == "True")
        cells = n // 10 * 5
        print(
            f"  {n:>10,} {cells:>10,} {row['numpy'][1]:>5d} {row['numpy'][0]:8.3f} {row['numba'][0]:8.3f} "
            f"{row['default'][0]:8.3f} {'yes' if row['default'][2] else 'no'}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="startup,kernels")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sizes", default="100000,250000,500000,1000000,2000000", help="labels for the kernels part")
    a = ap.parse_args()
    parts = a.parts.split(",")
    if "startup" in parts:
        part_startup(a.repeat)
    if "kernels" in parts:
        part_kernels(max(1, a.repeat // 2), [int(s) for s in a.sizes.split(",")])


if __name__ == "__main__":
    main()
